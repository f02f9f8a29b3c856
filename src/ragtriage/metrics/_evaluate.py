"""``evaluate_answers``: per-trace answer/context metrics and an aggregate with seeded
bootstrap confidence intervals. Deterministic: the same traces, judge replies and seed give
byte-identical output (values rounded to 6 decimals, keys sorted by the writer)."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Final

import numpy as np

from ragtriage.embedding import Embedder
from ragtriage.metrics._judgements import MetricScore, TraceJudge, TraceJudgements
from ragtriage.metrics._latency import latency_cost
from ragtriage.metrics._lexical import exact_match, has_tokens, rouge_l, token_f1
from ragtriage.metrics._rag import (
    answer_relevancy,
    context_precision_at,
    context_recall,
    faithfulness,
)
from ragtriage.records import Trace

__all__ = [
    "PrefetchingEmbedder",
    "aggregate_rows",
    "bootstrap_ci",
    "evaluate_answers",
    "prefetch_embeddings",
    "reference_scores",
    "score_rows",
    "score_trace",
]

_DIGITS: Final = 6


def _round(s: MetricScore) -> dict[str, Any]:
    out: dict[str, Any] = {"judge": s.judge}
    if s.value is None:
        out["value"] = "undetermined"
        out["reason"] = s.undetermined_reason
    else:
        out["value"] = round(s.value, _DIGITS)
    return out


def _lexical(name: str, value: float | None, reason: str) -> MetricScore:
    if value is None:
        return MetricScore(judge="lexical", undetermined_reason=reason)
    return MetricScore(value=value, judge=name)


def _semantic_judge(embedder: Embedder) -> str:
    return f"embedding:{getattr(embedder, 'name', 'embedder')}"


def _semantic(answer: str, reference: str, embedder: Embedder) -> MetricScore:
    judge = _semantic_judge(embedder)
    if not answer.strip() or not reference.strip():
        return MetricScore(judge=judge, undetermined_reason="empty answer or reference")
    v = np.asarray(embedder.embed([answer, reference]), dtype=np.float64)
    n = np.linalg.norm(v, axis=1)
    if not np.all(n > 0):
        return MetricScore(judge=judge, undetermined_reason="empty embedding")
    return MetricScore(value=max(0.0, float(v[0] @ v[1] / (n[0] * n[1]))), judge=judge)


def _embed_unique(embedder: Embedder, texts: Sequence[str]) -> dict[str, Any]:
    unique = list(dict.fromkeys(texts))
    vecs = np.asarray(embedder.embed(unique)) if unique else np.zeros((0, embedder.dim))
    return {t: vecs[i] for i, t in enumerate(unique)}


class _Prefetched:
    """Serves vectors embedded in one batch up front (one model pass for all traces);
    ``ready`` holds vectors embedded earlier (while an LLM judge was waiting)."""

    def __init__(
        self, inner: Embedder, texts: list[str], ready: dict[str, Any] | None = None
    ) -> None:
        self.name = getattr(inner, "name", "embedder")
        self.dim = inner.dim
        self._inner = inner
        self._vecs = dict(ready or {})
        self._vecs.update(_embed_unique(inner, [t for t in texts if t not in self._vecs]))

    def embed(self, texts: Sequence[str]) -> Any:
        missing = [t for t in texts if t not in self._vecs]
        if missing:
            for t, v in zip(missing, np.asarray(self._inner.embed(missing)), strict=True):
                self._vecs[t] = v
        return np.stack([self._vecs[t] for t in texts]) if texts else np.zeros((0, self.dim))


def _known_texts(traces: Sequence[Trace]) -> list[str]:
    """Texts to embed that do not depend on the judgements."""
    out: list[str] = []
    for t in traces:
        out.append(t.example.query)
        if t.answer.strip() and t.example.answer.strip():
            out += [t.answer, t.example.answer]
    return out


class PrefetchingEmbedder:
    """An embedder that starts embedding known texts in a background thread at once, so
    the model runs while the claim checks (pure Python) run in the caller's thread; the
    model releases the GIL. ``embed`` serves those texts when their slice is done and
    embeds any other text itself. One call into the wrapped embedder at a time (a lock:
    the on-disk cache is not thread-safe). The texts go in slices of ``chunk``, so
    :meth:`close` (after an error) waits for one slice only. A text's vector must not
    depend on the batch it ran in (true of the bundled MiniLM: float32 arithmetic, tested).
    """

    def __init__(self, inner: Embedder, texts: Sequence[str], *, chunk: int = 256) -> None:
        self.inner = inner
        self.name = getattr(inner, "name", "embedder")
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ragtriage-embed")
        self._slot: dict[str, tuple[Future[Any], int]] = {}
        unique = list(dict.fromkeys(texts))
        for start in range(0, len(unique), max(1, chunk)):
            part = unique[start : start + max(1, chunk)]
            fut = self._pool.submit(self._run, part)
            for i, t in enumerate(part):
                self._slot[t] = (fut, i)

    @property
    def dim(self) -> int:
        return self.inner.dim

    def _run(self, texts: list[str]) -> Any:
        with self._lock:
            return np.asarray(self.inner.embed(texts), dtype=np.float32)

    def embed(self, texts: Sequence[str]) -> Any:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        missing = [t for t in dict.fromkeys(texts) if t not in self._slot]
        fresh = dict(zip(missing, self._run(missing), strict=True)) if missing else {}
        rows = []
        for t in texts:
            if t in fresh:
                rows.append(fresh[t])
            else:
                fut, i = self._slot[t]
                rows.append(fut.result()[i])
        return np.stack(rows).astype(np.float32, copy=False)

    def close(self) -> None:
        """Drop the slices not started; wait for the one running."""
        self._pool.shutdown(wait=True, cancel_futures=True)


def prefetch_embeddings(traces: Sequence[Trace], embedder: Embedder) -> PrefetchingEmbedder:
    """``embedder`` wrapped to embed, in the background from now on, the texts
    :func:`evaluate_answers` will need whatever the judgements (queries, answers and
    ground truths); pass the wrapper to the scoring calls, then ``close()`` it."""
    return PrefetchingEmbedder(embedder, _known_texts(traces))


def _texts_to_embed(traces: Sequence[Trace], judgements: Sequence[TraceJudgements]) -> list[str]:
    out = _known_texts(traces)
    for j in judgements:
        out.extend(q for q in j.questions or () if q.strip())
    return out


def _judge_and_embed(
    traces: Sequence[Trace], judge: TraceJudge, embedder: Embedder
) -> tuple[list[TraceJudgements], dict[str, Any]]:
    """The judgements; for a judge that waits on an endpoint (``io_bound``), the texts
    that do not need them are embedded in a thread meanwhile (two phases overlapped)."""
    if not getattr(judge, "io_bound", False):
        return judge.judge_many(list(traces)), {}
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="ragtriage-embed") as pool:
        ready = pool.submit(_embed_unique, embedder, _known_texts(traces))
        judgements = judge.judge_many(list(traces))
        return judgements, ready.result()


def score_trace(
    trace: Trace, j: TraceJudgements, embedder: Embedder, k: int = 5
) -> dict[str, MetricScore]:
    """Every metric of one trace from its judgements (pure apart from the embedder)."""
    ex = trace.example
    scores: dict[str, MetricScore] = {
        "faithfulness": faithfulness(j),
        "answer_relevancy": answer_relevancy(j, ex.query, embedder),
        f"context_precision@{k}": context_precision_at(j, k),
        "context_recall": context_recall(j),
    }
    reference = ex.answer if ex.answerable else None
    return {**scores, **reference_scores(trace.answer, reference, embedder)}


def reference_scores(
    answer: str, reference: str | None, embedder: Embedder
) -> dict[str, MetricScore]:
    """``exact_match``, ``f1``, ``rouge_l`` and ``semantic_similarity`` of an answer
    against its ground truth (``None``: the example has none -- all undetermined); an
    answer without tokens scores 0 on all four."""
    scores: dict[str, MetricScore] = {}
    if reference is None or not reference.strip():
        reason = "no ground-truth answer (unanswerable example)"
        for name in ("exact_match", "f1", "rouge_l", "semantic_similarity"):
            scores[name] = MetricScore(judge="lexical", undetermined_reason=reason)
        return scores
    if not has_tokens(answer):
        # an empty answer (or one of punctuation only) overlaps nothing: a real 0
        for name in ("exact_match", "f1", "rouge_l"):
            scores[name] = MetricScore(value=0.0, judge="lexical")
        scores["semantic_similarity"] = MetricScore(value=0.0, judge=_semantic_judge(embedder))
        return scores
    scores["exact_match"] = MetricScore(value=exact_match(answer, reference), judge="lexical")
    scores["f1"] = _lexical("lexical", token_f1(answer, reference), "no tokens to compare")
    scores["rouge_l"] = _lexical("lexical", rouge_l(answer, reference), "no tokens to compare")
    scores["semantic_similarity"] = _semantic(answer, reference, embedder)
    return scores


def bootstrap_ci(
    values: Sequence[float], *, seed: int = 0, resamples: int = 1000, level: float = 0.95
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean (seeded, so reproducible)."""
    arr = np.asarray(values, dtype=np.float64)
    rng = np.random.default_rng(seed)
    means = arr[rng.integers(0, len(arr), size=(resamples, len(arr)))].mean(axis=1)
    lo, hi = np.percentile(means, [100 * (1 - level) / 2, 100 * (1 + level) / 2])
    return float(lo), float(hi)


