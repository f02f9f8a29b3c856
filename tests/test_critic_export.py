"""SFT / DPO exports in TRL's conversational formats (seed 004 §3.2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from diag_helpers import make_trace
from ragtriage.cli import main
from ragtriage.critic import CriticInput, critique_traces, dpo_records, error_system, sft_records
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


async def test_dpo_pairs_coarse_and_fine() -> None:
    traces = _traces()
    verdicts = await critique_traces(traces, critic="rules", reference=True)
    inputs = [CriticInput.from_trace(t, reference=False) for t in traces]
    rows = dpo_records(inputs, verdicts)
    assert {r["level"] for r in rows} == {"coarse", "fine"}
    names = set(error_system().tier2_names)
    for row in rows:
        assert {"prompt", "chosen", "rejected"} <= set(row)
        assert [m["role"] for m in row["prompt"]] == ["system", "user"]
        assert [m["role"] for m in row["chosen"]] == ["assistant"]
        assert [m["role"] for m in row["rejected"]] == ["assistant"]
        chosen = json.loads(row["chosen"][0]["content"])
        rejected = json.loads(row["rejected"][0]["content"])
        assert chosen != rejected
        if row["level"] == "fine":
            assert chosen["Judgement"] == rejected["Judgement"] == "Error"
            assert set(rejected["tag2"]) <= names and not set(rejected["tag1"]) & set(
                chosen["tag1"]
            )


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
