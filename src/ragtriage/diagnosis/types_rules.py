"""The offline rules judge for error *types* (seed 000, §4 and App. B.3).

An LLM judge reads the attributed stage's context and names one of the stage's error
types (Listings 7-10), K times. This module does the same with deterministic tests:
each error type of a stage has one or more tests that look only at that stage's context
(:class:`~ragtriage.diagnosis._context.CaseContext`) and, when they fire, return a
:class:`~ragtriage.diagnosis._context.TypeEvidence` with a score in ``(0, 1]`` and a
concrete sentence saying what was found.

:func:`rule_type_votes` turns the fired tests into K votes, distributed in proportion to
the scores (largest remainder), plus a residual share for the stage's other types that
grows as the strongest test gets weaker. The mode, second mode and mode frequency of
the votes therefore carry the tests' strength: one decisive test gives a 9-1 or 10-0
split, two comparable tests split the votes, and when no test fires the votes follow a
weak stage prior (from the mode distribution of seed 000, Table 2) and are never
unanimous. (A generation case with an answer always gets at least a weak lean, score
0.3, towards E12 or E13, which leaves the votes split as well.)

Every test works on English and Chinese text (terms are stemmed words or character
bigrams; facts come from :mod:`ragtriage.diagnosis.facts`). Work is linear in the
length of the stage's texts; regexes are compiled once.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from itertools import pairwise
from statistics import median
from types import MappingProxyType
from typing import TypeVar

from ragtriage._regex import lazy_compile
from ragtriage.config import DiagnosisConfig
from ragtriage.diagnosis._context import CaseContext, TypeEvidence
from ragtriage.diagnosis.alignment import (
    FactSwap,
    NameSubstitution,
    fact_swaps,
    is_initials,
    substituted_names,
)
from ragtriage.diagnosis.answer_checks import asks_order
from ragtriage.diagnosis.answer_styles import answer_view, declining_sentence
from ragtriage.diagnosis.concepts import gt_doc_texts
from ragtriage.diagnosis.facts import (
    DateMention,
    Quantity,
    QuantityPool,
    Support,
    concept_in_text,
    content_support,
    date_order,
    extract_dates,
    extract_entities,
    extract_quantities,
    key_terms,
    normalize,
    quantities_match,
)
from ragtriage.diagnosis.rules import (
    PICKS_AN_OPTION,
    RULES,
    WRONG_STATEMENT,
    AnswerRule,
    answer_rule,
)
from ragtriage.diagnosis.stage import (
    chunk_shape_findings,
    chunks_by_doc,
    stage_from_parts,
    starved_parts,
)
from ragtriage.diagnosis.weights import active_weights, shipped_weights
from ragtriage.groundtruth import locate_reference, reconstruct_text
from ragtriage.records import AnswerLabel, Chunk, ErrorType, Stage, Vote, types_of_stage
from ragtriage.text import count_tokens, split_sentences

__all__ = [
    "STAGE_PRIORS",
    "abstains",
    "distribute_votes",
    "rule_type_evidence",
    "rule_type_votes",
]

E = ErrorType

#: Weak priors per stage, used when no test fires and for the residual vote share.
#: Shaped like the mode distribution RAGEC found on DragonBall-EN (seed 000, Table 2),
#: flattened so that no type is ruled out.
STAGE_PRIORS: Mapping[Stage, Mapping[ErrorType, float]] = MappingProxyType(
    {
        Stage.CHUNKING: MappingProxyType({E.E1: 0.15, E.E2: 0.25, E.E3: 0.60}),
        Stage.RETRIEVAL: MappingProxyType({E.E4: 0.60, E.E5: 0.28, E.E6: 0.12}),
        Stage.RERANKING: MappingProxyType({E.E7: 0.75, E.E8: 0.25}),
        Stage.GENERATION: MappingProxyType(
            {
                E.E9: 0.05,
                E.E10: 0.20,
                E.E11: 0.05,
                E.E12: 0.15,
                E.E13: 0.30,
                E.E14: 0.12,
                E.E15: 0.03,
                E.E16: 0.10,
            }
        ),
    }
)

_DEFAULTS = DiagnosisConfig()

#: Share of the votes left to the stage's other types is ``RESIDUAL * (1 - top score)``.
RESIDUAL = 0.5


# =========================================================================== helpers

_RE_TEMPORAL_Q = lazy_compile(
    r"\b(?:when|what\s+year|which\s+year|what\s+month|which\s+month|what\s+date|which\s+date|"
    r"what\s+time|how\s+long\s+ago|earlier|earliest|later|latest|first|sooner|before|after|"
    r"sequence|order|chronolog\w*|timeline|date|dates)\b|何时|什么时候|哪一年|哪年|哪个月|几月|"
    r"哪天|哪一天|日期|时间|先后|更早|更晚|最早|最晚|之前|之后|顺序|首先|最先",
    re.IGNORECASE,
)
_RE_COMPARE_TIME_Q = lazy_compile(
    r"\b(?:earlier|earliest|later|latest|first|sooner|before|after)\b|先|更早|更晚|最早|最晚|早于|晚于",
    re.IGNORECASE,
)
_RE_NUMBER_Q = lazy_compile(
    r"\b(?:how\s+many|how\s+much|what\s+(?:was|is|were|are)\s+the\s+(?:total|amount|number|"
    r"percentage|value|size|cost|price)|percentage|proportion|amount)\b|多少|几个|几名|几家|几次|金额|比例|百分比|数额|数量|总额",
    re.IGNORECASE,
)
_RE_PERSON_Q = lazy_compile(r"\b(?:who|whom)\b|谁|哪位|什么人", re.IGNORECASE)
#: questions whose answer is a name: a person, a place, or one item of a kind
_RE_NAME_Q = lazy_compile(
    r"\b(?:who|whom|whose|where|which\s+(?!year|month|date|day|time)\w+|what\s+(?:company|"
    r"firm|organi[sz]ation|city|country|place|court|hospital|bank|person|product|brand|name))\b"
    r"|谁|哪位|什么人|哪里|何处|哪个|哪家|哪座|哪所|什么地方|哪一家|哪一个",
    re.IGNORECASE,
)
_RE_GENERAL = lazy_compile(
    r"\b(?:generally|in\s+general|typically|usually|commonly|normally|as\s+a\s+rule|in\s+most\s+"
    r"cases|it\s+is\s+(?:widely\s+|well\s+|commonly\s+)?(?:known|believed|accepted)|tends?\s+to|"
    r"is\s+often|are\s+often|common\s+practice|industry\s+standard)\b|一般来说|一般而言|"
    r"一般情况下|通常|普遍|众所周知|往往|大多数情况|常见",
    re.IGNORECASE,
)
_RE_CALCULATION = lazy_compile(r"\d[\d,.]*\s*[%$a-zA-Z万亿元]*\s*[-+×x*/÷=]\s*[$￥¥]?\d")
_RE_ANAPHORA = lazy_compile(
    r"\b(?:the|this|that)\s+(?:company|firm|group|court|patient|defendant|plaintiff|hospital|"
    r"bank|country|organi[sz]ation|city|region|government|business|subsidiary|project|product|"
    r"drug|case|report|agreement|transaction|deal|person|doctor|judge|professor|prosecutor|"
    r"nurse|clinic|insurer|issuer|borrower|lender|buyer|seller)\b|\bthe\s+(?:former|latter)\b|"
    r"该(?:公司|集团|院|银行|医院|法院|患者|被告人|被告|原告|法官|审判长|审判员|医生|医师|董事长|"
    r"总经理|证人|检察官|企业|机构)|本公司|本院|上述(?:公司|人员|事项|企业)",
    re.IGNORECASE,
)
_RE_OPENING_PRONOUN = lazy_compile(
    r"\s*(?:It|Its|They|Their|He|His|She|Her|This|These)\b|\s*[他她它其该]"
)


def abstains(text: str) -> bool:
    """Whether ``text`` contains an abstention phrase ("not mentioned", "无法回答", ...):
    the declining phrases of :mod:`ragtriage.diagnosis.answer_styles`."""
    return declining_sentence(text)


def _short(text: str, n: int = 60) -> str:
    t = " ".join(text.split())
    return t if len(t) <= n else t[: n - 1] + "…"


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def _clip(x: float) -> float:
    return max(0.01, min(1.0, x))


def _coverage(needles: frozenset[str], hay: frozenset[str]) -> float:
    return len(needles & hay) / len(needles) if needles else 0.0


def _fmt_q(q: Quantity) -> str:
    return _short(q.raw, 40)


def _fmt_d(d: DateMention) -> str:
    return _short(d.raw, 40)


def _names_overlap(a: str, b: str) -> bool:
    na, nb = normalize(a), normalize(b)
    return bool(na and nb) and (na in nb or nb in na)


def _salient(qs: Iterable[Quantity], query_qs: Sequence[Quantity]) -> list[Quantity]:
    """Quantities worth checking: not a restated query number, not a bare 0/1 count."""
    out = []
    for q in qs:
        if not q.unit and q.value in (0.0, 1.0):
            continue
        if any(quantities_match(q, x) for x in query_qs):
            continue
        out.append(q)
    return out


@dataclass
class _Found:
    """Tests that fired, collected per error type (noisy-or of the scores)."""

    scores: dict[ErrorType, float] = field(default_factory=dict)
    notes: dict[ErrorType, list[str]] = field(default_factory=dict)

    def add(self, error_type: ErrorType, score: float, evidence: str) -> None:
        if score <= 0:
            return
        s = _clip(score)
        prev = self.scores.get(error_type)
        self.scores[error_type] = s if prev is None else 1 - (1 - prev) * (1 - s)
        self.notes.setdefault(error_type, []).append(evidence)

    def evidence(self) -> list[TypeEvidence]:
        out = [
            TypeEvidence(t, round(_clip(self.scores[t]), 4), "; ".join(self.notes[t]))
            for t in self.scores
        ]
        order = list(ErrorType)
        out.sort(key=lambda e: (-e.score, order.index(e.error_type)))
        return out


# =========================================================================== chunking


_RE_SENT_END = lazy_compile(r"[.!?]+(?=\s)|[。！？；]+|\n+")
_RE_CJK_CHARS = lazy_compile(r"[\u3400-\u9fff\uf900-\ufaff]+")


def _sentence_count(text: str) -> int:
    """Approximate number of sentences: terminators followed by space, full-width
    terminators and line breaks (cheap; abbreviations count as ends)."""
    t = text.strip()
    if not t:
        return 0
    n = len(_RE_SENT_END.findall(t))
    # a text that ends with its only terminator ("One sentence.") is still a sentence
    return max(1, n + (0 if t[-1] in ".!?。！？；" else 1))


def _approx_tokens(text: str) -> int:
    """Latin words plus CJK characters."""
    cjk = sum(len(r) for r in _RE_CJK_CHARS.findall(text))
    return cjk + len(_RE_CJK_CHARS.sub(" ", text).split())


def _chunking_tests(ctx: CaseContext, found: _Found) -> None:
    """Chunking types (seed 000 §4.1; Listing 7), over the ground-truth documents.

    Sizes are relative: the median chunk length against the mean sentence length of
    the document ("sentences per chunk"), plus the ground-truth chunks' token counts.

    * **E1 Overchunking** — (a) chunks are fragments: under two sentences per chunk,
      or ground-truth chunks of 24 tokens or fewer; (b) a reference (evidence sentence)
      lies across several chunks and is longer than a chunk (or chunks are fragments);
      (c) the answer needs three or more consecutive chunks; (d) with fragment-sized
      chunks, a missing query concept sits in another chunk.
    * **E2 Underchunking** — (a) chunks are large (ground-truth chunks of >= 300 tokens,
      >= 900 characters for Chinese) and hold ten or more sentences, or a whole long
      document is one chunk; (b) in such large chunks, the answer-bearing sentences
      (inside a located reference, or sharing half their terms with the ground truth)
      are under a quarter of the text: diluted.
    * **E3 Context Mismatch** — (a) a query concept missing from the ground-truth
      chunks appears in another chunk of the same document, above all in a neighbouring
      one (the link was cut off); (b) the ground-truth chunk refers to the missing name
      by a definite description ("the company", "该公司") or opens with a pronoun;
      (c) a chunk boundary of a normal-sized chunk cuts through a short reference.
      The strongest finding decides the score (more missing concepts add a little).
    """
    trace = ctx.trace
    example = trace.example
    cmap = ctx.chunks
    gt = [cmap[i] for i in ctx.gt_chunk_ids if i in cmap]
    gt_ids = {c.chunk_id for c in gt}
    groups = chunks_by_doc(trace.gt_doc_chunks or gt)
    if not groups:
        return

    # ---- the extension of the stage cascade (stage.py): the GT chunks' shape
    for finding in chunk_shape_findings(trace, ctx.gt_chunk_ids, ctx.config or _DEFAULTS):
        found.add(E.E1 if finding.kind == "over" else E.E2, 0.8, finding.note)
    # ---- and one entity's evidence cut from its subject (a multi-entity question)
    parts_call = stage_from_parts(trace, ctx.gt_chunk_ids)
    if parts_call is not None and parts_call.stage is Stage.CHUNKING:
        found.add(E.E3, 0.85, parts_call.reason)
    # in first-seen order (a set's order follows the hash seed, and so did the scores)
    gt_docs = list(dict.fromkeys(c.doc_id for c in gt)) or list(groups)
    doc_texts_all = (
        gt_doc_texts(trace)
        if trace.gt_doc_chunks
        else {d: reconstruct_text(cs) for d, cs in groups.items()}
    )

    # ---- chunk size relative to sentence length, over the ground-truth documents
    ratios: list[float] = []
    chunk_tokens: list[int] = []
    doc_texts: dict[str, tuple[str, int]] = {}
    whole_long_doc = False
    for doc_id in gt_docs:
        chunks = groups.get(doc_id, [])
        if not chunks:
            continue
        text, offset = doc_texts_all.get(doc_id) or ("", 0)
        doc_texts[doc_id] = (text, offset)
        n_sents = _sentence_count(text)
        if not text.strip():
            continue
        sent_len = len(text.strip()) / n_sents
        chunk_len = median(len(c.text) for c in chunks)
        if sent_len > 0:
            ratios.append(chunk_len / sent_len)
        chunk_tokens.extend(_approx_tokens(c.text) for c in chunks if c.chunk_id in gt_ids)
        if len(chunks) == 1 and n_sents >= 15:
            whole_long_doc = True
    ratio = median(ratios) if ratios else None
    med_tokens = round(median(chunk_tokens)) if chunk_tokens else None
    cjk_doc = ctx.language.startswith("zh")
    small = (ratio is not None and ratio < 2.0) or (med_tokens is not None and med_tokens <= 24)
    big_chunks = med_tokens is not None and med_tokens >= (900 if cjk_doc else 300)
    whole_long_doc = whole_long_doc and big_chunks
    large = big_chunks and ((ratio is not None and ratio >= 10.0) or whole_long_doc)

    if ratio is not None and ratio < 2.0:
        found.add(
            E.E1,
            0.35 + 0.5 * min(1.0, (2.0 - ratio) / 1.5),
            f"chunks are fragments: a median chunk is {ratio:.1f}x the median sentence "
            f"({med_tokens} tokens)",
        )
    elif med_tokens is not None and med_tokens <= 24:
        found.add(E.E1, 0.55, f"chunks are tiny: median {med_tokens} tokens")
    if ratio is not None and large and not whole_long_doc:
        found.add(
            E.E2,
            0.45 + 0.4 * min(1.0, (ratio - 10.0) / 20.0),
            f"chunks are very large: a ground-truth chunk has about {med_tokens} tokens, "
            f"some {ratio:.0f} sentences",
        )
    elif whole_long_doc:
        found.add(E.E2, 0.55, "a long document (15+ sentences) is a single chunk")

    # ---- references: split across chunks?
    ref_spans: dict[str, list[tuple[int, int]]] = {}
    for ref in example.references:
        if not ref.strip():
            continue
        for doc_id, (text, offset) in doc_texts.items():
            span = locate_reference(text, ref, fuzzy=len(text) <= 20_000)
            if span is None:
                continue
            s, e = span[0] + offset, span[1] + offset
            ref_spans.setdefault(doc_id, []).append((s, e))
            chunks = groups[doc_id]
            holders = [c for c in chunks if c.start <= s and c.end >= e]
            if holders:
                break
            touched = [c for c in chunks if min(c.end, e) - max(c.start, s) > 0]
            if len(touched) < 2:
                break
            ref_len = e - s
            chunk_len = median(len(c.text) for c in chunks)
            ids = ", ".join(c.chunk_id for c in touched[:4])
            if ref_len > chunk_len or small:
                found.add(
                    E.E1,
                    0.45 + 0.1 * min(3, len(touched) - 1),
                    f"reference '{_short(ref, 50)}' ({ref_len} chars) is cut into "
                    f"{len(touched)} chunks ({ids}) of ~{chunk_len:.0f} chars",
                )
            else:
                found.add(
                    E.E3,
                    0.5,
                    f"a chunk boundary cuts reference '{_short(ref, 50)}' between chunks {ids}",
                )
            break

    # ---- the answer needs several consecutive small chunks
    if len(gt) >= 3:
        by_doc = chunks_by_doc(gt)
        for doc_id, doc_gt in by_doc.items():
            idx = [c.index for c in doc_gt]
            run = 1
            best = 1
            for a, b in pairwise(idx):
                run = run + 1 if b == a + 1 else 1
                best = max(best, run)
            if best >= 3:
                found.add(
                    E.E1,
                    0.4 + (0.2 if small else 0.0),
                    f"the answer is spread over {best} consecutive chunks of {doc_id}",
                )
                break

    # ---- dilution of long ground-truth chunks
    gt_answer_terms = key_terms(" ".join([example.answer, *example.keypoints]))
    for c in gt if large or (med_tokens or 0) >= (700 if cjk_doc else 250) else ():
        if _sentence_count(c.text) < 10:
            continue
        sents = split_sentences(c.text)
        if len(sents) < 10:
            continue
        spans = ref_spans.get(c.doc_id, [])
        bearing = 0
        for sent in sents:
            abs_s, abs_e = c.start + sent.start, c.start + sent.end
            in_ref = any(min(abs_e, e) - max(abs_s, b) > 0 for b, e in spans)
            bears = gt_answer_terms and _coverage(key_terms(sent.text), gt_answer_terms) >= 0.5
            if in_ref or bears:
                bearing += len(sent.text)
        share = bearing / max(1, sum(len(x.text) for x in sents))
        if share < 0.25:
            found.add(
                E.E2,
                0.25 + (0.3 if large else 0.0) + 0.3 * (0.25 - share) / 0.25,
                f"ground-truth chunk {c.chunk_id} has {len(sents)} sentences but only "
                f"{_pct(share)} of its text bears on the answer",
            )
            break

    # ---- concepts missing from the ground-truth chunks
    missing = [k for k in ctx.concepts if not ctx.concept_hits.get(k)]
    if not missing:
        return
    gt_index = {(c.doc_id, c.index) for c in gt}
    anaphora = anaphor(gt)
    e3: list[tuple[float, str]] = []
    e1: list[str] = []
    for concept in missing[:6]:
        where: Chunk | None = None
        adjacent = False
        for doc_id in gt_docs:
            for c in groups.get(doc_id, []):
                if c.chunk_id in gt_ids or not concept_in_text(concept, c.text):
                    continue
                near = any((doc_id, c.index + d) in gt_index for d in (-2, -1, 1, 2))
                if where is None or (near and not adjacent):
                    where, adjacent = c, near
                if adjacent:
                    break
            if adjacent:
                break
        if where is not None:
            if small:
                e1.append(f"query concept '{concept}' sits in chunk {where.chunk_id}")
            e3.append(
                (
                    (0.7 if adjacent else 0.55) * (0.6 if small else 1.0),
                    f"query concept '{concept}' is missing from the ground-truth chunks but "
                    f"appears in {'neighbouring ' if adjacent else ''}chunk {where.chunk_id}",
                )
            )
        else:
            e3.append((0.3, f"query concept '{concept}' appears in no ground-truth chunk"))
        if anaphora is not None and (concept[:1].isupper() or extract_entities(concept)):
            e3.append(
                (
                    0.5 * (0.7 if small else 1.0),
                    f"the ground-truth chunk says '{anaphora}' instead of naming '{concept}'",
                )
            )
    if e3:
        # the strongest finding decides; more missing concepts add a little
        e3.sort(key=lambda x: -x[0])
        found.add(
            E.E3,
            e3[0][0] + 0.05 * min(3, len(e3) - 1),
            "; ".join(note for _, note in e3[:3]),
        )
    if e1:
        found.add(
            E.E1,
            0.45,
            "; ".join(e1[:2]) + ", split off from the small ground-truth chunks",
        )


def anaphors(gt: Sequence[Chunk]) -> Iterator[str]:
    """The definite descriptions ("the company", "该公司") in the ground-truth chunks and
    the pronoun opening one ("It ...", "他..."), in chunk order: a chunk that leans on
    context it lacks."""
    for c in gt:
        yield from (m.group() for m in _RE_ANAPHORA.finditer(c.text))
        head = _RE_OPENING_PRONOUN.match(c.text)
        if head is not None:
            yield head.group().strip()


def anaphor(gt: Sequence[Chunk]) -> str | None:
    """The first of :func:`anaphors`, or ``None``."""
    return next(anaphors(gt), None)


# =========================================================================== retrieval


def _query_profile(query: str) -> tuple[frozenset[str], list[str]]:
    """Query terms that say what the query is about (numbers and years dropped: they
    occur everywhere) and the entities the query names."""
    terms = frozenset(t for t in key_terms(query) if not t.isdigit()) or key_terms(query)
    ents = extract_entities(query)
    # names, not acronyms of roles or units ("CFO", "R&D", "USD")
    names = [e for e in ents if not (e.replace("&", "").isupper() and len(e) <= 4)]
    return terms, names


#: A missed GT chunk with less query coverage than this gives the retriever no lexical
#: handle either: the query's wording does not match the corpus (E5's vocabulary
#: mismatch), so low coverage of the retrieved chunks says nothing about a miss.
_GT_MATCH_FLOOR = 0.2
#: Coverage margin over the best retrieved chunk at which a missed GT chunk counts as
#: fully passed over (the margin scales the E4/E5 shift linearly below it).
_GT_MATCH_MARGIN = 0.2


def _passed_over(gt_cov: float, best_cov: float) -> float:
    """How clearly (0..1) the missed GT chunk, with query coverage ``gt_cov``, matches the
    query better than the best retrieved chunk (``best_cov``): 0 below the floor or
    without a margin, 1 at a margin of :data:`_GT_MATCH_MARGIN` or more."""
    if gt_cov < _GT_MATCH_FLOOR:
        return 0.0
    return max(0.0, min(1.0, (gt_cov - best_cov) / _GT_MATCH_MARGIN))


def _retrieval_tests(ctx: CaseContext, found: _Found) -> None:
    """Retrieval types (seed 000 §4.2; Listing 8), over the top 10 retrieved chunks.

    Query coverage of a chunk = share of the query's content terms (numbers left out)
    found in it; "the query's entities" are the names it mentions (not acronyms).

    * **E4 Missed Retrieval** — relevant chunks are not retrieved. A *partial* miss
      (some ground-truth chunks retrieved, others not) is E4 by definition: part of the
      answer is missing (score 0.8). A *total* miss scores 0.65-0.85, but only 0.4-0.45
      when E5 or E6 fires: what was retrieved instead then explains the miss better.
      Also: the answer needs several documents and the retrieved chunks come from only
      some of them (the seed's two-company example).
    * **E5 Low Relevance** — only when no ground-truth chunk was retrieved: the top
      min(5, other chunks of the ground-truth documents) hits all come from the right
      document(s) but are about other facts (rank-based, so short documents can fill
      it); or the retrieved chunks are loosely related (mean query coverage < 12% and
      best < 30%), or mostly from the right document(s) with coverage < 30%.
    * **E4 vs. a loosely related list** — low query coverage of what was retrieved is
      only evidence of *low relevance* when the query's wording does not match the
      answer's chunks either (the seed's vocabulary mismatch). When the missed
      ground-truth chunk shares the query's terms well (coverage >= 20%) and clearly
      better than any retrieved chunk, a lexically matching chunk existed and the
      retriever passed it over: that is a missed retrieval (E4), and the "loosely
      related" E5 test is weakened in proportion to the margin. Structural E5 evidence
      (the list is led by, or mostly made of, the right document's other chunks) is
      untouched: what came back is on topic but about other facts.
    * **E4, one entity** — a multi-entity question whose context holds evidence for one
      entity and nothing about another, whose GT chunks were never retrieved (score 0.95;
      :func:`~ragtriage.diagnosis.stage.starved_parts`).
    * **E6 Semantic Drift** — none of the retrieved chunks comes from the ground-truth
      document(s) although most share some of the query's keywords, AND they are about
      another subject: none names the query's entity (another company's report with the
      same section names), or, for a question without names, they share under 25 % of its
      terms. Keyword matches about the query's own entity from other documents are a
      missed retrieval (E4), not a drift. Such keyword drift takes precedence over "loosely related" (E5).
    """
    trace = ctx.trace
    example = trace.example
    cmap = ctx.chunks
    hits = sorted(trace.retrieved, key=lambda h: h.rank)
    gt_ids = [i for i in ctx.gt_chunk_ids if i in cmap]
    gt_docs = set(example.doc_ids) | {cmap[i].doc_id for i in gt_ids}
    q_terms, q_ents = _query_profile(example.query)
    top = [h for h in hits[:10] if h.chunk_id in cmap]

    if not hits:
        found.add(E.E4, 0.9, "nothing was retrieved")
        return
    for f in starved_parts(trace, ctx.gt_chunk_ids)[:1]:
        found.add(
            E.E4,
            0.95,
            f"one entity's evidence was never retrieved: no retrieved chunk is about "
            f"{f.part.text!r} (ground-truth chunk(s) {', '.join(f.gt_chunks[:3])}), while the "
            "other entity's evidence reached the generator",
        )

    retrieved_ids = {h.chunk_id for h in hits}
    if gt_ids:
        got = [i for i in gt_ids if i in retrieved_ids]
        miss = 1 - len(got) / len(gt_ids)
    else:
        miss = 0.0

    covs: list[float] = []
    ent_in: list[bool] = []
    for h in top:
        text = cmap[h.chunk_id].text
        covs.append(_coverage(q_terms, key_terms(text)))
        has = [concept_in_text(e, text) for e in q_ents]
        ent_in.append(any(has) if q_ents else True)
    mean_cov = sum(covs) / len(covs) if covs else 0.0
    on_topic = mean_cov >= 0.4 and (sum(ent_in) / max(1, len(ent_in)) >= 0.5)
    doc_share = sum(1 for h in top if h.doc_id in gt_docs) / len(top) if top and gt_docs else None

    best_cov = max(covs) if covs else 0.0
    # keyword matches: chunks sharing at least one of the query's terms
    kw_any = sum(1 for c in covs if c > 0) / len(covs) if covs else 0.0
    no_gt_doc = bool(top) and bool(gt_docs) and doc_share == 0
    entity_absent = bool(q_ents) and not any(ent_in)
    drift = no_gt_doc and kw_any >= 0.5 and (entity_absent or mean_cov >= 0.12)
    loose = bool(covs) and mean_cov < 0.12 and best_cov < 0.3 and not drift

    # the head of the list: the top min(5, other chunks of the ground-truth documents)
    # hits -- a short document cannot fill a longer head, so the test is rank-based
    siblings = sum(
        1 for c in trace.gt_doc_chunks if c.doc_id in gt_docs and c.chunk_id not in gt_ids
    )
    lead_n = min(5, siblings, len(top))
    lead = top[:lead_n]
    # E5 is about what WAS retrieved instead of the answer: only when no GT chunk was
    # retrieved at all (a partial miss is E4 by definition: part of the answer is missing)
    total_miss = bool(gt_ids) and miss >= 1.0
    same_doc_lead = total_miss and lead_n >= 2 and all(h.doc_id in gt_docs for h in lead)
    weak_doc_lead = (
        total_miss
        and not same_doc_lead
        and doc_share is not None
        and doc_share >= 0.5
        and mean_cov < 0.3
    )
    loose = loose and (total_miss or not gt_ids)
    e5_fires = same_doc_lead or loose or weak_doc_lead
    # keyword matches about the query's own subject are a miss (E4), not a drift: drift
    # is retrieving another entity's text -- or, for a question without names, chunks
    # that share its words only thinly
    drift_subject = entity_absent if q_ents else mean_cov < 0.25
    e6_fires = no_gt_doc and (drift or not loose) and drift_subject
    # how clearly the missed GT chunk out-matches the retrieved ones (0..1): only when
    # the sole E5 evidence is lexical (no same-document head, no keyword drift)
    gt_cov = max((_coverage(q_terms, key_terms(cmap[i].text)) for i in gt_ids), default=0.0)
    passed_over = 0.0
    if loose and total_miss and not (same_doc_lead or weak_doc_lead or e6_fires):
        passed_over = _passed_over(gt_cov, best_cov)

    # ---- E4
    if gt_ids and 0 < miss < 1:
        found.add(
            E.E4,
            0.8,
            f"{len(gt_ids) - len(got)} of {len(gt_ids)} ground-truth chunks not retrieved "
            f"({len(got)} retrieved): part of the answer is missing",
        )
    elif total_miss:
        note = f"{len(gt_ids)} of {len(gt_ids)} ground-truth chunk(s) not retrieved"
        if same_doc_lead or e6_fires:
            # the miss is explained by what was retrieved instead (E5/E6 below)
            score = 0.45 if on_topic else 0.4
        elif passed_over > 0:
            # the answer's chunk matches the query far better than anything retrieved:
            # the retriever passed over a findable chunk
            score = 0.55 + 0.3 * passed_over
            note += (
                f"; the missed chunk shares {_pct(gt_cov)} of the query's terms, the best "
                f"retrieved chunk {_pct(best_cov)}"
            )
        elif e5_fires:
            # only lexical evidence of low relevance (term coverage): weaker than the
            # structural same-document lead, so the miss keeps a fair share
            score = 0.55
        else:
            score = 0.65
            if doc_share:
                score += 0.1
                note += (
                    f"; {_pct(doc_share)} of the retrieved chunks are from the right document(s)"
                )
            if on_topic:
                score += 0.1
                note += (
                    f"; the retrieved chunks are on topic (query-term coverage {_pct(mean_cov)})"
                )
        found.add(E.E4, score, note)
    elif not gt_ids:
        found.add(E.E4, 0.3, "no ground-truth chunk is known; the answer was not retrieved")
    gt_doc_list = sorted({cmap[i].doc_id for i in gt_ids})
    if len(gt_doc_list) >= 2:
        seen_docs = [d for d in gt_doc_list if any(h.doc_id == d for h in top)]
        unseen = [d for d in gt_doc_list if d not in seen_docs]
        if seen_docs and unseen:
            found.add(
                E.E4,
                0.6,
                f"the answer needs documents {', '.join(gt_doc_list[:4])}; the retrieved "
                f"chunks come only from {', '.join(seen_docs[:3])}",
            )

    # ---- E5
    if same_doc_lead:
        found.add(
            E.E5,
            0.75,
            f"the top {len(lead)} retrieved chunks all come from the right document(s) but "
            f"are about other facts (no ground-truth chunk was retrieved)",
        )
    elif loose:
        note = (
            f"the retrieved chunks are loosely related: they share {_pct(mean_cov)} of the "
            f"query's terms on average (best {_pct(best_cov)})"
        )
        if passed_over > 0:
            note += f", though the missed ground-truth chunk shares {_pct(gt_cov)}"
        found.add(E.E5, (0.45 + 0.35 * (0.12 - mean_cov) / 0.12) * (1 - 0.6 * passed_over), note)
    elif weak_doc_lead and doc_share is not None:
        found.add(
            E.E5,
            0.45 + 0.3 * (doc_share - 0.5) / 0.5,
            f"{_pct(doc_share)} of the retrieved chunks come from the right document(s) but "
            f"are about other facts (query-term coverage {_pct(mean_cov)})",
        )

    # ---- E6
    if e6_fires:
        score = 0.6 + 0.1 * kw_any
        note = (
            f"none of the top {len(top)} retrieved chunks comes from the ground-truth "
            f"document(s), though {_pct(kw_any)} of them share the query's keywords (best "
            f"coverage {_pct(best_cov)})"
        )
        if entity_absent:
            other = [
                e
                for h in top[:3]
                for e in extract_entities(cmap[h.chunk_id].text)[:2]
                if not any(_names_overlap(e, q) for q in q_ents)
            ]
            score += 0.2
            note += f"; they never mention '{q_ents[0]}'"
            if other:
                note += f" but {', '.join(dict.fromkeys(other[:3]))}"
        found.add(E.E6, score, note)


# =========================================================================== reranking


def _rerank_tests(ctx: CaseContext, found: _Found) -> None:
    """Reranking types (seed 000 §4.3; Listing 9).

    * **E7 Low Recall** — a ground-truth chunk was retrieved but not forwarded to the
      generator after reranking (score grows with the dropped share, more when the
      retriever had ranked it near the top).
    * **E8 Low Precision** — irrelevant chunks are ranked above the truly relevant ones:
      (a) a ground-truth chunk was kept but below two or more non-ground-truth chunks;
      (b) the reranker promoted chunks the retriever had ranked below a dropped
      ground-truth chunk, although they share fewer of the query's terms.
    """
    trace = ctx.trace
    cmap = ctx.chunks
    gt = set(ctx.gt_chunk_ids)
    retrieved = sorted(trace.retrieved, key=lambda h: h.rank)
    reranked = sorted(trace.reranked, key=lambda h: h.rank)
    kept_order: list[str] = list(trace.context) or [h.chunk_id for h in reranked]
    kept = set(kept_order)
    ret_rank = {h.chunk_id: h.rank for h in retrieved}
    gt_retrieved = [h.chunk_id for h in retrieved if h.chunk_id in gt]
    if not gt_retrieved:
        return
    dropped = [i for i in gt_retrieved if i not in kept]
    kept_gt = [i for i in kept_order if i in gt]
    q_terms = key_terms(trace.example.query)
    k_prime = len(kept_order)

    if dropped:
        best = min(ret_rank[i] for i in dropped)
        score = 0.45 + 0.4 * len(dropped) / len(gt_retrieved)
        if best <= max(1, k_prime):
            score += 0.1
        found.add(
            E.E7,
            score,
            f"ground-truth chunk {dropped[0]} was retrieved at rank {best} but not among the "
            f"{k_prime} chunks forwarded after reranking"
            + (f" ({len(dropped)} of {len(gt_retrieved)} dropped)" if len(dropped) > 1 else ""),
        )

    if kept_gt:
        first_pos = kept_order.index(kept_gt[0])
        above = first_pos  # all chunks above the first GT chunk are non-GT
        if above >= 2:
            # with a ground-truth chunk dropped as well, the drop (E7) explains the failure
            # better than the order of what was kept (issue #9)
            damp = 0.7 if dropped else 1.0
            found.add(
                E.E8,
                (0.5 + 0.4 * min(1.0, above / max(2, k_prime - 1))) * damp,
                f"{above} non-ground-truth chunks are ranked above ground-truth chunk "
                f"{kept_gt[0]} (position {first_pos + 1} of {k_prime})",
            )
    if dropped:
        worst_dropped = min(ret_rank[i] for i in dropped)
        gt_cov = max(_coverage(q_terms, key_terms(cmap[i].text)) for i in dropped if i in cmap)
        promoted = [
            i
            for i in kept_order
            if i not in gt
            and ret_rank.get(i, 10**9) > worst_dropped
            and i in cmap
            and _coverage(q_terms, key_terms(cmap[i].text)) < gt_cov
        ]
        if promoted:
            share = len(promoted) / max(1, k_prime)
            found.add(
                E.E8,
                0.3 + 0.35 * share,
                f"the reranker promoted {len(promoted)} chunk(s) (e.g. {promoted[0]}, retrieved "
                f"at rank {ret_rank.get(promoted[0])}) that match the query less than the "
                f"dropped ground-truth chunk",
            )


# =========================================================================== generation


@dataclass
class _Gen:
    """Lazily computed facts about one generation case."""

    ctx: CaseContext

    @cached_property
    def query(self) -> str:
        return self.ctx.trace.example.query

    @cached_property
    def answer(self) -> str:
        """The answer as the answer evaluation read it: markdown, citations and document
        labels removed (one reading of a long answer, shared with its caches)."""
        return answer_view(self.ctx.trace.answer).text

    @cached_property
    def gt(self) -> str:
        return self.ctx.trace.example.answer

    @cached_property
    def context(self) -> str:
        return self.ctx.context_text

    @cached_property
    def q_terms(self) -> frozenset[str]:
        return key_terms(self.query)

    @cached_property
    def a_terms(self) -> frozenset[str]:
        return key_terms(self.answer)

    @cached_property
    def a_new(self) -> frozenset[str]:
        """Answer terms that do not merely repeat the query."""
        return self.a_terms - self.q_terms

    @cached_property
    def g_terms(self) -> frozenset[str]:
        return key_terms(" ".join([self.gt, *self.ctx.trace.example.keypoints]))

    @cached_property
    def context_chunks(self) -> list[str]:
        """The context's chunk texts (each cached by the fact extractors on its own,
        so chunks shared by many traces are analysed once)."""
        return self.ctx.texts(list(self.ctx.trace.context))

    @cached_property
    def c_terms(self) -> frozenset[str]:
        return frozenset().union(*(key_terms(t) for t in self.context_chunks))

    @cached_property
    def c_quant_pool(self) -> list[Quantity]:
        """The context's quantities, chunk by chunk (for value tests; their offsets are
        relative to their chunk, unlike :attr:`c_quants`)."""
        return [q for t in self.context_chunks for q in extract_quantities(t)]

    @cached_property
    def c_pool(self) -> QuantityPool:
        """The context's quantities as a pool (looked up by several tests)."""
        return QuantityPool(self.c_quant_pool)

    @cached_property
    def wrong_numbers(self) -> list[Quantity]:
        """Answer numbers comparable with a ground-truth number that match none of them."""
        return [
            a
            for a in self.a_quants
            if _comparable(a, self.g_quants)
            and not any(quantities_match(a, x) for x in self.g_quants)
        ]

    @cached_property
    def swaps(self) -> tuple[FactSwap, ...]:
        """Ground-truth facts the answer attaches to each other's events."""
        return fact_swaps(self.gt, self.answer)

    @cached_property
    def substitutions(self) -> tuple[NameSubstitution, ...]:
        """Ground-truth names replaced in place by a name the ground truth never uses."""
        return substituted_names(self.gt, self.answer, self.query)

    @cached_property
    def ctx_support(self) -> Support:
        """The answer's content against the context (and the query it may restate)."""
        return content_support(self.answer, [*self.context_chunks, self.query])

    @cached_property
    def ans_ctx(self) -> float:
        """Share of the answer's content found in the context."""
        return 1.0 - self.ctx_support.unsupported_share

    @cached_property
    def restates_query(self) -> bool:
        """The answer takes up the question's own words (more than half its key terms): it
        answers the aspect asked, whatever it fills it with."""
        return bool(self.q_terms) and _coverage(self.q_terms, self.a_terms) > 0.5

    @cached_property
    def ans_gt_chunks(self) -> float:
        """Share of the answer's content found in the ground-truth chunks the generator
        saw (0 when it saw none)."""
        seen = set(self.ctx.trace.context)
        texts = self.ctx.texts([i for i in self.ctx.gt_chunk_ids if i in seen])
        if not texts:
            return 0.0
        return 1.0 - content_support(self.answer, [*texts, self.query]).unsupported_share

    @cached_property
    def truth_support(self) -> Support:
        """The answer's content against everything it may legitimately rest on:
        context, query and ground truth (content that is true is not fabricated)."""
        gt_text = " ".join([self.gt, *self.ctx.trace.example.keypoints])
        return content_support(self.answer, [*self.context_chunks, self.query, gt_text])

    @cached_property
    def gt_ctx(self) -> float:
        return _coverage(self.g_terms - self.q_terms, self.c_terms) if self.g_terms else 0.0

    @cached_property
    def ans_gt_p(self) -> float:
        return _coverage(self.a_new, self.g_terms) if self.a_new else 0.0

    @cached_property
    def ans_gt_r(self) -> float:
        g = self.g_terms - self.q_terms
        return _coverage(g, self.a_terms) if g else 0.0

    @cached_property
    def ans_gt_f1(self) -> float:
        p, r = self.ans_gt_p, self.ans_gt_r
        return 2 * p * r / (p + r) if p + r else 0.0

    @cached_property
    def on_topic(self) -> float:
        """How much the answer addresses what the ground truth addresses (0.2..1)."""
        mentions_query_entity = any(concept_in_text(e, self.answer) for e in self.q_ents)
        base = max(self.ans_gt_f1 / 0.4, 0.6 if mentions_query_entity else 0.0)
        return max(0.2, min(1.0, base))

    @cached_property
    def name_from_context(self) -> tuple[str, str] | None:
        """A name of the answer, found in the context but not in the query or the ground
        truth, and a ground-truth name the answer leaves out (the wrong item given)."""
        if not self.g_ents:
            return None
        wrong = [
            e
            for e in self.a_names
            if self.in_context(e)
            and not self.in_query(e)
            and not self.in_gt(e)
            and not any(_names_overlap(e, x) for x in self.g_ents)
        ]
        right_missing = [e for e in self.g_ents if not _mentions(e, self.answer)]
        return (wrong[0], right_missing[0]) if wrong and right_missing else None

    @cached_property
    def answers_name_question(self) -> bool:
        """The question asks for a name (who / where / which company) and the answer
        restates at least half of the question's own words (its names aside): it means
        to answer that question."""
        if not _RE_NAME_Q.search(self.query):
            return False
        names = frozenset().union(*(key_terms(e) for e in self.q_ents))
        predicate = self.q_terms - names
        return bool(predicate) and _coverage(predicate, self.a_terms) >= 0.5

    @cached_property
    def gt_unanswerable(self) -> bool:
        ex = self.ctx.trace.example
        return (not ex.answerable) or not self.gt.strip() or abstains(self.gt)

    @cached_property
    def abstain_full(self) -> bool:
        if self.ctx.answer_label is AnswerLabel.ABSTAIN:
            return True
        if not self.answer.strip():
            return True
        if not abstains(self.answer):
            return False
        return len(self.a_new) <= 6 or count_tokens(self.answer) <= 25

    @cached_property
    def abstain_partial(self) -> bool:
        return not self.abstain_full and abstains(self.answer)

    # ---- facts
    @cached_property
    def q_quants(self) -> list[Quantity]:
        return extract_quantities(self.query)

    @cached_property
    def a_quants(self) -> list[Quantity]:
        return _salient(extract_quantities(self.answer), self.q_quants)

    @cached_property
    def g_quants(self) -> list[Quantity]:
        gt_text = " ".join([self.gt, *self.ctx.trace.example.keypoints])
        return _salient(extract_quantities(gt_text), self.q_quants)

    @cached_property
    def c_quants(self) -> list[Quantity]:
        # chunk by chunk (each chunk's facts are cached across traces), offsets moved to
        # the joined context (chunks joined by one newline, as context_text joins them)
        return _joined(self.context_chunks, extract_quantities)

    @cached_property
    def q_dates(self) -> list[DateMention]:
        return extract_dates(self.query)

    @cached_property
    def a_dates(self) -> list[DateMention]:
        return [
            d
            for d in extract_dates(self.answer)
            # a date the query states ("in 2021") is no claim of the answer; a more
            # precise one ("1 May 2021") is
            if not any(_date_covers(q, d) for q in self.q_dates)
        ]

    @cached_property
    def g_dates(self) -> list[DateMention]:
        return extract_dates(" ".join([self.gt, *self.ctx.trace.example.keypoints]))

    @cached_property
    def c_dates(self) -> list[DateMention]:
        return _joined(self.context_chunks, extract_dates)

    @cached_property
    def q_ents(self) -> list[str]:
        return extract_entities(self.query)

    @cached_property
    def a_ents(self) -> list[str]:
        return extract_entities(self.answer)

    @cached_property
    def a_names(self) -> list[str]:
        """Answer entities, plus capitalised words of the answer that the context also
        writes capitalised in mid-sentence (a name opening an answer sentence looks like
        any other first word on its own)."""
        found = list(self.a_ents)
        for m in _RE_CAP_WORD.finditer(self.answer):
            word = m.group()
            if word in found or word.lower() in _COMMON_FIRST_WORDS:
                continue
            if _mid_sentence(word, self.context):
                found.append(word)
        return found

    @cached_property
    def g_ents(self) -> list[str]:
        return extract_entities(self.gt)

    @cached_property
    def ctx_sentences(self) -> list[tuple[int, str]]:
        return [(s.start, s.text) for s in split_sentences(self.context)]

    @cached_property
    def _sentence_starts(self) -> list[int]:
        return [s for s, _ in self.ctx_sentences]

    @cached_property
    def _context_ids(self) -> list[tuple[int, str]]:
        """(start in :attr:`context`, chunk id) of each context chunk."""
        cm, out, pos = self.ctx.chunks, [], 0
        for cid in self.ctx.trace.context:
            if cid in cm:
                out.append((pos, cid))
                pos += len(cm[cid].text) + 1
        return out

    def _doc_at(self, pos: int) -> str | None:
        """The document of the context chunk holding context position ``pos``."""
        i = bisect_right(self._context_starts, pos) - 1
        return self.ctx.chunks[self._context_ids[i][1]].doc_id if i >= 0 else None

    def _doc_names(self, doc: str, own: Sequence[str]) -> bool:
        """One of the document's context chunks names one of ``own``."""
        cm = self.ctx.chunks
        texts = [cm[c].text for _, c in self._context_ids if cm[c].doc_id == doc]
        return any(_mentions(o, t) for o in own for t in texts)

    @cached_property
    def _gt_docs(self) -> frozenset[str]:
        cm = self.ctx.chunks
        return frozenset(cm[i].doc_id for i in self.ctx.gt_chunk_ids if i in cm)

    @cached_property
    def _context_starts(self) -> list[int]:
        return [s for s, _ in self._context_ids]

    def foreign_sources(
        self, positions: Sequence[int], own: Sequence[str]
    ) -> list[tuple[str, str]]:
        """("document D", sentence) for each context position whose chunk comes from a
        document D other than the ground truth's, none of whose context chunks names any
        of ``own``."""
        seen = set(self._gt_docs)  # and reported
        out: list[tuple[str, str]] = []
        for pos in positions:
            doc = self._doc_at(pos)
            if doc is None or doc in seen:
                continue
            seen.add(doc)
            if not self._doc_names(doc, own):
                out.append((f"document {doc}", self.sentence_at(pos)))
        return out

    def from_own_document(self, pos: int, own: Sequence[str]) -> bool:
        """The context position's chunk comes from a ground-truth document or from one
        whose context chunks name one of ``own``."""
        doc = self._doc_at(pos)
        return doc is not None and (doc in self._gt_docs or self._doc_names(doc, own))

    def sentence_at(self, pos: int) -> str:
        i = bisect_right(self._sentence_starts, pos) - 1
        return self.ctx_sentences[i][1] if 0 <= i < len(self.ctx_sentences) else ""

    def in_context(self, name: str) -> bool:
        return _verbatim(name, self.context) or concept_in_text(name, self.context)

    def in_query(self, name: str) -> bool:
        return _verbatim(name, self.query) or concept_in_text(name, self.query)

    def in_gt(self, name: str) -> bool:
        return _verbatim(name, self.gt) or concept_in_text(name, self.gt)

    @cached_property
    def unsupported_names(self) -> list[str]:
        """Answer entities named neither in the context, the query nor the ground truth
        (a full name whose last word they give is named: "Ferdinand Magellan" by
        "Magellan")."""
        return [
            e
            for e in self.a_ents
            if len(normalize(e)) > 1
            and not self.in_context(e)
            and not self.in_query(e)
            and not self.in_gt(e)
            and not _mentions(e, self.context)
            and not _mentions(e, self.gt)
            and not self.acronym_of_known(e)
        ]

    def acronym_of_known(self, name: str) -> bool:
        """``name`` is the acronym of a name the query or the ground truth gives ("UN" of
        "the United Nations"): the answer shortens a known name, it invents nothing."""
        if not (1 < len(name.replace(".", "")) <= 6 and name.replace(".", "").isupper()):
            return False
        return any(is_initials(name, e) for e in [*self.q_ents, *self.g_ents])

    @cached_property
    def unsupported_numbers(self) -> list[Quantity]:
        """Salient answer quantities that match no quantity of the context or the
        ground truth (invented or altered numbers)."""
        if not self.a_quants:
            return []
        pool = QuantityPool([*self.c_quant_pool, *self.g_quants])
        return [q for q in self.a_quants if not pool.matches(q)]

    @cached_property
    def gt_is_value(self) -> bool:
        """The ground truth is little more than a number or date ("April 2019.")."""
        has_value = bool(self.g_quants or self.g_dates)
        words = content_support(self.gt, [self.query]).unsupported
        return has_value and words <= 3

    @cached_property
    def contradictions(self) -> int:
        """Answer facts that disagree with the ground truth's facts of the same kind."""
        n = 0
        if self.g_quants:
            n += sum(
                1
                for a in self.a_quants
                if _comparable(a, self.g_quants)
                and not any(quantities_match(a, g) for g in self.g_quants)
            )
        return n + len(self.wrong_dates)

    @cached_property
    def wrong_dates(self) -> list[DateMention]:
        """Answer dates that conflict with a ground-truth date and agree with none."""
        return [
            a
            for a in self.a_dates
            if not _date_agrees(a, self.g_dates)
            and any(_date_conflicts(a, x) for x in self.g_dates)
        ]


