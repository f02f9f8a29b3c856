"""The Diagnoser end to end: rules and LLM judges, three strategies, votes, usage,
cache, dry run. The LLM is ScriptedLLM behind a real LLMRunner."""

from __future__ import annotations

from typing import Any

import pytest

from diag_helpers import judge_reply, make_trace
from ragtriage.config import DiagnosisConfig
from ragtriage.diagnosis import PAPER_PROTOCOL, Diagnoser
from ragtriage.errors import ConfigError, InputError
from ragtriage.llm import LLMRunner, ResponseCache, ScriptedLLM
from ragtriage.records import AnswerLabel, Diagnosis, ErrorType, Stage, Trace

E = ErrorType
REF = ["Acme Corp was founded in 1999"]


def _runner(script: Any, **kw: Any) -> tuple[LLMRunner, ScriptedLLM]:
    llm = ScriptedLLM(script)
    return LLMRunner(llm, **kw), llm


def _check(d: Diagnosis) -> None:
    """Invariants of every record: valid, never NaN, undetermined always explained."""
    again = Diagnosis.model_validate_json(d.to_json())
    assert again == d
    if d.undetermined:
        assert d.undetermined_reason
    if d.error_type is not None:
        assert d.mode_frequency is not None and 0 < d.mode_frequency <= 1
        assert d.votes.count(d.error_type) == round(d.mode_frequency * len(d.votes))


# -- rules judge -----------------------------------------------------------------------


async def test_rules_ragec_retrieval_error() -> None:
    d = await Diagnoser("rules").diagnose(make_trace(references=REF))
    _check(d)
    assert d.answer_label is AnswerLabel.INCORRECT and d.needs_diagnosis
    assert d.gt_chunk_ids == ["gd_0"] and d.gt_chunk_source == "references"
    assert d.stage is Stage.RETRIEVAL
    assert d.concepts and d.concept_coverage is not None and d.concept_coverage >= 0.8
    assert d.error_type is not None and d.error_type.stage is Stage.RETRIEVAL
    assert len(d.votes) == 10
    assert d.advice and d.evidence
    assert d.usage.calls == 0 and d.label == "fact_single" and d.run_id == "run1"
    assert (d.judge, d.strategy) == ("rules", "ragec")


async def test_rules_ragec_each_stage() -> None:
    gen = make_trace(
        references=REF, retrieved=["gd_0", "od_0"], reranked=["gd_0"], context=["gd_0"]
    )
    rerank = make_trace(
        references=REF, retrieved=["gd_0", "od_0"], reranked=["od_0"], context=["od_0"]
    )
    chunking = make_trace(
        query="When was Acme Corp founded in Springfield?",
        references=["Its chief executive is Ann Lee."],
        # four candidates: a retriever deep enough for the chunks to be judged
        retrieved=["od_0", "od_1", "gd_0", "gd_1"],
    )
    diagnoser = Diagnoser("rules", config=DiagnosisConfig(k=6))
    for trace, stage in (
        (gen, Stage.GENERATION),
        (rerank, Stage.RERANKING),
        (chunking, Stage.CHUNKING),
    ):
        d = await diagnoser.diagnose(trace)
        _check(d)
        assert d.stage is stage, d.stage_reason
        assert len(d.votes) == 6
        assert d.error_type is not None and d.error_type.stage is stage


async def test_correct_answer_is_not_diagnosed() -> None:
    d = await Diagnoser("rules").diagnose(make_trace(answer="Acme Corp was founded in 1999."))
    _check(d)
    assert d.answer_label is AnswerLabel.CORRECT and not d.needs_diagnosis
    assert d.stage is None and d.votes == [] and not d.undetermined


async def test_undetermined_answer_evaluation_is_kept_and_explained() -> None:
    d = await Diagnoser("rules").diagnose(make_trace(gt_answer="…"))
    _check(d)
    assert d.answer_label is None and d.undetermined and not d.needs_diagnosis
    assert d.undetermined_reason is not None
    assert d.undetermined_reason.startswith("answer_evaluation:")


