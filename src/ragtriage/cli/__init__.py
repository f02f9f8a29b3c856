"""Command-line interface: thin — arguments → library → files/stdout.

Each command lives in its own module under ``ragtriage.cli`` and exposes
``register(app)``; :data:`COMMANDS` names the module of every command. Running one
command imports and registers only its module (typer builds a command from its
signature, which costs time for each of the two dozen commands); ``ragtriage --help``,
``--version`` and anything else build :data:`app` with every command. Command modules
import their heavy dependencies inside the command body (``benchmarks/startup.py``).
"""

from __future__ import annotations

import errno
import gc
import importlib
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING

import typer

from ragtriage import __version__
from ragtriage.errors import InputError, RagtriageError

__all__ = ["COMMANDS", "COMMAND_MODULES", "app", "build_app", "main"]

#: Top-level command (or command group) name -> the module under ``ragtriage.cli`` whose
#: ``register(app)`` adds it (tests check each module registers exactly its names).
COMMANDS: dict[str, str] = {
    "validate": "validate",
    "schema": "schema",
    "report": "report",
    "agree": "agree",
    "runs": "runs",
    "compare": "runs",
    "run": "run",
    "eval-retrieval": "eval_retrieval",
    "evaluate": "evaluate",
    "robustness": "robustness",
    "diagnose": "diagnose",
    "calibrate": "calibrate",
    "critic": "critic",
    "critic-bench": "critic_bench",
    "correct": "correct",
    "mine": "mine",
    "critic-export": "critic_export",
    "import": "import_",
    "label": "label",
    "tune-retrieval": "tune_retrieval",
    "testset": "testset",
    "advise": "advise",
    "serve": "serve",
}

#: Modules that register commands on :data:`app` (each has ``register(app)``), in the
#: order ``ragtriage --help`` lists their commands.
COMMAND_MODULES: tuple[str, ...] = tuple(dict.fromkeys(COMMANDS.values()))


def _version(value: bool) -> None:
    if value:
        typer.echo(f"ragtriage {__version__}")
        raise typer.Exit()


def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """ragtriage: chunk → retrieve → rerank → generate, traced and diagnosed."""


def build_app(modules: Iterable[str] = COMMAND_MODULES) -> typer.Typer:
    """The ``ragtriage`` app with the commands of ``modules`` (default: all)."""
    new = typer.Typer(
        name="ragtriage",
        help="Find out why a RAG answer is wrong.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )
    new.callback()(_root)
    for name in modules:
        importlib.import_module(f"ragtriage.cli.{name}").register(new)
    return new


if TYPE_CHECKING:
    #: The app with every command (built on first use).
    app: typer.Typer


def _full_app() -> typer.Typer:
    full = globals().get("app")
    if not isinstance(full, typer.Typer):
        full = build_app()
        globals()["app"] = full
    return full


def __getattr__(name: str) -> typer.Typer:
    if name == "app":
        return _full_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _app_for(args: list[str]) -> typer.Typer:
    """Only the named command's module when ``args`` starts with a command name, else
    every command (root help, ``--version``, a mistyped name's suggestions)."""
    module = COMMANDS.get(args[0]) if args else None
    return build_app((module,)) if module is not None else _full_app()


def main(argv: list[str] | None = None) -> None:
    """Entry point: maps InputError (and unusable paths) to exit code 2, other ragtriage
    errors to 1, without a traceback. Run as the program (``argv`` None), it leaves the
    objects the command loaded to the process exit (:func:`_leave_to_exit`)."""
    target = _app_for(sys.argv[1:] if argv is None else list(argv))
    try:
        _run(target, argv)
    finally:
        if argv is None:
            _leave_to_exit()


def _leave_to_exit() -> None:
    """The process ends next: its final garbage collection would walk every object the
    command loaded (the records' and config's models, the rules' patterns and caches),
    about a tenth of a one-trace ``diagnose``, to free memory the exit frees anyway.
    Frozen, they are left to the exit; atexit handlers still run, and the commands close
    their own files (context managers, atomic writes)."""
    gc.freeze()


def _run(target: typer.Typer, argv: list[str] | None) -> None:
    try:
        target(args=argv, standalone_mode=True)
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
