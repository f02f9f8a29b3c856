"""What to change in a RAG pipeline for each error type, and which changes matter most.

The advice follows the "Improvements" paragraphs of the RAGEC taxonomy (seed 000, §4.1-
§4.4) and the retrieval fixes of seed 002 (hybrid search with reciprocal rank fusion,
cross-encoder reranking, query transformation, chunking by structure, context ordering),
in our own words. ``config_hints`` name ragtriage pipeline settings
(:mod:`ragtriage.config`) worth trying first, as ``section.key=value`` or
``section.key`` (tune the value).

:func:`rank_advice` orders the advice by how many failing examples it addresses.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from ragtriage.records import Diagnosis, ErrorType

__all__ = [
    "ADVICE",
    "SECOND_MODE_WEIGHT",
    "Advice",
    "advice_for",
    "advice_owners",
    "rank_advice",
]

E = ErrorType


@dataclass(frozen=True, slots=True)
class Advice:
    """Remedies for one error type: a title, concrete actions, and config keys to try."""

    error_type: ErrorType
    title: str
    actions: tuple[str, ...]
    config_hints: tuple[str, ...]


_ADVICE: dict[ErrorType, Advice] = {
    E.E1: Advice(
        E.E1,
        "Chunks are too small: answers are cut across chunk boundaries",
        (
            "Make chunks larger so that a fact and its surrounding sentences stay together.",
            "Split on sentence or paragraph boundaries instead of fixed token windows.",
            "Add overlap between neighbouring chunks, or retrieve small chunks but pass "
            "their neighbours (small-to-big retrieval) to the generator.",
        ),
        (
            "chunking.size",
            "chunking.cjk_size",
            "chunking.strategy=sentence",
            "chunking.overlap",
        ),
    ),
    E.E2: Advice(
        E.E2,
        "Chunks are too large: the relevant sentences are diluted",
        (
            "Make chunks smaller so that each covers one topic and its embedding stays specific.",
            "Chunk by document structure (sections, paragraphs) or by topic shifts "
            "(semantic chunking) instead of long fixed windows.",
            "Keep the generator's context short: fewer, more focused chunks.",
        ),
        (
            "chunking.size",
            "chunking.cjk_size",
            "chunking.strategy=structure",
            "chunking.strategy=semantic",
        ),
    ),
    E.E3: Advice(
        E.E3,
        "Chunk boundaries separate facts from the names they belong to",
        (
            "Split at sentence or section boundaries so that a definition and the "
            "statement it supports land in the same chunk.",
            "Add overlap so that the sentence naming the company, patient or case "
            "reaches the next chunk.",
            "Prefix every chunk with its document title or section header (the entity "
            "it is about), so that 'the company' chunks are still found by name.",
        ),
        ("chunking.strategy=sentence", "chunking.strategy=structure", "chunking.overlap"),
    ),
    E.E4: Advice(
        E.E4,
        "The right chunks exist but are not retrieved",
        (
            "Retrieve more candidates and let a reranker pick the best ones.",
            "Combine lexical (BM25) and dense search with reciprocal rank fusion: exact "
            "names, numbers and codes are found by BM25, paraphrases by embeddings.",
            "Decompose multi-part questions (two companies, two defendants) into "
            "sub-queries, or rewrite queries to the corpus' vocabulary.",
            "Filter by metadata (document, company, date) when the question names it.",
        ),
        (
            "retrieval.top_k",
            "retrieval.mode=hybrid_rrf",
            "query_transform.method=decompose",
            "retrieval.filters",
        ),
    ),
    E.E5: Advice(
        E.E5,
        "Retrieved chunks are only loosely related to the question",
        (
            "Use hybrid retrieval so that key terms of the question must match.",
            "Rewrite or expand the query (multi-query, HyDE) to bridge vocabulary gaps.",
            "Use a domain-specific or fine-tuned embedding model.",
            "Use a relevance threshold instead of a fixed top-k, so weak matches are not "
            "passed on.",
        ),
        (
            "retrieval.mode=hybrid_rrf",
            "query_transform.method=multi_query",
            "query_transform.method=hyde",
            "embedding.model",
        ),
    ),
    E.E6: Advice(
        E.E6,
        "Retrieval matches keywords but not the intent (another entity's documents)",
        (
            "Filter or boost by the entity the question names (company, court, patient) "
            "using document metadata.",
            "Give lexical matching of names more weight (hybrid search) so that the "
            "entity, not the section wording, decides.",
            "Prefix chunks with their document title so that similar sections of "
            "different documents embed differently.",
        ),
        (
            "retrieval.filters",
            "retrieval.mode=hybrid_weighted",
            "retrieval.text_weight",
            "chunking.strategy=structure",
        ),
    ),
    E.E7: Advice(
        E.E7,
        "The reranker drops chunks the retriever had found",
        (
            "Forward more chunks after reranking.",
            "Use a stronger reranker (cross-encoder or LLM listwise), ideally fine-tuned "
            "on in-domain query-chunk pairs.",
            "Check that the reranker sees the whole chunk (no truncation) and the original query.",
        ),
        ("rerank.top_k", "rerank.method=cross_encoder", "rerank.method=llm"),
    ),
    E.E8: Advice(
        E.E8,
        "Irrelevant chunks are ranked above the relevant ones",
        (
            "Use a cross-encoder or LLM reranker; fine-tune it with hard negatives "
            "(plausible but wrong passages) from your corpus.",
            "Forward fewer chunks so that noise does not crowd the context.",
            "Place the most relevant chunks at the start and end of the prompt, where "
            "models attend most.",
        ),
        ("rerank.method=cross_encoder", "rerank.top_k", "generation.ordering=edges"),
    ),
    E.E9: Advice(
        E.E9,
        "The generator answers questions it should decline",
        (
            "Instruct the generator to answer only from the context and to say that the "
            "information is not available otherwise; give an explicit abstention phrase.",
            "Check before generating whether the context covers the question's key "
            "entities and facts, and abstain when it does not.",
            "Calibrate or fine-tune for abstention on unanswerable questions.",
        ),
        ("generation.prompt", "rerank.top_k"),
    ),
    E.E10: Advice(
        E.E10,
        "The answer contains facts that are in no retrieved chunk",
        (
            "Ask for answers grounded in quoted context, with citations of chunk ids.",
            "Verify the answer after generation: check every name and number against "
            "the context (chain-of-verification, critique step) and remove what is not "
            "supported.",
            "Lower the temperature and shorten the allowed answer.",
        ),
        ("generation.temperature=0", "generation.max_tokens", "generation.prompt"),
    ),
    E.E11: Advice(
        E.E11,
        "The answer relies on the model's general knowledge instead of the context",
        (
            "Tell the generator explicitly to use only the provided context, and to "
            "abstain rather than fall back on general knowledge.",
            "Put the context before the question and keep it focused, so that it is not ignored.",
            "Use a generator that follows grounding instructions well, or filter the "
            "context so that the relevant facts stand out.",
        ),
        ("generation.prompt", "generation.backend", "generation.ordering=edges"),
    ),
    E.E12: Advice(
        E.E12,
        "The answer is correct but leaves out parts of what was asked",
        (
            "Decompose multi-part and comparison questions into sub-questions and answer each.",
            "Allow longer answers and ask the generator to address every part of the "
            "question (a keypoint checklist).",
            "Make sure every relevant chunk reaches the generator: raise the context "
            "budget if chunks are dropped.",
        ),
        (
            "query_transform.method=decompose",
            "generation.max_tokens",
            "generation.max_context_tokens",
            "generation.prompt=zh_keypoints",
        ),
    ),
    E.E13: Advice(
        E.E13,
        "The generator misreads the context (facts attached to the wrong entity)",
        (
            "Keep chunks of different entities apart in the prompt and label each with "
            "its source document and entity.",
            "Filter the context to the chunks about the entity asked for before generating.",
            "Ask the generator to quote the sentence that supports each fact, then "
            "check that the quoted sentence names the asked entity.",
        ),
        ("rerank.top_k", "generation.ordering=edges", "generation.prompt"),
    ),
    E.E14: Advice(
        E.E14,
        "The answer is true but addresses a different aspect than asked",
        (
            "Restate the question's focus in the prompt (what exactly is asked: the "
            "facts of a crime, not the sentence; the year, not the amount).",
            "Filter the context so that chunks about other aspects do not dominate.",
            "Rewrite vague queries before retrieval so the asked aspect is explicit.",
        ),
        ("generation.prompt", "rerank.top_k", "query_transform.method=multi_query"),
    ),
    E.E15: Advice(
        E.E15,
        "Dates and the order of events are wrong",
        (
            "Ask the generator to list the relevant events with their dates before "
            "answering (timeline reasoning).",
            "Check answer dates against the context after generation.",
            "Keep chunks with dates intact (sentence-based chunking) so that a date "
            "stays with its event.",
        ),
        ("generation.prompt", "chunking.strategy=sentence"),
    ),
    E.E16: Advice(
        E.E16,
        "Numbers and calculations in the answer are wrong",
        (
            "Let a tool do arithmetic: extract the operands from the context and compute "
            "in code (program-aided generation).",
            "Check every number of the answer against the context after generation and "
            "recompute sums, differences and percentages.",
            "Ask for the operands to be quoted before the result (structured prompting).",
        ),
        ("generation.prompt", "generation.temperature=0"),
    ),
}

#: Advice for every error type (read-only).
ADVICE: Mapping[ErrorType, Advice] = MappingProxyType(_ADVICE)

#: How much an example whose *second* mode is a type counts towards that type's rank.
SECOND_MODE_WEIGHT = 0.5


def advice_for(error_type: ErrorType) -> Advice:
    """The advice for one error type."""
    return ADVICE[error_type]


def _owners() -> dict[str, tuple[ErrorType, ...]]:
    out: dict[str, list[ErrorType]] = {}
    for t, adv in _ADVICE.items():
        for action in adv.actions:
            out.setdefault(action.strip(), []).append(t)
    return {text: tuple(ts) for text, ts in out.items()}


_OWNERS: Mapping[str, tuple[ErrorType, ...]] = MappingProxyType(_owners())


def advice_owners(text: str) -> tuple[ErrorType, ...]:
    """The error types whose actions include ``text`` (surrounding blanks ignored), in
    taxonomy order; empty for a text that is not one of :data:`ADVICE`'s actions (advice
    written by another tool or an older version)."""
    return _OWNERS.get(text.strip(), ())


def rank_advice(diagnoses: Sequence[Diagnosis]) -> list[tuple[Advice, int]]:
    """Advice for the error types of failing examples, most useful first.

    Each diagnosed failing example (``needs_diagnosis`` and an ``error_type``) counts
    fully for its modal type and :data:`SECOND_MODE_WEIGHT` for its second mode; types
    are ranked by that weighted count (ties: more modal examples, then taxonomy order).
    The integer returned with each advice is the number of failing examples it
    addresses, i.e. whose mode or second mode is that type. Types that no example
    names are left out; undetermined diagnoses without a type do not count.
    """
    weight: dict[ErrorType, float] = {}
    modal: dict[ErrorType, int] = {}
    addressed: dict[ErrorType, int] = {}
    for d in diagnoses:
        if not d.needs_diagnosis or d.error_type is None:
            continue
        weight[d.error_type] = weight.get(d.error_type, 0.0) + 1.0
        modal[d.error_type] = modal.get(d.error_type, 0) + 1
        addressed[d.error_type] = addressed.get(d.error_type, 0) + 1
        second = d.second_type
        if second is not None and second != d.error_type:
            weight[second] = weight.get(second, 0.0) + SECOND_MODE_WEIGHT
            addressed[second] = addressed.get(second, 0) + 1
    order = list(ErrorType)
    ranked = sorted(weight, key=lambda t: (-weight[t], -modal.get(t, 0), order.index(t)))
    return [(ADVICE[t], addressed[t]) for t in ranked]
