"""The SQLite run store and run-directory loading."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest

from _reportdata import dated_runs, make_diag, make_trace, sample_records, write_run
from ragtriage.cli import main
from ragtriage.errors import InputError, StoreError
from ragtriage.records import ErrorType, Stage
from ragtriage.store import RunStore, load_run_dir, read_diagnoses, resolve_run


def _run(tmp_path: Path, run_id: str = "r1", name: str | None = None) -> Path:
    traces, diags = sample_records()
    return write_run(tmp_path / run_id, run_id, traces, diags, name=name)


def test_load_run_dir(tmp_path: Path) -> None:
    run = load_run_dir(_run(tmp_path, name="baseline"))
    assert run.run_id == "r1" and run.name == "baseline"
    assert len(run.traces) == 10 and len(run.diagnoses) == 10
    assert run.config == {"chunking": {"strategy": "fixed"}}
    assert run.info()["config"] == "hash-r1"


def test_manifest_without_run_id_names_the_field(tmp_path: Path) -> None:
    root = _run(tmp_path)
    (root / "manifest.json").write_text(json.dumps({"created_at": "x"}), encoding="utf-8")
    with pytest.raises(InputError) as exc:
        load_run_dir(root)
    assert exc.value.field == "run_id" and str(exc.value.path).endswith("manifest.json")


def test_manifest_with_bad_json_names_the_line(tmp_path: Path) -> None:
    root = _run(tmp_path)
    (root / "manifest.json").write_text('{\n"run_id": "a",\n}', encoding="utf-8")
    with pytest.raises(InputError) as exc:
        load_run_dir(root)
    assert exc.value.line == 3


def test_duplicate_diagnosis_is_an_input_error(tmp_path: Path) -> None:
    p = tmp_path / "d.jsonl"
    d = make_diag("a", stage=Stage.RETRIEVAL, mode=ErrorType.E4)
    p.write_text(d.to_json() + "\n" + d.to_json() + "\n", encoding="utf-8")
    with pytest.raises(InputError) as exc:
        read_diagnoses(p)
    assert (exc.value.line, exc.value.field) == (2, "example_id")


def test_duplicate_trace_is_an_input_error(tmp_path: Path) -> None:
    t = make_trace("a")
    root = write_run(tmp_path / "r", "r", [t, t], None)
    with pytest.raises(InputError) as exc:
        load_run_dir(root, require_diagnoses=False)
    assert (exc.value.line, exc.value.field) == (2, "trace_id")


def test_missing_diagnoses_allowed_only_when_not_required(tmp_path: Path) -> None:
    traces, _ = sample_records()
    root = write_run(tmp_path / "r", "r", traces, None)
    with pytest.raises(InputError):
        load_run_dir(root)
    run = load_run_dir(root, require_diagnoses=False)
    assert run.diagnoses == () and not run.has_diagnoses


def test_add_is_idempotent_and_roundtrips(tmp_path: Path) -> None:
    run = load_run_dir(_run(tmp_path))
    with RunStore(tmp_path / "s.sqlite") as store:
        assert store.add_run(run).status == "added"
        assert store.add_run(run).status == "unchanged"
        back = store.get_run("r1")
        assert back.traces == run.traces
        assert back.diagnoses == run.diagnoses
        assert back.config == run.config and back.config_hash == "hash-r1"
        (info,) = store.list_runs()
        assert (info.traces, info.diagnoses) == (10, 10)
        assert info.summary is not None and info.summary.totals.failing == 4
    con = sqlite3.connect(tmp_path / "s.sqlite")
    assert con.execute("SELECT COUNT(*) FROM diagnoses").fetchone()[0] == 10
    assert con.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 1
    con.close()


def test_changed_run_replaces_the_old_rows(tmp_path: Path) -> None:
    run = load_run_dir(_run(tmp_path))
    fewer = replace(run, diagnoses=run.diagnoses[:3], traces=run.traces[:3])
    with RunStore(tmp_path / "s.sqlite") as store:
        store.add_run(run)
        assert store.add_run(fewer).status == "replaced"
        back = store.get_run("r1")
        assert len(back.diagnoses) == 3 and len(back.traces) == 3


def test_failed_import_rolls_back_and_keeps_the_previous_version(tmp_path: Path) -> None:
    run = load_run_dir(_run(tmp_path))
    t = make_trace("dup")
    broken = replace(run, traces=(t, t))  # duplicate primary key inside one import
    with RunStore(tmp_path / "s.sqlite") as store:
        store.add_run(run)
        with pytest.raises(StoreError, match="UNIQUE"):
            store.add_run(broken)
        back = store.get_run("r1")
        assert len(back.traces) == 10
        assert store.list_runs()[0].run_id == "r1"
    with RunStore(tmp_path / "t.sqlite") as store:
        with pytest.raises(StoreError, match="UNIQUE"):
            store.add_run(broken)
        assert store.list_runs() == []


def test_trend_orders_by_created_at(tmp_path: Path) -> None:
    b, a = dated_runs(tmp_path)
    with RunStore(tmp_path / "s.sqlite") as store:
        store.add_run(load_run_dir(b))
        store.add_run(load_run_dir(a))
        rows = store.trend()
        assert [r.run_id for r in rows] == ["a", "b"]
        assert rows[0].stage_shares["retrieval"] == 1.0
        assert rows[1].stage_shares["retrieval"] == 0.5
        assert rows[1].stage_counts["generation"] == 1
        assert rows[1].accuracy == 0.5
        assert [r.run_id for r in store.trend(["b"])] == ["b"]


def test_resolve_run_by_dir_or_id(tmp_path: Path) -> None:
    root = _run(tmp_path)
    sp = tmp_path / "s.sqlite"
    assert resolve_run(str(root), sp).run_id == "r1"
    with pytest.raises(InputError):
        resolve_run("r1", sp)  # no store yet
    with RunStore(sp) as store:
        store.add_run(load_run_dir(root))
    assert resolve_run("r1", sp).diagnoses == load_run_dir(root).diagnoses
    with pytest.raises(InputError, match="neither a run directory nor a run id"):
        resolve_run("nope", sp)


def test_store_opened_read_only_does_not_create_a_file(tmp_path: Path) -> None:
    with pytest.raises(InputError):
        RunStore(tmp_path / "none.sqlite", create=False)
    assert not (tmp_path / "none.sqlite").exists()


def test_runs_cli_add_list_trend(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _run(tmp_path)
    sp = str(tmp_path / "store" / "runs.sqlite")
    for argv, code in (
        (["runs", "add", str(root), "--store", sp], 0),
        (["runs", "add", str(root), "--store", sp], 0),
        (["runs", "list", "--store", sp], 0),
        (["runs", "trend", "--store", sp, "--json", str(tmp_path / "t.json")], 0),
    ):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == code, argv
    out = capsys.readouterr().out
    assert "added: r1 (10 traces, 10 diagnoses)" in out
    assert "unchanged: r1" in out
    assert "Stored runs" in out and "55.6%" in out
    assert "Failure stages over time" in out
    rows = json.loads((tmp_path / "t.json").read_text(encoding="utf-8"))
    assert rows[0]["run_id"] == "r1" and rows[0]["failing"] == 4


def test_runs_cli_list_without_store_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["runs", "list", "--store", str(tmp_path / "x.sqlite")])
    assert exc.value.code == 2
    assert "x.sqlite" in capsys.readouterr().err
