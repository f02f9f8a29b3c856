"""Diagnose the real-style development set and compare with its human labels.

Run: .venv/bin/python benchmarks/realstyle.py [--judge rules|llm] [--strategy ragec]
     [--workers 2] [--split dev|test|all] [--part demo ...] [--json FILE]
     [--show-misses] [--confidence-table FILE] [--root benchmarks/data/realstyle]

Every part under ``--root`` (a folder with ``traces.jsonl`` and ``labels.jsonl``, see
``benchmarks/data/realstyle/README.md``) is diagnosed and scored with the agreement
statistics of ``ragtriage agree`` (:func:`ragtriage.calibrate.agreement.agreement`).
Printed per part and overall: answer-label agreement (4-class and failing/not-failing),
human failures found, stage agreement, type accuracy (top-1, top-2) and the ECE of the
per-diagnosis confidence; then answer-label agreement per answer style
(``example.metadata.style``). ``--show-misses`` lists every disagreement with the
human rationale.

``--judge llm`` uses the endpoint the CLI uses: ``RAGTRIAGE_LLM_BASE_URL`` /
``RAGTRIAGE_LLM_MODEL`` (or ``llm.*`` in ``--config``), through the same LLMRunner and
response cache as ``ragtriage diagnose``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from _llm_batch import add_batch_arguments, open_llm  # noqa: E402
from ragtriage.calibrate.agreement import (  # noqa: E402
    AgreementReport,
    HumanLabel,
    agreement,
    diagnosis_correct,
    labels_of_split,
    read_labels,
)
from ragtriage.cli.diagnose import read_traces  # noqa: E402
from ragtriage.config import load_config  # noqa: E402
from ragtriage.diagnosis.confidence import ConfidenceTable, with_confidence  # noqa: E402
from ragtriage.diagnosis.engine import JUDGES, Diagnoser, Judge  # noqa: E402
from ragtriage.diagnosis.strategies import STRATEGIES, Strategy  # noqa: E402
from ragtriage.errors import InputError, RagtriageError  # noqa: E402
from ragtriage.llm import BatchSession, LLMRunner, run_sync  # noqa: E402
from ragtriage.records import Diagnosis, Trace  # noqa: E402
from ragtriage.report._fmt import fmt_float, fmt_pct  # noqa: E402

DEFAULT_ROOT = ROOT / "benchmarks" / "data" / "realstyle"
TRACES = "traces.jsonl"
LABELS = "labels.jsonl"
NO_STYLE = "(no style)"


@dataclass(frozen=True)
class Part:
    """One part of the set: its traces and the human labels of the chosen split."""

    name: str
    traces: list[Trace]
    labels: list[HumanLabel]


@dataclass(frozen=True)
class PartResult:
    part: Part
    diagnoses: list[Diagnosis]
    report: AgreementReport


def load_parts(root: Path, names: Sequence[str] = (), split: str = "all") -> list[Part]:
    """The parts under ``root`` (all, or the ``names`` given), with the labels of
    ``split``; only traces that have a label of that split are kept."""
    if not root.is_dir():
        raise InputError("no such directory", path=str(root))
    found = sorted(p for p in root.iterdir() if (p / TRACES).is_file() and (p / LABELS).is_file())
    if names:
        by_name = {p.name: p for p in found}
        unknown = [n for n in names if n not in by_name]
        if unknown:
            raise InputError(
                f"no part {unknown[0]!r} with {TRACES} and {LABELS}; parts: "
                f"{', '.join(by_name) or 'none'}",
                path=str(root),
                field="--part",
            )
        found = [by_name[n] for n in names]
    if not found:
        raise InputError(f"no part folder with {TRACES} and {LABELS}", path=str(root))
    parts = []
    for folder in found:
        labels_path = folder / LABELS
        labels = labels_of_split(read_labels(labels_path), split, path=str(labels_path))
        wanted = {lab.example_id for lab in labels}
        traces = [t for t in read_traces(folder / TRACES) if t.example.example_id in wanted]
        parts.append(Part(folder.name, traces, labels))
    return parts


async def _diagnose(
    diagnoser: Diagnoser, parts: Sequence[Part], workers: int, concurrency: int
) -> list[list[Diagnosis]]:
    # one event loop for every part: the LLM runner's HTTP pool lives on it
    return [await diagnoser.diagnose_many(p.traces, concurrency, workers=workers) for p in parts]


def diagnose_parts(
    parts: Sequence[Part],
    diagnoser: Diagnoser,
    *,
    workers: int = 1,
    concurrency: int = 8,
    table: ConfidenceTable | None = None,
) -> list[list[Diagnosis]]:
    """Diagnoses of each part (in trace order), with the confidence of ``table``
    (default: the shipped one) filled in."""
    out = []
    for part, found in zip(
        parts, run_sync(_diagnose(diagnoser, parts, workers, concurrency)), strict=True
    ):
        by_id = {t.example.example_id: t for t in part.traces}
        out.append(
            [with_confidence(d, by_id[d.example_id], diagnoser.config, table) for d in found]
        )
    return out


def style_of(trace: Trace) -> str:
    style = trace.example.metadata.get("style")
    return style if isinstance(style, str) and style else NO_STYLE


def _row(name: str, r: AgreementReport) -> list[str]:
    return [
        name,
        str(r.labeled_examples),
        f"{fmt_pct(r.answer_agreement)} (n={r.answer_compared})",
        f"{fmt_pct(r.failing_agreement)} (n={r.failing_compared})",
        f"{r.failures_found}/{r.human_failures}",
        f"{r.false_failures}/{r.human_not_failing}",
        f"{fmt_pct(r.failing_precision)} / {fmt_pct(r.failing_recall)}",
        f"{fmt_pct(r.stage_agreement)} (n={r.stage_compared})",
        fmt_pct(r.type_accuracy),
        fmt_pct(r.type_top2_accuracy),
        fmt_float(r.reliability.ece),
        str(r.low_confidence),
    ]


def summary_table(results: Sequence[PartResult], overall: AgreementReport) -> Table:
    table = Table(title="real-style set: judge vs human labels", title_justify="left")
    for col in (
        "part",
        "cases",
        "answer label",
        "failing/not",
        "failures found",
        "false failures",
        "failing P / R",
        "stage",
        "type top-1",
        "type top-2",
        "ECE",
        "low conf.",
    ):
        table.add_column(col, justify="left" if col == "part" else "right")
    for res in results:
        table.add_row(*_row(res.part.name, res.report))
    if len(results) > 1:
        table.add_row(*_row("overall", overall), style="bold")
    return table


def style_reports(results: Sequence[PartResult]) -> dict[str, AgreementReport]:
    """Agreement per answer style over all parts."""
    diags: dict[str, list[Diagnosis]] = {}
    labels: dict[str, list[HumanLabel]] = {}
    for res in results:
        style = {t.example.example_id: style_of(t) for t in res.part.traces}
        for d in res.diagnoses:
            diags.setdefault(style[d.example_id], []).append(d)
        for lab in res.part.labels:
            labels.setdefault(style.get(lab.example_id, NO_STYLE), []).append(lab)
    return {s: agreement(diags.get(s, []), labels[s]) for s in sorted(labels)}


def style_table(reports: dict[str, AgreementReport]) -> Table:
    table = Table(title="answer-label agreement per style", title_justify="left")
    for col in ("style", "cases", "answer label", "failing/not", "failures found", "stage"):
        table.add_column(col, justify="left" if col == "style" else "right")
    for style, r in reports.items():
        table.add_row(
            style,
            str(r.labeled_examples),
            fmt_pct(r.answer_agreement),
            fmt_pct(r.failing_agreement),
            f"{r.failures_found}/{r.human_failures}",
            fmt_pct(r.stage_agreement),
        )
    return table


@dataclass(frozen=True)
class Miss:
    part: str
    example_id: str
    style: str
    human: str
    judge: str
    rationale: str


def _human_text(labs: Sequence[HumanLabel]) -> str:
    lab = labs[0]
    answer = lab.answer_label.value if lab.answer_label is not None else "failing"
    if lab.stage is None:
        return answer
    return f"{answer} {lab.stage.value} {'/'.join(t.value for t in lab.types) or '-'}"


def _judge_text(d: Diagnosis) -> str:
    if d.answer_label is None:
        return f"undetermined ({d.undetermined_reason})"
    if not d.needs_diagnosis:
        text = d.answer_label.value
    else:
        stage = d.stage.value if d.stage is not None else "stage?"
        mode = d.error_type.value if d.error_type is not None else "type?"
        text = f"{d.answer_label.value} {stage} {mode}"
    conf = "" if d.confidence is None else f" conf {d.confidence:.2f}"
    return text + conf + (" LOW" if d.low_confidence else "")


def misses(results: Sequence[PartResult]) -> list[Miss]:
    """Cases where the judge's answer label differs from the human one or the diagnosis
    is not right by :func:`diagnosis_correct`."""
    out = []
    for res in results:
        by_ex: dict[str, list[HumanLabel]] = {}
        for lab in res.part.labels:
            by_ex.setdefault(lab.example_id, []).append(lab)
        style = {t.example.example_id: style_of(t) for t in res.part.traces}
        for d in res.diagnoses:
            labs = by_ex[d.example_id]
            human_answer = labs[0].answer_label
            label_differs = human_answer is not None and d.answer_label is not human_answer
            if not label_differs and diagnosis_correct(d, labs) is not False:
                continue
            out.append(
                Miss(
                    res.part.name,
                    d.example_id,
                    style[d.example_id],
                    _human_text(labs),
                    _judge_text(d),
                    labs[0].rationale or "",
                )
            )
    return out


def evaluate(
    parts: Sequence[Part],
    diagnoser: Diagnoser,
    *,
    workers: int = 1,
    concurrency: int = 8,
    table: ConfidenceTable | None = None,
) -> tuple[list[PartResult], AgreementReport]:
    """Diagnose and score each part, and all of them together."""
    found = diagnose_parts(parts, diagnoser, workers=workers, concurrency=concurrency, table=table)
    results = [
        PartResult(p, ds, agreement(ds, p.labels)) for p, ds in zip(parts, found, strict=True)
    ]
    overall = agreement(
        [d for r in results for d in r.diagnoses], [lab for p in parts for lab in p.labels]
    )
    return results, overall


def to_json(
    results: Sequence[PartResult],
    overall: AgreementReport,
    styles: dict[str, AgreementReport],
    settings: dict[str, Any],
) -> dict[str, Any]:
    return {
        "settings": settings,
        "overall": overall.model_dump(mode="json"),
        "parts": {r.part.name: r.report.model_dump(mode="json") for r in results},
        "styles": {s: r.model_dump(mode="json") for s, r in styles.items()},
        "misses": [m.__dict__ for m in misses(results)],
    }


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--root", type=Path, default=DEFAULT_ROOT)
    ap.add_argument("--part", action="append", default=[], help="Only this part (repeatable).")
    ap.add_argument("--split", default="all", choices=("dev", "test", "all"))
    ap.add_argument("--judge", default="rules", choices=JUDGES)
    ap.add_argument("--strategy", default="ragec", choices=STRATEGIES)
    ap.add_argument("--workers", type=int, default=1, help="Processes for the rules judge.")
    ap.add_argument("--concurrency", type=int, default=8, help="LLM requests in flight.")
    ap.add_argument(
        "--config", type=Path, default=None, help="Pipeline config (llm.*, diagnosis.*)."
    )
    ap.add_argument("--cache", type=Path, default=None, help="LLM cache file.")
    ap.add_argument("--no-cache", action="store_true")
    ap.add_argument("--confidence-table", type=Path, default=None)
    ap.add_argument("--json", type=Path, default=None, help="Write every figure here.")
    ap.add_argument("--show-misses", action="store_true")
    add_batch_arguments(ap, "LLM judge")
    args = ap.parse_args(argv)
    console = Console() if sys.stdout.isatty() else Console(width=160)
    runner: LLMRunner | None = None
    batch: BatchSession | None = None
    try:
        parts = load_parts(args.root, args.part, args.split)
        cfg = load_config(args.config)
        table = ConfidenceTable.load(args.confidence_table) if args.confidence_table else None
        if args.judge == "llm":
            runner, batch = open_llm(cfg, args, no_cache=args.no_cache)
        elif args.llm_batch_out or args.llm_batch_in:
            raise InputError("the rules judge calls no LLM", field="--llm-batch-out")
    except RagtriageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        diagnoser = Diagnoser(
            cast(Judge, args.judge), cast(Strategy, args.strategy), cfg.diagnosis, runner
        )
        started = time.perf_counter()
        results, overall = evaluate(
            parts, diagnoser, workers=args.workers, concurrency=args.concurrency, table=table
        )
        seconds = time.perf_counter() - started
        ledger = runner.ledger.summary() if runner is not None else None
    finally:
        if runner is not None:
            runner.close()
    if batch is not None and batch.finish():
        print("LLM requests exported; nothing measured yet", file=sys.stderr)
        return 0
    styles = style_reports(results)
    n = sum(len(p.traces) for p in parts)
    console.print(
        f"{n} cases in {len(parts)} part(s), split {args.split}, judge {args.judge}, "
        f"strategy {args.strategy}: diagnosed in {seconds:.1f} s",
        highlight=False,
    )
    console.print(summary_table(results, overall))
    if ledger is not None and n:
        t = ledger.total
        line = (
            f"LLM judge: {t.requests} requests, {t.calls + t.cache_hits} samples ({t.calls} "
            f"paid now, {t.cache_hits} from the cache): {t.requests / n:.1f} requests and "
            f"{(t.calls + t.cache_hits) / n:.1f} samples per trace"
        )
        if args.cache is not None and args.cache.is_file():
            import sqlite3

            with sqlite3.connect(args.cache) as db:
                rows, pt, ct = db.execute(
                    "SELECT COUNT(*), SUM(prompt_tokens), SUM(completion_tokens) FROM samples"
                ).fetchone()
            line += (
                f"; the cache ({rows} samples) holds {(pt or 0) / n:.0f} prompt + "
                f"{(ct or 0) / n:.0f} completion tokens per trace"
            )
        console.print(line, highlight=False)
    console.print(style_table(styles))
    if args.show_misses:
        table_m = Table(title="disagreements", title_justify="left")
        for col in ("part", "example", "style", "human", "judge", "rationale"):
            table_m.add_column(col, overflow="fold")
        for m in misses(results):
            table_m.add_row(m.part, m.example_id, m.style, m.human, m.judge, m.rationale)
        console.print(table_m)
    if args.json is not None:
        settings = {
            "judge": args.judge,
            "strategy": args.strategy,
            "split": args.split,
            "parts": [p.name for p in parts],
            "cases": n,
            "confidence_table": str(args.confidence_table) if args.confidence_table else None,
        }
        data = to_json(results, overall, styles, settings)
        args.json.write_text(json.dumps(data, ensure_ascii=False, indent=2) + "\n", "utf-8")
        console.print(f"wrote {args.json}", highlight=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
