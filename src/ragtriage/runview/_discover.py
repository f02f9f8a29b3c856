"""Find run directories under the roots given to ``ragtriage serve``, never outside."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from ragtriage.errors import RagtriageError

__all__ = ["MAX_DEPTH", "RunEntry", "discover_runs", "resolve_key"]

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


def _within(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
    except (ValueError, OSError):
        return False
    return True


def _run_dirs(root: Path) -> list[Path]:
    """Directories under ``root`` (itself included) holding traces.jsonl; hidden
    directories and symlinks leading outside the root are skipped."""
    out: list[Path] = []
    base = len(root.parts)
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        here = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d != "annotations")
        if len(here.parts) - base >= MAX_DEPTH:
            dirnames[:] = []
        if _TRACES in filenames and _within(here / _TRACES, root):
            out.append(here)
    return out


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


def discover_runs(roots: Sequence[Path]) -> list[RunEntry]:
    """Every run directory (one with ``traces.jsonl``) under ``roots``, sorted by key.
    Each run's index is built or reused (see :class:`RunView`); a run that cannot be
    read is listed with its ``error``."""
    from ragtriage.runview._view import RunView

    out: list[RunEntry] = []
    seen: set[str] = set()
    for r, root in enumerate(roots):
        root = Path(root)
        if not root.is_dir():
            continue
        for run in _run_dirs(root):
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
                )
            )
    return sorted(out, key=lambda e: e.key)


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
