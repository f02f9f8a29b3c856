"""How a failing example is attributed to a stage and an error type.

Three strategies (seed 000, §5 and App. B.4). They read the judging steps from a
:class:`~ragtriage.diagnosis.judges.Judges` bundle and never branch on the judge's kind;
the rules and LLM implementations of single-step and stage-sequential are judges of that
bundle (:mod:`ragtriage.diagnosis.judges`), which never imports this module:

* ``ragec`` — the paper's method: GT chunks, backward stage cascade (generation →
  reranking → chunking/retrieval by concept coverage), then K votes on the types of
  that stage with only that stage's context.
* ``single-step`` (B.4.1) — one judgement over all 16 types with all the context; the
  stage is the stage of the modal type. Rules: the type tests of every stage that can
  have failed (see ``judges._stage_can_fail``) pooled; generation tests damped when most
  GT chunks never reached the generator.
* ``stage-sequential`` (B.4.2) — forward over the pipeline, asking at each stage
  "is there an error here?"; the first yes wins, generation by elimination. Rules:
  the first stage (chunking → retrieval → reranking) that can have failed and whose
  type tests fire.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Literal

from ragtriage.diagnosis._attribution import Attribution, case_context, gt_evidence, without_gt
from ragtriage.diagnosis.cascade import AFTER_CONCEPTS, BEFORE_CONCEPTS, CascadeCase, cascade_call
from ragtriage.diagnosis.concepts import ConceptCoverage
from ragtriage.diagnosis.judges import PAPER_PROTOCOL, CostOptions, StrategyEnv
from ragtriage.diagnosis.observability import (
    inferred_chunks_note,
    is_minimal,
    not_observable,
    observable_stages,
    stage_from_passages,
)
from ragtriage.diagnosis.stage import gt_flow
from ragtriage.records import AnswerLabel, Stage, Trace

__all__ = [
    "PAPER_PROTOCOL",
    "STRATEGIES",
    "Attribution",
    "CostOptions",
    "Strategy",
    "StrategyEnv",
    "attribute",
]

Strategy = Literal["ragec", "single-step", "stage-sequential"]
STRATEGIES: tuple[Strategy, ...] = ("ragec", "single-step", "stage-sequential")


# -- ragec ----------------------------------------------------------------------------


async def _ragec(env: StrategyEnv, trace: Trace, label: AnswerLabel) -> Attribution:
    cfg = env.config
    gt = await env.judges.gt_chunks.ground_truth_chunks(trace)
    missing = without_gt(trace, gt)
    if missing is not None:
        return missing
    # the backward cascade (cascade.py); the concepts are measured only when the steps
    # before them decide nothing (chunking vs retrieval)
    ids = tuple(gt.ids)
    case = CascadeCase(trace, ids, gt_flow(trace, ids), cfg, env.answer_rule, findings=env.findings)
    call = cascade_call(case, BEFORE_CONCEPTS)
    cov: ConceptCoverage | None = None
    if call is None:
        cov = await env.judges.concepts.concept_coverage(trace, gt.ids)
        call = cascade_call(case.with_concepts(cov.coverage, cov.n_scored), AFTER_CONCEPTS)
        if call is None:  # the coverage step always decides
            raise RuntimeError("stage cascade: no step decided")
    evidence = gt_evidence(gt, cov)
    if env.findings is not None and env.findings.source != "rules":
        # which findings of the answer judge the cascade read (the rules judge's are its
        # rule, already in the diagnosis)
        evidence.append(env.findings.describe())
    if call.stage is None:
        return Attribution(None, call.reason, (), tuple(evidence), gt, cov)
    ctx = case_context(trace, call.stage, label, gt, cov, cfg, env.answer_rule)
    votes, more = await env.judges.types.type_votes(ctx, cfg.k)
    return Attribution(call.stage, call.reason, tuple(votes), (*evidence, *more), gt, cov)


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
    if call.stage is not None and call.stage not in seen:
        # the passages cannot show the stage the call would blame (no passage recorded:
        # "not in the passages" says nothing about retrieval): undetermined, not a guess
        call = replace(call, stage=None, reason=not_observable(trace, call.stage))
    if call.stage is None:
        return Attribution(None, call.reason, (), tuple(evidence))
    ctx = case_context(trace, call.stage, label, None, None, env.config, env.answer_rule)
    votes, more = await env.judges.types.type_votes(ctx, env.config.k)
    return Attribution(call.stage, call.reason, tuple(votes), (*evidence, *more))
