"""The LLM judge over real HTTP: OpenAICompatible → local server on 127.0.0.1, with the
runner's cache and the fallback for endpoints that ignore ``n``."""

from __future__ import annotations

from pathlib import Path

from diag_helpers import judge_reply, make_trace, server_reply
from llm_server import LocalLLMServer
from ragtriage.config import LLMConfig
from ragtriage.diagnosis import Diagnoser
from ragtriage.judge.parsing import parse_answer_label, parse_chunk_choice, parse_error_type
from ragtriage.judge.prompts import NO_ERROR, type_prompt
from ragtriage.llm import LLMRunner
from ragtriage.records import AnswerLabel, ErrorType, Stage

E = ErrorType
REF = ["Acme Corp was founded in 1999"]


def _runner(server: LocalLLMServer, cache: Path) -> LLMRunner:
    cfg = LLMConfig(base_url=server.base_url, model="judge-model", max_retries=1)
    return LLMRunner.from_config(cfg, cache_path=cache)


async def test_llm_judge_over_http_end_to_end(llm_server: LocalLLMServer, tmp_path: Path) -> None:
    llm_server.behaviour.reply = server_reply(judge_reply())  # type: ignore[assignment]
    runner = _runner(llm_server, tmp_path / "cache.sqlite")
    async with runner:
        d = await Diagnoser("llm", llm=runner).diagnose(make_trace(references=REF))
    assert d.answer_label is AnswerLabel.INCORRECT and d.stage is Stage.RETRIEVAL
    assert d.error_type is E.E4 and d.second_type is E.E5 and d.mode_frequency == 0.8
    assert llm_server.chat_requests == 4
    body = llm_server.bodies[-1]
    assert body["n"] == 10 and body["model"] == "judge-model"
    assert d.usage.calls == 4 and d.usage.prompt_tokens > 0


async def test_llm_judge_over_http_without_n_support(
    llm_server: LocalLLMServer, tmp_path: Path
) -> None:
    llm_server.behaviour.reply = server_reply(judge_reply())  # type: ignore[assignment]
    llm_server.behaviour.ignore_n = True
    runner = _runner(llm_server, tmp_path / "cache.sqlite")
    async with runner:
        d = await Diagnoser("llm", llm=runner).diagnose(make_trace(references=REF))
    # the runner fetched the missing samples one by one with distinct seeds
    assert d.votes == [E.E4] * 8 + [E.E5] * 2
    assert llm_server.chat_requests == 3 + 10


async def test_second_pass_is_served_from_the_cache(
    llm_server: LocalLLMServer, tmp_path: Path
) -> None:
    llm_server.behaviour.reply = server_reply(judge_reply())  # type: ignore[assignment]
    cache = tmp_path / "cache.sqlite"
    trace = make_trace(references=REF)
    async with _runner(llm_server, cache) as runner:
        first = await Diagnoser("llm", llm=runner).diagnose(trace)
    served = llm_server.chat_requests
    async with _runner(llm_server, cache) as runner:
        second = await Diagnoser("llm", llm=runner).diagnose(trace)
        hits = runner.ledger.summary().total.cache_hits
    assert llm_server.chat_requests == served
    assert second.usage.calls == 0 and second.usage.cached_calls == 4
    assert hits == 1 + 1 + 1 + 10
    assert second.model_dump(exclude={"usage"}) == first.model_dump(exclude={"usage"})


async def test_server_errors_become_undetermined_not_crashes(
    llm_server: LocalLLMServer, tmp_path: Path
) -> None:
    llm_server.behaviour.reply = server_reply(judge_reply())  # type: ignore[assignment]
    llm_server.behaviour.fail_500_first = 100
    cfg = LLMConfig(base_url=llm_server.base_url, model="m", max_retries=0)
    async with LLMRunner.from_config(cfg, use_cache=False) as runner:
        d = await Diagnoser("llm", llm=runner).diagnose(make_trace(references=REF))
    assert d.answer_label is None and d.undetermined
    assert d.undetermined_reason is not None and "HTTP 500" in d.undetermined_reason


def test_parsers_on_typical_model_replies() -> None:
    allowed = [E.E9, E.E10, E.E11, E.E12, E.E13, E.E14, E.E15, E.E16]
    assert parse_error_type("Misinterpretation", allowed) is E.E13
    assert parse_error_type("**Answer:** Numerical Error.", allowed) is E.E16
    assert parse_error_type("E10", allowed) is E.E10
    assert parse_error_type('{"error_type": "Incomplete Answer"}', allowed) is E.E12
    assert parse_error_type("It is not Fabricated Content; it is Misinterpretation.", allowed) is (
        E.E13
    )
    assert parse_error_type("Missed Retrieval", allowed) is None  # not this stage's type
    assert parse_error_type("Misinterpretation or Numerical Error", allowed) is None
    assert parse_error_type("No Error", [E.E1, E.E2, E.E3], allow_no_error=True) == NO_ERROR
    assert parse_answer_label('```json\n{"label": "correct", "reasoning": "ok"}\n```') == (
        AnswerLabel.CORRECT,
        "ok",
    )
    assert parse_answer_label("Label: possible_correct") is not None
    assert parse_answer_label("correct or incorrect, hard to say") is None
    assert parse_chunk_choice("Relevant Chunks: [C2, C10]", {"C2": "a", "C10": "b"}) == ["a", "b"]
    assert parse_chunk_choice("Relevant Chunks: []", {"C1": "a"}) == []


def test_type_prompts_show_only_their_stage() -> None:
    gen = type_prompt(Stage.GENERATION, query="q", ground_truth="g", answer="wrong")
    assert "Numerical Error" in gen.system and "Missed Retrieval" not in gen.system
    assert "wrong" in gen.user
    chunk = type_prompt(Stage.CHUNKING, query="q", ground_truth="g", answer="wrong")
    assert "Overchunking" in chunk.system and "wrong" not in chunk.user
