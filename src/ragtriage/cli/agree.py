"""``ragtriage agree DIAGNOSES --labels FILE`` — judge vs human agreement."""

from __future__ import annotations

from pathlib import Path

import typer

from ragtriage.jsonl import atomic_write_text
from ragtriage.report.terminal import make_console, render_agreement
from ragtriage.store import DIAGNOSES, read_diagnoses

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    @app.command("agree")
    def agree(
        diagnoses: Path = typer.Argument(
            ..., help="Diagnoses JSONL, or a run directory holding diagnoses.jsonl."
        ),
        labels: Path = typer.Option(
            ...,
            "--labels",
            help="Human labels: CSV or JSONL with example_id, stage, types[, annotator, "
            "answer_label, split]; with an answer_label, an empty stage means 'not a failure'.",
        ),
        split: str = typer.Option(
            "all", "--split", help="dev | test | all: only the labels of this split."
        ),
        json_path: Path | None = typer.Option(
            None, "--json", help="Also write the report as JSON."
        ),
    ) -> None:
        """Answer-label, stage and type agreement (confusion matrices, κ) of the judge vs
        human labels, and the reliability table + ECE of the diagnoses' confidence."""
        # imported here: scikit-learn takes ~1 s to import, and every command pays for
        # what the CLI module imports at the top
        from ragtriage.calibrate.agreement import (
            agreement,
            labels_of_split,
            read_labels,
            report_json,
        )

        dpath = diagnoses / DIAGNOSES if diagnoses.is_dir() else diagnoses
        human = labels_of_split(read_labels(labels), split, path=str(labels))
        report = agreement(read_diagnoses(dpath), human, labels_file=str(labels))
        render_agreement(report, make_console())
        if json_path is not None:
            atomic_write_text(json_path, report_json(report))
            typer.echo(f"wrote {json_path}")
