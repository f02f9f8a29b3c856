"""Fault injection (calibrate/inject.py): bases, every injector, rewrites, determinism.

A small hand-made EN + ZH corpus (three English annual reports, two Chinese ones) runs
through the real pipeline with the hashing embedder (fast, no model) and the offline
extractive generator.
"""

from __future__ import annotations

import asyncio
import random
import re
from dataclasses import replace

import pytest

from ragtriage.calibrate import _rewrite, _upstream
from ragtriage.calibrate._names import anaphor_for, find_mentions, names_in, query_entities
from ragtriage.calibrate._parts import PipelineParts
from ragtriage.calibrate._rewrite import RewriteInput
from ragtriage.calibrate.inject import (
    INJECTED_KEY,
    INJECTORS,
    LLM_INJECTORS,
    Base,
    InjectedCase,
    Injector,
    LLMRewriter,
    build_bases,
    inject,
    injected_label,
    strip_label,
)
from ragtriage.config import DiagnosisConfig, PipelineConfig
from ragtriage.data import Dataset
from ragtriage.diagnosis.answer_eval import evaluate_rules, needs_diagnosis
from ragtriage.diagnosis.facts import date_order, extract_dates, extract_quantities
from ragtriage.groundtruth import gt_chunks_from_references
from ragtriage.llm import LLMRunner, ScriptedLLM
from ragtriage.records import AnswerLabel, Chunk, Document, ErrorType, Example, Stage, Trace
from ragtriage.text import content_tokens

# --------------------------------------------------------------------------- corpus

ACME = """# Acme Robotics Ltd — Annual Report 2021

## Company Overview

Acme Robotics Ltd is an industrial automation company headquartered in Leeds. It was founded in 1998 by Clara Whitfield and employs 1,200 people across four factories. The company builds welding robots and conveyor systems for car makers.

## Major Events

Acme Robotics Ltd completed the acquisition of Bolt Systems on 3 March 2021 for USD 40 million. Bolt Systems makes vision sensors for quality control lines.

Chief Financial Officer Jane Porter resigned on 30 June 2021. Mark Ellison, previously head of treasury, took over as CFO on 1 September 2021.

## Financial Performance

Revenue for 2021 reached USD 120.5 million, an increase of 8.2% over 2020. Net profit was USD 9.4 million. The order backlog stood at USD 75 million at year-end.

## Products

The company sells three product lines: the Weldmaster arm, the Flowline conveyor and the Vista inspection cell. The Weldmaster arm accounts for about half of all unit sales, and a new model with a longer reach went on sale in the autumn.

## Employees and Sustainability

Staff turnover fell to 7% during the year. All four factories now run on renewable electricity, and water use per robot built dropped by a fifth. A training academy for apprentices opened in Sheffield in January.

## Risks

Steel prices and the supply of microchips remain the main risks. The company holds six months of chip inventory and has signed a second supplier contract in Taiwan.

## Outlook

For 2022 the company expects revenue growth of 5% and plans to open a service centre in Poland.
"""
BIRCH = """# Birchwood Foods Inc — Annual Report 2021

## Company Overview

Birchwood Foods Inc is a bakery and snack producer based in Austin. It was founded in 2005 by Tom Harding and runs six bakeries in Texas.

## Major Events

Birchwood Foods Inc completed the acquisition of Maple Mills on 12 May 2021 for USD 25 million. Maple Mills supplies organic flour to regional bakeries.

Chief Financial Officer Olivia Grant retired on 31 March 2021 and was succeeded by Peter Novak on 1 April 2021.

## Financial Performance

Revenue for 2021 reached USD 88.1 million, an increase of 4.5% over 2020. Net profit was USD 5.2 million.
"""
DUNMORE = """# Dunmore Logistics plc — Annual Report 2021

## Company Overview

Dunmore Logistics plc operates warehouses and truck fleets in Scotland. It was founded in 1979 by Alan Dunmore.

## Major Events

Dunmore Logistics plc completed the acquisition of Harbour Freight on 20 October 2021 for USD 60 million. The company also opened a cold store in Glasgow.

## Financial Performance

Revenue for 2021 reached USD 210.0 million, an increase of 6.1% over 2020.
"""
HJ = """# 华锦新材料股份有限公司2021年年度报告

## 公司概况

华锦新材料股份有限公司成立于2003年，总部位于江苏常州，主要生产锂电池隔膜。公司现有员工1850人。

## 重大事项

2021年1月20日，公司完成非公开发行股票，募集资金人民币12亿元。2021年4月16日，华锦新材料完成对常州恒宇科技有限公司70%股权的收购，交易金额为人民币4.2亿元。2021年9月8日，董事长陈国栋因年龄原因辞职，董事会选举刘思远为新任董事长。

## 财务表现

2021年公司营业收入为人民币35.6亿元，同比增长18.5%。净利润为人民币4.1亿元。
"""
TF = """# 天丰食品集团2021年年度报告

## 公司概况

天丰食品集团成立于1996年，总部位于山东济南，主要生产面粉和速冻食品。

## 重大事项

2021年6月3日，天丰食品集团完成对济南麦香面业有限公司的收购，交易金额为人民币2.8亿元。

## 财务表现

2021年公司营业收入为人民币52.3亿元，同比增长9.1%。
"""

