"""Answer evaluation (seed 000, App. B.1): is the generated answer right?

Labels follow Listing 3: ``correct | possible_correct | incorrect | abstain``.
:func:`needs_diagnosis` decides which examples go on to stage attribution: incorrect
answers, abstentions on answerable questions, and anything but an abstention on an
unanswerable one.

Two judges:

* :func:`evaluate_rules` — offline and deterministic, English and Chinese:
  abstention phrases, normalised exact match and containment, token F1/recall
  (words for English, character bigrams for Chinese), keypoint coverage, and
  agreement of numbers, dates and names between answer and ground truth, and
  whether each fact stays with its event (:mod:`ragtriage.diagnosis.alignment`:
  swapped dates/amounts/names, a name replaced in the clause that restates it).
  One check per rule declared in :mod:`ragtriage.diagnosis.rules`, run in the
  registry's order (``@_decides(name)``; a guard, ``@_undecidable_when``, finds the
  ground truth without comparable content), then the grade and its adjustments
  (``@_grades(names)``).
* :func:`evaluate_llm` — the Listing-3 prompt; an unreadable reply or a failed call
  gives an undetermined :class:`~ragtriage.records.Judgement` with the reason.
  :func:`evaluate_llm_findings` also reads the reply's findings (declined parts, wrong
  values, misordered events, unsupported claims) into
  :class:`~ragtriage.diagnosis.findings.AnswerFindings`, the form in which the stage
  cascade reads either judge; a reply without readable findings gets the rules judge's
  findings for the same trace, and the findings say so.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from functools import cached_property, lru_cache
from itertools import pairwise

from ragtriage._regex import lazy_compile
from ragtriage.config import DiagnosisConfig
from ragtriage.diagnosis._calls import LLMCalls
from ragtriage.diagnosis.alignment import fact_swaps, is_initials, substituted_names
from ragtriage.diagnosis.answer_checks import (
    ChoiceConflict,
    bound_conflict,
    choice_conflict,
    clauses,
    compound_durations,
    count_conflict,
    crossed_terms,
    direction_flips,
    entity_value_conflict,
    impossible_dates,
    keypoint_replaced,
    keypoint_variant,
    measures_swapped,
    names_of,
    negated_terms,
    numeral_conflict,
    opposite_terms,
    order_conflict,
    ordinal_conflict,
    rank_conflict,
    roles_swapped,
    slot_conflict,
)
from ragtriage.diagnosis.answer_styles import AnswerView, answer_view, declining_sentence
from ragtriage.diagnosis.facts import (
    TITLES,
    DateMention,
    Quantity,
    QuantityPool,
    dates_match,
    extract_dates,
    extract_entities,
    extract_quantities,
    named_months,
    stem,
)
from ragtriage.diagnosis.findings import AnswerFindings, FindingsError, findings_from_object
from ragtriage.diagnosis.question_parts import QuestionPart, mentions_part, question_parts
from ragtriage.diagnosis.rules import RULES, AnswerRule, answer_rule
from ragtriage.diagnosis.weights import active_weights, shipped_weights
from ragtriage.judge.parsing import parse_answer_label
from ragtriage.judge.prompts import answer_eval_prompt, ground_truth_text
from ragtriage.llm import LLMFailure, parse_json_object
from ragtriage.records import AnswerLabel, Example, Judgement, Trace
from ragtriage.text import (
    content_tokens,
    has_cjk,
    has_content,
    is_cjk,
    normalize,
    split_sentences,
)

__all__ = [
    "AnswerFacts",
    "answer_facts",
    "evaluate_llm",
    "evaluate_llm_findings",
    "evaluate_rules",
    "is_abstention",
    "missing_facts",
    "needs_diagnosis",
    "states_keypoint",
    "strip_citations",
]

# the CJK ranges of ragtriage.text.is_cjk, as one regex (a per-character loop is slow)
_CJK = lazy_compile(
    "[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0002a6df]"
)
_CITATION = lazy_compile(r"[\[【]\s*\d{1,3}(?:\s*[,，;-]\s*\d{1,3})*\s*[\]】]")
#: names in the ground truth count as key facts only for ground truths this short
_NAMES_MAX_TOKENS = 30

# -- abstention -----------------------------------------------------------------------

# words that describe the material rather than answer the question
_META = frozenset(
    """context contexts document documents text texts passage passages provided given
    information info data details detail source sources excerpt excerpts chunk chunks
    question query answer specific specifically explicitly directly however therefore
    unfortunately available mentioned sorry based regarding about""".split()
)
_ZH_META = (
    "上下文",
    "文档",
    "文件",
    "资料",
    "信息",
    "内容",
    "材料",
    "问题",
    "提供",
    "相关",
    "具体",
)
_CLAUSE_SPLIT = lazy_compile(
    r"[,;:，；：、]|\b(?:but|however|although|though|yet|while)\b|但是|但|然而|不过|虽然|尽管",
    re.I,
)


#: a decline of what lies beyond the answer given ("do not describe any other
#: complications"): the answer stands
_BEYOND = lazy_compile(r"\b(?:other|further|additional|else|more)\b|其他|其余|更多|别的", re.I)


#: a refusal of the whole question ("so I can't answer that", "因此无法回答")
_REFUSES = lazy_compile(
    r"\b(?:can\s*not|can't|unable\s+to|not\s+able\s+to)\s+(?:\w+\s+)?(?:answer|tell\s+you)\b"
    r"|无法回答|不能回答|无法作答",
    re.I,
)


#: a review's closing refusal in other words: "so I cannot tell what sentence the court
#: gave her", "so I can't say what it was", "so I cannot quote them" -- the reviewer says
#: it cannot give what was asked (the question's own words need not be repeated); read
#: only in the last sentence of a review that states little of the ground truth
_CANNOT_SAY = lazy_compile(
    r"\b(?:so|thus|therefore|hence)\b[^.;!?]*\b(?:can\s*not|can't|unable\s+to|not\s+able\s+to)\s+"
    r"(?:\w+\s+)?(?:tell|say|state|quote|give|determine|identify|specify|confirm)\b",
    re.I,
)


def _has_cue(text: str) -> bool:
    """Whether ``text`` holds a declining phrase (the one list, answer_styles)."""
    return declining_sentence(text)


def _new_content(clause: str, known: set[str]) -> list[str]:
    out = []
    for tok in content_tokens(clause):
        if tok in known or tok in _META:
            continue
        if any(m in tok for m in _ZH_META) or any(tok in m for m in _ZH_META):
            continue
        out.append(tok)
    return out


def is_abstention(answer: str, query: str = "") -> bool:
    """True when the answer declines to answer.

    An answer abstains when it contains an abstention phrase (English or Chinese) and
    its clauses without such a phrase add at most two content words beyond the
    question's — "The report does not mention it, but it was 2018" is an answer,
    "The provided documents do not state when the council met." is an abstention.
    """
    text = answer.strip()
    if not text:
        return True
    if not _has_cue(text):
        return False
    known = set(content_tokens(query))
    extra: list[str] = []
    for sentence in split_sentences(text) or []:
        for clause in _CLAUSE_SPLIT.split(sentence.text):
            if clause and clause.strip() and not _has_cue(clause):
                extra.extend(_new_content(clause, known))
    return len(set(extra)) <= 2


# -- facts: numbers, dates, names -----------------------------------------------------


def _contains(normalized_text: str, normalized_part: str) -> bool:
    """``part`` occurs in ``text``: on word boundaries for Latin text, as a plain
    substring when the part contains CJK characters (no spaces between words)."""
    if not normalized_part:
        return False
    if _CJK.search(normalized_part):
        return normalized_part in normalized_text
    if f" {normalized_part} " in f" {normalized_text} ":
        return True
    # Latin words next to Chinese characters ("acme研发有限公司") have no spaces around them
    at = normalized_text.find(normalized_part)
    while at >= 0:
        end = at + len(normalized_part)
        before = normalized_text[at - 1] if at else " "
        after = normalized_text[end] if end < len(normalized_text) else " "
        if not (before.isascii() and before.isalnum()) and not (
            after.isascii() and after.isalnum()
        ):
            return True
        at = normalized_text.find(normalized_part, at + 1)
    return False


def _entity_in(entity: str, normalized_text: str) -> bool:
    ne = normalize(entity)
    if _contains(normalized_text, ne):
        return True
    # "M. Cooper" vs "Cooper": the last word of a multi-word English name suffices
    words = ne.split()
    return len(words) > 1 and len(words[-1]) > 2 and _contains(normalized_text, words[-1])


@dataclass(frozen=True, slots=True)
class AnswerFacts:
    """The measurements behind a rules verdict.

    ``gt_values``/``values_hit``: numbers and dates stated by the ground truth, and
    how many of them the answer states too; ``contradicted``: ground-truth values the
    answer replaces by a different value of the same kind (another amount in the same
    unit, another date); ``gt_names``/``names_hit`` likewise for named entities.
    """

    exact: bool
    contained: bool
    precision: float
    recall: float
    f1: float
    gt_tokens: int
    gt_values: tuple[str, ...]
    values_hit: int
    answer_values: tuple[str, ...]
    contradicted: tuple[str, ...]
    gt_names: tuple[str, ...]
    names_hit: int
    keypoint_coverage: float | None
    #: whether the first keypoint (a dataset's direct answer) is covered; None without
    first_keypoint: bool | None = None

    @property
    def value_conflict(self) -> bool:
        """The answer states a different number or date where the ground truth has one."""
        return bool(self.contradicted)


@dataclass(frozen=True, slots=True)
class _Values:
    gt: tuple[str, ...]
    hit: int
    answer: tuple[str, ...]
    contradicted: tuple[str, ...]
    #: size of the longest plain list of values in the answer ("in May 2019, June 2020
    #: and March 2021") that holds a ground-truth value among at least two others of
    #: the same kind; 0 when there is none
    listed: int = 0
    #: ground-truth values (raw) that the answer states
    stated: frozenset[str] = frozenset()


@lru_cache(maxsize=1024)
def _answer_pool(answer: str) -> QuantityPool:
    """The answer's quantities as a pool (one per answer text: every ground-truth unit,
    keypoint and statement is looked up in it). A whole number written as an ordinal
    counts as the number: "18" of "between 18 and 19 December" is stated by "between 18th
    and 19th December"."""
    found = extract_quantities(answer)
    if any(ch.isdigit() for ch in answer):
        found = found + [
            Quantity(float(m.group(1)), "", m.group(), m.start(), m.end())
            for m in _ORDINAL_NUMBER.finditer(answer)
        ]
    return QuantityPool(found)


_ORDINAL_NUMBER = lazy_compile(r"(?<![\d.,])(\d{1,3})(?:st|nd|rd|th)\b")


def _near_date(a: DateMention, g: DateMention) -> bool:
    """``a`` could summarise ``g``: the same year where both give one, and a month at
    most one away where both give one ("July" for "30 June")."""
    if a.year is not None and g.year is not None and a.year != g.year:
        return False
    if a.month is not None and g.month is not None:
        return abs(a.month - g.month) <= 1
    return a.year is not None and a.year == g.year


def _competes(a: DateMention, g: DateMention) -> bool:
    """``a`` gives a field ``g`` gives (year, month or quarter), so it could stand for it."""
    return (
        (a.year is not None and g.year is not None)
        or (a.month is not None and g.month is not None)
        or (a.quarter is not None and g.quarter is not None)
    )


#: units of one dimension: an amount in one competes with the ground truth's in another
_DIMENSIONS = {
    **dict.fromkeys(("year", "month", "week", "day", "hour", "minute"), "time"),
    **dict.fromkeys(("mm", "cm", "m", "km", "in", "ft", "mi"), "length"),
    **dict.fromkeys(("mg", "g", "kg", "t", "lb"), "mass"),
    **dict.fromkeys(("ml", "l", "gal"), "volume"),
    **dict.fromkeys(("usd", "cny", "hkd", "eur", "gbp", "jpy", "aud", "cad"), "money"),
}


def _dimension(unit: str) -> str:
    return _DIMENSIONS.get(unit, unit)


