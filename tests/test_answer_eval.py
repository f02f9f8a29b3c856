"""Answer evaluation (seed 000, App. B.1): rules judge in English and Chinese, and the
Listing-3 LLM judge through a real runner over ScriptedLLM."""

from __future__ import annotations

import pytest

from diag_helpers import make_trace
from ragtriage.config import DiagnosisConfig
from ragtriage.diagnosis._calls import LLMCalls, RequestOptions
from ragtriage.diagnosis.answer_eval import (
    evaluate_llm,
    evaluate_rules,
    is_abstention,
    needs_diagnosis,
    strip_citations,
)
from ragtriage.llm import LLMRunner, ScriptedLLM
from ragtriage.records import AnswerLabel, Example

CFG = DiagnosisConfig()
A = AnswerLabel


def judge(gt: str, answer: str, query: str = "When was Acme founded?", **kw: object) -> AnswerLabel:
    ex = Example(example_id="e", query=query, answer=gt, **kw)  # type: ignore[arg-type]
    j = evaluate_rules(ex, answer, CFG)
    assert j.judge == "rules"
    assert j.label is not None, j.undetermined_reason
    assert j.reason  # every verdict says why
    return j.label


# -- English ---------------------------------------------------------------------------


def test_exact_and_contained_answers_are_correct() -> None:
    assert judge("Acme was founded in 1999.", "acme was founded in 1999") is A.CORRECT
    assert judge("1999", "Acme was founded in 1999, in Springfield.") is A.CORRECT


def test_wrong_number_is_incorrect_even_with_high_overlap() -> None:
    assert judge("Acme was founded in 1999.", "Acme was founded in 2005.") is A.INCORRECT
    assert judge("Liabilities fell by $30 million.", "They fell by $50 million.") is A.INCORRECT


def test_same_number_in_other_form_is_not_a_conflict() -> None:
    label = judge("Liabilities fell by $30 million.", "Liabilities fell by 30,000,000 dollars.")
    assert label in (A.CORRECT, A.POSSIBLE_CORRECT)


def test_date_disagreement_is_incorrect() -> None:
    q = "When did JetWing change its board of directors?"
    gt = "JetWing changed its board in September 2021."
    assert judge(gt, "JetWing changed its board in October 2021.", q) is A.INCORRECT
    assert judge(gt, "JetWing changed its board in September 2021.", q) is A.CORRECT


def test_missing_half_of_the_key_facts_is_incorrect() -> None:
    gt = (
        "M. Cooper was sentenced to four years imprisonment; Y. Nelson was sentenced to "
        "three years imprisonment."
    )
    q = "What sentences were given to M. Cooper and Y. Nelson?"
    assert judge(gt, "M. Cooper was sentenced to four years imprisonment.", q) is A.INCORRECT


def test_half_the_key_facts_and_nothing_wrong_is_partial() -> None:
    # every part of the question addressed, one of two facts left out, nothing wrong
    q = "When did GreenTech acquire Liberty Energy Solutions, and what was the deal worth?"
    gt = (
        "GreenTech completed the acquisition of Liberty Energy Solutions in November 2021; "
        "the acquisition had a total asset value of $100 million."
    )
    partial = "GreenTech completed the acquisition of Liberty Energy Solutions in November 2021."
    assert judge(gt, partial, q) is A.POSSIBLE_CORRECT
    q_zh = "绿源环保2020年的营业收入和净利润分别是多少？"
    gt_zh = "绿源环保2020年营业收入为4500万元，净利润为800万元。"
    assert judge(gt_zh, "绿源环保2020年营业收入为4500万元。", q_zh) is A.POSSIBLE_CORRECT


def test_half_the_key_facts_with_a_name_of_its_own_is_incorrect() -> None:
    q = "Which company did National Development acquire, and when was the deal finalized?"
    gt = "It acquired Green Energy Power; the deal was finalized in March 2019."
    wrong = "It acquired Urban Solutions Ltd; the deal was finalized in March 2019."
    assert judge(gt, wrong, q) is A.INCORRECT


def test_unrelated_answer_is_incorrect() -> None:
    gt = "The dividend showed the company could generate profits and keep a healthy cash flow."
    answer = "The weather in Paris was sunny during the annual meeting."
    assert judge(gt, answer, "What did the dividend show?") is A.INCORRECT