YH = """# 远航冷链2021年年度报告

## 公司概况

远航冷链成立于2008年，总部位于浙江宁波，主要从事冷链运输。

## 重大事项

2021年3月9日，远航冷链完成对宁波海鲜仓储的收购，交易金额为人民币1.6亿元。
"""

DOCS = (
    Document(doc_id="en-acme", text=ACME, metadata={"domain": "finance"}),
    Document(doc_id="en-birch", text=BIRCH, metadata={"domain": "finance"}),
    Document(doc_id="en-dunmore", text=DUNMORE, metadata={"domain": "finance"}),
    Document(doc_id="zh-hj", text=HJ, metadata={"domain": "finance"}),
    Document(doc_id="zh-tf", text=TF, metadata={"domain": "finance"}),
    Document(doc_id="zh-yh", text=YH, metadata={"domain": "finance"}),
)
EXAMPLES = (
    Example(
        example_id="en-1",
        query="At what price did Acme Robotics acquire Bolt Systems?",
        answer="Acme Robotics Ltd acquired Bolt Systems on 3 March 2021 for USD 40 million.",
        doc_ids=["en-acme"],
        references=[
            "Acme Robotics Ltd completed the acquisition of Bolt Systems on 3 March 2021 "
            "for USD 40 million."
        ],
        keypoints=["USD 40 million", "3 March 2021"],
        language="en",
    ),
    Example(
        example_id="en-2",
        query="Who founded Acme Robotics, and what was the company's revenue in 2021?",
        answer="Clara Whitfield founded Acme Robotics Ltd in 1998; its revenue in 2021 was "
        "USD 120.5 million.",
        doc_ids=["en-acme"],
        references=[
            "It was founded in 1998 by Clara Whitfield and employs 1,200 people across four "
            "factories.",
            "Revenue for 2021 reached USD 120.5 million, an increase of 8.2% over 2020.",
        ],
        keypoints=["Clara Whitfield", "1998", "USD 120.5 million"],
        language="en",
    ),
    Example(
        example_id="en-3",
        query="When did Acme Robotics change its CFO in 2021?",
        answer="Jane Porter resigned on 30 June 2021, and Mark Ellison took over as CFO on "
        "1 September 2021.",
        doc_ids=["en-acme"],
        references=[
            "Chief Financial Officer Jane Porter resigned on 30 June 2021.",
            "Mark Ellison, previously head of treasury, took over as CFO on 1 September 2021.",
        ],
        keypoints=["30 June 2021", "1 September 2021", "Mark Ellison"],
        language="en",
    ),
    Example(
        example_id="en-4",
        query="Who chairs the board of Acme Robotics?",
        answerable=False,
        doc_ids=["en-acme"],
        language="en",
    ),
    Example(
        example_id="zh-1",
        query="华锦新材料2021年收购了哪家公司？交易金额是多少？",
        answer="华锦新材料于2021年4月16日收购常州恒宇科技有限公司70%股权，交易金额为人民币4.2亿元。",
        doc_ids=["zh-hj"],
        references=[
            "2021年4月16日，华锦新材料完成对常州恒宇科技有限公司70%股权的收购，交易金额为人民币4.2亿元。"
        ],
        keypoints=["常州恒宇科技有限公司", "4.2亿元"],
        language="zh",
    ),
    Example(
        example_id="zh-2",
        query="华锦新材料的审计机构是哪家会计师事务所？",
        answerable=False,
        doc_ids=["zh-hj"],
        language="zh",
    ),
)
DATASET = Dataset(name="tiny", documents=DOCS, examples=EXAMPLES)
CONFIG = PipelineConfig.model_validate(
    {
        "chunking": {"strategy": "fixed", "size": 40, "overlap": 5, "unit": "auto", "cjk_size": 80},
        "embedding": {"model": "hash"},
        "retrieval": {"mode": "dense", "top_k": 4},
        "rerank": {"method": "lexical", "top_k": 3},
        "generation": {"backend": "extractive"},
    }
)
#: short news items that compete with a diluted (underchunked) annual report
NEWS = (
    "Acme Robotics and Bolt Systems were both named in a trade magazine list of robot suppliers.",
    "A columnist asked whether Acme Robotics would ever buy a sensor maker such as Bolt Systems.",
    "Bolt Systems showed a new camera at a fair where Acme Robotics also had a stand.",
    "Investors in Acme Robotics debated the price of robot arms at the annual meeting.",
)


