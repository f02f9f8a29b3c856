"""Indexes for retrieval: exact dense, BM25, and hybrid score fusion."""

from ragtriage.index.bm25 import BM25Index, bm25_tokens, light_stem
from ragtriage.index.dense import DenseIndex, top_k_indices
from ragtriage.index.fusion import minmax, rrf, weighted_fusion

__all__ = [
    "BM25Index",
    "DenseIndex",
    "bm25_tokens",
    "light_stem",
    "minmax",
    "rrf",
    "top_k_indices",
    "weighted_fusion",
]
