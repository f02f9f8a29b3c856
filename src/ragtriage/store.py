"""Run directories and the run store (SQLite, or PostgreSQL for a shared team store).

A run directory holds ``manifest.json`` (``run_id``, ``created_at``, ``config``,
``config_hash``), ``traces.jsonl`` and ``diagnoses.jsonl``. The store is one SQLite
file (default ``.ragtriage/runs.sqlite``) with the tables ``runs``, ``traces`` and
``diagnoses``; every import is one transaction, and importing the same run again is a
no-op (same content) or replaces it whole (changed content).

Given a ``postgresql://`` DSN instead of a path (``--store`` or the environment
variable ``RAGTRIAGE_STORE_DSN``), the same tables live in PostgreSQL (extra
``.[pg]``), so a team shares one store. The schema is versioned: ``meta.schema`` holds
the version, and :data:`_MIGRATIONS` lists the statements that bring a store from
each version to the next, applied in one transaction when a store is opened.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import chain
from pathlib import Path
from types import TracebackType
from typing import Any

from pydantic import ValidationError

from ragtriage.constants import DEFAULT_STORE_PATH, SERVE_EXPORT_DIR, STORE_DSN_ENV
from ragtriage.errors import InputError, StoreError
from ragtriage.jsonl import (
    atomic_write_text,
    read_records,
    stream_write_lines,
    validation_to_input_error,
)
from ragtriage.records import Diagnosis, Trace
from ragtriage.report.aggregate import Summary, summarize
from ragtriage.rundir import check_run_dir, diagnosis_mismatch, run_note

__all__ = [
    "DEFAULT_STORE_PATH",
    "SERVE_EXPORT_DIR",
    "STORE_DSN_ENV",
    "AddResult",
    "RunData",
    "RunInfo",
    "RunStore",
    "TrendRow",
    "default_store",
    "export_store",
    "is_dsn",
    "is_store",
    "load_run_dir",
    "read_diagnoses",
    "resolve_run",
]

MANIFEST = "manifest.json"
TRACES = "traces.jsonl"
DIAGNOSES = "diagnoses.jsonl"
_SCHEMA_VERSION = 1

_META = "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    created_at TEXT NOT NULL,
    imported_at TEXT NOT NULL,
    source TEXT NOT NULL,
    config TEXT NOT NULL,
    config_hash TEXT NOT NULL,
    manifest TEXT NOT NULL,
    summary TEXT,
    content_hash TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS traces (
    run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    trace_id TEXT NOT NULL,
    example_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (run_id, trace_id)
);
CREATE INDEX IF NOT EXISTS traces_by_example ON traces (run_id, example_id);
CREATE TABLE IF NOT EXISTS diagnoses (
    run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    example_id TEXT NOT NULL,
    trace_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (run_id, example_id)
);
CREATE INDEX IF NOT EXISTS diagnoses_by_trace ON diagnoses (run_id, trace_id);
"""
#: ``version -> statements`` that bring a store at ``version - 1`` to ``version``
#: (portable SQL: SQLite and PostgreSQL). A new version appends an entry here and
#: raises :data:`_SCHEMA_VERSION`; stores are migrated when opened.
_MIGRATIONS: dict[int, list[str]] = {
    1: [stmt.strip() for stmt in _SCHEMA.split(";") if stmt.strip()],
}
assert max(_MIGRATIONS) == _SCHEMA_VERSION


@dataclass(frozen=True)
class RunData:
    """One run: its manifest fields, traces and diagnoses."""

    run_id: str
    name: str
    created_at: str
    config: dict[str, Any]
    config_hash: str
    manifest: dict[str, Any]
    traces: tuple[Trace, ...]
    diagnoses: tuple[Diagnosis, ...]
    source: str
    has_diagnoses: bool = True

    def info(self) -> dict[str, str]:
        """Short key/value facts for report headers."""
        out = {"run": self.run_id, "created": self.created_at}
        if self.name and self.name != self.run_id:
            out["name"] = self.name
        if self.config_hash:
            out["config"] = self.config_hash[:12]
        note = run_note(self.manifest)
        if note is not None:
            out[note[0]] = note[1]
        return out


