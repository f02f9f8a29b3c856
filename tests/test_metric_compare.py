"""``ragtriage compare`` metric columns and metric gates with a paired bootstrap (issue 11)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _reportdata import sample_records, write_run
from ragtriage.cli import main
from ragtriage.errors import InputError
from ragtriage.metrics import (
    compare_scores,
    evaluate_metric_gate,
    is_metric_gate,
    parse_metric_gate,
)


def _scores(values: list[float], metric: str = "faithfulness") -> dict[str, dict[str, float]]:
    return {f"q{i}": {metric: v} for i, v in enumerate(values)}


def test_paired_bootstrap_separates_noise_from_a_drop() -> None:
    a = _scores([0.8, 0.6, 1.0, 0.4, 0.9, 0.7, 0.5, 1.0] * 5)
    jitter = [0.2, -0.3, 0.15, -0.2, 0.1, -0.1, 0.05, 0.0]  # mean -0.0125, wide spread
    noisy = {e: {"faithfulness": 0.5 + jitter[i % 8]} for i, e in enumerate(a)}
    a = {e: {"faithfulness": 0.5} for e in a}
    dropped = _scores([0.3, 0.2, 0.4, 0.3, 0.3, 0.4, 0.2, 0.3] * 5)
    gate = parse_metric_gate("faithfulness>=-0.01")
    d_noise = compare_scores(a, noisy)
    assert d_noise[0].delta == pytest.approx(-0.0125)
    r = evaluate_metric_gate(gate, d_noise)
    assert r.passed  # mean slightly below 0 but the interval reaches above -0.01
    d_drop = compare_scores(a, dropped)
    assert d_drop[0].delta == pytest.approx(-0.2)
    assert d_drop[0].p_value is not None and d_drop[0].p_value < 0.01
    r2 = evaluate_metric_gate(gate, d_drop)
    assert not r2.passed and "failed" in r2.message
    # seeded: identical results twice
    assert compare_scores(a, dropped) == d_drop


def test_pairs_only_examples_both_runs_scored() -> None:
    a = {"q1": {"f1": 1.0}, "q2": {"f1": 0.0}, "q3": {}}
    b = {"q1": {"f1": 0.5}, "q3": {"f1": 1.0}}
    (d,) = compare_scores(a, b)
    assert d.n_pairs == 1 and d.delta == -0.5
    none = evaluate_metric_gate(parse_metric_gate("rouge_l>=0"), [d])
    assert not none.passed and "no paired scores" in none.message


def test_metric_gate_grammar() -> None:
    assert is_metric_gate("context_precision@5>=0") and not is_metric_gate("accuracy>=0")
    g = parse_metric_gate(" context_precision@5 > +0.02 ")
    assert (g.metric, g.op, g.value) == ("context_precision@5", ">", 0.02)
    with pytest.raises(InputError):
        parse_metric_gate("faithfulness=>0")


def _write_scores(path: Path, values: dict[str, float]) -> None:
    lines = [
        json.dumps(
            {
                "example_id": e,
                "trace_id": f"t-{e}",
                "scores": {"faithfulness": {"value": v, "judge": "offline"}},
            }
        )
        for e, v in values.items()
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_compare_cli_metric_gate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    traces, diags = sample_records()
    a = write_run(tmp_path / "a", "run-a", traces, diags)
    b = write_run(tmp_path / "b", "run-b", traces, diags)
    ids = [t.example.example_id for t in traces]
    _write_scores(a / "scores.jsonl", {e: 1.0 for e in ids})
    _write_scores(b / "scores.jsonl", {e: 0.2 for e in ids})
    with pytest.raises(SystemExit) as exc:
        main(["compare", str(a), str(b), "--gate", "faithfulness>=-0.01", "--gate", "failing<=0"])
    assert exc.value.code == 1
    out = capsys.readouterr()
    assert "evaluation metrics" in out.out and "faithfulness" in out.out
    assert "1 gate(s) failed: faithfulness>=-0.01" in out.err
    with pytest.raises(SystemExit) as exc:
        main(["compare", str(b), str(a), "--gate", "faithfulness>=-0.01"])
    assert exc.value.code == 0
    assert "gate faithfulness>=-0.01 passed" in capsys.readouterr().out


def test_compare_cli_metric_gate_without_scores_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    traces, diags = sample_records()
    a = write_run(tmp_path / "a", "run-a", traces, diags)
    b = write_run(tmp_path / "b", "run-b", traces, diags)
    with pytest.raises(SystemExit) as exc:
        main(["compare", str(a), str(b), "--gate", "faithfulness>=0"])
    assert exc.value.code == 1
    assert "no scores.jsonl" in capsys.readouterr().err
