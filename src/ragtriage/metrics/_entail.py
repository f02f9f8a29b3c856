"""Offline claim entailment: is a claim *entailed* by a premise text, *contradicted* by
it, or *not found* there (neutral)? The core that ``answer_correctness`` (answer claims
against the ground truth and back) and the offline ``faithfulness`` (answer claims
against the context) share.

It reads the facts the rules judge reads (:mod:`ragtriage.diagnosis.facts`: numbers with
units, dates, names; :mod:`ragtriage.diagnosis.alignment`: facts exchanged between their
clauses; :mod:`ragtriage.diagnosis.answer_checks`: a slot filled with another name,
opposite terms), plus negation:

* a claim's number, date or name that the premise lacks, while the premise clause saying
  the same thing (half the claim's other words) holds another number/date of that kind or
  another name in that place → **contradicted**;
* a claim that negates ("never", "did not", "no", "从未", "未", "没有", "无") what the
  premise clause asserts, or asserts what it negates; a claim whose negation removed is
  entailed → **contradicted**;
* a word of an opposite-terms family (rose/fell, elevated/normal, won/lost, 增长/下降)
  where the aligned clause says another value of that family and never this one →
  **contradicted**; two names in reversed roles around one verb ("B replaced A" for "A …
  replacing B") → **contradicted**;
* every fact found, and at least 70 % of the claim's other content words (EN stems, ZH
  character bigrams) in the premise → **entailed**; 40-70 % and an embedder given: the
  claim's cosine to its best-aligned premise sentence ≥ 0.75 (paraphrase; English claims
  only, the bundled MiniLM reads Chinese poorly) → **entailed**;
* otherwise **neutral**. ``undetermined`` (with a reason) only for a claim without any
  content word or fact, or an empty premise.

The embedder is asked in one batch for every claim that needs it
(:func:`check_claims`). Pure apart from the embedder; deterministic.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any, Final, Literal

from ragtriage.diagnosis.alignment import fact_swaps, is_initials
from ragtriage.diagnosis.answer_checks import (
    _DOWN,
    _OPPOSITES_EN,
    _OPPOSITES_ZH,
    _UP,
    clauses,
    keypoint_replaced,
)
from ragtriage.diagnosis.answer_styles import clean_answer, declining_sentence
from ragtriage.diagnosis.facts import (
    DateMention,
    Quantity,
    QuantityPool,
    content_support,
    dates_match,
    extract_dates,
    extract_entities,
    extract_quantities,
    key_terms,
    normalize,
    quantities_match,
    stem,
)
from ragtriage.text import STOPWORDS_ZH, has_cjk, has_content, split_sentences

__all__ = [
    "GRAY",
    "PARAPHRASE",
    "SUPPORT",
    "ClaimCheck",
    "Entailment",
    "Premise",
    "check_claims",
    "split_claims",
]

Entailment = Literal["entailed", "contradicted", "neutral", "undetermined"]

#: what a number, date or name weighs in :func:`coverage`, in content words
FACT_WEIGHT: Final = 3
#: share of a claim's content words (facts aside) the premise must hold: entailed
SUPPORT: Final = 0.7
#: from this share up to SUPPORT, the embedder decides (paraphrase)
GRAY: Final = 0.4
#: cosine of claim and premise sentence that counts as a paraphrase (MiniLM)
PARAPHRASE: Final = 0.75
#: share of the claim's content words a premise clause must hold to be "the same
#: statement" (the place a conflicting fact, negation or opposite is looked for)
ALIGNED: Final = 0.5


@dataclass(frozen=True, slots=True)
class ClaimCheck:
    """The verdict on one claim and why (``reason`` names the fact, cue or share)."""

    claim: str
    verdict: Entailment
    reason: str = ""
    #: for a *neutral* claim, the share of its content (words and facts) the premise
    #: holds (partial credit: "ten years" found, "$100,000 fine" not); ``None`` otherwise
    coverage: float | None = None


# --------------------------------------------------------------------------- claims

_CLAUSE_SPLIT = re.compile(
    r"[;；]\s*|,\s+(?=(?:but|while|whereas)\b)|，(?=[而但])"
    # ", and …" and "… and was/has/it …": a second statement, not a list ("A and B")
    r"|,\s+and\s+|\s+and\s+(?=(?:is|was|are|were|has|had|have|will|it|he|she|they|its|"
    r"his|her|their)\b)"
)


def split_claims(text: str, *, beside_decline: bool = True) -> list[str]:
    """The claims of a text offline: its sentences (EN and ZH terminators), cut again at
    semicolons and contrasting clauses (", but", ", while", "，而", "，但"); markdown
    markers and citation markers ("[1]", "(Doc 2)", "【3】") removed; sentences that only
    decline ("I don't know.", "文中没有提及") are not claims, and of a sentence that
    declines in one clause the other clauses are ("…，只提到…"; not with
    ``beside_decline=False``)."""
    cleaned = clean_answer(text)
    out: list[str] = []
    for s in split_sentences(cleaned):
        for piece in _CLAUSE_SPLIT.split(s.text):
            piece = _FRAME.sub("", piece.strip(" \t\n-*•"))
            if not piece or not _has_substance(piece):
                continue
            if not declining_sentence(piece):
                out.append(piece)
                continue
            # a decline with a statement beside it ("上下文只显示水某于2023年3月1日被逮捕，
            # 没有曹某的逮捕时间", "文档没有说明…，只提到…"): the statement is a claim
            parts = [p.strip(" \t\n-*•") for p in _COMMA_SPLIT.split(piece)]
            if beside_decline and len(parts) > 1:
                out.extend(
                    _FRAME.sub("", p)
                    for p in parts
                    if p
                    and _has_substance(p)
                    and not declining_sentence(p)
                    and not _polarity(p).cues  # "没有曹某的逮捕时间": the decline's own
                )
    return out


_COMMA_SPLIT: Final = re.compile(r"[，,]\s*")
#: the frame of what a declining text says the material does give ("they only say that
#: …", "只提到…"): the source speaking, no content of the claim
_FRAME: Final = re.compile(
    r"^(?:(?:but|and)\s+)?(?:they|it|the\s+(?:documents?|context|text|record|passages?|"
    r"sources?|excerpts?|material))\s+(?:only\s+)?"
    r"(?:says?|states?|mentions?|notes?|shows?|describes?|gives?)\s+(?:that\s+)?"
    r"|^(?:但|而)?(?:上下文|文档|资料|材料|文中|原文)?(?:中)?(?:只是|只|仅)"
    r"(?:说明|提到|提及|显示|写到|记载|说)了?",
    re.IGNORECASE,
)


def _has_substance(text: str) -> bool:
    return has_content(text) or bool(_facts_of(text)[0] or _facts_of(text)[1])


# --------------------------------------------------------------------------- facts


_TERMINAL: Final = ".。．!?！？ \t\n"


_Facts = tuple[tuple[Quantity, ...], tuple[DateMention, ...]]


def _facts_of(text: str) -> _Facts:
    """Numbers (not inside a date) and dates of ``text``; a claim and the premise clause
    it equals but for its full stop share one extraction (offsets hold for both)."""
    return _facts_cached(text.rstrip(_TERMINAL))


@lru_cache(maxsize=8192)
def _facts_cached(text: str) -> _Facts:
    dates = tuple(extract_dates(text))
    spans = [(d.start, d.end) for d in dates]
    qs = tuple(
        q
        for q in extract_quantities(text)
        if not any(s <= q.start < e or s < q.end <= e for s, e in spans)
    )
    return qs, dates


def _blank_facts(text: str) -> str:
    qs, ds = _facts_of(text)
    if not qs and not ds:
        return text
    chars = list(text)
    spans = [(q.start, q.end) for q in qs] + [(d.start, d.end) for d in ds]
    for start, end in spans:
        for i in range(start, min(end, len(chars))):
            chars[i] = " "
    return "".join(chars)


#: words an answer wraps a fact in ("The answer is …", "According to the context, …"):
#: no content of their own
_FILLER_EN: Final = frozenset(
    stem(w)
    for w in (
        "answer answers according context contexts document documents passage passages "
        "provided information stated states mentioned mentions based text source sources "
        "given question"
    ).split()
)
_FILLER_ZH: Final = ("根据", "文档", "资料", "材料", "上下文", "答案", "信息", "提到", "显示")
#: every piece of a word of _FILLER_ZH (``t in _FILLER_ZH_PARTS``: ``t`` stands in one)
_FILLER_ZH_PARTS: Final = frozenset(
    w[i:j] for w in _FILLER_ZH for i in range(len(w)) for j in range(i + 1, len(w) + 1)
)


def _terms(text: str) -> frozenset[str]:
    """Content terms of ``text`` with its numbers and dates blanked (stems, CJK bigrams)."""
    return key_terms(_blank_facts(text))


def _digitless(term: str) -> bool:
    """``term`` holds no digit (a letter-only term, the usual case, is decided in C)."""
    return term.isalpha() or not any(map(str.isdigit, term))


def _unit_terms(text: str) -> frozenset[str]:
    """A premise clause's content terms without reading its facts: terms with a digit
    left out (a claim's terms have its facts blanked, so a premise clause needs no more
    for the alignment; "million", "March" may stay, which no claim term asks for)."""
    terms = key_terms(text)
    if "".join(terms).isalpha():  # no term holds a digit: one test for all of them
        return terms
    return frozenset(filter(_digitless, terms))


def _claim_terms(text: str) -> frozenset[str]:
    terms = _terms(text)
    out = {t for t in terms if t not in _FILLER_EN}
    if has_cjk(text):
        out = {t for t in out if t not in _FILLER_ZH_PARTS}
    return frozenset(out)


# --------------------------------------------------------------------------- negation

_EN_NEG: Final = re.compile(
    r"\b(?:not|never|no|none|neither|nor|without|cannot|nothing)\b|n['’]t\b", re.IGNORECASE
)
#: a cue followed by these is no negation of what follows ("not only", "no later than")
_EN_NOT_NEG: Final = re.compile(
    r"\s+(?:only|just|least|later|earlier|more|less|fewer|sooner|longer)\b", re.IGNORECASE
)
_EN_SKIP: Final = frozenset(
    "be been being is are was were do does did have has had ever a an the any to of yet "
    "also still even so as at all".split()
)
_ZH_NEG: Final = re.compile(r"从未|从不|并未|并非|没有|未曾|未|没|不|无|非")
#: words that hold a cue character and negate nothing
_ZH_NOT_NEG: Final = (
    "未来",
    "非常",
    "无论",
    "不断",
    "不久",
    "不仅",
    "不但",
    "不过",
    "不少",
    "不同",
    "无数",
    "除非",
    "不超过",
    "不低于",
    "不少于",
    "不足",
    "并不",
    "毫不",
    "无疑",
)
_WORD_RE: Final = re.compile(r"[A-Za-z][A-Za-z'’-]*|\d[\d.,]*")


@dataclass(frozen=True, slots=True)
class _Polarity:
    """What a text negates: the head term after each cue (EN stem, ZH bigram), the text
    with its cues removed, and each Chinese cue with the character after it ("无效",
    "没有修": the same negation in two texts however the words after it run on)."""

    negated: frozenset[str]
    cues: tuple[str, ...]
    denegated: str
    marks: frozenset[str] = frozenset()


@lru_cache(maxsize=8192)
def _polarity(text: str) -> _Polarity:
    negated: set[str] = set()
    cues: list[str] = []
    marks: set[str] = set()
    removed: list[tuple[int, int]] = []
    for m in _EN_NEG.finditer(text):
        if _EN_NOT_NEG.match(text, m.end()):
            continue
        rest = _WORD_RE.findall(text[m.end() : m.end() + 60])
        head = next((w.lower() for w in rest[:4] if w.lower() not in _EN_SKIP), None)
        if head is None:
            continue
        negated.add(stem(head))
        cues.append(m.group())
        removed.append((m.start(), m.end()))
    if has_cjk(text):
        for m in _ZH_NEG.finditer(text):
            window = text[max(0, m.start() - 1) : m.end() + 2]
            if any(w in window for w in _ZH_NOT_NEG if _covers(text, m, w)):
                continue
            after = text[m.end() : m.end() + 2]
            if len(after) < 2 or not all("\u4e00" <= c <= "\u9fff" for c in after):
                continue
            negated.add(after)
            marks.add(m.group() + after[0])
            cues.append(m.group())
            removed.append((m.start(), m.end()))
    if not removed:
        return _Polarity(frozenset(), (), text)
    pieces, last = [], 0
    for s, e in sorted(removed):
        pieces.append(text[last:s])
        last = e
    pieces.append(text[last:])
    denegated = re.sub(r"\s{2,}", " ", "".join(pieces)).strip()
    return _Polarity(frozenset(negated), tuple(cues), denegated, frozenset(marks))


def _covers(text: str, m: re.Match[str], word: str) -> bool:
    """``word`` stands in ``text`` over the cue ``m``."""
    lo = max(0, m.start() - len(word) + 1)
    at = text.find(word, lo, m.end() + len(word))
    return at >= 0 and at <= m.start() < at + len(word)


def _asserts(term: str, terms: frozenset[str], pol: _Polarity) -> bool:
    """The text whose terms and polarity are given states ``term`` un-negated."""
    return term in terms and term not in pol.negated


# --------------------------------------------------------------------------- opposites

_EXTRA_EN: Final = (("won beat defeated", "lost"),)
_EXTRA_ZH: Final = (("增至 升至 涨至 增加至 提高至", "降至 减至 跌至 下降至 降低至"),)
#: direction words beyond answer_checks' (its "up"/"down" say no direction by themselves)
_DIRECTION_EN: Final = (
    "raise raises raised expand expands expanded boost boosted",
    "reduce reduces reduced reducing cut cuts lowered lower lowering shrink shrank",
)
_NOT_DIRECTION: Final = frozenset({"up", "down", "lost", "loss"})


def _values(families: Sequence[tuple[str, ...]], offset: int) -> dict[str, tuple[int, int]]:
    return {
        w: (offset + n, value)
        for n, family in enumerate(families)
        for value, words in enumerate(family)
        for w in words.split()
    }


_DIRECTION: Final = 9999  # the rose/fell family of answer_checks' direction words
_VAL_EN: Final = {
    **_values(_OPPOSITES_EN, 0),
    **_values(_EXTRA_EN, 1000),
    **{w: (_DIRECTION, v) for v, words in enumerate(_DIRECTION_EN) for w in words.split()},
}
_VAL_ZH: Final = {
    **_values(_OPPOSITES_ZH, 2000),
    **{w: (_DIRECTION, v) for v, words in enumerate(_EXTRA_ZH[0]) for w in words.split()},
}
_ZH_VAL_RE: Final = re.compile("|".join(sorted(map(re.escape, _VAL_ZH), key=len, reverse=True)))


@lru_cache(maxsize=8192)
def _opposite_values(text: str) -> frozenset[tuple[int, int]]:
    """(family, value) of every opposite-family word of ``text``; direction words (rose,
    cut, 增长, 下降) as family ``_DIRECTION``, value 0 up / 1 down."""
    out = {_VAL_EN[w] for w in _WORD_RE.findall(text.lower()) if w in _VAL_EN}
    if has_cjk(text):
        out |= {_VAL_ZH[m.group()] for m in _ZH_VAL_RE.finditer(text)}
    for value, pattern in enumerate((_UP, _DOWN)):
        if any(m.group().lower() not in _NOT_DIRECTION for m in pattern.finditer(text)):
            out.add((_DIRECTION, value))
    return frozenset(out)


def _opposite(claim: str, unit: str) -> tuple[int, int] | None:
    """A family the claim says one value of while ``unit`` says only others."""
    mine, theirs = _opposite_values(claim), _opposite_values(unit)
    for fam, value in sorted(mine):
        others = {v for f, v in theirs if f == fam}
        if others and value not in others:
            return fam, value
    return None


def _opposite_words(text: str, fam: int) -> str:
    words = [w for w in _WORD_RE.findall(text.lower()) if _VAL_EN.get(w, (-1,))[0] == fam]
    if has_cjk(text):
        words += [m.group() for m in _ZH_VAL_RE.finditer(text) if _VAL_ZH[m.group()][0] == fam]
    if fam == _DIRECTION:
        words += [
            m.group()
            for m in (*_UP.finditer(text), *_DOWN.finditer(text))
            if m.group().lower() not in _NOT_DIRECTION
        ]
    return "/".join(dict.fromkeys(words)) or "?"


# --------------------------------------------------------------------------- premise


@dataclass(frozen=True, slots=True)
class _ClaimView:
    """What the alignment weighs of a claim: its English stems, its Chinese characters
    (with the bigrams each belongs to) and its facts."""

    terms: frozenset[str]
    latin: frozenset[str]
    cjk: tuple[tuple[str, ...], ...]
    qs: tuple[Quantity, ...]
    ds: tuple[DateMention, ...]

    @property
    def weight(self) -> int:
        return len(self.latin) + len(self.cjk) + len(self.qs) + len(self.ds)

    def held(self, known: frozenset[str]) -> int:
        return len(self.latin & known) + sum(any(g in known for g in grams) for grams in self.cjk)

    @classmethod
    def of(cls, text: str, terms: frozenset[str], drop: frozenset[str] = frozenset()) -> _ClaimView:
        qs, ds = _facts_of(text)
        latin = frozenset(t for t in terms if (t.isascii() or not has_cjk(t)) and t not in drop)
        cjk: list[tuple[str, ...]] = []
        if has_cjk(text):
            blanked = _blank_facts(text)
            for m in _CJK_RUN.finditer(blanked):
                run = m.group()
                if len(run) == 1:
                    if run not in _ZH_STOP:
                        cjk.append((run,))
                    continue
                # the run's bigrams that count (None: not a claim term, or dropped); a
                # character is weighed with the bigram before it and the one after it
                grams: list[str | None] = [
                    g if g in terms and g not in drop else None
                    for g in (run[k : k + 2] for k in range(len(run) - 1))
                ]
                grams.append(None)
                before: str | None = None
                for ch, after in zip(run, grams, strict=True):
                    if ch not in _ZH_STOP:
                        if before is None:
                            cjk.append(() if after is None else (after,))
                        else:
                            cjk.append((before,) if after is None else (before, after))
                    before = after
        kept = frozenset(t for t in terms if t not in drop)
        return cls(kept, latin, tuple(cjk), qs, ds)


_CJK_RUN: Final = re.compile("[\u4e00-\u9fff]+")
_ZH_STOP: Final = frozenset(STOPWORDS_ZH)


@dataclass(slots=True)
class _Unit:
    """A clause of the premise (answer_checks.clauses) and the sentence it is in; its
    facts and negations are read when a claim first looks at the clause."""

    text: str
    sentence: int
    terms: frozenset[str]
    _facts: _Facts | None = None
    _polarity: _Polarity | None = None

    @property
    def quantities(self) -> tuple[Quantity, ...]:
        if self._facts is None:
            self._facts = _facts_of(self.text)
        return self._facts[0]

    @property
    def dates(self) -> tuple[DateMention, ...]:
        if self._facts is None:
            self._facts = _facts_of(self.text)
        return self._facts[1]

    @property
    def polarity(self) -> _Polarity:
        if self._polarity is None:
            self._polarity = _polarity(self.text)
        return self._polarity


@dataclass(slots=True)
class _Pools:
    """The facts of a whole premise (read once, on first need), with the background's
    (``quantities``, ``dates``) and without them (``own_*``)."""

    quantities: QuantityPool
    dates: tuple[DateMention, ...]
    own_quantities: QuantityPool
    own_dates: tuple[DateMention, ...]


@dataclass(slots=True)
class Premise:
    """A text prepared once for many claims: its sentences and clauses with their
    content terms, an index from term to clause, and an optional ``background`` (the
    question) whose words and facts count as known but prove nothing. Facts and
    negations are read when first needed."""

    text: str
    background: str = ""
    sentences: list[str] = field(default_factory=list)
    units: list[_Unit] = field(default_factory=list)
    index: dict[str, list[int]] = field(default_factory=dict)
    norm: str = ""
    own_norm: str = ""
    background_terms: frozenset[str] = frozenset()
    cleaned: str = ""
    _pools: _Pools | None = None

    @classmethod
    def of(cls, text: str, background: str = "") -> Premise:
        p = cls(text=text, background=background)
        p.cleaned = cleaned = clean_answer(text)
        for si, s in enumerate(split_sentences(cleaned)):
            p.sentences.append(s.text)
            for c in clauses(s.text) or [s.text]:
                unit = _Unit(c, si, _unit_terms(c))
                n = len(p.units)
                p.units.append(unit)
                for t in unit.terms:
                    p.index.setdefault(t, []).append(n)
        p.own_norm = f" {normalize(cleaned)} "
        p.norm = f"{p.own_norm}{normalize(background)} "
        p.background_terms = _terms(background) if background.strip() else frozenset()
        return p

    @property
    def pools(self) -> _Pools:
        if self._pools is None:
            qs, ds = _facts_of(self.cleaned)
            bq, bd = _facts_of(self.background) if self.background.strip() else ((), ())
            self._pools = _Pools(QuantityPool([*qs, *bq]), (*ds, *bd), QuantityPool(qs), tuple(ds))
        return self._pools

    def aligned(self, view: _ClaimView, limit: int = 3) -> list[tuple[float, int]]:
        """(how much of the claim a clause holds, clause index), best first, at least
        :data:`ALIGNED`: its content words (English stems; Chinese characters, each held
        when a bigram it is part of is) and its facts; a one-clause premise also counts
        the background's words."""
        if not view.weight:
            return []
        candidates: set[int] = set()
        for t in view.terms:
            candidates.update(self.index.get(t, ()))
        scored = []
        weight, facts = view.weight, len(view.qs) + len(view.ds)
        for n in candidates:
            unit = self.units[n]
            known = unit.terms | self.background_terms if len(self.units) == 1 else unit.terms
            got = view.held(known)
            if (got + facts) / weight < ALIGNED:
                continue  # below ALIGNED even with every fact matched: its facts unread
            got += sum(any(quantities_match(q, u) for u in unit.quantities) for q in view.qs)
            got += sum(any(dates_match(d, u) for u in unit.dates) for d in view.ds)
            scored.append((got / weight, n))
        scored.sort(key=lambda x: (-x[0], x[1]))
        return [(r, n) for r, n in scored[:limit] if r >= ALIGNED]

    def has_name(self, name: str, *, own: bool = False) -> bool:
        """The premise names ``name``: word for word, by a person's last name ("Reiersen"
        for "Tomas Reiersen"), or an acronym by its words ("CFO": "chief financial
        officer"); ``own``: in its text, the background left out."""
        norm = self.own_norm if own else self.norm
        low = _bare_name(normalize(name))
        if not low or f" {low} " in norm or (has_cjk(low) and low in norm):
            return True
        words = low.split()
        if 2 <= len(words) <= 3 and not set(words) & _CONNECTORS:
            return f" {words[-1]} " in norm and words[-1] not in _GENERIC_NAME_WORDS
        if len(words) > 1:
            return all(
                f" {w} " in norm or self.has_name(w.upper(), own=own)
                for w in words
                if w not in _CONNECTORS
            )
        if name.isupper() and 2 <= len(name) <= 6:
            return _acronym_in(name, norm)
        return False


