"""Reports: the confidence distribution, low-confidence marks, and the agreement summary
with the reliability table (report --labels)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _reportdata import sample_records, write_run
from ragtriage.calibrate.agreement import agreement, read_labels
from ragtriage.cli import main
from ragtriage.records import Diagnosis, Trace
from ragtriage.report.aggregate import summarize
from ragtriage.report.html import render_html
from ragtriage.report.terminal import headline

#: confidence per example of sample_records(); q8 is a failing example, low confidence
CONF = {"q0": 0.92, "q1": 0.81, "q2": 0.85, "q3": 0.95, "q4": 0.55, "q8": 0.31, "q9": 0.77}


def _records() -> tuple[list[Trace], list[Diagnosis]]:
    traces, diags = sample_records()
    out = []
    for d in diags:
        c = CONF.get(d.example_id)
        if c is not None:
            d = d.model_copy(
                update={"confidence": c, "low_confidence": c < 0.5, "confidence_basis": "test"}
            )
        out.append(d)
    return traces, out


def test_summary_counts_confidence_and_low_confidence() -> None:
    traces, diags = _records()
    s = summarize(diags, traces)
    assert s.low_confidence == 1
    assert len(s.confidence_bins) == 10
    counts = {round(b.lower, 1): b.count for b in s.confidence_bins}
    assert counts[0.9] == 2 and counts[0.8] == 2 and counts[0.3] == 1 and counts[0.0] == 0
    assert sum(counts.values()) == len(CONF)
    assert "1 low-confidence diagnoses (not established)" in headline(s)
    assert summarize([]).confidence_bins == [] and summarize([]).low_confidence == 0


def test_html_marks_low_confidence_and_shows_distribution() -> None:
    traces, diags = _records()
    html = render_html(summarize(diags, traces), diags, traces, max_examples=0)
    assert 'id="confidence"' in html and "Diagnosis confidence" in html
    assert html.count('class="pill low"') == 1
    assert "low confidence 31%" in html
    assert "a hint to check, not an established finding" in html
    assert 'id="reliability"' not in html  # no labels given


def test_html_says_what_the_confidence_means_and_hides_the_model_fit() -> None:
    traces, diags = _records()
    basis = "failing model (fit on 700 first-contact diagnoses of 16 blind parts (C=10))"
    diags = [
        d.model_copy(update={"confidence_basis": basis}) if d.example_id == "q8" else d
        for d in diags
    ]
    html = render_html(summarize(diags, traces), diags, traces)
    ex = html[html.index("<b>q8</b>") :]
    line = ex[ex.index('<div class="confidence">') :]
    line = line[: line.index("</div>")]
    shown = line[: line.index("<details")]
    # the line itself speaks to the reader; the fitted model is one click away
    assert "31%</b>: the estimated chance that this verdict is right" in shown
    assert "how often verdicts like this one were right on labelled data" in shown
    assert "first-contact" not in shown and "C=10" not in shown
    assert '<summary class="muted">how it was computed</summary>' in line
    assert "fit on 700 first-contact diagnoses" in line[line.index("<details") :]


def _labels(tmp_path: Path) -> Path:
    rows = [
        {"example_id": "q0", "answer_label": "correct", "stage": None, "types": []},
        {"example_id": "q8", "answer_label": "incorrect", "stage": "retrieval", "types": ["E4"]},
    ]
    p = tmp_path / "labels.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return p


def test_html_agreement_and_reliability_table(tmp_path: Path) -> None:
    traces, diags = _records()
    rep = agreement(diags, read_labels(_labels(tmp_path)))
    html = render_html(summarize(diags, traces), diags, traces, agreement=rep)
    assert 'id="agreement"' in html and 'id="reliability"' in html
    assert "human failures found" in html
    assert html.count('<td class="n empty" colspan="2">empty</td>') == 8


def test_report_cli_with_labels(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    traces, diags = _records()
    run = write_run(tmp_path / "run", "r1", traces, diags)
    out = tmp_path / "r.html"
    labels = _labels(tmp_path)
    with pytest.raises(SystemExit) as exc:
        main(["report", str(run), "--out", str(out), "--labels", str(labels)])
    assert exc.value.code == 0
    html = out.read_text(encoding="utf-8")
    assert 'id="reliability"' in html and str(labels) in html
    assert "low-confidence" in capsys.readouterr().out