_Span = TypeVar("_Span", Quantity, DateMention)


def _joined(texts: Sequence[str], extract: Callable[[str], list[_Span]]) -> list[_Span]:
    """``extract("\n".join(texts))`` from each text's own extraction (which the fact
    extractors cache): a number or date never spans the newline between two chunks."""
    out: list[_Span] = []
    pos = 0
    for t in texts:
        out.extend(
            replace(x, start=x.start + pos, end=x.end + pos) if pos else x for x in extract(t)
        )
        pos += len(t) + 1
    return out


def _verbatim(name: str, text: str) -> bool:
    """``text`` holds ``name`` exactly, on word boundaries for Latin names: the cheap
    first test before :func:`concept_in_text` normalises the whole text."""
    at = text.find(name)
    while at >= 0:
        end = at + len(name)
        if (at == 0 or not (text[at - 1].isalnum() and text[at - 1].isascii())) and (
            end == len(text) or not (text[end].isalnum() and text[end].isascii())
        ):
            return True
        at = text.find(name, at + 1)
    return False


def _date_covers(source: DateMention, claim: DateMention) -> bool:
    """``source`` states every part of ``claim`` and agrees on it ("30 June 2021" covers
    "June 2021"; a bare "2021" does not cover "30 June 2021")."""
    parts = (
        (claim.year, source.year),
        (claim.month, source.month),
        (claim.day, source.day),
        (claim.quarter, source.quarter),
    )
    return any(c is not None for c, _ in parts) and all(c is None or c == s for c, s in parts)


