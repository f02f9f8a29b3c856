"""Where the work runs: the local process (default) or a Ray cluster (extra ``.[ray]``)."""

from ragtriage.executors._ray import DEFAULT_BATCH, Executor, diagnose_on_ray, parse_executor

__all__ = ["DEFAULT_BATCH", "Executor", "diagnose_on_ray", "parse_executor"]
