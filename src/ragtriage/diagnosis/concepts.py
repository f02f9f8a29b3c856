"""Concept coverage of the GT chunks: chunking vs retrieval (seed 000, App. B.2.4).

The query's concepts (Listing 5) are checked against the GT chunks (Listing 6); the
coverage is the share of concepts found in at least one GT chunk. Offline, the
rules in :mod:`ragtriage.diagnosis.facts` extract concepts (noun phrases, named
entities, numbers, dates) and match them fuzzily. With an LLM, concepts come from
one extraction call and containment from ONE batched call over all concepts x all GT
chunks (the paper made one call per concept; ``batched=False`` reproduces that).
Whatever the LLM leaves undecided is decided offline and the note says so. A concept-list
reply none of whose lines shares a word with the question (a refusal, an error message, a
paragraph about something else) is unreadable: the extraction step is undetermined, the
reply is never sent on to the containment prompt, and the rules' concepts stand in (the
note says so).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache

from ragtriage.diagnosis._calls import LLMCalls
from ragtriage.diagnosis.facts import concept_in_text, extract_concepts, extract_entities, stem
from ragtriage.diagnosis.question_parts import question_parts
from ragtriage.judge.parsing import (
    parse_concept_list,
    parse_containment,
    parse_containment_batched,
)
from ragtriage.judge.prompts import (
    ChunkView,
    alias,
    concept_containment_batched_prompt,
    concept_containment_prompt,
    concept_extraction_prompt,
)
from ragtriage.llm import LLMFailure
from ragtriage.records import Chunk, Trace
from ragtriage.text import content_tokens, has_cjk, normalize

__all__ = [
    "ConceptCoverage",
    "concept_hits_rules",
    "coverage_of",
    "gt_doc_texts",
    "gt_views",
    "llm_concept_coverage",
    "rules_concept_coverage",
]

_MAX_CONCEPTS = 20


@dataclass(frozen=True, slots=True)
class ConceptCoverage:
    """Concepts, which GT chunks hold each, and the covered share (``None`` when it
    cannot be measured: no concepts, or no GT chunk text)."""

    concepts: tuple[str, ...]
    hits: Mapping[str, tuple[str, ...]]
    coverage: float | None
    method: str
    note: str = ""
    missing_text: tuple[str, ...] = field(default=())
    #: concepts not scored: found nowhere in the GT documents (either judge), or (rules)
    #: abstract phrases with no literal or stem match in the GT chunks
    absent_from_docs: tuple[str, ...] = field(default=())

    @property
    def n_scored(self) -> int:
        """How many concepts the coverage was computed over."""
        return len(self.concepts) - len(self.absent_from_docs)


def gt_views(trace: Trace, gt_ids: Sequence[str]) -> tuple[list[ChunkView], tuple[str, ...]]:
    """The GT chunks that have text in the trace (as judge views), and the ids without."""
    cm = trace.chunk_map()
    views: list[ChunkView] = []
    missing: list[str] = []
    for cid in gt_ids:
        c = cm.get(cid)
        if c is None:
            missing.append(cid)
        else:
            views.append(ChunkView(alias(len(views)), cid, c.text, c.doc_id))
    return views, tuple(missing)


def coverage_of(concepts: Sequence[str], hits: Mapping[str, Sequence[str]]) -> float | None:
    """Share of concepts held by at least one chunk; ``None`` without concepts."""
    if not concepts:
        return None
    return sum(1 for c in concepts if hits.get(c)) / len(concepts)


def concept_hits_rules(
    concepts: Sequence[str], views: Sequence[ChunkView]
) -> dict[str, tuple[str, ...]]:
    """Offline Listing 6: ``{concept: ids of chunks containing it}``."""
    return {c: tuple(v.chunk_id for v in views if concept_in_text(c, v.text)) for c in concepts}


def _finish(
    concepts: Sequence[str],
    hits: Mapping[str, tuple[str, ...]],
    views: Sequence[ChunkView],
    missing: tuple[str, ...],
    method: str,
    notes: list[str],
) -> ConceptCoverage:
    if missing:
        notes.append(f"{len(missing)} GT chunk(s) have no text in the trace")
    coverage = coverage_of(concepts, hits) if views else None
    if not views:
        notes.append("no GT chunk text to check concepts against")
    elif not concepts:
        notes.append("no concepts extracted from the query")
    return ConceptCoverage(
        concepts=tuple(concepts),
        hits=dict(hits),
        coverage=coverage,
        method=method,
        note="; ".join(notes),
        missing_text=missing,
    )


def rules_concept_coverage(trace: Trace, gt_ids: Sequence[str]) -> ConceptCoverage:
    """Offline concept coverage of the GT chunks.

    Lexical matching cannot see paraphrase: a query concept worded differently from the
    documents would be "missing" from the GT chunks and wrongly blame chunking. Chunking
    can only separate a concept from the answer when the ground-truth documents state
    it, so concepts found nowhere in the GT documents (rebuilt from ``gt_doc_chunks``)
    are left out of the coverage and named in the note. When every concept is absent,
    the coverage is unmeasurable and the cascade falls back to retrieval by elimination.
    """
    views, missing = gt_views(trace, gt_ids)
    query = trace.example.query
    concepts = _dedupe(extract_concepts(query))
    hits = concept_hits_rules(concepts, views)
    notes: list[str] = []
    # abstract phrases ("significant financial events", "影响因素") are matched by their
    # stems at half their terms; one still unmatched counts against the GT chunks only
    # when the GT documents state the phrase itself elsewhere (a header: positive
    # evidence that chunking cut it off) -- otherwise the documents word it differently
    # or scatter its words: not scored
    specific = _specific_concepts(query, concepts)
    doc_texts = _gt_doc_texts(trace)
    soft: list[str] = []
    abstract: list[str] = []
    for c in concepts:
        if hits.get(c) or c in specific or has_cjk(c):
            # Chinese concepts are character runs that often hold a name ("华夏娱乐投资"):
            # half their bigrams is no match, so they keep the strict test
            continue
        ids = tuple(v.chunk_id for v in views if concept_in_text(c, v.text, threshold=0.5))
        if ids:
            hits[c] = ids
            soft.append(c)
        elif not any(_phrase_in(c, t) for t in doc_texts):
            abstract.append(c)
    absent = tuple(
        c
        for c in concepts
        if c not in abstract
        and not hits.get(c)
        and doc_texts
        and not any(concept_in_text(c, t) for t in doc_texts)
    )
    if soft:
        notes.append(
            f"{len(soft)} abstract concept(s) matched by stems (half their terms): "
            + ", ".join(repr(c) for c in soft[:5])
        )
    if abstract:
        notes.append(
            f"{len(abstract)} abstract concept(s) with no literal or stem match are not "
            "scored (no positive evidence of a chunking fault): "
            + ", ".join(repr(c) for c in abstract[:5])
        )
    if absent:
        notes.append(
            f"{len(absent)}/{len(concepts)} concept(s) occur nowhere in the ground-truth "
            f"documents (paraphrase or not stated) and are not scored: "
            + ", ".join(repr(c) for c in absent[:5])
        )
    unscored = (*absent, *abstract)
    scored = [c for c in concepts if c not in unscored]
    result = _finish(scored, hits, views, missing, "rules", notes)
    return replace(result, concepts=tuple(concepts), absent_from_docs=unscored)


def _phrase_in(phrase: str, text: str) -> bool:
    """The phrase itself (normalised, on word boundaries) occurs in the text -- a header
    or sentence that states it, not its words scattered over a document."""
    np_ = normalize(phrase)
    return bool(np_) and f" {np_} " in f" {normalize(text)} "


def _specific_concepts(query: str, concepts: Sequence[str]) -> frozenset[str]:
    """Concepts that name the question's subject: names (entities, multi-entity parts),
    numbers and dates. Only their absence from the GT chunks is evidence of chunking."""
    names = [*extract_entities(query), *(p.text for p in question_parts(query))]
    out = set()
    for c in concepts:
        low = c.casefold()
        if any(ch.isdigit() for ch in c) or any(
            low in n.casefold() or n.casefold() in low for n in names
        ):
            out.add(c)
    return frozenset(out)


def _gt_doc_texts(trace: Trace) -> list[str]:
    """The ground-truth documents' text, rebuilt from all their chunks."""
    return [text for text, _ in gt_doc_texts(trace).values()]


