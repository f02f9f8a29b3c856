"""Ground-truth chunks of one example (seed 000, App. B.2.1), cheapest source first.

1. ``dataset`` — the dataset names them (pre-chunked corpora such as CLAPnq:
   ``Example.gt_chunk_ids``).
2. ``references`` — chunks whose character span overlaps a verbatim evidence string
   (DragonBall ``references``), via :func:`ragtriage.groundtruth.gt_chunks_from_references`.
3. ``llm_votes`` — the LLM is asked K times (Listing 4) which chunks of the GT
   documents are needed; chunks chosen in more than ``gt_chunk_vote_fraction`` of
   the readable votes are kept (the paper: more than 8 of 10).
4. ``lexical`` — offline fallback: GT-document chunks that contain most of the
   ground-truth answer's content tokens (weighted with the query's).

An unanswerable example has no GT chunks (its stage is generation by B.2.2).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from ragtriage.config import DiagnosisConfig
from ragtriage.diagnosis._calls import LLMCalls
from ragtriage.diagnosis.concepts import gt_doc_texts
from ragtriage.groundtruth import gt_chunks_from_references
from ragtriage.judge.parsing import parse_chunk_choice
from ragtriage.judge.prompts import ChunkView, Prompt, alias, ground_truth_text, gt_chunks_prompt
from ragtriage.records import Chunk, Trace
from ragtriage.text import content_tokens

__all__ = [
    "GTChunks",
    "determine_gt_chunks",
    "gt_chunk_views",
    "gt_from_dataset",
    "gt_from_references",
    "gt_lexical",
    "gt_vote_prompt",
    "tally_gt_votes",
]

#: Lexical fallback: a chunk must hold at least this share of the answer's content tokens
_MIN_ANSWER_RECALL = 0.5
#: ... and score at least this share of the best chunk's score
_RELATIVE_TO_BEST = 0.8


@dataclass(frozen=True, slots=True)
class GTChunks:
    """GT chunk ids, where they came from and why; ``source is None`` when there are none
    to be had (then ``reason`` says why)."""

    ids: tuple[str, ...]
    source: str | None
    reason: str
    #: llm_votes: chunk id -> number of readable votes choosing it
    vote_counts: dict[str, int] = field(default_factory=dict)
    readable_votes: int = 0
    unreadable_votes: int = 0
    unlocated_references: tuple[str, ...] = ()


def _gt_doc_chunks(trace: Trace) -> list[Chunk]:
    wanted = set(trace.example.doc_ids)
    chunks = [c for c in trace.gt_doc_chunks if not wanted or c.doc_id in wanted]
    return chunks or list(trace.gt_doc_chunks)


def gt_chunk_views(trace: Trace) -> list[ChunkView]:
    """The GT-document chunks as the judge sees them (document, then position order)."""
    order = {d: i for i, d in enumerate(trace.example.doc_ids)}
    chunks = sorted(
        _gt_doc_chunks(trace), key=lambda c: (order.get(c.doc_id, len(order)), c.doc_id, c.index)
    )
    return [ChunkView(alias(i), c.chunk_id, c.text, c.doc_id) for i, c in enumerate(chunks)]


def gt_from_dataset(trace: Trace) -> GTChunks | None:
    ids = tuple(dict.fromkeys(trace.example.gt_chunk_ids))
    if not ids:
        return None
    return GTChunks(ids, "dataset", f"{len(ids)} ground-truth chunk(s) given by the dataset")


_MAX_OCCURRENCES = 64


def _exact_reference_chunks(trace: Trace, refs: Sequence[str]) -> list[str] | None:
    """Fast path of :func:`ragtriage.groundtruth.gt_chunks_from_references` with the
    same result: when every reference occurs verbatim in every searched document, its
    chunks are the ones overlapping those occurrences (documents rebuilt once per
    trace, cached). Otherwise ``None``: the full search (normalised, fuzzy) decides."""
    texts = gt_doc_texts(trace)
    ex = trace.example
    wanted = [d for d in dict.fromkeys(ex.doc_ids) if d in texts] if ex.doc_ids else list(texts)
    if not wanted:
        return None
    spans: dict[str, list[tuple[int, int]]] = {d: [] for d in wanted}
    for ref in refs:
        needle = ref.strip()
        for doc_id in wanted:
            text, offset = texts[doc_id]
            at = text.find(needle)
            if at < 0:
                return None
            found = 0
            while at >= 0 and found < _MAX_OCCURRENCES:
                spans[doc_id].append((offset + at, offset + at + len(needle)))
                found += 1
                at = text.find(needle, at + len(needle))
    hit: set[str] = set()
    for c in trace.gt_doc_chunks:
        doc_spans = spans.get(c.doc_id)
        if doc_spans and any(min(c.end, e) - max(c.start, b) >= 1 for b, e in doc_spans):
            hit.add(c.chunk_id)
    return list(dict.fromkeys(c.chunk_id for c in trace.gt_doc_chunks if c.chunk_id in hit))


def gt_from_references(trace: Trace) -> GTChunks | None:
    """GT chunks overlapping the located references, or ``None`` when the example has
    no references or none could be located in the GT documents."""
    refs = [r for r in trace.example.references if r.strip()]
    if not refs or not trace.gt_doc_chunks:
        return None
    fast = _exact_reference_chunks(trace, refs)
    ids, missing = (
        (fast, [])
        if fast is not None
        else gt_chunks_from_references(trace.example, trace.gt_doc_chunks)
    )
    if not ids:
        return None
    note = (
        f"{len(ids)} chunk(s) overlap {len(refs) - len(missing)}/{len(refs)} located reference(s)"
    )
    return GTChunks(tuple(ids), "references", note, unlocated_references=tuple(missing))


def gt_lexical(trace: Trace) -> GTChunks:
    """Offline fallback: chunks holding most of the answer's content tokens."""
    ex = trace.example
    if not ex.answerable:
        return GTChunks((), None, "unanswerable example: no ground-truth chunks")
    target = " ".join([ex.answer, *ex.keypoints])
    answer_toks = set(content_tokens(target))
    if not answer_toks:
        return GTChunks((), None, "ground-truth answer has no content tokens to match")
    chunks = _gt_doc_chunks(trace)
    if not chunks:
        return GTChunks((), None, "trace has no ground-truth document chunks")
    query_toks = set(content_tokens(ex.query))
    scored: list[tuple[float, float, str]] = []
    for c in chunks:
        toks = set(content_tokens(c.text))
        a = len(answer_toks & toks) / len(answer_toks)
        q = len(query_toks & toks) / len(query_toks) if query_toks else 0.0
        scored.append((0.7 * a + 0.3 * q, a, c.chunk_id))
    best = max(s for s, _, _ in scored)
    ids = tuple(
        cid
        for s, a, cid in scored
        if a >= _MIN_ANSWER_RECALL and s >= _RELATIVE_TO_BEST * best and s > 0
    )
    if not ids:
        return GTChunks(
            (),
            None,
            f"no ground-truth document chunk holds >= {_MIN_ANSWER_RECALL:g} of the answer",
        )
    return GTChunks(ids, "lexical", f"{len(ids)} chunk(s) share most of the answer's words")


