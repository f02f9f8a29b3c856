"""Reliability table, ECE and Brier score against hand-computed values."""

from __future__ import annotations

import pytest

from ragtriage.metrics.calibration import brier_score, reliability


def test_reliability_hand_computed_ten_bins() -> None:
    conf = [0.05, 0.15, 0.15, 0.85, 0.95, 1.0]
    ok = [False, True, False, True, True, False]
    r = reliability(conf, ok)
    assert r.n == 6
    assert len(r.bins) == 10
    by_lower = {round(b.lower, 1): b for b in r.bins}
    assert by_lower[0.0].n == 1 and by_lower[0.0].accuracy == 0.0
    assert by_lower[0.1].n == 2
    assert by_lower[0.1].mean_confidence == pytest.approx(0.15)
    assert by_lower[0.1].accuracy == pytest.approx(0.5)
    assert by_lower[0.8].n == 1 and by_lower[0.8].accuracy == 1.0
    # 1.0 falls into the last (closed) bin together with 0.95
    assert by_lower[0.9].n == 2
    assert by_lower[0.9].mean_confidence == pytest.approx(0.975)
    assert by_lower[0.9].accuracy == pytest.approx(0.5)
    # empty bins are reported as empty, not as zeros
    empty = [b for b in r.bins if b.empty]
    assert len(empty) == 6
    assert all(b.accuracy is None and b.mean_confidence is None and b.gap is None for b in empty)
    # ECE = 1/6*0.05 + 2/6*0.35 + 1/6*0.15 + 2/6*0.475
    assert r.ece == pytest.approx((0.05 + 0.7 + 0.15 + 0.95) / 6)
    # Brier = (0.0025 + 0.7225 + 0.0225 + 0.0225 + 0.0025 + 1) / 6
    assert r.brier == pytest.approx(1.7725 / 6)
    assert r.accuracy == pytest.approx(0.5)
    assert r.mean_confidence == pytest.approx(sum(conf) / 6)
    assert r.reason is None


def test_reliability_five_bins_and_perfect_calibration() -> None:
    r = reliability([0.5, 0.5, 0.5, 0.5], [True, False, True, False], n_bins=5)
    assert [b.n for b in r.bins] == [0, 0, 4, 0, 0]
    assert r.bins[2].lower == pytest.approx(0.4) and r.bins[2].upper == pytest.approx(0.6)
    assert r.ece == pytest.approx(0.0)
    assert r.brier == pytest.approx(0.25)


def test_bin_edges_are_half_open() -> None:
    r = reliability([0.2, 0.4], [True, True], n_bins=5)
    assert [b.n for b in r.bins] == [0, 1, 1, 0, 0]


def test_missing_confidences_are_counted_not_binned() -> None:
    r = reliability([None, 0.9, None], [True, True, False])
    assert r.n == 1
    assert r.without_confidence == 2
    assert r.ece == pytest.approx(0.1)


def test_undefined_ece_is_none_with_reason() -> None:
    empty = reliability([], [])
    assert empty.ece is None and empty.brier is None and empty.reason == "no cases"
    none_known = reliability([None, None], [True, False])
    assert none_known.ece is None
    assert none_known.reason == "none of the 2 cases has a confidence"
    assert all(b.empty for b in none_known.bins)


@pytest.mark.parametrize("bad", [float("nan"), -0.1, 1.5])
def test_bad_confidence_is_an_error(bad: float) -> None:
    with pytest.raises(ValueError, match="confidence #1"):
        reliability([0.5, bad], [True, False])


def test_length_mismatch_and_bins() -> None:
    with pytest.raises(ValueError, match="2 confidences but 1 outcomes"):
        reliability([0.1, 0.2], [True])
    with pytest.raises(ValueError, match="n_bins"):
        reliability([0.1], [True], n_bins=0)


def test_brier_score_and_json() -> None:
    assert brier_score([1.0, 0.0], [True, True]) == pytest.approx(0.5)
    assert brier_score([], []) is None
    d = reliability([0.3], [True], n_bins=2).to_dict()
    assert d["n"] == 1
    assert d["ece"] == pytest.approx(0.7)
    assert d["bins"] == [
        {"lower": 0.0, "upper": 0.5, "n": 1, "mean_confidence": 0.3, "accuracy": 1.0},
        {"lower": 0.5, "upper": 1.0, "n": 0, "mean_confidence": None, "accuracy": None},
    ]
