"""Latency and cost from traces: p50/p95 per stage, tokens and cost per query."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ragtriage.records import Trace

__all__ = ["latency_cost"]


def _pct(values: list[float], q: float) -> float:
    return round(float(np.percentile(np.asarray(values), q, method="linear")), 3)


def latency_cost(
    traces: Sequence[Trace], price_per_1k_prompt: float = 0.0, price_per_1k_completion: float = 0.0
) -> dict[str, Any]:
    """``{"stages": {stage: {n, p50_ms, p95_ms}}, "total": {...}, "tokens_per_query": ...,
    "cost_per_query": ...}``; stages no trace recorded are absent, and with no stage stats
    at all the figures are ``undetermined``."""
    per_stage: dict[str, list[float]] = {}
    totals: list[float] = []
    prompt: list[int] = []
    completion: list[int] = []
    for t in traces:
        if not t.stages:
            continue
        for name, st in t.stages.items():
            per_stage.setdefault(name, []).append(st.latency_ms)
        totals.append(sum(st.latency_ms for st in t.stages.values()))
        prompt.append(sum(st.prompt_tokens for st in t.stages.values()))
        completion.append(sum(st.completion_tokens for st in t.stages.values()))
    if not totals:
        return {"undetermined": "no trace records stage latency or tokens"}
    stages = {
        name: {"n": len(v), "p50_ms": _pct(v, 50), "p95_ms": _pct(v, 95)}
        for name, v in sorted(per_stage.items())
    }
    pt, ct = float(np.mean(prompt)), float(np.mean(completion))
    return {
        "stages": stages,
        "total": {"n": len(totals), "p50_ms": _pct(totals, 50), "p95_ms": _pct(totals, 95)},
        "tokens_per_query": {"prompt": round(pt, 3), "completion": round(ct, 3)},
        "cost_per_query": round(
            pt / 1000 * price_per_1k_prompt + ct / 1000 * price_per_1k_completion, 8
        ),
    }
