"""The rules judge's fast paths give exactly what the straightforward code gave.

Each reference below is the implementation a fast path replaced, kept here as the oracle;
property tests compare the two on generated text (English, Chinese, mixed, full-width,
kana/hangul, accents, odd punctuation) and on the real-style benchmark's traces.
"""

from __future__ import annotations

import re
import sys
import unicodedata
from collections import Counter
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from ragtriage import groundtruth
from ragtriage import text as T
from ragtriage.diagnosis import answer_eval, answer_styles, facts, types_rules
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


def joined(pieces: list[str], most: int) -> st.SearchStrategy[str]:
    """Texts made of up to ``most`` of ``pieces``."""
    return st.lists(st.sampled_from(pieces), max_size=most).map("".join)


texts = joined(_PIECES, 40)


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


def test_chinese_stopwords_are_single_cjk_characters() -> None:
    # content_tokens keeps every token of three characters or more on this premise
    assert all(len(w) == 1 and is_cjk(w) for w in STOPWORDS_ZH)


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
_NUMERIC += [
    "Q",
    "q",
    "quarter",
    "third ",
    "headquartered",
    "ſecond ",
    "Fourth\t",
    "1ST ",
    "within ",
    "BEFORE\t",
    "ſince ",
    "\n",
    "_",
    "3912a",
]
_NUMERIC += ["年", "月", "季度", "第三", "million", "percent", "per cent", "亿", "US$", "$"]
numeric_texts = joined(_NUMERIC, 30)

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
    if facts._RE_QUARTER.search(text):
        assert facts._may_name_quarter(text)
    # the years outside 1500-2099 that the prepositional-year pattern matches
    odd = [m.span(1) for m in facts._RE_PREP_YEAR.finditer(text)]
    odd = [(s, e) for s, e in odd if not 1500 <= int(text[s:e]) <= 2099]
    assert list(facts._prep_years(text)) == odd


def test_names_of_runs_without_a_period_equal_the_uncached_reading() -> None:
    """A capitalised run without a period is read once per wording and sentence-start
    flag (_plain_run_names); the names equal those read in place."""
    for t in real_traces(60):
        for text in (t.answer, *(c.text for c in t.gt_doc_chunks)):
            folded = facts._fold(text)
            starts = facts._en_sentence_starts(folded)
            for m in facts._RE_EN_CAP.finditer(folded):
                whole = m.group()
                if "." in whole:
                    continue
                cached = [
                    (m.start() + off, name)
                    for off, name in facts._plain_run_names(whole, m.start() in starts)
                ]
                assert cached == facts._run_names(whole, m.start(), starts)


def test_only_ascii_letters_fold_to_the_quarter_letters() -> None:
    # _may_name_quarter looks for "q1", "quarter"... in str.lower(): every character the
    # case-insensitive pattern takes for one of these letters must lower to it
    for letter in "quarter":
        pattern = re.compile(letter, re.IGNORECASE)
        for cp in range(0x10000):
            if pattern.match(chr(cp)):
                assert chr(cp).lower() == letter, hex(cp)


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
sentence_texts = joined(_SENTENCE_PIECES, 40)


@settings(max_examples=800, deadline=None)
@given(sentence_texts)
def test_split_sentences_equals_reference(text: str) -> None:
    assert T._split_sentences(text) == ref_split_sentences(text)
    assert T.split_sentences(text) == ref_split_sentences(text)


def test_split_sentences_equals_reference_on_real_style_traces() -> None:
    for text in _real_texts():
        assert T.split_sentences(text) == ref_split_sentences(text)


# -- case-insensitive cues on ASCII text ---------------------------------------------------

_CUE_PIECES = ["I ", "i", "don't ", "DO NOT ", "do n't ", "know", "Not ", "mentioned", " is ", "IS"]
_CUE_PIECES += ["none of the ", "Documents", "provide", "cannot be ", "Determined", "unknown"]
_CUE_PIECES += ["There is no ", "information", "likely", "Thus, ", "the answer is", "\n", ". "]
_CUE_PIECES += ["(Doc 2)", "[1]", "**", "'", " ", "\t", "K", "s", "ſ", "İ", "不知道", "没有提供"]
_CUE_PIECES += [
    "\u212a",
    "ı",
    "É",
    "Σ",
    "无法确定",
    "缺乏",
    "关于",
    "的数据",
    "信息不足",
    "。",
    "，",
]
_CUE_PIECES += [
    "dont ",
    "do nt ",
    "no",
    "info",
    "Context",
    "综上所述，",
    "答案是",
    "So, ",
    ":",
    "\n\n",
]
cue_texts = joined(_CUE_PIECES, 25)

