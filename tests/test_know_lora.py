"""The LoRA generator script path (seed 001 App. H) on a tiny randomly initialised T5
built in code, on CPU: the loss falls, the saved model loads as `--generator seq2seq:`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("peft")

from know_helpers import cli, no_llm_env  # noqa: F401 (autouse fixture)
from ragtriage.know._lora import tiny_t5, train_lora


def test_tiny_t5_lora_loss_falls_and_generator_loads(tmp_path: Path) -> None:
    gen = tmp_path / "gen"
    assert cli("testset", "--demo", "--out", str(gen), "--limit", "16", "--no-progress") == 0
    train = tmp_path / "train.jsonl"
    assert cli("testset", "export-training", str(gen), "--out", str(train)) == 0
    pairs = [json.loads(line) for line in train.read_text(encoding="utf-8").splitlines()]
    assert len(pairs) >= 8
    model, tokenizer = tiny_t5([p["input"] for p in pairs] + [p["target"] for p in pairs])
    result = train_lora(
        pairs[:8],
        model,
        tokenizer,
        steps=60,
        batch_size=8,
        lr=1e-2,
        rank=4,
        alpha=8,
        target_modules=("q", "k", "v", "o", "wi", "wo"),
        max_length=128,
        threads=1,
        out=tmp_path / "model",
    )
    first, last = sum(result.losses[:5]) / 5, sum(result.losses[-5:]) / 5
    assert last < first * 0.85, result.losses
    assert 0 < result.trainable < result.total
    out = tmp_path / "set2"
    code = cli(
        "testset",
        "--demo",
        "--out",
        str(out),
        "--limit",
        "1",
        "--no-progress",
        "--mix",
        "fact_single:1",
        "--generator",
        f"seq2seq:{tmp_path / 'model'}",
    )
    assert code == 0
    assert (out / "examples.jsonl").exists()
