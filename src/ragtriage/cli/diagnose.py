"""``ragtriage diagnose RUN_DIR_OR_traces.jsonl`` — RAGEC diagnoses of every trace.

Writes ``diagnoses.jsonl`` (resumable: example ids already there are skipped; lines
are appended and fsynced, a torn last line is dropped on the next start) and prints
the triage tables. The output directory is always a run directory: given a traces
file, or ``--out`` another directory, the traces are copied there with a manifest
naming their source (``ragtriage.rundir``); a run diagnosed in place is left as it is. ``--dry-run`` estimates the LLM calls and tokens first and writes
nothing.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import TracebackType
from typing import IO, TYPE_CHECKING

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

if TYPE_CHECKING:  # the records, config and report load with the command (fast --help)
    from ragtriage.config import PipelineConfig
    from ragtriage.diagnosis.engine import Diagnoser, Judge
    from ragtriage.diagnosis.strategies import Strategy
    from ragtriage.executors import Executor
    from ragtriage.llm import BatchSession, LedgerSummary, LLMRunner
    from ragtriage.records import Diagnosis, Trace
    from ragtriage.rundir import DiagnosisDirPlan

__all__ = ["DIAGNOSES_FILE", "read_traces", "register", "resolve_input"]

DIAGNOSES_FILE = "diagnoses.jsonl"
_TRACES_FILE = "traces.jsonl"
#: rules results are cheap to redo: fsync every this many lines (and at the end)
_RULES_SYNC_EVERY = 256


def resolve_input(source: Path) -> tuple[Path, Path]:
    """``(traces file, default output directory)`` for a run directory or a file."""
    if source.is_dir():
        traces = source / _TRACES_FILE
        if not traces.is_file():
            raise InputError(f"no {_TRACES_FILE} in this run directory", path=str(source))
        return traces, source
    if not source.exists():
        raise InputError("no such file or directory", path=str(source))
    return source, source.parent


def read_traces(path: Path) -> list[Trace]:
    """All traces of a JSONL file; a duplicate example id is an error naming its line."""
    from pydantic import ValidationError

    from ragtriage.jsonl import iter_json_lines, validation_to_input_error
    from ragtriage.records import Trace

    traces: list[Trace] = []
    seen: dict[str, int] = {}
    for lineno, obj in iter_json_lines(path):
        try:
            trace = Trace.model_validate(obj)
        except ValidationError as exc:
            raise validation_to_input_error(exc, path=str(path), line=lineno) from exc
        eid = trace.example.example_id
        if eid in seen:
            raise InputError(
                f"duplicate example id {eid!r} (first seen on line {seen[eid]})",
                path=str(path),
                line=lineno,
                field="example.example_id",
            )
        seen[eid] = lineno
        traces.append(trace)
    return traces


class _Appender:
    """Appends diagnosis lines to one file, fsyncing every ``sync_every`` lines."""

    def __init__(self, path: Path, sync_every: int) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fh: IO[str] = path.open("a", encoding="utf-8")
        self._sync_every = sync_every
        self._pending = 0

    def add(self, diagnosis: Diagnosis) -> None:
        self._fh.write(diagnosis.to_json() + "\n")
        self._pending += 1
        if self._pending >= self._sync_every:
            self.sync()

    def sync(self) -> None:
        self._fh.flush()
        os.fsync(self._fh.fileno())
        self._pending = 0

    def __enter__(self) -> _Appender:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            self.sync()
        finally:
            self._fh.close()


def _check_llm_reached(ledger: LedgerSummary) -> None:
    """Exit 1 when the LLM judge never got an answer: every request failed (endpoint
    down, wrong URL or key) and nothing came from the cache. The diagnoses written are
    undetermined; ``--retry-undetermined`` redoes them once the endpoint is back."""
    total = ledger.total
    if total.requests and total.failures == total.requests and not total.cache_hits:
        typer.echo(
            f"error: all {total.requests} LLM request(s) failed ({total.timeouts} timed "
            "out); check llm.base_url / the endpoint, then rerun with --retry-undetermined",
            err=True,
        )
        raise typer.Exit(1)


def _check_same_run(out_path: Path, traces: list[Trace]) -> None:
    """Resuming is only for diagnoses of these traces: a file left by another run (say
    the run directory was re-run with --overwrite) would pass its diagnoses off as this
    run's."""
    from ragtriage.jsonl import iter_json_lines

    run_ids = {t.run_id for t in traces}
    for lineno, obj in iter_json_lines(out_path):
        rid = obj.get("run_id")
        if isinstance(rid, str) and rid and rid not in run_ids:
            shown = ", ".join(sorted(repr(r) for r in run_ids if r)) or "none"
            raise InputError(
                f"holds diagnoses of run {rid!r} but the traces are run {shown}; pass "
                "--overwrite to diagnose this run afresh, or another --out",
                path=str(out_path),
                line=lineno,
                field="run_id",
            )
        return  # one line tells: a file holds one run's diagnoses


