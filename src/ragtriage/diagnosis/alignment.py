"""Which fact goes with which event: order-aware checks of an answer's facts.

Bag-of-facts comparison (every number, date and name of the ground truth is somewhere
in the answer) cannot see a swap: "the recall came on 9 September, the plant opened on
27 October" and the same sentence with the two dates exchanged hold the same facts.
This module anchors each fact to the content words of its own clause (numbers, dates
and names blanked out) and compares the anchoring between ground truth and answer:

* :func:`fact_swaps` — two facts of one kind (two dates, two amounts in one unit, two
  names) that both occur in the answer, each sitting among the other's ground-truth
  clause words: the facts were exchanged between their events.
* :func:`substituted_names` — a ground-truth name missing from the answer, while the
  answer clause that restates that ground-truth clause names someone or something the
  ground truth and the question never mention.

A faithful paraphrase keeps each fact with its event, so it passes both checks. Facts
sharing one clause have the same anchors; there only an exact reversal counts ("A
succeeded B" -> "B succeeded A", "from May to June" -> "from June to May"), never a
symmetric "A and B" -> "B and A" or a rewording ("B was succeeded by A").
Works for English (stemmed-free content words) and Chinese (character bigrams via
:func:`ragtriage.text.content_tokens`). Pure functions.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from ragtriage.diagnosis.facts import (
    dates_match,
    extract_dates,
    extract_entities,
    extract_quantities,
    quantities_match,
)
from ragtriage.text import content_tokens, normalize

__all__ = ["FactSwap", "NameSubstitution", "fact_swaps", "substituted_names"]

#: clause boundaries: sentence ends, semicolons, colons, commas, and clause conjunctions
_CLAUSE_BOUNDARY = re.compile(
    r"[.;!?。；！？\n]|[,:，：、](?!\d)|\b(?:and|while|whereas|but|then|after|before|until)\b"
    r"|而|并且|随后|其后|之后|然后|但",
    re.IGNORECASE,
)
#: anchors must share at least this many words to count as "the same event"
_MIN_ANCHOR = 1


@dataclass(frozen=True, slots=True)
class FactSwap:
    """Two ground-truth facts of one kind exchanged between their clauses."""

    kind: str  # "date", "number" or "name"
    first: str
    second: str


@dataclass(frozen=True, slots=True)
class NameSubstitution:
    """A ground-truth name replaced, in the clause that restates it, by another name."""

    missing: str
    instead: str


@dataclass(frozen=True, slots=True)
class _Fact:
    kind: str
    key: object
    raw: str
    start: int
    end: int


def _clauses(text: str) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    prev = 0
    for m in _CLAUSE_BOUNDARY.finditer(text):
        if m.start() > prev:
            out.append((prev, m.start()))
        prev = m.end()
    if prev < len(text):
        out.append((prev, len(text)))
    return out or [(0, len(text))]


@lru_cache(maxsize=4096)
def _fact_kinds(text: str) -> tuple[str, ...]:
    return tuple(f.kind for f in _facts(text))


def _facts(text: str) -> list[_Fact]:
    """Dates, then names, then quantities, each dropped where an earlier kind already
    covers its span ("NitroGuard 40" is a name, not the number 40)."""
    facts: list[_Fact] = []

    def free(s: int, e: int) -> bool:
        return not any(s < f.end and f.start < e for f in facts)

    for d in extract_dates(text):
        if d.end > d.start:
            facts.append(_Fact("date", d, d.raw, d.start, d.end))
    for name in extract_entities(text):
        at = text.find(name)
        if at >= 0 and free(at, at + len(name)):
            facts.append(_Fact("name", normalize(name), name, at, at + len(name)))
    for q in extract_quantities(text):
        if q.end > q.start and free(q.start, q.end):
            facts.append(_Fact(f"number:{q.unit}", q, q.raw, q.start, q.end))
    facts.sort(key=lambda f: f.start)
    return facts


def _same(a: _Fact, b: _Fact) -> bool:
    if a.kind != b.kind:
        return False
    if a.kind == "date":
        return dates_match(a.key, b.key)  # type: ignore[arg-type]
    if a.kind.startswith("number"):
        return quantities_match(a.key, b.key)  # type: ignore[arg-type]
    return a.key == b.key


@dataclass(frozen=True, slots=True)
class _Layout:
    text: str
    facts: tuple[_Fact, ...]
    clause_of: tuple[int, ...]
    spans: tuple[tuple[int, int], ...]


def _merged_clauses(text: str, blanked: str) -> list[tuple[int, int]]:
    """Clauses, a clause with no content word besides its facts (", on 9 May 2021")
    joined to the one before it (the first to the one after) so every fact keeps an
    event to anchor it."""
    spans = _clauses(text)
    merged: list[tuple[int, int]] = []
    pending: tuple[int, int] | None = None
    for s, e in spans:
        if pending is not None:
            s = pending[0]
            pending = None
        if content_tokens(blanked[s:e]):
            merged.append((s, e))
        elif merged:
            merged[-1] = (merged[-1][0], e)
        else:
            pending = (s, e)
    if pending is not None:
        if merged:
            merged[-1] = (merged[-1][0], pending[1])
        else:
            merged.append(pending)
    return merged or [(0, len(text))]


@lru_cache(maxsize=2048)
def _layout(text: str) -> _Layout:
    facts = tuple(_facts(text))
    if not facts:
        return _Layout(text, facts, (), ((0, len(text)),))
    chars = list(text)
    for f in facts:
        for i in range(f.start, min(f.end, len(chars))):
            chars[i] = " "
    spans = tuple(_merged_clauses(text, "".join(chars)))
    clause_of = tuple(
        next((i for i, (s, e) in enumerate(spans) if s <= f.start < e), len(spans) - 1)
        for f in facts
    )
    return _Layout(text, facts, clause_of, spans)


def _kind_anchor(layout: _Layout, fact_index: int) -> frozenset[str]:
    """Content words of a fact's clause without the words of facts of its kind."""
    kind = layout.facts[fact_index].kind
    s, e = layout.spans[layout.clause_of[fact_index]]
    chars = list(layout.text[s:e])
    for f in layout.facts:
        if f.kind == kind and f.start < e and f.end > s:
            for i in range(max(f.start, s) - s, min(f.end, e) - s):
                chars[i] = " "
    return frozenset(content_tokens("".join(chars)))


