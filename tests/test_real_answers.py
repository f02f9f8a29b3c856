"""Answer evaluation on the styles real LLMs write (issue #9): reasoning then conclusion,
markdown and citations, abstentions inside long answers, partial abstentions, impossible
numbers, long-form ground truths covered in part. English and Chinese."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragtriage.config import DiagnosisConfig
from ragtriage.diagnosis.answer_eval import evaluate_rules, gt_coverage
from ragtriage.diagnosis.answer_styles import answer_view, clean_answer
from ragtriage.diagnosis.facts import extract_dates
from ragtriage.diagnosis.question_parts import mentions_part, question_parts
from ragtriage.records import AnswerLabel, Example

CFG = DiagnosisConfig()


def judge(query: str, gt: str, answer: str, *, answerable: bool = True) -> tuple[AnswerLabel, str]:
    ex = Example(example_id="x", query=query, answer=gt, answerable=answerable)
    j = evaluate_rules(ex, answer, CFG)
    assert j.label is not None
    return j.label, j.reason


# -- verbose abstentions on unanswerable questions ---------------------------------------

VERBOSE_EN = """To determine the stock exchange, let's review the documents:

1. **Doc 1** discusses Green Fields' IPO in March 2019 (Doc 1).
2. **Doc 2** covers its dividend policy and the 2020 board changes [2].

None of these documents provide the specific stock exchange on which Green Fields is
listed. Thus, the answer cannot be determined from the provided documents."""

VERBOSE_EN_LAST = """The documents describe Green Fields' 2019 IPO, its dividend policy and
its new board of directors appointed in 2020.

Doc 3 lists the underwriters of the offering.

There is no information available regarding the stock exchange on which it is listed."""

VERBOSE_ZH = """根据提供的文档：
- 文档1介绍了绿野农业2019年3月的首次公开募股；
- 文档2介绍了其分红政策。