def gt_doc_texts(trace: Trace) -> dict[str, tuple[str, int]]:
    """``{doc_id: (text, offset)}`` of the ground-truth documents rebuilt from their
    chunks in ``trace.gt_doc_chunks`` (as :func:`ragtriage.groundtruth.reconstruct_text`
    does; where overlapping chunks disagree the earlier one wins). Cached on the chunks'
    ids, offsets and texts, so every step diagnosing one trace rebuilds each document
    once."""
    by_doc: dict[str, list[Chunk]] = {}
    for c in trace.gt_doc_chunks:
        by_doc.setdefault(c.doc_id, []).append(c)
    return {
        doc_id: _doc_text(tuple((c.start, c.index, c.text) for c in chunks))
        for doc_id, chunks in by_doc.items()
    }


@lru_cache(maxsize=1024)
def _doc_text(pieces: tuple[tuple[int, int, str], ...]) -> tuple[str, int]:
    items = sorted(pieces, key=lambda p: (p[0], p[1]))
    if not items:
        return "", 0
    offset = items[0][0]
    parts: list[str] = []
    end = offset
    for start, _, text in items:
        stop = start + len(text)
        if stop <= end:
            continue
        if start > end:
            parts.append(" " * (start - end))
            parts.append(text)
        else:
            parts.append(text[end - start :])
        end = stop
    return "".join(parts), offset


