"""RAGAS-style metrics as pure functions over :class:`TraceJudgements` (seed 003).

Each returns a :class:`MetricScore` naming the judge; what cannot be computed is
``undetermined`` with a reason, never NaN or 0.
"""

from __future__ import annotations

import numpy as np

from ragtriage.embedding import Embedder
from ragtriage.metrics._judgements import MetricScore, TraceJudgements

__all__ = ["answer_relevancy", "context_precision_at", "context_recall", "faithfulness"]


def _undetermined(j: TraceJudgements, reason: str | None) -> MetricScore:
    return MetricScore(judge=j.judge, undetermined_reason=reason or "not judged")


def faithfulness(j: TraceJudgements) -> MetricScore:
    """Supported claims / claims of the answer."""
    if j.claims is None:
        return _undetermined(j, j.claims_reason)
    if not j.claims:
        return _undetermined(j, "no claims in the answer")
    supported = sum(c.verdict == "supported" for c in j.claims)
    return MetricScore(value=supported / len(j.claims), judge=j.judge)


def context_precision_at(j: TraceJudgements, k: int) -> MetricScore:
    """Position-weighted precision of the first ``k`` chunks: mean of precision@i over the
    ranks i holding a relevant chunk; 0 relevant chunks scores 0 (a real zero)."""
    if j.chunk_relevant is None:
        return _undetermined(j, j.chunks_reason)
    rel = j.chunk_relevant[:k]
    if not rel:
        return _undetermined(j, "no context chunks")
    hits, total = 0, 0.0
    for i, r in enumerate(rel, start=1):
        if r:
            hits += 1
            total += hits / i
    return MetricScore(value=total / hits if hits else 0.0, judge=j.judge)


def context_recall(j: TraceJudgements) -> MetricScore:
    """Ground-truth sentences attributable to the context / ground-truth sentences."""
    if j.gt_attributed is None:
        return _undetermined(j, j.gt_reason)
    if not j.gt_attributed:
        return _undetermined(j, "no ground-truth sentences")
    return MetricScore(value=sum(j.gt_attributed) / len(j.gt_attributed), judge=j.judge)


def answer_relevancy(j: TraceJudgements, query: str, embedder: Embedder) -> MetricScore:
    """Mean cosine of the reverse-generated questions to the question; 0 when the answer
    is non-committal (RAGAS's penalty). Negative cosines are clipped to 0."""
    if j.questions is None or j.noncommittal is None:
        return _undetermined(j, j.questions_reason)
    if j.noncommittal:
        return MetricScore(value=0.0, judge=j.judge)
    qs = [q for q in j.questions if q.strip()]
    if not qs:
        return _undetermined(j, "no question generated")
    vecs = np.asarray(embedder.embed([query, *qs]), dtype=np.float64)
    norms = np.linalg.norm(vecs, axis=1)
    if norms[0] == 0 or not np.all(norms[1:] > 0):
        return _undetermined(j, "empty embedding")
    sims = (vecs[1:] @ vecs[0]) / (norms[1:] * norms[0])
    return MetricScore(value=float(max(0.0, float(np.mean(sims)))), judge=j.judge)