_SENTENCE_END = re.compile(r"[.!?。！？；;\n]")


def _sentence_words(layout: _Layout, fact_index: int) -> frozenset[str]:
    """All content words of a fact's sentence, the fact's own words left out."""
    f = layout.facts[fact_index]
    text = layout.text
    start = max((m.end() for m in _SENTENCE_END.finditer(text, 0, f.start)), default=0)
    m = _SENTENCE_END.search(text, f.end)
    end = m.start() if m else len(text)
    own = set(content_tokens(f.raw))
    return frozenset(t for t in content_tokens(text[start:end]) if t not in own)


def _clause_words(layout: _Layout, fact_index: int) -> frozenset[str]:
    """All content words of a fact's clause, other facts included, the fact's own
    words left out."""
    s, e = layout.spans[layout.clause_of[fact_index]]
    own = set(content_tokens(layout.facts[fact_index].raw))
    return frozenset(t for t in content_tokens(layout.text[s:e]) if t not in own)


def _overlap(a: frozenset[str], b: frozenset[str]) -> int:
    return len(a & b)


def _unique_match(fact: _Fact, facts: tuple[_Fact, ...]) -> int | None:
    found = [i for i, f in enumerate(facts) if _same(fact, f)]
    return found[0] if len(found) == 1 else None


#: directional connectors of a date range ("from A to B", "A至B")
_RANGE = frozenset(["to", "until", "till", "through", "-", "–", "—", "~", "～", "至", "到"])


def _between(layout: _Layout, a: int, b: int) -> str:
    return " ".join(layout.text[layout.facts[a].end : layout.facts[b].start].split()).lower()


def _reversed(gt: _Layout, i: int, k: int, ans: _Layout, ai: int, ak: int) -> bool:
    """The answer states ``k ... i`` with exactly the words the ground truth puts
    between ``i ... k``: roles exchanged ("A succeeded B" -> "B succeeded A", "from
    April to November" -> "from November to April"). The words between must say
    something directional (a content word, or a range connector between dates), so
    a symmetric "A and B" -> "B and A" is not a swap."""
    if not (gt.facts[i].start < gt.facts[k].start and ans.facts[ak].start < ans.facts[ai].start):
        return False
    mid = _between(gt, i, k)
    if not mid or len(mid) > 60 or _between(ans, ak, ai) != mid:
        return False
    if content_tokens(mid):
        return True
    return gt.facts[i].kind == "date" and mid.strip(" ,") in _RANGE


