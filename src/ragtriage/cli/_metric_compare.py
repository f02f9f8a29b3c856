"""Metric columns and metric gates of ``ragtriage compare`` (issue 11): the runs'
``scores.jsonl`` (written by ``ragtriage evaluate RUN --out RUN``) compared pairwise."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import typer
from rich.table import Table

from ragtriage.errors import InputError
from ragtriage.jsonl import atomic_write_text
from ragtriage.metrics import (
    MetricGate,
    compare_scores,
    evaluate_metric_gate,
    is_metric_gate,
    parse_metric_gate,
    read_scores,
)
from ragtriage.report.terminal import make_console

__all__ = ["metric_gates_of", "run_metric_gates"]


def metric_gates_of(texts: Sequence[str]) -> tuple[list[MetricGate], list[str]]:
    """Split ``--gate`` values into metric gates and diagnosis gates."""
    metric = [parse_metric_gate(t) for t in texts if is_metric_gate(t)]
    return metric, [t for t in texts if not is_metric_gate(t)]


def _scores_path(run: str, given: Path | None) -> Path | None:
    if given is not None:
        if not given.exists():
            raise InputError("no such scores file", path=str(given), field="--scores")
        return given
    p = Path(run) / "scores.jsonl"
    return p if p.is_file() else None


def run_metric_gates(
    run_a: str,
    run_b: str,
    gates: Sequence[MetricGate],
    scores_a: Path | None,
    scores_b: Path | None,
    json_path: Path | None,
) -> list[str]:
    """Print metric columns (when both runs have scores) and check the metric gates;
    returns the texts of the gates that failed."""
    pa, pb = _scores_path(run_a, scores_a), _scores_path(run_b, scores_b)
    if pa is None or pb is None:
        if gates:
            missing = run_a if pa is None else run_b
            for g in gates:
                typer.echo(
                    f"gate {g.text} failed: no scores.jsonl for {missing} "
                    "(run `ragtriage evaluate RUN --out RUN`, or pass --scores-a/--scores-b)",
                    err=True,
                )
        return [g.text for g in gates]
    deltas = compare_scores(read_scores(pa), read_scores(pb))
    table = Table(title="evaluation metrics (paired, B − A)", title_justify="left")
    for col in ("metric", "A", "B", "delta", "95% CI", "p", "pairs"):
        table.add_column(col, justify="left" if col == "metric" else "right")
    for d in deltas:
        if d.delta is None or d.ci95 is None:
            table.add_row(d.metric, "-", "-", "undetermined", "-", "-", "0")
            continue
        table.add_row(
            d.metric,
            f"{d.mean_a:.3f}",
            f"{d.mean_b:.3f}",
            f"{d.delta:+.3f}",
            f"{d.ci95[0]:+.3f}..{d.ci95[1]:+.3f}",
            f"{d.p_value:.3f}",
            str(d.n_pairs),
        )
    make_console().print(table)
    results = [evaluate_metric_gate(g, deltas) for g in gates]
    for r in results:
        typer.echo(r.message, err=not r.passed)
    if json_path is not None:
        side = json_path.with_name(json_path.stem + ".metrics.json")
        payload = {
            "deltas": [d.model_dump(mode="json") for d in deltas],
            "gates": [r.model_dump(mode="json") for r in results],
        }
        atomic_write_text(side, json.dumps(payload, ensure_ascii=False, indent=2) + "\n")
        typer.echo(f"wrote {side}")
    return [r.gate.text for r in results if not r.passed]
