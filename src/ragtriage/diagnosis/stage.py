"""Stage attribution: walk the pipeline backwards (seed 000, App. B.2.2-B.2.4).

1. **Generation** if more than ``generator_gt_share`` (0.5) of the ground-truth (GT)
   chunks reached the generator, or if there are no GT chunks at all (B.2.2).
2. **Reranking** if any GT chunk was retrieved but not forwarded to the generator —
   filtered by the reranker, or cut by the context budget after reranking (B.2.3).
3. Otherwise **chunking** if the share of query concepts found in the GT chunks is
   below ``concept_coverage`` (0.8), else **retrieval** (B.2.4).

**Extension of the paper's cascade** (``DiagnosisConfig.chunking_extension``, on by
default): B.2.4 sees chunking only through concept coverage, so over- and
underchunking are invisible to it -- tiny pieces still cover the query's concepts
together, and an oversized chunk covers all of them. Before the coverage test,
:func:`chunk_shape_findings` looks at the shape of the GT chunks themselves and blames
chunking when

* (a) *overchunking*: a located reference (evidence span) is cut across several GT
  chunks that are small -- one of them lies wholly inside the reference, or the
  document's median chunk is shorter than the reference -- and not all of those pieces
  were retrieved (an ordinary boundary through a reference whose halves were both
  retrieved is no error);
* (b) *underchunking*: a GT chunk that was not retrieved is at least
  ``oversized_chunk_ratio`` (3) times the median chunk length of its document (of
  three or more chunks; of a shorter document, the median of the other chunks the
  trace knows) and at least ``_MIN_OVERSIZED_TOKENS`` tokens long -- its embedding is
  diluted by everything else it holds. Uniform chunk sizes never fire.

**Multi-entity questions** (issue #9; :func:`stage_from_parts`, before step 1): a question
about two companies (defendants, products …) whose context holds the GT evidence for one of
them and none of the other's GT chunks failed at retrieval (E4: that entity's evidence never
reached the generator) or at reranking (it was retrieved, then dropped) -- even when most
GT chunks, all about the first entity, reached the generator. The GT chunks of each entity
are those that name it, or whose document names only that entity.

Steps 1-2 need only chunk ids (:func:`gt_flow`, :func:`stage_from_flow`); step 3 needs
the concept coverage, which may cost LLM calls, so it is a separate function
(:func:`stage_from_coverage`). The cascade that chains the steps, for the diagnoser and
for callers that already know the coverage (``classify_stage``), is
:data:`ragtriage.diagnosis.cascade.CASCADE`. Everything here is pure.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from statistics import median
from typing import Literal

from ragtriage.config import DiagnosisConfig
from ragtriage.diagnosis.concepts import gt_doc_texts
from ragtriage.diagnosis.facts import key_terms
from ragtriage.diagnosis.question_parts import (
    PartFlow,
    QuestionPart,
    mentions_part,
    part_flows,
    question_parts,
)
from ragtriage.groundtruth import locate_reference
from ragtriage.records import Chunk, Stage, Trace
from ragtriage.text import content_tokens, has_cjk

__all__ = [
    "ChunkShapeFinding",
    "GTFlow",
    "PartFlow",
    "StageCall",
    "before_split_reference",
    "chunk_shape_findings",
    "chunks_by_doc",
    "gt_flow",
    "holding_chunks",
    "reference_span",
    "stage_from_chunk_shape",
    "stage_from_coverage",
    "stage_from_depth",
    "stage_from_flow",
    "stage_from_parts",
    "stage_from_references",
    "stage_from_split_reference",
    "starved_parts",
]

#: (b) an oversized GT chunk must also hold at least this many tokens (Latin words plus
#: CJK characters): three times a median of 20 tokens is still a short paragraph
_MIN_OVERSIZED_TOKENS = 120
#: (b) the document needs this many chunks for its median to mean anything
_MIN_DOC_CHUNKS = 3
#: fuzzy reference location only for documents up to this many characters
_FUZZY_DOC_CHARS = 20_000


@dataclass(frozen=True, slots=True)
class GTFlow:
    """Where the GT chunks went through the pipeline (ids in GT order)."""

    gt_ids: tuple[str, ...]
    retrieved: tuple[str, ...]
    reranked: tuple[str, ...]
    in_context: tuple[str, ...]
    #: retrieved but not forwarded to the generator (reranker filter or context budget)
    not_forwarded: tuple[str, ...]
    #: of ``not_forwarded``: the ones the reranker kept but the context budget dropped
    budget_dropped: tuple[str, ...]

    @property
    def context_share(self) -> float | None:
        """Share of GT chunks that reached the generator; ``None`` without GT chunks."""
        if not self.gt_ids:
            return None
        return len(self.in_context) / len(self.gt_ids)


@dataclass(frozen=True, slots=True)
class StageCall:
    """A stage decision with its reason in words; ``stage is None`` when undecidable."""

    stage: Stage | None
    reason: str


def gt_flow(trace: Trace, gt_ids: Sequence[str]) -> GTFlow:
    """Follow each GT chunk through retrieval, reranking and the generator's context."""
    gts = tuple(dict.fromkeys(gt_ids))
    retrieved_ids = {h.chunk_id for h in trace.retrieved}
    reranked_ids = {h.chunk_id for h in trace.reranked}
    context_ids = set(trace.context)
    retrieved = tuple(g for g in gts if g in retrieved_ids)
    reranked = tuple(g for g in gts if g in reranked_ids)
    in_context = tuple(g for g in gts if g in context_ids)
    not_forwarded = tuple(g for g in retrieved if g not in context_ids)
    budget = tuple(g for g in not_forwarded if g in reranked_ids)
    return GTFlow(
        gt_ids=gts,
        retrieved=retrieved,
        reranked=reranked,
        in_context=in_context,
        not_forwarded=not_forwarded,
        budget_dropped=budget,
    )


