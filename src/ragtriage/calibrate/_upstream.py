"""Faults of the chunking, retrieval and reranking stages (E1-E8).

Each fault changes the pipeline — how the ground-truth (GT) documents are chunked, or
how the retriever or reranker orders its hits — and runs the example through the real
pipeline again (:class:`~ragtriage.calibrate._parts.PipelineParts`), so the answer is
what the configured generator says from the faulty context. A fault returns the new
trace, or a string saying why it does not apply (or did not take hold) for this example.

Physical checks keep each fault within the RAGEC stage cascade (seed 000, §5): after a
chunking or retrieval fault at most half of the GT chunks reach the generator and none
is retrieved-then-dropped; after a reranking fault at least one GT chunk is retrieved
but not forwarded and at most half reach the generator.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

from ragtriage.calibrate._names import (
    anaphor_for,
    find_mentions,
    kind_in_document,
    query_entities,
)
from ragtriage.calibrate._parts import FaultyReranker, FaultyRetriever, PipelineParts
from ragtriage.diagnosis.stage import holding_chunks
from ragtriage.groundtruth import chunks_overlapping, gt_chunks_from_references
from ragtriage.records import Chunk, Document, Example, Hit, Trace
from ragtriage.text import content_tokens, detect_language, token_spans

__all__ = [
    "Base",
    "Outcome",
    "gt_ids_of",
    "overchunk",
    "rerank_drop",
    "rerank_noise",
    "retrieval_keyword_drift",
    "retrieval_miss",
    "retrieval_same_document",
    "split_anaphora",
    "underchunk",
]


@dataclass(frozen=True, slots=True)
class Base:
    """A healthy base: its trace, GT chunk ids and language."""

    trace: Trace
    gt_ids: tuple[str, ...]
    language: str


@dataclass(frozen=True, slots=True)
class Outcome:
    """A faulty trace and a few words on what the fault did."""

    trace: Trace
    detail: str


def gt_ids_of(example: Example, gt_doc_chunks: Sequence[Chunk]) -> tuple[list[str], list[str]]:
    """GT chunk ids: given by the dataset, else located from the verbatim references.
    Returns ``(ids, unlocated_references)``."""
    if example.gt_chunk_ids:
        known = {c.chunk_id for c in gt_doc_chunks}
        ids = [c for c in dict.fromkeys(example.gt_chunk_ids) if c in known]
        return ids, []
    return gt_chunks_from_references(example, gt_doc_chunks)


# ------------------------------------------------------------------------ helpers


def _chunk_map(trace: Trace) -> dict[str, Chunk]:
    return trace.chunk_map()


def _gt_docs(base: Base) -> list[str]:
    cm = _chunk_map(base.trace)
    return list(dict.fromkeys(cm[g].doc_id for g in base.gt_ids if g in cm))


def _cascade_problem(trace: Trace, gt_ids: Sequence[str], *, reranking: bool) -> str | None:
    """Why ``trace`` does not show a fault of the intended stage, or ``None`` if it does."""
    if trace.metadata.get("error"):
        return "the faulty pipeline failed"
    if not gt_ids:
        return "no ground-truth chunk located after the fault"
    retrieved = {h.chunk_id for h in trace.retrieved}
    context = set(trace.context)
    in_context = sum(1 for g in gt_ids if g in context)
    if in_context / len(gt_ids) > 0.5:
        return "more than half of the ground-truth chunks still reached the generator"
    if holding_chunks(trace, trace.context) is not None:
        # the cut GT chunks only touched a reference at a chunk boundary: the evidence
        # is still in front of the generator, so there is no upstream fault
        return "every reference sentence is still held whole by a chunk of the context"
    dropped = [g for g in gt_ids if g in retrieved and g not in context]
    if reranking and not dropped:
        return "no ground-truth chunk was retrieved and then filtered out"
    if not reranking and dropped:
        return "a ground-truth chunk was retrieved but filtered by the reranker"
    return None


def _drop_set(base: Base, rng: random.Random) -> list[str]:
    """The GT chunks a fault removes: all of a single one; otherwise at least half,
    taking whole documents first when the GT chunks span several documents."""
    gts = list(base.gt_ids)
    if len(gts) == 1:
        return gts
    need = math.ceil(len(gts) / 2)
    cm = _chunk_map(base.trace)
    by_doc: dict[str, list[str]] = {}
    for g in gts:
        by_doc.setdefault(cm[g].doc_id if g in cm else "", []).append(g)
    out: list[str] = []
    if len(by_doc) >= 2:
        docs = list(by_doc)
        rng.shuffle(docs)
        for d in docs:
            if len(out) >= need:
                break
            out.extend(by_doc[d])
        return out
    # the chunks that hold the evidence go first: cutting a chunk that only touches a
    # reference at its boundary removes nothing the generator needs
    holders = list(dict.fromkeys(holding_chunks(base.trace, gts) or []))
    if holders and len(holders) <= need:
        rest = [g for g in gts if g not in holders]
        return holders + rng.sample(rest, need - len(holders))
    return rng.sample(gts, need)


def _query_terms(query: str) -> set[str]:
    return set(content_tokens(query))


def _tokens_of(texts: Sequence[str]) -> set[str]:
    out: set[str] = set()
    for t in texts:
        out.update(content_tokens(t))
    return out


def _units(text: str) -> int:
    if detect_language(text) == "zh":
        return sum(1 for c in text if not c.isspace())
    return len(token_spans(text))


def _texts(chunks: Sequence[Chunk], ids: Sequence[str]) -> list[str]:
    wanted = set(ids)
    return [c.text for c in chunks if c.chunk_id in wanted]


def _remap_example(example: Example, old: Sequence[Chunk], new: Sequence[Chunk]) -> Example:
    """An example whose dataset GT chunk ids point at the new chunks overlapping the old
    GT chunks (pre-chunked corpora); examples located by references are unchanged."""
    if not example.gt_chunk_ids:
        return example
    wanted = set(example.gt_chunk_ids)
    ids: list[str] = []
    for doc_id in dict.fromkeys(c.doc_id for c in old if c.chunk_id in wanted):
        spans = [(c.start, c.end) for c in old if c.chunk_id in wanted and c.doc_id == doc_id]
        ids.extend(chunks_overlapping([c for c in new if c.doc_id == doc_id], spans))
    untouched = [g for g in example.gt_chunk_ids if g not in {c.chunk_id for c in old}]
    return example.model_copy(update={"gt_chunk_ids": [*untouched, *ids]})


async def _run_rechunked(
    parts: PipelineParts, base: Base, new_chunks: dict[str, list[Chunk]], example: Example
) -> tuple[Trace, list[str], list[str]]:
    old = [c for c in base.trace.gt_doc_chunks if c.doc_id in new_chunks]
    example = _remap_example(example, old, [c for cs in new_chunks.values() for c in cs])
    trace = await parts.rechunked(new_chunks).run_example(example, run_id=base.trace.run_id)
    ids, unlocated = gt_ids_of(trace.example, trace.gt_doc_chunks)
    return trace, ids, unlocated


def _reference_split(chunks: Sequence[Chunk], example: Example) -> bool:
    """Whether some reference overlaps two or more of ``chunks`` (it was cut apart)."""
    for ref in example.references:
        if not ref.strip():
            continue
        probe = example.model_copy(update={"references": [ref], "gt_chunk_ids": []})
        ids, _ = gt_chunks_from_references(probe, chunks)
        if len(ids) >= 2:
            return True
    return False


# ------------------------------------------------------------------------ chunking


async def overchunk(base: Base, parts: PipelineParts, rng: random.Random) -> Outcome | str:
    """E1: re-chunk the GT documents into pieces smaller than half a reference sentence
    (fixed windows, no overlap), so a reference is cut apart and the GT pieces lose
    query words their larger chunk had (e.g. the entity named a sentence earlier)."""
    del rng
    ex = base.trace.example
    docs = [parts.documents[d] for d in _gt_docs(base) if d in parts.documents]
    if not docs or not ex.references:
        return "needs verbatim references in known documents"
    base_gt_text = _texts(base.trace.gt_doc_chunks, base.gt_ids)
    terms = _query_terms(ex.query)
    base_have = terms & _tokens_of(base_gt_text)
    last = "no window size cut a reference apart"
    for divisor in (2, 3, 4):
        new: dict[str, list[Chunk]] = {}
        for doc in docs:
            refs = [r for r in ex.references if r.strip() and _located_in(doc, r)]
            n = min((_units(r) for r in refs), default=0)
            zh = detect_language(doc.text) == "zh"
            size = max(4 if zh else 3, n // divisor)
            if n < 2 * size:
                continue
            upd = {
                "strategy": "fixed",
                "overlap": 0,
                "unit": "auto",
                "size": size,
                "cjk_size": size,
            }
            new[doc.doc_id] = parts.chunk_documents([doc], upd)
        if not new:
            return "references are too short to be cut apart"
        all_new = [c for cs in new.values() for c in cs]
        others = [c for c in base.trace.gt_doc_chunks if c.doc_id not in new]
        ids, _ = gt_ids_of(
            _remap_example(ex, base.trace.gt_doc_chunks, all_new), [*others, *all_new]
        )
        if not _reference_split(all_new, ex):
            last = "no reference was cut apart"
            continue
        new_have = terms & _tokens_of(_texts([*others, *all_new], ids))
        lost = sorted(base_have - new_have)
        if not lost:
            last = "the pieces kept every query word of the original GT chunks"
            continue
        trace, gt, _ = await _run_rechunked(parts, base, new, ex)
        problem = _cascade_problem(trace, gt, reranking=False)
        if problem is not None:
            last = problem
            continue
        sizes = ", ".join(f"{d}: {len(cs)} chunks" for d, cs in new.items())
        return Outcome(
            trace,
            f"re-chunked into windows of 1/{divisor} of the shortest reference ({sizes}); "
            f"GT pieces lost query words {lost[:6]}",
        )
    return last


def _located_in(doc: Document, reference: str) -> bool:
    from ragtriage.groundtruth import locate_reference

    return locate_reference(doc.text, reference) is not None


async def underchunk(base: Base, parts: PipelineParts, rng: random.Random) -> Outcome | str:
    """E2: re-chunk the GT documents with much larger chunks (4x, 8x, then the whole
    document), so the GT chunk is diluted by unrelated sections and drops out of
    retrieval."""
    del rng
    ex = base.trace.example
    docs = [parts.documents[d] for d in _gt_docs(base) if d in parts.documents]
    if not docs:
        return "needs the ground-truth documents"
    cfg = parts.config.chunking
    base_len = _mean_len(_texts(base.trace.gt_doc_chunks, base.gt_ids))
    last = "no larger chunking diluted the GT chunk"
    seen: set[tuple[tuple[int, int], ...]] = set()
    for mult in (4, 8, 0):
        upd: dict[str, int | str]
        if mult:
            upd = {"size": cfg.size * mult, "cjk_size": cfg.cjk_size * mult}
        else:
            upd = {"strategy": "passthrough"}
        new = {d.doc_id: parts.chunk_documents([d], upd) for d in docs}
        key = tuple((c.start, c.end) for cs in new.values() for c in cs)
        if key in seen:
            continue
        seen.add(key)
        all_new = [c for cs in new.values() for c in cs]
        others = [c for c in base.trace.gt_doc_chunks if c.doc_id not in new]
        ids, _ = gt_ids_of(
            _remap_example(ex, base.trace.gt_doc_chunks, all_new), [*others, *all_new]
        )
        new_len = _mean_len(_texts([*others, *all_new], ids))
        if not ids or new_len < 2.5 * base_len:
            last = "the new GT chunk is not much larger than before"
            continue
        trace, gt, _ = await _run_rechunked(parts, base, new, ex)
        problem = _cascade_problem(trace, gt, reranking=False)
        if problem is not None:
            last = problem
            continue
        how = f"{mult}x the chunk size" if mult else "one chunk per document"
        return Outcome(
            trace, f"re-chunked with {how}; GT chunk {new_len / max(base_len, 1):.1f}x longer"
        )
    return last


def _mean_len(texts: Sequence[str]) -> float:
    return sum(len(t) for t in texts) / len(texts) if texts else 0.0


async def split_anaphora(base: Base, parts: PipelineParts, rng: random.Random) -> Outcome | str:
    """E3: inside the GT chunks, the entity the query names is only referred to as
    "the company" / "the patient" / "该公司" ... (it is named elsewhere in the document),
    so the GT chunk no longer matches the query's entity and retrieval misses it."""
    del rng
    ex = base.trace.example
    doc_ids = _gt_docs(base)
    docs = {d: parts.documents[d] for d in doc_ids if d in parts.documents}
    if not docs:
        return "needs the ground-truth documents"
    head = "\n".join((d.title or "") + "\n" + d.text[:300] for d in docs.values())
    entities = query_entities(ex.query, head)
    if not entities:
        return "the query names no entity"
    refs = list(ex.references)
    new_docs: dict[str, Document] = {}
    replaced: list[str] = []
    for doc_id, doc in docs.items():
        text = doc.text
        regions = [
            (c.start, c.end)
            for c in base.trace.gt_doc_chunks
            if c.chunk_id in base.gt_ids and c.doc_id == doc_id
        ]
        for _ in range(4):
            hits = _mentions_in_regions(text, entities, regions)
            if not hits:
                break
            pairs: dict[str, str] = {}
            for s, e, kind in sorted(hits, reverse=True):
                surface = text[s:e]
                phrase = anaphor_for(text, (s, e), kind)
                text = text[:s] + phrase + text[e:]
                pairs.setdefault(surface, phrase)
                replaced.append(f"{surface!r} -> {phrase!r}")
            for surface in sorted(pairs, key=len, reverse=True):
                refs = [r.replace(surface, pairs[surface]) for r in refs]
            doc_now = doc.model_copy(update={"text": text})
            chunks = parts.chunk_documents([doc_now], {})
            probe = ex.model_copy(update={"references": refs})
            ids, _ = gt_ids_of(probe, chunks)
            regions = [(c.start, c.end) for c in chunks if c.chunk_id in ids]
        if text != doc.text:
            new_docs[doc_id] = doc.model_copy(update={"text": text})
    if not new_docs:
        return "the GT chunks do not name the query's entity"
    new = {d: parts.chunk_documents([doc], {}) for d, doc in new_docs.items()}
    example = ex.model_copy(update={"references": refs})
    others = [c for c in base.trace.gt_doc_chunks if c.doc_id not in new]
    all_new = [c for cs in new.values() for c in cs]
    ids, unlocated = gt_ids_of(
        _remap_example(example, base.trace.gt_doc_chunks, all_new), [*others, *all_new]
    )
    if unlocated or not ids:
        return "a reference could not be located after the rewrite"
    gt_text = _texts([*others, *all_new], ids)
    if any(find_mentions(t, e) for t in gt_text for e in entities):
        return "the query's entity is still named in a GT chunk"
    trace, gt, _ = await _run_rechunked(parts, base, new, example)
    problem = _cascade_problem(trace, gt, reranking=False)
    if problem is not None:
        return problem
    return Outcome(trace, "entity replaced in GT chunks: " + "; ".join(dict.fromkeys(replaced)))


