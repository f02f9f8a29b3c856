"""One self-contained HTML report: inline CSS, inline SVG charts, a little vanilla JS.

Nothing is fetched when the page opens (no CDN, fonts or scripts from elsewhere).
The template is autoescaped; charts are built by :mod:`ragtriage.report.svg`, which
escapes every label itself.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from markupsafe import Markup

from ragtriage.constants import DEFAULT_MAX_EXAMPLES
from ragtriage.jsonl import atomic_write_text
from ragtriage.records import ERROR_TYPE_NAMES, Chunk, Diagnosis, ErrorType, Hit, Stage, Trace
from ragtriage.report import svg
from ragtriage.report._fmt import CONFIDENCE_MEANING, fmt_float, fmt_int, fmt_pct
from ragtriage.report.aggregate import Summary, dedupe_diagnoses, mode_vote_count
from ragtriage.report.terminal import headline

if TYPE_CHECKING:  # Jinja2 is imported when a page is rendered (_environment)
    from jinja2 import Environment

    from ragtriage.calibrate.agreement import AgreementReport
    from ragtriage.report.metrics_view import RunMetrics

__all__ = [
    "ChunkView",
    "ExampleView",
    "build_example_views",
    "render_html",
    "write_html",
]

#: Longest chunk text shown in full in the drill-down (GT and context chunks).
MAX_CHUNK_CHARS = 1500
#: Other chunks (retrieved/reranked lists, non-GT chunks of GT documents) show a preview
#: of this length; GT chunks are in full in the GT-document list, context chunks in the
#: context list.
PREVIEW_CHARS = 240


@dataclass(frozen=True)
class ChunkView:
    """A chunk as one line of a drill-down list, with what happened to it."""

    chunk_id: str
    doc_id: str
    text: str
    clipped: int
    rank: int | None = None
    score: float | None = None
    is_gt: bool = False
    flags: tuple[str, ...] = ()
    missing: bool = False


@dataclass(frozen=True)
class ExampleView:
    """Everything the drill-down shows for one failing example."""

    diagnosis: Diagnosis
    trace: Trace | None
    type_title: str
    second_title: str
    agree: str
    votes: list[tuple[str, int]]
    gt_doc_chunks: list[ChunkView] = field(default_factory=list)
    retrieved: list[ChunkView] = field(default_factory=list)
    reranked: list[ChunkView] = field(default_factory=list)
    context: list[ChunkView] = field(default_factory=list)
    dropped_by_reranker: list[ChunkView] = field(default_factory=list)
    dropped_by_budget: list[ChunkView] = field(default_factory=list)
    #: evaluation metrics of the example (``ragtriage evaluate``), ``None`` = undetermined
    metrics: list[tuple[str, float | None]] = field(default_factory=list)

    @property
    def faithfulness(self) -> float | None:
        return next((v for m, v in self.metrics if m == "faithfulness"), None)


def _clip(text: str, limit: int) -> tuple[str, int]:
    if len(text) <= limit:
        return text, 0
    return text[:limit], len(text) - limit


def _view(
    chunk_id: str,
    chunks: Mapping[str, Chunk],
    gt: set[str],
    *,
    rank: int | None = None,
    score: float | None = None,
    flags: tuple[str, ...] = (),
    doc_id: str = "",
    full: bool = False,
) -> ChunkView:
    c = chunks.get(chunk_id)
    limit = MAX_CHUNK_CHARS if full else PREVIEW_CHARS
    text, clipped = _clip(c.text, limit) if c is not None else ("", 0)
    return ChunkView(
        chunk_id=chunk_id,
        doc_id=c.doc_id if c is not None else doc_id,
        text=text,
        clipped=clipped,
        rank=rank,
        score=score,
        is_gt=chunk_id in gt,
        flags=flags,
        missing=c is None,
    )


def _example_view(d: Diagnosis, trace: Trace | None) -> ExampleView:
    mv = mode_vote_count(d)
    agree = f"{mv[0]}/{mv[1]}" if mv else fmt_pct(d.mode_frequency, 0)
    votes = Counter(str(v) for v in d.votes).most_common()
    base = ExampleView(
        diagnosis=d,
        trace=trace,
        type_title=ERROR_TYPE_NAMES[d.error_type] if d.error_type else "",
        second_title=ERROR_TYPE_NAMES[d.second_type] if d.second_type else "",
        agree=agree,
        votes=votes,
    )
    if trace is None:
        return base
    chunks = trace.chunk_map()
    gt = set(d.gt_chunk_ids) or set(trace.example.gt_chunk_ids)
    retrieved_rank = {h.chunk_id: h.rank for h in trace.retrieved}
    reranked_rank = {h.chunk_id: h.rank for h in trace.reranked}
    context = set(trace.context)
    budget = set(trace.dropped_context)
    has_rerank = bool(trace.reranked)

    def flags_for(cid: str) -> tuple[str, ...]:
        f: list[str] = []
        if cid in retrieved_rank:
            f.append(f"retrieved #{retrieved_rank[cid]}")
        if cid in reranked_rank:
            f.append(f"reranked #{reranked_rank[cid]}")
        elif has_rerank and cid in retrieved_rank:
            f.append("dropped by reranker")
        if cid in context:
            f.append("in context")
        if cid in budget:
            f.append("dropped by budget")
        return tuple(f)

    def hit_flags(cid: str, stage: str) -> tuple[str, ...]:
        f: list[str] = []
        if stage == "retrieved" and has_rerank:
            f.append(
                f"reranked #{reranked_rank[cid]}" if cid in reranked_rank else "dropped by reranker"
            )
        if cid in context:
            f.append("in context")
        if cid in budget:
            f.append("dropped by budget")
        return tuple(f)

    def hit_views(hits: Sequence[Hit], stage: str) -> list[ChunkView]:
        return [
            _view(
                h.chunk_id,
                chunks,
                gt,
                rank=h.rank,
                score=h.score,
                flags=hit_flags(h.chunk_id, stage),
                doc_id=h.doc_id,
            )
            for h in hits
        ]

    return ExampleView(
        diagnosis=d,
        trace=trace,
        type_title=base.type_title,
        second_title=base.second_title,
        agree=agree,
        votes=votes,
        gt_doc_chunks=[
            _view(c.chunk_id, chunks, gt, flags=flags_for(c.chunk_id), full=c.chunk_id in gt)
            for c in trace.gt_doc_chunks
        ],
        retrieved=hit_views(trace.retrieved, "retrieved"),
        reranked=hit_views(trace.reranked, "reranked"),
        context=[
            _view(
                cid,
                chunks,
                gt,
                rank=i,
                flags=("dropped by budget",) if cid in budget else (),
                full=True,
            )
            for i, cid in enumerate(trace.context, start=1)
        ],
        dropped_by_reranker=[
            _view(h.chunk_id, chunks, gt, rank=h.rank, score=h.score, doc_id=h.doc_id)
            for h in trace.retrieved
            if has_rerank and h.chunk_id not in reranked_rank
        ],
        dropped_by_budget=[
            _view(cid, chunks, gt, flags=("dropped by budget",)) for cid in trace.dropped_context
        ],
    )


def build_example_views(
    diagnoses: Sequence[Diagnosis],
    traces: Sequence[Trace],
    *,
    limit: int | None = None,
    metrics: RunMetrics | None = None,
) -> tuple[list[ExampleView], int]:
    """Drill-down views of the failing examples (stage order; with ``metrics``,
    faithfulness lowest first, undetermined last), and how many were left out."""
    diags, _ = dedupe_diagnoses(diagnoses)
    by_trace = {t.trace_id: t for t in traces}
    by_example = {t.example.example_id: t for t in traces}
    stage_order = {s: i for i, s in enumerate(Stage)}
    failing = sorted(
        (d for d in diags if d.needs_diagnosis and d.answer_label is not None),
        key=lambda d: (
            stage_order.get(d.stage, 9) if d.stage else 9,
            d.error_type.value if d.error_type else "",
            d.example_id,
        ),
    )
    if metrics is not None:
        faith = {d.example_id: metrics.faithfulness(d.example_id) for d in failing}
        failing.sort(key=lambda d: (faith[d.example_id] is None, faith[d.example_id] or 0.0))
    shown = failing if limit is None or limit <= 0 else failing[:limit]
    views = [
        _example_view(d, by_trace.get(d.trace_id) or by_example.get(d.example_id)) for d in shown
    ]
    if metrics is not None:
        views = [replace(v, metrics=metrics.example_values(v.diagnosis.example_id)) for v in views]
    return views, len(failing) - len(shown)


def _charts(summary: Summary) -> dict[str, Markup]:
    staged = [
        svg.Bar(
            label=s.stage.value,
            value=s.count,
            text=f"{s.count} ({fmt_pct(s.share)})",
            color=svg.STAGE_COLORS[s.stage.value],
        )
        for s in summary.stages
    ]
    if summary.stage_undetermined:
        staged.append(
            svg.Bar(
                label="undetermined",
                value=summary.stage_undetermined,
                text=str(summary.stage_undetermined),
                color=svg.STAGE_COLORS["undetermined"],
            )
        )
    types = [
        svg.Bar(
            label=f"{t.error_type.value} {t.title}",
            value=t.mode,
            text=str(t.mode),
            color=svg.STAGE_COLORS[t.stage.value],
            second=t.second,
            second_text=str(t.second),
        )
        for t in summary.types
    ]
    mf = [
        svg.Bar(label=b.label.split(" ")[0], value=b.count, text=str(b.count))
        for b in summary.mode_frequency
    ]
    co = summary.cooccurrence
    labels = [
        svg.Bar(
            label=lb.label,
            value=lb.accuracy or 0.0,
            text=f"{fmt_pct(lb.accuracy)} of {lb.determined}",
        )
        for lb in summary.by_label
    ]
    conf = [
        svg.Bar(label=b.label, value=b.count, text=str(b.count)) for b in summary.confidence_bins
    ]
    return {
        "confidence": svg.histogram(conf, title="Diagnosis confidence (lower bin edge)"),
        "stages": svg.bar_chart(staged, title="Failing examples by stage"),
        "types": svg.grouped_bar_chart(types, title="Error types: mode and second mode"),
        "mode_frequency": svg.histogram(mf, title="Mode frequency: votes agreeing with the mode"),
        "cooccurrence": svg.heatmap(
            co.matrix,
            [t.value for t in co.types],
            [t.value for t in co.types],
            title="Generation error types: mode (rows) × second mode (columns)",
            row_title="mode",
            col_title="second mode",
        ),
        "labels": svg.bar_chart(labels, title="Accuracy by question label", vmax=1.0),
    }


def _environment(package: str = "ragtriage.report") -> Environment:
    """Autoescaped, strict Jinja2 over ``package``'s ``templates`` folder (the report's;
    ``ragtriage serve`` uses it for its own), with the formatting filters."""
    from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

    env = Environment(
        loader=PackageLoader(package, "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["pct"] = fmt_pct
    env.filters["num"] = fmt_int
    env.filters["flt"] = fmt_float
    env.globals["confidence_meaning"] = CONFIDENCE_MEANING
    return env


def render_html(
    summary: Summary,
    diagnoses: Sequence[Diagnosis],
    traces: Sequence[Trace],
    *,
    title: str = "ragtriage report",
    run_info: Mapping[str, str] | None = None,
    max_examples: int | None = DEFAULT_MAX_EXAMPLES,
    agreement: AgreementReport | None = None,
    metrics: RunMetrics | None = None,
) -> str:
    """The report page as one string (UTF-8 text, no external references); with
    ``agreement`` (human labels) it also shows the agreement summary and the
    reliability table of the confidence; with ``metrics`` (``ragtriage evaluate``) the
    metric means with CIs and the failing examples sorted by faithfulness."""
    views, omitted = build_example_views(diagnoses, traces, limit=max_examples, metrics=metrics)
    template = _environment().get_template("report.html.j2")
    return template.render(
        title=title,
        headline=headline(summary),
        run_info=dict(run_info or {}),
        s=summary,
        charts=_charts(summary),
        examples=views,
        omitted=omitted,
        stages=[st.value for st in Stage],
        error_types=[(t.value, ERROR_TYPE_NAMES[t]) for t in ErrorType],
        type_names={t.value: ERROR_TYPE_NAMES[t] for t in ErrorType},
        agreement=agreement,
        metrics=metrics,
    )


def write_html(
    path: str | Path,
    summary: Summary,
    diagnoses: Sequence[Diagnosis],
    traces: Sequence[Trace],
    *,
    title: str = "ragtriage report",
    run_info: Mapping[str, str] | None = None,
    max_examples: int | None = DEFAULT_MAX_EXAMPLES,
    agreement: AgreementReport | None = None,
    metrics: RunMetrics | None = None,
) -> None:
    """Render and write the report atomically."""
    atomic_write_text(
        path,
        render_html(
            summary,
            diagnoses,
            traces,
            title=title,
            run_info=run_info,
            max_examples=max_examples,
            agreement=agreement,
            metrics=metrics,
        ),
    )