@dataclass(frozen=True, slots=True)
class _PartEvidence:
    flows: list[PartFlow]
    #: GT chunks that do not name their entity themselves (the name is elsewhere in
    #: their document: a chunk cut from its subject)
    unnamed: frozenset[str]


def _part_evidence(trace: Trace, gt_ids: Sequence[str]) -> _PartEvidence | None:
    if not trace.example.answerable or not gt_ids:
        return None
    parts = [p for p in question_parts(trace.example.query) if p.kind == "entity"]
    if len(parts) < 2:
        return None
    cm = trace.chunk_map()
    docs = gt_doc_texts(trace)
    named_by_doc = {
        doc: [p for p in parts if mentions_part(p, text)] for doc, (text, _off) in docs.items()
    }
    gt: list[tuple[str, str, str]] = []
    unnamed: set[str] = set()
    for cid in gt_ids:
        c = cm.get(cid)
        if c is None:
            continue
        text = c.text
        named = named_by_doc.get(c.doc_id, [])
        if len(named) == 1 and not any(mentions_part(p, text) for p in parts):
            # "The company acquired …": the chunk's document names one entity only
            text = f"{named[0].text} {text}"
            if not _names_loosely(named[0].text, c.text):
                unnamed.add(cid)
        gt.append((cid, c.doc_id, text))
    # an entity the ground truth answers for but no GT chunk names (its references were
    # not given): the chunks of its GT documents that name it stand in
    named_gt = {p.text for p in parts if any(mentions_part(p, t) for _c, _d, t in gt)}
    for p in parts:
        if p.text in named_gt or not mentions_part(p, trace.example.answer):
            continue
        gt.extend(
            (c.chunk_id, c.doc_id, c.text)
            for c in trace.gt_doc_chunks
            if c.chunk_id not in gt_ids and mentions_part(p, c.text)
        )
    context = [(cid, cm[cid].text) for cid in trace.context if cid in cm]
    flows = part_flows(parts, gt, context, frozenset(h.chunk_id for h in trace.retrieved))
    return _PartEvidence(flows, frozenset(unnamed))


