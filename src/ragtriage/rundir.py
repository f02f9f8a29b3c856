"""What makes a directory a run, decided in one place for every command that reads one
(``report``, ``serve``, ``runs add``, ``advise`` ...), and how ``diagnose`` turns the
directory it writes into one.

A run directory holds ``traces.jsonl``; ``manifest.json`` says where the run came from
and ``diagnoses.jsonl`` holds its diagnoses. A directory with traces but no manifest is
a run too: its manifest is made up in memory from the files (:data:`NO_MANIFEST`). A
directory with a manifest that cannot be read, or with diagnoses but no traces, is not
a run, and :func:`check_run_dir` says why in words every command prints the same way.

``diagnose FILE --out DIR`` copies the traces file into ``DIR/traces.jsonl`` (a copy,
not a link or a path: the run stays whole when either folder is moved, and a source
file appended to later does not change the run) and writes a manifest whose
``traces_from`` section names the source file, its sha256 and its trace count
(:func:`plan_diagnosis_dir`).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ragtriage.errors import InputError
from ragtriage.jsonl import read_json_object

__all__ = [
    "DIAGNOSES",
    "MANIFEST",
    "NO_MANIFEST",
    "RUN_MARKERS",
    "TRACES",
    "TRACES_FROM",
    "DiagnosisDirPlan",
    "RunDir",
    "check_run_dir",
    "diagnosis_mismatch",
    "plan_diagnosis_dir",
    "read_manifest",
    "run_note",
]

MANIFEST = "manifest.json"
TRACES = "traces.jsonl"
DIAGNOSES = "diagnoses.jsonl"
#: files that make a directory look like a run (a folder holding one of them but no
#: traces is reported, not passed over in silence)
RUN_MARKERS = (MANIFEST, DIAGNOSES)
#: the ``manifest`` entry of a manifest made up from the files
NO_MANIFEST = "none, read from the files"
#: the manifest section that says a run's traces were copied in by ``diagnose``
TRACES_FROM = "traces_from"
_CHUNK = 1 << 20


@dataclass(frozen=True)
class RunDir:
    """A directory :func:`check_run_dir` accepted: its manifest (the file's, or one made
    up from the files when there is none: ``manifest_file`` false)."""

    path: Path
    manifest: dict[str, Any]
    manifest_file: bool
    has_diagnoses: bool

    @property
    def traces(self) -> Path:
        return self.path / TRACES

    @property
    def diagnoses(self) -> Path:
        return self.path / DIAGNOSES


def read_manifest(path: Path) -> dict[str, Any]:
    """A run's ``manifest.json``: a JSON object with a non-empty ``run_id``."""
    data = read_json_object(path, "run manifest")
    run_id = data.get("run_id")
    if not isinstance(run_id, str) or not run_id.strip():
        raise InputError("missing or empty run id", path=str(path), field="run_id")
    for key, kind in (("config", dict), ("created_at", str), ("config_hash", str), ("name", str)):
        if key in data and data[key] is not None and not isinstance(data[key], kind):
            raise InputError(f"expected {kind.__name__}", path=str(path), field=key)
    return data


def _first_run_id(traces: Path) -> str | None:
    """The ``run_id`` of the first trace, when it has one (the readers report bad lines)."""
    try:
        with traces.open("rb") as fh:
            for raw in fh:
                if not raw.strip():
                    continue
                obj = json.loads(raw)
                rid = obj.get("run_id") if isinstance(obj, dict) else None
                return rid if isinstance(rid, str) and rid.strip() else None
    except (OSError, ValueError):
        return None
    return None


def _mtime_iso(path: Path) -> str:
    ts = path.stat().st_mtime
    return datetime.fromtimestamp(ts, tz=UTC).isoformat(timespec="seconds")


def _made_up_manifest(run: Path) -> dict[str, Any]:
    """The manifest of a run directory without ``manifest.json``, from its files: the
    first trace's run id (else the directory's name) and the traces file's time."""
    traces = run / TRACES
    name = run.resolve().name or "run"
    return {
        "run_id": _first_run_id(traces) or name,
        "name": name,
        "created_at": _mtime_iso(traces),
        "config": {},
        "config_hash": "",
        "manifest": NO_MANIFEST,
    }


