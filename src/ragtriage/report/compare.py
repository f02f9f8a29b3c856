"""Before/after comparison of two runs and CI gates on the deltas.

The comparison is seed 000 Table 2 with its "Impr." column: mode counts per error
type and per stage for run A and run B, with B − A deltas, plus accuracy and
incorrect-share deltas, and which advice of A was followed by a drop of its error
types in B.

Gate grammar (one per ``--gate``)::

    METRIC OP VALUE
    METRIC  = accuracy | incorrect_share | failing_share      (delta of a share, 0.02 = 2 pp)
            | answer_correctness                              (delta of the mean claim F1)
            | failing | examples | undetermined              (delta of a count)
            | stage.<chunking|retrieval|reranking|generation>   (delta of a count)
            | type.E1 … type.E16                              (delta of the mode count)
    OP      = <= | >= | < | > | == | !=
    VALUE   = signed number, e.g. +0.02, -0.05, 0

Every gate compares the delta B − A with VALUE: ``accuracy>=+0.02`` needs accuracy
to rise by at least two points, ``stage.retrieval<=0`` needs no more retrieval
failures than before.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict

from ragtriage.errors import InputError
from ragtriage.records import ERROR_TYPE_NAMES, ErrorType, Stage
from ragtriage.report._fmt import fmt_delta
from ragtriage.report.aggregate import Summary

__all__ = [
    "AdviceOutcome",
    "Comparison",
    "ConfigChange",
    "Gate",
    "GateResult",
    "StageDelta",
    "TypeDelta",
    "compare_summaries",
    "config_changes",
    "evaluate_gate",
    "parse_gate",
]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class TypeDelta(_Frozen):
    error_type: ErrorType
    title: str
    stage: Stage
    a: int
    b: int
    delta: int
    second_a: int
    second_b: int


class StageDelta(_Frozen):
    stage: Stage
    a: int
    b: int
    delta: int
    share_a: float | None
    share_b: float | None
    share_delta: float | None


class AdviceOutcome(_Frozen):
    """An advice of run A and how its error types moved in run B."""

    text: str
    count_a: int
    error_types: list[ErrorType]
    before: int
    after: int
    dropped: bool


class ConfigChange(_Frozen):
    key: str
    a: Any
    b: Any


class Comparison(_Frozen):
    run_a: str
    run_b: str
    examples_a: int
    examples_b: int
    accuracy_a: float | None
    accuracy_b: float | None
    accuracy_delta: float | None
    incorrect_share_a: float | None
    incorrect_share_b: float | None
    incorrect_share_delta: float | None
    failing_share_a: float | None
    failing_share_b: float | None
    failing_share_delta: float | None
    failing_a: int
    failing_b: int
    undetermined_a: int
    undetermined_b: int
    stages: list[StageDelta]
    types: list[TypeDelta]
    mode_total_a: int
    mode_total_b: int
    advice: list[AdviceOutcome]
    config_changes: list[ConfigChange]
    #: mean claim-level answer correctness F1 of each run (None: no diagnosis carries one)
    answer_correctness_a: float | None = None
    answer_correctness_b: float | None = None
    answer_correctness_delta: float | None = None


def _delta(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else b - a


def _undetermined(s: Summary) -> int:
    return sum(u.count for u in s.undetermined)


def _flatten(obj: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(obj, Mapping):
        out: dict[str, Any] = {}
        for k, v in obj.items():
            out.update(_flatten(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    return {prefix: obj}


def config_changes(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[ConfigChange]:
    """Leaf keys whose values differ between two nested configs (``api_key`` hidden)."""
    fa, fb = _flatten(a), _flatten(b)
    out = []
    for key in sorted(set(fa) | set(fb)):
        va, vb = fa.get(key), fb.get(key)
        if va != vb:
            if key.split(".")[-1] == "api_key":
                va, vb = ("***" if va else va), ("***" if vb else vb)
            out.append(ConfigChange(key=key, a=va, b=vb))
    return out


def compare_summaries(
    a: Summary,
    b: Summary,
    *,
    name_a: str = "A",
    name_b: str = "B",
    config_a: Mapping[str, Any] | None = None,
    config_b: Mapping[str, Any] | None = None,
) -> Comparison:
    """Run B against run A: every delta is B − A."""
    stages = []
    for sa, sb in zip(a.stages, b.stages, strict=True):
        stages.append(
            StageDelta(
                stage=sa.stage,
                a=sa.count,
                b=sb.count,
                delta=sb.count - sa.count,
                share_a=sa.share,
                share_b=sb.share,
                share_delta=_delta(sa.share, sb.share),
            )
        )
    types = [
        TypeDelta(
            error_type=ta.error_type,
            title=ERROR_TYPE_NAMES[ta.error_type],
            stage=ta.stage,
            a=ta.mode,
            b=tb.mode,
            delta=tb.mode - ta.mode,
            second_a=ta.second,
            second_b=tb.second,
        )
        for ta, tb in zip(a.types, b.types, strict=True)
    ]
    mode_a = {t.error_type: t.mode for t in a.types}
    mode_b = {t.error_type: t.mode for t in b.types}
    advice = []
    for adv in a.advice:
        before = sum(mode_a[t] for t in adv.error_types)
        after = sum(mode_b[t] for t in adv.error_types)
        advice.append(
            AdviceOutcome(
                text=adv.text,
                count_a=adv.count,
                error_types=adv.error_types,
                before=before,
                after=after,
                dropped=bool(adv.error_types) and after < before,
            )
        )
    return Comparison(
        run_a=name_a,
        run_b=name_b,
        examples_a=a.totals.examples,
        examples_b=b.totals.examples,
        accuracy_a=a.accuracy,
        accuracy_b=b.accuracy,
        accuracy_delta=_delta(a.accuracy, b.accuracy),
        incorrect_share_a=a.incorrect_share,
        incorrect_share_b=b.incorrect_share,
        incorrect_share_delta=_delta(a.incorrect_share, b.incorrect_share),
        failing_share_a=a.failing_share,
        failing_share_b=b.failing_share,
        failing_share_delta=_delta(a.failing_share, b.failing_share),
        failing_a=a.totals.failing,
        failing_b=b.totals.failing,
        undetermined_a=_undetermined(a),
        undetermined_b=_undetermined(b),
        stages=stages,
        types=types,
        mode_total_a=a.mode_total,
        mode_total_b=b.mode_total,
        advice=advice,
        config_changes=config_changes(config_a or {}, config_b or {}),
        answer_correctness_a=_f1(a),
        answer_correctness_b=_f1(b),
        answer_correctness_delta=_delta(_f1(a), _f1(b)),
    )


def _f1(s: Summary) -> float | None:
    return s.answer_correctness.f1 if s.answer_correctness is not None else None


# ---------------------------------------------------------------------------- gates

_STAGES = "|".join(s.value for s in Stage)
_GATE_RE = re.compile(
    r"^\s*(?P<metric>accuracy|incorrect_share|failing_share|failing|examples|undetermined"
    r"|answer_correctness"
    rf"|stage\.(?:{_STAGES})|type\.[eE](?:1[0-6]|[1-9]))"
    r"\s*(?P<op><=|>=|==|!=|<|>)\s*(?P<value>[+-]?(?:\d+(?:\.\d*)?|\.\d+))\s*$"
)


class Gate(_Frozen):
    metric: str
    op: str
    value: float
    text: str


class GateResult(_Frozen):
    gate: Gate
    actual: float | None
    passed: bool
    message: str


def parse_gate(text: str) -> Gate:
    """Parse ``METRIC OP VALUE``; bad syntax is an InputError on ``--gate``."""
    m = _GATE_RE.match(text)
    if m is None:
        raise InputError(
            f"bad gate {text!r}; expected METRIC OP VALUE such as 'accuracy>=+0.02', "
            "'stage.retrieval<=0', 'type.E16<=0' or 'incorrect_share<=-0.05' "
            "(metrics: accuracy, incorrect_share, failing_share, answer_correctness, failing, "
            "examples, "
            f"undetermined, stage.<{_STAGES}>, type.E1..E16; "
            "ops: <= >= < > == !=)",
            field="--gate",
        )
    metric = m.group("metric")
    if metric.startswith("type."):
        metric = "type." + metric[5:].upper()
    return Gate(metric=metric, op=m.group("op"), value=float(m.group("value")), text=text.strip())


def _gate_actual(gate: Gate, c: Comparison) -> tuple[float | None, bool]:
    """``(delta, is_share)`` for the gate's metric."""
    m = gate.metric
    if m == "accuracy":
        return c.accuracy_delta, True
    if m == "incorrect_share":
        return c.incorrect_share_delta, True
    if m == "failing_share":
        return c.failing_share_delta, True
    if m == "answer_correctness":
        return c.answer_correctness_delta, False
    if m == "failing":
        return float(c.failing_b - c.failing_a), False
    if m == "examples":
        return float(c.examples_b - c.examples_a), False
    if m == "undetermined":
        return float(c.undetermined_b - c.undetermined_a), False
    if m.startswith("stage."):
        sd = next(s for s in c.stages if s.stage.value == m[6:])
        return float(sd.delta), False
    td = next(t for t in c.types if t.error_type.value == m[5:])
    return float(td.delta), False


