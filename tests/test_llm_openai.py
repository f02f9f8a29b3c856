"""OpenAICompatible against a real local HTTP server (tests/llm_server.py)."""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from llm_server import LocalLLMServer, hashed_embedding, last_user
from ragtriage.config import LLMConfig
from ragtriage.errors import ConfigError, LLMTimeoutError
from ragtriage.llm import (
    ChatRequest,
    LLMBadResponseError,
    LLMClient,
    LLMConnectionError,
    LLMStatusError,
    OpenAICompatible,
    client_from_config,
    run_sync,
)

SCHEMA = {
    "title": "Verdict schema",
    "type": "object",
    "properties": {"label": {"type": "string"}},
    "required": ["label"],
}


# every test here runs once per HTTP transport under the SDK (llm.http_transport)
_TRANSPORT = {"name": "auto"}


@pytest.fixture(autouse=True, params=["direct", "aiohttp", "httpx"])
def transport(request: pytest.FixtureRequest) -> Iterator[str]:
    _TRANSPORT["name"] = request.param
    yield request.param
    _TRANSPORT["name"] = "auto"


def config(base_url: str, **kw: Any) -> LLMConfig:
    return LLMConfig(base_url=base_url, http_transport=_TRANSPORT["name"], **kw)


def client(server: LocalLLMServer, **kw: Any) -> OpenAICompatible:
    settings: dict[str, Any] = {"timeout_s": 5.0, "model": "test-model", **kw}
    return OpenAICompatible(config(server.base_url, **settings))


async def test_maps_request_parameters(llm_server: LocalLLMServer) -> None:
    c = client(llm_server)
    assert isinstance(c, LLMClient)
    request = ChatRequest.of(
        "be brief", "What is 2+2?", n=2, seed=7, temperature=0.3, max_tokens=20, stop=("END",)
    )
    out = await c.complete(request)
    (body,) = llm_server.bodies
    assert body["model"] == "test-model"
    assert body["messages"] == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "What is 2+2?"},
    ]
    assert (body["n"], body["seed"], body["temperature"], body["max_tokens"]) == (2, 7, 0.3, 20)
    assert body["stop"] == ["END"]
    assert "response_format" not in body
    assert out.texts == (
        "reply seed=7 choice=0: What is 2+2?",
        "reply seed=7 choice=1: What is 2+2?",
    )
    assert out.usage.prompt_tokens > 0 and out.usage.completion_tokens > 0
    assert out.model == "test-model"
    assert c.supports_n is True


async def test_request_model_overrides_config_and_n1_sends_no_n(
    llm_server: LocalLLMServer,
) -> None:
    await client(llm_server).complete(ChatRequest.of(None, "hi", model="other"))
    (body,) = llm_server.bodies
    assert body["model"] == "other"
    assert "n" not in body and "seed" not in body and "stop" not in body


async def test_api_key_placeholder_never_leaks_openai_key(
    llm_server: LocalLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-user-secret")
    await client(llm_server).complete(ChatRequest.of(None, "a"))
    await client(llm_server, api_key="sk-configured").complete(ChatRequest.of(None, "b"))
    assert llm_server.authorizations == ["Bearer ragtriage-no-key", "Bearer sk-configured"]


async def test_missing_usage_is_estimated_not_zero(llm_server: LocalLLMServer) -> None:
    llm_server.behaviour.include_usage = False
    out = await client(llm_server).complete(ChatRequest.of(None, "count me please"))
    assert out.usage.prompt_tokens > 0 and out.usage.completion_tokens > 0


async def test_ignored_n_fetches_remaining_samples_with_distinct_seeds(
    llm_server: LocalLLMServer,
) -> None:
    llm_server.behaviour.ignore_n = True
    c = client(llm_server)
    out = await c.complete(ChatRequest.of(None, "vote", n=3, seed=10, temperature=0.8))
    assert len(out.texts) == 3 and len(set(out.texts)) == 3
    assert c.supports_n is False
    bodies = llm_server.bodies
    assert bodies[0]["n"] == 3
    assert sorted(b["seed"] for b in bodies[1:]) == [11, 12]
    assert all("n" not in b for b in bodies[1:])
    # remembered: the next n-request goes straight to one call per sample
    llm_server.reset()
    out2 = await c.complete(ChatRequest.of(None, "again", n=3, seed=0, temperature=0.8))
    assert len(set(out2.texts)) == 3
    assert llm_server.chat_requests == 3
    assert all("n" not in b for b in llm_server.bodies)
    assert sorted(b.get("seed") for b in llm_server.bodies) == [0, 1, 2]


async def test_json_schema_sent_as_response_format(llm_server: LocalLLMServer) -> None:
    c = client(llm_server)
    await c.complete(ChatRequest.of(None, "judge", json_schema=SCHEMA))
    (body,) = llm_server.bodies
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "Verdict_schema", "schema": SCHEMA},
    }
    assert body["messages"][-1]["content"] == "judge"
    assert c.supports_json_schema is True