综上所述，文档中未提及绿野农业在哪个证券交易所上市，因此无法确定。"""


@pytest.mark.parametrize("answer", [VERBOSE_EN, VERBOSE_EN_LAST, VERBOSE_ZH])
def test_verbose_abstention_on_unanswerable_is_abstain(answer: str) -> None:
    label, _ = judge(
        "On which stock exchange is Green Fields listed?", "", answer, answerable=False
    )
    assert label is AnswerLabel.ABSTAIN


@pytest.mark.parametrize(
    "answer",
    [
        "The documents do not say which exchange. However, given its size it is likely "
        "listed on the New York Stock Exchange.",
        "文档中没有提到上市地点，但推测可能是上海证券交易所。",
        "Green Fields is listed on the London Stock Exchange (Doc 2).",
    ],
)
def test_guess_or_answer_on_unanswerable_is_incorrect(answer: str) -> None:
    label, _ = judge(
        "On which stock exchange is Green Fields listed?", "", answer, answerable=False
    )
    assert label is AnswerLabel.INCORRECT


def test_verbose_abstention_on_answerable_is_abstain() -> None:
    label, reason = judge(
        "When did Green Fields list its shares?",
        "Green Fields listed its shares in March 2019.",
        VERBOSE_EN.replace("in March 2019", "recently"),
    )
    assert label is AnswerLabel.ABSTAIN
    assert "conclusion" in reason


# -- partial abstention ---------------------------------------------------------------------


def test_partial_abstention_en_names_the_declined_entity() -> None:
    label, reason = judge(
        "What acquisitions did Green Fields Agriculture Ltd. and Harmony Health Co. make in 2019?",
        "Green Fields Agriculture Ltd. acquired Newbridge Farm in March 2019, and Harmony "
        "Health Co. acquired CarePlus Clinics in June 2019.",
        "In March 2019, Green Fields Agriculture acquired Newbridge Farm (Doc 1). There is no "
        "information available regarding acquisitions by Harmony Health Co. in the provided "
        "documents.",
    )
    assert label is AnswerLabel.INCORRECT
    assert "partial abstention" in reason and "Harmony Health" in reason


def test_partial_abstention_zh_names_the_declined_entity() -> None:
    label, reason = judge(
        "绿野农业和捷翼航空在2019年分别进行了哪些重大资产收购？",
        "绿野农业于2019年3月收购了新桥农场；捷翼航空于2019年6月收购了蓝天航修。",
        "根据文档1，绿野农业于2019年3月收购了新桥农场。文档中未提及捷翼航空的收购情况。\n\n"
        "综上所述，绿野农业收购了新桥农场，而捷翼航空的信息无法确定。",
    )
    assert label is AnswerLabel.INCORRECT
    assert "partial abstention" in reason and "捷翼航空" in reason


def test_declining_a_detail_the_ground_truth_lacks_is_not_partial_abstention() -> None:
    label, _ = judge(
        "What acquisitions did Acme Corp and Globex Holdings make in 2019?",
        "Acme Corp acquired Beta Tools in 2019 and Globex Holdings acquired Delta Labs in 2019.",
        "Acme Corp acquired Beta Tools in 2019, and Globex Holdings acquired Delta Labs in "
        "2019. The documents do not mention the purchase prices.",
    )
    assert label in (AnswerLabel.CORRECT, AnswerLabel.POSSIBLE_CORRECT)


# -- numbers: any magnitude ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("gt", "answer"),
    [
        ("Ann Lee was born on 13 April 1953.", "Ann Lee was born on 13 April 3912."),
        (
            "The work enters the public domain on January 1, 2026.",
            "It will enter the public domain on January 1, 6076.",
        ),
        ("Ann Lee was born in 1953.", "Ann Lee was born in 3912."),
        ("李某于1953年4月13日出生。", "李某出生于3912年4月13日。"),
    ],
)
def test_impossible_years_contradict(gt: str, answer: str) -> None:
    label, reason = judge("When?", gt, answer)
    assert label is AnswerLabel.INCORRECT
    assert "disagree" in reason


def test_year_by_position_but_not_a_quantity() -> None:
    assert [d.year for d in extract_dates("born 13 April 3912")] == [3912]
    assert [d.year for d in extract_dates("on January 1, 6076")] == [6076]
    assert extract_dates("shipped in 3000 units") == []


def test_reasoning_quotes_other_years_but_concludes_right() -> None:
    answer = (
        "Let's look at the documents.\n- Doc 1: Acme's 2019 revenue was $25 million.\n"
        "- Doc 2: Acme's 2020 revenue was $30 million, up 20%.\nThus, the answer is $30 million."
    )
    label, _ = judge(
        "How much revenue did Acme report in 2020?",
        "Acme reported revenue of $30 million in 2020.",
        answer,
    )
    assert label is AnswerLabel.CORRECT


def test_conclusion_with_wrong_amount_is_incorrect_zh() -> None:
    answer = "根据文档2，公司2020年营业收入为3000万元。\n\n综上所述，答案是4500万元。"
    label, _ = judge("该公司2020年营业收入是多少？", "该公司2020年营业收入为3000万元。", answer)
    assert label is AnswerLabel.INCORRECT


# -- long-form coverage ---------------------------------------------------------------------

LONG_GT = (
    "The court found Hale guilty of fraud. It sentenced him to five years in prison. "
    "It also ordered restitution of $2 million to the investors."
)


def test_one_of_three_evidence_sentences() -> None:
    """Only the first statement (the direct answer): partial; only a later one: wrong."""
    label, reason = judge(
        "What did the court decide?", LONG_GT, "The court found Hale guilty of fraud."
    )
    assert label is AnswerLabel.POSSIBLE_CORRECT
    assert "1/3" in reason
    label, reason = judge(
        "What did the court decide?", LONG_GT, "The court ordered restitution of $2 million."
    )
    assert label is AnswerLabel.INCORRECT
    assert "1/3" in reason


def test_two_of_three_evidence_sentences_is_possible_correct() -> None:
    label, _ = judge(
        "What did the court decide?",
        LONG_GT,
        "The court found Hale guilty of fraud and sentenced him to five years in prison.",
    )
    assert label is AnswerLabel.POSSIBLE_CORRECT


def test_gt_coverage_units() -> None:
    cov = gt_coverage(LONG_GT, "Hale was found guilty of fraud; restitution of $2 million.")
    assert len(cov.units) == 3
    assert cov.covered == (True, False, True)


# -- reading answers ------------------------------------------------------------------------


def test_clean_answer_strips_markdown_and_citations() -> None:
    text = clean_answer(
        "## Answer\n- **Revenue:** 3.2 million (Doc 2) [1, 3]\n| a | b |\n|---|---|"
    )
    assert "**" not in text and "(Doc 2)" not in text and "[1, 3]" not in text
    assert "Revenue: 3.2 million" in text


def test_answer_view_final_and_declines() -> None:
    view = answer_view(VERBOSE_EN)
    assert view.final.startswith("Thus")
    assert view.final_declines and view.verbose and not view.guesses
    zh = answer_view(VERBOSE_ZH)
    assert zh.final.startswith("综上所述") and zh.final_declines


def test_question_parts_en_and_zh() -> None:
    parts = question_parts(
        "Which company, JetWing Airlines or Starlight Media, reduced its debt first?"
    )
    assert [p.text for p in parts] == ["JetWing Airlines", "Starlight Media"]
    zh = question_parts("比较华信科技与东方物流的营业收入。")
    assert [p.text for p in zh] == ["华信科技", "东方物流"]
    clauses = question_parts("When was the company founded and who is its chief executive?")
    assert [p.kind for p in clauses] == ["clause", "clause"]
    assert question_parts("When was Acme Corp founded?") == ()
    green = question_parts("Compare Green Fields Agriculture Ltd. and Harmony Health Co.")[0]
    assert mentions_part(green, "Green Fields Agriculture reported record sales.")
    assert not mentions_part(green, "Harmony Health reported record sales.")


def test_llm_answer_prompt_shows_the_conclusion_of_a_reasoning_answer() -> None:
    from ragtriage.judge.prompts import answer_eval_prompt

    view = answer_view(VERBOSE_EN)
    prompt = answer_eval_prompt("q?", "gt", VERBOSE_EN, conclusion=view.final)
    assert "<final_answer_found>\nThus, the answer cannot be determined" in prompt.user
    assert "declines or misses another" in prompt.system
    plain = answer_eval_prompt("q?", "gt", "Acme.", conclusion="")
    assert "<final_answer_found>" not in plain.user


WIKI_GT = (
    "Love the One You're With is a song by folk rocker Stephen Stills. David Crosby and "
    "Graham Nash provide background vocals on the song. The song was also covered by the "
    "Isley Brothers and Luther Vandross."
)


def test_direct_answer_without_the_rest_is_possible_correct() -> None:
    """The first statement of a long-form ground truth is its direct answer: stated alone
    it is partial (Listing 3: possible_correct); a later statement alone is incorrect."""
    query = "Who recorded Love the One You're With, and who else performed or covered it?"
    first, _ = judge(query, WIKI_GT, "It is a song by folk rocker Stephen Stills.")
    assert first is AnswerLabel.POSSIBLE_CORRECT
    last, reason = judge(query, WIKI_GT, "It was covered by the Isley Brothers.")
    assert last is AnswerLabel.INCORRECT
    assert "1/3" in reason


_PIECES = [
    *"abc XYZ 0123456789 .,;:!?()[]【】（）-*#|\n$%年月日公司和与没有未提及无法确定综上所述",
    " Thus, the answer is ",
    " not mentioned ",
    " 3912 ",
    " January 1, 6076 ",
    " rose ",
    " fell ",
]


@settings(max_examples=300, deadline=None)
@given(
    query=st.lists(st.sampled_from(_PIECES), max_size=40).map("".join),
    gt=st.lists(st.sampled_from(_PIECES), max_size=60).map("".join),
    answer=st.lists(st.sampled_from(_PIECES), max_size=80).map("".join),
    keypoints=st.lists(st.lists(st.sampled_from(_PIECES), max_size=10).map("".join), max_size=3),
    answerable=st.booleans(),
)
def test_any_text_gets_a_verdict_or_a_reason(
    query: str, gt: str, answer: str, keypoints: list[str], answerable: bool
) -> None:
    ex = Example(
        example_id="x",
        query=query if query.strip() else "q?",
        answer=gt if gt.strip() or not answerable else "x",
        answerable=answerable,
        keypoints=keypoints,
    )
    j = evaluate_rules(ex, answer, CFG)
    if j.label is None:
        assert j.undetermined_reason and j.undetermined_reason.startswith("answer_evaluation")
    else:
        assert j.reason and j.rule


def test_conclusion_with_another_year_contradicts_a_review_that_quotes_the_right_one() -> None:
    answer = (
        "根据文档：\n- 文档1：华信科技公司成立于2015年。\n- 文档2：公司总部位于河源。\n\n"
        "综上所述，华信科技公司成立于4622年。"
    )
    label, _ = judge("华信科技公司成立于哪一年？", "华信科技公司成立于2015年。", answer)
    assert label is AnswerLabel.INCORRECT


def test_document_labels_are_not_values() -> None:
    answer = (
        "Document 1 describes the 2019 IPO. Document 2 covers dividends. Document 3 lists the "
        "board. None of these documents provide the number of employees.\n\n"
        "Thus, the answer cannot be determined from the provided documents."
    )
    label, _ = judge("How many employees does Acme have?", "Acme has 3 employees.", answer)
    assert label is AnswerLabel.ABSTAIN


def test_zh_partial_abstention_with_no_information_about_one_company() -> None:
    answer = (
        "综上所述，华信科技公司2020年的营业收入为7.9亿元；"
        "而文档中没有关于星河传媒公司2020年营业收入的信息。"
    )
    label, reason = judge(
        "华信科技公司和星河传媒公司在2020年的营业收入分别是多少？",
        "华信科技公司2020年的营业收入为7.9亿元；星河传媒公司2020年的营业收入为4.4亿元",
        answer,
    )
    assert label is AnswerLabel.INCORRECT
    assert "星河传媒" in reason


@pytest.mark.parametrize(
    ("query", "gt", "answer"),
    [
        (
            "In which year and on which exchange did Harbor Foods list?",
            "Harbor Foods listed on the NASDAQ in 2015.",
            "Harbor Foods' listing:\n\n- **Year**: 2015\n- **Exchange**: NASDAQ\n\n"
            "Additionally, the company was founded in 1998 and sells frozen food.",
        ),
        (
            "海港食品是哪一年在哪个交易所上市的？",
            "2015年在深圳证券交易所上市。",
            "海港食品的上市信息：\n\n- **上市时间**：2015年\n- **上市地点**：深圳证券交易所\n\n"
            "此外，公司成立于1998年，主营冷冻食品。",
        ),
    ],
)
def test_an_addendum_paragraph_is_not_the_conclusion(query: str, gt: str, answer: str) -> None:
    # "Additionally, …" / "此外，…" after a list that answers: its other year is a further
    # fact, not the answer's conclusion contradicting the ground truth
    view = answer_view(answer)
    assert view.final_from == "whole answer"
    label, reason = judge(query, gt, answer)
    assert label in (AnswerLabel.CORRECT, AnswerLabel.POSSIBLE_CORRECT), reason
    # the same paragraph without the additive opening concludes, and contradicts
    concluding = answer.replace("Additionally, the", "The").replace("此外，公司", "公司")
    assert answer_view(concluding).final_from == "last paragraph"
    assert judge(query, gt, concluding)[0] is AnswerLabel.INCORRECT


def judge_kp(query: str, gt: str, answer: str, keypoints: list[str]) -> tuple[AnswerLabel, str]:
    ex = Example(example_id="x", query=query, answer=gt, keypoints=keypoints)
    j = evaluate_rules(ex, answer, CFG)
    assert j.label is not None
    return j.label, j.rule or ""


@pytest.mark.parametrize(
    ("query", "gt", "answer", "keypoints"),
    [
        (
            "Did Harlow close the deal before or after Ada Finch became CFO?",
            "Before: the deal closed on 7 January 2021 and Ada Finch became CFO on 1 March 2021.",
            "After. Ada Finch became CFO on 1 March 2021, and the deal closed on 7 January 2021.",
            ["deal 7 January 2021", "CFO 1 March 2021", "before"],
        ),
        (
            "Is the Lumen tower taller than the Vesta tower?",
            "Yes, Lumen is 320 m tall and Vesta 280 m.",
            "No, Lumen is 320 m tall and Vesta 280 m.",
            [],
        ),
        (
            "北辰物流的年报是否披露了碳排放数据？",
            "是，年报披露了碳排放为3万吨。",
            "不是，年报披露了碳排放为3万吨。",
            [],
        ),
    ],
)
def test_the_opposite_yes_no_or_before_after_fails(
    query: str, gt: str, answer: str, keypoints: list[str]
) -> None:
    label, rule = judge_kp(query, gt, answer, keypoints)
    assert (label, rule) == (AnswerLabel.INCORRECT, "polar_conflict")
    # the same opening word as the ground truth is no conflict
    agreeing = answer.replace("After.", "Before.").replace("No,", "Yes,").replace("不是，", "是，")
    assert judge_kp(query, gt, agreeing, keypoints)[1] != "polar_conflict"


def test_a_polar_word_inside_the_first_sentence_is_no_answer_word() -> None:
    # "No information …" declines; it does not answer "no"
    _label, rule = judge_kp(
        "Is the Lumen tower taller than the Vesta tower?",
        "Yes, Lumen is 320 m tall and Vesta 280 m.",
        "No information about the towers' heights is given in the documents.",
        [],
    )
    assert rule != "polar_conflict"


def test_an_acronym_spelled_out_is_the_same_name_en() -> None:
    label, reason = judge(
        "Are UK ring sizes the same as US ring sizes?",
        "No. The US uses a numerical scale; the UK uses an alphabetical scale.",
        "No, they differ:\n- **United States:** a numerical scale\n"
        "- **United Kingdom:** an alphabetical scale",
    )
    assert label is AnswerLabel.CORRECT, reason


@pytest.mark.parametrize(
    ("gt", "answer", "keypoints"),
    [
        (
            "总资产15000万元，总负债5000万元。",
            "总资产约为1.5亿元，总负债为0.5亿元。",
            ["15000万元", "5000万元"],
        ),
        (
            "Total assets were $150 million and liabilities $50 million.",
            "Total assets were $0.15 billion and liabilities $0.05 billion.",
            ["$150 million", "$50 million"],
        ),
    ],
)
def test_an_amount_keypoint_stated_in_another_scale(
    gt: str, answer: str, keypoints: list[str]
) -> None:
    label, rule = judge_kp("总资产和总负债分别是多少？", gt, answer, keypoints)
    assert label is AnswerLabel.CORRECT, rule


def test_an_option_named_like_a_comparative_is_no_comparative() -> None:
    # "Walker" ends like "earlier": it is an option, not the question's comparative
    label, reason = judge(
        "Who was arrested earlier in 2023, H. Walker or Y. Nelson?",
        "Y. Nelson: her warrant was issued on March 15, 2023, while Walker's arrest was on "
        "25 March 2023.",
        "Walker was arrested on 25 March 2023; Nelson's warrant came on March 15, 2023, "
        "ten days before. Thus, the answer is Y. Nelson.",
    )
    assert label is not AnswerLabel.INCORRECT, reason


@pytest.mark.parametrize(
    ("gt", "answer"),
    [
        ("He was sentenced to six months in prison.", "He was sentenced to six years in prison."),
        ("她被判处有期徒刑六个月。", "她被判处有期徒刑六年。"),
    ],
)
def test_a_duration_in_another_time_unit_contradicts(gt: str, answer: str) -> None:
    label, reason = judge("How long was the sentence?", gt, answer)
    assert label is AnswerLabel.INCORRECT, reason
