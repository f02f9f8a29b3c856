"""Four lines that tell a before/after comparison: what broke, what changed, what improved
and what got worse."""

from __future__ import annotations

from typing import Any

from ragtriage.report.compare import Comparison

__all__ = ["story_lines"]


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def _value(v: Any) -> str:
    return "unset" if v is None else str(v)


def story_lines(c: Comparison) -> tuple[str, str, str, str]:
    """``(broke, changed, improved, worse)`` for run B against run A (every figure from
    ``c``).

    *broke*: run A's failing examples by stage and its most frequent error types;
    *changed*: the config keys that differ (the run name left out); *improved*: accuracy
    and the stages and types whose counts fell (or, honestly, that nothing fell);
    *worse*: the stages and types whose counts rose (or that none did), so a fix that
    moves failures from one stage to another says so.
    """
    stages_a = sorted((s for s in c.stages if s.a), key=lambda s: -s.a)
    by_stage = ", ".join(f"{s.stage.value} {s.a}" for s in stages_a) or "no stage"
    top_types = sorted((t for t in c.types if t.a), key=lambda t: -t.a)[:3]
    types = ", ".join(f"{t.error_type.value} {t.title} {t.a}" for t in top_types)
    broke = (
        f"what broke:     {c.failing_a} of {c.examples_a} answers failed (accuracy "
        f"{_pct(c.accuracy_a)}) at {by_stage}" + (f"; top types {types}" if types else "")
    )
    changes = [ch for ch in c.config_changes if ch.key != "name"]
    changed = "what changed:   " + (
        ", ".join(f"{ch.key} {_value(ch.a)} -> {_value(ch.b)}" for ch in changes)
        or "no configuration change"
    )
    fell = [f"{s.stage.value} {s.a} -> {s.b}" for s in c.stages if s.delta < 0]
    fell_types = [
        f"{t.error_type.value} {t.a} -> {t.b}"
        for t in sorted(c.types, key=lambda t: t.delta)
        if t.delta < 0
    ][:3]
    delta = c.accuracy_delta
    acc = (
        f"accuracy {_pct(c.accuracy_a)} -> {_pct(c.accuracy_b)}"
        + ("" if delta is None else f" ({100 * delta:+.1f} pp)")
        + f", failing {c.failing_a} -> {c.failing_b}"
    )
    detail = "; ".join(x for x in (", ".join(fell), ", ".join(fell_types)) if x)
    improved = f"what improved:  {acc}" + (
        f"; {detail}" if detail else "; no stage has fewer failures"
    )
    rose = [f"{s.stage.value} {s.a} -> {s.b}" for s in c.stages if s.delta > 0]
    rose_types = [
        f"{t.error_type.value} {t.a} -> {t.b}"
        for t in sorted(c.types, key=lambda t: -t.delta)
        if t.delta > 0
    ][:3]
    worse_detail = "; ".join(x for x in (", ".join(rose), ", ".join(rose_types)) if x)
    worse = "what got worse: " + (worse_detail or "no stage or error type has more failures")
    return broke, changed, improved, worse