def evaluate_answers(
    traces: Sequence[Trace],
    judge: TraceJudge,
    embedder: Embedder,
    *,
    k: int = 5,
    seed: int = 0,
    resamples: int = 1000,
    price_per_1k_prompt: float = 0.0,
    price_per_1k_completion: float = 0.0,
    extra: Sequence[Mapping[str, MetricScore]] | None = None,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """``(per_trace_rows, aggregate)``. Rows hold ``trace_id``, ``example_id``,
    ``scores`` (``{metric: {value | "undetermined", judge, reason?}}``) and, when the
    answer had claims, ``claims`` (``[{claim, verdict}]``); the aggregate
    holds per metric ``mean``, ``ci95``, ``n`` and ``undetermined`` (counts per reason),
    plus latency and cost from the traces. ``extra`` adds scores per trace (g_eval,
    selfcheck), in trace order. The same as :func:`score_rows` then
    :func:`aggregate_rows` (which a Ray run does on separate machines)."""
    rows = score_rows(traces, judge, embedder, k=k, extra=extra)
    aggregate = aggregate_rows(
        rows,
        traces,
        judge=judge.name,
        embedder=getattr(embedder, "name", "embedder"),
        seed=seed,
        resamples=resamples,
        price_per_1k_prompt=price_per_1k_prompt,
        price_per_1k_completion=price_per_1k_completion,
    )
    return rows, aggregate


def score_rows(
    traces: Sequence[Trace],
    judge: TraceJudge,
    embedder: Embedder,
    *,
    k: int = 5,
    extra: Sequence[Mapping[str, MetricScore]] | None = None,
) -> list[dict[str, Any]]:
    """The per-trace rows of :func:`evaluate_answers` (values rounded to 6 decimals)."""
    judgements, ready = _judge_and_embed(traces, judge, embedder)
    embedder = _Prefetched(embedder, _texts_to_embed(traces, judgements), ready)
    rows: list[dict[str, Any]] = []
    extras = list(extra) if extra is not None else [{} for _ in traces]
    for trace, j, more in zip(traces, judgements, extras, strict=True):
        scores = {**score_trace(trace, j, embedder, k), **more}
        row: dict[str, Any] = {
            "trace_id": trace.trace_id,
            "example_id": trace.example.example_id,
            "scores": {name: _round(s) for name, s in scores.items()},
        }
        if j.claims:  # the verdicts behind faithfulness (diagnosis evidence reads them)
            row["claims"] = [{"claim": c.claim, "verdict": c.verdict} for c in j.claims]
        rows.append(row)
    return rows


def aggregate_rows(
    rows: Sequence[Mapping[str, Any]],
    traces: Sequence[Trace],
    *,
    judge: str,
    embedder: str,
    seed: int = 0,
    resamples: int = 1000,
    price_per_1k_prompt: float = 0.0,
    price_per_1k_completion: float = 0.0,
) -> dict[str, Any]:
    """The aggregate of :func:`evaluate_answers` from its rows (and the traces, for
    latency and cost)."""
    collected: dict[str, list[float]] = {}
    undetermined: dict[str, dict[str, int]] = {}
    judges: dict[str, set[str]] = {}
    for row in rows:
        for name, s in row["scores"].items():
            judges.setdefault(name, set()).add(s["judge"])
            if s["value"] == "undetermined":
                bucket = undetermined.setdefault(name, {})
                reason = s.get("reason") or "not judged"
                bucket[reason] = bucket.get(reason, 0) + 1
            else:
                collected.setdefault(name, []).append(float(s["value"]))
    names = list(dict.fromkeys(n for r in rows for n in r["scores"]))
    metrics: dict[str, Any] = {}
    for i, name in enumerate(names):
        vals = collected.get(name, [])
        cell: dict[str, Any] = {
            "n": len(vals),
            "undetermined": dict(sorted(undetermined.get(name, {}).items())),
            "judge": sorted(judges.get(name, set())),
        }
        if vals:
            lo, hi = bootstrap_ci(vals, seed=seed + i, resamples=resamples)
            cell["mean"] = round(float(np.mean(vals)), _DIGITS)
            cell["ci95"] = [round(lo, _DIGITS), round(hi, _DIGITS)]
        else:
            cell["mean"] = "undetermined"
            cell["reason"] = "no trace could be scored"
        metrics[name] = cell
    return {
        "traces": len(rows),
        "judge": judge,
        "embedder": embedder,
        "seed": seed,
        "bootstrap_resamples": resamples,
        "metrics": metrics,
        "latency_cost": latency_cost(traces, price_per_1k_prompt, price_per_1k_completion),
    }