def test_keypoints_decide_completeness() -> None:
    gt = "Revenue rose because of new stores and online sales."
    kps = ["new stores", "online sales"]
    q = "Why did revenue rise?"
    assert judge(gt, "Thanks to new stores and online sales.", q, keypoints=kps) is A.CORRECT
    # one of two keypoints: partial (the shipped threshold, 0.4, was fitted leave one
    # natural part out; the hand-set 0.5 called it incomplete)
    assert judge(gt, "Thanks to new stores.", q, keypoints=kps) is A.POSSIBLE_CORRECT
    kps3 = ["new stores", "online sales", "higher prices"]
    gt3 = "Revenue rose because of new stores, online sales and higher prices."
    partial = "Thanks to new stores and online sales."
    assert judge(gt3, partial, q, keypoints=kps3) is A.POSSIBLE_CORRECT
    # one of three leaves out more than it says: incomplete
    assert judge(gt3, "Thanks to new stores.", q, keypoints=kps3) is A.INCORRECT


def test_the_right_value_in_a_list_of_candidates_is_only_possibly_correct() -> None:
    """An answer that lists the right date among several others commits to none of
    them (an LLM hedging over chunks of several companies); dates that tell the story
    around the right one do not count as a list."""
    q = "When did the board of directors change?"
    listing = "The board changed in November 2017, August 2019, April 2020 and December 2021."
    assert judge("December 2021", listing, q) is A.POSSIBLE_CORRECT
    story = "The board changed in December 2021, after the merger of 2019 and the IPO in 2020."
    assert judge("December 2021", story, q) is A.CORRECT
    amounts = "Acme paid $10 million, $20 million or $30 million."
    assert judge("Acme paid $30 million.", amounts, "How much did Acme pay?") is A.POSSIBLE_CORRECT
    zh = "董事会变更发生在2017年11月、2019年8月、2020年4月和2021年12月。"
    assert judge("2021年12月", zh, "公司何时变更董事会？") is A.POSSIBLE_CORRECT
    assert judge("2021年12月", "公司于2021年12月变更董事会。", "公司何时变更董事会？") is A.CORRECT


def test_numbered_keypoints_are_facts_not_numbers() -> None:
    """DragonBall numbers its key points ("1. ..."); the "1" is list formatting, so an
    answer stating the fact covers it (English and Chinese)."""
    gt = "January 2021"
    q = "When did Green Fields appoint a new CEO?"
    kps = ["1. Green Fields Agriculture Ltd. appointed a new CEO in January 2021."]
    answer = "Green Fields appointed its new CEO in January 2021."
    assert judge(gt, answer, q, keypoints=kps) is A.CORRECT
    zh = ["1、公司于2021年1月任命了新的首席执行官", "（2）新任CEO来自有机农业行业"]
    ex = Example(example_id="z", query="公司何时任命新CEO？", answer="2021年1月", keypoints=zh)
    assert ex.keypoints == ["公司于2021年1月任命了新的首席执行官", "新任CEO来自有机农业行业"]


@pytest.mark.parametrize(
    "answer",
    [
        "I don't know.",
        "The provided documents do not mention when Acme was founded.",
        "There is not enough information in the context to answer this question.",
        "Unable to determine from the given context.",
        "",
    ],
)
def test_english_abstentions(answer: str) -> None:
    assert is_abstention(answer, "When was Acme founded?")
    assert judge("Acme was founded in 1999.", answer) is A.ABSTAIN


def test_a_hedged_claim_is_not_an_abstention() -> None:
    answer = (
        "The report does not provide a specific year, but it appears to cover events "
        "from 2018 and 2021."
    )
    assert not is_abstention(answer, "In which year is the report?")
    # it states the right year but hedges: at most possibly correct
    assert judge("2018.", answer, "In which year is the report?") is A.POSSIBLE_CORRECT


# -- Chinese ---------------------------------------------------------------------------

ZH_Q = "根据河源市人民法院的判决，被告张某被判处了多长时间的有期徒刑？"
ZH_GT = "被告张某被判处有期徒刑五年。"


def test_chinese_correct_with_numeral_variants() -> None:
    assert judge(ZH_GT, "张某被判处有期徒刑五年，并处罚金。", ZH_Q) is A.CORRECT
    assert judge(ZH_GT, "根据判决，张某被判处有期徒刑5年。", ZH_Q) is A.CORRECT


