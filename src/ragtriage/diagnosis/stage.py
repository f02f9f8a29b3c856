"""Stage attribution: walk the pipeline backwards (seed 000, App. B.2.2-B.2.4).

1. **Generation** if more than ``generator_gt_share`` (0.5) of the ground-truth (GT)
   chunks reached the generator, or if there are no GT chunks at all (B.2.2).
2. **Reranking** if any GT chunk was retrieved but not forwarded to the generator —
   filtered by the reranker, or cut by the context budget after reranking (B.2.3).
3. Otherwise **chunking** if the share of query concepts found in the GT chunks is
   below ``concept_coverage`` (0.8), else **retrieval** (B.2.4).

Steps 1-2 need only chunk ids (:func:`gt_flow`, :func:`stage_from_flow`); step 3 needs
the concept coverage, which may cost LLM calls, so it is a separate function
(:func:`stage_from_coverage`). :func:`classify_stage` chains them for callers that
already know the coverage. Everything here is pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ragtriage.config import DiagnosisConfig
from ragtriage.records import Stage, Trace

__all__ = [
    "GTFlow",
    "StageCall",
    "classify_stage",
    "gt_flow",
    "stage_from_coverage",
    "stage_from_flow",
]


@dataclass(frozen=True, slots=True)
class GTFlow:
    """Where the GT chunks went through the pipeline (ids in GT order)."""

    gt_ids: tuple[str, ...]
    retrieved: tuple[str, ...]
    reranked: tuple[str, ...]
    in_context: tuple[str, ...]
    #: retrieved but not forwarded to the generator (reranker filter or context budget)
    not_forwarded: tuple[str, ...]
    #: of ``not_forwarded``: the ones the reranker kept but the context budget dropped
    budget_dropped: tuple[str, ...]

    @property
    def context_share(self) -> float | None:
        """Share of GT chunks that reached the generator; ``None`` without GT chunks."""
        if not self.gt_ids:
            return None
        return len(self.in_context) / len(self.gt_ids)


@dataclass(frozen=True, slots=True)
class StageCall:
    """A stage decision with its reason in words; ``stage is None`` when undecidable."""

    stage: Stage | None
    reason: str


def gt_flow(trace: Trace, gt_ids: Sequence[str]) -> GTFlow:
    """Follow each GT chunk through retrieval, reranking and the generator's context."""
    gts = tuple(dict.fromkeys(gt_ids))
    retrieved_ids = {h.chunk_id for h in trace.retrieved}
    reranked_ids = {h.chunk_id for h in trace.reranked}
    context_ids = set(trace.context)
    retrieved = tuple(g for g in gts if g in retrieved_ids)
    reranked = tuple(g for g in gts if g in reranked_ids)
    in_context = tuple(g for g in gts if g in context_ids)
    not_forwarded = tuple(g for g in retrieved if g not in context_ids)
    budget = tuple(g for g in not_forwarded if g in reranked_ids)
    return GTFlow(
        gt_ids=gts,
        retrieved=retrieved,
        reranked=reranked,
        in_context=in_context,
        not_forwarded=not_forwarded,
        budget_dropped=budget,
    )


def stage_from_flow(flow: GTFlow, config: DiagnosisConfig) -> StageCall | None:
    """Steps 1-2 of the cascade: generation or reranking, else ``None`` (go on to
    chunking vs retrieval)."""
    n = len(flow.gt_ids)
    if n == 0:
        return StageCall(
            Stage.GENERATION,
            "no ground-truth chunks (question may be unanswerable from the corpus)",
        )
    share = len(flow.in_context) / n
    if share > config.generator_gt_share:
        return StageCall(
            Stage.GENERATION,
            f"{len(flow.in_context)}/{n} ground-truth chunks reached the generator "
            f"(share {share:.2f} > {config.generator_gt_share:g})",
        )
    if flow.not_forwarded:
        by_budget = len(flow.budget_dropped)
        by_reranker = len(flow.not_forwarded) - by_budget
        parts = []
        if by_reranker:
            parts.append(f"{by_reranker} filtered out by the reranker")
        if by_budget:
            parts.append(f"{by_budget} cut by the context budget after reranking")
        return StageCall(
            Stage.RERANKING,
            f"{len(flow.not_forwarded)}/{n} ground-truth chunks were retrieved but not "
            f"forwarded to the generator ({'; '.join(parts)}); "
            f"{len(flow.in_context)}/{n} reached it",
        )
    return None


def stage_from_coverage(
    coverage: float | None, n_concepts: int, config: DiagnosisConfig
) -> StageCall:
    """Step 3: chunking if the concept coverage is below the threshold, else retrieval.

    ``coverage is None`` means it could not be measured; with no concepts at all the
    retriever is blamed by elimination (nothing in the query was missing from the GT
    chunks), otherwise the stage is undetermined.
    """
    if coverage is None:
        if n_concepts == 0:
            return StageCall(
                Stage.RETRIEVAL,
                "no GT chunk reached the generator and none was dropped after retrieval; "
                "no query concepts could be extracted, so retrieval by elimination",
            )
        return StageCall(
            None,
            "stage_attribution: concept coverage of the ground-truth chunks could not "
            "be measured (no ground-truth chunk text)",
        )
    if coverage < config.concept_coverage:
        return StageCall(
            Stage.CHUNKING,
            f"GT chunks were not retrieved; only {coverage:.2f} of {n_concepts} query "
            f"concepts appear in them (< {config.concept_coverage:g})",
        )
    return StageCall(
        Stage.RETRIEVAL,
        f"GT chunks were not retrieved although they cover {coverage:.2f} of "
        f"{n_concepts} query concepts (>= {config.concept_coverage:g})",
    )


def classify_stage(
    trace: Trace,
    gt_ids: Sequence[str],
    coverage: float | None,
    n_concepts: int,
    config: DiagnosisConfig,
) -> StageCall:
    """The whole backward cascade for a known concept coverage."""
    early = stage_from_flow(gt_flow(trace, gt_ids), config)
    return early if early is not None else stage_from_coverage(coverage, n_concepts, config)