@lru_cache(maxsize=2048)
def _values(gt: str, answer: str) -> _Values:
    """Numbers and dates of the ground truth, how many the answer states too, and the
    ones it *contradicts*: a ground-truth value the answer does not state while it
    states a competing value of the same kind (same unit, or another date) that
    matches nothing in the ground truth — "$45 million" where "$30 million" was due.
    A value the answer merely leaves out is not a contradiction."""
    gq, aq = extract_quantities(gt), extract_quantities(answer)
    gd, ad = extract_dates(gt), extract_dates(answer)
    # pools: each distinct answer value is compared once (a long answer may repeat one
    # number thousands of times); quantities_match is symmetric
    g_pool, a_pool = QuantityPool(gq), _answer_pool(answer)
    # a competing value matters only for the units of ground-truth values not stated,
    # a unit standing for its dimension ("six years" competes with "six months")
    open_units = {_dimension(q.unit) for q in gq if not a_pool.matches(q)}
    stray_units: set[str] = set()
    if open_units:
        # "2 hours and 10 minutes" is also 130 minutes
        extra = QuantityPool(compound_durations(gt, gq)) if len(gq) >= 2 else None
        # a difference the answer derives ("$20 million more", "多出2000万元") is not a
        # competing value of the same slot -- unless the ground truth states one too
        derived_units = {g.unit for g in gq if _derived(gt, g)}
        stray_units = {
            _dimension(a.unit)
            for a in aq
            if _dimension(a.unit) in open_units
            and not g_pool.matches(a)
            and not _approximates(answer, a, gq)
            and not _bound_holds(answer, a, gt, gq)
            and not (extra is not None and extra.matches(a))
            and (a.unit in derived_units or not _derived(answer, a))
            and not _same_span(a, aq, gq)
        }
    # a date competes with a ground-truth date it could replace: one that gives the same
    # fields (a year for a year, a month for a month) -- "2022" is no rival of "in March"
    stray_date = bool(gd) and any(
        not any(dates_match(d, a) for d in gd) and any(_competes(a, d) for d in gd) for a in ad
    )
    hit = 0
    contradicted: list[str] = []
    stated: list[str] = []
    for q in gq:
        if a_pool.matches(q):
            hit += 1
            stated.append(q.raw)
        elif _dimension(q.unit) in stray_units:
            contradicted.append(q.raw)
    for d in gd:
        if any(dates_match(d, a) for a in ad) or _month_named(d, answer):
            hit += 1
            stated.append(d.raw)
        elif stray_date:
            contradicted.append(d.raw)
    # mentions of the ground truth's kinds of value, in order: (start, end, matches gt)
    marks = [(a.start, a.end, any(dates_match(d, a) for d in gd)) for a in ad] if gd else []
    units = {q.unit for q in gq}
    marks += [(a.start, a.end, g_pool.matches(a)) for a in aq if a.unit in units]
    return _Values(
        gt=tuple([q.raw for q in gq] + [d.raw for d in gd]),
        hit=hit,
        answer=tuple([q.raw for q in aq] + [d.raw for d in ad]),
        contradicted=tuple(contradicted),
        listed=_longest_listing(answer, sorted(marks)),
        stated=frozenset(stated),
    )


#: lengths of time in days, to compare a span given in other units
_DAYS = {"year": 365.25, "month": 30.44, "week": 7.0, "day": 1.0}
#: two spans of time in other units are one when they differ by at most this share
#: (calendar months and years differ in length: "five years and seven months" ~ "five
#: and a half years", "1年零26天" ~ "391天")
_SPAN_TOLERANCE = 0.02


def _spans(qs: Sequence[Quantity]) -> list[tuple[int, int, float, str]]:
    """Spans of time among ``qs`` as (start, end, days, units): each value in years,
    months, weeks or days, and each pair of adjacent ones (a larger unit then a smaller,
    no more than a few characters apart: "1年零26天", "five years and seven months")."""
    out = [(q.start, q.end, q.value * _DAYS[q.unit], q.unit) for q in qs if q.unit in _DAYS]
    for a, b in pairwise(qs):
        if (
            a.unit in _DAYS
            and b.unit in _DAYS
            and _DAYS[a.unit] > _DAYS[b.unit]
            and 0 <= b.start - a.end <= 5
        ):
            days = a.value * _DAYS[a.unit] + b.value * _DAYS[b.unit]
            out.append((a.start, b.end, days, f"{a.unit}+{b.unit}"))
    return out


def _same_span(a: Quantity, answer_qs: Sequence[Quantity], gt_qs: Sequence[Quantity]) -> bool:
    """``a`` gives, alone or with the next or previous value, a span of time that the
    ground truth gives in other units (see :data:`_SPAN_TOLERANCE`); the same span in the
    same units is the values' own business ("twenty days" is no "ten days")."""
    if a.unit not in _DAYS:
        return False
    truth = _spans(gt_qs)
    return any(
        start <= a.start
        and a.end <= end
        and any(
            units != t_units and abs(days - t) <= _SPAN_TOLERANCE * t for _, _, t, t_units in truth
        )
        for start, end, days, units in _spans(answer_qs)
    )


def _asked_values(gt: str, query: str) -> frozenset[str]:
    """The ground truth's numbers and dates that the question states too ("in 2020" of
    "How many employees did Acme have in 2020?"): a concise answer need not repeat them."""
    if not query:
        return frozenset()
    asked = QuantityPool(extract_quantities(query))
    asked_dates = extract_dates(query)
    return frozenset(
        [q.raw for q in extract_quantities(gt) if asked.matches(q)]
        + [d.raw for d in extract_dates(gt) if any(dates_match(d, a) for a in asked_dates)]
    )


def _slot_wording(clause: str, raws: Iterable[str]) -> set[str]:
    """The words of ``clause`` that say which slot its values fill: its content words
    (English by stem) without the values themselves."""
    for raw in sorted(raws, key=len, reverse=True):
        clause = clause.replace(raw, " ")
    return {
        stem(t) if t.isascii() else t
        for t in content_tokens(clause)
        if not any(ch.isdigit() for ch in t)
    }


def _other_slot(raw: str, gt: str, answer: str) -> bool:
    """Every clause of ``answer`` that states a value competing with the ground truth's
    ``raw`` (another date, an amount of its dimension) is about another slot: it has
    wording of its own and shares none of the wording (two words at least) of the
    ground-truth clause that gives ``raw`` ("23 June: he reported sleeping better"
    against "discharged on 24 June"). A bare value ("26 June."), a clause naming the
    slot's subject or saying its words competes, and so does any value against the
    ground truth's first clause, its direct answer to the question."""
    gdates, gq = extract_dates(gt), extract_quantities(gt)
    date = next((d for d in gdates if d.raw == raw), None)
    quantity = None if date is not None else next((q for q in gq if q.raw == raw), None)
    if date is None and quantity is None:
        return False
    pieces = clauses(gt)
    home = next((i for i, c in enumerate(pieces) if raw in c), None)
    if not home:
        # not found, or in the first clause: the direct answer, the slot the question asks
        return False
    slot = _slot_wording(pieces[home], [d.raw for d in gdates] + [q.raw for q in gq])
    if len(slot) < 2:
        return False
    g_pool = QuantityPool(gq)
    competing = 0
    for clause in clauses(answer):
        cdates, cq = extract_dates(clause), extract_quantities(clause)
        if date is not None:
            rival = any(
                not any(dates_match(d, a) for d in gdates) and _competes(a, date) for a in cdates
            )
        else:
            assert quantity is not None
            dim = _dimension(quantity.unit)
            rival = any(_dimension(a.unit) == dim and not g_pool.matches(a) for a in cq)
        if not rival:
            continue
        competing += 1
        own = _slot_wording(clause, [d.raw for d in cdates] + [q.raw for q in cq])
        if not own or own & slot:
            return False
    return competing > 0


def _given_numbers(gt: str, query: str) -> frozenset[str]:
    """The ground truth's unitless numbers that the question states too."""
    asked = QuantityPool([q for q in extract_quantities(query) if not q.unit])
    return frozenset(q.raw for q in extract_quantities(gt) if not q.unit and asked.matches(q))


def _month_named(d: DateMention, answer: str) -> bool:
    """A ground-truth month alone ("in June") that the answer names as a word ("the June
    asset restructuring")."""
    return (
        d.month is not None
        and d.year is None
        and d.day is None
        and d.quarter is None
        and d.month in named_months(answer)
    )


_DERIVED_AFTER = lazy_compile(
    r"[ \t]*(?:(?:more|less|fewer|higher|lower|larger|smaller|greater|bigger|earlier|later|"
    r"longer|shorter)\b|than\b|(?:的)?(?:差距|差额|差)|多|少|更?[高低早晚])",
    re.IGNORECASE,
)
_DERIVED_BEFORE = lazy_compile(
    r"(?:\b(?:difference|gap)\s+of|相差|差额为?|差距为?|多出|高出|低出)"
    r"[ \t]*(?:about|around|roughly|approximately|约)?[ \t]*$",
    re.IGNORECASE,
)


_APPROX_BEFORE = lazy_compile(
    r"(?:\b(?:about|around|roughly|approximately|approx\.?|nearly|almost|some|circa|~)|约|大约|近|将近|左右)"
    r"[ \t]*$",
    re.IGNORECASE,
)
#: a value marked as approximate matches a ground-truth value this close (relative)
_APPROX = 0.05


_UPPER_BOUND_BEFORE = lazy_compile(
    r"(?:\b(?:less|fewer|shorter|lower)\s+than|\b(?:under|below|within|nearly|almost)"
    r"|不到|不足|少于|低于|小于|未满|将近|近)[ \t]*$",
    re.IGNORECASE,
)
_LOWER_BOUND_BEFORE = lazy_compile(
    r"(?:\b(?:more|greater|longer|higher)\s+than|\b(?:over|above|at\s+least)"
    r"|超过|多于|高于|大于|逾|至少)[ \t]*$",
    re.IGNORECASE,
)
#: time units in days, to compare a bound with a ground-truth duration of another unit
_DAYS = {
    "minute": 1 / 1440,
    "hour": 1 / 24,
    "day": 1.0,
    "week": 7.0,
    "month": 30.44,
    "year": 365.25,
}


def _in_days(q: Quantity) -> float | None:
    per = _DAYS.get(q.unit)
    return None if per is None else q.value * per


def _bound_of(text: str, q: Quantity) -> str | None:
    """ "upper" or "lower" when ``q`` stands behind a bound in ``text``, else ``None``."""
    before = text[max(0, q.start - 16) : q.start]
    if _UPPER_BOUND_BEFORE.search(before) is not None:
        return "upper"
    return "lower" if _LOWER_BOUND_BEFORE.search(before) is not None else None


def _bound_holds(text: str, q: Quantity, gt: str, truth: Sequence[Quantity]) -> bool:
    """``q`` is a bound ("不到一年", "less than two years", "over 10 days") that an exact
    ground-truth amount of its dimension satisfies ("11个月"): a looser statement of the
    truth, not a competing value (a bound for a bound -- "within 100 days" for "within
    ten days" -- competes)."""
    bound = _bound_of(text, q)
    if bound is None:
        return False
    upper = bound == "upper"
    for g in truth:
        if _bound_of(gt, g) is not None:
            continue
        if g.unit == q.unit:
            gv, qv = g.value, q.value
        else:
            gd, qd = _in_days(g), _in_days(q)
            if gd is None or qd is None:
                continue
            gv, qv = gd, qd
        if (gv < qv) if upper else (gv > qv):
            return True
    return False


def _approximates(text: str, q: Quantity, truth: Sequence[Quantity]) -> bool:
    """``q`` is marked approximate ("around 35%", "约3000万元") and within 5 % of a
    ground-truth value of the same unit: a rounded statement, not a competing value."""
    if not _APPROX_BEFORE.search(text[max(0, q.start - 16) : q.start]):
        return False
    return any(
        g.unit == q.unit and g.value and abs(q.value - g.value) <= _APPROX * abs(g.value)
        for g in truth
    )


def _derived(text: str, q: Quantity) -> bool:
    """Whether ``q`` is a difference the text derives ("$20 million more", "a gap of 3")."""
    if _DERIVED_AFTER.match(text, q.end):
        return True
    return bool(_DERIVED_BEFORE.search(text[max(0, q.start - 24) : q.start]))


# what may stand between two items of a plain list of values
_LIST_GAP = lazy_compile(
    r"[\s,;/、，；]*(?:(?:and|or|as well as|&|和|及|与|或|以及)[\s,，、]*)?", re.IGNORECASE
)


def _longest_listing(text: str, marks: list[tuple[int, int, bool]]) -> int:
    """Length of the longest run of value mentions joined only by list separators that
    holds a ground-truth value and at least two others (0 if none)."""
    best = 0
    run: list[bool] = []
    prev_end = -1
    for start, end, matches in marks:
        if start < prev_end:  # overlapping mentions (a date inside a number): skip
            continue
        if run and _LIST_GAP.fullmatch(text, prev_end, start) is None:
            run = []
        run.append(matches)
        prev_end = end
        if any(run) and run.count(False) >= 2:
            best = max(best, len(run))
    return best


