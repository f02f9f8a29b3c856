"""Scores beyond the RAGAS-style ones, per trace: claim-level answer correctness
(RAGChecker), G-Eval rubrics and SelfCheck."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ragtriage.embedding import Embedder
from ragtriage.metrics._correctness import (
    Correctness,
    OfflineCorrectness,
    correctness_input,
    correctness_scores,
)
from ragtriage.metrics._geval import DEFAULT_RUBRICS, g_eval_llm, g_eval_offline, load_rubrics
from ragtriage.metrics._judgements import MetricScore
from ragtriage.metrics._selfcheck import sample_answers, samples_of, selfcheck
from ragtriage.records import Trace

if TYPE_CHECKING:  # the SDK is imported by the commands that call an LLM
    from ragtriage.llm import LLMRunner

__all__ = ["extra_scores"]


def extra_scores(
    traces: list[Trace],
    runner: LLMRunner | None,
    emb: Embedder,
    *,
    g_eval: bool,
    rubrics: Path | None,
    selfcheck_n: int,
    seed: int,
    correctness: bool = True,
    correctness_n: int = 3,
) -> list[dict[str, MetricScore]]:
    """answer_correctness, g_eval and selfcheck scores per trace (LLM when a runner is
    given, else offline; G-Eval is not offered offline: undetermined with the reason)."""
    out: list[dict[str, MetricScore]] = [{} for _ in traces]
    if correctness:
        impl: Correctness
        if runner is not None:
            from ragtriage.metrics._correctness_llm import LLMCorrectness

            impl = LLMCorrectness(runner, n=correctness_n, seed=seed)
        else:
            impl = OfflineCorrectness(emb)
        results = impl.score_many([correctness_input(t) for t in traces])
        for row, res in zip(out, results, strict=True):
            row.update(correctness_scores(res, impl.name))
    if g_eval:
        rubs = load_rubrics(rubrics) if rubrics is not None else DEFAULT_RUBRICS
        ge = (
            g_eval_llm(traces, rubs, runner)
            if runner is not None
            else [g_eval_offline(t, rubs, emb) for t in traces]
        )
        for row, more in zip(out, ge, strict=True):
            row.update(more)
    sampled = (
        sample_answers(traces, runner, n=selfcheck_n, seed=seed)
        if runner is not None and selfcheck_n > 0
        else [[] for _ in traces]
    )
    for row, t, extra_samples in zip(out, traces, sampled, strict=True):
        judge = "offline" if not extra_samples else "offline+llm-samples"
        row.update(selfcheck(t.answer, samples_of(t) + extra_samples, judge))
    return out
