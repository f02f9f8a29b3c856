"""The LLM error-type judge (seed 000, App. B.3, Listings 7-10).

Only the attributed stage's own context goes into the prompt (chunking: the GT
documents' chunks; retrieval: the retrieved chunks; reranking: the reranked chunks;
generation: the wrong answer and the chunks the generator saw). K samples are drawn
(one ``n=K`` request by default); each sample's type is read with
:func:`ragtriage.llm.extract_label` against the stage's allowed types, and a sample
that names none (or several) becomes an ``"undetermined"`` vote.
"""

from __future__ import annotations

from collections.abc import Sequence

from ragtriage.diagnosis._calls import LLMCalls
from ragtriage.diagnosis._context import CaseContext
from ragtriage.diagnosis.gt_chunks import gt_chunk_views
from ragtriage.diagnosis.question_parts import mentions_part, question_parts
from ragtriage.diagnosis.votes import UNDETERMINED
from ragtriage.judge.parsing import parse_error_type
from ragtriage.judge.prompts import (
    NO_ERROR,
    ChunkView,
    Prompt,
    alias,
    ground_truth_text,
    single_step_prompt,
    stage_check_prompt,
    type_prompt,
)
from ragtriage.records import ErrorType, Stage, Trace, Vote, types_of_stage

__all__ = [
    "context_views",
    "gt_doc_ids",
    "llm_type_votes",
    "parse_stage_check",
    "parse_votes",
    "reranked_views",
    "retrieved_views",
    "single_step",
    "stage_check",
    "stage_prompt",
]


def _views(trace: Trace, ids: Sequence[str]) -> list[ChunkView]:
    cm = trace.chunk_map()
    out: list[ChunkView] = []
    for cid in ids:
        c = cm.get(cid)
        if c is not None:
            out.append(ChunkView(alias(len(out)), cid, c.text, c.doc_id))
    return out


def retrieved_views(trace: Trace) -> list[ChunkView]:
    return _views(trace, [h.chunk_id for h in sorted(trace.retrieved, key=lambda h: h.rank)])


def reranked_views(trace: Trace) -> list[ChunkView]:
    """Reranked chunks in reranked order (the retrieved ones when no reranker ran)."""
    hits = trace.reranked or trace.retrieved
    return _views(trace, [h.chunk_id for h in sorted(hits, key=lambda h: h.rank)])


def context_views(trace: Trace) -> list[ChunkView]:
    """The chunks the generator saw, in prompt order."""
    return _views(trace, list(trace.context))


def gt_doc_ids(trace: Trace, gt_ids: Sequence[str] = ()) -> list[str]:
    """Ids of the GT documents: the example's, else those of the GT chunks."""
    if trace.example.doc_ids:
        return list(dict.fromkeys(trace.example.doc_ids))
    cm = trace.chunk_map()
    docs = [cm[c].doc_id for c in gt_ids if c in cm]
    docs += [c.doc_id for c in trace.gt_doc_chunks]
    return list(dict.fromkeys(docs))


def _ground_truth(trace: Trace) -> str:
    ex = trace.example
    return ground_truth_text(ex.answer, ex.answerable, ex.keypoints)


def stage_prompt(ctx: CaseContext) -> Prompt:
    """The Listing 7/8/9/10 prompt for ``ctx.stage``, with only that stage's context."""
    trace = ctx.trace
    query, truth = trace.example.query, _ground_truth(trace)
    if ctx.stage is Stage.CHUNKING:
        return type_prompt(
            Stage.CHUNKING, query=query, ground_truth=truth, gt_doc_chunks=gt_chunk_views(trace)
        )
    docs = gt_doc_ids(trace, ctx.gt_chunk_ids)
    if ctx.stage is Stage.RETRIEVAL:
        views = retrieved_views(trace)
        return type_prompt(
            Stage.RETRIEVAL,
            query=query,
            ground_truth=truth,
            gt_doc_ids=docs,
            retrieved=views,
            entity_note=entity_note(query, views),
        )
    if ctx.stage is Stage.RERANKING:
        views = reranked_views(trace)
        return type_prompt(
            Stage.RERANKING,
            query=query,
            ground_truth=truth,
            gt_doc_ids=docs,
            reranked=views,
            kept=len(trace.context),
            entity_note=entity_note(query, context_views(trace)),
        )
    views = context_views(trace)
    return type_prompt(
        Stage.GENERATION,
        query=query,
        ground_truth=truth,
        answer=trace.answer.strip() or "(empty answer)",
        reranked=views,
        entity_note=entity_note(query, views),
    )