def _overlap(answer: Counter[str], reference: Counter[str]) -> tuple[float, float, float]:
    """(precision, recall, F1) of two token bags (0s when either is empty)."""
    # the size of ``answer & reference``, counted over the smaller bag (Counter's & walks
    # the left one: a long answer's bag for every one-sentence unit)
    small, large = (answer, reference) if len(answer) <= len(reference) else (reference, answer)
    common = sum(m for t, n in small.items() if (m := min(n, large[t])) > 0)
    if not common:
        return 0.0, 0.0, 0.0
    p = common / sum(answer.values())
    r = common / sum(reference.values())
    return p, r, 2 * p * r / (p + r)


def answer_facts(
    answer: str,
    ground_truth: str,
    keypoints: Sequence[str] = (),
    *,
    values: _Values | None = None,
    query: str = "",
    declined: Sequence[str] = (),
) -> AnswerFacts:
    """Overlap, containment, keypoint coverage and key-fact agreement of an answer.

    Tokens are content words for English and character bigrams for Chinese
    (:func:`ragtriage.text.content_tokens`); each text is tokenized once. What the
    ``query`` already says is not asked of the answer: a concise answer ("November 8,
    2013.") need not repeat the question's subject, so ground-truth words and names
    that the query holds are left out of the recall and of the key facts (when the
    ground truth says anything else). A keypoint is not stated by the ``declined``
    clauses of the answer ("… does not say when the due diligence was carried out").
    """
    na, ng = normalize(answer), normalize(ground_truth)
    answer_bag = _bag(content_tokens(answer))
    gt_bag = _bag(content_tokens(ground_truth))
    asked = set(content_tokens(query)) if query else set()
    # the question's words in any form ("employed" of "… employ in 2020?")
    asked_stems = {stem(t) for t in asked if t.isascii()}
    new_bag = (
        Counter(
            {
                t: n
                for t, n in gt_bag.items()
                if t not in asked and not (t.isascii() and stem(t) in asked_stems)
            }
        )
        if asked
        else gt_bag
    )
    p, r, f1 = _overlap(answer_bag, gt_bag)
    if new_bag and new_bag != gt_bag:
        r2 = _overlap(answer_bag, new_bag)[1]
        if r2 > r:
            r = r2
            f1 = 2 * p * r / (p + r) if p + r else 0.0
    if values is None:
        values = _values(ground_truth, answer)
    gt_tokens = sum(gt_bag.values())
    # names only count for short ground truths (see evaluate_rules), and not the ones the
    # question already names
    nq = normalize(query) if query else ""
    names = (
        tuple(n for n in extract_entities(ground_truth) if not (nq and _entity_in(n, nq)))
        if gt_tokens <= _NAMES_MAX_TOKENS
        else ()
    )
    coverage: float | None = None
    points = [(k, _bag(content_tokens(k))) for k in keypoints]
    points = [(k, bag) for k, bag in points if bag or normalize(k) in _POLAR]
    first_hit: bool | None = None
    if points:
        # what the answer asserts: its declining clauses left out
        kp_text = _outside(answer, tuple(declined)) if declined else answer
        kp_na = normalize(kp_text) if declined else na
        first_hit = _contains(kp_na, normalize(points[0][0]))
        covered = 0
        pieces: list[str] | None = None
        anchors_all = [p.text for p in question_parts(query)] if query else []
        # every subject of the question and the keypoints: a clause naming one of them is
        # about it (see _anchored_spans)
        others = [*anchors_all, *(n for k, _ in points for n in names_of(k))]
        for kp, bag in points:
            if normalize(kp) in _POLAR:  # a bare yes/no: the answer's opening word,
                # or its conclusion's ("… Thus, the answer is: yes, for two weeks.")
                view = answer_view(kp_text)
                hit = _keypoint_in(kp, bag, kp_text) or (
                    view.final_from != "whole answer" and _keypoint_in(kp, bag, view.final)
                )
                covered += hit
                if kp == points[0][0]:
                    first_hit = hit
                continue
            if _contains(kp_na, normalize(kp)):
                covered += 1
                continue
            # a keypoint naming a person or company must hold within one clause, line or
            # list item: "王建国：头孢；李娜：青霉素" does not cover "王建国青霉素"
            anchors = [*names_of(kp), *(a for a in anchors_all if a in kp)]
            said = bag
            if anchors:
                if pieces is None:
                    pieces = clauses(kp_text)
                # the clause must name the keypoint's subject itself
                spans = _anchored_spans(pieces, anchors, others)
                # and state the rest: the name's own words ("J. Hall") count once, there,
                # and a title before the name ("Mr. David Thompson") is no rest; the rest
                # is read from the keypoint's text with the names cut out, so no Chinese
                # pair straddles a name and its label ("长冯" of "审判长：冯某某")
                named = {t for a in anchors for t in content_tokens(a)} | TITLES
                rest = Counter(
                    {t: n for t, n in _bag(_tokens_without(kp, anchors)).items() if t not in named}
                )
                # nor what the question asks ("X. Morgan earlier" for "Who was arrested
                # earlier, X. Morgan or F. James?" is said by "the answer is X. Morgan")
                said = Counter({t: n for t, n in rest.items() if t not in asked}) or bag
                if not rest and len(anchors) >= 2:
                    # a keypoint that is its names alone pairs them ("书记员：刘某某"): one
                    # clause must name them all
                    spans = [c for c in spans if all(_names(a, c) for a in anchors)]
            else:
                spans = [kp_text]
            if any(_keypoint_in(kp, said, span) for span in spans):
                covered += 1
                if kp == points[0][0]:
                    first_hit = True
        coverage = covered / len(points)
    return AnswerFacts(
        exact=bool(ng) and na == ng,
        contained=bool(gt_bag) and _contains(na, ng),
        precision=p,
        recall=r,
        f1=f1,
        gt_tokens=gt_tokens,
        gt_values=tuple(
            v
            for v in values.gt
            if v in values.stated or v not in _asked_values(ground_truth, query)
        ),
        values_hit=values.hit,
        answer_values=values.answer,
        contradicted=values.contradicted,
        gt_names=names,
        names_hit=sum(1 for n in names if _entity_in(n, na)),
        keypoint_coverage=coverage,
        first_keypoint=first_hit,
    )


def _tokens_without(text: str, cut: Sequence[str]) -> list[str]:
    """Content tokens of ``text`` with each of ``cut`` taken out, each piece left
    tokenized on its own (no Chinese pair is made across a cut)."""
    pieces = [text]
    for c in sorted(cut, key=len, reverse=True):
        if c:
            pieces = [q for p in pieces for q in p.split(c)]
    return [t for p in pieces for t in content_tokens(p)]


def _names(anchor: str, clause: str) -> bool:
    """``clause`` names ``anchor`` (or spells out its initials)."""
    return _entity_in(anchor, normalize(clause)) or _spelled_out(anchor, clause)


def _anchored_spans(
    pieces: Sequence[str], anchors: Sequence[str], others: Sequence[str] = ()
) -> list[str]:
    """The clauses of ``pieces`` that name one of ``anchors``, each with the clause after
    it when that one names nobody of its own (no name, none of ``anchors`` or ``others``):
    a list goes on over a clause break ("performed by A, B, and a children's choir"), a
    clause about another subject ("李娜：对青霉素过敏" after "王建国：对头孢过敏") does not."""

    def names(c: str, of: Sequence[str]) -> bool:
        return any(_names(a, c) for a in of)

    spans = []
    for i, c in enumerate(pieces):
        if not names(c, anchors):
            continue
        nxt = pieces[i + 1] if i + 1 < len(pieces) else ""
        if nxt and not names_of(nxt) and not names(nxt, anchors) and not names(nxt, others):
            c = f"{c}, {nxt}"
        spans.append(c)
    return spans


def _rival_names(answer: str, gt: str, query: str) -> bool:
    """The answer names someone or something that neither the ground truth nor the
    query names."""
    known = normalize(gt + " " + query)
    return any(normalize(e) not in known for e in extract_entities(answer))


def strip_citations(answer: str) -> str:
    """The answer without citation markers such as ``[1]``, ``[2, 3]`` or ``【1】``."""
    return (
        " ".join(_CITATION.sub(" ", answer).split()) if "[" in answer or "【" in answer else answer
    )


_NON_NAME = lazy_compile(r"[\d.,%]+|亿元|万元|元|亿|万")


def _same_name(a: str, b: str) -> bool:
    """Two spellings of one name ("发行5亿元绿色公司" / "发行绿色公司"; "US" / "United
    States"): equal once numbers and amounts are set aside, or one holds the other, or
    one is the other's initials."""
    x, y = (normalize(_NON_NAME.sub("", t)) for t in (a, b))
    if not (x and y):
        return False
    return x in y or y in x or is_initials(a, b) or is_initials(b, a)


def _spelled_out(acronym: str, text: str) -> bool:
    """``text`` names ``acronym`` in full: capitalised words with its initials ("United
    Kingdom" for "UK")."""
    letters = acronym.replace(".", "")
    if not (
        1 < len(letters) <= 6 and letters.isascii() and letters.isalpha() and letters.isupper()
    ):
        return False
    pattern = r"\b" + r"\s+".join(f"{c}[a-z]+" for c in letters) + r"\b"
    return re.search(pattern, text) is not None


#: bare yes/no and before/after words and their opposites: a keypoint that is one of them
#: is stated only by an answer that opens with it ("After. …" does not state "before" by
#: quoting its dates), and the opposite word there contradicts it
_OPPOSITE_POLAR = {
    "yes": ("no",),
    "no": ("yes",),
    "before": ("after",),
    "after": ("before",),
    "earlier": ("later",),
    "later": ("earlier",),
    "是": ("不是", "否", "不"),
    "是的": ("不是", "否", "不"),
    "对": ("不对", "不"),
    "有": ("没有",),
    "否": ("是",),
    "不是": ("是",),
    "没有": ("有",),
    "之前": ("之后",),
    "之后": ("之前",),
    "更早": ("更晚",),
    "更晚": ("更早",),
}
_POLAR = frozenset(_OPPOSITE_POLAR).union(*_OPPOSITE_POLAR.values())


def _alternation(words: Iterable[str]) -> str:
    return "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))


#: a bare polar word opening a text, then punctuation ("No, they differ", "After. …",
#: "是的，…"): the answer's word, not a word of its first sentence ("No information …")
_POLAR_OPENING = lazy_compile(
    rf"\s*({_alternation(w for w in _POLAR if w.isascii())})(?=\s*[.,;:!—–-])"
    rf"|\s*({_alternation(w for w in _POLAR if not w.isascii())})(?=[，。,.;；:：！!])",
    re.IGNORECASE,
)


#: the words that lead a conclusion up to its answer ("Thus, the answer is: …", "综上所述，
#: 答案是…"), before a yes or no
_ANSWER_LEADS = (
    lazy_compile(
        r"\s*(?:(?:thus|therefore|hence|so|overall|in\s+(?:conclusion|summary|short))\b"
        r"[\s,:：]*)?(?:(?:the\s+)?(?:short\s+|final\s+|direct\s+)?answer\s*"
        r"(?:is\b|would\s+be\b)?[\s,:：]*)?",
        re.IGNORECASE,
    ),
    lazy_compile(r"\s*(?:综上所述|综上|因此|所以|总之)?[，,：:\s]*(?:答案(?:是|为)?[：:\s]*)?"),
)


def _polar_match(text: str) -> re.Match[str] | None:
    """The bare polar word opening ``text``, or opening it after the words that lead a
    conclusion to its answer."""
    m = _POLAR_OPENING.match(text)
    for lead in _ANSWER_LEADS:
        if m is not None:
            break
        led = lead.match(text)
        if led is not None and led.end() > 0:
            m = _POLAR_OPENING.match(text, led.end())
    return m


def _polar_opening(text: str) -> str | None:
    m = _polar_match(text)
    return None if m is None else (m.group(1) or m.group(2)).lower()


def _polar_conflict(example: Example, answer: str) -> tuple[str, str] | None:
    """(expected, found) when the ground truth's bare yes/no or before/after (a keypoint
    of its own, or the word the ground truth opens with) is answered by the opposite
    word opening the answer ("After. …" for "Before: …")."""
    found = _polar_opening(answer)
    if found is None:
        return None
    words = [normalize(k) for k in example.keypoints if normalize(k) in _OPPOSITE_POLAR]
    opening = _polar_opening(example.answer)
    if opening is not None:
        words.append(opening)
    for w in dict.fromkeys(words):
        if found in _OPPOSITE_POLAR.get(w, ()):
            return w, found
    return None


