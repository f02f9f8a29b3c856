"""Batch mode of the commands (--llm-batch-out / --llm-batch-in / --llm-batch-submit)
on a few demo-corpus traces: export -> answers by a scripted replier -> import -> ...
-> complete run, identical to the same replies served live by the local HTTP server;
and --llm-batch-submit against the local Batch API server, resumed after a kill."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from batch_server import LocalBatchServer, answer_lines
from diag_helpers import judge_reply, server_reply
from llm_server import LocalLLMServer, last_user
from metrics_helpers import metrics_reply
from ragtriage.cli import main

Reply = Callable[[dict[str, Any], int], str]

RUN_CFG = """\
name: batch-test
chunking: {strategy: sentence, size: 128, overlap: 0}
embedding: {model: hash}
retrieval: {mode: hybrid_rrf, top_k: 20, rrf_k: 60}
rerank: {method: lexical, top_k: 5}
generation: {backend: extractive, max_context_tokens: 1500}
"""


@pytest.fixture(autouse=True)
def _no_llm_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("RAGTRIAGE_LLM_BASE_URL", "RAGTRIAGE_LLM_MODEL", "RAGTRIAGE_LLM_API_KEY"):
        monkeypatch.delenv(var, raising=False)


def _cli(*args: str) -> int:
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    code = exc.value.code
    return 0 if code is None else int(code)


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A run over the first 4 demo questions (hash embedder, extractive generator)."""
    tmp = tmp_path_factory.mktemp("demo")
    cfg = tmp / "cfg.yaml"
    cfg.write_text(RUN_CFG, encoding="utf-8")
    run = tmp / "run"
    assert (
        _cli(
            "run",
            "--demo",
            "--config",
            str(cfg),
            "--out",
            str(run),
            "--limit",
            "4",
            "--no-progress",
        )
        == 0
    )
    (run / "diagnoses.jsonl").unlink(missing_ok=True)
    yield run


def critic_reply(body: dict[str, Any], index: int) -> str:
    """A deterministic critic: Error with tags for the questions about the CFO, else
    Correct."""
    question = last_user(body).split("**Question:**")[1].split("**Passage:**")[0]
    if "CFO" in question:
        return json.dumps(
            {
                "Judgement": "Error",
                "Error analysis": "The interim CFO is not named.",
                "tag1": ["Incomplete Information"],
                "tag2": ["Omission of Key Information"],
                "tag3": ["Missing name"],
            }
        )
    return '{"Judgement": "Correct"}'


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def _batch_rounds(
    args: list[str],
    batch_dir: Path,
    done: Path,
    reply: Reply,
    capsys: pytest.CaptureFixture[str],
    *,
    max_rounds: int = 12,
) -> int:
    """Run ``args`` in batch mode round after round, answering each round's requests
    with ``reply`` (as a Batch API output file), until ``done`` is written. Each round
    that stops must have written nothing but the requests. Returns the rounds run."""
    inputs: list[str] = []
    for round_no in range(1, max_rounds + 1):
        assert _cli(*args, "--llm-batch-out", str(batch_dir), *inputs) == 0
        printed = capsys.readouterr().out
        if done.exists():
            assert "still need an answer" not in printed
            return round_no
        assert "nothing else was written" in printed
        requests = _lines(batch_dir / "requests.jsonl")
        assert len({r["custom_id"] for r in requests}) == len(requests) > 0
        answers, _ = answer_lines(requests, reply)
        out = batch_dir / f"out-{round_no}.jsonl"
        out.write_text("".join(json.dumps(a) + "\n" for a in answers), encoding="utf-8")
        inputs = ["--llm-batch-in", str(out)]
    raise AssertionError(f"not done after {max_rounds} rounds")


def _without(rows: list[dict[str, Any]], *keys: str) -> list[dict[str, Any]]:
    """Rows without what differs between a live run and one served from the cache
    (calls paid now versus served from the cache), in example order (the LLM judge
    appends diagnoses as they complete)."""
    return sorted(
        ({k: v for k, v in r.items() if k not in keys} for r in rows),
        key=lambda r: str(r["example_id"]),
    )