def tiny_dataset() -> Dataset:
    return DATASET


def tiny_config() -> PipelineConfig:
    return CONFIG


@pytest.fixture(scope="module")
def parts() -> PipelineParts:
    return PipelineParts.build(CONFIG, DATASET)


@pytest.fixture(scope="module")
def bases(parts: PipelineParts) -> dict[str, Base]:
    found, _ = asyncio.run(build_bases(parts, EXAMPLES))
    return {b.trace.trace_id: b for b in found}


def _injector(name: str) -> Injector:
    return next(i for i in (*INJECTORS, *LLM_INJECTORS) if i.name == name)


async def _one(parts: PipelineParts, base: Base, name: str, seed: int = 0) -> InjectedCase:
    cases, counts = await inject([base], parts, injectors=[_injector(name)], seed=seed)
    assert len(cases) == 1, counts[name].to_dict()
    return cases[0]


def _gt(trace: Trace) -> list[str]:
    ids, unlocated = gt_chunks_from_references(trace.example, trace.gt_doc_chunks)
    assert not unlocated
    return ids


def _judged_wrong(trace: Trace) -> bool:
    label = evaluate_rules(trace.example, trace.answer, DiagnosisConfig()).label
    return label is not None and needs_diagnosis(trace.example, label)


# --------------------------------------------------------------------------- bases


def test_bases_are_healthy_and_carry_the_oracle_answer(bases: dict[str, Base]) -> None:
    assert {"en-1", "en-3", "en-4", "zh-1", "zh-2"} <= set(bases)
    for b in bases.values():
        ex = b.trace.example
        if ex.answerable:
            assert b.trace.answer == ex.answer
            assert b.gt_ids and set(b.gt_ids) <= set(b.trace.context)
            assert set(b.trace.citations) <= set(b.gt_ids)
        else:
            assert b.trace.answer in ("I don't know.", "我不知道。")
            assert b.gt_ids == ()
        assert INJECTED_KEY not in b.trace.metadata
    assert len(bases["en-3"].gt_ids) == 2


