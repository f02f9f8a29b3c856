"""LLMRunner: retries, Retry-After, timeouts, cache, ledger, dry run — over real HTTP."""

from __future__ import annotations

import asyncio
import email.utils
import time
from pathlib import Path
from typing import Any

import pytest

from llm_server import LocalLLMServer, last_user
from ragtriage.config import LLMConfig
from ragtriage.errors import LLMError, LLMTimeoutError, StoreError
from ragtriage.llm import (
    CachedSample,
    ChatRequest,
    Completion,
    LLMDryRunError,
    LLMFailure,
    LLMRunner,
    OpenAICompatible,
    ResponseCache,
    ScriptedLLM,
    estimate_prompt_tokens,
    parse_retry_after,
    run_sync,
)


class SleepRecorder:
    """An injected sleep that records the requested waits and yields without waiting."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.waits.append(delay)
        await asyncio.sleep(0)


def config(server: LocalLLMServer, **kw: Any) -> LLMConfig:
    settings: dict[str, Any] = {
        "timeout_s": 5.0,
        "max_retries": 3,
        "backoff_base_s": 0.01,
        "backoff_max_s": 1.0,
        **kw,
    }
    return LLMConfig(base_url=server.base_url, model="test-model", **settings)


def runner_for(
    server: LocalLLMServer, *, cache: ResponseCache | None = None, **kw: Any
) -> tuple[LLMRunner, SleepRecorder]:
    sleep = SleepRecorder()
    cfg = config(server, **kw)
    return LLMRunner(OpenAICompatible(cfg), cfg, cache=cache, sleep=sleep, jitter_seed=1), sleep


def ask(text: str, **kw: Any) -> ChatRequest:
    return ChatRequest.of("system", text, **kw)


# -- retries ---------------------------------------------------------------------------


async def test_429_retries_wait_the_servers_retry_after(llm_server: LocalLLMServer) -> None:
    llm_server.behaviour.fail_429_first = 2
    llm_server.behaviour.retry_after = "1"
    runner, sleep = runner_for(llm_server)
    out = await runner.complete(ask("x"), purpose="answer_eval")
    assert out.text.endswith(": x")
    assert sleep.waits == [1.0, 1.0]
    assert llm_server.chat_requests == 3
    stats = runner.ledger.summary().by_purpose["answer_eval"]
    assert (stats.retries, stats.calls, stats.failures) == (2, 1, 0)


async def test_retry_after_really_waits(llm_server: LocalLLMServer) -> None:
    llm_server.behaviour.fail_429_first = 1
    llm_server.behaviour.retry_after = "1"
    cfg = config(llm_server)
    runner = LLMRunner(OpenAICompatible(cfg), cfg)
    started = time.monotonic()
    await runner.complete(ask("x"), purpose="p")
    assert time.monotonic() - started >= 0.95  # a lower bound: the server asked for 1 s


async def test_retry_after_http_date_and_cap(llm_server: LocalLLMServer) -> None:
    llm_server.behaviour.fail_429_first = 1
    llm_server.behaviour.retry_after = email.utils.formatdate(time.time() + 3, usegmt=True)
    runner, sleep = runner_for(llm_server, backoff_max_s=30.0)
    await runner.complete(ask("x"), purpose="p")
    (wait,) = sleep.waits
    assert 1.0 < wait <= 3.0
    llm_server.reset()
    llm_server.behaviour.fail_429_first = 1
    llm_server.behaviour.retry_after = "120"
    capped, capped_sleep = runner_for(llm_server, backoff_max_s=0.5)
    await capped.complete(ask("y"), purpose="p")
    assert capped_sleep.waits == [0.5]


def test_parse_retry_after_forms() -> None:
    now = 1_700_000_000.0
    date = email.utils.formatdate(now + 7, usegmt=True)
    assert parse_retry_after({"Retry-After": "3"}) == 3.0
    assert parse_retry_after({"retry-after": date}, now=now) == pytest.approx(7.0)
    assert parse_retry_after({"retry-after": date}, now=now + 60) == 0.0
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert parse_retry_after({"Retry-After": "soon"}) is None
    assert parse_retry_after({}) is None


async def test_500_is_retried_with_exponential_backoff(llm_server: LocalLLMServer) -> None:
    llm_server.behaviour.fail_500_first = 2
    runner, sleep = runner_for(llm_server, backoff_base_s=0.1)
    out = await runner.complete(ask("x"), purpose="p")
    assert out.texts and llm_server.chat_requests == 3
    first, second = sleep.waits
    assert 0.05 <= first <= 0.1  # equal jitter around base × 2^0
    assert 0.1 <= second <= 0.2  # ... and base × 2^1


async def test_retries_are_bounded(llm_server: LocalLLMServer) -> None:
    llm_server.behaviour.fail_500_first = 100
    runner, sleep = runner_for(llm_server, max_retries=3)
    outcome = await runner.try_complete(ask("x"), purpose="p")
    assert isinstance(outcome, LLMFailure)
    assert (outcome.kind, outcome.status, outcome.attempts) == ("http", 500, 4)
    assert "after 4 attempts" in outcome.reason
    assert llm_server.chat_requests == 4 and len(sleep.waits) == 3
    with pytest.raises(LLMError, match="HTTP 500"):
        await runner.complete(ask("y"), purpose="p")
    stats = runner.ledger.summary().total
    assert (stats.failures, stats.retries, stats.calls) == (2, 6, 0)


async def test_client_errors_are_not_retried(llm_server: LocalLLMServer) -> None:
    cfg = LLMConfig(base_url=llm_server.base_url + "/missing", model="m", max_retries=5)
    runner = LLMRunner(OpenAICompatible(cfg), cfg)
    outcome = await runner.try_complete(ask("x"), purpose="p")
    assert isinstance(outcome, LLMFailure)
    assert (outcome.kind, outcome.status, outcome.attempts) == ("http", 404, 1)


async def test_hanging_requests_time_out_and_the_batch_completes(
    llm_server: LocalLLMServer,
) -> None:
    llm_server.behaviour.hang_when = lambda body: "HANG" in last_user(body)
    runner, _ = runner_for(llm_server, timeout_s=0.3, max_retries=1)
    prompts = ["a", "HANG 1", "b", "c", "HANG 2", "d"]
    outcomes = await runner.complete_many([ask(p) for p in prompts], purpose="answer_eval")
    kinds = [o.kind if isinstance(o, LLMFailure) else "ok" for o in outcomes]
    assert kinds == ["ok", "timeout", "ok", "ok", "timeout", "ok"]
    failure = outcomes[1]
    assert isinstance(failure, LLMFailure)
    assert failure.attempts == 2 and failure.purpose == "answer_eval"
    assert "no answer within 0.3s" in failure.reason
    assert 2 <= llm_server.counter("hung") <= 4  # at most two attempts each
    stats = runner.ledger.summary().by_purpose["answer_eval"]
    assert (stats.failures, stats.timeouts, stats.calls, stats.requests) == (2, 2, 4, 6)
    with pytest.raises(LLMTimeoutError):
        await runner.complete(ask("HANG 3"), purpose="answer_eval")


async def test_invalid_json_is_retried_then_counted_as_failure(
    llm_server: LocalLLMServer,
) -> None:
    llm_server.behaviour.invalid_json_first = 1
    runner, _ = runner_for(llm_server, max_retries=1)
    assert isinstance(await runner.complete(ask("x"), purpose="p"), Completion)
    llm_server.reset()
    llm_server.behaviour.invalid_json_first = 100
    outcome = await runner.try_complete(ask("y"), purpose="p")
    assert isinstance(outcome, LLMFailure)
    assert outcome.kind == "response" and outcome.attempts == 2
    assert runner.ledger.summary().total.failures == 1


# -- concurrency -----------------------------------------------------------------------


async def test_concurrency_is_bounded(llm_server: LocalLLMServer) -> None:
    llm_server.behaviour.delay_s = 0.05
    runner, _ = runner_for(llm_server, concurrency=4)
    outcomes = await runner.complete_many([ask(f"q{i}") for i in range(16)], purpose="p")
    assert all(isinstance(o, Completion) for o in outcomes)
    assert [o.text for o in outcomes if isinstance(o, Completion)] == [
        f"reply seed=None choice=0: q{i}" for i in range(16)
    ]
    assert 1 < llm_server.max_inflight <= 4


async def test_identical_requests_in_flight_share_one_call(
    llm_server: LocalLLMServer, tmp_path: Path
) -> None:
    llm_server.behaviour.delay_s = 0.05
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        runner, _ = runner_for(llm_server, cache=cache)
        outcomes = await runner.complete_many([ask("same")] * 5, purpose="p")
    texts = {o.text for o in outcomes if isinstance(o, Completion)}
    assert len(texts) == 1 and llm_server.chat_requests == 1
    assert runner.ledger.summary().total.cache_hits == 4


async def test_requests_joining_a_failing_call_fail_the_same_way(
    llm_server: LocalLLMServer,
) -> None:
    llm_server.behaviour.hang = True
    runner, _ = runner_for(llm_server, timeout_s=0.3, max_retries=1)
    outcomes = await runner.complete_many([ask("same")] * 3, purpose="p")
    assert [(o.kind, o.attempts) for o in outcomes if isinstance(o, LLMFailure)] == [
        ("timeout", 2)
    ] * 3
    # one shared request, retried once (an attempt may time out before it even arrives)
    assert 1 <= llm_server.chat_requests <= 2
    assert runner.ledger.summary().total.timeouts == 3


# -- cache -----------------------------------------------------------------------------


async def test_second_identical_run_is_free(llm_server: LocalLLMServer, tmp_path: Path) -> None:
    requests = [ask(f"question {i}", n=2, temperature=0.7, seed=i) for i in range(5)]
    path = tmp_path / "cache.sqlite"
    with ResponseCache(path) as cache:
        runner, _ = runner_for(llm_server, cache=cache)
        first = await runner.complete_many(requests, purpose="answer_eval")
    assert llm_server.chat_requests == 5
    assert all(isinstance(o, Completion) and not o.cached for o in first)
    with ResponseCache(path) as cache:
        assert len(cache) == 10
        runner2, _ = runner_for(llm_server, cache=cache)
        second = await runner2.complete_many(requests, purpose="answer_eval")
    assert llm_server.chat_requests == 5  # no new HTTP request
    for a, b in zip(first, second, strict=True):
        assert isinstance(a, Completion) and isinstance(b, Completion)
        assert b.cached is True and b.texts == a.texts
        assert (b.usage.prompt_tokens, b.usage.completion_tokens) == (0, 0)
    stats = runner2.ledger.summary().total
    assert (stats.calls, stats.cache_hits, stats.prompt_tokens, stats.cost) == (0, 10, 0, 0.0)


async def test_k_samples_are_distinct_reproducible_and_topped_up(
    llm_server: LocalLLMServer, tmp_path: Path
) -> None:
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        runner, _ = runner_for(llm_server, cache=cache)
        five = await runner.complete(ask("vote", n=5, temperature=0.9, seed=3), purpose="vote")
        assert len(set(five.texts)) == 5
        again = await runner.complete(ask("vote", n=5, temperature=0.9, seed=3), purpose="vote")
        assert again.texts == five.texts and again.cached
        eight = await runner.complete(ask("vote", n=8, temperature=0.9, seed=3), purpose="vote")
    assert eight.texts[:5] == five.texts and len(set(eight.texts)) == 8
    assert not eight.cached
    bodies = llm_server.bodies
    assert len(bodies) == 2  # the 5 votes, then only the 3 missing ones
    assert (bodies[1]["n"], bodies[1]["seed"]) == (3, 8)


async def test_cache_key_includes_the_model(tmp_path: Path) -> None:
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        a = LLMRunner(ScriptedLLM("from A", model="model-a"), cache=cache)
        b = LLMRunner(ScriptedLLM("from B", model="model-b"), cache=cache)
        assert (await a.complete(ask("q"), purpose="p")).text == "from A"
        assert (await b.complete(ask("q"), purpose="p")).text == "from B"
        assert (await a.complete(ask("q"), purpose="p")).cached


async def test_runner_tops_up_clients_that_ignore_n(tmp_path: Path) -> None:
    llm = ScriptedLLM(lambda r, i: f"seed {r.seed}", supports_n=False)
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        runner = LLMRunner(llm, cache=cache)
        out = await runner.complete(ask("x", n=3, seed=5, temperature=1.0), purpose="p")
        assert out.texts == ("seed 5", "seed 6", "seed 7")
        out2 = await runner.complete(ask("y", n=2, seed=0, temperature=1.0), purpose="p")
    assert out2.texts == ("seed 0", "seed 1")
    assert [r.n for r in llm.requests] == [3, 1, 1, 1, 1]  # second request split at once


async def test_client_known_to_ignore_n_gets_one_timed_cached_call_per_sample(
    llm_server: LocalLLMServer, tmp_path: Path
) -> None:
    """An endpoint that ignores ``n`` behind a client that reports ``supports_n=False``
    (OpenAICompatible): the runner asks sample by sample, so each sample has its own
    timeout, is cached as soon as it is paid and counts as one call (as the dry-run
    estimate says); a hanging sample no longer throws away the ones already paid."""
    llm_server.behaviour.ignore_n = True
    llm_server.behaviour.hang_when = lambda body: (
        body.get("seed") == 2 and "HANG" in last_user(body)
    )
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        runner, _ = runner_for(
            llm_server, cache=cache, timeout_s=0.5, max_retries=0, supports_n=False
        )
        client = OpenAICompatible(config(llm_server, supports_n=False))
        estimate = LLMRunner(client, dry_run=True)
        with pytest.raises(LLMDryRunError):
            await estimate.complete(ask("HANG", n=3, seed=0), purpose="vote")
        assert estimate.ledger.summary().total.estimated_calls == 3
        with pytest.raises(LLMTimeoutError):
            await runner.complete(ask("HANG", n=3, seed=0, temperature=1.0), purpose="vote")
        assert len(cache) == 2  # samples 0 and 1 were paid: kept
        assert runner.ledger.summary().total.calls == 2
        llm_server.behaviour.hang_when = None
        before = llm_server.chat_requests
        out = await runner.complete(ask("HANG", n=3, seed=0, temperature=1.0), purpose="vote")
    assert llm_server.chat_requests == before + 1  # only the missing sample
    assert [t.split(":")[0] for t in out.texts] == [
        "reply seed=0 choice=0",
        "reply seed=1 choice=0",
        "reply seed=2 choice=0",
    ]
    assert runner.ledger.summary().total.calls == 3


async def test_concurrent_cache_writes_are_safe(tmp_path: Path) -> None:
    llm = ScriptedLLM(lambda r, i: f"answer to {r.messages[-1].content} #{i}", delay_s=0.001)
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        runner = LLMRunner(llm, LLMConfig(concurrency=16), cache=cache)
        requests = [ask(f"q{i}", n=2) for i in range(60)]
        outcomes = await runner.complete_many(requests, purpose="p")
        assert len(cache) == 120
        replay = await LLMRunner(ScriptedLLM([]), cache=cache).complete_many(requests, purpose="p")
    assert [o.texts for o in outcomes if isinstance(o, Completion)] == [
        (f"answer to q{i} #0", f"answer to q{i} #1") for i in range(60)
    ]
    assert [o.texts for o in replay if isinstance(o, Completion)] == [
        o.texts for o in outcomes if isinstance(o, Completion)
    ]


# -- ledger and dry run -----------------------------------------------------------------


async def test_ledger_breaks_down_by_purpose_with_cost() -> None:
    llm = ScriptedLLM("twelve chars")  # 3 tokens
    cfg = LLMConfig(price_per_1k_prompt=2.0, price_per_1k_completion=10.0)
    runner = LLMRunner(llm, cfg)
    await runner.complete(ask("a"), purpose="answer_eval")
    await runner.complete(ask("b", n=2), purpose="attribution")
    summary = runner.ledger.summary()
    assert set(summary.by_purpose) == {"answer_eval", "attribution"}
    prompt = estimate_prompt_tokens(ask("a"))
    ans = summary.by_purpose["answer_eval"]
    assert (ans.calls, ans.prompt_tokens, ans.completion_tokens) == (1, prompt, 3)
    assert ans.cost == pytest.approx((prompt * 2.0 + 3 * 10.0) / 1000)
    att = summary.by_purpose["attribution"]
    assert att.completion_tokens == 6
    assert summary.total.calls == 2
    assert summary.total.cost == pytest.approx(ans.cost + att.cost)


async def test_dry_run_estimates_without_calling(
    llm_server: LocalLLMServer, tmp_path: Path
) -> None:
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        warm, _ = runner_for(llm_server, cache=cache)
        cached = await warm.complete(ask("known"), purpose="p")
        calls_before = llm_server.chat_requests
        cfg = config(llm_server, price_per_1k_prompt=1.0, price_per_1k_completion=1.0)
        dry = LLMRunner(OpenAICompatible(cfg), cfg, cache=cache, dry_run=True)
        requests = [
            ask("known"),
            ask("new one", max_tokens=50),
            ask("votes", n=3, max_tokens=20),
            ask("new one", max_tokens=50),
        ]
        outcomes = await dry.complete_many(requests, purpose="p")
        with pytest.raises(LLMDryRunError):
            await dry.complete(ask("new one", max_tokens=50), purpose="p")
    assert llm_server.chat_requests == calls_before
    hit = outcomes[0]
    assert isinstance(hit, Completion) and hit.cached and hit.texts == cached.texts
    assert [o.kind for o in outcomes[1:] if isinstance(o, LLMFailure)] == ["dry_run"] * 3
    stats = dry.ledger.summary().total
    assert stats.calls == 0 and stats.failures == 0 and stats.cache_hits == 1
    assert stats.estimated_calls == 2  # the repeated request is only paid once
    assert stats.estimated_prompt_tokens == estimate_prompt_tokens(
        requests[1]
    ) + estimate_prompt_tokens(requests[2])
    assert stats.estimated_completion_tokens == 50 + 3 * 20
    assert stats.estimated_cost == pytest.approx(
        (stats.estimated_prompt_tokens + stats.estimated_completion_tokens) / 1000
    )


def test_cache_rejects_a_corrupt_file_and_use_after_close(tmp_path: Path) -> None:
    bad = tmp_path / "bad.sqlite"
    bad.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError, match="cannot open LLM cache"):
        ResponseCache(bad)
    cache = ResponseCache(tmp_path / "ok.sqlite")
    cache.put("k", CachedSample(text="t"))
    assert cache.get("k") == CachedSample(text="t") and cache.get("other") is None
    cache.close()
    with pytest.raises(StoreError, match="closed"):
        cache.get("k")


def test_run_sync_from_sync_and_from_a_running_loop() -> None:
    runner = LLMRunner(ScriptedLLM("hello"))
    assert run_sync(runner.complete(ask("x"), purpose="p")).text == "hello"

    async def inside() -> str:
        return run_sync(runner.complete(ask("y"), purpose="p")).text

    assert asyncio.run(inside()) == "hello"


def test_from_config_builds_client_and_cache(llm_server: LocalLLMServer, tmp_path: Path) -> None:
    cfg = LLMConfig(
        base_url=llm_server.base_url, model="m", cache_path=str(tmp_path / "sub" / "c.sqlite")
    )

    async def go() -> tuple[Completion, Completion]:
        async with LLMRunner.from_config(cfg) as runner:
            first = await runner.complete(ask("x"), purpose="p")
        async with LLMRunner.from_config(cfg) as runner:
            second = await runner.complete(ask("x"), purpose="p")
        return first, second

    first, second = run_sync(go())
    assert (tmp_path / "sub" / "c.sqlite").exists()
    assert not first.cached and second.cached and second.texts == first.texts
    assert llm_server.chat_requests == 1


def test_sample_keys_are_the_requests_own_cache_keys_with_n_normalised() -> None:
    """The runner's fast key path must agree with ChatRequest.cache_key, so caches written
    by either stay valid."""
    runner = LLMRunner(ScriptedLLM("x"))
    request = ChatRequest.of(
        "sys", "user é 中文", n=3, seed=4, json_schema={"b": 1, "a": [1, 2]}, stop=("\n",)
    )
    base = request.model_copy(update={"n": 1, "model": "scripted"})
    keys = runner.sample_keys(request)
    assert keys == [base.cache_key(i) for i in range(3)]
    assert len(set(keys)) == 3