def _names_loosely(name: str, text: str) -> bool:
    """``text`` names ``name`` at least by its head: the first word of a Latin name
    ("Fabrikon's" for "Fabrikon Manufacturing"), the first two characters of a Chinese
    one ("拓远" for "拓远科技")."""
    if mentions_part(QuestionPart(name, "entity"), text):
        return True
    if has_cjk(name):
        core = name.strip()
        return len(core) >= 4 and core[:2] in text
    head = name.split()[0] if name.split() else ""
    return len(head) >= 4 and re.search(rf"\b{re.escape(head)}\b", text) is not None


def starved_parts(trace: Trace, gt_ids: Sequence[str]) -> list[PartFlow]:
    """Entities of a multi-entity question whose GT evidence never reached the generator
    while another entity's did (see the module docstring); ``[]`` otherwise."""
    ev = _part_evidence(trace, gt_ids)
    if ev is None:
        return []
    reached = [f for f in ev.flows if f.in_context]
    starved = [f for f in ev.flows if f.starved]
    return starved if starved and reached else []


def stage_from_parts(
    trace: Trace, gt_ids: Sequence[str], *, declined: Sequence[str] = ()
) -> StageCall | None:
    """Multi-entity step before step 1: retrieval (or reranking) when one entity's GT
    evidence never reached the generator while another's did; chunking when that
    evidence lies in chunks that never name the entity (cut from their subject) and were
    not retrieved although a chunk of their document naming it was (and the other
    entity's evidence got through with its name on it), or reached the generator that
    way and the answer declines the entity; else ``None``. ``declined``: the parts the
    answer judge found declined (the answer's own declining sentences count as well)."""
    ev = _part_evidence(trace, gt_ids)
    if ev is None:
        return None
    reached = [f for f in ev.flows if f.in_context]
    starved = [f for f in ev.flows if f.starved]
    if not reached:
        return None
    if not starved:
        return _subject_lost_in_context(trace, ev, reached, declined)
    f = starved[0]
    name = f.part.text
    # the other entity's evidence got through with its name on it: anonymity is what
    # set this entity's chunks apart (when the other's were anonymous too, it is not)
    cm = trace.chunk_map()

    def anonymous(part: PartFlow, cid: str) -> bool:
        c = cm.get(cid)
        return c is not None and not _names_loosely(part.part.text, c.text)

    if (
        not f.retrieved
        and any(c in ev.unnamed for c in f.gt_chunks)
        and not any(all(anonymous(r, c) for c in r.in_context) for r in reached)
        and _named_sibling_retrieved(trace, f, ev.unnamed)
    ):
        return StageCall(
            Stage.CHUNKING,
            f"ground-truth chunk(s) about {name!r} ({', '.join(c for c in f.gt_chunks if c in ev.unnamed)}) "
            f"never name {name!r} (the name is elsewhere in the document): cut from their "
            "subject, they did not reach the generator, while the other entity's named "
            "evidence did",
        )
    if f.retrieved:
        return StageCall(
            Stage.RERANKING,
            f"evidence for {name!r} was retrieved ({', '.join(f.retrieved[:3])}) but not "
            f"forwarded to the generator, which saw no chunk about {name!r}",
        )
    return StageCall(
        Stage.RETRIEVAL,
        f"no chunk about {name!r} reached the generator: its ground-truth chunk(s) "
        f"({', '.join(f.gt_chunks[:3])}) were never retrieved, while the other entity's "
        "evidence was",
    )


def _named_in_context(trace: Trace, f: PartFlow) -> bool:
    """Some chunk of the generator's context names the part (at least by its head)."""
    cm = trace.chunk_map()
    return any(cid in cm and _names_loosely(f.part.text, cm[cid].text) for cid in trace.context)


def _named_sibling_retrieved(trace: Trace, f: PartFlow, unnamed: frozenset[str]) -> bool:
    """A chunk of the same document as one of ``f``'s unnamed GT chunks, naming the
    entity, was retrieved, and no chunk of it that does not name the entity was: the
    document was reachable, its anonymous chunks were not (a query that missed the whole
    document, or that found another anonymous chunk of it, is a retrieval failure)."""
    cm = trace.chunk_map()
    docs = {cm[c].doc_id for c in f.gt_chunks if c in unnamed and c in cm}
    named = False
    for h in trace.retrieved:
        c = cm.get(h.chunk_id)
        if c is None or c.doc_id not in docs:
            continue
        if not _names_loosely(f.part.text, c.text):
            return False
        named = True
    return named