_FOLDED = [
    answer_styles._EN_DECLINE,
    answer_styles._CONCLUSION,
    answer_styles._GUESS,
    answer_styles._CLAUSES,
    answer_styles._CITATIONS,
]


def _span(m: re.Match[str] | None) -> tuple[int, int] | None:
    return None if m is None else m.span()


@settings(max_examples=800, deadline=None)
@given(cue_texts, st.integers(0, 5))
def test_folded_patterns_find_what_the_patterns_find(text: str, pos: int) -> None:
    for pattern in _FOLDED:
        folded = T.FoldedPattern(pattern)
        assert _span(folded.search(text, pos)) == _span(pattern.search(text, pos))


def test_lower_casing_keeps_what_a_case_insensitive_pattern_sees() -> None:
    """FoldedPattern's premise, over all of Unicode but "İ", "ı" and "ſ": lower-casing
    keeps a character one character and its class, and maps it to an ASCII letter exactly
    when a case-insensitive pattern matches it to that letter."""
    skip = {0x130, 0x131, 0x17F}
    chars = "".join(
        chr(c) for c in range(0x110000) if not (0xD800 <= c <= 0xDFFF) and c not in skip
    )
    low = chars.lower()
    assert len(low) == len(chars)
    for cls in (r"\w", r"\s", r"\d", r"\b"):
        pattern = re.compile(cls)
        assert [m.start() for m in pattern.finditer(chars)] == [
            m.start() for m in pattern.finditer(low)
        ], cls
    for letter in "abcdefghijklmnopqrstuvwxyz":
        insensitive = [m.start() for m in re.finditer(letter, chars, re.IGNORECASE)]
        assert insensitive == [m.start() for m in re.finditer(letter, low)], letter
    # why these three are searched as they are
    assert len("\u0130".lower()) == 2
    assert re.fullmatch("i", "\u0131", re.IGNORECASE) and "\u0131".lower() != "i"
    assert re.fullmatch("s", "\u017f", re.IGNORECASE) and "\u017f".lower() != "s"


def test_folded_pattern_keeps_patterns_with_capitals_as_they_are() -> None:
    for source in (r"[A-Z]+", r"\\S", r"(?P<Name>x)"):
        assert T.FoldedPattern(re.compile(source, re.IGNORECASE))._cased is None
    assert T.FoldedPattern(re.compile(r"\S+", re.IGNORECASE))._cased is not None
    assert T.FoldedPattern(re.compile(r"abc"))._cased is None  # not case-insensitive


def _plain_declines(text: str) -> tuple[str, ...]:
    """The declining sentences as answer_view found them: each sentence searched alone."""

    def plain(t: str) -> bool:
        return bool(answer_styles._EN_DECLINE.search(t) or answer_styles._ZH_DECLINE.search(t))

    return tuple(s.text for s in T.split_sentences(text) if plain(s.text)) if plain(text) else ()


@settings(max_examples=1500, deadline=None)
@given(cue_texts)
def test_declining_sentences_found_in_one_pass_equal_each_searched_alone(text: str) -> None:
    found = answer_styles._declining(text, T.split_sentences(text))
    assert found == _plain_declines(text)


def test_declining_sentences_equal_on_real_style_answers() -> None:
    for t in real_traces(60):
        text = answer_styles.clean_answer(t.answer)
        assert answer_styles.answer_view(t.answer).declines == _plain_declines(text)


@settings(max_examples=1500, deadline=None)
@given(cue_texts)
def test_last_conclusion_is_the_last_match_of_the_pattern(text: str) -> None:
    last = None
    for m in answer_styles._CONCLUSION.finditer(text):
        last = m
    fast = answer_styles._last_conclusion(text)
    assert _span(fast) == _span(last)
    assert (fast and fast.group(0)) == (last and last.group(0))


