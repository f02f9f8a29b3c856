"""The rules judge's fast paths give exactly what the straightforward code gave.

Each reference below is the implementation a fast path replaced, kept here as the oracle;
property tests compare the two on generated text (English, Chinese, mixed, full-width,
kana/hangul, accents, odd punctuation) and on the real-style benchmark's traces.
"""

from __future__ import annotations

import re
import sys
import unicodedata
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from ragtriage import groundtruth
from ragtriage import text as T
from ragtriage.diagnosis import facts
from ragtriage.text import STOPWORDS_EN, STOPWORDS_ZH, is_cjk, token_spans

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from diagnose_rules import real_traces

# -- references: the code before the fast paths ----------------------------------------


def ref_word_tokens(text: str) -> tuple[list[str], bool]:
    t = text if text.isascii() else unicodedata.normalize("NFKC", text)
    if T._CJK_RE.search(t) is None:
        return [w.lower().replace(",", "") for w in T._LATIN_TOKEN.findall(t)], False
    return [t[s:e].lower().replace(",", "") for s, e in token_spans(t)], True


def ref_match_tokens(text: str) -> tuple[list[str], bool]:
    toks, has_cjk = ref_word_tokens(text)
    if not has_cjk:
        return toks, False
    out: list[str] = []
    run: list[str] = []

    def flush() -> None:
        if len(run) == 1:
            out.append(run[0])
        else:
            out.extend(run[i] + run[i + 1] for i in range(len(run) - 1))
        run.clear()

    for tok in toks:
        if len(tok) == 1 and is_cjk(tok):
            run.append(tok)
        else:
            if run:
                flush()
            out.append(tok)
    if run:
        flush()
    return out, True


def ref_content_tokens(text: str) -> tuple[str, ...]:
    toks, has_cjk = ref_match_tokens(text)
    if not has_cjk:
        return tuple(tok for tok in toks if tok not in STOPWORDS_EN)
    return tuple(
        tok for tok in toks if tok not in STOPWORDS_EN and not all(c in STOPWORDS_ZH for c in tok)
    )


# -- generated text ----------------------------------------------------------------------

_PIECES = [
    *"abcXYZ019",
    " ",
    "  ",
    "\n",
    "\t",
    ",",
    ".",
    "'",
    "’",
    "-",
    "_",
    "$",
    "%",
    "(",
    ")",
    "「",
    "。",
    "，",
    "１",
    "Ａ",
    "ｶ",
    "É",
    "é",
    "İ",
    "ß",
    "ﬁ",
    "の",
    "한",
    "中",
    "国",
    "公司",
    "的",
    "了",
    "和",
    "年",
    "2019年3月",
    "1,200",
    "3.5",
    "o'neil",
    "COVID-19",
    "the",
    "and",
    "Revenue",
    "𠀀",
    "豈",
]
texts = st.lists(st.sampled_from(_PIECES), max_size=40).map("".join)


def _real_texts() -> list[str]:
    out: list[str] = []
    for t in real_traces(21):
        out += [t.answer, t.example.query, t.example.answer]
        out += [c.text for c in t.gt_doc_chunks[:3]]
    return out


# -- tokens --------------------------------------------------------------------------


@settings(max_examples=600, deadline=None)
@given(texts)
def test_match_tokens_equal_reference(text: str) -> None:
    assert T._match_tokens(text) == ref_match_tokens(text)
    assert T._word_tokens(text) == ref_word_tokens(text)


@settings(max_examples=600, deadline=None)
@given(texts)
def test_content_tokens_equal_reference(text: str) -> None:
    assert T._content_tokens.__wrapped__(text) == ref_content_tokens(text)


def test_tokens_equal_reference_on_real_style_traces() -> None:
    for text in _real_texts():
        assert T._match_tokens(text) == ref_match_tokens(text)
        assert T._content_tokens.__wrapped__(text) == ref_content_tokens(text)


def test_cjk_characters_have_no_case() -> None:
    # the fast tokenizer adds CJK characters to a run without lower-casing them
    for lo, hi in T._CJK_RANGES:
        for cp in range(lo, hi + 1):
            ch = chr(cp)
            assert ch.lower() == ch, hex(cp)


# -- reference location ----------------------------------------------------------------


def ref_gt_normalize(text: str) -> tuple[str, tuple[int, ...]]:
    chars: list[str] = []
    origin: list[int] = []
    for i, ch in enumerate(text):
        if ch.isascii():
            if ch.isalnum():
                chars.append(ch.lower())
                origin.append(i)
            continue
        for out in unicodedata.normalize("NFKC", ch).lower():
            if out.isalnum():
                chars.append(out)
                origin.append(i)
    return "".join(chars), tuple(origin)