@dataclass(frozen=True)
class RunInfo:
    """One row of ``ragtriage runs list``."""

    run_id: str
    name: str
    created_at: str
    imported_at: str
    source: str
    config_hash: str
    traces: int
    diagnoses: int
    summary: Summary | None = field(default=None, compare=False)


@dataclass(frozen=True)
class AddResult:
    run_id: str
    status: str  # "added" | "replaced" | "unchanged"
    traces: int
    diagnoses: int


@dataclass(frozen=True)
class TrendRow:
    """Failure-stage distribution of one run (seed 002, longitudinal tracking)."""

    run_id: str
    name: str
    created_at: str
    examples: int
    failing: int
    accuracy: float | None
    stage_counts: dict[str, int]
    stage_shares: dict[str, float | None]
    stage_undetermined: int


def read_diagnoses(path: str | Path) -> list[Diagnosis]:
    """Read a diagnoses JSONL file; a repeated ``example_id`` is an InputError."""
    out: list[Diagnosis] = []
    seen: set[str] = set()
    for lineno, d in enumerate(read_records(path, Diagnosis), start=1):
        if d.example_id in seen:
            raise InputError(
                f"duplicate example_id {d.example_id!r}",
                path=str(path),
                line=lineno,
                field="example_id",
            )
        seen.add(d.example_id)
        out.append(d)
    return out


def _read_traces(path: Path) -> list[Trace]:
    out: list[Trace] = []
    seen: set[str] = set()
    for lineno, t in enumerate(read_records(path, Trace), start=1):
        if t.trace_id in seen:
            raise InputError(
                f"duplicate trace_id {t.trace_id!r}", path=str(path), line=lineno, field="trace_id"
            )
        seen.add(t.trace_id)
        out.append(t)
    return out


def load_run_dir(
    path: str | Path,
    diagnoses_path: str | Path | None = None,
    *,
    require_diagnoses: bool = True,
) -> RunData:
    """Read a run directory. Without ``diagnoses.jsonl`` (and no ``diagnoses_path``),
    raise unless ``require_diagnoses`` is false."""
    root = Path(path)
    checked = check_run_dir(root)  # the rule `ragtriage serve` applies too
    manifest = checked.manifest
    traces = tuple(_read_traces(checked.traces))
    dpath = Path(diagnoses_path) if diagnoses_path is not None else root / DIAGNOSES
    has_diagnoses = dpath.is_file()
    if not has_diagnoses and (require_diagnoses or diagnoses_path is not None):
        raise InputError(
            "no diagnoses found; run `ragtriage diagnose` on this run first",
            path=str(dpath),
        )
    diagnoses = tuple(read_diagnoses(dpath)) if has_diagnoses else ()
    _check_diagnoses_match(dpath, diagnoses, traces)
    created = manifest.get("created_at") or datetime.fromtimestamp(
        (root / MANIFEST).stat().st_mtime, tz=UTC
    ).isoformat(timespec="seconds")
    run_id = str(manifest["run_id"])
    return RunData(
        run_id=run_id,
        name=str(manifest.get("name") or run_id),
        created_at=str(created),
        config=dict(manifest.get("config") or {}),
        config_hash=str(manifest.get("config_hash") or ""),
        manifest=manifest,
        traces=traces,
        diagnoses=diagnoses,
        source=str(root.resolve()),
        has_diagnoses=has_diagnoses,
    )


def _check_diagnoses_match(
    dpath: Path, diagnoses: Sequence[Diagnosis], traces: Sequence[Trace]
) -> None:
    """Diagnoses of another run (another run id, or examples this run does not have)
    would be reported as this run's: refuse them."""
    by_example = {t.example.example_id: t.run_id for t in traces}
    for d in diagnoses:
        wrong = diagnosis_mismatch(d.example_id, d.run_id, by_example)
        if wrong is not None:
            raise InputError(wrong[0], path=str(dpath), field=wrong[1])