_CONNECTORS: Final = frozenset({"of", "the", "and", "for", "de", "la", "van", "von", "&"})
#: last words that name a kind of thing, not who ("Halden Energy" is no "energy")
_GENERIC_NAME_WORDS: Final = frozenset(
    "energy bank group company corp inc ltd university school hospital library marathon "
    "river city county street party council committee".split()
)


@lru_cache(maxsize=1024)
def _acronym_pattern(acronym: str) -> re.Pattern[str]:
    letters = [re.escape(c.lower()) for c in acronym]
    return re.compile(r"\b" + r"\w*\s+(?:of\s+|and\s+|the\s+)?".join(letters) + r"\w*")


def _acronym_in(acronym: str, norm: str) -> bool:
    m = _acronym_pattern(acronym).search(norm)
    return m is not None and is_initials(acronym, m.group())


# --------------------------------------------------------------------------- verdict

Similarity = Callable[[str, Sequence[str]], float | None]


def _weight(piece: str) -> int:
    """What an unsupported piece of content_support counts: a CJK span its characters."""
    return len(piece) if has_cjk(piece) else 1


def _unsupported_share(
    claim: str, premise: Premise, values: frozenset[tuple[int, int]]
) -> tuple[float | None, list[str]]:
    """(share of the claim's content words the premise holds -- ``None`` when it has none
    besides its facts --, the unsupported pieces). A word of an opposite-terms family
    counts as held when ``values`` (the aligned clauses') hold its value ("reduce" for
    "cut", "降低" for "降至")."""
    sources = [premise.text] + ([premise.background] if premise.background else [])
    claim = claim.rstrip(_TERMINAL)  # the text whose facts _facts_of read (one extraction)
    sup = content_support(claim, sources)
    total, unsupported = sup.total, sup.unsupported
    missing: list[str] = []
    for e in sup.examples:
        if stem(e.lower()) in _FILLER_EN or any(f in e for f in _FILLER_ZH):
            total -= _weight(e)  # wrapping words count neither way
            unsupported -= _weight(e)
        elif (e.isupper() and premise.has_name(e)) or (_opposite_values(e) & values):
            unsupported -= _weight(e)  # "CFO" for "chief financial officer"; a synonym
        else:
            missing.append(e)
    if total <= 0:
        return None, missing
    return max(0.0, 1.0 - max(0, unsupported) / total), missing