def _subject_lost_in_context(
    trace: Trace, ev: _PartEvidence, reached: list[PartFlow], found: Sequence[str] = ()
) -> StageCall | None:
    """Every entity's evidence reached the generator, but one entity's only in chunks
    that never name it, and the answer declines that entity (in a declining sentence of
    its own, or as the answer judge found: ``found``) while answering another."""
    from ragtriage.diagnosis.answer_styles import answer_view

    view = answer_view(trace.answer)
    declines = (*view.declines, *found)
    if not declines:
        return None
    for f in reached:
        if not all(c in ev.unnamed for c in f.in_context) or _named_in_context(trace, f):
            continue
        # "至于文化传媒有限公司，现有资料中没有提到其融资活动": the declining sentence names it
        declined = any(mentions_part(f.part, d) for d in declines)
        # the entity the answer does answer for came with its name (else anonymity did
        # not stop the generator)
        others = [r for r in reached if r is not f and _named_in_context(trace, r)]
        if declined and any(mentions_part(r.part, view.text) for r in others):
            name = f.part.text
            return StageCall(
                Stage.CHUNKING,
                f"the ground-truth chunk(s) about {name!r} ({', '.join(f.in_context[:3])}) "
                f"reached the generator without {name!r}'s name (it is elsewhere in the "
                f"document), and the answer declines {name!r}: the chunks were cut from "
                "their subject",
            )
    return None


#: a reference counts as held by a context chunk when the chunk has this share of its
#: content words (and every number of it)
_REFERENCE_HELD = 0.9


def holding_chunks(trace: Trace, chunk_ids: Sequence[str]) -> list[str] | None:
    """For each located reference sentence of the example, the first of ``chunk_ids``
    that holds it whole (``_REFERENCE_HELD`` of its content words and every number);
    ``None`` when some reference is held by none of them (or there are no references)."""
    refs = [r for r in trace.example.references if r.strip()]
    if not refs:
        return None
    cm = trace.chunk_map()
    ids = [c for c in chunk_ids if c in cm]
    # each chunk's words are read when a reference first gets to it (the first chunks
    # usually hold every reference: the rest are never read)
    bags: dict[str, set[str]] = {}
    out: list[str] = []
    for ref in refs:
        need = set(content_tokens(ref))
        if not need:
            return None
        numbers = {t for t in need if any(ch.isdigit() for ch in t)}
        holder = None
        for c in ids:
            bag = bags.get(c)
            if bag is None:
                bag = bags[c] = set(content_tokens(cm[c].text))
            if numbers <= bag and len(need & bag) >= _REFERENCE_HELD * len(need):
                holder = c
                break
        if holder is None:
            return None
        out.append(holder)
    return out


def stage_from_references(trace: Trace, flow: GTFlow, config: DiagnosisConfig) -> StageCall | None:
    """Extension before step 1 (``reference_extension``): every located reference
    sentence is held whole by one chunk of the generator's context, yet no more than
    ``generator_gt_share`` of the GT chunks reached it -- the others only touch a
    reference at a chunk boundary, or repeat it through chunk overlap. The evidence was
    in front of the generator: generation. ``None`` otherwise."""
    if not config.reference_extension or not flow.gt_ids:
        return None
    share = len(flow.in_context) / len(flow.gt_ids)
    if share > config.generator_gt_share:
        return None
    held = holding_chunks(trace, trace.context)
    if held is None:
        return None
    return StageCall(
        Stage.GENERATION,
        f"every reference sentence ({len(held)}) is held whole by a chunk of the generator's "
        f"context ({', '.join(dict.fromkeys(held))}) although only {len(flow.in_context)}/"
        f"{len(flow.gt_ids)} ground-truth chunks reached it (the others only touch a "
        "reference at a chunk boundary)",
    )


