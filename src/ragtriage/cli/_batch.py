"""The batch-mode options every LLM-calling command shares (docs/batch.md).

::

    @app.command("critic")
    @batch_rounds
    def critic(..., llm_batch_out: Path | None = BATCH_OUT, llm_batch_in: list[Path] | None
               = BATCH_IN, llm_batch_submit: bool = BATCH_SUBMIT,
               llm_batch_retry_failed: bool = BATCH_RETRY_FAILED) -> None:
        batch = open_batch(cfg.llm, out=llm_batch_out, ...)   # imports --llm-batch-in
        runner = batch.runner() if batch is not None else <the live runner>
        ... compute, writing nothing ...
        if batch is not None and batch.finish():              # requests exported
            return
        ... write the outputs ...

The logic lives in :mod:`ragtriage.llm._batch`; this module parses the options.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import typer

from ragtriage.errors import ConfigError

if TYPE_CHECKING:
    from ragtriage.config import LLMConfig
    from ragtriage.llm import BatchSession, LLMRunner

__all__ = [
    "BATCH_IN",
    "BATCH_OUT",
    "BATCH_RETRY_FAILED",
    "BATCH_SUBMIT",
    "batch_rounds",
    "open_batch",
]

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")

BATCH_OUT: Any = typer.Option(
    None,
    "--llm-batch-out",
    help="Batch mode: write the LLM requests not answered yet to DIR/requests.jsonl (OpenAI "
    "Batch API input, also read by vLLM run_batch) instead of calling the endpoint; the "
    "command writes nothing else until every request is answered (docs/batch.md).",
)
BATCH_IN: Any = typer.Option(
    None,
    "--llm-batch-in",
    help="Batch API (or vLLM run_batch) output file to import into the LLM cache first "
    "(repeatable); failed lines are recorded and reported as undetermined.",
)
BATCH_SUBMIT: Any = typer.Option(
    False,
    "--llm-batch-submit",
    help="With --llm-batch-out: submit the requests to the endpoint's Batch API, wait, "
    "import the output and go on round by round until done (resumable: DIR/batch.json).",
)
BATCH_RETRY_FAILED: Any = typer.Option(
    False,
    "--llm-batch-retry-failed",
    help="With --llm-batch-out: export again the requests a batch answered with an error.",
)


def open_batch(
    llm: LLMConfig,
    *,
    out: Path | None,
    inputs: Sequence[Path] | None,
    submit: bool = False,
    retry_failed: bool = False,
    cache: Path | None = None,
    no_cache: bool = False,
    dry_run: bool = False,
    uses_llm: bool = True,
    log: Callable[[str], None] = typer.echo,
) -> BatchSession | None:
    """Import ``--llm-batch-in`` files (and a submitted batch left in flight) into the
    cache; the session when ``--llm-batch-out`` asks for batch mode, else ``None`` (the
    command calls the endpoint as usual, from the cache first). ``log`` gets the session's
    lines (the benchmark scripts send them to stderr)."""
    files = list(inputs or [])
    if out is None and not files and not submit and not retry_failed:
        return None
    if not uses_llm:
        raise ConfigError(
            "the --llm-batch-* options need an LLM step (an LLM judge, critic, planner...)",
            field="--llm-batch-out",
        )
    if no_cache:
        raise ConfigError(
            "batch mode works through the LLM cache: drop --no-cache", field="--no-cache"
        )
    if dry_run and out is not None:
        raise ConfigError(
            "--dry-run and --llm-batch-out: a batch export writes only the requests already",
            field="--dry-run",
        )
    from ragtriage.llm import BatchSession

    session = BatchSession(
        llm,
        out_dir=out,
        inputs=files,
        submit=submit,
        retry_failed=retry_failed,
        cache_path=cache,
        log=log,
    )
    session.start()
    return session if session.exporting else None


def batch_rounds(fn: F) -> F:
    """Run the command again after each submitted batch was answered and imported
    (:class:`~ragtriage.llm.BatchNextRound`), until nothing is pending."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from ragtriage.llm._errors import BatchNextRound

        rounds = 0
        while True:
            try:
                return fn(*args, **kwargs)
            except BatchNextRound:
                rounds += 1
                typer.echo(f"batch round {rounds} imported; running again")

    return wrapper  # type: ignore[return-value]


def run_closing(runner: LLMRunner | None, work: Callable[[], Awaitable[T]]) -> T:
    """``work()`` run to the end on a fresh event loop, then ``runner`` (when there is
    one) closed, its async side inside the loop and its sync side after it, whatever
    happened."""
    from ragtriage.llm import run_sync

    async def go() -> T:
        try:
            return await work()
        finally:
            if runner is not None:
                await runner.aclose()

    try:
        return run_sync(go())
    finally:
        if runner is not None:
            runner.close()
