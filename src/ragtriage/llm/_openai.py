"""OpenAICompatible: an :class:`LLMClient` for any OpenAI-compatible chat endpoint.

vLLM, llama.cpp server, Ollama, LM Studio, TGI and hosted APIs all speak this dialect,
with differences this client absorbs: some ignore ``n`` (the missing samples are then
fetched one by one with distinct seeds, and ``n`` is not sent again), some reject
``response_format`` json_schema with a 400 (the schema then goes into the prompt, and
``response_format`` is not sent again). SDK retries are off: :class:`LLMRunner`
retries, honouring ``Retry-After``, which the errors raised here carry.

With aiohttp installed (``llm.http_transport: auto``) chat calls go out through the
``direct`` transport (:mod:`ragtriage.llm._direct`): the same JSON body posted with
aiohttp, without the SDK's request models, which cost most of the client CPU per call.
``aiohttp`` and ``httpx`` keep the SDK, over its aiohttp transport (the SDK's documented
option for concurrent use, about half the client CPU of its default) or its httpx pool
(compare ``benchmarks/llm_throughput.py --transport httpx`` with the default). The pool belongs to
the event loop that opened it; :meth:`OpenAICompatible.aclose` closes it, and when a loop
run by ``asyncio.run`` ends without that, the pool is closed as the loop shuts down.

There is no default endpoint: ``base_url`` and ``model`` must be configured.
"""

from __future__ import annotations

import asyncio
import functools
import ssl
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ragtriage.config import LLMConfig
from ragtriage.errors import ConfigError, LLMError, LLMTimeoutError
from ragtriage.llm._base import ChatRequest, Completion, Usage
from ragtriage.llm._direct import DirectHTTP, aiohttp_available
from ragtriage.llm._errors import (
    LLMBadResponseError,
    LLMConnectionError,
    LLMStatusError,
    parse_retry_after,
)
from ragtriage.llm._payload import chat_payload
from ragtriage.llm._tokens import estimate_prompt_tokens, estimate_tokens

if TYPE_CHECKING:  # the SDK (with httpx and aiohttp, ~1 s) is imported when a call is made
    import openai

__all__ = ["OpenAICompatible", "client_from_config", "translate_openai_error"]

# Sent when no key is configured: local servers ignore it, and it keeps the SDK from
# picking up OPENAI_API_KEY and sending that secret to an arbitrary endpoint.
_PLACEHOLDER_KEY = "ragtriage-no-key"


def client_from_config(
    config: LLMConfig, *, env: Mapping[str, str] | None = None
) -> OpenAICompatible:
    """Build the HTTP client from a config (unset fields filled from ``RAGTRIAGE_LLM_*``).

    Raises :class:`ConfigError` when no endpoint or model is configured.
    """
    return OpenAICompatible(config.with_env(env))


def translate_openai_error(exc: Exception) -> LLMError:
    """Map an OpenAI SDK exception onto the ragtriage LLM error tree."""
    import openai

    if isinstance(exc, openai.APITimeoutError):
        lost = _lost_connection(exc)
        if lost is not None:
            return LLMConnectionError(f"connection failed ({type(lost).__name__}: {lost})")
        return LLMTimeoutError(f"request timed out: {exc}")
    if isinstance(exc, openai.APIStatusError):
        body = exc.body
        detail = body.get("message") if isinstance(body, dict) else None
        return LLMStatusError(
            detail if isinstance(detail, str) and detail else exc.message,
            status=exc.status_code,
            retry_after_s=parse_retry_after(exc.response.headers),
        )
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__
        detail = f" ({type(cause).__name__}: {cause})" if cause else ""
        return LLMConnectionError(f"{exc.message}{detail}")
    if isinstance(exc, openai.APIResponseValidationError | ValueError):
        return LLMBadResponseError(f"unusable response body: {exc}")
    return LLMError(f"{type(exc).__name__}: {exc}")


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """One verifying TLS context per process: loading the CA roots costs ~40 ms, which
    every new HTTP client would otherwise pay again. The system roots (``SSL_CERT_FILE``
    / ``SSL_CERT_DIR`` honoured by OpenSSL), else certifi's bundle where the system has
    none (python.org builds on macOS)."""
    context = ssl.create_default_context()
    if not context.cert_store_stats().get("x509_ca"):
        try:
            import certifi
        except ImportError:  # pragma: no cover - certifi comes with the SDK's httpx
            return context
        context.load_verify_locations(cafile=certifi.where())
    return context