def check_run_dir(path: str | Path) -> RunDir:
    """Whether ``path`` is a run directory, by the one rule ``report`` and ``serve``
    share (the files' lines are checked when they are read). InputError naming the file
    and the reason when it is not."""
    run = Path(path)
    if not run.is_dir():
        raise InputError("not a run directory", path=str(run))
    traces = run / TRACES
    if not traces.is_file():
        if (run / DIAGNOSES).is_file():
            raise InputError(
                f"{DIAGNOSES} but no {TRACES}: not a run directory (diagnoses written by an "
                "older `ragtriage diagnose FILE --out DIR`?); run `ragtriage diagnose "
                "TRACES_FILE --out DIR` again: it copies the traces and writes a manifest "
                "next to the diagnoses it has (it resumes them)",
                path=str(traces),
            )
        raise InputError("run directory has no traces.jsonl", path=str(traces))
    manifest_path = run / MANIFEST
    if manifest_path.exists():
        manifest = read_manifest(manifest_path)
        from_file = True
    else:
        manifest = _made_up_manifest(run)
        from_file = False
    return RunDir(
        path=run,
        manifest=manifest,
        manifest_file=from_file,
        has_diagnoses=(run / DIAGNOSES).is_file(),
    )


def run_note(manifest: dict[str, Any]) -> tuple[str, str] | None:
    """Where a run's manifest or traces came from when it was not ``ragtriage run``, as
    ``(what, how)``: ``("manifest", NO_MANIFEST)`` for one made up from the files,
    ``("traces", "copied from PATH")`` for traces ``diagnose`` copied in."""
    if manifest.get("manifest") == NO_MANIFEST:
        return ("manifest", NO_MANIFEST)
    src = manifest.get(TRACES_FROM)
    if isinstance(src, dict) and src.get("path"):
        return ("traces", f"copied from {src['path']}")
    return None


def diagnosis_mismatch(
    example_id: str, run_id: str | None, trace_run_ids: dict[str, str | None]
) -> tuple[str, str] | None:
    """Why a diagnosis cannot be this run's -- ``(message, field)`` -- or None.
    ``trace_run_ids`` maps each trace's example id to its run id."""
    if example_id not in trace_run_ids:
        return (
            f"diagnosis of example {example_id!r}, which this run's traces do not "
            "have: these diagnoses belong to another run (run `ragtriage diagnose` "
            "on this run)",
            "example_id",
        )
    trace_run = trace_run_ids[example_id]
    if run_id and trace_run and run_id != trace_run:
        return (
            f"diagnoses of run {run_id!r}, but the traces are run {trace_run!r} "
            "(re-run `ragtriage diagnose --overwrite` on this run)",
            "run_id",
        )
    return None


# --------------------------------------------------------------------------- diagnose


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.samefile(b)
    except OSError:
        return False