def _own_support(claim: str, premise: Premise) -> bool:
    """A word of the claim the premise supports comes from the premise proper, not only
    from the background (asked only of a claim whose share would make it entailed)."""
    if not premise.background:
        return True
    own_sup = content_support(claim.rstrip(_TERMINAL), [premise.text])
    return own_sup.unsupported < own_sup.total


def _foreign(filler: str, piece: str, claim: str) -> bool:
    """A Chinese ``filler`` (what the premise puts where the claim has ``piece``) is
    something else, not the claim reworded or reordered: at least half of its content is
    not elsewhere in the claim ("'物业公司负责…维修' where the claim has '梧桐市橙园街某物业公司'" is the
    claim's own words around a shorter name); Chinese, it also holds two content
    characters ("被" for "分批" is a function word) and none of the piece's ("随后" for
    "后来" rewords it)."""
    if not has_cjk(filler):
        return True  # English fillers are names already (a passive reorders them freely)
    rest = claim.replace(piece, " ")
    chars = [c for c in filler if has_cjk(c) and c not in _ZH_STOP]
    if len(chars) < 2 or set(chars) & set(piece):
        return False
    inside = sum(c in rest for c in chars)
    return 2 * inside < len(chars)


def _claim_names(claim: str) -> list[str]:
    out = []
    for n in extract_entities(claim):
        words = [w for w in n.split() if _digitless(w)]
        if words:
            out.append(" ".join(words))
    return out