def _date_agrees(a: DateMention, others: Sequence[DateMention]) -> bool:
    """One of ``others`` covers ``a`` or is covered by it (same date, stated more or
    less precisely)."""
    return any(_date_covers(x, a) or _date_covers(a, x) for x in others)


def _date_conflicts(a: DateMention, b: DateMention) -> bool:
    """Both state some part (year, month, day, quarter) and differ on it."""
    return any(
        x is not None and y is not None and x != y
        for x, y in ((a.year, b.year), (a.month, b.month), (a.day, b.day), (a.quarter, b.quarter))
    )


def _comparable(a: Quantity, others: Sequence[Quantity]) -> bool:
    return any(not a.unit or not o.unit or a.unit == o.unit for o in others)


_RE_CAP_WORD = lazy_compile(r"(?<![\w.])[A-Z][a-z]{2,}\b")


def _mid_sentence(word: str, text: str) -> bool:
    """``re.search(rf"[a-z,;] {re.escape(word)}\\b", text)`` for a word ending in a letter,
    without compiling a pattern per word: " word" after a lower-case letter, comma or
    semicolon, and no word character right after it."""
    needle = " " + word
    at = text.find(needle, 1)
    while at >= 0:
        end = at + len(needle)
        if text[at - 1] in _BEFORE_MID_WORD and not (end < len(text) and _is_word(text[end])):
            return True
        at = text.find(needle, at + 1)
    return False


