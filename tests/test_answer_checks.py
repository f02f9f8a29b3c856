"""Relational answer checks (issue #9): facts present but tied together wrongly, and
numbers in another form that are not conflicts. English and Chinese."""

from __future__ import annotations

import pytest

from ragtriage.config import DiagnosisConfig
from ragtriage.diagnosis.answer_checks import (
    choice_conflict,
    clauses,
    compound_durations,
    direction_flips,
    entity_value_conflict,
    keypoint_replaced,
    keypoint_variant,
    order_conflict,
    slot_conflict,
)
from ragtriage.diagnosis.answer_eval import evaluate_rules
from ragtriage.diagnosis.facts import extract_quantities
from ragtriage.records import AnswerLabel, Example

CFG = DiagnosisConfig()


def label_of(query: str, gt: str, answer: str, keypoints: tuple[str, ...] = ()) -> AnswerLabel:
    ex = Example(example_id="x", query=query, answer=gt, keypoints=list(keypoints))
    j = evaluate_rules(ex, answer, CFG)
    assert j.label is not None
    return j.label


def test_direction_flip_zh_and_en() -> None:
    gt = "远航冷链净利润为1.52亿元，同比下降4.4%。"
    assert direction_flips(gt, "远航冷链净利润为1.52亿元，同比增长4.4%。") == ["4.4%"]
    assert direction_flips(gt, "远航冷链净利润为1.52亿元，同比下降4.4%。") == []
    assert direction_flips("Revenue fell 3% to $2 billion.", "Revenue rose 3% to $2 billion.")
    assert (
        label_of("净利润是多少？", gt, "远航冷链净利润为人民币1.52亿元，同比增长4.4%。")
        is AnswerLabel.INCORRECT
    )


def test_compound_duration_is_not_a_conflict() -> None:
    text = "2 hours and 10 minutes after she was last seen well"
    extra = compound_durations(text, extract_quantities(text))
    assert [(q.value, q.unit) for q in extra] == [(130.0, "minute")]
    label = label_of(
        "How long after she was last seen well did she get alteplase?",
        "She received alteplase 2 hours and 10 minutes after she was last seen well.",
        "Let's see.\n- Alteplase was started 2 hours and 10 minutes after she was last seen "
        "well.\n\nThus, the answer is 130 minutes.",
    )
    assert label is not AnswerLabel.INCORRECT


def test_wrong_order_on_an_ordering_question() -> None:
    gt = (
        "The HomeNest acquisition (1 April 2021) came first, then the data breach (3 July "
        "2021), then the Brisbane opening (16 August 2021)."
    )
    wrong = (
        "The HomeNest acquisition came first (1 April 2021), followed by the Brisbane opening "
        "(16 August 2021) and then the data breach (3 July 2021)."
    )
    query = "Which came first: the HomeNest acquisition, the data breach or the Brisbane opening?"
    assert order_conflict(query, gt, wrong) is not None
    assert order_conflict(query, gt, gt) is None
    # a duration question is no ordering question
    assert order_conflict("How long after arriving was it resolved?", gt, wrong) is None
    assert label_of(query, gt, wrong) is AnswerLabel.INCORRECT


def test_wrong_order_zh() -> None:
    gt = "3月2日发行债券；6月30日物流园投入运营；11月15日财务总监辞职。"
    wrong = "按时间先后：6月30日物流园投入运营；3月2日发行债券；11月15日财务总监辞职。"
    assert order_conflict("远航冷链2021年的重大事项按时间先后顺序是怎样的？", gt, wrong)


def test_wrong_order_found_by_the_events_words_when_dates_are_left_out() -> None:
    keypoints_zh = ("1月20日定增", "4月16日收购", "9月8日董事长变更")
    gt_zh = "先是1月20日完成定增，随后4月16日完成收购，最后9月8日董事长变更。"
    wrong_zh = (
        "4月16日完成收购；9月8日董事长辞职。综上所述，顺序为：先收购，再更换董事长，最后完成定增。"
    )
    query_zh = "华锦新材料2021年的定增、收购和董事长更换按时间先后是怎样的顺序？"
    assert order_conflict(query_zh, gt_zh, wrong_zh, keypoints=keypoints_zh)
    right_zh = "先完成定增，随后完成收购，最后董事长变更。"
    assert order_conflict(query_zh, gt_zh, right_zh, keypoints=keypoints_zh) is None
    keypoints = ("bond issued 2 March 2021", "warehouse opened 30 June 2021")
    gt = "The bond was issued on 2 March 2021 and the warehouse opened on 30 June 2021."
    query = "In what order did the bond issue and the warehouse opening happen?"
    wrong = "The warehouse opened on 30 June 2021; after that the bond was issued."
    assert order_conflict(query, gt, wrong, keypoints=keypoints)
    right = "First the bond was issued, then the warehouse opened on 30 June 2021."
    assert order_conflict(query, gt, right, keypoints=keypoints) is None


