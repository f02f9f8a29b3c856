"""A/B on evaluation metrics: paired deltas with a paired bootstrap, and gates that do not
fire on noise.

Gate grammar (one per ``--gate``; the diagnosis gates of :mod:`ragtriage.report.compare`
keep their own)::

    METRIC OP VALUE       e.g. faithfulness>=-0.01, context_precision@5>=0, f1>+0.02
    METRIC = faithfulness | answer_relevancy | context_precision@K | context_recall
           | exact_match | f1 | rouge_l | semantic_similarity
           | answer_correctness.precision | answer_correctness.recall | answer_correctness.f1
    OP     = <= | >= | < | >

The delta is B − A over the examples both runs scored (paired by ``example_id``). A gate
fails only when the whole 95 % paired-bootstrap interval of the delta violates it:
``faithfulness>=-0.01`` fails when even the interval's upper end is below −0.01.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict

from ragtriage.errors import InputError

__all__ = [
    "MetricDelta",
    "MetricGate",
    "MetricGateResult",
    "compare_scores",
    "evaluate_metric_gate",
    "is_metric_gate",
    "parse_metric_gate",
    "read_scores",
]

_METRIC = (
    r"answer_correctness\.(?:precision|recall|f1)|faithfulness|answer_relevancy"
    r"|context_precision@\d+|context_recall|exact_match|f1|rouge_l|semantic_similarity"
)
_GATE_RE = re.compile(
    rf"^\s*(?P<metric>{_METRIC})\s*(?P<op><=|>=|<|>)\s*(?P<value>[+-]?(?:\d+(?:\.\d*)?|\.\d+))\s*$"
)


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class MetricDelta(_Frozen):
    metric: str
    n_pairs: int
    mean_a: float | None
    mean_b: float | None
    delta: float | None
    ci95: tuple[float, float] | None
    p_value: float | None = None


class MetricGate(_Frozen):
    metric: str
    op: str
    value: float
    text: str


class MetricGateResult(_Frozen):
    gate: MetricGate
    actual: float | None
    ci95: tuple[float, float] | None
    passed: bool
    message: str


def is_metric_gate(text: str) -> bool:
    return re.match(rf"^\s*(?:{_METRIC})\s*[<>]", text) is not None


def parse_metric_gate(text: str) -> MetricGate:
    m = _GATE_RE.match(text)
    if m is None:
        raise InputError(
            f"bad metric gate {text!r}; expected METRIC OP VALUE such as "
            "'faithfulness>=-0.01' (ops: <= >= < >)",
            field="--gate",
        )
    return MetricGate(
        metric=m.group("metric"), op=m.group("op"), value=float(m.group("value")), text=text.strip()
    )


def read_scores(path: Path) -> dict[str, dict[str, float]]:
    """``{example_id: {metric: value}}`` of a ``scores.jsonl`` (undetermined left out)."""
    out: dict[str, dict[str, float]] = {}
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            values = {
                name: float(cell["value"])
                for name, cell in row["scores"].items()
                if not isinstance(cell["value"], str)
            }
            out[str(row["example_id"])] = values
        except (ValueError, KeyError, TypeError) as exc:
            raise InputError(f"not a scores line: {exc}", path=str(path), line=lineno) from exc
    return out


def compare_scores(
    a: dict[str, dict[str, float]],
    b: dict[str, dict[str, float]],
    *,
    seed: int = 0,
    resamples: int = 2000,
) -> list[MetricDelta]:
    """Paired B − A delta per metric with a seeded paired-bootstrap 95 % interval and a
    two-sided bootstrap p-value (share of resampled deltas on the other side of 0)."""
    metrics = sorted({m for s in (*a.values(), *b.values()) for m in s})
    out: list[MetricDelta] = []
    for i, metric in enumerate(metrics):
        ids = sorted(e for e in a.keys() & b.keys() if metric in a[e] and metric in b[e])
        if not ids:
            out.append(
                MetricDelta(
                    metric=metric, n_pairs=0, mean_a=None, mean_b=None, delta=None, ci95=None
                )
            )
            continue
        va = np.array([a[e][metric] for e in ids])
        vb = np.array([b[e][metric] for e in ids])
        d = vb - va
        rng = np.random.default_rng(seed + i)
        boots = d[rng.integers(0, len(d), size=(resamples, len(d)))].mean(axis=1)
        lo, hi = np.percentile(boots, [2.5, 97.5])
        mean = float(d.mean())
        p = (
            1.0
            if mean == 0
            else float(min(1.0, 2 * np.mean(boots <= 0 if mean > 0 else boots >= 0)))
        )
        out.append(
            MetricDelta(
                metric=metric,
                n_pairs=len(ids),
                mean_a=round(float(va.mean()), 6),
                mean_b=round(float(vb.mean()), 6),
                delta=round(mean, 6),
                ci95=(round(float(lo), 6), round(float(hi), 6)),
                p_value=round(p, 6),
            )
        )
    return out


def evaluate_metric_gate(gate: MetricGate, deltas: Sequence[MetricDelta]) -> MetricGateResult:
    d = next((x for x in deltas if x.metric == gate.metric), None)
    if d is None or d.delta is None or d.ci95 is None:
        return MetricGateResult(
            gate=gate,
            actual=None,
            ci95=None,
            passed=False,
            message=f"gate {gate.text} failed: {gate.metric} has no paired scores "
            "(run `ragtriage evaluate` on both runs)",
        )
    lo, hi = d.ci95
    v = gate.value
    # fails only when the whole interval violates the bound
    violated = {"<=": lo > v, "<": lo >= v, ">=": hi < v, ">": hi <= v}[gate.op]
    verdict = "failed" if violated else "passed"
    noise = (
        "" if violated or _holds(d.delta, gate.op, v) else " (violated by the mean, within noise)"
    )
    return MetricGateResult(
        gate=gate,
        actual=d.delta,
        ci95=d.ci95,
        passed=not violated,
        message=f"gate {gate.text} {verdict}: delta of {gate.metric} is {d.delta:+.4f} "
        f"(95% CI {lo:+.4f}..{hi:+.4f}, p={d.p_value}, {d.n_pairs} pairs){noise}",
    )


def _holds(x: float, op: str, v: float) -> bool:
    return {"<=": x <= v, "<": x < v, ">=": x >= v, ">": x > v}[op]
