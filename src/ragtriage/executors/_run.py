"""``ragtriage run`` and ``ragtriage evaluate`` on Ray (``--executor ray[:ADDRESS]``).

**run.** The driver builds the pipeline once (chunking, embedding, the index), saves
the in-memory index as its npy + json files (no pickle) and puts those bytes, the
chunks and the config in Ray's object store once. Each worker process rebuilds the
pipeline from them the first time it gets a batch (the embedder model loads there;
nothing is re-embedded) and keeps it for the next batches. A batch of examples comes
back as trace lines, appended by the driver **in input order**, one write and fsync
per batch, so a killed run leaves a prefix and the same command resumes it.

**evaluate.** Batches of traces are scored on the workers (by the offline judge, or by
the LLM judge through the cache actor); the per-trace rows come back in input order
and are appended to a resume file, and the aggregate (means, bootstrap CIs, latency and
cost) is computed by the driver over all rows, exactly as the local executor computes
it. ``--selfcheck N`` samples its N answers per trace on the workers too, through the
same runner and cache actor (the requests are seeded per trace, so the samples, and
the scores, are the local executor's).

**LLM stages on Ray** (generation ``openai``, LLM rerank, LLM query transform): each
batch's runner calls the endpoint from the worker (address and key read from the
worker's environment, never sent in a task) and looks samples up and stores them
through the cache actor over the driver runner's cache file
(:mod:`ragtriage.executors._ray`); the worker keeps its index and offline stages and
rebuilds only the LLM stages over the batch's runner, whose share of ``llm.concurrency``
bounds the examples' calls. Each batch returns its ledger with its trace lines; the
driver adds it to its runner's ledger, so the manifest's ``llm_ledger`` counts the
whole session as the local executor's does (but for the attempt of a task that Ray
retried after its worker died: its ledger is lost with it, its paid answers are in the
cache).

**pgvector on Ray**: instead of index files the workers get the driver's table handle
(:meth:`~ragtriage.pgindex.PgVectorRetriever.handle`: table, size, HNSW or not, and the
DSN without its password, which libpq reads on each worker from ``PGPASSWORD`` or
``~/.pgpass``) and query it over their own connection. The embedded server (no
``index.dsn``) listens on a Unix socket of the driver's machine: a ``ray://`` address
or a cluster with another node is a :class:`ConfigError`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import secrets
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragtriage.config import PipelineConfig
from ragtriage.errors import ConfigError
from ragtriage.executors._ray import (
    DEFAULT_BATCH,
    Executor,
    cache_actor,
    concurrency_share,
    keyless,
    ray_map,
    ray_session,
    worker_cached,
)
from ragtriage.jsonl import (
    append_lines,
    atomic_write_text,
    iter_json_lines,
    record_json,
    scan_done_ids,
)
from ragtriage.records import Chunk, Example, Trace

if TYPE_CHECKING:
    from ragtriage.pipeline import Pipeline

__all__ = ["check_run_on_ray", "run_examples_on_ray", "score_traces_on_ray"]


def check_run_on_ray(cfg: PipelineConfig, executor: Executor | None = None) -> None:
    """A :class:`ConfigError` for a pipeline that cannot run on Ray (before indexing):
    the embedded PostgreSQL server (pgvector without ``index.dsn``) and a Ray Client
    address (``ray://``: the workers are on other machines)."""
    address = executor.address if executor is not None else None
    if (
        cfg.index.backend == "pgvector"
        and not cfg.index.dsn
        and (address or "").startswith("ray://")
    ):
        raise ConfigError(_EMBEDDED_REMOTE, field="index.dsn")


_EMBEDDED_REMOTE = (
    "index.backend pgvector without index.dsn runs an embedded PostgreSQL server on a Unix "
    "socket of this machine, which workers on other machines cannot reach: set index.dsn "
    "to a server they can reach (its password from PGPASSWORD or ~/.pgpass on each "
    "worker), or run on a local Ray cluster"
)


def _check_reachable(ray: Any, pipeline: Pipeline) -> None:
    """An embedded PostgreSQL server is reachable from this node only: refuse a cluster
    with other nodes."""
    from ragtriage.pgindex import PgVectorRetriever

    retriever = pipeline.retriever
    if not (isinstance(retriever, PgVectorRetriever) and retriever.server.embedded):
        return
    here = ray.get_runtime_context().get_node_id()
    others = [n for n in ray.nodes() if n.get("Alive") and n.get("NodeID") != here]
    if others:
        raise ConfigError(
            f"{_EMBEDDED_REMOTE} (this cluster has {len(others)} other node(s))",
            field="index.dsn",
        )


def _bundle(pipeline: Pipeline) -> dict[str, Any]:
    """What a worker needs to rebuild ``pipeline``: config, chunks, build info, and the
    saved index files (bytes) or the pgvector table's handle (the DSN without a
    password)."""
    from ragtriage.pgindex import PgVectorRetriever
    from ragtriage.retrieval import IndexedRetriever

    retriever = pipeline.retriever
    files: dict[str, bytes] = {}
    pg = None
    if isinstance(retriever, PgVectorRetriever):
        pg = retriever.handle()
    elif isinstance(retriever, IndexedRetriever):
        with tempfile.TemporaryDirectory(prefix="ragtriage-ray-") as tmp:
            root = Path(tmp) / "index"
            retriever.save(root)
            files = {
                p.relative_to(root).as_posix(): p.read_bytes()
                for p in root.rglob("*")
                if p.is_file()
            }
    else:
        raise ConfigError(
            f"--executor ray cannot ship a {type(retriever).__name__} to the workers",
            field="--executor",
        )
    cfg = pipeline.config  # secrets stay here: workers read theirs from their environment
    public = cfg.model_copy(
        update={
            "llm": keyless(cfg.llm),
            "index": cfg.index.model_copy(update={"dsn": None}),
        }
    )
    return {
        "config": public.model_dump_json(),
        "chunks": [c.model_dump_json() for c in pipeline.chunks],
        "build": dataclasses.asdict(pipeline.build_info),
        "index": files,
        "pg": pg,
    }


def _pipeline_of(bundle: dict[str, Any], runner: Any = None) -> Pipeline:
    """Worker side of :func:`_bundle` (LLM stages over ``runner``)."""
    from ragtriage.embedding import make_embedder
    from ragtriage.pipeline import BuildInfo, Pipeline
    from ragtriage.retrieval import IndexedRetriever, Retriever

    cfg = PipelineConfig.model_validate_json(bundle["config"])
    emb = make_embedder(cfg.embedding)
    chunks = [Chunk.model_validate_json(c) for c in bundle["chunks"]]
    retriever: Retriever
    if bundle["pg"] is not None:  # the driver's table, over this worker's connection
        from ragtriage.pgindex import PgVectorRetriever

        retriever = PgVectorRetriever.attach(cfg.retrieval, cfg.index, emb, bundle["pg"])
    else:
        with tempfile.TemporaryDirectory(prefix="ragtriage-ray-") as tmp:
            for rel, data in bundle["index"].items():
                path = Path(tmp, rel)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(data)
            retriever = IndexedRetriever.load(tmp, emb, cfg.retrieval)  # reads every file
    return Pipeline.from_index(
        cfg, chunks, retriever, BuildInfo(**bundle["build"]), embedder=emb, runner=runner
    )


def _run_batch(
    key: str,
    run_id: str,
    llm: str | None,
    concurrency: int,
    cache: list[Any],
    shared: list[Any],
    lines: list[str],
) -> tuple[list[str], str | None]:
    """Ray task body: run one batch of examples (JSON in; trace lines and, with LLM
    stages, the batch's ledger summary as JSON out). ``llm``: the endpoint without its
    key when a stage calls an LLM; its samples go through the cache actor (``cache``)."""
    from ragtriage.executors._ray import worker_runner
    from ragtriage.llm import run_sync
    from ragtriage.pipeline import metered_client

    runner = worker_runner(llm, concurrency, cache, metered_client) if llm else None
    if runner is None:
        pipeline = worker_cached(key, shared, _pipeline_of)
    else:  # index and offline stages kept per worker; LLM stages over this batch's runner
        first = runner
        pipeline = worker_cached(key, shared, lambda b: _pipeline_of(b, first))
        pipeline = pipeline.with_runner(runner)
    examples = [Example.model_validate_json(line) for line in lines]

    async def run_all() -> list[Trace]:
        # one event loop for the batch (the client's connection pool belongs to it);
        # the examples in flight together, the runner's share of the limit bounds calls
        try:
            return list(
                await asyncio.gather(*(pipeline.run_example(e, run_id=run_id) for e in examples))
            )
        finally:
            if runner is not None:
                await runner.aclose()

    traces = [record_json(t) for t in run_sync(run_all())]
    ledger = runner.ledger.summary().model_dump_json() if runner is not None else None
    return traces, ledger


def run_examples_on_ray(
    pipeline: Pipeline,
    examples: Sequence[Example],
    *,
    run_id: str,
    executor: Executor,
    batch_size: int = DEFAULT_BATCH,
) -> Iterator[list[str]]:
    """Trace lines of ``examples`` run by Ray tasks, one list per batch, in input order.
    LLM stages call the endpoint from the workers through one cache actor over the
    pipeline runner's cache file; each batch's ledger is added to that runner's, so the
    run's manifest counts every call, token and cost of this session."""
    from ragtriage.llm import LedgerSummary

    check_run_on_ray(pipeline.config, executor)
    runner = pipeline.runner
    llm = None
    cache_path = None
    if runner is not None:
        cfg = pipeline.config.llm
        llm = keyless(cfg).model_dump_json()
        cache_path = runner.cache.path if runner.cache is not None else None
    with ray_session(executor) as ray, cache_actor(ray, cache_path) as actors:
        _check_reachable(ray, pipeline)
        share = concurrency_share(ray, pipeline.config.llm.concurrency)
        for lines, ledger in ray_map(
            _run_batch,
            examples,
            encode=Example.model_dump_json,
            executor=executor,
            batch_size=batch_size,
            args=(secrets.token_hex(8), run_id, llm, share, actors),
            shared=_bundle(pipeline),
        ):
            if runner is not None and ledger is not None:
                runner.ledger.add(LedgerSummary.model_validate_json(ledger))
            yield lines


def _score_batch(settings: str, concurrency: int, cache: list[Any], lines: list[str]) -> list[str]:
    """Ray task body: score rows of one batch of traces (JSON in and out), by the
    offline judge, or by the LLM judge through the cache actor (``cache``; see
    executors/_ray.py) when the settings carry an LLM config."""
    from ragtriage.executors._ray import worker_runner

    opts = json.loads(settings)
    runner = worker_runner(opts["llm"], concurrency, cache) if opts.get("llm") else None
    try:
        return _score_lines(opts, runner, lines)
    finally:
        if runner is not None:
            runner.close()


def _score_lines(opts: dict[str, Any], runner: Any, lines: list[str]) -> list[str]:
    from ragtriage.config import EmbeddingConfig
    from ragtriage.embedding import make_embedder
    from ragtriage.metrics import LLMTraceJudge, OfflineJudge, TraceJudge, extra_scores, score_rows

    emb = make_embedder(EmbeddingConfig.model_validate(opts["embedding"]))
    traces = [Trace.model_validate_json(line) for line in lines]
    with tempfile.TemporaryDirectory(prefix="ragtriage-ray-") as tmp:
        rubrics = None
        if opts["rubrics"] is not None:  # the driver's file, sent as text
            rubrics = Path(tmp) / "rubrics.yaml"
            rubrics.write_text(opts["rubrics"], encoding="utf-8")
        extra = extra_scores(
            traces,
            runner,
            emb,
            g_eval=opts["g_eval"],
            rubrics=rubrics,
            selfcheck_n=opts["selfcheck_n"],
            seed=opts["seed"],
            correctness=opts.get("correctness", True),
            correctness_n=opts.get("correctness_n", 3),
        )
    judge: TraceJudge = LLMTraceJudge(runner) if runner is not None else OfflineJudge(emb)
    rows = score_rows(traces, judge, emb, k=opts["k"], extra=extra)
    # keys in insertion order: the aggregate seeds each metric's bootstrap by its position
    return [json.dumps(r, ensure_ascii=False) for r in rows]


def score_traces_on_ray(
    traces: Sequence[Trace],
    partial: Path,
    *,
    embedding: dict[str, Any],
    k: int,
    g_eval: bool,
    rubrics: Path | None,
    seed: int,
    executor: Executor,
    batch_size: int = DEFAULT_BATCH,
    on_batch: Callable[[int], None] | None = None,
    llm: Any = None,
    cache_path: str | None = None,
    concurrency: int = 8,
    selfcheck_n: int = 0,
    correctness: bool = True,
    correctness_n: int = 3,
) -> list[dict[str, Any]]:
    """Score rows of ``traces`` (in their order) by the offline judge, or by the LLM
    judge when ``llm`` (an :class:`~ragtriage.config.LLMConfig`) is given -- its samples,
    and ``selfcheck_n`` sampled answers per trace for SelfCheck, looked up and stored
    through one cache actor over ``cache_path`` -- computed by Ray tasks
    and appended batch by batch, in input order, to the resume file ``partial``: a
    killed run keeps what it wrote and the same call goes on from there (a resume file
    written with other settings is started afresh). ``embedding``: the embedder's
    config as JSON data; ``on_batch(n)`` follows the progress."""
    settings = json.dumps(
        {
            "embedding": embedding,
            "k": k,
            "g_eval": g_eval,
            "rubrics": rubrics.read_text(encoding="utf-8") if rubrics is not None else None,
            "seed": seed,
            "selfcheck_n": selfcheck_n,
            "correctness": correctness,
            "correctness_n": correctness_n,
            # the endpoint without its key: workers read theirs from their environment
            "llm": keyless(llm).model_dump_json() if llm is not None else None,
        },
        sort_keys=True,
    )
    stamp = partial.with_name(partial.name + ".settings")
    if not stamp.exists() or stamp.read_text(encoding="utf-8") != settings:
        partial.unlink(missing_ok=True)
        atomic_write_text(stamp, settings)
    done = scan_done_ids(partial, "trace_id").ids
    todo = [t for t in traces if t.trace_id not in done]
    with ray_session(executor) as ray, cache_actor(ray, cache_path if llm else None) as actors:
        for lines in ray_map(
            _score_batch,
            todo,
            encode=Trace.model_dump_json,
            executor=executor,
            batch_size=batch_size,
            args=(settings, concurrency_share(ray, concurrency), actors),
        ):
            append_lines(partial, lines)
            if on_batch is not None:
                on_batch(len(lines))
    rows = {str(r["trace_id"]): r for _, r in iter_json_lines(partial)}
    return [rows[t.trace_id] for t in traces]