def fact_swaps(ground_truth: str, answer: str) -> tuple[FactSwap, ...]:
    """Pairs of ground-truth facts (same kind) that the answer exchanges: (a) stated
    in each other's clause -- each answer clause shares more words with the *other*
    fact's ground-truth clause than with its own; (b) stated in reverse order with the
    same directional words between them (:func:`_reversed`). Facts that occur more
    than once are not judged."""
    kinds = _fact_kinds(ground_truth)
    if len(kinds) == len(set(kinds)):  # no two facts of one kind
        return ()
    gt = _layout(ground_truth)
    ans = _layout(answer)
    if len(ans.facts) < 2:
        return ()
    # ground-truth fact index -> answer fact index (unique matches on both sides)
    pos: dict[int, int] = {}
    for i, f in enumerate(gt.facts):
        if _unique_match(f, gt.facts) is None:
            continue
        j = _unique_match(f, ans.facts)
        if j is not None:
            pos[i] = j
    swaps: list[FactSwap] = []
    idx = sorted(pos)
    for n, i in enumerate(idx):
        for k in idx[n + 1 :]:
            fi, fk = gt.facts[i], gt.facts[k]
            if fi.kind != fk.kind:
                continue
            if _reversed(gt, i, k, ans, pos[i], pos[k]):
                swaps.append(FactSwap(fi.kind.split(":")[0], fi.raw, fk.raw))
                continue
            if gt.clause_of[i] == gt.clause_of[k]:
                continue
            if ans.clause_of[pos[i]] == ans.clause_of[pos[k]]:
                continue
            # anchors: the clause's words with facts of this kind blanked out (other
            # facts stay: "张某 ... 三年" vs "李某 ... 两年" differ only by them)
            gi, gk = _kind_anchor(gt, i), _kind_anchor(gt, k)
            if not gi or not gk or gi == gk:
                continue
            ai, ak = _kind_anchor(ans, pos[i]), _kind_anchor(ans, pos[k])
            cross_i, own_i = _overlap(ai, gk - gi), _overlap(ai, gi - gk)
            cross_k, own_k = _overlap(ak, gi - gk), _overlap(ak, gk - gi)
            if (
                cross_i >= _MIN_ANCHOR
                and cross_k >= _MIN_ANCHOR
                and (cross_i > own_i and cross_k > own_k)
            ):
                swaps.append(FactSwap(fi.kind.split(":")[0], fi.raw, fk.raw))
    return tuple(swaps)


def _name_known(name: str, known_norm: str, known_names: list[str]) -> bool:
    n = normalize(name)
    if not n:
        return True
    if n in known_norm:
        return True
    words = {w for w in n.split() if len(w) > 3}
    return any(words & {w for w in k.split() if len(w) > 3} for k in known_names)


def _name_in_answer(name: str, gt_names: Sequence[_Fact], answer_norm: str) -> bool:
    """The full name, or one of its distinctive words outside the ground truth's other
    names ("Halvorsen" of "Ingrid Halvorsen" does not count inside "Halvorsen
    Maritime Logistics")."""
    n = normalize(name)
    padded = f" {answer_norm} "
    if f" {n} " in padded or (n and not n.isascii() and n in answer_norm):
        return True
    rest = padded
    for other in gt_names:
        o = normalize(other.raw)
        if o != n and o:
            rest = rest.replace(f" {o} ", " ")
    return any(f" {w} " in rest for w in n.split() if len(w) > 3)


def substituted_names(
    ground_truth: str, answer: str, query: str = ""
) -> tuple[NameSubstitution, ...]:
    """Ground-truth names the answer leaves out while the answer clause restating their
    clause (sharing at least half of its words, at least two) names a new entity — one
    that neither the ground truth nor the question mentions."""
    if "name" not in _fact_kinds(ground_truth) or "name" not in _fact_kinds(answer):
        return ()
    gt = _layout(ground_truth)
    gt_names = [f for f in gt.facts if f.kind == "name"]
    ans = _layout(answer)
    ans_names = [(n, f) for n, f in enumerate(ans.facts) if f.kind == "name"]
    if not ans_names:
        return ()
    ans_norm = normalize(answer)
    known_norm = normalize(ground_truth) + " " + normalize(query)
    known_names = [normalize(f.raw) for f in gt_names] + [
        normalize(e) for e in extract_entities(query)
    ]
    out: list[NameSubstitution] = []
    for i, f in enumerate(gt.facts):
        if f.kind != "name" or _name_in_answer(f.raw, gt_names, ans_norm):
            continue
        own = _clause_words(gt, i)
        if len(own) < 3:  # "Dr. Mei-Lin Cho, previously ...": the sentence anchors it
            own = _sentence_words(gt, i)
        if len(own) < 2:
            continue
        for n, af in ans_names:
            if _name_known(af.raw, known_norm, known_names):
                continue
            shared = max(
                _overlap(_clause_words(ans, n), own), _overlap(_sentence_words(ans, n), own)
            )
            if shared >= 2 and shared * 2 >= len(own):
                out.append(NameSubstitution(f.raw, af.raw))
                break
    return tuple(out)