@settings(max_examples=600, deadline=None)
@given(texts)
def test_reference_normalisation_equals_reference(text: str) -> None:
    got = groundtruth._normalize(text)
    assert (got.text, got.origin) == ref_gt_normalize(text)


def test_reference_normalisation_of_every_bmp_character() -> None:
    # one character at a time and all of them in one text: expansions ("ﬁ" -> "fi",
    # "㎞" -> "km") repeat their origin
    chars = "".join(chr(cp) for cp in range(0x10000) if not 0xD800 <= cp <= 0xDFFF)
    got = groundtruth._normalize(chars)
    assert (got.text, got.origin) == ref_gt_normalize(chars)


# -- numbers and dates: each shortcut is implied by the pattern it skips ----------------

_NUMERIC = [*"0123456789", "٣", ",", ".", "-", "/", " ", "\t", "\n", "st", "th", "%", "Q3", "FY"]
_NUMERIC += ["in ", "In ", "since ", "year ", "1500", "2099", "1499", "2100", "3912", "0800"]
_NUMERIC += ["年", "月", "季度", "第三", "million", "percent", "per cent", "亿", "US$", "$"]
numeric_texts = st.lists(st.sampled_from(_NUMERIC), max_size=30).map("".join)

_OLD_DIGITS = re.compile(r"(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?!\d)(?!\.\d)(?!(?:st|nd|rd|th)\b)")


@settings(max_examples=800, deadline=None)
@given(numeric_texts)
def test_digit_pattern_equals_the_old_one(text: str) -> None:
    old = [m.span() for m in _OLD_DIGITS.finditer(text)]
    assert [m.span() for m in facts._RE_DIGITS.finditer(text)] == old


@settings(max_examples=800, deadline=None)
@given(numeric_texts)
def test_date_shortcuts_are_implied_by_their_patterns(text: str) -> None:
    if facts._RE_NUMERIC_DATE.search(text):
        assert facts._RE_HAS_NUM_DATE.search(text)
    if facts._RE_ZH_QUARTER.search(text):
        assert "季度" in text
    # the prepositional-year loop adds only years outside 1500-2099
    odd = [m for m in facts._RE_PREP_YEAR.finditer(text) if not 1500 <= int(m.group(1)) <= 2099]
    if odd:
        assert facts._odd_four_digits(text)


def test_suffix_start_matches_exactly_the_first_characters_of_units_and_scales() -> None:
    firsts = {w[0] for w in [*facts._SCALES, *facts._UNITS]}
    literal = [re.compile(re.escape(c), re.IGNORECASE) for c in firsts]
    for cp in range(0x10000):
        ch = chr(cp)
        expected = any(p.match(ch) for p in literal)
        assert bool(facts._RE_SUFFIX_START.match(ch)) == expected, hex(cp)


# -- sentences -------------------------------------------------------------------------


def ref_split_sentences(text: str) -> list[T.Sentence]:
    cuts: set[int] = set()
    for m in re.finditer(r"\n+", text):
        cuts.add(m.start())
        cuts.add(m.end())
    for m in T._ZH_END.finditer(text):
        cuts.add(m.end())
    for m in T._EN_END.finditer(text):
        if text[m.start()] == "." and T._is_abbreviation_at(text, m.start()):
            continue
        cuts.add(m.end())
    bounds = sorted(c for c in cuts if 0 < c < len(text))
    out: list[T.Sentence] = []
    prev = 0
    for c in [*bounds, len(text)]:
        if text[prev:c].strip():
            out.append(T._trimmed(text, prev, c))
        prev = c
    return out


_SENTENCE_PIECES = [*_PIECES, ". ", "! ", "? ", "?", "!", "…", "……", "；", "！", "。」", '." ']
_SENTENCE_PIECES += ["Mr. ", "e.g. ", "J. ", "3. ", "\u2028", "\x1c", "\xa0", "\u3000", "\r\n"]
sentence_texts = st.lists(st.sampled_from(_SENTENCE_PIECES), max_size=40).map("".join)


@settings(max_examples=800, deadline=None)
@given(sentence_texts)
def test_split_sentences_equals_reference(text: str) -> None:
    assert T._split_sentences(text) == ref_split_sentences(text)
    assert T.split_sentences(text) == ref_split_sentences(text)


def test_split_sentences_equals_reference_on_real_style_traces() -> None:
    for text in _real_texts():
        assert T.split_sentences(text) == ref_split_sentences(text)