def stage_from_flow(flow: GTFlow, config: DiagnosisConfig) -> StageCall | None:
    """Steps 1-2 of the cascade: generation or reranking, else ``None`` (go on to
    chunking vs retrieval)."""
    n = len(flow.gt_ids)
    if n == 0:
        return StageCall(
            Stage.GENERATION,
            "no ground-truth chunks (question may be unanswerable from the corpus)",
        )
    share = len(flow.in_context) / n
    if share > config.generator_gt_share:
        return StageCall(
            Stage.GENERATION,
            f"{len(flow.in_context)}/{n} ground-truth chunks reached the generator "
            f"(share {share:.2f} > {config.generator_gt_share:g})",
        )
    if flow.not_forwarded:
        by_budget = len(flow.budget_dropped)
        by_reranker = len(flow.not_forwarded) - by_budget
        parts = []
        if by_reranker:
            parts.append(f"{by_reranker} filtered out by the reranker")
        if by_budget:
            parts.append(f"{by_budget} cut by the context budget after reranking")
        return StageCall(
            Stage.RERANKING,
            f"{len(flow.not_forwarded)}/{n} ground-truth chunks were retrieved but not "
            f"forwarded to the generator ({'; '.join(parts)}); "
            f"{len(flow.in_context)}/{n} reached it",
        )
    return None


def stage_from_depth(trace: Trace, flow: GTFlow, config: DiagnosisConfig) -> StageCall | None:
    """Extension before step 3: no GT chunk was retrieved and the retriever returned at
    most ``config.shallow_retrieval`` candidates -- a top_k that shallow misses evidence
    however it is chunked, so retrieval (depth) is the first cause; else ``None``."""
    n = len(trace.retrieved)
    if flow.retrieved or not flow.gt_ids or not 0 < n <= config.shallow_retrieval:
        return None
    return StageCall(
        Stage.RETRIEVAL,
        f"GT chunks were not retrieved, and the retriever returned only {n} candidate(s) "
        f"(top_k <= {config.shallow_retrieval}): too shallow to judge the chunks",
    )


def stage_from_coverage(
    coverage: float | None, n_concepts: int, config: DiagnosisConfig
) -> StageCall:
    """Step 3: chunking if the concept coverage is below the threshold, else retrieval.

    ``coverage is None`` means it could not be measured; with no concepts at all the
    retriever is blamed by elimination (nothing in the query was missing from the GT
    chunks), otherwise the stage is undetermined.
    """
    if coverage is None:
        if n_concepts == 0:
            return StageCall(
                Stage.RETRIEVAL,
                "no GT chunk reached the generator and none was dropped after retrieval; "
                "no query concepts could be extracted, so retrieval by elimination",
            )
        return StageCall(
            None,
            "stage_attribution: concept coverage of the ground-truth chunks could not "
            "be measured (no ground-truth chunk text)",
        )
    if coverage < config.concept_coverage:
        return StageCall(
            Stage.CHUNKING,
            f"GT chunks were not retrieved; only {coverage:.2f} of {n_concepts} query "
            f"concepts appear in them (< {config.concept_coverage:g})",
        )
    return StageCall(
        Stage.RETRIEVAL,
        f"GT chunks were not retrieved although they cover {coverage:.2f} of "
        f"{n_concepts} query concepts (>= {config.concept_coverage:g})",
    )


@dataclass(frozen=True, slots=True)
class ChunkShapeFinding:
    """A chunking fault seen in the shape of the GT chunks (see the module docstring):
    ``kind`` "over" for (a), "under" for (b); ``chunk_ids`` the chunks concerned."""

    kind: Literal["over", "under"]
    chunk_ids: tuple[str, ...]
    note: str


_RE_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


def _tokens(text: str) -> int:
    """Latin words plus CJK characters (a cheap, language-neutral length)."""
    cjk = len(_RE_CJK.findall(text))
    return cjk + len(_RE_CJK.sub(" ", text).split())


