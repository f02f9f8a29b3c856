"""The compare page's content: two runs' diagnoses per example (fixed / broken / still
failing), the report's before/after table, metric deltas and the gate verdicts, from the two
runs' indexes (a run of 100k traces is compared without reading its diagnoses).

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
from ragtriage.report.aggregate import summarize
from ragtriage.report.compare import Comparison, compare_summaries, evaluate_gate, parse_gate
from ragtriage.runview import Outcome, RunView

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


def _short(o: Outcome | None) -> str:
    if o is None or o.status == "no_diagnosis":
        return "—"
    if o.status == "undetermined":
        return "undetermined"
    if o.status == "not_failing":
        return o.answer_label or "not failing"
    return " ".join(x for x in (o.stage or "stage ?", o.error_type) if x)


def _config(run_dir: Path) -> dict[str, Any]:
    try:
        data = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    cfg = data.get("config") if isinstance(data, dict) else None
    return cfg if isinstance(cfg, dict) else {}


def compare_runs(
    view_a: RunView,
    view_b: RunView,
    *,
    name_a: str,
    name_b: str,
    gates: Sequence[str] = DEFAULT_GATES,
) -> CompareResult:
    """Compare run B with run A (every delta B − A) from their indexes: the report
    summaries and the per-example verdicts, no diagnosis file is read. A bad gate is an
    InputError."""
    sum_a, sum_b = view_a.summary(), view_b.summary()
    comparison = compare_summaries(
        sum_a.report or summarize([]),
        sum_b.report or summarize([]),
        name_a=name_a,
        name_b=name_b,
        config_a=_config(view_a.path),
        config_b=_config(view_b.path),
    )
    by_a, by_b = view_a.outcomes(), view_b.outcomes()
    transitions: list[Transition] = []
    counts = {k: 0 for k in (*KINDS, "still_passing", "undetermined", "only_a", "only_b")}
    counts["only_a"] = len(by_a.keys() - by_b.keys())
    counts["only_b"] = len(by_b.keys() - by_a.keys())
    judged = ("failing", "not_failing")
    for ex in sorted(by_a.keys() & by_b.keys()):
        a, b = by_a[ex], by_b[ex]
        if a.status not in judged or b.status not in judged:
            counts["undetermined"] += 1
            continue
        fa, fb = a.status == "failing", b.status == "failing"
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
                label_a=a.answer_label or "",
                label_b=b.answer_label or "",
                diag_a=_short(a),
                diag_b=_short(b),
            )
        )
    order = {k: i for i, k in enumerate(("broken", "fixed", "still_failing"))}
    transitions.sort(key=lambda t: (order[t.kind], t.example_id))

    pa, pb = sum_a.sources.get("scores"), sum_b.sources.get("scores")
    deltas: list[MetricDelta] = []
    note = ""
    if pa and pb:
        deltas = compare_scores(read_scores(Path(pa)), read_scores(Path(pb)))
    else:
        missing = name_a if not pa else name_b
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
