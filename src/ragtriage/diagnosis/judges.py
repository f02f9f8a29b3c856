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
rules versions use the bundle's own ground-truth, concept and type judges (the type
scores they weigh come from a type judge that offers them, :class:`ScoredTypeJudge`, as
the rules one does). This module does not import the strategies; both build on
:mod:`ragtriage.diagnosis._attribution`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Protocol, runtime_checkable

from ragtriage.config import DiagnosisConfig
from ragtriage.diagnosis._attribution import Attribution, case_context, gt_evidence, without_gt
from ragtriage.diagnosis._calls import LLMCalls
from ragtriage.diagnosis._context import CaseContext, TypeEvidence
from ragtriage.diagnosis.answer_eval import evaluate_llm, evaluate_llm_findings, evaluate_rules
from ragtriage.diagnosis.concepts import (
    ConceptCoverage,
    llm_concept_coverage,
    rules_concept_coverage,
)
from ragtriage.diagnosis.findings import AnswerFindings
from ragtriage.diagnosis.gt_chunks import GTChunks, determine_gt_chunks
from ragtriage.diagnosis.stage import GTFlow, gt_flow
from ragtriage.diagnosis.types_llm import (
    llm_type_votes,
    parse_stage_check,
    parse_votes,
    single_step,
    stage_check,
    stage_prompt,
)
from ragtriage.diagnosis.types_rules import rule_type_evidence, rule_type_votes
from ragtriage.diagnosis.votes import UNDETERMINED, apportion_votes, summarize_votes
from ragtriage.records import AnswerLabel, ErrorType, Judgement, Stage, Trace, Vote, types_of_stage

__all__ = [
    "PAPER_PROTOCOL",
    "AnswerJudge",
    "ConceptJudge",
    "CostOptions",
    "FindingAnswerJudge",
    "GTChunkJudge",
    "Judges",
    "JudgesFactory",
    "LLMAnswerJudge",
    "LLMConcepts",
    "LLMGTChunks",
    "LLMSingleStep",
    "LLMStageSequential",
    "LLMTypeJudge",
    "RulesAnswerJudge",
    "RulesConcepts",
    "RulesGTChunks",
    "RulesSingleStep",
    "RulesStageSequential",
    "RulesTypeJudge",
    "ScoredTypeJudge",
    "SingleStepJudge",
    "StageSequentialJudge",
    "StrategyEnv",
    "TypeJudge",
    "answer_with_findings",
    "llm_judges",
    "rules_judges",
]


# -- protocols ------------------------------------------------------------------------


class AnswerJudge(Protocol):
    """Answer evaluation: a label for the trace's answer, or ``label=None`` with an
    ``undetermined_reason`` (``"answer_evaluation: cause"``)."""

    async def evaluate(self, trace: Trace) -> Judgement: ...


@runtime_checkable
class FindingAnswerJudge(Protocol):
    """An answer judge that also says what it found (declined parts, wrong values ...),
    in the form the stage cascade reads (:mod:`ragtriage.diagnosis.findings`); the
    findings are ``None`` exactly when the judgement is undetermined. An answer judge
    without this method is read through its judgement's rule
    (:meth:`AnswerFindings.of_rule`)."""

    async def evaluate_with_findings(
        self, trace: Trace
    ) -> tuple[Judgement, AnswerFindings | None]: ...


async def answer_with_findings(
    judge: AnswerJudge, trace: Trace
) -> tuple[Judgement, AnswerFindings | None]:
    """``judge``'s verdict on ``trace`` and its findings (see :class:`FindingAnswerJudge`)."""
    if isinstance(judge, FindingAnswerJudge):
        return await judge.evaluate_with_findings(trace)
    judgement = await judge.evaluate(trace)
    if judgement.label is None:
        return judgement, None
    return judgement, AnswerFindings.of_rule(judgement.rule)


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


@runtime_checkable
class ScoredTypeJudge(Protocol):
    """A type judge that also scores the types of ``ctx.stage`` its tests find, strongest
    first (the rules single-step pools these scores; the rules stage-sequential asks
    whether a stage's tests fire). A bundle whose type judge only votes leaves those two
    to the rules type tests (:func:`~ragtriage.diagnosis.types_rules.rule_type_evidence`)."""

    def type_evidence(self, ctx: CaseContext) -> list[TypeEvidence]: ...


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


@dataclass(frozen=True, slots=True)
class StrategyEnv:
    """What a strategy needs besides the trace: the thresholds and one judge per step."""

    config: DiagnosisConfig
    judges: Judges
    #: the answer-evaluation rule that failed the answer (rules judge; type tests read it)
    answer_rule: str | None = None
    #: what the answer judgement found (the stage cascade reads it; ``None``: the
    #: findings of ``answer_rule``)
    findings: AnswerFindings | None = None


