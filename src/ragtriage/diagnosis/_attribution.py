"""What a strategy or a strategy-level judge returns, and the pieces they share.

Below both :mod:`~ragtriage.diagnosis.judges` (the single-step and stage-sequential judges
build an :class:`Attribution`) and :mod:`~ragtriage.diagnosis.strategies` (which calls
them): neither imports the other's internals through here.
"""

from __future__ import annotations

from dataclasses import dataclass

from ragtriage.config import DiagnosisConfig
from ragtriage.diagnosis._context import CaseContext
from ragtriage.diagnosis.concepts import ConceptCoverage
from ragtriage.diagnosis.gt_chunks import GTChunks
from ragtriage.records import AnswerLabel, Stage, Trace, Vote
from ragtriage.text import detect_language

__all__ = ["Attribution", "case_context", "gt_evidence", "without_gt"]


@dataclass(frozen=True, slots=True)
class Attribution:
    """Stage, votes and evidence for one failing example; ``stage is None`` when the
    stage could not be decided (``stage_reason`` then starts with the step name)."""

    stage: Stage | None
    stage_reason: str
    votes: tuple[Vote, ...] = ()
    evidence: tuple[str, ...] = ()
    gt: GTChunks | None = None
    coverage: ConceptCoverage | None = None


def _language(trace: Trace) -> str:
    return trace.example.language or detect_language(trace.example.query)


def case_context(
    trace: Trace,
    stage: Stage,
    label: AnswerLabel,
    gt: GTChunks | None,
    cov: ConceptCoverage | None,
    env_config: DiagnosisConfig | None = None,
    answer_rule: str | None = None,
) -> CaseContext:
    """What the type judge of ``stage`` may see."""
    return CaseContext(
        trace=trace,
        stage=stage,
        answer_label=label,
        answer_rule=answer_rule,
        language=_language(trace),
        gt_chunk_ids=gt.ids if gt is not None else (),
        concepts=cov.concepts if cov is not None else (),
        concept_hits=dict(cov.hits) if cov is not None else {},
        config=env_config,
    )


def gt_evidence(gt: GTChunks | None, cov: ConceptCoverage | None) -> list[str]:
    """Evidence lines on the ground-truth chunks and the concepts they cover."""
    out: list[str] = []
    if gt is not None:
        out.append(f"ground-truth chunks ({gt.source or 'none'}): {gt.reason}")
        if gt.unlocated_references:
            out.append(f"{len(gt.unlocated_references)} reference(s) not found in the GT documents")
    if cov is not None and cov.concepts:
        missing = [c for c in cov.concepts if not cov.hits.get(c)]
        text = f"concepts ({cov.method}): {len(cov.concepts) - len(missing)}/{len(cov.concepts)} in GT chunks"
        if missing:
            text += f"; missing: {', '.join(missing[:5])}"
        out.append(text)
    if cov is not None and cov.note:
        out.append(f"concepts: {cov.note}")
    return out


def without_gt(trace: Trace, gt: GTChunks) -> Attribution | None:
    """An answerable question whose ground-truth chunks cannot be found (no chunks of
    its documents in the trace, references that match nothing) gives the cascade
    nothing to follow: no stage can be blamed on evidence, so the step is undetermined
    (blaming generation would be a guess). Unanswerable questions go on: the generator
    should have declined."""
    if gt.ids or not trace.example.answerable:
        return None
    return Attribution(
        None,
        f"stage_attribution: no ground-truth chunk could be identified ({gt.reason})",
        (),
        (f"ground-truth chunks: none ({gt.reason})",),
        gt,
        None,
    )
