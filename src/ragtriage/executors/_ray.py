"""Diagnose traces on a Ray cluster (extra ``.[ray]``): ``--executor ray[:ADDRESS]``.

:func:`ray_map` is the one dispatcher behind ``diagnose``, ``calibrate``, ``run`` and
``evaluate`` on Ray (the last two in :mod:`ragtriage.executors._run`).

The traces are cut into batches (``batch_size`` traces, compact JSON) and each batch
is one Ray task that rebuilds the rules diagnoser from its strategy and config and
returns the diagnoses as JSON lines. At most ``2 x cluster CPUs`` batches are in
flight; finished batches are handed to ``on_batch`` **in input order** (a batch that
finishes early waits for the ones before it), so the output file is always a prefix
of the input order and a killed run resumes from where it stopped (the caller skips
the example ids already written).

``ray`` alone joins the cluster this process already joined, else the one named by
``RAY_ADDRESS``, else starts a local one (and shuts it down at the end);
``ray:ADDRESS`` joins that cluster (``ray://host:10001`` or ``host:6379``).

**The LLM judge on Ray** (:func:`diagnose_llm_on_ray`) keeps the runner's two promises
across workers with a **cache actor**: one Ray actor, pinned to the driver's node, owns
the SQLite response cache (the same file the local executor uses), and every worker's
runner looks samples up and stores them through it, so a paid answer is kept the moment it
arrives and no call is made twice -- not by another worker, not by a retried task, not by a
resumed run. A lookup is one round trip to the actor (milliseconds, against an endpoint's
hundreds). The concurrency limit is shared out: each of the at most ``2 x cluster CPUs``
batches in flight gets ``max(1, concurrency // in_flight)`` requests, so the cluster never
has more than the configured number outstanding (at least one per batch). Two workers
asking for the same new prompt at the same moment may both pay for it once (the first
answer stored wins); per-shard caches would pay it once per shard for the whole run.
Workers read the endpoint's address and key from their own environment
(``RAGTRIAGE_LLM_*``, ``OPENAI_API_KEY``; a remote cluster sets them in its
``runtime_env``): no key travels in a task's arguments. ``calibrate --judge llm`` on Ray
diagnoses its LLM settings through :func:`diagnose_llm_on_ray` too; ``run`` (LLM stages)
and ``evaluate`` (LLM judge, ``--selfcheck``) use :func:`cache_actor`,
:func:`concurrency_share` and :func:`worker_runner` the same way.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from ragtriage.config import DiagnosisConfig
from ragtriage.errors import ConfigError
from ragtriage.records import Diagnosis, Trace

__all__ = [
    "DEFAULT_BATCH",
    "Executor",
    "diagnose_llm_on_ray",
    "diagnose_on_ray",
    "parse_executor",
    "ray_map",
    "ray_session",
    "worker_cached",
]

DEFAULT_BATCH = 256
T = TypeVar("T")
R = TypeVar("R")


class Executor:
    """``local`` or ``ray`` with an optional cluster address."""

    def __init__(self, kind: str, address: str | None = None) -> None:
        self.kind = kind
        self.address = address

    @property
    def is_ray(self) -> bool:
        return self.kind == "ray"

    def __repr__(self) -> str:
        return self.kind + (f":{self.address}" if self.address else "")


def parse_executor(spec: str) -> Executor:
    """``local`` | ``ray`` | ``ray:ADDRESS``."""
    kind, _, address = spec.partition(":")
    if kind == "local" and not address:
        return Executor("local")
    if kind == "ray":
        return Executor("ray", address or None)
    raise ConfigError(
        f"unknown executor {spec!r}; expected local, ray or ray:ADDRESS", field="--executor"
    )


def _ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise ConfigError(
            "--executor ray needs Ray: pip install 'ragtriage[ray]'", field="--executor"
        ) from exc
    return ray


def _batch_task(strategy: str, config: str, lines: list[str]) -> list[str]:
    """Ray task body: diagnose one batch with the rules judge (JSON in, JSON out)."""
    from ragtriage.diagnosis.engine import Diagnoser
    from ragtriage.llm import run_sync

    diagnoser = Diagnoser(
        "rules",
        strategy,  # type: ignore[arg-type]
        DiagnosisConfig.model_validate_json(config),
    )
    traces = [Trace.model_validate_json(line) for line in lines]
    return [d.to_json() for d in run_sync(diagnoser.diagnose_many(traces))]


@contextmanager
def ray_session(executor: Executor) -> Iterator[Any]:
    """The ``ray`` module, joined to the executor's cluster (see the module docstring);
    a cluster started here is shut down on exit."""
    ray = _ray()
    started = False
    if not ray.is_initialized():
        address = executor.address or os.environ.get("RAY_ADDRESS") or None
        try:
            ray.init(
                address=address,
                include_dashboard=False,
                log_to_driver=False,
                configure_logging=False,
            )
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise ConfigError(
                f"cannot start or join the Ray cluster {address or '(local)'}: {exc}",
                field="--executor",
            ) from exc
        started = True
    try:
        yield ray
    finally:
        if started:
            ray.shutdown()


def ray_map(
    fn: Callable[..., R],
    items: Sequence[Any],
    *,
    encode: Callable[[Any], str] = str,
    executor: Executor,
    batch_size: int = DEFAULT_BATCH,
    args: tuple[Any, ...] = (),
    shared: Any = None,
) -> Iterator[R]:
    """``fn(*args, [shared_ref], lines)`` for each batch of ``batch_size`` items (each
    encoded as one JSON line by ``encode`` when its batch is submitted), as
    Ray tasks (at most 2 x cluster CPUs in flight), yielding each batch's output lines
    **in input order** (a batch that finishes early waits for the ones before it).

    ``shared`` (a large object every task needs, e.g. an index) is put in the object
    store once and handed to ``fn`` as a one-element list holding its reference, so a
    worker fetches it only when it has not cached it yet (:func:`worker_cached`).
    ``fn`` must be a module-level function (workers import it by name).
    """
    if batch_size < 1:
        raise ConfigError("batch size must be >= 1", field="--batch-size")
    with ray_session(executor) as ray:
        task = ray.remote(num_cpus=1, max_retries=2)(fn)
        extra: tuple[Any, ...] = args
        if shared is not None:
            extra = (*args, [ray.put(shared)])
        starts = list(range(0, len(items), batch_size))
        window = max(2, 2 * int(ray.cluster_resources().get("CPU", 1)))
        results: dict[int, R] = {}
        pending: dict[Any, int] = {}
        nxt = 0  # next batch to submit
        flushed = 0  # next batch to hand on
        while flushed < len(starts):
            while nxt < len(starts) and len(pending) < window:
                lo = starts[nxt]
                batch = [encode(x) for x in items[lo : lo + batch_size]]
                pending[task.remote(*extra, batch)] = nxt
                nxt += 1
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                results[pending.pop(ref)] = ray.get(ref)
            while flushed in results:
                yield results.pop(flushed)
                flushed += 1


_WORKER_CACHE: dict[str, Any] = {}


def worker_cached(key: str, shared: list[Any], build: Callable[[Any], T]) -> T:
    """In a Ray worker process: ``build(ray.get(shared[0]))`` once per ``key`` (the last
    key only: a new run's object replaces the previous one, and a connection its
    retriever holds, a pgvector table's, is closed)."""
    if key not in _WORKER_CACHE:
        import ray

        for old in _WORKER_CACHE.values():
            close = getattr(getattr(old, "retriever", None), "close", None)
            if callable(close):
                close()
        _WORKER_CACHE.clear()
        _WORKER_CACHE[key] = build(ray.get(shared[0]))
    value: T = _WORKER_CACHE[key]
    return value


def diagnose_on_ray(
    traces: Sequence[Trace],
    *,
    strategy: str,
    config: DiagnosisConfig,
    executor: Executor,
    batch_size: int = DEFAULT_BATCH,
    on_batch: Callable[[list[Diagnosis]], None] | None = None,
) -> list[Diagnosis]:
    """Rules diagnoses of ``traces`` computed by Ray tasks, in input order."""
    out: list[Diagnosis] = []
    for done in ray_map(
        _batch_task,
        traces,
        encode=Trace.model_dump_json,
        executor=executor,
        batch_size=batch_size,
        args=(strategy, config.model_dump_json()),
    ):
        batch = [Diagnosis.model_validate_json(j) for j in done]
        out.extend(batch)
        if on_batch is not None:
            on_batch(batch)
    return out


class _CacheService:
    """The cache actor's body: the driver's :class:`ResponseCache`, served to workers
    (samples as JSON, so nothing but strings crosses the wire)."""

    def __init__(self, path: str) -> None:
        from ragtriage.llm import ResponseCache

        self._cache = ResponseCache(path)

    def get_many(self, keys: list[str]) -> dict[str, str]:
        return {k: s.model_dump_json() for k, s in self._cache.get_many(keys).items()}

    def put_many(self, items: list[tuple[str, str]]) -> None:
        from ragtriage.llm import CachedSample

        self._cache.put_many((k, CachedSample.model_validate_json(j)) for k, j in items)

    def size(self) -> int:
        return len(self._cache)

    def close(self) -> None:
        self._cache.close()


class ActorCache:
    """A worker's view of the cache actor (:class:`~ragtriage.llm.SampleCache`)."""

    def __init__(self, actor: Any) -> None:
        self._actor = actor

    def get_many(self, keys: Sequence[str]) -> dict[str, Any]:
        import ray

        from ragtriage.llm import CachedSample

        found: dict[str, str] = ray.get(self._actor.get_many.remote(list(keys)))
        return {k: CachedSample.model_validate_json(j) for k, j in found.items()}

    def put_many(self, items: Any) -> None:
        import ray

        rows = [(k, s.model_dump_json()) for k, s in items]
        if rows:
            ray.get(self._actor.put_many.remote(rows))

    def close(self) -> None:  # the actor's owner closes the file
        return None


def _llm_batch_task(
    strategy: str, config: str, llm: str, concurrency: int, cache: list[Any], lines: list[str]
) -> list[str]:
    """Ray task body: diagnose one batch with the LLM judge, its samples looked up and
    stored through the cache actor (``cache[0]``; an empty list: no cache)."""
    from ragtriage.diagnosis.engine import Diagnoser
    from ragtriage.llm import run_sync

    runner = worker_runner(llm, concurrency, cache)
    diagnoser = Diagnoser(
        "llm",
        strategy,  # type: ignore[arg-type]
        DiagnosisConfig.model_validate_json(config),
        runner,
    )
    traces = [Trace.model_validate_json(line) for line in lines]

    async def go() -> list[str]:
        # one event loop for the batch: the client's connection pool belongs to it
        try:
            return [d.to_json() for d in await diagnoser.diagnose_many(traces, concurrency)]
        finally:
            await runner.aclose()

    return run_sync(go())


def diagnose_llm_on_ray(
    traces: Sequence[Trace],
    *,
    strategy: str,
    config: DiagnosisConfig,
    llm: Any,
    cache_path: str | None,
    concurrency: int,
    executor: Executor,
    batch_size: int = DEFAULT_BATCH,
    on_batch: Callable[[list[Diagnosis]], None] | None = None,
) -> list[Diagnosis]:
    """LLM-judge diagnoses of ``traces`` computed by Ray tasks, in input order, through
    one cache actor on this node (see the module docstring). ``llm`` is the
    :class:`~ragtriage.config.LLMConfig` (its key and address are read by each worker
    from its environment); ``cache_path`` ``None`` runs without a cache."""
    out: list[Diagnosis] = []
    with ray_session(executor) as ray, cache_actor(ray, cache_path) as actors:
        share = concurrency_share(ray, concurrency)
        public = keyless(llm)
        for done in ray_map(
            _llm_batch_task,
            traces,
            encode=Trace.model_dump_json,
            executor=executor,
            batch_size=batch_size,
            args=(strategy, config.model_dump_json(), public.model_dump_json(), share, actors),
        ):
            batch = [Diagnosis.model_validate_json(j) for j in done]
            out.extend(batch)
            if on_batch is not None:
                on_batch(batch)
    return out


@contextmanager
def cache_actor(ray: Any, cache_path: str | None) -> Iterator[list[Any]]:
    """``[actor]``: the cache actor over ``cache_path``, pinned to this node (``[]``
    without a cache), closed and stopped on exit."""
    actors: list[Any] = []
    if cache_path is not None:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        if cache_path != ":memory:":  # the actor's working directory is not the driver's
            cache_path = str(Path(cache_path).resolve())

        here = ray.get_runtime_context().get_node_id()
        service = ray.remote(num_cpus=0)(_CacheService).options(
            scheduling_strategy=NodeAffinitySchedulingStrategy(here, soft=False)
        )
        actors.append(service.remote(cache_path))
    try:
        yield actors
    finally:
        for actor in actors:
            ray.get(actor.close.remote())
            ray.kill(actor)


def keyless(llm: Any) -> Any:
    """The endpoint's :class:`~ragtriage.config.LLMConfig` without its key, as tasks get
    it: each worker reads its key from its own environment (``worker_runner``)."""
    return llm.model_copy(update={"api_key": None})


def concurrency_share(ray: Any, concurrency: int) -> int:
    """Each in-flight batch's part of the configured LLM concurrency (at least 1)."""
    in_flight = max(2, 2 * int(ray.cluster_resources().get("CPU", 1)))
    return max(1, concurrency // in_flight)


def worker_runner(
    llm: str, concurrency: int, cache: list[Any], wrap: Callable[[Any], Any] | None = None
) -> Any:
    """In a Ray worker: an :class:`~ragtriage.llm.LLMRunner` for the configured endpoint
    (read from the worker's environment) whose samples go through the cache actor;
    ``wrap`` wraps its client (the pipeline's per-stage meter)."""
    from ragtriage.config import LLMConfig
    from ragtriage.llm import LLMRunner
    from ragtriage.llm._openai import client_from_config

    cfg = LLMConfig.model_validate_json(llm).with_env()
    cfg = cfg.model_copy(update={"concurrency": concurrency})
    client = client_from_config(cfg)
    if wrap is not None:
        client = wrap(client)
    return LLMRunner(client, cfg, cache=ActorCache(cache[0]) if cache else None)