async def test_generated_answer_mode_keeps_only_correct_answers(parts: PipelineParts) -> None:
    found, summary = await build_bases(parts, EXAMPLES, answer_mode="generated")
    assert summary.answer_mode == "generated"
    assert summary.examples == len(EXAMPLES)
    for b in found:
        label = evaluate_rules(b.trace.example, b.trace.answer, DiagnosisConfig()).label
        expected = AnswerLabel.CORRECT if b.trace.example.answerable else AnswerLabel.ABSTAIN
        assert label is expected
    skipped = sum(summary.skipped.values())
    assert len(found) + skipped == len(EXAMPLES)


async def test_unknown_answer_mode_is_rejected(parts: PipelineParts) -> None:
    with pytest.raises(ValueError, match="answer mode"):
        await build_bases(parts, EXAMPLES, answer_mode="bogus")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- chunking


async def test_e1_overchunking_cuts_a_reference_and_loses_query_words(
    parts: PipelineParts, bases: dict[str, Base]
) -> None:
    base = bases["en-3"]
    case = await _one(parts, base, "E1-overchunk")
    t = case.trace
    acme_before = [c for c in base.trace.gt_doc_chunks if c.doc_id == "en-acme"]
    acme_after = [c for c in t.gt_doc_chunks if c.doc_id == "en-acme"]
    assert len(acme_after) > 3 * len(acme_before)
    cut = []
    for ref in t.example.references:
        probe = t.example.model_copy(update={"references": [ref]})
        ids, _ = gt_chunks_from_references(probe, t.gt_doc_chunks)
        cut.append(len(ids))
    assert max(cut) >= 2  # a reference sentence now spans several chunks
    gt = _gt(t)
    cm = t.chunk_map()
    assert not any("Acme" in cm[g].text for g in gt)  # the pieces lost the entity
    assert sum(1 for g in gt if g in t.context) <= len(gt) / 2
    retrieved = {h.chunk_id for h in t.retrieved}
    assert not [g for g in gt if g in retrieved and g not in t.context]
    assert _judged_wrong(t)


async def test_e2_underchunking_dilutes_the_gt_chunk_out_of_retrieval() -> None:
    docs = (DOCS[0], *(Document(doc_id=f"news-{i}", text=t) for i, t in enumerate(NEWS)))
    ds = Dataset(name="e2", documents=docs, examples=(EXAMPLES[0],))
    parts = PipelineParts.build(CONFIG, ds)
    found, _ = await build_bases(parts, ds.examples)
    assert len(found) == 1
    base = found[0]
    case = await _one(parts, base, "E2-underchunk")
    t = case.trace
    gt = _gt(t)
    before = sum(len(c.text) for c in base.trace.gt_doc_chunks if c.chunk_id in base.gt_ids)
    after = sum(len(c.text) for c in t.gt_doc_chunks if c.chunk_id in gt)
    assert after >= 2.5 * before
    assert not {h.chunk_id for h in t.retrieved} & set(gt)
    assert case.stage is Stage.CHUNKING and case.error_type is ErrorType.E2


@pytest.mark.parametrize(("base_id", "entity"), [("en-3", "Acme Robotics"), ("zh-1", "华锦新材料")])
async def test_e3_the_gt_chunk_refers_to_the_entity_by_an_anaphor(
    parts: PipelineParts, bases: dict[str, Base], base_id: str, entity: str
) -> None:
    base = bases[base_id]
    cases, counts = await inject([base], parts, injectors=[_injector("E3-anaphora")])
    if not cases:
        # nothing is kept when the faulty corpus still puts the evidence in front of the
        # generator: zh-1's GT chunk may still be retrieved; in en-3 one small chunk
        # holds both reference sentences whole and reaches the context
        assert counts["E3-anaphora"].not_applicable == 1
        found = await _upstream.split_anaphora(base, parts, random.Random(0))
        assert isinstance(found, str)
        if base_id == "en-3":
            assert found == "every reference sentence is still held whole by a chunk of the context"
        return
    t = cases[0].trace
    gt = _gt(t)
    cm = t.chunk_map()
    assert gt and not any(entity in cm[g].text for g in gt)
    assert any(entity in c.text for c in t.gt_doc_chunks)  # still named elsewhere
    assert all(entity not in r for r in t.example.references)  # references follow the text
    assert sum(1 for g in gt if g in t.context) <= len(gt) / 2
    retrieved = {h.chunk_id for h in t.retrieved}
    assert not [g for g in gt if g in retrieved and g not in t.context]


