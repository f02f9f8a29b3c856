"""What the live-capture integrations (LangChain callbacks, LlamaIndex instrumentation)
share: :class:`LiveRun`, what one question went through as the framework reported it,
and :class:`TraceSink`, which turns a finished run into a trace (through the importers'
:func:`~ragtriage.integrations._build.build_traces`) and appends it to ``traces.jsonl``.

Capture never raises into the user's pipeline: every framework hook goes through
:meth:`TraceSink.guard`, which logs the error (``ragtriage.integrations`` logger) and
counts it in :attr:`TraceSink.errors`.
"""

from __future__ import annotations

import logging
import threading
import time
import unicodedata
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragtriage.integrations._build import build_traces
from ragtriage.integrations._rows import ImportedRow, RetrievedText, Where
from ragtriage.jsonl import append_jsonl
from ragtriage.records import Stage, Trace

__all__ = [
    "NO_RERANKER",
    "CaptureBase",
    "LLMCall",
    "LiveRun",
    "TraceSink",
    "content_text",
    "passage",
    "prompt_context",
    "traces_path",
]

log = logging.getLogger("ragtriage.integrations")

#: the reason written when the pipeline has no reranker (nothing changed the passages)
NO_RERANKER = (
    "no step between the retriever and the prompt changed the retrieved passages "
    "(the pipeline has no reranker)"
)


def traces_path(out: str | Path) -> Path:
    """``out`` itself when it names a ``.jsonl`` file, else ``out/traces.jsonl`` (a run
    directory that ``ragtriage diagnose`` takes as is)."""
    p = Path(out)
    return p if p.suffix == ".jsonl" else p / "traces.jsonl"


@dataclass
class LLMCall:
    """One LLM call: its prompt text (chat messages joined), output and usage."""

    prompt: str = ""
    output: str = ""
    started: float = 0.0
    ended: float | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass
class LiveRun:
    """What one question went through, filled in by a framework's hooks.

    Times are :func:`time.perf_counter` seconds. ``retrieved`` is the retriever's
    list; ``reranked`` the output of the last step that changed it (reranker,
    compressor, postprocessor), ``None`` when none was seen.
    """

    key: str
    started: float = field(default_factory=time.perf_counter)
    question: str | None = None
    retrieved: list[RetrievedText] | None = None
    reranked: list[RetrievedText] | None = None
    retrieval_s: float = 0.0
    retrieval_calls: int = 0
    rerank_s: float = 0.0
    rerank_calls: int = 0
    llm_calls: list[LLMCall] = field(default_factory=list)
    answer: str | None = None
    #: a passage's id -> the id of the document it is a chunk of, when the framework says
    doc_of: dict[str, str] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)

    def add_retrieval(self, passages: list[RetrievedText], seconds: float) -> None:
        if self.retrieved is None:
            self.retrieved = []
        # several retrievals (sub-retrievers of an ensemble, a multi-query step): one
        # list in the order seen, each passage once
        self.retrieved = _unique([*self.retrieved, *passages])
        self.retrieval_s += max(seconds, 0.0)
        self.retrieval_calls += 1

    def add_rerank(self, passages: list[RetrievedText], seconds: float) -> None:
        self.reranked = _unique(passages)
        self.rerank_s += max(seconds, 0.0)
        self.rerank_calls += 1

    def stages(self) -> dict[str, dict[str, float]]:
        out: dict[str, dict[str, float]] = {}
        if self.retrieval_calls:
            out[Stage.RETRIEVAL.value] = {
                "latency_ms": self.retrieval_s * 1000.0,
                "calls": self.retrieval_calls,
            }
        if self.rerank_calls:
            out[Stage.RERANKING.value] = {
                "latency_ms": self.rerank_s * 1000.0,
                "calls": self.rerank_calls,
            }
        done = [c for c in self.llm_calls if c.ended is not None]
        if done:
            out[Stage.GENERATION.value] = {
                "latency_ms": sum(max((c.ended or c.started) - c.started, 0.0) for c in done)
                * 1000.0,
                "prompt_tokens": sum(c.prompt_tokens for c in done),
                "completion_tokens": sum(c.completion_tokens for c in done),
                "calls": len(done),
            }
        return out


def _unique(passages: Sequence[RetrievedText]) -> list[RetrievedText]:
    """Each passage (text and id) once, at its first place."""
    seen: set[tuple[str, str | None]] = set()
    out: list[RetrievedText] = []
    for p in passages:
        if (p.text, p.source_id) not in seen:
            seen.add((p.text, p.source_id))
            out.append(p)
    return out


def _norm(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).split())


