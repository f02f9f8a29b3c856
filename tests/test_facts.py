"""Fact extraction (numbers, dates, names, concepts) and concept matching, EN and ZH."""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragtriage.diagnosis.facts import (
    DateMention,
    Quantity,
    QuantityPool,
    concept_in_text,
    content_support,
    date_order,
    dates_match,
    extract_concepts,
    extract_dates,
    extract_entities,
    extract_quantities,
    quantities_match,
)
from ragtriage.text import STOPWORDS_EN as STOPWORDS
from ragtriage.text import strip_list_marker


def _q(text: str) -> list[tuple[float, str]]:
    return [(q.value, q.unit) for q in extract_quantities(text)]


def _d(text: str) -> list[tuple[int | None, int | None, int | None]]:
    return [(d.year, d.month, d.day) for d in extract_dates(text)]


# ------------------------------------------------------------------ quantities


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Revenue rose 3.5% last year.", [(3.5, "%")]),
        ("It paid $4.2 million for the plant.", [(4_200_000.0, "usd")]),
        ("The firm has 1,200 employees.", [(1200.0, "")]),
        ("They opened twenty-five stores.", [(25.0, "")]),
        ("Sales were 12 million yuan.", [(12_000_000.0, "cny")]),
        ("He was sentenced to four years in prison.", [(4.0, "year")]),
        ("Liabilities fell by £500,000 and US$3bn.", [(500_000.0, "gbp"), (3e9, "usd")]),
        ("two hundred and five people", [(205.0, "")]),
        ("a 0.25 percentage point rise", [(0.25, "%")]),
    ],
)
def test_english_quantities(text: str, expected: list[tuple[float, str]]) -> None:
    assert _q(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("公司净利润为12.5亿元。", [(1.25e9, "cny")]),
        ("员工人数达三百万人。", [(3e6, "")]),
        ("同比增长百分之三十。", [(30.0, "%")]),
        ("被判处有期徒刑两年。", [(2.0, "year")]),
        ("融资三点五亿元", [(3.5e8, "cny")]),
        ("营业收入增长12%，共3万人", [(12.0, "%"), (30000.0, "")]),
        ("住院5天，随访3个月", [(5.0, "day"), (3.0, "month")]),
    ],
)
def test_chinese_quantities(text: str, expected: list[tuple[float, str]]) -> None:
    assert _q(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "one of the best companies",  # "one" as a pronoun
        "统一管理，一些公司，十分重要",  # 一/十 inside words
        "第三名",  # ordinal
        "finished 3rd",  # ordinal
        "COVID-19 and model A1",  # codes
        "On March 5, 2019 the board met.",  # numbers of a date
        "2019年3月5日",
    ],
)
def test_not_quantities(text: str) -> None:
    assert extract_quantities(text) == []


def test_quantity_offsets_point_into_the_text() -> None:
    text = "Ｎet profit：１２亿元 and $4.2 million"
    for q in extract_quantities(text):
        assert text[q.start : q.end] == q.raw


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("1.2 million", "1,200,000", True),
        ("1.2 million", "1,234,567", True),  # rounding of the less precise one
        ("$4.5 million", "$3.2 million", False),
        ("12%", "0.12", True),
        ("12.5亿元", "1,250,000,000 yuan", True),
        ("$5", "£5", False),
        ("4 years", "5 years", False),
        ("三年", "3 years", True),
        ("3 million", "3.4 million", True),  # a one-digit rounding within 15 %
        ("1亿元", "8000万元", False),  # half the place of "1亿" is 5000万: too far still
        ("1亿元", "6000万元", False),
        ("$1 billion", "$700 million", False),
    ],
)
def test_quantities_match(a: str, b: str, same: bool) -> None:
    (qa,) = extract_quantities(a)
    (qb,) = extract_quantities(b)
    assert quantities_match(qa, qb) is same
    assert quantities_match(qb, qa) is same