def evaluate_gate(gate: Gate, comparison: Comparison) -> GateResult:
    """Check the B − A delta of the gate's metric; an undefined delta fails."""
    actual, is_share = _gate_actual(gate, comparison)
    if actual is None:
        return GateResult(
            gate=gate,
            actual=None,
            passed=False,
            message=f"gate {gate.text} failed: {gate.metric} is undefined in one of the runs "
            "(no judged examples)",
        )
    # compare with a tolerance so 0.1 + 0.2 style float noise cannot flip a gate
    eps = 1e-9
    op = gate.op
    diff = actual - gate.value
    passed = {
        "<=": diff <= eps,
        ">=": diff >= -eps,
        "<": diff < -eps,
        ">": diff > eps,
        "==": abs(diff) <= eps,
        "!=": abs(diff) > eps,
    }[op]
    if is_share:
        shown = fmt_delta(actual, pct=True)
    elif gate.metric == "answer_correctness":
        shown = fmt_delta(actual)  # a mean score: +0.012
    else:
        shown = fmt_delta(int(actual))
    verdict = "passed" if passed else "failed"
    return GateResult(
        gate=gate,
        actual=actual,
        passed=passed,
        message=f"gate {gate.text} {verdict}: delta of {gate.metric} is {shown}",
    )