def prompt_context(
    final: Sequence[RetrievedText], prompt: str | None
) -> tuple[list[RetrievedText], str]:
    """The passages of ``final`` that the prompt holds, in prompt order, and where the
    list came from. A passage the template cut or dropped is not in the context; when
    no passage is found in the prompt at all (a template that rewrites the text), the
    whole final list is taken and the reason says so."""
    if prompt is None:
        return list(final), "final passage list (no LLM prompt observed)"
    text = _norm(prompt)
    found: list[tuple[int, int, RetrievedText]] = []
    for i, p in enumerate(final):
        pos = text.find(_norm(p.text)) if p.text.strip() else -1
        if pos >= 0:
            found.append((pos, i, p))
    if found or not final:
        return [p for _pos, _i, p in sorted(found, key=lambda t: (t[0], t[1]))], "prompt"
    return list(final), "final passage list (no passage found verbatim in the prompt)"


class TraceSink:
    """Writes one trace per finished :class:`LiveRun` to ``traces.jsonl`` (thread-safe
    appends of whole lines, each fsynced).

    ``references`` maps a question to its gold answer; :meth:`set_reference` adds one.
    A trace needs the gold answer (an answerable example without one is not a valid
    trace, and a blank one would read as "unanswerable"): a run whose question has none
    yet is kept in :attr:`pending` (at most ``max_pending``, oldest dropped with a
    warning) and written when :meth:`set_reference` gives its answer.
    """

    def __init__(
        self,
        out: str | Path,
        *,
        fmt: str,
        run_id: str = "live",
        references: Mapping[str, str] | None = None,
        max_pending: int = 10_000,
    ) -> None:
        self.path = traces_path(out)
        self.max_pending = max_pending
        #: finished runs waiting for their gold answer, by normalised question
        self.pending: dict[str, list[LiveRun]] = {}
        self.fmt = fmt
        self.run_id = run_id
        self._refs: dict[str, str] = {}
        self._lock = threading.RLock()
        for q, a in (references or {}).items():
            self.set_reference(q, a)
        self.written = 0
        self.errors = 0

    def set_reference(self, question: str, answer: str) -> None:
        """The gold answer of ``question`` (matched after whitespace normalisation);
        writes the runs of that question that were waiting for it."""
        key = _norm(question)
        with self._lock:
            self._refs[key] = answer
            waiting = self.pending.pop(key, [])
        for run in waiting:
            self.write(run)

    @property
    def pending_runs(self) -> int:
        return sum(len(v) for v in self.pending.values())

    def reference(self, question: str) -> str | None:
        return self._refs.get(_norm(question))

    @contextmanager
    def guard(self, what: str) -> Iterator[None]:
        """Log and swallow any error raised while capturing (never into the user's chain)."""
        try:
            yield
        except Exception:
            with self._lock:
                self.errors += 1
            log.warning(
                "ragtriage capture: %s failed; the trace may be incomplete", what, exc_info=True
            )

    def build(self, run: LiveRun) -> Trace:
        """The trace of ``run`` (without writing it)."""
        question = (run.question or "").strip()
        if not question:
            raise ValueError("no question was captured for this run")
        reference = self.reference(question)
        if reference is None:
            raise ValueError(f"no gold answer for {question!r} (see set_reference)")
        last = next((c for c in reversed(run.llm_calls) if c.ended is not None), None)
        final = run.reranked if run.reranked is not None else (run.retrieved or [])
        contexts, context_from = prompt_context(final, last.prompt if last else None)
        answer = run.answer if run.answer is not None else (last.output if last else "")
        total_ms = (time.perf_counter() - run.started) * 1000.0
        row = ImportedRow(
            where=Where(str(self.path)),
            row_id=run.key,
            question=question,
            answer=answer,
            reference=reference,
            contexts=tuple(contexts),
            retrieved=tuple(run.retrieved) if run.retrieved is not None else None,
            reranked=tuple(run.reranked) if run.reranked is not None else None,
            stages=run.stages(),
            metadata={
                **run.metadata,
                "capture": {
                    "framework": self.fmt,
                    "context_from": context_from,
                    "total_latency_ms": total_ms,
                    "llm_calls": len(run.llm_calls),
                },
            },
        )
        traces, _stats = build_traces([row], None, run_id=self.run_id, fmt=self.fmt)
        trace = traces[0]
        meta = dict(trace.metadata)
        given = meta.get("not_observable")
        why = dict(given) if isinstance(given, dict) else {}
        if run.retrieved is not None and run.reranked is None and Stage.RERANKING.value in why:
            why[Stage.RERANKING.value] = NO_RERANKER
        meta["not_observable"] = why
        return _own_ids(trace.model_copy(update={"metadata": meta}), run.doc_of)

    def write(self, run: LiveRun) -> Trace | None:
        """Build and append the trace of ``run``; ``None`` when its gold answer is not
        known yet (the run waits in :attr:`pending`) or when that fails (logged)."""
        with self.guard(f"writing the trace of run {run.key}"):
            key = _norm(run.question or "")
            with self._lock:
                if key and key not in self._refs:
                    self._hold(key, run)
                    return None
            trace = self.build(run)
            with self._lock:
                append_jsonl(self.path, trace)
                self.written += 1
            return trace
        return None

    def _hold(self, key: str, run: LiveRun) -> None:
        if self.pending_runs >= self.max_pending:
            oldest = next(iter(self.pending))
            dropped = self.pending[oldest].pop(0)
            if not self.pending[oldest]:
                del self.pending[oldest]
            log.warning(
                "ragtriage capture: %d runs wait for a gold answer; dropped run %s",
                self.max_pending,
                dropped.key,
            )
        self.pending.setdefault(key, []).append(run)


