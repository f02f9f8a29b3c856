"""Relational checks of an answer against its ground truth (issue #9): facts that are all
present but tied to each other wrongly.

| check | fires when | failure it addresses |
|---|---|---|
| :func:`clauses` + keypoint proximity | a keypoint's words must co-occur in one clause, line or list item of the answer | "王建国：对头孢类过敏；李娜：对青霉素过敏" covering "王建国青霉素" from two lines |
| :func:`direction_flips` | the answer states a ground-truth amount with the opposite direction ("增长4.4%" for "下降4.4%", "rose 3%" for "fell 3%") | a sign error read as a match |
| :func:`opposite_terms` | the answer says the opposite word of a ground-truth term next to the same neighbour word ("左眼" for "右眼", "negative for HBsAg" for "positive for HBsAg", "出院时" for "入院时"), and never the ground truth's own | a flipped side, result or event read as a match because every other word agrees |
| :func:`numeral_conflict` | a grade or stage in Roman numerals ("II度", "stage IIIA", "NYHA class III") that the answer gives another numeral in the same place | "III度" for "II度" judged correct: Roman numerals are no numbers to the value checks |
| :func:`bound_conflict` | a ground-truth amount the answer states only behind a strict bound (">60次/分", "more than 60", "超过60") | a bound read as the value it excludes |
| :func:`rank_conflict` | a ranked superlative of the ground truth ("the second-most populated", "第二大") that the answer gives another rank ("the most populated", "最大") | "the most populated municipality" for "the second-most populated" judged correct |
| :func:`impossible_dates` | dates no calendar has ("35th March", "February 30", "13月", "3月35日") | an impossible day dropped by the date reader, so the answer was judged by its other words |
| :func:`compound_durations` | "2 hours and 10 minutes" also stands for 130 minutes (and years + months) | a converted duration read as a conflict |
| :func:`order_conflict` | an ordering question ("which came first", "按时间先后") whose answer lists the ground truth's dated events in another order | a wrong sequence with every date right |
| :func:`keypoint_replaced` | the ground truth's own words on both sides of an uncovered keypoint stand in the answer around something else ("14岁时成为上官玉郎的入室弟子" for "14岁成为上官小宝的入室弟子", "在蒙得维的亚去世" for "在巴黎去世") | a wrong name, place or term in the keypoint's place read as a merely missing detail, in Chinese as in English |
| :func:`keypoint_variant` | an English keypoint of two to four words stated with one content word changed in place ("carbon monoxide" for "carbon dioxide", "the B period" for "the C period"), the keypoint itself never | half a two-word term read as the whole: "carbon" covers half of "carbon dioxide" |
| :func:`roles_swapped` | what follows a name of the ground truth (a predicate opening with a verb) follows another of its names in the answer, never the name itself, not in the passive ("Creon asked to be exiled" for "Oedipus asked to be exiled") | roles reversed between two names judged correct: every word is there |
| :func:`measures_swapped` | two Chinese amounts stated behind each other's measure words ("场均12.5分和21.1个篮板" for "场均21.1分和篮板12.5个") | two figures swapped between two slots judged correct |
| :func:`slot_conflict` | an uncovered keypoint whose wording ("began in …") the answer repeats with another name or number | "began in Salt Lake City" for "began in St. Joseph" |
| :func:`choice_conflict` | a two-way comparison question ("which was founded earlier, A or B?", "A和B哪家更早") whose ground truth picks one option and whose answer picks the other (the option named in the clause with the question's comparative, not the one after "than"/"于"/"比") | a reversed comparison with both facts right |
| :func:`entity_value_conflict` | a question about several named entities: an answer clause gives one entity another amount of the same unit than the ground-truth clause about it with the same wording | "$200 million" for the second company when the right "$20 million" is stated for the first |

Pure and linear in the texts' length.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import combinations, pairwise
from typing import NamedTuple

from ragtriage._regex import lazy_compile
from ragtriage.diagnosis.answer_styles import declining_sentence
from ragtriage.diagnosis.facts import (
    DateMention,
    Quantity,
    dates_match,
    extract_dates,
    extract_entities,
    extract_quantities,
    key_terms,
    stem,
)
from ragtriage.text import STOPWORDS_EN, content_tokens, has_cjk, is_cjk, normalize

__all__ = [
    "ChoiceConflict",
    "EntityValueConflict",
    "SlotConflict",
    "asks_order",
    "bound_conflict",
    "choice_conflict",
    "clauses",
    "compound_durations",
    "count_conflict",
    "crossed_terms",
    "direction_flips",
    "entity_value_conflict",
    "impossible_dates",
    "keypoint_replaced",
    "keypoint_variant",
    "measures_swapped",
    "names_of",
    "numeral_conflict",
    "opposite_terms",
    "order_conflict",
    "ordinal_conflict",
    "rank_conflict",
    "roles_swapped",
    "slot_conflict",
]

# a period ends a clause, not after an initial ("G. Torres") or a title ("Mr. John
# Smith") nor before a word in lower case (an abbreviation: "Elevate Retail Inc. acquired")
_CLAUSE = lazy_compile(
    r"[\n;；。！？!?]|[,，](?=\s*(?:and|while|whereas|but|而|但)\b)"
    r"|(?<=[.])(?<!\b[A-Z]\.)(?<!\bMr\.)(?<!\bMs\.)(?<!\bDr\.)(?<!\bSt\.)(?<!\bMrs\.)"
    r"(?<!\bProf\.)\s+(?![a-z])"
)


def clauses(text: str) -> list[str]:
    """Lines, list items, sentences and contrasted clauses of ``text`` (for proximity)."""
    return [c.strip() for c in _CLAUSE.split(text) if c and c.strip()]


# -- direction of a change ------------------------------------------------------------

_UP = lazy_compile(
    r"\b(?:rose|rise[ns]?|rising|increase[ds]?|increasing|grew|grow(?:s|n|ing)?|growth|up|"
    r"higher|gain(?:ed|s)?|climb(?:ed|s)?|jump(?:ed|s)?|surge[ds]?)\b|增长|增加|上升|上涨|提高|提升|增幅",
    re.IGNORECASE,
)
_DOWN = lazy_compile(
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
_JOIN = lazy_compile(r"^\s*(?:,|and|&|又|零)?\s*$", re.IGNORECASE)


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

_ORDER_Q = lazy_compile(
    r"\b(?:which\s+(?:\w+\s+){0,3}?(?:came|happened|occurred|was|were|took\s+place)\s+"
    r"(?:first|earlier|earliest|last|later|latest)|in\s+(?:what|which)\s+order|order\s+of|"
    r"chronolog\w*|sequence|timeline)\b|先后|顺序|哪个先|谁先|时间线",
    re.IGNORECASE,
)


def asks_order(query: str) -> bool:
    """The question asks for an order of events ("in what order", "which came first",
    "先后")."""
    return _ORDER_Q.search(query) is not None


def _first_match(dates: Sequence[DateMention], d: DateMention) -> int | None:
    for a in dates:
        if dates_match(d, a):
            return a.start
    return None


def order_conflict(
    query: str,
    ground_truth: str,
    answer: str,
    *,
    keypoints: Sequence[str] = (),
    final: str = "",
) -> str | None:
    """For an ordering question: the ground truth's dated events (three or more, or two
    with different dates) appear in the answer in another order. Returns a description,
    or ``None``. When the answer leaves some dates out, the events are found by their
    own words instead (:func:`_order_by_words`)."""
    if not _ORDER_Q.search(query):
        return None
    gd = [d for d in extract_dates(ground_truth) if d.year is not None or d.month is not None]
    if len(gd) < 2:
        return None
    ad = extract_dates(answer)
    positions = [_first_match(ad, d) for d in gd]
    if any(p is None for p in positions):
        return _order_by_words(keypoints, final or answer)
    seq = [p for p in positions if p is not None]
    if len(set(seq)) < len(seq):
        return None
    if seq != sorted(seq):
        got = [d.raw for _p, d in sorted(zip(seq, gd, strict=True))]
        return f"events in another order: answer {', '.join(got)}; ground truth " + ", ".join(
            d.raw for d in gd
        )
    return None


def _order_by_words(keypoints: Sequence[str], text: str) -> str | None:
    """Dated keypoints ("1月20日定增", "4月16日收购", "9月8日董事长变更"), put in date order,
    each found in ``text`` (the answer's conclusion when it has one) by the words only it
    holds: they appear there in another order ("先收购，再更换董事长，最后完成定增")."""
    events: list[tuple[DateMention, set[str], str]] = []
    for point in keypoints:
        dates = [d for d in extract_dates(point) if d.month is not None or d.year is not None]
        if len(dates) == 1:
            bare = point[: dates[0].start] + " " + point[dates[0].end :]
            words = {t for t in content_tokens(bare) if not any(ch.isdigit() for ch in t)}
            events.append((dates[0], words, point))
    if len(events) < 2:
        return None
    low = normalize(text)
    found: list[tuple[int, DateMention, str]] = []
    for i, (date, words, point) in enumerate(events):
        own = words.difference(*(w for j, (_d, w, _p) in enumerate(events) if j != i))
        hits = [at for w in own if (at := _word_at(low, w)) >= 0]
        if not hits:
            return None
        found.append((min(hits), date, point))
    if len({at for at, _d, _p in found}) < len(found):
        return None
    by_date = sorted(found, key=lambda f: (f[1].year or 0, f[1].month or 0, f[1].day or 0))
    if [f[0] for f in by_date] != sorted(f[0] for f in by_date):
        said = [p for _at, _d, p in sorted(found)]
        return f"events in another order: answer {', '.join(said)}; ground truth " + ", ".join(
            p for _at, _d, p in by_date
        )
    return None


def _word_at(text: str, word: str) -> int:
    """First offset of ``word`` in the normalised ``text``: on word boundaries for Latin
    words, anywhere for CJK bigrams; -1 when absent."""
    if word.isascii():
        m = re.search(rf"\b{re.escape(word)}", text)
        return m.start() if m else -1
    return text.find(word)


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
        # a date inside the run is no part of the name ("Jewel Haven 2 February 2023")
        for d in extract_dates(n) if any(ch.isdigit() for ch in n) else ():
            n = n.replace(d.raw, " ")
        words = [w for w in n.split() if not any(ch.isdigit() for ch in w)]
        if words:
            out.append(" ".join(words))
    return out


def slot_conflict(
    keypoint: str, answer: str, query: str = "", *, ground_truth: str = ""
) -> SlotConflict | None:
    """The answer repeats the wording of ``keypoint`` ("began in …", "… as Baloo") in one
    clause with another name or number than the keypoint's. Words and names the query
    holds do not count as the slot's wording; a number the ground truth states elsewhere,
    which the answer's clause gives with the ground truth's own wording for it (a clause
    listing several facts), is no other number."""
    nq = normalize(query)
    names = [n for n in names_of(keypoint) if normalize(n) not in nq]
    values = [q.raw for q in extract_quantities(keypoint)]
    if not names and not values:
        return None
    # a value's unit ("ft" of "14 ft") belongs to the value, not to the slot's wording
    slot = _slot_words(keypoint, [*names, *values])
    words = slot - set(content_tokens(query))
    pieces = clauses(answer)
    if not words and values and not names and len(slot) >= 2:
        # a slot the question names itself, among others ("负债比率和资产负债率分别是多少"):
        # its whole wording, clause piece by piece ("…，资产负债率同样为40%")
        words = slot
        pieces = [p for c in pieces for p in _RE_PIECES.split(c) if p.strip()]
    told: tuple[list[Quantity], list[Quantity]] | None = None
    for clause in pieces:
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
                # an answer that states the keypoint's own values elsewhere gives a value
                # of the ground truth's in this clause for another of its slots, not in
                # place of the keypoint's ("14 ft for seasons 1-7 …, 18 ft in season 10")
                if told is None:
                    told = (extract_quantities(answer), extract_quantities(ground_truth))
                same_unit = [
                    c
                    for c in cq
                    if any(c.unit == k.unit and _year_like(c) == _year_like(k) for k in kq)
                    and not _stated_as_in(c, clause, ground_truth)
                    and not _for_another_slot(c, kq, *told)
                ]
                if same_unit:
                    return SlotConflict(keypoint, clause, kq[0].raw, same_unit[0].raw)
    return None


def _year_like(q: Quantity) -> bool:
    """A bare whole number that reads as a year ("2003" of "2001-2003: Wizards"): it
    competes with years, not with counts ("two more seasons")."""
    return not q.unit and q.value.is_integer() and 1500 <= q.value <= 2099


_RE_PIECES = lazy_compile(r"(?<!\d),|,(?!\d)|[;:()，；：（）。!?！？\n]|\.(?:\s|$)")


def _for_another_slot(
    value: Quantity,
    keypoint: Sequence[Quantity],
    answer: Sequence[Quantity],
    ground_truth: Sequence[Quantity],
) -> bool:
    """``value`` is one of the ground truth's, and the answer states the keypoint's own
    values of its unit elsewhere: the answer gives it for the slot the ground truth gives
    it, not in place of the keypoint's."""
    from ragtriage.diagnosis.facts import quantities_match

    return any(quantities_match(value, g) for g in ground_truth) and all(
        any(quantities_match(k, a) for a in answer) for k in keypoint if k.unit == value.unit
    )


def _stated_as_in(value: Quantity, clause: str, ground_truth: str) -> bool:
    """A clause of ``ground_truth`` states ``value`` and ``clause`` repeats more than half
    of that clause's words: the answer gives the value for the slot the ground truth
    gives it ("sold USD 27.3 million" in a list of facts), not for another one."""
    from ragtriage.diagnosis.facts import quantities_match

    have = set(content_tokens(clause))
    # pieces between commas and brackets: "(USD 6.2 million claimed, USD 5.1 million
    # received)" gives each amount its own words
    for gt_clause in _RE_PIECES.split(ground_truth) if ground_truth else ():
        found = extract_quantities(gt_clause)
        if not any(quantities_match(value, q) for q in found):
            continue
        # the clause's own words, its amounts ("USD 5.1 million") blanked
        bare = gt_clause
        for q in sorted(found, key=lambda q: -q.start):
            bare = bare[: q.start] + " " + bare[q.end :]
        words = {t for t in content_tokens(bare) if not any(ch.isdigit() for ch in t)}
        if words and len(words & have) / len(words) > 0.5:
            return True
    return False


# -- a keypoint's place filled with something else ----------------------------------------

#: where a clause of the ground truth ends, for the words around a keypoint
_PLACE_END = lazy_compile(r"[\n;；。！？!?,，、:：()（）「」“”\"]|\.(?:\s|$)")
#: the longest filler read between the words around a keypoint (characters)
_FILLER_MAX = 40


def keypoint_replaced(keypoint: str, ground_truth: str, answer: str) -> str | None:
    """What the answer puts where the ground truth has ``keypoint``: the ground truth's own
    words on both sides of the keypoint in its clause ("…14岁成为**上官小宝**的入室弟子",
    "…由**游戏橘子**运营", "…died in **Paris** on…") stand in the answer around something
    else ("上官玉郎", "Nexon"), which holds less than three quarters of the keypoint's
    words. ``None`` when the keypoint is not in the ground truth word for word, when its
    clause gives it no content word to find its place by, or when the answer states it
    word for word (numbers and dates are left to the value checks)."""
    k = keypoint.strip()
    if not k or extract_quantities(k) or extract_dates(k):
        return None
    low_gt, low_ans, low_k = ground_truth.lower(), answer.lower(), k.lower()
    at = low_gt.find(low_k)
    if at < 0 or low_k in low_ans:
        return None
    before = _PLACE_END.split(low_gt[:at])[-1]
    after = _PLACE_END.split(low_gt[at + len(low_k) :])[0]
    around = set(content_tokens(f"{before} {after}"))
    for left, right in _places(before, after):
        filler = _filler(answer, low_ans, left, right, around)
        if filler is not None and _other_than(filler, k, low_gt):
            return filler
    return None


def _other_than(filler: str, keypoint: str, low_gt: str) -> bool:
    """``filler`` is something other than ``keypoint``: not another piece of the ground
    truth (a list answer that names the next item leaves one out, it puts nothing in its
    place), not a shortening of the keypoint (its Chinese characters all the keypoint's:
    "高尔夫术语" for "高尔夫球运动术语"), and holding less than three quarters of the
    keypoint (its Chinese characters, its English words by stem): "乙酸钠" for "乙酸铵"
    is another compound, "只在体外的研究中使用" restates "只用于体外研究"."""
    if filler.lower() in low_gt:
        return False
    if has_cjk(keypoint):
        want = {c for c in keypoint if is_cjk(c)}
        got = {c for c in filler if is_cjk(c)}
        if got and got <= want:
            return False
        return 4 * len(want & got) < 3 * len(want)
    # English: names only ("Montevideo" for "Paris"); a verb phrase has many wordings
    # ("filled in for him" for "took his place")
    if not (_CAPITALISED.search(keypoint) and _CAPITALISED.search(filler)):
        return False
    want_w = {stem(t) for t in content_tokens(keypoint)}
    got_w = {stem(t) for t in content_tokens(filler)}
    if not got_w or got_w <= want_w:
        return False
    return 4 * len(want_w & got_w) < 3 * len(want_w)


_CAPITALISED = lazy_compile(r"\b[A-Z]")


def _places(before: str, after: str) -> list[tuple[str, str]]:
    """The (left, right) words to find a keypoint's place by, most specific first: each
    side's nearest content word (two CJK characters, or one next to a two-character
    other side); a side at the clause's edge is ``""``, a side of function words only
    gives no place."""
    lefts, rights = _edges(before, tail=True), _edges(after, tail=False)
    if (before.strip() and not lefts) or (after.strip() and not rights):
        return []
    lefts, rights = lefts or [""], rights or [""]
    out = []
    for left in lefts:
        for right in rights:
            size = len(left) + len(right)
            # Chinese: three characters in all when both sides are given
            both_cjk = bool(left and right) and any(is_cjk(c) for c in left + right)
            if size >= 2 and not (both_cjk and size < 3):
                out.append((left, right))
    return out


_WORD = lazy_compile(r"[a-z0-9][a-z0-9'-]*")


def _edges(piece: str, *, tail: bool) -> list[str]:
    """A clause piece's words next to a keypoint: two CJK characters, then one; or the
    nearest English content word (with the words between it and the keypoint)."""
    text = piece.rstrip() if tail else piece.lstrip()
    if not text:
        return []
    if is_cjk(text[-1] if tail else text[0]):
        two = text[-2:] if tail else text[:2]
        one = text[-1:] if tail else text[:1]
        return [two, one] if len(two) == 2 and all(is_cjk(c) for c in two) else [one]
    words = list(_WORD.finditer(text))
    seq = words[::-1] if tail else words
    for m in seq[:3]:
        w = m.group()
        if w[0].isdigit() or (w not in STOPWORDS_EN and len(w) > 2):
            return [text[m.start() :]] if tail else [text[: m.end()]]
    return []


def _filler(answer: str, low_ans: str, left: str, right: str, around: set[str]) -> str | None:
    """The answer's text between ``left`` and ``right`` (a clause's edge for ``""``),
    when it is a short piece of one clause that declines nothing and that clause holds
    half of ``around`` (the words of the ground truth's clause about the keypoint: "台湾…
    运营", not the "中国大陆…运营" of another keypoint)."""
    if left:
        starts = [m.end() for m in re.finditer(re.escape(left), low_ans)]
    else:
        starts = [0, *(m.end() for m in _PLACE_END.finditer(low_ans))]
    for s in starts:
        if right:
            end = low_ans.find(right, s, s + _FILLER_MAX + len(right))
            if end < 0:
                continue
        else:
            stop = _PLACE_END.search(low_ans, s)
            end = stop.start() if stop is not None else len(low_ans)
        if end - s > _FILLER_MAX:
            continue
        filler = answer[s:end].strip(" \t的之了为是则")
        if not filler or _PLACE_END.search(filler) or declining_sentence(filler):
            continue
        if len(around) >= 2:
            opened = max((m.end() for m in _PLACE_END.finditer(low_ans, 0, s)), default=0)
            closed = _PLACE_END.search(low_ans, end)
            clause = low_ans[opened : closed.start() if closed is not None else len(low_ans)]
            if 2 * len(around & set(content_tokens(clause))) < len(around):
                continue
        return filler
    return None


def keypoint_variant(keypoint: str, answer: str) -> str | None:
    """The answer's phrase that is an English keypoint of two to four words with one word
    changed in place for a sibling word (:func:`_sibling_words`: "carbon monoxide" for
    "carbon dioxide", "the B period" for "the C period"), when the answer never states the
    keypoint itself; numbers are left to the value checks. ``None`` otherwise."""
    if not keypoint.isascii() or any(ch.isdigit() for ch in keypoint):
        return None
    want = _KP_WORD.findall(keypoint)
    if not 2 <= len(want) <= 4:
        return None
    low = [w.lower() for w in want]
    words = list(_KP_WORD.finditer(answer))
    # all but one of the keypoint's words must stand in the answer, by stem (a cheap test
    # before the word-by-word windows, which compare the same way)
    said = {stem(m.group().lower()) for m in words}
    if sum(stem(w) in said for w in low) < len(low) - 1 or normalize(keypoint) in normalize(answer):
        return None
    n = len(low)
    for i in range(len(words) - n + 1):
        window = words[i : i + n]
        got = [m.group().lower() for m in window]
        diff = [j for j in range(n) if got[j] != low[j] and stem(got[j]) != stem(low[j])]
        if len(diff) != 1:
            continue
        if _sibling_words(want[diff[0]], window[diff[0]].group()):
            return answer[window[0].start() : window[-1].end()]
    return None


_KP_WORD = lazy_compile(r"[A-Za-z][A-Za-z'-]*")


def _sibling_words(a: str, b: str) -> bool:
    """Two words of one family that name different things: capital letters ("C" / "B":
    periods, types, grades), or words that share an ending of four letters or more behind
    another beginning ("dioxide" / "monoxide", "hypertension" / "hypotension",
    "Eastern" / "Western", "import" / "export")."""
    if len(a) == 1 or len(b) == 1:
        return len(a) == len(b) == 1 and a.isupper() and b.isupper() and a not in "AI"
    x, y = a.lower(), b.lower()
    if x == y or min(len(x), len(y)) < 6:
        return False
    tail = 0
    while tail < min(len(x), len(y)) and x[-1 - tail] == y[-1 - tail]:
        tail += 1
    return tail >= 4 and tail < min(len(x), len(y))


# -- the other option of a two-way question ---------------------------------------------

#: "…, A or B?" (options after a comma/colon, or right after the question word)
_OR_EN = lazy_compile(
    r"(?:^|[,:;]\s*|\b(?:between|did|does|do|is|was|were|has|had)\s+)"
    r"([^,:;?]+?)\s+or\s+([^,:;?]+?)\s*(?=[,:;?]|$)",
    re.IGNORECASE,
)
#: "A还是B", "A和B(相比)，哪…/谁…"
_OR_ZH = lazy_compile(
    r"([^，,：:；;？?。]{2,24}?)(?:[，,]?\s*还是|与|和|跟)([^，,：:；;？?。]{2,24}?)"
    r"(?:相比)?[，,]?\s*(?=哪|谁|[？?]|$)"
)
_Q_LEAD = lazy_compile(
    r"^(?:which|who|what|whose|did|does|do|is|was|were|has|had|between)\s+", re.IGNORECASE
)
#: comparative words of a question ("earlier", "more", "更早", "较高")
_COMPARATIVE = lazy_compile(
    r"\b(?:\w{3,}er|more|less|fewer|most|least|first|last|best|worst|before|after|longest|"
    r"shortest|earliest|latest|largest|smallest|highest|lowest)\b|[更较最][\u4e00-\u9fff]|先|后",
    re.IGNORECASE,
)
_TIME_CUES = lazy_compile(
    r"\b(?:earl\w*|lat(?:er|est)|first|last|before|after|older|oldest|newer|newest|sooner|"
    r"longer|longest|shorter|shortest)\b|早|晚|先|后|久",
    re.IGNORECASE,
)
_NOT_COMPARATIVE = frozenset(
    {
        "other",
        "another",
        "either",
        "whether",
        "under",
        "over",
        "after",
        "never",
        "ever",
        "answer",
        "number",
        "member",
        "order",
        "together",
        "however",
        "further",
        "per",
        "quarter",
        "register",
        "offer",
        "matter",
        "letter",
        "paper",
        "water",
        "power",
    }
)
_ZH_COMMA = lazy_compile(r"[，、]")
_PICK_SPLIT = lazy_compile(r"[，、：]|:(?!\d)")
#: comparatives of the opposite sense: a text that uses one picks by negation ("later
#: than Saxby"), so its opening option is not its pick
_OPPOSITE = {
    "earlier": "later",
    "earliest": "latest",
    "first": "last",
    "before": "after",
    "more": "less",
    "most": "least",
    "higher": "lower",
    "highest": "lowest",
    "larger": "smaller",
    "largest": "smallest",
    "longer": "shorter",
    "longest": "shortest",
    "older": "newer",
    "bigger": "smaller",
    "greater": "smaller",
    "早": "晚",
    "先": "后",
    "多": "少",
    "高": "低",
    "大": "小",
    "长": "短",
}
_OPPOSITE.update({v: k for k, v in list(_OPPOSITE.items())})
#: organisation tails dropped when looking a Chinese option up in a text
_ZH_OPTION_TAIL = lazy_compile(r"(?:股份)?(?:有限)?(?:责任)?(?:公司|集团)$")


@dataclass(frozen=True, slots=True)
class ChoiceConflict:
    """The answer picks the other option of a two-way question ("which was founded
    earlier, A or B?")."""

    expected: str
    found: str
    #: the comparison is about time (earlier, longer, 先) rather than amount
    about_time: bool


_NAME_RUN = lazy_compile(r"^[A-Z][\w.'-]*(?:\s+(?:(?:of|de|&|and)\s+)?[A-Z][\w.'-]*)*")


def _name_part(option: str) -> str:
    """ "Lanning receive the longer sentence" -> "Lanning": an option that opens with a
    name is that name."""
    m = _NAME_RUN.match(option)
    return m.group() if m is not None else option


def _options(query: str) -> tuple[str, str] | None:
    m = _OR_EN.search(query)
    if m is not None:
        a, b = (_name_part(_Q_LEAD.sub("", g.strip()).strip()) for g in m.groups())
        if a and b and len(a.split()) <= 6 and len(b.split()) <= 6:
            return a, b
    m = _OR_ZH.search(query)
    if m is not None:
        a, b = m.group(1).strip(), m.group(2).strip()
        if a and b:
            return a, b
    return None


def _keys(option: str, other: str) -> tuple[str, ...]:
    """What identifies ``option`` in a text: its words the other option lacks (English),
    or the option without its organisation tail (Chinese)."""
    if any("\u4e00" <= ch <= "\u9fff" for ch in option):
        core = _ZH_OPTION_TAIL.sub("", option)
        return (normalize(core),) if len(core) >= 2 else (normalize(option),)
    theirs = set(content_tokens(other))
    own = tuple(t for t in content_tokens(option) if t not in theirs and len(t) > 2)
    if own:
        return own
    # names told apart by an initial only ("G. Torres", "Z. Torres"): the whole name
    whole = normalize(option)
    return (whole,) if " " in whole and whole not in normalize(other) else ()


def _mentioned(keys: tuple[str, ...], text: str) -> bool:
    if not keys:
        return False
    if len(keys) == 1 and not keys[0].isascii():
        return keys[0] in normalize(text)
    if any(" " in k for k in keys):  # a whole name: as a phrase
        padded = f" {normalize(text)} "
        if any(f" {k} " in padded for k in keys if " " in k):
            return True
    return bool(set(keys) & set(content_tokens(text)))


#: what introduces the option a comparison is made against ("earlier than B", "早于B")
_AGAINST = lazy_compile(
    r"(?:\b(?:than|versus|vs\.?|compared\s+(?:with|to)|against)|于|比|相比|对比|较)\s*$",
    re.IGNORECASE,
)


def _named_as_pick(keys: tuple[str, ...], clause: str) -> bool:
    """``keys`` are mentioned in ``clause`` other than as what it is compared against."""
    low = clause.lower()
    for key in keys:
        pattern = re.escape(key) if not key.isascii() else rf"\b{re.escape(key)}\b"
        for m in re.finditer(pattern, low):
            # the start of the option's name: earlier words of it ("energex" before
            # "corporation") belong to the same mention
            start = m.start()
            while True:
                before = _WORD_BEFORE.search(low, 0, start)
                if before is None or before.group(1) not in keys:
                    break
                start = before.start(1)
            if not _AGAINST.search(low[max(0, start - 16) : start]):
                return True
    return False


_WORD_BEFORE = lazy_compile(r"(\w+)[\s'’s]*\Z")


def _chosen(
    text: str, keys: tuple[tuple[str, ...], tuple[str, ...]], cues: set[str], *, lead: bool
) -> int:
    """Which option (0/1) ``text`` picks: the only option named in a clause that holds
    one of the question's comparative words; else, with ``lead``, the option the text
    opens with; else the only option the text names at all. -1 when it cannot tell."""
    # a colon ends the pick: "The bond issuance was larger: it raised …, more than …"
    parts = [p for c in clauses(text) for p in _PICK_SPLIT.split(c) if p.strip()]
    for clause in parts:
        low = clause.lower()
        if not any(c in low for c in cues):
            continue
        named = [i for i in (0, 1) if _named_as_pick(keys[i], clause)]
        if len(named) == 1:
            return named[0]
    opposites = {_OPPOSITE[c] for c in cues if c in _OPPOSITE}
    low_text = text.lower()
    if any(
        (o in low_text) if not o.isascii() else re.search(rf"\b{o}\b", low_text) for o in opposites
    ):
        return -1
    if parts and lead:
        head = parts[0]
        opening = " ".join(head.split()[:3]) if head.isascii() else head[:8]
        named = [i for i in (0, 1) if _mentioned(keys[i], opening)]
        if len(named) == 1:
            return named[0]
    named = [i for i in (0, 1) if _mentioned(keys[i], text)]
    return named[0] if len(named) == 1 else -1


def _cjk_bigrams(text: str) -> set[str]:
    """The CJK character bigrams among ``text``'s key terms."""
    return {t for t in key_terms(text) if len(t) == 2 and is_cjk(t[0]) and is_cjk(t[1])}


def _zh_option_grams(options: tuple[str, str]) -> tuple[frozenset[str], frozenset[str]]:
    """Each Chinese option's character bigrams that the other option lacks: a text
    names an option in its own word order ("首届南京国际象棋大赛" for
    "南京国际象棋大赛首届比赛") or by part of it ("佩内塔跻身前十")."""
    a, b = (_cjk_bigrams(_ZH_OPTION_TAIL.sub("", o)) for o in options)
    return frozenset(a - b), frozenset(b - a)


#: what a Chinese comparison is made against ("比B", "早于B", "与B相比"): no pick
_ZH_AGAINST = lazy_compile(r"比|相比|对比|[早晚先后高低多少大小长短]于")


def _zh_named(grams: tuple[frozenset[str], frozenset[str]], text: str) -> int:
    """The option ``text`` names by at least two of its own bigrams and by more than
    the other's; -1 when none or both equally."""
    found = _cjk_bigrams(text)
    hits = [len(g & found) for g in grams]
    if max(hits) < 2 or hits[0] == hits[1]:
        return -1
    return 0 if hits[0] > hits[1] else 1


def _zh_chosen(
    text: str, grams: tuple[frozenset[str], frozenset[str]], cues: set[str], *, lead: bool
) -> int:
    """:func:`_chosen` for Chinese options, named by their bigrams: the option named in
    a clause with a comparative word (before what it is compared against); else, with
    ``lead``, the option the text opens with; else the only option a short text (two
    clauses at most) names."""
    parts = [p for c in clauses(text) for p in _PICK_SPLIT.split(c) if p.strip()]
    for clause in parts:
        if not any(c in clause for c in cues):
            continue
        picked = _zh_named(grams, _ZH_AGAINST.split(clause, maxsplit=1)[0])
        if picked >= 0:
            return picked
    if any(_OPPOSITE[c] in text for c in cues if c in _OPPOSITE):
        return -1
    if parts and lead:
        picked = _zh_named(grams, parts[0])
        if picked >= 0:
            return picked
    if len(parts) > 2:  # a longer text that compares nothing picks nothing by naming
        return -1
    found = _cjk_bigrams(text)
    named = [i for i in (0, 1) if len(grams[i] & found) >= 2]
    return named[0] if len(named) == 1 else -1


def choice_conflict(query: str, ground_truth: str, answer: str) -> ChoiceConflict | None:
    """For a two-way comparison question ("Which company was founded earlier, A or B?",
    "A和B哪家更早成立？"): the ground truth picks one option and the answer the other.
    Undecided on either side (both named in the deciding clause, no comparative word, no
    leading option) is no conflict."""
    options = _options(query)
    if options is None:
        return None
    # the options' own words are no comparatives ("Walker", "Baker", "Fisher")
    in_names = {w.lower() for o in options for w in re.findall(r"\w+", o)}
    cues = {
        # "更早" -> "早": a Chinese answer says "早于" / "最早" as often as "更早"
        m.group().lower().lstrip("更较最")
        for m in _COMPARATIVE.finditer(query)
        if m.group().lower() not in _NOT_COMPARATIVE
        and m.group().lower() not in in_names
        # "按时间先后" asks for an order, not which of two comes first
        and not (m.group() in "先后" and "先后" in query)
    }
    if not cues:
        return None
    keys = (_keys(options[0], options[1]), _keys(options[1], options[0]))
    if not keys[0] or not keys[1]:
        return None
    # a ground truth opens with its pick ("Saxby, founded in 1946; …"); an answer may
    # open with either ("Compared with Kestrel, Saxby …")
    if has_cjk(options[0]) and has_cjk(options[1]):
        grams = _zh_option_grams(options)
        want = _zh_chosen(ground_truth, grams, cues, lead=True)
        got = _zh_chosen(answer, grams, cues, lead=False)
    else:
        want = _chosen(ground_truth, keys, cues, lead=True)
        got = _chosen(answer, keys, cues, lead=False)
    if want < 0 or got < 0 or want == got:
        return None
    return ChoiceConflict(
        expected=options[want],
        found=options[got],
        about_time=any(_TIME_CUES.search(c) for c in cues),
    )


# -- one entity's number replaced --------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EntityValueConflict:
    entity: str
    expected: str
    found: str
    clause: str


def entity_value_conflict(
    query: str, ground_truth: str, answer: str, *, skip: Sequence[Quantity] = ()
) -> EntityValueConflict | None:
    """For a question about two or more named entities: a clause of the answer gives one
    of them an amount of the same kind (unit) as a ground-truth clause about it with the
    same wording, and no amount of that clause ("Fabrikon … reducing its liabilities by
    $200 million" for "Fabrikon … also reducing liabilities by $20 million"). Catches a
    wrong number when the right one is stated for the other entity. ``skip``: answer
    amounts not to count (derived differences, rounded values)."""
    from ragtriage.diagnosis.facts import quantities_match

    entities = list(dict.fromkeys(names_of(query)))
    if len(entities) < 2:
        return None
    keys = [_keys(e, " ".join(o for o in entities if o != e)) for e in entities]

    def about(clause: str) -> int:
        named = [i for i, k in enumerate(keys) if _mentioned(k, clause)]
        return named[0] if len(named) == 1 else -1

    def slot_words(clause: str, who: int) -> set[str]:
        own = set(content_tokens(entities[who]))
        return {
            t for t in content_tokens(clause) if not any(ch.isdigit() for ch in t) and t not in own
        }

    gt_slots = []
    for clause in clauses(ground_truth):
        who = about(clause)
        gq = extract_quantities(clause)
        if who >= 0 and gq:
            gt_slots.append((who, gq, slot_words(clause, who)))
    if not gt_slots:
        return None
    skipped = {(q.start, q.end) for q in skip}
    offset = 0
    for clause in clauses(answer):
        start = answer.find(clause, offset)
        offset = max(offset, start)
        aq = [
            q for q in extract_quantities(clause) if (start + q.start, start + q.end) not in skipped
        ]
        who = about(clause) if aq and not declining_sentence(clause) else -1
        if who < 0:
            continue
        words = slot_words(clause, who)
        for g_who, gq, g_words in gt_slots:
            units = {q.unit for q in gq}
            if g_who != who or not (words & g_words) - units:
                continue
            if any(quantities_match(g, a) for g in gq for a in aq):
                continue  # the clause states the ground truth's amount
            for a in aq:
                same = [g for g in gq if g.unit == a.unit]
                if same:
                    return EntityValueConflict(entities[who], same[0].raw, a.raw, clause)
    return None


# -- opposite terms ---------------------------------------------------------------------

#: word families whose values exclude each other: each family lists its values, each
#: value its words (EN, ZH). Two values for sides, results, events, extremes; three for
#: a measurement that is up, down or normal.
_OPPOSITES_EN: tuple[tuple[str, ...], ...] = (
    ("left", "right"),
    ("positive", "negative"),
    ("upper", "lower"),
    ("above", "below"),
    ("before prior", "after"),
    ("north northern", "south southern"),
    ("east eastern", "west western"),
    ("maximum max", "minimum min"),
    ("male", "female"),
    ("benign", "malignant"),
    ("acute", "chronic"),
    (
        "increase increased increases increasing rose rise rises risen grew grow grows elevated",
        "decrease decreased decreases decreasing fell fall falls fallen declined decline declines "
        "reduced",
        "normal",
    ),
    ("higher", "lower"),
    ("profit profits", "loss losses"),
    ("surplus", "deficit"),
    ("import imports imported", "export exports exported"),
    ("inflow inflows", "outflow outflows"),
    ("acquired bought purchased", "sold divested"),
    ("admitted admission", "discharged discharge"),
    ("convicted guilty", "acquitted innocent"),
    ("approved granted accepted", "rejected denied refused"),
    ("won", "lost"),
    ("internal", "external"),
    ("highest", "lowest"),
    ("largest biggest", "smallest"),
    ("earliest", "latest"),
    ("oldest", "youngest"),
    ("majority", "minority"),
    ("present", "absent"),
    ("superficial", "deep"),
    ("dominant", "recessive"),
    ("upstream", "downstream"),
    ("ascending", "descending"),
)
_OPPOSITES_ZH: tuple[tuple[str, ...], ...] = (
    ("左", "右"),
    ("阳性", "阴性"),
    ("良性", "恶性"),
    ("急性", "慢性"),
    ("男性 男", "女性 女"),
    ("之前 以前 术前", "之后 以后 术后"),
    ("上半年 上旬 上午", "下半年 下旬 下午"),
    (
        "增加 增长 上升 上涨 提高 升高 增高 偏高",
        "减少 下降 下滑 降低 下跌 减低 偏低",
        "正常",
    ),
    ("盈利", "亏损"),
    ("顺差", "逆差"),
    ("胜诉", "败诉"),
    ("有罪", "无罪"),
    ("最高", "最低"),
    ("最大", "最小"),
    ("最早", "最晚 最迟"),
    ("高于", "低于"),
    ("东部 以东", "西部 以西"),
    ("南部 以南", "北部 以北"),
    ("批准 同意 支持", "驳回 拒绝 反对"),
    ("入院", "出院"),
    ("进口 流入 买入", "出口 流出 卖出"),
    ("收购", "出售"),
    ("浅表", "深部"),
    ("显性", "隐性"),
    ("上游", "下游"),
)


def _values_of(families: tuple[tuple[str, ...], ...]) -> dict[str, tuple[int, int]]:
    """Each word of a family -> (family, value)."""
    return {
        w: (n, value)
        for n, family in enumerate(families)
        for value, words in enumerate(family)
        for w in words.split()
    }


_VALUE_EN = _values_of(_OPPOSITES_EN)
_VALUE_ZH = _values_of(_OPPOSITES_ZH)
_EN_WORD = lazy_compile(r"[a-z]+|\d+")
_ZH_TERM = lazy_compile("|".join(sorted(_VALUE_ZH, key=len, reverse=True)))
# a neighbour of a term is one of these words, which say nothing by themselves
_ZH_NEIGHBOUR_STOP = frozenset("的了是在和与及或为对于其该这那有无不也都而并且时")

#: families that relate two things ("A above B" is "B below A"): a term of one is tied
#: to both its neighbours at once, and "than" ends the search for the second
_RELATIONAL_EN = frozenset(
    n
    for n, family in enumerate(_OPPOSITES_EN)
    if family[0].split()[0] in ("above", "before", "higher")
)
_RELATIONAL_ZH = frozenset(
    n for n, family in enumerate(_OPPOSITES_ZH) if family[0].split()[0] in ("之前", "高于")
)
_EN_BARRIERS = frozenset(["than"])
_WORDS_ONLY = lazy_compile(r"\w+\Z")


class _Term(NamedTuple):
    """A family's value said next to a neighbour ("<word" before it, ">word" after it,
    "<a>b" both for a relation)."""

    zh: bool
    family: int
    value: int
    neighbour: str
    word: str


def _en_terms(text: str) -> set[_Term]:
    from ragtriage.text import STOPWORDS_EN

    words = _EN_WORD.findall(text.lower())
    out: set[_Term] = set()
    for i, w in enumerate(words):
        found = _VALUE_EN.get(w)
        if found is None:
            continue
        fam, value = found
        # the nearest content word on each side, within two words; a value word of
        # another family between is passed over ("right lower lobe": "lobe")
        sides: list[str] = []
        for step in (-1, 1):
            skipped = False
            for d in (1, 2, 3):
                j = i + d * step
                if not 0 <= j < len(words):
                    break
                n = words[j]
                if d == 1 and n in _VALUE_EN and _VALUE_EN[n][0] != fam:
                    skipped = True
                    continue
                if (d == 3 and not skipped) or n in _VALUE_EN or n in _EN_BARRIERS:
                    break
                if n not in STOPWORDS_EN:
                    sides.append(f"{'<' if step < 0 else '>'}{n}")
                    break
        if fam in _RELATIONAL_EN:
            if len(sides) == 2:
                out.add(_Term(False, fam, value, "".join(sides), w))
        else:
            out.update(_Term(False, fam, value, n, w) for n in sides)
    return out


def _zh_terms(text: str) -> set[_Term]:
    out: set[_Term] = set()
    for m in _ZH_TERM.finditer(text):
        fam, value = _VALUE_ZH[m.group()]
        before = text[max(0, m.start() - 2) : m.start()]
        if fam in _RELATIONAL_ZH:
            # both compared things, whatever their script ("A公司利润高于B公司")
            after = text[m.end() : m.end() + 2]
            if before.strip() and after.strip() and _WORDS_ONLY.match(before + after):
                out.add(_Term(True, fam, value, f"<{before}>{after}", m.group()))
            continue
        for tag, n in (
            ("<", before),
            (">", text[m.end() : m.end() + 1]),
            (">", text[m.end() : m.end() + 2]),
        ):
            if (
                n
                and all(is_cjk(c) for c in n)
                and not any(c in _ZH_NEIGHBOUR_STOP for c in n)
                and not _ZH_TERM.search(n)
            ):
                out.add(_Term(True, fam, value, tag + n, m.group()))
    return out


def _terms(text: str) -> set[_Term]:
    terms = _en_terms(text) if _EN_WORD.search(text) else set()
    if has_cjk(text):
        terms |= _zh_terms(text)
    return terms


@lru_cache(maxsize=256)
def _said(text: str) -> frozenset[tuple[bool, int, int]]:
    """(Chinese, family, value) of every term of ``text``, whatever stands next to it."""
    out = {(False, *_VALUE_EN[w]) for w in _EN_WORD.findall(text.lower()) if w in _VALUE_EN}
    if has_cjk(text):
        out |= {(True, *_VALUE_ZH[m.group()]) for m in _ZH_TERM.finditer(text)}
    return frozenset(out)


def opposite_terms(ground_truth: str, answer: str) -> list[tuple[str, str]]:
    """Terms of the ground truth that the answer states as another value of their family
    about the same thing: another value's word next to the same neighbour word ("左眼" for
    "右眼", "tested negative for" for "tested positive for", "出院时" for "入院时", "白细胞
    计数升高" for "白细胞计数正常"), where the answer never says the ground truth's own
    value next to it. Not when both texts say both values anywhere: the answer then
    rearranges what the ground truth says ("患者出院时间为入院后第3天" for "患者入院后第3天
    出院"). Returns (ground truth's wording, answer's wording) pairs, one per family."""
    gt_terms = _terms(ground_truth)
    if not gt_terms:
        return []
    ans_terms = _terms(answer)
    by_place: dict[tuple[bool, int, str], dict[int, str]] = {}
    for t in sorted(ans_terms):
        by_place.setdefault((t.zh, t.family, t.neighbour), {}).setdefault(t.value, t.word)
    gt_said, ans_said = _said(ground_truth), _said(answer)
    out: list[tuple[str, str]] = []
    seen: set[tuple[bool, int]] = set()
    for t in sorted(gt_terms):
        said = by_place.get((t.zh, t.family, t.neighbour), {})
        if (t.zh, t.family) in seen or not said or t.value in said:
            continue
        other = min(said)
        if (t.zh, t.family, other) in gt_said and (t.zh, t.family, t.value) in ans_said:
            continue
        seen.add((t.zh, t.family))
        out.append((_label(t.word, t.neighbour), _label(said[other], t.neighbour)))
    return out


#: prefixes that negate an English word ("reversible" / "irreversible") or a Chinese
#: one ("可逆" / "不可逆")
_EN_NEGATIONS = ("un", "in", "ir", "il", "im", "non", "dis")
_ZH_NEGATIONS = ("不", "非", "无")
_ZH_PAIR = lazy_compile(r"(?=([\u4e00-\u9fff]{2})([\u4e00-\u9fff]{1,2}))")


def negated_terms(ground_truth: str, answer: str) -> list[tuple[str, str]]:
    """Ground-truth words the answer states negated by a prefix, or un-negated, before
    the same next word ("irreversible airway" for "reversible airway", "不可逆性" for
    "可逆性"), where the answer never says the ground truth's own form. Returns
    (ground truth's wording, answer's wording) pairs."""
    out: list[tuple[str, str]] = []
    g_words, a_words = _EN_WORD.findall(ground_truth.lower()), _EN_WORD.findall(answer.lower())
    a_next = set(pairwise(a_words))
    a_set = set(a_words)
    for w, n in pairwise(g_words):
        if len(w) < 5 or not w.isalpha() or w in a_set:
            continue
        forms = [p + w for p in _EN_NEGATIONS]
        forms += [w[len(p) :] for p in _EN_NEGATIONS if w.startswith(p) and len(w) - len(p) >= 5]
        for f in forms:
            if (f, n) in a_next:
                out.append((f"{w} {n}", f"{f} {n}"))
                break
    if has_cjk(ground_truth) and has_cjk(answer):
        for m in _ZH_PAIR.finditer(ground_truth):
            term, nxt = m.group(1), m.group(2)
            for neg in _ZH_NEGATIONS:
                negated = neg + term + nxt
                if (
                    negated in answer
                    and negated not in ground_truth
                    and ground_truth[max(0, m.start() - 1) : m.start()] != neg
                    and term + nxt not in answer.replace(negated, "")
                ):
                    out.append((term + nxt, negated))
                    break
        # and the other way: the ground truth's negated verb ("不再溶于水") affirmed by the
        # answer behind a word that asserts it ("仍然可以溶于水")
        for m in _ZH_NEGATED_VERB.finditer(ground_truth):
            verb = m.group(2)
            for a in _ZH_AFFIRMED.finditer(answer):
                if a.group(2) == verb and m.group() not in answer:
                    out.append((m.group(), a.group()))
                    break
    return out


#: a Chinese verb negated in the ground truth: "不再溶于", "不能进入", "无法治愈"
_ZH_NEGATED_VERB = lazy_compile(r"(不再|不能|不会|不可|无法)([\u4e00-\u9fff]{2})")
#: the same verb asserted in the answer: "仍然可以溶于", "能够进入", "还会复发"
_ZH_AFFIRMED = lazy_compile(
    r"(?<![不无没未])(仍然可以|仍可以|仍然能|仍能|依然可以|依然能|还可以|还能|可以|能够)([\u4e00-\u9fff]{2})"
)


def _label(word: str, neighbour: str) -> str:
    where, n = neighbour[0], neighbour[1:]
    gap = "" if has_cjk(neighbour) else " "
    if where == "<" and ">" in n:  # both neighbours of a relation
        before, after = n.split(">", 1)
        return f"{before}{gap}{word}{gap}{after}"
    return f"{n}{gap}{word}" if where == "<" else f"{word}{gap}{n}"


# -- grades and stages in Roman numerals ----------------------------------------------------

_ROMAN = lazy_compile(
    r"(?<![A-Za-z])((?:X|IX|IV|V?I{0,3}|XI{1,2})(?:[A-D]|[a-d](?![a-z]))?)(?![A-Za-z])"
)
#: what a Roman numeral grades: the word before it (EN) or the character after it (ZH)
_GRADE_WORDS = frozenset(
    "stage stages grade grades type types class phase level degree category tier nyha "
    "gold figo".split()
)
_GRADE_CHARS = frozenset("度级期型类相")


def _numerals(text: str) -> set[tuple[str, str]]:
    """(what it grades, numeral) of each Roman numeral in a grading place ("stage IIIA",
    "Grade II", "II度", "III级")."""
    out: set[tuple[str, str]] = set()
    for m in _ROMAN.finditer(text):
        numeral = m.group(1)
        if not numeral or not numeral[0].isupper():
            continue
        before = text[max(0, m.start() - 24) : m.start()].split()
        after = text[m.end() : m.end() + 1]
        if after and after in _GRADE_CHARS:
            out.add((after, numeral.upper()))
        elif (
            before
            and before[-1].lower().strip("(,") in _GRADE_WORDS
            and text[m.start() - 1] in " \t"
        ):
            out.add((before[-1].lower().strip("(,"), numeral.upper()))
    return out


def numeral_conflict(ground_truth: str, answer: str) -> tuple[str, str] | None:
    """A grade or stage in Roman numerals that the answer gives another value ("III度"
    for "II度", "stage IIIB" for "stage IIA"), never saying the ground truth's: (ground
    truth's, answer's), else ``None``."""
    if not _ROMAN.search(ground_truth):
        return None
    gt = _numerals(ground_truth)
    if not gt:
        return None
    ans = _numerals(answer)
    for what, numeral in sorted(gt):
        said = sorted(n for w, n in ans if w == what)
        if said and numeral not in said:
            return _grade(what, numeral), _grade(what, said[0])
    return None


def _grade(what: str, numeral: str) -> str:
    return f"{numeral}{what}" if what in _GRADE_CHARS else f"{what} {numeral}"


# -- strict bounds --------------------------------------------------------------------------

#: a strict bound right before an amount: the amount itself is excluded ("> 60", "超过60")
_STRICT_BOUND = lazy_compile(
    r"(?:[<>]|\b(?:more|greater|higher|fewer|less|lower)\s+than|\b(?:over|above|below|under)"
    r"|超过|大于|高于|多于|小于|低于|少于|不足|不到)\s*\Z",
    re.IGNORECASE,
)


def _bounded(text: str, q: Quantity) -> bool:
    return _STRICT_BOUND.search(text, max(0, q.start - 14), q.start) is not None


def bound_conflict(ground_truth: str, answer: str) -> tuple[str, str] | None:
    """A ground-truth amount the answer states only behind a strict bound (">60次/分" or
    "more than 60" for "60次/分"), which excludes the amount itself: (ground truth's,
    answer's), else ``None``."""
    from ragtriage.diagnosis.facts import quantities_match

    gq = [q for q in extract_quantities(ground_truth) if not _bounded(ground_truth, q)]
    if not gq:
        return None
    aq = extract_quantities(answer)
    for g in gq:
        same = [a for a in aq if quantities_match(g, a)]
        if same and all(_bounded(answer, a) for a in same):
            a = same[0]
            start = max(0, a.start - 14)
            bound = _STRICT_BOUND.search(answer, start, a.start)
            shown = (answer[bound.start() : a.end] if bound else a.raw).strip()
            return g.raw, shown
    return None


# -- ranks ------------------------------------------------------------------------------------

_ORDINALS_EN = {
    "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6,
    "2nd": 2, "3rd": 3, "4th": 4, "5th": 5, "6th": 6,
}  # fmt: skip
_SUPERLATIVE_EN = r"(?:most|least)[-\s]+[a-z]+|[a-z]{3,}est\b"
_RANK_EN = lazy_compile(
    rf"\b(?:(second|third|fourth|fifth|sixth|2nd|3rd|4th|5th|6th)[-\s]+)?({_SUPERLATIVE_EN})",
    re.IGNORECASE,
)
_ZH_RANK_NUM = {"一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6}
_RANK_ZH = lazy_compile(r"(?:第([一二两三四五六])|最)([大多高低小早晚长])")
#: "-est" words that rank nothing
_NOT_SUPERLATIVE = frozenset(
    "interest interests rest forest honest modest earnest request suggest protest test "
    "invest harvest west manifest digest arrest contest latest".split()
)


def _ranks(text: str) -> dict[str, int]:
    """Superlative -> its rank: 1 for a bare superlative ("the most populated", "最大"),
    the ordinal's for a ranked one ("second-most populated", "第二大")."""
    out: dict[str, int] = {}
    for m in _RANK_EN.finditer(text):
        sup = " ".join(m.group(2).lower().replace("-", " ").split())
        if sup in _NOT_SUPERLATIVE:
            continue
        out.setdefault(sup, _ORDINALS_EN[m.group(1).lower()] if m.group(1) else 1)
    if has_cjk(text):
        for m in _RANK_ZH.finditer(text):
            out.setdefault(m.group(2), _ZH_RANK_NUM[m.group(1)] if m.group(1) else 1)
    return out


def rank_conflict(ground_truth: str, answer: str) -> tuple[str, str] | None:
    """A ranked superlative of the ground truth ("the second-most populated", "第二大")
    that the answer states with another rank ("the most populated", "最大"), about the
    same superlative: (ground truth's rank, answer's), else ``None``. Only ranks the
    ground truth states as other than first are compared (a bare superlative in both is
    the same claim)."""
    gt = _ranks(ground_truth)
    ranked = {s: r for s, r in gt.items() if r > 1}
    if not ranked:
        return None
    ans = _ranks(answer)
    for sup, rank in ranked.items():
        other = ans.get(sup)
        if other is not None and other != rank:
            return _rank_label(rank, sup), _rank_label(other, sup)
    return None


_ORDINAL_WORDS = {2: "second", 3: "third", 4: "fourth", 5: "fifth", 6: "sixth"}
_ZH_ORDINALS = "一二三四五六"


def _rank_label(rank: int, superlative: str) -> str:
    if is_cjk(superlative[0]):
        return f"最{superlative}" if rank == 1 else f"第{_ZH_ORDINALS[rank - 1]}{superlative}"
    return superlative if rank == 1 else f"{_ORDINAL_WORDS[rank]} {superlative}"


# -- impossible dates -----------------------------------------------------------------------

_MONTH_WORDS = (
    r"(?:january|february|march|april|may|june|july|august|september|october|november|"
    r"december|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)"
)
_BAD_DAY = r"(?:3[2-9]|[4-9]\d)"
_IMPOSSIBLE_DATE = lazy_compile(
    rf"\b{_BAD_DAY}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH_WORDS}\b"
    rf"|\b{_MONTH_WORDS}\.?\s+{_BAD_DAY}(?:st|nd|rd|th)?\b"
    rf"|\b3[01](?:st|th)?\s+(?:of\s+)?feb(?:ruary)?\b|\bfeb(?:ruary)?\.?\s+3[01](?:st|th)?\b"
    r"|\b\d{4}-(?:1[3-9]|[2-9]\d)-\d{1,2}\b|\b\d{4}-\d{1,2}-(?:3[2-9]|[4-9]\d)\b"
    r"|(?<![\d.])(?:1[3-9]|[2-9]\d)月(?:份|\d{1,2}[日号])?|(?<![\d.])\d{1,2}月(?:3[2-9]|[4-9]\d)[日号]"
    r"|(?<![\d.])2月3[01][日号]",
    re.IGNORECASE,
)


def impossible_dates(text: str) -> list[str]:
    """Dates no calendar has ("35th March", "March 35", "February 30", "13月", "3月35日",
    "2023-13-05"), as written."""
    if not any(ch.isdigit() for ch in text):
        return []
    return [m.group() for m in _IMPOSSIBLE_DATE.finditer(text)]


# -- counts -----------------------------------------------------------------------------------

#: "How many branches …", "有几个分支 / 多少家子公司": what the question counts
_HOW_MANY_EN = lazy_compile(r"\bhow\s+many\s+([A-Za-z][A-Za-z-]*)", re.IGNORECASE)
_HOW_MANY_ZH = lazy_compile(r"(?:几|多少)[个家名位种项条次座所支款部]([\u4e00-\u9fff]{2})")
_WORD = lazy_compile(r"[A-Za-z][A-Za-z-]*")


def _counted(query: str) -> tuple[str, bool] | None:
    """What a "how many" question counts: (stem of the English noun, False) or (the first
    two characters of the Chinese noun, True)."""
    m = _HOW_MANY_EN.search(query)
    if m is not None:
        return stem(m.group(1).lower()), False
    m = _HOW_MANY_ZH.search(query)
    return (m.group(1), True) if m is not None else None


def _count_of(text: str, noun: str, zh: bool) -> Quantity | None:
    """The first amount of ``text`` that counts ``noun`` ("four branches", "four main
    branches", "四个分支")."""
    for q in extract_quantities(text):
        after = text[q.end : q.end + 24]
        if zh:
            if noun in after[:4]:
                return q
        elif any(stem(w.lower()) == noun for w in _WORD.findall(after)[:3]):
            return q
    return None


def count_conflict(query: str, ground_truth: str, answer: str) -> tuple[str, str] | None:
    """For a "how many" question, the answer counts the thing asked otherwise than the
    ground truth ("four branches of government" for "Three: …"): (ground truth's count,
    answer's), else ``None``. The ground truth's count is the amount before the noun, or
    its opening amount when it answers with the bare number."""
    asked = _counted(query)
    if asked is None:
        return None
    noun, zh = asked
    said = _count_of(answer, noun, zh)
    if said is None:
        return None
    truth = _count_of(ground_truth, noun, zh)
    if truth is None:
        first = extract_quantities(ground_truth)[:1]
        if not first or first[0].start > 2:
            return None
        truth = first[0]
    if any(q.value == said.value for q in extract_quantities(ground_truth)):
        return None  # a count the ground truth gives too ("Ten of the eleven players")
    return truth.raw, answer[said.start : said.end + 24].split(",")[0].split("，")[0].strip()


# -- crossed terms ----------------------------------------------------------------------------

#: pieces of a statement: sentences, and clauses parted by a comma, "and", "while", 而, 但
_PIECE = lazy_compile(
    r"[;；。！？!?\n]|(?<=[.])\s+|[,，]\s*(?:and\s+|while\s+|whereas\s+|but\s+)?|\s+(?:and|while|whereas|but)\s+"
    r"|而|但"
)


def _piece_word(token: str) -> str:
    """An English word by its stem, without a possessive ("baby's" / "baby")."""
    return stem(token.removesuffix("'s")) if token.isascii() else token


def _pieces(text: str) -> list[frozenset[str]]:
    return [
        frozenset(map(_piece_word, toks))
        for p in _PIECE.split(text)
        if p and (toks := content_tokens(p))
    ]


def roles_swapped(ground_truth: str, answer: str) -> tuple[str, str] | None:
    """A role of the ground truth given to another of its names: what follows a name up to
    the next name or the sentence's end (its predicate: "Oedipus | asked to be exiled",
    "Austria-Hungary | issued an ultimatum to") follows another name of the ground truth
    in the answer ("Creon asked to be exiled", "the Kingdom of Serbia issued an ultimatum
    to Austria-Hungary"), and follows the name itself nowhere in it. A predicate is two
    content words or more, three quarters of them found; one in the passive ("by") is
    no swap. English names (capitalised words both texts use). Returns (the ground truth's
    name and predicate, the answer's), else ``None``."""
    if not ground_truth.isascii() or not answer.isascii():
        return None
    names = [n for n in _cap_names(ground_truth) if n in answer]
    if len(names) < 2:
        return None
    g_roles = _roles(ground_truth, names)
    a_roles = _roles(answer, names)
    for name, words, text in g_roles:
        if len(words) < 2:
            continue
        if any(n == name and 2 * len(words & w) >= len(words) for n, w, _ in a_roles):
            continue  # the answer gives the name its own role somewhere
        for other, got, said in a_roles:
            if (
                other != name
                and 4 * len(words & got) >= 3 * len(words)
                and not _PASSIVE.search(said)
            ):
                return f"{name} {text}".strip(), f"{other} {said}".strip()
    return None


_CAP_NAME = lazy_compile(r"\b[A-Z][a-z]+(?:(?:-| | of (?:the )?)[A-Z][a-z]+)*")
_SENTENCE_STOP = lazy_compile(r"[;\n]|[.!?](?:\s|$)")
_PASSIVE = lazy_compile(r"\bby\b", re.IGNORECASE)


def _cap_names(text: str) -> list[str]:
    """Capitalised words and runs of them ("Kingdom of Serbia"), not a stopword."""
    out = []
    for m in _CAP_NAME.finditer(text):
        name = m.group()
        if name.lower() not in STOPWORDS_EN and len(name) > 2 and name not in out:
            out.append(name)
    return out


def _roles(text: str, names: Sequence[str]) -> list[tuple[str, set[str], str]]:
    """(name, stems of what follows it, that text) for each place a name stands, what
    follows running to the next name or the sentence's end."""
    pattern = re.compile(
        "|".join(rf"\b{re.escape(n)}\b" for n in sorted(names, key=len, reverse=True))
    )
    places = list(pattern.finditer(text))
    out = []
    for i, m in enumerate(places):
        stop = _SENTENCE_STOP.search(text, m.end())
        end = stop.start() if stop is not None else len(text)
        if i + 1 < len(places):
            end = min(end, places[i + 1].start())
        tail = text[m.end() : end]
        first = _FIRST_WORD.match(tail)
        if first is None or first.group(1) in _NO_PREDICATE:
            continue  # no verb follows the name: a place, a time, a list ("… one day at")
        out.append((m.group(), {stem(t) for t in content_tokens(tail)}, tail.strip(" ,*")))
    return out


#: the first word after a name (markdown emphasis skipped): a predicate opens with a verb
_FIRST_WORD = lazy_compile(r"[*\s]*([a-z]+)\b")
#: words that open no predicate: prepositions, articles, conjunctions, numbers
_NO_PREDICATE = frozenset(
    "in on at of for to from with without and or nor but the a an by as during after before "
    "since until into onto over under near one two three four five six seven eight nine ten "
    "first second third which that".split()
)


def measures_swapped(ground_truth: str, answer: str) -> tuple[str, str] | None:
    """Two Chinese amounts of the ground truth whose measure words the answer exchanges
    ("场均21.1分和篮板12.5个" → "场均12.5分和21.1个篮板"): each amount stands before the other's
    measure word in the answer, before its own nowhere. Returns (a ground-truth amount with
    its measure word, the answer's), else ``None``."""
    if not has_cjk(ground_truth) or not has_cjk(answer):
        return None
    gt = {(m.group(1), m.group(2)) for m in _ZH_MEASURED.finditer(ground_truth)}
    said = {(m.group(1), m.group(2)) for m in _ZH_MEASURED.finditer(answer)}
    for (v1, u1), (v2, u2) in combinations(sorted(gt), 2):
        if v1 == v2 or u1 == u2:
            continue
        if (v1, u2) in said and (v2, u1) in said and (v1, u1) not in said and (v2, u2) not in said:
            return f"{v1}{u1}", f"{v1}{u2}"
    return None


#: an Arabic amount and the Chinese measure word right after it ("21.1分", "12.5个")
_ZH_MEASURED = lazy_compile(r"(?<![\d.])(\d+(?:\.\d+)?)([\u4e00-\u9fff])")


def crossed_terms(ground_truth: str, answer: str) -> tuple[str, str] | None:
    """A ground truth of two statements ("increasing returns at low output levels and
    decreasing returns at high ones"; "every night; by morning she turns back") whose
    own words the answer deals out crosswise: two of its pieces each hold words of both
    statements, the words of each statement split between the two ("increasing … high",
    "decreasing … low"). Returns (a word of the first statement, the word of the second
    the answer put with it), else ``None``."""
    gt = _pieces(ground_truth)
    if len(gt) != 2:
        return None
    first, second = gt[0] - gt[1], gt[1] - gt[0]
    if not first or not second:
        return None
    mixed = [(p & first, p & second) for p in _pieces(answer)]
    mixed = [(a, b) for a, b in mixed if a and b]
    for n, (a1, b1) in enumerate(mixed):
        for a2, b2 in mixed[n + 1 :]:
            # each statement's words are split between the two pieces
            if a1 - a2 and a2 - a1 and b1 - b2 and b2 - b1:
                return sorted(a1 - a2)[0], sorted(b1 - b2)[0]
    return None


# -- ordinals ---------------------------------------------------------------------------------

_ORDINAL_EN = (
    r"(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|"
    r"1st|2nd|3rd|[4-9]th|10th)"
)
#: ordinals in a run ("second and third", "fifth to seventh") and the two words after them
_ORDINAL_RUN_EN = lazy_compile(
    rf"\b({_ORDINAL_EN}(?:(?:\s*,\s*|\s+(?:and|or|to|through)\s+){_ORDINAL_EN})*)"
    r"\s+([A-Za-z][A-Za-z-]*)(?:\s+([A-Za-z][A-Za-z-]*))?",
    re.IGNORECASE,
)
_ORDINAL_WORD_EN = lazy_compile(rf"\b{_ORDINAL_EN}\b", re.IGNORECASE)
_ZH_ORD = "一二三四五六七八九十"
_ORDINAL_RUN_ZH = lazy_compile(
    rf"(第[{_ZH_ORD}]+(?:[、和及至到]第?[{_ZH_ORD}]+)*)([个次届位章条款季代]?[\u4e00-\u9fff]{{2}})"
)


def _ordinal_runs(text: str) -> dict[str, tuple[frozenset[str], str]]:
    """What ordinals ``text`` gives before each noun: {noun key: (ordinals, the run)}."""
    out: dict[str, tuple[frozenset[str], str]] = {}
    if any(w in text.lower() for w in ("first", "second", "third", "th ", "st ", "nd ", "rd ")):
        for m in _ORDINAL_RUN_EN.finditer(text):
            words = [w for w in (m.group(2), m.group(3)) if w and w.lower() not in STOPWORDS_EN]
            if not words:
                continue
            ords = frozenset(o.lower() for o in _ORDINAL_WORD_EN.findall(m.group(1)))
            shown = f"{m.group(1)} {' '.join(words)}"
            for w in words:
                out.setdefault(stem(w.lower()), (ords, shown))
    if "第" in text:
        for m in _ORDINAL_RUN_ZH.finditer(text):
            ords = frozenset(re.findall(rf"[{_ZH_ORD}]+", m.group(1)))
            out.setdefault(m.group(2)[-2:], (ords, m.group()))
    return out


def ordinal_conflict(ground_truth: str, answer: str) -> tuple[str, str] | None:
    """Ordinals the ground truth gives before a noun ("the second and third constant
    domains", "第二届会议") that the answer gives otherwise before the same noun ("the
    third and fourth constant domains"): (ground truth's run, answer's), else ``None``."""
    gt = _ordinal_runs(ground_truth)
    if not gt:
        return None
    for key, (said, run) in _ordinal_runs(answer).items():
        truth = gt.get(key)
        if truth is not None and truth[0] != said and not truth[0] <= said:
            return truth[1], run
    return None
