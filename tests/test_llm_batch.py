"""Batch mode of the LLM layer: export (Batch API request lines, exactly the live
bodies), merge, import of output files (tolerant; failures recorded), batch pricing,
and submission to a local Batch API server (real HTTP), resumed after a kill."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from batch_server import LocalBatchServer, answer_lines
from llm_server import LocalLLMServer
from ragtriage.config import LLMConfig
from ragtriage.errors import InputError, LLMError
from ragtriage.llm import (
    BatchCollector,
    BatchNextRound,
    BatchSession,
    ChatRequest,
    Completion,
    Ledger,
    LLMFailure,
    LLMRunner,
    OpenAICompatible,
    ResponseCache,
    ScriptedLLM,
    Usage,
    import_outputs,
    read_output_file,
    write_requests,
)
from ragtriage.llm._batch import BatchOnlyClient
from ragtriage.llm._batch_submit import HISTORY_FILE, STATE_FILE, BatchSubmitter

SCHEMA = {"title": "verdict", "type": "object", "properties": {"label": {"type": "string"}}}


def _request(n: int = 3, seed: int | None = 5) -> ChatRequest:
    return ChatRequest.of(
        "You judge.",
        "Is 1999 right?",
        temperature=0.7,
        max_tokens=20,
        n=n,
        seed=seed,
        json_schema=SCHEMA,
    )


def _batch_runner(cache: ResponseCache, collector: BatchCollector, model: str = "m") -> LLMRunner:
    return LLMRunner(BatchOnlyClient(model), LLMConfig(model=model), cache=cache, batch=collector)


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


async def test_exported_lines_are_the_bodies_the_live_client_posts(
    llm_server: LocalLLMServer, tmp_path: Path
) -> None:
    request = _request()
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        collector = BatchCollector(model="m")
        runner = _batch_runner(cache, collector)
        out = await runner.try_complete(request, purpose="judge")
        assert isinstance(out, LLMFailure) and out.kind == "batch_pending"
        lines = collector.lines()
    assert [line["custom_id"] for line in lines] == runner.sample_keys(request)
    assert {(line["method"], line["url"]) for line in lines} == {("POST", "/v1/chat/completions")}
    assert [line["body"]["seed"] for line in lines] == [5, 6, 7]
    # the live path over an endpoint that ignores n: one call with n=3 (its first
    # sample), then one call per missing sample with the runner's seeds
    llm_server.behaviour.ignore_n = True
    live = LLMRunner(OpenAICompatible(LLMConfig(base_url=llm_server.base_url, model="m")))
    try:
        got = await live.complete(request, purpose="judge")
    finally:
        await live.aclose()
    assert len(got.texts) == 3
    bodies = llm_server.bodies
    assert bodies[0].pop("n") == 3
    assert [line["body"] for line in lines] == bodies
    assert lines[0]["body"]["response_format"]["json_schema"]["schema"] == SCHEMA


async def test_a_sample_without_seed_and_the_schema_in_the_prompt(tmp_path: Path) -> None:
    collector = BatchCollector(model="m", schema_mode="prompt")
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        await _batch_runner(cache, collector).try_complete(_request(n=2, seed=None), purpose="p")
    first, second = (line["body"] for line in collector.lines())
    assert "seed" not in first and second["seed"] == 1  # the runner's seeds for seed=None
    assert "response_format" not in first
    assert "matching this JSON Schema" in first["messages"][-1]["content"]


async def test_requests_file_merges_without_duplicates_and_drops_answered(
    tmp_path: Path,
) -> None:
    out_dir = tmp_path / "batch"
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        first = BatchCollector(model="m")
        await _batch_runner(cache, first).try_complete(_request(), purpose="judge")
        assert write_requests(out_dir, first, cache).new == 3
        again = write_requests(out_dir, first, cache)
        assert (again.new, again.total, again.dropped) == (0, 3, 0)
        lines = [json.loads(x) for x in (out_dir / "requests.jsonl").read_text().splitlines()]
        # one sample answered since; another command adds a request
        answered = lines[0]["custom_id"]
        out, _ = answer_lines(lines[:1], lambda body, i: "yes")
        import_outputs([_write(tmp_path / "o.jsonl", out)], cache)
        second = BatchCollector(model="m")
        await _batch_runner(cache, second).try_complete(_request(n=1, seed=9), purpose="x")
        merged = write_requests(out_dir, second, cache)
    assert (merged.new, merged.total, merged.dropped) == (1, 3, 1)
    ids = [
        json.loads(x)["custom_id"] for x in (out_dir / "requests.jsonl").read_text().splitlines()
    ]
    assert answered not in ids and len(set(ids)) == 3
    assert ids[:2] == [line["custom_id"] for line in lines[1:]]  # order kept


async def test_import_is_tolerant_and_records_failures(tmp_path: Path) -> None:
    requests = [_request(n=1, seed=s) for s in range(5)]
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        collector = BatchCollector(model="m")
        runner = _batch_runner(cache, collector)
        for r in requests:
            await runner.try_complete(r, purpose="judge")
        write_requests(tmp_path / "b", collector, cache)
        k = [runner.sample_keys(r)[0] for r in requests]
        rows = [
            # the minimal line people answering offline write
            {
                "custom_id": k[0],
                "response": {
                    "status_code": 200,
                    "body": {"choices": [{"message": {"content": "minimal"}}]},
                },
            },
            {
                "id": "x",
                "custom_id": k[1],
                "error": None,
                "response": {
                    "status_code": 200,
                    "request_id": "r",
                    "body": {
                        "model": "m-2024",
                        "choices": [
                            {"index": 0, "message": {"role": "assistant", "content": "full"}}
                        ],
                        "usage": {"prompt_tokens": 30, "completion_tokens": 2},
                    },
                },
            },
            {
                "custom_id": k[2],
                "response": None,
                "error": {"code": "batch_expired", "message": "expired before it ran"},
            },
            {
                "custom_id": k[3],
                "response": {"status_code": 429, "body": {"error": {"message": "rate limited"}}},
            },
            {
                "custom_id": k[4],
                "response": {
                    "status_code": 200,
                    "body": {"choices": [{"message": {"content": None, "refusal": "I will not"}}]},
                },
            },
        ]
        ledger = Ledger(1.0, 1.0)
        stats = import_outputs([_write(tmp_path / "out.jsonl", rows)], cache, ledger)
        assert (stats.answered, stats.failed, stats.unknown, stats.estimated_usage) == (2, 3, 0, 1)
        assert cache.get(k[1]) is not None and cache.get(k[1]).model == "m-2024"  # type: ignore[union-attr]
        minimal = cache.get(k[0])
        assert minimal is not None and minimal.text == "minimal" and minimal.model == "m"
        assert minimal.prompt_tokens > 0 and minimal.completion_tokens > 0  # estimated
        assert ledger.summary().by_purpose["judge"].batch_calls == 2
        # a batch-mode run: answers from the cache, failures undetermined with the reason
        again = _batch_runner(cache, BatchCollector(model="m"))
        outs = [await again.try_complete(r, purpose="judge") for r in requests]
        assert [o.text for o in outs[:2] if isinstance(o, Completion)] == ["minimal", "full"]
        failures = [o for o in outs[2:] if isinstance(o, LLMFailure)]
        assert [f.kind for f in failures] == ["batch_failed"] * 3
        assert "expired before it ran" in failures[0].reason and "out.jsonl:3" in failures[0].reason
        assert failures[1].status == 429 and "rate limited" in failures[1].reason
        assert "refusal: I will not" in failures[2].reason
        assert again.batch is not None and len(again.batch) == 0  # not exported again
        # importing the file again changes nothing
        twice = import_outputs([tmp_path / "out.jsonl"], cache)
        assert (twice.answered, twice.failed, twice.known) == (0, 3, 2)
        # --llm-batch-retry-failed exports them again; a live run calls the endpoint
        retry = BatchCollector(model="m", retry_failed=True)
        retry_runner = _batch_runner(cache, retry)
        for r in requests:
            await retry_runner.try_complete(r, purpose="judge")
        assert len(retry) == 3
        live = LLMRunner(ScriptedLLM("live"), LLMConfig(model="m"), cache=cache)
        assert (await live.complete(requests[3], purpose="judge")).text == "live"


def test_bad_output_lines_name_file_line_and_field(tmp_path: Path) -> None:
    cases = [
        ("not json\n", None, "not valid JSON"),
        ('{"response": {"status_code": 200, "body": {}}}\n', "custom_id", "custom_id"),
        ('{"custom_id": "a", "response": "ok"}\n', "response", "'response' object"),
        ('{"custom_id": "a", "response": {"status_code": "200"}}\n', "response.status_code", ""),
    ]
    for text, field, words in cases:
        path = tmp_path / "bad.jsonl"
        path.write_text('{"custom_id": "fine", "error": {"message": "x"}}\n' + text)
        with pytest.raises(InputError) as exc:
            read_output_file(path)
        assert exc.value.path == str(path) and exc.value.line == 2
        assert exc.value.field == field and words in str(exc.value)


def test_batch_pricing_is_a_ledger_field() -> None:
    ledger = Ledger(2.0, 10.0, batch_price_factor=0.5)
    ledger.record_call("live", Usage(prompt_tokens=1000, completion_tokens=100))
    ledger.record_batch_reply("batch", Usage(prompt_tokens=1000, completion_tokens=100))
    summary = ledger.summary()
    assert summary.by_purpose["live"].cost == pytest.approx(3.0)
    assert summary.by_purpose["batch"].cost == pytest.approx(1.5)
    assert summary.total.cost == pytest.approx(4.5) and summary.total.batch_calls == 1
    ledger.record_estimate("e", calls=1, prompt_tokens=1000, completion_tokens=0)
    assert ledger.summary().total.estimated_cost == pytest.approx(2.0)
    ledger.set_batch_estimates()
    assert ledger.summary().total.estimated_cost == pytest.approx(1.0)
    assert LLMConfig().batch_price_factor == 0.5
    free = Ledger(2.0, 10.0, batch_price_factor=1.0)  # a self-hosted vLLM run_batch
    free.record_batch_reply("b", Usage(prompt_tokens=1000, completion_tokens=0))
    assert free.summary().total.cost == pytest.approx(2.0)


# -- submission -------------------------------------------------------------------------


def _reply(body: dict[str, Any], index: int) -> str:
    return f"answer to {body['messages'][-1]['content'][:20]} seed={body.get('seed')}"


async def _pending_session(
    server: LocalBatchServer, tmp_path: Path, **kw: Any
) -> tuple[BatchSession, list[str]]:
    cfg = LLMConfig(base_url=server.base_url, model="m", batch_poll_s=0.01)
    session = BatchSession(
        cfg,
        out_dir=tmp_path / "batch",
        submit=True,
        cache_path=tmp_path / "c.sqlite",
        log=lambda line: None,
        **kw,
    )
    session.start()
    runner = session.runner()
    try:
        out = await runner.try_complete(_request(), purpose="judge")
        assert isinstance(out, LLMFailure) and out.kind == "batch_pending"
        return session, runner.sample_keys(_request())
    finally:
        await runner.aclose()


async def test_submit_uploads_creates_polls_and_imports(tmp_path: Path) -> None:
    with LocalBatchServer() as server:
        server.behaviour.reply = _reply
        session, keys = await _pending_session(server, tmp_path)
        with pytest.raises(BatchNextRound):
            session.finish()
        assert server.batches_created == 1
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        got = cache.get_many(keys)
    assert [got[k].text for k in keys] == [f"answer to Is 1999 right? seed={s}" for s in (5, 6, 7)]
    assert not (tmp_path / "batch" / STATE_FILE).exists()
    history = [json.loads(x) for x in (tmp_path / "batch" / HISTORY_FILE).read_text().splitlines()]
    assert [h["batch_id"] for h in history] == ["batch_1"] and history[0]["imported"]


class _Killed(BaseException):
    """Stands for the process being killed while it waits for the batch."""


async def test_a_killed_run_resumes_polling_the_same_batch(tmp_path: Path) -> None:
    with LocalBatchServer() as server:
        server.behaviour.reply = _reply
        server.hold = True  # the batch stays in progress

        def killed(_s: float) -> None:
            raise _Killed

        session, _ = await _pending_session(server, tmp_path, sleep=killed)
        with pytest.raises(_Killed):
            session.finish()
        state = json.loads((tmp_path / "batch" / STATE_FILE).read_text())
        assert state["batch_id"] == "batch_1" and state["status"] == "in_progress"
        # a run without --llm-batch-submit is warned not to answer those requests again
        said: list[str] = []
        BatchSession(
            LLMConfig(model="m"),
            out_dir=tmp_path / "batch",
            cache_path=tmp_path / "c.sqlite",
            log=said.append,
        ).start()
        assert any("in flight" in line for line in said)
        server.hold = False
        # a new run resumes: it polls batch_1 and imports it, and submits nothing new
        cfg = LLMConfig(base_url=server.base_url, model="m", batch_poll_s=0.01)
        session2 = BatchSession(
            cfg,
            out_dir=tmp_path / "batch",
            submit=True,
            cache_path=tmp_path / "c.sqlite",
            log=lambda line: None,
        )
        session2.start()
        assert session2.last_import is not None and session2.last_import.answered == 3
        runner = session2.runner()
        try:
            got = await runner.complete(_request(), purpose="judge")
        finally:
            await runner.aclose()
        assert got.cached and len(got.texts) == 3 and session2.pending == 0
        assert not session2.finish()  # nothing pending: the command writes its outputs
        assert server.batches_created == 1 and server.uploads == 2  # input + output file
        assert server.batch_ids() == ["batch_1"]


async def test_a_run_killed_before_recording_the_batch_finds_it(tmp_path: Path) -> None:
    with LocalBatchServer() as server:
        server.behaviour.reply = _reply
        server.hold = True

        def killed(_s: float) -> None:
            raise _Killed

        session, _ = await _pending_session(server, tmp_path, sleep=killed)
        with pytest.raises(_Killed):
            session.finish()
        path = tmp_path / "batch" / STATE_FILE
        state = json.loads(path.read_text())
        del state["batch_id"]  # killed right after POST /batches answered
        path.write_text(json.dumps(state))
        server.hold = False
        cfg = LLMConfig(base_url=server.base_url, model="m", batch_poll_s=0.01)
        files = BatchSubmitter(tmp_path / "batch", cfg, log=lambda line: None).resume()
        assert [f.name for f in files] == ["output-batch_1.jsonl"]
        assert server.batches_created == 1


async def test_failed_lines_of_a_batch_become_recorded_failures(tmp_path: Path) -> None:
    with LocalBatchServer() as server:
        server.behaviour.reply = _reply
        server.fail_when = lambda body: body.get("seed") == 6
        session, keys = await _pending_session(server, tmp_path)
        with pytest.raises(BatchNextRound):
            session.finish()
    assert session.last_import is not None and session.last_import.failed == 1
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        assert set(cache.batch_failures(keys)) == {keys[1]}
        out = await _batch_runner(cache, BatchCollector(model="m")).try_complete(
            _request(), purpose="judge"
        )
    assert isinstance(out, LLMFailure) and out.kind == "batch_failed" and out.status == 500


def test_session_checks_its_options(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="needs --llm-batch-out"):
        BatchSession(LLMConfig(model="m"), out_dir=None, submit=True)
    with pytest.raises(InputError, match="model name"):
        BatchSession(LLMConfig(), out_dir=tmp_path, cache_path=tmp_path / "c.sqlite")
    with pytest.raises(InputError, match="base URL"):
        BatchSubmitter(tmp_path, LLMConfig(model="m"))
    never = BatchOnlyClient("m")
    with pytest.raises(LLMError, match="makes no LLM calls"):
        import asyncio

        asyncio.run(never.complete(_request()))
