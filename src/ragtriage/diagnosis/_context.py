"""What an error-type judge may see about one failing example.

The stage cascade builds a :class:`CaseContext`; type judges (rules or LLM) read only
the parts that belong to the attributed stage (seed 000, App. B.3: "only the stage's own
context goes to the judge").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ragtriage.config import DiagnosisConfig
from ragtriage.records import AnswerLabel, Chunk, ErrorType, Stage, Trace

__all__ = ["CaseContext", "TypeEvidence"]


@dataclass(frozen=True, slots=True)
class CaseContext:
    """One failing example, with everything the cascade established about it."""

    trace: Trace
    stage: Stage
    answer_label: AnswerLabel
    language: str
    gt_chunk_ids: tuple[str, ...] = ()
    concepts: tuple[str, ...] = ()
    #: concept -> ids of GT chunks that contain it
    concept_hits: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: the diagnosis settings (``None``: the defaults)
    config: DiagnosisConfig | None = None
    #: id of the answer-evaluation rule that failed the answer, when the rules judged it
    answer_rule: str | None = None

    @property
    def chunks(self) -> dict[str, Chunk]:
        return self.trace.chunk_map()

    def texts(self, ids: tuple[str, ...] | list[str]) -> list[str]:
        cm = self.chunks
        return [cm[i].text for i in ids if i in cm]

    @property
    def context_text(self) -> str:
        """The text the generator actually saw (chunks in prompt order)."""
        return "\n".join(self.texts(list(self.trace.context)))


@dataclass(frozen=True, slots=True)
class TypeEvidence:
    """One type test that fired: how strongly (0..1] and why, in words."""

    error_type: ErrorType
    score: float
    evidence: str
