"""``ragtriage validate FILE`` — check a documents/examples/traces/diagnoses JSONL file."""

from __future__ import annotations

from pathlib import Path

import typer

from ragtriage.errors import InputError

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    @app.command("validate")
    def validate(
        files: list[Path] = typer.Argument(
            ..., help="JSONL files, or run directories (their record files), to check."
        ),
        kind: str = typer.Option(
            "auto", "--kind", help="auto | documents | examples | traces | diagnoses"
        ),
    ) -> None:
        """Check record files; every error names file:line:field. Exit 2 on bad input."""
        # the record models load here, not with the CLI (``ragtriage --help`` stays light)
        from ragtriage.formats import detect_kind, validate_file

        for given in files:
            for path in _record_files(given):
                k = detect_kind(path) if kind == "auto" else kind
                count = validate_file(path, k)
                typer.echo(f"{path}: ok ({count} {k})")


def _record_files(path: Path) -> list[Path]:
    """A file as is; a run directory's record files (documents, examples, traces,
    diagnoses ``.jsonl``, those present)."""
    from ragtriage.formats import KINDS

    if not path.is_dir():
        return [path]
    found = [path / f"{k}.jsonl" for k in KINDS if (path / f"{k}.jsonl").is_file()]
    if not found:
        raise InputError(
            "no record files (documents/examples/traces/diagnoses .jsonl) in this directory",
            path=str(path),
        )
    return found