def _role_swap(claim: str, unit: str, names: Sequence[str]) -> tuple[str, str] | None:
    """Two names of the claim around a verb it shares with ``unit``, in the reverse
    order there ("Halvorsen replaced Reiersen" / "… Reiersen …, replacing Halvorsen")."""
    low_c, low_u = claim.lower(), unit.lower()
    if " by " in low_c or " by " in low_u:
        return None  # the passive reverses the order by itself
    found = []
    for n in names:
        key = n.lower().split()[-1]
        ci, ui = low_c.find(key), low_u.find(key)
        if ci >= 0 and ui >= 0:
            found.append((ci, ui, n))
    if len(found) < 2:
        return None
    found.sort()
    (ca, ua, a), (cb, ub, b) = found[0], found[-1]
    if not ub < ua:
        return None
    between = set(_terms(claim[ca:cb])) - _terms(a) - _terms(b)
    for m in _WORD_RE.finditer(unit):
        t = stem(m.group().lower())
        if t in between and ub < m.start() < ua:
            return a, b
    return None


def _zh_role_swap(claim: str, unit: str) -> tuple[str, str] | None:
    """Chinese: the claim's ``X<verb>Y`` stands in ``unit`` as ``Y…<verb>…X``."""
    for i in range(2, len(claim) - 3):
        verb = claim[i : i + 2]
        if not all("\u4e00" <= c <= "\u9fff" for c in verb):
            continue
        at = unit.find(verb)
        if at < 0:
            continue
        left = claim[max(0, i - 3) : i]
        right = claim[i + 2 : i + 5]
        if len(left) < 2 or len(right) < 2 or not has_cjk(left + right):
            continue
        lp, rp = unit.find(left), unit.find(right)
        if lp > at and 0 <= rp < at and unit.find(right, at) < 0 and unit.find(left, 0, at) < 0:
            return left, right
    return None


