"""Critic-guided correction with the closed loop (seed 004 §3.3, Tables 11-12)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from diag_helpers import make_trace
from llm_server import LocalLLMServer
from ragtriage.config import GenerationConfig, LLMConfig
from ragtriage.critic import (
    ACTION_NAMES,
    TIER1_ACTIONS,
    TIER1_PROGRAMS,
    LLMPlanner,
    OfflinePlanner,
    answer_rank,
    correct_traces,
    corrected_run,
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


async def test_offline_correction_keeps_only_proven_improvements() -> None:
    trace = _trace()
    pipeline = _pipeline([*trace.gt_doc_chunks, *trace.chunks])
    judge = Diagnoser("rules", "ragec")
    before = (await judge.diagnose_many([trace], 1))[0]
    assert before.needs_diagnosis
    [outcome] = await correct_traces(
        [trace], [before], pipeline, planner=OfflinePlanner(), iterations=3
    )
    assert outcome.touched and outcome.improved
    assert answer_rank(outcome.diagnosis) > answer_rank(before)
    assert "1999" in outcome.trace.answer
    kept = [a for a in outcome.attempts if a.get("kept")]
    assert len(kept) == 1 and kept[0]["actions"][-1] == "GenerateAnswer"


async def test_a_correct_trace_is_left_alone_and_worse_answers_are_not_kept() -> None:
    right = make_trace(
        gt_texts=GT, other_texts=OTHER, answer="Acme Corp was founded in 1999.", context=["gd_0"]
    )
    # a pipeline that only knows the distractors: every correction is worse or equal
    wrong = _trace()
    pipeline = _pipeline(wrong.chunks)
    outs = await correct_traces(
        [right, wrong], [], pipeline, planner=OfflinePlanner(), iterations=4
    )
    assert not outs[0].touched and outs[0].trace is right
    assert outs[1].touched and not outs[1].improved and outs[1].trace is wrong
    assert all(not a.get("kept") for a in outs[1].attempts)


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
    assert run.traces[0].metadata["correction"]["kept"] is True  # type: ignore[index]
    assert not run.diagnoses[0].needs_diagnosis