_BEFORE_MID_WORD = frozenset("abcdefghijklmnopqrstuvwxyz,;")


def _is_word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


_COMMON_FIRST_WORDS = frozenset(
    """the this that these those there their they it its he she his her we our you your
    in on at by for from with after before during while when where which who what how
    according yes no not none both each all some any also however therefore although
    but and or so since because if as""".split()
)


def _mentions(name: str, text: str) -> bool:
    """``text`` names ``name``, possibly by its last word ("M. Cooper" ~ "Cooper")."""
    if concept_in_text(name, text):
        return True
    words = normalize(name).split()
    return len(words) > 1 and len(words[-1]) > 2 and f" {words[-1]} " in f" {normalize(text)} "


def _answer_entities_near(answer: str, pos: int, ents: Sequence[str]) -> list[str]:
    """Entities named in the answer sentence that holds position ``pos``."""
    for s in split_sentences(answer):
        if s.start <= pos < s.end:
            return [e for e in ents if e in s.text]
    return [e for e in ents if e in answer]


def _gen_e9_e12(g: _Gen, found: _Found) -> None:
    """E9 Abstention Failure and the abstention/coverage half of E12 Incomplete Answer.

    * E9 (a): the ground truth is unanswerable (``answerable`` false or an abstention
      such as "Unable to answer") and the answer does not abstain;
      (b) the context holds under a third of the ground truth's terms, yet the
      generator answered instead of abstaining.
    * E12 (a): the answer abstains although the context holds the ground truth;
      (b) the answer abstains on one part and answers another.
    """
    ex = g.ctx.trace.example
    if g.gt_unanswerable:
        if not g.abstain_full:
            found.add(
                E.E9,
                0.95,
                f"the question is unanswerable from the corpus (ground truth "
                f"'{_short(g.gt or 'unanswerable', 40)}'), yet the answer states "
                f"'{_short(g.answer, 60)}'",
            )
        return
    context_lacks = g.gt_ctx < 0.35 and (
        not ex.keypoints
        or sum(1 for k in ex.keypoints if concept_in_text(k, g.context, threshold=0.6))
        < 0.5 * len(ex.keypoints)
    )
    if context_lacks and not g.abstain_full and not g.abstain_partial:
        found.add(
            E.E9,
            0.5 + 0.3 * (0.35 - g.gt_ctx) / 0.35,
            f"the context holds only {_pct(g.gt_ctx)} of the ground truth's terms, yet the "
            f"generator answered instead of abstaining",
        )
    if g.abstain_full:
        if not context_lacks:
            found.add(
                E.E12,
                0.6 + 0.3 * min(1.0, g.gt_ctx),
                f"the answer abstains although the context holds {_pct(g.gt_ctx)} of the "
                f"ground truth's terms",
            )
        else:
            found.add(
                E.E12,
                0.35,
                "the answer abstains; the ground truth is only partly in the context",
            )
    elif g.abstain_partial and g.ans_gt_r > 0.1 and not context_lacks:
        found.add(
            E.E12,
            0.6,
            "the answer says part of the question is not in the context although the "
            "context holds it",
        )


