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
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

from ragtriage._regex import lazy_compile
from ragtriage.diagnosis.facts import (
    TITLES,
    DateMention,
    Quantity,
    dates_match,
    extract_dates,
    extract_entities,
    extract_quantities,
    quantities_match,
    stem,
)
from ragtriage.text import content_tokens, has_content, normalize

__all__ = ["FactSwap", "NameSubstitution", "fact_swaps", "is_initials", "substituted_names"]

#: clause boundaries: sentence ends, semicolons, colons, commas, and clause conjunctions
_CLAUSE_BOUNDARY = lazy_compile(
    # a comma before "with" and a description attaches it to the name before it ("Dr.
    # Jane Henderson, with experience in healthcare management, and …"; not "…, with
    # Daniel Weir prosecuting": another name, another clause)
    r"\.(?!\d)|[;!?。；！？\n，：]|,(?!\d)(?![ \t]*with[ \t]+(?-i:[a-z]))|[:、](?!\d)"
    r"|\b(?:and|while|whereas|but|then|after|before|until)\b"
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
        if m.group() in ("and", "And") and _joins_names(text, m.start(), m.end()):
            continue  # "the Assam Railways and Trading Company": one name
        if m.start() > prev:
            out.append((prev, m.start()))
        prev = m.end()
    if prev < len(text):
        out.append((prev, len(text)))
    return out or [(0, len(text))]


_CAP_BEFORE = lazy_compile(r"[A-Z][A-Za-z]*[ \t]+\Z")
_CAP_AFTER = lazy_compile(r"[ \t]+[A-Z][a-z]")


def _joins_names(text: str, start: int, end: int) -> bool:
    """The "and" at ``start``..``end`` stands between two capitalised words."""
    return (
        _CAP_BEFORE.search(text, max(0, start - 30), start) is not None
        and _CAP_AFTER.match(text, end) is not None
    )


@lru_cache(maxsize=4096)
def _fact_kinds(text: str) -> tuple[str, ...]:
    return tuple(f.kind for f in _facts(text))


class _Taken:
    """Character positions covered by the facts kept so far: an overlap test in
    O(span length), not O(facts) (a long answer holds hundreds of thousands). Exact
    for non-empty spans; an empty span is free and takes nothing, as in the all-pairs
    test for the only empty span :func:`_facts` can meet (an empty name, at 0)."""

    __slots__ = ("_bits",)

    def __init__(self, n: int) -> None:
        self._bits = bytearray(n)

    def free(self, start: int, end: int) -> bool:
        return 1 not in self._bits[start:end]

    def take(self, start: int, end: int) -> None:
        if end > start:
            self._bits[start:end] = b"\x01" * (end - start)


@lru_cache(maxsize=1024)
def _facts(text: str) -> tuple[_Fact, ...]:
    """Dates, then names, then quantities, each dropped where an earlier kind already
    covers its span ("NitroGuard 40" is a name, not the number 40)."""
    facts: list[_Fact] = []
    dates = [d for d in extract_dates(text) if d.end > d.start]
    names = [(name, text.find(name)) for name in extract_entities(text)]
    quantities = [q for q in extract_quantities(text) if q.end > q.start]
    size = max(
        [len(text), *(d.end for d in dates), *(q.end for q in quantities)],
    )
    taken = _Taken(size + 1)
    for d in dates:
        facts.append(_Fact("date", d, d.raw, d.start, d.end))
        taken.take(d.start, d.end)
    for name, at in names:
        if at >= 0 and taken.free(at, at + len(name)):
            facts.append(_Fact("name", normalize(name), name, at, at + len(name)))
            taken.take(at, at + len(name))
    for q in quantities:
        if taken.free(q.start, q.end):
            facts.append(_Fact(f"number:{q.unit}", q, q.raw, q.start, q.end))
            taken.take(q.start, q.end)
    facts.sort(key=lambda f: f.start)
    return tuple(facts)


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
    #: per clause, the indices of the (non-empty) facts overlapping it
    clause_facts: tuple[tuple[int, ...], ...]


def _span_containing(starts: Sequence[int], ends: Sequence[int], pos: int) -> int | None:
    """Index of the span ``starts[i] <= pos < ends[i]`` among sorted, disjoint spans
    (binary search), or None."""
    i = bisect_right(starts, pos) - 1
    return i if i >= 0 and pos < ends[i] else None


def _spans_overlapping(starts: Sequence[int], ends: Sequence[int], s: int, e: int) -> range:
    """Indices of the sorted, disjoint spans that overlap ``[s, e)`` (``s < e``)."""
    first = bisect_right(ends, s)
    last = bisect_left(starts, e)
    return range(first, max(first, last))


def _merged_clauses(text: str, blanked: str) -> list[tuple[int, int]]:
    """Clauses, a clause with no content word besides its facts (", on 9 May 2021")
    joined to the one before it (the first to the one after), and a label before a colon
    ("2. 清新环保公司：", "- 能源消耗：") to the one after, so every fact keeps an event to
    anchor it."""
    spans = _clauses(text)
    merged: list[tuple[int, int]] = []
    pending: tuple[int, int] | None = None
    for s, e in spans:
        if pending is not None:
            s = pending[0]
            pending = None
        if text[e : e + 1] in (":", "："):
            # a label anchors what follows it ("- 能源消耗：减少了20%")
            pending = (s, e)
        elif has_content(blanked[s:e]):
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
    facts = _facts(text)
    if not facts:
        return _Layout(text, facts, (), ((0, len(text)),), ((),))
    chars = list(text)
    for f in facts:
        for i in range(f.start, min(f.end, len(chars))):
            chars[i] = " "
    spans = tuple(_merged_clauses(text, "".join(chars)))
    starts = [s for s, _ in spans]
    ends = [e for _, e in spans]
    last = len(spans) - 1
    clause_of: list[int] = []
    per_clause: list[list[int]] = [[] for _ in spans]
    for n, f in enumerate(facts):
        at = _span_containing(starts, ends, f.start)
        clause_of.append(last if at is None else at)
        if f.end > f.start:
            for c in _spans_overlapping(starts, ends, f.start, f.end):
                per_clause[c].append(n)
    return _Layout(text, facts, tuple(clause_of), spans, tuple(tuple(c) for c in per_clause))


def _kind_anchor(layout: _Layout, fact_index: int) -> frozenset[str]:
    """Content words of a fact's clause without the words of facts of its kind."""
    kind = layout.facts[fact_index].kind
    clause = layout.clause_of[fact_index]
    s, e = layout.spans[clause]
    chars = list(layout.text[s:e])
    for n in layout.clause_facts[clause]:
        f = layout.facts[n]
        if f.kind == kind:
            for i in range(max(f.start, s) - s, min(f.end, e) - s):
                chars[i] = " "
    # stems, hyphenated words in their parts: "decreasing … post-surgery" is the slot
    # of "decreased … after surgery"
    return frozenset(
        stem(w)
        for t in content_tokens("".join(chars))
        for w in (t.split("-") if "-" in t else (t,))
    )


_SENTENCE_END = lazy_compile(r"[.!?。！？；;\n]")


@lru_cache(maxsize=256)
def _sentence_ends(text: str) -> tuple[int, ...]:
    return tuple(m.start() for m in _SENTENCE_END.finditer(text))


def _sentence_span(layout: _Layout, fact_index: int) -> tuple[int, int]:
    """The sentence around a fact: from after the last sentence end before the fact to
    the first one at or after its end (binary search over the text's sentence ends)."""
    f = layout.facts[fact_index]
    ends = _sentence_ends(layout.text)
    before = bisect_left(ends, f.start)
    start = ends[before - 1] + 1 if before else 0
    after = bisect_left(ends, f.end)
    end = ends[after] if after < len(ends) else len(layout.text)
    return start, end


def _sentence_words(layout: _Layout, fact_index: int) -> frozenset[str]:
    """All content words of a fact's sentence, the fact's own words left out."""
    start, end = _sentence_span(layout, fact_index)
    own = set(content_tokens(layout.facts[fact_index].raw))
    return frozenset(t for t in content_tokens(layout.text[start:end]) if t not in own)


def _clause_words(layout: _Layout, fact_index: int) -> frozenset[str]:
    """All content words of a fact's clause, other facts included, the fact's own
    words left out."""
    s, e = layout.spans[layout.clause_of[fact_index]]
    own = set(content_tokens(layout.facts[fact_index].raw))
    return frozenset(t for t in content_tokens(layout.text[s:e]) if t not in own)


def _overlap(a: frozenset[str], b: frozenset[str]) -> int:
    return len(a & b)


class _SpanWords:
    """``_overlap(_clause_words(...), words)`` and ``_overlap(_sentence_words(...),
    words)`` for many facts of one layout, each span's words computed once: facts of
    one clause or sentence share it, so a long answer is tokenised about once, not
    once per fact."""

    __slots__ = ("_layout", "_tokens")

    def __init__(self, layout: _Layout) -> None:
        self._layout = layout
        self._tokens: dict[tuple[int, int], frozenset[str]] = {}

    def _words(self, span: tuple[int, int]) -> frozenset[str]:
        got = self._tokens.get(span)
        if got is None:
            got = frozenset(content_tokens(self._layout.text[span[0] : span[1]]))
            self._tokens[span] = got
        return got

    def shared(self, fact_index: int, words: frozenset[str]) -> int:
        """Words shared with the fact's clause or sentence (the larger), the fact's
        own words left out."""
        layout = self._layout
        own = set(content_tokens(layout.facts[fact_index].raw))
        clause = self._words(layout.spans[layout.clause_of[fact_index]])
        sentence = self._words(_sentence_span(layout, fact_index))
        in_clause = sum(1 for t in words if t in clause and t not in own)
        in_sentence = sum(1 for t in words if t in sentence and t not in own)
        return max(in_clause, in_sentence)


def _unique_match(fact: _Fact, facts: tuple[_Fact, ...]) -> int | None:
    """Reference scan (the tests check :class:`_FactIndex` against it)."""
    found = [i for i, f in enumerate(facts) if _same(fact, f)]
    return found[0] if len(found) == 1 else None


def _value_key(f: _Fact) -> object:
    """Everything :func:`_same` looks at besides the kind: facts with equal keys match
    the same facts."""
    if f.kind == "date":
        d: DateMention = f.key  # type: ignore[assignment]
        return (d.year, d.month, d.day, d.quarter)
    if f.kind.startswith("number"):
        q: Quantity = f.key  # type: ignore[assignment]
        return (q.value, q.unit, q.raw)
    return f.key


class _Group(NamedTuple):
    """One distinct value (a tuple: thousands are built per long answer)."""

    fact: _Fact  # the first fact with this value
    first: int  # its index
    n: int  # facts with this value


class _FactIndex:
    """:func:`_unique_match` over many facts: facts grouped by kind and value, so a
    lookup compares once per distinct value (a repeated "42" is one value), and a
    name -- matched by equality -- is one dictionary lookup."""

    __slots__ = ("_groups",)

    def __init__(self, facts: Sequence[_Fact]) -> None:
        by_kind: dict[str, dict[object, list[int]]] = {}
        for i, f in enumerate(facts):
            by_kind.setdefault(f.kind, {}).setdefault(_value_key(f), []).append(i)
        self._groups: dict[str, dict[object, _Group]] = {
            kind: {key: _Group(facts[ix[0]], ix[0], len(ix)) for key, ix in values.items()}
            for kind, values in by_kind.items()
        }

    def unique_match(self, fact: _Fact) -> int | None:
        groups = self._groups.get(fact.kind)
        if not groups:
            return None
        if fact.kind == "name":
            g = groups.get(fact.key)
            return g.first if g is not None and g.n == 1 else None
        found: int | None = None
        for g in groups.values():
            if _same(fact, g.fact):
                if found is not None or g.n > 1:
                    return None
                found = g.first
        return found


#: directional connectors of a date range ("from A to B", "A至B")
_RANGE = frozenset(["to", "until", "till", "through", "-", "–", "—", "~", "～", "至", "到"])


def _between(layout: _Layout, a: int, b: int) -> str:
    return " ".join(layout.text[layout.facts[a].end : layout.facts[b].start].split()).lower()


_WORD = lazy_compile(r"\S+")


def _between_upto(layout: _Layout, a: int, b: int, limit: int) -> str | None:
    """:func:`_between`, or None when it would be longer than ``limit`` characters --
    found after reading at most about ``limit`` characters of words, however far apart
    the two facts are (``lower()`` never shortens a string, so the length before
    lowering bounds it)."""
    words: list[str] = []
    size = -1
    for m in _WORD.finditer(layout.text, layout.facts[a].end, layout.facts[b].start):
        size += len(m.group()) + 1
        if size > limit:
            return None
        words.append(m.group())
    return " ".join(words).lower()


def _reversed(gt: _Layout, i: int, k: int, ans: _Layout, ai: int, ak: int) -> bool:
    """The answer states ``k ... i`` with exactly the words the ground truth puts
    between ``i ... k``: roles exchanged ("A succeeded B" -> "B succeeded A", "from
    April to November" -> "from November to April"). The words between must say
    something directional (a content word, or a range connector between dates), so
    a symmetric "A and B" -> "B and A" is not a swap."""
    if not (gt.facts[i].start < gt.facts[k].start and ans.facts[ak].start < ans.facts[ai].start):
        return False
    mid = _between(gt, i, k)
    if not mid or len(mid) > 60 or _between_upto(ans, ak, ai, len(mid)) != mid:
        return False
    if has_content(mid):
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
    gt_index = _FactIndex(gt.facts)
    ans_index: _FactIndex | None = None
    for i, f in enumerate(gt.facts):
        if gt_index.unique_match(f) is None:
            continue
        if ans_index is None:
            ans_index = _FactIndex(ans.facts)
        j = ans_index.unique_match(f)
        if j is not None:
            pos[i] = j
    anchors: dict[tuple[bool, int], frozenset[str]] = {}

    def anchor(in_answer: bool, n: int) -> frozenset[str]:
        got = anchors.get((in_answer, n))
        if got is None:
            got = anchors[(in_answer, n)] = _kind_anchor(ans if in_answer else gt, n)
        return got

    swaps: list[FactSwap] = []
    idx = sorted(pos)
    for n, i in enumerate(idx):
        for k in idx[n + 1 :]:
            fi, fk = gt.facts[i], gt.facts[k]
            if fi.kind != fk.kind:
                continue
            if _coordinated(ground_truth, fi, fk):
                continue  # "A and B" share a role, or are one name ("X Railways and Trading Company")
            if _reversed(gt, i, k, ans, pos[i], pos[k]):
                swaps.append(FactSwap(fi.kind.split(":")[0], fi.raw, fk.raw))
                continue
            if gt.clause_of[i] == gt.clause_of[k]:
                continue
            if ans.clause_of[pos[i]] == ans.clause_of[pos[k]]:
                continue
            # anchors: the clause's words with facts of this kind blanked out (other
            # facts stay: "张某 ... 三年" vs "李某 ... 两年" differ only by them)
            gi, gk = anchor(False, i), anchor(False, k)
            if not gi or not gk or gi == gk:
                continue
            ai, ak = anchor(True, pos[i]), anchor(True, pos[k])
            cross_i, own_i = _overlap(ai, gk - gi), _overlap(ai, gi - gk)
            cross_k, own_k = _overlap(ak, gi - gk), _overlap(ak, gk - gi)
            if (
                cross_i >= _MIN_ANCHOR
                and cross_k >= _MIN_ANCHOR
                and (cross_i > own_i and cross_k > own_k)
            ) or _nested_swap(gi, gk, ai, ak):
                swaps.append(FactSwap(fi.kind.split(":")[0], fi.raw, fk.raw))
    return tuple(swaps)


def _coordinated(text: str, first: _Fact, second: _Fact) -> bool:
    """Two facts joined by nothing but a conjunction ("Assam Railways and Trading
    Company", "张某和李某"): one role, or one name, never two to exchange."""
    return text[first.end : second.start].strip().lower() in _CONJUNCTIONS


_CONJUNCTIONS = frozenset({"and", "&", "和", "与", "及", "、", "以及"})


def _nested_swap(
    gi: frozenset[str], gk: frozenset[str], ai: frozenset[str], ak: frozenset[str]
) -> bool:
    """Slots whose words nest ("the debt ratio" / "the debt to assets ratio"): the
    fact of the shorter slot stated with the longer slot's extra words, and the other
    fact with the shorter slot's words and none of them."""
    if gi < gk:
        extra = gk - gi
        return bool(ai & extra) and not (ak & extra) and gi <= ak
    if gk < gi:
        extra = gi - gk
        return bool(ak & extra) and not (ai & extra) and gk <= ai
    return False


def is_initials(short: str, name: str) -> bool:
    """``short`` is the acronym of ``name``'s words, case aside ("UK" of "United Kingdom",
    "U.S." of "United States")."""
    letters = short.replace(".", "").replace(" ", "")
    words = re.findall(r"[A-Za-z]+", name)
    return (
        1 < len(letters) <= 6
        and letters.isascii()
        and letters.isalpha()
        and len(words) == len(letters)
        and all(w[0].lower() == c for w, c in zip(words, letters.lower(), strict=True))
    )


def _name_known(name: str, known_norm: str, known_names: list[str]) -> bool:
    n = normalize(name)
    if not n:
        return True
    if n in known_norm:
        return True
    if any(is_initials(k, n) for k in known_names):  # "United States" for "US"
        return True
    words = {w for w in n.split() if len(w) > 3}
    return any(
        words & {w for w in k.split() if len(w) > 3} for k in known_names if not _namesake(n, k)
    )


def _namesake(a: str, b: str) -> bool:
    """Two normalised person names with the same surname and other first names
    ("michael thompson", "david thompson"): two people, not one name written twice."""
    aw, bw = a.split(), b.split()
    return (
        len(aw) >= 2
        and len(bw) >= 2
        and aw[-1] == bw[-1]
        and len(aw[-2]) > 1
        and len(bw[-2]) > 1
        and aw[-2] != bw[-2]
        and aw[-2].isalpha()
        and bw[-2].isalpha()
        and aw[-1].isalpha()
        and aw[-2] not in TITLES
        and bw[-2] not in TITLES
    )


def _name_in_answer(
    name: str, gt_names: Sequence[_Fact], answer_norm: str, padded_answer: str
) -> bool:
    """The full name, or one of its distinctive words outside the ground truth's other
    names ("Halvorsen" of "Ingrid Halvorsen" does not count inside "Halvorsen
    Maritime Logistics"). ``padded_answer`` is ``answer_norm`` between spaces."""
    n = normalize(name)
    if f" {n} " in padded_answer or (n and not n.isascii() and n in answer_norm):
        return True
    words = [w for w in n.split() if len(w) > 3]
    if not words:
        return False
    rest = padded_answer
    for other in gt_names:
        o = normalize(other.raw)
        if o != n and o:
            rest = rest.replace(f" {o} ", " ")
    first, last = n.split()[-2:] if " " in n else ("", "")
    if first.isalpha() and len(first) > 1 and last.isalpha() and first not in TITLES:
        # the surname only after another first name is a namesake ("Michael Thompson"
        # for "David Thompson"), not the name
        others = "|".join(map(re.escape, sorted(TITLES | {first})))
        rest = re.sub(rf" (?!(?:{others}) )[a-z]{{2,}} {re.escape(last)} ", " ", rest)
    return any(f" {w} " in rest for w in words)


def _query_words(query: str, name: str) -> frozenset[str]:
    """The question's content words, the name's own left out."""
    own = set(content_tokens(name))
    return frozenset(t for t in content_tokens(query) if t not in own)


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
    ans_names = [n for n, f in enumerate(ans.facts) if f.kind == "name"]
    if not ans_names:
        return ()
    answer_norm = normalize(answer)
    padded_answer = f" {answer_norm} "
    known_norm = normalize(ground_truth) + " " + normalize(query)
    known_names = [normalize(f.raw) for f in gt_names] + [
        normalize(e) for e in extract_entities(query)
    ]
    # answer names neither the ground truth nor the question knows (found on demand:
    # they do not depend on the ground-truth name being checked)
    unknown: list[int] | None = None
    words = _SpanWords(ans)
    out: list[NameSubstitution] = []
    for i, f in enumerate(gt.facts):
        if f.kind != "name" or _name_in_answer(f.raw, gt_names, answer_norm, padded_answer):
            continue
        own = _clause_words(gt, i)
        if len(own) < 3:  # "Dr. Mei-Lin Cho, previously ...": the sentence anchors it
            own = _sentence_words(gt, i)
        if len(own) < 2 and query:
            # a bare name ("The Broma process."): the question's words anchor it
            own = own | _query_words(query, f.raw)
        if len(own) < 2:
            continue
        if unknown is None:
            unknown = [
                n for n in ans_names if not _name_known(ans.facts[n].raw, known_norm, known_names)
            ]
        for n in unknown:
            shared = words.shared(n, own)
            if shared >= 2 and shared * 2 >= len(own):
                out.append(NameSubstitution(f.raw, ans.facts[n].raw))
                break
    return tuple(out)