@settings(max_examples=200, deadline=None)
@given(
    n=st.integers(min_value=0, max_value=10**12),
    prefix=st.sampled_from(["", "$", "USD ", "£"]),
)
def test_formatted_integers_round_trip(n: int, prefix: str) -> None:
    text = f"The amount was {prefix}{n:,} in total."
    qs = extract_quantities(text)
    assert len(qs) == 1
    assert qs[0].value == n
    assert text[qs[0].start : qs[0].end] == qs[0].raw


@settings(max_examples=200, deadline=None)
@given(
    cents=st.integers(min_value=1, max_value=10**9),
    scale=st.sampled_from([("million", 1e6), ("billion", 1e9), ("万", 1e4), ("亿", 1e8)]),
)
def test_formatted_decimals_with_scale_round_trip(cents: int, scale: tuple[str, float]) -> None:
    word, factor = scale
    x = cents / 100
    sep = "" if word in ("万", "亿") else " "
    text = f"值为{x:,.2f}{sep}{word}" if sep == "" else f"worth {x:,.2f}{sep}{word} overall"
    qs = extract_quantities(text)
    assert len(qs) == 1
    assert qs[0].value == pytest.approx(x * factor, rel=1e-9)
    assert quantities_match(qs[0], Quantity(x * factor, "", str(x * factor), 0, 0))


def _reference_match(a: Quantity, b: Quantity) -> bool:
    """quantities_match written the plain way (abs/max, granularity always computed):
    the fast version must agree with it everywhere."""

    def granularity(q: Quantity) -> float:
        m = re.search(r"\d[\d,]*(?:\.(\d+))?", q.raw)
        if m is None:
            return abs(q.value) * 1e-9
        mantissa = float(m.group().replace(",", ""))
        if mantissa == 0:
            return 0.0
        return 0.5 * (10.0 ** -len(m.group(1) or "")) * abs(q.value / mantissa)

    if a.unit and b.unit and a.unit != b.unit:
        return False
    diff = abs(a.value - b.value)
    if diff <= 1e-9 * max(abs(a.value), abs(b.value), 1.0):
        return True
    if diff < max(granularity(a), granularity(b)) and diff < 0.15 * max(
        abs(a.value), abs(b.value)
    ):  # a rounding: within the last digit's half place and 15 % of the larger
        return True
    return any(
        pct.unit == "%"
        and not plain.unit
        and 0 < abs(plain.value) < 1
        and math.isclose(pct.value, plain.value * 100, rel_tol=1e-6, abs_tol=1e-9)
        for pct, plain in ((a, b), (b, a))
    )


_NUMBER_TEXT = st.builds(
    lambda lead, n, d, prefix, scale: f"{lead}{prefix}{n:,}{d}{scale}",
    st.sampled_from(["", "0."]),
    st.integers(min_value=0, max_value=10**7),
    st.sampled_from(["", ".5", ".05", ".125", ".0"]),
    st.sampled_from(["", "$", "USD ", "£", "RMB "]),
    st.sampled_from(["", " million", " billion", "%", " percent", " years", "万元", "亿"]),
)


#: equal or near values in other wordings (the granularity and the percent rule differ)
_NEAR_VALUES = st.sampled_from(
    [
        "1.2 million",
        "1,200,000",
        "1,234,567",
        "$1.2 million",
        "USD 1,250,000",
        "12%",
        "0.12",
        "0.6",
        "1",
        "1.0",
        "42",
        "42.0",
        "41.6",
        "三年",
        "3 years",
        "12.5亿元",
        "1,250,000,000 yuan",
    ]
)
_NUMBER_TEXT = _NUMBER_TEXT | _NEAR_VALUES


@settings(max_examples=300, deadline=None)
@given(texts=st.lists(_NUMBER_TEXT, min_size=2, max_size=6))
def test_quantities_match_agrees_with_the_plain_formula(texts: list[str]) -> None:
    qs = [q for t in texts for q in extract_quantities(t)]
    for a in qs:
        for b in qs:
            assert quantities_match(a, b) is _reference_match(a, b), (a, b)