def _copy_atomic(src: Path, dst: Path, sha256: str) -> None:
    """Copy ``src`` to ``dst`` via a temp file + fsync + rename; InputError when the
    bytes copied are not those hashed before (the source changed meanwhile)."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{dst.name}.", suffix=".tmp", dir=dst.parent)
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)
        h = hashlib.sha256()
        with os.fdopen(fd, "wb") as out, src.open("rb") as fh:
            while chunk := fh.read(_CHUNK):
                h.update(chunk)
                out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
        if h.hexdigest() != sha256:
            raise InputError(
                "the traces file changed while it was being diagnosed; run again",
                path=str(src),
            )
        os.replace(tmp, dst)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _source_manifest(traces: Path) -> dict[str, Any] | None:
    """The manifest of the run directory a ``traces.jsonl`` lies in, when readable."""
    if traces.name != TRACES or not (traces.parent / MANIFEST).is_file():
        return None
    try:
        return read_manifest(traces.parent / MANIFEST)
    except InputError:
        return None


@dataclass(frozen=True)
class DiagnosisDirPlan:
    """What ``diagnose`` writes besides the diagnoses so its output is a run directory;
    nothing when it diagnoses a run in place or the run there already has these traces.
    :meth:`apply` writes it (the traces first, then the manifest, each atomically)."""

    out_dir: Path
    source: Path
    copy_traces: bool
    manifest: dict[str, Any] | None
    sha256: str | None = None

    @property
    def writes(self) -> bool:
        return self.copy_traces or self.manifest is not None

    def apply(self) -> list[Path]:
        """Write the copy and the manifest; the paths written."""
        from ragtriage.jsonl import atomic_write_text

        written: list[Path] = []
        if self.copy_traces:
            assert self.sha256 is not None
            _copy_atomic(self.source, self.out_dir / TRACES, self.sha256)
            written.append(self.out_dir / TRACES)
        if self.manifest is not None:
            text = json.dumps(self.manifest, indent=2, ensure_ascii=False) + "\n"
            atomic_write_text(self.out_dir / MANIFEST, text)
            written.append(self.out_dir / MANIFEST)
        return written


def _now() -> str:
    return datetime.now(tz=UTC).isoformat(timespec="seconds")


def _new_manifest(
    source: Path, out_dir: Path, sha256: str, count: int, run_ids: set[str]
) -> dict[str, Any]:
    """The manifest of a run whose traces ``diagnose`` copied in: the source run's own
    manifest when the file is a run directory's ``traces.jsonl``, with a ``traces_from``
    section either way."""
    origin: dict[str, Any] = {
        "how": "copied by `ragtriage diagnose` from a traces file (not written by "
        "`ragtriage run` in this directory)",
        "path": str(source.resolve()),
        "sha256": sha256,
        "traces": count,
        "copied_at": _now(),
    }
    base = _source_manifest(source)
    if base is not None:
        origin["run_dir"] = str(source.parent.resolve())
        return {**base, TRACES_FROM: origin}
    named = sorted(r for r in run_ids if r)
    if len(named) > 1:
        origin["run_ids"] = named
    return {
        "schema": 1,
        "kind": "diagnosed",
        "run_id": named[0] if len(named) == 1 else f"diagnosed-{sha256[:12]}",
        "name": out_dir.resolve().name or "run",
        "created_at": _now(),
        "config_hash": "",
        "config": {},
        TRACES_FROM: origin,
    }


def plan_diagnosis_dir(
    source: Path,
    out_dir: Path,
    *,
    count: int,
    run_ids: set[str],
    overwrite: bool = False,
) -> DiagnosisDirPlan:
    """Check that ``out_dir`` can take diagnoses of the traces file ``source`` (``count``
    traces of ``run_ids``) and say what makes it a run directory; writes nothing.

    * ``source`` is ``out_dir/traces.jsonl`` (a run diagnosed in place): nothing to add;
    * ``out_dir`` has the same traces (byte for byte): its manifest is kept, or one is
      written when it has none;
    * ``out_dir`` has other traces: InputError, unless ``overwrite`` and they were
      copied in by ``diagnose`` too (a run written by ``ragtriage run`` is never
      replaced);
    * else: the traces are copied in and a manifest written.
    """
    target = out_dir / TRACES
    if out_dir.exists() and not out_dir.is_dir():
        raise InputError("--out must be a directory", path=str(out_dir))
    if target.exists() and _same_file(source, target):
        return DiagnosisDirPlan(out_dir, source, copy_traces=False, manifest=None)
    sha = _sha256(source)
    if not target.exists() and (out_dir / MANIFEST).is_file():
        raise InputError(
            f"this directory holds a {MANIFEST} but no {TRACES}; pass another --out",
            path=str(out_dir / MANIFEST),
        )
    if target.is_file():
        theirs = _sha256(target)
        if theirs == sha:
            manifest = None
            if not (out_dir / MANIFEST).exists():
                manifest = _new_manifest(source, out_dir, sha, count, run_ids)
            return DiagnosisDirPlan(out_dir, source, False, manifest, sha)
        replaceable = False
        if (out_dir / MANIFEST).is_file():
            try:
                replaceable = TRACES_FROM in read_manifest(out_dir / MANIFEST)
            except InputError:
                replaceable = False
        if not (overwrite and replaceable):
            hint = (
                "pass --overwrite to replace the run `ragtriage diagnose` made there, or "
                "another --out"
                if replaceable
                else "pass another --out (a run directory's traces are never replaced)"
            )
            raise InputError(
                f"this directory already holds other traces than {source} (sha256 "
                f"{theirs[:12]}… there, {sha[:12]}… here): diagnoses written there would "
                f"not be of its traces; {hint}",
                path=str(target),
            )
    return DiagnosisDirPlan(
        out_dir,
        source,
        copy_traces=True,
        manifest=_new_manifest(source, out_dir, sha, count, run_ids),
        sha256=sha,
    )