def _direct(config: LLMConfig) -> bool:
    """Whether chat calls skip the SDK (``direct`` only)."""
    if config.http_transport == "direct":
        if not aiohttp_available():
            raise ConfigError(
                "llm.http_transport is direct but aiohttp is not installed: pip install "
                "'openai[aiohttp]' or set it to httpx",
                field="llm.http_transport",
            )
        return True
    # ``auto`` keeps the SDK (its retries, auth and API changes come with it); ``direct``
    # is an opt-in for bulk judging where the SDK's client CPU shows
    return False


def _http_client(config: LLMConfig) -> Any:
    """The HTTP client under the SDK: aiohttp (``auto`` when installed) or httpx.

    Both are the SDK's own client classes; ours rather than the SDK's implicit default,
    which closes itself from ``__del__`` as a task on whatever loop is running (failing
    with "Event loop is closed" when the pool belongs to an earlier loop).
    """
    import openai

    kind = config.http_transport
    if kind in ("auto", "aiohttp"):
        factory = getattr(openai, "DefaultAioHttpClient", None)
        try:
            if factory is None:
                raise RuntimeError("this openai SDK has no DefaultAioHttpClient")
            return factory(timeout=config.timeout_s, verify=_tls_context())
        except RuntimeError as exc:  # the SDK raises this when aiohttp is missing
            if kind == "aiohttp":
                raise ConfigError(
                    f"llm.http_transport is aiohttp but it cannot be used: {exc}; "
                    "pip install 'openai[aiohttp]' or set it to httpx",
                    field="llm.http_transport",
                ) from exc
    return openai.DefaultAsyncHttpxClient(timeout=config.timeout_s, verify=_tls_context())


# Strong references to the pool-closing tasks: a loop only holds its tasks weakly, and a
# task collected while it waits could no longer close its pool.
_POOL_CLOSERS: set[asyncio.Task[None]] = set()


async def _close_at_loop_end(sdk: openai.AsyncOpenAI | DirectHTTP, release: asyncio.Event) -> None:
    """Hold ``sdk`` until :meth:`OpenAICompatible.aclose` releases it or the loop's
    runner cancels this task at shutdown (``asyncio.run`` cancels and awaits leftover
    tasks), then close its pool on the loop it belongs to."""
    can_await = True
    try:
        await release.wait()
    except GeneratorExit:
        # collected with a loop that was closed without cancelling its tasks (a
        # hand-run loop): nothing can be awaited any more; call aclose() in such loops
        can_await = False
        raise
    finally:
        if can_await:
            await sdk.close()


def _lost_connection(exc: BaseException) -> BaseException | None:
    """The underlying connection error of a "timeout" that was none.

    The SDK's aiohttp transport maps every aiohttp connection error (refused, reset,
    server disconnected) to httpx's ``ConnectTimeout``; the original is in the cause
    chain. A real timeout (``TimeoutError`` anywhere in the chain) stays a timeout.
    """
    chain: list[BaseException] = []
    cause: BaseException | None = exc.__cause__ or exc.__context__
    while cause is not None and len(chain) < 8:
        chain.append(cause)
        cause = cause.__cause__ or cause.__context__
    if any(isinstance(c, TimeoutError) for c in chain):
        return None
    for c in chain:
        if isinstance(c, OSError) or type(c).__module__.startswith("aiohttp"):
            return c
    return None


def _sample_seed(seed: int | None, index: int) -> int | None:
    if seed is None:
        return None if index == 0 else index
    return seed + index


