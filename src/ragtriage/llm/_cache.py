"""A content-addressed SQLite cache of LLM samples: an LLM call is never paid twice.

One row per *sample*: the key is ``ChatRequest.cache_key(sample_index)``, so the K
samples of one prompt are K distinct rows, and asking for 10 votes after 5 were cached
only pays for the 5 missing ones. The database runs in WAL mode so several processes
(and threads) may share one file; the first answer stored for a key wins.
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

__all__ = ["DEFAULT_CACHE_PATH", "CachedSample", "ResponseCache"]

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
_CHUNK = 500  # stay well below SQLite's bound-parameter limit


class CachedSample(BaseModel):
    """One stored sample. Token counts are what the original call cost (informational)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str
    model: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0


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