def test_slot_filled_with_another_name() -> None:
    found = slot_conflict(
        "began in St. Joseph, Missouri",
        "The Pony Express route began in Salt Lake City and ended in Sacramento.",
        "Where did the Pony Express route begin and end?",
    )
    assert found is not None and found.found == "Salt Lake City"
    label = label_of(
        "Where did the Pony Express route begin and end?",
        "The Pony Express started at St. Joseph, Missouri and ended in Sacramento.",
        "The Pony Express route began in Salt Lake City and ended in Sacramento.",
        ("began in St. Joseph, Missouri", "ended in Sacramento"),
    )
    assert label is AnswerLabel.INCORRECT


@pytest.mark.parametrize(
    ("keypoint", "gt", "answer", "instead"),
    [
        # the ground truth's words around the keypoint hold another name in the answer
        ("巴黎", "1960年5月17日在巴黎去世。", "他于1960年5月17日在蒙得维的亚去世。", "蒙得维的亚"),
        (
            "上官小宝",
            "12岁开始从事漫画行业；14岁成为上官小宝（邝东源）的入室弟子。",
            "他12岁入行；14岁时成为上官玉郎（莫君岳）的入室弟子。",
            "上官玉郎",
        ),
        # the clause about the keypoint ("台湾…运营"), not another keypoint's ("中国大陆…")
        (
            "游戏橘子",
            "中国大陆由盛大游戏运营，台湾由游戏橘子运营。",
            "中国大陆由盛大游戏运营，台湾则由Nexon运营。",
            "Nexon",
        ),
        ("乙酸铵", "可由乙酸铵失水获得。", "乙酰胺可由乙酸钠失水获得。", "乙酸钠"),
        (
            "Paris",
            "She died in Paris on 17 May 1960.",
            "She died in Montevideo on 17 May 1960.",
            "Montevideo",
        ),
        # not a replacement: the keypoint shortened, restated, another ground-truth item,
        # or no content word next to it to find its place by
        (
            "高尔夫球运动术语",
            "标准杆是高尔夫球运动术语，指挥杆次数。",
            "标准杆是高尔夫术语，指挥杆次数。",
            None,
        ),
        ("只用于体外研究", "所以一般只用于体外研究。", "所以一般只在体外的研究中使用。", None),
        (
            "省军区党委第一书记",
            "省委书记、省人大常委会主任、省军区党委第一书记。",
            "省委书记、省人大常委会主任。",
            None,
        ),
        (
            "not cash",
            "The prize is an item and not cash.",
            "The prize is an item rather than money.",
            None,
        ),
    ],
)
def test_a_keypoint_replaced_between_the_ground_truths_own_words(
    keypoint: str, gt: str, answer: str, instead: str | None
) -> None:
    assert keypoint_replaced(keypoint, gt, answer) == instead


@pytest.mark.parametrize(
    ("keypoint", "answer", "variant"),
    [
        ("carbon dioxide", "Carbon monoxide, as the passage explains.", "Carbon monoxide"),
        ("C period", "DNA replication takes place during the B period.", "B period"),
        ("Western Australia Day", "It is Eastern Australia Day.", "Eastern Australia Day"),
        # the keypoint itself, another wording, or no sibling word: no variant
        ("carbon dioxide", "Carbon dioxide, not carbon monoxide.", None),
        ("luxury apartment", "They moved into a luxury flat.", None),
        ("urinary antigen test", "A pneumococcal antigen test was done.", None),
        ("Maurice Gibb", "The three Gibb brothers.", None),
    ],
)
def test_an_english_keypoint_with_one_sibling_word_changed(
    keypoint: str, answer: str, variant: str | None
) -> None:
    assert keypoint_variant(keypoint, answer) == variant


