"""The backward stage cascade (seed 000, App. B.2.2-B.2.4), one rule per test."""

from __future__ import annotations

from diag_helpers import make_trace
from ragtriage.config import DiagnosisConfig
from ragtriage.diagnosis.cascade import classify_stage
from ragtriage.diagnosis.stage import (
    gt_flow,
    stage_from_coverage,
    stage_from_flow,
)
from ragtriage.records import Stage, Trace

CFG = DiagnosisConfig()


def test_generation_when_more_than_half_of_gt_chunks_reach_the_generator() -> None:
    trace = make_trace(
        retrieved=["gd_0", "gd_1", "od_0"], reranked=["gd_0", "gd_1"], context=["gd_0", "gd_1"]
    )
    call = classify_stage(trace, ["gd_0", "gd_1", "gd_2"], None, 0, CFG)
    assert call.stage is Stage.GENERATION
    assert "2/3" in call.reason


def test_exactly_half_is_not_generation() -> None:
    # 1 of 2 GT chunks in context (share 0.5, not > 0.5); the other was dropped by the
    # reranker -> reranking
    trace = make_trace(retrieved=["gd_0", "gd_1"], reranked=["gd_0"], context=["gd_0"])
    call = classify_stage(trace, ["gd_0", "gd_1"], 1.0, 3, CFG)
    assert call.stage is Stage.RERANKING


def test_no_gt_chunks_means_generation() -> None:
    trace = make_trace()
    call = classify_stage(trace, [], None, 0, CFG)
    assert call.stage is Stage.GENERATION
    assert "no ground-truth chunks" in call.reason


def test_reranker_drop_means_reranking() -> None:
    # gd_1 retrieved but filtered out by the reranker
    trace = make_trace(retrieved=["od_0", "gd_1"], reranked=["od_0"], context=["od_0"])
    call = classify_stage(trace, ["gd_1"], 1.0, 4, CFG)
    assert call.stage is Stage.RERANKING
    assert "filtered out by the reranker" in call.reason


def test_context_budget_drop_after_reranking_is_reranking() -> None:
    trace = make_trace(retrieved=["od_0", "gd_1"], reranked=["od_0", "gd_1"], context=["od_0"])
    flow = gt_flow(trace, ["gd_1"])
    assert flow.budget_dropped == ("gd_1",)
    call = stage_from_flow(flow, CFG)
    assert call is not None and call.stage is Stage.RERANKING
    assert "context budget" in call.reason


_FOUR_OTHERS = (
    "Globex Inc was founded in 2005 in Shelbyville.",
    "Initech makes software for banks.",
    "Umbrella sells umbrellas in bulk.",
    "Hooli runs a search engine.",
)


#: the paper's cascade (B.2.4): the concept coverage alone parts chunking from retrieval
PAPER = DiagnosisConfig(chunking_extension=False)


def test_low_concept_coverage_means_chunking() -> None:
    trace = make_trace(
        other_texts=_FOUR_OTHERS,
        retrieved=["od_0", "od_1", "od_2", "od_3"],
        reranked=["od_0"],
        context=["od_0"],
    )
    call = classify_stage(trace, ["gd_0"], 0.6, 5, PAPER)
    assert call.stage is Stage.CHUNKING