_NO_PREDICATE: Final = frozenset(
    "in on at of for to from with without and or nor but the a an by as during after before "
    "since until into onto over under near which that who whose whom is was".split()
)
_PRED_END: Final = re.compile(r"[,;:.!?()\n]")


def _predicates(text: str, names: Sequence[str]) -> list[tuple[str, frozenset[str], str]]:
    """(name, stems of the predicate after it, the predicate) at each place a name
    stands; the predicate runs to the next name or punctuation and opens with a verb."""
    low = text.lower()
    places = []
    for n in names:
        start = low.find(n.lower())
        while start >= 0:
            places.append((start, start + len(n), n))
            start = low.find(n.lower(), start + 1)
    places.sort()
    out = []
    for i, (_, end, n) in enumerate(places):
        stop = _PRED_END.search(text, end)
        limit = stop.start() if stop is not None else len(text)
        if i + 1 < len(places):
            limit = min(limit, places[i + 1][0])
        tail = text[end:limit]
        first = _WORD_RE.match(tail.lstrip())
        if first is None or not first.group().islower() or first.group() in _NO_PREDICATE:
            continue
        words = frozenset(stem(t) for t in _WORD_RE.findall(tail.lower()) if t not in _EN_SKIP)
        out.append((n, words, tail.strip()))
    return out


