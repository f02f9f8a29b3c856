"""``ragtriage agree DIAGNOSES --labels FILE`` — judge vs human agreement."""

from __future__ import annotations

from pathlib import Path

import typer

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
        task: str = typer.Option(
            "diagnosis",
            "--task",
            help="diagnosis | label: with 'label', the first argument is `ragtriage label` "
            "output (labels.jsonl or its directory) and --labels holds example_id, label"
            "[, annotator] (question types, seed 001 §4).",
        ),
    ) -> None:
        """Answer-label, stage and type agreement (confusion matrices, κ) of the judge vs
        human labels, and the reliability table + ECE of the diagnoses' confidence."""
        if task == "label":
            _agree_labels(diagnoses, labels, json_path)
            return
        if task != "diagnosis":
            from ragtriage.errors import InputError

            raise InputError("expected diagnosis or label", field="--task")
        # imported here: scikit-learn takes ~1 s to import, and every command pays for
        # what the CLI module imports at the top
        from ragtriage.calibrate.agreement import (
            agreement,
            labels_of_split,
            read_labels,
            report_json,
        )
        from ragtriage.jsonl import atomic_write_text
        from ragtriage.report.terminal import make_console, render_agreement
        from ragtriage.store import DIAGNOSES, read_diagnoses

        dpath = diagnoses / DIAGNOSES if diagnoses.is_dir() else diagnoses
        human = labels_of_split(read_labels(labels), split, path=str(labels))
        report = agreement(read_diagnoses(dpath), human, labels_file=str(labels))
        render_agreement(report, make_console())
        if json_path is not None:
            atomic_write_text(json_path, report_json(report))
            typer.echo(f"wrote {json_path}")


def _agree_labels(source: Path, labels: Path, json_path: Path | None) -> None:
    """Question-type labeller vs annotators: κ(A_i, M−A_i) vs κ(labeller, M−A_i)."""
    import json

    from rich.table import Table

    from ragtriage.jsonl import atomic_write_text
    from ragtriage.know import label_agreement, read_label_column
    from ragtriage.report.terminal import make_console

    path = source / "labels.jsonl" if source.is_dir() else source
    machine = read_label_column(path)
    labeller = next(iter(machine.values())) if len(machine) == 1 else machine.get("labeller", {})
    report = label_agreement(read_label_column(labels), labeller)
    console = make_console()
    table = Table(title="question-type labels: annotator vs the others' majority (M − A_i)")
    for col in ("annotator", "items", "κ(A_i, M−A_i)", "κ(labeller, M−A_i)", "labeller lower by"):
        table.add_column(col, justify="right" if col != "annotator" else "left")

    def fmt(v: float | None) -> str:
        return "n/a" if v is None else f"{v:.3f}"

    for a in report.annotators:
        drop = a.relative_drop
        table.add_row(
            a.annotator,
            str(a.items),
            fmt(a.kappa_annotator),
            fmt(a.kappa_labeller),
            "n/a" if drop is None else f"{drop:.0%}",
        )
    console.print(table)
    if report.note:
        console.print(report.note, highlight=False)
    acc = "n/a" if report.accuracy is None else f"{report.accuracy:.1%}"
    console.print(
        f"labeller vs the annotators' majority: {report.items} items, accuracy {acc}, "
        f"κ {fmt(report.kappa)}",
        highlight=False,
    )
    cm = Table(title="confusion (rows: majority label, columns: labeller; seed 001 App. B)")
    cm.add_column("majority \\ labeller")
    cols = [*report.labels, "undetermined"]
    for c in cols:
        cm.add_column(c, justify="right")
    for name, row in zip(report.labels, report.matrix, strict=True):
        cm.add_row(name, *(str(v) for v in row))
    console.print(cm)
    if json_path is not None:
        atomic_write_text(json_path, json.dumps(report.to_json(), indent=2) + "\n")
        typer.echo(f"wrote {json_path}")