def test_e3_rewrite_of_a_chinese_gt_chunk() -> None:
    text = "华锦新材料股份有限公司成立于2003年。2021年4月16日，华锦新材料完成收购。"
    spans = find_mentions(text, "华锦新材料")
    assert [text[s:e] for s, e in spans] == ["华锦新材料股份有限公司", "华锦新材料"]
    assert anaphor_for(text, spans[1], "org") == "该公司"
    assert query_entities("华锦新材料2021年收购了哪家公司？", text[:20]) == ["华锦新材料"]


def test_anaphors_in_english() -> None:
    text = "Revenue rose. Dr. Sarah Quinn treated the patient. Halvorsen's fleet grew."
    quinn = find_mentions(text, "Sarah Quinn")
    assert [text[s:e] for s, e in quinn] == ["Dr. Sarah Quinn"]
    assert anaphor_for(text, quinn[0]) == "The doctor"
    halv = find_mentions(text, "Halvorsen")
    assert anaphor_for(text, halv[0], "org") == "The company's"
    assert [n.text for n in names_in("## Financial Performance\nJane Porter left.")] == [
        "Jane Porter"
    ]


# --------------------------------------------------------------------------- retrieval


async def test_e4_retriever_misses_the_gt_chunks(
    parts: PipelineParts, bases: dict[str, Base]
) -> None:
    base = bases["en-1"]
    case = await _one(parts, base, "E4-missed")
    assert not {h.chunk_id for h in case.trace.retrieved} & set(base.gt_ids)
    assert [h.rank for h in case.trace.retrieved] == list(range(1, len(case.trace.retrieved) + 1))
    scores = [h.score for h in case.trace.retrieved]
    assert scores == sorted(scores, reverse=True)
    # two GT chunks: at least half are missed, so at most half reach the generator
    two = await _one(parts, bases["en-3"], "E4-missed")
    kept = [g for g in bases["en-3"].gt_ids if g in {h.chunk_id for h in two.trace.retrieved}]
    assert len(kept) <= 1


async def test_e5_retrieval_is_filled_from_the_right_document(
    parts: PipelineParts, bases: dict[str, Base]
) -> None:
    base = bases["en-1"]
    case = await _one(parts, base, "E5-same-document")
    hits = case.trace.retrieved
    assert not {h.chunk_id for h in hits} & set(base.gt_ids)
    assert all(h.doc_id == "en-acme" for h in hits[:3])


async def test_e6_keyword_drift_to_another_entity(
    parts: PipelineParts, bases: dict[str, Base]
) -> None:
    base = bases["zh-1"]
    case = await _one(parts, base, "E6-keyword-drift")
    hits = case.trace.retrieved
    assert hits and all(h.doc_id != "zh-hj" for h in hits)
    cm = case.trace.chunk_map()
    query = set(content_tokens(base.trace.example.query))
    for h in hits[:2]:  # led by keyword matches about another company
        text = cm[h.chunk_id].text
        assert "华锦" not in text and len(set(content_tokens(text)) & query) >= 2


# --------------------------------------------------------------------------- reranking


async def test_e7_reranker_cuts_a_retrieved_gt_chunk(
    parts: PipelineParts, bases: dict[str, Base]
) -> None:
    base = bases["en-1"]
    case = await _one(parts, base, "E7-rerank-cut")
    t = case.trace
    gt = base.gt_ids[0]
    assert gt in {h.chunk_id for h in t.retrieved}
    assert gt not in {h.chunk_id for h in t.reranked} and gt not in t.context
    assert t.retrieved == base.trace.retrieved  # retrieval itself untouched


