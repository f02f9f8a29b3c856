"""Find run directories under the roots given to ``ragtriage serve``, never outside."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from ragtriage.errors import InputError, RagtriageError
from ragtriage.rundir import RUN_MARKERS, check_run_dir

__all__ = [
    "MAX_DEPTH",
    "Discovery",
    "RunEntry",
    "SkippedDir",
    "discover",
    "discover_runs",
    "resolve_key",
    "scan_roots",
]

#: how deep under a root run directories are looked for
MAX_DEPTH = 4
SEP = "~"
_TRACES = "traces.jsonl"


@dataclass(frozen=True)
class RunEntry:
    """One run found under a root. ``key`` is the run directory's path relative to its
    root with ``/`` written ``~`` (the root's own name when the root is a run);
    ``error`` says why a run could not be read (then the numbers are empty)."""

    key: str
    path: Path
    created: str | None
    config_hash: str | None
    n_traces: int
    accuracy: float | None
    failing: int | None
    stages: Mapping[str, int] = field(default_factory=dict)
    run_id: str | None = None
    error: str | None = None
    #: where its manifest or traces came from when not ``ragtriage run``
    note: str | None = None


def _within(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
    except (ValueError, OSError):
        return False
    return True


@dataclass(frozen=True)
class SkippedDir:
    """A folder under a root that looks like a run (it holds ``manifest.json`` or
    ``diagnoses.jsonl``, or is a run with an unreadable manifest, a link, or too deep)
    but is not served: ``reason`` says why, in the words ``ragtriage report`` uses."""

    path: Path
    reason: str


@dataclass(frozen=True)
class Discovery:
    """The runs under the roots (those whose files cannot be read carry ``error``) and
    the folders passed over, with why."""

    runs: list[RunEntry]
    skipped: list[SkippedDir]


def _looks_like_run(d: Path) -> bool:
    return any((d / name).is_file() for name in (_TRACES, *RUN_MARKERS))


def _scan(root: Path) -> tuple[list[Path], list[SkippedDir]]:
    """Run directories under ``root`` (itself included) -- those holding traces.jsonl
    that :func:`~ragtriage.rundir.check_run_dir` accepts -- and the folders that look
    like runs but are not served, with why. Hidden directories, ``annotations`` and the
    index are not looked into."""
    out: list[Path] = []
    skipped: list[SkippedDir] = []
    base = len(root.parts)
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        here = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d != "annotations")
        for d in dirnames:
            sub = here / d
            if sub.is_symlink() and _looks_like_run(sub):
                skipped.append(
                    SkippedDir(
                        sub,
                        "a symbolic link: not followed (serve the directory it points to instead)",
                    )
                )
        dirnames[:] = [d for d in dirnames if not (here / d).is_symlink()]
        if len(here.parts) - base >= MAX_DEPTH:
            for d in dirnames:
                if _looks_like_run(here / d):
                    skipped.append(
                        SkippedDir(
                            here / d,
                            f"more than {MAX_DEPTH} folders below the served directory; "
                            "serve a directory nearer to it",
                        )
                    )
            dirnames[:] = []
        if _TRACES in filenames and not _within(here / _TRACES, root):
            skipped.append(
                SkippedDir(here, f"{_TRACES} is a link leading outside the served directory")
            )
            continue
        if not (_TRACES in filenames or any(m in filenames for m in RUN_MARKERS)):
            continue
        if _TRACES not in filenames and _inside_run(here, root):
            continue  # a run's own sub-folder (eval/, label/ ...), not a run of its own
        try:
            check_run_dir(here)
        except InputError as exc:
            skipped.append(SkippedDir(here, str(exc)))
            continue
        out.append(here)
    return out, skipped


def _inside_run(d: Path, root: Path) -> bool:
    """Whether a folder above ``d`` (up to ``root``) is a run directory."""
    for parent in d.parents:
        if (parent / _TRACES).is_file():
            return True
        if parent == root or len(parent.parts) <= len(root.parts):
            return False
    return False


def scan_roots(roots: Sequence[Path]) -> list[SkippedDir]:
    """The folders under ``roots`` not served and why, without opening any run (for
    ``ragtriage serve`` to print at start-up)."""
    skipped: list[SkippedDir] = []
    for root in roots:
        if Path(root).is_dir():
            skipped += _scan(Path(root))[1]
    return skipped


def _mtime(run: Path) -> str | None:
    """When the run was written (manifest, else traces), for runs without created_at."""
    for name in ("manifest.json", _TRACES):
        try:
            ts = (run / name).stat().st_mtime
        except OSError:
            continue
        return datetime.fromtimestamp(ts, tz=UTC).isoformat(timespec="seconds")
    return None


def _key(root: Path, run: Path) -> str:
    rel = run.relative_to(root)
    if not rel.parts:
        return root.resolve().name or "run"
    return SEP.join(rel.parts)


def discover(roots: Sequence[Path]) -> Discovery:
    """Every run directory under ``roots`` (sorted by key) and the folders passed over.
    Each run's index is built or reused (see :class:`RunView`); a run whose files
    cannot be read is listed with its ``error``."""
    from ragtriage.runview._view import RunView

    out: list[RunEntry] = []
    skipped: list[SkippedDir] = []
    seen: set[str] = set()
    for r, root in enumerate(roots):
        root = Path(root)
        if not root.is_dir():
            continue
        runs, passed = _scan(root)
        skipped += passed
        for run in runs:
            key = _key(root, run)
            if key in seen:
                key = f"{key}@{r}"
            seen.add(key)
            try:
                view = RunView.open(run)
                s = view.summary()
            except (RagtriageError, OSError, ValueError) as exc:
                out.append(
                    RunEntry(
                        key=key,
                        path=run,
                        created=None,
                        config_hash=None,
                        n_traces=0,
                        accuracy=None,
                        failing=None,
                        error=str(exc),
                    )
                )
                continue
            out.append(
                RunEntry(
                    key=key,
                    path=run,
                    created=s.created or _mtime(run),
                    config_hash=s.config_hash,
                    n_traces=s.n_traces,
                    accuracy=s.accuracy,
                    failing=s.failing,
                    stages=dict(s.stages),
                    run_id=s.run_id,
                    note=": ".join(s.note) if s.note is not None else None,
                )
            )
    return Discovery(sorted(out, key=lambda e: e.key), sorted(skipped, key=lambda d: d.path))


def discover_runs(roots: Sequence[Path]) -> list[RunEntry]:
    """The runs of :func:`discover`."""
    return discover(roots).runs


def resolve_key(roots: Sequence[Path], key: str) -> Path:
    """The run directory of ``key`` (see :class:`RunEntry`); KeyError when no run has
    it or it would leave its root (``..``, absolute parts, symlinks out)."""
    base, _, root_no = key.partition("@")
    parts = base.split(SEP)
    if not base or any(p in ("", ".", "..") or "/" in p or "\\" in p or "\0" in p for p in parts):
        raise KeyError(f"bad run key {key!r}")
    candidates = list(enumerate(roots))
    if root_no:
        if not root_no.isdigit() or int(root_no) >= len(roots):
            raise KeyError(f"bad run key {key!r}")
        candidates = [(int(root_no), roots[int(root_no)])]
    for _r, root in candidates:
        root = Path(root)
        if not root.is_dir():
            continue
        options = [root.joinpath(*parts)]
        if len(parts) == 1 and (root.resolve().name or "run") == parts[0]:
            options.insert(0, root)
        for run in options:
            if (run / _TRACES).is_file() and _within(run / _TRACES, root) and _within(run, root):
                depth = len(run.relative_to(root).parts)
                if depth <= MAX_DEPTH:
                    return run
    raise KeyError(f"unknown run {key!r}")