def _make_run_dir(plan: DiagnosisDirPlan, console: Console) -> None:
    """Write the traces copy and the manifest that make the output a run directory."""
    written = plan.apply()
    if not written:
        return
    what = " and ".join(p.name for p in written)
    copied = f" (traces copied from {plan.source})" if plan.copy_traces else ""
    console.print(
        f"wrote {what} in {plan.out_dir}{copied}: `ragtriage report {plan.out_dir}` and "
        f"`ragtriage serve {plan.out_dir}` read it as a run",
        highlight=False,
        soft_wrap=True,  # paths to copy, unbroken
    )


def _config(
    config: Path | None, base_url: str | None, model: str | None, k: int | None
) -> PipelineConfig:
    from ragtriage.config import load_config

    cfg = load_config(config)
    llm = cfg.llm.model_copy(
        update={
            key: value
            for key, value in (("base_url", base_url), ("model", model))
            if value is not None
        }
    )
    diagnosis = cfg.diagnosis if k is None else cfg.diagnosis.model_copy(update={"k": k})
    return cfg.model_copy(update={"llm": llm, "diagnosis": diagnosis})


def _runner(cfg: PipelineConfig, *, dry_run: bool, no_cache: bool, cache: Path | None) -> LLMRunner:
    if not cfg.llm.base_url:
        raise ConfigError(
            "--judge llm needs an OpenAI-compatible endpoint: set RAGTRIAGE_LLM_BASE_URL "
            "(and RAGTRIAGE_LLM_MODEL), pass --base-url/--model, or set llm.base_url in "
            "--config",
            field="llm.base_url",
        )
    from ragtriage.llm import LLMRunner

    return LLMRunner.from_config(cfg.llm, cache_path=cache, use_cache=not no_cache, dry_run=dry_run)


def _print_ledger(console: Console, ledger: LedgerSummary, *, estimate: bool) -> None:
    total = ledger.total
    if estimate:
        console.print(
            f"dry run: about {total.estimated_calls} LLM calls, "
            f"{total.estimated_prompt_tokens} prompt + <= {total.estimated_completion_tokens} "
            f"completion tokens (estimated cost {total.estimated_cost:.4f}); "
            f"{total.cache_hits} sample(s) already cached",
            highlight=False,
        )
    else:
        console.print(
            f"this session: {total.calls} LLM calls, {total.cache_hits} cached samples, "
            f"{total.prompt_tokens} prompt + {total.completion_tokens} completion tokens, "
            f"{total.failures} failed request(s), {total.retries} retries",
            highlight=False,
        )
    for purpose, stats in ledger.by_purpose.items():
        calls = stats.estimated_calls if estimate else stats.calls
        tokens = (
            stats.estimated_prompt_tokens + stats.estimated_completion_tokens
            if estimate
            else stats.prompt_tokens + stats.completion_tokens
        )
        console.print(
            f"  {purpose}: {calls} calls, {stats.cache_hits} cached, {tokens} tokens",
            highlight=False,
        )