def test_low_concept_coverage_is_chunking_only_on_positive_evidence() -> None:
    # the GT chunk names its subject and holds its reference whole: a concept the
    # documents state elsewhere (a record's header) is no sign of a cut -- retrieval
    plain = make_trace(
        other_texts=_FOUR_OTHERS,
        retrieved=["od_0", "od_1", "od_2", "od_3"],
        reranked=["od_0"],
        context=["od_0"],
        references=["Acme Corp was founded in 1999 in Springfield."],
    )
    call = classify_stage(plain, ["gd_0"], 0.6, 5, CFG)
    assert call.stage is Stage.RETRIEVAL
    assert "no sign that chunking parted the evidence" in call.reason
    # a GT chunk that leans on a subject it lacks ("The company ...") was cut from it
    leaning = make_trace(
        gt_texts=(
            "Acme Corp is a maker of widgets.",
            "The company was founded in 1999 in Springfield.",
            "Its chief executive is Ann Lee.",
        ),
        other_texts=_FOUR_OTHERS,
        retrieved=["od_0", "od_1", "od_2", "od_3"],
        reranked=["od_0"],
        context=["od_0"],
    )
    assert classify_stage(leaning, ["gd_1"], 0.6, 5, CFG).stage is Stage.CHUNKING
    # a reference no chunk holds whole was cut by a chunk boundary (chunks longer than the
    # reference, so the chunk-shape step leaves it to this one)
    cut = make_trace(
        gt_texts=(
            "Acme Corp sells widgets and gadgets to retailers across the state. "
            "Acme Corp was founded",
            "in 1999 in Springfield. Its chief executive is Ann Lee, who joined in 2004 "
            "from Globex.",
            "Its CEO is Ann Lee.",
        ),
        other_texts=_FOUR_OTHERS,
        retrieved=["od_0", "od_1", "od_2", "od_3"],
        reranked=["od_0"],
        context=["od_0"],
        references=["Acme Corp was founded in 1999 in Springfield."],
    )
    assert classify_stage(cut, ["gd_0", "gd_1"], 0.6, 5, CFG).stage is Stage.CHUNKING


def test_a_court_speaking_of_itself_is_no_sign_of_a_cut() -> None:
    # "本院" / "the court" is in every chunk of a judgment and stands for no subject the
    # question names: not positive evidence of chunking, unless the question asks about a
    # court
    def judgment(query: str) -> Trace:
        return make_trace(
            gt_texts=(
                "Acme Corp was charged with fraud.",
                "The court finds the fraud proven and fines it 2 million.",
                "Costs are borne by the defendant company.",
            ),
            other_texts=_FOUR_OTHERS,
            retrieved=["od_0", "od_1", "od_2", "od_3"],
            reranked=["od_0"],
            context=["od_0"],
            query=query,
        )

    assert classify_stage(judgment("What fine did Acme get?"), ["gd_1"], 0.6, 5, CFG).stage is (
        Stage.RETRIEVAL
    )
    asks_court = judgment("What did the court fine Acme?")
    assert classify_stage(asks_court, ["gd_1"], 0.6, 5, CFG).stage is Stage.CHUNKING


def test_a_shallow_retriever_that_missed_the_gt_chunks_is_retrieval() -> None:
    # three candidates, none of them the GT chunk: too shallow to blame the chunks
    on = DiagnosisConfig(shallow_retrieval=3, chunking_extension=False)
    shallow = make_trace(retrieved=["od_0", "od_1"], reranked=["od_0"], context=["od_0"])
    call = classify_stage(shallow, ["gd_0"], 0.2, 5, on)
    assert call.stage is Stage.RETRIEVAL and "only 2 candidate" in call.reason
    # off (the default), or a deep enough retriever: the concept coverage decides (seed
    # 000 B.2.4)
    assert classify_stage(shallow, ["gd_0"], 0.2, 5, PAPER).stage is Stage.CHUNKING
    deep = make_trace(
        other_texts=_FOUR_OTHERS,
        retrieved=["od_0", "od_1", "od_2", "od_3"],
        reranked=["od_0"],
        context=["od_0"],
    )
    assert classify_stage(deep, ["gd_0"], 0.2, 5, on).stage is Stage.CHUNKING


def test_high_concept_coverage_means_retrieval() -> None:
    trace = make_trace(retrieved=["od_0"], reranked=["od_0"], context=["od_0"])
    assert classify_stage(trace, ["gd_0"], 0.8, 5, CFG).stage is Stage.RETRIEVAL
    assert classify_stage(trace, ["gd_0"], 1.0, 5, CFG).stage is Stage.RETRIEVAL


