"""Summaries, terminal tables, the HTML report, exports and run comparison."""

# The submodules load on first use of one of their names: `ragtriage diagnose` needs the
# summary and the terminal tables, not the HTML report, exports or run comparison
# (benchmarks/startup.py).
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ragtriage import _lazy

if TYPE_CHECKING:
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

#: Public name -> the submodule that defines it (loaded on first use of the name).
_EXPORTS: dict[str, str] = {
    "AdviceCount": "aggregate",
    "AnswerTotals": "aggregate",
    "Cooccurrence": "aggregate",
    "LabelBreakdown": "aggregate",
    "ModeFrequencyBin": "aggregate",
    "Summary": "aggregate",
    "summarize": "aggregate",
    "Comparison": "compare",
    "Gate": "compare",
    "GateResult": "compare",
    "compare_summaries": "compare",
    "evaluate_gate": "compare",
    "parse_gate": "compare",
    "example_rows": "export",
    "report_json": "export",
    "write_csv": "export",
    "write_json": "export",
    "render_html": "html",
    "write_html": "html",
    "headline": "terminal",
    "render_comparison": "terminal",
    "render_headline": "terminal",
    "render_runs": "terminal",
    "render_summary": "terminal",
    "render_trend": "terminal",
}


def __getattr__(name: str) -> Any:
    return _lazy.load(__name__, _EXPORTS, globals(), name)


def __dir__() -> list[str]:
    return _lazy.names(_EXPORTS, globals())


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
