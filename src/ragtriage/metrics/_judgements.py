"""Judgement records shared by the answer/context metrics (seed 003, RAGAS-style metrics).

A :class:`TraceJudgements` holds everything one judge decided about one trace: the claims of
the answer with a verdict each, a relevance verdict per context chunk, which ground-truth
sentences the context supports, a reverse-generated question and whether the answer is
non-committal. Metrics are pure functions over these records, so claims are extracted once
and shared by every metric that needs them.
"""

from __future__ import annotations

from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from ragtriage.records import Trace

__all__ = [
    "ClaimVerdict",
    "MetricScore",
    "TraceJudge",
    "TraceJudgements",
    "Verdict",
]

Verdict = Literal["supported", "not_supported", "contradicted"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class ClaimVerdict(_Frozen):
    claim: str
    verdict: Verdict


class TraceJudgements(_Frozen):
    """What a judge decided about one trace; ``None`` = that part could not be judged and
    the matching ``*_reason`` says why."""

    judge: str
    claims: tuple[ClaimVerdict, ...] | None = None
    claims_reason: str | None = None
    chunk_relevant: tuple[bool, ...] | None = None
    chunks_reason: str | None = None
    gt_attributed: tuple[bool, ...] | None = None
    gt_reason: str | None = None
    questions: tuple[str, ...] | None = None
    noncommittal: bool | None = None
    questions_reason: str | None = None


class MetricScore(_Frozen):
    """One metric of one trace: a value, or ``undetermined`` with a reason (never NaN)."""

    value: float | None = Field(default=None, allow_inf_nan=False)
    judge: str
    undetermined_reason: str | None = None

    @property
    def undetermined(self) -> bool:
        return self.value is None


class TraceJudge(Protocol):
    """One judging step for the evaluation metrics (rules/offline or LLM)."""

    name: str

    def judge_many(self, traces: list[Trace]) -> list[TraceJudgements]: ...