#: the items of a list: lines, and pieces parted by commas, 、, semicolons, colons or "and"
_LIST_SPLIT = lazy_compile(r"([\n、，;；：]|[,:](?!\d)|\s+and\s+|\s*(?:以及|和|与)\s*)")


def _items(text: str) -> list[str]:
    """The list items of ``text``; a piece before a colon is a label or a lead-in
    ("金额：500万元", "… are:"), no item."""
    parts = _LIST_SPLIT.split(text)
    pieces, delimiters = parts[::2], [*parts[1::2], ""]
    return [
        p.strip(" .。-*•")
        for p, d in zip(pieces, delimiters, strict=True)
        if d not in (":", "：") and has_content(p)
    ]


#: a question that asks for several things: "which examples", "what are", "哪些"
_ASKS_LIST = lazy_compile(
    r"\b(?:what|which)\s+(?:are|were)\b|\b(?:what|which)\s+(?:[a-z]+\s+){0,2}?"
    r"(?!(?:is|was|has|does|this|its)\b)[a-z]{3,}s\b|\blist\b|\bname\s+(?:the|all)\b"
    r"|哪些|哪几|有什么|包括什么",
    re.IGNORECASE,
)
#: a discourse word that opens a conclusion, no item of a list
_NO_ITEM = lazy_compile(r"(?:thus|therefore|hence|so|overall|综上所述|综上|因此|所以|总之)", re.I)


def _short_item(piece: str) -> bool:
    """A list item: a name or a short noun phrase (at most three words, six characters
    of Chinese)."""
    return len(content_tokens(piece)) <= (6 if has_cjk(piece) else 3)


def _list_substitution(example: Example, answer: str, whole: str) -> tuple[str, str] | None:
    """A list question ("which examples …", "哪些") whose ground truth lists three or more
    short items, answered with a list
    of as many short items, one of them new -- no word of the ground truth, mostly not
    the question's -- where a ground-truth item is missing ("… 美国、澳大利亚" for
    "… 美国、加拿大"): (missing item, the answer's item), else ``None``. ``answer`` is
    what the answer commits to, ``whole`` all of it (the item may be stated anywhere)."""
    if _ASKS_LIST.search(example.query) is None:
        return None
    truth = _items(example.answer)
    if len(truth) < 3 or not all(_short_item(t) for t in truth):
        return None
    gt_words = set(content_tokens(example.answer))
    asked = set(content_tokens(example.query))
    listed: list[str] = []
    new: list[str] = []
    for piece in _items(answer):
        if not _short_item(piece) or _NO_ITEM.fullmatch(piece):
            continue
        words = content_tokens(piece)
        if any(states_keypoint(t, piece) for t in truth):
            listed.append(piece)
        elif not gt_words.intersection(words) and sum(w in asked for w in words) * 2 < len(words):
            new.append(piece)
    if not new or not listed or len(listed) + len(new) != len(truth):
        return None
    # missing from the whole answer, not just from its short items
    missing = [t for t in truth if not states_keypoint(t, whole)]
    return (missing[0], new[0]) if missing else None


def _polar_agrees(example: Example, view: AnswerView) -> bool:
    """A yes/no question (the ground truth opens with its yes or no, and its keypoints,
    if any, ask nothing more) answered with the same word, the rest of the answer only
    the question's and the ground truth's own words ("No." for "No. It opened one in
    Texas."; "Yes, Acme opened a plant in Ohio."): the question is answered."""
    opening = _polar_opening(example.answer)
    if opening is None or opening not in ("yes", "no", "是", "是的", "否", "不是", "有", "没有"):
        return False
    if any(normalize(k) not in _POLAR for k in example.keypoints):
        return False
    said = view.final if view.final_from != "whole answer" else view.text
    m = _polar_match(said)
    if m is None or (m.group(1) or m.group(2)).lower() != opening:
        return False
    rest = said[m.end() :]
    known = set(content_tokens(example.query)) | set(content_tokens(example.answer))
    known_stems = {stem(t) for t in known if t.isascii()}
    return all(t in known or (t.isascii() and stem(t) in known_stems) for t in content_tokens(rest))


def _keypoint_in(kp: str, bag: Counter[str], text: str) -> bool:
    """Whether ``text`` states keypoint ``kp`` (its numbers, and enough of its words; a
    yes/no keypoint by the answer's opening word)."""
    polar = normalize(kp)
    if polar in _POLAR:
        return _polar_opening(text) == polar
    kv = _values(kp, text)
    if kv.gt and kv.hit < len(kv.gt):
        return False
    if kv.gt:
        # its numbers are stated (in any form: "2 weeks" ~ "two weeks"): the rest of its
        # words decide; a keypoint that is only amounts ("15000万元", stated as "1.5亿元")
        # has no rest, its scale and unit words ("万元") being part of them
        rest = kp
        for raw in kv.gt:
            rest = rest.replace(raw, " ")
        if all(t in _RANGE_PARTICLES for t in content_tokens(rest)) and _dates_stated_in_full(
            kp, text
        ):
            # (a date keypoint keeps its month words: "2021" is no "3 March 2021"; "起" of
            # "2023年5月22日起" is a particle, said by "从2023年5月22日开始")
            return True
        bag = Counter(
            {t: n for t, n in bag.items() if len(t) > 1 and not any(ch.isdigit() for ch in t)}
        )
        if not bag:
            return True
        # or without the Chinese pairs that straddle a number's unit ("年起" of "2016年起
        # 售罄", said by "2016年全部售罄"; "个斜" of "两个«斜型符号" still counts above)
        own = set(_tokens_without(kp, kv.gt))
        bare = Counter({t: n for t, n in bag.items() if t.isascii() or t in own})
        if (
            bare
            and bare != bag
            and _overlap(_bag(content_tokens(text)), bare)[1] >= (_KEYPOINT_RECALL)
        ):
            return True
    # a three-character Chinese term ("乙酸铵", two character pairs) is not stated by one
    # of its pairs ("乙酸钠"): half of a short word is no half of its meaning
    term = kp.strip()
    need = 1.0 if len(term) == 3 and all(is_cjk(c) for c in term) else _KEYPOINT_RECALL
    if need < 1.0 and _one_character_dropped(term, text):
        return True
    if _overlap(_bag(content_tokens(text)), bag)[1] >= need:
        return True
    # compared loosely, more than half its words ("worsening hypertension" is not said by
    # "if symptoms worsened"); all of them for a three-character Chinese term
    loose = _loose_recall(bag, text)
    return loose >= need if need == 1.0 else loose > _KEYPOINT_RECALL


#: what marks a date as the start or end of a span ("2023年5月22日起", "至2030年5月21日",
#: "自2019年以来"): said by any wording of the span ("从…开始计算", "到…结束")
_RANGE_PARTICLES = frozenset(("起", "止", "至", "到", "从", "自", "以来", "开始", "为止", "起算"))


def _dates_stated_in_full(keypoint: str, text: str) -> bool:
    """Every date of ``keypoint`` is in ``text`` with every field the keypoint gives
    (year, month, day, quarter): "3 March 2021" is not stated by "2021". True for a
    keypoint without dates."""
    wanted = extract_dates(keypoint)
    if not wanted:
        return True
    said = extract_dates(text)
    return all(
        any(
            (k.year is None or k.year == d.year)
            and (k.month is None or k.month == d.month)
            and (k.day is None or k.day == d.day)
            and (k.quarter is None or k.quarter == d.quarter)
            for d in said
        )
        for k in wanted
    )


def _one_character_dropped(term: str, text: str) -> bool:
    """``text`` states a Chinese term of four characters or more with one of them left
    out ("很难开花" for "难于开花", "保留原姓" for "保留其原姓"): a word dropped, none put in its
    place ("拉玛八世" changes "拉玛九世", it drops nothing)."""
    if len(term) < 4 or not all(is_cjk(c) for c in term):
        return False
    return any(term[:i] + term[i + 1 :] in text for i in range(len(term)))


#: Chinese words written more than one way, to the one spelling keypoints are compared
#: in (seasons, "the next year")
_ZH_SPELLINGS = {
    "春天": "春季",
    "夏天": "夏季",
    "秋天": "秋季",
    "冬天": "冬季",
    "第二年": "翌年",
    "次年": "翌年",
    "来年": "翌年",
}


def _loose(token: str) -> str:
    """A token as keypoints are compared loosely: an English word by its stem, a Chinese
    word by its one spelling."""
    return stem(token) if token.isascii() else _ZH_SPELLINGS.get(token, token)


def _loose_recall(bag: Counter[str], text: str) -> float:
    """Recall of ``bag`` in ``text`` with words compared by :func:`_loose` ("swooping"
    is said by "swoops", "秋季" by "秋天", "翌年" by "第二年"), a hyphenated word by its
    parts ("fairy-tale" by "fairy tales") and an English word by a stem sharing most of
    it ("illustrations" by "illustrated", see :func:`_same_root`)."""
    if not text.isascii():
        for variant, spelling in _ZH_SPELLINGS.items():
            if variant in text:
                text = text.replace(variant, spelling)
    said = Counter(map(_loose, content_tokens(text)))
    want: Counter[str] = Counter()
    for token, n in bag.items():
        want[_loose(token)] += n
    total = sum(want.values())
    if not total:
        return 0.0
    hit = 0
    roots: list[str] | None = None
    for word, n in want.items():
        if said[word]:
            hit += min(n, said[word])
            continue
        if not word.isascii():
            continue
        if "-" in word:
            parts = [_loose(p) for p in word.split("-") if p]
            if parts and all(said[p] for p in parts):
                hit += n
            continue
        if roots is None:
            roots = [w for w in said if w.isascii()]
        if any(_same_root(word, w) for w in roots):
            hit += n
    return hit / total


#: the shared beginning two stems need to count as one word when compared loosely
_ROOT_MIN = 6
_ROOT_SHARE = 0.8


def _same_root(a: str, b: str) -> bool:
    """Two English stems that share their first six letters or more, at least four
    fifths of the shorter ("illustration" / "illustrat", "industry" / "industri"; not
    "contract" / "contradict")."""
    short = min(len(a), len(b))
    if short < _ROOT_MIN or a[:_ROOT_MIN] != b[:_ROOT_MIN]:
        return False
    n = _ROOT_MIN
    while n < short and a[n] == b[n]:
        n += 1
    return n >= _ROOT_SHARE * short


def states_keypoint(keypoint: str, text: str) -> bool:
    """Whether ``text`` states ``keypoint`` (all its numbers, half its other words)."""
    return _keypoint_in(keypoint, _bag(content_tokens(keypoint)), text)


def missing_facts(example: Example, answer: str) -> tuple[str, ...]:
    """What of the ground truth ``answer`` leaves out: its keypoints not stated, or
    (without keypoints) its statements not made."""
    text = answer_view(answer).text
    if example.keypoints:
        return tuple(kp for kp in example.keypoints if not states_keypoint(kp, text))
    return gt_coverage(example.answer, text).missing


#: English number words as the digits a text may give instead ("nine" / "9")
_NUMBER_WORDS = {
    w: str(i)
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen "
        "fourteen fifteen sixteen seventeen eighteen nineteen twenty".split()
    )
} | {
    w: str(10 * i)
    for i, w in enumerate("thirty forty fifty sixty seventy eighty ninety".split(), 3)
}


@lru_cache(maxsize=256)
def _answer_bag(text: str) -> Counter[str]:
    """``_bag(content_tokens(text))`` of an answer, cached: the coverage of each ground-
    truth statement reads it. Callers only read it."""
    return _bag(content_tokens(text))


def _bag(tokens: Sequence[str]) -> Counter[str]:
    """Token counts with English number words written as digits ("nine" -> "9"), so a
    number given in the other form is the same token on both sides."""
    bag = Counter(tokens)
    if _NUMBER_WORDS.keys().isdisjoint(bag):
        return bag
    return Counter(_NUMBER_WORDS.get(t, t) for t in tokens)


def _judgement(example: Example, label: AnswerLabel, reason: str, rule: str) -> Judgement:
    return Judgement(
        example_id=example.example_id, label=label, reason=reason, judge="rules", rule=rule
    )


# -- ground-truth coverage ------------------------------------------------------------

