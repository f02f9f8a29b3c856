"""``ragtriage eval-retrieval RUN_DIR`` — retrieval metrics of a run against GT chunks.

Ground-truth chunks of a trace are the example's ``gt_chunk_ids`` when the dataset
gives them, else the chunks overlapping its verbatim references
(:func:`ragtriage.groundtruth.gt_chunks_from_references`). An example with no GT chunk
(unanswerable, or references that cannot be located) leaves every metric undefined: it
is counted as such, never scored 0. Traces whose stage failed are counted apart.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import typer
from rich.console import Console
from rich.table import Table

from ragtriage.errors import InputError

if TYPE_CHECKING:  # the metrics (numpy) load with the command, not with the CLI
    from ragtriage.records import Trace

__all__ = ["DEFAULT_METRICS", "evaluate_traces", "gt_of", "register"]

DEFAULT_METRICS: Final = "recall@5,precision@5,mrr,ndcg@5,hit@5"
_STAGES: Final = ("retrieved", "reranked")
# a failure at or before these stages leaves that list empty or partial
_FAILS_BEFORE: Final = {
    "retrieved": {"query_transform", "retrieval"},
    "reranked": {"query_transform", "retrieval", "reranking"},
}
_NO_LABEL: Final = "(no label)"


def gt_of(trace: Trace) -> tuple[list[str], str | None, int]:
    """``(gt_chunk_ids, source, unlocated_references)`` of one trace; source is
    ``dataset``, ``references`` or ``None`` (no GT)."""
    from ragtriage.groundtruth import gt_chunks_from_references

    ex = trace.example
    if ex.gt_chunk_ids:
        return list(dict.fromkeys(ex.gt_chunk_ids)), "dataset", 0
    if not ex.references:
        return [], None, 0
    ids, unlocated = gt_chunks_from_references(ex, trace.gt_doc_chunks)
    return ids, ("references" if ids else None), len(unlocated)


def _failed_stage(trace: Trace) -> str | None:
    err = trace.metadata.get("error")
    if isinstance(err, dict):
        stage = err.get("stage")
        return str(stage) if stage is not None else "unknown"
    return None


def evaluate_traces(
    traces: Sequence[Trace], metric_names: Sequence[str], stages: Sequence[str] = _STAGES
) -> dict[str, Any]:
    """Metrics per stage list (``retrieved``/``reranked``), per question label and
    overall: ``{stage: {label: {metric: {mean, n, undefined}}, ...}}`` plus ``gt``
    (how GT was found) and ``failed`` (traces left out per stage)."""
    from ragtriage.metrics import evaluate, parse_metric

    metrics = [parse_metric(n) for n in metric_names]
    gts = [gt_of(t) for t in traces]
    sources: dict[str, int] = {"dataset": 0, "references": 0, "none": 0}
    unlocated = 0
    for _ids, source, missing in gts:
        sources[source or "none"] += 1
        unlocated += missing
    out: dict[str, Any] = {
        "traces": len(traces),
        "metrics": [m.name for m in metrics],
        "gt": {"by_source": sources, "unlocated_references": unlocated},
        "failed": {},
        "stages": {},
    }
    for stage in stages:
        if stage not in _STAGES:
            raise InputError(f"unknown stage {stage!r}; expected one of {_STAGES}", field="stage")
        groups: dict[str, list[tuple[list[str], list[str]]]] = {}
        failed = 0
        for trace, (gt_ids, _source, _missing) in zip(traces, gts, strict=True):
            fs = _failed_stage(trace)
            if fs is not None and fs in _FAILS_BEFORE[stage]:
                failed += 1
                continue
            hits = trace.retrieved if stage == "retrieved" else trace.reranked
            pair = ([h.chunk_id for h in hits], gt_ids)
            groups.setdefault(trace.example.label or _NO_LABEL, []).append(pair)
            groups.setdefault("overall", []).append(pair)
        labels = sorted(k for k in groups if k != "overall") + (["overall"] if groups else [])
        out["stages"][stage] = {label: evaluate(metrics, groups[label]) for label in labels}
        out["failed"][stage] = failed
    return out


def _read_traces(path: Path) -> list[Trace]:
    file = path / "traces.jsonl" if path.is_dir() else path
    if not file.exists():
        raise InputError(
            "no traces.jsonl here (pass a run directory or a traces file)", path=str(file)
        )
    from ragtriage.cli.diagnose import read_traces  # duplicate example ids are errors

    return read_traces(file)


def _fmt(cell: dict[str, Any]) -> str:
    mean = cell["mean"]
    return "undefined" if mean is None else f"{mean:.3f}"


def _print(result: dict[str, Any], console: Console) -> None:
    gt = result["gt"]
    src = gt["by_source"]
    console.print(
        f"{result['traces']} traces; GT chunks from the dataset: {src['dataset']}, from "
        f"references: {src['references']}, none (metrics undefined): {src['none']}"
        + (
            f"; {gt['unlocated_references']} reference(s) not found in their documents"
            if gt["unlocated_references"]
            else ""
        )
    )
    for stage, table_data in result["stages"].items():
        table = Table(title=f"{stage} hits", title_justify="left")
        table.add_column("label")
        table.add_column("n", justify="right")
        table.add_column("undefined", justify="right")
        for name in result["metrics"]:
            table.add_column(name, justify="right")
        for label, cells in table_data.items():
            first = next(iter(cells.values()))
            table.add_row(
                label,
                str(first["n"]),
                str(first["undefined"]),
                *(_fmt(cells[name]) for name in result["metrics"]),
                style="bold" if label == "overall" else None,
            )
        console.print(table)
        if result["failed"].get(stage):
            console.print(f"  {result['failed'][stage]} trace(s) left out: the stage failed")


def register(app: typer.Typer) -> None:
    @app.command("eval-retrieval")
    def eval_retrieval(
        run_dir: Path = typer.Argument(..., help="Run directory (or its traces.jsonl)."),
        metrics: str = typer.Option(
            DEFAULT_METRICS, "--metrics", "-m", help="Comma-separated, e.g. recall@5,mrr."
        ),
        stage: str = typer.Option(
            "both", "--stage", help="retrieved | reranked | both (which hit list to score)."
        ),
        json_out: Path | None = typer.Option(
            None, "--json", help="Also write the results as JSON to this file."
        ),
    ) -> None:
        """Score a run's retrieved and reranked chunks against the ground-truth chunks.

        Recall, precision, MRR, nDCG and hit rate per question label and overall; examples
        without ground-truth chunks are counted as undefined, not scored 0.
        """
        names = [m.strip() for m in metrics.split(",") if m.strip()]
        if not names:
            raise InputError("no metric given", field="--metrics")
        if stage != "both" and stage not in _STAGES:
            raise InputError(
                f"unknown stage {stage!r}; expected one of {', '.join((*_STAGES, 'both'))}",
                field="--stage",
            )
        stages = list(_STAGES) if stage == "both" else [stage]
        result = evaluate_traces(_read_traces(run_dir), names, stages)
        _print(result, Console(width=120))
        if json_out is not None:
            from ragtriage.jsonl import atomic_write_text

            atomic_write_text(json_out, json.dumps(result, indent=2, ensure_ascii=False) + "\n")