def test_a_replaced_keypoint_fails_the_answer_en_and_zh() -> None:
    zh = label_of(
        "独孤剑的师父是谁？师父死后独孤剑担任了什么职务？",
        "师父是刘轻舟；刘轻舟死后，独孤剑接掌衡山派掌门。",
        "独孤剑的师父是南宫灭。南宫灭死后，独孤剑接掌了衡山派掌门之位。",
        ("刘轻舟", "衡山派掌门"),
    )
    assert zh is AnswerLabel.INCORRECT
    en = label_of(
        "Where and when did she die?",
        "She died in Paris on 17 May 1960.",
        "She died in Montevideo on 17 May 1960.",
        ("Paris", "17 May 1960"),
    )
    assert en is AnswerLabel.INCORRECT
    gas = label_of(
        "An excess of which gas can human senses detect?",
        "Carbon dioxide.",
        "Carbon monoxide. People sense an excess of it only when it is too late.",
        ("carbon dioxide",),
    )
    assert gas is AnswerLabel.INCORRECT


def test_a_value_given_with_the_ground_truths_own_wording_is_no_slot_conflict() -> None:
    # a clause listing several facts: "sold USD 27.3 million" is the ground truth's own
    # statement of that value, not a rival of the net-profit keypoint
    gt = (
        "Talvaprin was approved and sold USD 27.3 million, revenue rose to USD 455.7 "
        "million; but net profit fell to USD 38.0 million."
    )
    answer = "Talvaprin was approved and sold USD 27.3 million, revenue rose to USD 455.7 million."
    assert slot_conflict("net profit fell to USD 38.0 million", answer, "", ground_truth=gt) is None
    gt_zh = "合同价3,200万元，工程逾期100天竣工；法院判决锦程支付工程款240万元。"
    answer_zh = "宏达承建锦程办公楼，合同价3,200万元，工程逾期100天竣工。"
    assert slot_conflict("判决锦程支付工程款240万元", answer_zh, "", ground_truth=gt_zh) is None


def test_a_ground_truth_value_put_in_another_slot_is_a_conflict() -> None:
    # USD 5.1 million was *received*; the answer calls it outstanding
    gt = "USD 1.1 million (USD 6.2 million claimed, USD 5.1 million received)."
    answer = "Of the USD 6.2 million claimed, USD 5.1 million was still outstanding."
    found = slot_conflict(
        "USD 1.1 million still outstanding", answer, "How much was unpaid?", ground_truth=gt
    )
    assert found is not None and found.found == "USD 5.1 million"


def test_swapped_attributes_between_two_people_zh() -> None:
    answer = "根据文档：\n- 王建国：对头孢类药物过敏；\n- 李娜：对青霉素过敏。"
    pieces = clauses(answer)
    assert any("王建国" in c and "头孢" in c and "李娜" not in c for c in pieces)
    label = label_of(
        "王建国和李娜分别对哪类药物过敏？",
        "王建国对青霉素过敏，李娜对头孢类药物过敏。",
        answer,
        ("王建国青霉素", "李娜头孢类"),
    )
    assert label is AnswerLabel.INCORRECT


def test_right_attributes_in_a_list_are_covered() -> None:
    label = label_of(
        "王建国和李娜分别对哪类药物过敏？",
        "王建国对青霉素过敏，李娜对头孢类药物过敏。",
        "根据文档：\n- 王建国：对青霉素过敏；\n- 李娜：对头孢类药物过敏。",
        ("王建国青霉素", "李娜头孢类"),
    )
    assert label is AnswerLabel.CORRECT


def test_concise_answer_need_not_repeat_the_question() -> None:
    label = label_of(
        "When was Thor: The Dark World released?",
        "Thor: The Dark World was released on November 8, 2013.",
        "November 8, 2013.",
    )
    assert label is AnswerLabel.CORRECT


