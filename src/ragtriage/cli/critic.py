"""``ragtriage critic RUN`` — RAG-Critic verdicts (seed 004): Correct/Error + tier tags.

Writes ``critic.jsonl`` next to the traces (or into ``--out``) and prints the counts; a
critic run without the gold answer on a run that has ``diagnoses.jsonl`` (gold-answer
diagnoses) also prints how far the two agree.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

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
from ragtriage.errors import InputError

__all__ = ["CRITIC_FILE", "register"]

CRITIC_FILE = "critic.jsonl"


def register(app: typer.Typer) -> None:
    @app.command("critic")
    @batch_rounds
    def critic(
        source: Path = typer.Argument(
            ..., help="Run directory (with traces.jsonl) or a traces file."
        ),
        critic_name: str = typer.Option("rules", "--critic", help="rules (offline) | llm"),
        reference: bool = typer.Option(
            False,
            "--reference/--reference-free",
            help="Use the gold answer (default: reference-free, as in production).",
        ),
        out: Path | None = typer.Option(None, "--out", help="Output directory (default: the run)."),
        model: str | None = typer.Option(None, "--model", help="LLM model name (llm critic)."),
        base_url: str | None = typer.Option(None, "--base-url", help="OpenAI-compatible endpoint."),
        config: Path | None = typer.Option(
            None, "--config", help="Pipeline YAML/TOML (llm section)."
        ),
        cache: Path | None = typer.Option(None, "--cache", help="LLM cache file."),
        no_cache: bool = typer.Option(False, "--no-cache", help="Do not use the LLM cache."),
        dry_run: bool = typer.Option(
            False, "--dry-run", help="Estimate the LLM calls and tokens; call and write nothing."
        ),
        llm_batch_out: Path | None = BATCH_OUT,
        llm_batch_in: list[Path] | None = BATCH_IN,
        llm_batch_submit: bool = BATCH_SUBMIT,
        llm_batch_retry_failed: bool = BATCH_RETRY_FAILED,
    ) -> None:
        """Judge every trace Correct/Error with RAG-Critic tier-1/2/3 tags and an analysis."""
        from ragtriage.cli.diagnose import (
            DIAGNOSES_FILE,
            _config,
            _print_ledger,
            _runner,
            read_traces,
            resolve_input,
        )
        from ragtriage.critic import critic_agreement, critique_traces
        from ragtriage.jsonl import write_jsonl
        from ragtriage.llm import run_sync
        from ragtriage.store import read_diagnoses

        if critic_name not in ("rules", "llm"):
            raise InputError("expected rules or llm", field="--critic")
        traces_path, default_out = resolve_input(source)
        traces = read_traces(traces_path)
        diagnoses = None
        existing = traces_path.parent / DIAGNOSES_FILE
        gold_diagnoses = read_diagnoses(existing) if existing.is_file() else None
        if critic_name == "rules" and reference:
            diagnoses = gold_diagnoses
        cfg = _config(config, base_url, model, None)
        batch = open_batch(
            cfg.llm,
            out=llm_batch_out,
            inputs=llm_batch_in,
            submit=llm_batch_submit,
            retry_failed=llm_batch_retry_failed,
            cache=cache,
            no_cache=no_cache,
            dry_run=dry_run,
            uses_llm=critic_name == "llm",
        )
        runner = (
            batch.runner()
            if batch is not None
            else _runner(cfg, dry_run=dry_run, no_cache=no_cache, cache=cache)
            if critic_name == "llm"
            else None
        )

        async def go() -> list:  # type: ignore[type-arg]
            try:
                return await critique_traces(
                    traces,
                    critic=critic_name,
                    reference=reference,
                    runner=runner,
                    model=cfg.llm.with_env().model or "",
                    diagnoses=diagnoses,
                    config=cfg.diagnosis,
                )
            finally:
                if runner is not None:
                    await runner.aclose()

        try:
            verdicts = run_sync(go())
        finally:
            if runner is not None:
                runner.close()
        console = Console()
        if batch is not None and batch.finish():
            return
        if dry_run:
            if runner is None:
                console.print("the rules critic makes no LLM calls; nothing written")
            else:
                _print_ledger(console, runner.ledger.summary(), estimate=True)
            return
        out_path = (out if out is not None else default_out) / CRITIC_FILE
        out_path.parent.mkdir(parents=True, exist_ok=True)
        write_jsonl(out_path, verdicts)
        judged = Counter(v.judgement or "undetermined" for v in verdicts)
        console.print(
            f"critic {critic_name} ({'with' if reference else 'without'} reference): "
            f"{judged['correct']} correct, {judged['error']} error, "
            f"{judged['undetermined']} undetermined of {len(verdicts)}",
            highlight=False,
        )
        tier1 = Counter(t for v in verdicts for t in v.tier1)
        for name, n in tier1.most_common():
            console.print(f"  {name}: {n}", highlight=False)
        if not reference and gold_diagnoses:
            console.print(critic_agreement(verdicts, gold_diagnoses).line(), highlight=False)
        console.print(f"wrote {out_path}", highlight=False)