def _mentions_in_regions(
    text: str, entities: Sequence[str], regions: Sequence[tuple[int, int]]
) -> list[tuple[int, int, str]]:
    out: list[tuple[int, int, str]] = []
    for ent in entities:
        spans = find_mentions(text, ent)
        if not spans:
            continue
        longest = max(spans, key=lambda sp: sp[1] - sp[0])
        kind = kind_in_document(text[longest[0] : longest[1]], text, spans)
        for s, e in spans:
            if any(s < re_ and rs < e for rs, re_ in regions) and not any(
                s < e2 and s2 < e for s2, e2, _ in out
            ):
                out.append((s, e, kind))
    return out


# ------------------------------------------------------------------------ retrieval


def _entity_gap(base: Base, parts: PipelineParts) -> str | None:
    """Why a retrieval fault on ``base`` would be ambiguous, or ``None``: when the GT
    chunks do not name an entity the query names and the GT document names elsewhere,
    missing them is indistinguishable from a context mismatch (E3, chunking)."""
    docs = [parts.documents[d] for d in _gt_docs(base) if d in parts.documents]
    head = "\n".join((d.title or "") + "\n" + d.text[:300] for d in docs)
    gt_text = "\n".join(_texts(base.trace.gt_doc_chunks, base.gt_ids))
    for entity in query_entities(base.trace.example.query, head):
        if any(find_mentions(d.text, entity) for d in docs) and not find_mentions(gt_text, entity):
            return (
                "the GT chunks do not name the query's entity (a miss would be a context "
                "mismatch, E3)"
            )
    return None