def _content_hash(run: RunData) -> str:
    h = hashlib.sha256()
    h.update(json.dumps(run.manifest, sort_keys=True, ensure_ascii=False).encode())
    for t in run.traces:
        h.update(b"\x00T")
        h.update(t.to_json().encode())
    for d in run.diagnoses:
        h.update(b"\x00D")
        h.update(d.to_json().encode())
    return h.hexdigest()


def _now() -> str:
    return datetime.now(tz=UTC).isoformat(timespec="seconds")


def is_dsn(target: str | Path) -> bool:
    """Whether ``target`` is a PostgreSQL DSN rather than a file path."""
    return isinstance(target, str) and target.startswith(("postgresql://", "postgres://"))


def default_store() -> str | Path:
    """``RAGTRIAGE_STORE_DSN`` when set, else the SQLite file."""
    return os.environ.get(STORE_DSN_ENV) or DEFAULT_STORE_PATH


class _PgCursor:
    """A psycopg cursor that takes the store's ``?`` placeholders."""

    def __init__(self, cur: Any) -> None:
        self._cur = cur

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self._cur.execute(sql.replace("?", "%s"), params)

    def executemany(self, sql: str, rows: Any) -> Any:
        return self._cur.executemany(sql.replace("?", "%s"), list(rows))


class _PgConn:
    """The few sqlite3.Connection methods the store uses, over psycopg (autocommit;
    transactions are explicit ``BEGIN`` … ``COMMIT``)."""

    def __init__(self, dsn: str) -> None:
        try:
            import psycopg
        except ImportError as exc:
            raise StoreError(
                "a PostgreSQL run store needs psycopg: pip install 'ragtriage[pg]'"
            ) from exc
        self._conn = psycopg.connect(dsn, autocommit=True)

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        if sql == "BEGIN IMMEDIATE":
            sql = "BEGIN ISOLATION LEVEL SERIALIZABLE"
        return self._conn.execute(sql.replace("?", "%s"), params)

    def cursor(self) -> _PgCursor:
        return _PgCursor(self._conn.cursor())

    def close(self) -> None:
        self._conn.close()


def _db_errors() -> tuple[type[Exception], ...]:
    try:
        import psycopg
    except ImportError:
        return (sqlite3.Error,)
    return (sqlite3.Error, psycopg.Error)