async def test_rules_alternative_strategies() -> None:
    trace = make_trace(references=REF)
    for strategy in ("single-step", "stage-sequential"):
        d = await Diagnoser("rules", strategy).diagnose(trace)  # type: ignore[arg-type]
        _check(d)
        assert d.strategy == strategy
        if d.stage is None:
            assert d.undetermined
        else:
            assert d.error_type is not None and d.error_type.stage is d.stage


async def test_diagnose_many_keeps_order_and_reports_each() -> None:
    traces = [make_trace(example_id=f"q{i}", references=REF) for i in range(5)]
    seen: list[str] = []
    out = await Diagnoser("rules").diagnose_many(
        traces, 2, on_result=lambda d: seen.append(d.example_id)
    )
    assert [d.example_id for d in out] == [f"q{i}" for i in range(5)]
    assert sorted(seen) == sorted(d.example_id for d in out)


def test_bad_arguments() -> None:
    with pytest.raises(ConfigError, match="RAGTRIAGE_LLM_BASE_URL"):
        Diagnoser("llm")
    with pytest.raises(InputError):
        Diagnoser("rules", "backwards")  # type: ignore[arg-type]


# -- LLM judge -------------------------------------------------------------------------


def _llm_trace(**kw: Any) -> Trace:
    return make_trace(references=REF, **kw)


async def test_llm_ragec_retrieval_uses_every_cost_saver() -> None:
    runner, llm = _runner(judge_reply())
    d = await Diagnoser("llm", llm=runner).diagnose(_llm_trace())
    _check(d)
    assert d.answer_label is AnswerLabel.INCORRECT and d.stage is Stage.RETRIEVAL
    assert d.gt_chunk_source == "references"
    assert d.concepts == ["Acme Corp", "founded"] and d.concept_coverage == 1.0
    assert d.error_type is E.E4 and d.second_type is E.E5 and d.mode_frequency == 0.8
    assert d.votes == [E.E4] * 8 + [E.E5] * 2
    # answer eval + concept extraction + ONE batched containment + ONE n=10 vote request
    purposes = [r.n for r in llm.requests]
    assert purposes == [1, 1, 1, 10]
    assert d.usage.calls == 4 and d.usage.cached_calls == 0
    assert d.usage.prompt_tokens > 0 and d.usage.completion_tokens > 0
    # only the retrieval stage's context goes to the type judge
    vote_prompt = llm.requests[-1].messages[-1].content
    assert "Retrieved Chunks" in vote_prompt and "Incorrect Answer" not in vote_prompt
    assert d.advice


@pytest.mark.parametrize(
    ("kw", "stage", "mode"),
    [
        (
            {"retrieved": ["gd_0", "od_0"], "reranked": ["gd_0"], "context": ["gd_0"]},
            Stage.GENERATION,
            E.E13,
        ),
        (
            {"retrieved": ["gd_0", "od_0"], "reranked": ["od_0"], "context": ["od_0"]},
            Stage.RERANKING,
            E.E7,
        ),
    ],
)
async def test_llm_ragec_generation_and_reranking(
    kw: dict[str, Any], stage: Stage, mode: ErrorType
) -> None:
    runner, llm = _runner(judge_reply())
    d = await Diagnoser("llm", llm=runner).diagnose(_llm_trace(**kw))
    _check(d)
    assert d.stage is stage and d.error_type is mode
    assert d.concepts == []  # no concept calls needed for these stages
    assert len(llm.requests) == 2


async def test_llm_ragec_chunking_by_low_coverage() -> None:
    runner, _ = _runner(judge_reply(containment="K1: C1\nK2: NONE"))
    # four candidates: a retriever deep enough for the chunks to be judged
    trace = _llm_trace(retrieved=["od_0", "od_1", "gd_1", "gd_2"])
    # the paper's cascade: the coverage alone decides (the extension asks for positive
    # evidence of a cut as well, tests/test_stage.py)
    paper = DiagnosisConfig(chunking_extension=False)
    d = await Diagnoser("llm", config=paper, llm=runner).diagnose(trace)
    assert d.stage is Stage.CHUNKING and d.concept_coverage == 0.5
    assert d.error_type is E.E3


