"""The backward stage cascade, declared once (seed 000, App. B.2.2-B.2.4, with the
documented extensions).

:data:`CASCADE` lists the steps in order; the first that makes a call decides. The ragec
strategy runs it (measuring the concept coverage -- which may cost LLM calls -- only when
the steps before :attr:`CascadeStep.after_concepts` decided nothing), and
:func:`classify_stage` runs it for a coverage already known. The steps themselves live in
:mod:`ragtriage.diagnosis.stage` and :mod:`ragtriage.diagnosis.declined`.

| step | decides |
|---|---|
| references | generation: every located reference sentence was held whole by a chunk of the context (``reference_extension``) |
| question parts | one entity's evidence never reached the generator (``entity_extension``): retrieval or reranking, chunking when it was cut from its subject or -- for a retrieval call -- the GT chunks' shape is at fault |
| declined facts | the facts a partially abstaining (or wrongly valued) answer lacks never reached the generator (``entity_extension``): reranking or retrieval |
| GT flow | B.2.2-B.2.3: generation when more than ``generator_gt_share`` of the GT chunks reached the generator (or there are none), reranking when one was retrieved and dropped -- retrieval instead when the evidence the answer lacks (its reference sentence's chunk, or a GT chunk holding the missing fact) was never retrieved, chunking when no chunk holds that reference whole (issue 27) |
| chunk shape | over- or underchunking of GT chunks that were not retrieved (``chunking_extension``) |
| depth | retrieval when no GT chunk was retrieved from a list of at most ``shallow_retrieval`` |
| concept coverage | B.2.4: chunking below ``concept_coverage``, else retrieval; with ``chunking_extension`` chunking only on positive evidence (an anaphor in a GT chunk other than a court speaking of itself, a reference cut by a boundary), else retrieval |

The steps read the answer judgement through its
:class:`~ragtriage.diagnosis.findings.AnswerFindings` (the rules judge's deciding rule, or
the LLM judge's findings: declined parts, wrong values), never through which judge spoke:
the question-parts step takes an entity the findings name as declined as the answer's
declining it, the declined-facts step fires on a fact the answer lacks.

A reranking or retrieval call of the references, declined-facts or GT-flow steps gives way to
chunking when a chunk boundary cut a reference apart and only part of it reached the
generator (:func:`~ragtriage.diagnosis.stage.before_split_reference`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Final

from ragtriage._regex import lazy_compile
from ragtriage.config import DiagnosisConfig
from ragtriage.diagnosis.declined import stage_from_declined, stage_from_missing
from ragtriage.diagnosis.findings import AnswerFindings
from ragtriage.diagnosis.stage import (
    GTFlow,
    StageCall,
    before_split_reference,
    gt_flow,
    reference_cut,
    stage_from_chunk_shape,
    stage_from_coverage,
    stage_from_depth,
    stage_from_flow,
    stage_from_parts,
    stage_from_references,
)
from ragtriage.diagnosis.types_rules import anaphors
from ragtriage.records import Chunk, Stage, Trace

__all__ = [
    "CASCADE",
    "CascadeCase",
    "CascadeStep",
    "cascade_call",
    "classify_stage",
]


@dataclass(frozen=True, slots=True)
class CascadeCase:
    """What the cascade's steps read about one failing example."""

    trace: Trace
    #: the GT chunk ids as found (``flow.gt_ids`` is the same without repeats)
    gt_ids: tuple[str, ...]
    flow: GTFlow
    config: DiagnosisConfig
    #: the answer-evaluation rule that failed the answer (rules judge)
    answer_rule: str | None = None
    #: the concept coverage and the number of concepts scored (steps after the concepts)
    coverage: float | None = None
    n_concepts: int = 0
    #: what the answer judgement found (``None``: the findings of ``answer_rule``)
    findings: AnswerFindings | None = None

    @property
    def answer_findings(self) -> AnswerFindings:
        """The answer judgement's findings, whichever judge gave them."""
        if self.findings is not None:
            return self.findings
        return AnswerFindings.of_rule(self.answer_rule)

    def with_concepts(self, coverage: float | None, n_concepts: int) -> CascadeCase:
        return replace(self, coverage=coverage, n_concepts=n_concepts)


@dataclass(frozen=True, slots=True)
class CascadeStep:
    """One step: a call, or ``None`` to go on."""

    name: str
    decide: Callable[[CascadeCase], StageCall | None]
    #: the concept coverage is measured before this step (and reported whenever the
    #: cascade gets this far)
    after_concepts: bool = False


def _references(c: CascadeCase) -> StageCall | None:
    return stage_from_references(c.trace, c.flow, c.config)


def _question_parts(c: CascadeCase) -> StageCall | None:
    if not c.config.entity_extension:
        return None
    declined = tuple(d.part for d in c.answer_findings.declined)
    parts = stage_from_parts(c.trace, c.gt_ids, declined=declined)
    if parts is not None and parts.stage is Stage.RETRIEVAL:
        # the entity's evidence was never retrieved; if the GT chunks' shape is at fault
        # (cut into small pieces, or oversized), chunking is the earlier cause
        return stage_from_chunk_shape(c.trace, c.flow, c.config) or parts
    return parts