def test_derived_difference_is_not_a_conflict_but_a_wrong_one_is() -> None:
    gt = (
        "GreenTech invested $50 million in September 2021; Fabrikon invested $30 million in "
        "July 2021."
    )
    right = (
        "GreenTech: $50 million, September 2021.\nFabrikon: $30 million, July 2021.\n\n"
        "Thus, GreenTech invested $20 million more, but Fabrikon invested two months earlier."
    )
    assert label_of("Compare the two investments.", gt, right) is AnswerLabel.CORRECT
    gt2 = "The recall came on 9 September 2021; the plant opened 48 days later."
    wrong = "The recall came on 9 September 2021; the plant opened about 38 days later."
    assert label_of("How far apart were they?", gt2, wrong) is AnswerLabel.INCORRECT


def test_markdown_table_rows_keep_name_and_value_together() -> None:
    answer = (
        "| Company | Financing | Amount |\n|---|---|---|\n"
        "| National Development Corporation | November 2019 | $2.5 billion |\n"
        "| Fabrikon Manufacturing | August 2021 | $100 million |"
    )
    label = label_of(
        "How much did National Development Corporation and Fabrikon Manufacturing each raise?",
        "National Development Corporation raised $2.5 billion and Fabrikon raised $100 million.",
        answer,
        ("National Development Corporation $2.5 billion", "Fabrikon $100 million"),
    )
    assert label is AnswerLabel.CORRECT


def test_a_rounded_value_marked_approximate_is_no_conflict() -> None:
    gt = "About 34.5% (USD 291.0 million of USD 842.6 million)."
    rounded = "USD 291.0 million of USD 842.6 million, roughly 35% of turnover."
    assert label_of("What share?", gt, rounded) is not AnswerLabel.INCORRECT
    wrong = "USD 291.0 million of USD 842.6 million, that is 45% of turnover."
    assert label_of("What share?", gt, wrong) is AnswerLabel.INCORRECT


# -- two-way comparisons and one entity's amount ------------------------------------------

_RIVERS = "Which river is longer, the Danube or the Rhine?"


def test_reversed_comparison_is_a_conflict_en() -> None:
    gt = "The Danube, at about 2,850 km; the Rhine is about 1,230 km long."
    wrong = "The Rhine is longer, at 1,230 km, while the Danube runs 2,850 km."
    right = "The Danube is longer than the Rhine (2,850 km against 1,230 km)."
    c = choice_conflict(_RIVERS, gt, wrong)
    assert c is not None and c.expected == "the Danube" and c.found == "the Rhine"
    assert choice_conflict(_RIVERS, gt, right) is None
    # the option after "than"/"compared with" is not the answer's pick
    assert choice_conflict(_RIVERS, gt, "Compared with the Rhine, the Danube is longer.") is None
    # a name of several words after "than" is one mention of the compared-against option
    q2 = "Which firm was founded earlier, Halden Shipping Group or Orvik Freight Lines?"
    gt2 = "Orvik Freight Lines, in 1961, before Halden Shipping Group (1975)."
    c2 = choice_conflict(
        q2, gt2, "Halden Shipping Group was founded earlier than Orvik Freight Lines."
    )
    assert c2 is not None and c2.found == "Halden Shipping Group"
    assert label_of(_RIVERS, gt, wrong) is AnswerLabel.INCORRECT


def test_comparison_in_the_opposite_sense_is_not_read_as_a_pick() -> None:
    q = "Who joined the board earlier, Priya Raman or Tomas Lind?"
    # the ground truth opens with the other option and says "later than"
    gt = "Tomas Lind joined in 2019, later than Priya Raman, who joined in 2015."
    assert choice_conflict(q, gt, "Priya Raman joined earlier, in 2015.") is None
    assert choice_conflict(q, "Priya Raman, in 2015.", "Tomas Lind joined earlier.") is not None


def test_reversed_comparison_zh() -> None:
    q = "星河医药和蓝海电子哪家公司的营收更高？"
    gt = "蓝海电子营收为12亿元，高于星河医药的9亿元。"
    c = choice_conflict(q, gt, "星河医药的营收更高，为9亿元。")
    assert c is not None and c.expected == "蓝海电子" and not c.about_time
    assert choice_conflict(q, gt, "蓝海电子更高（12亿元对9亿元）。") is None
    assert choice_conflict(q, gt, "星河医药比蓝海电子营收高。") is not None
    assert choice_conflict(q, gt, "星河医药比蓝海电子营收低。") is None


