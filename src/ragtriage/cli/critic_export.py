"""``ragtriage critic-export RUN`` — SFT / DPO data for a critic model in TRL's formats."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

from ragtriage.errors import InputError

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    @app.command("critic-export")
    def critic_export(
        source: Path = typer.Argument(..., help="Run directory (with traces.jsonl)."),
        sft: Path | None = typer.Option(None, "--sft", help="Write SFT rows (messages) here."),
        dpo: Path | None = typer.Option(None, "--dpo", help="Write DPO rows here."),
        seed: int = typer.Option(0, "--seed", help="Seed of the balancing and wrong tags."),
    ) -> None:
        """Labels from the rules diagnosis with the gold answer; prompts reference-free, and
        analyses written only from what the prompt shows."""
        from ragtriage.cli.diagnose import DIAGNOSES_FILE, read_traces, resolve_input
        from ragtriage.critic import dpo_records, grounded_verdicts, sft_records
        from ragtriage.jsonl import write_jsonl
        from ragtriage.llm import run_sync
        from ragtriage.store import read_diagnoses

        if sft is None and dpo is None:
            raise InputError("nothing to write: pass --sft and/or --dpo", field="--sft")
        path, _ = resolve_input(source)
        traces = read_traces(path)
        dpath = path.parent / DIAGNOSES_FILE
        diagnoses = read_diagnoses(dpath) if dpath.is_file() else None
        inputs, verdicts, free = run_sync(grounded_verdicts(traces, diagnoses=diagnoses))
        console = Console()
        if sft is not None:
            n = write_jsonl(sft, sft_records(inputs, verdicts, seed=seed))
            console.print(f"wrote {n} SFT rows to {sft}", highlight=False)
        if dpo is not None:
            n = write_jsonl(dpo, dpo_records(inputs, verdicts, critic_verdicts=free, seed=seed))
            console.print(f"wrote {n} DPO pairs to {dpo}", highlight=False)