#: the legal form ending a company's name: "Elevate Retail Inc." is "Elevate Retail"
_LEGAL_FORMS: Final = frozenset("inc corp co ltd llc plc gmbh ag sa".split())


def _bare_name(low: str) -> str:
    """A normalised name without the legal form that ends it (one word at least kept)."""
    words = low.split()
    while len(words) > 1 and words[-1] in _LEGAL_FORMS:
        words.pop()
    return " ".join(words)


def _same_name(a: str, b: str) -> bool:
    la, lb = _bare_name(normalize(a)).split(), _bare_name(normalize(b)).split()
    return bool(la and lb) and (la == lb or la[-1] == lb[-1])


def _predicate_moved(claim: str, sentence: str, names: Sequence[str]) -> tuple[str, str] | None:
    """The claim gives a name what the premise sentence says of another name ("Priya
    Okafor won the 2022 …" where "Lena Novak won the 2022 …"), and the sentence never
    says it of that name; not in the passive. Returns (premise name, claim name)."""
    mine = [p for p in _predicates(claim, names) if len(p[1]) >= 2 and " by " not in f" {p[2]} "]
    if not mine:
        return None
    theirs = _predicates(sentence, _claim_names(sentence) + list(names))
    for name, words, _ in mine:
        own = any(_same_name(n, name) and 2 * len(words & w) >= len(words) for n, w, _ in theirs)
        if own:
            continue
        for other, got, _ in theirs:
            if not _same_name(other, name) and 4 * len(words & got) >= 3 * len(words):
                return other, name
    return None