@dataclass(frozen=True, slots=True)
class CostOptions:
    """Cost savers of the LLM judge; all off reproduces the paper's protocol.

    ``n_sampling``: one ``n=K`` request per vote round instead of K requests;
    ``batch_concepts``: one containment call for all concepts instead of one each;
    ``gt_from_data``: take GT chunks from the dataset or references when they exist
    instead of asking the LLM.
    """

    n_sampling: bool = True
    batch_concepts: bool = True
    gt_from_data: bool = True


PAPER_PROTOCOL = CostOptions(n_sampling=False, batch_concepts=False, gt_from_data=False)


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

    def type_evidence(self, ctx: CaseContext) -> list[TypeEvidence]:
        return rule_type_evidence(ctx)


def _type_evidence(judges: Judges) -> Callable[[CaseContext], list[TypeEvidence]]:
    """The bundle's type scores (:class:`ScoredTypeJudge`), else the rules type tests'."""
    types = judges.types
    return types.type_evidence if isinstance(types, ScoredTypeJudge) else rule_type_evidence


#: stage-sequential (rules): a stage "has an error" when one of its tests scores this much
_FIRES = 0.5
_FORWARD = (Stage.CHUNKING, Stage.RETRIEVAL, Stage.RERANKING)
#: single-step (rules): generation scores are multiplied by this when at most half of
#: the GT chunks reached the generator
_GEN_DAMP = 0.7


def _stage_can_fail(stage: Stage, flow: GTFlow) -> bool:
    """Whether the GT chunks' path leaves room for ``stage`` to be at fault (rules
    single-step and stage-sequential): chunking and retrieval only when some GT chunk
    was not retrieved, reranking only when a retrieved GT chunk was not forwarded to the
    generator; none of the three without GT chunks. Generation can always fail. Without
    this gate a test that merely describes the pipeline (small chunks, a same-document
    head of the list) would blame a stage that delivered everything."""
    if stage is Stage.GENERATION:
        return True
    if not flow.gt_ids:
        return False
    if stage is Stage.RERANKING:
        return bool(flow.not_forwarded)
    return len(flow.retrieved) < len(flow.gt_ids)


def _pooled_scores(
    ctxs: Sequence[CaseContext], evidence: Callable[[CaseContext], list[TypeEvidence]]
) -> tuple[dict[ErrorType, float], list[str]]:
    scores: dict[ErrorType, float] = {}
    lines: list[str] = []
    for ctx in ctxs:
        flow = gt_flow(ctx.trace, ctx.gt_chunk_ids)
        if not _stage_can_fail(ctx.stage, flow):
            continue
        # a generator that never saw most of the GT chunks is a less likely root cause:
        # its tests (answer vs context vs ground truth) are damped, not dropped
        share = flow.context_share
        damp = (
            _GEN_DAMP
            if ctx.stage is Stage.GENERATION and share is not None and share <= 0.5
            else 1.0
        )
        for ev in evidence(ctx):
            score = ev.score * damp
            if score > scores.get(ev.error_type, 0.0):
                scores[ev.error_type] = score
            lines.append(f"{ev.error_type} ({score:.2f}): {ev.evidence}")
    return scores, lines


def _by_mode(
    votes: tuple[Vote, ...],
    evidence: list[str],
    gt: GTChunks | None,
    cov: ConceptCoverage | None,
) -> Attribution:
    """Single-step: the stage is implicit, the stage of the modal type."""
    summary = summarize_votes(votes)
    if summary.mode is None:
        return Attribution(
            None,
            "type_classification: no readable type among the single-step votes",
            votes,
            tuple(evidence),
            gt,
            cov,
        )
    reason = f"single-step: stage of the modal type {summary.mode} ({summary.mode.title})"
    return Attribution(summary.mode.stage, reason, votes, tuple(evidence), gt, cov)


@dataclass(frozen=True, slots=True)
class RulesSingleStep:
    """The type tests of every stage that can have failed, pooled (the bundle's GT
    chunks, concepts and type scores feed them); votes in proportion to the pooled
    scores."""

    async def single_step(self, env: StrategyEnv, trace: Trace, label: AnswerLabel) -> Attribution:
        cfg = env.config
        gt = await env.judges.gt_chunks.ground_truth_chunks(trace)
        missing = without_gt(trace, gt)
        if missing is not None:
            return missing
        cov = await env.judges.concepts.concept_coverage(trace, gt.ids)
        base = case_context(trace, Stage.GENERATION, label, gt, cov, cfg, env.answer_rule)
        scores, lines = _pooled_scores(
            [replace(base, stage=s) for s in Stage], _type_evidence(env.judges)
        )
        votes = apportion_votes(scores, cfg.k)
        return _by_mode(tuple(votes), [*gt_evidence(gt, cov), *lines], gt, cov)