def test_no_choice_without_two_options_or_a_comparative() -> None:
    assert choice_conflict("Where was the Danube or the Rhine named?", "x", "y") is None
    assert choice_conflict("How long is the Danube?", "2,850 km", "1,230 km") is None


def test_one_entitys_amount_replaced_while_the_other_is_right() -> None:
    q = "How many beds do Harlow General and Eastbrook Clinic have?"
    gt = "Harlow General has 420 beds; Eastbrook Clinic has 420 beds as well."
    wrong = "Harlow General has 420 beds. Eastbrook Clinic has 240 beds."
    c = entity_value_conflict(q, gt, wrong)
    assert c is not None and c.found.startswith("240") and "Eastbrook" in c.entity
    assert entity_value_conflict(q, gt, "Both have 420 beds: Harlow General and Eastbrook.") is None
    assert label_of(q, gt, wrong) is AnswerLabel.INCORRECT
    assert label_of(q, gt, "Harlow General has 420 beds and Eastbrook Clinic has 420 beds.") is (
        AnswerLabel.CORRECT
    )


def test_another_amount_of_another_slot_is_no_conflict() -> None:
    q = "Which had more staff in 2022, Harlow General or Eastbrook Clinic?"
    gt = "Harlow General employed 900 staff; Eastbrook Clinic employed 350 staff."
    # a different slot (beds, not staff) and a declining clause are left alone
    answer = (
        "Harlow General employed 900 staff. Eastbrook Clinic has 120 beds, but its staff "
        "count of 500 is not stated in the documents."
    )
    assert entity_value_conflict(q, gt, answer) is None


def test_hedged_wording_is_only_possibly_correct_unless_the_truth_hedges_too() -> None:
    q = "What does the drug do?"
    gt = "It lowers blood pressure by relaxing the arteries."
    hedged = "It seems to lower blood pressure, probably by relaxing the arteries."
    assert label_of(q, gt, hedged) is AnswerLabel.POSSIBLE_CORRECT
    gt2 = "It may lower blood pressure by relaxing the arteries."
    assert label_of(q, gt2, "It may lower blood pressure by relaxing the arteries.") is (
        AnswerLabel.CORRECT
    )
    # "more likely" is a comparison, not a hedge
    gt3 = "Smokers are more likely to develop the disease."
    assert label_of("Who is at risk?", gt3, "Smokers are more likely to develop it.") is (
        AnswerLabel.CORRECT
    )


# -- abstention or partial abstention ---------------------------------------------------


def test_answering_one_unnamed_part_then_declining_is_a_partial_abstention() -> None:
    # the parts are described, not named, so no question part can be listed: what the
    # answer states of the ground truth decides
    q = "Which grew faster last year: the Danish brewer or the Polish rail operator?"
    gt = "Nordhavn Bryg grew 9.3 %, faster than Koleje Mazur's 4.1 %."
    answer = (
        "Nordhavn Bryg's revenue grew 9.3% last year.\n\n"
        "For the Polish rail operator the documents do not state the growth, so I cannot "
        "say which grew faster."
    )
    assert label_of(q, gt, answer, ("Nordhavn 9.3%", "Mazur 4.1%")) is AnswerLabel.INCORRECT
    # nothing of the ground truth stated: an abstention, however much else it says
    other = (
        "The documents describe Nordhavn Bryg's new bottling line and Koleje Mazur's fleet "
        "of 40 trains.\n\nHowever, neither document gives last year's growth, so I cannot "
        "compare them."
    )
    assert label_of(q, gt, other, ("Nordhavn 9.3%", "Mazur 4.1%")) is AnswerLabel.ABSTAIN


def test_partial_abstention_zh_without_names_in_the_question() -> None:
    q = "两家公司2022年的研发投入分别是多少？"
    gt = "青禾生物研发投入为2.3亿元，岚山电气研发投入为1.1亿元。"
    answer = "青禾生物2022年研发投入为2.3亿元。\n\n至于岚山电气，文档中没有提及其研发投入，因此无法回答。"
    assert label_of(q, gt, answer) is AnswerLabel.INCORRECT
    refuse = "文档介绍了两家公司的主营业务。\n\n但文档中没有提及两家公司的研发投入，因此无法回答。"
    assert label_of(q, gt, refuse) is AnswerLabel.ABSTAIN


