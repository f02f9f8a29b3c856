"""``ragtriage label`` (seed 001 question types): the offline rules labeller (EN + ZH, with
reasons), the LLM labeller over the local HTTP server (K votes, garbage → undetermined,
cache, dry run), the composition report and ``agree --task label``."""

from __future__ import annotations

import asyncio
import csv
import json
from pathlib import Path

import pytest

from know_helpers import cli, no_llm_env  # noqa: F401 (autouse fixture)
from llm_server import LocalLLMServer, last_user
from ragtriage.config import LLMConfig
from ragtriage.data import Dataset
from ragtriage.diagnosis.votes import summarize_label_votes
from ragtriage.errors import InputError
from ragtriage.know import (
    LABELS,
    LabelDecision,
    LabelItem,
    LLMLabeller,
    composition,
    items_of,
    label_agreement,
    parse_label_reply,
    parse_mix,
    rules_label,
)
from ragtriage.know._llm import label_prompt
from ragtriage.llm import LLMRunner
from ragtriage.records import Document, Example

CTX_EN = (
    "The Sierra Alta wind farm in Andalusia was commissioned on 12 May 2022. "
    "It has 36 turbines and a capacity of 180 MW. The company also bought three solar "
    "parks in Portugal for EUR 142 million and built a battery plant in Valencia."
)
CTX_ZH = "2021年4月16日，公司完成对常州恒宇科技有限公司70%股权的收购，交易金额为人民币4.2亿元。公司营业收入同比增长12.4%，净利润同比增长8.9%。"


@pytest.mark.parametrize(
    ("question", "answer", "context", "expected"),
    [
        ("How many turbines does Sierra Alta have?", "36 turbines.", CTX_EN, "fact_single"),
        (
            "Summarise what Solvanta built and bought.",
            "It commissioned the Sierra Alta wind farm, bought three solar parks in Portugal "
            "for EUR 142 million and built a battery plant in Valencia.",
            CTX_EN,
            "summary",
        ),
        (
            "How much capacity does each turbine provide on average?",
            "About 5 MW per turbine.",
            CTX_EN,
            "reasoning",
        ),
        ("When was the Sierra Alta wind farm commissioned?", "", CTX_EN, "fact_single"),
        ("Who is the chief executive of Solvanta?", "", CTX_EN, "unanswerable"),
        ("公司收购了常州恒宇科技多少股权？", "70%股权。", CTX_ZH, "fact_single"),
        (
            "收购和收入增长分别是怎样的情况？",
            "收购了70%股权，交易金额4.2亿元；营业收入同比增长12.4%。",
            CTX_ZH,
            "summary",
        ),
        ("营业收入增长比净利润增长快多少个百分点？", "快3.5个百分点。", CTX_ZH, "reasoning"),
        ("公司董事长毕业于哪所大学？", "清华大学化学系。", CTX_ZH, "unanswerable"),
    ],
)
def test_rules_labeller_en_zh(question: str, answer: str, context: str, expected: str) -> None:
    item = LabelItem("x", question, context, answer=answer)
    decision = rules_label(item)
    assert decision.label == expected, decision.reason
    assert decision.reason
    assert decision.votes == (expected,)


def test_rules_unanswerable_flag_and_missing_context() -> None:
    # the dataset's flag is not read: the pair decides
    flagged = LabelItem("u", "How many turbines does Sierra Alta have?", CTX_EN, answerable=False)
    assert rules_label(flagged).label == "fact_single"
    d = rules_label(LabelItem("w", "Who designs the Sierra Alta turbines?", CTX_EN))
    assert d.label == "unanswerable" and "person" in d.reason
    assert rules_label(LabelItem("v", "Who built it?", "", answer="X")).label == "unanswerable"


def test_label_votes_mode_frequency_and_ties() -> None:
    s = summarize_label_votes(["summary", "reasoning", "summary", "bad", "reasoning"], LABELS)
    assert (s.mode, s.mode_frequency, s.undetermined) == ("summary", 0.4, 1)
    assert s.ties == ("summary", "reasoning")
    assert "broken by label order" in s.describe()
    assert summarize_label_votes(["x", "y"], LABELS).mode is None


def test_parse_label_reply() -> None:
    assert parse_label_reply('{"label_name": "summary", "reason": "a list"}') == (
        "summary",
        "a list",
    )
    assert parse_label_reply("```json\n{'label_name': 'reasoning'}\n```")[0] == "reasoning"
    assert parse_label_reply("I like turtles")[0] is None
    assert parse_label_reply('{"label_name": "banana"}')[0] is None


def _reply_by_question(mapping: dict[str, list[str]]) -> object:
    counters: dict[str, int] = {}

    def reply(body: dict[str, object], index: int) -> str:
        text = last_user(body)
        for key, replies in mapping.items():
            if key in text:
                n = counters.get(key, 0)
                counters[key] = n + 1
                return replies[n % len(replies)]
        return "garbage"

    return reply


