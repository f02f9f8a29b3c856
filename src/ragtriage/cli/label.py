"""``ragtriage label DATA`` — question-type labels and the label composition (seed 001)."""

from __future__ import annotations

from pathlib import Path

import typer

from ragtriage.cli._batch import (
    BATCH_IN,
    BATCH_OUT,
    BATCH_RETRY_FAILED,
    BATCH_SUBMIT,
    batch_rounds,
    open_batch,
)
from ragtriage.errors import InputError

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    @app.command("label")
    @batch_rounds
    def label(
        data: list[str] = typer.Argument(
            ...,
            help="Dataset(s) (file or directory any loader reads, or 'demo'); several give "
            "one composition per dataset (seed 001 Fig. 1).",
        ),
        out: Path = typer.Option(
            Path("runs/label"), "--out", help="Output directory (labels.jsonl, composition.*)."
        ),
        labeller: str = typer.Option(
            "auto",
            "--labeller",
            help="rules (offline) | llm | auto (llm when an endpoint is configured).",
        ),
        k: int = typer.Option(1, "-k", "--k", min=1, help="LLM samples per pair (votes)."),
        fmt: str = typer.Option("auto", "--format", help="Dataset format (see `run`)."),
        limit: int | None = typer.Option(None, "--limit", min=1, help="Only the first N."),
        config: Path | None = typer.Option(None, "--config", help="YAML/TOML (llm section)."),
        dry_run: bool = typer.Option(
            False, "--dry-run", help="Estimate LLM calls and tokens; call and write nothing."
        ),
        no_cache: bool = typer.Option(False, "--no-cache", help="Do not use the LLM cache."),
        cache: Path | None = typer.Option(None, "--cache", help="LLM cache file."),
        llm_batch_out: Path | None = BATCH_OUT,
        llm_batch_in: list[Path] | None = BATCH_IN,
        llm_batch_submit: bool = BATCH_SUBMIT,
        llm_batch_retry_failed: bool = BATCH_RETRY_FAILED,
    ) -> None:
        """Label every (context, question) pair fact_single | summary | reasoning |
        unanswerable, and report the label composition (terminal, CSV, HTML)."""
        from dataclasses import replace

        from rich.table import Table

        from ragtriage.config import load_config
        from ragtriage.know import (
            LabelDecision,
            LLMLabeller,
            RulesLabeller,
            composition,
            items_of,
            ledger_line,
            load_data,
            open_runner,
            write_label_outputs,
        )
        from ragtriage.llm import run_sync
        from ragtriage.report.terminal import make_console

        if labeller not in ("auto", "rules", "llm"):
            raise InputError("expected rules, llm or auto", field="--labeller")
        console = make_console()
        cfg = load_config(config)
        if labeller == "auto":
            configured = cfg.llm.with_env().configured or llm_batch_out is not None
            labeller = "llm" if configured else "rules"
            if labeller == "rules":
                console.print("no LLM endpoint configured: using the offline rules labeller")
        batch = open_batch(
            cfg.llm,
            out=llm_batch_out,
            inputs=llm_batch_in,
            submit=llm_batch_submit,
            retry_failed=llm_batch_retry_failed,
            cache=cache,
            no_cache=no_cache,
            dry_run=dry_run,
            uses_llm=labeller == "llm",
        )
        runner = None
        if labeller == "llm":
            runner = (
                batch.runner()
                if batch is not None
                else open_runner(cfg.llm, dry_run=dry_run, no_cache=no_cache, cache=cache)
            )
            engine: LLMLabeller | RulesLabeller = LLMLabeller(runner, k=k)
        else:
            engine = RulesLabeller()
        datasets = [load_data(source, fmt) for source in data]

        async def label_all() -> list[list[LabelDecision]]:
            # one event loop for every dataset: the HTTP client's pool lives on it
            return [await engine.label_many(items_of(d, limit=limit)) for d in datasets]

        decisions: list[LabelDecision] = []
        comps = []
        try:
            for source, dataset, labelled in zip(
                data, datasets, run_sync(label_all()), strict=True
            ):
                if len(data) > 1:
                    labelled = [replace(d, dataset=source) for d in labelled]
                decisions.extend(labelled)
                given = [replace(d, label=d.given_label or "") for d in labelled if d.given_label]
                if given:
                    comps.append(composition(given, f"{dataset.name} (labels in the dataset)"))
                comps.append(composition(labelled, f"{dataset.name} ({labeller} labels)"))
        finally:
            if runner is not None:
                runner.close()
        if batch is not None and batch.finish():
            return
        if runner is not None and dry_run:
            console.print(ledger_line(runner.ledger.summary(), estimate=True), highlight=False)
            return
        for comp in comps:
            table = Table(title=f"{comp.name}: {comp.total} pairs")
            table.add_column("label")
            table.add_column("count", justify="right")
            table.add_column("share", justify="right")
            for lab, count in comp.counts.items():
                table.add_row(lab, str(count), f"{(comp.share(lab) or 0.0):.1%}")
            if comp.undetermined:
                table.add_row("undetermined", str(comp.undetermined), "")
            console.print(table)
            for warning in comp.warnings():
                console.print(f"[yellow]warning:[/] {warning}", highlight=False)
        if runner is not None:
            console.print(ledger_line(runner.ledger.summary(), estimate=False), highlight=False)
        for path in write_label_outputs(out, decisions, comps):
            typer.echo(f"wrote {path}")