class RunStore:
    """The run store: a SQLite file, or a PostgreSQL database given a ``postgresql://``
    DSN. Use as a context manager, or call :meth:`close`."""

    def __init__(self, path: str | Path = DEFAULT_STORE_PATH, *, create: bool = True) -> None:
        self.dsn = str(path) if is_dsn(path) else None
        self.path = Path(path) if self.dsn is None else Path("postgresql")
        self._conn: Any
        errors = _db_errors()
        if self.dsn is not None:
            try:
                self._conn = _PgConn(self.dsn)
                self._migrate()
            except errors as exc:
                raise StoreError(f"{_redact(self.dsn)}: not a usable run store ({exc})") from exc
            return
        if not self.path.exists():
            if not create:
                raise InputError(
                    "no run store here; import a run with `ragtriage runs add`", path=str(self.path)
                )
            self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._conn = sqlite3.connect(str(self.path), isolation_level=None)
            self._conn.execute("PRAGMA foreign_keys = ON")
            self._migrate()
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path}: not a usable run store ({exc})") from exc

    @property
    def where(self) -> str:
        """The store's file, or its DSN without a password (for messages)."""
        return _redact(self.dsn) if self.dsn is not None else str(self.path)

    def _migrate(self) -> None:
        """Create or upgrade the schema to :data:`_SCHEMA_VERSION` (one transaction)."""
        self._conn.execute(_META)
        with self._transaction() as cur:
            row = cur.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
            current = 0 if row is None else int(row[0])
            if current > _SCHEMA_VERSION:
                raise StoreError(
                    f"{self.where}: store schema {current} is newer than {_SCHEMA_VERSION}; "
                    "upgrade ragtriage"
                )
            for version in range(current + 1, _SCHEMA_VERSION + 1):
                for stmt in _MIGRATIONS[version]:
                    cur.execute(stmt)
            if current != _SCHEMA_VERSION:
                cur.execute("DELETE FROM meta WHERE key='schema'")
                cur.execute(
                    "INSERT INTO meta (key, value) VALUES ('schema', ?)", (str(_SCHEMA_VERSION),)
                )

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _transaction(self) -> _Tx:
        return _Tx(self._conn)

    def add_run(self, run: RunData, summary: Summary | None = None) -> AddResult:
        """Import ``run`` atomically; same content again is ``unchanged``."""
        chash = _content_hash(run)
        if summary is None and run.has_diagnoses:
            summary = summarize(run.diagnoses, run.traces)
        try:
            return self._add(run, summary, chash)
        except _db_errors() as exc:
            raise StoreError(f"{self.where}: cannot import run {run.run_id!r}: {exc}") from exc

    def _add(self, run: RunData, summary: Summary | None, chash: str) -> AddResult:
        with self._transaction() as cur:
            row = cur.execute("SELECT content_hash FROM runs WHERE id=?", (run.run_id,)).fetchone()
            if row is not None and row[0] == chash:
                return AddResult(run.run_id, "unchanged", len(run.traces), len(run.diagnoses))
            status = "added" if row is None else "replaced"
            cur.execute("DELETE FROM runs WHERE id=?", (run.run_id,))
            cur.execute(
                "INSERT INTO runs (id, name, created_at, imported_at, source, config, "
                "config_hash, manifest, summary, content_hash) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (
                    run.run_id,
                    run.name,
                    run.created_at,
                    _now(),
                    run.source,
                    json.dumps(run.config, sort_keys=True, ensure_ascii=False),
                    run.config_hash,
                    json.dumps(run.manifest, sort_keys=True, ensure_ascii=False),
                    summary.model_dump_json() if summary is not None else None,
                    chash,
                ),
            )
            cur.executemany(
                "INSERT INTO traces (run_id, trace_id, example_id, seq, data) VALUES (?,?,?,?,?)",
                (
                    (run.run_id, t.trace_id, t.example.example_id, i, t.to_json())
                    for i, t in enumerate(run.traces)
                ),
            )
            cur.executemany(
                "INSERT INTO diagnoses (run_id, example_id, trace_id, seq, data) "
                "VALUES (?,?,?,?,?)",
                (
                    (run.run_id, d.example_id, d.trace_id, i, d.to_json())
                    for i, d in enumerate(run.diagnoses)
                ),
            )
        return AddResult(run.run_id, status, len(run.traces), len(run.diagnoses))

    def has_run(self, run_id: str) -> bool:
        return self._conn.execute("SELECT 1 FROM runs WHERE id=?", (run_id,)).fetchone() is not None

    def remove_run(self, run_id: str) -> bool:
        with self._transaction() as cur:
            n = int(cur.execute("DELETE FROM runs WHERE id=?", (run_id,)).rowcount)
        return n > 0

    def _summary_of(self, run_id: str, text: str | None) -> Summary | None:
        if text is not None:
            try:
                return Summary.model_validate_json(text)
            except ValidationError:
                pass  # stored by another version: recompute from the rows
        diagnoses = list(self._iter_diagnoses(run_id))
        if not diagnoses:
            return None
        return summarize(diagnoses, list(self._iter_traces(run_id)))

    def list_runs(self) -> list[RunInfo]:
        """All runs, oldest first (by ``created_at``, then id)."""
        rows = self._conn.execute(
            "SELECT r.id, r.name, r.created_at, r.imported_at, r.source, r.config_hash, r.summary,"
            " (SELECT COUNT(*) FROM traces t WHERE t.run_id = r.id),"
            " (SELECT COUNT(*) FROM diagnoses d WHERE d.run_id = r.id)"
            " FROM runs r ORDER BY r.created_at, r.id"
        ).fetchall()
        return [
            RunInfo(
                run_id=r[0],
                name=r[1],
                created_at=r[2],
                imported_at=r[3],
                source=r[4],
                config_hash=r[5],
                traces=r[7],
                diagnoses=r[8],
                summary=self._summary_of(r[0], r[6]),
            )
            for r in rows
        ]

    def _iter_rows(self, table: str, run_id: str) -> Iterator[tuple[int, str]]:
        yield from self._conn.execute(
            f"SELECT seq, data FROM {table} WHERE run_id=? ORDER BY seq", (run_id,)
        )

    def _iter_traces(self, run_id: str) -> Iterator[Trace]:
        for seq, data in self._iter_rows("traces", run_id):
            try:
                yield Trace.model_validate_json(data)
            except ValidationError as exc:
                err = validation_to_input_error(
                    exc, path=f"{self.where}:traces[{run_id}]", line=seq + 1
                )
                raise StoreError(str(err)) from exc

    def _iter_diagnoses(self, run_id: str) -> Iterator[Diagnosis]:
        for seq, data in self._iter_rows("diagnoses", run_id):
            try:
                yield Diagnosis.model_validate_json(data)
            except ValidationError as exc:
                err = validation_to_input_error(
                    exc, path=f"{self.where}:diagnoses[{run_id}]", line=seq + 1
                )
                raise StoreError(str(err)) from exc

    def export_run(self, run_id: str, out_dir: str | Path) -> Path:
        """Write one stored run as a run directory (``manifest.json``, ``traces.jsonl``,
        ``diagnoses.jsonl`` when it has diagnoses), streaming the stored JSON rows (no
        run is held in memory), each file replaced atomically. Returns the directory."""
        row = self._conn.execute(
            "SELECT id, name, created_at, config, config_hash, manifest FROM runs WHERE id=?",
            (run_id,),
        ).fetchone()
        if row is None:
            raise InputError(f"no run {run_id!r} in the store", path=self.where)
        out = Path(out_dir)
        manifest = dict(json.loads(row[5]) or {})
        manifest.update(
            run_id=row[0],
            name=row[1],
            created_at=row[2],
            config=json.loads(row[3]),
            config_hash=row[4],
            store=self.where,
        )
        stream_write_lines(out / TRACES, (data for _seq, data in self._iter_rows("traces", run_id)))
        diagnoses = self._iter_rows("diagnoses", run_id)
        first = next(iter(diagnoses), None)
        if first is not None:
            stream_write_lines(out / DIAGNOSES, chain([first[1]], (d for _s, d in diagnoses)))
        else:
            (out / DIAGNOSES).unlink(missing_ok=True)
        # the manifest last: a run directory with a manifest is complete
        atomic_write_text(out / MANIFEST, json.dumps(manifest, ensure_ascii=False, indent=2))
        return out

    def get_run(self, run_id: str) -> RunData:
        row = self._conn.execute(
            "SELECT id, name, created_at, config, config_hash, manifest, source FROM runs WHERE id=?",
            (run_id,),
        ).fetchone()
        if row is None:
            raise InputError(f"no run {run_id!r} in the store", path=self.where)
        diagnoses = tuple(self._iter_diagnoses(run_id))
        return RunData(
            run_id=row[0],
            name=row[1],
            created_at=row[2],
            config=json.loads(row[3]),
            config_hash=row[4],
            manifest=json.loads(row[5]),
            traces=tuple(self._iter_traces(run_id)),
            diagnoses=diagnoses,
            source=row[6],
            has_diagnoses=bool(diagnoses),
        )

    def trend(self, runs: Sequence[str] | None = None) -> list[TrendRow]:
        """Failure-stage distribution per run, oldest first; ``runs`` restricts the ids."""
        wanted = set(runs) if runs else None
        out: list[TrendRow] = []
        for info in self.list_runs():
            if wanted is not None and info.run_id not in wanted:
                continue
            s = info.summary
            if s is None:
                continue
            out.append(
                TrendRow(
                    run_id=info.run_id,
                    name=info.name,
                    created_at=info.created_at,
                    examples=s.totals.examples,
                    failing=s.totals.failing,
                    accuracy=s.accuracy,
                    stage_counts={x.stage.value: x.count for x in s.stages},
                    stage_shares={x.stage.value: x.share for x in s.stages},
                    stage_undetermined=s.stage_undetermined,
                )
            )
        return out