def _verdict(
    claim: str, premise: Premise, sim: Similarity | None, *, negation: bool = True
) -> ClaimCheck:
    text = clean_answer(claim).strip()
    if not premise.units:
        return ClaimCheck(claim, "undetermined", "empty premise")
    # fast path: content words of which the premise has none can align with nothing,
    # so nothing there supports or contradicts the claim (its facts need not be read)
    words = {t for t in key_terms(text) if t not in _FILLER_EN and _digitless(t)}
    if (
        words
        and words.isdisjoint(premise.index)
        and words.isdisjoint(premise.background_terms)
        and not (has_cjk(text) and any(f in text for f in _FILLER_ZH))
    ):
        return ClaimCheck(claim, "neutral", "none of its words in the premise")
    qs, ds = _facts_of(text)
    terms = _claim_terms(text)
    if not terms and not qs and not ds:
        return ClaimCheck(claim, "undetermined", "no content word or fact to check")
    names = _claim_names(text)
    zh = has_cjk(text)
    pol = _polarity(text)
    view = _ClaimView.of(pol.denegated, _claim_terms(pol.denegated)) if pol.cues else None
    view = view or _ClaimView.of(text, terms)
    aligned = premise.aligned(view)
    best = [n for r, n in aligned if r >= aligned[0][0] - 1e-9] if aligned else []
    sentences = list(
        dict.fromkeys(premise.sentences[premise.units[n].sentence] for _, n in aligned)
    )
    best_sentences = list(dict.fromkeys(premise.sentences[premise.units[n].sentence] for n in best))
    # -- facts of the claim that the premise lacks, where the aligned clause has others
    missing_q = [q for q in qs if not premise.pools.quantities.matches(q)]
    missing_d = [d for d in ds if not any(dates_match(d, p) for p in premise.pools.dates)]
    missing_n = [n for n in names if not premise.has_name(n)]
    # a claim about someone the premise never names is not the statement of a clause
    # about someone else: their numbers and dates do not conflict ("Q. White was
    # sentenced to 4 years" against "V. Martin … 12 years"; "It … 12 years" still does)
    unnamed = bool(names) and not any(premise.has_name(n, own=True) for n in names)
    for _, n in aligned:
        unit = premise.units[n]
        if unnamed and any(
            not any(_same_name(u, c) for c in names) for u in _claim_names(unit.text)
        ):
            continue
        for q in missing_q:
            if q.raw[:1] == "一" and q.value == 1 and not q.unit:
                continue  # "一支部队", "一名小孩": the article, no count to contradict
            # the clause's numbers the claim states too are accounted for ("$250,000,
            # more than the $200,000 …" against "$250,000"; "13个月" beside "1年1个月")
            other = [
                p
                for p in unit.quantities
                if p.unit == q.unit and not any(quantities_match(c, p) for c in qs)
            ]
            if other:
                why = f"number {q.raw!r} where the premise has {other[0].raw!r}"
                return ClaimCheck(claim, "contradicted", why)
        for d in missing_d:
            # a date of the clause the claim states too is accounted for ("司机…1979年…，
            # 庭长…1971年…" against "司机…1979年…")
            others = [u for u in unit.dates if not any(dates_match(c, u) for c in ds)]
            if others:
                why = f"date {d.raw!r} where the premise has {others[0].raw!r}"
                return ClaimCheck(claim, "contradicted", why)
    for name in missing_n:
        for s in sentences:
            filler = keypoint_replaced(name, text, s)
            if filler is not None and _foreign(filler, name, text):
                why = f"{filler.strip()!r} where the claim has {name!r}"
                return ClaimCheck(claim, "contradicted", why)
    for s in best_sentences:
        moved = _predicate_moved(text, s, [n for n in names if n not in missing_n])
        if moved is not None:
            why = f"the premise says it of {moved[0]!r}, not of {moved[1]!r}"
            return ClaimCheck(claim, "contradicted", why)
    values: frozenset[tuple[int, int]] = frozenset()
    for n in best:
        values |= _opposite_values(premise.units[n].text)
    # the share is read here only when an aligned sentence may fill an unsupported piece
    # with something else; else after the checks that do not need it
    share, unsupported = _unsupported_share(text, premise, values) if sentences else (None, [])
    for piece in unsupported:
        # a name-like word ("CEO") or a Chinese span the claim anchors on both sides
        # ("由李娜创办") that the aligned sentence fills with something else
        if has_cjk(piece):
            at = text.find(piece)
            anchored = (
                at > 0
                and has_cjk(text[at - 1])
                and has_cjk(text[at + len(piece) : at + len(piece) + 1])
            )
            if len(piece) < 2 or not anchored or _opposite_values(piece) or _ZH_NEG.search(piece):
                continue
        elif not piece[:1].isupper() or piece in missing_n:
            continue
        for s in sentences:
            filler = keypoint_replaced(piece, text, s)
            if filler is not None and _foreign(filler, piece, text):
                why = f"{filler.strip()!r} where the claim has {piece!r}"
                return ClaimCheck(claim, "contradicted", why)
    # -- negation and opposites in the best-aligned clauses
    shared_negation = False
    for n in best:
        unit = premise.units[n]
        same_cue = bool(pol.marks & unit.polarity.marks)
        shared_negation = shared_negation or same_cue
        for t in sorted(pol.negated):
            if t in unit.polarity.negated:
                shared_negation = True
            elif t in unit.terms and not same_cue:
                why = f"the claim negates {t!r}, the premise states it"
                return ClaimCheck(claim, "contradicted", why)
        for t in sorted(unit.polarity.negated):
            if t not in pol.negated and t in view.terms and not same_cue:
                why = f"the premise negates {t!r}, the claim states it"
                return ClaimCheck(claim, "contradicted", why)
        opp = _opposite(text, unit.text)
        if opp is not None:
            said, there = _opposite_words(text, opp[0]), _opposite_words(unit.text, opp[0])
            return ClaimCheck(claim, "contradicted", f"{said!r} where the premise says {there!r}")
    # -- reversed roles, facts exchanged between events
    for s in best_sentences:
        swap = _zh_role_swap(text, s) if zh else _role_swap(text, s, names)
        if swap is not None:
            why = f"{swap[0]!r} and {swap[1]!r} in reversed roles"
            return ClaimCheck(claim, "contradicted", why)
        if len(qs) + len(ds) + len(names) >= 2:
            swaps = fact_swaps(s, text)
            if swaps:
                sw = swaps[0]
                why = f"{sw.kind}s {sw.first!r} and {sw.second!r} exchanged"
                return ClaimCheck(claim, "contradicted", why)
    negated = negation and bool(pol.cues) and not shared_negation
    if negated and pol.denegated != text:
        flipped = _verdict(pol.denegated, premise, sim, negation=False)
        if flipped.verdict == "entailed":
            why = f"the premise states it without {pol.cues[0]!r}"
            return ClaimCheck(claim, "contradicted", why)
        if flipped.reason == _PENDING:
            return ClaimCheck(claim, "neutral", _PENDING)
    # -- support
    if missing_q or missing_d or missing_n:
        what = [q.raw for q in missing_q] + [d.raw for d in missing_d] + missing_n
        return ClaimCheck(claim, "neutral", f"not in the premise: {', '.join(what)}")
    if negated:
        return ClaimCheck(claim, "neutral", "a negated statement the premise does not make")
    if not sentences:
        share, _ = _unsupported_share(text, premise, values)
    if share is None:
        # a claim of facts only ("$265 million", "2019年"): its facts are all there
        own_q, own_d = premise.pools.own_quantities, premise.pools.own_dates
        if not any(own_q.matches(q) for q in qs) and not any(
            dates_match(d, p) for d in ds for p in own_d
        ):
            return ClaimCheck(claim, "neutral", "only restates the question")
        return ClaimCheck(claim, "entailed", "every fact of the claim is in the premise")
    if share >= SUPPORT:
        if not _own_support(text, premise):
            return ClaimCheck(claim, "neutral", "only restates the question")
        return ClaimCheck(claim, "entailed", f"{share:.0%} of its words in the premise")
    if share >= GRAY and sim is not None and not zh and sentences and _own_support(text, premise):
        cos = sim(text, sentences[:2])
        if cos is None:
            return ClaimCheck(claim, "neutral", _PENDING)
        if cos >= PARAPHRASE:
            return ClaimCheck(claim, "entailed", f"paraphrase (cosine {cos:.2f})")
        return ClaimCheck(claim, "neutral", f"{share:.0%} of its words, cosine {cos:.2f}")
    return ClaimCheck(claim, "neutral", f"{share:.0%} of its words in the premise")


