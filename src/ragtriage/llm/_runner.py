"""LLMRunner: concurrency, retries, timeouts, caching and accounting around any client.

::

    runner = LLMRunner(client, config, cache=ResponseCache(path))
    completion = await runner.complete(request, purpose="answer_eval")
    outcome = await runner.try_complete(request, purpose="answer_eval")  # or LLMFailure

* at most ``concurrency`` client calls in flight (an asyncio semaphore);
* each attempt bounded by ``timeout_s``; at most ``max_retries`` retries of retryable
  errors (timeouts, 408/409/429/5xx, connection and malformed-body errors), waiting
  ``Retry-After`` when the server sent one, else exponential backoff with jitter, both
  capped by ``backoff_max_s``;
* a per-sample cache: only samples missing from the cache are requested, a request
  fully served from the cache costs 0 tokens and is marked ``cached=True``, identical
  requests in flight at the same time share one call;
* a ledger of calls, cache hits, failures, retries, tokens and cost per ``purpose``;
* ``dry_run=True``: no call is made; the ledger accumulates an estimate instead;
* ``batch=BatchCollector(...)`` (batch mode, :mod:`ragtriage.llm._batch`): no call is
  made either; each sample missing from the cache is added to the batch and the request
  fails with kind ``batch_pending``, or ``batch_failed`` when an imported batch answered
  that sample with an error.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import json
import random
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, NoReturn, TypeVar

from pydantic import BaseModel, ConfigDict

from ragtriage.config import LLMConfig
from ragtriage.errors import LLMError, LLMResponseError, LLMTimeoutError
from ragtriage.llm._base import ChatRequest, Completion, LLMClient, Usage
from ragtriage.llm._cache import DEFAULT_CACHE_PATH, CachedSample, ResponseCache, SampleCache
from ragtriage.llm._errors import (
    LLMBadResponseError,
    LLMBatchFailedError,
    LLMBatchPendingError,
    LLMConnectionError,
    LLMDryRunError,
    LLMStatusError,
    is_retryable,
    retry_after_of,
)
from ragtriage.llm._ledger import Ledger
from ragtriage.llm._tokens import estimate_prompt_tokens

if TYPE_CHECKING:
    from ragtriage.llm._batch import BatchCollector

__all__ = ["FailureKind", "LLMFailure", "LLMRunner", "run_sync"]

T = TypeVar("T")
FailureKind = Literal[
    "timeout",
    "http",
    "connection",
    "response",
    "dry_run",
    "batch_pending",
    "batch_failed",
    "error",
]


class LLMFailure(BaseModel):
    """Why an LLM step produced nothing; callers record the step as ``undetermined``."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    reason: str
    kind: FailureKind
    purpose: str = ""
    attempts: int = 0
    status: int | None = None


class _GaveUp(Exception):
    """Internal: the last error of a call whose retries are spent."""

    def __init__(self, error: LLMError, attempts: int) -> None:
        super().__init__(str(error))
        self.error = error
        self.attempts = attempts


@dataclass
class _LoopState:
    loop: asyncio.AbstractEventLoop
    gate: asyncio.Semaphore
    inflight: dict[str, asyncio.Future[CachedSample]] = field(default_factory=dict)


def _sample_seed(seed: int | None, index: int) -> int | None:
    if seed is None:
        return None if index == 0 else index
    return seed + index


def _failure_of(error: LLMError, *, purpose: str, attempts: int) -> LLMFailure:
    kind: FailureKind
    status: int | None = None
    if isinstance(error, LLMDryRunError):
        kind = "dry_run"
    elif isinstance(error, LLMBatchPendingError):
        kind = "batch_pending"
    elif isinstance(error, LLMBatchFailedError):
        kind, status = "batch_failed", error.status
    elif isinstance(error, LLMTimeoutError):
        kind = "timeout"
    elif isinstance(error, LLMStatusError):
        kind, status = "http", error.status
    elif isinstance(error, LLMConnectionError):
        kind = "connection"
    elif isinstance(error, LLMResponseError):
        kind = "response"
    else:
        kind = "error"
    suffix = f" (after {attempts} attempt{'s' if attempts != 1 else ''})" if attempts else ""
    return LLMFailure(
        reason=f"{error}{suffix}", kind=kind, purpose=purpose, attempts=attempts, status=status
    )