async def test_llm_parse_failures_become_undetermined_votes() -> None:
    votes = ["Missed Retrieval"] * 4 + ["no clue"] * 4 + ["Misinterpretation"] * 2
    runner, _ = _runner(judge_reply(retrieval_votes=votes))
    d = await Diagnoser("llm", llm=runner).diagnose(_llm_trace())
    _check(d)
    assert d.error_type is E.E4 and d.mode_frequency == 0.4
    assert d.votes.count("undetermined") == 6  # a type of another stage is no vote
    assert any("6/10 sample(s) named no retrieval type" in e for e in d.evidence)


async def test_llm_all_votes_unreadable_is_undetermined() -> None:
    runner, _ = _runner(judge_reply(retrieval_votes=["?"]))
    d = await Diagnoser("llm", llm=runner).diagnose(_llm_trace())
    _check(d)
    assert d.stage is Stage.RETRIEVAL and d.error_type is None and d.undetermined
    assert d.undetermined_reason == "type_classification: all 10 votes undetermined"


async def test_llm_answer_eval_parse_failure_is_undetermined() -> None:
    runner, _ = _runner(judge_reply(label="banana"))
    d = await Diagnoser("llm", llm=runner).diagnose(_llm_trace())
    _check(d)
    assert d.answer_label is None and d.undetermined
    assert d.undetermined_reason is not None and d.undetermined_reason.startswith(
        "answer_evaluation:"
    )


async def test_llm_cache_makes_a_second_pass_free() -> None:
    cache = ResponseCache(":memory:")
    runner, llm = _runner(judge_reply(), cache=cache)
    first = await Diagnoser("llm", llm=runner).diagnose(_llm_trace())
    n = len(llm.requests)
    second = await Diagnoser("llm", llm=runner).diagnose(_llm_trace())
    assert len(llm.requests) == n  # nothing new reached the client
    assert second.usage.calls == 0 and second.usage.cached_calls == first.usage.calls
    assert second.votes == first.votes and second.error_type == first.error_type


async def test_paper_protocol_costs_more_but_agrees() -> None:
    runner_a, llm_a = _runner(judge_reply())
    runner_b, llm_b = _runner(judge_reply())
    paper = await Diagnoser("llm", llm=runner_a, options=PAPER_PROTOCOL).diagnose(_llm_trace())
    ours = await Diagnoser("llm", llm=runner_b).diagnose(_llm_trace())
    assert (paper.stage, paper.error_type, paper.second_type, paper.votes) == (
        ours.stage,
        ours.error_type,
        ours.second_type,
        ours.votes,
    )
    # 1 eval + 10 GT votes + 1 extraction + 2 containment + 10 type votes
    assert len(llm_a.requests) == 24 and paper.usage.calls == 24
    assert len(llm_b.requests) == 4


async def test_llm_single_step_stage_is_the_modal_types_stage() -> None:
    runner, llm = _runner(judge_reply())
    d = await Diagnoser("llm", "single-step", llm=runner).diagnose(_llm_trace())
    _check(d)
    assert d.error_type is E.E4 and d.second_type is E.E13 and d.stage is Stage.RETRIEVAL
    assert d.gt_chunk_ids == []  # single-step needs no GT chunks
    assert len(llm.requests) == 2


async def test_llm_stage_sequential_first_yes_wins() -> None:
    checks = {"chunking": ["No Error"] * 10, "retrieval": ["Low Relevance"] * 7 + ["No Error"] * 3}
    runner, llm = _runner(judge_reply(stage_checks=checks))
    d = await Diagnoser("llm", "stage-sequential", llm=runner).diagnose(_llm_trace())
    _check(d)
    assert d.stage is Stage.RETRIEVAL and d.error_type is E.E5 and d.mode_frequency == 0.7
    assert len(llm.requests) == 3  # eval, chunking check, retrieval check


