"""SFT / DPO exports in TRL's conversational formats (seed 004 §3.2)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from diag_helpers import make_trace
from ragtriage.cli import main
from ragtriage.critic import (
    CriticInput,
    critique_traces,
    dpo_records,
    error_system,
    grounded_verdicts,
    sft_records,
)
from ragtriage.jsonl import write_jsonl

ROLES_SFT = ["system", "user", "assistant"]


def _traces() -> list:  # type: ignore[type-arg]
    return [
        make_trace(example_id="q1"),
        make_trace(example_id="q2", answer="Acme Corp was founded in 1999.", context=["gd_0"]),
        make_trace(example_id="q3", answer="It was founded in 1887."),
    ]


def _check_message(m: dict[str, object]) -> None:
    assert set(m) == {"role", "content"} and isinstance(m["content"], str) and m["content"]


async def test_sft_rows_are_balanced_trl_messages_without_the_gold_answer() -> None:
    traces = _traces()
    verdicts = await critique_traces(traces, critic="rules", reference=True)
    inputs = [CriticInput.from_trace(t, reference=True) for t in traces]
    rows = sft_records(inputs, verdicts)
    judged = [json.loads(r["messages"][-1]["content"])["Judgement"] for r in rows]
    assert sorted(judged) == ["Correct", "Error"]  # 1 correct vs 2 errors -> 1 + 1
    for row in rows:
        assert list(row) == ["messages"]
        assert [m["role"] for m in row["messages"]] == ROLES_SFT
        for m in row["messages"]:
            _check_message(m)
        assert "Golden answer" not in row["messages"][1]["content"]


async def test_dpo_pairs_differ_in_the_judgement() -> None:
    traces = _traces()
    inputs, verdicts, free = await grounded_verdicts(traces)
    rows = dpo_records(inputs, verdicts, critic_verdicts=free)
    assert len(rows) == len(traces)  # one pair per decided sample, no tags-only pairs
    names = set(error_system().tier2_names)
    for row in rows:
        assert {"prompt", "chosen", "rejected", "level"} <= set(row)
        assert [m["role"] for m in row["prompt"]] == ["system", "user"]
        assert [m["role"] for m in row["chosen"]] == ["assistant"]
        assert [m["role"] for m in row["rejected"]] == ["assistant"]
        chosen = json.loads(row["chosen"][0]["content"])
        rejected = json.loads(row["rejected"][0]["content"])
        assert chosen["Judgement"] != rejected["Judgement"]
        for side in (chosen, rejected):
            assert set(side.get("tag2", [])) <= names


def test_rows_load_with_trl_when_installed(tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    run = tmp_path / "run"
    run.mkdir()
    write_jsonl(run / "traces.jsonl", _traces())
    with pytest.raises(SystemExit):
        main(
            [
                "critic-export",
                str(run),
                "--sft",
                str(tmp_path / "s.jsonl"),
                "--dpo",
                str(tmp_path / "d.jsonl"),
            ]
        )
    ds = datasets.load_dataset("json", data_files=str(tmp_path / "d.jsonl"))["train"]
    assert {"prompt", "chosen", "rejected"} <= set(ds.column_names)


def test_cli_export(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    write_jsonl(run / "traces.jsonl", _traces())
    with pytest.raises(SystemExit) as exc:
        main(
            [
                "critic-export",
                str(run),
                "--sft",
                str(tmp_path / "s.jsonl"),
                "--dpo",
                str(tmp_path / "d.jsonl"),
            ]
        )
    assert exc.value.code in (0, None)
    assert len((tmp_path / "s.jsonl").read_text().splitlines()) == 2
    assert len((tmp_path / "d.jsonl").read_text().splitlines()) >= 3


# -- real exported rows: the natural part nat1 (40 traces, real answers) -----------------

NAT1 = Path(__file__).resolve().parents[1] / "benchmarks" / "data" / "natural" / "nat1"
_CHUNK = re.compile(r"#\d")
_GOLD = re.compile(r"ground[- ]truth|\bGT\b|\bgold", re.IGNORECASE)


def _hidden(analysis: str, prompt: str, gold: str) -> list[str]:
    """What an analysis says that its prompt does not show (checked on the row's own
    user turn: what the model sees): chunk ids, gold wording, the gold answer's words and
    numbers that the prompt lacks (function words aside)."""
    from ragtriage.text import STOPWORDS_EN, word_tokens

    shown = set(word_tokens(prompt))
    words = word_tokens(analysis)
    out = [m.group(0) for m in (_CHUNK.search(analysis), _GOLD.search(analysis)) if m]
    out += [w for w in words if w in set(word_tokens(gold)) - shown - STOPWORDS_EN]
    return out


@pytest.fixture(scope="module")
def nat1_export(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list]:  # type: ignore[type-arg]
    from ragtriage.cli.diagnose import read_traces

    tmp = tmp_path_factory.mktemp("nat1")
    with pytest.raises(SystemExit) as exc:
        main(
            [
                "critic-export",
                str(NAT1),
                "--sft",
                str(tmp / "s.jsonl"),
                "--dpo",
                str(tmp / "d.jsonl"),
            ]
        )
    assert exc.value.code in (0, None)
    return tmp / "s.jsonl", tmp / "d.jsonl", read_traces(NAT1 / "traces.jsonl")


def _gold_of(prompt: str, traces: list) -> str:  # type: ignore[type-arg]
    hits = [t for t in traces if f"**Question:** {t.example.query}\n" in prompt]
    assert len(hits) == 1
    ex = hits[0].example
    return " ".join([ex.answer, *ex.keypoints])


def test_exported_analyses_say_only_what_the_prompt_shows(nat1_export) -> None:  # type: ignore[no-untyped-def]
    sft, dpo, traces = nat1_export
    checked = 0
    for line in sft.read_text().splitlines():
        msgs = json.loads(line)["messages"]
        prompt, reply = msgs[1]["content"], json.loads(msgs[2]["content"])
        assert "Golden answer" not in prompt
        if reply["Judgement"] == "Error":
            assert reply["Error analysis"].strip()
            assert _hidden(reply["Error analysis"], prompt, _gold_of(prompt, traces)) == []
            checked += 1
    for line in dpo.read_text().splitlines():
        row = json.loads(line)
        prompt = row["prompt"][1]["content"]
        for side in ("chosen", "rejected"):
            reply = json.loads(row[side][0]["content"])
            text = reply.get("Error analysis", "")
            assert _hidden(text, prompt, _gold_of(prompt, traces)) == []
            checked += bool(text)
    assert checked >= 30
    # the check is not vacuous: the diagnoses' own analyses, exported before, leak
    from ragtriage.critic import CriticInput, critic_prompt, critique_traces

    verdicts = await_(critique_traces(traces, critic="rules", reference=True))
    leaking = 0
    for t, v in zip(traces, verdicts, strict=True):
        if v.judgement == "error":
            prompt = critic_prompt(CriticInput.from_trace(t, reference=False))
            leaking += bool(_hidden(v.analysis, prompt, _gold_of(prompt, traces)))
    assert leaking >= 10


def test_exported_dpo_pairs_differ_in_the_judgement(nat1_export) -> None:  # type: ignore[no-untyped-def]
    _sft, dpo, traces = nat1_export
    rows = [json.loads(line) for line in dpo.read_text().splitlines()]
    assert len(rows) == len(traces)  # every nat1 trace has a decided label
    levels = {r["level"] for r in rows}
    assert levels == {"coarse", "critic-mistake"}
    for row in rows:
        chosen = json.loads(row["chosen"][0]["content"])
        rejected = json.loads(row["rejected"][0]["content"])
        assert chosen["Judgement"] != rejected["Judgement"]
    # a critic-mistake pair on a correct answer rejects the critic's real Error analysis
    mistakes = [
        json.loads(r["rejected"][0]["content"])
        for r in rows
        if r["level"] == "critic-mistake"
        and json.loads(r["chosen"][0]["content"])["Judgement"] == "Correct"
    ]
    assert mistakes and all(m["Error analysis"] != "The prediction is incorrect." for m in mistakes)


def await_(coro):  # type: ignore[no-untyped-def]
    import asyncio

    return asyncio.run(coro)