def _dedupe(concepts: Sequence[str]) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for c in concepts:
        key = c.strip().casefold()
        if key and key not in seen:
            seen.add(key)
            out.append(c.strip())
    return out[:_MAX_CONCEPTS]


def _words(text: str) -> set[str]:
    return {stem(t) for t in content_tokens(text)}


def _from_question(concepts: Sequence[str], query: str) -> bool:
    """Some listed concept shares a content word (stemmed; a character pair in Chinese)
    with the question: the reply is a concept list of this question (Listing 5 asks for
    concepts worded as in the question)."""
    asked = _words(query)
    return any(_words(c) & asked for c in concepts)


async def llm_concept_coverage(
    trace: Trace, gt_ids: Sequence[str], calls: LLMCalls, *, batched: bool = True
) -> ConceptCoverage:
    """Concepts by one LLM call (Listing 5), containment by one batched call (or one
    call per concept when ``batched=False``, the paper's protocol, Listing 6)."""
    views, missing = gt_views(trace, gt_ids)
    notes: list[str] = []
    extracted = await calls.one(
        concept_extraction_prompt(trace.example.query), purpose="concepts", max_tokens=256
    )
    concepts: list[str] = []
    if isinstance(extracted, LLMFailure):
        notes.append(f"concept extraction failed ({extracted.reason}); rules used")
    else:
        concepts = _dedupe(parse_concept_list(extracted.text))
        if not concepts:
            notes.append("LLM listed no concepts; rules used")
        elif not _from_question(concepts, trace.example.query):
            # a refusal or an error message read as a one-concept list: never data for
            # the containment prompt
            snippet = " ".join(extracted.text.split())[:60]
            notes.append(
                f"concept extraction undetermined: unreadable LLM reply {snippet!r} (no "
                "listed concept is in the question); rules used"
            )
            concepts = []
    if not concepts:
        concepts = _dedupe(extract_concepts(trace.example.query))
    if not concepts or not views:
        return _finish(concepts, {}, views, missing, "llm", notes)

    decided: dict[str, tuple[str, ...]] = {}
    by_alias = {v.alias: v.chunk_id for v in views}
    aliases = [v.alias for v in views]
    if batched:
        reply = await calls.one(
            concept_containment_batched_prompt(concepts, views),
            purpose="concept_containment",
            max_tokens=16 + 12 * len(concepts) + 4 * len(views) * len(concepts),
        )
        if isinstance(reply, LLMFailure):
            notes.append(f"containment call failed ({reply.reason})")
        else:
            table = parse_containment_batched(reply.text, len(concepts), aliases)
            for idx, found in table.items():
                decided[concepts[idx]] = tuple(v.chunk_id for v in views if v.alias in found)
    else:
        replies = await asyncio.gather(
            *(
                calls.one(
                    concept_containment_prompt(c, views),
                    purpose="concept_containment",
                    max_tokens=16 + 8 * len(views),
                )
                for c in concepts
            )
        )
        for c, reply in zip(concepts, replies, strict=True):
            if isinstance(reply, LLMFailure):
                continue
            marks = parse_containment(reply.text, aliases)
            if len(marks) == len(aliases):
                decided[c] = tuple(by_alias[a] for a in aliases if marks[a])
    undecided = [c for c in concepts if c not in decided]
    if undecided:
        notes.append(f"{len(undecided)}/{len(concepts)} concept(s) checked by rules")
        decided.update(concept_hits_rules(undecided, views))
    method = (
        "llm" if not undecided else ("llm+rules" if len(undecided) < len(concepts) else "rules")
    )
    # chunking only on positive evidence, as for the rules: a concept in no GT chunk
    # counts against the chunks only when the GT documents state it (a chunk boundary can
    # have cut it off); one they never state is not scored
    doc_texts = _gt_doc_texts(trace)
    absent = tuple(
        c
        for c in concepts
        if not decided.get(c) and doc_texts and not any(concept_in_text(c, t) for t in doc_texts)
    )
    if absent:
        notes.append(
            f"{len(absent)}/{len(concepts)} concept(s) in no ground-truth chunk occur nowhere "
            "in the ground-truth documents either (no positive evidence of a chunking fault) "
            "and are not scored: " + ", ".join(repr(c) for c in absent[:5])
        )
    scored = [c for c in concepts if c not in absent]
    result = _finish(scored, decided, views, missing, method, notes)
    return replace(result, concepts=tuple(concepts), absent_from_docs=absent)
