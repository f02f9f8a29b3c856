"""Relational checks of an answer against its ground truth (issue #9): facts that are all
present but tied to each other wrongly.

| check | fires when | failure it addresses |
|---|---|---|
| :func:`clauses` + keypoint proximity | a keypoint's words must co-occur in one clause, line or list item of the answer | "王建国：对头孢类过敏；李娜：对青霉素过敏" covering "王建国青霉素" from two lines |
| :func:`direction_flips` | the answer states a ground-truth amount with the opposite direction ("增长4.4%" for "下降4.4%", "rose 3%" for "fell 3%") | a sign error read as a match |
| :func:`compound_durations` | "2 hours and 10 minutes" also stands for 130 minutes (and years + months) | a converted duration read as a conflict |
| :func:`order_conflict` | an ordering question ("which came first", "按时间先后") whose answer lists the ground truth's dated events in another order | a wrong sequence with every date right |
| :func:`slot_conflict` | an uncovered keypoint whose wording ("began in …") the answer repeats with another name or number | "began in Salt Lake City" for "began in St. Joseph" |

Pure and linear in the texts' length.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

from ragtriage.diagnosis.facts import (
    DateMention,
    Quantity,
    dates_match,
    extract_dates,
    extract_entities,
    extract_quantities,
)
from ragtriage.text import content_tokens, normalize

__all__ = [
    "SlotConflict",
    "clauses",
    "compound_durations",
    "direction_flips",
    "names_of",
    "order_conflict",
    "slot_conflict",
]

_CLAUSE = re.compile(r"[\n;；。！？!?]|[,，](?=\s*(?:and|while|whereas|but|而|但)\b)|(?<=[.])\s+")


def clauses(text: str) -> list[str]:
    """Lines, list items, sentences and contrasted clauses of ``text`` (for proximity)."""
    return [c.strip() for c in _CLAUSE.split(text) if c and c.strip()]


# -- direction of a change ------------------------------------------------------------

_UP = re.compile(
    r"\b(?:rose|rise[ns]?|rising|increase[ds]?|increasing|grew|grow(?:s|n|ing)?|growth|up|"
    r"higher|gain(?:ed|s)?|climb(?:ed|s)?|jump(?:ed|s)?|surge[ds]?)\b|增长|增加|上升|上涨|提高|提升|增幅",
    re.IGNORECASE,
)
_DOWN = re.compile(
    r"\b(?:fell|fall(?:s|en|ing)?|decline[ds]?|declining|decrease[ds]?|decreasing|drop(?:ped|s)?|"
    r"down|lower|shrank|shrink(?:s|ing)?|los[st]|reduc(?:ed|tion)|cut)\b|下降|减少|下滑|降低|下跌|减幅|萎缩",
    re.IGNORECASE,
)
_WINDOW = 24


def _direction(text: str, q: Quantity) -> int:
    """+1 / -1 when a direction word stands right before the value (same clause), else 0."""
    before = text[max(0, q.start - _WINDOW) : q.start]
    cut = max(before.rfind(c) for c in ",，;；。.\n")
    if cut >= 0:
        before = before[cut + 1 :]
    last_up = max((m.end() for m in _UP.finditer(before)), default=-1)
    last_down = max((m.end() for m in _DOWN.finditer(before)), default=-1)
    if last_up < 0 and last_down < 0:
        return 0
    return 1 if last_up > last_down else -1


def direction_flips(ground_truth: str, answer: str) -> list[str]:
    """Ground-truth amounts (raw) the answer states with the opposite direction."""
    from ragtriage.diagnosis.facts import quantities_match

    gq = extract_quantities(ground_truth)
    if not gq:
        return []
    aq = extract_quantities(answer)
    out: list[str] = []
    for g in gq:
        dg = _direction(ground_truth, g)
        if not dg:
            continue
        same = [a for a in aq if quantities_match(g, a)]
        dirs = {_direction(answer, a) for a in same} - {0}
        if dirs and dg not in dirs:
            out.append(g.raw)
    return out


# -- compound durations -----------------------------------------------------------------

_IN_SMALLER = {("hour", "minute"): 60.0, ("year", "month"): 12.0, ("minute", "second"): 60.0}
_JOIN = re.compile(r"^\s*(?:,|and|&|又|零)?\s*$", re.IGNORECASE)


def compound_durations(text: str, quantities: Sequence[Quantity]) -> list[Quantity]:
    """ "2 hours and 10 minutes" → a 130-minute quantity (also years + months, minutes +
    seconds), for matching a converted duration."""
    out: list[Quantity] = []
    for a, b in pairwise(quantities):
        factor = _IN_SMALLER.get((a.unit, b.unit))
        if factor is None or not _JOIN.match(text[a.end : b.start]):
            continue
        value = a.value * factor + b.value
        raw = f"{value:g} {b.unit}s"
        out.append(Quantity(value=value, unit=b.unit, raw=raw, start=a.start, end=b.end))
    return out


# -- order of events --------------------------------------------------------------------

_ORDER_Q = re.compile(
    r"\b(?:which\s+(?:\w+\s+){0,3}?(?:came|happened|occurred|was|were|took\s+place)\s+"
    r"(?:first|earlier|earliest|last|later|latest)|in\s+(?:what|which)\s+order|order\s+of|"
    r"chronolog\w*|sequence|timeline)\b|先后|顺序|哪个先|谁先|时间线",
    re.IGNORECASE,
)


def _first_match(dates: Sequence[DateMention], d: DateMention) -> int | None:
    for a in dates:
        if dates_match(d, a):
            return a.start
    return None


def order_conflict(query: str, ground_truth: str, answer: str) -> str | None:
    """For an ordering question: the ground truth's dated events (three or more, or two
    with different dates) appear in the answer in another order. Returns a description,
    or ``None``."""
    if not _ORDER_Q.search(query):
        return None
    gd = [d for d in extract_dates(ground_truth) if d.year is not None or d.month is not None]
    if len(gd) < 2:
        return None
    ad = extract_dates(answer)
    positions = [_first_match(ad, d) for d in gd]
    if any(p is None for p in positions):
        return None
    seq = [p for p in positions if p is not None]
    if len(set(seq)) < len(seq):
        return None
    if seq != sorted(seq):
        got = [d.raw for _p, d in sorted(zip(seq, gd, strict=True))]
        return f"events in another order: answer {', '.join(got)}; ground truth " + ", ".join(
            d.raw for d in gd
        )
    return None


# -- a keypoint's slot filled with another value ----------------------------------------


@dataclass(frozen=True, slots=True)
class SlotConflict:
    keypoint: str
    clause: str
    expected: str
    found: str


def _slot_words(keypoint: str, names: Sequence[str]) -> set[str]:
    text = keypoint
    for n in names:
        text = text.replace(n, " ")
    return {t for t in content_tokens(text) if not any(ch.isdigit() for ch in t)}


def names_of(text: str) -> list[str]:
    """Entity names without trailing or leading numbers ("Castellano 64" -> "Castellano")."""
    out = []
    for n in extract_entities(text):
        words = [w for w in n.split() if not any(ch.isdigit() for ch in w)]
        if words:
            out.append(" ".join(words))
    return out


def slot_conflict(keypoint: str, answer: str, query: str = "") -> SlotConflict | None:
    """The answer repeats the wording of ``keypoint`` ("began in …", "… as Baloo") in one
    clause with another name or number than the keypoint's. Words and names the query
    holds do not count as the slot's wording."""
    nq = normalize(query)
    names = [n for n in names_of(keypoint) if normalize(n) not in nq]
    values = [q.raw for q in extract_quantities(keypoint)]
    if not names and not values:
        return None
    words = _slot_words(keypoint, names) - set(content_tokens(query))
    for clause in clauses(answer):
        nc = normalize(clause)
        present = [n for n in names if normalize(n) in nc]
        if words:
            if len(words & set(content_tokens(clause))) / len(words) < 0.5:
                continue
        elif not present:
            continue  # nothing of the keypoint's slot in this clause
        missing = [n for n in names if n not in present]
        if missing:
            known = {normalize(n) for n in names}
            others = [
                e for e in names_of(clause) if normalize(e) not in nq and normalize(e) not in known
            ]
            if others:
                return SlotConflict(keypoint, clause, missing[0], others[0])
        if values and not names:
            from ragtriage.diagnosis.facts import quantities_match

            kq = extract_quantities(keypoint)
            cq = extract_quantities(clause)
            if cq and not any(quantities_match(k, c) for k in kq for c in cq):
                same_unit = [c for c in cq if any(c.unit == k.unit for k in kq)]
                if same_unit:
                    return SlotConflict(keypoint, clause, kq[0].raw, same_unit[0].raw)
    return None
