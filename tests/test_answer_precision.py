"""Precision of the rules judge on right answers (issue 27, item 3): an answer that states
what the ground truth states is not failed for how the dataset's keypoints are worded,
for a span of time given in other units, for a value of the ground truth's that it gives
for another slot, or for pairing words as the question does. Each test also checks that
the wrong answer next to it is still failed."""

from __future__ import annotations

from ragtriage.config import DiagnosisConfig
from ragtriage.diagnosis.answer_checks import clauses, names_of, slot_conflict
from ragtriage.diagnosis.answer_eval import (
    _same_root,
    answer_facts,
    evaluate_rules,
    gt_coverage,
    states_keypoint,
)
from ragtriage.diagnosis.facts import extract_dates, extract_entities, extract_quantities
from ragtriage.records import AnswerLabel, Example

CFG = DiagnosisConfig()
A = AnswerLabel


def judge(query: str, gt: str, answer: str, keypoints: list[str] | None = None) -> AnswerLabel:
    ex = Example(example_id="e", query=query, answer=gt, keypoints=keypoints or [])
    j = evaluate_rules(ex, answer, CFG)
    assert j.label is not None, j.undetermined_reason
    return j.label


# -- keypoints written "label: value" ---------------------------------------------------


def test_label_value_keypoint_is_stated_by_its_label_and_value_zh() -> None:
    # no character pair made across the colon ("员刘") is asked of the answer
    q = "张某案的书记员和公诉人分别是谁？"
    gt = "书记员是刘某某；公诉人是检察员王某某。"
    kps = ["书记员：刘某某", "公诉人：王某某"]
    facts = answer_facts("张某案的书记员是刘某某，公诉人是王某某。", gt, kps, query=q)
    assert facts.keypoint_coverage == 1.0
    assert judge(q, gt, "张某案的书记员是刘某某，公诉人是王某某。", kps) is not A.INCORRECT
    # the two names swapped between the roles: neither keypoint is stated
    swapped = answer_facts("书记员是王某某；公诉人是刘某某。", gt, kps, query=q)
    assert swapped.keypoint_coverage == 0.0


def test_a_list_goes_on_over_a_clause_break() -> None:
    q = "Who sings the anthem at the opening and at the closing ceremony?"
    gt = (
        "At the opening it is sung by Anna Lee, Tom Ray and a boys' choir; at the closing "
        "by Mia Wong and Leo Park."
    )
    kps = ["opening: Anna Lee, Tom Ray, boys' choir", "closing: Mia Wong and Leo Park"]
    ans = (
        "At the opening the anthem is performed by Anna Lee, Tom Ray, and a boys' choir, "
        "while at the closing it is sung by Mia Wong and Leo Park."
    )
    assert answer_facts(ans, gt, kps, query=q).keypoint_coverage == 1.0
    # a clause that names someone else does not lend its words to the one before
    other = "At the opening: Anna Lee and Tom Ray; Mia Wong with a boys' choir at the closing."
    assert answer_facts(other, gt, kps[:1], query=q).keypoint_coverage == 0.0


def test_a_period_before_a_lower_case_word_ends_no_clause() -> None:
    text = "In May 2021, Northwind Ltd. bought 60% of Harbor Foods. Then it sold the rest."
    assert clauses(text) == [
        "In May 2021, Northwind Ltd. bought 60% of Harbor Foods.",
        "Then it sold the rest.",
    ]
    q = "What did Northwind buy from Harbor Foods and Bay Mills, and when?"
    gt = "In May 2021 it bought 60% of Harbor Foods; in June 2021 the mills of Bay Mills."
    kps = ["Harbor Foods: 60% stake, May 2021", "Bay Mills: mills, June 2021"]
    ans = (
        "In May 2021, Northwind Ltd. bought a 60% stake in Harbor Foods, and in June 2021 "
        "it bought the mills of Bay Mills."
    )
    assert answer_facts(ans, gt, kps, query=q).keypoint_coverage == 1.0
    wrong = ans.replace("May 2021", "March 2021")
    assert judge(q, gt, wrong, kps) is A.INCORRECT


def test_a_keypoint_number_does_not_lend_its_unit_to_the_next_word_zh() -> None:
    # "2016年起售罄": the pair "年起" straddles the year and is not asked of the answer
    gt = "2016年起单位正式售罄。"
    facts = answer_facts("2016年全部售罄。", gt, ["2016年起售罄"], query="哪一年卖完？")
    assert facts.keypoint_coverage == 1.0
    assert answer_facts("2016年开始招租。", gt, ["2016年起售罄"]).keypoint_coverage == 0.0


def test_a_day_written_as_an_ordinal_is_the_number() -> None:
    gt = "Between 18 and 19 March the files were deleted."
    assert all(gt_coverage(gt, "Between 18th and 19th March the files were deleted.").covered)
    assert not all(gt_coverage(gt, "Between 16th and 19th March the files were deleted.").covered)


# -- every statement made ---------------------------------------------------------------