_RE_PART_SPLIT = lazy_compile(r"[;；。\n]|,\s+(?:while|whereas|and|but)\s+|，|、|\band\b|以及|而")


def _gen_e12_parts(g: _Gen, found: _Found) -> None:
    """E12 Incomplete Answer (coverage half): (c) some keypoints of the ground truth
    are covered by the answer and others are missing; (d) without keypoints, some parts
    (clauses) of a multi-part ground truth are covered and others are not; (e) the
    answer's content is in the ground truth (high precision) but covers little of it.
    Weakened when the answer contradicts the ground truth's facts (then the problem is
    a wrong fact, not a missing one), and halved when it names people, organisations
    or numbers that neither the context nor the ground truth supports: an incomplete
    answer is *correct* as far as it goes, so invented facts point to E10/E13/E16."""
    if g.abstain_full or g.gt_unanswerable:
        return
    # an answer the evaluation failed for a wrong statement (another name in a slot,
    # a reversed pick) is wrong, not just short
    damp = 0.6 if g.contradictions or g.ctx.answer_rule in _WRONG_STATEMENT_RULES else 1.0
    if g.unsupported_names or g.unsupported_numbers:
        damp *= 0.5
    keypoints = [k for k in g.ctx.trace.example.keypoints if k.strip()]
    if keypoints:
        covered = [k for k in keypoints if _covers(g.answer, g.a_terms, k)]
        if 0 < len(covered) < len(keypoints):
            missing = [k for k in keypoints if k not in covered]
            share = len(missing) / len(keypoints)
            found.add(
                E.E12,
                (0.45 + 0.45 * share) * damp,
                f"the answer covers {len(covered)} of {len(keypoints)} keypoints; missing "
                f"'{_short(missing[0], 50)}'",
            )
            return
    else:
        parts = [p.strip() for p in _RE_PART_SPLIT.split(g.gt) if p and len(key_terms(p)) >= 2]
        if len(parts) >= 2:
            covered_parts = [p for p in parts if _covers(g.answer, g.a_terms, p)]
            if 0 < len(covered_parts) < len(parts):
                missing_parts = [p for p in parts if p not in covered_parts]
                share = len(missing_parts) / len(parts)
                found.add(
                    E.E12,
                    (0.4 + 0.45 * share) * damp,
                    f"the answer covers {len(covered_parts)} of {len(parts)} parts of the "
                    f"ground truth; missing '{_short(missing_parts[0], 50)}'",
                )
                return
    if g.a_new and g.ans_gt_p >= 0.6 and g.ans_gt_r < 0.5:
        found.add(
            E.E12,
            (0.35 + 0.4 * (0.5 - g.ans_gt_r) / 0.5) * damp,
            f"what the answer says is in the ground truth ({_pct(g.ans_gt_p)} of its terms) "
            f"but it covers only {_pct(g.ans_gt_r)} of the ground truth",
        )


