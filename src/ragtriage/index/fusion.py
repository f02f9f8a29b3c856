"""Score fusion for hybrid retrieval: Reciprocal Rank Fusion and weighted min-max."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TypeVar

import numpy as np
import numpy.typing as npt

__all__ = ["minmax", "rrf", "weighted_fusion"]

K = TypeVar("K", bound=Hashable)


def rrf(rankings: Sequence[Sequence[K]], k: int = 60) -> dict[K, float]:
    """Reciprocal Rank Fusion (Cormack et al., 2009): ``sum 1 / (k + rank)`` over the
    rankings that contain an item (rank 1-based); items in no ranking are absent.
    A duplicate within one ranking counts at its best rank only."""
    out: dict[K, float] = {}
    for ranking in rankings:
        seen: set[K] = set()
        for rank, item in enumerate(ranking, start=1):
            if item in seen:
                continue
            seen.add(item)
            out[item] = out.get(item, 0.0) + 1.0 / (k + rank)
    return out


def minmax(
    scores: npt.ArrayLike, mask: npt.NDArray[np.bool_] | None = None
) -> npt.NDArray[np.float64]:
    """Scores scaled to [0, 1] over the entries in ``mask`` (all by default).

    When every considered score is equal the result is all zeros — that signal
    cannot separate anything, so it adds nothing (never NaN). Entries outside the
    mask are 0.
    """
    s = np.asarray(scores, dtype=np.float64)
    sel = s if mask is None else s[mask]
    out = np.zeros_like(s)
    if sel.size == 0:
        return out
    lo, hi = float(sel.min()), float(sel.max())
    if hi - lo <= 0 or not np.isfinite(hi - lo):
        return out
    scaled = (s - lo) / (hi - lo)
    return scaled if mask is None else np.where(mask, scaled, 0.0)


def weighted_fusion(
    dense: npt.ArrayLike,
    lexical: npt.ArrayLike,
    text_weight: float,
    mask: npt.NDArray[np.bool_] | None = None,
) -> npt.NDArray[np.float64]:
    """``(1 - w) * minmax(dense) + w * minmax(lexical)``; ``w = 0`` is dense only and
    ``w = 1`` lexical only (the text-weight knob of seed 001, §5)."""
    if not 0.0 <= text_weight <= 1.0:
        raise ValueError(f"text_weight must be in [0, 1], got {text_weight}")
    return (1.0 - text_weight) * minmax(dense, mask) + text_weight * minmax(lexical, mask)
