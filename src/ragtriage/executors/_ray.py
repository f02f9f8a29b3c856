"""Diagnose traces on a Ray cluster (extra ``.[ray]``): ``--executor ray[:ADDRESS]``.

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

**The LLM judge is not sent to Ray.** Its work is waiting on the endpoint: one
process with ``--concurrency N`` already keeps a vLLM server busy, and the runner's
SQLite response cache (every paid answer kept by content hash) is one file that a
worker on another machine could not share safely. Spreading it would need either a
cache actor (every lookup a network round trip through one process) or per-shard
caches merged at the end (a repeated prompt paid once per shard). We choose neither:
``--executor ray --judge llm`` is a configuration error that says to use the local
executor, whose single cache guarantees no paid call is made twice.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

from ragtriage.config import DiagnosisConfig
from ragtriage.errors import ConfigError
from ragtriage.records import Diagnosis, Trace

__all__ = ["DEFAULT_BATCH", "Executor", "diagnose_on_ray", "parse_executor"]

DEFAULT_BATCH = 256


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
    if batch_size < 1:
        raise ConfigError("batch size must be >= 1", field="--batch-size")
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
        task = ray.remote(num_cpus=1, max_retries=2)(_batch_task)
        cfg_json = config.model_dump_json()
        batches = [list(traces[i : i + batch_size]) for i in range(0, len(traces), batch_size)]
        window = max(2, 2 * int(ray.cluster_resources().get("CPU", 1)))
        results: dict[int, list[Diagnosis]] = {}
        pending: dict[Any, int] = {}
        nxt = 0  # next batch to submit
        flushed = 0  # next batch to hand on
        out: list[Diagnosis] = []
        while flushed < len(batches):
            while nxt < len(batches) and len(pending) < window:
                lines = [t.model_dump_json() for t in batches[nxt]]
                pending[task.remote(strategy, cfg_json, lines)] = nxt
                nxt += 1
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                i = pending.pop(ref)
                results[i] = [Diagnosis.model_validate_json(j) for j in ray.get(ref)]
            while flushed in results:
                batch = results.pop(flushed)
                out.extend(batch)
                if on_batch is not None:
                    on_batch(batch)
                flushed += 1
        return out
    finally:
        if started:
            ray.shutdown()
