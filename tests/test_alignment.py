"""Order-aware fact checks (which fact goes with which event), English and Chinese,
with our own examples: swaps and substitutions are caught, paraphrases are not."""

from __future__ import annotations

import pytest

from ragtriage.config import DiagnosisConfig
from ragtriage.diagnosis.alignment import fact_swaps, substituted_names
from ragtriage.diagnosis.answer_eval import evaluate_rules
from ragtriage.records import AnswerLabel, Example

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