def chunks_by_doc(chunks: Iterable[Chunk]) -> dict[str, list[Chunk]]:
    """``chunks`` grouped by document (documents in first-seen order), each group in
    document order: by start offset, then index (the cascade and the type tests read
    the same order)."""
    groups: dict[str, list[Chunk]] = {}
    for c in chunks:
        groups.setdefault(c.doc_id, []).append(c)
    for g in groups.values():
        g.sort(key=_place)
    return groups


def _place(c: Chunk) -> tuple[int, int]:
    return c.start, c.index


def reference_span(text: str, ref: str) -> tuple[int, int] | None:
    """Where ``ref`` lies in ``text`` (verbatim, else located loosely); ``None`` if not."""
    at = text.find(ref)
    if at >= 0:
        return at, at + len(ref)
    return locate_reference(text, ref, fuzzy=len(text) <= _FUZZY_DOC_CHARS)


def _parted(query: str, touched: Sequence[Chunk], reached: set[str], s: int, e: int) -> bool:
    """The pieces of the reference span ``s``..``e`` in chunks that reached the generator
    name more of the query's key terms than the pieces in chunks that did not."""
    asked = key_terms(query)
    if not asked:
        return False
    found: set[str] = set()
    lost: set[str] = set()
    for c in touched:
        piece = c.text[max(s, c.start) - c.start : min(e, c.end) - c.start]
        (found if c.chunk_id in reached else lost).update(key_terms(piece) & asked)
    return len(found) > len(lost)


def chunk_shape_findings(
    trace: Trace, gt_ids: Sequence[str], config: DiagnosisConfig
) -> list[ChunkShapeFinding]:
    """Over- (a) and underchunking (b) findings for the GT chunks of ``trace`` (the
    extension of B.2.4 described in the module docstring); empty when the extension
    is off, without GT chunks, or when nothing fires. Pure; linear in the length of
    the GT documents."""
    if not config.chunking_extension or not gt_ids or not trace.gt_doc_chunks:
        return []
    gt = set(gt_ids)
    retrieved = {h.chunk_id for h in trace.retrieved}
    reached = set(trace.context)
    groups = chunks_by_doc(trace.gt_doc_chunks)
    out: list[ChunkShapeFinding] = []

    # (a) a reference cut into small pieces, not all of which were retrieved
    gt_docs = [d for d, cs in groups.items() if any(c.chunk_id in gt for c in cs)]
    for doc_id, s, e in _located_references(trace, gt_docs):
        chunks = groups[doc_id]
        if any(c.start <= s and c.end >= e for c in chunks):
            continue  # one chunk holds the whole reference
        touched = [c for c in chunks if min(c.end, e) - max(c.start, s) > 0]
        if len(touched) < 2:
            continue
        interior = any(s <= c.start and c.end <= e for c in touched)
        med = median(len(c.text) for c in chunks)
        # the pieces that never reached the generator: never retrieved, or retrieved
        # and then dropped (a piece that lost its subject ranks low) -- either way the
        # boundary kept the whole reference from the context
        missed = [c.chunk_id for c in touched if c.chunk_id not in reached]
        # or cut, one piece delivered and another not, the delivered piece naming more
        # of what the question asks than the lost one: the boundary parted the rest of
        # the reference from what the retriever found it by
        parted = (
            bool(missed)
            and len(missed) < len(touched)
            and _parted(trace.example.query, touched, reached, s, e)
        )
        if (interior or med < e - s or parted) and missed:
            lost = (
                "were not retrieved"
                if not set(missed) & retrieved
                else "never reached the generator"
            )
            out.append(
                ChunkShapeFinding(
                    "over",
                    tuple(c.chunk_id for c in touched),
                    f"a reference of {e - s} characters is cut into {len(touched)} "
                    f"chunks of ~{med:.0f} characters ({', '.join(c.chunk_id for c in touched[:4])}); "
                    f"{len(missed)} of them {lost}",
                )
            )
            break  # one finding is enough

    # (b) an oversized GT chunk that was not retrieved
    pooled: float | None = None
    for doc_id in gt_docs:
        chunks = groups[doc_id]
        if len(chunks) >= _MIN_DOC_CHUNKS:
            med, where = median(len(c.text) for c in chunks), doc_id
        else:
            # too few chunks for a median of its own (the whole document re-chunked
            # coarsely): compare with every other chunk the trace knows (retrieved ones)
            if pooled is None:
                others = [len(c.text) for c in trace.chunks if c.doc_id != doc_id]
                pooled = median(others) if len(others) >= _MIN_DOC_CHUNKS else 0.0
            med, where = pooled, "the other retrieved chunks"
        for c in chunks:
            if c.chunk_id not in gt or c.chunk_id in retrieved:
                continue
            if (
                med > 0
                and len(c.text) >= config.oversized_chunk_ratio * med
                and _tokens(c.text) >= _MIN_OVERSIZED_TOKENS
            ):
                out.append(
                    ChunkShapeFinding(
                        "under",
                        (c.chunk_id,),
                        f"ground-truth chunk {c.chunk_id} ({len(c.text)} characters) is "
                        f"{len(c.text) / med:.1f}x the median chunk of {where} "
                        f"(~{med:.0f} characters) and was not retrieved",
                    )
                )
                return out
    return out