_ID_KEYS = ("chunk_id", "id", "doc_id", "node_id", "source")
_SCORE_KEYS = ("score", "similarity_score", "relevance_score", "rerank_score")
#: a reranker's output usually keeps the retriever's score beside its own
_RERANK_SCORE_KEYS = ("relevance_score", "rerank_score", "score", "similarity_score")


def passage(
    text: str,
    ident: Any,
    metadata: Mapping[str, Any] | None,
    score: Any = None,
    *,
    reranked: bool = False,
) -> RetrievedText:
    """A retrieved passage: its id (the framework's own, else one from its metadata)
    and its score (the framework's, else one from its metadata -- a reranker's own
    score first when ``reranked``; only finite numbers)."""
    meta = metadata or {}
    if ident is None:
        ident = next((meta[k] for k in _ID_KEYS if meta.get(k) is not None), None)
    if score is None:
        keys = _RERANK_SCORE_KEYS if reranked else _SCORE_KEYS
        score = next((meta[k] for k in keys if meta.get(k) is not None), None)
    value: float | None = None
    if isinstance(score, int | float) and not isinstance(score, bool):
        f = float(score)
        value = f if f == f and f not in (float("inf"), float("-inf")) else None
    return RetrievedText(text, None if ident is None else str(ident), value)


def content_text(content: Any) -> str:
    """The text of a chat message's content: a string, or the text parts of a list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, Mapping) and isinstance(part.get("text"), str):
                parts.append(part["text"])
        return "\n".join(parts)
    return "" if content is None else str(content)


def _own_ids(trace: Trace, doc_of: Mapping[str, str]) -> Trace:
    """The trace with the framework's passage ids as chunk ids (and their documents'
    ids as doc ids) instead of the importer's text hashes, when every id names one
    text and no id is used twice."""
    by_source: dict[str, set[str]] = {}
    for c in [*trace.gt_doc_chunks, *trace.chunks]:
        source = c.metadata.get("source_id")
        if isinstance(source, str):
            by_source.setdefault(source, set()).add(c.chunk_id)
    rename = {next(iter(ids)): src for src, ids in by_source.items() if len(ids) == 1}
    known = {c.chunk_id for c in [*trace.gt_doc_chunks, *trace.chunks]}
    if len(set(rename.values()) | (known - rename.keys())) != len(known):
        return trace  # a framework id equal to another chunk's hash id: keep the hashes
    data = trace.model_dump()
    doc_by_chunk: dict[str, str] = {}
    for key in ("gt_doc_chunks", "chunks"):
        for c in data[key]:
            new = rename.get(c["chunk_id"])
            if new is not None:
                c["chunk_id"] = new
                c["doc_id"] = doc_of.get(new, c["doc_id"])
            doc_by_chunk[c["chunk_id"]] = c["doc_id"]
    for key in ("retrieved", "reranked"):
        for h in data[key]:
            h["chunk_id"] = rename.get(h["chunk_id"], h["chunk_id"])
            h["doc_id"] = doc_by_chunk.get(h["chunk_id"], h["doc_id"])
    data["context"] = [rename.get(cid, cid) for cid in data["context"]]
    return Trace.model_validate(data)


class CaptureBase:
    """What both live captures expose: the output path, counts, and gold answers."""

    sink: TraceSink

    @property
    def path(self) -> Path:
        """The ``traces.jsonl`` written."""
        return self.sink.path

    @property
    def written(self) -> int:
        """Traces written so far."""
        return self.sink.written

    @property
    def errors(self) -> int:
        """Capture errors logged (never raised into the pipeline)."""
        return self.sink.errors

    @property
    def pending(self) -> int:
        """Finished runs waiting for their gold answer (see :meth:`set_reference`)."""
        return self.sink.pending_runs

    def set_reference(self, question: str, answer: str) -> None:
        """Attach the gold answer of ``question``: its runs are written (those that
        finished already, waiting in :attr:`pending`, at once)."""
        self.sink.set_reference(question, answer)