async def test_e8_noise_ranked_above_the_surviving_gt_chunk(
    parts: PipelineParts, bases: dict[str, Base]
) -> None:
    base = bases["en-3"]
    case = await _one(parts, base, "E8-rerank-noise")
    t = case.trace
    ranks = {h.chunk_id: h.rank for h in t.reranked}
    kept = [g for g in base.gt_ids if g in ranks]
    cut = [g for g in base.gt_ids if g not in ranks]
    assert len(kept) == 1 and len(cut) == 1
    assert ranks[kept[0]] == len(t.reranked) > 1
    assert cut[0] in {h.chunk_id for h in t.retrieved}
    above = [h for h in t.reranked if h.rank < ranks[kept[0]]]
    assert all(h.chunk_id not in base.gt_ids for h in above)
    # one GT chunk: E8 cannot leave at most half reaching the generator
    _, counts = await inject([bases["en-1"]], parts, injectors=[_injector("E8-rerank-noise")])
    assert counts["E8-rerank-noise"].reasons == {"needs two or more ground-truth chunks": 1}


# --------------------------------------------------------------------------- rewrites


def _inp(base: Base) -> RewriteInput:
    from ragtriage.calibrate.inject import _rewrite_input

    return _rewrite_input(base)


def test_e9_answers_an_unanswerable_question_from_the_context(bases: dict[str, Base]) -> None:
    for bid in ("en-4", "zh-2"):
        inp = _inp(bases[bid])
        fault = _rewrite.answer_unanswerable(inp, random.Random(0))
        assert not isinstance(fault, str)
        assert any(" ".join(fault.answer.split()) in " ".join(c.text.split()) for c in inp.context)
        assert fault.citations


def test_e10_invents_names_absent_from_the_trace(bases: dict[str, Base]) -> None:
    inp = _inp(bases["en-3"])
    fault = _rewrite.fabricate_entity(inp, random.Random(0))
    assert not isinstance(fault, str)
    assert "Jane Porter" not in fault.answer and "Mark Ellison" not in fault.answer
    new_names = [n.text for n in names_in(fault.answer)]
    assert new_names and not any(n in t for n in new_names for t in inp.known_texts)
    zh = _rewrite.fabricate_entity(_inp(bases["zh-1"]), random.Random(0))
    assert not isinstance(zh, str) and "常州恒宇" not in zh.answer
    # the answer's only names are the question's: nothing to fabricate
    assert isinstance(_rewrite.fabricate_entity(_inp(bases["en-1"]), random.Random(0)), str)


def test_e11_general_knowledge_ignores_the_context(bases: dict[str, Base]) -> None:
    for bid in ("en-1", "zh-1"):
        inp = _inp(bases[bid])
        fault = _rewrite.general_knowledge(inp, random.Random(0))
        assert not isinstance(fault, str)
        assert not re.search(r"\d", fault.answer)
        assert not names_in(fault.answer)
        assert fault.citations == ()


def test_e12_keeps_only_part_of_a_multi_part_answer(bases: dict[str, Base]) -> None:
    single = _inp(bases["en-3"])
    assert (
        _rewrite.partial_answer(single, random.Random(0)) == "the question asks for a single thing"
    )
    inp = replace(single, query="When did Acme Robotics' CFO resign, and who took over when?")
    fault = _rewrite.partial_answer(inp, random.Random(0))
    assert not isinstance(fault, str)
    assert fault.answer.rstrip(".") in inp.ground_truth
    assert len(fault.answer) < len(inp.ground_truth)
    zh_inp = _inp(bases["zh-1"])
    zh = _rewrite.partial_answer(zh_inp, random.Random(0))  # 哪家公司？……多少？ asks two things
    assert not isinstance(zh, str) and zh.answer.rstrip("。") in zh_inp.ground_truth
    one = RewriteInput("Which city?", "Paris; the capital.", (), (), "en", (), ())
    assert _rewrite.partial_answer(one, random.Random(0)) == "the question asks for a single thing"