#: answer-evaluation rules that fail an answer for stating something the ground truth
#: contradicts (``AnswerRule.wrong_statement``, see diagnosis/rules.py)
_WRONG_STATEMENT_RULES = WRONG_STATEMENT


def _covers(answer: str, answer_terms: frozenset[str], part: str) -> bool:
    terms = key_terms(part)
    if not terms:
        return False
    qs = extract_quantities(part)
    if qs:
        aq = extract_quantities(answer)
        if not all(any(quantities_match(q, a) for a in aq) for q in qs):
            return False
    ds = extract_dates(part)
    if ds:
        ad = extract_dates(answer)
        if not all(_date_agrees(d, ad) for d in ds):
            return False
    return _coverage(terms, answer_terms) >= 0.5


def _gen_e10_e11(g: _Gen, found: _Found) -> None:
    """E10 Fabricated Content and E11 Parametric Overreliance.

    * E10: (a) the answer names entities found neither in the context nor the query;
      (b) much of the answer's content (terms beyond the query) is absent from the
      context while the answer talks about the query's or the context's entities
      (specific claims about the case, not general knowledge).
    * E11: most of the answer's content is absent from the context and (a) it speaks in
      general terms ("typically", "通常"), or (b) it does not engage the query's or the
      context's entities at all, or (c) it computes a result from numbers that are not
      in the context.
    """
    if g.abstain_full or len(g.a_new) < 2:
        return
    unsupported_ents = g.unsupported_names
    if unsupported_ents:
        frac = len(unsupported_ents) / max(1, len(g.a_ents))
        found.add(
            E.E10,
            0.5 + 0.35 * frac,
            f"the answer names {', '.join(repr(e) for e in unsupported_ents[:3])}, found in "
            f"neither the context nor the ground truth",
        )
    sup = g.truth_support
    unsup = sup.unsupported_share
    if unsup < 0.5 or sup.total < 3:
        return
    engages = any(g.in_context(e) for e in g.a_ents) or any(
        concept_in_text(e, g.answer) for e in g.q_ents
    )
    general = _RE_GENERAL.search(g.answer)
    calc = _RE_CALCULATION.search(g.answer)
    c_pool = g.c_pool
    a_q_unsupported = [q for q in g.a_quants if not c_pool.matches(q)]
    if calc and a_q_unsupported:
        found.add(
            E.E11,
            0.6,
            f"the answer computes '{_short(calc.group(), 30)}' from numbers that are not in "
            f"the context",
        )
    if general or not engages:
        score = 0.35 + 0.4 * (unsup - 0.5) / 0.5
        reasons = []
        if general:
            score += 0.2
            reasons.append(f"speaks in general terms ('{general.group()}')")
        if not engages:
            score += 0.15 if not unsupported_ents else 0.0
            reasons.append("names none of the query's or context's entities")
        found.add(
            E.E11,
            score,
            f"{_pct(unsup)} of the answer's content is not in the context and it "
            + " and ".join(reasons),
        )
        if engages and not unsupported_ents:
            found.add(E.E10, 0.3, f"{_pct(unsup)} of the answer's content is not in the context")
    elif not unsupported_ents:
        found.add(
            E.E10,
            0.35 + 0.45 * (unsup - 0.5) / 0.5,
            f"{_pct(unsup)} of the answer's content about the case is not in the context "
            f"(e.g. '{', '.join(sup.examples[:4])}')",
        )


def _gen_e13(g: _Gen, found: _Found) -> None:
    """E13 Misinterpretation.

    (a) A number or date of the answer is in the context, but in a sentence about a
    different entity than the one the answer attaches it to (facts of two entities
    mixed up); (b) the answer names an entity from the context where the ground truth
    names another (wrong one of several entities), scaled by how much the answer is
    otherwise on topic; (c) the question asks for a date/number/person, the ground truth
    gives one, and the answer gives none (it answers a different kind of question).
    """
    if g.abstain_full or g.gt_unanswerable:
        return
    name_swaps = [sw for sw in g.swaps if sw.kind == "name"]
    if name_swaps:
        sw = name_swaps[0]
        found.add(
            E.E13,
            0.85,
            f"the answer exchanges {sw.first} and {sw.second}: each is given the other's "
            f"facts of the ground truth",
        )
        return
    if g.ctx.answer_rule == _LIST_SUBSTITUTION:
        # an item of its own in a list: from the context, the context misread (E13);
        # from nowhere, made up (E10)
        fill = g.a_new - g.g_terms
        from_context = len(fill & g.c_terms) * 2 >= len(fill) if fill else True
        found.add(
            E.E13,
            0.8 if from_context else 0.5,
            "the answer lists an item of its own in place of one of the ground truth's"
            + (" (an item the context names)" if from_context else ""),
        )
        if not from_context:
            found.add(E.E10, 0.8, "the item the answer lists in its place is in no context chunk")
        return
    if g.ctx.answer_rule == _CROSSED_TERMS:
        found.add(
            E.E13,
            0.85,
            "the answer deals the ground truth's two statements out crosswise (each "
            "statement's words put with the other's): the context misread",
        )
        return
    if g.substitutions:
        sub = g.substitutions[0]
        found.add(
            E.E13,
            0.85 if g.in_context(sub.instead) else 0.6,
            f"the answer restates the ground truth's statement about {sub.missing} but "
            f"attributes it to {sub.instead}"
            + (" (named in the context)" if g.in_context(sub.instead) else ""),
        )
        return
    known_ents = [e for e in dict.fromkeys([*g.q_ents, *g.a_ents]) if g.in_context(e)]
    facts: list[tuple[str, int, list[int]]] = []
    g_pool, c_pool = QuantityPool(g.g_quants), QuantityPool(g.c_quants)
    for a in g.a_quants:
        if g_pool.matches(a):
            continue
        where = [c.start for c in c_pool.matching(a) if c.unit == a.unit]
        if where:
            facts.append((_fmt_q(a), a.start, where))
    for d in g.a_dates:
        if d.month is None and d.day is None:
            continue  # a bare year is in too many sentences to pin on one entity
        if g.g_dates and _date_agrees(d, g.g_dates):
            continue
        where = [c.start for c in g.c_dates if _date_covers(c, d)]
        if where:
            facts.append((_fmt_d(d), d.start, where))
    for raw, pos, where in facts[:6]:
        own = _answer_entities_near(g.answer, pos, known_ents)
        if not own:
            continue
        at: dict[str, int] = {}
        for cpos in where[:8]:
            at.setdefault(g.sentence_at(cpos), cpos)
        others: list[tuple[str, str]] = []
        attributed = False
        for sentence, cpos in at.items():
            if any(_mentions(o, sentence) for o in own):
                attributed = True
                break
            sent_ents = [
                e
                for e in extract_entities(sentence)
                if len(normalize(e)) > 1 and not any(_names_overlap(e, o) for o in own)
            ]
            if sent_ents:
                others.append((sent_ents[0], sentence))
            elif g.from_own_document(cpos, own):
                # a sentence that names no one, in the answer's entity's own document
                # ("总资产为20,000万元" under its company's header): its value is the entity's
                attributed = True
                break
        if not attributed and not others:
            # the sentences name no one (the subject is in an earlier sentence or a
            # header): the value's chunk comes from a document other than the ground
            # truth's whose context chunks never name the answer's entity
            others = g.foreign_sources(where[:8], own)
        if not attributed and others:
            who, sentence = others[0]
            found.add(
                E.E13,
                0.85 * max(g.on_topic, 0.5),
                f"the answer gives {raw} for {own[0]}, but in the context {raw} belongs to "
                f"{who} ('{_short(sentence, 60)}')",
            )
            return

    if g.name_from_context is not None:
        wrong_name, right_name = g.name_from_context
        # the question asks for a name and the answer, restating the question, gives
        # another one of the context: it answers the question, with the wrong item
        asks = g.answers_name_question
        found.add(
            E.E13,
            (0.85 if asks else 0.75) * max(g.on_topic, 0.8 if asks else 0.0),
            f"the answer names {wrong_name} from the context where the ground truth names "
            f"{right_name}",
        )

    wants: list[tuple[str, bool, bool]] = []
    if _RE_TEMPORAL_Q.search(g.query) and not _RE_COMPARE_TIME_Q.search(g.query):
        wants.append(("a date", bool(g.g_dates), bool(extract_dates(g.answer))))
    if _RE_NUMBER_Q.search(g.query):
        wants.append(("a number", bool(g.g_quants), bool(extract_quantities(g.answer))))
    if _RE_PERSON_Q.search(g.query):
        wants.append(("a person or organisation", bool(g.g_ents), bool(g.a_ents)))
    for what, gt_has, answer_has in wants:
        if gt_has and not answer_has:
            found.add(
                E.E13,
                0.5,
                f"the question asks for {what} and the ground truth gives one, but the "
                f"answer gives none (it answers a different question)",
            )
            break