async def test_llm_stage_sequential_generation_by_elimination() -> None:
    runner, _ = _runner(judge_reply())
    d = await Diagnoser("llm", "stage-sequential", llm=runner).diagnose(_llm_trace())
    assert d.stage is Stage.GENERATION and d.error_type is E.E13
    assert "elimination" in d.stage_reason


async def test_dry_run_estimates_without_calling() -> None:
    llm = ScriptedLLM(judge_reply())
    runner = LLMRunner(llm, dry_run=True)
    d = await Diagnoser("llm", llm=runner).diagnose(_llm_trace())
    assert llm.requests == ()
    est = runner.ledger.summary().total
    # the path of the rules judge is followed: eval, concepts, containment, votes
    assert est.estimated_calls == 4 and est.estimated_prompt_tokens > 0
    assert d.undetermined


async def test_dry_run_after_an_unreadable_cached_verdict_estimates_nothing_more() -> None:
    """The real run stops at an unreadable answer verdict (undetermined); a later dry
    run over the same cache must not estimate the type calls that run never makes."""

    def unreadable(request: Any, sample: int) -> str:
        return "<<< no verdict here >>>"

    cache = ResponseCache(":memory:")
    real = LLMRunner(ScriptedLLM(unreadable), cache=cache)
    first = await Diagnoser("llm", llm=real).diagnose(_llm_trace())
    assert first.undetermined and real.ledger.summary().total.calls == 1
    dry = LLMRunner(ScriptedLLM(unreadable), cache=cache, dry_run=True)
    again = await Diagnoser("llm", llm=dry).diagnose(_llm_trace())
    total = dry.ledger.summary().total
    assert (total.estimated_calls, total.cache_hits) == (0, 1)
    assert again.undetermined and again.undetermined_reason == first.undetermined_reason


async def test_rules_alternatives_do_not_blame_a_stage_that_delivered_everything() -> None:
    # every GT chunk was retrieved, kept by the reranker and given to the generator,
    # which got the number wrong: neither strategy may put it on chunking, retrieval or
    # reranking (their tests describe the pipeline, not a failure, in this case)
    trace = make_trace(
        query="How many turbines does the Hallorn wind park have?",
        gt_answer="The Hallorn wind park has 42 turbines.",
        answer="The Hallorn wind park has 24 turbines.",
        gt_texts=(
            "The Hallorn wind park has 42 turbines.",
            "It was built by Nordvik Energi.",
            "Its output is sold to the regional grid.",
        ),
        references=["The Hallorn wind park has 42 turbines."],
        retrieved=["gd_0", "od_0", "gd_1"],
        reranked=["gd_0", "gd_1"],
        context=["gd_0", "gd_1"],
    )
    for strategy in ("single-step", "stage-sequential"):
        d = await Diagnoser("rules", strategy).diagnose(trace)  # type: ignore[arg-type]
        assert d.stage is Stage.GENERATION, (strategy, d.stage_reason, d.evidence)


async def test_rules_alternatives_zh_reranker_drop_is_not_blamed_on_retrieval() -> None:
    trace = make_trace(
        query="河湾水厂每天供水多少吨？",
        gt_answer="每天供水12万吨。",
        answer="我不知道。",
        gt_texts=("河湾水厂每天供水12万吨。", "水厂始建于1998年。", "水厂位于城东。"),
        other_texts=("山前水厂每天供水5万吨。", "城西污水厂正在扩建。"),
        references=["河湾水厂每天供水12万吨。"],
        retrieved=["od_0", "gd_0", "od_1"],
        reranked=["od_0", "od_1"],
        context=["od_0", "od_1"],
        language="zh",
    )
    for strategy in ("single-step", "stage-sequential"):
        d = await Diagnoser("rules", strategy).diagnose(trace)  # type: ignore[arg-type]
        assert d.stage is Stage.RERANKING, (strategy, d.stage_reason)