class OpenAICompatible:
    """Async client for an OpenAI-compatible ``/chat/completions`` endpoint.

    One ``openai.AsyncOpenAI`` (one connection pool) is reused for every call made from
    the same event loop; at most ``config.concurrency`` HTTP requests are in flight.
    """

    def __init__(self, config: LLMConfig) -> None:
        if not config.base_url:
            raise ConfigError(
                "no LLM endpoint configured: set llm.base_url or RAGTRIAGE_LLM_BASE_URL",
                field="llm.base_url",
            )
        if not config.model:
            raise ConfigError(
                "no LLM model configured: set llm.model or RAGTRIAGE_LLM_MODEL",
                field="llm.model",
            )
        self._config = config
        self._base_url = config.base_url
        self._model = config.model
        self._n_supported: bool | None = config.supports_n
        self._json_schema_supported: bool | None = config.supports_json_schema
        self._loop: asyncio.AbstractEventLoop | None = None
        self._sdk: openai.AsyncOpenAI | DirectHTTP | None = None
        self._use_direct = _direct(config)
        self._gate: asyncio.Semaphore | None = None
        self._release: asyncio.Event | None = None
        self._closer: asyncio.Task[None] | None = None
        # built now (TLS roots, transport imports: ~0.1 s once), not on the first request;
        # it binds to an event loop only when that request opens a connection
        self._fresh_http: Any = None if self._use_direct else _http_client(config)

    @property
    def model_name(self) -> str:
        return self._model

    @property
    def base_url(self) -> str:
        return self._base_url

    @property
    def supports_n(self) -> bool | None:
        """``None`` until the endpoint was seen honouring (or ignoring) ``n > 1``."""
        return self._n_supported

    @property
    def supports_json_schema(self) -> bool | None:
        return self._json_schema_supported

    def _bound(self) -> tuple[openai.AsyncOpenAI | DirectHTTP, asyncio.Semaphore]:
        """The SDK client (or direct session) and gate for the running loop (connection
        pools are per loop)."""
        import openai

        loop = asyncio.get_running_loop()
        if self._sdk is None or self._gate is None or self._loop is not loop:
            self._sdk = (
                DirectHTTP(
                    self._base_url,
                    self._config.api_key or _PLACEHOLDER_KEY,
                    self._config.timeout_s,
                    _tls_context(),
                )
                if self._use_direct
                else openai.AsyncOpenAI(
                    base_url=self._base_url,
                    api_key=self._config.api_key or _PLACEHOLDER_KEY,
                    max_retries=0,
                    timeout=self._config.timeout_s,
                    http_client=(
                        self._fresh_http
                        if self._fresh_http is not None
                        else _http_client(self._config)
                    ),
                )
            )
            self._fresh_http = None
            self._gate = asyncio.Semaphore(self._config.concurrency)
            self._loop = loop
            self._release = asyncio.Event()
            self._closer = loop.create_task(
                _close_at_loop_end(self._sdk, self._release), name="ragtriage-llm-pool"
            )
            _POOL_CLOSERS.add(self._closer)
            self._closer.add_done_callback(_POOL_CLOSERS.discard)
        return self._sdk, self._gate

    async def aclose(self) -> None:
        """Close the connection pool. From another loop than the one that opened it this
        only forgets the pool (it is closed when its own loop shuts down)."""
        loop, release, closer = self._loop, self._release, self._closer
        self._sdk = self._gate = self._loop = self._release = self._closer = None
        if loop is asyncio.get_running_loop() and release is not None and closer is not None:
            release.set()
            await closer

    async def complete(self, request: ChatRequest) -> Completion:
        started = time.perf_counter()
        n = request.n
        if n > 1 and self._n_supported is False:
            parts = await asyncio.gather(
                *(self._single(request, _sample_seed(request.seed, i)) for i in range(n))
            )
            texts = tuple(t for part_texts, _, _ in parts for t in part_texts[:1])
            usage = sum((u for _, u, _ in parts), Usage())
            model = parts[0][2]
        else:
            texts, usage, model = await self._call(request, n=n, seed=request.seed)
            if n > 1:
                if len(texts) < n:
                    self._n_supported = False
                    extra = await asyncio.gather(
                        *(
                            self._single(request, _sample_seed(request.seed, i))
                            for i in range(len(texts), n)
                        )
                    )
                    texts = texts + tuple(t for part_texts, _, _ in extra for t in part_texts[:1])
                    usage = sum((u for _, u, _ in extra), usage)
                elif self._n_supported is None:
                    self._n_supported = True
        return Completion(
            texts=texts[:n],
            usage=usage,
            latency_s=time.perf_counter() - started,
            model=model,
        )

    async def _single(
        self, request: ChatRequest, seed: int | None
    ) -> tuple[tuple[str, ...], Usage, str]:
        return await self._call(request, n=1, seed=seed)

    async def _call(
        self, request: ChatRequest, *, n: int, seed: int | None
    ) -> tuple[tuple[str, ...], Usage, str]:
        """One HTTP call (two when a json_schema ``response_format`` is refused)."""
        schema = request.json_schema
        if schema is not None and self._json_schema_supported is not False:
            try:
                result = await self._post(request, n=n, seed=seed, schema_mode="response_format")
            except LLMStatusError as exc:
                if exc.status != 400:
                    raise
                result = await self._post(request, n=n, seed=seed, schema_mode="prompt")
                self._json_schema_supported = False
            else:
                self._json_schema_supported = True
            return result
        return await self._post(
            request, n=n, seed=seed, schema_mode="prompt" if schema is not None else "none"
        )

    def _payload(
        self, request: ChatRequest, *, n: int, seed: int | None, schema_mode: str
    ) -> dict[str, Any]:
        return chat_payload(request, model=self._model, n=n, seed=seed, schema_mode=schema_mode)

    async def _post(
        self, request: ChatRequest, *, n: int, seed: int | None, schema_mode: str
    ) -> tuple[tuple[str, ...], Usage, str]:
        payload = self._payload(request, n=n, seed=seed, schema_mode=schema_mode)
        sdk, gate = self._bound()
        async with gate:
            if isinstance(sdk, DirectHTTP):
                body: object = await sdk.post("/chat/completions", payload)
            else:
                import openai

                try:
                    # The SDK's generic ``post`` (its documented way to call any route)
                    # skips the typed request transform and response model construction,
                    # which cost about as much CPU as the HTTP exchange itself; we
                    # validate the plain JSON below instead.
                    body = await sdk.post("/chat/completions", body=payload, cast_to=object)
                except (openai.OpenAIError, ValueError) as exc:
                    raise translate_openai_error(exc) from exc
        texts = _choice_texts(body)
        usage = body.get("usage") if isinstance(body, dict) else None
        prompt_tokens = usage.get("prompt_tokens") if isinstance(usage, dict) else None
        completion_tokens = usage.get("completion_tokens") if isinstance(usage, dict) else None
        if not isinstance(prompt_tokens, int):
            prompt_tokens = estimate_prompt_tokens(request)
        if not isinstance(completion_tokens, int):
            completion_tokens = sum(estimate_tokens(t) for t in texts)
        model = body.get("model") if isinstance(body, dict) else None
        return (
            texts,
            Usage(prompt_tokens=prompt_tokens, completion_tokens=completion_tokens),
            model if isinstance(model, str) and model else str(payload["model"]),
        )


def _choice_texts(body: object) -> tuple[str, ...]:
    """The message texts of a chat completion body, ordered by choice index."""
    choices = body.get("choices") if isinstance(body, dict) else None
    if not isinstance(choices, list) or not choices:
        raise LLMBadResponseError(
            f"response has no choices (got {type(body).__name__}: {str(body)[:120]!r})"
        )
    indexed: list[tuple[int, str]] = []
    for position, choice in enumerate(choices):
        if not isinstance(choice, dict):
            raise LLMBadResponseError(f"choice {position} is not an object")
        message = choice.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, str):
            raise LLMBadResponseError(f"choice {position} has no text content")
        index = choice.get("index")
        indexed.append((index if isinstance(index, int) else position, content))
    indexed.sort(key=lambda pair: pair[0])
    return tuple(text for _, text in indexed)
