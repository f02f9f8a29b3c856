"""Critic-guided correction with the closed loop (seed 004 §3.3, Tables 11-12): the
reference-free critic selects, the gold answer only evaluates."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from diag_helpers import make_trace
from llm_server import LocalLLMServer, last_user
from ragtriage.config import GenerationConfig, LLMConfig
from ragtriage.critic import (
    ACTION_NAMES,
    TIER1_ACTIONS,
    TIER1_PROGRAMS,
    CorrectionOutcome,
    CriticVerdict,
    LLMCritic,
    LLMPlanner,
    OfflinePlanner,
    ReferenceFreeCritic,
    answer_rank,
    correct_traces,
    corrected_run,
    correction_summary,
    critic_rank,
    error_system,
    programs_for,
    programs_for_ragec,
    run_program,
)
from ragtriage.diagnosis.engine import Diagnoser
from ragtriage.generation import ExtractiveGenerator, Generation
from ragtriage.llm import LLMRunner
from ragtriage.records import Chunk, ErrorType, Trace
from ragtriage.store import load_run_dir
from ragtriage.text import content_tokens

GT = [
    "Acme Corp was founded in 1999 in Springfield.",
    "It sells widgets and gadgets to retailers.",
    "Its chief executive is Ann Lee.",
]
OTHER = ["Globex Inc was founded in 2005 in Shelbyville.", "Initech makes software for banks."]


class TinyPipeline:
    """A real, in-memory implementation of the two stages the actions use: retrieval by
    content-word overlap and the offline extractive generator."""

    def __init__(self, chunks: Sequence[Chunk]) -> None:
        self.chunks = list(chunks)
        self.config = None
        self._gen = ExtractiveGenerator(GenerationConfig(backend="extractive"))

    async def retrieve_chunks(self, query: str, top_k: int) -> list[Chunk]:
        want = set(content_tokens(query))
        ranked = sorted(self.chunks, key=lambda c: -len(want & set(content_tokens(c.text))))
        return ranked[:top_k]

    async def generate_answer(
        self, query: str, context: Sequence[Chunk], *, language: str
    ) -> Generation:
        return await self._gen.generate(query, context, language=language)


def _pipeline(trace_chunks: Sequence[Chunk]) -> TinyPipeline:
    return TinyPipeline(trace_chunks)


def _trace() -> Trace:
    # the generator saw only a distractor: answered 2005 (wrong)
    return make_trace(gt_texts=GT, other_texts=OTHER, context=["od_0"])


def test_table_11_covers_every_tier1_and_its_programs_pass_the_executor() -> None:
    assert set(TIER1_ACTIONS) == set(error_system().tier1) == set(TIER1_PROGRAMS)
    calls: list[str] = []

    def stub(name: str):  # type: ignore[no-untyped-def]
        def f(*args: object, **kw: object) -> object:
            calls.append(name)
            if name in ("Retrieval", "RewriteQuery", "DecomposeQuery"):
                return ["q or doc"]
            return "text"

        return f

    actions = {n: stub(n) for n in ACTION_NAMES}
    for _, program in programs_for(list(TIER1_PROGRAMS)):
        result = run_program(
            program,
            actions,
            max_steps=500,
            timeout_s=5.0,
            variables={"query": "q", "docs": ["d1", "d2"], "prediction": "p"},
        )
        assert result == "text"
    assert set(calls) == set(ACTION_NAMES)
    # from RAGEC types: E8 (reranker let noise through) -> Irrelevant Information
    assert [t for t, _ in programs_for_ragec(ErrorType.E8)] == ["Irrelevant Information"]
    assert all(programs_for_ragec(t) for t in ErrorType)


def test_correct_cli_names_a_missing_manifest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from ragtriage.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["correct", str(tmp_path), "--out", str(tmp_path / "new")])
    assert exc.value.code == 2
    assert "manifest.json" in capsys.readouterr().err


async def test_offline_correction_keeps_only_what_the_critic_ranks_higher() -> None:
    trace = _trace()
    pipeline = _pipeline([*trace.gt_doc_chunks, *trace.chunks])
    judge = Diagnoser("rules", "ragec")
    before = (await judge.diagnose_many([trace], 1))[0]
    assert before.needs_diagnosis
    [outcome] = await correct_traces(
        [trace], [before], pipeline, planner=OfflinePlanner(), iterations=3
    )
    # the critic, without the gold answer, flags the 2005 (Globex's year, not Acme's)
    assert outcome.touched and outcome.improved
    assert "1999" in outcome.trace.answer
    assert [critic_rank(v) for v in outcome.verdicts] == [2]
    kept = [a for a in outcome.attempts if a.get("kept")]
    assert len(kept) == 1 and kept[0]["actions"][-1] == "GenerateAnswer"
    # the gold answer evaluates afterwards: better
    assert outcome.gold_before is before and outcome.gold_change == 1
    assert answer_rank(outcome.diagnosis) > answer_rank(before)
    summary = correction_summary([outcome])
    assert (summary.flagged, summary.kept, summary.better, summary.worse) == (1, 1, 1, 0)
    assert (summary.correct_before, summary.correct_after) == (0, 1)
    assert "1 better by the gold answer, 0 worse" in summary.line()


async def test_the_gold_answer_never_decides_what_is_kept() -> None:
    trace = _trace()
    # the same trace with its gold answer removed, or replaced by the wrong year
    blind = trace.model_copy(
        update={"example": trace.example.model_copy(update={"answer": "", "keypoints": []})}
    )
    misled = trace.model_copy(
        update={"example": trace.example.model_copy(update={"answer": "It was founded in 2005."})}
    )
    pipeline = _pipeline([*trace.gt_doc_chunks, *trace.chunks])
    outs = [
        (await correct_traces([t], [], pipeline, planner=OfflinePlanner(), iterations=3))[0]
        for t in (trace, blind, misled)
    ]
    assert len({o.trace.answer for o in outs}) == 1
    assert [len(o.attempts) for o in outs] == [len(outs[0].attempts)] * 3
    assert outs[0].gold_change == 1 and outs[2].gold_change == -1  # judged by each gold
    assert outs[1].gold_change is None  # no gold answer: nothing to evaluate against
    assert correction_summary([outs[1]]).line().endswith("(no gold answers: not evaluated)")


async def test_a_correct_trace_is_left_alone_and_worse_answers_are_not_kept() -> None:
    right = make_trace(
        gt_texts=GT, other_texts=OTHER, answer="Acme Corp was founded in 1999.", context=["gd_0"]
    )
    # a pipeline that only knows the distractors: the critic accepts no candidate
    wrong = _trace()
    pipeline = _pipeline(wrong.chunks)
    outs = await correct_traces(
        [right, wrong], [], pipeline, planner=OfflinePlanner(), iterations=4
    )
    assert not outs[0].touched and outs[0].trace is right and not outs[0].attempts
    assert outs[1].touched and not outs[1].improved and outs[1].trace is wrong
    assert outs[1].attempts and all(not a.get("kept") for a in outs[1].attempts)
    assert outs[1].gold_change is None


async def test_llm_planner_over_http_runs_only_through_the_executor(
    llm_server: LocalLLMServer, tmp_path: Path
) -> None:
    replies = iter(
        [
            "```python\nimport os\nanswer = os.system('echo pwned')\n```",
            "this is not a program at all :::",
            "```python\nnew_docs = Retrieval(query, 3)\n"
            "answer = GenerateAnswer(query, docs + new_docs)\n```",
        ]
    )
    llm_server.behaviour.reply = lambda body, index: next(replies)  # type: ignore[assignment]
    cfg = LLMConfig(base_url=llm_server.base_url, model="planner", max_retries=0)
    runner = LLMRunner.from_config(cfg, cache_path=tmp_path / "c.sqlite")
    trace = _trace()
    try:
        [outcome] = await correct_traces(
            [trace],
            [],
            _pipeline([*trace.gt_doc_chunks, *trace.chunks]),
            planner=LLMPlanner(runner, model="planner"),
            iterations=3,
        )
    finally:
        await runner.aclose()
        runner.close()
    first, second, third = outcome.attempts
    assert "not allowed" in first["rejected"]
    assert "syntax error" in second["rejected"]
    assert third["kept"] is True and outcome.improved
    assert {a["planner"] for a in outcome.attempts} == {"llm"}
    # the planner saw the critic's tiers and analysis, not a gold-answer diagnosis
    prompt = last_user(llm_server.bodies[0])
    assert "Entity Misattribution" not in prompt  # tier-3 is not sent; tier-1/2 are
    assert "Off-Topic Response" in prompt and "Globex Inc" in prompt


async def test_llm_planner_falls_back_to_the_table_when_the_llm_gives_no_program(
    llm_server: LocalLLMServer, tmp_path: Path
) -> None:
    llm_server.behaviour.fail_500_first = 100
    cfg = LLMConfig(base_url=llm_server.base_url, model="planner", max_retries=0)
    runner = LLMRunner.from_config(cfg, cache_path=tmp_path / "c.sqlite")
    trace = _trace()
    planner = LLMPlanner(runner, model="planner")
    try:
        [outcome] = await correct_traces(
            [trace],
            [],
            _pipeline([*trace.gt_doc_chunks, *trace.chunks]),
            planner=planner,
            iterations=3,
        )
    finally:
        await runner.aclose()
        runner.close()
    assert planner.failures and llm_server.chat_requests >= 1
    assert outcome.attempts and all(
        a["planner"].startswith("table (LLM planner: ") for a in outcome.attempts
    )
    table = OfflinePlanner().options(outcome.verdicts[0])
    assert outcome.attempts[0]["program"] in {p for _, p in table}
    assert outcome.improved and "1999" in outcome.trace.answer


async def _with_llm_critic(
    llm_server: LocalLLMServer, tmp_path: Path, reply: object
) -> CorrectionOutcome:
    llm_server.behaviour.reply = reply  # type: ignore[assignment]
    cfg = LLMConfig(base_url=llm_server.base_url, model="critic", max_retries=0)
    runner = LLMRunner.from_config(cfg, cache_path=tmp_path / "c.sqlite")
    trace = _trace()
    try:
        [outcome] = await correct_traces(
            [trace],
            [],
            _pipeline([*trace.gt_doc_chunks, *trace.chunks]),
            planner=OfflinePlanner(),
            iterations=2,
            llm_critic=LLMCritic(runner, model="critic"),
        )
    finally:
        await runner.aclose()
        runner.close()
    return outcome


async def test_no_configured_critic_may_rank_a_kept_candidate_lower(
    llm_server: LocalLLMServer, tmp_path: Path
) -> None:
    error = '{"Judgement": "Error", "tag1": ["Inaccurate Response"], "tag2": []}'

    def likes_2005(body: dict[str, object], index: int) -> str:
        # the LLM critic prefers the original (2005): every candidate ranks lower by it
        prediction = last_user(body).split("**Model's Prediction:**")[1]
        return '{"Judgement": "Correct"}' if "2005" in prediction else error

    outcome = await _with_llm_critic(llm_server, tmp_path, likes_2005)
    assert outcome.touched and not outcome.improved and outcome.trace.answer.endswith("2005.")
    judged = [a["critic"] for a in outcome.attempts if "critic" in a]
    assert judged and all(c == ["correct", "error"] for c in judged)
    assert [v.critic for v in outcome.verdicts] == ["reference-free", "llm"]
    # no request carried the gold answer
    assert all("Golden answer" not in last_user(b) for b in llm_server.bodies)


async def test_a_candidate_one_critic_ranks_higher_and_none_lower_is_kept(
    llm_server: LocalLLMServer, tmp_path: Path
) -> None:
    outcome = await _with_llm_critic(
        llm_server,
        tmp_path,
        lambda body, index: '{"Judgement": "Error", "tag1": ["Inaccurate Response"]}',
    )
    assert outcome.improved and "1999" in outcome.trace.answer
    assert [critic_rank(v) for v in outcome.verdicts] == [2, 0]


def test_critic_rank_orders_correct_undetermined_error() -> None:
    base = {"example_id": "x", "critic": "c", "reference": False}
    ranks = [
        critic_rank(CriticVerdict(**base, judgement=j))  # type: ignore[arg-type]
        for j in ("correct", None, "error")
    ]
    assert ranks == [2, 1, 0]
    assert ReferenceFreeCritic().name == "reference-free"


def test_corrected_run_is_a_run_compare_reads(tmp_path: Path) -> None:
    import asyncio

    trace = _trace()
    pipeline = _pipeline([*trace.gt_doc_chunks, *trace.chunks])
    outcomes = asyncio.run(
        correct_traces([trace], [], pipeline, planner=OfflinePlanner(), iterations=3)
    )
    manifest = {"run_id": "run1", "name": "demo", "created_at": "2025-01-01T00:00:00+00:00"}
    new_manifest, traces, diags = corrected_run(outcomes, manifest, planner="table")
    from ragtriage.jsonl import write_jsonl

    write_jsonl(tmp_path / "traces.jsonl", traces)
    write_jsonl(tmp_path / "diagnoses.jsonl", diags)
    (tmp_path / "manifest.json").write_text(json.dumps(new_manifest))
    run = load_run_dir(tmp_path)
    assert run.run_id.startswith("run1-corrected-") and run.manifest["corrected_from"] == "run1"
    meta = run.traces[0].metadata["correction"]
    assert meta["kept"] is True and meta["gold_change"] == 1  # type: ignore[index]
    assert meta["critic"][0]["judgement"] == "correct"  # type: ignore[index]
    assert not run.diagnoses[0].needs_diagnosis
    gold = run.manifest["correction"]["gold_evaluation"]
    assert (gold["kept"], gold["better"], gold["worse"]) == (1, 1, 0)