class LLMRunner:
    """Wraps any :class:`LLMClient` with concurrency, retries, timeouts, cache, ledger.

    Settings come from ``config`` (an :class:`LLMConfig`; only the call-policy fields
    are used here). ``cache=None`` disables caching. ``sleep`` and ``jitter_seed`` make
    the retry waits observable and reproducible.
    """

    def __init__(
        self,
        client: LLMClient,
        config: LLMConfig | None = None,
        *,
        cache: SampleCache | None = None,
        ledger: Ledger | None = None,
        dry_run: bool = False,
        batch: BatchCollector | None = None,
        sleep: Callable[[float], Awaitable[None]] | None = None,
        jitter_seed: int | None = None,
    ) -> None:
        cfg = config if config is not None else LLMConfig()
        self._client = client
        self._cache = cache
        self._dry_run = dry_run
        self._batch = batch
        self._concurrency = cfg.concurrency
        self._timeout_s = cfg.timeout_s
        self._max_retries = cfg.max_retries
        self._backoff_base_s = cfg.backoff_base_s
        self._backoff_max_s = cfg.backoff_max_s
        self._ledger = (
            ledger
            if ledger is not None
            else Ledger(
                cfg.price_per_1k_prompt,
                cfg.price_per_1k_completion,
                batch_price_factor=cfg.batch_price_factor,
            )
        )
        self._sleep: Callable[[float], Awaitable[None]] = (
            sleep if sleep is not None else asyncio.sleep
        )
        self._rng = random.Random(jitter_seed)
        model = getattr(client, "model_name", "")
        self._client_model = model if isinstance(model, str) else ""
        self._client_ignores_n = False
        self._state: _LoopState | None = None
        self._estimated: set[str] = set()
        self._owns_cache = False

    @classmethod
    def from_config(
        cls,
        config: LLMConfig,
        *,
        client: LLMClient | None = None,
        cache_path: str | Path | None = None,
        use_cache: bool = True,
        dry_run: bool = False,
    ) -> LLMRunner:
        """A runner over ``client`` (default: the configured OpenAI-compatible endpoint,
        which raises ``ConfigError`` when none is configured) with the configured cache."""
        from ragtriage.llm._openai import client_from_config

        cfg = config.with_env()
        actual = client if client is not None else client_from_config(cfg)
        cache = None
        path = str(cache_path or cfg.cache_path or DEFAULT_CACHE_PATH)
        # a dry run reads the cache but must not create one
        if use_cache and not (dry_run and path != ":memory:" and not Path(path).exists()):
            cache = ResponseCache(path)
        runner = cls(actual, cfg, cache=cache, dry_run=dry_run)
        runner._owns_cache = cache is not None
        return runner

    @property
    def client(self) -> LLMClient:
        return self._client

    @property
    def ledger(self) -> Ledger:
        return self._ledger

    @property
    def cache(self) -> ResponseCache | None:
        """The SQLite cache this runner uses (``None`` without one, or when its cache
        lives elsewhere: the Ray executor's cache actor)."""
        return self._cache if isinstance(self._cache, ResponseCache) else None

    @property
    def dry_run(self) -> bool:
        return self._dry_run

    @property
    def batch(self) -> BatchCollector | None:
        """The batch this runner exports missing samples to (batch mode), else None."""
        return self._batch

    # -- public API -------------------------------------------------------------

    async def complete(self, request: ChatRequest, *, purpose: str) -> Completion:
        """All ``request.n`` samples, from the cache or the client.

        Raises :class:`LLMTimeoutError` / :class:`LLMError` once retries are spent, and
        :class:`LLMDryRunError` in dry-run mode when a sample is not cached.
        """
        try:
            return await self._complete(request, purpose)
        except _GaveUp as gave_up:
            error = gave_up.error
        raise error

    async def try_complete(self, request: ChatRequest, *, purpose: str) -> Completion | LLMFailure:
        """Like :meth:`complete` but returns an :class:`LLMFailure` instead of raising."""
        try:
            return await self._complete(request, purpose)
        except _GaveUp as gave_up:
            return _failure_of(gave_up.error, purpose=purpose, attempts=gave_up.attempts)
        except LLMError as error:
            return _failure_of(error, purpose=purpose, attempts=0)

    async def complete_many(
        self, requests: Iterable[ChatRequest], *, purpose: str
    ) -> list[Completion | LLMFailure]:
        """:meth:`try_complete` for many requests concurrently, results in input order."""
        return list(
            await asyncio.gather(*(self.try_complete(r, purpose=purpose) for r in requests))
        )

    def sample_keys(self, request: ChatRequest) -> list[str]:
        """The cache key of each sample: ``request.cache_key(i)`` with ``n`` normalised
        to 1 (so 5 cached votes serve the first 5 of a later 10-vote request) and the
        client's model filled in when the request leaves it empty."""
        # the same keys as ``request.model_copy(update=...).cache_key(i)``, without the
        # copy and with one JSON encoding for all samples (this runs on every request)
        data = request.model_dump(mode="json")
        data["n"] = 1
        data["model"] = request.model or self._client_model
        blob = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return [hashlib.sha256(f"{blob}#sample={i}".encode()).hexdigest() for i in range(request.n)]

    async def aclose(self) -> None:
        """Close the client (if it can be closed) and a cache this runner opened."""
        closer = getattr(self._client, "aclose", None)
        if callable(closer):
            result = closer()
            if asyncio.iscoroutine(result):
                await result
        self.close()

    def close(self) -> None:
        if self._owns_cache and self._cache is not None:
            self._cache.close()

    async def __aenter__(self) -> LLMRunner:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    # -- internals --------------------------------------------------------------

    def _loop_state(self) -> _LoopState:
        loop = asyncio.get_running_loop()
        if self._state is None or self._state.loop is not loop:
            self._state = _LoopState(loop=loop, gate=asyncio.Semaphore(self._concurrency))
        return self._state

    async def _complete(self, request: ChatRequest, purpose: str) -> Completion:
        self._ledger.record_request(purpose)
        try:
            return await self._resolve(request, purpose)
        except _GaveUp as gave_up:
            timeout = isinstance(gave_up.error, LLMTimeoutError)
            self._ledger.record_failure(purpose, timeout=timeout)
            raise
        except (LLMDryRunError, LLMBatchPendingError):
            raise
        except LLMError:
            self._ledger.record_failure(purpose)
            raise

    async def _resolve(self, request: ChatRequest, purpose: str) -> Completion:
        started = time.perf_counter()
        keys = self.sample_keys(request)
        hits = self._cache.get_many(keys) if self._cache is not None else {}
        samples: dict[int, CachedSample] = {i: hits[k] for i, k in enumerate(keys) if k in hits}
        missing = [i for i in range(request.n) if i not in samples]
        if samples:
            self._ledger.record_cache_hits(purpose, len(samples))
        if not missing:
            return self._assemble(request, samples, Usage(), cached=True, started=started)
        if self._dry_run:
            self._estimate(request, [keys[i] for i in missing], purpose)
            raise LLMDryRunError(
                f"dry run: {len(missing)} of {request.n} sample(s) not cached; no call made"
            )
        if self._batch is not None:
            self._to_batch(self._batch, request, keys, missing, purpose)

        state = self._loop_state()
        shared = {i: state.inflight[keys[i]] for i in missing if keys[i] in state.inflight}
        owned = [i for i in missing if i not in shared]
        futures: dict[int, asyncio.Future[CachedSample]] = {}
        for i in owned:
            futures[i] = state.inflight[keys[i]] = state.loop.create_future()
        usage = Usage()
        try:
            if owned:
                fetched, usage = await self._fetch(request, owned, keys, purpose)
                if any(i not in fetched for i in owned):
                    raise LLMBadResponseError("the client returned fewer samples than asked")
                for i, sample in fetched.items():
                    futures[i].set_result(sample)
                samples.update(fetched)
        except BaseException as exc:
            # requests that joined this one fail the same way (same kind, same attempts)
            shared_error: BaseException = (
                exc
                if isinstance(exc, _GaveUp | LLMError)
                else LLMError(f"the identical request this one joined failed: {exc!r}")
            )
            for fut in futures.values():
                if not fut.done():
                    fut.set_exception(shared_error)
                    fut.exception()  # mark retrieved: nobody may be waiting
            raise
        finally:
            for i in owned:
                if state.inflight.get(keys[i]) is futures[i]:
                    del state.inflight[keys[i]]
        if shared:
            joined = await asyncio.gather(*shared.values())
            samples.update(zip(shared, joined, strict=True))
            self._ledger.record_cache_hits(purpose, len(shared))
        return self._assemble(request, samples, usage, cached=not owned, started=started)

    @staticmethod
    def _assemble(
        request: ChatRequest,
        samples: dict[int, CachedSample],
        usage: Usage,
        *,
        cached: bool,
        started: float,
    ) -> Completion:
        """The completion; ``latency_s`` is what the caller waited (queueing included)."""
        texts = tuple(samples[i].text for i in range(request.n))
        return Completion(
            texts=texts,
            usage=usage,
            cached=cached,
            model=samples[0].model,
            latency_s=time.perf_counter() - started,
        )

    def _estimate(self, request: ChatRequest, missing_keys: Sequence[str], purpose: str) -> None:
        new = [k for k in missing_keys if k not in self._estimated]
        if not new:
            return
        self._estimated.update(new)
        calls = len(new) if self._ignores_n() and len(new) > 1 else 1
        self._ledger.record_estimate(
            purpose,
            calls=calls,
            prompt_tokens=calls * estimate_prompt_tokens(request),
            completion_tokens=len(new) * request.max_tokens,
        )

    def _to_batch(
        self,
        batch: BatchCollector,
        request: ChatRequest,
        keys: list[str],
        missing: list[int],
        purpose: str,
    ) -> NoReturn:
        """Batch mode: a recorded batch failure of a missing sample fails the request;
        otherwise the missing samples join the batch (estimated at the batch price)."""
        missing_keys = [keys[i] for i in missing]
        failed = batch.failures(missing_keys, self.cache)
        if failed:
            key = next(k for k in missing_keys if k in failed)
            record = failed[key]
            where = f" ({record.source})" if record.source else ""
            raise LLMBatchFailedError(
                f"the batch answered with an error: {record.message}{where}",
                status=record.status,
            )
        new = [k for k in missing_keys if k not in self._estimated]
        if new:
            self._estimated.update(new)
            self._ledger.record_estimate(
                purpose,
                calls=len(new),
                prompt_tokens=len(new) * estimate_prompt_tokens(request),
                completion_tokens=len(new) * request.max_tokens,
            )
        batch.add(request, [(i, keys[i]) for i in missing], purpose)
        raise LLMBatchPendingError(
            f"batch mode: {len(missing)} of {request.n} sample(s) not answered yet "
            "(added to the batch; no call made)"
        )

    def _ignores_n(self) -> bool:
        """Whether ``n > 1`` is known to be ignored: seen here, or reported by a client
        that fetches the missing samples itself (it would bundle K requests into one call
        under one timeout, uncached and counted as one call until all K arrive)."""
        return self._client_ignores_n or getattr(self._client, "supports_n", None) is False

    async def _fetch(
        self, request: ChatRequest, indices: list[int], keys: list[str], purpose: str
    ) -> tuple[dict[int, CachedSample], Usage]:
        """Fetch the samples ``indices``; every paid sample is cached at once."""
        got: dict[int, CachedSample] = {}
        usage = Usage()
        pending = list(indices)

        def keep(idx: Sequence[int], completion: Completion) -> None:
            nonlocal usage
            usage = usage + completion.usage
            count = len(completion.texts)
            new = {
                i: CachedSample(
                    text=text,
                    model=completion.model,
                    prompt_tokens=completion.usage.prompt_tokens // count,
                    completion_tokens=completion.usage.completion_tokens // count,
                )
                for i, text in zip(idx, completion.texts, strict=False)
            }
            got.update(new)
            if self._cache is not None:
                self._cache.put_many((keys[i], s) for i, s in new.items())

        if len(pending) == 1 or not self._ignores_n():
            if pending == list(range(request.n)):
                sub = request
            else:
                sub = request.model_copy(
                    update={"n": len(pending), "seed": _sample_seed(request.seed, pending[0])}
                )
            completion = await self._call(sub, purpose)
            taken = min(len(completion.texts), len(pending))
            keep(pending[:taken], completion)
            if taken < len(pending):
                self._client_ignores_n = True
            pending = pending[taken:]
        if pending:
            singles = [
                request.model_copy(update={"n": 1, "seed": _sample_seed(request.seed, i)})
                for i in pending
            ]
            outcomes = await asyncio.gather(
                *(self._call(s, purpose) for s in singles), return_exceptions=True
            )
            first_error: BaseException | None = None
            for i, outcome in zip(pending, outcomes, strict=True):
                if isinstance(outcome, BaseException):
                    first_error = first_error or outcome
                else:
                    keep([i], outcome)
            if first_error is not None:
                raise first_error
        return got, usage

    async def _call(self, request: ChatRequest, purpose: str) -> Completion:
        """One client call with timeout and bounded retries; raises ``_GaveUp``."""
        state = self._loop_state()
        attempt = 0
        while True:
            attempt += 1
            error: LLMError
            try:
                async with state.gate, asyncio.timeout(self._timeout_s):
                    # asyncio.timeout: wait_for's semantics without an extra task per call
                    completion = await self._client.complete(request)
                if not completion.texts:
                    raise LLMBadResponseError("the client returned no text")
            except TimeoutError:
                error = LLMTimeoutError(f"no answer within {self._timeout_s:g}s")
            except LLMError as exc:
                error = exc
            else:
                self._ledger.record_call(purpose, completion.usage)
                return completion
            if attempt > self._max_retries or not is_retryable(error):
                raise _GaveUp(error, attempt)
            self._ledger.record_retry(purpose)
            await self._sleep(self._backoff(attempt, retry_after_of(error)))

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        """Wait before retry ``attempt``: Retry-After if given, else exponential backoff
        with "equal jitter"; never more than ``backoff_max_s``."""
        if retry_after is not None:
            return min(retry_after, self._backoff_max_s)
        cap = min(self._backoff_max_s, self._backoff_base_s * 2.0 ** (attempt - 1))
        return cap / 2 + self._rng.uniform(0.0, cap / 2)


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to completion from synchronous code (CLI commands).

    Uses ``asyncio.run``; inside an already running loop (a notebook) it runs the
    coroutine on a fresh loop in a worker thread instead.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()