#: a keypoint counts as covered when the answer holds more than this share of its words;
#: a ground-truth unit when it holds at least this share (``weights.json``; read once:
#: the coverage functions that read them are cached)
_KEYPOINT_RECALL = shipped_weights().answer["keypoint_recall"]
_UNIT_RECALL = shipped_weights().answer["unit_recall"]
#: the other grade thresholds (long-form coverage: at or above ``full_coverage`` -> may be
#: correct; below ``partial_coverage`` -> incorrect; token overlap; keypoint share) are
#: read from :func:`~ragtriage.diagnosis.weights.active_weights` at each verdict


@dataclass(frozen=True, slots=True)
class GTCoverage:
    """How much of a long-form ground truth an answer covers: the ground truth's sentences
    (its *units*), and which of them the answer states (most of the unit's content words,
    and every number and date of it)."""

    units: tuple[str, ...]
    covered: tuple[bool, ...]

    @property
    def share(self) -> float | None:
        return sum(self.covered) / len(self.units) if self.units else None

    @property
    def missing(self) -> tuple[str, ...]:
        return tuple(u for u, c in zip(self.units, self.covered, strict=True) if not c)


#: a semicolon between two statements of one sentence ("X is …; Y indicates …")
_SEMICOLON = lazy_compile(r"\s*[;；]\s*")


def gt_units(ground_truth: str, *, semicolons: bool = False) -> tuple[str, ...]:
    """The ground truth's fact units: its sentences with content (one unit for a short
    ground truth); with ``semicolons``, a sentence's semicolon-separated statements
    apart."""
    units = [
        u
        for s in split_sentences(ground_truth)
        for u in (
            _SEMICOLON.split(s.text)
            if semicolons and (";" in s.text or "；" in s.text)
            else (s.text,)
        )
        if content_tokens(u)
    ]
    return tuple(units) if units else (ground_truth,)


@lru_cache(maxsize=512)
def gt_coverage(ground_truth: str, answer: str, *, semicolons: bool = False) -> GTCoverage:
    """Which fact units of the ground truth the answer covers (see :class:`GTCoverage`;
    ``semicolons``: see :func:`gt_units`)."""
    return _coverage(
        gt_units(ground_truth, semicolons=semicolons),
        _answer_bag(answer),
        lambda: _answer_pool(answer),
        lambda: extract_dates(answer),
    )


def _coverage(
    units: tuple[str, ...],
    bag: Counter[str],
    pool: Callable[[], QuantityPool],
    dates: Callable[[], Sequence[DateMention]],
) -> GTCoverage:
    """:func:`gt_coverage` over a text's token ``bag``, its quantities and dates (read
    only for a statement with most of its words there and numbers or dates of its own)."""
    covered = []
    for unit in units:
        words = _bag(content_tokens(unit))
        recall = _overlap(bag, words)[1] if words else 0.0
        covered.append(recall >= _UNIT_RECALL and _states_values(unit, pool, dates))
    return GTCoverage(units, tuple(covered))


def _states_values(
    unit: str, pool: Callable[[], QuantityPool], dates: Callable[[], Sequence[DateMention]]
) -> bool:
    """Whether a text states every number and date of ``unit`` (its quantities and
    dates given lazily)."""
    uq = extract_quantities(unit)
    if uq:
        found = pool()
        if not all(found.matches(q) for q in uq):
            return False
    ud = extract_dates(unit)
    if ud:
        ad = dates()
        return all(any(dates_match(d, a) for a in ad) for d in ud)
    return True


# -- the rules judge's helpers ------------------------------------------------------------


def _declined_parts(example: Example, view: AnswerView) -> list[QuestionPart]:
    """Parts of a multi-part question that the answer declines while answering another."""
    if not view.declines:
        return []
    parts = question_parts(example.query)
    if len(parts) < 2:
        return []
    declined = [p for p in parts if any(mentions_part(p, d) for d in view.declining_clauses)]
    rest = _outside(view.text, view.declining_clauses)
    answered = [p for p in parts if p not in declined and mentions_part(p, rest)]
    if not answered:
        return []
    if not declined:
        if any(_EVERY_PART.search(c) for c in view.declining_clauses):
            return []  # "… I cannot tell you either patient's history": every part
        # "… so I can't say which went public earlier": the declined part is unnamed
        return [QuestionPart(view.declining_clauses[0], "clause")] if view.declining_clauses else []
    return declined


#: a decline of every part of a question at once
_EVERY_PART = lazy_compile(
    r"\b(?:either|neither|both|any\s+of\s+(?:them|the\s+\w+)|all\s+(?:of\s+)?(?:them|these|those))\b"
    r"|两者|二者|两人|两家|均|都",
    re.IGNORECASE,
)


def _asserted_coverage(
    gt: str, answer: str, declining: tuple[str, ...], *, semicolons: bool = False
) -> GTCoverage:
    """:func:`gt_coverage` of what ``answer`` asserts, its ``declining`` clauses left
    out. Leaving text out covers nothing new: when the whole answer covers no statement,
    neither does the rest (and the rest is not read)."""
    full = gt_coverage(gt, answer, semicolons=semicolons)
    if not declining or not any(full.covered):
        return full
    # its numbers and dates are the answer's outside the declining clauses (a clause
    # ends at punctuation: what it leaves out reads no number of the rest)
    cut = _spans_of(answer, declining)

    def kept(start: int, end: int) -> bool:
        return not any(s < end and start < e for s, e in cut)

    return _coverage(
        gt_units(gt, semicolons=semicolons),
        _answer_bag(_outside(answer, declining)),
        lambda: QuantityPool(q for q in extract_quantities(answer) if kept(q.start, q.end)),
        lambda: [d for d in extract_dates(answer) if kept(d.start, d.end)],
    )


def _spans_of(text: str, pieces: tuple[str, ...]) -> list[tuple[int, int]]:
    """Where each of ``pieces`` occurs in ``text`` (every occurrence)."""
    out = []
    for piece in pieces:
        at = text.find(piece) if piece else -1
        while at >= 0:
            out.append((at, at + len(piece)))
            at = text.find(piece, at + len(piece))
    return out


def _outside(text: str, sentences: tuple[str, ...]) -> str:
    out = text
    for s in sentences:
        out = out.replace(s, " ")
    return out


def _keypoint_put_otherwise(
    keypoints: Sequence[str], gt: str, committed: str, whole: str, *, uncovered: bool
) -> tuple[str, str] | None:
    """(keypoint, what the answer puts in its place): between the ground truth's own words
    around an uncovered keypoint (:func:`keypoint_replaced`, when some keypoint is
    uncovered), or the keypoint with one sibling word changed (:func:`keypoint_variant`)."""
    if uncovered:
        for point in keypoints:
            instead = keypoint_replaced(point, gt, committed)
            if instead is not None and not _keypoint_in(point, _bag(content_tokens(point)), whole):
                return point, instead
    for point in keypoints:
        variant = keypoint_variant(point, committed)
        if variant is not None:
            return point, variant
    return None


def _declines_the_question(view: AnswerView, query: str) -> bool:
    """A declining clause of the answer is about the question: it refuses to answer, or
    names a third of the question's words -- not a side matter ("… though the record
    doesn't say how severe it is") after a right answer."""
    asked = set(content_tokens(query))
    for clause in view.declining_clauses:
        if _REFUSES.search(clause):
            return True
        if asked and 3 * len(asked & set(content_tokens(clause))) >= len(asked):
            return True
    return not view.declining_clauses


def _names_question(clause: str, query: str) -> bool:
    """``clause`` names a third of the question's words; in Chinese, of its characters
    (the question's character pairs miss a shortened name: "中联部" for "中共中央对外联络部")."""
    if has_cjk(query):
        asked = {c for c in query if is_cjk(c)}
        return 3 * len(asked & set(clause)) >= len(asked)
    words = set(content_tokens(query))
    return bool(words) and 3 * len(words & set(content_tokens(clause))) >= len(words)


def _reviews_then_declines(view: AnswerView, gt: str, query: str) -> bool:
    """One paragraph that reviews the documents and declines in its last sentence ("The
    passage describes … It does not give …, so I can't answer that"): the decline is of
    the question (it refuses to answer, or names a third of the question's words), not
    of what lies beyond an answer given ("… do not describe any other complications") or
    of a side matter ("… does not say whether he appealed"); the review says little of
    the ground truth and contradicts none of its values. One sentence may hold both,
    when it ends refusing to answer ("资料只讲到……，没有提到……，所以我无法回答").
    The review is what lies outside the declining clauses."""
    if not (view.final_from == "whole answer" and view.last_declines):
        return False
    last = view.declines[-1]
    if view.n_sentences < 2:
        if not (
            view.declining_clauses
            and (
                _REFUSES.search(view.declining_clauses[-1])
                or _CANNOT_SAY.search(view.declining_clauses[-1])
            )
            and not view.text.startswith(view.declining_clauses[0])
        ):
            return False
        last = view.declining_clauses[-1]
    if _BEYOND.search(last) or _values(gt, _slot_clauses(view.text, query)).contradicted:
        return False
    if not (_REFUSES.search(last) or _CANNOT_SAY.search(last)) and not _names_question(last, query):
        return False
    truth = set(content_tokens(gt))
    declined = view.declines if view.n_sentences >= 2 else view.declining_clauses
    review = set(content_tokens(_outside(view.text, declined)))
    return bool(truth) and len(truth & review) < 0.5 * len(truth)


#: where a review of the documents ends one statement and starts another
_CLAUSE_END = lazy_compile(r"[,;:.!?，；：。！？\n]")


def _slot_clauses(text: str, query: str) -> str:
    """The clauses of ``text`` that name what the question asks for: at least half of
    its words (stems) after its last possessive ("return on equity" of "What was
    Acme's return on equity?", "净资产收益率" of "…的净资产收益率是多少"), else of its
    words other than the names it gives. A review that lists other figures ("a debt
    ratio of 40%") before declining the asked one states nothing in its place. All of
    ``text`` when the question asks for nothing beyond its names."""
    slot = _asked_words(query)
    if not slot:
        return text
    return "\n".join(
        c
        for c in _CLAUSE_END.split(text)
        if 2 * len(slot.intersection(stem(t) for t in content_tokens(c))) >= len(slot)
    )


_POSSESSIVE = lazy_compile(r"['’]s\b|的")


def _asked_words(query: str) -> frozenset[str]:
    named = {stem(t) for e in extract_entities(query) for t in content_tokens(e)}
    for part in (_POSSESSIVE.split(query)[-1], query):
        words = {stem(t) for t in content_tokens(part) if not t[:1].isdigit()} - named
        if words:
            return frozenset(words)
    return frozenset()


def _gt_facts_stated(example: Example, answer: str, coverage: GTCoverage) -> tuple[str, ...]:
    """The ground truth's amounts and keypoints that ``answer`` states, other than the
    ones the question itself gives, and the statements it makes. Dates do not count: a review of the documents shares
    the question's year with every event it lists ("2022年" for "2022年12月")."""
    nq = normalize(example.query)
    pool = _answer_pool(answer)
    out = [
        q.raw
        for q in extract_quantities(example.answer)
        if normalize(q.raw) not in nq and pool.matches(q)
    ]
    # a ground-truth statement made whole (most of its words, all its numbers)
    out += [u for u, hit in zip(coverage.units, coverage.covered, strict=True) if hit]
    q_tokens = set(content_tokens(example.query))
    for kp in example.keypoints:
        bag = _bag(content_tokens(kp))
        if set(bag) <= q_tokens:
            continue
        # the keypoint's own words, not the question's ("凉茶店" is not stated by
        # "凉茶舖", the question's subject)
        own = Counter({t: n for t, n in bag.items() if t not in q_tokens})
        if _keypoint_in(kp, own, answer):
            out.append(kp)
    return tuple(dict.fromkeys(out))


def _committed(view: AnswerView) -> str:
    """The part of the answer that states the answer: the conclusion of a reasoning
    answer when it states something itself, else the whole answer."""
    if view.final_from == "whole answer" or view.final_declines:
        return view.text
    return view.final if content_tokens(view.final) else view.text


# -- the rules judge: one check per declared rule -----------------------------------------