def test_e13_attributes_the_fact_to_another_entity_of_the_context(
    bases: dict[str, Base],
) -> None:
    inp = _inp(bases["en-3"])
    fault = _rewrite.wrong_entity(inp, random.Random(0))
    assert not isinstance(fault, str)
    context = " ".join(c.text for c in inp.context)
    swapped_in = [n.text for n in names_in(fault.answer) if n.text not in inp.ground_truth]
    assert swapped_in and all(n in context for n in swapped_in)
    swap = _rewrite.swap_entities(inp, random.Random(0))
    assert not isinstance(swap, str)
    assert swap.answer.index("Mark Ellison") < swap.answer.index("Jane Porter")


def test_e14_answers_another_aspect_with_a_true_context_sentence(
    bases: dict[str, Base],
) -> None:
    for bid in ("en-1", "zh-1"):
        inp = _inp(bases[bid])
        fault = _rewrite.other_aspect(inp, random.Random(0))
        assert not isinstance(fault, str)
        assert any(fault.answer in " ".join(c.text.split()) for c in inp.context)
        assert all(fault.answer not in r for r in inp.references)


def test_e15_dates_swapped_or_moved_out_of_order(bases: dict[str, Base]) -> None:
    inp = _inp(bases["en-3"])
    swap = _rewrite.swap_dates(inp, random.Random(0))
    assert not isinstance(swap, str)
    assert swap.answer.index("1 September 2021") < swap.answer.index("30 June 2021")
    shift = _rewrite.shift_date(inp, random.Random(0))
    assert not isinstance(shift, str)
    dates = extract_dates(shift.answer)
    assert (dates[0].year, dates[0].month) > (dates[1].year, dates[1].month)  # order reversed
    # a lone date moved is a wrong value (E16 to the judge), not a wrong order
    zh = _rewrite.shift_date(_inp(bases["zh-1"]), random.Random(0))
    assert isinstance(zh, str) and "no two dates" in zh


def test_e15_shift_puts_the_later_date_first_with_partial_dates() -> None:
    # "12 July" (no year) is after "11 July 2022": the shift must move 12 July before
    # 11 July, not move 11 July 2022 to a month that keeps the order
    for gt in (
        "About 17 hours: he arrived at 11:20 am on 11 July 2022 and it resolved at 4:00 am "
        "on 12 July.",
        "他于2022年7月11日入院，2022年9月3日出院。",
    ):
        inp = RewriteInput(
            query="When?",
            ground_truth=gt,
            keypoints=(),
            references=(gt,),
            language="zh" if "入院" in gt else "en",
            context=(),
            known_texts=(gt,),
        )
        fault = _rewrite.shift_date(inp, random.Random(0))
        assert not isinstance(fault, str), fault
        first, second = extract_dates(fault.answer)[:2]
        assert date_order(first, second) == 1, fault.answer  # order reversed


def test_e16_alters_a_number_keeping_its_unit(bases: dict[str, Base]) -> None:
    inp = _inp(bases["en-1"])
    fault = _rewrite.alter_number(inp, random.Random(0))
    assert not isinstance(fault, str)
    values = [q for q in extract_quantities(fault.answer) if q.unit == "usd"]
    assert values and values[0].value != 40_000_000
    assert "3 March 2021" in fault.answer
    zh = _rewrite.alter_number(_inp(bases["zh-1"]), random.Random(0))
    assert not isinstance(zh, str)
    assert "亿元" in zh.answer and zh.answer != inp.ground_truth


# --------------------------------------------------------------------------- inject


