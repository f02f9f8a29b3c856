"""Reliability tables of a calibration setting (confidence and mode frequency)."""

from __future__ import annotations

import pytest
from rich.console import Console

from ragtriage.calibrate.calibration import Prediction, score_setting
from ragtriage.records import ErrorType
from ragtriage.report.terminal import render_reliability

E = ErrorType


def test_setting_reliability_hand_computed() -> None:
    preds = [
        # right stage and type
        Prediction("generation", "E16", None, "diagnosed", 0.9, 0.8),
        # right stage, wrong type
        Prediction("generation", "E13", None, "diagnosed", 0.6, 0.6),
        # judged correct: wrong, with the not-failing confidence
        Prediction(None, None, None, "not_flagged", 0.8),
        # undetermined: no confidence, not binned
        Prediction(None, None, None, "undetermined"),
    ]
    rep = score_setting("rules", "ragec", [E.E16, E.E16, E.E4, E.E4], preds)
    r = rep.reliability
    assert (r.n, r.without_confidence) == (3, 1)
    # bins 0.6 (wrong), 0.8 (wrong), 0.9 (right)
    assert r.ece == pytest.approx((0.6 + 0.8 + 0.1) / 3)
    m = rep.mode_reliability
    # modal types: E16 at 0.8 right, E13 at 0.6 wrong
    assert m.n == 2
    assert m.ece == pytest.approx((0.2 + 0.6) / 2)
    d = rep.to_dict()
    assert d["reliability"]["ece"] == pytest.approx(r.ece)  # type: ignore[index]


def test_render_reliability_marks_empty_bins() -> None:
    rep = score_setting(
        "rules", "ragec", [E.E16], [Prediction("generation", "E16", None, "diagnosed", 0.95)]
    )
    con = Console(record=True, width=120, color_system=None)
    render_reliability(rep.reliability, "rel", con)
    out = con.export_text()
    assert "[0.9, 1.0]" in out and "empty" in out
    assert "ECE 0.050" in out
    render_reliability(score_setting("rules", "ragec", [], []).reliability, "none", con)
    assert "ECE: n/a (no cases)" in con.export_text()
