"""SelfCheck-style hallucination score from sampled answers, NLI-free (seed 003).

For each sentence of the answer, the share of sampled answers that do not support it
(the offline claim rule: content-token overlap plus a number check) — 0 means every sample
agrees, 1 means none does. The contradiction score is the share of sentences that at least
one sample contradicts (overlapping wording, another number). Samples come from
``trace.metadata["sampled_answers"]`` (a pipeline that re-generated) or from
:func:`sample_answers` (the configured LLM, seeded, at temperature 1).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from ragtriage.metrics._context import answer_claims, context_texts
from ragtriage.metrics._judgements import MetricScore
from ragtriage.metrics._offline import claim_verdict
from ragtriage.records import Trace

if TYPE_CHECKING:  # the LLM layer (openai, aiohttp) is imported when a call is made
    from ragtriage.llm import ChatRequest, LLMRunner

__all__ = ["sample_answers", "samples_of", "selfcheck"]

_SYSTEM: Final = "Answer the question from the context. Be concise."


def samples_of(trace: Trace) -> list[str]:
    raw = trace.metadata.get("sampled_answers")
    return [s for s in raw if isinstance(s, str) and s.strip()] if isinstance(raw, list) else []


def selfcheck(
    answer: str, samples: Sequence[str], judge: str = "offline"
) -> dict[str, MetricScore]:
    """``selfcheck`` (hallucination, 0–1) and ``selfcheck_contradiction`` (0–1)."""
    names = ("selfcheck", "selfcheck_contradiction")
    sents = answer_claims(answer)
    if not sents:
        return {n: MetricScore(judge=judge, undetermined_reason="empty answer") for n in names}
    if not samples:
        return {
            n: MetricScore(
                judge=judge,
                undetermined_reason="no sampled answers (the pipeline "
                "cannot re-generate and no LLM is configured)",
            )
            for n in names
        }
    verdicts = [[claim_verdict(s, sample) for sample in samples] for s in sents]
    halluc = sum(sum(v != "supported" for v in row) / len(row) for row in verdicts) / len(sents)
    contra = sum(any(v == "contradicted" for v in row) for row in verdicts) / len(sents)
    return {
        "selfcheck": MetricScore(value=halluc, judge=judge),
        "selfcheck_contradiction": MetricScore(value=contra, judge=judge),
    }


def sample_answers(
    traces: Sequence[Trace], runner: LLMRunner, *, n: int = 5, seed: int = 0
) -> list[list[str]]:
    """``n`` seeded samples per trace at temperature 1 (reproducible from the cache)."""

    from ragtriage.llm import ChatRequest, LLMFailure, run_sync

    def request(t: Trace) -> ChatRequest:
        ctx = "\n".join(context_texts(t))
        return ChatRequest.of(
            _SYSTEM,
            f"Context:\n{ctx}\n\nQuestion: {t.example.query}",
            temperature=1.0,
            n=n,
            seed=seed,
            max_tokens=256,
        )

    async def go() -> list[list[str]]:
        outs = await asyncio.gather(
            *(runner.try_complete(request(t), purpose="selfcheck") for t in traces)
        )
        return [[] if isinstance(o, LLMFailure) else list(o.texts) for o in outs]

    return run_sync(go())
