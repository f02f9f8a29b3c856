"""Ground-truth chunks (seed 000, App. B.2.1): dataset, references, LLM votes (more
than 8 of 10), lexical fallback."""

from __future__ import annotations

from diag_helpers import make_trace
from ragtriage.config import DiagnosisConfig
from ragtriage.diagnosis._calls import LLMCalls, RequestOptions
from ragtriage.diagnosis.gt_chunks import (
    determine_gt_chunks,
    gt_chunk_views,
    gt_lexical,
    tally_gt_votes,
)
from ragtriage.llm import LLMRunner, ScriptedLLM

CFG = DiagnosisConfig()


def _calls(llm: ScriptedLLM, *, n_sampling: bool = True) -> LLMCalls:
    return LLMCalls(LLMRunner(llm), RequestOptions(n_sampling=n_sampling))


async def test_dataset_chunks_win_without_any_call() -> None:
    llm = ScriptedLLM([])
    trace = make_trace(gt_chunk_ids=["gd_2", "gd_2", "gd_0"])
    gt = await determine_gt_chunks(trace, CFG, _calls(llm))
    assert gt.ids == ("gd_2", "gd_0") and gt.source == "dataset"
    assert llm.requests == ()


async def test_references_give_the_overlapping_chunks() -> None:
    llm = ScriptedLLM([])
    trace = make_trace(references=["It sells widgets and gadgets"])
    gt = await determine_gt_chunks(trace, CFG, _calls(llm))
    assert gt.ids == ("gd_1",) and gt.source == "references"
    assert llm.requests == ()


async def test_unlocated_references_fall_through_to_votes() -> None:
    replies = ["Relevant Chunks: [C1]"] * 10
    llm = ScriptedLLM(replies)
    trace = make_trace(references=["a sentence that is nowhere in the document at all"])
    gt = await determine_gt_chunks(trace, CFG, _calls(llm))
    assert gt.source == "llm_votes" and gt.ids == ("gd_0",)


async def test_llm_votes_keep_chunks_chosen_more_than_8_of_10_times() -> None:
    # C1 (gd_0) in 10 votes, C2 (gd_1) in 9, C3 (gd_2) in 8 -> keep gd_0, gd_1
    replies = (
        ["Relevant Chunks: [C1, C2, C3]"] * 8
        + ["Relevant Chunks: [C1, C2]"]
        + ["Relevant Chunks: [C1]"]
    )
    llm = ScriptedLLM(replies)
    gt = await determine_gt_chunks(make_trace(), CFG, _calls(llm))
    assert gt.source == "llm_votes"
    assert gt.ids == ("gd_0", "gd_1")
    assert gt.vote_counts == {"gd_0": 10, "gd_1": 9, "gd_2": 8}
    assert gt.readable_votes == 10 and gt.unreadable_votes == 0
    # one request with n=10 (n sampling), showing every GT-document chunk
    assert len(llm.requests) == 1 and llm.requests[0].n == 10
    prompt = llm.requests[0].messages[-1].content
    assert "[C1] Acme Corp was founded in 1999" in prompt and "[C3]" in prompt


async def test_llm_votes_one_request_per_vote_without_n_sampling() -> None:
    llm = ScriptedLLM(["Relevant Chunks: [C2]"] * 10)
    gt = await determine_gt_chunks(make_trace(), CFG, _calls(llm, n_sampling=False))
    assert gt.ids == ("gd_1",)
    assert len(llm.requests) == 10 and {r.seed for r in llm.requests} == set(range(10))


async def test_unreadable_votes_are_counted_not_used() -> None:
    replies = ["Relevant Chunks: [C2]"] * 7 + ["no idea"] * 3
    llm = ScriptedLLM(replies)
    gt = await determine_gt_chunks(make_trace(), CFG, _calls(llm))
    assert gt.ids == ("gd_1",)  # 7 of 7 readable votes
    assert gt.readable_votes == 7 and gt.unreadable_votes == 3
    assert "3 unreadable" in gt.reason


async def test_all_votes_unreadable_falls_back_to_lexical() -> None:
    llm = ScriptedLLM("I cannot tell.")
    gt = await determine_gt_chunks(make_trace(), CFG, _calls(llm))
    assert gt.source == "lexical" and gt.ids == ("gd_0",)
    assert "LLM votes unreadable" in gt.reason


async def test_paper_protocol_asks_even_when_references_exist() -> None:
    llm = ScriptedLLM(["Relevant Chunks: [C2]"] * 10)
    trace = make_trace(references=["It sells widgets and gadgets"])
    gt = await determine_gt_chunks(trace, CFG, _calls(llm), use_given=False)
    assert gt.source == "llm_votes" and gt.ids == ("gd_1",)
    assert len(llm.requests) == 1


async def test_rules_judge_uses_lexical_overlap() -> None:
    gt = await determine_gt_chunks(make_trace(), CFG, None)
    assert gt.source == "lexical" and gt.ids == ("gd_0",)


def test_lexical_chinese() -> None:
    trace = make_trace(
        query="张某被判处了多长时间的有期徒刑？",
        gt_answer="张某被判处有期徒刑五年。",
        answer="三年",
        gt_texts=(
            "河源市人民法院审理了张某盗窃一案。",
            "法院判决张某犯盗窃罪，判处有期徒刑五年，并处罚金。",
            "本判决为终审判决。",
        ),
        language="zh",
    )
    gt = gt_lexical(trace)
    assert gt.ids == ("gd_1",)


async def test_unanswerable_has_no_gt_chunks() -> None:
    llm = ScriptedLLM([])
    trace = make_trace(gt_answer="", answerable=False)
    gt = await determine_gt_chunks(trace, CFG, _calls(llm))
    assert gt.ids == () and gt.source is None and "unanswerable" in gt.reason
    assert llm.requests == ()


def test_tally_parses_varied_formats() -> None:
    views = gt_chunk_views(make_trace())
    texts = [
        "Relevant Chunks: [C1, C3]",
        "relevant chunks: C1,C3",
        "After reviewing... Relevant Chunks: [c1, c3]\n",
        "```\nRelevant Chunks: [C1, C3]\n```",
        "Relevant Chunks: [gd_0, gd_2]",  # raw ids are accepted too
        None,  # a failed request
    ]
    tally = tally_gt_votes(texts, views, DiagnosisConfig(gt_chunk_vote_fraction=0.8))
    assert tally is not None
    assert tally.readable_votes == 5 and tally.unreadable_votes == 1
    assert tally.ids == ("gd_0", "gd_2")
    empty = tally_gt_votes(["Relevant Chunks: []"] * 3, views, CFG)
    assert empty is not None and empty.ids == () and empty.readable_votes == 3
    assert tally_gt_votes(["nothing", None], views, CFG) is None


def test_reference_fast_path_agrees_with_the_full_search() -> None:
    from ragtriage.diagnosis.gt_chunks import gt_from_references
    from ragtriage.groundtruth import gt_chunks_from_references

    for refs in (
        ["Acme Corp was founded in 1999"],  # verbatim: fast path
        ["acme corp  was founded in 1999"],  # only after normalisation: full search
        ["sells widgets and gadgets", "chief executive is Ann Lee"],
    ):
        trace = make_trace(references=refs)
        got = gt_from_references(trace)
        ids, _ = gt_chunks_from_references(trace.example, trace.gt_doc_chunks)
        assert got is not None and list(got.ids) == ids