def _declined_facts(c: CascadeCase) -> StageCall | None:
    declined = stage_from_declined(c.trace, c.flow, c.config, c.answer_findings)
    return before_split_reference(c.trace, c.flow, c.config, declined)


def _gt_flow(c: CascadeCase) -> StageCall | None:
    call = stage_from_flow(c.flow, c.config)
    if call is not None and call.stage is Stage.RERANKING and c.config.entity_extension:
        # a dropped ground-truth chunk is not the evidence the answer lacks: that
        # evidence's own chunks decide where it was lost (never retrieved: retrieval)
        missing = stage_from_missing(c.trace, c.flow, located="evidence")
        if missing is not None and missing.stage in (Stage.RETRIEVAL, Stage.CHUNKING):
            call = missing
    return before_split_reference(c.trace, c.flow, c.config, call)


def _chunk_shape(c: CascadeCase) -> StageCall | None:
    return stage_from_chunk_shape(c.trace, c.flow, c.config)


def _depth(c: CascadeCase) -> StageCall | None:
    return stage_from_depth(c.trace, c.flow, c.config)


def _concept_coverage(c: CascadeCase) -> StageCall | None:
    call = stage_from_coverage(c.coverage, c.n_concepts, c.config)
    if call.stage is not Stage.CHUNKING or not c.config.chunking_extension:
        return call
    # chunking only on positive evidence (issue 27): a query concept missing from the GT
    # chunks that the documents state elsewhere is no cut by itself -- a record's header
    # names the patient, a judgment's the defendant, and a retriever that missed the
    # body chunk missed it by its other words. A GT chunk that leans on context it lacks
    # (an anaphor: "the defendant", "该公司") or a reference no chunk holds whole is one
    cm = c.trace.chunk_map()
    gt = [cm[i] for i in c.flow.gt_ids if i in cm]
    if _leans_on_subject(gt, c.trace.example.query) or reference_cut(c.trace, c.flow.gt_ids):
        return call
    return StageCall(
        Stage.RETRIEVAL,
        f"{call.reason}, but no GT chunk leans on a subject it lacks and no reference is "
        "cut by a chunk boundary: no sign that chunking parted the evidence, so retrieval",
    )


#: the court speaking of itself ("本院", "this court"): a judgment's every chunk says it, and
#: it stands in for no subject a question names unless the question asks about a court
_RE_COURT_SELF = lazy_compile(r"^(?:本院|该院|该法院|(?:the|this)\s+court)$", re.IGNORECASE)
_RE_ASKS_COURT = lazy_compile(r"法院|\bcourts?\b", re.IGNORECASE)


def _leans_on_subject(gt: Sequence[Chunk], query: str) -> bool:
    """A ground-truth chunk refers to a subject by an anaphor instead of naming it
    (:func:`anaphors`), other than a court speaking of itself when the question is not
    about a court."""
    court_asked = _RE_ASKS_COURT.search(query) is not None
    return any(court_asked or not _RE_COURT_SELF.match(a) for a in anaphors(gt))


#: the steps in order (see the module table); the last always decides
CASCADE: Final[tuple[CascadeStep, ...]] = (
    CascadeStep("references", _references),
    CascadeStep("question parts", _question_parts),
    CascadeStep("declined facts", _declined_facts),
    CascadeStep("GT flow", _gt_flow),
    CascadeStep("chunk shape", _chunk_shape, after_concepts=True),
    CascadeStep("depth", _depth, after_concepts=True),
    CascadeStep("concept coverage", _concept_coverage, after_concepts=True),
)

_SPLIT = next(i for i, s in enumerate(CASCADE) if s.after_concepts)
if any(not s.after_concepts for s in CASCADE[_SPLIT:]):
    raise RuntimeError("cascade: the steps after the concepts must come last")
#: the steps before the concept coverage is measured, and the rest
BEFORE_CONCEPTS: Final = CASCADE[:_SPLIT]
AFTER_CONCEPTS: Final = CASCADE[_SPLIT:]


def cascade_call(case: CascadeCase, steps: Sequence[CascadeStep] = CASCADE) -> StageCall | None:
    """The call of the first of ``steps`` that makes one; ``None`` when none does."""
    for step in steps:
        call = step.decide(case)
        if call is not None:
            return call
    return None


def classify_stage(
    trace: Trace,
    gt_ids: Sequence[str],
    coverage: float | None,
    n_concepts: int,
    config: DiagnosisConfig,
    *,
    answer_rule: str | None = None,
    findings: AnswerFindings | None = None,
) -> StageCall:
    """The whole backward cascade (:data:`CASCADE`) for a known concept coverage, as the
    diagnoser's ragec strategy runs it; ``answer_rule`` is the rules judge's deciding
    rule, ``findings`` the answer judgement's findings (either judge's; by default those
    of ``answer_rule``), which the question-parts and declined-facts steps read."""
    ids = tuple(gt_ids)
    case = CascadeCase(
        trace, ids, gt_flow(trace, ids), config, answer_rule, coverage, n_concepts, findings
    )
    call = cascade_call(case)
    if call is None:  # the coverage step always decides
        raise RuntimeError("stage cascade: no step decided")
    return call