def ref_clean_answer(answer: str) -> str:
    """clean_answer before its guards and fast label pattern."""
    s = answer_styles
    lines = []
    for line in answer.replace("\r\n", "\n").split("\n"):
        if s._TABLE_RULE.match(line):
            continue
        line = s._MD_LINE.sub("", line)
        line = s._MD_EMPH.sub("", line)
        if "|" in line:
            line = line.strip().strip("|").replace("|", ",")
        line = s._CITATIONS.sub("", line)
        line = s._DOC_LABEL.sub(s._label_only, line)
        line = s._SPACES.sub(" ", line)
        lines.append(line.strip())
    return "\n".join(lines).strip()


_MD_PIECES = [
    *_CUE_PIECES,
    "*",
    "_",
    "`",
    "|",
    "---",
    "# ",
    "- ",
    "1. ",
    "[1]",
    "【3】",
    "（文档2）",
]
_MD_PIECES += [
    "Document 1",
    "doc3",
    "Passage 12",
    "source 4",
    "文档3",
    "来源12",
    "片段 5",
    "(",
    "[",
]
_MD_PIECES += ["Doc", "#", "1", "12345", "Excerpt", "CHUNK 2", "、", "（", "）", "]", ")", "Ｄoc"]


@settings(max_examples=1500, deadline=None)
@given(joined(_MD_PIECES, 30))
def test_clean_answer_equals_reference(text: str) -> None:
    assert answer_styles.clean_answer.__wrapped__(text) == ref_clean_answer(text)


@settings(max_examples=800, deadline=None)
@given(cue_texts)
def test_cue_tests_equal_their_plain_form(text: str) -> None:
    s = answer_styles
    plain_decline = bool(s._EN_DECLINE.search(text) or s._ZH_DECLINE.search(text))
    assert s.declining_sentence(text) == plain_decline
    # one list of declining phrases for the answer evaluation and the type tests
    assert answer_eval._has_cue(text) == plain_decline
    assert types_rules.abstains(text) == plain_decline


def _first_chars(items: list[tuple[object, object]]) -> set[str] | None:
    """The characters a match of the parsed pattern ``items`` can start with (None: any)."""
    from re import _constants as c

    for i, (op, av) in enumerate(items):
        if op in (c.AT, c.ASSERT, c.ASSERT_NOT):  # zero width: look further
            continue
        if op in (c.MAX_REPEAT, c.MIN_REPEAT) and av[0] == 0:  # optional: it or what follows
            inner, rest = _first_chars(list(av[2])), _first_chars(items[i + 1 :])
            return None if inner is None or rest is None else inner | rest
        if op is c.LITERAL:
            return {chr(av)}
        if op is c.SUBPATTERN:
            return _first_chars(list(av[3]))
        if op is c.BRANCH:
            out: set[str] = set()
            for branch in av[1]:
                first = _first_chars(list(branch))
                if first is None:
                    return None
                out |= first
            return out
        if op is c.IN and all(o is c.LITERAL for o, _ in av):
            return {chr(v) for _, v in av}
        if op in (c.MAX_REPEAT, c.MIN_REPEAT) and av[0] >= 1:
            return _first_chars(list(av[2]))
        return None
    return None


def test_shortcut_premises_hold_for_the_patterns() -> None:
    from re import _parser

    for pattern in (answer_styles._ZH_DECLINE,):
        first = _first_chars(list(_parser.parse(pattern.pattern, pattern.flags)))
        assert first is not None and all(T.is_cjk(ch) for ch in first), pattern.pattern
    # each fast form's lookahead names every character a match of the plain form starts with
    shortcuts = [
        (answer_styles._EN_DECLINE, r"\b", "inlwahdcutr"),
        (answer_styles._ZH_DECLINE, "", "无不难找没未并均都缺信"),
        (answer_styles._DOC_LABEL, "", "DdPpSsCcEe文资段片来"),
        (answer_styles._CONCLUSION_TAIL, r"\s*", "thscaoifd综因所总结答最"),
    ]
    for pattern, lead, allowed in shortcuts:
        source = pattern.pattern.removeprefix(lead)
        first = _first_chars(list(_parser.parse(source, pattern.flags)))
        assert first is not None and {ch.lower() for ch in first} <= set(allowed), first
    assert answer_styles._EN_DECLINE_FAST.pattern.pattern.startswith(r"\b(?=[inlwahdcutr])")
    assert answer_styles._ZH_DECLINE_FAST.pattern.startswith("(?=[无不难找没未并均都缺信])")
    assert answer_styles._DOC_LABEL_FAST.pattern.startswith("(?=[DdPpSsCcEe文资段片来])")
    emph = answer_styles._MD_EMPH.pattern
    assert emph.startswith("(?=[*_`])(?:")
    inner = emph.removeprefix("(?=[*_`])")
    first = _first_chars(list(_parser.parse(inner)))
    assert first is not None and first <= set("*_`")


