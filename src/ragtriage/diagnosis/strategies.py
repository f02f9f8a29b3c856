"""How a failing example is attributed to a stage and an error type.

Three strategies (seed 000, §5 and App. B.4). They read the judging steps from a
:class:`~ragtriage.diagnosis.judges.Judges` bundle and never branch on the judge's kind;
the rules and LLM implementations of single-step and stage-sequential live here:

* ``ragec`` — the paper's method: GT chunks, backward stage cascade (generation →
  reranking → chunking/retrieval by concept coverage), then K votes on the types of
  that stage with only that stage's context.
* ``single-step`` (B.4.1) — one judgement over all 16 types with all the context; the
  stage is the stage of the modal type. Rules: the type tests of every stage that can
  have failed (see :func:`_stage_can_fail`) pooled; generation tests damped when most
  GT chunks never reached the generator.
* ``stage-sequential`` (B.4.2) — forward over the pipeline, asking at each stage
  "is there an error here?"; the first yes wins, generation by elimination. Rules:
  the first stage (chunking → retrieval → reranking) that can have failed and whose
  type tests fire.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

from ragtriage.config import DiagnosisConfig
from ragtriage.diagnosis._calls import LLMCalls
from ragtriage.diagnosis._context import CaseContext, TypeEvidence
from ragtriage.diagnosis.concepts import ConceptCoverage
from ragtriage.diagnosis.declined import stage_from_declined
from ragtriage.diagnosis.gt_chunks import GTChunks
from ragtriage.diagnosis.observability import (
    inferred_chunks_note,
    is_minimal,
    not_observable,
    observable_stages,
    stage_from_passages,
)
from ragtriage.diagnosis.stage import (
    GTFlow,
    before_split_reference,
    gt_flow,
    stage_from_chunk_shape,
    stage_from_coverage,
    stage_from_depth,
    stage_from_flow,
    stage_from_parts,
    stage_from_references,
)
from ragtriage.diagnosis.types_llm import (
    parse_stage_check,
    parse_votes,
    single_step,
    stage_check,
    stage_prompt,
)
from ragtriage.diagnosis.types_rules import rule_type_evidence
from ragtriage.diagnosis.votes import UNDETERMINED, apportion_votes, summarize_votes
from ragtriage.records import AnswerLabel, ErrorType, Stage, Trace, Vote, types_of_stage
from ragtriage.text import detect_language

if TYPE_CHECKING:
    from ragtriage.diagnosis.judges import Judges

__all__ = [
    "PAPER_PROTOCOL",
    "STRATEGIES",
    "Attribution",
    "CostOptions",
    "LLMSingleStep",
    "LLMStageSequential",
    "RulesSingleStep",
    "RulesStageSequential",
    "Strategy",
    "StrategyEnv",
    "attribute",
]

Strategy = Literal["ragec", "single-step", "stage-sequential"]
STRATEGIES: tuple[Strategy, ...] = ("ragec", "single-step", "stage-sequential")

#: stage-sequential (rules): a stage "has an error" when one of its tests scores this much
_FIRES = 0.5
_FORWARD = (Stage.CHUNKING, Stage.RETRIEVAL, Stage.RERANKING)
#: single-step (rules): generation scores are multiplied by this when at most half of
#: the GT chunks reached the generator
_GEN_DAMP = 0.7


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


@dataclass(frozen=True, slots=True)
class StrategyEnv:
    """What a strategy needs besides the trace: the thresholds and one judge per step."""

    config: DiagnosisConfig
    judges: Judges
    #: the answer-evaluation rule that failed the answer (rules judge; type tests read it)
    answer_rule: str | None = None


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


def _context(
    trace: Trace,
    stage: Stage,
    label: AnswerLabel,
    gt: GTChunks | None,
    cov: ConceptCoverage | None,
    env_config: DiagnosisConfig | None = None,
    answer_rule: str | None = None,
) -> CaseContext:
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


def _gt_evidence(gt: GTChunks | None, cov: ConceptCoverage | None) -> list[str]:
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


def _without_gt(trace: Trace, gt: GTChunks) -> Attribution | None:
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


# -- ragec ----------------------------------------------------------------------------


async def _ragec(env: StrategyEnv, trace: Trace, label: AnswerLabel) -> Attribution:
    cfg = env.config
    gt = await env.judges.gt_chunks.ground_truth_chunks(trace)
    missing = _without_gt(trace, gt)
    if missing is not None:
        return missing
    flow = gt_flow(trace, gt.ids)
    # extensions (see stage.py): the reference sentences were all in the context; one
    # entity's evidence never reached the generator
    held = stage_from_references(trace, flow, cfg)
    parts = (
        None if held is not None or not cfg.entity_extension else stage_from_parts(trace, gt.ids)
    )
    if parts is not None and parts.stage is Stage.RETRIEVAL:
        # the entity's evidence was never retrieved; if the GT chunks' shape is at fault
        # (cut into small pieces, or oversized), chunking is the earlier cause
        parts = stage_from_chunk_shape(trace, flow, cfg) or parts
    # extension (see declined.py): the facts a partial abstention leaves out never
    # reached the generator
    declined = None if held is not None else stage_from_declined(trace, flow, cfg, env.answer_rule)
    # extension (see stage.py): missing evidence that is a piece of a reference a chunk
    # boundary cut off -- chunking is the earlier cause
    call = (
        held
        or parts
        or before_split_reference(trace, flow, cfg, declined or stage_from_flow(flow, cfg))
    )
    cov: ConceptCoverage | None = None
    if call is None:  # chunking vs retrieval: only now are the concepts needed
        cov = await env.judges.concepts.concept_coverage(trace, gt.ids)
        # extension of B.2.4 (see stage.py): the GT chunks' shape, before the coverage
        call = (
            stage_from_chunk_shape(trace, flow, cfg)
            or stage_from_depth(trace, flow, cfg)
            or stage_from_coverage(cov.coverage, cov.n_scored, cfg)
        )
    evidence = _gt_evidence(gt, cov)
    if call.stage is None:
        return Attribution(None, call.reason, (), tuple(evidence), gt, cov)
    ctx = _context(trace, call.stage, label, gt, cov, cfg, env.answer_rule)
    votes, more = await env.judges.types.type_votes(ctx, cfg.k)
    return Attribution(call.stage, call.reason, tuple(votes), (*evidence, *more), gt, cov)


# -- single-step ----------------------------------------------------------------------


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


def _pooled_scores(ctxs: Sequence[CaseContext]) -> tuple[dict[ErrorType, float], list[str]]:
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
        found: list[TypeEvidence] = rule_type_evidence(ctx)
        for ev in found:
            score = ev.score * damp
            if score > scores.get(ev.error_type, 0.0):
                scores[ev.error_type] = score
            lines.append(f"{ev.error_type} ({score:.2f}): {ev.evidence}")
    return scores, lines


@dataclass(frozen=True, slots=True)
class RulesSingleStep:
    """The type tests of every stage that can have failed, pooled (the bundle's GT
    chunks and concepts feed them); votes in proportion to the pooled scores."""

    async def single_step(self, env: StrategyEnv, trace: Trace, label: AnswerLabel) -> Attribution:
        cfg = env.config
        gt = await env.judges.gt_chunks.ground_truth_chunks(trace)
        missing = _without_gt(trace, gt)
        if missing is not None:
            return missing
        cov = await env.judges.concepts.concept_coverage(trace, gt.ids)
        base = _context(trace, Stage.GENERATION, label, gt, cov, cfg, env.answer_rule)
        scores, lines = _pooled_scores([replace(base, stage=s) for s in Stage])
        votes = apportion_votes(scores, cfg.k)
        return _by_mode(tuple(votes), [*_gt_evidence(gt, cov), *lines], gt, cov)


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


# -- stage-sequential -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RulesStageSequential:
    """The first stage (chunking → retrieval → reranking) that can have failed and whose
    type tests fire; generation by elimination. Votes from the bundle's type judge."""

    async def stage_sequential(
        self, env: StrategyEnv, trace: Trace, label: AnswerLabel
    ) -> Attribution:
        cfg = env.config
        judges = env.judges
        gt = await judges.gt_chunks.ground_truth_chunks(trace)
        missing = _without_gt(trace, gt)
        if missing is not None:
            return missing
        cov = await judges.concepts.concept_coverage(trace, gt.ids)
        base = _context(trace, Stage.GENERATION, label, gt, cov, cfg, env.answer_rule)
        evidence = _gt_evidence(gt, cov)
        flow = gt_flow(trace, gt.ids)
        for stage in _FORWARD:
            if not _stage_can_fail(stage, flow):
                evidence.append(
                    f"stage-sequential: {stage.value} delivered every GT chunk; not tested"
                )
                continue
            ctx = replace(base, stage=stage)
            fired = [e for e in rule_type_evidence(ctx) if e.score >= _FIRES]
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
        ctx = _context(trace, Stage.GENERATION, label, None, None, None, env.answer_rule)
        texts, failures = await calls.samples(stage_prompt(ctx), cfg.k, purpose="type_generation")
        votes = parse_votes(texts, types_of_stage(Stage.GENERATION))
        if failures:
            evidence.append(f"LLM type judge: request failed: {failures[0].reason}")
        reason = "stage-sequential: no earlier stage judged at fault; generation by elimination"
        return Attribution(Stage.GENERATION, reason, tuple(votes), tuple(evidence))