def test_a_number_in_words_or_digits_is_the_same_answer() -> None:
    q = "How many players are on the field for one baseball team?"
    assert label_of(q, "nine", "9") is AnswerLabel.CORRECT
    assert label_of(q, "9 players", "There are nine players on the field.") is AnswerLabel.CORRECT
    assert label_of(q, "nine", "eight") is AnswerLabel.INCORRECT


def test_all_keypoints_stated_needs_no_other_detail_of_the_ground_truth() -> None:
    q = "When were llamas first brought to Norway, and from where?"
    gt = "In 1981, six llamas were imported from Chile to be studied at the University of Tromsø."
    assert label_of(q, gt, "In 1981, from Chile.", ("1981", "Chile")) is AnswerLabel.CORRECT
    assert label_of(q, gt, "In 1981, from Peru.", ("1981", "Chile")) is AnswerLabel.INCORRECT
    # without keypoints the ground truth's other facts still count
    assert label_of(q, gt, "In 1981, from Chile.") is not AnswerLabel.CORRECT


def test_a_closing_remark_after_a_complete_list_is_no_conflict() -> None:
    q = "Summarize Velora Foods' main events of 2022."
    gt = "Velora raised $80 million in March and opened a plant in Leeds in July."
    answer = (
        "Velora's 2022:\n\n1. March: a financing round raising $80 million.\n"
        "2. July: a new plant in Leeds.\n\n"
        "Together these lifted revenue to $300 million."
    )
    assert label_of(q, gt, answer, ("raised $80 million", "plant in Leeds")) is (
        AnswerLabel.CORRECT
    )
    # a reasoning answer whose marked conclusion states another amount still conflicts
    wrong = answer.replace(
        "Together these lifted revenue to $300 million.", "Thus, Velora raised $90 million."
    )
    assert label_of(q, gt, wrong, ("raised $80 million", "plant in Leeds")) is AnswerLabel.INCORRECT


@pytest.mark.parametrize(
    ("gt", "answer", "label"),
    [
        # evidential: the fact attributed to the documents, the answer still right
        ("The bond raised $100 million.", "It appears the bond raised $100 million.", "correct"),
        ("净利润为800万元。", "净利润似乎为800万元。", "correct"),
        ("The bond raised $100 million.", "The bond seems to have raised $100 million.", "correct"),
        # epistemic: the answer doubts the fact itself
        (
            "The bond raised $100 million.",
            "I think the bond raised $100 million.",
            "possible_correct",
        ),
        ("净利润为800万元。", "净利润可能为800万元。", "possible_correct"),
    ],
)
def test_only_doubt_about_the_fact_downgrades_a_right_answer(
    gt: str, answer: str, label: str
) -> None:
    assert label_of("How much?", gt, answer) is AnswerLabel(label)


@pytest.mark.parametrize(
    ("query", "gt", "wrong", "right"),
    [
        (
            # options named in another word order, or by part of them
            "南京国际象棋大赛首届比赛与佩内塔首度跻身单打世界排名前十，哪一件事更早？",
            "首届南京国际象棋大赛（2008年12月）更早；佩内塔在2010年法网后才首度跻身单打世界前十。",
            "佩内塔在2010年法网后首度跻身单打世界前十，而首届南京国际象棋大赛在2008年12月举行，"
            "所以佩内塔跻身前十更早。",
            "首届南京国际象棋大赛于2008年12月举行，比佩内塔跻身前十更早。",
        ),
        (
            # "是先……，还是先……": the options after the comma
            "罗保铭是先担任共青团天津市委书记，还是先担任天津市大港区委书记？",
            "先任共青团天津市委书记（1985年11月），后任大港区委书记（1994年10月）。",
            "罗保铭1994年10月任大港区委书记，之后调任共青团天津市委书记。"
            "综上所述，他是先担任天津市大港区委书记。",
            "他先担任共青团天津市委书记（1985年），1994年才任大港区委书记。",
        ),
    ],
)
def test_chinese_comparison_picks_read_by_the_options_characters(
    query: str, gt: str, wrong: str, right: str
) -> None:
    c = choice_conflict(query, gt, wrong)
    assert c is not None and c.about_time
    assert choice_conflict(query, gt, right) is None
