"""Shared by the live-capture tests: a small corpus, and the CLI check that the traces
a capture wrote validate and diagnose."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from ragtriage.cli import app

#: (chunk id, document id, text)
CORPUS: list[tuple[str, str, str]] = [
    ("fr-1", "france", "Paris is the capital of France. It lies on the Seine."),
    ("fr-2", "france", "France borders Spain, Italy, Germany and Belgium."),
    ("de-1", "germany", "Berlin is the capital of Germany and its largest city."),
    ("it-1", "italy", "Rome is the capital of Italy; the Tiber flows through it."),
    ("es-1", "spain", "Madrid is the capital of Spain and sits on the Manzanares."),
    ("zh-1", "china", "北京是中国的首都，也是政治和文化中心。"),
]

QUESTIONS: dict[str, str] = {
    "What is the capital of France?": "Paris",
    "Which river flows through Rome?": "The Tiber",
    "What is the capital of Spain?": "Madrid",
    "中国的首都是哪里？": "北京",
}


def read_traces(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def validate_and_diagnose(run: Path, n: int) -> list[dict[str, Any]]:
    """``ragtriage validate`` accepts the run's traces and ``ragtriage diagnose`` writes
    one diagnosis per trace; the diagnoses."""
    runner = CliRunner()
    r = runner.invoke(app, ["validate", str(run / "traces.jsonl")])
    assert r.exit_code == 0, r.output
    assert f"ok ({n} traces)" in r.output
    r = runner.invoke(app, ["diagnose", str(run), "--no-progress", "--workers", "1"])
    assert r.exit_code == 0, r.output
    diagnoses = read_traces(run / "diagnoses.jsonl")
    assert len(diagnoses) == n
    return diagnoses
