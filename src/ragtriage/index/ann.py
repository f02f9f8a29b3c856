"""Approximate nearest neighbours for the dense index: a faiss HNSW graph (``.[ann]``).

Chosen by measurement (``benchmarks/ann.py``, 100k x 384 clustered unit vectors, 2
shared cores, M = 16, ef_construction = 128): faiss ``IndexHNSWFlat`` built in 35 s
(hnswlib 59 s, usearch 94 s) and answered at ef_search = 128 in 0.71 ms p50 with
recall@10 0.993 (hnswlib 0.66 ms / 0.989, usearch 1.66 ms / 0.990); exact numpy
search took 24 ms p50 on the same loaded machine.

Inner product over L2-normalised rows is the cosine, so scores equal the exact
index's. Persisted with faiss's own binary format (``write_index``), not pickle.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ragtriage.errors import ConfigError, InputError

__all__ = ["ANN_FILE", "HNSWIndex", "HNSWParams", "ann_available"]

ANN_FILE = "ann.faiss"
_META = "ann.json"


def ann_available() -> bool:
    """Whether the ANN library (``faiss-cpu``, extra ``.[ann]``) is importable."""
    try:
        import faiss  # noqa: F401
    except ImportError:
        return False
    return True


def _faiss() -> Any:
    try:
        import faiss
    except ImportError as exc:
        raise ConfigError(
            "ANN search needs faiss-cpu: pip install 'ragtriage[ann]' (or set index.ann: exact)",
            field="index.ann",
        ) from exc
    return faiss


@dataclass(frozen=True)
class HNSWParams:
    """Graph degree ``m``, build beam ``ef_construction``, query beam ``ef_search``."""

    m: int = 16
    ef_construction: int = 128
    ef_search: int = 128


class HNSWIndex:
    """An HNSW graph over L2-normalised float32 rows (row ids are positions)."""

    def __init__(self, index: Any, params: HNSWParams) -> None:
        self._index = index
        self.params = params
        index.hnsw.efSearch = params.ef_search

    @classmethod
    def build(cls, vectors: npt.NDArray[np.float32], params: HNSWParams | None = None) -> HNSWIndex:
        faiss = _faiss()
        p = params or HNSWParams()
        mat = np.ascontiguousarray(vectors, dtype=np.float32)
        index = faiss.IndexHNSWFlat(int(mat.shape[1]), p.m, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = p.ef_construction
        if mat.shape[0]:
            index.add(mat)
        return cls(index, p)

    @property
    def size(self) -> int:
        return int(self._index.ntotal)

    @property
    def dim(self) -> int:
        return int(self._index.d)

    def search(self, query: npt.NDArray[np.float32], k: int) -> list[tuple[int, float]]:
        """``(row, inner product)`` of about the ``k`` nearest rows, best first (ties
        broken by the lower row, like the exact index)."""
        k = min(k, self.size)
        if k <= 0:
            return []
        q = np.ascontiguousarray(query, dtype=np.float32).reshape(1, -1)
        scores, ids = self._index.search(q, k)
        pairs = [(int(i), float(s)) for i, s in zip(ids[0], scores[0], strict=True) if i >= 0]
        pairs.sort(key=lambda p: (-p[1], p[0]))
        return pairs

    def save(self, directory: str | Path) -> None:
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        _faiss().write_index(self._index, str(d / ANN_FILE))
        meta = {"kind": "faiss-hnsw-flat-ip", "rows": self.size, "dim": self.dim}
        meta.update(asdict(self.params))
        (d / _META).write_text(json.dumps(meta), encoding="utf-8")

    @classmethod
    def load(cls, directory: str | Path, rows: int, dim: int) -> HNSWIndex:
        d = Path(directory)
        faiss = _faiss()
        try:
            meta = json.loads((d / _META).read_text(encoding="utf-8"))
            index = faiss.read_index(str(d / ANN_FILE))
        except (OSError, ValueError, RuntimeError) as exc:
            raise InputError(f"cannot read ANN index: {exc}", path=str(d)) from exc
        if (int(index.ntotal), int(index.d)) != (rows, dim):
            raise InputError(
                f"ANN index has {index.ntotal} x {index.d} rows, dense index {rows} x {dim}",
                path=str(d / ANN_FILE),
            )
        params = HNSWParams(
            m=int(meta["m"]),
            ef_construction=int(meta["ef_construction"]),
            ef_search=int(meta["ef_search"]),
        )
        return cls(index, params)
