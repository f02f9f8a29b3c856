"""Where the work runs: the local process (default) or a Ray cluster (extra ``.[ray]``)."""

from ragtriage.executors._ray import (
    DEFAULT_BATCH,
    Executor,
    diagnose_llm_on_ray,
    diagnose_on_ray,
    parse_executor,
    ray_session,
)
from ragtriage.executors._run import check_run_on_ray, run_examples_on_ray, score_traces_on_ray

__all__ = [
    "DEFAULT_BATCH",
    "Executor",
    "check_run_on_ray",
    "diagnose_llm_on_ray",
    "diagnose_on_ray",
    "parse_executor",
    "ray_session",
    "run_examples_on_ray",
    "score_traces_on_ray",
]