async def test_llm_labeller_over_http_votes_cache_and_garbage(
    llm_server: LocalLLMServer, tmp_path: Path
) -> None:
    llm_server.behaviour.reply = _reply_by_question(  # type: ignore[assignment]
        {
            "turbines": [
                '{"label_name": "fact_single", "reason": "one number"}',
                '{"label_name": "fact_single", "reason": "one number"}',
                '{"label_name": "summary", "reason": "?"}',
            ],
            "董事长": ["not json at all", "{{{", "label_name: banana"],
        }
    )
    cfg = LLMConfig(base_url=llm_server.base_url, model="m", max_retries=0)
    items = [
        LabelItem("a", "How many turbines?", CTX_EN, answer="36"),
        LabelItem("b", "公司董事长是谁？", CTX_ZH),
    ]
    async with LLMRunner.from_config(cfg, cache_path=tmp_path / "c.sqlite") as runner:
        labeller = LLMLabeller(runner, k=3)
        first = await labeller.label_many(items)
        calls = llm_server.chat_requests
        again = await labeller.label_many(items)
    a, b = first
    assert a.label == "fact_single" and a.mode_frequency == pytest.approx(2 / 3)
    assert a.votes.count("fact_single") == 2 and "one number" in a.reason
    assert b.label == "undetermined" and b.mode_frequency is None
    assert "no reply named a label" in b.reason
    assert "fact_single" in llm_server.bodies[0]["messages"][0]["content"]
    assert llm_server.chat_requests == calls  # the second pass came from the cache
    assert [d.label for d in again] == [a.label, b.label]


async def test_llm_labeller_dry_run_is_undetermined_and_estimates(tmp_path: Path) -> None:
    cfg = LLMConfig(base_url="http://127.0.0.1:9/v1", model="m")
    runner = LLMRunner.from_config(cfg, cache_path=tmp_path / "none.sqlite", dry_run=True)
    decisions = await LLMLabeller(runner, k=2).label_many([LabelItem("a", "Q?", CTX_EN)])
    await runner.aclose()
    assert decisions[0].label == "undetermined" and "dry run" in decisions[0].reason
    assert runner.ledger.summary().total.estimated_calls == 1
    assert not (tmp_path / "none.sqlite").exists()


def _decisions(labels: list[str]) -> list[LabelDecision]:
    return [LabelDecision(str(i), lab, "r", "rules") for i, lab in enumerate(labels)]


def test_composition_warns_like_seed_001() -> None:
    comp = composition(
        _decisions(["fact_single"] * 83 + ["summary"] * 4 + ["unanswerable"] * 13), "set"
    )
    warnings = comp.warnings()
    assert warnings[0].startswith(
        "your test set is 83% fact_single; if your users ask for summaries"
    )
    assert any(w.startswith("only 0% reasoning") for w in warnings)
    balanced = composition(_decisions(["fact_single", "summary", "reasoning"] * 10), "b")
    assert balanced.warnings() == []
    off = composition(_decisions(["fact_single"] * 10), "x", intended={"summary": 1.0})
    assert off.max_gap() == pytest.approx(1.0)


def test_parse_mix() -> None:
    assert parse_mix("fact_single:3,summary:1") == {"fact_single": 0.75, "summary": 0.25}
    with pytest.raises(InputError, match="LABEL:SHARE"):
        parse_mix("facts:1")
    with pytest.raises(InputError, match="positive"):
        parse_mix("summary:0")