def entity_note(query: str, views: Sequence[ChunkView]) -> str:
    """For a question about several entities: how many of the chunks shown mention each
    ("'Acme Corp': 3 of 5 chunks; 'Globex': none of them"); "" otherwise."""
    parts = [p for p in question_parts(query) if p.kind == "entity"]
    if len(parts) < 2 or not views:
        return ""
    notes = []
    for p in parts:
        n = sum(1 for v in views if mentions_part(p, v.text))
        notes.append(
            f"{p.text!r}: {n} of {len(views)} chunks" if n else f"{p.text!r}: none of them"
        )
    return "; ".join(notes)


def single_step(trace: Trace) -> Prompt:
    """All 16 types, all context (B.4.1)."""
    return single_step_prompt(
        query=trace.example.query,
        ground_truth=_ground_truth(trace),
        answer=trace.answer.strip() or "(empty answer)",
        retrieved=retrieved_views(trace),
        reranked=context_views(trace),
    )


def stage_check(trace: Trace, stage: Stage) -> Prompt:
    """Is there an error at ``stage``? (B.4.2; not for generation)."""
    return stage_check_prompt(
        stage,
        query=trace.example.query,
        ground_truth=_ground_truth(trace),
        gt_doc_chunks=gt_chunk_views(trace),
        gt_doc_ids=gt_doc_ids(trace),
        retrieved=retrieved_views(trace),
        reranked=reranked_views(trace),
    )


def parse_votes(texts: Sequence[str | None], allowed: Sequence[ErrorType]) -> list[Vote]:
    """One vote per sample: the allowed type it names, or ``"undetermined"`` for a
    failed or unreadable sample."""
    votes: list[Vote] = []
    for text in texts:
        found = None if text is None else parse_error_type(text, allowed)
        votes.append(found if isinstance(found, ErrorType) else "undetermined")
    return votes


def parse_stage_check(
    texts: Sequence[str | None], allowed: Sequence[ErrorType]
) -> tuple[list[Vote], int]:
    """Stage-sequential samples: votes (a "no error" or unreadable sample is an
    ``"undetermined"`` vote) and how many samples said "no error"."""
    votes: list[Vote] = []
    no_error = 0
    for text in texts:
        found = None if text is None else parse_error_type(text, allowed, allow_no_error=True)
        if isinstance(found, ErrorType):
            votes.append(found)
        else:
            no_error += found == NO_ERROR
            votes.append("undetermined")
    return votes, no_error


async def llm_type_votes(ctx: CaseContext, k: int, calls: LLMCalls) -> tuple[list[Vote], list[str]]:
    """K votes on the error type within ``ctx.stage`` and evidence lines."""
    texts, failures = await calls.samples(stage_prompt(ctx), k, purpose=f"type_{ctx.stage.value}")
    allowed = types_of_stage(ctx.stage)
    votes = parse_votes(texts, allowed)
    evidence: list[str] = []
    bad = sum(1 for v in votes if v == UNDETERMINED)
    if failures:
        evidence.append(f"LLM type judge: {len(failures)} request(s) failed: {failures[0].reason}")
    if bad:
        evidence.append(f"LLM type judge: {bad}/{k} sample(s) named no {ctx.stage.value} type")
    return votes, evidence
