"""``ragtriage runs add|list|trend`` and ``ragtriage compare RUN_A RUN_B``."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import typer

from ragtriage.constants import DEFAULT_STORE_PATH, STORE_DSN_ENV
from ragtriage.errors import InputError

__all__ = ["register"]

_STORE_HELP = (
    f"Run store: a SQLite file (default {DEFAULT_STORE_PATH}) or a postgresql:// DSN "
    f"(extra .[pg]; default from {STORE_DSN_ENV} when set)."
)


def _store(store: str | None) -> str | Path:
    from ragtriage.store import default_store

    return store if store else default_store()


def register(app: typer.Typer) -> None:
    runs_app = typer.Typer(help="The run store: import runs, list them, track failure stages.")
    app.add_typer(runs_app, name="runs")

    @runs_app.command("add")
    def add(
        run_dirs: list[Path] = typer.Argument(..., help="Run directories to import."),
        diagnoses: Path | None = typer.Option(
            None, "--diagnoses", help="Diagnoses JSONL (only with one run directory)."
        ),
        store: str | None = typer.Option(None, "--store", help=_STORE_HELP),
    ) -> None:
        """Import run directories (idempotent: the same run again changes nothing)."""
        from ragtriage.store import RunStore, load_run_dir

        if diagnoses is not None and len(run_dirs) != 1:
            raise InputError("--diagnoses needs exactly one run directory", field="--diagnoses")
        runs = [load_run_dir(d, diagnoses, require_diagnoses=False) for d in run_dirs]
        with RunStore(_store(store)) as st:
            for run in runs:
                res = st.add_run(run)
                note = "" if run.has_diagnoses else " (no diagnoses yet)"
                typer.echo(
                    f"{res.status}: {res.run_id} ({res.traces} traces, "
                    f"{res.diagnoses} diagnoses){note} → {st.where}"
                )

    @runs_app.command("list")
    def list_(
        store: str | None = typer.Option(None, "--store", help=_STORE_HELP),
    ) -> None:
        """List stored runs, oldest first."""
        from ragtriage.report.terminal import make_console, render_runs
        from ragtriage.store import RunStore

        with RunStore(_store(store), create=False) as st:
            render_runs(st.list_runs(), make_console())

    @runs_app.command("trend")
    def trend(
        run_ids: list[str] = typer.Argument(None, help="Only these run ids (default: all)."),
        store: str | None = typer.Option(None, "--store", help=_STORE_HELP),
        json_path: Path | None = typer.Option(None, "--json", help="Also write the rows as JSON."),
    ) -> None:
        """Failure-stage distribution across runs over time."""
        from ragtriage.jsonl import atomic_write_text
        from ragtriage.report.terminal import make_console, render_trend
        from ragtriage.store import RunStore

        with RunStore(_store(store), create=False) as st:
            rows = st.trend(run_ids or None)
        render_trend(rows, make_console())
        if json_path is not None:
            payload = [asdict(r) for r in rows]
            atomic_write_text(json_path, json.dumps(payload, ensure_ascii=False, indent=2) + "\n")
            typer.echo(f"wrote {json_path}")

    @app.command("compare")
    def compare(
        run_a: str = typer.Argument(..., help="Run before: a run directory or a stored run id."),
        run_b: str = typer.Argument(..., help="Run after: a run directory or a stored run id."),
        gate: list[str] = typer.Option(
            None,
            "--gate",
            help="Fail (exit 1) unless the B−A delta holds, e.g. 'accuracy>=+0.02', "
            "'stage.retrieval<=0', 'type.E16<=0', 'incorrect_share<=-0.05'; metric gates such as "
            "'faithfulness>=-0.01' use the runs' scores.jsonl (paired bootstrap). Repeatable.",
        ),
        store: str | None = typer.Option(None, "--store", help=_STORE_HELP),
        json_path: Path | None = typer.Option(
            None, "--json", help="Also write the comparison as JSON."
        ),
        scores_a: Path | None = typer.Option(
            None, "--scores-a", help="scores.jsonl of run A (default RUN_A/scores.jsonl)."
        ),
        scores_b: Path | None = typer.Option(
            None, "--scores-b", help="scores.jsonl of run B (default RUN_B/scores.jsonl)."
        ),
        story: bool = typer.Option(
            False,
            "--story",
            help="End with four lines: what broke, what changed, what improved, what got worse.",
        ),
    ) -> None:
        """Before/after table (seed 000 Table 2 with Impr.) and CI gates on the deltas."""
        from ragtriage.cli._metric_compare import metric_gates_of, run_metric_gates
        from ragtriage.jsonl import atomic_write_text
        from ragtriage.report.aggregate import summarize
        from ragtriage.report.compare import compare_summaries, evaluate_gate, parse_gate
        from ragtriage.report.terminal import make_console, render_comparison
        from ragtriage.store import resolve_run

        metric_gates, diag_gate_texts = metric_gates_of(gate or [])
        gates = [parse_gate(g) for g in diag_gate_texts]
        a = resolve_run(run_a, _store(store))
        b = resolve_run(run_b, _store(store))
        comparison = compare_summaries(
            summarize(a.diagnoses, a.traces),
            summarize(b.diagnoses, b.traces),
            name_a=a.name if a.name == a.run_id else f"{a.name} ({a.run_id})",
            name_b=b.name if b.name == b.run_id else f"{b.name} ({b.run_id})",
            config_a=a.config,
            config_b=b.config,
        )
        render_comparison(comparison, make_console())
        results = [evaluate_gate(g, comparison) for g in gates]
        if json_path is not None:
            payload = {
                "comparison": comparison.model_dump(mode="json"),
                "gates": [r.model_dump(mode="json") for r in results],
            }
            atomic_write_text(json_path, json.dumps(payload, ensure_ascii=False, indent=2) + "\n")
            typer.echo(f"wrote {json_path}")
        for r in results:
            typer.echo(r.message, err=not r.passed)
        if story:
            from ragtriage.tuning import story_lines

            for line in story_lines(comparison):
                typer.echo(line)
        failed = [r.gate.text for r in results if not r.passed]
        failed += run_metric_gates(run_a, run_b, metric_gates, scores_a, scores_b, json_path)
        if failed:
            typer.echo(
                f"error: {len(failed)} gate(s) failed: " + ", ".join(failed),
                err=True,
            )
            raise typer.Exit(1)