@settings(max_examples=300, deadline=None)
@given(
    # any float a Quantity can carry, short of one so large that dividing it by its
    # stated mantissa overflows (the plain formula then calls the granularity infinite)
    a=st.floats(-1e300, 1e300) | st.just(math.nan),
    b=st.floats(-1e300, 1e300) | st.just(math.nan),
    # b near a: around the rounding bounds (a granularity is up to half the value)
    ratio=st.sampled_from([None, 0.4, 0.49, 0.51, 0.6, 0.99, 1.0, 1.01, 1.5, 1.9, 2.1, 100.0]),
    raw_a=st.sampled_from(["42", "0.001", "1.2 million", "三百", "0", "12.50%", "US$ 3", "1"]),
    raw_b=st.sampled_from(["42", "0.1", "1,234,567", "两年", "0.0", "7%", "10"]),
    units=st.sampled_from([("", ""), ("%", ""), ("", "%"), ("usd", "usd"), ("usd", "eur")]),
)
def test_quantities_match_on_any_floats(
    a: float, b: float, ratio: float | None, raw_a: str, raw_b: str, units: tuple[str, str]
) -> None:
    qa = Quantity(a, units[0], raw_a, 0, len(raw_a))
    qb = Quantity(b if ratio is None else a * ratio, units[1], raw_b, 0, len(raw_b))
    assert quantities_match(qa, qb) is _reference_match(qa, qb)
    assert quantities_match(qb, qa) is _reference_match(qb, qa)


@settings(max_examples=200, deadline=None)
@given(
    pool=st.lists(_NUMBER_TEXT, max_size=8),
    probes=st.lists(_NUMBER_TEXT, min_size=1, max_size=8),
    repeat=st.integers(min_value=1, max_value=4),
)
def test_quantity_pool_equals_the_plain_scans(
    pool: list[str], probes: list[str], repeat: int
) -> None:
    # repeated values at different offsets, as in a long answer repeating itself
    pool_qs = extract_quantities(" and ".join(pool * repeat))
    probe_qs = extract_quantities(" and ".join(probes * repeat))
    index = QuantityPool(pool_qs)
    assert len(index) == len(pool_qs)
    for q in probe_qs + probe_qs:  # the second pass is answered from the memo
        assert index.matches(q) is any(quantities_match(q, p) for p in pool_qs)
        assert index.matching(q) == [p for p in pool_qs if quantities_match(q, p)]


# ------------------------------------------------------------------ dates


def test_english_dates() -> None:
    text = (
        "On March 5, 2019 and 5 March 2019 (2019-03-05) it grew; in 2019 and Q3 2021, "
        "the third quarter of 2020, FY2018, in May."
    )
    got = extract_dates(text)
    assert [(d.year, d.month, d.day, d.quarter) for d in got] == [
        (2019, 3, 5, None),
        (2019, 3, 5, None),
        (2019, 3, 5, None),
        (2019, None, None, None),
        (2021, None, None, 3),
        (2020, None, None, 3),
        (2018, None, None, None),
        (None, 5, None, None),
    ]
    for d in got:
        assert text[d.start : d.end] == d.raw


def test_chinese_dates() -> None:
    assert _d("2019年3月5日，2019年，3月5日，二〇一九年，2021年底") == [
        (2019, 3, 5),
        (2019, None, None),
        (None, 3, 5),
        (2019, None, None),
        (2021, None, None),
    ]
    (q,) = extract_dates("2021年第三季度营收增长")
    assert (q.year, q.quarter) == (2021, 3)


@pytest.mark.parametrize("text", ["They may go.", "It has 2019 employees.", "3个月后", "$2019"])
def test_not_dates(text: str) -> None:
    assert extract_dates(text) == []