def test_every_statement_made_is_not_failed_for_shorthand_keypoints() -> None:
    q = "Do the reported assets, debts and equity of Lumen add up?"
    gt = "Yes. Debts of $120 million plus equity of $200 million make $320 million, the assets."
    kps = ["$120M + $200M = $320M", "balanced"]
    ans = (
        "Yes. Debts of $120 million plus equity of $200 million equal $320 million, which "
        "matches the reported assets."
    )
    assert judge(q, gt, ans, kps) is A.CORRECT
    assert judge(q, gt, "Yes.", kps) is not A.CORRECT


def test_a_negated_statement_is_not_made_by_its_affirmation() -> None:
    # the statements' words are all there, but the ground truth says "not"
    q = "Did the Eastfield plant reopen, and when was it sold?"
    gt = "The Eastfield plant did not reopen after the fire. It was sold in March 2021."
    kps = ["closed for good", "sold March 2021"]
    ans = "The Eastfield plant reopened after the fire. It was sold in March 2021."
    assert judge(q, gt, ans, kps) is not A.CORRECT
    zh_q = "孙某和李某分别有没有高血压史？"
    zh_gt = "孙某无高血压史；李某有高血压史5年。"
    zh_kps = ["孙某无高血压", "李某高血压5年"]
    assert judge(zh_q, zh_gt, "李某有高血压史5年；孙某也有高血压史。", zh_kps) is A.INCORRECT


# -- a span of time in other units -------------------------------------------------------


def test_a_span_of_time_in_other_units_is_the_same_value() -> None:
    q = "How long after the merger did the spin-off follow?"
    gt = "The merger closed in March 2015 and the spin-off followed about four and a half years later."
    ans = "The spin-off came about four years and six months after the merger (March 2015)."
    assert judge(q, gt, ans) is not A.INCORRECT
    assert judge(q, gt, "The spin-off came about six years after the merger.") is A.INCORRECT
    zh_q = "立案后隔了多久才起诉？"
    zh_gt = "2021年3月1日立案，2022年3月11日起诉，相隔一年零十天。"
    zh_ans = "2021年3月1日立案，2022年3月11日起诉，相隔375天。"
    assert judge(zh_q, zh_gt, zh_ans) is not A.INCORRECT
    assert judge(zh_q, zh_gt, "2021年3月1日立案，2022年3月11日起诉，相隔200天。") is A.INCORRECT


# -- values of the ground truth's own, given for its other slots ----------------------------


def test_a_value_the_ground_truth_gives_another_slot_is_no_conflict() -> None:
    q = "How did the bridge toll change over the years?"
    gt = (
        "It was $2 for the first 5 years, rose to $3 in year 6, and in year 9 (2015) a $5 "
        "express lane toll was added."
    )
    kps = ["$2 for years 1-5", "$3 in year 6", "$5 express lane in year 9 (2015)"]
    ans = (
        "The toll was $2 for its first 5 years, went to $3 in year 6, and in year 9 (2015) "
        "a $5 express lane opened."
    )
    assert all(slot_conflict(kp, ans, q, ground_truth=gt) is None for kp in kps)
    wrong = ans.replace("$5", "$4")
    assert any(slot_conflict(kp, wrong, q, ground_truth=gt) is not None for kp in kps)


def test_a_unit_is_no_slot_wording() -> None:
    # "cm" belongs to "90 cm": an extra clause with another length in cm ("the junior
    # hurdle") is not the keypoint's slot
    q = "How has the height of the hurdle changed over the seasons?"
    gt = "It was 90 cm for seasons 1-4, and from season 5 a 100 cm hurdle was used."
    kps = ["90 cm for seasons 1-4", "100 cm from season 5"]
    ans = (
        "It stood at 90 cm for the first four seasons; from season 5 a 100 cm hurdle was "
        "used. (The junior hurdle is 70 cm.)"
    )
    assert all(slot_conflict(kp, ans, q, ground_truth=gt) is None for kp in kps)
    wrong = "It stood at 80 cm for the first four seasons; from season 5 a 100 cm hurdle was used."
    assert judge(q, gt, wrong, kps) is A.INCORRECT


# -- wave 3, natural answers: values of another slot, kinds of number, name boundaries ---


def test_a_date_for_another_event_is_no_contradiction() -> None:
    # a day-by-day course beside the ground truth's discharge date is extra detail; a
    # clause about the discharge with another date still contradicts it
    q = "Give me an overview of K. Mendoza's hospital stay."
    gt = (
        "K. Mendoza was admitted on 20 June with a tremor. He was treated with levodopa, "
        "improved, and was discharged on 24 June with neurology follow-up."
    )
    kps = ["admitted 20 June with a tremor", "levodopa", "discharged 24 June"]
    rich = (
        "K. Mendoza was admitted on 20 June with a tremor and treated with levodopa.\n"
        "- 21 June: tremor control improved slightly.\n"
        "- 23 June: he reported sleeping better."
    )
    ex = Example(example_id="e", query=q, answer=gt, keypoints=kps)
    assert evaluate_rules(ex, rich, CFG).rule != "value_conflict"
    wrong = rich + "\n- He was discharged on 26 June with neurology follow-up."
    assert evaluate_rules(ex, wrong, CFG).rule == "value_conflict"
    # the direct answer's value (the ground truth's first clause) always competes
    q2 = "How many years after 1927 was the nickname given?"
    gt2 = "52 years: the trophy dates from 1927 and the nickname was given in 1979."
    ans2 = "The trophy dates from 1927 and the nickname from 1979. Thus, the answer is 42 years."
    assert judge(q2, gt2, ans2) is A.INCORRECT


