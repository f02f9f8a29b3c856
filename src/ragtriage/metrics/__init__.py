"""Evaluation metrics."""

from ragtriage.metrics.retrieval import (
    Metric,
    evaluate,
    hit_at,
    mrr,
    mrr_at,
    ndcg_at,
    parse_metric,
    precision_at,
    recall_at,
)

__all__ = [
    "Metric",
    "evaluate",
    "hit_at",
    "mrr",
    "mrr_at",
    "ndcg_at",
    "parse_metric",
    "precision_at",
    "recall_at",
]
