"""A content-addressed SQLite cache of LLM samples: an LLM call is never paid twice.

One row per *sample*: the key is ``ChatRequest.cache_key(sample_index)``, so the K
samples of one prompt are K distinct rows, and asking for 10 votes after 5 were cached
only pays for the 5 missing ones. The database runs in WAL mode so several processes
(and threads) may share one file; the first answer stored for a key wins.

Batch mode (:mod:`ragtriage.llm._batch`) keeps two sidecar tables in the same file:
``batch_requests`` (each exported sample's purpose and request body, so an imported
reply is counted under its purpose and its prompt tokens can be estimated when the
reply carries no usage) and ``batch_failures`` (samples a batch answered with an
error: a batch-mode run reports them as undetermined instead of exporting them again).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Protocol

from pydantic import BaseModel, ConfigDict

from ragtriage.errors import StoreError

__all__ = ["DEFAULT_CACHE_PATH", "BatchFailureRecord", "CachedSample", "ResponseCache"]

DEFAULT_CACHE_PATH = ".ragtriage/llm_cache.sqlite"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS samples (
    key TEXT PRIMARY KEY,
    text TEXT NOT NULL,
    model TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    created_at REAL NOT NULL
) WITHOUT ROWID
"""
_BATCH_SCHEMA = (
    """
CREATE TABLE IF NOT EXISTS batch_requests (
    key TEXT PRIMARY KEY,
    purpose TEXT NOT NULL,
    body TEXT NOT NULL,
    created_at REAL NOT NULL
) WITHOUT ROWID
""",
    """
CREATE TABLE IF NOT EXISTS batch_failures (
    key TEXT PRIMARY KEY,
    message TEXT NOT NULL,
    status INTEGER,
    source TEXT NOT NULL,
    created_at REAL NOT NULL
) WITHOUT ROWID
""",
)
_CHUNK = 500  # stay well below SQLite's bound-parameter limit


class CachedSample(BaseModel):
    """One stored sample. Token counts are what the original call cost (informational)."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    text: str
    model: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0


class BatchFailureRecord(BaseModel):
    """A sample a batch answered with an error: the message, the HTTP status when there
    was one, and where it was read (``file:line``)."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    message: str
    status: int | None = None
    source: str = ""


class SampleCache(Protocol):
    """What :class:`~ragtriage.llm.LLMRunner` needs of a cache: :class:`ResponseCache`,
    or a client of one held elsewhere (the Ray executor's cache actor)."""

    def get_many(self, keys: Sequence[str]) -> dict[str, CachedSample]: ...

    def put_many(self, items: Iterable[tuple[str, CachedSample]]) -> None: ...

    def close(self) -> None: ...