@settings(max_examples=600, deadline=None)
@given(texts)
def test_has_content_is_content_tokens_not_empty(text: str) -> None:
    assert T.has_content(text) == bool(ref_content_tokens(text))


_WORD_PIECES = [*_CUE_PIECES, "May ", "may", "MARCH", "sept", "Sept.", "twenty-one", "hundred"]
_WORD_PIECES += ["band", "andand", "and ", "one", "None", "2019", "i", "-", "é", "A"]
word_texts = joined(_WORD_PIECES, 25)


@settings(max_examples=800, deadline=None)
@given(word_texts)
def test_latin_tokens_equal_reference(text: str) -> None:
    ref = tuple(
        (m.start(), m.end(), low)
        for m in facts._RE_LATIN_RUN.finditer(text)
        if (low := m.group().lower()) in facts._TOKENS_OF_INTEREST
    )
    assert facts._latin_tokens.__wrapped__(text) == ref


@settings(max_examples=400, deadline=None)
@given(texts)
def test_compact_equals_reference(text: str) -> None:
    normalised = facts.normalize(text)
    assert facts._compact(normalised) == facts._RE_SPACE_BETWEEN_CJK.sub("", normalised)


_NAME_PIECES = [
    *_WORD_PIECES,
    "公司",
    "有限公司",
    "股份有限公司",
    "集团",
    "根据",
    "原告",
    "青禾",
    "被告",
    "张某",
    "某",
    "：",
    "“",
    "”",
    "《",
]
name_texts = joined(_NAME_PIECES, 25)


@settings(max_examples=800, deadline=None)
@given(name_texts)
def test_chinese_organisation_matches_equal_the_pattern_scan(text: str) -> None:
    """_zh_org_matches starts the organisation pattern near the next suffix only; it must
    find what scanning every position finds, and the suffix it reads is the longest."""
    expected = [m.span() for m in facts._RE_ZH_ORG.finditer(text)]
    assert [m.span() for m in facts._zh_org_matches(text)] == expected
    for m in facts._RE_ZH_ORG.finditer(text):
        name = m.group()
        longest = next(x for x in facts._ZH_ORG_SUFFIXES_LONGEST if name.endswith(x))
        assert facts._org_suffix(name) == longest


@settings(max_examples=800, deadline=None)
@given(name_texts)
def test_entity_pattern_shortcuts_are_implied_by_their_patterns(text: str) -> None:
    if facts._RE_ZH_ORG.search(text):
        assert not text.isascii() and any(x in text for x in facts._ZH_ORG_SUFFIXES)
    if facts._RE_ZH_MOU.search(text):
        assert "某" in text
    if facts._RE_ZH_ROLE_NAME.search(text):
        assert not text.isascii()


# -- one normal form ----------------------------------------------------------------------


def ref_facts_normalize(text: str) -> str:
    return re.sub(r"[\W_]+", " ", unicodedata.normalize("NFKC", text).lower()).strip()


@settings(max_examples=3000, deadline=None)
@given(st.text())
def test_facts_normalize_is_text_normalize(text: str) -> None:
    assert facts.normalize(text) == ref_facts_normalize(text) == T._normalize(text)


