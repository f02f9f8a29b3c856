"""Filters, rows and pages of a run view (the run page's query parameters)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields

__all__ = ["QUESTION_CHARS", "SORTS", "Page", "TraceFilter", "TraceRow", "check_sort"]

#: a row's question is cut to this many characters
QUESTION_CHARS = 200
SORTS = ("position", "confidence", "-confidence")


def check_sort(sort: str) -> str:
    """``sort`` if it is one of :data:`SORTS` or ``[-]metric:<name>``; else ValueError."""
    if sort in SORTS:
        return sort
    name = sort.removeprefix("-")
    if name.startswith("metric:") and len(name) > len("metric:"):
        return sort
    raise ValueError(
        f"sort: unknown order {sort!r}; use position, confidence, -confidence, "
        "metric:<name> or -metric:<name>"
    )


_FLOATS = ("conf_min", "conf_max", "metric_min", "metric_max")
_STRINGS = ("stage", "type", "answer_label", "question_type", "critic_tier", "metric")


@dataclass(frozen=True)
class TraceFilter:
    """Which traces a run page lists; ``None`` fields do not filter. ``type`` is the
    modal error type; ``answer_label`` is a label, ``undetermined``, ``failing`` or
    ``not_failing`` (the judge's verdict); ``critic_tier`` matches any RAG-Critic tag;
    ``text`` is a case- and width-insensitive substring of the question (query
    parameter ``q``)."""

    stage: str | None = None
    type: str | None = None
    answer_label: str | None = None
    question_type: str | None = None
    critic_tier: str | None = None
    conf_min: float | None = None
    conf_max: float | None = None
    metric: str | None = None
    metric_min: float | None = None
    metric_max: float | None = None
    text: str | None = None

    @classmethod
    def from_query(cls, params: Mapping[str, str]) -> TraceFilter:
        """From URL query parameters of the same names (``q`` is the text); empty
        values do not filter; a bad number raises ValueError naming the parameter."""
        values: dict[str, str | float | None] = {}
        for name in _STRINGS:
            raw = params.get(name)
            values[name] = raw.strip() or None if raw is not None else None
        for name in _FLOATS:
            raw = params.get(name)
            if raw is None or not raw.strip():
                values[name] = None
                continue
            try:
                value = float(raw)
            except ValueError:
                raise ValueError(f"{name}: expected a number, got {raw!r}") from None
            if not math.isfinite(value):
                raise ValueError(f"{name}: expected a finite number, got {raw!r}")
            values[name] = value
        raw_q = params.get("q")
        values["text"] = raw_q.strip() or None if raw_q is not None else None
        if (values["metric_min"] is not None or values["metric_max"] is not None) and values[
            "metric"
        ] is None:
            raise ValueError("metric: give the metric name with metric_min / metric_max")
        return cls(**values)  # type: ignore[arg-type]

    def to_query(self) -> dict[str, str]:
        """The query parameters that give this filter back (only the set ones)."""
        out: dict[str, str] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None:
                continue
            key = "q" if f.name == "text" else f.name
            out[key] = repr(value) if isinstance(value, float) else str(value)
        return out

    @property
    def empty(self) -> bool:
        return all(getattr(self, f.name) is None for f in fields(self))


@dataclass(frozen=True)
class TraceRow:
    """One line of a run page."""

    trace_id: str
    position: int
    question: str
    answer_label: str | None
    stage: str | None
    types: tuple[str, ...]
    confidence: float | None
    question_type: str | None
    critic_tier: str | None
    metrics: Mapping[str, float] = field(default_factory=dict)
    example_id: str = ""


@dataclass(frozen=True)
class Page:
    """One page of a query: ``total`` matching traces, ``page`` is 1-based."""

    total: int
    page: int
    page_size: int
    rows: tuple[TraceRow, ...]

    @property
    def pages(self) -> int:
        return max(1, -(-self.total // self.page_size))