def _depth(parts: PipelineParts) -> int:
    return min(len(parts.chunks), max(200, parts.config.retrieval.top_k * 10))


async def _run_retrieval_fault(
    parts: PipelineParts, base: Base, retriever: FaultyRetriever
) -> Trace:
    return await parts.pipeline(retriever=retriever).run_example(
        base.trace.example, run_id=base.trace.run_id
    )


async def retrieval_miss(base: Base, parts: PipelineParts, rng: random.Random) -> Outcome | str:
    """E4: the retriever misses the GT chunks (all of a single one; at least half of
    several — e.g. every chunk about one of two entities); the next-ranked chunks fill
    the list."""
    if not base.gt_ids:
        return "needs ground-truth chunks"
    gap = _entity_gap(base, parts)
    if gap is not None:
        return gap
    drop = set(_drop_set(base, rng))

    def reorder(query: str, deep: list[Hit]) -> list[Hit]:
        return [h for h in deep if h.chunk_id not in drop]

    trace = await _run_retrieval_fault(
        parts, base, FaultyRetriever(parts.retriever, reorder, depth=_depth(parts))
    )
    problem = _cascade_problem(trace, base.gt_ids, reranking=False)
    if problem is not None:
        return problem
    return Outcome(trace, f"retriever missed {len(drop)}/{len(base.gt_ids)} GT chunk(s)")


