"""Order-aware fact checks (which fact goes with which event), English and Chinese,
with our own examples: swaps and substitutions are caught, paraphrases are not."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragtriage.config import DiagnosisConfig
from ragtriage.diagnosis import alignment as al
from ragtriage.diagnosis.alignment import fact_swaps, substituted_names
from ragtriage.diagnosis.answer_eval import evaluate_rules
from ragtriage.diagnosis.facts import extract_dates, extract_entities, extract_quantities
from ragtriage.records import AnswerLabel, Example
from ragtriage.text import normalize

A = AnswerLabel
CFG = DiagnosisConfig()


def judge(gt: str, answer: str, query: str) -> AnswerLabel:
    j = evaluate_rules(Example(example_id="x", query=query, answer=gt), answer, CFG)
    assert j.label is not None, j.undetermined_reason
    return j.label


# -- swaps between clauses ---------------------------------------------------------------

EN_GT = (
    "The museum closed for renovation on 3 February 2018; "
    "the new east wing opened to visitors on 19 May 2020."
)


def test_dates_exchanged_between_events_are_a_swap() -> None:
    swapped = (
        "The museum closed for renovation on 19 May 2020; "
        "the new east wing opened to visitors on 3 February 2018."
    )
    swaps = fact_swaps(EN_GT, swapped)
    assert [s.kind for s in swaps] == ["date"]
    q = "When did the museum close and when did the east wing open?"
    assert judge(EN_GT, swapped, q) is A.INCORRECT


def test_reworded_answer_keeping_each_date_with_its_event_is_not_a_swap() -> None:
    paraphrase = (
        "Visitors could enter the new east wing from 19 May 2020, after the museum "
        "had shut for renovation on 3 February 2018."
    )
    assert fact_swaps(EN_GT, paraphrase) == ()
    q = "When did the museum close and when did the east wing open?"
    assert judge(EN_GT, paraphrase, q) in (A.CORRECT, A.POSSIBLE_CORRECT)


def test_amounts_exchanged_between_items_are_a_swap() -> None:
    gt = "Ticket sales brought in CHF 4.2 million, while sponsorship added CHF 1.1 million."
    swapped = "Ticket sales brought in CHF 1.1 million, while sponsorship added CHF 4.2 million."
    assert [s.kind for s in fact_swaps(gt, swapped)] == ["number"]
    same_facts_other_order = (
        "Sponsorship added CHF 1.1 million and ticket sales brought in CHF 4.2 million."
    )
    assert fact_swaps(gt, same_facts_other_order) == ()


ZH_GT = "该医院于2016年5月启用新门诊楼，并于2019年11月通过三级甲等评审。"


def test_chinese_dates_exchanged_between_events_are_a_swap() -> None:
    swapped = "该医院于2019年11月启用新门诊楼，并于2016年5月通过三级甲等评审。"
    assert [s.kind for s in fact_swaps(ZH_GT, swapped)] == ["date"]
    assert judge(ZH_GT, swapped, "该医院何时启用新门诊楼、何时通过评审？") is A.INCORRECT


def test_chinese_paraphrase_keeps_its_dates_with_their_events() -> None:
    paraphrase = "2019年11月该医院通过了三级甲等评审；更早在2016年5月，新门诊楼已启用。"
    assert fact_swaps(ZH_GT, paraphrase) == ()
    label = judge(ZH_GT, paraphrase, "该医院何时启用新门诊楼、何时通过评审？")
    assert label in (A.CORRECT, A.POSSIBLE_CORRECT)


# -- reversed roles inside one clause -----------------------------------------------------


def test_reversed_range_and_reversed_roles_are_swaps() -> None:
    gt = "The strike lasted from 4 March 2022 to 17 April 2022."
    assert fact_swaps(gt, "The strike lasted from 17 April 2022 to 4 March 2022.")
    gt2 = "Karin Holm replaced Pieter Baas as conductor of the orchestra."
    assert fact_swaps(gt2, "Pieter Baas replaced Karin Holm as conductor of the orchestra.")
    q = "Who became the orchestra's conductor?"
    assert judge(gt2, "Pieter Baas replaced Karin Holm as conductor of the orchestra.", q) is (
        A.INCORRECT
    )


def test_symmetric_coordination_and_passive_voice_are_not_swaps() -> None:
    gt = "Karin Holm and Pieter Baas conducted the gala."
    assert fact_swaps(gt, "Pieter Baas and Karin Holm conducted the gala.") == ()
    gt2 = "Karin Holm replaced Pieter Baas as conductor of the orchestra."
    assert fact_swaps(gt2, "Pieter Baas was replaced by Karin Holm as conductor.") == ()


def test_chinese_reversed_event_order_is_a_swap() -> None:
    gt = "3月2日出现发热，3月9日转入重症病房。"
    assert fact_swaps(gt, "3月9日出现发热，3月2日转入重症病房。")


# -- names replaced in place --------------------------------------------------------------


def test_name_replaced_in_the_restating_sentence_is_a_substitution() -> None:
    gt = "The bridge was designed by Lotte Varga and completed in 1931."
    wrong = "The bridge was designed by Henrik Moss and completed in 1931."
    subs = substituted_names(gt, wrong, "Who designed the bridge?")
    assert [(s.missing, s.instead) for s in subs] == [("Lotte Varga", "Henrik Moss")]
    assert judge(gt, wrong, "Who designed the bridge?") is A.INCORRECT


def test_surname_only_and_reworded_answers_are_not_substitutions() -> None:
    gt = "The bridge was designed by Lotte Varga and completed in 1931."
    assert substituted_names(gt, "Varga designed it; it was finished in 1931.") == ()
    assert substituted_names(gt, "Lotte Varga, working for Danube Works, designed it.") == ()


def test_surname_inside_another_ground_truth_name_does_not_count() -> None:
    gt = "Omar Petrossian founded Petrossian Freight Lines in 1978."
    wrong = "Lena Kask founded Petrossian Freight Lines in 1978."
    subs = substituted_names(gt, wrong, "Who founded the freight company?")
    assert [s.missing for s in subs] == ["Omar Petrossian"]


def test_chinese_role_name_replaced_is_a_substitution() -> None:
    gt = "原告刘某要求被告赔偿医疗费三万元。"
    wrong = "原告陈某要求被告赔偿医疗费三万元。"
    subs = substituted_names(gt, wrong, "谁要求赔偿医疗费？")
    assert [(s.missing, s.instead) for s in subs] == [("刘某", "陈某")]


@pytest.mark.parametrize(
    ("gt", "answer"),
    [
        ("Revenue was EUR 12 million in 2020.", "In 2020 revenue came to EUR 12 million."),
        ("营业收入为1.2亿元，同比增长8%。", "同比增长8%，营业收入达到1.2亿元。"),
    ],
)
def test_single_clause_reorderings_are_not_swaps(gt: str, answer: str) -> None:
    assert fact_swaps(gt, answer) == ()


# -- long answers: the indexed lookups give what the plain scans give ------------------

_PIECES = st.sampled_from(
    [
        "Acme Corp",
        "Ann Lee",
        "Marcus Lindqvist",
        "Dr. Mei-Lin Cho",
        "NitroGuard 40",
        "张伟",
        "华信科技",
        "on 3 March 2004",
        "in 2011",
        "Q3 2021",
        "from 4 May to 9 June 2020",
        "2021年9月9日",
        "$48 million",
        "42",
        "12%",
        "三年",
        " opened the plant",
        " raised revenue",
        " was replaced by",
        "开设工厂",
        " ",
        ", ",
        ". ",
        "; ",
        " and ",
        "，",
        "。",
        "\n",
        " (",
        ") ",
    ]
)
_TEXTS = st.lists(_PIECES, max_size=40).map("".join)


def _plain_facts(text: str) -> list[al._Fact]:
    """The fact extraction with its original all-pairs overlap test."""
    facts: list[al._Fact] = []

    def free(s: int, e: int) -> bool:
        return not any(s < f.end and f.start < e for f in facts)

    for d in extract_dates(text):
        if d.end > d.start:
            facts.append(al._Fact("date", d, d.raw, d.start, d.end))
    for name in extract_entities(text):
        at = text.find(name)
        if at >= 0 and free(at, at + len(name)):
            facts.append(al._Fact("name", normalize(name), name, at, at + len(name)))
    for q in extract_quantities(text):
        if q.end > q.start and free(q.start, q.end):
            facts.append(al._Fact(f"number:{q.unit}", q, q.raw, q.start, q.end))
    facts.sort(key=lambda f: f.start)
    return facts


@settings(max_examples=150, deadline=None)
@given(text=_TEXTS)
def test_fact_extraction_equals_the_all_pairs_overlap_test(text: str) -> None:
    assert list(al._facts(text)) == _plain_facts(text)


@settings(max_examples=200, deadline=None)
@given(
    spans=st.lists(
        # non-empty spans: the only empty one _facts meets is an empty name, at 0
        st.tuples(st.integers(min_value=0, max_value=30), st.integers(min_value=1, max_value=6)),
        max_size=20,
    )
)
def test_taken_positions_equal_the_all_pairs_overlap_test(spans: list[tuple[int, int]]) -> None:
    taken = al._Taken(40)
    kept: list[tuple[int, int]] = []
    for start, width in spans:
        end = start + width
        plain = not any(start < e and s < end for s, e in kept)
        assert taken.free(start, end) is plain
        if plain:
            taken.take(start, end)
            kept.append((start, end))


@settings(max_examples=150, deadline=None)
@given(text=_TEXTS)
def test_layout_lookups_equal_plain_scans(text: str) -> None:
    layout = al._layout(text)
    spans = layout.spans
    for n, f in enumerate(layout.facts):
        plain = next((i for i, (s, e) in enumerate(spans) if s <= f.start < e), len(spans) - 1)
        assert layout.clause_of[n] == plain
        start = max((m.end() for m in al._SENTENCE_END.finditer(text, 0, f.start)), default=0)
        m = al._SENTENCE_END.search(text, f.end)
        assert al._sentence_span(layout, n) == (start, m.start() if m else len(text))
    for c, (s, e) in enumerate(spans):
        overlapping = [
            n for n, f in enumerate(layout.facts) if f.end > f.start and f.start < e and f.end > s
        ]
        assert list(layout.clause_facts[c]) == overlapping


@settings(max_examples=200, deadline=None)
@given(
    cuts=st.lists(st.integers(min_value=0, max_value=60), max_size=12, unique=True),
    probe=st.tuples(st.integers(min_value=-2, max_value=65), st.integers(min_value=1, max_value=8)),
)
def test_span_binary_searches_equal_a_scan(cuts: list[int], probe: tuple[int, int]) -> None:
    points = sorted(cuts)
    spans = list(zip(points[::2], points[1::2], strict=False))  # sorted, disjoint
    starts, ends = [s for s, _ in spans], [e for _, e in spans]
    pos, width = probe
    containing = [i for i, (s, e) in enumerate(spans) if s <= pos < e]
    assert al._span_containing(starts, ends, pos) == (containing[0] if containing else None)
    found = al._spans_overlapping(starts, ends, pos, pos + width)
    assert list(found) == [i for i, (s, e) in enumerate(spans) if s < pos + width and pos < e]


@settings(max_examples=150, deadline=None)
@given(gt=_TEXTS, answer=_TEXTS, repeat=st.integers(min_value=1, max_value=3))
def test_fact_index_equals_the_plain_unique_match(gt: str, answer: str, repeat: int) -> None:
    facts = al._facts(answer * repeat)  # repeated values at other offsets
    index = al._FactIndex(facts)
    for f in [*al._facts(gt), *facts]:
        assert index.unique_match(f) == al._unique_match(f, facts)


@settings(max_examples=150, deadline=None)
@given(text=_TEXTS, limit=st.integers(min_value=0, max_value=40))
def test_bounded_between_equals_the_plain_one_when_short_enough(text: str, limit: int) -> None:
    layout = al._layout(text)
    n = len(layout.facts)
    for a in range(n):
        for b in range(n):
            plain = al._between(layout, a, b)
            got = al._between_upto(layout, a, b, limit)
            assert got == (plain if len(plain) <= limit else None)


@settings(max_examples=150, deadline=None)
@given(
    text=_TEXTS,
    words=st.sets(
        st.sampled_from(
            [
                "opened",
                "plant",
                "raised",
                "revenue",
                "acme",
                "corp",
                "开设",
                "工厂",
                "replaced",
                "lee",
            ]
        )
    ),
)
def test_shared_span_words_equal_the_word_set_overlaps(text: str, words: set[str]) -> None:
    layout = al._layout(text)
    own = frozenset(words)
    span_words = al._SpanWords(layout)
    for n in range(len(layout.facts)):
        plain = max(
            al._overlap(al._clause_words(layout, n), own),
            al._overlap(al._sentence_words(layout, n), own),
        )
        assert span_words.shared(n, own) == plain


_FILLER = "The report also covers staff training in Lakeside. " * 400


def test_swaps_and_substitutions_are_found_in_a_long_answer() -> None:
    swapped = (
        "The museum closed for renovation on 19 May 2020; "
        "the new east wing opened to visitors on 3 February 2018."
    )
    assert [s.kind for s in fact_swaps(EN_GT, _FILLER + swapped + " " + _FILLER)] == ["date"]
    assert fact_swaps(EN_GT, _FILLER + EN_GT + " " + _FILLER) == ()
    gt = "The bridge was designed by Lotte Varga and completed in 1931."
    wrong = "The bridge was designed by Henrik Moss and completed in 1931. "
    subs = substituted_names(gt, _FILLER + wrong + _FILLER, "Who designed the bridge?")
    assert [(s.missing, s.instead) for s in subs] == [("Lotte Varga", "Henrik Moss")]
