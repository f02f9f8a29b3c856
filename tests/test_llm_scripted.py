"""ScriptedLLM: the deterministic, scripted implementation of the LLM client protocol."""

from __future__ import annotations

from typing import Any

import pytest

from ragtriage.config import LLMConfig
from ragtriage.errors import LLMResponseError
from ragtriage.llm import (
    ChatRequest,
    LLMClient,
    LLMRunner,
    LLMStatusError,
    ScriptedLLM,
    estimate_prompt_tokens,
    estimate_tokens,
)


def ask(text: str, **kw: Any) -> ChatRequest:
    return ChatRequest.of("system prompt", text, **kw)


def test_is_an_llm_client() -> None:
    assert isinstance(ScriptedLLM("x"), LLMClient)


async def test_sequence_is_consumed_in_order_and_honours_n() -> None:
    llm = ScriptedLLM(["a", "b", "c", "d"])
    first = await llm.complete(ask("q1"))
    both = await llm.complete(ask("q2", n=2))
    assert first.texts == ("a",)
    assert both.texts == ("b", "c")
    assert llm.remaining == 1
    assert [r.messages[-1].content for r in llm.requests] == ["q1", "q2"]


async def test_exhausted_sequence_raises_a_clear_error_without_consuming() -> None:
    llm = ScriptedLLM(["only"])
    with pytest.raises(LLMResponseError, match=r"exhausted.*needs 2 replies but 1 left"):
        await llm.complete(ask("needs two", n=2))
    assert llm.remaining == 1
    assert (await llm.complete(ask("one"))).text == "only"
    with pytest.raises(LLMResponseError, match="exhausted"):
        await llm.complete(ask("again"))


async def test_callable_receives_request_and_sample_index() -> None:
    def script(request: ChatRequest, index: int) -> str:
        return f"{request.messages[-1].content}#{index}#{request.seed}"

    out = await ScriptedLLM(script).complete(ask("hi", n=3, seed=9))
    assert out.texts == ("hi#0#9", "hi#1#9", "hi#2#9")


async def test_callable_returning_non_text_is_an_error() -> None:
    llm = ScriptedLLM(lambda request, index: 42)  # type: ignore[arg-type,return-value]
    with pytest.raises(LLMResponseError, match="returned int"):
        await llm.complete(ask("x"))


async def test_rules_match_the_last_user_message() -> None:
    llm = ScriptedLLM({r"capital of France": "Paris", r"^vote": ["yes", "no"], r".": "other"})
    assert (await llm.complete(ask("What is the capital of France?"))).text == "Paris"
    assert (await llm.complete(ask("What is the capital of France?"))).text == "Paris"
    assert (await llm.complete(ask("vote now", n=2))).texts == ("yes", "no")
    with pytest.raises(LLMResponseError, match=r"rule '\^vote' exhausted"):
        await llm.complete(ask("vote again"))
    assert (await llm.complete(ask("anything else"))).text == "other"


async def test_rules_without_match_name_the_message() -> None:
    llm = ScriptedLLM({r"^yes$": "ok"})
    with pytest.raises(LLMResponseError, match=r"no rule matches.*'something'"):
        await llm.complete(ask("something"))


async def test_supports_n_false_returns_one_text() -> None:
    llm = ScriptedLLM(lambda r, i: f"s{i}", supports_n=False)
    out = await llm.complete(ask("x", n=4))
    assert out.texts == ("s0",)


async def test_tokens_are_estimated_for_english_and_chinese() -> None:
    request = ask("这个答案正确吗？")
    out = await ScriptedLLM("正确").complete(request)
    assert out.usage.prompt_tokens == estimate_prompt_tokens(request)
    assert out.usage.completion_tokens == 2
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcdefgh") == 2
    assert estimate_tokens("答案 ok") == 2 + 1
    assert out.model == "scripted"


async def test_scripted_exceptions_are_raised_and_retried_by_the_runner() -> None:
    llm = ScriptedLLM([LLMStatusError("busy", status=503), "fine"])
    with pytest.raises(LLMStatusError):
        await llm.complete(ask("x"))
    llm2 = ScriptedLLM([LLMStatusError("busy", status=503), "fine"])
    waits: list[float] = []

    async def record(delay: float) -> None:
        waits.append(delay)

    runner = LLMRunner(llm2, LLMConfig(backoff_base_s=0.01), sleep=record)
    out = await runner.complete(ask("x"), purpose="test")
    assert out.text == "fine"
    assert len(waits) == 1
    assert runner.ledger.summary().total.retries == 1


async def test_constant_script_and_delay() -> None:
    llm = ScriptedLLM("same", delay_s=0.01)
    outs = [await llm.complete(ask(str(i), n=2)) for i in range(3)]
    assert all(o.texts == ("same", "same") for o in outs)
    assert llm.remaining is None
    assert all(o.latency_s >= 0.0 for o in outs)
