"""Print a :class:`~ragtriage.report.aggregate.Summary` as rich tables."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ragtriage.records import ERROR_TYPE_NAMES, Stage
from ragtriage.report._fmt import fmt_delta, fmt_float, fmt_int, fmt_pct
from ragtriage.report.aggregate import Summary, share

if TYPE_CHECKING:
    from ragtriage.calibrate.agreement import AgreementReport, Confusion, KappaResult
    from ragtriage.metrics.calibration import Reliability
    from ragtriage.records import Diagnosis
    from ragtriage.report.compare import Comparison
    from ragtriage.report.metrics_view import RunMetrics
    from ragtriage.store import RunInfo, TrendRow

__all__ = [
    "headline",
    "make_console",
    "render_agreement",
    "render_comparison",
    "render_headline",
    "render_metrics",
    "render_reliability",
    "render_runs",
    "render_summary",
    "render_trend",
]

_MAX_ADVICE = 10
_MAX_UNDETERMINED = 15
_STAGE_SHORT = {
    Stage.CHUNKING: "chunk",
    Stage.RETRIEVAL: "retr.",
    Stage.RERANKING: "rerank",
    Stage.GENERATION: "gen.",
}


def make_console() -> Console:
    """A console for CLI output: the terminal's width, or 160 columns when piped
    (rich's 80-column default truncates the wider tables). Numbers and names in plain
    strings are not re-coloured: rich's repr highlighter costs ~80 ms of start-up (one
    regular expression) and the messages carry their own markup."""
    probe = Console(highlight=False)
    return probe if probe.is_terminal else Console(width=160, highlight=False)


def headline(summary: Summary) -> str:
    """One line: accuracy, failing examples and the most blamed stage."""
    t = summary.totals
    parts = [
        f"accuracy {fmt_pct(summary.accuracy)}",
        f"{t.failing} failing of {t.determined} judged ({t.examples} examples)",
    ]
    ac = summary.answer_correctness
    if ac is not None:
        parts.append(
            f"answer correctness F1 {fmt_float(ac.f1)} (precision {fmt_float(ac.precision)}, "
            f"recall {fmt_float(ac.recall)}; n={ac.n})"
        )
    if t.undetermined:
        parts.append(f"{t.undetermined} answer evaluations undetermined")
    if t.not_diagnosed:
        parts.append(f"{t.not_diagnosed} traces without a diagnosis")
    top = max(summary.stages, key=lambda s: s.count)
    if top.count:
        parts.append(f"most errors at {top.stage.value} ({fmt_pct(top.share)})")
    if summary.low_confidence:
        parts.append(f"{summary.low_confidence} low-confidence diagnoses (not established)")
    return "; ".join(parts)


def render_headline(summary: Summary, console: Console) -> None:
    console.print(f"[bold]{escape(headline(summary))}[/bold]", highlight=False)


def render_summary(summary: Summary, console: Console) -> None:
    """Print the headline and every summary table."""
    render_headline(summary, console)
    t = summary.totals

    answers = Table(title="Answer evaluation", title_justify="left")
    answers.add_column("label")
    answers.add_column("count", justify="right")
    answers.add_column("share", justify="right")
    for name, count in (
        ("correct", t.correct),
        ("possible_correct", t.possible_correct),
        ("incorrect", t.incorrect),
        ("abstain", t.abstain),
        ("undetermined", t.undetermined),
    ):
        answers.add_row(name, fmt_int(count), fmt_pct(share(count, t.diagnosis_records)))
    answers.add_row("failing (diagnosed)", fmt_int(t.failing), fmt_pct(summary.failing_share))
    console.print(answers)

    stages = Table(
        title="Failure stage (share of failing examples with a stage)", title_justify="left"
    )
    stages.add_column("stage")
    stages.add_column("count", justify="right")
    stages.add_column("share", justify="right")
    for s in summary.stages:
        stages.add_row(s.stage.value, fmt_int(s.count), fmt_pct(s.share))
    if summary.stage_undetermined:
        stages.add_row("[i]undetermined[/i]", fmt_int(summary.stage_undetermined), "")
    console.print(stages)

    types = Table(title="Error types (seed 000 Table 2)", title_justify="left")
    types.add_column("type")
    types.add_column("mode", justify="right")
    types.add_column("2nd mode", justify="right")
    for stage in Stage:
        for tc in (x for x in summary.types if x.stage is stage):
            types.add_row(f"{tc.error_type.value} {tc.title}", fmt_int(tc.mode), fmt_int(tc.second))
        tot = next(x for x in summary.stage_type_totals if x.stage is stage)
        types.add_row(
            f"[b]Percentage {stage.value}[/b]",
            fmt_pct(tot.mode_share),
            fmt_pct(tot.second_share),
            end_section=True,
        )
    types.add_row("[b]Total[/b]", fmt_int(summary.mode_total), fmt_int(summary.second_total))
    console.print(types)

    if summary.mode_frequency:
        mf = Table(title="Mode frequency (votes agreeing with the mode)", title_justify="left")
        mf.add_column("agree")
        mf.add_column("examples", justify="right")
        for b in summary.mode_frequency:
            mf.add_row(b.label, fmt_int(b.count))
        console.print(mf)

    if summary.cooccurrence.top:
        co = Table(title="Generation types: mode with second mode", title_justify="left")
        co.add_column("pair")
        co.add_column("examples", justify="right")
        for p in summary.cooccurrence.top:
            co.add_row(
                f"{p.first.value} {ERROR_TYPE_NAMES[p.first]} + "
                f"{p.second.value} {ERROR_TYPE_NAMES[p.second]}",
                fmt_int(p.count),
            )
        console.print(co)

    if summary.by_label:
        lab = Table(title="By question label", title_justify="left")
        for col in (
            "label",
            "examples",
            "failing",
            "accuracy",
            *[s.value for s in Stage],
            "top type",
        ):
            lab.add_column(col, justify="left" if col in ("label", "top type") else "right")
        for lb in summary.by_label:
            lab.add_row(
                escape(lb.label),
                fmt_int(lb.examples),
                fmt_int(lb.failing),
                fmt_pct(lb.accuracy),
                *[fmt_int(lb.stages.get(s.value, 0)) for s in Stage],
                lb.top_type.value if lb.top_type else "",
            )
        console.print(lab)

    if summary.undetermined or summary.undetermined_votes:
        und = Table(title="Undetermined", title_justify="left")
        und.add_column("step")
        und.add_column("reason")
        und.add_column("count", justify="right")
        for u in summary.undetermined[:_MAX_UNDETERMINED]:
            und.add_row(escape(u.step), escape(u.reason), fmt_int(u.count))
        rest = summary.undetermined[_MAX_UNDETERMINED:]
        if rest:
            und.add_row("…", f"{len(rest)} more reasons", fmt_int(sum(u.count for u in rest)))
        if summary.undetermined_votes:
            und.add_row("type votes", "undetermined votes", fmt_int(summary.undetermined_votes))
        console.print(und)

    usage = summary.usage
    console.print(
        f"LLM requests: {fmt_int(usage.calls)} paid, {fmt_int(usage.cached_calls)} from cache, "
        f"{fmt_int(usage.prompt_tokens)} prompt + {fmt_int(usage.completion_tokens)} completion tokens",
        highlight=False,
    )

    if summary.advice:
        adv = Table(title="Advice (ranked by failing examples carrying it)", title_justify="left")
        adv.add_column("#", justify="right")
        adv.add_column("examples", justify="right")
        adv.add_column("types")
        adv.add_column("advice")
        for i, a in enumerate(summary.advice[:_MAX_ADVICE], start=1):
            adv.add_row(
                str(i), fmt_int(a.count), ", ".join(x.value for x in a.error_types), escape(a.text)
            )
        console.print(adv)


def render_comparison(comparison: Comparison, console: Console) -> None:
    """The before/after table (seed 000 Table 2 with an "Impr." column) and deltas."""
    c = comparison
    head = Table(title=f"{escape(c.run_a)} → {escape(c.run_b)}", title_justify="left")
    head.add_column("metric")
    head.add_column("A", justify="right")
    head.add_column("B", justify="right")
    head.add_column("Δ", justify="right")
    head.add_row(
        "examples",
        fmt_int(c.examples_a),
        fmt_int(c.examples_b),
        fmt_delta(c.examples_b - c.examples_a),
    )
    head.add_row(
        "accuracy",
        fmt_pct(c.accuracy_a),
        fmt_pct(c.accuracy_b),
        fmt_delta(c.accuracy_delta, pct=True),
    )
    if c.answer_correctness_a is not None or c.answer_correctness_b is not None:
        head.add_row(
            "answer correctness F1 (mean)",
            fmt_float(c.answer_correctness_a),
            fmt_float(c.answer_correctness_b),
            fmt_delta(c.answer_correctness_delta),
        )
    head.add_row(
        "incorrect share",
        fmt_pct(c.incorrect_share_a),
        fmt_pct(c.incorrect_share_b),
        fmt_delta(c.incorrect_share_delta, pct=True),
    )
    head.add_row(
        "failing", fmt_int(c.failing_a), fmt_int(c.failing_b), fmt_delta(c.failing_b - c.failing_a)
    )
    head.add_row(
        "undetermined",
        fmt_int(c.undetermined_a),
        fmt_int(c.undetermined_b),
        fmt_delta(c.undetermined_b - c.undetermined_a),
    )
    console.print(head)

    table = Table(title="Error types (mode; Impr. = run B)", title_justify="left")
    table.add_column("error classification")
    table.add_column("Mode", justify="right")
    table.add_column("2ndMode", justify="right")
    table.add_column("Impr.", justify="right")
    table.add_column("Δ", justify="right")
    for sd in c.stages:
        for td in (t for t in c.types if t.stage is sd.stage):
            table.add_row(
                f"{td.error_type.value} {td.title}",
                fmt_int(td.a),
                fmt_int(td.second_a),
                fmt_int(td.b),
                _colored(td.delta),
            )
        table.add_row(
            f"[b]{sd.stage.value}[/b] (stage count, share)",
            f"{sd.a} ({fmt_pct(sd.share_a)})",
            "",
            f"{sd.b} ({fmt_pct(sd.share_b)})",
            _colored(sd.delta),
            end_section=True,
        )
    table.add_row(
        "[b]Total[/b]",
        fmt_int(c.mode_total_a),
        "",
        fmt_int(c.mode_total_b),
        _colored(c.mode_total_b - c.mode_total_a),
    )
    console.print(table)

    if c.advice:
        adv = Table(title="Advice of run A and its error types in run B", title_justify="left")
        adv.add_column("advice")
        adv.add_column("types")
        adv.add_column("A", justify="right")
        adv.add_column("B", justify="right")
        adv.add_column("")
        for a in c.advice[:_MAX_ADVICE]:
            adv.add_row(
                escape(a.text),
                ", ".join(t.value for t in a.error_types),
                fmt_int(a.before),
                fmt_int(a.after),
                "[green]dropped[/green]" if a.dropped else "",
            )
        console.print(adv)

    if c.config_changes:
        cfg = Table(title="Configuration changes", title_justify="left")
        cfg.add_column("key")
        cfg.add_column("A")
        cfg.add_column("B")
        for ch in c.config_changes:
            cfg.add_row(escape(ch.key), escape(repr(ch.a)), escape(repr(ch.b)))
        console.print(cfg)


def _colored(delta: int) -> str:
    text = fmt_delta(delta)
    if delta < 0:
        return f"[green]{text}[/green]"
    if delta > 0:
        return f"[red]{text}[/red]"
    return text


def render_trend(rows: Sequence[TrendRow], console: Console) -> None:
    """Failure-stage distribution per run over time (seed 002): count and share of
    the failing examples with a stage."""
    table = Table(title="Failure stages over time", title_justify="left")
    table.add_column("created", no_wrap=True)
    table.add_column("run", overflow="fold", min_width=8)
    table.add_column("n", justify="right", no_wrap=True)
    table.add_column("acc.", justify="right", no_wrap=True)
    table.add_column("fail", justify="right", no_wrap=True)
    for name in _STAGE_SHORT.values():
        table.add_column(name, justify="right", no_wrap=True)
    table.add_column("und.", justify="right", no_wrap=True)
    for r in rows:
        table.add_row(
            escape(r.created_at[:16]),
            escape(r.name),
            fmt_int(r.examples),
            fmt_pct(r.accuracy),
            fmt_int(r.failing),
            *[
                f"{r.stage_counts.get(s.value, 0)} {fmt_pct(r.stage_shares.get(s.value), 0)}"
                for s in Stage
            ],
            fmt_int(r.stage_undetermined),
        )
    console.print(table)


def render_runs(runs: Sequence[RunInfo], console: Console) -> None:
    table = Table(title="Stored runs", title_justify="left")
    table.add_column("id", overflow="fold", min_width=10)
    table.add_column("name", overflow="fold", min_width=8)
    table.add_column("created", no_wrap=True)
    table.add_column("config", no_wrap=True)
    for col in ("traces", "diag.", "acc.", "fail"):
        table.add_column(col, justify="right", no_wrap=True)
    for r in runs:
        s = r.summary
        table.add_row(
            escape(r.run_id),
            escape(r.name),
            escape(r.created_at[:16]),
            escape(r.config_hash[:8]),
            fmt_int(r.traces),
            fmt_int(r.diagnoses),
            fmt_pct(s.accuracy) if s else "n/a",
            fmt_int(s.totals.failing) if s else "n/a",
        )
    console.print(table)


def _kappa(k: KappaResult) -> str:
    if k.value is None:
        return f"n/a ({k.reason})"
    return f"{k.value:.3f} (n={k.n})"


def _matrix(title: str, conf: Confusion, console: Console, *, skip_empty: bool) -> None:
    keep = [
        i
        for i in range(len(conf.labels))
        if not skip_empty or any(conf.matrix[i]) or any(r[i] for r in conf.matrix)
    ]
    table = Table(title=title, title_justify="left")
    table.add_column("human \\ judge")
    for i in keep:
        table.add_column(conf.labels[i], justify="right")
    for i in keep:
        table.add_row(conf.labels[i], *[str(conf.matrix[i][j]) for j in keep])
    console.print(table)


def render_reliability(rel: Reliability, title: str, console: Console) -> None:
    """A reliability table (accuracy per confidence bin) with ECE and Brier score."""
    table = Table(title=title, title_justify="left")
    for col in ("confidence", "n", "mean conf.", "accuracy", "gap"):
        table.add_column(col, justify="left" if col == "confidence" else "right")
    for b in rel.bins:
        close = "]" if b is rel.bins[-1] else ")"
        table.add_row(
            f"[{b.lower:.1f}, {b.upper:.1f}{close}",
            fmt_int(b.n),
            "empty" if b.empty else fmt_float(b.mean_confidence, 2),
            "" if b.empty else fmt_pct(b.accuracy),
            "" if b.empty else fmt_float(b.gap, 2),
        )
    console.print(table)
    if rel.ece is None:
        console.print(f"ECE: n/a ({rel.reason})", highlight=False)
    else:
        console.print(
            f"ECE {rel.ece:.3f}, Brier {fmt_float(rel.brier)}, accuracy {fmt_pct(rel.accuracy)} "
            f"vs mean confidence {fmt_pct(rel.mean_confidence)} (n={rel.n})"
            + (
                f"; {rel.without_confidence} without a confidence" if rel.without_confidence else ""
            ),
            highlight=False,
        )


def render_agreement(report: AgreementReport, console: Console) -> None:
    """Agreement of the judge with human labels (seed 000 Table 1; seed 001 §4)."""
    r = report
    head = Table(title="Judge vs human labels", title_justify="left")
    head.add_column("metric")
    head.add_column("value", justify="right")
    head.add_row("label rows / examples", f"{r.label_rows} / {r.labeled_examples}")
    head.add_row("annotators", escape(", ".join(r.annotators)))
    if r.missing_diagnosis:
        head.add_row("labelled but not diagnosed", fmt_int(len(r.missing_diagnosis)))
    if r.answer_compared:
        head.add_row(
            "answer label agreement (4 classes)",
            f"{fmt_pct(r.answer_agreement)} (n={r.answer_compared})",
        )
        head.add_row("answer label Cohen's κ", _kappa(r.answer_kappa))
    head.add_row(
        "failing / not failing agreement",
        f"{fmt_pct(r.failing_agreement)} (n={r.failing_compared})",
    )
    head.add_row("failing / not failing Cohen's κ", _kappa(r.failing_kappa))
    head.add_row("human failures found", f"{r.failures_found} of {r.human_failures}")
    head.add_row(
        "false failures (fine answers failed)",
        f"{r.false_failures} of {r.human_not_failing}",
    )
    head.add_row(
        "failing precision / recall",
        f"{fmt_pct(r.failing_precision)} / {fmt_pct(r.failing_recall)}",
    )
    if r.low_confidence:
        head.add_row("low-confidence diagnoses", fmt_int(r.low_confidence))
    head.add_row(
        "judge also found them failing",
        f"{r.judge_confirmed_failing} ({fmt_pct(r.judge_confirmed_share)})",
    )
    head.add_row("judge gave no stage", fmt_int(r.judge_no_stage))
    head.add_row("no human majority stage", fmt_int(r.no_consensus))
    head.add_row("stage agreement", f"{fmt_pct(r.stage_agreement)} (n={r.stage_compared})")
    head.add_row("stage Cohen's κ (judge vs majority)", _kappa(r.stage_kappa))
    head.add_row("stage Fleiss' κ (annotators)", _kappa(r.fleiss_stage))
    head.add_row("type accuracy (mode)", f"{fmt_pct(r.type_accuracy)} (n={r.type_compared})")
    head.add_row("type top-2 accuracy", fmt_pct(r.type_top2_accuracy))
    head.add_row("type Cohen's κ", _kappa(r.type_kappa))
    if r.no_human_types:
        head.add_row("examples without human types", fmt_int(r.no_human_types))
    console.print(head)
    if r.answer_compared:
        _matrix("Answer label confusion", r.answer_confusion, console, skip_empty=True)
    _matrix("Failing / not failing confusion", r.failing_confusion, console, skip_empty=True)
    _matrix("Stage confusion (seed 000 Table 1)", r.stage_confusion, console, skip_empty=False)
    if r.type_compared:
        _matrix("Type confusion", r.type_confusion, console, skip_empty=True)
    if r.annotator_vs_judge:
        cmp = Table(
            title="κ vs the majority of the other annotators (seed 001 §4)", title_justify="left"
        )
        cmp.add_column("annotator")
        cmp.add_column("n", justify="right")
        cmp.add_column("κ(annotator, M−A)", justify="right")
        cmp.add_column("κ(judge, M−A)", justify="right")
        cmp.add_column("judge lower by", justify="right")
        for c in r.annotator_vs_judge:
            cmp.add_row(
                escape(c.annotator),
                fmt_int(c.n),
                _kappa(c.kappa_annotator),
                _kappa(c.kappa_judge),
                fmt_pct(c.relative_drop),
            )
        console.print(cmp)
    render_reliability(r.reliability, "Reliability: confidence vs diagnosis right", console)
    render_reliability(
        r.mode_reliability, "Reliability: mode frequency vs modal type right", console
    )


def render_metrics(
    metrics: RunMetrics, diagnoses: Sequence[Diagnosis], console: Console, n: int = 10
) -> None:
    """The evaluation metrics next to the diagnosis: means with 95 % CIs, then the
    failing examples with the lowest faithfulness, with their stage and type."""
    from ragtriage.report.metrics_view import lowest_faithfulness

    if metrics.rows:
        table = Table(
            title=f"Evaluation metrics ({metrics.judge or 'unknown'} judge)", title_justify="left"
        )
        for col in ("metric", "mean", "95% CI", "n", "undetermined"):
            table.add_column(col, justify="left" if col == "metric" else "right")
        for r in metrics.rows:
            table.add_row(
                r.name,
                fmt_float(r.mean),
                f"{r.ci95[0]:.3f}–{r.ci95[1]:.3f}" if r.ci95 else "n/a",
                fmt_int(r.n),
                fmt_int(r.undetermined),
            )
        console.print(table)
    low = lowest_faithfulness(diagnoses, metrics, n)
    if not low:
        return
    table = Table(title="Failing examples by faithfulness (lowest first)", title_justify="left")
    for col in ("example", "faithfulness", "stage", "type", "other metrics"):
        table.add_column(col, justify="right" if col == "faithfulness" else "left")
    for d, f in low:
        others = ", ".join(
            f"{m} {fmt_float(v, 2)}"
            for m, v in metrics.example_values(d.example_id)
            if m != "faithfulness"
        )
        table.add_row(
            escape(d.example_id),
            f"{f:.2f}",
            d.stage.value if d.stage else "undetermined",
            f"{d.error_type.value} {d.error_type.title}" if d.error_type else "-",
            others,
        )
    console.print(table)
    console.print(f"metrics from {escape(metrics.source)}", highlight=False)
