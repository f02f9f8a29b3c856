"""``ragtriage schema KIND`` — print (or write) the JSON Schema of a record file format."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from ragtriage.errors import InputError

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    @app.command("schema")
    def schema(
        kind: str = typer.Argument(..., help="documents | examples | traces | diagnoses | all"),
        out: Path | None = typer.Option(
            None, "--out", help="Write <kind>.schema.json files into this directory."
        ),
    ) -> None:
        """Print the JSON Schema of a record format (generated from the records)."""
        from ragtriage.formats import KINDS, json_schema
        from ragtriage.jsonl import atomic_write_text

        kinds = sorted(KINDS) if kind == "all" else [kind]
        for k in kinds:
            if k not in KINDS:
                raise InputError(f"unknown kind {k!r}; expected one of {sorted(KINDS)} or all")
            text = json.dumps(json_schema(k), indent=2, ensure_ascii=False) + "\n"
            if out is None:
                typer.echo(text, nl=False)
            else:
                atomic_write_text(out / f"{k}.schema.json", text)
                typer.echo(f"wrote {out / f'{k}.schema.json'}")