def test_thresholds_are_configurable() -> None:
    trace = make_trace(
        retrieved=["gd_0", "gd_1"], reranked=["gd_0", "gd_1"], context=["gd_0", "gd_1"]
    )
    gts = ["gd_0", "gd_1", "gd_2"]  # share 2/3
    assert classify_stage(trace, gts, 1.0, 3, CFG).stage is Stage.GENERATION
    strict = DiagnosisConfig(generator_gt_share=0.7)
    # 2/3 is not > 0.7; nothing was dropped after retrieval -> chunking/retrieval
    assert classify_stage(trace, gts, 1.0, 3, strict).stage is Stage.RETRIEVAL
    lenient = DiagnosisConfig(concept_coverage=0.5)
    other = make_trace(retrieved=["od_0"], reranked=["od_0"], context=["od_0"])
    assert classify_stage(other, ["gd_0"], 0.6, 5, lenient).stage is Stage.RETRIEVAL


def test_generation_checked_before_reranking() -> None:
    # 2 of 3 GT chunks in context AND one dropped by the reranker -> generation wins
    trace = make_trace(
        retrieved=["gd_0", "gd_1", "gd_2"], reranked=["gd_0", "gd_1"], context=["gd_0", "gd_1"]
    )
    assert classify_stage(trace, ["gd_0", "gd_1", "gd_2"], 0.0, 3, CFG).stage is Stage.GENERATION


def test_unmeasurable_coverage() -> None:
    no_concepts = stage_from_coverage(None, 0, CFG)
    assert no_concepts.stage is Stage.RETRIEVAL and "elimination" in no_concepts.reason
    no_text = stage_from_coverage(None, 3, CFG)
    assert no_text.stage is None
    assert no_text.reason.startswith("stage_attribution:")


def test_flow_without_reranker() -> None:
    trace = make_trace(retrieved=["gd_0", "od_0"], reranked=[], context=["od_0"])
    flow = gt_flow(trace, ["gd_0", "gd_0"])  # duplicates collapse
    assert flow.gt_ids == ("gd_0",)
    assert flow.not_forwarded == ("gd_0",) and flow.budget_dropped == ()
    assert flow.context_share == 0.0
    assert gt_flow(trace, []).context_share is None


def test_reference_held_whole_by_a_context_chunk_is_generation() -> None:
    """Chunk overlap: the reference lies whole in the chunk that reached the generator and
    touches the next chunk, which was never retrieved. The evidence was in the context."""
    from ragtriage.config import DiagnosisConfig
    from ragtriage.diagnosis.stage import gt_flow, holding_chunks, stage_from_references
    from ragtriage.records import Chunk, Example, Hit, Trace

    ref = "The plant in Tarnow produced 4,200 tonnes of copper in 2020."
    a = "Company history. " + ref + " Output then"
    b = "Output then fell by a third in 2021 after the strike."
    ex = Example(
        example_id="q",
        query="How much copper did Tarnow produce in 2020?",
        answer="4,200 tonnes",
        references=[ref],
        doc_ids=["d"],
    )
    chunks = [
        Chunk(chunk_id="d#0", doc_id="d", index=0, start=0, end=len(a), text=a),
        Chunk(
            chunk_id="d#1", doc_id="d", index=1, start=len(a) - 11, end=len(a) - 11 + len(b), text=b
        ),
    ]
    trace = Trace(
        trace_id="q",
        run_id="r",
        example=ex,
        gt_doc_chunks=chunks,
        chunks=chunks,
        retrieved=[Hit(chunk_id="d#0", doc_id="d", rank=1, score=1.0)],
        reranked=[Hit(chunk_id="d#0", doc_id="d", rank=1, score=1.0)],
        context=["d#0"],
        answer="3,200 tonnes",
    )
    cfg = DiagnosisConfig()
    flow = gt_flow(trace, ["d#0", "d#1"])
    assert holding_chunks(trace, trace.context) == ["d#0"]
    call = stage_from_references(trace, flow, cfg)
    assert call is not None and call.stage is Stage.GENERATION
    # off, or a reference that no context chunk holds whole: the paper's cascade decides
    assert (
        stage_from_references(trace, flow, cfg.model_copy(update={"reference_extension": False}))
        is None
    )
    other = trace.model_copy(update={"example": ex.model_copy(update={"references": [ref, b]})})
    assert stage_from_references(other, flow, cfg) is None


