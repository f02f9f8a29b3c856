"""What the trace page shows, computed from one :class:`Trace` and its :class:`Diagnosis`.

Pure functions: no file access, no HTML (the templates escape every string).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragtriage.records import ERROR_TYPE_NAMES, Chunk, Diagnosis, ErrorType, Hit, Trace
from ragtriage.report.aggregate import mode_vote_count

__all__ = [
    "ChunkRow",
    "ClaimRow",
    "DiagnosisView",
    "DocChunks",
    "TraceView",
    "build_trace_view",
    "diagnosis_view",
]


@dataclass(frozen=True)
class ChunkRow:
    """One chunk in a ranked list (or a document's chunk list)."""

    chunk_id: str
    doc_id: str
    text: str
    rank: int | None = None
    score: float | None = None
    is_gt: bool = False
    in_context: bool = False
    place: str = ""
    flags: tuple[str, ...] = ()
    missing: bool = False


@dataclass(frozen=True)
class DocChunks:
    """All chunks of one ground-truth document, in document order (chunking visible)."""

    doc_id: str
    chunks: tuple[ChunkRow, ...]


@dataclass(frozen=True)
class ClaimRow:
    """One claim (sentence) of the answer and whether the context supports it."""

    text: str
    verdict: str  # supported | not_supported | contradicted


@dataclass(frozen=True)
class DiagnosisView:
    diagnosis: Diagnosis
    type_title: str
    second_title: str
    agree: str
    votes: tuple[tuple[str, int, str], ...]  # (vote, count, title)


@dataclass(frozen=True)
class TraceView:
    trace: Trace
    gt_ids: frozenset[str]
    transforms: tuple[str, ...]
    transform_method: str | None
    transform_note: str | None
    retrieved: tuple[ChunkRow, ...]
    reranked: tuple[ChunkRow, ...]
    context: tuple[ChunkRow, ...]
    dropped_by_budget: tuple[ChunkRow, ...]
    gt_docs: tuple[DocChunks, ...]
    prompt: str
    prompt_source: str
    claims: tuple[ClaimRow, ...] | None
    claims_note: str
    metrics: tuple[tuple[str, str, str], ...]  # (metric, value, reason)
    diagnosis: DiagnosisView | None
    extra: Mapping[str, Any] = field(default_factory=dict)


def _doc_sizes(trace: Trace) -> dict[str, int]:
    """Number of chunks per document, where the trace holds every chunk of it (the
    ground-truth documents)."""
    return dict(Counter(c.doc_id for c in trace.gt_doc_chunks))


def chunk_place(chunk: Chunk, sizes: Mapping[str, int]) -> str:
    """``chunk 3 of 12 in doc X, chars a–b`` (without "of N" when N is unknown)."""
    n = sizes.get(chunk.doc_id)
    of = f" of {n}" if n else ""
    return f"chunk {chunk.index + 1}{of} in doc {chunk.doc_id}, chars {chunk.start}–{chunk.end}"


def _row(
    cid: str,
    chunks: Mapping[str, Chunk],
    gt: frozenset[str],
    context: frozenset[str],
    sizes: Mapping[str, int],
    *,
    rank: int | None = None,
    score: float | None = None,
    doc_id: str = "",
    flags: tuple[str, ...] = (),
) -> ChunkRow:
    c = chunks.get(cid)
    return ChunkRow(
        chunk_id=cid,
        doc_id=c.doc_id if c is not None else doc_id,
        text=c.text if c is not None else "",
        rank=rank,
        score=score,
        is_gt=cid in gt,
        in_context=cid in context,
        place=chunk_place(c, sizes) if c is not None else "",
        flags=flags,
        missing=c is None,
    )


def _hit_rows(
    hits: Sequence[Hit],
    other_rank: Mapping[str, int],
    other_name: str,
    has_other: bool,
    absent: str,
    chunks: Mapping[str, Chunk],
    gt: frozenset[str],
    context: frozenset[str],
    budget: frozenset[str],
    sizes: Mapping[str, int],
) -> tuple[ChunkRow, ...]:
    rows = []
    for h in hits:
        flags: list[str] = []
        if has_other:
            r = other_rank.get(h.chunk_id)
            flags.append(f"{other_name} #{r}" if r is not None else absent)
        if h.chunk_id in budget:
            flags.append("dropped by budget")
        if h.score is None:  # an imported hit whose source kept no score: none is shown
            flags.append("no score recorded")
        rows.append(
            _row(
                h.chunk_id,
                chunks,
                gt,
                context,
                sizes,
                rank=h.rank,
                score=h.score,
                doc_id=h.doc_id,
                flags=tuple(flags),
            )
        )
    return tuple(rows)


def diagnosis_view(d: Diagnosis) -> DiagnosisView:
    mv = mode_vote_count(d)
    if mv is not None:
        agree = f"{mv[0]}/{mv[1]}"
    elif d.mode_frequency is not None:
        agree = f"{100 * d.mode_frequency:.0f}%"
    else:
        agree = ""
    votes = tuple(
        (v, n, ERROR_TYPE_NAMES[ErrorType(v)] if v in ErrorType.__members__ else "")
        for v, n in Counter(str(v) for v in d.votes).most_common()
    )
    return DiagnosisView(
        diagnosis=d,
        type_title=ERROR_TYPE_NAMES[d.error_type] if d.error_type else "",
        second_title=ERROR_TYPE_NAMES[d.second_type] if d.second_type else "",
        agree=agree,
        votes=votes,
    )


def _prompt(trace: Trace, context: Sequence[Chunk]) -> tuple[str, str]:
    """The prompt the generator saw: stored in the trace's metadata when the pipeline or
    importer kept it, else rebuilt from the stored prompt variant and context."""
    for key in ("prompt", "generation_prompt"):
        stored = trace.metadata.get(key)
        if isinstance(stored, str) and stored.strip():
            return stored, "stored in the trace"
    gen = trace.metadata.get("generation")
    variant = gen.get("prompt_variant") if isinstance(gen, dict) else None
    if not isinstance(variant, str) or variant not in ("default", "zh_keypoints"):
        return "", "the trace does not store its prompt"
    from ragtriage.generation import build_prompt

    parts = build_prompt(variant, trace.example.query, context)
    text = "\n\n".join(f"[{m.role}]\n{m.content}" for m in parts.messages)
    return text, f"rebuilt from the trace's context and prompt variant '{variant}'"


def _claims(
    trace: Trace, metrics: Mapping[str, Any] | None
) -> tuple[tuple[ClaimRow, ...] | None, str]:
    """Claim-level support when faithfulness was evaluated: claims stored with the
    scores, else the offline judge's claims (what ``ragtriage evaluate`` computed)."""
    if not metrics:
        return None, ""
    stored = metrics.get("claims")
    if isinstance(stored, list):
        rows = tuple(
            ClaimRow(text=str(c.get("claim", "")), verdict=str(c.get("verdict", "")))
            for c in stored
            if isinstance(c, dict)
        )
        return rows, "claims stored with the scores"
    scores = metrics.get("scores", metrics)
    faith = scores.get("faithfulness") if isinstance(scores, Mapping) else None
    if not isinstance(faith, Mapping):
        return None, ""
    judge = str(faith.get("judge", ""))
    if judge != "offline":
        return None, f"faithfulness by the {judge or 'unknown'} judge: claims are not stored"
    from ragtriage.metrics import OfflineJudge

    j = OfflineJudge().judge_one(trace)
    if j.claims is None:
        return None, j.claims_reason or ""
    return (
        tuple(ClaimRow(text=c.claim, verdict=c.verdict) for c in j.claims),
        "claims and support by the offline judge (as `ragtriage evaluate` scores them)",
    )


def _metric_rows(metrics: Mapping[str, Any] | None) -> tuple[tuple[str, str, str], ...]:
    if not metrics:
        return ()
    scores = metrics.get("scores", metrics)
    if not isinstance(scores, Mapping):
        return ()
    out = []
    for name in sorted(scores):
        s = scores[name]
        if not isinstance(s, Mapping):
            continue
        v = s.get("value")
        shown = f"{v:.3f}" if isinstance(v, int | float) else str(v)
        out.append((str(name), shown, str(s.get("reason", "") or "")))
    return tuple(out)


def build_trace_view(
    trace: Trace,
    diagnosis: Diagnosis | None,
    metrics: Mapping[str, Any] | None = None,
) -> TraceView:
    chunks = trace.chunk_map()
    gt = frozenset(diagnosis.gt_chunk_ids if diagnosis and diagnosis.gt_chunk_ids else ()) or (
        frozenset(trace.example.gt_chunk_ids)
    )
    context = frozenset(trace.context)
    budget = frozenset(trace.dropped_context)
    sizes = _doc_sizes(trace)
    retrieved_rank = {h.chunk_id: h.rank for h in trace.retrieved}
    reranked_rank = {h.chunk_id: h.rank for h in trace.reranked}
    retrieved = _hit_rows(
        trace.retrieved,
        reranked_rank,
        "reranked",
        bool(trace.reranked),
        "dropped by reranker",
        chunks,
        gt,
        context,
        budget,
        sizes,
    )
    reranked = _hit_rows(
        trace.reranked,
        retrieved_rank,
        "was",
        True,
        "not retrieved",
        chunks,
        gt,
        context,
        budget,
        sizes,
    )
    ctx_rows = tuple(
        _row(cid, chunks, gt, context, sizes, rank=i) for i, cid in enumerate(trace.context, 1)
    )
    dropped = tuple(
        _row(cid, chunks, gt, context, sizes, flags=("dropped by budget",))
        for cid in trace.dropped_context
    )
    docs: dict[str, list[ChunkRow]] = {}
    for c in sorted(trace.gt_doc_chunks, key=lambda c: (c.doc_id, c.index)):
        flags: list[str] = []
        if c.chunk_id in retrieved_rank:
            flags.append(f"retrieved #{retrieved_rank[c.chunk_id]}")
        if c.chunk_id in reranked_rank:
            flags.append(f"reranked #{reranked_rank[c.chunk_id]}")
        docs.setdefault(c.doc_id, []).append(
            _row(c.chunk_id, chunks, gt, context, sizes, flags=tuple(flags))
        )
    qt = trace.metadata.get("query_transform")
    transforms: tuple[str, ...] = ()
    method = note = None
    if isinstance(qt, dict):
        qs = qt.get("queries")
        if isinstance(qs, list):
            transforms = tuple(str(q) for q in qs)
        m, n = qt.get("method"), qt.get("note")
        method = str(m) if m is not None else None
        note = str(n) if n else None
    from ragtriage.metrics._context import context_chunks

    prompt, prompt_source = _prompt(trace, context_chunks(trace))
    claims, claims_note = _claims(trace, metrics)
    return TraceView(
        trace=trace,
        gt_ids=gt,
        transforms=transforms,
        transform_method=method,
        transform_note=note,
        retrieved=retrieved,
        reranked=reranked,
        context=ctx_rows,
        dropped_by_budget=dropped,
        gt_docs=tuple(DocChunks(doc_id=k, chunks=tuple(v)) for k, v in docs.items()),
        prompt=prompt,
        prompt_source=prompt_source,
        claims=claims,
        claims_note=claims_note,
        metrics=_metric_rows(metrics),
        diagnosis=diagnosis_view(diagnosis) if diagnosis is not None else None,
    )