async def retrieval_same_document(
    base: Base, parts: PipelineParts, rng: random.Random
) -> Outcome | str:
    """E5: the retriever fills the list with chunks of the right document that are
    about other facts (GT chunks not retrieved)."""
    del rng
    if not base.gt_ids:
        return "needs ground-truth chunks"
    gap = _entity_gap(base, parts)
    if gap is not None:
        return gap
    gt = set(base.gt_ids)
    docs = set(_gt_docs(base))
    siblings = [c for c in parts.chunks if c.doc_id in docs and c.chunk_id not in gt]
    if len(siblings) < 2:
        return "the ground-truth documents have fewer than two other chunks"

    def reorder(query: str, deep: list[Hit]) -> list[Hit]:
        same = parts.retriever.retrieve(query, len(siblings) + len(gt), {"doc_id": sorted(docs)})
        first = [h for h in same if h.chunk_id not in gt]
        taken = {h.chunk_id for h in first}
        rest = [h for h in deep if h.chunk_id not in gt and h.chunk_id not in taken]
        return first + rest

    trace = await _run_retrieval_fault(
        parts, base, FaultyRetriever(parts.retriever, reorder, depth=_depth(parts))
    )
    problem = _cascade_problem(trace, base.gt_ids, reranking=False)
    if problem is not None:
        return problem
    top = trace.retrieved[: max(1, min(len(siblings), parts.config.rerank.top_k))]
    if not all(h.doc_id in docs for h in top):
        return "the retrieved list is not led by the right document"
    return Outcome(trace, f"top {len(top)} retrieved chunks from the GT document(s), other facts")


