"""Retrieval metrics over plain id lists (ir_measures-style names).

Each metric takes ``(ranked_ids, relevant)`` and returns a float, or ``None`` when it
is undefined — there are no relevant ids (never NaN). A repeated id in the ranking
counts at its first position only. Binary relevance.

Names (case-insensitive) accepted by :func:`parse_metric`::

    recall@k  R@k          |top-k ∩ relevant| / |relevant|
    precision@k  P@k       |top-k ∩ relevant| / k
    hit@k  success@k       1 if any relevant id is in the top k
    mrr  RR  mrr@k  RR@k   1 / rank of the first relevant id (0 if none)
    ndcg@k  nDCG@k         DCG@k / ideal DCG@k with gains 1/log2(rank + 1)
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ragtriage.errors import InputError

__all__ = [
    "Metric",
    "evaluate",
    "hit_at",
    "mrr",
    "mrr_at",
    "ndcg_at",
    "parse_metric",
    "precision_at",
    "recall_at",
]

Run = tuple[Sequence[str], Collection[str]]


def _dedup(ids: Sequence[str]) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for i in ids:
        if i not in seen:
            seen.add(i)
            out.append(i)
    return out


@dataclass(frozen=True)
class Metric:
    """A named metric: ``metric(ranked_ids, relevant) -> float | None``."""

    name: str
    fn: Callable[[list[str], frozenset[str]], float]
    k: int | None = None

    def __call__(self, ranked_ids: Sequence[str], relevant: Collection[str]) -> float | None:
        rel = frozenset(relevant)
        if not rel:
            return None
        ranked = _dedup(ranked_ids)
        if self.k is not None:
            ranked = ranked[: self.k]
        return float(self.fn(ranked, rel))


def _check_k(k: int) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"cutoff k must be a positive integer, got {k!r}")
    return k


def recall_at(k: int) -> Metric:
    k = _check_k(k)
    return Metric(f"recall@{k}", lambda r, rel: sum(1 for i in r if i in rel) / len(rel), k)


def precision_at(k: int) -> Metric:
    k = _check_k(k)
    return Metric(f"precision@{k}", lambda r, rel: sum(1 for i in r if i in rel) / k, k)


def hit_at(k: int) -> Metric:
    k = _check_k(k)
    return Metric(f"hit@{k}", lambda r, rel: 1.0 if any(i in rel for i in r) else 0.0, k)


def _rr(ranked: list[str], rel: frozenset[str]) -> float:
    for pos, i in enumerate(ranked, start=1):
        if i in rel:
            return 1.0 / pos
    return 0.0


def mrr_at(k: int) -> Metric:
    k = _check_k(k)
    return Metric(f"mrr@{k}", _rr, k)


#: Reciprocal rank of the first relevant id over the whole ranking.
mrr = Metric("mrr", _rr)


def ndcg_at(k: int) -> Metric:
    k = _check_k(k)

    def fn(ranked: list[str], rel: frozenset[str]) -> float:
        dcg = sum(1.0 / math.log2(p + 1) for p, i in enumerate(ranked, start=1) if i in rel)
        ideal = sum(1.0 / math.log2(p + 1) for p in range(1, min(len(rel), k) + 1))
        return dcg / ideal

    return Metric(f"ndcg@{k}", fn, k)


_ALIASES: dict[str, Callable[[int], Metric]] = {
    "recall": recall_at,
    "r": recall_at,
    "precision": precision_at,
    "p": precision_at,
    "hit": hit_at,
    "success": hit_at,
    "mrr": mrr_at,
    "rr": mrr_at,
    "ndcg": ndcg_at,
}
_NAME = re.compile(r"^\s*([a-z]+)\s*(?:@\s*(\d+))?\s*$", re.IGNORECASE)


def parse_metric(name: str) -> Metric:
    """A :class:`Metric` from a name such as ``"recall@5"``, ``"P@3"``, ``"mrr"``."""
    m = _NAME.match(name)
    if not m:
        raise InputError(f"cannot parse metric name {name!r}", field="metric")
    base, k = m.group(1).lower(), m.group(2)
    if base not in _ALIASES:
        raise InputError(
            f"unknown metric {name!r}; known: recall@k, precision@k, hit@k, mrr, ndcg@k",
            field="metric",
        )
    if k is None:
        if base in ("mrr", "rr"):
            return mrr
        raise InputError(f"metric {name!r} needs a cutoff, e.g. {base}@5", field="metric")
    if int(k) < 1:
        raise InputError(f"metric {name!r}: cutoff must be at least 1", field="metric")
    return _ALIASES[base](int(k))


def evaluate(
    names: Iterable[str | Metric], runs: Iterable[Run] | Mapping[str, Run]
) -> dict[str, dict[str, Any]]:
    """Mean of each metric over ``runs`` (pairs of ranked ids and relevant ids, or a
    mapping query id → pair). Undefined cases (no relevant ids) are left out of the
    mean and counted: ``{name: {"mean": float | None, "n": int, "undefined": int}}``.
    ``mean`` is ``None`` when no run defines the metric."""
    metrics = [n if isinstance(n, Metric) else parse_metric(n) for n in names]
    pairs = list(runs.values()) if isinstance(runs, Mapping) else list(runs)
    out: dict[str, dict[str, Any]] = {}
    for metric in metrics:
        values = [metric(ranked, rel) for ranked, rel in pairs]
        defined = [v for v in values if v is not None]
        out[metric.name] = {
            "mean": sum(defined) / len(defined) if defined else None,
            "n": len(defined),
            "undefined": len(values) - len(defined),
        }
    return out
