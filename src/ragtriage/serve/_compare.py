"""The compare page's content: two runs' diagnoses per example (fixed / broken / still
failing), the report's before/after table, metric deltas and the gate verdicts.

Reuses :mod:`ragtriage.report.compare` (Table 2 with Impr., diagnosis gates) and
:mod:`ragtriage.metrics` (paired metric deltas and metric gates), like
``ragtriage compare``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragtriage.metrics import (
    MetricDelta,
    compare_scores,
    evaluate_metric_gate,
    is_metric_gate,
    parse_metric_gate,
    read_scores,
)
from ragtriage.records import Diagnosis
from ragtriage.report.aggregate import dedupe_diagnoses, summarize
from ragtriage.report.compare import Comparison, compare_summaries, evaluate_gate, parse_gate
from ragtriage.store import read_diagnoses

__all__ = [
    "DEFAULT_GATES",
    "CompareResult",
    "GateVerdict",
    "Transition",
    "compare_runs",
    "parse_gates",
]

#: Gates the compare page checks when the URL names none: no accuracy regression.
DEFAULT_GATES: tuple[str, ...] = ("accuracy>=0",)
KINDS = ("fixed", "broken", "still_failing")


@dataclass(frozen=True)
class Transition:
    example_id: str
    trace_id_a: str | None
    trace_id_b: str | None
    kind: str  # fixed | broken | still_failing
    label_a: str
    label_b: str
    diag_a: str
    diag_b: str


@dataclass(frozen=True)
class GateVerdict:
    text: str
    passed: bool
    message: str


@dataclass(frozen=True)
class CompareResult:
    comparison: Comparison
    transitions: tuple[Transition, ...]
    counts: dict[str, int]
    metric_deltas: tuple[MetricDelta, ...]
    metrics_note: str
    gates: tuple[GateVerdict, ...]

    @property
    def passed(self) -> bool:
        return all(g.passed for g in self.gates)


def _failing(d: Diagnosis) -> bool | None:
    if d.answer_label is None:
        return None
    return d.needs_diagnosis


def _short(d: Diagnosis | None) -> str:
    if d is None:
        return "—"
    if d.answer_label is None:
        return "undetermined"
    if not d.needs_diagnosis:
        return d.answer_label.value
    parts = [d.stage.value if d.stage else "stage ?"]
    if d.error_type is not None:
        parts.append(d.error_type.value)
    return " ".join(parts)


def _config(run_dir: Path) -> dict[str, Any]:
    try:
        data = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    cfg = data.get("config") if isinstance(data, dict) else None
    return cfg if isinstance(cfg, dict) else {}


def _diagnoses(run_dir: Path) -> list[Diagnosis]:
    path = run_dir / "diagnoses.jsonl"
    if not path.is_file():
        return []
    diags, _ = dedupe_diagnoses(read_diagnoses(path))
    return diags


def compare_runs(
    dir_a: Path,
    dir_b: Path,
    *,
    name_a: str,
    name_b: str,
    gates: Sequence[str] = DEFAULT_GATES,
) -> CompareResult:
    """Compare run B with run A (every delta B − A); a bad gate is an InputError."""
    da, db = _diagnoses(dir_a), _diagnoses(dir_b)
    comparison = compare_summaries(
        summarize(da),
        summarize(db),
        name_a=name_a,
        name_b=name_b,
        config_a=_config(dir_a),
        config_b=_config(dir_b),
    )
    by_a = {d.example_id: d for d in da}
    by_b = {d.example_id: d for d in db}
    transitions: list[Transition] = []
    counts = {k: 0 for k in (*KINDS, "still_passing", "undetermined", "only_a", "only_b")}
    counts["only_a"] = len(by_a.keys() - by_b.keys())
    counts["only_b"] = len(by_b.keys() - by_a.keys())
    for ex in sorted(by_a.keys() & by_b.keys()):
        a, b = by_a[ex], by_b[ex]
        fa, fb = _failing(a), _failing(b)
        if fa is None or fb is None:
            counts["undetermined"] += 1
            continue
        if not fa and not fb:
            counts["still_passing"] += 1
            continue
        kind = "still_failing" if fa and fb else ("fixed" if fa else "broken")
        counts[kind] += 1
        transitions.append(
            Transition(
                example_id=ex,
                trace_id_a=a.trace_id,
                trace_id_b=b.trace_id,
                kind=kind,
                label_a=a.answer_label.value if a.answer_label else "undetermined",
                label_b=b.answer_label.value if b.answer_label else "undetermined",
                diag_a=_short(a),
                diag_b=_short(b),
            )
        )
    order = {k: i for i, k in enumerate(("broken", "fixed", "still_failing"))}
    transitions.sort(key=lambda t: (order[t.kind], t.example_id))

    sa, sb = dir_a / "scores.jsonl", dir_b / "scores.jsonl"
    deltas: list[MetricDelta] = []
    note = ""
    if sa.is_file() and sb.is_file():
        deltas = compare_scores(read_scores(sa), read_scores(sb))
    else:
        missing = name_a if not sa.is_file() else name_b
        note = f"no scores.jsonl in {missing} (run `ragtriage evaluate RUN --out RUN`)"

    verdicts: list[GateVerdict] = []
    for text in gates:
        if not text.strip():
            continue
        if is_metric_gate(text):
            mg = parse_metric_gate(text)
            if not deltas:
                verdicts.append(GateVerdict(text=mg.text, passed=False, message=note))
                continue
            mr = evaluate_metric_gate(mg, deltas)
            verdicts.append(GateVerdict(text=mg.text, passed=mr.passed, message=mr.message))
        else:
            g = parse_gate(text)
            r = evaluate_gate(g, comparison)
            verdicts.append(GateVerdict(text=g.text, passed=r.passed, message=r.message))
    return CompareResult(
        comparison=comparison,
        transitions=tuple(transitions),
        counts=counts,
        metric_deltas=tuple(deltas),
        metrics_note=note,
        gates=tuple(verdicts),
    )


def parse_gates(texts: Sequence[str]) -> list[str]:
    """Gate texts from the URL (empty ones dropped); raises InputError on bad syntax."""
    out = [t.strip() for t in texts if t.strip()]
    for t in out:
        if is_metric_gate(t):
            parse_metric_gate(t)
        else:
            parse_gate(t)
    return out
