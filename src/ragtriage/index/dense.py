"""Dense index: normalised float32 matrix, dot-product scores, argpartition top-k; with
an optional HNSW graph (:mod:`ragtriage.index.ann`) that answers top-k queries
approximately while :meth:`DenseIndex.scores` stays exact."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import numpy.typing as npt

from ragtriage.errors import InputError
from ragtriage.index.ann import ANN_FILE, HNSWIndex, HNSWParams, ann_available

__all__ = ["DenseIndex", "top_k_indices"]

FloatArray = npt.NDArray[np.float32]
IntArray = npt.NDArray[np.int64]


def top_k_indices(
    scores: npt.NDArray[np.floating], k: int, mask: npt.NDArray[np.bool_] | None = None
) -> IntArray:
    """Indices of the ``k`` highest scores, best first; ties go to the lower index.

    Entries where ``mask`` is false are never returned. Uses ``argpartition`` (linear
    time) and sorts only the candidates.
    """
    s = np.asarray(scores, dtype=np.float64)
    if mask is not None:
        s = np.where(mask, s, -np.inf)
        available = int(np.count_nonzero(mask))
    else:
        available = s.shape[0]
    k = min(k, available)
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    if k < s.shape[0]:
        part = np.argpartition(-s, k - 1)[:k]
        threshold = s[part].min()
        cand = np.flatnonzero(s >= threshold)  # every index tied at the boundary
    else:
        cand = np.arange(s.shape[0])
    if mask is not None:
        cand = cand[mask[cand]]
    order = np.lexsort((cand, -s[cand]))
    return cand[order][:k].astype(np.int64)


class DenseIndex:
    """Rows are L2-normalised on construction, so scores are cosine similarities."""

    def __init__(self, vectors: npt.ArrayLike, *, normalize: bool = True) -> None:
        mat = np.asarray(vectors, dtype=np.float32)
        if mat.ndim != 2:
            raise ValueError(f"vectors must be 2-D, got shape {mat.shape}")
        if not np.all(np.isfinite(mat)):
            raise ValueError("vectors contain NaN or infinity")
        if normalize:
            norms = np.linalg.norm(mat, axis=1, keepdims=True)
            mat = (mat / np.where(norms > 0, norms, 1.0)).astype(np.float32)
        self.vectors: FloatArray = np.ascontiguousarray(mat, dtype=np.float32)
        self.ann: HNSWIndex | None = None

    def with_ann(self, params: HNSWParams | None = None) -> DenseIndex:
        """Build an HNSW graph over the rows; top-k searches then go through it."""
        self.ann = HNSWIndex.build(self.vectors, params)
        return self

    @property
    def size(self) -> int:
        return int(self.vectors.shape[0])

    @property
    def dim(self) -> int:
        return int(self.vectors.shape[1])

    def _query(self, query: npt.ArrayLike) -> FloatArray:
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        if q.shape[0] != self.dim:
            raise ValueError(f"query has dimension {q.shape[0]}, index has {self.dim}")
        n = float(np.linalg.norm(q))
        return q / n if n > 0 else q

    def scores(self, query: npt.ArrayLike) -> FloatArray:
        """Cosine similarity of ``query`` with every row."""
        return self.vectors @ self._query(query)

    def search(
        self, query: npt.ArrayLike, top_k: int, mask: npt.NDArray[np.bool_] | None = None
    ) -> list[tuple[int, float]]:
        """``(row, score)`` of the best ``top_k`` rows, best first (approximate when an
        HNSW graph is built and the filter, if any, keeps at least a quarter of rows)."""
        if mask is not None and np.count_nonzero(mask) * 4 < self.size:
            # selective filter: score only the allowed rows
            rows = np.flatnonzero(mask)
            sub = self.vectors[rows] @ self._query(query)
            return [(int(rows[i]), float(sub[i])) for i in top_k_indices(sub, top_k)]
        if self.ann is not None and top_k > 0:
            q = self._query(query)
            if mask is None:
                return self.ann.search(q, top_k)
            # a broad filter: over-fetch, keep the allowed rows, else fall back to exact
            kept = [p for p in self.ann.search(q, 4 * top_k) if mask[p[0]]]
            if len(kept) >= min(top_k, int(np.count_nonzero(mask))):
                return kept[:top_k]
        s = self.scores(query)
        return [(int(i), float(s[i])) for i in top_k_indices(s, top_k, mask)]

    def search_many(self, queries: npt.ArrayLike, top_k: int) -> list[list[tuple[int, float]]]:
        """Batched :meth:`search` (one matrix product)."""
        q = np.asarray(queries, dtype=np.float32)
        if q.ndim != 2 or q.shape[1] != self.dim:
            raise ValueError(f"queries must have shape (m, {self.dim}), got {q.shape}")
        if self.ann is not None:
            return [self.search(row, top_k) for row in q]
        norms = np.linalg.norm(q, axis=1, keepdims=True)
        q = (q / np.where(norms > 0, norms, 1.0)).astype(np.float32)
        all_scores = q @ self.vectors.T
        return [[(int(i), float(row[i])) for i in top_k_indices(row, top_k)] for row in all_scores]

    def save(self, directory: str | Path) -> None:
        """Write ``dense.npy`` (no pickle) and ``dense.json`` into ``directory``, and the
        HNSW graph in faiss's binary format when one is built."""
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        np.save(d / "dense.npy", self.vectors, allow_pickle=False)
        (d / "dense.json").write_text(
            json.dumps({"rows": self.size, "dim": self.dim}), encoding="utf-8"
        )
        if self.ann is not None:
            self.ann.save(d)

    @classmethod
    def load(cls, directory: str | Path) -> DenseIndex:
        d = Path(directory)
        try:
            meta = json.loads((d / "dense.json").read_text(encoding="utf-8"))
            mat = np.load(d / "dense.npy", allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise InputError(f"cannot read dense index: {exc}", path=str(d)) from exc
        if mat.shape != (meta.get("rows"), meta.get("dim")):
            raise InputError(
                f"dense index shape {mat.shape} does not match its manifest", path=str(d)
            )
        out = cls(mat, normalize=False)
        if (d / ANN_FILE).exists() and ann_available():  # else: exact search
            out.ann = HNSWIndex.load(d, out.size, out.dim)
        return out