def test_dates_match() -> None:
    def d(y: int | None, m: int | None = None, day: int | None = None) -> DateMention:
        return DateMention(y, m, day, "", 0, 0)

    assert dates_match(d(2019), d(2019, 3))
    assert not dates_match(d(2019, 3), d(2019, 4))
    assert not dates_match(d(None, 3), d(2019))  # nothing stated by both
    assert dates_match(DateMention(2021, None, None, "", 0, 0, 3), d(2021, 8))
    assert not dates_match(DateMention(2021, None, None, "", 0, 0, 1), d(2021, 8))


# ------------------------------------------------------------------ entities


def test_english_entities() -> None:
    text = (
        "Dr. John Smith of Southport General Hospital met Judge Brown. The Philippines is "
        "typhoon prone. According to the judgment, M. Cooper and Y. Nelson appealed to the "
        "Bank of America and Green Fields Agriculture Co. about Greenleaf's plant."
    )
    ents = extract_entities(text)
    for name in [
        "John Smith",
        "Southport General Hospital",
        "Brown",
        "Philippines",
        "M. Cooper",
        "Y. Nelson",
        "Bank of America",
        "Green Fields Agriculture Co.",
        "Greenleaf",
    ]:
        assert name in ents
    assert not {"The", "According", "Dr", "Judge"} & set(ents)


def test_date_order_compares_the_fields_both_state() -> None:
    def d(text: str) -> DateMention:
        return extract_dates(text)[0]

    assert date_order(d("on 12 July"), d("on 11 July 2022")) == 1
    assert date_order(d("in March 2019"), d("on 5 March 2019")) == 0
    assert date_order(d("2019年3月"), d("2020年1月")) == -1
    assert date_order(d("in 2015"), d("on November 15")) is None


def test_a_capital_inside_a_word_starts_no_entity() -> None:
    # units and camel-cased words: "mmHg" is no name "Hg"
    ents = extract_entities("On 7 December 2022 142/92 mmHg was recorded; pH 7.1 at McKinsey.")
    assert "Hg" not in ents and not any(e.startswith("H ") for e in ents)
    assert "McKinsey" in ents


def test_chinese_entities() -> None:
    text = (
        "根据绿洲科技有限公司的年报，该公司与蓝天集团在上海市中级人民法院诉讼。"
        "被告人张某某、患者王伟的病史，被告李明辉犯罪。《数据安全法》规定"
    )
    ents = extract_entities(text)
    assert ents == [
        "绿洲科技有限公司",
        "蓝天集团",
        "上海市中级人民法院",
        "张某某",
        "王伟",
        "李明辉",
        "数据安全法",
    ]
    assert "该公司" not in ents


# ------------------------------------------------------------------ concepts


def test_concepts_follow_listing_5_example() -> None:
    query = (
        "Compare the debt restructuring efforts of Company A in 2018 and Company B in 2021. "
        "Which company reduced more liabilities through debt restructuring?"
    )
    concepts = extract_concepts(query)
    for c in ["debt restructuring efforts", "Company A", "2018", "Company B", "2021"]:
        assert c in concepts
    assert all(c in query for c in concepts)
    assert len(concepts) == len({c.lower() for c in concepts})


def test_chinese_concepts() -> None:
    query = "根据绿洲科技有限公司2019年的财务报告，公司在2019年3月进行了哪些重大资产收购？"
    assert extract_concepts(query) == ["绿洲科技有限公司", "财务报告", "2019年3月", "重大资产收购"]


@settings(max_examples=150, deadline=None)
@given(st.text(min_size=1, max_size=80))
def test_concepts_are_substrings_of_the_query(query: str) -> None:
    for c in extract_concepts(query):
        assert c in query


