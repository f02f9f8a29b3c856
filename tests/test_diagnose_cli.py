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
