"""Pairwise-preference agreement (issue 28): Pearson, Spearman, the annotators' agreement
and ``benchmarks/correctness_vs_people.py`` on a tiny synthetic file, every expected
value computed by hand."""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from ragtriage.calibrate.preference import (
    correlate,
    inter_annotator,
    pearson,
    rank,
    read_preferences,
    spearman,
)
from ragtriage.errors import InputError

ROOT = Path(__file__).resolve().parents[1]


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "correctness_vs_people", ROOT / "benchmarks" / "correctness_vs_people.py"
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def test_pearson_and_spearman_by_hand() -> None:
    # dx = dy = (-1.5, -0.5, 0.5, 1.5) up to the swap of the middle two: 4 / 5
    assert pearson([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(0.8)
    assert pearson([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    assert pearson([1, 1, 1], [1, 2, 3]) is None and pearson([1], [2]) is None
    # ties share their mean rank: (1, 2.5, 2.5, 4) against (1, 2, 3, 4) -> 4.5 / sqrt(22.5)
    assert rank([1, 2, 2, 3]) == [1.0, 2.5, 2.5, 4.0]
    assert spearman([1, 2, 2, 3], [1, 2, 3, 4]) == pytest.approx(3 / math.sqrt(10))


def test_bootstrap_interval_holds_the_estimate_and_is_seeded() -> None:
    x = [0.1, 0.4, 0.35, 0.8, 0.7, 0.2, 0.9, 0.5]
    y = [0.0, 0.5, 0.3, 0.9, 0.6, 0.1, 1.0, 0.4]
    c = correlate(x, y, seed=3, resamples=400)
    assert c.pearson is not None and c.pearson_ci is not None
    assert c.pearson_ci[0] <= c.pearson <= c.pearson_ci[1] <= 1.0
    assert correlate(x, y, seed=3, resamples=400) == c
    assert correlate([1.0], [2.0]).pearson_ci is None


def _row(pid: str, a: str, b: str, votes: list[tuple[str, int, int]]) -> dict[str, Any]:
    return {
        "pair_id": pid,
        "question": "Which Greek letters come first?",
        "ground_truth": "alpha beta gamma delta",
        "answer_a": a,
        "answer_b": b,
        "language": "en",
        "judgements": [
            {"annotator": who, "correctness": c, "completeness": m} for who, c, m in votes
        ],
    }


ROWS = [
    _row("p1", "alpha beta gamma delta", "", [("h1", 2, 2), ("h2", 2, 1)]),
    _row("p2", "alpha beta", "alpha beta gamma delta", [("h1", -1, -2), ("h2", -2, -1)]),
    _row("p3", "zeta eta", "zeta eta", [("h1", 0, 0), ("h2", 1, 0), ("h3", 2, 2)]),
    _row("p4", "alpha beta gamma", "alpha", [("h1", 1, 2), ("h2", 1, 1)]),
]


def _write(tmp_path: Path, rows: list[dict[str, Any]]) -> Path:
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_annotator_agreement_by_hand(tmp_path: Path) -> None:
    pairs = read_preferences(_write(tmp_path, ROWS))
    # correctness, h1 (2, -1, 0, 1) and h2 (2, -2, 1, 1), both with mean 0.5:
    # dx = (1.5, -1.5, -0.5, 0.5), dy = (1.5, -2.5, 0.5, 0.5); sum dx*dy = 6,
    # sum dx^2 = 5, sum dy^2 = 9 -> 6 / sqrt(45); h3 shares one pair only: left out
    agree = inter_annotator(pairs, "correctness")
    assert agree.pearson == pytest.approx(6 / math.sqrt(45))
    assert agree.annotator_pairs == 1 and agree.items == 4


def test_benchmark_correlations_by_hand(tmp_path: Path) -> None:
    from ragtriage.embedding import HashEmbedder

    bench = _bench()
    pairs = read_preferences(_write(tmp_path, ROWS))
    scores = bench.score_pairs(pairs, HashEmbedder(64))
    # token F1 against "alpha beta gamma delta": A - B per pair
    # p1: 1 - 0 (empty answer: 0); p2: 2/3 - 1; p3: 0 - 0; p4: 6/7 - 2/5 = 16/35
    diffs = [a - b for a, b in scores["f1"]]  # type: ignore[operator]
    assert diffs == pytest.approx([1.0, -1 / 3, 0.0, 16 / 35])
    table = bench.agreement_table(pairs, scores, resamples=200)
    f1 = table["correctness"]["scores"]["f1"]
    # mean correctness preference: p1 2, p2 -1.5, p3 1 (0, 1, 2), p4 1
    # x = (1, -1/3, 0, 16/35), mean 59/210; y = (2, -1.5, 1, 1), mean 0.625
    x = [1.0, -1 / 3, 0.0, 16 / 35]
    y = [2.0, -1.5, 1.0, 1.0]
    mx, my = 59 / 210, 0.625
    num = sum((a - mx) * (b - my) for a, b in zip(x, y, strict=True))
    den = math.sqrt(sum((a - mx) ** 2 for a in x) * sum((b - my) ** 2 for b in y))
    assert f1["n"] == 4 and f1["pearson"] == pytest.approx(num / den)
    # by hand: dx (0.719048, -0.614286, -0.280952, 0.176190), dy (1.375, -2.125, 0.375,
    # 0.375): 2.254762 / sqrt(1.004354 * 6.6875) = 0.8700
    assert f1["pearson"] == pytest.approx(0.8700, abs=1e-4)
    # ranks: x (4, 1, 2, 3); y (4, 1, 2.5, 2.5): dx (1.5, -1.5, -0.5, 0.5),
    # dy (1.5, -1.5, 0, 0): 4.5 / sqrt(5 * 4.5)
    assert f1["spearman"] == pytest.approx(4.5 / math.sqrt(22.5))
    assert table["correctness"]["annotators"]["pearson"] == pytest.approx(6 / math.sqrt(45))
    assert set(table["correctness"]["scores"]) >= {
        "answer_correctness.f1",
        "answer_correctness.precision",
        "answer_correctness.recall",
        "rouge_l",
        "semantic_similarity",
        "answer_label",
    }
    out = tmp_path / "table.json"
    code = bench.main([str(tmp_path / "pairs.jsonl"), "--embedder", "hash", "--json", str(out)])
    assert code == 0 and json.loads(out.read_text())["overall"]["scores"]["f1"]["n"] == 4


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        (
            {"judgements": [{"annotator": "h1", "correctness": 3, "completeness": 0}]},
            "judgements[0].correctness",
        ),
        ({"judgements": []}, "judgements"),
        ({"answer_b": None}, "answer_b"),
    ],
)
def test_bad_lines_name_file_line_and_field(
    tmp_path: Path, bad: dict[str, Any], field: str
) -> None:
    path = _write(tmp_path, [ROWS[0], {**ROWS[1], **bad}])
    with pytest.raises(InputError) as err:
        read_preferences(path)
    assert err.value.line == 2 and err.value.field == field and err.value.path == str(path)
    assert "JSON Lines" in err.value.message