@pytest.mark.parametrize(
    ("concept", "text", "inside"),
    [
        ("Peter", "[45_6] Peter is walking", True),
        ("Peter", "[45_3] John is running", False),
        ("running", "John is running", True),
        ("running", "Peter is walking", False),
        ("$1.2 million", "it cost 1,200,000 dollars", True),
        ("$1.2 million", "it cost 1,900,000 dollars", False),
        ("March 2019", "signed on 2019-03-12", True),
        ("March 2019", "signed on 2019-04-12", False),
        ("financing activities", "the activity of financing was large", True),
        ("Southport General Hospital", "admitted to Southport Generel Hospital", True),
        ("art", "the start of it", False),  # word boundaries for Latin text
        ("重大资产收购", "公司于2019年完成了重大资产收购。", True),
        ("年度财务报告", "公司2019年度的财务报告显示", True),  # bigram containment
        ("财务报告", "公司发布了年度审计意见。", False),
    ],
)
def test_concept_in_text(concept: str, text: str, inside: bool) -> None:
    assert concept_in_text(concept, text) is inside


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=st.characters(categories=("L", "N")), min_size=1, max_size=30))
def test_a_concept_is_in_itself(text: str) -> None:
    assert concept_in_text(text, f"before {text} after")


def test_content_support_en_and_zh() -> None:
    sup = content_support(
        "K. Mendoza has a history of Parkinson's disease.",
        ["K. Mendoza was generally healthy before; history unremarkable."],
    )
    assert sup.unsupported >= 2
    assert "Parkinson" in sup.examples
    zh = content_support("患者王伟有帕金森病史。", ["患者王伟既往身体健康，无慢性病史。"])
    assert zh.unsupported_share > 0.2
    assert "帕金森" in "".join(zh.examples)
    assert content_support("患者王伟既往健康", ["患者王伟既往身体健康"]).unsupported == 0


# -- fast term/token scanners match the straightforward versions ------------------------

_ALPHABET = "ab1 the.,'-中文字豈あ한9_\n"


def _terms_by_runs(normalised: str) -> list[str]:
    """The former per-run implementation of facts._terms, kept here as the oracle."""
    import re

    from ragtriage.diagnosis.facts import stem
    from ragtriage.text import STOPWORDS_EN

    out: list[str] = []
    pos = 0
    runs = list(re.finditer(r"[\u3400-\u9fff\uf900-\ufaff]+", normalised))
    for run in [*runs, None]:
        stop = len(normalised) if run is None else run.start()
        for w in re.findall(r"[^\W_]+", normalised[pos:stop]):
            if w not in STOPWORDS_EN:
                out.append(stem(w))
        if run is None:
            break
        cjk = run.group()
        out.extend([cjk] if len(cjk) == 1 else [cjk[i : i + 2] for i in range(len(cjk) - 1)])
        pos = run.end()
    return out


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=_ALPHABET, max_size=30))
def test_terms_scanner_matches_the_per_run_version(text: str) -> None:
    from ragtriage.diagnosis.facts import _terms

    assert _terms(text) == _terms_by_runs(text)


def _token_spans_by_chars(text: str) -> list[tuple[int, int]]:
    """The former per-character implementation of text.token_spans (the oracle)."""
    from ragtriage import text as T

    spans: list[tuple[int, int]] = []
    for m in T._LATIN_TOKEN.finditer(text):
        s, e = m.start(), m.end()
        seg = text[s:e]
        if T._CJK_RE.search(seg) is None:
            spans.append((s, e))
            continue
        run_start: int | None = None
        for i, c in enumerate(seg, start=s):
            if T.is_cjk(c):
                if run_start is not None:
                    spans.append((run_start, i))
                    run_start = None
                spans.append((i, i + 1))
            elif run_start is None:
                run_start = i
        if run_start is not None:
            spans.append((run_start, e))
    return spans


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=_ALPHABET, max_size=30))
def test_token_spans_matches_the_per_character_version(text: str) -> None:
    from ragtriage.text import token_spans

    assert token_spans(text) == _token_spans_by_chars(text)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=_ALPHABET + "İ\u0307ﬁｶﾀﾅ,_", max_size=30))
