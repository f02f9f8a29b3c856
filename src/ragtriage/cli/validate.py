"""``ragtriage validate FILE`` — check ragtriage's own record files (documents, examples,
traces, diagnoses: JSON Lines of the schemas ``ragtriage schema KIND`` prints). A file
that fails on its first record is told what was expected, and one of another tool
(RAGAS, RAGChecker ...) is pointed to ``ragtriage import FORMAT``."""

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
        """Check ragtriage's own record files (JSON Lines: documents, examples, traces,
        diagnoses; `ragtriage schema KIND` prints each schema); every error names
        file:line:field. Exit 2 on bad input. Another tool's files: `ragtriage import`."""
        # the record models load here, not with the CLI (``ragtriage --help`` stays light)
        from ragtriage.formats import detect_kind, validate_file

        for given in files:
            for path in _record_files(given):
                k = kind if kind != "auto" else None
                try:
                    k = k or detect_kind(path)
                    count = validate_file(path, k)
                except InputError as exc:
                    raise _explained(exc, path, k) from exc
                typer.echo(f"{path}: ok ({count} {k})")


def _explained(exc: InputError, path: Path, kind: str | None) -> InputError:
    """``exc`` with what `validate` expects, when the file is not such a record file
    (its first record fails, or it looks like another tool's file)."""
    from ragtriage.data._sniff import import_hint
    from ragtriage.formats import KINDS

    if not path.is_file():
        return exc
    hint = import_hint(path)
    if not hint and kind is not None and exc.line != _first_line(path):
        return exc  # a record file with a bad record further down: the error says it
    if kind in KINDS:
        what = (
            f"JSON Lines, one {kind} record per line (schema: `ragtriage schema {kind}`, "
            f"docs/schemas/{kind}.schema.json)"
        )
    else:
        what = (
            "JSON Lines of documents, examples, traces or diagnoses (schemas: "
            "`ragtriage schema KIND`)"
        )
    return InputError(
        f"{exc.message} — `ragtriage validate` checks ragtriage's own record files: {what}{hint}",
        path=exc.path,
        line=exc.line,
        field=exc.field,
    )


def _first_line(path: Path) -> int | None:
    """1-based number of the file's first non-blank line."""
    try:
        with path.open("rb") as fh:
            for n, raw in enumerate(fh, 1):
                if raw.strip():
                    return n
    except OSError:
        return None
    return None


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
