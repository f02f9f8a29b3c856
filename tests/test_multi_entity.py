"""Multi-entity questions (issue #9, item 2): a two-company question whose context holds
one company's evidence only is a retrieval failure (E4, the missing entity named), or a
reranking failure when that evidence was retrieved and then dropped. English and Chinese."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from diag_helpers import doc_chunks, hits
from ragtriage.config import DiagnosisConfig
from ragtriage.diagnosis import Diagnoser
from ragtriage.diagnosis.cascade import classify_stage
from ragtriage.diagnosis.stage import stage_from_parts, starved_parts
from ragtriage.records import AnswerLabel, ErrorType, Example, Stage, Trace

EN = {
    "query": "What acquisitions did Green Fields Agriculture Ltd. and Harmony Health Co. make in 2019?",
    "answer": "Green Fields Agriculture Ltd. acquired Newbridge Farm in March 2019, and Harmony "
    "Health Co. acquired CarePlus Clinics in June 2019.",
    "a_docs": (
        "Green Fields Agriculture Ltd. annual report 2019.",
        "In March 2019 the company acquired Newbridge Farm for USD 12 million.",
        "Green Fields Agriculture also expanded its irrigation network.",
    ),
    "b_docs": (
        "Harmony Health Co. annual report 2019.",
        "In June 2019 the company acquired CarePlus Clinics, a chain of eight clinics.",
        "Harmony Health hired a new chief medical officer.",
    ),
    "refs": (
        "In March 2019 the company acquired Newbridge Farm for USD 12 million.",
        "In June 2019 the company acquired CarePlus Clinics, a chain of eight clinics.",
    ),
    "reply": "In March 2019, Green Fields Agriculture acquired Newbridge Farm for USD 12 million "
    "(Doc 1). There is no information available regarding acquisitions by Harmony Health Co. "
    "in the provided documents.",
}
ZH = {
    "query": "绿野农业和捷翼航空在2019年分别进行了哪些重大资产收购？",
    "answer": "绿野农业于2019年3月收购了新桥农场；捷翼航空于2019年6月收购了蓝天航修。",
    "a_docs": (
        "绿野农业2019年年度报告。",
        "2019年3月，公司以1200万元收购了新桥农场。",
        "绿野农业扩建了灌溉网络。",
    ),
    "b_docs": (
        "捷翼航空2019年年度报告。",
        "2019年6月，公司收购了蓝天航修。",
        "捷翼航空新开通了三条航线。",
    ),
    "refs": ("2019年3月，公司以1200万元收购了新桥农场。", "2019年6月，公司收购了蓝天航修。"),
    "reply": "根据文档1，绿野农业于2019年3月以1200万元收购了新桥农场。文档中未提及捷翼航空的收购情况。\n\n"
    "综上所述，绿野农业收购了新桥农场，而捷翼航空的信息无法确定。",
}


def two_company_trace(
    case: dict[str, object],
    *,
    retrieved: Sequence[str],
    context: Sequence[str],
    reranked: Sequence[str] | None = None,
) -> Trace:
    a = doc_chunks("a", case["a_docs"])  # type: ignore[arg-type]
    b = doc_chunks("b", case["b_docs"])  # type: ignore[arg-type]
    doc_of = {c.chunk_id: c.doc_id for c in [*a, *b]}
    ex = Example(
        example_id="q",
        query=str(case["query"]),
        answer=str(case["answer"]),
        doc_ids=["a", "b"],
        references=list(case["refs"]),  # type: ignore[call-overload]
    )
    return Trace(
        trace_id="t",
        run_id="r",
        example=ex,
        gt_doc_chunks=[*a, *b],
        retrieved=hits(retrieved, doc_of),
        reranked=hits(reranked if reranked is not None else context, doc_of),
        context=list(context),
        answer=str(case["reply"]),
    )


@pytest.mark.parametrize("case", [EN, ZH], ids=["en", "zh"])
async def test_one_company_never_retrieved_is_e4_naming_it(case: dict[str, object]) -> None:
    trace = two_company_trace(case, retrieved=["a_1", "a_0", "a_2"], context=["a_1", "a_0", "a_2"])
    starved = starved_parts(trace, ["a_1", "b_1"])
    assert [f.part.text for f in starved] in (["Harmony Health Co."], ["捷翼航空"])
    d = await Diagnoser("rules").diagnose(trace)
    assert d.answer_label is AnswerLabel.INCORRECT
    assert "partial abstention" in d.answer_reason
    assert d.stage is Stage.RETRIEVAL
    assert d.error_type is ErrorType.E4
    name = starved[0].part.text
    assert name in d.stage_reason
    assert any(name in e for e in d.evidence)


@pytest.mark.parametrize("case", [EN, ZH], ids=["en", "zh"])
def test_one_company_retrieved_then_dropped_is_reranking(case: dict[str, object]) -> None:
    trace = two_company_trace(
        case, retrieved=["a_1", "b_1", "a_0"], reranked=["a_1", "a_0"], context=["a_1", "a_0"]
    )
    call = stage_from_parts(trace, ["a_1", "b_1"])
    assert call is not None and call.stage is Stage.RERANKING


def test_both_companies_in_context_is_not_a_retrieval_failure() -> None:
    trace = two_company_trace(EN, retrieved=["a_1", "b_1"], context=["a_1", "b_1"])
    assert starved_parts(trace, ["a_1", "b_1"]) == []
    assert stage_from_parts(trace, ["a_1", "b_1"]) is None


def test_single_entity_question_unaffected() -> None:
    case = dict(EN, query="What did Green Fields Agriculture Ltd. acquire in 2019?")
    trace = two_company_trace(case, retrieved=["a_1"], context=["a_1"])
    assert starved_parts(trace, ["a_1", "b_1"]) == []


def test_llm_type_prompt_names_the_entity_missing_from_the_context() -> None:
    from ragtriage.diagnosis._context import CaseContext
    from ragtriage.diagnosis.types_llm import stage_prompt

    trace = two_company_trace(EN, retrieved=["a_1", "a_0"], context=["a_1", "a_0"])
    ctx = CaseContext(
        trace=trace,
        stage=Stage.GENERATION,
        answer_label=AnswerLabel.INCORRECT,
        language="en",
    )
    user = stage_prompt(ctx).user
    assert "**Entities asked about**" in user
    assert "'Harmony Health Co.': none of them" in user
    assert "'Green Fields Agriculture Ltd.': 1 of 2 chunks" in user


async def test_paper_cascade_without_the_entity_extension() -> None:
    """entity_extension: false gives the paper's cascade: half of the GT chunks reached
    the generator, so it is not generation either -- the coverage test decides."""
    trace = two_company_trace(EN, retrieved=["a_1", "a_0"], context=["a_1", "a_0"])
    on = await Diagnoser("rules").diagnose(trace)
    off = await Diagnoser("rules", config=DiagnosisConfig(entity_extension=False)).diagnose(trace)
    assert "never retrieved" in on.stage_reason
    assert "never retrieved" not in off.stage_reason


def _missed_passage_trace(other_texts: tuple[str, ...]) -> Trace:
    from diag_helpers import make_trace

    return make_trace(
        query="When did Acme Corp open its Springfield plant?",
        gt_answer="Acme Corp opened its Springfield plant in 1999.",
        answer="Acme Corp opened its Springfield plant in 2005.",
        gt_texts=(
            "Acme Corp opened its Springfield plant in 1999.",
            "It sells widgets and gadgets to retailers.",
            "Its chief executive is Ann Lee.",
        ),
        other_texts=other_texts,
        retrieved=["od_0", "od_1"],
        reranked=["od_0", "od_1"],
        context=["od_0", "od_1"],
        references=("Acme Corp opened its Springfield plant in 1999.",),
    )


async def test_missed_passage_with_keyword_matches_about_the_same_entity_is_e4() -> None:
    """Other passages about the query's own entity that share its words: the gold
    passage was missed (E4), the retriever did not drift (issue #9)."""
    trace = _missed_passage_trace(
        (
            "Acme Corp opened a new Springfield office for its plant engineers in 2005.",
            "Acme Corp plans to open a second plant near Springfield.",
        )
    )
    d = await Diagnoser("rules").diagnose(trace)
    assert d.stage is Stage.RETRIEVAL
    assert d.error_type is ErrorType.E4


async def test_keyword_matches_about_another_entity_are_e6() -> None:
    """Passages that share the query's words but name none of its entities: drift."""
    trace = _missed_passage_trace(
        (
            "Globex Inc opened its Riverton plant in 2005.",
            "Initech opened a plant in Lakeside to make software servers.",
        )
    )
    d = await Diagnoser("rules").diagnose(trace)
    assert d.stage is Stage.RETRIEVAL
    assert d.error_type is ErrorType.E6


async def test_abstract_query_phrase_is_no_evidence_of_chunking() -> None:
    """A summary question's abstract phrase ("significant financial events") that the
    documents word otherwise does not blame chunking (issue #9): retrieval."""
    from diag_helpers import make_trace

    trace = make_trace(
        query="What significant financial events did Acme Corp experience in 2019?",
        gt_answer="Acme Corp issued a USD 50 million bond and acquired Beta Tools in 2019.",
        answer="Acme Corp opened a plant in 2019.",
        gt_texts=(
            "In 2019 Acme Corp issued a USD 50 million bond and acquired Beta Tools.",
            "The report lists significant events, results and the financial calendar.",
            "Its chief executive is Ann Lee.",
        ),
        other_texts=("Globex Inc opened a plant in 2019.", "Initech makes software."),
        retrieved=["od_0", "od_1"],
        reranked=["od_0", "od_1"],
        context=["od_0", "od_1"],
        references=("In 2019 Acme Corp issued a USD 50 million bond and acquired Beta Tools.",),
    )
    d = await Diagnoser("rules").diagnose(trace)
    assert d.stage is Stage.RETRIEVAL
    assert any("not scored" in e for e in d.evidence)


def test_compared_entities_are_parts_with_with_and_parentheses() -> None:
    from ragtriage.diagnosis.question_parts import question_parts

    q = "Compare the revenue of Halden Shipping (2020) with that of Orvik Freight (2021)."
    assert [p.text for p in question_parts(q)] == ["Halden Shipping", "Orvik Freight"]
    q2 = "What were the losses of Halden Shipping (2020) and Orvik Freight (2021)?"
    assert [p.text for p in question_parts(q2)] == ["Halden Shipping", "Orvik Freight"]
    # outside a comparison, "with" does not join two things asked about
    assert question_parts("How did Halden Shipping deal with Orvik Freight?") == ()


# -- a declined part without a name: one event of a timeline --------------------------

_TIMELINE = (
    "Ostra Mining 2021 annual report.",
    "On 3 February 2021 Ostra opened the Kiruna shaft.",
    "On 9 May 2021 Ostra signed the Luleå port contract.",
    "On 21 October 2021 Ostra sold its Finnish unit.",
    "The board met six times.",
)


def _timeline_trace(*, retrieved: Sequence[str], context: Sequence[str], answer: str) -> Trace:
    chunks = doc_chunks("d", _TIMELINE)
    ex = Example(
        example_id="q",
        query="List Ostra Mining's main 2021 events in order.",
        answer="Ostra opened the Kiruna shaft on 3 February 2021, signed the Luleå port "
        "contract on 9 May and sold its Finnish unit on 21 October 2021.",
        keypoints=[
            "Kiruna shaft 3 February 2021",
            "Luleå contract 9 May 2021",
            "Finnish unit sold 21 October 2021",
        ],
        doc_ids=["d"],
        references=list(_TIMELINE[1:4]),
    )
    doc_of = {c.chunk_id: "d" for c in chunks}
    return Trace(
        trace_id="t",
        run_id="r",
        example=ex,
        gt_doc_chunks=chunks,
        retrieved=hits(retrieved, doc_of),
        reranked=hits(context, doc_of),
        context=list(context),
        answer=answer,
    )


_DECLINES_LAST = (
    "1. 3 February 2021: the Kiruna shaft opened.\n2. 9 May 2021: the Luleå port contract "
    "was signed.\n\nThe documents do not say when the Finnish unit was sold, so I cannot "
    "place it."
)


async def test_declined_event_whose_chunk_was_dropped_is_reranking() -> None:
    trace = _timeline_trace(
        retrieved=["d_1", "d_2", "d_4", "d_3"], context=["d_1", "d_2"], answer=_DECLINES_LAST
    )
    d = await Diagnoser("rules").diagnose(trace)
    assert d.answer_label is AnswerLabel.INCORRECT and d.answer_rule == "partial_abstention"
    assert d.stage is Stage.RERANKING
    assert "d_3" in d.stage_reason and "Finnish unit" in d.stage_reason


async def test_declined_event_in_the_context_stays_generation() -> None:
    trace = _timeline_trace(
        retrieved=["d_1", "d_2", "d_3"], context=["d_1", "d_2", "d_3"], answer=_DECLINES_LAST
    )
    d = await Diagnoser("rules").diagnose(trace)
    assert d.answer_label is AnswerLabel.INCORRECT
    assert d.stage is Stage.GENERATION


# Green Fields' evidence chunk names Green Fields; Harmony's (b_1) never names Harmony
EN_NAMED_A = dict(
    EN,
    a_docs=(
        "Green Fields Agriculture Ltd. annual report 2019.",
        "In March 2019 Green Fields Agriculture acquired Newbridge Farm for USD 12 million.",
        "Green Fields Agriculture also expanded its irrigation network.",
    ),
    refs=(
        "In March 2019 Green Fields Agriculture acquired Newbridge Farm for USD 12 million.",
        "In June 2019 the company acquired CarePlus Clinics, a chain of eight clinics.",
    ),
)
ZH_NAMED_A = dict(
    ZH,
    a_docs=(
        "绿野农业2019年年度报告。",
        "2019年3月，绿野农业以1200万元收购了新桥农场。",
        "绿野农业扩建了灌溉网络。",
    ),
    refs=("2019年3月，绿野农业以1200万元收购了新桥农场。", "2019年6月，公司收购了蓝天航修。"),
)


@pytest.mark.parametrize("case", [EN_NAMED_A, ZH_NAMED_A], ids=["en", "zh"])
async def test_evidence_cut_from_its_subject_and_not_retrieved_is_chunking(
    case: dict[str, object],
) -> None:
    # b_1 holds Harmony's acquisition but never names Harmony; b_0, which names it, was
    # retrieved, and Green Fields' evidence got through with its name on it: the
    # document was reachable, its anonymous chunk was not (E3)
    trace = two_company_trace(case, retrieved=["a_1", "a_0", "b_0"], context=["a_1", "a_0"])
    call = stage_from_parts(trace, ["a_1", "b_1"])
    assert call is not None and call.stage is Stage.CHUNKING, call
    assert "b_1" in call.reason
    d = await Diagnoser("rules").diagnose(trace)
    assert d.stage is Stage.CHUNKING and d.error_type is ErrorType.E3


@pytest.mark.parametrize("case", [EN, ZH], ids=["en", "zh"])
def test_an_anonymous_chunk_is_no_cause_when_the_other_entitys_got_through_anonymous(
    case: dict[str, object],
) -> None:
    # Green Fields' evidence (a_1) reached the generator without its name too: anonymity
    # did not stop it, so the miss is retrieval's
    trace = two_company_trace(case, retrieved=["a_1", "a_0", "b_0"], context=["a_1", "a_0"])
    call = stage_from_parts(trace, ["a_1", "b_1"])
    assert call is not None and call.stage is Stage.RETRIEVAL, call


@pytest.mark.parametrize("case", [EN, ZH], ids=["en", "zh"])
def test_evidence_in_context_without_its_subject_and_declined_is_chunking(
    case: dict[str, object],
) -> None:
    # b_1 reached the generator, but without Harmony's name; the answer declines Harmony
    trace = two_company_trace(case, retrieved=["a_1", "a_0", "b_1"], context=["a_1", "a_0", "b_1"])
    call = stage_from_parts(trace, ["a_1", "b_1"])
    assert call is not None and call.stage is Stage.CHUNKING, call
    assert "declines" in call.reason


TIMELINE = {
    "en": (
        "What did Acme do in 2021?",
        (
            "Acme Corp annual report 2021.",
            "In March 2021 Acme opened a plant in Oslo.",
            "In June 2021 Acme hired 300 staff.",
            "In October 2021 Acme acquired Beta Ltd for USD 40 million.",
        ),
        ("plant March 2021", "hired 300 June 2021", "Beta Ltd USD 40 million"),
        "Acme opened a plant in Oslo in March 2021, hired 300 staff in June 2021 and "
        "acquired Beta Ltd for USD 25 million.",
    ),
    "zh": (
        "远航公司2021年做了哪些事？",
        (
            "远航公司2021年年度报告。",
            "2021年3月，远航公司在杭州开设工厂。",
            "2021年6月，远航公司招聘了300名员工。",
            "2021年10月，远航公司以4000万元收购了贝塔公司。",
        ),
        ("3月开设工厂", "6月招聘300名员工", "收购贝塔公司4000万元"),
        "远航公司2021年3月在杭州开设工厂，6月招聘了300名员工，并以2500万元收购了贝塔公司。",
    ),
}


@pytest.mark.parametrize("lang", ["en", "zh"])
async def test_a_wrong_value_for_a_fact_the_generator_never_saw_is_upstream(lang: str) -> None:
    # two of three GT chunks reached the generator (share 0.67 > 0.5), but the one that
    # holds the acquisition price (a_3) was never retrieved: the answer's wrong price is
    # a fact the generator never saw (retrieval, not generation)
    query, docs, keypoints, reply = TIMELINE[lang]
    chunks = doc_chunks("a", docs)
    doc_of = {c.chunk_id: c.doc_id for c in chunks}
    ex = Example(
        example_id="q",
        query=query,
        answer=" ".join(docs[1:]),
        doc_ids=["a"],
        references=list(docs[1:]),
        keypoints=list(keypoints),
    )
    trace = Trace(
        trace_id="t",
        run_id="r",
        example=ex,
        gt_doc_chunks=chunks,
        retrieved=hits(["a_1", "a_2", "a_0"], doc_of),
        reranked=hits(["a_1", "a_2"], doc_of),
        context=["a_1", "a_2"],
        answer=reply,
    )
    d = await Diagnoser("rules").diagnose(trace)
    assert d.answer_label is AnswerLabel.INCORRECT and d.answer_rule == "value_conflict", d
    assert d.stage is Stage.RETRIEVAL, d.stage_reason
    assert "never retrieved" in d.stage_reason
    # classify_stage runs the diagnoser's cascade, the declined-facts step included: with
    # the answer rule it agrees; without one that step is silent and the share decides
    gt = d.gt_chunk_ids
    call = classify_stage(trace, gt, None, 0, DiagnosisConfig(), answer_rule=d.answer_rule)
    assert (call.stage, call.reason) == (d.stage, d.stage_reason)
    assert classify_stage(trace, gt, None, 0, DiagnosisConfig()).stage is Stage.GENERATION