class ResponseCache:
    """SQLite-backed sample cache. ``path=":memory:"`` gives a private in-memory cache.

    Methods are synchronous and fast (a primary-key lookup or one small transaction);
    a lock makes one instance safe to share between threads and asyncio tasks.
    """

    def __init__(self, path: str | Path = DEFAULT_CACHE_PATH) -> None:
        self._path = str(path)
        self._lock = threading.Lock()
        try:
            if self._path != ":memory:":
                Path(self._path).parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(
                self._path, timeout=30.0, isolation_level=None, check_same_thread=False
            )
            if self._path != ":memory:":
                conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute(_SCHEMA)
            for statement in _BATCH_SCHEMA:
                conn.execute(statement)
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"{self._path}: cannot open LLM cache: {exc}") from exc
        self._conn: sqlite3.Connection | None = conn

    @property
    def path(self) -> str:
        return self._path

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StoreError(f"{self._path}: LLM cache is closed")
        return self._conn

    def get(self, key: str) -> CachedSample | None:
        return self.get_many([key]).get(key)

    def get_many(self, keys: Sequence[str]) -> dict[str, CachedSample]:
        """The cached samples among ``keys`` (missing keys are simply absent)."""
        found: dict[str, CachedSample] = {}
        unique = list(dict.fromkeys(keys))
        with self._lock:
            conn = self._connection()
            for start in range(0, len(unique), _CHUNK):
                chunk = unique[start : start + _CHUNK]
                marks = ",".join("?" * len(chunk))
                rows = conn.execute(
                    "SELECT key, text, model, prompt_tokens, completion_tokens "
                    f"FROM samples WHERE key IN ({marks})",
                    chunk,
                ).fetchall()
                for key, text, model, prompt_tokens, completion_tokens in rows:
                    found[key] = CachedSample(
                        text=text,
                        model=model,
                        prompt_tokens=prompt_tokens,
                        completion_tokens=completion_tokens,
                    )
        return found

    def put(self, key: str, sample: CachedSample) -> None:
        self.put_many([(key, sample)])

    def put_many(self, items: Iterable[tuple[str, CachedSample]]) -> None:
        """Store samples in one transaction; a key already present keeps its first value."""
        now = time.time()
        rows = [
            (key, s.text, s.model, s.prompt_tokens, s.completion_tokens, now) for key, s in items
        ]
        if not rows:
            return
        with self._lock:
            conn = self._connection()
            try:
                conn.execute("BEGIN IMMEDIATE")
                conn.executemany("INSERT OR IGNORE INTO samples VALUES (?, ?, ?, ?, ?, ?)", rows)
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise StoreError(f"{self._path}: cannot write LLM cache: {exc}") from exc

    def _select(self, table: str, columns: str, keys: Sequence[str]) -> list[tuple[object, ...]]:
        unique = list(dict.fromkeys(keys))
        rows: list[tuple[object, ...]] = []
        with self._lock:
            conn = self._connection()
            for start in range(0, len(unique), _CHUNK):
                chunk = unique[start : start + _CHUNK]
                marks = ",".join("?" * len(chunk))
                rows.extend(
                    conn.execute(
                        f"SELECT key, {columns} FROM {table} WHERE key IN ({marks})", chunk
                    ).fetchall()
                )
        return rows

    def _write(self, statement: str, rows: Sequence[tuple[object, ...]]) -> int:
        """Run ``statement`` over ``rows`` in one transaction; the rows changed."""
        if not rows:
            return 0
        with self._lock:
            conn = self._connection()
            try:
                conn.execute("BEGIN IMMEDIATE")
                changed = conn.executemany(statement, rows).rowcount
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise StoreError(f"{self._path}: cannot write LLM cache: {exc}") from exc
        return max(0, changed)

    # -- batch mode sidecar tables ------------------------------------------------------

    def put_batch_requests(self, items: Iterable[tuple[str, str, str]]) -> None:
        """Remember exported samples: ``(key, purpose, request body JSON)``."""
        now = time.time()
        self._write(
            "INSERT OR IGNORE INTO batch_requests VALUES (?, ?, ?, ?)",
            [(key, purpose, body, now) for key, purpose, body in items],
        )

    def batch_requests(self, keys: Sequence[str]) -> dict[str, tuple[str, str]]:
        """``{key: (purpose, request body JSON)}`` of the exported samples among ``keys``."""
        return {
            str(key): (str(purpose), str(body))
            for key, purpose, body in self._select("batch_requests", "purpose, body", keys)
        }

    def put_batch_failures(self, items: Iterable[tuple[str, BatchFailureRecord]]) -> None:
        """Record samples a batch answered with an error (a later record replaces one)."""
        now = time.time()
        self._write(
            "INSERT OR REPLACE INTO batch_failures VALUES (?, ?, ?, ?, ?)",
            [(key, f.message, f.status, f.source, now) for key, f in items],
        )

    def batch_failures(self, keys: Sequence[str]) -> dict[str, BatchFailureRecord]:
        """The recorded batch failures among ``keys``."""
        out: dict[str, BatchFailureRecord] = {}
        for key, message, status, source in self._select(
            "batch_failures", "message, status, source", keys
        ):
            out[str(key)] = BatchFailureRecord(
                message=str(message),
                status=status if isinstance(status, int) else None,
                source=str(source),
            )
        return out

    def delete_batch_failures(self, keys: Sequence[str]) -> int:
        """Forget the failures of ``keys`` (answered since, or to be exported again)."""
        return self._write("DELETE FROM batch_failures WHERE key = ?", [(k,) for k in keys])

    def __len__(self) -> int:
        with self._lock:
            row = self._connection().execute("SELECT COUNT(*) FROM samples").fetchone()
        return int(row[0])

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> ResponseCache:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