def stage_from_chunk_shape(trace: Trace, flow: GTFlow, config: DiagnosisConfig) -> StageCall | None:
    """The extension step between reranking and the coverage test: chunking when
    :func:`chunk_shape_findings` finds over- or underchunking, else ``None``."""
    found = chunk_shape_findings(trace, flow.gt_ids, config)
    if not found:
        return None
    return StageCall(
        Stage.CHUNKING,
        "GT chunks were not retrieved and their shape is at fault "
        f"(extension of B.2.4): {found[0].note}",
    )


def reference_cut(trace: Trace, gt_ids: Sequence[str]) -> bool:
    """Whether a chunk boundary cuts one of the example's located references: no chunk of
    its document holds it whole (positive evidence that chunking parted the evidence)."""
    if not gt_ids or not trace.gt_doc_chunks:
        return False
    gt = set(gt_ids)
    groups = chunks_by_doc(trace.gt_doc_chunks)
    gt_docs = [d for d, cs in groups.items() if any(c.chunk_id in gt for c in cs)]
    return any(
        not any(c.start <= s and c.end >= e for c in groups[doc_id])
        for doc_id, s, e in _located_references(trace, gt_docs)
    )


def _located_references(trace: Trace, gt_docs: Sequence[str]) -> Iterator[tuple[str, int, int]]:
    """``(doc_id, start, end)`` of each of the example's references, in the first of
    ``gt_docs`` whose text holds it (document offsets); references found in none are
    left out."""
    refs = [r.strip() for r in trace.example.references if r.strip()]
    texts = gt_doc_texts(trace) if refs and gt_docs else {}
    for ref in refs:
        for doc_id in gt_docs:
            text, offset = texts.get(doc_id, ("", 0))
            span = reference_span(text, ref) if text else None
            if span is not None:
                yield doc_id, span[0] + offset, span[1] + offset
                break


def stage_from_split_reference(
    trace: Trace, flow: GTFlow, config: DiagnosisConfig
) -> StageCall | None:
    """Chunking before a reranking or retrieval call (extension, issue #9): a reference cut
    into small pieces (finding (a) of :func:`chunk_shape_findings`) of which some reached
    the generator and the others did not -- the piece the boundary parted from its subject
    ranked too low, so the cut is the earlier cause; else ``None``."""
    for found in chunk_shape_findings(trace, flow.gt_ids, config):
        if found.kind == "over" and set(found.chunk_ids) & set(flow.in_context):
            return StageCall(
                Stage.CHUNKING,
                "a reference is split across chunks and only part of it reached the "
                f"generator (extension of B.2.4): {found.note}",
            )
    return None


def before_split_reference(
    trace: Trace, flow: GTFlow, config: DiagnosisConfig, call: StageCall | None
) -> StageCall | None:
    """``call``, or chunking in its place when it blames reranking or retrieval for a
    reference a chunk boundary cut apart (:func:`stage_from_split_reference`)."""
    if call is not None and call.stage in (Stage.RERANKING, Stage.RETRIEVAL):
        return stage_from_split_reference(trace, flow, config) or call
    return call
