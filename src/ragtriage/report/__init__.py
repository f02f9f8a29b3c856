"""Summaries, terminal tables, the HTML report, exports and run comparison."""

from __future__ import annotations

from ragtriage.report.aggregate import (
    AdviceCount,
    AnswerTotals,
    Cooccurrence,
    LabelBreakdown,
    ModeFrequencyBin,
    Summary,
    summarize,
)
from ragtriage.report.compare import (
    Comparison,
    Gate,
    GateResult,
    compare_summaries,
    evaluate_gate,
    parse_gate,
)
from ragtriage.report.export import example_rows, report_json, write_csv, write_json
from ragtriage.report.html import render_html, write_html
from ragtriage.report.terminal import (
    headline,
    render_comparison,
    render_headline,
    render_runs,
    render_summary,
    render_trend,
)

__all__ = [
    "AdviceCount",
    "AnswerTotals",
    "Comparison",
    "Cooccurrence",
    "Gate",
    "GateResult",
    "LabelBreakdown",
    "ModeFrequencyBin",
    "Summary",
    "compare_summaries",
    "evaluate_gate",
    "example_rows",
    "headline",
    "parse_gate",
    "render_comparison",
    "render_headline",
    "render_html",
    "render_runs",
    "render_summary",
    "render_trend",
    "report_json",
    "summarize",
    "write_csv",
    "write_html",
    "write_json",
]