async def test_json_schema_rejected_with_400_falls_back_once_and_remembers(
    llm_server: LocalLLMServer,
) -> None:
    llm_server.behaviour.reject_response_format = True
    llm_server.behaviour.reply = lambda body, i: '{"label": "ok"}'
    c = client(llm_server)
    out = await c.complete(ChatRequest.of(None, "judge", json_schema=SCHEMA))
    assert out.text == '{"label": "ok"}'
    assert c.supports_json_schema is False
    first, second = llm_server.bodies
    assert "response_format" in first
    assert "response_format" not in second
    assert second["messages"][-1]["content"].startswith("judge\n\nReply with one JSON object")
    assert '"required": ["label"]' in second["messages"][-1]["content"]
    await c.complete(ChatRequest.of(None, "judge again", json_schema=SCHEMA))
    assert llm_server.chat_requests == 3
    assert llm_server.counter("sent_400") == 1


async def test_configured_no_json_schema_puts_schema_in_prompt(
    llm_server: LocalLLMServer,
) -> None:
    c = client(llm_server, supports_json_schema=False)
    await c.complete(ChatRequest.of("sys", "judge", json_schema=SCHEMA))
    (body,) = llm_server.bodies
    assert "response_format" not in body
    assert "JSON Schema" in body["messages"][-1]["content"]
    assert body["messages"][0] == {"role": "system", "content": "sys"}


async def test_429_carries_retry_after_and_is_retryable(llm_server: LocalLLMServer) -> None:
    llm_server.behaviour.fail_429_first = 1
    llm_server.behaviour.retry_after = "1"
    with pytest.raises(LLMStatusError) as info:
        await client(llm_server).complete(ChatRequest.of(None, "x"))
    assert info.value.status == 429
    assert info.value.retryable is True
    assert info.value.retry_after_s == 1.0
    assert "rate limited" in str(info.value)
    assert llm_server.chat_requests == 1  # SDK retries are off


async def test_500_is_retryable_and_404_is_not(llm_server: LocalLLMServer) -> None:
    llm_server.behaviour.fail_500_first = 1
    with pytest.raises(LLMStatusError) as info:
        await client(llm_server).complete(ChatRequest.of(None, "x"))
    assert (info.value.status, info.value.retryable) == (500, True)
    wrong = OpenAICompatible(config(llm_server.base_url + "/nope", model="m"))
    with pytest.raises(LLMStatusError) as info404:
        await wrong.complete(ChatRequest.of(None, "x"))
    assert (info404.value.status, info404.value.retryable) == (404, False)


async def test_invalid_json_body_is_a_bad_response(llm_server: LocalLLMServer) -> None:
    llm_server.behaviour.invalid_json_first = 1
    with pytest.raises(LLMBadResponseError) as info:
        await client(llm_server).complete(ChatRequest.of(None, "x"))
    assert info.value.retryable is True


async def test_connection_refused_is_a_connection_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    c = OpenAICompatible(config(f"http://127.0.0.1:{port}/v1", model="m"))
    with pytest.raises(LLMConnectionError):
        await c.complete(ChatRequest.of(None, "x"))


async def test_sdk_timeout_maps_to_llm_timeout(llm_server: LocalLLMServer) -> None:
    llm_server.behaviour.hang = True
    c = client(llm_server, timeout_s=0.2)
    with pytest.raises(LLMTimeoutError):
        await c.complete(ChatRequest.of(None, "x"))


