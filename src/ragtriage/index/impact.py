"""Exact BM25 top-k over impact postings, with MaxScore pruning.

BM25 (as ``bm25s`` indexes it) precomputes one float32 *impact* per (term, document)
pair: ``idf(t) * tf-saturation(t, d)``; a query's score of a document is the float32
sum of the impacts of the query's terms, added in query order. The postings are kept
CSC-like: ``indptr`` (term -> slice), ``indices`` (document rows, ascending within a
term) and ``data`` (the impacts), plus :attr:`ImpactPostings.upper` = the largest
impact of each term (persisted as ``.npy``, no pickle).

:meth:`ImpactPostings.top_k` returns exactly what scoring every document and taking
the ``k`` best positive ones returns (same rows, same float32 scores, ties to the
lower row), without scoring every document (MaxScore, Turtle & Flood 1995):

1. Order the query's terms by upper bound, highest first.
2. Take the first ``j`` terms as *essential*; the candidates are the documents in
   their postings (within the filter mask). A candidate's essential part (the sum of
   its essential terms' impacts) is a lower bound of its score; let ``theta`` be the
   lowest full score of the ``k`` candidates with the best parts: at least ``k``
   candidates score ``theta`` or more.
3. A document outside the candidates contains only non-essential terms, so its score
   is at most the sum ``R`` of their upper bounds (counted with multiplicity). When
   ``R`` is below ``theta`` (with a relative margin of 1e-4 for float32 rounding, far
   above the 1e-6 that summing a query's terms can introduce) it cannot reach the top
   ``k``. Otherwise grow ``j`` to the smallest prefix whose remainder is below
   ``theta`` and repeat; at ``j`` = every term, the candidates are every document
   with a positive score.
4. Likewise a candidate whose essential part plus ``R`` is below ``theta`` is dropped.
   The rest are scored exactly (every query term, in query order, float32: the very
   sums a full scoring computes) and their top ``k`` is the answer.

Impacts must be positive (BM25 ``lucene``/``robertson``-style with positive idf);
:attr:`ImpactPostings.prunable` is false otherwise and :meth:`top_k` then scores every
document (same answer, no pruning).
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import numpy as np
import numpy.typing as npt

__all__ = ["ImpactPostings"]

FloatArray = npt.NDArray[np.float32]
IntArray = npt.NDArray[np.int64]

UPPER_FILE: Final = "impact_upper.npy"
#: ``R * (1 + MARGIN) < theta`` prunes: float32 sums of a few terms err by ~1e-7 relative.
MARGIN: Final = 1e-4


def _top(scores: npt.NDArray[np.float32], k: int) -> IntArray:
    """Positions of the ``k`` best scores, best first, ties to the lower position
    (:func:`ragtriage.index.dense.top_k_indices` on an unmasked array)."""
    k = min(k, scores.shape[0])
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    if k < scores.shape[0]:
        part = np.argpartition(-scores, k - 1)[:k]
        cand = np.flatnonzero(scores >= scores[part].min())  # every tie at the boundary
    else:
        cand = np.arange(scores.shape[0])
    order = np.lexsort((cand, -scores[cand].astype(np.float64)))
    return cand[order][:k].astype(np.int64)


class ImpactPostings:
    """Term -> (document rows, float32 impacts), CSC-like; see the module docstring."""

    def __init__(
        self,
        indptr: npt.ArrayLike,
        indices: npt.ArrayLike,
        data: npt.ArrayLike,
        num_docs: int,
        upper: npt.ArrayLike | None = None,
    ) -> None:
        self.indptr = np.asarray(indptr, dtype=np.int64)
        self.indices = np.asarray(indices)
        self.data = np.asarray(data, dtype=np.float32)
        self.num_docs = int(num_docs)
        n_terms = self.indptr.shape[0] - 1
        self._sort_postings()
        if upper is None or np.asarray(upper).shape != (n_terms,):
            upper = self._upper_bounds()
        self.upper: FloatArray = np.asarray(upper, dtype=np.float32)
        self.prunable = bool(self.data.size == 0 or float(self.data.min()) > 0.0)

    def _sort_postings(self) -> None:
        """Rows ascending within each term (needed for the binary-search lookups)."""
        if self.indices.size < 2:
            return
        lengths = np.diff(self.indptr)
        term_of = np.repeat(np.arange(lengths.shape[0]), lengths)
        step = np.diff(self.indices.astype(np.int64))
        same_term = term_of[1:] == term_of[:-1]
        if np.all(step[same_term] > 0):
            return
        order = np.lexsort((self.indices, term_of))
        self.indices = self.indices[order]
        self.data = self.data[order]
        step = np.diff(self.indices.astype(np.int64))
        if np.any(step[same_term] == 0):
            raise ValueError("a BM25 term lists the same document twice")

    def _upper_bounds(self) -> FloatArray:
        lengths = np.diff(self.indptr)
        out = np.zeros(lengths.shape[0], dtype=np.float32)
        nonempty = lengths > 0
        if self.data.size:
            out[nonempty] = np.maximum.reduceat(self.data, self.indptr[:-1][nonempty])
        return out

    # ------------------------------------------------------------------ persistence
    def save_upper(self, directory: str | Path) -> None:
        np.save(Path(directory) / UPPER_FILE, self.upper, allow_pickle=False)

    @staticmethod
    def load_upper(directory: str | Path) -> FloatArray | None:
        path = Path(directory) / UPPER_FILE
        if not path.exists():
            return None
        return np.asarray(np.load(path, allow_pickle=False), dtype=np.float32)

    # ------------------------------------------------------------------ scoring
    def _postings(self, term: int) -> tuple[npt.NDArray[np.integer], FloatArray]:
        lo, hi = int(self.indptr[term]), int(self.indptr[term + 1])
        return self.indices[lo:hi], self.data[lo:hi]

    def scores(self, terms: npt.ArrayLike) -> FloatArray:
        """Score of every document: impacts added term by term in query order, in
        float32 (each term lists a document once, so this equals ``np.add.at``)."""
        out = np.zeros(self.num_docs, dtype=np.float32)
        for t in np.asarray(terms, dtype=np.int64).reshape(-1):
            rows, vals = self._postings(int(t))
            out[rows] += vals
        return out

    def _lookup(
        self, term: int, cand: npt.NDArray[np.integer], scratch: list[FloatArray]
    ) -> FloatArray:
        """``term``'s impact for each of the sorted rows ``cand`` (0 where absent). Binary
        search for few rows; for many, a scatter into a zeroed row-sized array and a
        gather (linear in postings + rows), the array reset afterwards for reuse."""
        rows, vals = self._postings(term)
        n = cand.shape[0]
        if rows.size == 0 or n == 0:
            return np.zeros(n, dtype=np.float32)
        if n * max(1, int(rows.shape[0]).bit_length()) <= 2 * (rows.shape[0] + n):
            pos = np.searchsorted(rows, cand)
            np.minimum(pos, rows.shape[0] - 1, out=pos)
            return np.where(rows[pos] == cand, vals[pos], np.float32(0.0))
        if not scratch:
            scratch.append(np.zeros(self.num_docs, dtype=np.float32))
        dense = scratch[0]
        dense[rows] = vals
        out: FloatArray = dense[cand]
        dense[rows] = 0.0
        return out

    def _exact(
        self,
        cand: npt.NDArray[np.integer],
        terms: IntArray,
        scratch: list[FloatArray],
        known: dict[int, FloatArray] | None = None,
    ) -> FloatArray:
        """Exact scores of the sorted rows ``cand``: every term's impact added in query
        order in float32, the same sums as :meth:`scores`. ``known`` holds terms'
        impacts for ``cand`` already looked up."""
        contrib = dict(known or {})
        acc = np.zeros(cand.shape[0], dtype=np.float32)
        for t in terms.tolist():
            if t not in contrib:
                contrib[t] = self._lookup(t, cand, scratch)
            acc += contrib[t]
        return acc

    def _union(
        self, terms: IntArray, mask: npt.NDArray[np.bool_] | None
    ) -> npt.NDArray[np.integer]:
        """Sorted rows in the postings of ``terms`` (and in ``mask``)."""
        parts = [self._postings(int(t))[0] for t in terms]
        total = sum(p.shape[0] for p in parts)
        if total * 8 > self.num_docs:  # long lists: mark rows in a bitmap, no sort
            hit = np.zeros(self.num_docs, dtype=bool)
            for p in parts:
                hit[p] = True
            if mask is not None:
                hit &= mask
            return np.flatnonzero(hit).astype(self.indices.dtype)
        # the postings' own integer type: searchsorted then never converts a long list
        rows = np.concatenate(parts) if parts else np.zeros(0, self.indices.dtype)
        if len(parts) > 1:  # merge: sort, drop repeats (faster than np.unique here)
            rows.sort()
            rows = rows[np.concatenate(([True], rows[1:] != rows[:-1]))]
        return rows if mask is None else rows[mask[rows]]

    def top_k(
        self, terms: npt.ArrayLike, k: int, mask: npt.NDArray[np.bool_] | None = None
    ) -> list[tuple[int, float]]:
        """``(row, score)`` of the best ``k`` rows with a positive score, best first, ties
        to the lower row; rows outside ``mask`` are never returned. Exact."""
        q = np.asarray(terms, dtype=np.int64).reshape(-1)
        if k <= 0 or q.size == 0 or self.num_docs == 0:
            return []
        if not self.prunable:
            return self._full_top_k(q, k, mask)
        counted: dict[int, int] = {}
        for t in q.tolist():
            counted[t] = counted.get(t, 0) + 1
        uniq = np.fromiter(counted, dtype=np.int64, count=len(counted))
        counts = np.fromiter(counted.values(), dtype=np.float64, count=len(counted))
        lengths = self.indptr[uniq + 1] - self.indptr[uniq]
        bound = self.upper[uniq].astype(np.float64) * counts
        order = np.lexsort((lengths, -bound))  # highest bound first, then shorter list
        uniq, bound, lengths = uniq[order], bound[order], lengths[order]
        reach = np.cumsum(lengths)  # postings read with the first j terms essential
        # rest[j] = bound of the terms after the first j (the non-essential ones)
        rest = np.concatenate([np.cumsum(bound[::-1])[::-1], [0.0]])
        counts = counts[order]
        scratch: list[FloatArray] = []  # a zeroed row-sized array, made on first need
        j = 1
        while True:
            if reach[j - 1] * 2 > self.num_docs:
                return self._full_top_k(q, k, mask)  # no pruning left worth its overhead
            cand = self._union(uniq[:j], mask)
            if j == uniq.shape[0]:
                return self._pairs(cand, self._exact(cand, q, scratch), k)  # all positive
            if cand.shape[0] < k:
                j += 1
                continue
            # lower bounds: the essential terms' part of each candidate's score
            known = {int(t): self._lookup(int(t), cand, scratch) for t in uniq[:j]}
            part = np.zeros(cand.shape[0], dtype=np.float64)
            for t, c in zip(uniq[:j].tolist(), counts[:j].tolist(), strict=True):
                part += known[t] * c
            best = np.sort(np.argpartition(-part, k - 1)[:k])
            # those k candidates' exact scores: a tighter bound, for k lookups per term
            theta = float(self._exact(cand[best], q, scratch).min()) * (1.0 - MARGIN)
            theta = max(theta, float(part[best].min()))
            safe = np.flatnonzero(rest * (1.0 + MARGIN) < theta)
            need = int(safe[0]) if safe.size else uniq.shape[0]
            if need > j:
                j = need
                continue
            # k candidates score >= theta; one whose bound stays below cannot be in the top
            keep = np.flatnonzero((part + rest[j]) * (1.0 + MARGIN) >= theta)
            cand = cand[keep]
            known = {t: v[keep] for t, v in known.items()}
            return self._pairs(cand, self._exact(cand, q, scratch, known), k)

    @staticmethod
    def _pairs(cand: npt.NDArray[np.integer], sc: FloatArray, k: int) -> list[tuple[int, float]]:
        return [(int(cand[i]), float(sc[i])) for i in _top(sc, k)]

    def _full_top_k(
        self, q: IntArray, k: int, mask: npt.NDArray[np.bool_] | None
    ) -> list[tuple[int, float]]:
        s = self.scores(q)
        keep = s > 0 if mask is None else (s > 0) & mask
        rows = np.flatnonzero(keep)
        return self._pairs(rows, s[rows], k)