class _Case:
    """One answer under evaluation: what the checks read, each value computed once, on
    first use (a check that decides early leaves the rest uncomputed)."""

    def __init__(self, example: Example, answer: str, config: DiagnosisConfig) -> None:
        self.example = example
        self.config = config
        self.view = answer_view(answer)
        self.ans = self.view.text

    @cached_property
    def gt(self) -> str:
        return self.example.answer.strip()

    def undecidable(self) -> Judgement:
        return Judgement(
            example_id=self.example.example_id,
            label=None,
            judge="rules",
            undetermined_reason="answer_evaluation: ground truth has no comparable content",
        )

    @cached_property
    def gt_has_content(self) -> bool:
        return bool(content_tokens(self.gt))

    @cached_property
    def na(self) -> str:
        return normalize(self.ans)

    @cached_property
    def ng(self) -> str:
        return normalize(self.gt)

    @cached_property
    def coverage(self) -> GTCoverage:
        return gt_coverage(self.gt, self.ans)

    @cached_property
    def contained(self) -> bool:
        return _contains(self.na, self.ng)

    # a reasoning answer abstains when its conclusion declines; a plain answer when it
    # says little beyond declining (substantive wrong content is an answer, not a refusal)
    # a multi-part question answered for one part and declined for another (an answer
    # that declines in the end with nothing of the ground truth stated, and nothing
    # contradicting it, declined every part: an abstention)
    @cached_property
    def declined(self) -> list[QuestionPart]:
        return _declined_parts(self.example, self.view)

    @cached_property
    def concludes_declining(self) -> bool:
        view = self.view
        return (
            (view.final_declines if view.final_from != "whole answer" else False)
            or is_abstention(self.ans, self.example.query)
            or (not self.declined and _reviews_then_declines(view, self.gt, self.example.query))
        )

    # an answer that declines a part covers the ground truth statement by statement,
    # the statements of one sentence apart ("X means …; as for Y, I can't say")
    # (what it asserts: its declining clauses cover nothing)
    @cached_property
    def by_statement(self) -> GTCoverage:
        if self.declined and not self.contained:
            return _asserted_coverage(
                self.gt, self.ans, self.view.declining_clauses, semicolons=True
            )
        return self.coverage

    @cached_property
    def declines(self) -> bool:
        return _has_cue(self.ans) or bool(self.view.declines)

    # what it asserts, its declining clauses left out ("…均未包含既往史，因此无法回答两人的
    # 过敏史" repeats the ground truth's words without stating them)
    @cached_property
    def asserted(self) -> GTCoverage:
        return _asserted_coverage(self.gt, self.ans, self.view.declining_clauses)

    @cached_property
    def declines_in_the_end(self) -> bool:
        """It declines (in its conclusion, or says little else), does not contain the
        ground truth and asserts under half of it."""
        return (
            self.declines
            and not self.contained
            and self.concludes_declining
            and (self.asserted.share or 0.0) < 0.5
        )

    @cached_property
    def stated_before_declining(self) -> tuple[str, ...]:
        return _gt_facts_stated(self.example, self.ans, self.asserted)

    # numbers and dates: conflicts in what the answer commits to (the conclusion of a
    # reasoning answer, whose review of the documents may quote other years), hits anywhere
    @cached_property
    def committed(self) -> str:
        return _committed(self.view)

    @cached_property
    def value_reading(self) -> tuple[_Values, _Values]:
        """(values, said): the answer's values against the ground truth's, conflicts read
        in what it commits to, and what the conflict's reason quotes."""
        gt, ans, view, committed = self.gt, self.ans, self.view, self.committed
        values = _values(gt, ans)
        said = values
        # an unmarked closing paragraph after a body that states every ground-truth amount
        # is a remark, not the answer ("Together these events lifted operating income to
        # $250 million" after the listed $150 million): its other amounts are no conflict
        gt_amounts = extract_quantities(gt)
        remark = (
            view.final_from == "last paragraph"
            and bool(gt_amounts)
            and all(
                QuantityPool(extract_quantities(ans[: max(0, len(ans) - len(committed))])).matches(
                    q
                )
                for q in gt_amounts
            )
        )
        if committed is not ans and not remark:
            in_final = _values(gt, committed)
            if in_final.answer:
                said = in_final
                # a date the answer states anywhere is not contradicted by the conclusion's
                # summary of it ("between July and August 2021" for 30 June - 1 September)
                # -- but it is by another year ("成立于4622年"); an amount always is
                gt_dates = extract_dates(gt)
                gt_raw = {d.raw for d in gt_dates}
                final_dates = [
                    a
                    for a in extract_dates(committed)
                    if not any(dates_match(g, a) for g in gt_dates)
                ]
                summary = all(any(_near_date(a, g) for g in gt_dates) for a in final_dates)
                kept = tuple(
                    v
                    for v in in_final.contradicted
                    if not (v in gt_raw and v in values.stated and summary)
                )
                values = replace(values, contradicted=kept, listed=in_final.listed)
        # a number the question itself states ("the last 16 match") is given, not a slot
        # the answer fills: another unitless number ("the same eleven") does not
        # contradict it
        given = _given_numbers(gt, self.example.query)
        if given and values.contradicted:
            values = replace(
                values, contradicted=tuple(v for v in values.contradicted if v not in given)
            )
        # a value the answer gives for another event of the ground truth's kind ("23 June:
        # he slept better" beside the ground truth's "discharged on 24 June") is an extra
        # detail, not the ground truth's value stated otherwise: a contradiction needs a
        # competing value in a clause about the same slot
        if values.contradicted:
            kept = tuple(v for v in values.contradicted if not _other_slot(v, gt, ans))
            if kept != values.contradicted:
                values = replace(values, contradicted=kept)
        return values, said

    @property
    def values(self) -> _Values:
        return self.value_reading[0]

    @cached_property
    def choice(self) -> ChoiceConflict | None:
        return choice_conflict(self.example.query, self.gt, self.committed)

    @cached_property
    def facts(self) -> AnswerFacts:
        return answer_facts(
            self.ans,
            self.gt,
            self.example.keypoints,
            values=self.values,
            query=self.example.query,
            declined=self.view.declining_clauses,
        )

    @cached_property
    def keypoints_uncovered(self) -> bool:
        return self.facts.keypoint_coverage is not None and self.facts.keypoint_coverage < 1.0


#: a verdict of a check: (label, reason), or ``None`` when the check does not decide
_Decision = tuple[AnswerLabel, str] | None


@dataclass(frozen=True, slots=True)
class _Check:
    """One step of the evaluation: the rule it decides by (``None``: a guard that finds
    the answer undecidable) and how."""

    rule: AnswerRule | None
    run: Callable[[_Case], Judgement | None]


#: the evaluation's steps, in order (filled by the decorators below)
_CHECKS: list[_Check] = []


def _decides(name: str) -> Callable[[Callable[[_Case], _Decision]], Callable[[_Case], _Decision]]:
    """Register a check deciding by the declared rule ``name`` (unknown: an error at
    import)."""
    rule = answer_rule(name)

    retirable = rule.step == "contradiction"

    def register(check: Callable[[_Case], _Decision]) -> Callable[[_Case], _Decision]:
        def run(c: _Case) -> Judgement | None:
            if retirable and rule.name in active_weights().retired:
                return None  # switched off in the weights (weights.json's retired_rules)
            found = check(c)
            return None if found is None else _judgement(c.example, found[0], found[1], rule.name)

        _CHECKS.append(_Check(rule, run))
        return check

    return register


def _undecidable_when(test: Callable[[_Case], bool]) -> Callable[[_Case], bool]:
    """Register a guard: the answer is undecidable when ``test`` holds."""

    def run(c: _Case) -> Judgement | None:
        return c.undecidable() if test(c) else None

    _CHECKS.append(_Check(None, run))
    return test


# -- an unanswerable question


@_decides("unanswerable_guess")
def _unanswerable_guess(c: _Case) -> _Decision:
    view = c.view
    if c.example.answerable or not (
        view.guesses and not is_abstention(view.final, c.example.query)
    ):
        return None
    return AnswerLabel.INCORRECT, "declines, then guesses an answer the corpus cannot support"


@_decides("unanswerable_abstain")
def _unanswerable_abstain(c: _Case) -> _Decision:
    view = c.view
    if c.example.answerable:
        return None
    if not view.text or view.final_declines or is_abstention(view.text, c.example.query):
        where = (
            "" if view.final_from == "whole answer" else f" (conclusion, from {view.final_from!r})"
        )
        return AnswerLabel.ABSTAIN, f"abstained on an unanswerable question{where}"
    return None


@_decides("unanswerable_answered")
def _unanswerable_answered(c: _Case) -> _Decision:
    if c.example.answerable:
        return None
    return AnswerLabel.INCORRECT, "answered a question the corpus cannot answer"


# -- an empty or exact answer


@_undecidable_when
def _empty_without_truth(c: _Case) -> bool:
    return not c.ans and not c.gt_has_content


@_decides("empty")
def _empty(c: _Case) -> _Decision:
    return (AnswerLabel.ABSTAIN, "empty answer") if not c.ans else None


@_decides("exact")
def _exact(c: _Case) -> _Decision:
    if c.ng and c.na == c.ng:
        return AnswerLabel.CORRECT, "matches the ground truth"
    return None


@_undecidable_when
def _truth_without_content(c: _Case) -> bool:
    return not c.gt_has_content


# -- what the answer declines


@_decides("partial_abstention")
def _declines_a_part(c: _Case) -> _Decision:
    declined = c.declined
    if not declined or c.contained:
        return None
    by_statement = c.by_statement
    if (by_statement.share or 0.0) >= active_weights().answer["full_coverage"]:
        return None
    if (
        c.concludes_declining
        and not _gt_facts_stated(c.example, c.ans, by_statement)
        and not _values(c.gt, c.ans).contradicted
    ):
        return None
    names = ", ".join(repr(p.text) for p in declined)
    n_stated, n_units = sum(by_statement.covered), len(by_statement.units)
    return (
        AnswerLabel.INCORRECT,
        f"partial abstention: declines {names} while answering the rest "
        f"(covers {n_stated}/{n_units} ground-truth statements)",
    )


@_decides("partial_abstention")
def _states_then_declines(c: _Case) -> _Decision:
    if not c.declines_in_the_end:
        return None
    stated = c.stated_before_declining
    if not stated:
        return None
    # it answers part of the question before declining the rest: a partial abstention,
    # which fails the question (the anonymous "the Norwegian group or the Spanish
    # producer?" the part lists cannot name)
    view = c.view
    return (
        AnswerLabel.INCORRECT,
        f"partial abstention: states {_show(stated)} of the ground truth, then declines "
        f"({view.declining_clauses[0][:80]!r})"
        if view.declining_clauses
        else f"partial abstention: states {_show(stated)} of the ground truth, then declines",
    )


@_decides("abstain")
def _abstains(c: _Case) -> _Decision:
    if not c.declines_in_the_end:
        return None
    view = c.view
    where = "" if view.final_from == "whole answer" else f" in its conclusion ({view.final_from})"
    return AnswerLabel.ABSTAIN, f"declines to answer{where}"


# -- a statement the ground truth contradicts (the first that fires decides)


@_decides("polar_conflict")
def _polar_flip(c: _Case) -> _Decision:
    flip = _polar_conflict(c.example, c.ans)
    if flip is None:
        return None
    return AnswerLabel.INCORRECT, f"answers {flip[1]!r} where the ground truth says {flip[0]!r}"


@_decides("impossible_date")
def _impossible_date(c: _Case) -> _Decision:
    gt_dates = extract_dates(c.gt)
    impossible = impossible_dates(c.committed) if gt_dates else []
    if not impossible or c.values.contradicted:
        return None
    return (
        AnswerLabel.INCORRECT,
        f"states {impossible[0]!r}, a date no calendar has, where the ground truth "
        f"gives {_show(tuple(d.raw for d in gt_dates))}",
    )


@_decides("value_conflict")
def _value_conflict(c: _Case) -> _Decision:
    values, said = c.value_reading
    if not values.contradicted:  # decided without tokenizing: a different number or date
        return None
    return (
        AnswerLabel.INCORRECT,
        f"numbers/dates disagree: ground truth {_show(values.contradicted)}, "
        f"answer {_show(said.answer)}",
    )


# a value the answer states otherwise: behind a bound, at another rank or grade


@_decides("bound_conflict")
def _bound_conflict(c: _Case) -> _Decision:
    found = bound_conflict(c.gt, c.committed)
    if found is None:
        return None
    return (
        AnswerLabel.INCORRECT,
        f"states {found[1]!r}, a bound that excludes the ground truth's {found[0]!r}",
    )