def test_word_tokens_fast_path_matches_the_span_version(text: str) -> None:
    """Text without CJK takes a findall fast path; it must give the span-based tokens."""
    import unicodedata

    from ragtriage.text import content_tokens, match_tokens, token_spans, word_tokens

    t = unicodedata.normalize("NFKC", text)
    by_spans = [t[s:e].lower().replace(",", "") for s, e in token_spans(t)]
    assert word_tokens(text) == by_spans
    if not any(is_cjk_char(c) for c in t):
        assert match_tokens(text) == by_spans
        assert content_tokens(text) == [w for w in by_spans if w not in STOPWORDS]


def is_cjk_char(c: str) -> bool:
    from ragtriage.text import is_cjk

    return is_cjk(c)


def test_is_cjk_ranges() -> None:
    from ragtriage.text import is_cjk

    assert is_cjk("法") and is_cjk("か") and is_cjk("한") and is_cjk("\U00020001")
    assert not is_cjk("a") and not is_cjk("。") and not is_cjk("1")


def test_you_inside_a_fixed_term_does_not_split_a_chinese_concept() -> None:
    # 有 is a function character, but not in 有期徒刑 / 有限公司 / 有效
    concepts = extract_concepts("法院对被告人王某判处有期徒刑几年？")
    assert any("有期徒刑" in c for c in concepts), concepts
    assert not any(c == "期徒刑" for c in concepts)


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("1. Green Fields appointed a CEO", "Green Fields appointed a CEO"),
        ("12) Revenue rose", "Revenue rose"),
        ("(3) Profit fell", "Profit fell"),
        ("（4）收购价格为3亿元", "收购价格为3亿元"),
        ("5、净利润为8500万元", "净利润为8500万元"),
        ("一、公司成立于2001年", "公司成立于2001年"),
        ("第二，净利润下降", "净利润下降"),
        ("- a dash item", "a dash item"),
        ("b. a lettered item", "a lettered item"),
        # not list markers: years, decimals, thousands, initials, leading amounts
        ("2021. The year of the merger", "2021. The year of the merger"),
        ("3.5 percent growth", "3.5 percent growth"),
        ("1,000 jobs were cut", "1,000 jobs were cut"),
        ("J. K. Rowling wrote it", "J. K. Rowling wrote it"),
        ("120 million dollars", "120 million dollars"),
        ("2020年营收增长", "2020年营收增长"),
        ("1.", "1."),  # nothing would be left
    ],
)
def test_strip_list_marker(raw: str, clean: str) -> None:
    assert strip_list_marker(raw) == clean


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="aBz. (\n\tJ", max_size=25), st.data())
def test_abbreviation_lookup_reads_backwards_like_the_regex(text: str, data: st.DataObject) -> None:
    """split_sentences asks at every period whether the word before it is an
    abbreviation; the backwards scan (linear in the word) must agree with the regex
    over the whole prefix (linear in the text, which made long answers quadratic)."""
    from ragtriage.text import _abbrev_re, _is_abbreviation_at

    end = data.draw(st.integers(0, len(text)))
    m = _abbrev_re().search(text[:end])
    by_regex = m is not None and _is_abbreviation_word(m.group(1))
    assert _is_abbreviation_at(text, end) == by_regex


def _is_abbreviation_word(word: str) -> bool:
    from ragtriage.text import _ABBREVIATIONS

    w = word.lower().rstrip(".")
    return w in _ABBREVIATIONS or (len(w) == 1 and w.isalpha())


def test_chinese_places_after_a_locative_word() -> None:
    assert extract_entities("绿源环保在上海市开设了新的研发中心。") == ["上海市"]
    assert "广东省" in extract_entities("公司总部位于广东省深圳市。")
    assert extract_entities("他在本市工作，在市长的带领下。") == []
    assert extract_entities("案件由上海市中级人民法院审理。") == ["上海市中级人民法院"]