async def _diagnose(
    diagnoser: Diagnoser,
    todo: list[Trace],
    *,
    out_path: Path | None,
    concurrency: int,
    progress: bool,
    sync_every: int,
    workers: int = 1,
    runner: LLMRunner | None = None,
) -> list[Diagnosis]:
    """Diagnose ``todo``; the LLM runner's pool is closed on this same loop at the end."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    err = Console(stderr=True, highlight=False)
    columns = (
        TextColumn("diagnosing"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    try:
        with Progress(*columns, console=err, disable=not progress, transient=True) as bar:
            task = bar.add_task("diagnose", total=len(todo))
            if out_path is None:

                def tick(_d: Diagnosis) -> None:
                    bar.advance(task)

                return await diagnoser.diagnose_many(
                    todo, concurrency, on_result=tick, workers=workers
                )
            with _Appender(out_path, sync_every) as appender:

                def write(d: Diagnosis) -> None:
                    appender.add(d)
                    bar.advance(task)

                return await diagnoser.diagnose_many(
                    todo, concurrency, on_result=write, workers=workers
                )
    finally:
        if runner is not None:
            await runner.aclose()


def _undetermined_ids(path: Path) -> set[str]:
    """Example ids of the undetermined diagnoses in ``path`` (unreadable lines skipped:
    the real pass reports them)."""
    import json

    ids: set[str] = set()
    with path.open("rb") as fh:
        for raw in fh:
            try:
                obj = json.loads(raw)
            except ValueError:
                continue
            if isinstance(obj, dict) and obj.get("undetermined") is True:
                ids.add(str(obj.get("example_id")))
    return ids


def _batch_pass(
    batch: BatchSession,
    diagnoser: Diagnoser,
    traces: list[Trace],
    out_path: Path,
    *,
    overwrite: bool,
    retry_undetermined: bool,
    concurrency: int,
    runner: LLMRunner | None,
) -> bool:
    """Batch mode's first pass: diagnose what this run would, writing nothing, so that
    the runner collects the requests the cache cannot answer; ``True`` when they were
    exported (the command stops)."""
    from ragtriage.jsonl import scan_done_ids
    from ragtriage.llm import run_sync

    done: set[str] = set()
    if not overwrite and out_path.exists():
        _check_same_run(out_path, traces)
        done = set(scan_done_ids(out_path, "example_id").ids)
        if retry_undetermined:
            done -= _undetermined_ids(out_path)
    todo = [t for t in traces if t.example.example_id not in done]
    run_sync(
        _diagnose(
            diagnoser,
            todo,
            out_path=None,
            concurrency=concurrency,
            progress=False,
            sync_every=1,
            runner=runner,
        )
    )
    return batch.finish()


def _diagnose_ray(
    todo: list[Trace],
    strategy: str,
    cfg: PipelineConfig,
    executor: Executor,
    batch_size: int,
    out_path: Path,
    *,
    llm: bool = False,
    llm_cache: str | None = None,
    concurrency: int = 8,
) -> None:
    """Diagnoses on Ray, appended batch by batch in input order (fsync each); the LLM
    judge's samples go through one cache actor (executors/_ray.py)."""
    from ragtriage.executors import diagnose_llm_on_ray, diagnose_on_ray

    with _Appender(out_path, sync_every=batch_size) as appender:

        def write(batch: list[Diagnosis]) -> None:
            for d in batch:
                appender.add(d)
            appender.sync()

        if llm:
            diagnose_llm_on_ray(
                todo,
                strategy=strategy,
                config=cfg.diagnosis,
                llm=cfg.llm,
                cache_path=llm_cache,
                concurrency=concurrency,
                executor=executor,
                batch_size=batch_size,
                on_batch=write,
            )
            return
        diagnose_on_ray(
            todo,
            strategy=strategy,
            config=cfg.diagnosis,
            executor=executor,
            batch_size=batch_size,
            on_batch=write,
        )


def _diagnoser(
    judge: Judge,
    strategy: Strategy,
    cfg: PipelineConfig,
    runner: LLMRunner | None,
    scores: Path | None,
    source: Path,
    console: Console,
) -> Diagnoser:
    """The diagnoser; with evaluation scores (``--scores``, or ``scores.jsonl`` in the
    run directory) its type step also weighs the metrics (diagnosis/metric_evidence.py)."""
    from ragtriage.diagnosis.engine import Diagnoser

    path = scores if scores is not None else (source / "scores.jsonl" if source.is_dir() else None)
    if path is None or (scores is None and not path.is_file()):
        return Diagnoser(judge, strategy, cfg.diagnosis, runner)
    from ragtriage.diagnosis.metric_evidence import read_metric_evidence, with_metric_evidence

    evidence = read_metric_evidence(path)
    console.print(
        f"using evaluation metrics from {path} as evidence ({len(evidence.by_trace)} traces; "
        "low faithfulness supports E10)",
        highlight=False,
    )
    factory = with_metric_evidence(cfg.diagnosis, evidence)
    return Diagnoser(judge, strategy, cfg.diagnosis, runner, judges=factory)


def _render_metrics(
    scores: Path | None, source: Path, diagnoses: list[Diagnosis], console: Console
) -> None:
    """The evaluation metrics next to the diagnosis, when the run has them."""
    from ragtriage.report.metrics_view import load_run_metrics
    from ragtriage.report.terminal import render_metrics

    if scores is None and not source.is_dir():
        return
    metrics = load_run_metrics(source, scores)
    if metrics is not None:
        render_metrics(metrics, diagnoses, console)


