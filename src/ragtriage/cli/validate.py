"""``ragtriage validate FILE`` — check a documents/examples/traces/diagnoses JSONL file."""

from __future__ import annotations

from pathlib import Path

import typer

from ragtriage.formats import detect_kind, validate_file

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    @app.command("validate")
    def validate(
        files: list[Path] = typer.Argument(..., help="JSONL files to check."),
        kind: str = typer.Option(
            "auto", "--kind", help="auto | documents | examples | traces | diagnoses"
        ),
    ) -> None:
        """Check record files; every error names file:line:field. Exit 2 on bad input."""
        for path in files:
            k = detect_kind(path) if kind == "auto" else kind
            count = validate_file(path, k)
            typer.echo(f"{path}: ok ({count} {k})")
