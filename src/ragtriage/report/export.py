"""CSV and JSON exports: one row per example, and the summary.

Empty cells stand for "not available" (never a made-up 0): a share over zero items
is written empty in CSV and ``null`` in JSON.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ragtriage.jsonl import atomic_write_text
from ragtriage.records import ERROR_TYPE_NAMES, Diagnosis, Trace
from ragtriage.report.aggregate import Summary, dedupe_diagnoses, mode_vote_count

__all__ = [
    "EXAMPLE_COLUMNS",
    "example_rows",
    "examples_csv",
    "report_json",
    "summary_csv",
    "summary_rows",
    "write_csv",
    "write_json",
]

EXAMPLE_COLUMNS: tuple[str, ...] = (
    "example_id",
    "trace_id",
    "label",
    "answer_label",
    "needs_diagnosis",
    "stage",
    "error_type",
    "error_type_title",
    "second_type",
    "mode_votes",
    "mode_frequency",
    "undetermined",
    "undetermined_reason",
    "judge",
    "strategy",
    "llm_calls",
    "cached_calls",
    "prompt_tokens",
    "completion_tokens",
    "query",
    "ground_truth",
    "answer",
    "advice",
)


def example_rows(
    diagnoses: Sequence[Diagnosis], traces: Sequence[Trace] | None = None
) -> list[dict[str, Any]]:
    """One dict per example (keys :data:`EXAMPLE_COLUMNS`); ``None`` = not available."""
    diags, _ = dedupe_diagnoses(diagnoses)
    by_trace = {t.trace_id: t for t in traces or ()}
    by_example = {t.example.example_id: t for t in traces or ()}
    rows: list[dict[str, Any]] = []
    for d in diags:
        t = by_trace.get(d.trace_id) or by_example.get(d.example_id)
        mv = mode_vote_count(d)
        rows.append(
            {
                "example_id": d.example_id,
                "trace_id": d.trace_id,
                "label": d.label,
                "answer_label": d.answer_label.value if d.answer_label else None,
                "needs_diagnosis": d.needs_diagnosis,
                "stage": d.stage.value if d.stage else None,
                "error_type": d.error_type.value if d.error_type else None,
                "error_type_title": ERROR_TYPE_NAMES[d.error_type] if d.error_type else None,
                "second_type": d.second_type.value if d.second_type else None,
                "mode_votes": f"{mv[0]}/{mv[1]}" if mv else None,
                "mode_frequency": d.mode_frequency,
                "undetermined": d.undetermined,
                "undetermined_reason": d.undetermined_reason,
                "judge": d.judge,
                "strategy": d.strategy,
                "llm_calls": d.usage.calls,
                "cached_calls": d.usage.cached_calls,
                "prompt_tokens": d.usage.prompt_tokens,
                "completion_tokens": d.usage.completion_tokens,
                "query": t.example.query if t else None,
                "ground_truth": t.example.answer if t else None,
                "answer": t.answer if t else None,
                "advice": " | ".join(d.advice) if d.advice else None,
            }
        )
    return rows


def _cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _csv(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    for r in rows:
        w.writerow([_cell(v) for v in r])
    return buf.getvalue()


def examples_csv(diagnoses: Sequence[Diagnosis], traces: Sequence[Trace] | None = None) -> str:
    rows = example_rows(diagnoses, traces)
    return _csv(EXAMPLE_COLUMNS, [[r[c] for c in EXAMPLE_COLUMNS] for r in rows])


def summary_rows(summary: Summary) -> list[tuple[str, str, str, Any]]:
    """The summary in long form: ``(section, key, metric, value)``."""
    out: list[tuple[str, str, str, Any]] = []
    for k, v in summary.totals.model_dump().items():
        out.append(("totals", "", k, v))
    for k in ("accuracy", "incorrect_share", "failing_share"):
        out.append(("headline", "", k, getattr(summary, k)))
    for s in summary.stages:
        out.append(("stage", s.stage.value, "count", s.count))
        out.append(("stage", s.stage.value, "share", s.share))
    out.append(("stage", "undetermined", "count", summary.stage_undetermined))
    for t in summary.types:
        out.append(("type", t.error_type.value, "mode", t.mode))
        out.append(("type", t.error_type.value, "second", t.second))
    for st in summary.stage_type_totals:
        out.append(("type_stage", st.stage.value, "mode_share", st.mode_share))
        out.append(("type_stage", st.stage.value, "second_share", st.second_share))
    for b in summary.mode_frequency:
        out.append(("mode_frequency", b.label, "count", b.count))
    for p in summary.cooccurrence.top:
        out.append(("cooccurrence", f"{p.first.value}+{p.second.value}", "count", p.count))
    for lb in summary.by_label:
        out.append(("label", lb.label, "examples", lb.examples))
        out.append(("label", lb.label, "failing", lb.failing))
        out.append(("label", lb.label, "accuracy", lb.accuracy))
    for u in summary.undetermined:
        out.append(("undetermined", u.step, u.reason, u.count))
    out.append(("undetermined", "type_votes", "undetermined votes", summary.undetermined_votes))
    for k, v in summary.usage.model_dump().items():
        out.append(("usage", "", k, v))
    for i, a in enumerate(summary.advice, start=1):
        out.append(("advice", str(i), a.text, a.count))
    return out


def summary_csv(summary: Summary) -> str:
    return _csv(("section", "key", "metric", "value"), summary_rows(summary))


def report_json(
    summary: Summary,
    diagnoses: Sequence[Diagnosis],
    traces: Sequence[Trace] | None = None,
    *,
    run: dict[str, Any] | None = None,
) -> str:
    """``{"run": ..., "summary": ..., "examples": [...]}`` as indented JSON."""
    payload = {
        "run": run or {},
        "summary": summary.model_dump(mode="json"),
        "examples": example_rows(diagnoses, traces),
    }
    return json.dumps(payload, ensure_ascii=False, indent=2, allow_nan=False) + "\n"


def write_csv(
    path: str | Path,
    summary: Summary,
    diagnoses: Sequence[Diagnosis],
    traces: Sequence[Trace] | None,
) -> Path:
    """Write the per-example CSV to ``path`` and the summary beside it
    (``<stem>.summary.csv``); return the summary path."""
    p = Path(path)
    atomic_write_text(p, examples_csv(diagnoses, traces))
    sp = p.with_name(f"{p.stem}.summary.csv")
    atomic_write_text(sp, summary_csv(summary))
    return sp


def write_json(
    path: str | Path,
    summary: Summary,
    diagnoses: Sequence[Diagnosis],
    traces: Sequence[Trace] | None,
    *,
    run: dict[str, Any] | None = None,
) -> None:
    atomic_write_text(path, report_json(summary, diagnoses, traces, run=run))