def gt_vote_prompt(trace: Trace, views: Sequence[ChunkView]) -> Prompt:
    ex = trace.example
    return gt_chunks_prompt(
        ex.query, ground_truth_text(ex.answer, ex.answerable, ex.keypoints), views
    )


def tally_gt_votes(
    texts: Sequence[str | None], views: Sequence[ChunkView], config: DiagnosisConfig
) -> GTChunks | None:
    """Keep chunks chosen in more than ``gt_chunk_vote_fraction`` of the readable votes.

    Unreadable samples (failed requests, replies naming no chunk) are counted, not used.
    Returns ``None`` when no vote was readable.
    """
    aliases = {v.alias: v.chunk_id for v in views}
    counts: Counter[str] = Counter()
    readable = 0
    for text in texts:
        chosen = None if text is None else parse_chunk_choice(text, aliases)
        if chosen is None:
            continue
        readable += 1
        counts.update(set(chosen))
    unreadable = len(texts) - readable
    if readable == 0:
        return None
    need = config.gt_chunk_vote_fraction * readable
    order = {v.chunk_id: i for i, v in enumerate(views)}
    ids = tuple(sorted((c for c, n in counts.items() if n > need), key=lambda c: order.get(c, 0)))
    reason = (
        f"{len(ids)} chunk(s) chosen in more than {config.gt_chunk_vote_fraction:g} of "
        f"{readable} readable LLM votes"
    )
    if unreadable:
        reason += f" ({unreadable} unreadable)"
    return GTChunks(
        ids,
        "llm_votes",
        reason,
        vote_counts=dict(counts),
        readable_votes=readable,
        unreadable_votes=unreadable,
    )


async def determine_gt_chunks(
    trace: Trace,
    config: DiagnosisConfig,
    calls: LLMCalls | None = None,
    *,
    use_given: bool = True,
) -> GTChunks:
    """The GT chunks of ``trace`` from the cheapest source that has them.

    With ``calls`` (the LLM judge) the LLM votes replace the lexical fallback; with
    ``use_given=False`` the dataset/references shortcut is skipped (the paper's
    protocol, used by the cost benchmark). A vote round with no readable vote falls
    back to the lexical method and says so.
    """
    if use_given:
        given = gt_from_dataset(trace) or gt_from_references(trace)
        if given is not None:
            return given
    if not trace.example.answerable:
        return GTChunks((), None, "unanswerable example: no ground-truth chunks")
    if calls is None:
        return gt_lexical(trace)
    views = gt_chunk_views(trace)
    if not views:
        return GTChunks((), None, "trace has no ground-truth document chunks to vote on")
    texts, failures = await calls.samples(
        gt_vote_prompt(trace, views), config.gt_chunk_votes, purpose="gt_chunks", max_tokens=256
    )
    tally = tally_gt_votes(texts, views, config)
    if tally is not None:
        return tally
    fallback = gt_lexical(trace)
    why = failures[0].reason if failures else "no reply named a chunk"
    return GTChunks(
        fallback.ids,
        fallback.source,
        f"{fallback.reason} (LLM votes unreadable: {why})",
        unreadable_votes=len(texts),
    )