def register(app: typer.Typer) -> None:
    @app.command("diagnose")
    @batch_rounds
    def diagnose(
        source: Path = typer.Argument(
            ..., help="Run directory (with traces.jsonl) or a traces JSONL file."
        ),
        judge: str = typer.Option("rules", "--judge", help="rules (offline) | llm"),
        model: str | None = typer.Option(None, "--model", help="LLM model name (llm judge)."),
        base_url: str | None = typer.Option(
            None, "--base-url", help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1"
        ),
        k: int | None = typer.Option(
            None, "-k", "--k", min=1, help="Votes per error-type judgement (default 10)."
        ),
        strategy: str = typer.Option(
            "ragec", "--strategy", help="ragec | single-step | stage-sequential"
        ),
        out: Path | None = typer.Option(
            None,
            "--out",
            help="Output directory (default: the run directory, or the traces file's "
            "folder); made a run directory: the traces are copied there with a manifest.",
        ),
        dry_run: bool = typer.Option(
            False, "--dry-run", help="Estimate LLM calls and tokens; call and write nothing."
        ),
        concurrency: int = typer.Option(8, "--concurrency", min=1, help="Traces in flight."),
        workers: int = typer.Option(
            0,
            "--workers",
            min=0,
            help="Processes for the CPU-bound rules judge (0 = one per CPU core, at most 8).",
        ),
        config: Path | None = typer.Option(
            None, "--config", help="Pipeline YAML/TOML (llm and diagnosis sections)."
        ),
        no_cache: bool = typer.Option(False, "--no-cache", help="Do not use the LLM cache."),
        cache: Path | None = typer.Option(
            None, "--cache", help="LLM cache file (default .ragtriage/llm_cache.sqlite)."
        ),
        progress: bool = typer.Option(
            True, "--progress/--no-progress", help="Show a progress bar on stderr."
        ),
        overwrite: bool = typer.Option(
            False,
            "--overwrite",
            help="Start afresh: replace diagnoses.jsonl instead of resuming it.",
        ),
        executor: str = typer.Option(
            "local",
            "--executor",
            help="local | ray | ray:ADDRESS (extra .[ray]; the LLM judge shares one cache actor): batches as Ray "
            "tasks, written in input order, resumable.",
        ),
        batch_size: int = typer.Option(
            256, "--batch-size", min=1, help="Traces per Ray task (--executor ray)."
        ),
        scores: Path | None = typer.Option(
            None,
            "--scores",
            help="scores.jsonl of 'ragtriage evaluate' to use as evidence (default: the "
            "run directory's scores.jsonl when it exists): low faithfulness supports E10.",
        ),
        retry_undetermined: bool = typer.Option(
            False,
            "--retry-undetermined",
            help="When resuming, diagnose again the examples left undetermined (e.g. the "
            "LLM endpoint was down); answers already paid for come from the cache.",
        ),
        llm_batch_out: Path | None = BATCH_OUT,
        llm_batch_in: list[Path] | None = BATCH_IN,
        llm_batch_submit: bool = BATCH_SUBMIT,
        llm_batch_retry_failed: bool = BATCH_RETRY_FAILED,
    ) -> None:
        """Diagnose why answers are wrong: stage, error type (K votes) and advice.

        Exit 2 on bad input or configuration.
        """
        # imported here so that `ragtriage --help` and the other commands stay fast
        from ragtriage.diagnosis.engine import JUDGES
        from ragtriage.diagnosis.strategies import STRATEGIES
        from ragtriage.jsonl import drop_records, read_records, scan_done_ids
        from ragtriage.llm import run_sync
        from ragtriage.records import Diagnosis
        from ragtriage.report.aggregate import summarize
        from ragtriage.report.terminal import render_summary
        from ragtriage.rundir import plan_diagnosis_dir

        if judge not in JUDGES:
            raise InputError(f"expected one of {', '.join(JUDGES)}", field="--judge")
        if strategy not in STRATEGIES:
            raise InputError(f"expected one of {', '.join(STRATEGIES)}", field="--strategy")
        from ragtriage.executors import parse_executor

        ex = parse_executor(executor)
        traces_path, default_out = resolve_input(source)
        cfg = _config(config, base_url, model, k)
        batch = open_batch(
            cfg.llm,
            out=llm_batch_out,
            inputs=llm_batch_in,
            submit=llm_batch_submit,
            retry_failed=llm_batch_retry_failed,
            cache=cache,
            no_cache=no_cache,
            dry_run=dry_run,
            uses_llm=judge == "llm",
        )
        if batch is not None and ex.is_ray:
            raise ConfigError("batch mode runs on the local executor", field="--executor")
        runner = (
            batch.runner()
            if batch is not None
            else _runner(cfg, dry_run=dry_run, no_cache=no_cache, cache=cache)
            if judge == "llm"
            else None
        )
        console = Console(highlight=False)
        try:
            traces = read_traces(traces_path)
            out_dir = out if out is not None else default_out
            out_path = out_dir / DIAGNOSES_FILE
            # what makes out_dir a run directory (the traces and a manifest); checked
            # before anything is removed or written
            plan = plan_diagnosis_dir(
                traces_path,
                out_dir,
                count=len(traces),
                run_ids={t.run_id for t in traces if t.run_id},
                overwrite=overwrite,
            )
            if batch is not None:
                collect = _diagnoser(judge, strategy, cfg, runner, scores, source, console)
                if _batch_pass(
                    batch,
                    collect,
                    traces,
                    out_path,
                    overwrite=overwrite,
                    retry_undetermined=retry_undetermined,
                    concurrency=concurrency,
                    runner=runner,
                ):
                    return
                # every answer is cached: the real pass (its own ledger: no double count)
                runner = batch.runner(fresh_ledger=True)
            if overwrite and not dry_run:
                out_path.unlink(missing_ok=True)
            if out_path.exists():
                _check_same_run(out_path, traces)
                if retry_undetermined and not dry_run:
                    drop_records(out_path, "example_id", lambda d: d.get("undetermined") is True)
            done: set[str] = set()
            if out_path.exists():
                scan = scan_done_ids(out_path, "example_id")
                done = set(scan.ids)
                note = scan.note(out_path)
                if note:
                    console.print(note, highlight=False)
            todo = [t for t in traces if t.example.example_id not in done]
            if done:
                console.print(
                    f"resuming: {len(traces) - len(todo)} of {len(traces)} already diagnosed "
                    f"in {out_path}",
                    highlight=False,
                )
            diagnoser = _diagnoser(judge, strategy, cfg, runner, scores, source, console)
            show = progress and Console(stderr=True).is_terminal
            if dry_run:
                run_sync(
                    _diagnose(
                        diagnoser,
                        todo,
                        out_path=None,
                        concurrency=concurrency,
                        progress=show,
                        sync_every=1,
                        runner=runner,
                    )
                )
                console.print(f"dry run over {len(todo)} trace(s); nothing written")
                if plan.copy_traces:
                    console.print(
                        f"(would copy {traces_path} to {out_dir / _TRACES_FILE} with a manifest)",
                        highlight=False,
                        soft_wrap=True,
                    )
                if runner is None:
                    console.print("the rules judge makes no LLM calls")
                else:
                    _print_ledger(console, runner.ledger.summary(), estimate=True)
                return
            _make_run_dir(plan, console)
            if ex.is_ray:
                if diagnoser.judges_replaced:
                    console.print("note: --executor ray does not use the evaluation metrics")
                llm_cache = None
                if runner is not None:
                    llm_cache = runner.cache.path if runner.cache is not None else None
                    runner.close()  # the workers use the file through the cache actor
                _diagnose_ray(
                    todo,
                    strategy,
                    cfg,
                    ex,
                    batch_size,
                    out_path,
                    llm=judge == "llm",
                    llm_cache=llm_cache,
                    concurrency=concurrency,
                )
                if runner is not None:
                    usage = [d.usage for d in read_records(out_path, Diagnosis)]
                    console.print(
                        f"on Ray: {sum(u.calls for u in usage)} LLM calls, "
                        f"{sum(u.cached_calls for u in usage)} served from the cache (all diagnoses)",
                        highlight=False,
                    )
                    runner = None
            else:
                run_sync(
                    _diagnose(
                        diagnoser,
                        todo,
                        out_path=out_path,
                        concurrency=concurrency,
                        progress=show,
                        sync_every=1 if judge == "llm" else _RULES_SYNC_EVERY,
                        workers=workers or min(8, os.cpu_count() or 1),
                        runner=runner,
                    )
                )
            diagnoses = list(read_records(out_path, Diagnosis)) if out_path.exists() else []
            render_summary(summarize(diagnoses, traces), console)
            _render_metrics(scores, source, diagnoses, console)
            if runner is not None:
                _print_ledger(console, runner.ledger.summary(), estimate=False)
            console.print(f"wrote {out_path} ({len(todo)} new, {len(diagnoses)} total)")
            if runner is not None:
                _check_llm_reached(runner.ledger.summary())
        finally:
            if runner is not None:
                runner.close()  # the cache; the HTTP pool was closed on its own loop
