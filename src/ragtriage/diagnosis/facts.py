"""Offline fact extraction for English and Chinese text: quantities, dates, entities,
query concepts, and concept matching.

These pure functions are the deterministic stand-ins for two LLM prompts of RAGEC
(seed 000, App. B.2.4): concept extraction (Listing 5) becomes :func:`extract_concepts`
and the "is this concept in this excerpt" judgement (Listing 6) becomes
:func:`concept_in_text`. The rules judge for error types also uses the extractors to
compare the numbers, dates and names of an answer with its context and ground truth.

Offsets (``start``/``end``) always refer to the text passed in. Full-width digits,
letters and symbols are folded to ASCII one character for one character, so offsets
survive the folding.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from itertools import filterfalse, pairwise
from typing import NamedTuple

from rapidfuzz import fuzz

from ragtriage._regex import lazy_compile
from ragtriage.diagnosis.answer_styles import CITATIONS as _CITATIONS
from ragtriage.diagnosis.answer_styles import DOC_LABEL as _DOC_LABEL
from ragtriage.text import STOPWORDS_EN, is_cjk
from ragtriage.text import normalize as _text_normalize

__all__ = [
    "TITLES",
    "DateMention",
    "Quantity",
    "QuantityPool",
    "Support",
    "concept_in_text",
    "content_support",
    "date_order",
    "dates_match",
    "extract_concepts",
    "extract_dates",
    "extract_entities",
    "extract_quantities",
    "key_terms",
    "named_months",
    "normalize",
    "quantities_match",
    "stem",
]

# --------------------------------------------------------------------------- folding

_FOLD = {chr(c): chr(c - 0xFEE0) for c in range(0xFF01, 0xFF5F) if c != 0xFF0C} | {"\u3000": " "}


_RE_FULL_WIDTH = lazy_compile("[\uff01-\uff5e\u3000]")


@lru_cache(maxsize=4096)
def _fold(text: str) -> str:
    """Full-width ASCII forms to ASCII (same length, so offsets are kept)."""
    # the few distinct forms of a text replaced one by one (str.translate looks up
    # every character of a Chinese text in the table)
    for ch in set(_RE_FULL_WIDTH.findall(text)) if not text.isascii() else ():
        if ch in _FOLD:  # "，" (U+FF0C) stays
            text = text.replace(ch, _FOLD[ch])
    return text


def normalize(text: str) -> str:
    """NFKC, lower case, punctuation and symbols to single spaces: the same string as
    :func:`ragtriage.text.normalize` for every text (property-tested against the regex
    ``[\\W_]+`` form this module used), so both share one cache."""
    return _text_normalize(text)


# --------------------------------------------------------------------------- records


@dataclass(frozen=True, slots=True)
class Quantity:
    """A number mentioned in text, with its scale applied and a canonical unit.

    ``unit`` is one of ``""`` (a plain count), ``"%"``, a currency code in lower case
    (``"usd"``, ``"cny"``, ...), a time unit (``"year"``, ``"month"``, ``"day"``, ...),
    ``"x"`` (times/倍) or a physical unit (``"kg"``, ``"km"``, ...).
    """

    value: float
    unit: str
    raw: str
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class DateMention:
    """A calendar reference; missing parts are ``None``. ``quarter`` is 1-4 when the
    text names a quarter ("Q3 2021", "2021年第三季度")."""

    year: int | None
    month: int | None
    day: int | None
    raw: str
    start: int
    end: int
    quarter: int | None = None


# --------------------------------------------------------------------------- numbers

_ZH_DIGITS = {
    "零": 0,
    "〇": 0,
    "一": 1,
    "二": 2,
    "两": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "六": 6,
    "七": 7,
    "八": 8,
    "九": 9,
}
_ZH_SMALL = {"十": 10, "百": 100, "千": 1000}
_ZH_BIG = {"万": 10_000, "亿": 100_000_000}
_ZH_DIGIT_CHARS = "零〇一二两三四五六七八九"
_ZH_NUM_CHARS = _ZH_DIGIT_CHARS + "十百千万亿"

_EN_SMALL = {
    "zero": 0,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "thirteen": 13,
    "fourteen": 14,
    "fifteen": 15,
    "sixteen": 16,
    "seventeen": 17,
    "eighteen": 18,
    "nineteen": 19,
    "twenty": 20,
    "thirty": 30,
    "forty": 40,
    "fifty": 50,
    "sixty": 60,
    "seventy": 70,
    "eighty": 80,
    "ninety": 90,
}
_EN_SCALE = {
    "hundred": 100,
    "thousand": 1_000,
    "million": 1_000_000,
    "billion": 1_000_000_000,
    "trillion": 1_000_000_000_000,
}
_EN_WORD = "|".join(sorted([*_EN_SMALL, *_EN_SCALE], key=len, reverse=True))

# scale words after a number; "m"/"b"/"k" only count after a currency sign
_SCALES: dict[str, float] = {
    "thousand": 1e3,
    "million": 1e6,
    "billion": 1e9,
    "trillion": 1e12,
    "mn": 1e6,
    "mln": 1e6,
    "bn": 1e9,
    "k": 1e3,
    "m": 1e6,
    "b": 1e9,
    "万亿": 1e12,
    "千亿": 1e11,
    "百亿": 1e10,
    "十亿": 1e9,
    "千万": 1e7,
    "百万": 1e6,
    "十万": 1e5,
    "万": 1e4,
    "亿": 1e8,
}
_AMBIGUOUS_SCALES = frozenset({"k", "m", "b"})

# unit spelling -> canonical unit; matched case-insensitively, longest first
_UNITS: dict[str, str] = {
    "%": "%",
    "percent": "%",
    "per cent": "%",
    "percentage points": "%",
    "percentage point": "%",
    "pct": "%",
    "个百分点": "%",
    "百分点": "%",
    "usd": "usd",
    "us dollars": "usd",
    "dollars": "usd",
    "dollar": "usd",
    "美元": "usd",
    "rmb": "cny",
    "cny": "cny",
    "yuan": "cny",
    "人民币元": "cny",
    "人民币": "cny",
    "元": "cny",
    "块": "cny",
    "hkd": "hkd",
    "港元": "hkd",
    "港币": "hkd",
    "eur": "eur",
    "euros": "eur",
    "euro": "eur",
    "欧元": "eur",
    "gbp": "gbp",
    "pounds": "gbp",
    "英镑": "gbp",
    "jpy": "jpy",
    "yen": "jpy",
    "日元": "jpy",
    "years": "year",
    "year": "year",
    "yrs": "year",
    "年": "year",
    "周岁": "year",
    "岁": "year",
    "months": "month",
    "month": "month",
    "个月": "month",
    "weeks": "week",
    "week": "week",
    "周": "week",
    "星期": "week",
    "days": "day",
    "day": "day",
    "天": "day",
    "hours": "hour",
    "hour": "hour",
    "小时": "hour",
    "minutes": "minute",
    "minute": "minute",
    "分钟": "minute",
    "times": "x",
    "fold": "x",
    "倍": "x",
    "kg": "kg",
    "kilograms": "kg",
    "公斤": "kg",
    "千克": "kg",
    "tons": "t",
    "tonnes": "t",
    "吨": "t",
    "km": "km",
    "kilometers": "km",
    "kilometres": "km",
    "公里": "km",
    "square meters": "m2",
    "square metres": "m2",
    "sq m": "m2",
    "平方米": "m2",
    "亩": "mu",
    "mg": "mg",
    "毫克": "mg",
    "grams": "g",
    "gram": "g",
    "g": "g",
    "克": "g",
    "lbs": "lb",
    "lb": "lb",
    "ml": "ml",
    "毫升": "ml",
    "liters": "l",
    "litres": "l",
    "liter": "l",
    "litre": "l",
    "升": "l",
    "gallons": "gal",
    "gallon": "gal",
    "cm": "cm",
    "centimeters": "cm",
    "centimetres": "cm",
    "厘米": "cm",
    "公分": "cm",
    "mm": "mm",
    "millimeters": "mm",
    "millimetres": "mm",
    "毫米": "mm",
    "meters": "m",
    "metres": "m",
    "meter": "m",
    "metre": "m",
    "米": "m",
    "inches": "in",
    "inch": "in",
    "英寸": "in",
    "feet": "ft",
    "foot": "ft",
    "ft": "ft",
    "英尺": "ft",
    "miles": "mi",
    "mile": "mi",
    "英里": "mi",
    # counted things: unit-less counts
    "people": "",
    "persons": "",
    "employees": "",
    "shares": "",
    "人": "",
    "名": "",
    "位": "",
    "家": "",
    "个": "",
    "次": "",
    "项": "",
    "股": "",
    "件": "",
    "台": "",
    "辆": "",
    "条": "",
    "例": "",
    "所": "",
    "座": "",
    "份": "",
    "张": "",
    "种": "",
    "起": "",
}
# a lone Chinese numeral character ("一", "三") only counts before one of these
_ZH_MEASURE = frozenset(
    "人名位家个次项股件台辆条例所座份张种起年岁周天倍元吨亩块层支只批笔届期轮场"
)
_ZH_MEASURE_WORDS = ("小时", "分钟", "个月", "万", "亿", "千", "百")

_CURRENCY_PREFIX: dict[str, str] = {
    "us$": "usd",
    "hk$": "hkd",
    "a$": "aud",
    "c$": "cad",
    "$": "usd",
    "£": "gbp",
    "€": "eur",
    "¥": "cny",
    "￥": "cny",
    "rmb": "cny",
    "cny": "cny",
    "usd": "usd",
    "eur": "eur",
    "gbp": "gbp",
    "hkd": "hkd",
    "jpy": "jpy",
}


def _alt(words: Iterable[str]) -> str:
    """The words as one alternation, longest first. Latin words need a right boundary,
    CJK and symbols do not; a run of consecutive Latin words shares one boundary
    (``(?:million|billion)(?![A-Za-z])`` matches what ``million(?![A-Za-z])|billion(?!
    [A-Za-z])`` matches, backtracking into the group in the same order) because each
    case-insensitive ``[A-Za-z]`` costs a charset optimisation when the pattern is compiled
    (two unit patterns took 50 ms of a one-trace ``diagnose``; now 12 ms)."""
    out: list[str] = []
    run: list[str] = []

    def flush() -> None:
        if run:
            out.append("(?:" + "|".join(run) + r")(?![A-Za-z])")
            run.clear()

    for w in sorted(words, key=len, reverse=True):
        esc = re.escape(w).replace(r"\ ", r"\s+")
        if w[-1].isascii() and w[-1].isalpha():
            run.append(esc)
            continue
        flush()
        out.append(esc)
    flush()
    return "|".join(out)


_RE_SUFFIX = lazy_compile(
    rf"[ \t]?(?P<scale>{_alt(_SCALES)})?[ \t]?(?:(?P<unit>{_alt(_UNITS)}))?",
    re.IGNORECASE,
)
#: the first characters of the scales and units, matched as _RE_SUFFIX matches them: a
#: number followed by none of them has no suffix (and the empty match changes nothing)
_RE_SUFFIX_START = lazy_compile(
    "[" + "".join(sorted({re.escape(w[0]) for w in [*_SCALES, *_UNITS]})) + "]", re.IGNORECASE
)
#: last characters of the currency prefixes ($, £, RMB, USD, CNY, EUR, GBP, ...)
_PREFIX_LAST_CHARS = frozenset("$£€¥￥BDYRPbdyrp")
_RE_PREFIX = lazy_compile(
    r"(?:US\$|HK\$|A\$|C\$|\$|£|€|¥|￥|RMB|CNY|USD|EUR|GBP|HKD|JPY)[ \t]?$", re.IGNORECASE
)
# Arabic numbers: 1,234,567.89 / 1234.5 / .5 is not supported on purpose. Written
# "\d(?:\d{0,2}(?:,\d{3})+|\d*)", the same as "(?:\d{1,3}(?:,\d{3})+|\d+)" tried in the
# same order, so that the pattern opens with a digit and the engine skips to digits
_RE_DIGITS = lazy_compile(
    r"\d(?:\d{0,2}(?:,\d{3})+|\d*)(?:\.\d+)?(?!\d)(?!\.\d)"
    r"(?!(?:st|nd|rd|th)\b)"
)
_RE_ZH_NUM = lazy_compile(
    rf"(?:[{_ZH_DIGIT_CHARS}]|十)[{_ZH_NUM_CHARS}]*(?:点[{_ZH_DIGIT_CHARS}]+[十百千万亿]*)?"
)
_RE_ZH_PERCENT = lazy_compile(
    rf"百分之(?P<n>[{_ZH_NUM_CHARS}]+(?:点[{_ZH_DIGIT_CHARS}]+)?|\d+(?:\.\d+)?)"
)


def _parse_zh_int(s: str) -> float:
    """Value of a Chinese numeral such as 三百二十五, 一万二千, 二〇一九, 三亿五千万."""
    total = 0.0
    sec = 0.0
    num = 0.0
    prev_digit = False
    for ch in s:
        if ch in _ZH_DIGITS:
            d = _ZH_DIGITS[ch]
            num = num * 10 + d if prev_digit else d
            prev_digit = True
            continue
        prev_digit = False
        if ch in _ZH_SMALL:
            sec += (num if num else 1) * _ZH_SMALL[ch]
            num = 0
        elif ch in _ZH_BIG:
            unit = _ZH_BIG[ch]
            cur = sec + num
            if 0 < total < unit:
                total = (total + cur) * unit
            else:
                total += (cur if cur else 1) * unit
            sec = 0
            num = 0
    return total + sec + num


def _parse_zh_number(s: str) -> float:
    """Chinese numeral with an optional 点 decimal part and trailing scale (三点五亿)."""
    if "点" not in s:
        return _parse_zh_int(s)
    left, right = s.split("点", 1)
    frac_digits = ""
    i = 0
    while i < len(right) and right[i] in _ZH_DIGITS:
        frac_digits += str(_ZH_DIGITS[right[i]])
        i += 1
    value = _parse_zh_int(left) + (float("0." + frac_digits) if frac_digits else 0.0)
    for ch in right[i:]:
        value *= _ZH_SMALL.get(ch, _ZH_BIG.get(ch, 1))
    return value


@lru_cache(maxsize=1024)
def _parse_en_words(s: str) -> float | None:
    """The value of English number words ("two hundred and five"), ``None`` without one.
    Cached: a long answer repeats a few number words many times."""
    total = 0.0
    current = 0.0
    seen = False
    for word in re.split(r"[\s\-]+", s.lower()):
        if not word or word == "and":
            continue
        if word in _EN_SMALL:
            current += _EN_SMALL[word]
            seen = True
        elif word == "hundred":
            current = (current if current else 1) * 100
            seen = True
        elif word in _EN_SCALE:
            total += (current if current else 1) * _EN_SCALE[word]
            current = 0
            seen = True
    return total + current if seen else None


class _Core(NamedTuple):  # a tuple: a long answer has hundreds, built in no time
    value: float
    start: int
    end: int
    allow_scale: bool  # digits take a following scale word; Chinese numerals carry their own


_RE_LATIN_RUN = lazy_compile(r"[A-Za-z]+")
_EN_NUMBER_WORDS = frozenset([*_EN_SMALL, *_EN_SCALE])
_EN_SCALE_WORDS = frozenset(_EN_SCALE)
_TOKENS_OF_INTEREST = frozenset(
    [
        *_EN_NUMBER_WORDS,
        "and",
        *"january february march april may june july august september october november "
        "december jan feb mar apr jun jul aug sep sept oct nov dec".split(),
    ]
)


@lru_cache(maxsize=4096)
def _latin_tokens(t: str) -> tuple[tuple[int, int, str], ...]:
    """(start, end, lower-cased word) of the runs of ASCII letters that are number words,
    "and", or month names: one scan of the text shared by both finders. Words in between
    are left out, so two kept tokens are adjacent only if the text between them is
    blank or a hyphen."""
    if t.isascii():
        # lower-cased ASCII keeps every offset: find which words of interest occur at
        # all (C-level), then only their runs
        low = t.lower()
        # the runs of [a-z] are the words left when everything else is a blank
        present = _TOKENS_OF_INTEREST.intersection(low.translate(_NOT_LOWER_TO_SPACE).split())
        found = [
            (m.start(), m.end(), word) for word in present for m in _WHOLE_RUNS[word].finditer(low)
        ]
        found.sort()
        return tuple(found)
    return tuple(
        (m.start(), m.end(), low)
        for m in _RE_LATIN_RUN.finditer(t)
        if (low := m.group().lower()) in _TOKENS_OF_INTEREST
    )


#: every ASCII character but a-z, as a blank (str.translate + str.split find the runs
#: of [a-z] in half the time of ``re.findall("[a-z]+")``)
_NOT_LOWER_TO_SPACE = {c: " " for c in range(128) if not ("a" <= chr(c) <= "z")}


#: each word of interest as a whole run of letters in lower-cased ASCII text (the word
#: first, so that the regex engine skips ahead to it)
_WHOLE_RUNS = {w: re.compile(rf"{w}(?<![a-z]{w})(?![a-z])") for w in _TOKENS_OF_INTEREST}


def _en_number_words(t: str) -> list[_Core]:
    """English number words, grouped: "twenty-five", "two hundred and five"."""
    toks = _latin_tokens(t)
    cores: list[_Core] = []
    i = 0
    n = len(toks)
    while i < n:
        s, e, low = toks[i]
        if low not in _EN_NUMBER_WORDS:
            i += 1
            continue
        j = i
        end = e
        while j + 1 < n:
            ns, ne, nlow = toks[j + 1]
            gap = t[end:ns]
            if nlow in _EN_NUMBER_WORDS and gap in (" ", "-", "\t"):
                j += 1
                end = ne
                continue
            if (
                nlow == "and"
                and toks[j][2] in _EN_SCALE_WORDS
                and j + 2 < n
                and toks[j + 2][2] in _EN_NUMBER_WORDS
                and gap == " "
                and t[ne : toks[j + 2][0]] == " "
            ):
                j += 2
                end = toks[j][1]
                continue
            break
        value = _parse_en_words(t[s:end])
        # a capitalised number word after a capitalised word is part of a name ("the
        # Committee of Five", "the Big Four"), not an amount
        in_name = t[s].isupper() and _RE_NAME_BEFORE.search(t, max(0, s - 40), s) is not None
        if value is not None and not in_name:
            cores.append(_Core(value, s, end, True))
        i = j + 1
    return cores


_RE_NAME_BEFORE = lazy_compile(r"\b[A-Z][a-z]+[ \t]+(?:of[ \t]+(?:the[ \t]+)?)?\Z")


_NOT_BEFORE_NUMBER = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_.,")


def _prev_is_letter(t: str, i: int) -> bool:
    return i > 0 and t[i - 1].isascii() and t[i - 1].isalpha()


_RE_CAPS = lazy_compile(r"[A-Z]+")
#: capital-letter units and markers written right after a number
_CAPS_UNITS = frozenset(
    "KB MB GB TB PB KW MW GW TW KWH MWH GWH TWH HZ KHZ MHZ GHZ MM CM KM KG MG ML PM AM BC AD "
    "CE BCE BP USD EUR GBP CNY RMB HKD JPY AUD CAD".split()
)


def _number_cores(t: str) -> list[_Core]:
    cores: list[_Core] = []
    if _has_digit(t):
        for m in _RE_DIGITS.finditer(t):
            s = m.start()
            # not inside a word or a code ("A1", "v1.2", "COVID-19"): checked here rather
            # than by a lookbehind, which would slow the scan down several times
            if s and (
                t[s - 1] in _NOT_BEFORE_NUMBER or (t[s - 1] == "-" and _prev_is_letter(t, s - 1))
            ):
                continue
            e = m.end()
            # a product or model code ("64DD"; "A380" above): capitals right after the
            # digits that are no unit ("10MB", "5MW", "3PM" are amounts and times)
            if e + 1 < len(t) and t[e].isupper() and t[e + 1].isupper() and t[e].isascii():
                run = _RE_CAPS.match(t, e)
                if run is not None and run.group() not in _CAPS_UNITS:
                    continue
            cores.append(_Core(float(m.group().replace(",", "")), s, e, True))
    cores.extend(_en_number_words(t))
    if not any(c in t for c in _ZH_NUM_CHARS):
        return cores
    for m in _RE_ZH_NUM.finditer(t):
        s, e = m.start(), m.end()
        if s > 0 and t[s - 1] in "第初":  # ordinals: 第三, 初一
            continue
        text = m.group()
        if len(text) == 1 and not (
            (e < len(t) and t[e] in _ZH_MEASURE) or t.startswith(_ZH_MEASURE_WORDS, e)
        ):
            continue
        cores.append(_Core(_parse_zh_number(text), s, e, False))
    return cores


def _overlaps(a: tuple[int, int], spans: list[tuple[int, int]]) -> bool:
    return any(a[0] < e and s < a[1] for s, e in spans)


class _Mask:
    """Marked character positions, for overlap tests in O(span length):
    ``mask.bits.find(1, start, end) >= 0`` (``1 in bits[start:end]`` without a copy)."""

    __slots__ = ("bits",)

    def __init__(self, n: int) -> None:
        self.bits = bytearray(n + 1)

    def mark(self, start: int, end: int) -> None:
        self.bits[start:end] = b"\x01" * max(0, end - start)


def extract_quantities(text: str) -> list[Quantity]:
    """Numbers in English or Chinese text, with scale and unit, in text order.

    Recognised: Arabic numbers with thousands separators and decimals ("1,200", "3.5"),
    an optional currency prefix ("$4.2 million", "US$", "£", "¥", "RMB"), scale words
    ("thousand/million/billion", "mn/bn", and "m/b/k" after a currency sign, "万/亿/千万/
    万亿"), unit words ("%", "percent", "yuan", "元", "美元", "years", "个月", "倍", ...),
    English number words ("twenty-five", "three hundred"), Chinese numerals ("三百万",
    "两年", "三点五亿", "百分之三十"). A bare "one" or a lone Chinese numeral without a
    measure word is not a quantity ("one of", "统一"). Numbers that are part of a date
    ("March 5, 2019", "2019年3月") are left to :func:`extract_dates`.
    """
    return list(_quantities(text))


@lru_cache(maxsize=4096)
def _quantities(text: str) -> tuple[Quantity, ...]:
    t = _fold(text)
    dates = _Mask(len(t))
    for d in _dates(text):
        dates.mark(d.start, d.end)
    out: list[Quantity] = []
    taken = _Mask(len(t))
    # citation markers ("[4]", "[1, 3]", "【2】", "(Doc 2)", "（文档2）") and document
    # labels ("Document 3 says", "文档3显示") number sources, not facts
    # (a bare number in round brackets before a word is a figure: "a fine of (500) yuan",
    # "共(3)项")
    if any(ch.isdigit() for ch in text):
        for m in _CITATIONS.finditer(text):
            cited = m.group()
            rest = text[m.end() : m.end() + 2].lstrip()
            if (
                cited.rstrip()[-1] in ")）"
                and not any(ch.isalpha() for ch in cited)
                and rest
                and (rest[0].isalnum() or is_cjk(rest[0]))
            ):
                continue
            taken.mark(m.start(), m.end())
        for m in _DOC_LABEL.finditer(text):
            taken.mark(m.start(), m.end())

    # a time of day ("19时许", "16时45分", "下午3点半") is no count: one unit of its own, so
    # it is compared with other times of day only
    for m in _RE_ZH_CLOCK.finditer(t) if ("时" in t or "点" in t) else ():
        hour = int(m.group("h"))
        if hour > 24 or taken.bits.find(1, m.start(), m.end()) >= 0:
            continue
        minutes = 30 if m.group("half") else int(m.group("m") or 0)
        raw = text[m.start() : m.end()]
        out.append(Quantity(hour * 60 + minutes, "clock", raw, m.start(), m.end()))
        taken.mark(m.start(), m.end())

    for m in _RE_ZH_PERCENT.finditer(t) if "百分之" in t else ():
        n = m.group("n")
        value = float(n) if n[0].isdigit() else _parse_zh_number(n)
        out.append(Quantity(value, "%", text[m.start() : m.end()], m.start(), m.end()))
        taken.mark(m.start(), m.end())

    # the masks' bits, looked up here without a method call (hundreds of cores per answer)
    taken_bits, date_bits = taken.bits, dates.bits
    for core in sorted(_number_cores(t), key=lambda c: (c.start, -(c.end - c.start))):
        value, start, end, _ = core
        if taken_bits.find(1, start, end) >= 0 or date_bits.find(1, start, end) >= 0:
            continue
        unit = ""
        before_text = t[max(0, start - 5) : start]
        pm = (
            _RE_PREFIX.search(t, max(0, start - 5), start)
            if not _PREFIX_LAST_CHARS.isdisjoint(before_text)
            else None
        )
        currency = None
        if pm is not None and pm.end() == start:
            # the prefix must not be the tail of a word ("RMB" yes, "XRMB" no)
            before = t[pm.start() - 1] if pm.start() > 0 else " "
            if not (before.isascii() and before.isalpha()):
                currency = _CURRENCY_PREFIX[pm.group().strip().lower()]
                start = pm.start()
        # "twenty (20) days": the figure restated in brackets belongs to the number
        at = core.end
        restated = _RE_RESTATED.match(t, at) if "(" in t[at : at + 2] else None
        if restated is not None and float(restated.group(1).replace(",", "")) == core.value:
            at = restated.end()
            taken.mark(core.start, at)
        follow = t[at : at + 2].lstrip(" \t")[:1]
        sm = (
            _RE_SUFFIX.match(t, at)
            if follow and not follow.isdigit() and _may_start_suffix(follow)
            else None
        )
        scale_word = ""
        if sm is not None:
            scale = (sm.group("scale") or "").lower()
            unit_word = (sm.group("unit") or "").lower()
            if scale and not core.allow_scale and not scale.startswith(("万", "亿")):
                scale = ""
            if scale in _AMBIGUOUS_SCALES and currency is None:
                scale = ""
                unit_word = ""
            if scale:
                value *= _SCALES[scale]
                scale_word = scale
                end = sm.end("scale")
            if unit_word:
                unit_word_norm = re.sub(r"\s+", " ", unit_word)
                canon = _UNITS.get(unit_word_norm)
                if canon is not None:
                    unit = canon
                    end = sm.end("unit")
        if currency is not None:
            unit = currency
        is_bare_one = (
            core.value == 1
            and not scale_word
            and not unit
            and currency is None
            and t[core.start : core.end].lower() == "one"
        )
        if is_bare_one:
            continue
        if date_bits.find(1, start, end) >= 0:
            end = core.end
            unit = currency or ""
        # a half follows as " and a half", "半" or "个半" (see _half_after)
        if t.startswith(_HALF_STARTS, end) or t.startswith("个半", end - 1):
            half = _half_after(t, value, unit, end)
            if half is not None:
                value, unit, end = half
        out.append(Quantity(value, unit, text[start:end], start, end))
        taken.mark(start, end)
    out.sort(key=lambda q: q.start)
    return tuple(out)


#: a Chinese time of day: "19时", "16时45分", "14时30分许", "3点半", "8点" before a marker
#: (not "时间"/"时候"/"时期"/"时代", nor the decimal "3点5", nor "小时" durations)
_RE_ZH_CLOCK = lazy_compile(
    r"(?<![\d小.])(?P<h>\d{1,2})(?:时(?![间候期代])|点(?=\d{1,2}分|半|钟|许|左右|整))"
    r"(?:(?P<m>\d{1,2})分|(?P<half>半))?"
)
_RE_RESTATED = lazy_compile(r"[ \t]?\(([0-9][0-9,]*(?:\.[0-9]+)?)\)")
_RE_AND_A_HALF = lazy_compile(r"[ \t]+and[ \t]+(?:a|one)[ \t]+half(?:[ \t]+(?P<unit>[A-Za-z]+))?\b")
_ZH_HALF_UNITS = {"半月": "month", "半小时": "hour", "半钟头": "hour"}


_HALF_STARTS = (" and", "\tand", "半")


@lru_cache(maxsize=256)
def _may_start_suffix(ch: str) -> bool:
    """``_RE_SUFFIX_START.match(ch)``, once per character."""
    return _RE_SUFFIX_START.match(ch) is not None


def _half_after(t: str, value: float, unit: str, end: int) -> tuple[float, str, int] | None:
    """A half after an amount: "seven and a half months", "三年半", "七个半月", "一个半小时"
    (value, unit and end then), else ``None``."""
    if t.startswith(" and", end) or t.startswith("\tand", end):
        m = _RE_AND_A_HALF.match(t, end)
        if m is not None:
            word = (m.group("unit") or "").lower()
            if unit and not word:  # "two years and a half"
                return value + 0.5, unit, m.end()
            if not unit and word in _UNITS:
                return value + 0.5, _UNITS[word], m.end()
            if not unit and not word:  # "3 and a half"
                return value + 0.5, unit, m.end()
        return None
    if unit in ("year", "day", "hour") and t.startswith("半", end):
        return value + 0.5, unit, end + 1
    if not unit and t.startswith("个半", end - 1):
        for tail, half_unit in _ZH_HALF_UNITS.items():
            if t.startswith(tail, end):
                return value + 0.5, half_unit, end + len(tail)
    return None


_RE_FIRST_NUMBER = lazy_compile(r"\d[\d,]*(?:\.(\d+))?")


def _granularity(q: Quantity) -> float:
    """Half of the last stated digit's place value ("1.2 million" -> 50,000)."""
    return _granularity_of(q.raw, q.value)


@lru_cache(maxsize=16384)
def _granularity_of(raw: str, value: float) -> float:
    # keyed by what it reads, not by the Quantity: the same "42" at many offsets is one
    # entry, and the key hashes two fields instead of five
    m = _RE_FIRST_NUMBER.search(_fold(raw))
    if m is None:
        return abs(value) * 1e-9
    mantissa = float(m.group().replace(",", ""))
    decimals = len(m.group(1) or "")
    if mantissa == 0:
        return 0.0
    scale = value / mantissa
    return 0.5 * (10.0**-decimals) * abs(scale)


#: the most a rounding may move a value, relative to the larger one: "1.2 million" is
#: 1,234,567 (3 %) and "3 million" 3.4 million (12 %), but "1亿" is no rounding of 6000万
#: or 8000万 although its last digit's place is 1亿 (a one-digit amount with a scale word
#: is read as exact enough to name one slot, not as anything within half its value)
_MAX_ROUNDING = 0.15


def quantities_match(a: Quantity, b: Quantity) -> bool:
    """Same amount, allowing for scale words, rounding and percent/fraction forms.

    Values match when they differ by less than the rounding of the less precise one
    and by less than 15 % of the larger ("1.2 million" == "1,234,567"; "12.5亿元" ==
    "1,250,000,000 yuan"; "1亿元" != "8000万元"). Units must
    agree when both are given; a percentage also matches the same fraction without a
    unit ("12%" == "0.12"). Plain counts ("" unit) match any unit.
    """
    # written without abs()/max() calls: this runs for every answer number against
    # every context number, and the builtins were most of its cost
    au, bu = a.unit, b.unit
    if au and bu and au != bu:
        return False
    av, bv = a.value, b.value
    diff = av - bv if av >= bv else bv - av
    big = av if av >= 0 else -av
    other = bv if bv >= 0 else -bv
    if other > big:
        big = other
    if diff <= 1e-9 * (big if big > 1.0 else 1.0):
        return True
    # a rounding moves a value by less than its granularity and _MAX_ROUNDING
    if diff < _MAX_ROUNDING * big:
        ga, gb = _granularity(a), _granularity(b)
        if diff < (ga if ga > gb else gb):
            return True
    if au == "%" or bu == "%":
        for pct, plain in ((a, b), (b, a)):
            if (
                pct.unit == "%"
                and not plain.unit
                and 0 < abs(plain.value) < 1
                and math.isclose(pct.value, plain.value * 100, rel_tol=1e-6, abs_tol=1e-9)
            ):
                return True
    return False


def _quantity_key(q: Quantity) -> tuple[float, str, str]:
    """Everything :func:`quantities_match` reads (the offsets aside)."""
    return (q.value, q.unit, q.raw)


class QuantityPool:
    """Quantities to look many numbers up in.

    ``pool.matches(q)`` is ``any(quantities_match(q, p) for p in quantities)`` and
    ``pool.matching(q)`` is ``[p for p in quantities if quantities_match(q, p)]``, with
    the pool's repeated values compared once and each distinct looked-up value (amount,
    unit and wording) answered once: an answer repeating "42" ten thousand times costs
    one pass over the pool, not ten thousand. Results equal the plain scans.
    """

    __slots__ = ("_groups", "_items", "_memo")

    def __init__(self, quantities: Iterable[Quantity]) -> None:
        self._items = tuple(quantities)
        groups: dict[tuple[float, str, str], list[int]] = {}
        for i, q in enumerate(self._items):
            groups.setdefault(_quantity_key(q), []).append(i)
        self._groups = tuple((self._items[ix[0]], tuple(ix)) for ix in groups.values())
        self._memo: dict[tuple[float, str, str], tuple[int, ...]] = {}

    def __len__(self) -> int:
        return len(self._items)

    def _hits(self, q: Quantity) -> tuple[int, ...]:
        key = _quantity_key(q)
        hits = self._memo.get(key)
        if hits is None:
            found = [i for rep, ix in self._groups if quantities_match(q, rep) for i in ix]
            hits = self._memo[key] = tuple(sorted(found))
        return hits

    def matches(self, q: Quantity) -> bool:
        """Some pool quantity matches ``q``."""
        return bool(self._hits(q))

    def matching(self, q: Quantity) -> list[Quantity]:
        """The pool quantities matching ``q``, in pool order."""
        return [self._items[i] for i in self._hits(q)]


# --------------------------------------------------------------------------- dates

_MONTHS = {
    "january": 1,
    "february": 2,
    "march": 3,
    "april": 4,
    "may": 5,
    "june": 6,
    "july": 7,
    "august": 8,
    "september": 9,
    "october": 10,
    "november": 11,
    "december": 12,
    "jan": 1,
    "feb": 2,
    "mar": 3,
    "apr": 4,
    "jun": 6,
    "jul": 7,
    "aug": 8,
    "sep": 9,
    "sept": 9,
    "oct": 10,
    "nov": 11,
    "dec": 12,
}
_MONTH_ALT = "|".join(sorted(_MONTHS, key=len, reverse=True))
_ORD = r"(?:st|nd|rd|th)?"
_YEAR = r"(1[5-9]\d{2}|20\d{2})"
#: a year by position ("March 5, 3912", "5 April 6076", "Q3 2971"): any four digits. A
#: wrong year is still a year; only a bare number needs the plausible range to count
_POS_YEAR = r"(\d{4})"
_QUARTER_WORDS = {
    "first": 1,
    "second": 2,
    "third": 3,
    "fourth": 4,
    "1st": 1,
    "2nd": 2,
    "3rd": 3,
    "4th": 4,
    "一": 1,
    "二": 2,
    "三": 3,
    "四": 4,
}
_ZH_SMALL_NUM = "[一二三四五六七八九十]{1,3}"

_RE_AFTER_MONTH_DAY = lazy_compile(rf"[ \t]+(\d{{1,2}}){_ORD}\b(?:,?[ \t]+{_POS_YEAR}\b)?")
_RE_AFTER_MONTH_YEAR = lazy_compile(rf",?[ \t]+(?:of[ \t]+)?{_POS_YEAR}\b")
_RE_AFTER_MONTH_OPT_YEAR = lazy_compile(rf"(?:,?[ \t]+{_POS_YEAR}\b)?")
_RE_BEFORE_MONTH_DAY = lazy_compile(rf"(?<![\d.])(\d{{1,2}}){_ORD}[ \t]+(?:of[ \t]+)?$")
_RE_BEFORE_MONTH_PREP = lazy_compile(
    r"\b(?:in|of|early|late|mid|since|until|by|during|from|to|before|after|through|"
    r"throughout|between|and)[ \t]+(?:-[ \t]*)?$"
)
_RE_QUARTER = lazy_compile(
    r"\b(?:Q([1-4])|([1-4])Q|(first|second|third|fourth|1st|2nd|3rd|4th)[ \t]+quarter)"
    rf"(?:[ \t]*(?:of[ \t]+)?(?:FY[ \t]?)?{_POS_YEAR})?\b",
    re.IGNORECASE,
)
_RE_FY = lazy_compile(r"\bFY[ \t]?(\d{4})\b")
#: a year with its era: "326 BC", "44 B.C.", "79 AD", "AD 79", "500 BCE", "300 CE"
_RE_ERA = lazy_compile(
    r"(?<![\d.,])(\d{1,4})[ \t]*(B\.C\.(?:E\.)?|BCE?|A\.D\.|AD|C\.E\.|CE)(?![A-Za-z])"
    r"|\b(?:A\.D\.|AD)[ \t]*(\d{1,4})(?![\d.,]\d)"
)
_RE_ZH_ERA = lazy_compile(r"公元(前)?[ \t]*(\d{1,4})[ \t]*年")
_RE_BARE_YEAR = lazy_compile(r"(1[5-9]\d{2}|20\d{2})(?:s\b)?(?![\d%]|[.,]\d)")
#: a year range's first year and dash ("2001-2003", "1939–1945")
_RE_YEAR_DASH = lazy_compile(r"(?<!\d)(1[5-9]\d{2}|20\d{2})[-–]\Z")


def _range_end_year(t: str, m: re.Match[str]) -> bool:
    """The bare year ``m`` closes a range of years that a dash joins ("2001-2003"): a
    year after a year, not a number after a dash ("10-2003", "2003-2001")."""
    before = _RE_YEAR_DASH.search(t, max(0, m.start() - 5), m.start())
    return before is not None and int(before.group(1)) < int(m.group(1))


_NOT_BEFORE_YEAR = frozenset("0123456789$£€¥.,:/-")
#: a four-digit number outside the bare-year range that a time preposition makes a year
#: ("born in 3912", "until 1066"): an answer's impossible year must still be a date
_RE_PREP_YEAR = lazy_compile(
    r"\b(?:in|since|until|till|by|from|during|year|circa|before|after)[ \t]+(\d{4})\b(?![\d%]|[.,]\d)",
    re.IGNORECASE,
)
#: what after a four-digit number makes it an amount, not a year ("2000 ml", "1800吨",
#: "1999 years"): scale and unit words ("年" aside: "2019年" is a Chinese date)
_RE_AFTER_YEAR_NOT_DATE = lazy_compile(
    # a measurement unit of a lab or vital-sign value ("2000U/L", "1500 mg/dL") too
    r"[ \t]*(?:million|billion|thousand|万|亿|units|items|cases|"
    r"(?:[IiMm]?U|[mμun]?mol|[mμnp]?g|ml|mL)/(?:[mdμ]?L|kg|h)\b|mmHg|bpm|次/分|"
    + _alt(w for w in _UNITS if w != "年" and w.strip())
    + ")",
    re.IGNORECASE,
)
_RE_ZH_DATE = lazy_compile(
    rf"(\d{{4}}|[〇零一二三四五六七八九]{{4}})[ \t]*年"
    rf"(?:[ \t]*(\d{{1,2}}|{_ZH_SMALL_NUM})[ \t]*月份?"
    rf"(?:[ \t]*(\d{{1,2}}|{_ZH_SMALL_NUM})[ \t]*[日号])?)?(?:底|初|末)?"
)
_RE_ZH_YEAR_RANGE = lazy_compile(
    r"(?<![\d.])(\d{3,4})年[ \t]*(?:至|到|—|–|-|~)[ \t]*(?:公元)?(\d{3,4})年"
)
_RE_ZH_QUARTER = lazy_compile(r"(?:(\d{4})[ \t]*年?[ \t]*)?第?([一二三四1-4])季度")
_RE_ZH_MD = lazy_compile(
    rf"(?<![\d个〇零一二三四五六七八九十])(\d{{1,2}}|{_ZH_SMALL_NUM})[ \t]*月份?"
    rf"(?:[ \t]*(\d{{1,2}}|{_ZH_SMALL_NUM})[ \t]*[日号])?"
)


def _small_int(s: str | None) -> int | None:
    if not s:
        return None
    if s.isdigit():
        return int(s)
    return int(_parse_zh_int(s))


def _valid(month: int | None, day: int | None) -> bool:
    return (month is None or 1 <= month <= 12) and (day is None or 1 <= day <= 31)


def named_months(text: str) -> frozenset[int]:
    """The months ``text`` names by a capitalised English month word, with or without a
    date around it ("the June restructuring", which :func:`extract_dates` leaves alone:
    a month with no preposition, day or year may be the verb "may" or "march")."""
    t = _fold(text)
    return frozenset(
        _MONTHS[low] for start, _, low in _latin_tokens(t) if low in _MONTHS and t[start].isupper()
    )


def extract_dates(text: str) -> list[DateMention]:
    """Calendar references in English or Chinese text, in text order, without overlaps.

    Recognised: "March 5, 2019", "5 March 2019", "March 2019", "2019-03-05",
    "05/03/2019" (month first unless the first number exceeds 12), "Q3 2021", "third
    quarter of 2021", "FY2020", a bare year 1500-2099 ("in 2019", not "2019 employees"),
    a month name after a preposition ("in March"), and Chinese "2019年3月5日",
    "2019年3月", "2019年", "二〇一九年", "3月5日", "2021年第三季度".
    """
    return list(_dates(text))


#: what every numeric date contains; a cheap test before the full pattern
_RE_HAS_NUM_DATE = lazy_compile(r"\d[-/.]\d{1,2}[-/.]\d")
#: a run of four digits or more (scanned left to right, each match is a whole run; the
#: runs of exactly four are kept: a lookbehind pattern scans three times slower)
_RE_DIGIT_RUN4 = lazy_compile(r"\d\d\d\d+")
_RE_NUMERIC_DATE = lazy_compile(r"(?<![\d.])(\d{1,4})([-/.])(\d{1,2})\2(\d{1,4})(?!\d)")


def _has_digit(t: str) -> bool:
    return _RE_ASCII_DIGIT.search(t) is not None


_RE_ASCII_DIGIT = lazy_compile("[0-9]")


def _prep_years(t: str) -> Iterator[tuple[int, int]]:
    """Spans of the years outside 1500-2099 that :data:`_RE_PREP_YEAR` matches, found
    from the four-digit runs back to their preposition (scanning a long answer with the
    case-insensitive preposition pattern is slow): a run of exactly four digits outside
    the range, blanks before it, a preposition ending there, and what the pattern
    requires after it."""
    for m in _RE_DIGIT_RUN4.finditer(t):
        start, end = m.span()
        if end - start != 4 or 1500 <= int(m.group()) <= 2099:
            continue
        blank = start
        while blank > 0 and t[blank - 1] in " \t":
            blank -= 1
        if blank == start or _RE_PREP_WORD_END.search(t, max(0, blank - 6), blank) is None:
            continue
        if _RE_PREP_YEAR_TAIL.match(t, end) is not None:
            yield start, end


# the parts of _RE_PREP_YEAR: the preposition ending where the blanks start (\Z: at the
# search's end, not before a newline there), and what follows the year
_RE_PREP_WORD_END = lazy_compile(
    r"\b(?:in|since|until|till|by|from|during|year|circa|before|after)\Z", re.IGNORECASE
)
_RE_PREP_YEAR_TAIL = lazy_compile(r"\b(?![\d%]|[.,]\d)")


def _may_name_quarter(t: str) -> bool:
    """What every :data:`_RE_QUARTER` match holds, case aside: "q1"-"q4", "1q"-"4q", or
    "quarter" (no character but the ASCII ones folds to these letters) -- in ASCII text
    only after an ordinal and blanks, so that "headquartered" does not count."""
    low = t.lower()
    if any(q in low for q in _QUARTER_TAGS):
        return True
    if not t.isascii():  # "ſecond" is "second" to the pattern: no ordinal test here
        return "quarter" in low
    at = low.find("quarter")
    while at >= 0:
        blank = at
        while blank > 0 and low[blank - 1] in " \t":
            blank -= 1
        if blank < at and low.endswith(_QUARTER_ORDINALS, 0, blank):
            return True
        at = low.find("quarter", at + 1)
    return False


_QUARTER_ORDINALS = ("first", "second", "third", "fourth", "1st", "2nd", "3rd", "4th")
_QUARTER_TAGS = ("q1", "q2", "q3", "q4", "1q", "2q", "3q", "4q")


@lru_cache(maxsize=4096)
def _dates(text: str) -> tuple[DateMention, ...]:
    t = _fold(text)
    # (start, end, year, month, day, quarter): a mention is built only if it is kept
    found: list[tuple[int, int, int | None, int | None, int | None, int | None]] = []
    has_digit = _has_digit(t)
    has_zh = "年" in t or "月" in t or "季度" in t

    def add(
        year: int | None, month: int | None, day: int | None, s: int, e: int, q: int | None = None
    ) -> None:
        if _valid(month, day):
            found.append((s, e, year, month, day, q))

    if has_digit and _RE_HAS_NUM_DATE.search(t):
        for m in _RE_NUMERIC_DATE.finditer(t):
            a, mid, b = m.group(1), int(m.group(3)), m.group(4)
            if len(a) == 4 and len(b) <= 2:  # 2019-03-05
                add(int(a), mid, int(b), m.start(), m.end())
            elif len(b) == 4 and len(a) <= 2:  # 05/03/2019: month first unless > 12
                first = int(a)
                month, day = (mid, first) if first > 12 else (first, mid)
                add(int(b), month, day, m.start(), m.end())
    for ms, word_end, low in _latin_tokens(t):
        if low not in _MONTHS:
            continue
        word = t[ms:word_end]
        if word[0].islower() and low in ("may", "march", "mar", "sat", "sun"):
            continue  # the verb "may", "to march"
        month = _MONTHS[low]
        me = word_end + 1 if t.startswith(".", word_end) else word_end
        after = _RE_AFTER_MONTH_DAY.match(t, me)
        if after is not None:  # March 5, 2019 / March 5
            year = int(after.group(2)) if after.group(2) else None
            add(year, month, int(after.group(1)), ms, after.end())
        before = _RE_BEFORE_MONTH_DAY.search(t, max(0, ms - 12), ms)
        if before is not None:  # 5 March 2019 / 5th of March
            tail = _RE_AFTER_MONTH_OPT_YEAR.match(t, me)
            end = tail.end() if tail is not None and tail.group(1) else me
            year = int(tail.group(1)) if tail is not None and tail.group(1) else None
            add(year, month, int(before.group(1)), before.start(), end)
        my = _RE_AFTER_MONTH_YEAR.match(t, me)
        if my is not None:  # March 2019
            add(int(my.group(1)), month, None, ms, my.end())
        if word[0].isupper() and _RE_BEFORE_MONTH_PREP.search(t, max(0, ms - 16), ms):
            add(None, month, None, ms, word_end)  # "in March"
    if ("Q" in t or "uarter" in t) and _may_name_quarter(t):
        for m in _RE_QUARTER.finditer(t):
            q = int(m.group(1) or m.group(2) or 0) or _QUARTER_WORDS[m.group(3).lower()]
            year = int(m.group(4)) if m.group(4) else None
            add(year, None, None, m.start(), m.end(), q)
    if "FY" in t:
        for m in _RE_FY.finditer(t):
            add(int(m.group(1)), None, None, m.start(), m.end())
    if has_digit and ("BC" in t or "B.C" in t or "AD" in t or "A.D" in t or "CE" in t):
        for m in _RE_ERA.finditer(t):  # "326 BC" is year -326, "AD 79" year 79
            n = int(m.group(1) or m.group(3))
            bc = (m.group(2) or "").startswith("B")
            add(-n if bc else n, None, None, m.start(), m.end())
    if has_digit and "公元" in t:
        for m in _RE_ZH_ERA.finditer(t):  # 公元前326年, 公元79年
            n = int(m.group(2))
            add(-n if m.group(1) else n, None, None, m.start(), m.end())
    if has_zh:
        for m in _RE_ZH_DATE.finditer(t):
            y = m.group(1)
            year = int(y) if y.isdigit() else int("".join(str(_ZH_DIGITS[c]) for c in y))
            add(year, _small_int(m.group(2)), _small_int(m.group(3)), m.start(), m.end())
        for m in _RE_ZH_QUARTER.finditer(t) if "季度" in t else ():
            qs = m.group(2)
            q = int(qs) if qs.isdigit() else _QUARTER_WORDS[qs]
            year = int(m.group(1)) if m.group(1) else None
            add(year, None, None, m.start(), m.end(), q)
        for m in _RE_ZH_MD.finditer(t):
            add(None, _small_int(m.group(1)), _small_int(m.group(2)), m.start(), m.end())
        # a three-digit year in a range of years ("850年至1470年"): the four-digit
        # pattern above does not read it
        for m in _RE_ZH_YEAR_RANGE.finditer(t) if has_digit and "年" in t else ():
            for g in (1, 2):
                if len(m.group(g)) == 3:
                    add(int(m.group(g)), None, None, m.start(g), m.end(g) + 1)
    for m in _RE_BARE_YEAR.finditer(t) if has_digit else ():
        if m.start() and t[m.start() - 1] in _NOT_BEFORE_YEAR and not _range_end_year(t, m):
            continue
        if _RE_AFTER_YEAR_NOT_DATE.match(t, m.end()):
            continue
        if m.end() < len(t) and t[m.end()] == "年":
            continue  # handled (with month/day) by the Chinese pattern
        add(int(m.group(1)), None, None, m.start(), m.end())
    # out of range (in range, the bare-year pattern has it), and not "in 3000 units"
    for start, end in _prep_years(t) if has_digit else ():
        if not _RE_AFTER_YEAR_NOT_DATE.match(t, end):
            add(int(t[start:end]), None, None, start, end)

    # keep the longest mention at each place; earlier start wins ties
    found.sort(key=lambda d: (d[0], d[0] - d[1]))
    out: list[DateMention] = []
    last_end = -1
    for f_start, f_end, f_year, f_month, f_day, f_quarter in found:
        if f_start >= last_end:
            raw = text[f_start:f_end]
            out.append(DateMention(f_year, f_month, f_day, raw, f_start, f_end, f_quarter))
            last_end = f_end
    return tuple(out)


def dates_match(a: DateMention, b: DateMention) -> bool:
    """True when no stated part disagrees and at least one part is stated by both
    ("2019" matches "March 2019"; "March 2019" does not match "April 2019")."""
    shared = 0
    for x, y in ((a.year, b.year), (a.month, b.month), (a.day, b.day), (a.quarter, b.quarter)):
        if x is not None and y is not None:
            if x != y:
                return False
            shared += 1
    if a.quarter is not None and b.month is not None and (b.month - 1) // 3 + 1 != a.quarter:
        return False
    if b.quarter is not None and a.month is not None and (a.month - 1) // 3 + 1 != b.quarter:
        return False
    return shared > 0


def date_order(a: DateMention, b: DateMention) -> int | None:
    """-1, 0 or 1 as ``a`` falls before, with or after ``b``, comparing the fields both
    state from the year down, skipping a field only one states ("12 July" and "11 July
    2022" compare by month and day; "July" and "11 July" are 0); ``None`` when they
    share no field."""
    shared = False
    for x, y in ((a.year, b.year), (a.month, b.month), (a.day, b.day)):
        if x is None or y is None:
            continue
        shared = True
        if x != y:
            return -1 if x < y else 1
    if a.quarter is not None and b.quarter is not None and a.quarter != b.quarter:
        return -1 if a.quarter < b.quarter else 1
    return 0 if shared else None


# --------------------------------------------------------------------------- entities

#: words before a person's name that are no part of it ("Mr.", "Judge", "CEO")
TITLES = frozenset(
    "mr mrs ms mx miss dr prof professor judge justice sir madam president ceo chairman "
    "director senator governor mayor officer attorney".split()
)
_ORG_SUFFIX_EN = frozenset(
    "inc ltd llc corp corporation co company group holdings hospital court bank university "
    "college institute association foundation agency ministry department plc gmbh ag sa "
    "partners services technologies clinic center centre".split()
)
_EN_CONNECT = frozenset({"of", "de", "la", "van", "von", "der", "du", "for", "&", "and"})
_EN_STARTERS = frozenset(
    """according what which who whom whose how when where why please summarize summarise
    compare describe explain list identify give provide based given in on the a an during
    after before under if yes no however therefore additionally furthermore moreover also
    both each this that these those there it its their his her our my your we they he she
    i you as at by for from to with within without among between since until while
    answer question context note overall finally first second third next then today
    january february march april may june july august september october november december
    monday tuesday wednesday thursday friday saturday sunday""".split()
)
_LATIN_UP = "A-Z\u00c0-\u00d6\u00d8-\u00de"
_LATIN_ANY = "A-Za-z\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f"
_EN_TOKEN = rf"(?:[{_LATIN_UP}][{_LATIN_ANY}0-9'’&\-]*\.?|[A-Z]\.)"
# a number continues a name ("Route 9", "NitroGuard 40") unless it is an amount
_EN_NUM_TOKEN = r"\d{1,4}\b(?![.,]\d)(?![ \t]*(?:%|percent|million|billion|thousand|bn|mn|m\b))"
_RE_EN_CAP = lazy_compile(
    rf"{_EN_TOKEN}(?:(?:[ \t]+(?:of|de|la|van|von|der|du|for|&)[ \t]+|[ \t]+)"
    rf"(?:{_EN_TOKEN}|{_EN_NUM_TOKEN}))*"
)
_CURRENCY_CODES = frozenset("usd us$ eur gbp cny rmb hkd jpy aud cad chf sgd inr krw".split())
#: "X of Y" stays one name only after one of these heads ("Bank of America")
_EN_OF_HEADS = frozenset(
    "bank university ministry department bureau institute college court republic board "
    "association society school museum city state province kingdom church house office "
    "council commission academy federation union chamber people's county district "
    "government secretary minister governor mayor president director".split()
)
#: tokens that end in a period without ending a sentence
_EN_ABBREV = frozenset(
    "inc ltd co corp llc plc dr mr mrs ms prof st jr sr mt ft gen col capt sgt lt rev bros "
    "no vs".split()
)

_ZH_ORG_SUFFIXES = (
    "股份有限公司",
    "有限责任公司",
    "有限公司",
    "集团公司",
    "集团",
    "公司",
    "高级人民法院",
    "中级人民法院",
    "人民法院",
    "法院",
    "检察院",
    "人民医院",
    "医院",
    "卫生院",
    "银行",
    "大学",
    "学院",
    "委员会",
    "研究院",
    "研究所",
    "协会",
    "基金会",
    "事务所",
    "律师事务所",
)
_ZH_ORG_SUFFIXES_LONGEST = tuple(sorted(_ZH_ORG_SUFFIXES, key=len, reverse=True))
#: any organisation suffix, the longest tried first
_ZH_ORG_SUFFIX_ALT = "(?:" + "|".join(map(re.escape, _ZH_ORG_SUFFIXES_LONGEST)) + ")"
_RE_ZH_ORG = lazy_compile(r"[\u4e00-\u9fffA-Za-z0-9]{1,20}?" + _ZH_ORG_SUFFIX_ALT)
_RE_ZH_ORG_SUFFIX_ANY = lazy_compile(_ZH_ORG_SUFFIX_ALT)
#: the longest organisation suffix ending a text (the leftmost match is the longest)
_RE_ZH_ORG_SUFFIX_END = lazy_compile(_ZH_ORG_SUFFIX_ALT + r"\Z")


def _zh_org_matches(t: str) -> Iterator[re.Match[str]]:
    """``_RE_ZH_ORG.finditer(t)``, faster: a match ends in a suffix at most 20 characters
    after its start, so no match starts more than 20 characters before the next suffix
    (the pattern, which tries 20 lengths times every suffix at each position, is searched
    from there)."""
    p = 0
    while True:
        s = _RE_ZH_ORG_SUFFIX_ANY.search(t, p + 1)
        if s is None:
            return
        m = _RE_ZH_ORG.search(t, max(p, s.start() - 20))
        if m is None:
            return
        yield m
        p = m.end()


def _org_suffix(name: str) -> str:
    """The longest of :data:`_ZH_ORG_SUFFIXES` that ``name`` ends with ("" for none)."""
    m = _RE_ZH_ORG_SUFFIX_END.search(name)
    return m.group() if m is not None else ""


_ZH_BOUNDARY_WORDS = (
    "根据",
    "依据",
    "按照",
    "关于",
    "对于",
    "请问",
    "由于",
    "截至",
    "其中",
    "以及",
    "比较",
    "分别",
    "哪家",
    "哪个",
    "什么",
    "哪些",
    "包括",
    "包含",
    "通过",
    "成为",
    "属于",
    "位于",
    "来自",
    "作为",
    "获得",
    "通常",
    "一般",
    "例如",
    "比如",
    "收购",
    "并购",
    "完成",
    "起诉",
    "委托",
    "聘请",
    # conjunctions that open a clause ("因此法院认为", "所以法院判处")
    "因此",
    "所以",
    "因而",
    "于是",
    "但是",
    "然而",
    "而且",
    "并且",
    "此外",
    "另外",
    "同时",
    "随后",
    "然后",
    "最终",
    "最后",
    # verbs of holding a post or belonging ("还兼任辅仁大学", "毕业于北京大学")
    "担任",
    "兼任",
    "任职",
    "就职",
    "供职",
    "就读",
    "毕业",
    "加入",
)
#: descriptors that make "X公司" a common noun, not a name ("上市公司", "子公司")
_ZH_GENERIC_ORG_HEADS = frozenset(
    "上市 保险 子 母 分 总 控股 参股 关联 合资 外资 国有 民营 私营 商业 该 本 贵 其 原 某 "
    "一家 两家 多家 各家 各 此 这家 那家 这 那 新 老 家 "
    # a court by its place in the case, not its name ("原审法院", "二审法院")
    "原审 一审 二审 再审 终审 上级 下级 同级 基层".split()
)
#: a count of organisations before their descriptor ("三家", "3家", "两家")
_RE_ZH_COUNTED = lazy_compile(r"[\d一二三四五六七八九十百两几多]+家")
_ZH_BOUNDARY_CHARS = frozenset(
    "的和与及或在对向由被把从于是为将据了给同跟让使经其该这那年月日、，。；：！？,.;:!? "
)
_ZH_SURNAMES = frozenset(
    "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋蔡余杜叶程苏魏吕丁"
    "任沈姚卢姜崔钟谭陆汪范金石廖贾夏韦付方白邹孟熊秦邱江尹薛闫段雷侯龙史陶黎贺顾毛郝龚邵万钱严覃武"
    "戴莫孔向汤欧阳司马上官诸葛"
    # less common ones, none of them a frequent function character
    "贝喻康蓝柳鲁关凌霍虞柴倪施牛洪左齐骆宁岳温庞易尤耿祝樊殷兰卜包季桂章阮纪俞邢滕祁翟甘车伍舒聂"
    "褚卫蒙池乔阎郁苗焦简饶曲裴房缪符晏宫谷芦穆农边费冉巫戚麦郎苑刁丰华涂钮项祖景梅闵辛毕薄匡卓凤"
    "詹蔺栾臧鄢邬闻艾屈狄邰仲仇吉茅阚丛鞠荆尚谈沙韶逯盖桑敖庄竺宗冀姬"
)
#: characters before "某某" that make no name ("一某某", "该某某")
_ZH_MOU_STOP = frozenset("一个位名些种项次某有无此每各该本其这那")
_ZH_ROLES = (
    "被告人",
    "被告",
    "原告",
    "上诉人",
    "被上诉人",
    "申请人",
    "被申请人",
    "第三人",
    "法官",
    "审判长",
    "审判员",
    "书记员",
    "主治医师",
    "医生",
    "医师",
    "护士",
    "患者",
    "病人",
    "证人",
    "被害人",
    "受害人",
    "董事长",
    "副董事长",
    "总经理",
    "副总经理",
    "经理",
    "总裁",
    "副总裁",
    "财务总监",
    "首席执行官",
    "首席财务官",
    "董事会秘书",
    "董秘",
    "监事会主席",
    "独立董事",
    "律师",
)
#: any word of :data:`_ZH_BOUNDARY_WORDS` / :data:`_ZH_ROLES` (a quick test before the
#: per-word searches)
_RE_ZH_BOUNDARY_WORD = lazy_compile("|".join(map(re.escape, _ZH_BOUNDARY_WORDS)))
_RE_ZH_ROLE = lazy_compile("|".join(map(re.escape, _ZH_ROLES)))
#: a role word, then the name ("财务总监赵明", "董事长：陈国栋", "财务总监为王丽")
_RE_ZH_ROLE_NAME = lazy_compile(
    "(?:"
    + "|".join(sorted(_ZH_ROLES, key=len, reverse=True))
    + r")(?:[：:\s]|为|是|由)?([\u4e00-\u9fff]{2,3})"
)
_ZH_NAME_STOP = frozenset(
    "的在于因被是与和及为向对将等称曾已未出现有说表示经入院诊患主诉自今于了，。、；"
    "以并也都又还均即则从把让"
)
#: what texts call the passages they cite ("Document 1", "文档2"), without the number
_SOURCE_LABELS = frozenset(
    "doc docs document documents passage passages source sources chunk chunks excerpt "
    "excerpts context contexts reference references 文档 文件 资料 段落 片段 来源".split()
)
_RE_SOURCE_LABEL = lazy_compile(
    "(?:" + "|".join(sorted(_SOURCE_LABELS, key=len, reverse=True)) + r") ?\d{1,3}"
)
_RE_ZH_MOU = lazy_compile(r"([\u4e00-\u9fff])某{1,2}")
#: a place after a locative word: "在杭州市", "位于广东省", "迁至苏州市" (two to four
#: characters before the administrative suffix)
_RE_ZH_PLACE = lazy_compile(
    r"(?:在|于|位于|至|到|从|迁往|落户)([\u4e00-\u9fff]{2,4}?(?:省|市|县|区|州))(?![\u4e00-\u9fff]{0,1}[长委局])"
)
_ZH_GENERIC_PLACES = frozenset(
    "本市 该市 全市 本省 该省 全省 本区 该区 本县 该县 城市 地区 市区 郊区".split()
)
_RE_QUOTED = lazy_compile(r"[“\"「『《]([^“”\"「」『』《》\n]{2,40})[”\"」』》]")


_RE_EN_SENTENCE_GAP = lazy_compile(r"[.!?:;\n][\"'”’)\]]*\s+")
_RE_NON_BLANK = lazy_compile(r"\S+")
_RE_INITIAL = lazy_compile(r"[A-Z]\.")


def _en_sentence_starts(text: str) -> set[int]:
    starts = {0}
    for m in _RE_EN_SENTENCE_GAP.finditer(text):
        starts.add(m.end())
    return starts


def _en_groups(match: str, base: int, starts: set[int]) -> list[tuple[int, list[str], bool]]:
    """Split a run of capitalised tokens where a token ends a sentence ("Paris. The")."""
    groups: list[tuple[int, list[str], bool]] = []
    cur: list[str] = []
    cur_start = base
    for tm in _RE_NON_BLANK.finditer(match):
        tok = tm.group()
        possessive = tok.endswith(("'s", "’s")) and len(tok) > 3
        if possessive:
            tok = tok[:-2]
        if tok in {"of", "for"} and cur and cur[-1].rstrip(".").lower() not in _EN_OF_HEADS:
            groups.append((cur_start, cur, cur_start in starts))
            cur = []
            continue
        if not cur:
            cur_start = base + tm.start()
        cur.append(tok)
        bare = tok.rstrip(".")
        ends_sentence = tok.endswith(".") and len(bare) > 1 and bare.lower() not in _EN_ABBREV
        if possessive or ends_sentence:
            groups.append((cur_start, cur, cur_start in starts))
            cur = []
    if cur:
        groups.append((cur_start, cur, cur_start in starts))
    # a group that follows a sentence-ending token starts a sentence
    out: list[tuple[int, list[str], bool]] = []
    prev_ends_sentence = False
    for s, toks, at_start in groups:
        out.append((s, toks, at_start or prev_ends_sentence))
        prev_ends_sentence = toks[-1].endswith(".") and toks[-1].rstrip(".").lower() not in (
            _EN_ABBREV
        )
    return out


def _clean_en_entity(tokens: list[str], at_sentence_start: bool) -> list[str]:
    # drop leading starters / titles
    n_before = len(tokens)
    while tokens and (
        tokens[0].isdigit()
        or tokens[0].lower() in _CURRENCY_CODES
        or tokens[0].lower() in STOPWORDS_EN
        or tokens[0].lower().rstrip(".") in _EN_STARTERS
        or tokens[0].lower().rstrip(".") in TITLES
    ):
        tokens = tokens[1:]
    for i, tok in enumerate(tokens):
        if i and tok.lower() in _CURRENCY_CODES:
            tokens = tokens[:i]
            break
    while tokens and (
        tokens[-1].lower() in _EN_CONNECT or (tokens[-1].isdigit() and len(tokens) == 1)
    ):
        tokens = tokens[:-1]
    if not tokens:
        return []
    if len(tokens) == 1:
        word = tokens[0].rstrip(".")
        low = word.lower()
        if low in STOPWORDS_EN or low in _EN_STARTERS or len(word) < 2:
            return []
        first_word = len(tokens) == n_before
        if at_sentence_start and first_word and not (word.isupper() and len(word) >= 2):
            # a capitalised first word is usually just the start of a sentence
            return []
    return tokens


def extract_entities(text: str) -> list[str]:
    """Named things in English or Chinese text, deduplicated, in order of appearance.

    English: runs of capitalised words joined by spaces or "of/de/&" ("Bank of America",
    "Green Fields Agriculture Co.", "M. Cooper"), without leading titles ("Dr.",
    "Judge") or sentence starters; a single capitalised word at the start of a sentence
    is skipped unless it is an acronym. Chinese: organisations ending in 公司/集团/法院/
    医院/银行/大学/... (leading prepositions such as 根据 cut off), anonymised names
    (张某, 李某某), two- or three-character names after a role (患者/被告/原告/法官/医生
    ...), and quoted names (“...”, 《...》, 「...」) in both languages.
    """
    return list(_entities(text))


def _run_names(whole: str, base: int, starts: set[int]) -> list[tuple[int, str]]:
    """(offset, name) of the English names in ``whole``, a run of capitalised words at
    ``base`` of a text whose sentences start at ``starts``."""
    out: list[tuple[int, str]] = []
    for offset, tokens, at_start in _en_groups(whole, base, starts):
        tokens = _clean_en_entity(tokens, at_start)
        if not tokens:
            continue
        name = " ".join(tokens)
        # keep a trailing period only on abbreviations and initials ("Inc.", "M.")
        if (
            name.endswith(".")
            and tokens[-1].rstrip(".").lower() not in _EN_ABBREV
            and not _RE_INITIAL.fullmatch(tokens[-1])
        ):
            name = name[:-1]
        out.append((base + whole.find(tokens[0], offset - base), name))
    return out


@lru_cache(maxsize=4096)
def _plain_run_names(whole: str, at_start: bool) -> tuple[tuple[int, str], ...]:
    """:func:`_run_names` of a run without a period, at offset 0 (a sentence start or
    not)."""
    return tuple(_run_names(whole, 0, {0} if at_start else set()))


@lru_cache(maxsize=4096)
def _entities(text: str) -> tuple[str, ...]:
    t = _fold(text)
    found: list[tuple[int, str]] = []

    starts = _en_sentence_starts(t)
    for m in _RE_EN_CAP.finditer(t):
        if m.start() and t[m.start() - 1].isalpha():
            continue  # a capital inside a word: a unit or a camel-cased word ("mmHg")
        whole = m.group()
        if " " not in whole and "\t" not in whole:
            low = whole.rstrip(".").lower()
            if low in _EN_STARTERS or low in STOPWORDS_EN or len(low) < 2:
                continue  # "The", "In", "It": the bulk of capitalised tokens
        at = m.start()
        if "." in whole:
            found.extend(_run_names(whole, at, starts))
        else:
            # no sentence can start inside a run without a period: its names depend only
            # on its words and on whether it starts a sentence (names repeat: cached)
            found.extend((at + off, name) for off, name in _plain_run_names(whole, at in starts))

    # the Chinese patterns need their CJK words; the organisation pattern runs only near
    # a suffix (_zh_org_matches)
    cjk = not t.isascii()
    for m in _zh_org_matches(t) if cjk else ():
        name = m.group()
        cut = 0
        # the word lists are long and most names hold none of their words: one search
        # tells whether any occurs before each word is looked for
        for w in _ZH_BOUNDARY_WORDS if _RE_ZH_BOUNDARY_WORD.search(name) else ():
            i = name.rfind(w)
            if i >= 0:
                cut = max(cut, i + len(w))
        for i, ch in enumerate(name[:-2]):
            if ch in _ZH_BOUNDARY_CHARS:
                cut = max(cut, i + 1)
        # a role word before the name ("被告青禾建材有限公司", "原告..."), unless it is part
        # of the suffix ("律师事务所") or would leave under two characters of the name
        core_end = len(name) - len(_org_suffix(name))
        for role in _ZH_ROLES if _RE_ZH_ROLE.search(name, 0, core_end) else ():
            i = name.rfind(role, 0, core_end)
            if i >= 0 and i + len(role) <= core_end - 2:
                cut = max(cut, i + len(role))
        name = name[cut:]
        suffix = _org_suffix(name)
        head = name[: -len(suffix)]
        if len(head) < 2 or head in _ZH_GENERIC_ORG_HEADS:
            continue  # 该公司, 本公司, 公司, 上市公司, 保险公司
        counted = _RE_ZH_COUNTED.search(head)
        if counted is not None and head[counted.end() :] in _ZH_GENERIC_ORG_HEADS | {""}:
            continue  # 共有三家子公司, 下设两家分公司: a count of companies, no name
        found.append((m.start() + cut, name))

    for m in _RE_ZH_MOU.finditer(t) if "某" in t else ():
        # "贝某某": any character before a doubled 某 names someone (anonymised
        # records use every surname), a single 某 only after a listed surname
        x = m.group(1)
        if x in _ZH_SURNAMES or (
            m.group().endswith("某某") and x not in _ZH_BOUNDARY_CHARS and x not in _ZH_MOU_STOP
        ):
            found.append((m.start(), m.group()))

    for m in _RE_ZH_ROLE_NAME.finditer(t) if cjk else ():
        cand = m.group(1)
        if cand[0] not in _ZH_SURNAMES:
            continue
        if "某" in cand:
            continue  # handled by the 某 pattern
        name = cand[:2]
        if len(cand) == 3 and cand[2] not in _ZH_NAME_STOP and cand[1] not in _ZH_NAME_STOP:
            name = cand
        if name[1] in _ZH_NAME_STOP:
            continue
        found.append((m.start(1), name))

    for m in _RE_ZH_PLACE.finditer(t) if cjk and any(x in t for x in "省市县区州") else ():
        at = m.start(1)
        # not the head of a name found already ("上海市中级人民法院")
        if m.group(1) not in _ZH_GENERIC_PLACES and not any(s <= at < s + len(n) for s, n in found):
            found.append((at, m.group(1)))

    for m in _RE_QUOTED.finditer(t):
        inner = m.group(1).strip()
        if inner and not re.search(r"[。！？.!?]$", inner):
            found.append((m.start(1), inner))

    found.sort(key=lambda x: x[0])
    out: list[str] = []
    seen: set[str] = set()
    for _, name in found:
        key = normalize(name)
        # "According to Document 1": once clean_answer drops a cited source's number, its
        # label word is left capitalised; it names no entity
        if key in _SOURCE_LABELS or _RE_SOURCE_LABEL.fullmatch(key):
            continue
        if key and key not in seen:
            seen.add(key)
            out.append(name)
    return tuple(out)


# --------------------------------------------------------------------------- concepts

_QUERY_SCAFFOLD_EN = frozenset(
    """according summarize summarise compare describe explain list identify give provide
    mention mentioned happen happened occur occurred did does do tell know find show
    briefly detail details specific specifically main mainly key information info
    regarding respectively total overall exactly approximately kind type way ways
    answer question reason reasons result results one ones happen happens roughly
    approximately about around exactly much many whether relative compared comparison
    respective based overall long short still already yet ever later earlier currently
    recently finally eventually initially previously""".split()
)
#: Common verbs: they break a phrase (concepts are things, not actions; a verb worded
#: differently in the document would hide an otherwise present concept).
_EN_VERBS = frozenset(
    """take takes took taken taking make makes made making get gets got give gives gave
    given go goes went gone come came become became end ends ended close closes closed
    cost costs lead leads led run runs ran pay pays paid have has had start started stop
    stopped begin began see saw say said put set keep kept leave left hold held bring
    brought change changed use used chair chairs chaired step stepped affect affects
    affected cause caused include includes included reach reached receive received
    decide decided agree agreed announce announced report reported occur occurred""".split()
)
#: Nouns too generic to be a concept on their own.
_EN_GENERIC = frozenset(
    """company companies firm firms business year years time times amount amounts number
    numbers people person thing things part parts case cases date dates day days month
    months event events value values level levels way ways""".split()
)
_ZH_FUNCTION_WORDS = (
    "为什么",
    "先后",
    "概括",
    "简要",
    "简述",
    "归纳",
    "最终",
    "大约",
    "大概",
    "部分",
    "还有",
    "没有",
    "开始",
    "之间",
    "当年",
    "那位",
    "那次",
    "那家",
    "这家",
    "一下",
    "怎么样",
    "什么",
    "哪些",
    "哪个",
    "哪家",
    "哪位",
    "哪一",
    "哪年",
    "哪里",
    "多少",
    "如何",
    "怎么",
    "怎样",
    "是否",
    "根据",
    "请问",
    "以及",
    "分别",
    "具体",
    "主要",
    "进行",
    "发生",
    "涉及",
    "相关",
    "有关",
    "关于",
    "情况",
    "期间",
    "其中",
    "还是",
    "概述",
    "总结",
    "描述",
    "说明",
    "介绍",
    "比较",
    "请",
    "哪",
    "吗",
    "呢",
    "的",
    "了",
    "是",
    "在",
    "和",
    "与",
    "及",
    "或",
    "对",
    "其",
    "该",
    "这",
    "那",
    "把",
    "从",
    "于",
    "之",
    "都",
    "也",
    "又",
    "几",
    "谁",
    "何",
)
_RE_ZH_SPLIT = lazy_compile(
    "|".join(re.escape(w) for w in sorted(_ZH_FUNCTION_WORDS, key=len, reverse=True))
    + "|被(?![告害上申])|有(?![限效利关益期])|时(?!间|期|代)|因(?!素|此)|以(?!上|下|来|后|前)"
)
_RE_ZH_SOFT_SPLIT = lazy_compile(r"按照|按|向|由|将|为|对|后|前|底|初|末|被|给|让|使|所")
_RE_LATIN_WORD = lazy_compile(r"[A-Za-z0-9][A-Za-z0-9'’\-]*")
_RE_CJK_RUN = lazy_compile(r"[\u3400-\u9fff\uf900-\ufaff]+")


def _en_phrases(text: str, base: int) -> list[tuple[int, str]]:
    """Stopword-delimited content phrases of a Latin segment (offsets relative to text)."""
    out: list[tuple[int, str]] = []
    run: list[re.Match[str]] = []

    def flush() -> None:
        if run:
            s, e = run[0].start(), run[-1].end()
            out.append((base + s, text[s:e]))
            run.clear()

    pos = 0
    for m in _RE_LATIN_WORD.finditer(text):
        gap = text[pos : m.start()]
        pos = m.end()
        if gap.strip():  # punctuation breaks a phrase
            flush()
        low = m.group().lower().strip("'’-")
        if (
            low in STOPWORDS_EN
            or low in _QUERY_SCAFFOLD_EN
            or low in _EN_STARTERS
            or low in _EN_VERBS
            or (len(low) > 4 and low.endswith("ly"))  # adverbs
            or (run and len(low) > 4 and low.endswith("ed"))  # "drug cleared", "founder stepped"
        ):
            flush()
            continue
        run.append(m)
        if len(run) >= 5:
            flush()
    flush()
    return [
        (s, p)
        for s, p in out
        if any(len(w) >= 3 or w.isdigit() for w in p.split())
        and not (" " not in p and _weak_single_word(p))
    ]


def _weak_single_word(word: str) -> bool:
    """A lone word that makes a poor concept: generic nouns, short words, and verb
    forms ("opened", "acted", "selling")."""
    low = word.lower()
    return (
        low in _EN_GENERIC
        or len(low) < 4
        or (len(low) > 4 and low.endswith(("ed", "ing")) and not word[:1].isupper())
    )


def _zh_phrases(text: str, base: int) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    for at, piece in _zh_segments(text, base):
        # a locative/temporal particle at the end is not part of the thing: 损失中, 入院时
        if len(piece) > 2 and piece[-1] in "中上下后前时里内外":
            piece = piece[:-1]
        out.append((at, piece))
    return out


def _zh_segments(text: str, base: int) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    for run in _RE_CJK_RUN.finditer(text):
        seg_text = run.group()
        pos = 0
        for m in [*_RE_ZH_SPLIT.finditer(seg_text), None]:
            stop = len(seg_text) if m is None else m.start()
            piece = seg_text[pos:stop]
            at = base + run.start() + pos
            if len(piece) > 6:
                # long segments: also cut at softer function characters
                sub_pos = 0
                for sm in [*_RE_ZH_SOFT_SPLIT.finditer(piece), None]:
                    sub_stop = len(piece) if sm is None else sm.start()
                    sub = piece[sub_pos:sub_stop]
                    if len(sub) >= 2:
                        out.append((at + sub_pos, sub))
                    if sm is not None:
                        sub_pos = sm.end()
            elif len(piece) >= 2:
                out.append((at, piece))
            if m is not None:
                pos = m.end()
    return out


def _dedupe_concepts(items: list[tuple[int, str]]) -> list[str]:
    items.sort(key=lambda x: x[0])
    keys = [_compact(normalize(c)) for _, c in items]
    out: list[str] = []
    seen: set[str] = set()
    for i, (_, concept) in enumerate(items):
        key = keys[i]
        if not key or key in seen:
            continue
        # drop a concept contained in a longer one (entity inside a phrase, 2019 in 2019年3月)
        if any(key != other and key in other for other in keys):
            continue
        seen.add(key)
        out.append(concept)
    return out


def extract_concepts(query: str) -> list[str]:
    """Distinct pieces of information in a query that an answer depends on.

    Offline version of seed 000, Listing 5 (concept extraction, adapted from Matton et
    al.): named entities, dates, numbers, quoted names, then key phrases from the rest
    of the query: for Latin text, runs of content words between stopwords, question
    words, common verbs, adverbs and punctuation (at most five words; a lone lower-case
    word only when the query yields nothing else); for Chinese, the segments between
    function words (的/了/是/在/什么/哪些/多少/根据/...) and punctuation, two or more
    characters long. Every concept is a verbatim substring of the query; a concept
    contained in a longer one is dropped; the order follows the query.
    """
    t = query
    items: list[tuple[int, str]] = []
    spans: list[tuple[int, int]] = []
    for d in extract_dates(t):
        items.append((d.start, d.raw))
        spans.append((d.start, d.end))
    for q in extract_quantities(t):
        items.append((q.start, q.raw))
        spans.append((q.start, q.end))
    for name in extract_entities(t):
        at = t.find(name)
        if at < 0:
            continue
        if _overlaps((at, at + len(name)), spans) and not any(
            s >= at and e <= at + len(name) for s, e in spans
        ):
            continue
        items.append((at, name))
        spans.append((at, at + len(name)))
    # blank out what is already taken, then find phrases in the rest
    chars = list(t)
    for s, e in spans:
        for i in range(s, min(e, len(chars))):
            chars[i] = "|"
    rest = "".join(chars)
    phrases = _en_phrases(rest, 0)
    # like the examples of Listing 5, a concept is a name, a number, a date or a phrase:
    # a lone lower-case word ("investor", "cost") is kept only when nothing else is left
    strong = [p for p in phrases if " " in p[1] or p[1][:1].isupper()]
    items.extend(strong if strong or items else phrases)
    items.extend(_zh_phrases(rest, 0))
    return _dedupe_concepts(items)


# --------------------------------------------------------------------------- matching

_RE_SPACE_BETWEEN_CJK = lazy_compile(r"(?<=[\u3400-\u9fff]) (?=[\u3400-\u9fff])")


def _compact(normalised: str) -> str:
    # the lookbehind keeps the regex engine from skipping ahead: test for CJK first
    if _RE_CJK_IDEOGRAPH.search(normalised) is None:
        return normalised
    return _RE_SPACE_BETWEEN_CJK.sub("", normalised)


_RE_CJK_IDEOGRAPH = lazy_compile(r"[\u3400-\u9fff]")


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A light English stem ("decreasing", "decreased" -> "decreas"; "studies" ->
    "study"); other words as they are. Cached."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 5 and word.endswith("ing"):
        return word[:-3]
    if len(word) > 4 and word.endswith("ed"):
        return word[:-2]
    if len(word) > 3 and word.endswith("es"):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    if len(word) > 3 and word.endswith("e"):
        return word[:-1]  # "acquire" ~ "acquired", "sentence" ~ "sentences"
    return word


_RE_TERM_PIECE = lazy_compile(r"[\u3400-\u9fff\uf900-\ufaff]+|[^\W_\u3400-\u9fff\uf900-\ufaff]+")
_RE_TERM_CJK = lazy_compile(r"[\u3400-\u9fff\uf900-\ufaff]")


def _terms(normalised: str) -> list[str]:
    """Stemmed Latin words (stopwords dropped) and CJK character bigrams (a single
    character for an isolated CJK character); CJK runs never join across other text."""
    stop = STOPWORDS_EN
    if normalised.isascii() and normalised.replace(" ", "").isalnum():
        # normalised ASCII of letters and digits between single blanks: its pieces are
        # its words
        return list(map(stem, filterfalse(stop.__contains__, normalised.split())))
    pieces = _RE_TERM_PIECE.findall(normalised)
    if _RE_TERM_CJK.search(normalised) is None:  # Latin words only: stem them in C loops
        return list(map(stem, filterfalse(stop.__contains__, pieces)))
    out: list[str] = []
    for piece in pieces:
        c = piece[0]
        if "\u3400" <= c <= "\u9fff" or "\uf900" <= c <= "\ufaff":
            if len(piece) == 1:
                out.append(piece)
            else:
                out.extend([piece[i : i + 2] for i in range(len(piece) - 1)])
        elif piece not in stop:
            out.append(stem(piece))
    return out


@dataclass(frozen=True, slots=True)
class _Prepared:
    norm: str
    compact: str
    terms: frozenset[str]


@lru_cache(maxsize=4096)
def _prepare(text: str) -> _Prepared:
    norm = normalize(text)
    compact = _compact(norm)
    return _Prepared(norm, compact, frozenset(_terms(compact)))


def key_terms(text: str) -> frozenset[str]:
    """Content terms used for overlap: stemmed Latin words without stopwords, CJK
    character bigrams (single characters for isolated CJK characters). Cached."""
    return _prepare(text).terms


_cached_quantities = _quantities
_cached_dates = _dates


def _is_word_boundary_match(needle: str, hay: str) -> bool:
    """Substring match that, for Latin needles, must start and end on word boundaries."""
    start = hay.find(needle)
    while start >= 0:
        end = start + len(needle)
        left_ok = start == 0 or not hay[start - 1].isalnum() or is_cjk(needle[0])
        right_ok = end == len(hay) or not hay[end].isalnum() or is_cjk(needle[-1])
        if left_ok and right_ok:
            return True
        start = hay.find(needle, start + 1)
    return False


def _cjk_char_coverage(concept: str, terms: frozenset[str]) -> float:
    """Share of a concept's CJK characters that sit in a bigram (or lone character) the
    text also has: tolerant of one inserted or changed character ("以高收益为诱饵" ~
    "以高收益为诱饵，非法...")."""
    total = 0
    covered = 0
    for run in _RE_CJK_RUN.findall(concept):
        n = len(run)
        for i in range(n):
            total += 1
            if (
                (n == 1 and run in terms)
                or (i > 0 and run[i - 1 : i + 1] in terms)
                or (i + 1 < n and run[i : i + 2] in terms)
            ):
                covered += 1
    return covered / total if total else 0.0


#: texts longer than this are not searched fuzzily (partial alignment grows with length)
_MAX_FUZZY_TEXT = 4000


def concept_in_text(concept: str, text: str, *, threshold: float = 0.8) -> bool:
    """Whether ``text`` contains ``concept`` (offline seed 000, Listing 6).

    Checked in order, on NFKC-normalised, lower-cased text without punctuation (and
    without spaces between CJK characters):

    1. the concept occurs verbatim (on word boundaries for Latin text);
    2. a concept that is a date or a number matches a date/number of the text by value
       ("March 2019" ~ "2019-03-12", "$1.2 million" ~ "1,200,000 dollars");
    3. at least ``threshold`` of the concept's terms (stemmed content words; character
       bigrams for Chinese) occur in the text — word order and inflection may differ;
    4. for concepts of 8+ characters in texts of at most 4,000 characters, a fuzzy
       alignment (rapidfuzz ``partial_ratio``) scoring at least ``(1 + threshold) / 2`` —
       small edits and typos.

    Pure, so cached on ``(concept, text, threshold)``: the stage cascade and the type
    tests ask about the same concept and chunk several times per trace, and runs that
    share queries and chunks ask again.
    """
    return _concept_in(concept, text, threshold)


@lru_cache(maxsize=16384)
def _concept_in(concept: str, text: str, threshold: float) -> bool:
    c = _prepare(concept)
    if not c.compact:
        return False
    tx = _prepare(text)
    if not tx.compact:
        return False
    if _is_word_boundary_match(c.compact, tx.compact):
        return True
    dates = _cached_dates(concept)
    if dates and sum(d.end - d.start for d in dates) >= 0.6 * len(concept.strip()):
        text_dates = _cached_dates(text)
        return all(any(dates_match(d, td) for td in text_dates) for d in dates)
    quants = _cached_quantities(concept)
    if quants and sum(q.end - q.start for q in quants) >= 0.6 * len(concept.strip()):
        text_q = _cached_quantities(text)
        return all(any(quantities_match(q, tq) for tq in text_q) for q in quants)
    if c.terms:
        covered = sum(1 for term in c.terms if term in tx.terms)
        if covered / len(c.terms) >= threshold:
            return True
        if _cjk_char_coverage(c.compact, tx.terms) >= threshold:
            return True
    if 8 <= len(c.compact) <= len(tx.compact) <= _MAX_FUZZY_TEXT:
        score = fuzz.partial_ratio(c.compact, tx.compact)
        if score >= 100 * (1 + threshold) / 2:
            return True
    return any(pattern.search(text) for pattern in _short_forms(concept))


_NAME_FILLER = frozenset(["of", "and", "&", "de", "the", "for"])
_ZH_ORG_TAILS = ("股份有限公司", "有限责任公司", "有限公司", "集团公司", "集团", "公司")


@lru_cache(maxsize=4096)
def _short_forms(concept: str) -> tuple[re.Pattern[str], ...]:
    """How a text may refer to a name it introduced in full: an organisation by its
    first distinctive word ("Greenleaf Agritech" -> "Greenleaf"), a person by the
    surname ("M. Cooper" -> "Cooper"), a Chinese organisation without its legal suffix
    ("绿洲科技有限公司" -> "绿洲科技"). Matched case-sensitively on word boundaries."""
    c = concept.strip()
    if any(is_cjk(ch) for ch in c):
        for tail in _ZH_ORG_TAILS:
            if c.endswith(tail) and len(c) - len(tail) >= 2:
                return (re.compile(re.escape(c[: -len(tail)])),)
        return ()
    words = [w for w in re.sub(r"['’]s\b", "", c).split() if w.lower() not in _NAME_FILLER]
    if len(words) < 2 or not all(w[:1].isupper() for w in words):
        return ()
    forms: list[str] = []
    if re.fullmatch(r"[A-Z]\.", words[0]) or words[0].lower().rstrip(".") in TITLES:
        forms.append(words[-1])  # M. Cooper, Dr. Smith
    else:
        head = words[0].rstrip(".")
        if len(head) >= 4 and head.lower() not in _EN_GENERIC | _EN_STARTERS:
            forms.append(head)  # Greenleaf Agritech, Corvane Semiconductor
    return tuple(re.compile(rf"(?<![\w]){re.escape(f)}(?![\w])") for f in forms if len(f) >= 3)


# --------------------------------------------------------------------------- support

_RE_LATIN_ALPHA = lazy_compile(r"[A-Za-z]+")
_STOP_ZH_CHARS = frozenset(
    "的了和是在有与及或也就都而其之这那哪个些什么吗呢吧啊于被把对从到为以将并等中上下由该此如何请"
)


@dataclass(frozen=True, slots=True)
class Support:
    """How much of a text's content is found in some source texts.

    Content units are Latin content words (stopwords and numbers excluded) and CJK
    characters (function characters excluded). A CJK character counts as supported when
    a bigram it belongs to occurs in a source; isolated unsupported characters are
    forgiven (rewording), runs of two or more are not.
    """

    total: int
    unsupported: int
    examples: tuple[str, ...]

    @property
    def unsupported_share(self) -> float:
        return self.unsupported / self.total if self.total else 0.0


def _blanked(t: str, spans: Iterable[tuple[int, int]]) -> str:
    """``t`` with every character inside one of ``spans`` (clipped to ``t``) a space."""
    out: list[str] = []
    pos = 0
    for start, end in sorted((max(s, 0), min(e, len(t))) for s, e in spans):
        start = max(start, pos)
        if end > start:
            out.append(t[pos:start])
            out.append(" " * (end - start))
            pos = end
    out.append(t[pos:])
    return "".join(out)


@lru_cache(maxsize=1024)
def _content_units(
    text: str,
) -> tuple[tuple[tuple[int, str, str, str], ...], tuple[tuple[int, str], ...]]:
    """What :func:`content_support` weighs in ``text``, worked out once per text (it is
    asked about one answer against several sets of sources): its Latin content words as
    (offset, word, lower case, stem) and its CJK runs as (offset, run), numbers and dates
    blanked."""
    t = _blanked(
        _fold(text),
        [
            *((q.start, q.end) for q in _cached_quantities(text)),
            *((d.start, d.end) for d in _cached_dates(text)),
        ],
    )
    words = tuple(
        (m.start(), m.group(), low, stem(low))
        for m in _RE_LATIN_ALPHA.finditer(t)
        if len(low := m.group().lower()) >= 2 and low not in STOPWORDS_EN
    )
    return words, tuple((m.start(), m.group()) for m in _RE_CJK_RUN.finditer(t))


@lru_cache(maxsize=256)
def _sources_support(sources: tuple[str, ...]) -> tuple[frozenset[str], frozenset[str]]:
    """The terms and the characters of ``sources`` (one answer is weighed against the
    same sources many times)."""
    support: set[str] = set()
    chars: set[str] = set()
    for src in sources:
        prepared = _prepare(src)
        support |= prepared.terms
        chars.update(prepared.compact)
    return frozenset(support), frozenset(chars)


def content_support(text: str, sources: Iterable[str]) -> Support:
    """Which content of ``text`` is absent from every text of ``sources``.

    Numbers and dates are blanked first (they are compared by value elsewhere, see
    :func:`quantities_match` and :func:`dates_match`). Returns the number of content
    units, how many are unsupported, and the unsupported words/CJK spans in text order.
    """
    support, chars = _sources_support(tuple(sources))
    words, runs = _content_units(text)
    total = len(words)
    examples = [
        (at, word) for at, word, low, stem in words if stem not in support and low not in support
    ]
    unsupported = len(examples)
    for start, run in runs:
        n = len(run)
        # a character is supported when a bigram it belongs to is (each bigram looked up
        # once), or, alone, when it is itself
        pairs = [run[k : k + 2] in support for k in range(n - 1)]
        ok = (
            [run in support]
            if n == 1
            else [pairs[0], *(a or b for a, b in pairwise(pairs)), pairs[-1]]
        )
        i = 0
        while i < n:
            if run[i] in _STOP_ZH_CHARS:
                i += 1
                continue
            total += 1
            if ok[i]:
                i += 1
                continue
            j = i
            while j < n and not ok[j] and run[j] not in _STOP_ZH_CHARS:
                j += 1
            length = j - i
            total += length - 1
            # a lone unsupported character (its neighbour a stop character: "成都", 都
            # being one) is unsupported when no source has the character at all
            if length >= 2 or run[i] not in chars:
                unsupported += length
                examples.append((start + i, run[i:j]))
            i = j
    examples.sort()
    return Support(total, unsupported, tuple(e for _, e in examples))