def test_a_three_character_chinese_term_needs_both_its_pairs() -> None:
    q = "乙酰胺可由哪种物质失水获得？"
    assert (
        judge("可由乙酸铵失水获得。", "乙酰胺可由乙酸钠失水获得。", q, keypoints=["乙酸铵"])
        is A.INCORRECT
    )
    assert (
        judge("可由乙酸铵失水获得。", "它由乙酸铵失水得到。", q, keypoints=["乙酸铵"]) is A.CORRECT
    )


def test_a_chinese_keypoint_with_one_character_left_out_is_stated() -> None:
    q = "软枝黄蝉如果种在荫蔽处会怎样？"
    gt = "难于开花，而且枝叶也会显得稀疏。"
    said = "种在荫蔽处的话，它很难开花，枝叶也会变得稀疏。"
    assert judge(gt, said, q, keypoints=["难于开花", "枝叶稀疏"]) is A.CORRECT
    # a character changed is no character left out
    q2 = "泰国国王是谁？"
    assert judge("拉玛九世。", "是拉玛八世。", q2, keypoints=["拉玛九世"]) is A.INCORRECT


def test_a_review_declining_a_shortened_name_of_the_question_abstains() -> None:
    # "中联部" is "中共中央对外联络部": the decline names the question by its characters
    answer = (
        "根据提供的资料，王家瑞曾任中共中央对外联络部部长。资料还介绍了他1970年参加工作、"
        "1973年入党的经历。不过，关于他具体是在哪一年出任中联部部长，这段材料中没有给出明确"
        "时间，因此我无法确定他出任部长的具体日期。"
    )
    label = judge(
        "2003年3月。", answer, "王家瑞何时出任中共中央对外联络部部长？", keypoints=["2003年3月"]
    )
    assert label is A.ABSTAIN


def test_a_review_that_closes_saying_it_cannot_give_the_answer_abstains() -> None:
    # the review names other facts; its close refuses in its own words ("so I cannot tell
    # what …", "so I can't say what it was") without repeating the question's
    q = "What sentence did the Norwood Court give C. Taylor?"
    gt = "Three years in prison and a fine of 50,000 dollars."
    review = (
        "The passages I have cover the investigation into C. Taylor's shop and her arrest on "
        "23rd September 2022. They do not include the judgment result, so I cannot tell what "
        "the court decided."
    )
    assert judge(gt, review, q, keypoints=["three years in prison"]) is A.ABSTAIN
    one = (
        "The records describe the shop and the brands involved, but they do not state the "
        "judgment, so I can't say what it was."
    )
    assert judge(gt, one, q, keypoints=["three years in prison"]) is A.ABSTAIN
    # a right answer with a side matter it cannot say stays an answer
    side = (
        "Three years in prison and a fine of 50,000 dollars, so I cannot say whether she appealed."
    )
    assert judge(gt, side, q, keypoints=["three years in prison"]) is not A.ABSTAIN


def test_chinese_wrong_number_is_incorrect() -> None:
    assert judge(ZH_GT, "张某被判处有期徒刑三年。", ZH_Q) is A.INCORRECT


def test_chinese_wrong_date_is_incorrect() -> None:
    q = "绿野公司是什么时候更换董事会的？"
    gt = "绿野公司于2021年12月更换了董事会。"
    assert judge(gt, "绿野公司于2021年10月更换了董事会。", q) is A.INCORRECT


@pytest.mark.parametrize(
    "answer",
    [
        "无法回答。",
        "文档中没有提供相关信息，无法回答该问题。",
        "我不知道。",
        "上下文未提及此信息。",
    ],
)
def test_chinese_abstentions(answer: str) -> None:
    assert is_abstention(answer, ZH_Q)
    assert judge(ZH_GT, answer, ZH_Q) is A.ABSTAIN


# -- unanswerable and needs_diagnosis -------------------------------------------------


def test_unanswerable_questions() -> None:
    q = "On which stock exchange is Retail Emporium traded?"
    assert judge("", "The New York Stock Exchange.", q, answerable=False) is A.INCORRECT
    assert judge("", "There is not enough information to answer.", q, answerable=False) is (
        A.ABSTAIN
    )
    assert judge("", "无法回答。", "零售商场在哪个交易所上市？", answerable=False) is A.ABSTAIN