def test_label_cli_offline_demo(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "lab"
    assert cli("label", "demo", "--out", str(out)) == 0
    text = capsys.readouterr().out
    assert "offline rules labeller" in text and "labels in the dataset" in text
    rows = [json.loads(line) for line in (out / "labels.jsonl").read_text().splitlines()]
    assert len(rows) == 121 and all(r["label"] in LABELS and r["reason"] for r in rows)
    table = list(csv.DictReader((out / "composition.csv").open()))
    assert {r["label"] for r in table} == {*LABELS, "undetermined"}
    assert "<div class='bar'>" in (out / "composition.html").read_text()


def test_label_cli_llm_and_dry_run(
    llm_server: LocalLLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    llm_server.behaviour.reply = lambda body, i: '{"label_name": "summary", "reason": "r"}'  # type: ignore[assignment]
    monkeypatch.setenv("RAGTRIAGE_LLM_BASE_URL", llm_server.base_url)
    monkeypatch.setenv("RAGTRIAGE_LLM_MODEL", "m")
    cache = str(tmp_path / "c.sqlite")
    out = tmp_path / "dry"
    assert (
        cli("label", "demo", "--limit", "3", "--out", str(out), "--cache", cache, "--dry-run") == 0
    )
    assert llm_server.chat_requests == 0 and not out.exists()
    assert cli("label", "demo", "--limit", "3", "-k", "2", "--out", str(out), "--cache", cache) == 0
    rows = [json.loads(line) for line in (out / "labels.jsonl").read_text().splitlines()]
    assert [r["label"] for r in rows] == ["summary"] * 3
    assert all(r["votes"] == ["summary", "summary"] for r in rows)


def test_agree_task_label(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    machine = tmp_path / "labels.jsonl"
    machine.write_text(
        "\n".join(
            json.dumps({"example_id": e, "label": lab})
            for e, lab in [
                ("1", "summary"),
                ("2", "fact_single"),
                ("3", "reasoning"),
                ("4", "summary"),
            ]
        )
    )
    human = tmp_path / "human.csv"
    human.write_text(
        "example_id,annotator,label\n"
        + "".join(
            f"{e},{a},{lab}\n"
            for a, labs in {
                "ann1": ["summary", "fact_single", "reasoning", "fact_single"],
                "ann2": ["summary", "fact_single", "summary", "fact_single"],
                "ann3": ["summary", "fact_single", "reasoning", "summary"],
            }.items()
            for e, lab in zip("1234", labs, strict=True)
        )
    )
    report_path = tmp_path / "r.json"
    assert (
        cli(
            "agree",
            str(machine),
            "--task",
            "label",
            "--labels",
            str(human),
            "--json",
            str(report_path),
        )
        == 0
    )
    report = json.loads(report_path.read_text())
    assert report["items"] == 4
    assert report["accuracy"] == pytest.approx(0.75)
    assert [a["annotator"] for a in report["annotators"]] == ["ann1", "ann2", "ann3"]
    assert "κ(A_i, M−A_i)" in capsys.readouterr().out
    bad = tmp_path / "bad.csv"
    bad.write_text("example_id,label\n1,facts\n")
    assert cli("agree", str(machine), "--task", "label", "--labels", str(bad)) == 2
    assert "bad.csv:2:label" in capsys.readouterr().err


def test_label_agreement_single_annotator_note() -> None:
    rep = label_agreement(
        {"me": {"1": "summary", "2": "reasoning"}}, {"1": "summary", "2": "summary"}
    )
    assert rep.annotators[0].kappa_annotator is None and "one annotator" in rep.note
    assert rep.accuracy == 0.5


def test_label_cli_rejects_bad_labeller(tmp_path: Path) -> None:
    assert cli("label", "demo", "--labeller", "magic", "--out", str(tmp_path)) == 2
    assert asyncio.iscoroutinefunction(LLMLabeller.label_many)


def test_label_cli_several_datasets(tmp_path: Path) -> None:
    from ragtriage.jsonl import write_jsonl
    from ragtriage.records import Document, Example

    data = tmp_path / "mine"
    data.mkdir()
    write_jsonl(data / "documents.jsonl", [Document(doc_id="d", text=CTX_EN)])
    write_jsonl(
        data / "examples.jsonl",
        [Example(example_id="q", query="How many turbines?", answer="36", doc_ids=["d"])],
    )
    out = tmp_path / "lab"
    assert cli("label", "demo", str(data), "--out", str(out)) == 0
    rows = [json.loads(line) for line in (out / "labels.jsonl").read_text().splitlines()]
    assert {r["dataset"] for r in rows} == {"demo", str(data)}
    table = list(csv.DictReader((out / "composition.csv").open()))
    assert len({r["dataset"] for r in table}) == 3  # demo given + demo rules + mine rules
    assert "mine (rules labels)" in (out / "composition.html").read_text()


def test_references_of_several_documents_are_shown_with_their_source() -> None:
    # "Age: 81." and "Age: 34." alone do not say whose age is whose: the LLM is shown each
    # reference after its document's title; the rules read the plain references
    docs = [
        Document(doc_id="a", title="Record: Agnes Whitlow", text="Name: Agnes Whitlow\nAge: 81."),
        Document(doc_id="b", title="Record: Thomas Brekke", text="Name: Thomas Brekke\nAge: 34."),
    ]
    ex = Example(
        example_id="q1",
        query="Who was older, Agnes Whitlow or Thomas Brekke?",
        answer="Agnes Whitlow",
        doc_ids=["a", "b"],
        references=["Age: 81.", "Age: 34."],
    )
    one = Example(
        example_id="q2",
        query="How old was Agnes Whitlow?",
        answer="81",
        doc_ids=["a"],
        references=["Age: 81."],
    )
    item, single = items_of(Dataset(name="t", documents=docs, examples=[ex, one]))
    assert item.context == "Age: 81.\nAge: 34."
    assert (
        item.sourced_context == "[Record: Agnes Whitlow] Age: 81.\n[Record: Thomas Brekke] Age: 34."
    )
    assert "[Record: Agnes Whitlow] Age: 81." in label_prompt(item)
    # one document: nothing to tell apart, the prompt shows the references as they are
    assert single.sourced_context == "" and "[[Age: 81.]]" in label_prompt(single)