@_decides("rank_conflict")
def _rank_conflict(c: _Case) -> _Decision:
    found = rank_conflict(c.gt, c.committed)
    if found is None:
        return None
    return (
        AnswerLabel.INCORRECT,
        f"ranks it {found[1]!r} where the ground truth ranks it {found[0]!r}",
    )


@_decides("numeral_conflict")
def _numeral_conflict(c: _Case) -> _Decision:
    found = numeral_conflict(c.gt, c.committed)
    if found is None:
        return None
    return AnswerLabel.INCORRECT, f"grades it {found[1]!r} where the ground truth says {found[0]!r}"


@_decides("ordinal_conflict")
def _ordinal_conflict(c: _Case) -> _Decision:
    found = ordinal_conflict(c.gt, c.committed)
    if found is None:
        return None
    return AnswerLabel.INCORRECT, f"gives {found[1]!r} where the ground truth gives {found[0]!r}"


@_decides("count_conflict")
def _count_conflict(c: _Case) -> _Decision:
    # a count of the thing a "how many" question asks, other than the ground truth's
    found = count_conflict(c.example.query, c.gt, c.committed)
    if found is None:
        return None
    return AnswerLabel.INCORRECT, f"counts {found[1]!r} where the ground truth counts {found[0]!r}"


# order: the same facts attached to other events, or a name replaced in place


@_decides("fact_swap")
def _fact_swap(c: _Case) -> _Decision:
    swaps = fact_swaps(c.gt, c.committed)
    if not swaps:
        return None
    sw = swaps[0]
    return (
        AnswerLabel.INCORRECT,
        f"{sw.kind}s exchanged between events: the ground truth ties {sw.first!r} and "
        f"{sw.second!r} the other way round",
    )


@_decides("name_substituted")
def _name_substituted(c: _Case) -> _Decision:
    for s in substituted_names(c.gt, c.committed, c.example.query):
        if not _same_name(s.missing, s.instead):
            return (
                AnswerLabel.INCORRECT,
                f"names {s.instead!r} where the ground truth names {s.missing!r}",
            )
    return None


@_decides("direction_flip")
def _direction_flip(c: _Case) -> _Decision:
    flipped = direction_flips(c.gt, c.committed)
    if not flipped:
        return None
    return (
        AnswerLabel.INCORRECT,
        f"states {_show(tuple(flipped))} with the opposite direction of change",
    )


@_decides("opposite_term")
def _opposite_term(c: _Case) -> _Decision:
    opposite = opposite_terms(c.gt, c.committed) or negated_terms(c.gt, c.committed)
    if not opposite:
        return None
    return (
        AnswerLabel.INCORRECT,
        f"says {opposite[0][1]!r} where the ground truth says {opposite[0][0]!r}",
    )


@_decides("list_substitution")
def _listed_otherwise(c: _Case) -> _Decision:
    swapped = _list_substitution(c.example, c.committed, c.ans)
    if swapped is None:
        return None
    return (
        AnswerLabel.INCORRECT,
        f"lists {swapped[1]!r} where the ground truth lists {swapped[0]!r}",
    )


# the ground truth's own words dealt out otherwise: between two statements, two names


@_decides("crossed_terms")
def _crossed_terms(c: _Case) -> _Decision:
    pair = crossed_terms(c.gt, c.committed)
    if pair is None:
        return None
    return (
        AnswerLabel.INCORRECT,
        f"deals the ground truth's two statements out crosswise: puts {pair[0]!r} with {pair[1]!r}",
    )


@_decides("measures_swapped")
def _measures_swapped(c: _Case) -> _Decision:
    pair = measures_swapped(c.gt, c.committed)
    if pair is None:
        return None
    return (
        AnswerLabel.INCORRECT,
        f"exchanges the ground truth's measure words: {pair[1]!r} where the ground truth "
        f"says {pair[0]!r}",
    )


@_decides("roles_swapped")
def _roles_swapped(c: _Case) -> _Decision:
    pair = roles_swapped(c.gt, c.committed)
    if pair is None:
        return None
    return (
        AnswerLabel.INCORRECT,
        f"gives another name the ground truth's role: {pair[1]!r} where the ground truth "
        f"says {pair[0]!r}",
    )


@_decides("order")
def _order(c: _Case) -> _Decision:
    ex = c.example
    order = order_conflict(ex.query, c.gt, c.ans, keypoints=ex.keypoints, final=c.view.final)
    return None if order is None else (AnswerLabel.INCORRECT, order)


@_decides("choice_time")
def _choice_in_time(c: _Case) -> _Decision:
    choice = c.choice
    if choice is None or not choice.about_time:
        return None
    return (
        AnswerLabel.INCORRECT,
        f"picks {choice.found!r} where the ground truth picks {choice.expected!r}",
    )


@_decides("choice")
def _choice(c: _Case) -> _Decision:
    choice = c.choice
    if choice is None:
        return None
    return (
        AnswerLabel.INCORRECT,
        f"picks {choice.found!r} where the ground truth picks {choice.expected!r}",
    )


@_decides("entity_value")
def _entity_value(c: _Case) -> _Decision:
    committed = c.committed
    gt_quantities = extract_quantities(c.gt)
    answer_quantities = extract_quantities(committed)
    replaced = entity_value_conflict(
        c.example.query,
        c.gt,
        committed,
        skip=[
            q
            for q in answer_quantities
            if _derived(committed, q)
            or _approximates(committed, q, gt_quantities)
            or _same_span(q, answer_quantities, gt_quantities)
        ],
    )
    if replaced is None:
        return None
    return (
        AnswerLabel.INCORRECT,
        f"states {replaced.found!r} for {replaced.entity!r} where the ground truth has "
        f"{replaced.expected!r} ({replaced.clause[:80]!r})",
    )


@_decides("slot_conflict")
def _slot_conflict(c: _Case) -> _Decision:
    if not c.keypoints_uncovered:
        return None
    ex = c.example
    for point in ex.keypoints:
        conflict = slot_conflict(point, c.committed, ex.query, ground_truth=c.gt)
        if conflict is not None and not _keypoint_in(point, _bag(content_tokens(point)), c.ans):
            return (
                AnswerLabel.INCORRECT,
                f"states {conflict.found!r} where the ground truth has {conflict.expected!r} "
                f"({conflict.clause[:80]!r})",
            )
    return None


@_decides("keypoint_replaced")
def _keypoint_replaced(c: _Case) -> _Decision:
    put = _keypoint_put_otherwise(
        c.example.keypoints, c.gt, c.committed, c.ans, uncovered=c.keypoints_uncovered
    )
    if put is None:
        return None
    return AnswerLabel.INCORRECT, f"puts {put[1]!r} where the ground truth has {put[0]!r}"


@_undecidable_when
def _truth_without_tokens(c: _Case) -> bool:
    return c.facts.gt_tokens == 0


# -- the grade: overlap and coverage, adjusted in turn


@dataclass(slots=True)
class _Grade:
    label: AnswerLabel
    reasons: list[str]
    rule: AnswerRule
    #: half the keypoints, or the direct answer (the first) without most of the rest:
    #: incorrect, but a partial answer all the same
    half_said: bool = False


@dataclass(frozen=True, slots=True)
class _Grader:
    rules: tuple[AnswerRule, ...]
    run: Callable[[_Case, _Grade], None]


#: the grade's adjustments, in order (the first sets the grade)
_GRADERS: list[_Grader] = []


def _grades(
    *names: str,
) -> Callable[[Callable[[_Case, _Grade], None]], Callable[[_Case, _Grade], None]]:
    """Register a grader that may set the grade's rule to one of ``names``."""
    rules = tuple(answer_rule(n) for n in names)

    def register(grader: Callable[[_Case, _Grade], None]) -> Callable[[_Case, _Grade], None]:
        _GRADERS.append(_Grader(rules, grader))
        return grader

    return register


_CONTAINS, _GT_COVERAGE, _OVERLAP = (answer_rule(n) for n in ("contains", "gt_coverage", "overlap"))
_KEYPOINTS, _KEY_FACTS, _POLAR_AGREES = (
    answer_rule(n) for n in ("keypoints", "key_facts", "polar_agrees")
)
_HEDGED, _PARTIAL_ABSTENTION, _CANDIDATE_LIST = (
    answer_rule(n) for n in ("hedged", "partial_abstention", "candidate_list")
)


def _grade(c: _Case) -> Judgement:
    grade = _Grade(AnswerLabel.INCORRECT, [], _OVERLAP)
    for grader in _GRADERS:
        grader.run(c, grade)
    return _judgement(c.example, grade.label, "; ".join(grade.reasons), grade.rule.name)


@_grades("contains", "gt_coverage", "overlap")
def _grade_overlap(c: _Case, g: _Grade) -> None:
    """Completeness and overlap."""
    facts, config = c.facts, c.config
    t = active_weights().answer
    if facts.contained:
        g.label = AnswerLabel.CORRECT
        g.reasons.append("contains the ground truth")
        g.rule = _CONTAINS
    elif c.view.verbose and all(c.coverage.covered):
        # a reasoning answer is long: its precision says nothing, its coverage does
        g.label = AnswerLabel.CORRECT
        g.reasons.append(f"states all {len(c.coverage.units)} ground-truth statement(s)")
        g.rule = _GT_COVERAGE
    elif (facts.f1 >= config.correct_f1 and facts.recall >= t["f1_min_recall"]) or (
        facts.recall >= t["correct_recall"]
    ):
        g.label = AnswerLabel.CORRECT
        g.reasons.append(f"token F1 {facts.f1:.2f}, recall {facts.recall:.2f}")
    elif facts.f1 >= config.possible_f1 or facts.recall >= t["possible_recall"]:
        g.label = AnswerLabel.POSSIBLE_CORRECT
        g.reasons.append(f"partial overlap: token F1 {facts.f1:.2f}, recall {facts.recall:.2f}")
    else:
        g.label = AnswerLabel.INCORRECT
        g.reasons.append(f"little overlap: token F1 {facts.f1:.2f}, recall {facts.recall:.2f}")


#: "more than half the keypoints": where a partial answer needs no more evidence, and the
#: least an answer upgraded by stating every ground-truth statement must cover (a statement
#: check is blind to negation, so half the keypoints or fewer never upgrades but for the
#: dataset's shorthand); a definition, not a fitted weight
_HALF = 0.5


@_grades("keypoints", "gt_coverage")
def _grade_coverage(c: _Case, g: _Grade) -> None:
    """The dataset's keypoints, else the ground truth's statements."""
    facts, coverage = c.facts, c.coverage
    t = active_weights().answer
    if facts.keypoint_coverage is not None and not facts.contained:
        kp = facts.keypoint_coverage
        kp_label = (
            AnswerLabel.CORRECT
            if kp >= t["keypoints_correct"]
            else AnswerLabel.POSSIBLE_CORRECT
            # above the (fitted) partial threshold: partial -- below more than half the
            # keypoints only when the first one, the direct answer, is among them; else
            # (the direct answer alone of three or four, a missed yes/no) it leaves out as
            # much as it says: incomplete (Listing 3's completeness)
            if kp > t["keypoints_partial"] and (kp > _HALF or facts.first_keypoint)
            else AnswerLabel.INCORRECT
        )
        if (
            kp_label is not AnswerLabel.CORRECT
            and len(coverage.units) >= 2
            and all(coverage.covered)
            and (kp > _HALF or _shorthand_only(c))
        ):
            # every ground-truth statement is made; a keypoint worded otherwise ("冷库事故"
            # for "制冷设备故障造成货损", "= $960M" for "make $960 million") is no gap.
            # Half the keypoints or fewer: only when the ones missed are the dataset's
            # shorthand (see _shorthand_only)
            kp_label = AnswerLabel.CORRECT
            g.reasons.append(f"states all {len(coverage.units)} ground-truth statements")
        g.reasons.append(f"keypoints covered {kp:.2f}")
        g.label = kp_label
        g.rule = _KEYPOINTS
        g.half_said = kp_label is AnswerLabel.INCORRECT and (
            kp >= 0.5
            or (bool(facts.first_keypoint) and len(c.example.keypoints) >= 3 and kp >= 0.25)
        )
    elif len(coverage.units) >= 2 and not facts.contained:
        # a long-form ground truth: how many of its statements the answer makes
        share = coverage.share or 0.0
        n_cov, n = sum(coverage.covered), len(coverage.units)
        full, partial = t["full_coverage"], t["partial_coverage"]
        if share < partial and not (coverage.covered[0] and n >= 3 and share >= 0.25):
            g.label = AnswerLabel.INCORRECT
            g.reasons.append(f"covers {n_cov}/{n} ground-truth statements")
            g.rule = _GT_COVERAGE
        elif share < full:
            # the direct answer (the first statement) or some of the rest: partial
            g.label = AnswerLabel.POSSIBLE_CORRECT
            g.reasons.append(f"covers {n_cov}/{n} ground-truth statements")
            g.rule = _GT_COVERAGE
        elif share >= full and g.label is not AnswerLabel.CORRECT:
            g.label = AnswerLabel.CORRECT
            g.reasons.append(f"covers {n_cov}/{n} ground-truth statements")
            g.rule = _GT_COVERAGE