def test_the_lacking_facts_own_chunk_never_retrieved_is_retrieval_not_reranking() -> None:
    # another GT chunk (gd_1) was retrieved and dropped by the reranker, but the chunk
    # holding the reference the answer lacks (gd_0) was never retrieved: retrieval
    ref = "Acme Corp was founded in 1999 in Springfield."
    trace = make_trace(
        answer="I don't know when Acme Corp was founded.",
        references=[ref, "It sells widgets and gadgets to retailers."],
        retrieved=["od_0", "gd_1"],
        reranked=["od_0"],
        context=["od_0"],
    )
    call = classify_stage(trace, ["gd_0", "gd_1"], 1.0, 4, CFG)
    assert call.stage is Stage.RETRIEVAL and "gd_0 was never retrieved" in call.reason
    # the lacking fact's own chunk retrieved and dropped: reranking, as before
    dropped = make_trace(
        answer="I don't know when Acme Corp was founded.",
        references=[ref],
        retrieved=["od_0", "gd_0"],
        reranked=["od_0"],
        context=["od_0"],
    )
    assert classify_stage(dropped, ["gd_0", "gd_1"], 1.0, 4, CFG).stage is Stage.RERANKING


def test_the_lacking_facts_own_chunk_never_retrieved_is_retrieval_zh() -> None:
    ref = "甲公司成立于1999年，总部位于杭州。"
    kw = {
        "query": "甲公司成立于哪一年？",
        "gt_answer": "甲公司成立于1999年。",
        "answer": "文档中没有提到甲公司的成立时间，我不知道。",
        "gt_texts": (ref, "公司主要销售家电和电子产品。", "董事长为李某。"),
        "other_texts": ("乙公司成立于2005年。", "丙公司生产软件。"),
        "references": [ref],
        "reranked": ["od_0"],
        "context": ["od_0"],
    }
    # gd_1 retrieved and dropped, gd_0 (the reference) never retrieved: retrieval
    trace = make_trace(retrieved=["od_0", "gd_1"], **kw)  # type: ignore[arg-type]
    call = classify_stage(trace, ["gd_0", "gd_1"], 1.0, 4, CFG)
    assert call.stage is Stage.RETRIEVAL and "gd_0" in call.reason
    # gd_0 retrieved and dropped: reranking
    dropped = make_trace(retrieved=["od_0", "gd_0"], **kw)  # type: ignore[arg-type]
    assert classify_stage(dropped, ["gd_0", "gd_1"], 1.0, 4, CFG).stage is Stage.RERANKING


def test_a_lacking_fact_whose_reference_a_boundary_cuts_is_chunking() -> None:
    # the reference the answer lacks is cut between gd_0 and gd_1 (no chunk holds it
    # whole) and no piece reached the generator: the boundary lost it first -- chunking,
    # not the retrieval of the pieces
    ref = "Acme Corp was founded in 1999 in Springfield."
    kw = {
        "answer": "I don't know when Acme Corp was founded.",
        "gt_texts": (
            "Acme Corp was founded",
            "in 1999 in Springfield.",
            "It sells widgets and gadgets to retailers.",
        ),
        "references": [ref],
        "reranked": ["od_0"],
        "context": ["od_0"],
    }
    cut = make_trace(retrieved=["od_0", "gd_2"], **kw)  # type: ignore[arg-type]
    call = classify_stage(cut, ["gd_0", "gd_1", "gd_2"], 1.0, 4, CFG)
    assert call.stage is Stage.CHUNKING and "held whole by no chunk" in call.reason
    # held whole by gd_0 and never retrieved: retrieval, as before
    whole = make_trace(
        retrieved=["od_0", "gd_1"],
        **{**kw, "gt_texts": (ref, "It sells widgets.", "Its CEO is Ann Lee.")},  # type: ignore[arg-type]
    )
    assert classify_stage(whole, ["gd_0", "gd_1"], 1.0, 4, CFG).stage is Stage.RETRIEVAL