async def test_rules_judge_in_worker_processes_gives_identical_results() -> None:
    """`workers > 1` only changes where the CPU work runs, never the diagnoses."""
    answers = ("Acme Corp was founded in 2005.", "Acme Corp was founded in 1999.", "I don't know.")
    traces = [
        make_trace(
            example_id=f"q{i}",
            answer=answers[i % 3],
            retrieved=None if i % 2 else ["gd_1", "gd_2", "od_0"],
        )
        for i in range(80)
    ]
    diagnoser = Diagnoser("rules")
    seen: list[str] = []
    parallel = await diagnoser.diagnose_many(
        traces, workers=2, on_result=lambda d: seen.append(d.example_id)
    )
    serial = await diagnoser.diagnose_many(traces)
    assert [d.to_json() for d in parallel] == [d.to_json() for d in serial]
    assert sorted(seen) == sorted(t.example.example_id for t in traces)
    assert any(d.needs_diagnosis for d in serial) and any(not d.needs_diagnosis for d in serial)


@pytest.mark.parametrize(("n", "workers"), [(4000, 2), (4000, 16), (100, 2), (64, 8), (65, 3)])
def test_worker_batches_cover_every_trace_once_and_shrink(n: int, workers: int) -> None:
    """The pool's batches are consecutive, cover every index once, stay within the batch
    bounds (the last may be a remainder) and never grow: the last batch, which leaves the
    other workers idle for its length, is one of the shortest."""
    from ragtriage.diagnosis.engine import _MAX_BATCH, _MIN_BATCH, _batches

    ranges = _batches(n, workers)
    assert [i for lo, hi in ranges for i in range(lo, hi)] == list(range(n))
    sizes = [hi - lo for lo, hi in ranges]
    assert all(_MIN_BATCH <= s <= _MAX_BATCH for s in sizes[:-1])
    assert 0 < sizes[-1] <= _MAX_BATCH
    assert sizes == sorted(sizes, reverse=True)
    if (n, workers) == (4000, 2):
        assert sizes[0] > 4 * sizes[-1]  # long batches first, short ones at the end


@pytest.mark.parametrize("strategy", ["ragec", "single-step", "stage-sequential"])
async def test_no_identifiable_ground_truth_chunk_is_undetermined_not_generation(
    strategy: str,
) -> None:
    """A user trace that carries no chunks of the ground-truth documents leaves nothing
    for the cascade to follow: the stage is undetermined (with the reason), not a guess
    at generation. An unanswerable question still goes to generation."""
    bare = make_trace(references=REF).model_copy(update={"gt_doc_chunks": ()})
    d = await Diagnoser("rules", strategy).diagnose(bare)  # type: ignore[arg-type]
    _check(d)
    assert d.answer_label is AnswerLabel.INCORRECT and d.needs_diagnosis
    assert d.undetermined and d.stage is None and d.error_type is None
    assert d.undetermined_reason is not None
    assert "no ground-truth chunk could be identified" in d.undetermined_reason
    assert "no ground-truth document chunks" in d.undetermined_reason
    unanswerable = make_trace(gt_answer="", answerable=False, answer="It was 1999.")
    u = await Diagnoser("rules", strategy).diagnose(unanswerable)  # type: ignore[arg-type]
    assert u.stage is Stage.GENERATION, u.undetermined_reason


def test_rules_judge_makes_no_reference_cycles() -> None:
    """The rules judge pauses the cyclic collector while it runs (engine._no_collections):
    that is safe only if diagnosing leaves no cyclic garbage behind, on every answer
    style of the real-style set, and if the collector is running again afterwards."""
    import asyncio
    import gc
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "benchmarks" / "data" / "realstyle"
    traces = [
        Trace.model_validate_json(line)
        for part in ("demo", "public", "fresh5")
        for line in (root / part / "traces.jsonl").read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    diagnoser = Diagnoser("rules", "ragec")
    asyncio.run(diagnoser.diagnose_many(traces[:20]))  # imports and first-use setup
    gc.collect()
    gc.disable()
    try:
        found = asyncio.run(diagnoser.diagnose_many(traces))
        assert len(found) == len(traces)
        assert gc.collect() == 0
    finally:
        gc.enable()
    asyncio.run(diagnoser.diagnose_many(traces[:5]))
    assert gc.isenabled()
