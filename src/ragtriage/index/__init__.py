"""Indexes for retrieval: exact dense (optionally HNSW), BM25, and hybrid score fusion."""

from ragtriage.index.ann import HNSWIndex, HNSWParams, ann_available
from ragtriage.index.bm25 import BM25Index, bm25_tokens, light_stem
from ragtriage.index.dense import DenseIndex, top_k_indices
from ragtriage.index.fusion import minmax, rrf, weighted_fusion

__all__ = [
    "BM25Index",
    "DenseIndex",
    "HNSWIndex",
    "HNSWParams",
    "ann_available",
    "bm25_tokens",
    "light_stem",
    "minmax",
    "rrf",
    "top_k_indices",
    "weighted_fusion",
]
