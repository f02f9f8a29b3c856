"""``ragtriage report RUN_DIR`` — one self-contained HTML report, plus CSV/JSON exports."""

from __future__ import annotations

from pathlib import Path

import typer

from ragtriage.constants import DEFAULT_MAX_EXAMPLES

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    @app.command("report")
    def report(
        run_dir: Path = typer.Argument(
            ..., help="Run directory (traces.jsonl, diagnoses.jsonl; manifest.json if any)."
        ),
        diagnoses: Path | None = typer.Option(
            None, "--diagnoses", help="Diagnoses JSONL (default RUN_DIR/diagnoses.jsonl)."
        ),
        out: Path | None = typer.Option(
            None, "--out", "-o", help="HTML file to write (default RUN_DIR/report.html)."
        ),
        csv_path: Path | None = typer.Option(
            None, "--csv", help="Also write per-example rows here (+ <stem>.summary.csv)."
        ),
        json_path: Path | None = typer.Option(
            None, "--json", help="Also write the summary and per-example rows as JSON."
        ),
        max_examples: int = typer.Option(
            DEFAULT_MAX_EXAMPLES,
            "--max-examples",
            help="Failing examples with a drill-down in the HTML (0 = all).",
        ),
        tables: bool = typer.Option(
            False, "--tables", help="Print every summary table, not only the headline."
        ),
        title: str | None = typer.Option(None, "--title", help="Page title."),
        labels: Path | None = typer.Option(
            None,
            "--labels",
            help="Human labels (as for 'ragtriage agree'): add the agreement summary and the "
            "reliability table of the confidence to the report.",
        ),
        scores: Path | None = typer.Option(
            None,
            "--scores",
            help="scores.jsonl of 'ragtriage evaluate' (default RUN_DIR/scores.jsonl when it "
            "exists): metrics next to the diagnosis, failing examples by faithfulness.",
        ),
    ) -> None:
        """Write an offline HTML report of a diagnosed run; exit 2 on bad input."""
        # the report's modules load here, not with the CLI (``ragtriage --help`` stays light)
        from ragtriage.report.aggregate import summarize
        from ragtriage.report.export import write_csv, write_json
        from ragtriage.report.html import write_html
        from ragtriage.report.metrics_view import load_run_metrics
        from ragtriage.report.terminal import (
            make_console,
            render_headline,
            render_metrics,
            render_summary,
        )
        from ragtriage.store import load_run_dir

        run = load_run_dir(run_dir, diagnoses)
        summary = summarize(run.diagnoses, run.traces)
        metrics = load_run_metrics(run_dir, scores)
        console = make_console()
        html_path = out if out is not None else run_dir / "report.html"
        agreement_report = None
        if labels is not None:
            # scikit-learn (κ) is imported only when labels are given
            from ragtriage.calibrate.agreement import agreement, read_labels

            agreement_report = agreement(
                run.diagnoses, read_labels(labels), labels_file=str(labels)
            )
        write_html(
            html_path,
            summary,
            run.diagnoses,
            run.traces,
            title=title or f"ragtriage report — {run.name}",
            run_info=run.info(),
            max_examples=max_examples,
            agreement=agreement_report,
            metrics=metrics,
        )
        if tables:
            render_summary(summary, console)
        else:
            render_headline(summary, console)
        if metrics is not None:
            render_metrics(metrics, run.diagnoses, console)
        typer.echo(f"wrote {html_path}")
        if csv_path is not None:
            summary_path = write_csv(csv_path, summary, run.diagnoses, run.traces)
            typer.echo(f"wrote {csv_path} and {summary_path}")
        if json_path is not None:
            write_json(json_path, summary, run.diagnoses, run.traces, run=run.info())
            typer.echo(f"wrote {json_path}")
