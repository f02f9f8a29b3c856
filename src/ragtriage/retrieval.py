"""Retrievers over chunks: dense, BM25 and two hybrids, with metadata filters.

Modes (``RetrievalConfig.mode``):

``dense``            cosine similarity of query and chunk embeddings (exact, or an HNSW
                     graph from ``index.ann_min_rows`` chunks on: :func:`use_ann`).
``bm25``             BM25 over language-aware tokens; only chunks sharing a term.
``hybrid_rrf``       Reciprocal Rank Fusion (k = ``rrf_k``) of the dense and BM25 lists.
``hybrid_weighted``  ``(1 - w) * minmax(dense) + w * minmax(bm25)`` with
                     ``w = text_weight``: 0 is dense only, 1 lexical only (seed 001 §5).

Filters map a key to a value (equality) or a list of values (membership). The key
``doc_id`` (or ``chunk_id``) matches the chunk's ids; any other key matches
``Chunk.metadata[key]`` — when that value is itself a list, any element may match.
Filters from the config apply to every query; those given to :meth:`retrieve` are
added on top (same key: the call wins).

An index persists as a directory of npy + json files (no pickle) with
:meth:`IndexedRetriever.save` and :meth:`IndexedRetriever.load`.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from ragtriage.config import IndexConfig, PipelineConfig, RetrievalConfig
from ragtriage.embedding import Embedder, embed_documents, embed_queries
from ragtriage.errors import ConfigError, InputError
from ragtriage.index.ann import HNSWParams, ann_available
from ragtriage.index.bm25 import BM25Index
from ragtriage.index.dense import DenseIndex, top_k_indices
from ragtriage.index.fusion import weighted_fusion
from ragtriage.records import Chunk, Hit

__all__ = [
    "BatchRetriever",
    "ChunkTable",
    "IndexedRetriever",
    "Retriever",
    "build_retriever",
    "merge_filters",
    "open_retriever",
    "use_ann",
]

_FORMAT: Final = 1
#: How deep each list goes before Reciprocal Rank Fusion (at least ``top_k``).
RRF_DEPTH: Final = 100


@runtime_checkable
class Retriever(Protocol):
    """Ranks chunks for a query; ``filters`` restrict the candidates."""

    def retrieve(
        self, query: str, top_k: int, filters: Mapping[str, Any] | None = None
    ) -> list[Hit]: ...


def _canon(value: Any) -> str:
    if isinstance(value, str):
        return "s:" + value
    return "j:" + json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def merge_filters(
    base: Mapping[str, Any] | None, extra: Mapping[str, Any] | None
) -> dict[str, Any]:
    """Config filters plus per-call filters (the call wins on a shared key)."""
    return {**(base or {}), **(extra or {})}


class ChunkTable:
    """Ids and metadata of the indexed chunks, with an inverted index for filters."""

    def __init__(
        self,
        chunk_ids: Sequence[str],
        doc_ids: Sequence[str],
        metadata: Sequence[Mapping[str, Any]],
    ) -> None:
        if not len(chunk_ids) == len(doc_ids) == len(metadata):
            raise ValueError("chunk_ids, doc_ids and metadata must have equal lengths")
        seen: set[str] = set()
        for cid in chunk_ids:
            if cid in seen:
                raise InputError(f"duplicate chunk id {cid!r}", field="chunk_id")
            seen.add(cid)
        self.chunk_ids = list(chunk_ids)
        self.doc_ids = list(doc_ids)
        self.metadata = [dict(m) for m in metadata]
        self._inverted: dict[str, dict[str, npt.NDArray[np.int64]]] = {}

    @classmethod
    def of(cls, chunks: Sequence[Chunk]) -> ChunkTable:
        return cls(
            [c.chunk_id for c in chunks], [c.doc_id for c in chunks], [c.metadata for c in chunks]
        )

    def __len__(self) -> int:
        return len(self.chunk_ids)

    def _postings(self, key: str) -> dict[str, npt.NDArray[np.int64]]:
        if key not in self._inverted:
            lists: dict[str, list[int]] = {}
            for i in range(len(self)):
                if key == "doc_id":
                    values: list[Any] = [self.doc_ids[i]]
                elif key == "chunk_id":
                    values = [self.chunk_ids[i]]
                elif key in self.metadata[i]:
                    v = self.metadata[i][key]
                    values = list(v) if isinstance(v, list) else [v]
                else:
                    values = []
                for v in values:
                    lists.setdefault(_canon(v), []).append(i)
            self._inverted[key] = {k: np.asarray(v, dtype=np.int64) for k, v in lists.items()}
        return self._inverted[key]

    def mask(self, filters: Mapping[str, Any] | None) -> npt.NDArray[np.bool_] | None:
        """Boolean mask of chunks matching every filter; ``None`` when no filters."""
        if not filters:
            return None
        out = np.ones(len(self), dtype=bool)
        for key, want in filters.items():
            wanted = list(want) if isinstance(want, list | tuple | set | frozenset) else [want]
            postings = self._postings(str(key))
            hit = np.zeros(len(self), dtype=bool)
            for w in wanted:
                idx = postings.get(_canon(w))
                if idx is not None:
                    hit[idx] = True
            out &= hit
        return out

    def to_json(self) -> dict[str, Any]:
        return {"chunk_ids": self.chunk_ids, "doc_ids": self.doc_ids, "metadata": self.metadata}


def _rrf_top(rankings: Sequence[Sequence[int]], k: int, top_k: int) -> list[tuple[int, float]]:
    """The ``top_k`` of :func:`ragtriage.index.rrf` over rankings of distinct rows, best
    first, ties to the lower row, in numpy: the same float64 sums (each row's terms
    added in ranking order, starting from 0.0), for less time than a dict and a sort."""
    parts = [np.asarray(r, dtype=np.int64) for r in rankings]
    ids = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
    if ids.size == 0:
        return []
    weights = np.concatenate([1.0 / (k + np.arange(1, p.shape[0] + 1)) for p in parts])
    rows, inverse = np.unique(ids, return_inverse=True)
    fused = np.bincount(inverse, weights=weights, minlength=rows.shape[0])
    order = np.lexsort((rows, -fused))[:top_k]
    return [(int(rows[i]), float(fused[i])) for i in order]


class BatchRetriever(ABC):
    """A retriever that answers batches; :meth:`retrieve` is a batch of one."""

    @abstractmethod
    def retrieve_many(
        self, queries: Sequence[str], top_k: int, filters: Mapping[str, Any] | None = None
    ) -> list[list[Hit]]: ...

    def retrieve(
        self, query: str, top_k: int, filters: Mapping[str, Any] | None = None
    ) -> list[Hit]:
        """The ``top_k`` best chunks for ``query``, ranks 1..k."""
        return self.retrieve_many([query], top_k, filters)[0]


class IndexedRetriever(BatchRetriever):
    """One retriever for every mode; holds a dense index, a BM25 index, or both."""

    def __init__(
        self,
        cfg: RetrievalConfig,
        table: ChunkTable,
        *,
        dense: DenseIndex | None = None,
        bm25: BM25Index | None = None,
        embedder: Embedder | None = None,
    ) -> None:
        needs_dense = cfg.mode != "bm25"
        needs_bm25 = cfg.mode != "dense"
        if needs_dense and (dense is None or embedder is None):
            raise ConfigError(
                f"retrieval mode {cfg.mode!r} needs an embedder and a dense index",
                field="retrieval.mode",
            )
        if needs_bm25 and bm25 is None:
            raise ConfigError(
                f"retrieval mode {cfg.mode!r} needs a BM25 index", field="retrieval.mode"
            )
        for name, idx in (("dense", dense), ("bm25", bm25)):
            if idx is not None and idx.size != len(table):
                raise ValueError(f"{name} index has {idx.size} rows for {len(table)} chunks")
        if dense is not None and embedder is not None and dense.dim != embedder.dim:
            raise ConfigError(
                f"index dimension {dense.dim} != embedder {embedder.name!r} dimension "
                f"{embedder.dim}",
                field="embedding.model",
            )
        self.cfg = cfg
        self.table = table
        self.dense = dense
        self.bm25 = bm25
        self.embedder = embedder

    # ----------------------------------------------------------------- querying
    def _hits(self, rows: Sequence[tuple[int, float]]) -> list[Hit]:
        return [
            Hit(
                chunk_id=self.table.chunk_ids[i],
                doc_id=self.table.doc_ids[i],
                score=float(s),
                rank=r,
            )
            for r, (i, s) in enumerate(rows, start=1)
        ]

    def _rank(
        self,
        query: str,
        qvec: npt.NDArray[np.float32] | None,
        top_k: int,
        mask: npt.NDArray[np.bool_] | None,
    ) -> list[tuple[int, float]]:
        mode = self.cfg.mode
        if top_k <= 0 or len(self.table) == 0:
            return []
        if mode == "bm25":
            assert self.bm25 is not None
            return self.bm25.search(query, top_k, mask)
        assert self.dense is not None and qvec is not None
        if mode == "dense":
            return self.dense.search(qvec, top_k, mask)
        assert self.bm25 is not None
        if mode == "hybrid_weighted":  # min-max needs every score: exact, full vectors
            dense_scores = self.dense.scores(qvec)
            lex_scores = self.bm25.scores(query)
            fused = weighted_fusion(dense_scores, lex_scores, self.cfg.text_weight, mask)
            return [(int(i), float(fused[i])) for i in top_k_indices(fused, top_k, mask)]
        depth = max(top_k, RRF_DEPTH)
        dense_rank = [i for i, _ in self.dense.search(qvec, depth, mask)]
        # exact BM25 top-depth (positive scores, in the mask) without scoring every row
        lex_rank = [i for i, _ in self.bm25.search(query, depth, mask)]
        return _rrf_top([dense_rank, lex_rank], self.cfg.rrf_k, top_k)

    def retrieve_many(
        self, queries: Sequence[str], top_k: int, filters: Mapping[str, Any] | None = None
    ) -> list[list[Hit]]:
        """:meth:`retrieve` for many queries, embedding them in one batch."""
        mask = self.table.mask(merge_filters(self.cfg.filters, filters))
        qvecs: npt.NDArray[np.float32] | None = None
        if self.cfg.mode != "bm25" and queries:
            assert self.embedder is not None
            qvecs = embed_queries(self.embedder, list(queries))
        out = []
        for i, q in enumerate(queries):
            qv = None if qvecs is None else qvecs[i]
            out.append(self._hits(self._rank(q, qv, top_k, mask)))
        return out

    # ----------------------------------------------------------------- persistence
    def save(self, directory: str | Path) -> None:
        """Write the index as npy + json files; replaces ``directory`` atomically."""
        target = Path(directory)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
        try:
            manifest = {
                "format": _FORMAT,
                "config": self.cfg.model_dump(mode="json"),
                "embedder": None if self.embedder is None else self.embedder.name,
                "dim": None if self.dense is None else self.dense.dim,
                "size": len(self.table),
            }
            (tmp / "chunks.json").write_text(
                json.dumps(self.table.to_json(), ensure_ascii=False), encoding="utf-8"
            )
            if self.dense is not None:
                self.dense.save(tmp)
            if self.bm25 is not None:
                self.bm25.save(tmp / "bm25")
            (tmp / "manifest.json").write_text(json.dumps(manifest, indent=2), encoding="utf-8")
            backup = None
            if target.exists():
                backup = target.with_name(f".{target.name}.old-{os.getpid()}")
                os.replace(target, backup)
            os.replace(tmp, target)
            if backup is not None:
                shutil.rmtree(backup, ignore_errors=True)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise

    @classmethod
    def load(
        cls,
        directory: str | Path,
        embedder: Embedder | None,
        cfg: RetrievalConfig | None = None,
    ) -> IndexedRetriever:
        """Read a saved index. ``embedder`` must be the model that built it; ``cfg``
        may change the mode/top-k/filters as long as the needed indexes exist."""
        d = Path(directory)
        try:
            manifest = json.loads((d / "manifest.json").read_text(encoding="utf-8"))
            table_json = json.loads((d / "chunks.json").read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise InputError(f"cannot read retrieval index: {exc}", path=str(d)) from exc
        if manifest.get("format") != _FORMAT:
            raise InputError(
                f"unsupported index format {manifest.get('format')!r}",
                path=str(d / "manifest.json"),
                field="format",
            )
        saved_cfg = RetrievalConfig.model_validate(manifest["config"])
        use_cfg = cfg or saved_cfg
        dense = DenseIndex.load(d) if (d / "dense.npy").exists() else None
        bm25 = BM25Index.load(d / "bm25") if (d / "bm25").is_dir() else None
        if dense is not None and embedder is not None and manifest.get("embedder") != embedder.name:
            raise ConfigError(
                f"index was built with embedder {manifest.get('embedder')!r}, "
                f"not {embedder.name!r}",
                path=str(d / "manifest.json"),
                field="embedder",
            )
        table = ChunkTable(table_json["chunk_ids"], table_json["doc_ids"], table_json["metadata"])
        return cls(use_cfg, table, dense=dense, bm25=bm25, embedder=embedder)


def use_ann(index: IndexConfig, rows: int) -> bool:
    """Whether a dense index of ``rows`` rows gets an HNSW graph under ``index.ann``."""
    if index.ann == "exact":
        return False
    if index.ann == "hnsw":
        return True
    return rows >= index.ann_min_rows and ann_available()


def build_retriever(
    cfg: RetrievalConfig,
    chunks: Sequence[Chunk],
    embedder: Embedder | None,
    *,
    vectors: npt.ArrayLike | None = None,
    on_progress: Callable[[int, int], None] | None = None,
    index: IndexConfig | None = None,
) -> IndexedRetriever:
    """Index ``chunks`` for ``cfg.mode``. Dense modes embed the chunk texts with
    ``embedder`` (passages) unless precomputed ``vectors`` are given; ``on_progress
    (done, total)`` follows that embedding. ``index`` (default: in memory, exact below
    50k chunks) may add an HNSW graph (:func:`use_ann`)."""
    index = index or IndexConfig()
    table = ChunkTable.of(chunks)
    dense = bm25 = None
    if cfg.mode != "bm25":
        if embedder is None:
            raise ConfigError(
                f"retrieval mode {cfg.mode!r} needs an embedder", field="retrieval.mode"
            )
        if vectors is None:
            mat = embed_documents(embedder, [c.text for c in chunks], on_progress=on_progress)
            if mat.shape[0] == 0:
                mat = np.zeros((0, embedder.dim), dtype=np.float32)
        else:
            mat = np.asarray(vectors, dtype=np.float32)
        dense = DenseIndex(mat)
        if use_ann(index, dense.size):
            dense.with_ann(
                HNSWParams(index.hnsw_m, index.hnsw_ef_construction, index.hnsw_ef_search)
            )
    if cfg.mode != "dense":
        bm25 = BM25Index.from_texts([c.text for c in chunks])
    return IndexedRetriever(cfg, table, dense=dense, bm25=bm25, embedder=embedder)


def open_retriever(
    cfg: PipelineConfig,
    chunks: Sequence[Chunk],
    embedder: Embedder | None,
    *,
    corpus: str,
    vectors: npt.ArrayLike | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> Retriever:
    """The retriever of ``cfg.index.backend``: :func:`build_retriever` in memory, or a
    pgvector table (:class:`ragtriage.pgindex.PgVectorRetriever`, one per corpus and
    chunking/embedding config, updated incrementally). Close it with ``close()`` when
    it has one."""
    if cfg.index.backend == "memory":
        return build_retriever(
            cfg.retrieval,
            chunks,
            embedder,
            vectors=vectors,
            on_progress=on_progress,
            index=cfg.index,
        )
    from ragtriage.pgindex import PgVectorRetriever

    key = {
        "chunking": cfg.chunking.model_dump(mode="json"),
        "embedder": None if embedder is None else embedder.name,
        "vectors": cfg.retrieval.mode != "bm25",
    }
    return PgVectorRetriever.build(
        cfg.retrieval,
        cfg.index,
        chunks,
        embedder,
        corpus=corpus,
        table_key=key,
        vectors=vectors,
        on_progress=on_progress,
    )