def test_amounts_with_a_half() -> None:
    assert _q("About seven and a half months later") == [(7.5, "month")]
    assert _q("two years and a half") == [(2.5, "year")]
    assert _q("he spent three and a half days there") == [(3.5, "day")]
    assert _q("三年半") == [(3.5, "year")]
    assert _q("七个半月") == [(7.5, "month")]
    assert _q("一个半小时") == [(1.5, "hour")]
    # a half that belongs to no amount stays out
    assert _q("one year and seven months") == [(1.0, "year"), (7.0, "month")]


def test_chinese_names_after_a_corporate_role() -> None:
    assert extract_entities("公司现任财务总监为赵明。") == ["赵明"]
    assert extract_entities("董事长：陈国栋辞职") == ["陈国栋"]
    # a role with no name after it
    assert extract_entities("董事长为公司发展做出贡献") == []


def test_a_cited_source_label_is_no_entity() -> None:
    ents = extract_entities(
        "According to Document 1, Acme Corp grew. 根据文档2，绿野农业有限公司增长。"
    )
    assert ents == ["Acme Corp", "绿野农业有限公司"]
    # clean_answer keeps the label word without its number
    assert extract_entities("As Passage says, Acme Corp grew.") == ["Acme Corp"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The Battle of the Hydaspes was fought in 326 BC.", [-326]),
        ("Caesar died in 44 B.C. in Rome.", [-44]),
        ("Pompeii was buried in AD 79.", [79]),
        ("秦于公元前221年建立帝制。", [-221]),
        ("公元79年维苏威火山喷发。", [79]),
    ],
)
def test_years_with_an_era(text: str, expected: list[int]) -> None:
    assert [d.year for d in extract_dates(text)] == expected
    assert extract_quantities(text) == []  # the number is the year, not an amount


@pytest.mark.parametrize(
    ("text", "unit"),
    [
        ("术中出血约2000ml。", "ml"),
        ("The board is 20 cm wide.", "cm"),
        ("a plank 8 inches wide", "in"),
        ("it ran 1500 meters", "m"),
        ("全长1800米", "m"),
        ("1999 years ago", "year"),
    ],
)
def test_a_four_digit_number_before_a_unit_is_an_amount_not_a_year(text: str, unit: str) -> None:
    assert extract_dates(text) == [] or all(d.year is None for d in extract_dates(text))
    assert [q.unit for q in extract_quantities(text)] == [unit]


def test_lengths_in_other_units_do_not_match() -> None:
    cm, inch = extract_quantities("20 cm")[0], extract_quantities("20 inches")[0]
    assert not quantities_match(cm, inch)


def test_a_place_name_missing_from_every_source_is_unsupported_zh() -> None:
    # 都 is a stop character, so 成 stood alone and one unsupported character never
    # counted: a missing place name was read as supported (blamed on generation)
    sup = content_support("成都", ["某公司总部位于杭州。"])
    assert sup.unsupported == sup.total == 1 and sup.examples == ("成",)
    assert content_support("总部位于成都", ["某公司总部位于杭州。"]).unsupported == 1
    # a place the source does name stays supported
    assert content_support("总部位于杭州", ["某公司总部位于杭州。"]).unsupported == 0
    # English: a missing place name is unsupported as before
    assert content_support("Chengdu", ["The company is based in Hangzhou."]).unsupported == 1


def test_citation_markers_and_document_labels_are_no_numbers() -> None:
    def raws(text: str) -> list[str]:
        return [q.raw for q in extract_quantities(text)]

    assert raws("Revenue was 5 million [4].") == ["5 million"]
    assert raws("As stated (Doc 2), it took 7 days [1, 3].") == ["7 days"]
    assert raws("Document 3 says it took 7 days.") == ["7 days"]
    assert raws("营收为500万元【3】（文档2）。") == ["500万元"]
    assert raws("文档3显示，工期为7天。") == ["7天"]
    # a bracketed figure before a word stays a figure
    assert raws("within twenty (20) days") == ["twenty (20) days"]
    assert raws("共(3)项") == ["3"]
