"""``ragtriage run`` and ``ragtriage evaluate`` on Ray (``--executor ray[:ADDRESS]``).

**run.** The driver builds the pipeline once (chunking, embedding, the index), saves
the in-memory index as its npy + json files (no pickle) and puts those bytes, the
chunks and the config in Ray's object store once. Each worker process rebuilds the
pipeline from them the first time it gets a batch (the embedder model loads there;
nothing is re-embedded) and keeps it for the next batches. A batch of examples comes
back as trace lines, appended by the driver **in input order**, one write and fsync
per batch, so a killed run leaves a prefix and the same command resumes it.

**evaluate.** Batches of traces are scored by the offline judge on the workers; the
per-trace rows come back in input order and are appended to a resume file, and the
aggregate (means, bootstrap CIs, latency and cost) is computed by the driver over all
rows, exactly as the local executor computes it.

**LLM stages stay local** (the choice documented in :mod:`ragtriage.executors._ray`
for ``diagnose``): one process holds the LLM runner's concurrency limit and its SQLite
response cache, so no paid call is made twice. A pipeline whose generation, rerank or
query transform calls an LLM endpoint, and ``evaluate --judge llm``, are configuration
errors on Ray that say to use the local executor. The pgvector backend is not shipped
to workers either (it is already a server: run it with the local executor).
"""

from __future__ import annotations

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


def check_run_on_ray(cfg: PipelineConfig) -> None:
    """A :class:`ConfigError` for a pipeline that cannot run on Ray (before indexing)."""
    from ragtriage.pipeline import needs_llm

    if needs_llm(cfg):
        raise ConfigError(
            "a pipeline stage calls an LLM endpoint; LLM stages run on the local executor "
            "(one response cache, so no paid call is made twice; see docs/scaling.md): "
            "drop --executor ray",
            field="--executor",
        )
    if cfg.index.backend != "memory":
        raise ConfigError(
            f"--executor ray ships the in-memory index to the workers; index.backend "
            f"{cfg.index.backend!r} runs on the local executor",
            field="--executor",
        )


def _bundle(pipeline: Pipeline) -> dict[str, Any]:
    """What a worker needs to rebuild ``pipeline``: config, chunks, build info and the
    saved index files (bytes)."""
    from ragtriage.retrieval import IndexedRetriever

    retriever = pipeline.retriever
    if not isinstance(retriever, IndexedRetriever):
        raise ConfigError(
            "--executor ray needs the in-memory index (index.backend: memory)",
            field="--executor",
        )
    with tempfile.TemporaryDirectory(prefix="ragtriage-ray-") as tmp:
        root = Path(tmp) / "index"
        retriever.save(root)
        files = {
            p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()
        }
    return {
        "config": pipeline.config.model_dump_json(),
        "chunks": [c.model_dump_json() for c in pipeline.chunks],
        "build": dataclasses.asdict(pipeline.build_info),
        "index": files,
    }


def _pipeline_of(bundle: dict[str, Any]) -> Pipeline:
    """Worker side of :func:`_bundle`."""
    from ragtriage.embedding import make_embedder
    from ragtriage.pipeline import BuildInfo, Pipeline
    from ragtriage.retrieval import IndexedRetriever

    cfg = PipelineConfig.model_validate_json(bundle["config"])
    emb = make_embedder(cfg.embedding)
    chunks = [Chunk.model_validate_json(c) for c in bundle["chunks"]]
    with tempfile.TemporaryDirectory(prefix="ragtriage-ray-") as tmp:
        for rel, data in bundle["index"].items():
            path = Path(tmp, rel)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        retriever = IndexedRetriever.load(tmp, emb, cfg.retrieval)  # reads every file
    return Pipeline.from_index(cfg, chunks, retriever, BuildInfo(**bundle["build"]), embedder=emb)


def _run_batch(key: str, run_id: str, shared: list[Any], lines: list[str]) -> list[str]:
    """Ray task body: run one batch of examples (JSON in, trace lines out)."""
    from ragtriage.llm import run_sync

    pipeline = worker_cached(key, shared, _pipeline_of)
    examples = [Example.model_validate_json(line) for line in lines]

    async def run_all() -> list[Trace]:
        return [await pipeline.run_example(e, run_id=run_id) for e in examples]

    return [record_json(t) for t in run_sync(run_all())]


def run_examples_on_ray(
    pipeline: Pipeline,
    examples: Sequence[Example],
    *,
    run_id: str,
    executor: Executor,
    batch_size: int = DEFAULT_BATCH,
) -> Iterator[list[str]]:
    """Trace lines of ``examples`` run by Ray tasks, one list per batch, in input order."""
    check_run_on_ray(pipeline.config)
    yield from ray_map(
        _run_batch,
        examples,
        encode=Example.model_dump_json,
        executor=executor,
        batch_size=batch_size,
        args=(secrets.token_hex(8), run_id),
        shared=_bundle(pipeline),
    )


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
            selfcheck_n=0,
            seed=opts["seed"],
        )
    judge: TraceJudge = LLMTraceJudge(runner) if runner is not None else OfflineJudge()
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
) -> list[dict[str, Any]]:
    """Score rows of ``traces`` (in their order) by the offline judge, or by the LLM
    judge when ``llm`` (an :class:`~ragtriage.config.LLMConfig`) is given -- its samples
    stored through one cache actor over ``cache_path`` -- computed by Ray tasks
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
            # the endpoint without its key: workers read theirs from their environment
            "llm": llm.model_copy(update={"api_key": None}).model_dump_json()
            if llm is not None
            else None,
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