def test_needs_diagnosis() -> None:
    answerable = Example(example_id="a", query="q?", answer="x")
    unanswerable = Example(example_id="u", query="q?", answerable=False)
    assert needs_diagnosis(answerable, A.INCORRECT)
    assert needs_diagnosis(answerable, A.ABSTAIN)
    assert not needs_diagnosis(answerable, A.CORRECT)
    assert not needs_diagnosis(answerable, A.POSSIBLE_CORRECT)
    assert needs_diagnosis(unanswerable, A.INCORRECT)
    assert needs_diagnosis(unanswerable, A.POSSIBLE_CORRECT)
    assert not needs_diagnosis(unanswerable, A.ABSTAIN)
    assert not needs_diagnosis(unanswerable, A.CORRECT)


def test_ground_truth_without_content_is_undetermined() -> None:
    ex = Example(example_id="e", query="q?", answer="…")
    j = evaluate_rules(ex, "something", CFG)
    assert j.label is None and j.undetermined
    assert j.undetermined_reason is not None
    assert j.undetermined_reason.startswith("answer_evaluation:")


# -- LLM judge (Listing 3) -------------------------------------------------------------


def _calls(script: object) -> tuple[LLMCalls, ScriptedLLM]:
    llm = ScriptedLLM(script)  # type: ignore[arg-type]
    return LLMCalls(LLMRunner(llm), RequestOptions()), llm


async def test_llm_judge_reads_json_label() -> None:
    calls, llm = _calls('{"label": "incorrect", "reasoning": "Wrong year."}')
    j = await evaluate_llm(make_trace(), calls)
    assert j.label is A.INCORRECT and j.reason == "Wrong year." and j.judge == "llm"
    prompt = llm.requests[0].messages[-1].content
    assert "<proposed_answer>" in prompt and "2005" in prompt and "1999" in prompt
    assert calls.usage().calls == 1 and calls.usage().prompt_tokens > 0


async def test_llm_judge_reads_prose_label_without_confusing_correct() -> None:
    calls, _ = _calls("Label: possible_correct — the answer is vague.")
    j = await evaluate_llm(make_trace(), calls)
    assert j.label is A.POSSIBLE_CORRECT
    calls, _ = _calls("The proposed answer is incorrect.")
    assert (await evaluate_llm(make_trace(), calls)).label is A.INCORRECT


async def test_llm_judge_unreadable_reply_is_undetermined() -> None:
    calls, _ = _calls("I would rather not say.")
    j = await evaluate_llm(make_trace(), calls)
    assert j.label is None
    assert j.undetermined_reason is not None and "unreadable" in j.undetermined_reason


async def test_llm_judge_failed_call_is_undetermined() -> None:
    calls, _ = _calls([])  # an exhausted script fails every request
    j = await evaluate_llm(make_trace(), calls)
    assert j.label is None
    assert j.undetermined_reason is not None and "LLM call failed" in j.undetermined_reason


async def test_llm_judge_sees_unable_to_answer_for_unanswerable() -> None:
    calls, llm = _calls('{"label": "abstain", "reasoning": "declined"}')
    trace = make_trace(gt_answer="", answerable=False, answer="I don't know.")
    j = await evaluate_llm(trace, calls)
    assert j.label is A.ABSTAIN
    assert "Unable to answer" in llm.requests[0].messages[-1].content


def test_citation_markers_and_omitted_values_are_not_conflicts() -> None:
    gt = "12,400 bags of NitroGuard 40 were recalled, at a direct cost of USD 2.9 million."
    answer = (
        "In total 12,400 bags were recalled, and the direct cost, including replacement "
        "product, was USD 2.9 million. [1]"
    )
    q = "How many bags were recalled, and what did it cost?"
    assert strip_citations("was USD 2.9 million. [1] [2, 3]【4】") == "was USD 2.9 million."
    assert judge(gt, answer, q) in (A.CORRECT, A.POSSIBLE_CORRECT)
    # a competing value of the same kind is a contradiction
    wrong = "In total 12,400 bags were recalled at a direct cost of USD 4.1 million. [1]"
    assert judge(gt, wrong, q) is A.INCORRECT