async def retrieval_keyword_drift(
    base: Base, parts: PipelineParts, rng: random.Random
) -> Outcome | str:
    """E6: the retriever returns chunks of other documents (same domain and language)
    that share several of the query's keywords (at least 2, and a quarter of them) but
    are about another entity: they never name the query's entity. The top two
    retrieved chunks must be such keyword matches."""
    del rng
    if not base.gt_ids:
        return "needs ground-truth chunks"
    gap = _entity_gap(base, parts)
    if gap is not None:
        return gap
    ex = base.trace.example
    docs = set(_gt_docs(base))
    domains = {
        str(parts.documents[d].metadata.get("domain"))
        for d in docs
        if d in parts.documents and parts.documents[d].metadata.get("domain") is not None
    }
    terms = {t for t in _query_terms(ex.query) if not t.replace(".", "").isdigit()}
    head = "\n".join(parts.documents[d].text[:300] for d in docs if d in parts.documents)
    entities = query_entities(ex.query, head)
    by_id = {c.chunk_id: c for c in parts.chunks}
    need = max(2, math.ceil(0.25 * len(terms)))

    def same_domain(doc_id: str) -> bool:
        if not domains:
            return True
        doc = parts.documents.get(doc_id)
        return doc is not None and str(doc.metadata.get("domain")) in domains

    def reorder(query: str, deep: list[Hit]) -> list[Hit]:
        scored: list[tuple[int, int, int, Hit]] = []
        rest: list[Hit] = []
        for pos, h in enumerate(deep):
            if h.doc_id in docs:
                continue
            c = by_id.get(h.chunk_id)
            overlap = len(terms & set(content_tokens(c.text))) if c is not None else 0
            names_entity = c is not None and any(find_mentions(c.text, e) for e in entities)
            same_language = c is not None and detect_language(c.text) == base.language[:2]
            if overlap >= need and same_domain(h.doc_id) and same_language and not names_entity:
                scored.append((-overlap, pos, 0, h))
            else:
                rest.append(h)
        scored.sort(key=lambda x: (x[0], x[1]))
        return [h for *_, h in scored] + rest

    trace = await _run_retrieval_fault(
        parts, base, FaultyRetriever(parts.retriever, reorder, depth=len(parts.chunks))
    )
    problem = _cascade_problem(trace, base.gt_ids, reranking=False)
    if problem is not None:
        return problem
    cm = trace.chunk_map()
    lead = trace.retrieved[:2]
    if not lead or not all(
        h.doc_id not in docs and len(terms & set(content_tokens(cm[h.chunk_id].text))) >= need
        for h in lead
    ):
        return "too few chunks of other documents share the query's keywords"
    others = sorted({h.doc_id for h in lead})
    return Outcome(trace, f"retrieval led by chunks of {others} sharing >= {need} query keywords")