#: words that negate a statement: one of them in the ground truth asks for the statement
#: in its own words
_NEGATION = lazy_compile(
    r"\b(?:no|not|never|none|neither|nor|without|cannot)\b|n't\b|[无不没未非否]", re.IGNORECASE
)


def _shorthand_only(c: _Case) -> bool:
    """The keypoints the answer misses are the dataset's shorthand, not the ground
    truth's words, so the statements decide: the ground truth does not state them itself
    ("consistent" for "make $960 million, exactly the reported total assets"; "汽油" of
    "溶于汽油" is its word, and "溶于水" misses it), the answer declines nothing (a declined
    question repeats the statement's words: "至于元皇后的父亲是谁，资料没有"), and the ground
    truth says no "no" (a statement's words are made by its affirmation too: "也有糖尿病史"
    for "无糖尿病史")."""
    if c.view.declining_clauses or any(_NEGATION.search(t) for t in (c.gt, *c.example.keypoints)):
        return False
    missed = [k for k in c.example.keypoints if not states_keypoint(k, c.ans)]
    return not any(states_keypoint(k, c.gt) for k in missed)


@_grades("key_facts")
def _grade_key_facts(c: _Case, g: _Grade) -> None:
    """Key facts: numbers and dates always, names for short ground truths (not the names
    the question already gives). A ground truth of several statements was judged
    statement by statement above, each statement with all its numbers."""
    facts, ans, gt, query = c.facts, c.ans, c.gt, c.example.query
    n_names = len(facts.gt_names) if facts.gt_tokens <= _NAMES_MAX_TOKENS else 0
    statements = len(c.coverage.units) >= 2 and facts.keypoint_coverage is None
    # keypoints, when the dataset gives them, say which facts are asked: an answer that
    # states all of them need not repeat the ground truth's other details ("In 1974,
    # from Guam." without "four buffalo … University of Florida")
    all_points = facts.keypoint_coverage is not None and facts.keypoint_coverage >= 1.0
    n_facts = len(facts.gt_values) + n_names if not (statements or all_points) else 0
    if not n_facts:
        return
    hit = facts.values_hit + (facts.names_hit if n_names else 0)
    share = hit / n_facts
    # most of the wording but half the facts is partial; little of both is wrong
    # (so is an answer that states most of the dataset's keypoints)
    strong = facts.contained or facts.recall >= 0.8 or (facts.keypoint_coverage or 0.0) >= 0.8
    # half the facts, none of them wrong, is a partial answer; a name of its own in
    # place of the ground truth's ("Urban Solutions" for "Green Energy Power") is not
    # (nor is one that leaves a whole entity of the question unnamed: "What sentences
    # did Cooper and Nelson get?" answered for Cooper alone)
    half = (
        share >= 0.5
        and not (n_names and facts.names_hit < n_names and _rival_names(ans, gt, query))
        and all(mentions_part(p, ans) for p in question_parts(query) if p.kind == "entity")
    )
    if n_facts >= 2 and share <= 0.5 and g.label is not AnswerLabel.INCORRECT:
        g.label = AnswerLabel.POSSIBLE_CORRECT if strong or half else AnswerLabel.INCORRECT
        g.reasons.append(f"only {hit}/{n_facts} key facts (numbers, dates, names) present")
        g.rule = _KEY_FACTS
    elif (
        share < 1.0
        and g.label is AnswerLabel.CORRECT
        # a name spelled otherwise ("King Louis XV" / "Louis XV") in an answer that
        # states every number and key point is no missing fact
        and not (
            facts.values_hit == len(facts.gt_values)
            and share >= 0.75
            and (facts.keypoint_coverage or 0.0) >= 0.8
        )
    ):
        g.label = AnswerLabel.POSSIBLE_CORRECT
        g.reasons.append(f"{hit}/{n_facts} key facts present")
        g.rule = _KEY_FACTS


@_grades("polar_agrees")
def _grade_polar_agrees(c: _Case, g: _Grade) -> None:
    if g.label is not AnswerLabel.CORRECT and _polar_agrees(c.example, c.view):
        g.label = AnswerLabel.CORRECT
        g.reasons.append(
            "answers the yes/no question as the ground truth does, adding nothing else"
        )
        g.rule = _POLAR_AGREES


@_grades("hedged")
def _grade_hedged(c: _Case, g: _Grade) -> None:
    view = c.view
    if g.label is AnswerLabel.CORRECT and (
        (view.final_declines and _declines_the_question(view, c.example.query))
        or _hedges(view.final, c.gt)
    ):
        g.label = AnswerLabel.POSSIBLE_CORRECT
        g.reasons.append("hedged")
        g.rule = _HEDGED


@_grades("partial_abstention")
def _grade_declines_the_rest(c: _Case, g: _Grade) -> None:
    """An incomplete answer that declines the rest ("The passage does not say who wrote
    the song"): the part it declines is one the ground truth answers."""
    view = c.view
    if (
        (g.label is AnswerLabel.POSSIBLE_CORRECT or g.half_said)
        and view.declining_clauses
        and g.rule is not _HEDGED
    ):
        g.label = AnswerLabel.INCORRECT
        g.reasons.append(f"declines the rest: {view.declining_clauses[0][:80]!r}")
        g.rule = _PARTIAL_ABSTENTION


@_grades("candidate_list")
def _grade_candidate_list(c: _Case, g: _Grade) -> None:
    """A list of candidates is not an answer: the right date among several others ("in
    November 2017, August 2019, ... and December 2021") commits to none of them."""
    values = c.values
    if g.label is AnswerLabel.CORRECT and 0 < len(values.gt) <= 2 and values.listed >= 3:
        g.label = AnswerLabel.POSSIBLE_CORRECT
        g.reasons.append(f"the ground truth's value is one of {values.listed} listed")
        g.rule = _CANDIDATE_LIST


def _check_registration() -> None:
    """Every declared rule has a check or grader, none names an undeclared one, and the
    rules first decide in the registry's order."""
    first: list[str] = []
    for named in [*(ch.rule for ch in _CHECKS), *(r for gr in _GRADERS for r in gr.rules)]:
        if named is not None and named.name not in first:
            first.append(named.name)
    declared = [r.name for r in RULES]
    if first != declared:
        raise RuntimeError(
            "answer_eval: the checks' rules differ from the registry's order "
            f"(ragtriage.diagnosis.rules.RULES): checks {first}, registry {declared}"
        )


_check_registration()

#: the checks in evaluation order, the grade last
_STEPS: tuple[Callable[[_Case], Judgement | None], ...] = tuple(ch.run for ch in _CHECKS)


def evaluate_rules(example: Example, answer: str, config: DiagnosisConfig) -> Judgement:
    """The offline judge: the checks of :data:`ragtriage.diagnosis.rules.RULES` in order,
    the first that decides gives the verdict; else the grade. See the module docstring
    and docs/method.md for the rules."""
    c = _Case(example, answer, config)
    for step in _STEPS:
        found = step(c)
        if found is not None:
            return found
    return _grade(c)


#: epistemic hedges: the answer doubts the fact itself ("probably", "I think", "可能").
#: Evidential ones -- "it appears", "seems", "apparently", "似乎", "好像" -- attribute the
#: fact to the documents and leave a right answer right (Listing 3 weighs accuracy,
#: completeness and correctness, not tone)
_HEDGE = lazy_compile(
    r"\b(?:maybe|perhaps|possibly|probably|presumably|(?<!more\s)(?<!less\s)(?<!most\s)likely|might|"
    r"may\s+(?:be|have)|not\s+(?:completely\s+|entirely\s+|totally\s+|quite\s+|fully\s+)?"
    r"(?:sure|certain)|"
    r"I\s+(?:think|believe|guess|suspect)|unclear|uncertain)\b|可能|也许|大概|或许|"
    r"估计|不确定",
    re.IGNORECASE,
)


def _hedges(text: str, ground_truth: str) -> bool:
    """``text`` hedges with a word the ground truth does not use itself (a ground truth
    that says "may cause" is restated, not hedged)."""
    low_gt = ground_truth.lower()
    return any(m.group().lower() not in low_gt for m in _HEDGE.finditer(text))


def _show(values: tuple[str, ...]) -> str:
    return "{" + ", ".join(list(dict.fromkeys(values))[:6]) + "}"


def needs_diagnosis(example: Example, label: AnswerLabel) -> bool:
    """Whether an answer with ``label`` is a failure to diagnose: incorrect answers;
    abstentions on answerable questions; anything but an abstention (or an answer
    judged equivalent to "unable to answer") on an unanswerable one."""
    if not example.answerable:
        return label not in (AnswerLabel.ABSTAIN, AnswerLabel.CORRECT)
    return label in (AnswerLabel.INCORRECT, AnswerLabel.ABSTAIN)


async def evaluate_llm(trace: Trace, calls: LLMCalls) -> Judgement:
    """The Listing-3 judge; undetermined (with the reason) on failure or bad reply."""
    judgement, _ = await _evaluate_llm(trace, calls)
    return judgement


#: room for the label, a sentence of reasoning and a few findings
_ANSWER_EVAL_TOKENS = 480


async def evaluate_llm_findings(
    trace: Trace, calls: LLMCalls, config: DiagnosisConfig | None = None
) -> tuple[Judgement, AnswerFindings | None]:
    """The Listing-3 judge and its findings (``None`` with an undetermined judgement).
    The findings are the reply's when it carries a readable ``findings`` object
    (:func:`~ragtriage.diagnosis.findings.findings_from_object`); otherwise the rules
    judge's for the same trace (under ``config``), marked ``offline`` with the reason --
    a malformed reply is never read as findings."""
    judgement, reply = await _evaluate_llm(trace, calls)
    if judgement.label is None:
        return judgement, None
    return judgement, _reply_findings(reply, trace, config)


async def _evaluate_llm(trace: Trace, calls: LLMCalls) -> tuple[Judgement, str]:
    """The Listing-3 verdict and the reply it was read from ("" when the call failed)."""
    ex = trace.example
    cm = trace.chunk_map()
    cited = [cm[c].text for c in trace.citations if c in cm]
    view = answer_view(trace.answer)
    prompt = answer_eval_prompt(
        ex.query,
        ground_truth_text(ex.answer, ex.answerable, ex.keypoints),
        trace.answer.strip() or "(empty answer)",
        cited,
        conclusion=view.final if view.final_from != "whole answer" else "",
    )
    outcome = await calls.one(prompt, purpose="answer_eval", max_tokens=_ANSWER_EVAL_TOKENS)
    if isinstance(outcome, LLMFailure):
        return Judgement(
            example_id=ex.example_id,
            label=None,
            judge="llm",
            undetermined_reason=f"answer_evaluation: LLM call failed: {outcome.reason}",
        ), ""
    parsed = parse_answer_label(outcome.text)
    if parsed is None:
        snippet = " ".join(outcome.text.split())[:80]
        return Judgement(
            example_id=ex.example_id,
            label=None,
            judge="llm",
            undetermined_reason=f"answer_evaluation: unreadable LLM reply {snippet!r}",
        ), outcome.text
    label, reason = parsed
    judgement = Judgement(example_id=ex.example_id, label=label, reason=reason, judge="llm")
    return judgement, outcome.text


def _reply_findings(text: str, trace: Trace, config: DiagnosisConfig | None) -> AnswerFindings:
    """The findings of an answer-evaluation reply, else the rules judge's (see
    :func:`evaluate_llm_findings`)."""
    obj = parse_json_object(text)
    why = ""
    if obj is None:
        why = "the LLM reply is no JSON object, so it carries no findings"
    elif "findings" not in obj:
        why = "the LLM reply carries no findings"
    else:
        try:
            return findings_from_object(obj["findings"])
        except FindingsError as e:
            why = f"the LLM reply's findings are unreadable ({e})"
    rules = evaluate_rules(trace.example, trace.answer, config or DiagnosisConfig())
    return AnswerFindings.of_rule(rules.rule).instead_of_llm(why)