def _cache_texts(path: Path) -> dict[str, str]:
    import sqlite3

    with sqlite3.connect(str(path)) as conn:
        return dict(conn.execute("SELECT key, text FROM samples").fetchall())


def test_critic_batch_round_trip_equals_live(
    demo_run: Path,
    llm_server: LocalLLMServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    llm_server.behaviour.reply = critic_reply
    base = ["critic", str(demo_run), "--critic", "llm", "--model", "critic-model"]
    live = [*base, "--base-url", llm_server.base_url, "--cache", str(tmp_path / "live.sqlite")]
    assert _cli(*live, "--out", str(tmp_path / "live")) == 0
    capsys.readouterr()
    batch = [*base, "--cache", str(tmp_path / "b.sqlite"), "--out", str(tmp_path / "b")]
    rounds = _batch_rounds(
        batch, tmp_path / "batch", tmp_path / "b" / "critic.jsonl", critic_reply, capsys
    )
    assert rounds == 2
    got = _lines(tmp_path / "b" / "critic.jsonl")
    assert got == _lines(tmp_path / "live" / "critic.jsonl")
    assert {r["judgement"] for r in got} == {"error", "correct"}
    assert _cache_texts(tmp_path / "b.sqlite") == _cache_texts(tmp_path / "live.sqlite")


SAMPLES = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "rag_critic_samples"


def bench_reply(body: dict[str, Any], index: int) -> str:
    """Error for every other question (by its length), else Correct."""
    question = last_user(body).split("**Question:**")[1].split("**Passage:**")[0]
    if len(question) % 2:
        return json.dumps(
            {
                "Judgement": "Error",
                "Error analysis": "The answer names the wrong person.",
                "tag1": ["Erroneous Information"],
                "tag2": ["Incorrect Entity"],
                "tag3": ["Wrong person"],
            }
        )
    return '{"Judgement": "Correct"}'


@pytest.mark.skipif(not SAMPLES.is_dir(), reason="../shared/data/rag_critic_samples not present")
def test_critic_bench_batch_round_trip_equals_live(
    llm_server: LocalLLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    llm_server.behaviour.reply = bench_reply
    base = [
        "critic-bench",
        str(SAMPLES / "critic_qwen-2.5-7b-instruct_nq_train.jsonl"),
        "--format",
        "rag-critic",
        "--critic",
        "llm",
        "--model",
        "critic-model",
    ]
    live = [*base, "--base-url", llm_server.base_url, "--cache", str(tmp_path / "live.sqlite")]
    assert _cli(*live, "--json", str(tmp_path / "live.json")) == 0
    capsys.readouterr()
    batch = [*base, "--cache", str(tmp_path / "b.sqlite"), "--json", str(tmp_path / "b.json")]
    rounds = _batch_rounds(batch, tmp_path / "batch", tmp_path / "b.json", bench_reply, capsys)
    assert rounds == 2
    assert json.loads((tmp_path / "b.json").read_text(encoding="utf-8")) == json.loads(
        (tmp_path / "live.json").read_text(encoding="utf-8")
    )
    assert _cache_texts(tmp_path / "b.sqlite") == _cache_texts(tmp_path / "live.sqlite")
    # the rules critic calls no LLM: the batch options are an error there
    rules = [*base[:5], "rules", "--llm-batch-out", str(tmp_path / "d")]
    assert _cli(*rules) == 2


def eval_reply(body: dict[str, Any], index: int) -> str:
    """The metrics helpers' scripted judge; a prompt it does not know gets "{}" (an
    unusable verdict: the same undetermined score live and in batch mode)."""
    try:
        return metrics_reply(body, index)
    except (IndexError, KeyError, ValueError):
        return "{}"


def test_evaluate_batch_round_trip_equals_live(
    demo_run: Path,
    llm_server: LocalLLMServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    llm_server.behaviour.reply = eval_reply
    base = ["evaluate", str(demo_run), "--judge", "llm", "--model", "judge-model"]
    base += ["--embedder", "hash", "--no-g-eval", "--resamples", "50"]
    live = [*base, "--base-url", llm_server.base_url, "--cache", str(tmp_path / "live.sqlite")]
    assert _cli(*live, "--out", str(tmp_path / "live")) == 0
    capsys.readouterr()
    batch = [*base, "--cache", str(tmp_path / "b.sqlite"), "--out", str(tmp_path / "b")]
    rounds = _batch_rounds(
        batch, tmp_path / "batch", tmp_path / "b" / "scores.jsonl", eval_reply, capsys
    )
    assert rounds >= 2  # one more for each judge that builds on an earlier answer
    for name in ("scores.jsonl", "metrics.json"):
        assert (tmp_path / "b" / name).read_text() == (tmp_path / "live" / name).read_text()
    rows = _lines(tmp_path / "b" / "scores.jsonl")
    assert all(isinstance(r["scores"]["faithfulness"]["value"], float) for r in rows)
    assert _cache_texts(tmp_path / "b.sqlite") == _cache_texts(tmp_path / "live.sqlite")


def label_reply(body: dict[str, Any], index: int) -> str:
    label = "reasoning" if "Who " in last_user(body) else "fact_single"
    return json.dumps({"label_name": label, "reason": f"seed {body.get('seed')}"})


def test_label_batch_round_trip_equals_live(
    llm_server: LocalLLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    llm_server.behaviour.reply = label_reply
    base = ["label", "demo", "--labeller", "llm", "--limit", "4", "-k", "3"]
    cfg = tmp_path / "llm.yaml"
    cfg.write_text("llm: {model: labeller}\n", encoding="utf-8")
    base += ["--config", str(cfg)]
    live_cfg = tmp_path / "live.yaml"
    live_cfg.write_text(f"llm: {{model: labeller, base_url: '{llm_server.base_url}'}}\n")
    live = [*base[:-2], "--config", str(live_cfg), "--cache", str(tmp_path / "live.sqlite")]
    assert _cli(*live, "--out", str(tmp_path / "live")) == 0
    capsys.readouterr()
    batch = [*base, "--cache", str(tmp_path / "b.sqlite"), "--out", str(tmp_path / "b")]
    rounds = _batch_rounds(
        batch, tmp_path / "batch", tmp_path / "b" / "labels.jsonl", label_reply, capsys
    )
    assert rounds == 2
    got = _lines(tmp_path / "b" / "labels.jsonl")
    assert got == _lines(tmp_path / "live" / "labels.jsonl")
    assert {r["label"] for r in got} == {"reasoning", "fact_single"}


def mine_reply(body: dict[str, Any], index: int) -> str:
    prompt = last_user(body)
    if "Golden Answer" in prompt:
        return '{"Judgement": "incorrect", "Error analysis": "The answer misses the point."}'
    if "tagging system" in prompt:
        return (
            '[{"tag": "Missing Point", "explanation": "x"}, {"tag": "Vague", "explanation": "y"}]'
        )
    return "Incomplete Answers"


def test_mine_batch_rounds_follow_the_cascade(
    demo_run: Path, llm_server: LocalLLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    llm_server.behaviour.reply = mine_reply
    base = ["mine", str(demo_run), "--on", "tags", "--llm", "--model", "m", "--embedding", "hash"]
    base += ["--clusters", "2"]
    live = [*base, "--base-url", llm_server.base_url, "--cache", str(tmp_path / "live.sqlite")]
    assert _cli(*live, "--out", str(tmp_path / "live.yaml")) == 0
    capsys.readouterr()
    batch = [*base, "--cache", str(tmp_path / "b.sqlite"), "--out", str(tmp_path / "b.yaml")]
    rounds = _batch_rounds(batch, tmp_path / "batch", tmp_path / "b.yaml", mine_reply, capsys)
    # rationales, then tags, then the cluster names (asked only once the tags are known)
    assert rounds == 4
    assert (tmp_path / "b.yaml").read_text() == (tmp_path / "live.yaml").read_text()
    assert "Incomplete Answers" in (tmp_path / "b.yaml").read_text()
    assert _cache_texts(tmp_path / "b.sqlite") == _cache_texts(tmp_path / "live.sqlite")


def test_mine_analyses_batch_names_clusters_in_one_round(
    demo_run: Path, llm_server: LocalLLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def reply(body: dict[str, Any], index: int) -> str:
        assert "error analyses" in last_user(body)
        return "Cut Sentence Answers"

    llm_server.behaviour.reply = reply
    base = ["mine", str(demo_run), "--llm", "--model", "m", "--embedding", "hash"]
    base += ["--clusters", "3"]
    live = [*base, "--base-url", llm_server.base_url, "--cache", str(tmp_path / "live.sqlite")]
    assert _cli(*live, "--out", str(tmp_path / "live.yaml")) == 0
    capsys.readouterr()
    batch = [*base, "--cache", str(tmp_path / "b.sqlite"), "--out", str(tmp_path / "b.yaml")]
    rounds = _batch_rounds(batch, tmp_path / "batch", tmp_path / "b.yaml", reply, capsys)
    assert rounds == 2  # the cluster names, then the taxonomy
    assert (tmp_path / "b.yaml").read_text() == (tmp_path / "live.yaml").read_text()
    assert "Cut Sentence Answers" in (tmp_path / "b.yaml").read_text()


def planner_reply(body: dict[str, Any], index: int) -> str:
    return "```python\nanswer = GenerateAnswer(query, docs + Retrieval(query, 3))\n```"


def test_correct_batch_rounds_plan_attempt_after_attempt(
    demo_run: Path, llm_server: LocalLLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    llm_server.behaviour.reply = planner_reply
    base = ["correct", str(demo_run), "--planner", "llm", "--model", "planner"]
    base += ["--iterations", "2"]
    live = [*base, "--base-url", llm_server.base_url, "--cache", str(tmp_path / "live.sqlite")]
    assert _cli(*live, "--out", str(tmp_path / "live")) == 0
    capsys.readouterr()
    batch = [*base, "--cache", str(tmp_path / "b.sqlite"), "--out", str(tmp_path / "b")]
    rounds = _batch_rounds(
        batch, tmp_path / "batch", tmp_path / "b" / "traces.jsonl", planner_reply, capsys
    )
    assert rounds >= 2
    assert _cache_texts(tmp_path / "b.sqlite") == _cache_texts(tmp_path / "live.sqlite")

    def attempts(path: Path) -> list[Any]:
        return [t["metadata"].get("correction") for t in _lines(path / "traces.jsonl")]

    assert attempts(tmp_path / "b") == attempts(tmp_path / "live")
    assert any(a for a in attempts(tmp_path / "b"))


def test_testset_batch_round_trip_equals_live(
    llm_server: LocalLLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from test_know_testset import _scripted

    reply: Reply = _scripted()  # type: ignore[assignment]
    llm_server.behaviour.reply = reply
    base = ["testset", "--demo", "--limit", "4", "--no-progress", "--dedup", "100"]
    base += ["--mix", "fact_single:0.5,summary:0.5", "--generator", "llm", "--critic", "llm"]
    cfg = tmp_path / "llm.yaml"
    cfg.write_text("llm: {model: m}\n", encoding="utf-8")
    live_cfg = tmp_path / "live.yaml"
    live_cfg.write_text(f"llm: {{model: m, base_url: '{llm_server.base_url}'}}\n")
    live = [*base, "--config", str(live_cfg), "--cache", str(tmp_path / "live.sqlite")]
    assert _cli(*live, "--out", str(tmp_path / "live")) == 0
    capsys.readouterr()
    batch = [*base, "--config", str(cfg), "--cache", str(tmp_path / "b.sqlite")]
    batch += ["--out", str(tmp_path / "b")]
    rounds = _batch_rounds(
        batch, tmp_path / "batch", tmp_path / "b" / "labels.jsonl", reply, capsys
    )
    assert rounds > 2
    for name in ("examples.jsonl", "labels.jsonl", "rejected.jsonl"):
        assert _lines(tmp_path / "b" / name) == _lines(tmp_path / "live" / name), name
    assert len(_lines(tmp_path / "b" / "examples.jsonl")) == 4


def test_diagnose_batch_rounds_follow_the_cascade_and_equal_live(
    demo_run: Path, llm_server: LocalLLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reply: Reply = server_reply(judge_reply())  # type: ignore[assignment]
    llm_server.behaviour.reply = reply
    base = ["diagnose", str(demo_run), "--judge", "llm", "--model", "judge-model"]
    base += ["--no-progress"]
    live = [*base, "--base-url", llm_server.base_url, "--cache", str(tmp_path / "live.sqlite")]
    assert _cli(*live, "--out", str(tmp_path / "live")) == 0
    capsys.readouterr()
    batch = [*base, "--cache", str(tmp_path / "b.sqlite"), "--out", str(tmp_path / "b")]
    done = tmp_path / "b" / "diagnoses.jsonl"
    rounds = _batch_rounds(batch, tmp_path / "batch", done, reply, capsys)
    assert rounds >= 3  # the answer evaluation, then the later steps of the cascade
    # every request answered: the requests file is gone (it would be paid twice)
    assert sorted(p.name for p in (tmp_path / "batch").iterdir()) == [
        ".requests.lock",
        *(f"out-{i}.jsonl" for i in range(1, rounds)),
    ]
    live_rows = _lines(tmp_path / "live" / "diagnoses.jsonl")
    got = _lines(done)
    # the live run paid its calls; the batch run's final pass read them all from the cache
    assert sum(r["usage"]["calls"] for r in live_rows) > 0
    assert sum(r["usage"]["calls"] for r in got) == 0
    assert _without(got, "usage") == _without(live_rows, "usage")
    assert any(r["error_type"] for r in got) and not any(r["undetermined"] for r in got)
    assert _cache_texts(tmp_path / "b.sqlite") == _cache_texts(tmp_path / "live.sqlite")


def test_submit_runs_every_round_and_a_killed_run_resumes_the_same_batch(
    demo_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reply: Reply = server_reply(judge_reply())  # type: ignore[assignment]
    cfg = tmp_path / "poll.yaml"
    cfg.write_text("llm: {batch_poll_s: 0.05, max_retries: 0}\n", encoding="utf-8")
    with LocalBatchServer() as server:
        server.behaviour.reply = reply
        base = ["diagnose", str(demo_run), "--judge", "llm", "--model", "judge-model"]
        base += ["--no-progress", "--base-url", server.base_url, "--config", str(cfg)]
        live = [*base, "--cache", str(tmp_path / "live.sqlite"), "--out", str(tmp_path / "live")]
        assert _cli(*live) == 0
        batch_dir = tmp_path / "batch"
        args = [*base, "--cache", str(tmp_path / "b.sqlite"), "--out", str(tmp_path / "b")]
        args += ["--llm-batch-out", str(batch_dir), "--llm-batch-submit"]
        # the first run is killed while its batch is in progress
        server.hold = True
        proc = subprocess.Popen(
            [sys.executable, "-m", "ragtriage", *args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            deadline = time.monotonic() + 120
            state = batch_dir / "batch.json"
            while not (state.exists() and "batch_id" in state.read_text()):
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                assert time.monotonic() < deadline, "no batch was created"
                time.sleep(0.1)
            time.sleep(0.3)  # polling
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        assert server.batches_created == 1 and server.batch_status("batch_1") == "in_progress"
        assert not (tmp_path / "b" / "diagnoses.jsonl").exists()
        server.hold = False
        capsys.readouterr()
        # the same command again: polls batch_1 instead of paying twice, then the rounds
        assert _cli(*args) == 0
        printed = capsys.readouterr().out
        assert "resuming the batch" in printed and "batch round" in printed
        history = _lines(batch_dir / "batches.jsonl")
        assert [h["batch_id"] for h in history] == server.batch_ids()
        assert history[0]["batch_id"] == "batch_1" and len(history) >= 2  # rounds
        assert not (batch_dir / "batch.json").exists()
    got = _lines(tmp_path / "b" / "diagnoses.jsonl")
    assert _without(got, "usage") == _without(
        _lines(tmp_path / "live" / "diagnoses.jsonl"), "usage"
    )
    assert _cache_texts(tmp_path / "b.sqlite") == _cache_texts(tmp_path / "live.sqlite")


def generator_reply(body: dict[str, Any], index: int) -> str:
    question = last_user(body)
    return "Answer: Marcus Lindqvist. [1]" if "CFO" in question else "Answer: I don't know."


def _comparable(trace: dict[str, Any]) -> dict[str, Any]:
    """A trace without the run id, wall-clock latencies and calls paid (a live run pays,
    the batch run's final pass reads the cache)."""
    t = json.loads(json.dumps(trace))
    t.pop("run_id")
    for stage in t["stages"].values():
        for key in ("latency_ms", "calls", "prompt_tokens", "completion_tokens"):
            stage.pop(key, None)
    t["metadata"].get("generation", {}).pop("latency_ms", None)
    return t  # type: ignore[no-any-return]


def test_run_with_an_openai_generator_batch_round_trip_equals_live(
    llm_server: LocalLLMServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    llm_server.behaviour.reply = generator_reply
    gen = RUN_CFG.replace("generation: {backend: extractive,", "generation: {backend: openai,")
    # one config (its hash is in every trace); each run caches in its working directory
    cfg = tmp_path / "gen.yaml"
    cfg.write_text(gen + f"llm: {{model: gen, base_url: '{llm_server.base_url}'}}\n")
    base = ["run", "--demo", "--limit", "3", "--no-progress", "--config", str(cfg)]
    for where in ("live", "b"):
        (tmp_path / where).mkdir()
    monkeypatch.chdir(tmp_path / "live")
    assert _cli(*base, "--out", str(tmp_path / "live" / "run")) == 0
    capsys.readouterr()
    monkeypatch.chdir(tmp_path / "b")
    done = tmp_path / "b" / "run" / "traces.jsonl"
    batch = [*base, "--out", str(done.parent)]
    assert _batch_rounds(batch, tmp_path / "batch", done, generator_reply, capsys) == 2
    served = llm_server.chat_requests
    got = sorted(_lines(done), key=lambda t: str(t["trace_id"]))
    live_path = tmp_path / "live" / "run" / "traces.jsonl"
    live = sorted(_lines(live_path), key=lambda t: str(t["trace_id"]))
    assert [_comparable(t) for t in got] == [_comparable(t) for t in live]
    assert {t["answer"] for t in got} == {"Marcus Lindqvist. [1]", "I don't know."}
    cache = Path(".ragtriage") / "llm_cache.sqlite"
    assert _cache_texts(tmp_path / "b" / cache) == _cache_texts(tmp_path / "live" / cache)
    assert llm_server.chat_requests == served == 3  # the batch run called nothing


def test_failed_batch_lines_are_undetermined_not_exported_again(
    demo_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    batch_dir = tmp_path / "batch"
    args = ["critic", str(demo_run), "--critic", "llm", "--model", "critic-model"]
    args += ["--cache", str(tmp_path / "c.sqlite"), "--out", str(tmp_path / "b")]
    args += ["--llm-batch-out", str(batch_dir)]
    assert _cli(*args) == 0
    requests = _lines(batch_dir / "requests.jsonl")
    capsys.readouterr()

    def fails(body: dict[str, Any]) -> bool:
        return "CFO" in last_user(body).split("**Passage:**")[0]

    answers, errors = answer_lines(requests, critic_reply, fail_when=fails)
    assert answers and errors
    out = batch_dir / "out.jsonl"
    out.write_text("".join(json.dumps(r) + "\n" for r in [*answers, *errors]), encoding="utf-8")
    assert _cli(*args, "--llm-batch-in", str(out)) == 0
    printed = capsys.readouterr().out
    assert f"{len(errors)} failed" in printed and "cost 0.0000 at the batch price" in printed
    rows = _lines(tmp_path / "b" / "critic.jsonl")
    undetermined = [r for r in rows if r["judgement"] is None]
    assert len(undetermined) == len(errors)
    assert all("scripted failure" in r["undetermined_reason"] for r in undetermined)
    assert all("out.jsonl" in r["undetermined_reason"] for r in undetermined)
    # nothing is pending: the failed requests are not exported again, and the answered
    # ones leave the requests file (sent again they would be paid twice)
    assert not (batch_dir / "requests.jsonl").exists()
    (tmp_path / "b" / "critic.jsonl").unlink()
    assert _cli(*args, "--llm-batch-retry-failed") == 0
    assert "still need an answer" in capsys.readouterr().out
    again = _lines(batch_dir / "requests.jsonl")
    assert sorted(r["custom_id"] for r in again) == sorted(e["custom_id"] for e in errors)
    assert not (tmp_path / "b" / "critic.jsonl").exists()


def test_a_bad_output_file_exits_2_naming_file_and_line(
    demo_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "out.jsonl"
    bad.write_text('{"custom_id": "x", "error": {"message": "m"}}\n{"response": {}}\n')
    args = ["critic", str(demo_run), "--critic", "llm", "--model", "m"]
    args += ["--cache", str(tmp_path / "c.sqlite"), "--out", str(tmp_path / "b")]
    assert _cli(*args, "--llm-batch-out", str(tmp_path / "d"), "--llm-batch-in", str(bad)) == 2
    err = capsys.readouterr().err
    assert f"{bad}:2:custom_id" in err
    assert _cli(*args, "--llm-batch-submit") == 2  # needs --llm-batch-out
    assert "--llm-batch-submit needs --llm-batch-out" in capsys.readouterr().err
    rules = ["critic", str(demo_run), "--llm-batch-out", str(tmp_path / "d")]
    assert _cli(*rules) == 2  # the rules critic calls no LLM
    assert _cli(*args, "--llm-batch-out", str(tmp_path / "d"), "--dry-run") == 2


def test_imported_replies_serve_a_live_run_which_pays_only_the_rest(
    demo_run: Path, llm_server: LocalLLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    llm_server.behaviour.reply = critic_reply
    base = ["critic", str(demo_run), "--critic", "llm", "--model", "critic-model"]
    base += ["--cache", str(tmp_path / "c.sqlite"), "--out", str(tmp_path / "b")]
    assert _cli(*base, "--llm-batch-out", str(tmp_path / "batch")) == 0
    requests = _lines(tmp_path / "batch" / "requests.jsonl")
    answers, _ = answer_lines(requests[:2], critic_reply)  # half answered offline
    out = tmp_path / "out.jsonl"
    out.write_text("".join(json.dumps(a) + "\n" for a in answers), encoding="utf-8")
    capsys.readouterr()
    # without --llm-batch-out the command runs live, from the imported answers first
    live = [*base, "--base-url", llm_server.base_url, "--llm-batch-in", str(out)]
    assert _cli(*live) == 0
    assert "imported 2 new replies" in capsys.readouterr().out
    assert llm_server.chat_requests == len(requests) - 2
    assert len(_lines(tmp_path / "b" / "critic.jsonl")) == len(requests)
