"""The stages of one pipeline, kept apart so a fault can replace one of them.

:class:`PipelineParts` builds what :meth:`ragtriage.pipeline.Pipeline.from_config`
builds (chunks, embeddings, retriever, reranker, generator, query transform), keeps the
chunk embeddings, and assembles a real :class:`~ragtriage.pipeline.Pipeline` from them
with any stage swapped: re-chunked documents (only their chunks are embedded again), a
retriever or reranker that misbehaves in a controlled way (:class:`FaultyRetriever`,
:class:`FaultyReranker`). Every trace of a faulty pipeline is produced by
``Pipeline.run_example``, exactly like ``ragtriage run`` produces traces.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ragtriage.chunking import make_chunker
from ragtriage.config import PipelineConfig
from ragtriage.data import Dataset
from ragtriage.embedding import Embedder, embed_documents, make_embedder
from ragtriage.errors import InputError
from ragtriage.generation import Generator, make_generator
from ragtriage.llm import LLMClient, LLMRunner, client_from_config
from ragtriage.pipeline import BuildInfo, Pipeline
from ragtriage.query_transforms import QueryTransformer, make_query_transformer
from ragtriage.records import Chunk, Document, Hit
from ragtriage.rerank import Reranker, make_reranker
from ragtriage.retrieval import Retriever, build_retriever, open_retriever

__all__ = ["FaultyReranker", "FaultyRetriever", "PipelineParts", "with_score_profile"]

Vectors = npt.NDArray[np.float32]


def _needs_llm(cfg: PipelineConfig) -> bool:
    return (
        cfg.generation.backend == "openai"
        or cfg.rerank.method == "llm"
        or cfg.query_transform.method != "none"
    )


def with_score_profile(order: Sequence[Hit], profile: Sequence[Hit]) -> list[Hit]:
    """``order`` renumbered 1..n with the scores of ``profile`` sorted high to low, so a
    reordered list keeps the usual, monotonically falling score profile."""
    scores = sorted((h.score for h in profile if h.score is not None), reverse=True)
    out: list[Hit] = []
    for i, h in enumerate(order):
        score = scores[i] if i < len(scores) else (scores[-1] if scores else h.score)
        out.append(Hit(chunk_id=h.chunk_id, doc_id=h.doc_id, score=score, rank=i + 1))
    return out


class FaultyRetriever:
    """A retriever whose ranking ``reorder`` changes: it sees the real ranking of the
    ``depth`` best chunks and returns the list the faulty retriever would give (first
    ``top_k`` kept, scores from the real top-``top_k`` profile)."""

    def __init__(
        self,
        inner: Retriever,
        reorder: Callable[[str, list[Hit]], list[Hit]],
        *,
        depth: int,
    ) -> None:
        self._inner = inner
        self._reorder = reorder
        self._depth = depth

    def retrieve(
        self, query: str, top_k: int, filters: Mapping[str, Any] | None = None
    ) -> list[Hit]:
        deep = list(self._inner.retrieve(query, max(self._depth, top_k), filters))
        return with_score_profile(self._reorder(query, deep)[:top_k], deep[:top_k])


class FaultyReranker:
    """A reranker whose output ``reorder`` changes: it sees the real reranker's full
    ordering of the retrieved hits and returns the ``top_k`` hits the faulty reranker
    forwards (scores from the real top-``top_k`` profile)."""

    def __init__(self, inner: Reranker, reorder: Callable[[list[Hit], int], list[Hit]]) -> None:
        self._inner = inner
        self._reorder = reorder

    async def rerank(
        self, query: str, hits: Sequence[Hit], chunks: Mapping[str, Chunk], top_k: int
    ) -> list[Hit]:
        full = list(await self._inner.rerank(query, hits, chunks, max(len(hits), 1)))
        return with_score_profile(self._reorder(full, top_k)[:top_k], full[:top_k])


@dataclass
class PipelineParts:
    """Everything a pipeline is made of, built once; see the module docstring."""

    config: PipelineConfig
    dataset: Dataset
    embedder: Embedder
    chunks: tuple[Chunk, ...]
    vectors: Vectors | None
    retriever: Retriever
    reranker: Reranker
    generator: Generator
    transformer: QueryTransformer | None
    build_info: BuildInfo
    runner: LLMRunner | None = None
    documents: dict[str, Document] = field(default_factory=dict)

    @classmethod
    def build(
        cls,
        cfg: PipelineConfig,
        dataset: Dataset,
        *,
        embedder: Embedder | None = None,
        llm_client: LLMClient | None = None,
        llm_cache_path: str | Path | None = None,
        model_dir: Path | None = None,
    ) -> PipelineParts:
        """Chunk, embed and index the corpus and make the other stages, like
        :meth:`Pipeline.from_config` (an LLM runner only when a stage needs one)."""
        emb = embedder if embedder is not None else make_embedder(cfg.embedding)
        t0 = time.perf_counter()
        if dataset.prechunked is not None:
            chunks = list(dataset.prechunked)
        else:
            chunker = make_chunker(cfg.chunking, emb)
            chunks = [c for doc in dataset.documents for c in chunker.chunk(doc)]
        ids = [c.chunk_id for c in chunks]
        if len(set(ids)) != len(ids):
            dup = next(i for i in ids if ids.count(i) > 1)
            raise InputError(f"duplicate chunk id {dup!r}", field="chunk_id")
        t1 = time.perf_counter()
        vectors = _embed(cfg, emb, chunks)
        retriever = open_retriever(cfg, chunks, emb, corpus=dataset.name, vectors=vectors)
        t2 = time.perf_counter()
        runner: LLMRunner | None = None
        if _needs_llm(cfg) and (llm_client is not None or cfg.llm.with_env().configured):
            inner = llm_client if llm_client is not None else client_from_config(cfg.llm)
            runner = LLMRunner.from_config(cfg.llm, client=inner, cache_path=llm_cache_path)
        llm_model = cfg.llm.with_env().model or ""
        build = BuildInfo.measure(dataset, chunks, t0, t1, t2)
        return cls(
            config=cfg,
            dataset=dataset,
            embedder=emb,
            chunks=tuple(chunks),
            vectors=vectors,
            retriever=retriever,
            reranker=make_reranker(cfg.rerank, embedder=emb, llm=runner),
            generator=make_generator(
                cfg.generation, llm=runner, llm_model=llm_model, model_dir=model_dir
            ),
            transformer=make_query_transformer(
                cfg.query_transform, runner, model=llm_model, seed=cfg.generation.seed
            ),
            build_info=build,
            runner=runner,
            documents=dataset.document_map(),
        )

    def pipeline(
        self,
        *,
        chunks: Sequence[Chunk] | None = None,
        retriever: Retriever | None = None,
        reranker: Reranker | None = None,
        generator: Generator | None = None,
    ) -> Pipeline:
        """A real pipeline from these parts, with the given stages swapped in."""
        return Pipeline(
            config=self.config,
            chunks=self.chunks if chunks is None else chunks,
            retriever=self.retriever if retriever is None else retriever,
            reranker=self.reranker if reranker is None else reranker,
            generator=self.generator if generator is None else generator,
            transformer=self.transformer,
            embedder=self.embedder,
            build=self.build_info,
            runner=self.runner,
        )

    def rechunked(self, replacement: Mapping[str, Sequence[Chunk]]) -> Pipeline:
        """A pipeline whose corpus has the chunks of the documents in ``replacement``
        replaced (only those chunks are embedded; the index is rebuilt over the corpus)."""
        kept_rows = [i for i, c in enumerate(self.chunks) if c.doc_id not in replacement]
        new_chunks = [c for cs in replacement.values() for c in cs]
        chunks = [self.chunks[i] for i in kept_rows] + new_chunks
        vectors: Vectors | None = None
        if self.vectors is not None:
            fresh = _embed(self.config, self.embedder, new_chunks)
            assert fresh is not None
            vectors = np.concatenate([self.vectors[kept_rows], fresh], axis=0)
        # injected faults stay in memory (never written to a shared pgvector table)
        retriever = build_retriever(
            self.config.retrieval, chunks, self.embedder, vectors=vectors, index=self.config.index
        )
        return self.pipeline(chunks=chunks, retriever=retriever)

    def chunk_documents(
        self, docs: Sequence[Document], cfg_update: Mapping[str, Any]
    ) -> list[Chunk]:
        """Chunk ``docs`` with the configured chunker changed by ``cfg_update``."""
        chunker = make_chunker(
            self.config.chunking.model_copy(update=dict(cfg_update)), self.embedder
        )
        return [c for d in docs for c in chunker.chunk(d)]

    async def aclose(self) -> None:
        if self.runner is not None:
            await self.runner.aclose()


def _embed(cfg: PipelineConfig, emb: Embedder, chunks: Sequence[Chunk]) -> Vectors | None:
    if cfg.retrieval.mode == "bm25":
        return None
    mat = embed_documents(emb, [c.text for c in chunks])
    if mat.shape[0] == 0:
        return np.zeros((0, emb.dim), dtype=np.float32)
    return np.asarray(mat, dtype=np.float32)