def _gen_e14(g: _Gen, found: _Found) -> None:
    """E14 Contextual Misalignment: the answer is well supported by the context (most of
    its content is there) but shares little with the ground truth (low precision and
    recall against it) — true, but about another aspect. Weakened when the answer
    states a number or date contradicting the ground truth (then E15/E16 explain it)."""
    if g.abstain_full or g.gt_unanswerable or len(g.a_new) < 2:
        return
    if g.ans_ctx < 0.6 or g.ans_gt_p >= 0.45 or g.ans_gt_r >= 0.5:
        return
    score = 0.3 + 0.6 * g.ans_ctx * (1 - g.ans_gt_p) * (1 - g.ans_gt_r)
    note = (
        f"{_pct(g.ans_ctx)} of the answer is in the context, but it shares only "
        f"{_pct(g.ans_gt_p)} of its content with the ground truth (about another aspect)"
    )
    if g.contradictions and g.gt_is_value:
        # the truth is just a value and the answer gives another: a date/number error
        score *= 0.4
        note += "; it also states a number or date that contradicts the ground truth"
    elif g.name_from_context is not None and g.answers_name_question:
        # asked for a name, it gives another name of the context: it does address the
        # question, with the wrong item (E13 weighs that)
        score *= 0.5
        note += f"; it names {g.name_from_context[0]} where a name was asked"
    elif g.ctx.answer_rule in _PICKS_AN_OPTION:
        # it picks between the question's own options or orders its events: the aspect
        # asked, answered the wrong way (its words are its reasoning, not another aspect)
        score *= 0.5
        note += "; it answers the question's comparison or order, the wrong way"
    elif g.ans_gt_chunks >= 0.6 and g.restates_query:
        # what it says is in the very passage that holds the answer: the right passage
        # misread (another name or item of it given), not another passage's aspect
        found.add(
            E.E13,
            score,
            f"{_pct(g.ans_gt_chunks)} of the answer is in the ground-truth chunk it saw, "
            f"but it shares only {_pct(g.ans_gt_p)} of its content with the ground truth "
            "(the passage misread)",
        )
        score *= 0.5
    found.add(E.E14, score, note)


#: answer-evaluation rules of an answer that takes up the question's own comparison,
#: order or yes/no (``AnswerRule.picks_option``)
_PICKS_AN_OPTION = PICKS_AN_OPTION


def _gen_e15(g: _Gen, found: _Found) -> None:
    """E15 Chronological Inconsistency: (a) a date of the answer disagrees with every
    date of the ground truth (strongest for a temporal question: when/which year/
    earlier/何时/哪一年); (b) a date of the answer is in neither the context nor the
    ground truth; (c) for "which came first" questions, the answer picks a different
    entity than the ground truth."""
    if g.abstain_full or g.gt_unanswerable:
        return
    temporal = bool(_RE_TEMPORAL_Q.search(g.query))
    topic = g.on_topic
    date_swaps = [sw for sw in g.swaps if sw.kind == "date"]
    if date_swaps:
        sw = date_swaps[0]
        # on a question about when or in what order, the reversed chronology is the
        # failure; the names exchanged with it (E13) are how it shows
        found.add(
            E.E15,
            0.9 if temporal or asks_order(g.query) else 0.85,
            f"the answer has the ground truth's dates {sw.first} and {sw.second} but "
            f"attached to each other's events (chronology reversed)",
        )
    # a wrong date is a chronology error (E15) when it puts its event on the other side
    # of another ground-truth event, or is the date of another event of the context (the
    # timelines confused); a wrong value that keeps the order of events and is in no
    # source (a lone date, "1672" for "1762") misrepresents numerical data: E16
    # (seed 000 §4.4)
    reorders = [
        a
        for a in g.wrong_dates
        if _reorders(a, g.g_dates, g.a_dates) or any(_date_covers(c, a) for c in g.c_dates)
    ]
    if g.g_dates and g.a_dates:
        wrong = g.wrong_dates
        if wrong and not any(_date_agrees(a, g.g_dates) for a in g.a_dates):
            score = (0.8 if temporal else 0.6) * max(topic, 0.6 if temporal else 0.3)
            _add_date_value(
                found,
                score,
                bool(reorders),
                f"the answer dates it {_fmt_d(wrong[0])}; the ground truth says "
                f"{_fmt_d(g.g_dates[0])}",
            )
        elif wrong:
            _add_date_value(
                found,
                0.5 * max(topic, 0.5),
                bool(reorders),
                f"answer date {_fmt_d(wrong[0])} matches no date of the ground truth",
            )
    if g.a_dates:
        alien = [
            a
            for a in g.a_dates
            if not any(_date_covers(x, a) for x in g.c_dates) and not _date_agrees(a, g.g_dates)
        ]
        if alien:
            _add_date_value(
                found,
                0.55,
                any(a in reorders for a in alien) or not g.g_dates,
                f"answer date {_fmt_d(alien[0])} appears in neither the context nor the "
                f"ground truth",
            )
    if _RE_COMPARE_TIME_Q.search(g.query) and len(g.q_ents) >= 2:
        first_gt = _first_named(g.gt, g.q_ents)
        first_ans = _first_named(g.answer, g.q_ents)
        if first_gt and first_ans and not _names_overlap(first_gt, first_ans):
            found.add(
                E.E15,
                0.75,
                f"asked which came first, the answer puts {first_ans} first; the ground "
                f"truth puts {first_gt}",
            )


def _add_date_value(found: _Found, score: float, chronology: bool, sentence: str) -> None:
    """Evidence of a wrong date: E15 when it changes the order of events (or nothing
    says it does not), else E16 with E15 a weaker second."""
    if chronology:
        found.add(E.E15, score, sentence)
        return
    found.add(E.E16, score, f"{sentence} (a wrong value; the order of events is kept)")
    found.add(E.E15, score * 0.5, sentence)


def _shared_fields(a: DateMention, b: DateMention) -> int:
    pairs = ((a.year, b.year), (a.month, b.month), (a.day, b.day), (a.quarter, b.quarter))
    return sum(1 for x, y in pairs if x is not None and x == y)


def _reorders(a: DateMention, gt: Sequence[DateMention], answer: Sequence[DateMention]) -> bool:
    """The answer date ``a``, put in place of the ground-truth date it stands for (one
    the answer does not state, sharing the most fields with ``a``), falls on the other
    side of another ground-truth date."""
    open_dates = [g for g in gt if _date_conflicts(a, g) and not _date_agrees(g, answer)]
    if not open_dates:
        return False
    replaced = max(open_dates, key=lambda g: _shared_fields(a, g))
    for other in gt:
        if other is replaced or _date_agrees(other, [replaced]):
            continue
        before, after = date_order(replaced, other), date_order(a, other)
        if before and after is not None and before != after:
            return True
    return False


def _first_named(text: str, names: Sequence[str]) -> str | None:
    low = text.lower()
    best: tuple[int, str] | None = None
    for n in names:
        i = low.find(n.lower())
        if i >= 0 and (best is None or i < best[0]):
            best = (i, n)
    return None if best is None else best[1]


def _arithmetic(target: Quantity, pool: Sequence[Quantity]) -> str | None:
    """A short description when ``target`` equals a sum, difference or percentage ratio
    of two numbers of ``pool``, else ``None``.

    Operands share one unit; a sum or difference also has the target's unit (or the
    target has none); a ratio gives a percentage. Equality is up to the rounding of the
    target's last stated digit, so coincidences are rare.
    """
    values: list[Quantity] = []
    seen: set[tuple[float, str]] = set()
    for q in pool:
        key = (q.value, q.unit)
        if key in seen or q.unit == "%":
            continue
        seen.add(key)
        values.append(q)
        if len(values) >= 40:
            break
    t = target.value
    tol = max(_half_unit(target), abs(t) * 1e-9)
    for i, a in enumerate(values):
        for b in values[i + 1 :]:
            if a.unit != b.unit:
                continue
            x, y = a.value, b.value
            if target.unit in ("", a.unit):
                if abs((x + y) - t) < tol:
                    return f"{_fmt_q(a)} + {_fmt_q(b)}"
                if abs(abs(x - y) - t) < tol:
                    return f"{_fmt_q(a)} - {_fmt_q(b)}"
            if target.unit == "%" and x and y:
                for num, den in ((x, y), (y, x)):
                    if abs(num / den * 100 - t) < tol or abs((num - den) / den * 100 - t) < tol:
                        return f"a ratio of {_fmt_q(a)} and {_fmt_q(b)}"
    return None


_RE_LAST_NUMBER = lazy_compile(r"\d[\d,]*(?:\.(\d+))?")


def _half_unit(q: Quantity) -> float:
    """Half the place value of the last stated digit of ``q`` ("4.5 million" -> 50,000)."""
    m = _RE_LAST_NUMBER.search(q.raw)
    if m is None:
        return abs(q.value) * 0.005
    mantissa = float(m.group().replace(",", ""))
    if mantissa == 0:
        return 0.5
    decimals = len(m.group(1) or "")
    return 0.5 * 10.0**-decimals * abs(q.value / mantissa)