async def attribute(
    strategy: Strategy, env: StrategyEnv, trace: Trace, label: AnswerLabel
) -> Attribution:
    """Stage and type votes for one failing example by ``strategy``.

    A trace that does not record every stage (an imported one, see
    :mod:`ragtriage.diagnosis.observability`): without its gold documents' chunks every
    strategy gives way to the passage-only call; a stage it cannot show is named in the
    evidence when it may hide behind the stage blamed."""
    if is_minimal(trace):
        return await _minimal(env, trace, label)
    if strategy == "ragec":
        a = await _ragec(env, trace, label)
    elif strategy == "single-step":
        a = await env.judges.single_step.single_step(env, trace, label)
    elif strategy == "stage-sequential":
        a = await env.judges.stage_sequential.stage_sequential(env, trace, label)
    else:
        raise ValueError(f"unknown strategy {strategy!r}; expected one of {STRATEGIES}")
    if a.stage in (Stage.CHUNKING, Stage.RETRIEVAL) and Stage.RERANKING not in observable_stages(
        trace
    ):
        a = replace(a, evidence=(*a.evidence, not_observable(trace, Stage.RERANKING)))
    if a.stage is Stage.CHUNKING and a.gt is not None:
        note = inferred_chunks_note(trace, a.gt.ids)
        if note is not None:
            a = replace(a, evidence=(*a.evidence, note))
    return a


async def _minimal(env: StrategyEnv, trace: Trace, label: AnswerLabel) -> Attribution:
    """A trace without its gold documents' chunks: generation vs retrieval (vs
    reranking, when the retriever's list is recorded) from the passages alone; chunking
    reported as not observable, never guessed."""
    call, evidence = stage_from_passages(trace)
    seen = observable_stages(trace)
    evidence.extend(
        not_observable(trace, s) for s in (Stage.CHUNKING, Stage.RERANKING) if s not in seen
    )
    if call.stage is None:
        return Attribution(None, call.reason, (), tuple(evidence))
    ctx = _context(trace, call.stage, label, None, None, env.config, env.answer_rule)
    votes, more = await env.judges.types.type_votes(ctx, env.config.k)
    return Attribution(call.stage, call.reason, tuple(votes), (*evidence, *more))
