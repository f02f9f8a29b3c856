"""``ragtriage diagnose``: rules and LLM judges (the LLM over the local HTTP server),
valid diagnoses.jsonl, resume, dry run, configuration and input errors (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from diag_helpers import judge_reply, make_trace, server_reply
from llm_server import LocalLLMServer
from ragtriage.cli import main
from ragtriage.formats import validate_file
from ragtriage.jsonl import read_records, write_jsonl
from ragtriage.records import AnswerLabel, Diagnosis, ErrorType, Stage, Trace

REF = ["Acme Corp was founded in 1999"]


@pytest.fixture(autouse=True)
def _no_llm_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("RAGTRIAGE_LLM_BASE_URL", "RAGTRIAGE_LLM_MODEL", "RAGTRIAGE_LLM_API_KEY"):
        monkeypatch.delenv(var, raising=False)


def _traces() -> list[Trace]:
    return [
        make_trace(example_id="ok", references=REF, answer="Acme Corp was founded in 1999."),
        make_trace(example_id="ret", references=REF),
        make_trace(
            example_id="gen",
            references=REF,
            retrieved=["gd_0", "od_0"],
            reranked=["gd_0"],
            context=["gd_0"],
        ),
    ]


def _run_dir(tmp_path: Path, traces: list[Trace] | None = None) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    write_jsonl(run / "traces.jsonl", traces if traces is not None else _traces())
    return run


def _cli(*args: str) -> int:
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    code = exc.value.code
    return 0 if code is None else int(code)


def _llm_args(server: LocalLLMServer, tmp_path: Path) -> list[str]:
    return [
        "--judge",
        "llm",
        "--base-url",
        server.base_url,
        "--model",
        "judge-model",
        "--cache",
        str(tmp_path / "cache.sqlite"),
        "--no-progress",
    ]


def test_llm_judge_writes_valid_diagnoses(
    llm_server: LocalLLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    llm_server.behaviour.reply = server_reply(judge_reply(correct_if="1999"))  # type: ignore[assignment]
    run = _run_dir(tmp_path)
    out = tmp_path / "out"
    assert _cli("diagnose", str(run), *_llm_args(llm_server, tmp_path), "--out", str(out)) == 0
    path = out / "diagnoses.jsonl"
    assert validate_file(path, "diagnoses") == 3
    by_id = {d.example_id: d for d in read_records(path, Diagnosis)}
    assert by_id["ok"].answer_label is AnswerLabel.CORRECT and not by_id["ok"].needs_diagnosis
    assert by_id["ret"].stage is Stage.RETRIEVAL and by_id["ret"].error_type is ErrorType.E4
    assert by_id["gen"].stage is Stage.GENERATION and by_id["gen"].error_type is ErrorType.E13
    assert all(d.judge == "llm" for d in by_id.values())
    printed = capsys.readouterr().out
    assert "Error types" in printed and "Mode frequency" in printed
    assert "this session:" in printed and "LLM calls" in printed


def test_resume_skips_done_examples_and_repairs_a_torn_line(
    llm_server: LocalLLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    llm_server.behaviour.reply = server_reply(judge_reply())  # type: ignore[assignment]
    run = _run_dir(tmp_path)
    args = ["diagnose", str(run), *_llm_args(llm_server, tmp_path), "--no-cache"]
    assert _cli(*args) == 0
    served = llm_server.chat_requests
    capsys.readouterr()
    # everything done: a second run makes no call and keeps the file
    assert _cli(*args) == 0
    assert llm_server.chat_requests == served
    assert "resuming: 3 of 3 already diagnosed" in capsys.readouterr().out
    # a crash mid-write leaves a torn last line: that example is diagnosed again
    path = run / "diagnoses.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    torn_id = json.loads(lines[-1])["example_id"]
    path.write_text("".join(lines[:-1]) + lines[-1][:25], encoding="utf-8")
    assert _cli(*args) == 0
    assert validate_file(path, "diagnoses") == 3
    assert llm_server.chat_requests > served
    ids = [d.example_id for d in read_records(path, Diagnosis)]
    assert sorted(ids) == ["gen", "ok", "ret"] and ids[-1] == torn_id


def test_dry_run_estimates_and_writes_nothing(
    llm_server: LocalLLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _run_dir(tmp_path)
    assert _cli("diagnose", str(run), *_llm_args(llm_server, tmp_path), "--dry-run") == 0
    printed = capsys.readouterr().out
    assert "dry run: about" in printed and "LLM calls" in printed
    assert llm_server.chat_requests == 0
    assert not (run / "diagnoses.jsonl").exists()
    assert not (tmp_path / "cache.sqlite").exists()  # a dry run creates no cache file


def test_rules_judge_on_a_traces_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _run_dir(tmp_path)
    out = tmp_path / "rules"
    code = _cli(
        "diagnose",
        str(run / "traces.jsonl"),
        "--out",
        str(out),
        "-k",
        "5",
        "--strategy",
        "stage-sequential",
        "--no-progress",
    )
    assert code == 0
    diags = list(read_records(out / "diagnoses.jsonl", Diagnosis))
    assert len(diags) == 3 and all(d.strategy == "stage-sequential" for d in diags)
    assert all(len(d.votes) == 5 for d in diags if d.needs_diagnosis and d.stage is not None)
    assert "Answer evaluation" in capsys.readouterr().out


def test_llm_judge_without_endpoint_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _run_dir(tmp_path)
    assert _cli("diagnose", str(run), "--judge", "llm") == 2
    assert "RAGTRIAGE_LLM_BASE_URL" in capsys.readouterr().err


def test_bad_input_exits_2_naming_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _run_dir(tmp_path)
    with (run / "traces.jsonl").open("a", encoding="utf-8") as fh:
        fh.write('{"trace_id": "t9", "example": {"example_id": "x"}}\n')
    assert _cli("diagnose", str(run), "--no-progress") == 2
    err = capsys.readouterr().err
    assert "traces.jsonl:4" in err and "example.query" in err
    assert _cli("diagnose", str(tmp_path / "missing")) == 2
    assert _cli("diagnose", str(run), "--strategy", "sideways") == 2


def test_duplicate_example_ids_are_rejected(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    t = make_trace(example_id="same")
    run = _run_dir(tmp_path, [t, t.model_copy(update={"trace_id": "other"})])
    assert _cli("diagnose", str(run), "--no-progress") == 2
    assert "duplicate example id 'same'" in capsys.readouterr().err


def test_an_unreachable_llm_endpoint_exits_1_and_the_examples_can_be_retried(
    llm_server: LocalLLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import socket

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    cfg = tmp_path / "llm.yaml"
    cfg.write_text("llm: {max_retries: 0, timeout_s: 5}\n", encoding="utf-8")
    run = _run_dir(tmp_path)
    cache = str(tmp_path / "cache.sqlite")
    common = ["--judge", "llm", "--model", "m", "--cache", cache, "--no-progress"]
    down = ["diagnose", str(run), *common, "--config", str(cfg)]
    assert _cli(*down, "--base-url", f"http://127.0.0.1:{port}/v1") == 1
    assert "LLM request(s) failed" in capsys.readouterr().err
    path = run / "diagnoses.jsonl"
    assert all(d.undetermined for d in read_records(path, Diagnosis))
    # the endpoint is back: a plain resume keeps the undetermined ones ...
    llm_server.behaviour.reply = server_reply(judge_reply(correct_if="1999"))  # type: ignore[assignment]
    assert _cli(*down, "--base-url", llm_server.base_url) == 0
    assert llm_server.chat_requests == 0
    # ... and --retry-undetermined diagnoses them again
    assert _cli(*down, "--base-url", llm_server.base_url, "--retry-undetermined") == 0
    assert llm_server.chat_requests > 0
    redone = {d.example_id: d for d in read_records(path, Diagnosis)}
    assert sorted(redone) == ["gen", "ok", "ret"]
    assert redone["ret"].stage is Stage.RETRIEVAL and not redone["ret"].undetermined


def test_resume_keeps_the_lines_after_a_corrupt_one_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _run_dir(tmp_path)
    assert _cli("diagnose", str(run), "--no-progress") == 0
    path = run / "diagnoses.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    broken_id = json.loads(lines[1])["example_id"]
    path.write_text(lines[0] + '{"broken": \n' + lines[2], encoding="utf-8")
    capsys.readouterr()
    assert _cli("diagnose", str(run), "--no-progress") == 0
    out = capsys.readouterr().out
    assert "dropped 1 unreadable line(s)" in out and "(line 2)" in out
    assert "1 new, 3 total" in out
    ids = [d.example_id for d in read_records(path, Diagnosis)]
    assert sorted(ids) == ["gen", "ok", "ret"] and ids[-1] == broken_id


def _traces_file(tmp_path: Path, traces: list[Trace] | None = None, name: str = "t") -> Path:
    src = tmp_path / "exported"
    src.mkdir(exist_ok=True)
    path = src / f"{name}.jsonl"
    write_jsonl(path, traces if traces is not None else _traces())
    return path


def _rules(*args: str) -> int:
    return _cli("diagnose", *args, "--no-progress", "--workers", "1")


def test_a_diagnosed_traces_file_is_a_run_that_report_reads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import hashlib

    src = _traces_file(tmp_path)
    out = tmp_path / "runs" / "mine"
    assert _rules(str(src), "--out", str(out)) == 0
    printed = capsys.readouterr().out
    assert f"traces copied from {src}" in printed
    # the traces are copied byte for byte, the manifest says where they came from
    assert (out / "traces.jsonl").read_bytes() == src.read_bytes()
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    origin = manifest["traces_from"]
    assert manifest["kind"] == "diagnosed" and manifest["run_id"] == "run1"
    assert origin["path"] == str(src.resolve()) and origin["traces"] == 3
    assert origin["sha256"] == hashlib.sha256(src.read_bytes()).hexdigest()
    assert "ragtriage run" in origin["how"]
    # the run stays whole when the folders move: nothing points back at the source
    moved = tmp_path / "elsewhere"
    out.rename(moved)
    src.unlink()
    assert _cli("report", str(moved)) == 0
    html = (moved / "report.html").read_text(encoding="utf-8")
    assert f"copied from {src.resolve()}" in html and "run1" in html
    # diagnosing the same file into it again resumes and keeps the manifest
    write_jsonl(src, _traces())
    before = (moved / "manifest.json").read_bytes()
    capsys.readouterr()
    assert _rules(str(src), "--out", str(moved)) == 0
    assert "resuming: 3 of 3 already diagnosed" in capsys.readouterr().out
    assert (moved / "manifest.json").read_bytes() == before


def test_out_holding_other_traces_is_refused_unless_diagnose_made_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = _traces_file(tmp_path, name="first")
    other = [t.model_copy(update={"run_id": "run-2"}) for t in _traces()[:2]]
    second = _traces_file(tmp_path, other, name="second")
    out = tmp_path / "d"
    assert _rules(str(first), "--out", str(out)) == 0
    capsys.readouterr()
    assert _rules(str(second), "--out", str(out)) == 2
    err = capsys.readouterr().err
    assert "already holds other traces" in err and "--overwrite" in err
    assert (out / "traces.jsonl").read_bytes() == first.read_bytes()
    # a run `diagnose` made is replaced whole with --overwrite
    assert _rules(str(second), "--out", str(out), "--overwrite") == 0
    assert (out / "traces.jsonl").read_bytes() == second.read_bytes()
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["run_id"] == "run-2" and manifest["traces_from"]["traces"] == 2
    assert {d.run_id for d in read_records(out / "diagnoses.jsonl", Diagnosis)} == {"run-2"}
    assert _cli("report", str(out)) == 0


def test_out_equal_to_a_run_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _run_dir(tmp_path)
    manifest = {"schema": 1, "kind": "run", "run_id": "run-1", "config": {"k": 1}}
    (run / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    kept = (run / "manifest.json").read_bytes()
    # the run's own traces file, or a byte-identical copy: diagnosed there, nothing added
    assert _rules(str(run / "traces.jsonl"), "--out", str(run)) == 0
    copy = _traces_file(tmp_path)
    assert copy.read_bytes() == (run / "traces.jsonl").read_bytes()
    assert _rules(str(copy), "--out", str(run)) == 0
    assert (run / "manifest.json").read_bytes() == kept
    assert sorted(p.name for p in run.iterdir() if not p.name.startswith(".")) == [
        "diagnoses.jsonl",
        "manifest.json",
        "traces.jsonl",
    ]
    # other traces never replace a run's, --overwrite or not
    capsys.readouterr()
    other = _traces_file(tmp_path, _traces()[:1], name="other")
    for extra in ((), ("--overwrite",)):
        assert _rules(str(other), "--out", str(run), *extra) == 2
        assert "a run directory's traces are never replaced" in capsys.readouterr().err
    assert len(list(read_records(run / "diagnoses.jsonl", Diagnosis))) == 3
    # a run diagnosed into another folder: its manifest (config) goes with the copy
    elsewhere = tmp_path / "copy"
    assert _rules(str(run), "--out", str(elsewhere)) == 0
    copied = json.loads((elsewhere / "manifest.json").read_text(encoding="utf-8"))
    assert copied["config"] == {"k": 1} and copied["kind"] == "run"
    assert copied["traces_from"]["run_dir"] == str(run.resolve())


def test_a_run_diagnosed_in_place_is_left_as_it_was(tmp_path: Path) -> None:
    run = _run_dir(tmp_path)
    assert _rules(str(run)) == 0
    assert sorted(p.name for p in run.iterdir() if not p.name.startswith(".")) == [
        "diagnoses.jsonl",
        "traces.jsonl",
    ]
    # no manifest: report reads the run from its files and says so
    assert _cli("report", str(run)) == 0
    html = (run / "report.html").read_text(encoding="utf-8")
    assert "none, read from the files" in html


def test_diagnoses_left_without_traces_are_refused_then_completed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # what `diagnose FILE --out DIR` used to leave: diagnoses.jsonl alone
    src = _traces_file(tmp_path)
    legacy = tmp_path / "legacy"
    assert _rules(str(src), "--out", str(legacy)) == 0
    (legacy / "traces.jsonl").unlink()
    (legacy / "manifest.json").unlink()
    capsys.readouterr()
    assert _cli("report", str(legacy)) == 2
    err = capsys.readouterr().err
    assert "diagnoses.jsonl but no traces.jsonl" in err and "--out DIR" in err
    # diagnosing the traces into it again resumes the diagnoses and completes the run
    assert _rules(str(src), "--out", str(legacy)) == 0
    assert "resuming: 3 of 3" in capsys.readouterr().out
    assert _cli("report", str(legacy)) == 0


def test_dry_run_into_a_new_folder_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = _traces_file(tmp_path)
    out = tmp_path / "new"
    assert _rules(str(src), "--out", str(out), "--dry-run") == 0
    assert "would copy" in capsys.readouterr().out
    assert not out.exists()


def test_a_traces_file_without_out_makes_its_folder_a_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = _traces_file(tmp_path)
    assert _rules(str(src)) == 0
    folder = src.parent
    assert (folder / "traces.jsonl").read_bytes() == src.read_bytes()
    assert json.loads((folder / "manifest.json").read_text(encoding="utf-8"))["traces_from"]
    assert _cli("report", str(folder)) == 0
    # a second traces file there would mix two runs: refused, naming --out
    other = _traces_file(tmp_path, _traces()[:1], name="other")
    capsys.readouterr()
    assert _rules(str(other)) == 2
    assert "pass --overwrite" in capsys.readouterr().err
