"""Error mining (seed 004 §3.1): normalisation, Ward clustering, scores, offline + LLM."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from diag_helpers import make_trace
from llm_server import LocalLLMServer, last_user
from ragtriage.cli import main
from ragtriage.config import LLMConfig
from ragtriage.critic import (
    cluster_tags,
    mine_runs,
    nmi,
    normalize_tags,
    parse_tag_list,
    purity,
    read_tag_frequencies,
)
from ragtriage.diagnosis.engine import Diagnoser
from ragtriage.embedding import HashEmbedder
from ragtriage.jsonl import write_jsonl
from ragtriage.llm import LLMRunner


def test_normalisation_folds_filters_and_thresholds() -> None:
    counts = {
        "Irrelevant Information": 3,
        "irrelevant  information": 2,
        "bad\x00tag": 5,
        " ".join(["word"] * 30): 9,
        "Rare Tag": 1,
        "不相关信息": 2,
    }
    out = normalize_tags(counts, alpha=2)
    assert out == {"Irrelevant Information": 5, "不相关信息": 2}
    assert read_tag_frequencies("A: 3\nB: x\nC:D: 2\n") == {"A": 3, "C:D": 2}


def test_ward_on_standardised_vectors_separates_groups_and_scores() -> None:
    rng = np.random.default_rng(0)
    a = rng.normal(0, 0.1, (10, 4)) + np.array([5, 0, 0, 0])
    b = rng.normal(0, 0.1, (10, 4)) + np.array([0, 5, 0, 0])
    labels = cluster_tags(np.vstack([a, b]), 2)
    truth = ["a"] * 10 + ["b"] * 10
    assert purity(labels, truth) == 1.0 and nmi(labels, truth) == pytest.approx(1.0)
    # by hand: clusters {x,x,y} {y}: purity (2+1)/4
    assert purity([0, 0, 0, 1], ["x", "x", "y", "y"]) == pytest.approx(0.75)
    assert cluster_tags(np.zeros((0, 3)), 5) == []


def test_parse_tag_list_is_tolerant() -> None:
    text = "Here: [{'tag': 'Wrong Year', 'explanation': 'x'}, {\"tag\": \"Entity Confusion\"}]"
    assert parse_tag_list(text) == ["Wrong Year", "Entity Confusion"]
    assert parse_tag_list("no json at all") == []


async def _diagnosed() -> tuple[list, list]:  # type: ignore[type-arg]
    traces = [
        make_trace(example_id=f"q{i}", answer=a)
        for i, a in enumerate(["Acme Corp was founded in 2005.", "I don't know.", "In 1887."])
    ]
    return traces, await Diagnoser("rules", "ragec").diagnose_many(traces, 2)


async def test_offline_mining_maps_every_failing_trace() -> None:
    traces, diags = await _diagnosed()
    tax = await mine_runs(traces, diags, HashEmbedder(64), n_clusters=3)
    failing = {d.example_id for d in diags if d.needs_diagnosis}
    assert failing and set(tax.trace_clusters) == failing
    assert sum(len(c.tags) for c in tax.clusters) == len(tax.tag_cluster)
    assert all(c.name and c.count >= 1 for c in tax.clusters)


async def test_llm_mining_over_http_with_fallback(
    llm_server: LocalLLMServer, tmp_path: Path
) -> None:
    def reply(body: dict[str, object], index: int) -> str:
        prompt = last_user(body)
        if "Golden Answer" in prompt:
            if "Prediction: Acme Corp was founded in 2005" in prompt:
                return '{"Judgement": "incorrect", "Error analysis": "It gave the wrong year."}'
            return "garbage"
        if "tagging system" in prompt:
            return '[{"tag": "Wrong Year", "explanation": "year"}]'
        return "Temporal Errors"

    llm_server.behaviour.reply = reply  # type: ignore[assignment]
    runner = LLMRunner.from_config(
        LLMConfig(base_url=llm_server.base_url, model="m", max_retries=0),
        cache_path=tmp_path / "c.sqlite",
    )
    traces, diags = await _diagnosed()
    try:
        tax = await mine_runs(traces, diags, HashEmbedder(64), n_clusters=2, runner=runner)
    finally:
        await runner.aclose()
        runner.close()
    assert "Wrong Year" in tax.tag_cluster  # from Prompt C
    assert len(tax.tag_cluster) > 1  # garbage rationales fell back to the offline tags
    assert any(c.name == "Temporal Errors" for c in tax.clusters)


def test_cli_mine_writes_a_taxonomy(tmp_path: Path) -> None:
    import asyncio

    traces, diags = asyncio.run(_diagnosed())
    run = tmp_path / "run"
    run.mkdir()
    write_jsonl(run / "traces.jsonl", traces)
    write_jsonl(run / "diagnoses.jsonl", diags)
    out = tmp_path / "tax.yaml"
    with pytest.raises(SystemExit) as exc:
        main(
            [
                "mine",
                str(run),
                "--on",
                "tags",
                "--out",
                str(out),
                "--clusters",
                "2",
                "--embedding",
                "hash",
            ]
        )
    assert exc.value.code in (0, None)
    data = yaml.safe_load(out.read_text())
    assert data["clusters"] and data["traces"]
    json.dumps(data)  # plain data