async def test_inject_produces_valid_labelled_traces_and_leaves_bases_untouched(
    parts: PipelineParts, bases: dict[str, Base]
) -> None:
    chosen = list(bases.values())
    before = [b.trace.model_dump() for b in chosen]
    cases, counts = await inject(chosen, parts, seed=3)
    assert [b.trace.model_dump() for b in chosen] == before
    assert cases
    ids = [c.trace.trace_id for c in cases]
    assert len(set(ids)) == len(ids)
    by_name = {i.name: i for i in INJECTORS}
    for c in cases:
        again = Trace.model_validate_json(c.trace.to_json())
        assert again == c.trace
        label = injected_label(c.trace)
        assert label == (c.error_type, c.injector, c.base_trace_id)
        meta = c.trace.metadata[INJECTED_KEY]
        assert isinstance(meta, dict)
        assert meta["stage"] == c.error_type.stage.value
        assert by_name[c.injector].error_type is c.error_type
        # the id says nothing about the fault
        assert c.injector not in c.trace.trace_id and c.error_type.value not in c.trace.trace_id
        assert _judged_wrong(c.trace)
        visible = strip_label(c.trace)
        assert INJECTED_KEY not in visible.metadata and visible.answer == c.trace.answer
    for name, tally in counts.items():
        applicable = sum(
            1 for b in chosen if (by_name[name].needs == "answerable") == b.trace.example.answerable
        )
        assert tally.applied + tally.not_applicable + tally.dropped_still_correct == applicable
        assert sum(tally.reasons.values()) == tally.not_applicable + tally.dropped_still_correct
    # every stage is represented
    assert {c.stage for c in cases} == set(Stage)


async def test_inject_is_deterministic_for_a_seed(
    parts: PipelineParts, bases: dict[str, Base]
) -> None:
    chosen = [bases["en-3"], bases["zh-1"]]
    a, _ = await inject(chosen, parts, seed=7)
    b, _ = await inject(chosen, parts, seed=7)

    def content(cases: list[InjectedCase]) -> list[dict[str, object]]:
        return [c.trace.model_dump(exclude={"stages"}) for c in cases]  # latencies vary

    assert content(a) == content(b)
    c, _ = await inject(chosen, parts, seed=8)
    assert [x.trace.trace_id for x in c] != [x.trace.trace_id for x in a]


async def test_llm_rewriter_asks_for_the_mistake(
    parts: PipelineParts, bases: dict[str, Base]
) -> None:
    wrong = "Acme Robotics Ltd paid USD 55 million for Bolt Systems."
    llm = ScriptedLLM({r"Mistake to make: Get a number wrong": wrong, r".": "Answer: "})
    runner = LLMRunner(llm)
    rewriter = LLMRewriter(runner, model="gen", seed=0)
    chosen = [bases["en-1"]]
    cases, counts = await inject(
        chosen,
        parts,
        injectors=[_injector("E16-llm"), _injector("E10-llm")],
        rewriter=rewriter,
    )
    assert [c.injector for c in cases] == ["E16-llm"]
    assert cases[0].trace.answer == wrong and cases[0].error_type is ErrorType.E16
    assert counts["E10-llm"].reasons == {"LLM returned an empty rewrite": 1}
    prompt = llm.requests[0].messages[-1].content
    assert "At what price did Acme Robotics acquire Bolt Systems?" in prompt
    assert "Correct answer: Acme Robotics Ltd acquired Bolt Systems" in prompt
    # without an LLM the LLM injectors do not apply
    _, none = await inject(chosen, parts, injectors=[_injector("E16-llm")])
    assert none["E16-llm"].reasons == {"no LLM configured for rewrites": 1}


def test_every_error_type_has_an_injector() -> None:
    assert {i.error_type for i in INJECTORS} == set(ErrorType)
    assert {i.error_type for i in LLM_INJECTORS} == {
        t for t in ErrorType if t.stage is Stage.GENERATION
    }
    assert all(i.description for i in INJECTORS)


def test_chunk_ids_of_a_rechunked_document_follow_the_usual_scheme(parts: PipelineParts) -> None:
    doc = DOCS[0]
    chunks = parts.chunk_documents([doc], {"size": 10, "overlap": 0})
    assert all(isinstance(c, Chunk) and c.chunk_id == f"en-acme#{c.index}" for c in chunks)
    assert all(doc.text[c.start : c.end] == c.text for c in chunks)
