"""A small OpenAI-compatible HTTP server on 127.0.0.1 for tests and benchmarks.

It implements ``POST /v1/chat/completions`` and ``POST /v1/embeddings`` (deterministic
hashed bag-of-words vectors, float or base64) and misbehaves on request: slow replies,
the first N requests answered 429 (with ``Retry-After``) or 500, invalid JSON bodies,
requests that hang, ``n`` ignored, ``response_format`` rejected with 400.

Use from pytest through the ``llm_server`` fixture (tests/conftest.py), or directly::

    with LocalLLMServer(Behaviour(delay_s=0.2)) as server:
        ... server.base_url ...   # "http://127.0.0.1:PORT/v1"

or as a process: ``python tests/llm_server.py --delay 0.2`` (prints the base URL).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import hashlib
import json
import math
import re
import socket
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from aiohttp import web

__all__ = ["Behaviour", "LocalLLMServer", "default_reply", "hashed_embedding", "last_user"]

Body = dict[str, Any]
Reply = Callable[[Body, int], str]
_WORD = re.compile(r"[\w]+|[\u3400-\u4dbf\u4e00-\u9fff]", re.UNICODE)


def last_user(body: Body) -> str:
    """The content of the last user message of a chat request body."""
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user":
            return str(message.get("content", ""))
    return ""


def default_reply(body: Body, index: int) -> str:
    """Deterministic: depends on the last user message, the seed and the choice index."""
    return f"reply seed={body.get('seed')} choice={index}: {last_user(body)[:60]}"


def _count_tokens(text: str) -> int:
    return len(_WORD.findall(text))


def hashed_embedding(text: str, dim: int = 64) -> list[float]:
    """A deterministic unit vector: signed feature hashing of lower-cased word tokens
    (and single CJK characters), so texts sharing words get similar vectors."""
    vec = [0.0] * dim
    tokens = [t.lower() for t in _WORD.findall(text)] or [text]
    for token in tokens:
        digest = hashlib.sha256(token.encode("utf-8")).digest()
        bucket = int.from_bytes(digest[:4], "little") % dim
        vec[bucket] += 1.0 if digest[4] & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in vec)) or 1.0
    return [v / norm for v in vec]


@dataclass
class Behaviour:
    """What the server does; tests may change fields at any time."""

    reply: Reply = default_reply
    delay_s: float = 0.0
    fail_429_first: int = 0
    retry_after: str | None = "0"
    fail_500_first: int = 0
    invalid_json_first: int = 0
    hang: bool = False
    hang_when: Callable[[Body], bool] | None = None
    ignore_n: bool = False
    reject_response_format: bool = False
    include_usage: bool = True
    model: str = "local-test-model"
    embedding_dim: int = 64


@dataclass
class _Counters:
    chat: int = 0
    embeddings: int = 0
    sent_429: int = 0
    sent_500: int = 0
    sent_invalid: int = 0
    sent_400: int = 0
    hung: int = 0
    inflight: int = 0
    max_inflight: int = 0
    bodies: list[Body] = field(default_factory=list)
    authorizations: list[str] = field(default_factory=list)


class LocalLLMServer:
    """Runs the app on its own event loop in a daemon thread (127.0.0.1, free port)."""

    def __init__(self, behaviour: Behaviour | None = None) -> None:
        self.behaviour = behaviour if behaviour is not None else Behaviour()
        self._counters = _Counters()
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self._stop: asyncio.Event | None = None
        self.port = 0

    # -- inspection ---------------------------------------------------------------

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def chat_requests(self) -> int:
        """Chat requests received (including the ones answered with an error)."""
        with self._lock:
            return self._counters.chat

    @property
    def authorizations(self) -> list[str]:
        """The ``Authorization`` header of every chat request ("" when absent)."""
        with self._lock:
            return list(self._counters.authorizations)

    @property
    def max_inflight(self) -> int:
        """The largest number of chat requests being handled at the same time."""
        with self._lock:
            return self._counters.max_inflight

    @property
    def embedding_requests(self) -> int:
        with self._lock:
            return self._counters.embeddings

    @property
    def bodies(self) -> list[Body]:
        """The JSON bodies of all chat requests, in arrival order."""
        with self._lock:
            return list(self._counters.bodies)

    def counter(self, name: str) -> int:
        """One of: sent_429, sent_500, sent_invalid, sent_400, hung, max_inflight."""
        with self._lock:
            value = getattr(self._counters, name)
            assert isinstance(value, int)
            return value

    def reset(self, behaviour: Behaviour | None = None) -> None:
        with self._lock:
            self._counters = _Counters()
            if behaviour is not None:
                self.behaviour = behaviour

    # -- handlers -----------------------------------------------------------------

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        with self._lock:
            self._counters.inflight += 1
            self._counters.max_inflight = max(self._counters.max_inflight, self._counters.inflight)
        try:
            return await self._chat_inner(request)
        finally:
            with self._lock:
                self._counters.inflight -= 1

    async def _chat_inner(self, request: web.Request) -> web.StreamResponse:
        arrived = time.perf_counter()
        raw = await request.read()
        try:
            body = json.loads(raw)
        except ValueError:
            return web.json_response({"error": {"message": "bad JSON"}}, status=400)
        b = self.behaviour
        with self._lock:
            self._counters.chat += 1
            self._counters.bodies.append(body)
            self._counters.authorizations.append(request.headers.get("Authorization", ""))
            action = "ok"
            if self._counters.sent_429 < b.fail_429_first:
                self._counters.sent_429 += 1
                action = "429"
            elif self._counters.sent_500 < b.fail_500_first:
                self._counters.sent_500 += 1
                action = "500"
            elif b.reject_response_format and "response_format" in body:
                self._counters.sent_400 += 1
                action = "400"
            elif self._counters.sent_invalid < b.invalid_json_first:
                self._counters.sent_invalid += 1
                action = "invalid"
            elif b.hang or (b.hang_when is not None and b.hang_when(body)):
                self._counters.hung += 1
                action = "hang"
        if b.delay_s > 0 and action != "ok":
            await asyncio.sleep(b.delay_s)
        if action == "429":
            headers = {"Retry-After": b.retry_after} if b.retry_after is not None else {}
            return web.json_response(
                {"error": {"message": "rate limited", "type": "rate_limit"}},
                status=429,
                headers=headers,
            )
        if action == "500":
            return web.json_response({"error": {"message": "server exploded"}}, status=500)
        if action == "400":
            return web.json_response(
                {
                    "error": {
                        "message": "response_format json_schema is not supported",
                        "type": "invalid_request_error",
                    }
                },
                status=400,
            )
        if action == "invalid":
            return web.Response(
                text='{"id": "x", "choices": [', content_type="application/json", status=200
            )
        if action == "hang":
            assert self._stop is not None
            await self._stop.wait()
            return web.Response(status=503)
        n = 1 if b.ignore_n else int(body.get("n") or 1)
        texts = [b.reply(body, i) for i in range(n)]
        prompt = sum(_count_tokens(str(m.get("content", ""))) for m in body.get("messages", []))
        completion = sum(_count_tokens(t) for t in texts)
        payload: Body = {
            "id": f"chatcmpl-{self._counters.chat}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model") or b.model,
            "choices": [
                {
                    "index": i,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                }
                for i, text in enumerate(texts)
            ],
        }
        if b.include_usage:
            payload["usage"] = {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            }
        if b.delay_s > 0:
            # a reply takes delay_s from its arrival, the scripted reply's own CPU
            # included (a benchmark's latency is then the server's, not delay + CPU)
            await asyncio.sleep(max(0.0, b.delay_s - (time.perf_counter() - arrived)))
        return web.json_response(payload)

    async def _embeddings(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        with self._lock:
            self._counters.embeddings += 1
        inputs = body.get("input")
        texts = [inputs] if isinstance(inputs, str) else list(inputs or [])
        dim = int(body.get("dimensions") or self.behaviour.embedding_dim)
        as_base64 = body.get("encoding_format") == "base64"
        data = []
        for i, text in enumerate(texts):
            vec = hashed_embedding(str(text), dim)
            emb: Any = (
                base64.b64encode(struct.pack(f"<{dim}f", *vec)).decode("ascii")
                if as_base64
                else vec
            )
            data.append({"object": "embedding", "index": i, "embedding": emb})
        tokens = sum(_count_tokens(str(t)) for t in texts)
        return web.json_response(
            {
                "object": "list",
                "data": data,
                "model": body.get("model") or self.behaviour.model,
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            }
        )

    async def _stats(self, request: web.Request) -> web.StreamResponse:
        """Counters as JSON, for a server running in another process."""
        with self._lock:
            c = self._counters
            data = {
                "chat": c.chat,
                "embeddings": c.embeddings,
                "sent_429": c.sent_429,
                "sent_500": c.sent_500,
                "sent_invalid": c.sent_invalid,
                "sent_400": c.sent_400,
                "hung": c.hung,
                "max_inflight": c.max_inflight,
            }
        return web.json_response(data)

    # -- lifecycle ----------------------------------------------------------------

    def _app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/v1/embeddings", self._embeddings)
        app.router.add_get("/v1/_stats", self._stats)
        return app

    async def _start(self, sock: socket.socket) -> None:
        self._stop = asyncio.Event()
        self._runner = web.AppRunner(self._app(), access_log=None, shutdown_timeout=0.5)
        await self._runner.setup()
        await web.SockSite(self._runner, sock).start()

    async def _shutdown(self) -> None:
        if self._stop is not None:
            self._stop.set()
        if self._runner is not None:
            await self._runner.cleanup()

    def start(self) -> LocalLLMServer:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        sock.listen(256)
        self.port = sock.getsockname()[1]
        loop = asyncio.new_event_loop()
        self._loop = loop
        ready = threading.Event()

        def serve() -> None:
            asyncio.set_event_loop(loop)
            loop.run_until_complete(self._start(sock))
            ready.set()
            loop.run_forever()
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

        self._thread = threading.Thread(target=serve, name="llm-test-server", daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("local LLM server did not start")
        return self

    def stop(self) -> None:
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        asyncio.run_coroutine_threadsafe(self._shutdown(), loop).result(timeout=10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        self._loop = self._thread = None

    def __enter__(self) -> LocalLLMServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delay", type=float, default=0.0, help="seconds per chat reply")
    args = parser.parse_args()
    with LocalLLMServer(Behaviour(delay_s=args.delay)) as server:
        print(server.base_url, flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()


if __name__ == "__main__":
    main()