def test_client_from_config_requires_endpoint_and_model() -> None:
    with pytest.raises(ConfigError) as no_url:
        client_from_config(LLMConfig(model="m"), env={})
    assert no_url.value.field == "llm.base_url"
    assert "RAGTRIAGE_LLM_BASE_URL" in str(no_url.value)
    with pytest.raises(ConfigError) as no_model:
        client_from_config(LLMConfig(base_url="http://127.0.0.1:9/v1"), env={})
    assert no_model.value.field == "llm.model"
    with pytest.raises(ConfigError):
        client_from_config(LLMConfig(), env={})


def test_client_from_config_reads_env(llm_server: LocalLLMServer) -> None:
    env = {
        "RAGTRIAGE_LLM_BASE_URL": llm_server.base_url,
        "RAGTRIAGE_LLM_MODEL": "env-model",
        "RAGTRIAGE_LLM_API_KEY": "sk-env",
    }
    c = client_from_config(LLMConfig(), env=env)
    assert (c.base_url, c.model_name) == (llm_server.base_url, "env-model")
    out = run_sync(c.complete(ChatRequest.of(None, "from env")))
    assert out.model == "env-model"
    assert llm_server.authorizations == ["Bearer sk-env"]


def test_one_client_works_across_event_loops(llm_server: LocalLLMServer) -> None:
    c = client(llm_server)
    first = run_sync(c.complete(ChatRequest.of(None, "one")))
    second = run_sync(c.complete(ChatRequest.of(None, "two")))
    assert (first.text, second.text) == (
        "reply seed=None choice=0: one",
        "reply seed=None choice=0: two",
    )


async def test_server_embeddings_are_deterministic(llm_server: LocalLLMServer) -> None:
    sdk = openai.AsyncOpenAI(base_url=llm_server.base_url, api_key="x", max_retries=0)
    one = await sdk.embeddings.create(model="e", input=["red apple", "红苹果"])
    two = await sdk.embeddings.create(model="e", input="red apple", encoding_format="float")
    await sdk.close()
    assert len(one.data) == 2 and len(one.data[0].embedding) == 64
    assert one.data[0].embedding == pytest.approx(two.data[0].embedding, abs=1e-6)
    assert two.data[0].embedding == pytest.approx(hashed_embedding("red apple"), abs=1e-6)
    assert llm_server.embedding_requests == 2
    assert last_user({"messages": [{"role": "user", "content": "q"}]}) == "q"


def test_aclose_from_a_later_event_loop_schedules_nothing(llm_server: LocalLLMServer) -> None:
    """The CLI calls and closes the client in two ``run_sync`` loops; the pool of the
    first (closed) loop must not be handed to the second one to close: that task fails
    with 'Event loop is closed' and prints 'Task exception was never retrieved'."""
    import asyncio
    import gc

    c = client(llm_server)
    assert run_sync(c.complete(ChatRequest.of(None, "one"))).text.endswith("one")

    async def close_and_list_tasks() -> list[asyncio.Task[object]]:
        await c.aclose()
        gc.collect()
        me = asyncio.current_task()
        return [t for t in asyncio.all_tasks() if t is not me]

    assert run_sync(close_and_list_tasks()) == []
    # a closed client opens a fresh pool on its next call
    assert run_sync(c.complete(ChatRequest.of(None, "two"))).text.endswith("two")


def test_a_pool_left_open_is_closed_when_its_loop_ends(
    llm_server: LocalLLMServer, transport: str
) -> None:
    """Library users may never call aclose(): each asyncio.run loop that used the client
    still closes its pool at shutdown, so nothing reports an unclosed session."""
    script = textwrap.dedent(
        f"""
        import gc
        from ragtriage.config import LLMConfig
        from ragtriage.llm import ChatRequest, OpenAICompatible, run_sync
        c = OpenAICompatible(LLMConfig(base_url={llm_server.base_url!r}, model="m",
                                       http_transport={transport!r}))
        for word in ("one", "two"):
            print(run_sync(c.complete(ChatRequest.of(None, word))).text)
        del c
        gc.collect()
        """
    )
    done = subprocess.run(
        [sys.executable, "-X", "dev", "-c", script], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == [
        "reply seed=None choice=0: one",
        "reply seed=None choice=0: two",
    ]
    assert "unclosed" not in done.stderr.lower(), done.stderr
    assert "destroyed" not in done.stderr, done.stderr


def test_unknown_transport_is_a_config_error() -> None:
    with pytest.raises(ValueError, match="http_transport"):
        LLMConfig.model_validate({"http_transport": "curl"})
