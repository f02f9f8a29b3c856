"""The RAG-Critic critic (seed 004 §3.2): rules, reference-free, LLM over HTTP, CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from diag_helpers import make_trace
from llm_server import LocalLLMServer, last_user
from ragtriage.cli import main
from ragtriage.config import LLMConfig
from ragtriage.critic import (
    CriticInput,
    LLMCritic,
    ReferenceFreeCritic,
    critique_traces,
    parse_critic_reply,
    snap_tags,
)
from ragtriage.jsonl import write_jsonl
from ragtriage.llm import LLMRunner

INP = CriticInput(
    example_id="q1",
    question="When was Acme Corp founded?",
    passages=["Acme Corp was founded in 1999 in Springfield."],
    prediction="Acme Corp was founded in 2005.",
)


def test_snap_tags_to_the_error_system() -> None:
    assert snap_tags(["factual inaccuracy"], ["Factual Inaccuracies", "Lack of Specificity"]) == [
        "Factual Inaccuracies"
    ]
    assert snap_tags("Lack of specificity; nonsense words here", ["Lack of Specificity"]) == [
        "Lack of Specificity"
    ]
    assert snap_tags(42, ["x"]) == []


def test_parse_reply_tolerates_format_and_snaps_tags() -> None:
    reply = (
        "Sure! ```json\n{'judgement': 'error', 'Error_analysis': 'wrong year',"
        " 'tag1': ['inaccurate response'], 'tag2': ['Factual Inaccuracy'], 'tag3': ['Wrong Year']}\n```"
    )
    v = parse_critic_reply(reply, INP)
    assert v.judgement == "error"
    assert v.tier2 == ["Factual Inaccuracies"]
    assert v.tier1 == ["Inaccurate Response"]
    assert v.tier3 == ["Wrong Year"] and v.analysis == "wrong year"
    assert "E10" in v.ragec_types
    assert parse_critic_reply('{"Judgement": "Correct"}', INP).judgement == "correct"


def test_garbage_replies_are_undetermined_with_a_reason() -> None:
    for text in ("", "I think it is fine", '{"foo": 1}', '{"Judgement": "maybe"}', "[1, 2]"):
        v = parse_critic_reply(text, INP)
        assert v.judgement is None and v.undetermined and v.undetermined_reason


async def test_reference_free_critic_en_and_zh() -> None:
    critic = ReferenceFreeCritic()
    unsupported = INP.model_copy(update={"prediction": "It was started by Globex in Paris."})
    grounded = INP.model_copy(update={"prediction": "Acme Corp was founded in 1999."})
    abstains = INP.model_copy(update={"prediction": "I don't know."})
    zh = CriticInput(
        example_id="z1",
        question="阿克米公司是哪一年成立的？",
        passages=["阿克米公司成立于1999年，总部位于春田。"],
        prediction="无法确定，文中没有相关信息。",
    )
    zh_bad = zh.model_copy(update={"prediction": "该公司由环球集团在巴黎创办。"})
    out = await critic.judge([unsupported, grounded, abstains, zh, zh_bad])
    assert [v.judgement for v in out] == ["error", "correct", "error", "error", "error"]
    assert out[0].tier2 == ["Factual Inaccuracies"] and out[0].ragec_types == ["E10"]
    assert out[2].ragec_types == ["E9"] and out[3].ragec_types == ["E9"]
    assert all(not v.reference for v in out)


async def test_rules_critic_with_reference_maps_the_diagnosis_to_tiers() -> None:
    wrong = make_trace()
    right = make_trace(example_id="q2", answer="Acme Corp was founded in 1999.", context=["gd_0"])
    out = await critique_traces([wrong, right], critic="rules", reference=True)
    assert out[0].judgement == "error" and out[0].tier1 and out[0].tier2 and out[0].ragec_types
    assert out[1].judgement == "correct"
    assert all(v.reference for v in out)


async def test_llm_critic_over_http(llm_server: LocalLLMServer, tmp_path: Path) -> None:
    def reply(body: dict[str, object], index: int) -> str:
        prompt = last_user(body)
        if "2005" in prompt:
            return json.dumps(
                {
                    "Judgement": "Error",
                    "Error analysis": "The year is wrong.",
                    "tag1": ["Inaccurate Response"],
                    "tag2": ["Factual Inaccuracies"],
                    "tag3": ["Incorrect Year"],
                }
            )
        if "garbage" in prompt:
            return "no idea, sorry"
        return '{"Judgement": "Correct"}'

    llm_server.behaviour.reply = reply  # type: ignore[assignment]
    cfg = LLMConfig(base_url=llm_server.base_url, model="critic", max_retries=0)
    runner = LLMRunner.from_config(cfg, cache_path=tmp_path / "c.sqlite")
    try:
        critic = LLMCritic(runner, model="critic")
        good = INP.model_copy(update={"example_id": "q2", "prediction": "In 1999."})
        bad = INP.model_copy(update={"example_id": "q3", "prediction": "garbage"})
        out = await critic.judge([INP, good, bad])
    finally:
        await runner.aclose()
        runner.close()
    assert [v.judgement for v in out] == ["error", "correct", None]
    assert out[0].tier2 == ["Factual Inaccuracies"] and out[0].tier3 == ["Incorrect Year"]
    assert out[2].undetermined_reason
    body = llm_server.bodies[0]
    assert "Factual Inaccuracies" in last_user(body)  # the tier lists of Prompt E


def test_cli_critic_both_modes(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    write_jsonl(run / "traces.jsonl", [make_trace(), make_trace(example_id="q2", answer="")])
    try:
        main(["critic", str(run)])
    except SystemExit as exc:
        assert exc.code in (0, None)
    rows = [json.loads(x) for x in (run / "critic.jsonl").read_text().splitlines()]
    assert [r["reference"] for r in rows] == [False, False]
    assert rows[1]["judgement"] == "error"  # the empty answer
    try:
        main(["critic", str(run), "--reference", "--out", str(tmp_path / "ref")])
    except SystemExit as exc:
        assert exc.code in (0, None)
    rows = [json.loads(x) for x in (tmp_path / "ref" / "critic.jsonl").read_text().splitlines()]
    assert rows[0]["judgement"] == "error" and rows[0]["reference"] is True


def test_cli_llm_critic_dry_run_writes_nothing(
    llm_server: LocalLLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    run.mkdir()
    write_jsonl(
        run / "traces.jsonl", [make_trace(), make_trace(example_id="q2", answer="In 1887.")]
    )
    with pytest.raises(SystemExit) as exc:
        main(
            [
                "critic",
                str(run),
                "--critic",
                "llm",
                "--base-url",
                llm_server.base_url,
                "--model",
                "m",
                "--cache",
                str(tmp_path / "c.sqlite"),
                "--dry-run",
            ]
        )
    assert exc.value.code in (0, None)
    assert "dry run: about 2 LLM calls" in capsys.readouterr().out
    assert llm_server.chat_requests == 0 and not (run / "critic.jsonl").exists()
