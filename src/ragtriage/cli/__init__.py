"""Command-line interface: thin — arguments → library → files/stdout.

Each command lives in its own module under ``ragtriage.cli`` and exposes
``register(app)``; :data:`COMMAND_MODULES` lists them.
"""

from __future__ import annotations

import errno
import importlib
import sys

import typer

from ragtriage import __version__
from ragtriage.errors import InputError, RagtriageError

__all__ = ["COMMAND_MODULES", "app", "main"]

#: Modules that register commands on :data:`app` (each has ``register(app)``).
COMMAND_MODULES: tuple[str, ...] = (
    "validate",
    "schema",
    "report",
    "agree",
    "runs",
    "run",
    "eval_retrieval",
    "evaluate",
    "robustness",
    "diagnose",
    "calibrate",
    "critic",
    "critic_bench",
    "correct",
    "mine",
    "critic_export",
    "import_",
    "label",
    "tune_retrieval",
    "testset",
    "advise",
    "serve",
)

app = typer.Typer(
    name="ragtriage",
    help="Find out why a RAG answer is wrong.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"ragtriage {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """ragtriage: chunk → retrieve → rerank → generate, traced and diagnosed."""


for _name in COMMAND_MODULES:
    importlib.import_module(f"ragtriage.cli.{_name}").register(app)


def main(argv: list[str] | None = None) -> None:
    """Entry point: maps InputError (and unusable paths) to exit code 2, other ragtriage
    errors to 1, without a traceback."""
    try:
        app(args=argv, standalone_mode=True)
    except InputError as exc:
        typer.echo(f"error: {exc}", err=True)
        sys.exit(2)
    except RagtriageError as exc:
        typer.echo(f"error: {exc}", err=True)
        sys.exit(1)
    except OSError as exc:
        # an output path that is a file where a directory is needed (or the reverse), a
        # missing parent, no permission: the user's path, so exit 2 like bad input; a
        # full disk or an I/O error is exit 1
        # os.replace(tmp, dest) of an atomic write names the destination second
        path = exc.filename2 or exc.filename
        where = f"{path}: " if path else ""
        typer.echo(f"error: {where}{exc.strerror or exc}", err=True)
        sys.exit(2 if exc.errno in _PATH_ERRNOS else 1)


_PATH_ERRNOS = frozenset(
    {errno.EEXIST, errno.ENOTDIR, errno.EISDIR, errno.ENOENT, errno.EACCES, errno.EROFS}
)
