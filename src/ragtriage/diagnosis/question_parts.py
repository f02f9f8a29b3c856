"""Multi-entity and multi-part questions: what the question asks about, and where each part's
evidence went (issue #9, item 2).

A question about two companies ("Compare the acquisitions of Green Fields Ltd. and Harmony
Health Co.", "绿野农业和捷翼航空分别…"), two defendants or two events has *parts*. A real
pipeline often retrieves five chunks of one company and none of the other; the model then
answers for one and declines the other. That failure belongs to retrieval (E4: one entity's
evidence never retrieved), not to the generator — and an answer evaluation that ignores the
declined part calls it ``possible_correct``.

| what | rule |
|---|---|
| parts (EN) | named entities of the question joined only by a coordinator (", ", "and", "or", "vs", "&", "as well as"), or ≥ 2 wh-clauses joined by "and" ("When was it founded and who runs it?") |
| parts (ZH) | query concepts joined only by 和/与/及/以及/、/跟/同/或; wh-clauses joined by "，" with a second question word |
| a part is mentioned in a text | the part's name, or its core without legal suffixes (Ltd., Co., Inc., 有限公司, 集团 …), or for EN names of ≥ 3 words the first two words |
| a part's evidence reached the generator | one of its GT chunks (those that name it, or whose document names only it) is in the context |

Pure functions; no LLM.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from ragtriage._regex import lazy_compile
from ragtriage.diagnosis.facts import extract_concepts, extract_entities, stem
from ragtriage.text import has_cjk, normalize

__all__ = [
    "PartFlow",
    "QuestionPart",
    "mentions_part",
    "part_flows",
    "question_parts",
]


@dataclass(frozen=True, slots=True)
class QuestionPart:
    """One thing a multi-part question asks about."""

    text: str
    kind: Literal["entity", "clause"]


def _en_coord(joiners: str) -> re.Pattern[str]:
    return re.compile(
        r"^\s*(?:,\s*)?(?:(?:in|at|for|during|of|on)\s+(?:the\s+)?(?:[\w-]+\s+){0,3}?[\w-]+,?\s+)?"
        rf"(?:(?:{joiners})\s+)?(?:(?:that\s+of|those\s+of|the)\s+)?"
        r"(?:,\s*)?$",
        re.IGNORECASE,
    )


_EN_JOINERS = r"and|or|vs\.?|versus|&|as\s+well\s+as|compared\s+(?:to|with)"
_EN_COORD = _en_coord(_EN_JOINERS)
#: in a comparison ("Compare the profit of A with that of B") "with", "to" and
#: "against" join the things compared
_EN_COMPARE = lazy_compile(r"\bcompar(?:e|ed|ing|ison)\b", re.IGNORECASE)
_EN_COORD_COMPARE = _en_coord(_EN_JOINERS + r"|with|to|against")
#: a parenthesis after a name ("Stellar (2017) and …") does not break the run
_PAREN = lazy_compile(r"^\s*[(（][^()（）]{0,24}[)）]")
_ZH_COORD = lazy_compile(r"^\s*(?:和|与|及|以及|、|跟|同|或|或者|还是)\s*$")
_EN_WH = lazy_compile(
    r"\b(?:what|when|where|who|whom|whose|which|why|how(?:\s+(?:many|much|long|often))?)\b",
    re.IGNORECASE,
)
#: a yes/no question opens with its auxiliary ("Is there a height limit …")
_EN_POLAR = lazy_compile(
    r"(?:is|are|was|were|do|does|did|has|have|had|can|could|will|would|should)\s+"
    r"(?:there|it|they|he|she|the|a|an|any|this|that)\b",
    re.IGNORECASE,
)
_EN_CLAUSE_JOIN = lazy_compile(
    r",?\s+and\s+(?:(?:in|on|at|for|by|from|to|of|with|since|until)\s+)?"
    r"(?=(?:what|when|where|who|whom|whose|which|why|how)\b)",
    re.IGNORECASE,
)
_ZH_WH = lazy_compile(r"什么|何时|哪|谁|多少|几|为何|为什么|如何|怎样|是否")
_ZH_CLAUSE_JOIN = lazy_compile(r"[，,；;]\s*(?:以及|并且|并|还有|同时|另外)?")
_LEGAL_SUFFIX = lazy_compile(
    r"[\s,]+(?:ltd\.?|limited|co\.?|company|inc\.?|incorporated|corp\.?|corporation|group|"
    r"holdings?|llc|plc|gmbh|s\.?a\.?|ag|n\.?v\.?|l\.?p\.?)$",
    re.IGNORECASE,
)
_ZH_SUFFIX = lazy_compile(r"(?:股份有限公司|有限责任公司|有限公司|集团|公司|股份)$")
_MIN_CORE = 3


def _spans(query: str, items: Sequence[str]) -> list[tuple[int, int, str]]:
    out: list[tuple[int, int, str]] = []
    pos = 0
    for item in items:
        at = query.find(item, pos)
        if at < 0:
            at = query.find(item)
            if at < 0:
                continue
        out.append((at, at + len(item), item))
        pos = at + len(item)
    out.sort()
    return out


def _coordinated(query: str, items: Sequence[str], coord: re.Pattern[str]) -> list[str]:
    """The longest run of ``items`` joined in ``query`` only by coordinators."""
    spans = _spans(query, items)
    best: list[str] = []
    run: list[str] = []
    prev_end = -1
    for start, end, item in spans:
        gap = _PAREN.sub("", query[prev_end:start]) if run else ""
        if run and start >= prev_end and coord.match(gap):
            run.append(item)
        else:
            run = [item]
        prev_end = end
        if len(run) > len(best):
            best = list(run)
    return best if len(best) >= 2 else []


def _clauses(query: str) -> list[str]:
    if has_cjk(query):
        parts = [p.strip() for p in _ZH_CLAUSE_JOIN.split(query) if p.strip()]
        asks = [p for p in parts if _ZH_WH.search(p)]
        return asks if len(asks) >= 2 else []
    parts = [p.strip(" ?,.") for p in _EN_CLAUSE_JOIN.split(query) if p.strip(" ?,.")]
    asks = [p for p in parts if _EN_WH.search(p) or _EN_POLAR.match(p)]
    return asks if len(asks) >= 2 else []


@lru_cache(maxsize=2048)
def question_parts(query: str) -> tuple[QuestionPart, ...]:
    """The parts of a multi-part question (see the module table); ``()`` for a question
    about one thing."""
    names = extract_entities(query)
    if has_cjk(query):
        names = list(dict.fromkeys([*names, *extract_concepts(query)]))
        entities = _coordinated(query, names, _ZH_COORD)
    else:
        coord = _EN_COORD_COMPARE if _EN_COMPARE.search(query) else _EN_COORD
        entities = _coordinated(query, names, coord)
    if entities:
        return tuple(QuestionPart(e, "entity") for e in entities)
    return tuple(QuestionPart(c, "clause") for c in _clauses(query))


@lru_cache(maxsize=4096)
def _cores(name: str) -> tuple[str, ...]:
    """Ways a name is written in a text: in full, without its legal suffix, and for long
    English names the first two words ("Green Fields Agriculture Ltd." → "green fields")."""
    out = [normalize(name)]
    if has_cjk(name):
        core = _ZH_SUFFIX.sub("", name.strip())
        if len(core) >= 2:
            out.append(normalize(core))
    else:
        core = _LEGAL_SUFFIX.sub("", name.strip()).strip(" ,")
        out.append(normalize(core))
        words = core.split()
        if len(words) >= 3:
            out.append(normalize(" ".join(words[:2])))
    return tuple(dict.fromkeys(c for c in out if len(c) >= _MIN_CORE or has_cjk(c)))


def _in(core: str, normalized_text: str) -> bool:
    """``core`` in the text, on word boundaries unless it is CJK (``f" {core} " in
    f" {text} "``, without copying the text)."""
    if has_cjk(core):
        return core in normalized_text
    t, n = normalized_text, len(core)
    at = t.find(core)
    while at >= 0:
        if (at == 0 or t[at - 1] == " ") and (at + n == len(t) or t[at + n] == " "):
            return True
        at = t.find(core, at + 1)
    return False


@lru_cache(maxsize=4096)
def mentions_part(part: QuestionPart, text: str) -> bool:
    """Whether ``text`` mentions ``part``: an entity by name (or name core); a clause by
    most of its content words. Cached: stage, types and the answer evaluation ask it of
    the same part and text."""
    nt = normalize(text)
    if part.kind == "entity":
        return any(_in(c, nt) for c in _cores(part.text))
    # stems: "acquired" states the "acquire" of the question
    need = _stems(part.text)
    if not need:
        return False
    return len(need & _stems(text)) / len(need) >= 0.6


@lru_cache(maxsize=1024)
def _stems(text: str) -> frozenset[str]:
    """Stems of the content words of ``text`` (each text once, for every part asked of it)."""
    from ragtriage.text import content_tokens

    return frozenset(stem(t) for t in content_tokens(text))


@dataclass(frozen=True, slots=True)
class PartFlow:
    """Where one entity's evidence went: GT chunks that mention it, and which of them were
    retrieved / reached the generator; ``context_mentions`` counts context chunks that
    mention it at all."""

    part: QuestionPart
    gt_chunks: tuple[str, ...]
    retrieved: tuple[str, ...]
    in_context: tuple[str, ...]
    context_mentions: int

    @property
    def starved(self) -> bool:
        """The part had evidence in the GT chunks and none of it reached the generator
        (other context chunks may still name the part: its answer was not among them)."""
        return bool(self.gt_chunks) and not self.in_context


def part_flows(
    parts: Sequence[QuestionPart],
    gt_chunks: Sequence[tuple[str, str, str]],
    context: Sequence[tuple[str, str]],
    retrieved_ids: frozenset[str],
) -> list[PartFlow]:
    """Per-entity evidence flow. ``gt_chunks`` are ``(chunk_id, doc_id, text)`` of the GT
    chunks; ``context`` ``(chunk_id, text)`` of the generator's context. A GT chunk counts
    for a part when it mentions the part or when its document does (passed as the chunk's
    doc text through the caller); parts mentioned by no GT chunk get an empty flow."""
    out: list[PartFlow] = []
    ctx_ids = {cid for cid, _ in context}
    for part in parts:
        if part.kind != "entity":
            continue
        gts = tuple(cid for cid, _doc, text in gt_chunks if mentions_part(part, text))
        out.append(
            PartFlow(
                part=part,
                gt_chunks=gts,
                retrieved=tuple(c for c in gts if c in retrieved_ids),
                in_context=tuple(c for c in gts if c in ctx_ids),
                context_mentions=sum(1 for _cid, text in context if mentions_part(part, text)),
            )
        )
    return out