def test_facts_normalize_is_text_normalize_for_every_bmp_character() -> None:
    for cp in range(0x10000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        text = f"a{chr(cp)}_b {chr(cp)}"
        assert T._normalize(text) == ref_facts_normalize(text), hex(cp)


def ref_terms(normalised: str) -> list[str]:
    out: list[str] = []
    for piece in facts._RE_TERM_PIECE.findall(normalised):
        c = piece[0]
        if "\u3400" <= c <= "\u9fff" or "\uf900" <= c <= "\ufaff":
            if len(piece) == 1:
                out.append(piece)
            else:
                out.extend([piece[i : i + 2] for i in range(len(piece) - 1)])
        elif piece not in STOPWORDS_EN:
            out.append(facts.stem(piece))
    return out


@settings(max_examples=600, deadline=None)
@given(name_texts)
def test_terms_equal_reference(text: str) -> None:
    normalised = facts._compact(facts.normalize(text))
    assert facts._terms(normalised) == ref_terms(normalised)


@settings(max_examples=600, deadline=None)
@given(
    st.dictionaries(st.sampled_from("abcdefgh"), st.integers(1, 5)),
    st.dictionaries(st.sampled_from("abcdefgh"), st.integers(1, 5)),
)
def test_overlap_counts_the_multiset_intersection(a: dict[str, int], b: dict[str, int]) -> None:
    # token bags: positive counts
    answer, reference = Counter(a), Counter(b)
    common = sum((answer & reference).values())
    expected = (0.0, 0.0, 0.0)
    if common:
        p, r = common / sum(answer.values()), common / sum(reference.values())
        expected = (p, r, 2 * p * r / (p + r))
    assert answer_eval._overlap(answer, reference) == expected


_NFKC_PIECES = [
    *_PIECES,
    *_NAME_PIECES,
    "\u0301",
    "\u0308",
    "\u3000",
    "，",
    "：",
    "（",
    "…",
    "™",
    "ｶ",
    "ﾞ",
]
_NFKC_PIECES += ["Ａ", "\u00c5", "A\u030a", "\u212b", "①", "㎞", "ﬁ", "\uff5e", "\uff5f", "\uff00"]


@settings(max_examples=1500, deadline=None)
@given(joined(_NFKC_PIECES, 30))
def test_nfkc_equals_unicodedata(text: str) -> None:
    assert T.nfkc(text) == unicodedata.normalize("NFKC", text)


@settings(max_examples=1500, deadline=None)
@given(st.text())
def test_nfkc_equals_unicodedata_on_any_text(text: str) -> None:
    assert T.nfkc(text) == unicodedata.normalize("NFKC", text)


def test_full_width_forms_map_to_their_nfkc_form() -> None:
    for ch, ascii_ch in T._FULL_WIDTH.items():
        assert unicodedata.normalize("NFKD", ch) == ascii_ch
        assert unicodedata.combining(ch) == 0


@settings(max_examples=800, deadline=None)
@given(joined(_NFKC_PIECES, 30))
def test_fold_equals_translate(text: str) -> None:
    assert facts._fold.__wrapped__(text) == text.translate(str.maketrans(facts._FOLD))


# -- type tests ----------------------------------------------------------------------------

_MID_PIECES = [
    "Acme",
    "Acmes",
    "acme",
    " ",
    ", ",
    "; ",
    "x",
    "X",
    "_",
    "1",
    "é",
    "-",
    "\n",
    "Acme_",
]
mid_texts = joined(_MID_PIECES, 20)


@settings(max_examples=1500, deadline=None)
@given(mid_texts)
def test_mid_sentence_equals_the_per_word_pattern(text: str) -> None:
    for word in ("Acme", "Acmes"):
        expected = bool(re.search(rf"[a-z,;] {re.escape(word)}\b", text))
        assert types_rules._mid_sentence(word, text) == expected


def test_is_word_is_the_regex_word_class() -> None:
    for cp in range(0x10000):
        ch = chr(cp)
        assert types_rules._is_word(ch) == bool(re.match(r"\w", ch)), hex(cp)


def ref_blanked(t: str, spans: list[tuple[int, int]]) -> str:
    chars = list(t)
    for s, e in spans:
        for i in range(s, min(e, len(chars))):
            chars[i] = " "
    return "".join(chars)


@settings(max_examples=800, deadline=None)
@given(texts, st.lists(st.tuples(st.integers(0, 45), st.integers(0, 45)), max_size=6))
def test_blanked_equals_reference(text: str, spans: list[tuple[int, int]]) -> None:
    assert facts._blanked(text, spans) == ref_blanked(text, spans)


_OLD_CITATIONS = re.compile(
    r"[ \t]*[\[【(（]\s*(?:(?:docs?|documents?|sources?|passages?|chunks?|refs?|references?|"
    r"contexts?|文档|文件|资料|来源|段落|参考)\s*[:：#]?\s*)?"
    r"(?:\d{1,3}|[A-Z])(?:\s*(?:[,，;；、]|-|–|and|&|和)\s*(?:(?:docs?|documents?|文档)\s*)?"
    r"(?:\d{1,3}|[A-Z]))*\s*[\]】)）]",
    re.IGNORECASE,
)
_CITATION_PIECES = [" ", "\t", "  ", "(", ")", "[", "]", "【", "】", "（", "）", "Doc", "doc ", "2"]
_CITATION_PIECES += ["12", ", ", "and ", "文档", "A", "x", "\n", "Documents: ", "-", "：", "–"]


@settings(max_examples=2000, deadline=None)
@given(joined(_CITATION_PIECES, 25))
def test_citation_pattern_equals_the_old_one(text: str) -> None:
    assert answer_styles._CITATIONS.sub("", text) == _OLD_CITATIONS.sub("", text)
    old = [m.span() for m in _OLD_CITATIONS.finditer(text)]
    assert [m.span() for m in answer_styles._CITATIONS.finditer(text)] == old


def ref_content_support(text: str, sources: list[str]) -> facts.Support:
    support: set[str] = set()
    chars: set[str] = set()
    for src in sources:
        support |= facts._prepare(src).terms
        chars |= set(facts._prepare(src).compact)
    t = ref_blanked(
        facts._fold(text),
        [(q.start, q.end) for q in facts.extract_quantities(text)]
        + [(d.start, d.end) for d in facts.extract_dates(text)],
    )
    total = unsupported = 0
    examples: list[tuple[int, str]] = []
    for m in facts._RE_LATIN_ALPHA.finditer(t):
        low = m.group().lower()
        if len(low) < 2 or low in STOPWORDS_EN:
            continue
        total += 1
        if facts.stem(low) not in support and low not in support:
            unsupported += 1
            examples.append((m.start(), m.group()))
    for m in facts._RE_CJK_RUN.finditer(t):
        run = m.group()
        n = len(run)
        ok = [
            (n == 1 and run in support)
            or (i > 0 and run[i - 1 : i + 1] in support)
            or (i + 1 < n and run[i : i + 2] in support)
            for i in range(n)
        ]
        i = 0
        while i < n:
            if run[i] in facts._STOP_ZH_CHARS:
                i += 1
                continue
            total += 1
            if ok[i]:
                i += 1
                continue
            j = i
            while j < n and not ok[j] and run[j] not in facts._STOP_ZH_CHARS:
                j += 1
            total += j - i - 1
            # one unsupported character counts when no source has it
            if j - i >= 2 or run[i] not in chars:
                unsupported += j - i
                examples.append((m.start() + i, run[i:j]))
            i = j
    examples.sort()
    return facts.Support(total, unsupported, tuple(e for _, e in examples))


@settings(max_examples=600, deadline=None)
@given(name_texts, name_texts)
def test_content_support_equals_reference(text: str, source: str) -> None:
    assert facts.content_support(text, [source]) == ref_content_support(text, [source])


def test_content_support_equals_reference_on_real_style_traces() -> None:
    for t in real_traces(14):
        sources = [c.text for c in t.gt_doc_chunks[:4]]
        assert facts.content_support(t.answer, sources) == ref_content_support(t.answer, sources)


@settings(max_examples=600, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=200))
def test_ascii_tokens_equal_the_pattern_on_any_ascii_text(text: str) -> None:
    # control characters, underscores, quotes and every punctuation mark included
    low = text.lower()
    assert T._ascii_tokens(low) == T._LATIN_TOKEN.findall(low)
    normalised = facts._compact(facts.normalize(text))
    assert facts._terms(normalised) == ref_terms(normalised)