class _Tx:
    """``BEGIN IMMEDIATE`` … ``COMMIT``, or ``ROLLBACK`` on any exception."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn

    def __enter__(self) -> Any:
        self._conn.execute("BEGIN IMMEDIATE")
        return self._conn.cursor()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self._conn.execute("COMMIT")
        else:
            self._conn.execute("ROLLBACK")


def resolve_run(
    ref: str, store_path: str | Path = DEFAULT_STORE_PATH, diagnoses_path: str | Path | None = None
) -> RunData:
    """A run directory path, or else a run id in the store."""
    p = Path(ref)
    if p.is_dir():
        return load_run_dir(p, diagnoses_path)
    if is_dsn(store_path):
        with RunStore(store_path) as store:
            if not store.has_run(ref):
                raise InputError(
                    f"{ref!r} is neither a run directory nor a run id in {store.where}"
                )
            return store.get_run(ref)
    sp = Path(store_path)
    if not sp.exists():
        raise InputError(f"{ref!r} is neither a run directory nor a stored run (no store at {sp})")
    with RunStore(sp, create=False) as store:
        if not store.has_run(ref):
            raise InputError(f"{ref!r} is neither a run directory nor a run id in {sp}")
        return store.get_run(ref)


def _redact(dsn: str) -> str:
    """``dsn`` with any password replaced by ``***``."""
    import re

    return re.sub(r"(://[^:/@]+:)[^@]*@", r"\1***@", dsn)


_EXPORT_STAMP = ".ragtriage-export.json"


def is_store(target: str) -> bool:
    """A run-store address: a PostgreSQL DSN, or an existing SQLite database file."""
    if is_dsn(target):
        return True
    p = Path(target)
    if not p.is_file():
        return False
    with p.open("rb") as fh:
        return fh.read(16) == b"SQLite format 3\x00"


def export_store(target: str, out_root: str | Path = SERVE_EXPORT_DIR) -> Path:
    """Every run of the store at ``target`` as a run directory under ``out_root``/<store>
    (for ``ragtriage serve``): a run is (re)written only when its row counts or import
    time changed since the last export, and runs no longer stored are removed."""
    import shutil

    label = _redact(target) if is_dsn(target) else str(Path(target).resolve())
    slug = hashlib.sha256(label.encode("utf-8")).hexdigest()[:12]
    name = "pg" if is_dsn(target) else Path(target).stem
    root = Path(out_root) / f"{name}-{slug}"
    root.mkdir(parents=True, exist_ok=True)
    with RunStore(target, create=False) as store:
        runs = store.list_runs()
        wanted = {}
        for info in runs:
            folder = root / hashlib.sha256(info.run_id.encode("utf-8")).hexdigest()[:16]
            wanted[folder.name] = info.run_id
            stamp = {
                "run_id": info.run_id,
                "traces": info.traces,
                "diagnoses": info.diagnoses,
                "imported_at": info.imported_at,
            }
            stamp_path = folder / _EXPORT_STAMP
            try:
                if json.loads(stamp_path.read_text(encoding="utf-8")) == stamp:
                    continue
            except (OSError, ValueError):
                pass
            store.export_run(info.run_id, folder)
            atomic_write_text(stamp_path, json.dumps(stamp))
    for child in root.iterdir():
        if child.is_dir() and child.name not in wanted:
            shutil.rmtree(child, ignore_errors=True)
    return root