def _gen_e16(g: _Gen, found: _Found) -> None:
    """E16 Numerical Error: (a) a number of the answer differs from the ground truth's
    number of the same unit (stronger when it is also absent from the context, strongest
    when it is a sum/difference/ratio of context numbers, i.e. a wrong calculation);
    (b) without a ground-truth number, a number of the answer is absent from the
    context. Scaled by how much the answer is on topic (so an answer about another
    aspect is not blamed on its numbers)."""
    if g.abstain_full or g.gt_unanswerable or not g.a_quants:
        return
    number_swaps = [sw for sw in g.swaps if sw.kind == "number"]
    if number_swaps:
        sw = number_swaps[0]
        # every figure is right; they are read against the wrong items -- a misreading
        # of the context first, a numerical error second
        note = (
            f"the answer has the ground truth's figures {sw.first} and {sw.second} but "
            f"attached to each other's items"
        )
        found.add(E.E13, 0.7, note)
        found.add(E.E16, 0.55, note)
    topic = g.on_topic
    c_q = g.c_quants
    pool = [*c_q, *g.g_quants]
    if g.g_quants:
        wrong = g.wrong_numbers
        if not wrong:
            return
        if any(any(quantities_match(a, x) for x in g.g_quants) for a in g.a_quants) and len(
            wrong
        ) < len(g.a_quants):
            weight = 0.75  # some numbers right, some wrong
        else:
            weight = 1.0
        # the strongest reading among the wrong numbers (the first may be a context
        # figure quoted on the way to the wrong one)
        best = max(
            (_wrong_number(a, g.g_quants, c_q, pool, topic) for a in wrong[:6]),
            key=lambda r: r[0],
        )
        found.add(E.E16, best[0] * weight, best[1])
        return
    c_pool = QuantityPool(c_q)
    # a small count in words ("these two goals", "three reasons") counts the answer's own
    # points; it states no figure of the documents
    alien = [a for a in g.a_quants if not c_pool.matches(a) and not _own_count(a)]
    if alien:
        a = alien[0]
        calc = _arithmetic(a, c_q)
        found.add(
            E.E16,
            (0.7 if calc else 0.6) * max(topic, 0.5),
            f"answer number {_fmt_q(a)} is not found in the context"
            + (f"; it equals {calc}" if calc else ""),
        )


def _own_count(q: Quantity) -> bool:
    """A unitless count of at most ten written in words ("two", "three", "三")."""
    return not q.unit and q.value <= 10 and not any(ch.isdigit() for ch in q.raw)


def _wrong_number(
    a: Quantity,
    gt: Sequence[Quantity],
    context: Sequence[Quantity],
    pool: Sequence[Quantity],
    topic: float,
) -> tuple[float, str]:
    """Score and sentence for an answer number that matches no ground-truth number."""
    ref = next((x for x in gt if not a.unit or not x.unit or a.unit == x.unit), None)
    ref_s = f"; the ground truth says {_fmt_q(ref)}" if ref else ""
    # the ground truth's figure times a power of ten is a slip of magnitude, even when
    # the context happens to hold that value elsewhere
    slip = next((x for x in gt if _magnitude_slip(a, x)), None)
    if slip is not None:
        return (
            0.85 * max(topic, 0.6),
            f"answer number {_fmt_q(a)} is the ground truth's {_fmt_q(slip)} off by a "
            f"power of ten (a slip of magnitude)",
        )
    if any(quantities_match(a, c) for c in context):
        return (
            0.65 * topic,
            f"answer number {_fmt_q(a)} is in the context but is not the asked quantity{ref_s}",
        )
    calc = _arithmetic(a, pool)
    if calc:
        return (
            0.85 * max(topic, 0.6),
            f"answer number {_fmt_q(a)} equals {calc} — a wrong calculation{ref_s}",
        )
    return (
        0.8 * max(topic, 0.4),
        f"answer number {_fmt_q(a)} is not found in the context{ref_s}",
    )


def _magnitude_slip(a: Quantity, g: Quantity) -> bool:
    """``a`` is ``g`` times a power of ten (10 to 10,000 either way), same unit."""
    if a.unit != g.unit or not a.value or not g.value or (a.value < 0) != (g.value < 0):
        return False
    ratio = a.value / g.value
    return any(abs(ratio - f) < f * 1e-9 or abs(ratio - 1 / f) < 1e-9 / f for f in _SLIPS)


_SLIPS = (10.0, 100.0, 1000.0, 10000.0)


def _gen_residual(g: _Gen, found: _Found) -> None:
    """When no generation test fired: a weak lean (score 0.3, so the votes stay split).
    An answer whose content agrees with the ground truth (precision >= 0.5) was judged
    wrong for what it leaves out (E12); otherwise it rests on the context but reads it
    differently from the ground truth (E13)."""
    if g.ans_gt_p >= 0.5:
        found.add(
            E.E12,
            0.3,
            f"no specific test fired; the answer agrees with the ground truth "
            f"({_pct(g.ans_gt_p)} of its content) but was judged wrong, so it likely "
            f"misses a detail",
        )
    else:
        found.add(
            E.E13,
            0.3,
            f"no specific test fired; the answer rests on the context "
            f"({_pct(g.ans_ctx)} of its content) but differs from the ground truth",
        )


#: what the answer evaluation found, as generation-type evidence (issue #9): the rule
#: that failed the answer names the kind of mistake (seed 000 §4.4 definitions;
#: ``AnswerRule.types`` and ``.hint``, see diagnosis/rules.py)
_ANSWER_RULES: Mapping[str, AnswerRule] = MappingProxyType({r.name: r for r in RULES})
_VALUE_CONFLICT = answer_rule("value_conflict").name
_LIST_SUBSTITUTION = answer_rule("list_substitution").name
_CROSSED_TERMS = answer_rule("crossed_terms").name


def _gen_answer_rule(g: _Gen, ctx: CaseContext, found: _Found) -> None:
    """Evidence from the answer evaluation's deciding rule (when the rules judged it and
    the stage's context held the evidence, i.e. the stage is generation)."""
    rule = _ANSWER_RULES.get(ctx.answer_rule or "")
    if rule is not None and g.answer.strip():
        weights = active_weights()
        types = (
            rule.types
            if weights is shipped_weights()
            else tuple((ErrorType(t), s) for t, s in weights.type_votes.get(rule.name, ()))
        )
        for error_type, score in types:
            found.add(error_type, score, f"answer evaluation: {rule.hint}")
    if ctx.answer_rule == _VALUE_CONFLICT and g.g_quants and not g.abstain_full:
        # the answer failed on a number: one of its numbers, found in no source, stands
        # where the ground truth's is (a context figure of another aspect or entity is
        # for E13/E14 to weigh; dates are weighed by _gen_e15: value or chronology)
        wrong = [a for a in g.wrong_numbers if not g.c_pool.matches(a)]
        if wrong:
            found.add(
                E.E16,
                0.55,
                f"answer evaluation: the answer states {_fmt_q(wrong[0])} where the ground "
                f"truth has another amount",
            )


def _generation_tests(ctx: CaseContext, found: _Found) -> None:
    g = _Gen(ctx)
    _gen_answer_rule(g, ctx, found)
    _gen_e9_e12(g, found)
    _gen_e12_parts(g, found)
    _gen_e10_e11(g, found)
    _gen_e13(g, found)
    _gen_e14(g, found)
    _gen_e15(g, found)
    _gen_e16(g, found)
    if not found.scores and g.answer.strip():
        _gen_residual(g, found)


_STAGE_TESTS: Mapping[Stage, Callable[[CaseContext, _Found], None]] = {
    Stage.CHUNKING: _chunking_tests,
    Stage.RETRIEVAL: _retrieval_tests,
    Stage.RERANKING: _rerank_tests,
    Stage.GENERATION: _generation_tests,
}


# =========================================================================== public API


def rule_type_evidence(ctx: CaseContext) -> list[TypeEvidence]:
    """The error types of ``ctx.stage`` whose tests fired, strongest first.

    One entry per type: when several tests of a type fire, their scores combine as a
    noisy-or (``1 - Π(1 - s)``) and their sentences are joined with ``"; "``. Only the
    stage's own context is read (seed 000, App. B.3). Scores lie in ``(0, 1]``.
    """
    found = _Found()
    _STAGE_TESTS[ctx.stage](ctx, found)
    wanted = set(types_of_stage(ctx.stage))
    return [e for e in found.evidence() if e.error_type in wanted]


def distribute_votes(weights: Sequence[tuple[ErrorType, float]], k: int) -> list[ErrorType]:
    """``k`` votes split over ``weights`` by the largest-remainder method.

    Deterministic: remainders tie-break by weight, then by the order given. The
    heaviest type (first on ties) always gets strictly more votes than any other type
    when ``k >= 2`` and it has a strictly larger weight, so the mode is the top type.
    Votes come grouped, most-voted type first.
    """
    if k < 1:
        raise ValueError("k must be >= 1")
    items = [(t, max(0.0, w)) for t, w in weights if w > 0]
    if not items:
        raise ValueError("at least one positive weight is needed")
    total = sum(w for _, w in items)
    quotas = [w / total * k for _, w in items]
    counts = [int(q) for q in quotas]
    left = k - sum(counts)
    order = sorted(range(len(items)), key=lambda i: (-(quotas[i] - counts[i]), -items[i][1], i))
    for i in order[:left]:
        counts[i] += 1
    top = min(range(len(items)), key=lambda i: (-items[i][1], i))
    top_w = items[top][1]
    for i in range(len(items)):
        if i == top:
            continue
        # a strictly lighter type never ties or beats the top type
        while counts[i] >= counts[top] and counts[i] > 0 and (items[i][1] < top_w or k == 1):
            counts[i] -= 1
            counts[top] += 1
    ranked = sorted(range(len(items)), key=lambda i: (-counts[i], -items[i][1], i))
    votes: list[ErrorType] = []
    for i in ranked:
        votes.extend([items[i][0]] * counts[i])
    return votes


def rule_type_votes(ctx: CaseContext, k: int) -> tuple[list[Vote], list[str]]:
    """``k`` deterministic votes for ``ctx``'s error type, with evidence sentences.

    The fired tests (:func:`rule_type_evidence`) share the votes in proportion to their
    scores; the stage's other types share a residual weight of
    ``RESIDUAL * (1 - top score)`` by :data:`STAGE_PRIORS`, so a weak test never gives a
    unanimous vote. When no test fires, all votes follow the weak stage prior and the
    evidence says so: the mode frequency is then low by construction.
    """
    if k < 1:
        raise ValueError("k must be >= 1")
    priors = STAGE_PRIORS[ctx.stage]
    fired = rule_type_evidence(ctx)
    if not fired:
        weights = sorted(priors.items(), key=lambda kv: -kv[1])
        prior_votes: list[Vote] = [*distribute_votes(weights, k)]
        prior_txt = ", ".join(f"{t} {p:.2f}" for t, p in weights)
        return prior_votes, [f"no specific {ctx.stage.value} test fired; weak prior ({prior_txt})"]
    top = fired[0].score
    weights_map: dict[ErrorType, float] = {e.error_type: e.score for e in fired}
    rest = [t for t in priors if t not in weights_map]
    residual = RESIDUAL * (1.0 - top)
    if rest and residual > 0:
        mass = sum(priors[t] for t in rest)
        for t in rest:
            weights_map[t] = residual * priors[t] / mass
    ordered = [(e.error_type, e.score) for e in fired] + [
        (t, weights_map[t]) for t in rest if t in weights_map
    ]
    votes: list[Vote] = [*distribute_votes(ordered, k)]
    evidence = [f"{e.error_type} {e.error_type.title} ({e.score:.2f}): {e.evidence}" for e in fired]
    if rest and residual > 0 and any(v in rest for v in votes):
        evidence.append(
            f"weak prior for untested types ({', '.join(str(t) for t in rest)}): residual "
            f"{residual:.2f}"
        )
    return votes, evidence