# ------------------------------------------------------------------------ reranking


async def rerank_drop(base: Base, parts: PipelineParts, rng: random.Random) -> Outcome | str:
    """E7: the reranker ranks retrieved GT chunks (all of a single one; at least half of
    several) below the cut, so they never reach the generator."""
    if not base.gt_ids:
        return "needs ground-truth chunks"
    drop = set(_drop_set(base, rng))

    def reorder(full: list[Hit], top_k: int) -> list[Hit]:
        return [h for h in full if h.chunk_id not in drop] + [h for h in full if h.chunk_id in drop]

    trace = await parts.pipeline(reranker=FaultyReranker(parts.reranker, reorder)).run_example(
        base.trace.example, run_id=base.trace.run_id
    )
    problem = _cascade_problem(trace, base.gt_ids, reranking=True)
    if problem is not None:
        return problem
    return Outcome(trace, f"reranker cut {len(drop)}/{len(base.gt_ids)} GT chunk(s)")


async def rerank_noise(base: Base, parts: PipelineParts, rng: random.Random) -> Outcome | str:
    """E8: irrelevant chunks (other documents first) are ranked above the GT chunk that
    still passes; the other GT chunks are pushed below the cut. Needs two or more GT
    chunks, since more than half reaching the generator makes it a generation case."""
    n = len(base.gt_ids)
    if n < 2:
        return "needs two or more ground-truth chunks"
    keep_n = n // 2
    k = parts.config.rerank.top_k
    if k < keep_n + 1:
        return "the reranker keeps too few chunks"
    # keep chunks that do not hold the evidence whole where there are enough of them:
    # a kept chunk holding every reference sentence leaves no upstream fault
    holders = set(holding_chunks(base.trace, base.gt_ids) or [])
    others = [g for g in base.gt_ids if g not in holders]
    pool = others if len(others) >= keep_n else list(base.gt_ids)
    keep = set(rng.sample(pool, keep_n))
    gt = set(base.gt_ids)
    docs = set(_gt_docs(base))

    def reorder(full: list[Hit], top_k: int) -> list[Hit]:
        noise = [h for h in full if h.chunk_id not in gt and h.doc_id not in docs]
        noise += [h for h in full if h.chunk_id not in gt and h.doc_id in docs]
        kept = [h for h in full if h.chunk_id in keep]
        head = noise[: max(0, top_k - len(kept))] + kept
        taken = {h.chunk_id for h in head}
        return head + [h for h in full if h.chunk_id not in taken]

    trace = await parts.pipeline(reranker=FaultyReranker(parts.reranker, reorder)).run_example(
        base.trace.example, run_id=base.trace.run_id
    )
    problem = _cascade_problem(trace, base.gt_ids, reranking=True)
    if problem is not None:
        return problem
    ranks = [h.rank for h in trace.reranked if h.chunk_id in gt]
    if not ranks or min(ranks) == 1:
        return "no irrelevant chunk ranked above the surviving GT chunk"
    return Outcome(
        trace,
        f"{min(ranks) - 1} irrelevant chunk(s) ranked above the GT chunk kept at rank "
        f"{min(ranks)}; {n - len(ranks)}/{n} GT chunks cut",
    )
