"""Chinese entity detection for the answer rewrites, and E12 vs invented facts."""

from __future__ import annotations

import random

from ragtriage.calibrate._rewrite import (
    RewriteInput,
    _zh_names,
    fabricate_entity,
    swap_entities,
    wrong_entity,
)
from ragtriage.diagnosis.facts import extract_entities
from ragtriage.diagnosis.types_rules import rule_type_evidence
from ragtriage.records import Chunk, ErrorType
from test_types_rules import fired, gen_ctx

CONTEXT = (
    "原告周文涛与被告青禾建材有限公司签订供货合同。被告青禾建材有限公司未按期交货，"
    "原告周文涛遂向临川市中级人民法院起诉。远山物流有限公司负责运输。"
)


def _inp(gt: str, query: str) -> RewriteInput:
    chunk = Chunk(chunk_id="c#0", doc_id="c", text=CONTEXT, start=0, end=len(CONTEXT), index=0)
    return RewriteInput(
        query=query,
        ground_truth=gt,
        keypoints=(),
        references=(),
        language="zh",
        context=(chunk,),
        known_texts=(CONTEXT, query),
    )


def test_role_words_and_verbs_are_not_part_of_chinese_names() -> None:
    assert extract_entities("原告周文涛诉被告青禾建材有限公司") == ["周文涛", "青禾建材有限公司"]
    assert extract_entities("东岭药业完成收购北辰生物科技有限公司60%股权") == [
        "北辰生物科技有限公司"
    ]
    # descriptors, not names
    assert extract_entities("该上市公司的子公司与保险公司达成和解") == []
    # a function word after a two-character name is not part of it
    assert extract_entities("董事长孙立以个人名义担保") == ["孙立"]


def test_zh_names_kinds_and_no_fragments() -> None:
    names = [(n.text, n.kind) for n in _zh_names(CONTEXT)]
    assert ("周文涛", "person") in names
    assert ("青禾建材有限公司", "org") in names
    assert ("临川市中级人民法院", "court") in names
    assert _zh_names("被告变更设计后不承担支付工程款的责任。") == []
    assert [(n.text, n.kind) for n in _zh_names("患者李某在南岭县人民医院就诊。")] == [
        ("李某", "person"),
        ("南岭县人民医院", "hospital"),
    ]


def test_chinese_rewrites_skip_a_base_without_real_names() -> None:
    inp = _inp("被告变更设计后不承担支付工程款的责任。", "被告是否需要支付工程款？")
    for fn in (wrong_entity, swap_entities, fabricate_entity):
        assert isinstance(fn(inp, random.Random(1)), str)


def test_chinese_wrong_entity_uses_a_company_of_the_context() -> None:
    fault = wrong_entity(
        _inp("青禾建材有限公司未按期交货。", "哪家公司没有按期交货？"), random.Random(0)
    )
    assert not isinstance(fault, str)
    assert fault.answer == "远山物流有限公司未按期交货。"


def test_chinese_swap_of_two_persons() -> None:
    ctx_gt = "原告周文涛起诉被告韩立新。"
    chunk_text = "原告周文涛与被告韩立新发生纠纷。"
    chunk = Chunk(chunk_id="c#0", doc_id="c", text=chunk_text, start=0, end=16, index=0)
    inp = RewriteInput(
        query="谁起诉了谁？",
        ground_truth=ctx_gt,
        keypoints=(),
        references=(),
        language="zh",
        context=(chunk,),
        known_texts=(chunk_text,),
    )
    fault = swap_entities(inp, random.Random(0))
    assert not isinstance(fault, str)
    assert fault.answer == "原告韩立新起诉被告周文涛。"


def test_e12_is_weakened_when_the_answer_invents_a_name() -> None:
    query = "Which two engineers signed off the bridge inspection?"
    gt = "Hannah Orlov and Pieter Vance signed off the inspection."
    contexts = [
        "The bridge inspection was signed off by Hannah Orlov.",
        "Pieter Vance co-signed the inspection report in May.",
    ]
    honest = gen_ctx(query, "Hannah Orlov signed off the inspection.", gt, contexts)
    invented = gen_ctx(
        query, "Hannah Orlov and Marguerite Ashdown signed off the inspection.", gt, contexts
    )
    honest_e12 = next(e.score for e in rule_type_evidence(honest) if e.error_type is ErrorType.E12)
    invented_scores = {e.error_type: e.score for e in rule_type_evidence(invented)}
    assert invented_scores.get(ErrorType.E12, 0.0) < honest_e12
    assert ErrorType.E10 in fired(invented)
    assert invented_scores[ErrorType.E10] > invented_scores.get(ErrorType.E12, 0.0)
