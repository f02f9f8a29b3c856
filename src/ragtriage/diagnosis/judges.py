"""One small protocol per judging step, each with a rules and an LLM implementation.

=====================  =========================  ====================  ======================
step                   protocol (method)          rules                 LLM
=====================  =========================  ====================  ======================
answer evaluation      ``AnswerJudge``            ``RulesAnswerJudge``  ``LLMAnswerJudge``
(Listing 3)            ``.evaluate``              (``evaluate_rules``)  (``evaluate_llm``; a
                                                                        dry run falls back to
                                                                        the rules verdict)
ground-truth chunks    ``GTChunkJudge``           ``RulesGTChunks``     ``LLMGTChunks``
(B.2.1)                ``.ground_truth_chunks``   (given or lexical)    (given or LLM votes)
concept coverage       ``ConceptJudge``           ``RulesConcepts``     ``LLMConcepts``
(B.2.4)                ``.concept_coverage``      (``rules_concept_     (``llm_concept_
                                                  coverage``)           coverage``)
error-type votes       ``TypeJudge``              ``RulesTypeJudge``    ``LLMTypeJudge``
(B.3)                  ``.type_votes``            (``rule_type_votes``) (``llm_type_votes``)
single-step (B.4.1)    ``SingleStepJudge``        ``RulesSingleStep``   ``LLMSingleStep``
                       ``.single_step``           (pooled test scores)  (one all-types prompt)
stage-sequential       ``StageSequentialJudge``   ``RulesStage-         ``LLMStage-
(B.4.2)                ``.stage_sequential``      Sequential`` (forward Sequential`` (stage
                                                  type tests)           checks)
=====================  =========================  ====================  ======================

A :class:`Judges` bundle holds one implementation per step; the strategies
(:mod:`ragtriage.diagnosis.strategies`) read only the bundle, never the judge's kind.
:class:`~ragtriage.diagnosis.engine.Diagnoser` builds a bundle for every trace from a
:data:`JudgesFactory` (the LLM bundle meters that trace's :class:`LLMCalls`); pass
``Diagnoser(..., judges=factory)`` to plug in another judge (a critic model, a metric)
for any step, e.g. ``lambda calls: replace(rules_judges(cfg), types=MyTypeJudge())``.
The single-step and stage-sequential judges receive the strategy's environment, so the
rules versions use the bundle's own ground-truth, concept and type judges.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from ragtriage.config import DiagnosisConfig
from ragtriage.diagnosis._calls import LLMCalls
from ragtriage.diagnosis._context import CaseContext
from ragtriage.diagnosis.answer_eval import evaluate_llm, evaluate_rules
from ragtriage.diagnosis.concepts import (
    ConceptCoverage,
    llm_concept_coverage,
    rules_concept_coverage,
)
from ragtriage.diagnosis.gt_chunks import GTChunks, determine_gt_chunks
from ragtriage.diagnosis.strategies import (
    Attribution,
    CostOptions,
    LLMSingleStep,
    LLMStageSequential,
    RulesSingleStep,
    RulesStageSequential,
    StrategyEnv,
)
from ragtriage.diagnosis.types_llm import llm_type_votes
from ragtriage.diagnosis.types_rules import rule_type_votes
from ragtriage.records import AnswerLabel, Judgement, Trace, Vote

__all__ = [
    "AnswerJudge",
    "ConceptJudge",
    "GTChunkJudge",
    "Judges",
    "JudgesFactory",
    "LLMAnswerJudge",
    "LLMConcepts",
    "LLMGTChunks",
    "LLMTypeJudge",
    "RulesAnswerJudge",
    "RulesConcepts",
    "RulesGTChunks",
    "RulesTypeJudge",
    "SingleStepJudge",
    "StageSequentialJudge",
    "TypeJudge",
    "llm_judges",
    "rules_judges",
]


# -- protocols ------------------------------------------------------------------------


class AnswerJudge(Protocol):
    """Answer evaluation: a label for the trace's answer, or ``label=None`` with an
    ``undetermined_reason`` (``"answer_evaluation: cause"``)."""

    async def evaluate(self, trace: Trace) -> Judgement: ...


class GTChunkJudge(Protocol):
    """The chunks of the trace that hold the ground truth."""

    async def ground_truth_chunks(self, trace: Trace) -> GTChunks: ...


class ConceptJudge(Protocol):
    """The query's concepts and which of them the GT chunks contain."""

    async def concept_coverage(self, trace: Trace, gt_ids: Sequence[str]) -> ConceptCoverage: ...


class TypeJudge(Protocol):
    """``k`` votes on the error type within ``ctx.stage`` (a vote is an
    :class:`~ragtriage.records.ErrorType` of that stage or ``"undetermined"``) and
    evidence lines."""

    async def type_votes(self, ctx: CaseContext, k: int) -> tuple[list[Vote], list[str]]: ...