_PENDING: Final = "waiting for the embedder"


def coverage(claim: str, premise: Premise) -> float:
    """The share of a claim's content the premise holds: its content words (EN stems, ZH
    characters as :func:`content_support` weighs them; filler and words only the
    background has count neither way) and its numbers, dates (by value) and names, each
    of these weighing :data:`FACT_WEIGHT` words (the slot a question asks for is most
    often one: "He paid $5,000" holds "paid" but not the amount). 0.0 for a claim with
    nothing to weigh."""
    text = clean_answer(claim).strip().rstrip(_TERMINAL)
    sup = content_support(text, [premise.text])
    total, missing = sup.total, sup.unsupported
    if premise.background:
        known = content_support(text, [premise.text, premise.background])
        drop = missing - known.unsupported  # the background's words: no proof either way
        total, missing = total - drop, missing - drop
    for e in sup.examples:
        if stem(e.lower()) in _FILLER_EN or any(f in e for f in _FILLER_ZH):
            total -= _weight(e)
            missing -= _weight(e)
    qs, ds = _facts_of(text)
    own_q, own_d = premise.pools.own_quantities, premise.pools.own_dates
    total += FACT_WEIGHT * (len(qs) + len(ds))
    missing += FACT_WEIGHT * sum(not own_q.matches(q) for q in qs)
    missing += FACT_WEIGHT * sum(not any(dates_match(d, p) for p in own_d) for d in ds)
    names = _claim_names(text)  # counted among the words already: the rest of the weight
    total += (FACT_WEIGHT - 1) * len(names)
    missing += (FACT_WEIGHT - 1) * sum(not premise.has_name(n) for n in names)
    if total <= 0:
        return 0.0
    return max(0.0, min(1.0, 1.0 - missing / total))


class _Recorder:
    """First pass: note the texts a claim wants compared, answer ``None``."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def __call__(self, claim: str, sentences: Sequence[str]) -> float | None:
        self.texts.append(claim)
        self.texts.extend(sentences)
        return None


class _Lookup:
    def __init__(self, vectors: dict[str, Any]) -> None:
        self.vectors = vectors

    def __call__(self, claim: str, sentences: Sequence[str]) -> float | None:
        import numpy as np  # only with an embedder: the offline diagnosis needs none

        a = self.vectors[claim]
        best = 0.0
        for s in sentences:
            b = self.vectors[s]
            na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
            if na > 0 and nb > 0:
                best = max(best, float(a @ b) / (na * nb))
        return best


def check_claims(
    items: Sequence[tuple[str, Premise]],
    embedder: Any | None = None,
    *,
    with_coverage: bool = False,
) -> list[ClaimCheck]:
    """The verdict of each ``(claim, premise)``; with an embedder (anything with
    ``embed(texts)``), the claims in the paraphrase band are compared with their best
    premise sentences in one batch. A claim repeated against the same premise is judged
    once. ``with_coverage``: each neutral claim's :func:`coverage` too."""
    unique: dict[tuple[str, int], tuple[str, Premise]] = {}
    for c, p in items:
        unique.setdefault((c, id(p)), (c, p))
    jobs = list(unique.values())
    if embedder is None:
        done = [_verdict(c, p, None) for c, p in jobs]
    else:
        rec = _Recorder()
        first = [_verdict(c, p, rec) for c, p in jobs]
        if rec.texts:
            import numpy as np

            texts = list(dict.fromkeys(rec.texts))
            vecs = np.asarray(embedder.embed(texts), dtype=np.float64)
            look = _Lookup(dict(zip(texts, vecs, strict=True)))
            first = [
                _verdict(c, p, look) if r.reason == _PENDING else r
                for (c, p), r in zip(jobs, first, strict=True)
            ]
        done = first
    if with_coverage:
        done = [
            replace(r, coverage=coverage(c, p)) if r.verdict == "neutral" else r
            for (c, p), r in zip(jobs, done, strict=True)
        ]
    by_key = dict(zip(unique, done, strict=True))
    return [by_key[(c, id(p))] for c, p in items]
