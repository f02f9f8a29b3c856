"""Evaluation metrics (``ragtriage evaluate``) next to the diagnosis in the reports.

A run directory "has metrics" when ``ragtriage evaluate RUN --out RUN`` wrote
``scores.jsonl`` (per trace) and ``metrics.json`` (means with bootstrap CIs) into it;
``--scores`` points elsewhere. The HTML report and the terminal summary then show the
aggregate and the failing examples sorted by faithfulness (lowest first) with each
example's metric values beside its stage and type.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragtriage.errors import InputError
from ragtriage.records import Diagnosis

__all__ = [
    "MetricRow",
    "RunMetrics",
    "load_run_metrics",
    "lowest_faithfulness",
]

SCORES = "scores.jsonl"
AGGREGATE = "metrics.json"
#: metrics shown beside each failing example (when the file has them)
EXAMPLE_METRICS = (
    "faithfulness",
    "answer_relevancy",
    "context_recall",
    "f1",
    "semantic_similarity",
)


@dataclass(frozen=True)
class MetricRow:
    """One metric of the aggregate: mean and 95 % CI (``None`` when undetermined)."""

    name: str
    mean: float | None
    ci95: tuple[float, float] | None
    n: int
    undetermined: int
    judge: str


@dataclass(frozen=True)
class RunMetrics:
    """A run's evaluation metrics: the aggregate rows and per-example values."""

    source: str
    judge: str
    rows: tuple[MetricRow, ...]
    #: example id -> metric -> value (``None``: undetermined)
    by_example: Mapping[str, Mapping[str, float | None]] = field(default_factory=dict)

    def faithfulness(self, example_id: str) -> float | None:
        return self.by_example.get(example_id, {}).get("faithfulness")

    def example_values(self, example_id: str) -> list[tuple[str, float | None]]:
        """The :data:`EXAMPLE_METRICS` the example has, in that order."""
        vals = self.by_example.get(example_id, {})
        return [(m, vals[m]) for m in EXAMPLE_METRICS if m in vals]


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", path=str(path)) from exc
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON: {exc.msg}", path=str(path), line=exc.lineno) from exc


def _rows(aggregate: Any, path: Path) -> tuple[str, tuple[MetricRow, ...]]:
    if not isinstance(aggregate, dict) or not isinstance(aggregate.get("metrics"), dict):
        raise InputError("expected an object with 'metrics'", path=str(path), field="metrics")
    rows: list[MetricRow] = []
    for name, cell in aggregate["metrics"].items():
        if not isinstance(cell, dict):
            raise InputError("expected an object", path=str(path), field=f"metrics.{name}")
        mean = cell.get("mean")
        ci = cell.get("ci95")
        und = cell.get("undetermined") or {}
        judges = cell.get("judge") or []
        rows.append(
            MetricRow(
                name=str(name),
                mean=float(mean) if isinstance(mean, int | float) else None,
                ci95=(float(ci[0]), float(ci[1]))
                if isinstance(ci, list) and len(ci) == 2
                else None,
                n=int(cell.get("n", 0)),
                undetermined=sum(int(v) for v in und.values()) if isinstance(und, dict) else 0,
                judge=", ".join(str(j) for j in judges)
                if isinstance(judges, list)
                else str(judges),
            )
        )
    return str(aggregate.get("judge", "")), tuple(rows)


def _by_example(path: Path) -> dict[str, dict[str, float | None]]:
    out: dict[str, dict[str, float | None]] = {}
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            out[str(row["example_id"])] = {
                name: None if isinstance(cell["value"], str) else float(cell["value"])
                for name, cell in row["scores"].items()
            }
        except (ValueError, KeyError, TypeError) as exc:
            raise InputError(f"not a scores line: {exc}", path=str(path), line=lineno) from exc
    return out


def load_run_metrics(run_dir: str | Path, scores: str | Path | None = None) -> RunMetrics | None:
    """The metrics of a run directory (``scores.jsonl`` and ``metrics.json`` beside it,
    or ``scores`` and the ``metrics.json`` next to that file); ``None`` when there are
    none (nothing is shown then)."""
    spath = Path(scores) if scores is not None else Path(run_dir) / SCORES
    if not spath.is_file():
        if scores is not None:
            raise InputError("no such scores file", path=str(spath))
        return None
    apath = spath.with_name(AGGREGATE)
    judge, rows = _rows(_read_json(apath), apath) if apath.is_file() else ("", ())
    return RunMetrics(source=str(spath), judge=judge, rows=rows, by_example=_by_example(spath))


def lowest_faithfulness(
    diagnoses: Sequence[Diagnosis], metrics: RunMetrics, n: int = 10
) -> list[tuple[Diagnosis, float]]:
    """Failing examples with a faithfulness score, lowest first (ties by example id)."""
    out = [
        (d, f)
        for d in diagnoses
        if d.needs_diagnosis and (f := metrics.faithfulness(d.example_id)) is not None
    ]
    return sorted(out, key=lambda p: (p[1], p[0].example_id))[:n]