def test_a_count_does_not_compete_with_a_year() -> None:
    kp = "2001-2003: Wizards"
    q = "When did he play in the NBA, and for which teams?"
    ans = "He then played two more seasons, 2001 to 2003, with the Washington Wizards."
    assert slot_conflict(kp, ans, q, ground_truth="Two more seasons, 2001-2003, Wizards.") is None
    # a count against a count of the slot still conflicts
    kp2 = "won 6 championship titles"
    assert slot_conflict(kp2, "He won 5 championship titles.", "What did he do?") is not None


def test_a_year_range_is_two_years() -> None:
    assert [d.year for d in extract_dates("2001-2003: Wizards")] == [2001, 2003]
    assert [d.year for d in extract_dates("1939–1945 war")] == [1939, 1945]
    # a number after a dash is no year unless a smaller year comes before it
    assert extract_dates("phone 10-2003") == []
    assert [d.year for d in extract_dates("2003-2001")] == [2003]


def test_a_time_of_day_is_no_count_zh() -> None:
    found = [
        (q.unit, q.value) for q in extract_quantities("5月20日19时许撞人，6月10日16时45分换牌")
    ]
    assert found == [("clock", 19 * 60), ("clock", 16 * 60 + 45)]
    assert [q.unit for q in extract_quantities("下午3点半到达")] == ["clock"]
    # durations, decimals and 时间 are not times of day
    assert [q.unit for q in extract_quantities("用时3小时")] == ["hour"]
    assert all(q.unit != "clock" for q in extract_quantities("增长3点5个百分点"))
    # so a count ("一起肇事") does not contradict the ground truth's times
    q = "尹某在2022年5月到6月之间先后做了哪些事？"
    gt = "5月20日19时许她撞伤张某后逃逸；6月12日14时30分她又撞倒刘某。"
    ans = "尹某先发生一起肇事，撞伤张某后逃逸；6月12日她又撞倒刘某后逃逸。"
    ex = Example(example_id="e", query=q, answer=gt)
    assert evaluate_rules(ex, ans, CFG).rule != "value_conflict"


def test_a_date_keypoint_with_a_range_particle_zh() -> None:
    q = "李某某的刑期从什么时候开始算，到什么时候结束？"
    gt = "刑期自2023年5月22日起算，至2030年5月21日止。"
    kps = ["2023年5月22日起", "2030年5月21日止"]
    ans = "李某某的刑期从2023年5月22日开始计算，到2030年5月21日结束。"
    assert answer_facts(ans, gt, kps, query=q).keypoint_coverage == 1.0
    assert judge(q, gt, ans, kps) is A.CORRECT
    # the day must be the keypoint's: a year or another day does not state it
    assert (
        answer_facts("从2023年5月开始，到2030年结束。", gt, kps, query=q).keypoint_coverage == 0.0
    )
    assert judge(q, gt, "从2023年5月12日开始，到2030年5月21日结束。", kps) is not A.CORRECT


def test_keypoint_words_compared_by_root_and_hyphen_parts() -> None:
    kp = "Victorian fairy-tale illustrations"
    said = "From the Victorian era, fairy tales illustrated black conical hats."
    assert states_keypoint(kp, said)
    assert not states_keypoint(kp, "From the Victorian era, witches wore black hats.")
    # a shared beginning short of four fifths of the word is another word
    assert _same_root("illustration", "illustrat") and _same_root("industry", "industri")
    assert not _same_root("contract", "contradict")


def test_a_date_inside_a_name_run_is_not_part_of_the_name() -> None:
    assert names_of("Jewel Haven 2 February 2023") == ["Jewel Haven"]
    assert names_of("Castellano 64") == ["Castellano"]


def test_chinese_names_start_after_conjunctions_and_post_verbs() -> None:
    assert extract_entities("因此法院认为被告有罪") == []
    assert extract_entities("他还兼任辅仁大学教授") == ["辅仁大学"]
    assert extract_entities("毕业于北京大学") == ["北京大学"]
    # a court named by its place in the case is no name
    assert extract_entities("向原审法院提出上诉") == []
    assert extract_entities("碧海市金沙区人民法院") == ["碧海市金沙区人民法院"]
    q = "如不服判决，可以怎样上诉？"
    gt = "可在接到判决书的第二日起十日内，通过原审法院或者直接向碧海市中级人民法院提出上诉。"
    ans = "可在接到判决书第二日起十日内，通过碧海市金沙区人民法院或直接向碧海市中级人民法院上诉。"
    ex = Example(example_id="e", query=q, answer=gt)
    assert evaluate_rules(ex, ans, CFG).rule != "name_substituted"
