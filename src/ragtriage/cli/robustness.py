"""``ragtriage robustness RUN`` — accuracy/faithfulness deltas of the run's generator under
perturbed questions and contexts (paraphrase, typos, distractor chunks at positions,
chunk order permutation)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from ragtriage.errors import InputError
from ragtriage.jsonl import atomic_write_text

__all__ = ["register"]


def _print(report: dict[str, Any], console: Console) -> None:
    table = Table(title=f"robustness ({report['traces']} traces)", title_justify="left")
    for col in ("perturbation", "Δ F1", "Δ exact match", "Δ faithfulness", "n", "n/a"):
        table.add_column(col, justify="left" if col == "perturbation" else "right")
    for name, cell in report["perturbations"].items():

        def fmt(metric: str, c: dict[str, Any] = cell) -> str:
            d = c[metric]["delta"]
            return d if isinstance(d, str) else f"{d:+.3f}"

        table.add_row(
            name,
            fmt("f1"),
            fmt("exact_match"),
            fmt("faithfulness"),
            str(cell["f1"]["n"]),
            str(cell["not_applicable"]),
        )
    console.print(table)


def register(app: typer.Typer) -> None:
    @app.command("robustness")
    def robustness_cmd(
        run_dir: Path = typer.Argument(..., help="Run directory (manifest.json, traces.jsonl)."),
        config: Path | None = typer.Option(
            None, "--config", help="Pipeline YAML/TOML (default: the run's manifest config)."
        ),
        perturb: str = typer.Option(
            "all", "--perturb", help="Comma-separated perturbations, or all."
        ),
        seed: int = typer.Option(0, "--seed", help="Seed of typos, distractors, permutations."),
        limit: int = typer.Option(0, "--limit", min=0, help="First N traces only (0 = all)."),
        json_out: Path | None = typer.Option(None, "--json", help="Also write the report as JSON."),
    ) -> None:
        """Re-generate answers from perturbed inputs and report the metric deltas."""
        from ragtriage.config import PipelineConfig, load_config
        from ragtriage.generation import make_generator
        from ragtriage.llm import LLMRunner, run_sync
        from ragtriage.metrics import PERTURBATIONS, robustness
        from ragtriage.store import load_run_dir

        run = load_run_dir(run_dir, require_diagnoses=False)
        if config is not None:
            cfg = load_config(config)
        else:
            try:
                cfg = PipelineConfig.model_validate(run.config)
            except ValueError as exc:
                raise InputError(
                    f"the run's config is not a pipeline config: {exc}",
                    path=str(run_dir / "manifest.json"),
                    field="config",
                ) from exc
        names = (
            list(PERTURBATIONS)
            if perturb == "all"
            else [p.strip() for p in perturb.split(",") if p.strip()]
        )
        traces = list(run.traces[:limit] if limit else run.traces)
        llm = cfg.llm.with_env()
        runner = (
            LLMRunner.from_config(llm)
            if cfg.generation.backend == "openai" and llm.configured
            else None
        )
        try:
            gen = make_generator(cfg.generation, llm=runner, llm_model=llm.model or "")
            report = run_sync(robustness(traces, gen, perturbations=names, seed=seed))
        finally:
            if runner is not None:
                runner.close()
        report["generator"] = gen.name
        _print(report, Console(width=120))
        if json_out is not None:
            atomic_write_text(
                json_out, json.dumps(report, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
            )
            typer.echo(f"wrote {json_out}")