class SingleStepJudge(Protocol):
    """Single-step (B.4.1): stage and votes from one judgement over all 16 types."""

    async def single_step(
        self, env: StrategyEnv, trace: Trace, label: AnswerLabel
    ) -> Attribution: ...


class StageSequentialJudge(Protocol):
    """Stage-sequential (B.4.2): the first stage (forward) judged at fault."""

    async def stage_sequential(
        self, env: StrategyEnv, trace: Trace, label: AnswerLabel
    ) -> Attribution: ...


@dataclass(frozen=True, slots=True)
class Judges:
    """One judge per step; replace a field (``dataclasses.replace``) to swap a step."""

    answer: AnswerJudge
    gt_chunks: GTChunkJudge
    concepts: ConceptJudge
    types: TypeJudge
    single_step: SingleStepJudge
    stage_sequential: StageSequentialJudge


#: builds the bundle for one trace from that trace's metered LLM access (``None`` for
#: the rules judge)
JudgesFactory = Callable[[LLMCalls | None], Judges]


# -- rules ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RulesAnswerJudge:
    config: DiagnosisConfig

    async def evaluate(self, trace: Trace) -> Judgement:
        return evaluate_rules(trace.example, trace.answer, self.config)


@dataclass(frozen=True, slots=True)
class RulesGTChunks:
    """Given by the dataset or the references, else lexical overlap with the answer."""

    config: DiagnosisConfig

    async def ground_truth_chunks(self, trace: Trace) -> GTChunks:
        return await determine_gt_chunks(trace, self.config, None)


@dataclass(frozen=True, slots=True)
class RulesConcepts:
    async def concept_coverage(self, trace: Trace, gt_ids: Sequence[str]) -> ConceptCoverage:
        return rules_concept_coverage(trace, gt_ids)


@dataclass(frozen=True, slots=True)
class RulesTypeJudge:
    async def type_votes(self, ctx: CaseContext, k: int) -> tuple[list[Vote], list[str]]:
        return rule_type_votes(ctx, k)


def rules_judges(config: DiagnosisConfig) -> Judges:
    """The offline, deterministic bundle."""
    return Judges(
        answer=RulesAnswerJudge(config),
        gt_chunks=RulesGTChunks(config),
        concepts=RulesConcepts(),
        types=RulesTypeJudge(),
        single_step=RulesSingleStep(),
        stage_sequential=RulesStageSequential(),
    )


# -- LLM ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LLMAnswerJudge:
    """Listing 3. In a dry run whose request went unanswered only because of the dry
    run, the rules verdict stands in, so that the later steps' calls get estimated too
    (not when a cached verdict was unreadable: the real run stops there as well)."""

    calls: LLMCalls
    config: DiagnosisConfig

    async def evaluate(self, trace: Trace) -> Judgement:
        judgement = await evaluate_llm(trace, self.calls)
        if judgement.label is None and self.calls.dry_run and self.calls.skipped_by_dry_run:
            return evaluate_rules(trace.example, trace.answer, self.config)
        return judgement


@dataclass(frozen=True, slots=True)
class LLMGTChunks:
    """LLM votes on the GT documents' chunks; with ``use_given`` the dataset's or the
    references' chunks first (off: the paper's protocol)."""

    calls: LLMCalls
    config: DiagnosisConfig
    use_given: bool = True

    async def ground_truth_chunks(self, trace: Trace) -> GTChunks:
        return await determine_gt_chunks(trace, self.config, self.calls, use_given=self.use_given)


@dataclass(frozen=True, slots=True)
class LLMConcepts:
    """Listing 5 and one batched containment call (``batched=False``: one per concept,
    Listing 6)."""

    calls: LLMCalls
    batched: bool = True

    async def concept_coverage(self, trace: Trace, gt_ids: Sequence[str]) -> ConceptCoverage:
        return await llm_concept_coverage(trace, gt_ids, self.calls, batched=self.batched)


@dataclass(frozen=True, slots=True)
class LLMTypeJudge:
    calls: LLMCalls

    async def type_votes(self, ctx: CaseContext, k: int) -> tuple[list[Vote], list[str]]:
        return await llm_type_votes(ctx, k, self.calls)


def llm_judges(config: DiagnosisConfig, calls: LLMCalls, options: CostOptions) -> Judges:
    """The LLM bundle for one trace; ``options`` picks the cost savers."""
    return Judges(
        answer=LLMAnswerJudge(calls, config),
        gt_chunks=LLMGTChunks(calls, config, use_given=options.gt_from_data),
        concepts=LLMConcepts(calls, batched=options.batch_concepts),
        types=LLMTypeJudge(calls),
        single_step=LLMSingleStep(calls),
        stage_sequential=LLMStageSequential(calls),
    )
