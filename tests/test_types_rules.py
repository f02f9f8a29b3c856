"""The rules judge for error types: one positive and one negative trace per type test,
English and Chinese, plus the vote distribution."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragtriage.config import DiagnosisConfig
from ragtriage.diagnosis._context import CaseContext
from ragtriage.diagnosis.answer_eval import evaluate_rules
from ragtriage.diagnosis.facts import concept_in_text, extract_concepts
from ragtriage.diagnosis.types_rules import (
    STAGE_PRIORS,
    _passed_over,
    abstains,
    distribute_votes,
    rule_type_evidence,
    rule_type_votes,
)
from ragtriage.records import (
    AnswerLabel,
    Chunk,
    ErrorType,
    Example,
    Hit,
    Stage,
    Trace,
    types_of_stage,
)
from ragtriage.text import detect_language

E = ErrorType


# ------------------------------------------------------------------ builders


def chunks_of(doc_id: str, pieces: Sequence[str], sep: str = " ") -> list[Chunk]:
    """Chunks covering ``sep.join(pieces)`` with exact offsets."""
    out: list[Chunk] = []
    pos = 0
    for i, text in enumerate(pieces):
        out.append(
            Chunk(
                chunk_id=f"{doc_id}#{i}",
                doc_id=doc_id,
                text=text,
                start=pos,
                end=pos + len(text),
                index=i,
            )
        )
        pos += len(text) + len(sep)
    return out


def hits(chunks: Sequence[Chunk]) -> list[Hit]:
    return [
        Hit(chunk_id=c.chunk_id, doc_id=c.doc_id, score=1.0 / (i + 1), rank=i + 1)
        for i, c in enumerate(chunks)
    ]


def make_ctx(
    stage: Stage,
    *,
    query: str,
    gt: str = "x",
    answer: str = "",
    doc_chunks: Sequence[Chunk] = (),
    other_chunks: Sequence[Chunk] = (),
    gt_ids: Sequence[str] = (),
    retrieved: Sequence[Chunk] = (),
    reranked: Sequence[Chunk] = (),
    context: Sequence[Chunk] = (),
    references: Sequence[str] = (),
    keypoints: Sequence[str] = (),
    answerable: bool = True,
    label: AnswerLabel = AnswerLabel.INCORRECT,
    doc_ids: Sequence[str] = ("d1",),
) -> CaseContext:
    example = Example(
        example_id="ex",
        query=query,
        answer=gt,
        answerable=answerable,
        doc_ids=list(doc_ids),
        references=list(references),
        keypoints=list(keypoints),
    )
    trace = Trace(
        trace_id="t",
        example=example,
        gt_doc_chunks=list(doc_chunks),
        chunks=list(other_chunks),
        retrieved=hits(retrieved),
        reranked=hits(reranked),
        context=[c.chunk_id for c in context],
        answer=answer,
    )
    concepts = tuple(extract_concepts(query))
    cmap = trace.chunk_map()
    concept_hits = {
        k: tuple(i for i in gt_ids if concept_in_text(k, cmap[i].text)) for k in concepts
    }
    return CaseContext(
        trace=trace,
        stage=stage,
        answer_label=label,
        language=detect_language(query),
        gt_chunk_ids=tuple(gt_ids),
        concepts=concepts,
        concept_hits=concept_hits,
    )


def gen_ctx(
    query: str,
    answer: str,
    gt: str,
    contexts: Sequence[str],
    **kw: object,
) -> CaseContext:
    chunks = chunks_of("d1", contexts)
    return make_ctx(
        Stage.GENERATION,
        query=query,
        gt=gt,
        answer=answer,
        doc_chunks=chunks,
        gt_ids=[c.chunk_id for c in chunks],
        retrieved=chunks,
        reranked=chunks,
        context=chunks,
        **kw,  # type: ignore[arg-type]
    )


def top_type(ctx: CaseContext) -> ErrorType:
    votes, _ = rule_type_votes(ctx, 10)
    return Counter(votes).most_common(1)[0][0]  # type: ignore[return-value]


def fired(ctx: CaseContext) -> dict[ErrorType, str]:
    return {e.error_type: e.evidence for e in rule_type_evidence(ctx)}


# ------------------------------------------------------------------ chunking

SENTENCES = [
    "Acme Robotics Ltd. was founded in 2004 in Brightwater.",
    "It builds industrial arms for car makers.",
    "In March 2019, Acme Robotics Ltd. acquired Polar Sensors for 120 million dollars.",
    "The acquisition expanded its sensor business into northern Europe.",
    "In 2019, the board approved a dividend of 0.35 dollars per share.",
    "Revenue grew by 18 percent in 2019, driven by automation orders.",
    "The company employs 1,200 people in four countries.",
    "Its largest plant is in Rotterdam.",
    "A new research centre opened in Oslo in 2020.",
    "The chief executive is Maria Lund.",
    "Net profit reached 45 million dollars in 2019.",
    "The company plans to list its shares in 2022.",
]
DOC = " ".join(SENTENCES)
Q_ACQ = "How much did Acme Robotics Ltd. pay for Polar Sensors in March 2019?"
REF_ACQ = SENTENCES[2]


def _fixed_windows(text: str, size: int) -> list[str]:
    """Cut ``text`` into windows of about ``size`` characters at spaces."""
    out: list[str] = []
    pos = 0
    while pos < len(text):
        end = min(len(text), pos + size)
        if end < len(text):
            space = text.rfind(" ", pos + 1, end)
            end = space if space > pos else end
        out.append(text[pos:end])
        pos = end + 1
    return out


def _gt_ids_for(chunks: Sequence[Chunk], ref: str) -> list[str]:
    start = DOC.find(ref)
    end = start + len(ref)
    return [c.chunk_id for c in chunks if min(c.end, end) - max(c.start, start) > 0]


def test_e1_overchunking_tiny_chunks_cut_the_reference() -> None:
    chunks = chunks_of("d1", _fixed_windows(DOC, 28))
    gt_ids = _gt_ids_for(chunks, REF_ACQ)
    assert len(gt_ids) >= 2
    ctx = make_ctx(
        Stage.CHUNKING,
        query=Q_ACQ,
        gt="120 million dollars.",
        doc_chunks=chunks,
        gt_ids=gt_ids,
        references=[REF_ACQ],
    )
    assert top_type(ctx) is E.E1
    assert "cut into" in fired(ctx)[E.E1]


def test_e1_does_not_fire_for_sentence_sized_chunks() -> None:
    pieces = [" ".join(SENTENCES[i : i + 4]) for i in range(0, len(SENTENCES), 4)]
    chunks = chunks_of("d1", pieces)
    ctx = make_ctx(
        Stage.CHUNKING,
        query=Q_ACQ,
        gt="120 million dollars.",
        doc_chunks=chunks,
        gt_ids=_gt_ids_for(chunks, REF_ACQ),
        references=[REF_ACQ],
    )
    assert E.E1 not in fired(ctx)
    assert E.E2 not in fired(ctx)


def test_e2_underchunking_one_chunk_holds_a_long_document() -> None:
    long_doc = " ".join(SENTENCES * 3)
    chunks = chunks_of("d1", [long_doc])
    ctx = make_ctx(
        Stage.CHUNKING,
        query=Q_ACQ,
        gt="120 million dollars.",
        doc_chunks=chunks,
        gt_ids=[chunks[0].chunk_id],
        references=[REF_ACQ],
    )
    assert top_type(ctx) is E.E2
    assert "single chunk" in fired(ctx)[E.E2] or "very large" in fired(ctx)[E.E2]


def test_e3_context_mismatch_name_in_the_neighbouring_chunk() -> None:
    # seed 000, E3: chunk B says "the country", the name is in chunk A
    a = (
        "The Philippines' evident risk to natural disasters is due to its location. "
        "It lies on the western rim of the Pacific. Its islands stretch over 1,800 km. "
        "Many islands are mountainous."
    )
    b = (
        "In addition, the country faces the Pacific Ocean where 60% of the world's "
        "typhoons are made. Storms form over warm water. They often reach land in "
        "autumn. Damage is frequent."
    )
    c = (
        "Rice is the main crop of the region. Farmers plant twice a year. Irrigation is "
        "common in the lowlands. Harvests vary with the weather."
    )
    chunks = chunks_of("d1", [a, b, c])
    ctx = make_ctx(
        Stage.CHUNKING,
        query="Why is the Philippines typhoon prone?",
        gt="It faces the Pacific Ocean where 60% of the world's typhoons are made.",
        doc_chunks=chunks,
        gt_ids=["d1#1"],
        references=["the country faces the Pacific Ocean where 60% of the world's typhoons"],
    )
    assert top_type(ctx) is E.E3
    evidence = fired(ctx)[E.E3]
    assert "Philippines" in evidence and "d1#0" in evidence
    assert "the country" in evidence


def test_e3_does_not_fire_when_every_concept_is_in_the_gt_chunk() -> None:
    pieces = [" ".join(SENTENCES[i : i + 4]) for i in range(0, len(SENTENCES), 4)]
    chunks = chunks_of("d1", pieces)
    ctx = make_ctx(
        Stage.CHUNKING,
        query="What did Acme Robotics Ltd. acquire in March 2019?",
        gt="120 million dollars.",
        doc_chunks=chunks,
        gt_ids=_gt_ids_for(chunks, REF_ACQ),
        references=[REF_ACQ],
    )
    assert all(ctx.concept_hits.values())
    assert E.E3 not in fired(ctx)


def test_chinese_e1_overchunking() -> None:
    sents = [
        "绿洲科技有限公司成立于2004年，总部位于杭州。",
        "2019年3月，绿洲科技有限公司以1.2亿元收购了北极传感器公司。",
        "此次收购使公司的传感器业务扩展到北欧市场。",
        "2019年，公司营业收入增长18%。",
        "公司共有员工1200人。",
        "董事长为王伟。",
    ]
    doc = "".join(sents)
    pieces = [doc[i : i + 12] for i in range(0, len(doc), 12)]
    chunks = chunks_of("d1", pieces, sep="")
    ref = sents[1]
    start = doc.find(ref)
    gt_ids = [c.chunk_id for c in chunks if min(c.end, start + len(ref)) - max(c.start, start) > 0]
    ctx = make_ctx(
        Stage.CHUNKING,
        query="绿洲科技有限公司在2019年3月以多少钱收购了北极传感器公司？",
        gt="1.2亿元。",
        doc_chunks=chunks,
        gt_ids=gt_ids,
        references=[ref],
    )
    assert top_type(ctx) is E.E1


# ------------------------------------------------------------------ retrieval

ACME = chunks_of(
    "d1",
    [
        "Acme Robotics Ltd. annual report 2019. Acme Robotics Ltd. builds industrial arms "
        "and sensors for car makers in Europe.",
        "In March 2019, Acme Robotics Ltd. acquired Polar Sensors for 120 million dollars.",
        "Acme Robotics Ltd. revenue grew by 18 percent in 2019 and the sensor business "
        "expanded into northern Europe after the acquisition.",
        "Acme Robotics Ltd. opened a research centre in Oslo; the acquisition of new "
        "sensor firms remains part of its strategy.",
    ],
)
OTHER_CO = chunks_of(
    "d2",
    [
        "Bluewave Ltd. annual report 2019. In 2019 Bluewave Ltd. acquired a sensor maker "
        "for 80 million dollars.",
        "Bluewave Ltd. paid for the acquisition of sensor firms in cash in March.",
        "Bluewave Ltd. sensors business grew after the acquisition in 2019.",
    ],
)
UNRELATED = chunks_of(
    "d3",
    [
        "The recipe needs flour, butter and two eggs mixed slowly.",
        "Rain is expected over the coast on Tuesday with light winds.",
        "The museum opens at nine and closes at five on weekdays.",
    ],
)


def _retrieval_ctx(retrieved: Sequence[Chunk], gt_ids: Sequence[str] = ("d1#1",)) -> CaseContext:
    extra = [c for c in retrieved if not c.chunk_id.startswith("d1#")]
    return make_ctx(
        Stage.RETRIEVAL,
        query=Q_ACQ,
        gt="120 million dollars.",
        doc_chunks=ACME,
        other_chunks=extra,
        gt_ids=gt_ids,
        retrieved=retrieved,
    )


def test_e4_missed_retrieval_on_topic_chunks_without_the_answer() -> None:
    ctx = _retrieval_ctx([ACME[2], OTHER_CO[0], ACME[3], OTHER_CO[1]])
    assert top_type(ctx) is E.E4
    evidence = fired(ctx)[E.E4]
    assert "not retrieved" in evidence
    assert "right document" in evidence


def test_e4_two_documents_needed_one_retrieved() -> None:
    # seed 000, E4: the query asks about two entities, the top chunks relate to one
    blue = chunks_of(
        "d2",
        [
            "Bluewave Ltd. annual report 2019. Bluewave Ltd. makes marine sensors.",
            "In 2019 Bluewave Ltd. raised 50 million dollars in a bond issue.",
        ],
    )
    ctx = make_ctx(
        Stage.RETRIEVAL,
        query="How much did Acme Robotics Ltd. and Bluewave Ltd. raise or spend in 2019?",
        gt="Acme paid 120 million dollars; Bluewave raised 50 million dollars.",
        doc_chunks=[*ACME, *blue],
        gt_ids=["d1#1", "d2#1"],
        retrieved=[ACME[1], ACME[2], ACME[0], UNRELATED[0]],
        other_chunks=UNRELATED[:1],
        doc_ids=("d1", "d2"),
    )
    assert top_type(ctx) is E.E4
    assert "come only from d1" in fired(ctx)[E.E4]


def test_e4_does_not_fire_when_the_gt_chunk_was_retrieved() -> None:
    ctx = _retrieval_ctx([ACME[1], ACME[0], ACME[2]])
    assert E.E4 not in fired(ctx)


def test_unrelated_chunks_instead_of_a_well_matching_gt_chunk_is_e4() -> None:
    # the GT chunk names the company, the target and the date of the query; the
    # retriever returned a recipe, a weather report and opening hours: it passed over a
    # findable chunk (E4), the list is not "loosely related" to the topic (E5)
    ctx = _retrieval_ctx(UNRELATED)
    found = fired(ctx)
    assert top_type(ctx) is E.E4
    assert "the missed chunk shares" in found[E.E4]
    assert "though the missed ground-truth chunk shares" in found[E.E5]


def test_e5_low_relevance_right_document_other_facts() -> None:
    ctx = _retrieval_ctx([ACME[0], ACME[2], ACME[3]])
    assert top_type(ctx) is E.E5
    assert "right document" in fired(ctx)[E.E5]


def test_e5_does_not_fire_for_on_topic_chunks_of_several_documents() -> None:
    assert E.E5 not in fired(_retrieval_ctx([ACME[2], OTHER_CO[0], ACME[3], OTHER_CO[1]]))


def test_e6_semantic_drift_another_companys_report() -> None:
    ctx = _retrieval_ctx(OTHER_CO)
    assert top_type(ctx) is E.E6
    evidence = fired(ctx)[E.E6]
    assert "Acme Robotics" in evidence and "Bluewave" in evidence


def test_e6_does_not_fire_when_the_right_document_is_retrieved() -> None:
    assert E.E6 not in fired(_retrieval_ctx([ACME[2], OTHER_CO[0], ACME[3], OTHER_CO[1]]))


# ------------------------------------------------------------------ reranking


def _rerank_ctx(reranked: Sequence[Chunk]) -> CaseContext:
    retrieved = [ACME[0], ACME[1], ACME[2], ACME[3]]
    return make_ctx(
        Stage.RERANKING,
        query=Q_ACQ,
        gt="120 million dollars.",
        doc_chunks=ACME,
        gt_ids=["d1#1"],
        retrieved=retrieved,
        reranked=reranked,
        context=reranked,
    )


def test_e7_low_recall_gt_chunk_dropped_by_the_reranker() -> None:
    ctx = _rerank_ctx([ACME[3], ACME[0]])
    assert top_type(ctx) is E.E7
    assert "retrieved at rank 2" in fired(ctx)[E.E7]


def test_e8_low_precision_gt_chunk_ranked_below_noise() -> None:
    ctx = _rerank_ctx([ACME[3], ACME[0], ACME[2], ACME[1]])
    assert E.E7 not in fired(ctx)
    assert top_type(ctx) is E.E8
    assert "ranked above" in fired(ctx)[E.E8]


def test_reranking_without_a_finding_falls_back_to_a_weak_prior() -> None:
    ctx = _rerank_ctx([ACME[1], ACME[0], ACME[2]])
    assert rule_type_evidence(ctx) == []
    votes, evidence = rule_type_votes(ctx, 10)
    assert len(votes) == 10
    assert "weak prior" in evidence[0]
    counts = Counter(votes)
    assert max(counts.values()) < 10  # never unanimous
    assert set(counts) <= set(types_of_stage(Stage.RERANKING))


# ------------------------------------------------------------------ generation (EN)


def test_e9_abstention_failure_on_an_unanswerable_question() -> None:
    ctx = gen_ctx(
        "How much did Green Fields Co. raise through large-scale financing in December 2018?",
        "Green Fields Co. did not raise any funds in December 2018.",
        "Unable to answer",
        ["In 2018, Green Fields Co. expanded its farmland and hired 200 new workers."],
        answerable=False,
    )
    assert top_type(ctx) is E.E9


def test_e9_not_for_an_answerable_question_with_the_answer_in_context() -> None:
    ctx = gen_ctx(
        "What did Sunrise Holidays introduce in April 2019?",
        "A mobile app.",
        "An online booking platform.",
        ["In April 2019, Sunrise Holidays introduced an online booking platform."],
    )
    assert E.E9 not in fired(ctx)


def test_e10_fabricated_content() -> None:
    ctx = gen_ctx(
        "According to the hospitalization records of Southport General Hospital, summarize "
        "the past medical history of K. Mendoza.",
        "K. Mendoza has a history of Parkinson's disease, with tremors, bradykinesia and "
        "postural instability.",
        "K. Mendoza was generally healthy prior to the onset of his symptoms.",
        [
            "K. Mendoza was admitted to Southport General Hospital in May 2020 with a cough.",
            "K. Mendoza was generally healthy prior to the onset of his symptoms.",
        ],
    )
    assert top_type(ctx) is E.E10
    assert "Parkinson" in fired(ctx)[E.E10]


def test_e10_not_when_every_name_is_in_the_context() -> None:
    ctx = gen_ctx(
        "Who is the chief executive of Acme Robotics Ltd.?",
        "Maria Lund is the chief executive of Acme Robotics Ltd.",
        "Jonas Berg.",
        ["The chief executive is Jonas Berg; Maria Lund chairs the board of Acme Robotics Ltd."],
    )
    assert E.E10 not in fired(ctx)


def test_e11_parametric_overreliance_general_knowledge() -> None:
    ctx = gen_ctx(
        "What was the total amount of liabilities of Artistic Creations at the end of 2019?",
        "In general, companies typically record liabilities such as loans, accounts payable "
        "and deferred taxes on their balance sheet.",
        "Artistic Creations had total liabilities of $120 million at the end of 2019.",
        ["At the end of 2019, Artistic Creations reported total liabilities of $120 million."],
    )
    assert top_type(ctx) is E.E11
    assert "general" in fired(ctx)[E.E11]


def test_e11_not_for_an_answer_taken_from_the_context() -> None:
    ctx = gen_ctx(
        "What was the total amount of liabilities of Artistic Creations at the end of 2019?",
        "Artistic Creations reported total liabilities of $110 million.",
        "Artistic Creations had total liabilities of $120 million at the end of 2019.",
        ["At the end of 2019, Artistic Creations reported total liabilities of $120 million."],
    )
    assert E.E11 not in fired(ctx)


def test_e12_incomplete_answer_covers_one_of_two_parts() -> None:
    ctx = gen_ctx(
        "What sentences were given to the defendants M. Cooper and Y. Nelson?",
        "M. Cooper was sentenced to four years imprisonment.",
        "M. Cooper was sentenced to four years imprisonment; Y. Nelson was sentenced to "
        "three years imprisonment.",
        [
            "The court sentenced M. Cooper to four years imprisonment.",
            "Y. Nelson was sentenced to three years imprisonment for fraud.",
        ],
    )
    assert top_type(ctx) is E.E12
    assert "Y. Nelson" in fired(ctx)[E.E12]


def test_e12_abstaining_although_the_context_has_the_answer() -> None:
    ctx = gen_ctx(
        "What platform did Sunrise Holidays introduce in April 2019?",
        "The platform introduced by Sunrise Holidays in April 2019 is not specified.",
        "An online booking platform.",
        ["In April 2019, Sunrise Holidays introduced an online booking platform."],
        label=AnswerLabel.ABSTAIN,
    )
    assert top_type(ctx) is E.E12
    assert "abstains" in fired(ctx)[E.E12]


def test_e12_not_for_a_complete_answer_with_a_wrong_number() -> None:
    ctx = gen_ctx(
        "What sentences were given to M. Cooper and Y. Nelson?",
        "M. Cooper was sentenced to four years; Y. Nelson was sentenced to nine years.",
        "M. Cooper was sentenced to four years; Y. Nelson was sentenced to three years.",
        ["M. Cooper got four years and Y. Nelson got three years imprisonment."],
    )
    assert top_type(ctx) is not E.E12


def test_e13_misinterpretation_fact_of_another_entity() -> None:
    ctx = gen_ctx(
        "What sentence was given to Q. Ruiz?",
        "Q. Ruiz was sentenced to four years imprisonment.",
        "Q. Ruiz was sentenced to five years imprisonment.",
        [
            "M. Ward was sentenced to four years imprisonment.",
            "Q. Ruiz was sentenced to five years imprisonment for theft.",
        ],
    )
    assert top_type(ctx) is E.E13
    assert "M. Ward" in fired(ctx)[E.E13]


def test_e13_not_when_the_fact_belongs_to_the_named_entity() -> None:
    ctx = gen_ctx(
        "What sentence was given to Q. Ruiz?",
        "Q. Ruiz was sentenced to five years imprisonment and fined.",
        "Q. Ruiz was sentenced to five years imprisonment.",
        [
            "M. Ward was sentenced to four years imprisonment.",
            "Q. Ruiz was sentenced to five years imprisonment for theft.",
        ],
    )
    assert E.E13 not in fired(ctx)


def test_e14_contextual_misalignment_true_but_another_aspect() -> None:
    ctx = gen_ctx(
        "According to the judgment of Preston Court, summarize the facts of M. Harris's crimes.",
        "M. Harris was found guilty and sentenced to life imprisonment.",
        "M. Harris committed intentional homicide by tampering with the brakes of her "
        "business partner's car.",
        [
            "M. Harris tampered with the brakes of her business partner's car, causing his death.",
            "M. Harris was found guilty of intentional homicide and sentenced to life "
            "imprisonment.",
        ],
    )
    assert top_type(ctx) is E.E14


def test_e14_not_for_an_answer_that_matches_the_ground_truth() -> None:
    ctx = gen_ctx(
        "Summarize the facts of M. Harris's crimes.",
        "M. Harris tampered with the brakes of her partner's car.",
        "M. Harris committed intentional homicide by tampering with the brakes of her "
        "business partner's car.",
        ["M. Harris tampered with the brakes of her business partner's car."],
    )
    assert E.E14 not in fired(ctx)


def test_a_lone_wrong_date_in_no_source_is_a_numerical_error() -> None:
    # "June 2020" is in neither the context nor the ground truth and puts no event on
    # the other side of another: a wrong value (E16), chronology second (E15)
    ctx = gen_ctx(
        "When did Sunrise Holidays launch its online booking platform?",
        "Sunrise Holidays launched its online booking platform in June 2020.",
        "In April 2019.",
        [
            "In April 2019, Sunrise Holidays introduced an online booking platform.",
            "In June 2021 it opened a new office in Lisbon.",
        ],
    )
    assert top_type(ctx) is E.E16
    found = fired(ctx)
    assert "June 2020" in found[E.E16] and "order of events is kept" in found[E.E16]
    assert E.E15 in found


def test_a_lone_wrong_year_zh_is_a_numerical_error() -> None:
    ctx = gen_ctx(
        "枫华公司是哪一年上市的？",
        "枫华公司于2061年上市。",
        "枫华公司于2016年上市。",
        ["枫华公司于2016年在深圳证券交易所上市。", "2019年，公司开设了新的研发中心。"],
    )
    assert top_type(ctx) is E.E16


def test_e15_wrong_date_is_another_events_date_from_the_context() -> None:
    # the answer dates the launch with the office opening's date: timelines confused
    ctx = gen_ctx(
        "When did Sunrise Holidays launch its online booking platform?",
        "Sunrise Holidays launched its online booking platform in June 2021.",
        "In April 2019.",
        [
            "In April 2019, Sunrise Holidays introduced an online booking platform.",
            "In June 2021 the company opened a new office.",
        ],
    )
    assert top_type(ctx) is E.E15
    assert "June 2021" in fired(ctx)[E.E15]


def test_e15_wrong_date_that_reverses_two_events() -> None:
    # the second event moved before the first one: a chronology error
    for query, answer, gt, contexts in (
        (
            "When did Halvorsen's CFO resign, and when did the new CFO start in 2021?",
            "Elena Broch resigned on 30 June 2021 and Tomas Reiersen started on 1 May 2021.",
            "Elena Broch resigned on 30 June 2021; Tomas Reiersen started on 1 September 2021.",
            [
                "Elena Broch resigned as CFO on 30 June 2021.",
                "Tomas Reiersen started as CFO on 1 September 2021.",
            ],
        ),
        (
            "绿野公司2021年何时完成并购，何时开设新工厂？",
            "绿野公司于2021年3月完成并购，于2021年1月开设新工厂。",
            "绿野公司于2021年3月完成并购，于2021年9月开设新工厂。",
            ["2021年3月，绿野公司完成并购。", "2021年9月，绿野公司开设新工厂。"],
        ),
    ):
        ctx = gen_ctx(query, answer, gt, contexts)
        assert top_type(ctx) is E.E15, (query, fired(ctx))


def test_e16_a_slip_of_magnitude() -> None:
    for query, answer, gt, contexts in (
        (
            "What was HealthPro's net profit in 2021?",
            "Operating income was $250 million; the net profit for the year was $400 million.",
            "Its net profit for 2021 was $40 million.",
            ["HealthPro's operating income was $250 million and net profit $40 million."],
        ),
        (
            "创新科技2020年的净利润是多少？",
            "创新科技2020年营业收入为4500万美元，净利润为8000万美元。",
            "净利润为800万美元。",
            ["创新科技2020年营业收入为4500万美元，净利润为800万美元。"],
        ),
    ):
        ctx = gen_ctx(query, answer, gt, contexts)
        found = fired(ctx)
        assert top_type(ctx) is E.E16, (query, found)
        assert "power of ten" in found[E.E16]


def test_a_cited_document_label_is_no_fabricated_name() -> None:
    ctx = gen_ctx(
        "When did work start on the 007 Stage?",
        "According to Document 1, work on the 007 Stage began on November 15, 2105.",
        "Work on the 007 Stage began on November 15, 2015.",
        ["Work on the 007 Stage at Pinewood began on November 15, 2015."],
    )
    found = fired(ctx)
    assert "Document" not in found.get(E.E10, "")
    assert top_type(ctx) is E.E16


def test_an_acronym_of_a_named_body_and_a_count_in_words_are_no_fabrication() -> None:
    # "UN" shortens the question's "United Nations"; "these two goals" counts the answer's
    # own points -- neither is an invented name or figure
    ctx = gen_ctx(
        "What are the objectives of the United Nations?",
        "The main objectives of the UN are maintaining international peace and security "
        "and promoting human rights. These two goals form the core of its mission.",
        "Maintaining international peace and security, promoting human rights, fostering "
        "social and economic development, and protecting the environment.",
        [
            "The objectives of the United Nations include maintaining international peace "
            "and security, promoting human rights, fostering social and economic development "
            "and protecting the environment."
        ],
        keypoints=[
            "maintaining international peace and security",
            "promoting human rights",
            "fostering social and economic development",
            "protecting the environment",
        ],
    )
    found = fired(ctx)
    assert "'UN'" not in found.get(E.E10, "")
    assert E.E16 not in found
    assert top_type(ctx) is E.E12


def test_a_name_in_a_keypoints_place_is_a_misreading_zh() -> None:
    ctx = gen_ctx(
        "苏佩维埃尔何时在何地去世？",
        "根据资料，苏佩维埃尔于1960年5月17日在蒙得维的亚去世。",
        "1960年5月17日在巴黎去世。",
        ["苏佩维埃尔生于乌拉圭蒙得维的亚。1960年5月17日在巴黎去世。"],
        keypoints=["1960年5月17日", "巴黎"],
    )
    # the cascade hands the type judge the answer evaluation's deciding rule
    judged = evaluate_rules(ctx.trace.example, ctx.trace.answer, DiagnosisConfig())
    assert judged.rule == "keypoint_replaced"
    ctx = dataclasses.replace(ctx, answer_rule=judged.rule)
    assert top_type(ctx) is E.E13


def test_e15_earlier_reversed() -> None:
    ctx = gen_ctx(
        "Which company, Green Fields or JetWing, changed their board of directors earlier?",
        "Green Fields changed its board earlier, in December 2021, while JetWing changed "
        "it in September 2021.",
        "JetWing changed its board earlier, in September 2021, while Green Fields changed "
        "it in December 2021.",
        [
            "JetWing changed its board of directors in September 2021.",
            "Green Fields changed its board of directors in December 2021.",
        ],
    )
    assert top_type(ctx) is E.E15
    assert "first" in fired(ctx)[E.E15]


def test_e15_not_for_the_same_date_stated_differently() -> None:
    ctx = gen_ctx(
        "When did Sunrise Holidays launch its platform?",
        "It launched the platform on 12 April 2019 in Madrid.",
        "In April 2019.",
        ["On 12 April 2019, Sunrise Holidays introduced an online booking platform in Madrid."],
    )
    assert E.E15 not in fired(ctx)


def test_e16_numerical_error_wrong_sum() -> None:
    ctx = gen_ctx(
        "Which company reduced its liabilities more, InnovateTech or Sparkling Clean?",
        "InnovateTech reduced its liabilities by a larger amount, a total of $50 million, "
        "compared to Sparkling Clean's £500,000.",
        "InnovateTech reduced its liabilities by a larger amount ($30 million) compared to "
        "Sparkling Clean (£500,000).",
        [
            "InnovateTech reduced its liabilities by $30 million through debt restructuring. "
            "It also repaid $20 million of bonds.",
            "Sparkling Clean reduced its liabilities by £500,000.",
        ],
    )
    assert top_type(ctx) is E.E16
    evidence = fired(ctx)[E.E16]
    assert "$50 million" in evidence and "$30 million" in evidence


def test_e16_not_for_the_same_number_written_differently() -> None:
    ctx = gen_ctx(
        "How much did InnovateTech reduce its liabilities by?",
        "By 30,000,000 dollars.",
        "$30 million.",
        ["InnovateTech reduced its liabilities by $30 million through debt restructuring."],
    )
    assert E.E16 not in fired(ctx)


# ------------------------------------------------------------------ generation (ZH)


def test_zh_e9_abstention_failure() -> None:
    ctx = gen_ctx(
        "绿洲科技有限公司在2018年12月通过大规模融资筹集了多少资金？",
        "绿洲科技有限公司在2018年12月融资5000万元。",
        "无法回答",
        ["2018年，绿洲科技有限公司扩建了北方的生产基地，并新招聘了200名员工。"],
        answerable=False,
    )
    assert top_type(ctx) is E.E9


def test_zh_e10_fabricated_content() -> None:
    ctx = gen_ctx(
        "根据南港总医院的住院记录，总结患者王伟的既往病史。",
        "患者王伟有帕金森病史，伴有震颤和运动迟缓。",
        "患者王伟既往身体健康。",
        ["患者王伟于2020年5月因持续咳嗽入住南港总医院。", "患者王伟既往身体健康，无慢性病史。"],
    )
    assert top_type(ctx) is E.E10
    assert "帕金森" in fired(ctx)[E.E10]


def test_zh_e12_incomplete_keypoints() -> None:
    ctx = gen_ctx(
        "被告人张某某和李某分别被判处什么刑罚？",
        "被告人张某某被判处有期徒刑三年。",
        "被告人张某某被判处有期徒刑三年，被告人李某被判处有期徒刑两年。",
        [
            "上海市中级人民法院判决：被告人张某某犯诈骗罪，判处有期徒刑三年；被告人李某犯"
            "诈骗罪，判处有期徒刑两年。"
        ],
        keypoints=["张某某被判处有期徒刑三年", "李某被判处有期徒刑两年"],
    )
    assert top_type(ctx) is E.E12


def test_zh_e13_misattributed_sentence() -> None:
    ctx = gen_ctx(
        "被告人李某被判处什么刑罚？",
        "被告人李某被判处有期徒刑三年。",
        "被告人李某被判处有期徒刑两年。",
        ["被告人张某某犯诈骗罪，判处有期徒刑三年。", "被告人李某犯诈骗罪，判处有期徒刑两年。"],
    )
    assert top_type(ctx) is E.E13
    assert "张某某" in fired(ctx)[E.E13]


def test_zh_e15_wrong_date() -> None:
    # the date of another event of the context: timelines confused (E15)
    ctx = gen_ctx(
        "绿洲科技有限公司何时推出了在线预订平台？",
        "绿洲科技有限公司于2021年6月推出了在线预订平台。",
        "2019年4月。",
        [
            "2019年4月，绿洲科技有限公司推出了在线预订平台，大大提升了竞争力。",
            "2021年6月，该公司在杭州开设了新办公室。",
        ],
    )
    assert top_type(ctx) is E.E15


def test_zh_e15_not_for_the_right_date() -> None:
    ctx = gen_ctx(
        "绿洲科技有限公司何时推出了在线预订平台？",
        "2019年4月推出。",
        "2019年4月。",
        ["2019年4月，绿洲科技有限公司推出了在线预订平台。"],
    )
    assert E.E15 not in fired(ctx)


def test_zh_e16_wrong_number() -> None:
    ctx = gen_ctx(
        "绿洲科技有限公司2019年的营业收入是多少？",
        "绿洲科技有限公司2019年的营业收入为8亿元。",
        "绿洲科技有限公司2019年的营业收入为5亿元。",
        ["2019年，绿洲科技有限公司实现营业收入5亿元，净利润3亿元。"],
    )
    assert top_type(ctx) is E.E16
    assert "8亿元" in fired(ctx)[E.E16]


def test_zh_e16_not_for_the_same_amount() -> None:
    ctx = gen_ctx(
        "绿洲科技有限公司2019年的营业收入是多少？",
        "营业收入为五亿元。",
        "绿洲科技有限公司2019年的营业收入为5亿元。",
        ["2019年，绿洲科技有限公司实现营业收入5亿元，净利润3亿元。"],
    )
    assert E.E16 not in fired(ctx)


# ------------------------------------------------------------------ evidence and votes


def test_abstention_phrases() -> None:
    assert abstains("The context does not mention the platform.")
    assert abstains("无法回答。")
    assert abstains("文中未提及该信息")
    assert not abstains("The platform is an online booking system.")


@pytest.mark.parametrize("stage", list(Stage))
def test_evidence_stays_within_the_stage(stage: Stage) -> None:
    base = _rerank_ctx([ACME[3], ACME[0]])
    from dataclasses import replace

    ctx = replace(base, stage=stage)
    allowed = set(types_of_stage(stage))
    for ev in rule_type_evidence(ctx):
        assert ev.error_type in allowed
        assert 0 < ev.score <= 1
        assert ev.evidence
    votes, evidence = rule_type_votes(ctx, 7)
    assert len(votes) == 7 and evidence
    assert set(votes) <= allowed


def test_votes_carry_the_strength_of_the_evidence() -> None:
    strong = gen_ctx(
        "How much did Green Fields Co. raise in December 2018?",
        "Green Fields Co. raised $5 million in December 2018.",
        "Unable to answer",
        ["In 2018, Green Fields Co. hired 200 new workers."],
        answerable=False,
    )
    votes, evidence = rule_type_votes(strong, 10)
    assert Counter(votes)[E.E9] >= 9
    assert evidence[0].startswith("E9 Abstention Failure")


def test_priors_cover_each_stage() -> None:
    for stage in Stage:
        assert set(STAGE_PRIORS[stage]) == set(types_of_stage(stage))
        assert abs(sum(STAGE_PRIORS[stage].values()) - 1.0) < 1e-9


def test_distribute_votes_is_proportional() -> None:
    votes = distribute_votes([(E.E13, 0.85), (E.E16, 0.65)], 10)
    assert Counter(votes) == {E.E13: 6, E.E16: 4}
    assert votes[0] is E.E13
    assert distribute_votes([(E.E7, 0.9)], 3) == [E.E7, E.E7, E.E7]
    with pytest.raises(ValueError):
        distribute_votes([(E.E7, 0.9)], 0)


@settings(max_examples=300, deadline=None)
@given(
    scores=st.lists(st.floats(min_value=0.01, max_value=1.0), min_size=1, max_size=8, unique=True),
    k=st.integers(min_value=1, max_value=25),
)
def test_vote_distribution_invariants(scores: list[float], k: int) -> None:
    types = list(ErrorType)[: len(scores)]
    weights = list(zip(types, scores, strict=True))
    votes = distribute_votes(weights, k)
    assert len(votes) == k
    counts = Counter(votes)
    top = max(weights, key=lambda w: w[1])[0]
    # the top-scored type is the unique mode
    assert counts[top] == max(counts.values())
    assert all(c < counts[top] for t, c in counts.items() if t is not top) or len(counts) == 1
    # deterministic
    assert distribute_votes(weights, k) == votes
    # no type gets more than its fair share plus the rounding and the tie fix
    total = sum(scores)
    for t, s in weights:
        if t is not top:
            assert counts[t] <= s / total * k + 1


# ------------------------------------------------------------------ retrieval: E4 vs E5

HARBOUR = chunks_of(
    "h1",
    [
        "Port of Kessling 2021 review. The port handled 4.1 million containers in 2021.",
        "Dredging of the north channel to 16 metres finished in May 2021.",
        "The port authority hired 220 new crane operators during the year.",
        "A rail link to the inland terminal at Vorden opened in September 2021.",
        "Ferry traffic fell by 12 percent because of timetable cuts.",
        "The authority plans a hydrogen bunkering pier for 2024.",
    ],
)
Q_RAIL = "When did the Port of Kessling rail link to Vorden open, and how deep is the channel?"


def _harbour_ctx(retrieved: Sequence[Chunk], gt_ids: Sequence[str]) -> CaseContext:
    return make_ctx(
        Stage.RETRIEVAL,
        query=Q_RAIL,
        gt="It opened in September 2021; the channel is 16 metres deep.",
        doc_chunks=HARBOUR,
        gt_ids=gt_ids,
        retrieved=retrieved,
        doc_ids=("h1",),
    )


def test_partial_miss_is_e4_and_never_e5() -> None:
    # one of the two GT chunks was retrieved: part of the answer is missing (E4 by
    # definition), even though the rest of the list comes from the right document
    ctx = _harbour_ctx([HARBOUR[3], HARBOUR[0], HARBOUR[2], HARBOUR[4]], ["h1#1", "h1#3"])
    found = fired(ctx)
    assert E.E5 not in found
    assert "part of the answer is missing" in found[E.E4]
    assert top_type(ctx) is E.E4


def test_total_miss_with_a_same_document_head_is_e5() -> None:
    # nothing of the answer retrieved; the head of the list is all the right document
    ctx = _harbour_ctx([HARBOUR[0], HARBOUR[2], HARBOUR[4], HARBOUR[5]], ["h1#3"])
    found = fired(ctx)
    assert "all come from the right document" in found[E.E5]
    assert top_type(ctx) is E.E5


def test_chinese_partial_miss_is_e4() -> None:
    clinic = chunks_of(
        "z1",
        [
            "青禾社区医院2022年年报。全年门诊量为18.6万人次。",
            "医院于2022年4月开设了儿童哮喘专科门诊。",
            "全年新招聘护士35名，培训医生120人次。",
            "医院与市第三医院建立了双向转诊机制。",
        ],
        sep="",
    )
    ctx = make_ctx(
        Stage.RETRIEVAL,
        query="青禾社区医院何时开设儿童哮喘专科门诊？全年门诊量是多少？",
        gt="2022年4月开设；全年门诊量18.6万人次。",
        doc_chunks=clinic,
        gt_ids=["z1#0", "z1#1"],
        retrieved=[clinic[0], clinic[2], clinic[3]],
        doc_ids=("z1",),
    )
    found = fired(ctx)
    assert E.E5 not in found
    assert top_type(ctx) is E.E4


# ------------------------------------------------------------------ retrieval: E4 vs E5 by
# how well the missed GT chunk itself matches the query (vocabulary mismatch vs. a miss)


def _other_doc_ctx(
    query: str, gt_text: str, retrieved_texts: Sequence[str], *, sep: str = " "
) -> CaseContext:
    """A total miss: the GT document is one chunk; the retriever returned chunks of one
    other document."""
    gt_doc = chunks_of("g1", [gt_text], sep=sep)
    other = chunks_of("o1", list(retrieved_texts), sep=sep)
    return make_ctx(
        Stage.RETRIEVAL,
        query=query,
        gt="x",
        doc_chunks=gt_doc,
        other_chunks=other,
        gt_ids=["g1#0"],
        retrieved=other,
        doc_ids=("g1",),
    )


def test_vocabulary_mismatch_with_loosely_related_chunks_stays_e5() -> None:
    # the query says "carmaker's boss" and "take home", the answer's chunk says "chief
    # executive" and "remuneration": no lexical handle, the retrieved list is only
    # loosely related (seed 000 §4.2, E5: vocabulary mismatch)
    ctx = _other_doc_ctx(
        "What did the carmaker's boss take home last year?",
        "The chief executive's total remuneration in 2021 was 3.2 million euros.",
        [
            "The new model year begins in September for most dealers.",
            "Steel prices rose sharply in the second quarter.",
            "The plant in Graz switched to a four-day shift pattern.",
        ],
    )
    found = fired(ctx)
    assert "loosely related" in found[E.E5]
    assert "missed ground-truth chunk shares" not in found[E.E5]
    assert "the missed chunk shares" not in found.get(E.E4, "")
    assert top_type(ctx) is E.E5


def test_chinese_vocabulary_mismatch_stays_e5() -> None:
    ctx = _other_doc_ctx(
        "这家车企的老板去年拿了多少钱？",
        "公司首席执行官2021年度薪酬总额为320万元。",
        ["这家工厂去年改为四班倒工作制。", "第二季度钢材价格大幅上涨。", "新车型通常在九月上市。"],
        sep="",
    )
    found = fired(ctx)
    assert "loosely related" in found[E.E5]
    assert top_type(ctx) is E.E5


def test_chinese_well_matching_gt_chunk_passed_over_is_e4() -> None:
    ctx = _other_doc_ctx(
        "蓝湾港务集团2022年新建的集装箱码头有几个泊位？",
        "蓝湾港务集团2022年年报。集团于2022年建成新集装箱码头，共有6个深水泊位。",
        [
            "本院审理了一起买卖合同纠纷案件。",
            "患者因咳嗽三天入院治疗。",
            "今年春季降雨偏多，气温偏低。",
        ],
        sep="",
    )
    found = fired(ctx)
    assert "the missed chunk shares" in found[E.E4]
    assert top_type(ctx) is E.E4
    votes, _ = rule_type_votes(ctx, 10)
    assert Counter(votes)[E.E4] >= 6


def test_english_well_matching_gt_chunk_passed_over_is_e4() -> None:
    ctx = _other_doc_ctx(
        "How many berths does the new container terminal at Halvik Port have?",
        "Halvik Port opened its new container terminal in 2022 with six deep-water berths.",
        [
            "The court dismissed the appeal and ordered costs against the claimant.",
            "The patient was admitted with a cough and discharged after three days.",
            "Spring rainfall was above average and temperatures were mild.",
        ],
    )
    assert "the missed chunk shares" in fired(ctx)[E.E4]
    assert top_type(ctx) is E.E4


def test_same_document_head_stays_e5_even_when_the_gt_chunk_matches_well_chinese() -> None:
    # structural E5 evidence (the right report, other facts) is not overridden by the
    # lexical comparison: what came back is on topic but about other facts
    report = chunks_of(
        "g2",
        [
            "蓝湾港务集团2022年年报。集团全年营业收入为48亿元。",
            "集团于2022年建成新集装箱码头，共有6个深水泊位。",
            "集团全年新增员工320人，其中技术人员占四成。",
            "集团计划2024年开通至内陆场站的铁路专线。",
            "集团董事会建议每股派发现金红利0.2元。",
        ],
        sep="",
    )
    ctx = make_ctx(
        Stage.RETRIEVAL,
        query="蓝湾港务集团新建的集装箱码头有几个泊位？",
        gt="6个。",
        doc_chunks=report,
        gt_ids=["g2#1"],
        retrieved=[report[0], report[2], report[3], report[4]],
        doc_ids=("g2",),
    )
    found = fired(ctx)
    assert "all come from the right document" in found[E.E5]
    assert "the missed chunk shares" not in found.get(E.E4, "")
    assert top_type(ctx) is E.E5


@settings(max_examples=200, deadline=None)
@given(
    gt=st.floats(min_value=0.0, max_value=1.0),
    best=st.floats(min_value=0.0, max_value=1.0),
    bump=st.floats(min_value=0.0, max_value=0.5),
)
def test_passed_over_is_bounded_and_monotone(gt: float, best: float, bump: float) -> None:
    v = _passed_over(gt, best)
    assert 0.0 <= v <= 1.0
    if gt < 0.2:
        assert v == 0.0  # below the floor: vocabulary mismatch, no lexical handle
    if gt <= best:
        assert v == 0.0  # no margin over what was retrieved
    assert _passed_over(min(1.0, gt + bump), best) >= v
    assert _passed_over(gt, min(1.0, best + bump)) <= v


def test_e13_a_name_question_answered_with_another_name_of_the_context() -> None:
    # the answer restates the question and fills its slot with the wrong place: E13,
    # not E14 (it does address the question)
    for query, answer, gt, contexts in (
        (
            "Where did InnovaTech Solutions open a new research and development center in "
            "March 2017?",
            "InnovaTech opened its new research and development center in San Francisco.",
            "In Austin, Texas.",
            [
                "InnovaTech Solutions is headquartered in San Francisco, California.",
                "In March 2017 InnovaTech Solutions opened a new research and development "
                "center in Austin, Texas.",
            ],
        ),
        (
            "绿源环保在哪里开设了新的研发中心？",
            "绿源环保在上海市开设了新的研发中心。",
            "在杭州市。",
            ["绿源环保总部位于上海市。", "2019年，绿源环保在杭州市开设了新的研发中心。"],
        ),
    ):
        ctx = gen_ctx(query, answer, gt, contexts)
        assert top_type(ctx) is E.E13, (query, fired(ctx))


def test_e14_an_off_aspect_answer_naming_a_context_entity_stays_e14() -> None:
    ctx = gen_ctx(
        "Who handled the finance chief's duties at the shipping group while it had no CFO?",
        "Halvorsen Maritime Logistics is a short-sea shipping and cold-chain logistics group "
        "headquartered in Bergen, Norway.",
        "The chief executive, Marcus Lindqvist, acted as interim CFO.",
        [
            "Halvorsen Maritime Logistics is a short-sea shipping and cold-chain logistics "
            "group headquartered in Bergen, Norway.",
            "The chief executive, Marcus Lindqvist, acted as interim CFO.",
        ],
    )
    assert top_type(ctx) is E.E14, fired(ctx)


def test_e12_yields_when_the_answer_was_failed_for_a_wrong_statement() -> None:
    # the answer evaluation failed it for another name in a keypoint's slot: the answer
    # is wrong, not merely short (E13 over E12), EN and ZH
    for query, answer, gt, keypoints, contexts in (
        (
            "Where did the Pony Express route begin and end?",
            "The Pony Express route began in Salt Lake City and ended in Sacramento.",
            "The Pony Express started at St. Joseph, Missouri and, after Salt Lake City, "
            "ended in Sacramento.",
            ("began in St. Joseph, Missouri", "ended in Sacramento"),
            [
                "The Pony Express started at St. Joseph, Missouri, and ran via Salt Lake "
                "City to Sacramento."
            ],
        ),
        (
            "该快递线路的起点和终点分别是哪里？",
            "该线路起点为兰州市，终点为乌鲁木齐市。",
            "该线路起点为西安市，途经兰州市，终点为乌鲁木齐市。",
            ("起点为西安市", "终点为乌鲁木齐市"),
            ["该线路起点为西安市，途经兰州市，终点为乌鲁木齐市。"],
        ),
    ):
        chunks = chunks_of("d1", contexts)
        base = make_ctx(
            Stage.GENERATION,
            query=query,
            gt=gt,
            answer=answer,
            doc_chunks=chunks,
            gt_ids=[c.chunk_id for c in chunks],
            retrieved=chunks,
            reranked=chunks,
            context=chunks,
            keypoints=keypoints,
        )
        ctx = dataclasses.replace(base, answer_rule="slot_conflict")
        assert top_type(ctx) is E.E13, (query, fired(ctx))
        e12 = {e.error_type: e.score for e in rule_type_evidence(base)}[E.E12]
        e12_failed = {e.error_type: e.score for e in rule_type_evidence(ctx)}[E.E12]
        assert e12_failed < e12


def test_e13_a_value_taken_from_another_documents_chunk_that_never_names_the_entity() -> None:
    # the value's sentence names no one (its subject came earlier in the other report):
    # the chunk is another document's, whose context chunks never name the asked entity
    for query, gt, answer, own_text, other_text in (
        (
            "What were Northwind Traders' community investments?",
            "Northwind Traders invested $5 million in its communities.",
            "Northwind Traders invested $500,000 in its communities.",
            "Northwind Traders reported community investments of $5 million in 2021.",
            "Community investments were $500,000, reflecting a changed strategy.",
        ),
        (
            "北辰物流有限公司的社区投资额是多少？",
            "北辰物流有限公司的社区投资额为500万元。",
            "北辰物流有限公司的社区投资额为500,000元。",
            "北辰物流有限公司2021年的社区投资额为500万元。",
            "社区投资额为500,000元，受公司财务状况变化的影响。",
        ),
    ):
        own = chunks_of("d1", [own_text])
        other = chunks_of("d2", [other_text])
        ctx = make_ctx(
            Stage.GENERATION,
            query=query,
            gt=gt,
            answer=answer,
            doc_chunks=own,
            other_chunks=other,
            gt_ids=[c.chunk_id for c in own],
            retrieved=[*own, *other],
            reranked=[*own, *other],
            context=[*own, *other],
        )
        evidence = fired(ctx)
        assert E.E13 in evidence and "document d2" in evidence[E.E13], (query, evidence)
        # the same value in a chunk of the ground truth's own document is no such case
        ctx = gen_ctx(query, answer, gt, [own_text, other_text])
        assert "document" not in fired(ctx).get(E.E13, ""), query


def test_a_full_name_whose_surname_the_context_gives_is_not_fabricated() -> None:
    ctx = gen_ctx(
        "Who first sailed around the world?",
        "Ferdinand Magellan was the first to sail around the world, on the Victoria.",
        "Elcano completed the first circumnavigation after Magellan died in 1521.",
        [
            "The expedition of Magellan and Elcano sailed on the Victoria from 1519 to "
            "1522; Magellan died in 1521 and Elcano completed the voyage."
        ],
    )
    assert "Ferdinand Magellan" not in fired(ctx).get(E.E10, "")


def test_reversed_chronology_leads_on_an_ordering_question() -> None:
    # names and dates exchanged together: on a question about order, E15 over E13
    for query, gt, answer, text in (
        (
            "这三家公司成立的先后顺序是什么？",
            "华信有限公司于1990年成立，东方有限公司于2000年成立，南山有限公司于2008年成立。",
            "先后顺序为：华信有限公司1990年成立，南山有限公司2000年成立，东方有限公司2008年成立。",
            "华信有限公司于1990年成立。东方有限公司于2000年成立。南山有限公司于2008年成立。",
        ),
    ):
        ctx = gen_ctx(query, answer, gt, [text])
        evidence = fired(ctx)
        assert "attached to each other's events" in evidence.get(E.E15, ""), (query, evidence)
        assert top_type(ctx) is E.E15, (query, evidence)


def test_figures_read_against_each_others_items_are_a_misreading_first() -> None:
    # every figure is right, each attached to the other item: E13 leads, E16 follows
    for query, gt, answer, text in (
        (
            "贝某某右眼眼压入院时和6月26日复测时分别是多少？",
            "入院时右眼32 mmHg，6月26日复测为28 mmHg。",
            "入院时右眼眼压为28 mmHg，6月26日复测升至32 mmHg。",
            "入院时右眼眼压32 mmHg。6月26日复测右眼眼压28 mmHg。",
        ),
        (
            "What were the pressures at admission and at the follow-up on 26 June?",
            "At admission it was 32 mmHg, and on 26 June the follow-up measured 28 mmHg.",
            "At admission it was 28 mmHg, and on 26 June the follow-up measured 32 mmHg.",
            "At admission the pressure was 32 mmHg. On 26 June the follow-up measured 28 mmHg.",
        ),
    ):
        ctx = gen_ctx(query, answer, gt, [text])
        evidence = fired(ctx)
        assert "attached to each other's items" in evidence.get(E.E13, ""), (query, evidence)
        assert E.E16 in evidence, (query, evidence)
        assert top_type(ctx) is E.E13, (query, evidence)


def test_a_wrong_pick_between_the_questions_options_is_not_another_aspect() -> None:
    # the answer takes up the question's comparison and gets it backwards: E15, not E14
    query = "Which came first at CleanCo in 2018: the debt restructuring or the dividend?"
    gt = "The debt restructuring (February 2018) came before the dividend (December 2018)."
    answer = (
        "The dividend came first: CleanCo paid $2 million of dividends to its shareholders, "
        "and only afterwards did it restructure its debt, reducing liabilities by $5 million."
    )
    text = [
        "In February 2018 CleanCo restructured its debt, reducing liabilities by $5 million.",
        "In December 2018 CleanCo paid $2 million of dividends to its shareholders.",
    ]
    base = gen_ctx(query, answer, gt, text)
    ctx = dataclasses.replace(base, answer_rule="choice_time")
    evidence = fired(ctx)
    assert "the wrong way" in evidence[E.E14], evidence
    assert top_type(ctx) is E.E15, evidence
    # without the rule (base) it is a misreading of the very chunk that holds the answer
    # (E13 weighs that); either way E14, another aspect, is damped and does not lead
    base_evidence = fired(base)
    assert "the passage misread" in base_evidence[E.E13], base_evidence
    assert top_type(base) is not E.E14, base_evidence


@pytest.mark.parametrize(
    ("query", "gt", "answer", "text"),
    [
        (
            "《星河岁月》中林小雨由谁饰演？",
            "陈慧琳。",
            "《星河岁月》中林小雨由王志强饰演。",
            "《星河岁月》是一部电视剧，由陈慧琳饰演林小雨，王志强饰演警长周海。",
        ),
        (
            "What is the true identity of Mara Quill in the novel Ashfall?",
            "She is the exiled queen of the northern isles.",
            "In Ashfall, the true identity of Mara Quill is the leader of the Grey Thieves guild.",
            "In the novel Ashfall, Mara Quill is revealed as the exiled queen of the northern "
            "isles; the Grey Thieves guild, led by Oren Vale, hunts her.",
        ),
    ],
)
def test_the_right_passage_misread_is_a_misinterpretation(
    query: str, gt: str, answer: str, text: str
) -> None:
    # the answer takes up the question and fills it from the very chunk that holds the
    # ground truth: the passage misread (E13), not another aspect of it (E14)
    ctx = gen_ctx(query, answer, gt, [text])
    evidence = fired(ctx)
    assert top_type(ctx) is E.E13, evidence
    # an answer about another aspect, not taking up the question, stays E14
    other = gen_ctx(query, text.split("；")[0].split(";")[-1], gt, [text])
    assert "the passage misread" not in fired(other).get(E.E13, ""), fired(other)


def test_a_slip_of_magnitude_is_one_even_when_the_context_holds_that_value() -> None:
    query = "百和文化集团2017年度的净利润是多少？"
    gt = "1,200万元。"
    answer = "综上所述，百和文化集团2017年度的净利润为1.2亿元。"
    text = [
        "百和文化集团2017年度营业收入为1.2亿元，净利润为1,200万元。",
        "总资产为20,000万元。",
    ]
    ctx = gen_ctx(query, answer, gt, text)
    evidence = fired(ctx)
    assert "slip of magnitude" in evidence.get(E.E16, ""), evidence
    assert top_type(ctx) is E.E16, evidence


@pytest.mark.parametrize("strategy", ["single-step", "stage-sequential"])
@pytest.mark.parametrize(
    ("gt_text", "query", "gt_answer", "answer"),
    [
        (
            "Acme Corp was founded in 1999.",
            "When was Acme Corp founded?",
            "Acme Corp was founded in 1999.",
            "Acme Corp was founded in 2005.",
        ),
        (
            "甲公司成立于1999年。",
            "甲公司成立于哪一年？",
            "甲公司成立于1999年。",
            "甲公司成立于2005年。",
        ),
    ],
)
async def test_a_one_sentence_document_is_one_sentence_for_the_chunking_tests(
    strategy: str, gt_text: str, query: str, gt_answer: str, answer: str
) -> None:
    # a ground-truth document of one sentence ending with its terminator counted zero
    # sentences, and the chunk-size test divided by it (ZeroDivisionError)
    from diag_helpers import make_trace
    from ragtriage.diagnosis.engine import Diagnoser

    trace = make_trace(
        query=query,
        gt_answer=gt_answer,
        answer=answer,
        gt_texts=(gt_text,),
        retrieved=["od_0", "od_1"],
        reranked=["od_0"],
        context=["od_0"],
    )
    d = await Diagnoser("rules", strategy).diagnose(trace)  # type: ignore[arg-type]
    assert d.needs_diagnosis and d.stage is not None and d.error_type is not None