@dataclass(frozen=True, slots=True)
class RulesStageSequential:
    """The first stage (chunking → retrieval → reranking) that can have failed and whose
    type tests fire (the bundle's type scores); generation by elimination. Votes from
    the bundle's type judge."""

    async def stage_sequential(
        self, env: StrategyEnv, trace: Trace, label: AnswerLabel
    ) -> Attribution:
        cfg = env.config
        judges = env.judges
        gt = await judges.gt_chunks.ground_truth_chunks(trace)
        missing = without_gt(trace, gt)
        if missing is not None:
            return missing
        cov = await judges.concepts.concept_coverage(trace, gt.ids)
        base = case_context(trace, Stage.GENERATION, label, gt, cov, cfg, env.answer_rule)
        evidence = gt_evidence(gt, cov)
        flow = gt_flow(trace, gt.ids)
        type_evidence = _type_evidence(judges)
        for stage in _FORWARD:
            if not _stage_can_fail(stage, flow):
                evidence.append(
                    f"stage-sequential: {stage.value} delivered every GT chunk; not tested"
                )
                continue
            ctx = replace(base, stage=stage)
            fired = [e for e in type_evidence(ctx) if e.score >= _FIRES]
            if fired:
                votes, more = await judges.types.type_votes(ctx, cfg.k)
                best = max(fired, key=lambda e: e.score)
                reason = (
                    f"stage-sequential: first stage whose tests fire ({best.error_type} "
                    f"{best.score:.2f}: {best.evidence})"
                )
                return Attribution(stage, reason, tuple(votes), (*evidence, *more), gt, cov)
            evidence.append(f"stage-sequential: no {stage.value} test fired")
        votes, more = await judges.types.type_votes(base, cfg.k)
        reason = "stage-sequential: no earlier stage's tests fired; generation by elimination"
        return Attribution(Stage.GENERATION, reason, tuple(votes), (*evidence, *more), gt, cov)


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

    async def evaluate_with_findings(self, trace: Trace) -> tuple[Judgement, AnswerFindings | None]:
        """The verdict and the reply's findings (the rules judge's when the reply has
        none readable; see :func:`~ragtriage.diagnosis.answer_eval.evaluate_llm_findings`)."""
        judgement, findings = await evaluate_llm_findings(trace, self.calls, self.config)
        if judgement.label is None and self.calls.dry_run and self.calls.skipped_by_dry_run:
            rules = evaluate_rules(trace.example, trace.answer, self.config)
            return rules, AnswerFindings.of_rule(rules.rule)
        return judgement, findings


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


@dataclass(frozen=True, slots=True)
class LLMSingleStep:
    """K samples of one prompt over all 16 types with all the context."""

    calls: LLMCalls

    async def single_step(self, env: StrategyEnv, trace: Trace, label: AnswerLabel) -> Attribution:
        texts, failures = await self.calls.samples(
            single_step(trace), env.config.k, purpose="type_single_step"
        )
        votes = parse_votes(texts, list(ErrorType))
        evidence = []
        if failures:
            evidence.append(f"LLM type judge: request failed: {failures[0].reason}")
        return _by_mode(tuple(votes), evidence, None, None)


@dataclass(frozen=True, slots=True)
class LLMStageSequential:
    """K samples per forward stage asking "is there an error here?"; the first stage
    where typed samples outnumber "no error" wins, generation by elimination."""

    calls: LLMCalls

    async def stage_sequential(
        self, env: StrategyEnv, trace: Trace, label: AnswerLabel
    ) -> Attribution:
        cfg = env.config
        calls = self.calls
        evidence: list[str] = []
        for stage in _FORWARD:
            texts, failures = await calls.samples(
                stage_check(trace, stage), cfg.k, purpose=f"stage_check_{stage.value}"
            )
            votes, no_error = parse_stage_check(texts, types_of_stage(stage))
            typed = sum(1 for v in votes if v != UNDETERMINED)
            unreadable = len(votes) - no_error - typed
            if failures:
                evidence.append(
                    f"stage-sequential {stage.value}: request failed: {failures[0].reason}"
                )
            if typed > no_error:
                reason = (
                    f"stage-sequential: {typed}/{len(votes)} samples found a {stage.value} "
                    f"error ({no_error} saw none, {unreadable} unreadable)"
                )
                if no_error:
                    evidence.append(
                        f"{no_error} 'no error' sample(s) recorded as undetermined votes"
                    )
                return Attribution(stage, reason, tuple(votes), tuple(evidence))
            evidence.append(
                f"stage-sequential {stage.value}: {no_error} no-error, {typed} typed, "
                f"{unreadable} unreadable sample(s)"
            )
        ctx = case_context(trace, Stage.GENERATION, label, None, None, None, env.answer_rule)
        texts, failures = await calls.samples(stage_prompt(ctx), cfg.k, purpose="type_generation")
        votes = parse_votes(texts, types_of_stage(Stage.GENERATION))
        if failures:
            evidence.append(f"LLM type judge: request failed: {failures[0].reason}")
        reason = "stage-sequential: no earlier stage judged at fault; generation by elimination"
        return Attribution(Stage.GENERATION, reason, tuple(votes), tuple(evidence))


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
