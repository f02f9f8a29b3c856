"""Evaluation metrics next to the diagnosis (issue 11): the HTML report and the
terminal summary show means with CIs and the failing examples sorted by faithfulness;
without scores nothing changes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from rich.console import Console

from _reportdata import sample_records, write_run
from ragtriage.cli import main
from ragtriage.errors import InputError
from ragtriage.report import render_html, summarize
from ragtriage.report.html import build_example_views
from ragtriage.report.metrics_view import load_run_metrics, lowest_faithfulness
from ragtriage.report.terminal import render_metrics


def _scores(run: Path, faith: dict[str, float | str]) -> None:
    rows = [
        {
            "trace_id": f"t-{eid}",
            "example_id": eid,
            "scores": {
                "faithfulness": {"value": v, "judge": "offline"},
                "f1": {"value": 0.25, "judge": "lexical"},
            },
        }
        for eid, v in faith.items()
    ]
    (run / "scores.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    agg = {
        "judge": "offline",
        "metrics": {
            "faithfulness": {
                "mean": 0.4,
                "ci95": [0.1, 0.7],
                "n": 2,
                "undetermined": {"empty answer": 1},
                "judge": ["offline"],
            },
            "selfcheck": {"mean": "undetermined", "n": 0, "undetermined": {"x": 3}, "judge": []},
        },
    }
    (run / "metrics.json").write_text(json.dumps(agg), encoding="utf-8")


def _run(tmp_path: Path, with_scores: bool = True) -> Path:
    traces, diags = sample_records()
    run = write_run(tmp_path / "run", "r1", traces, diags)
    if with_scores:
        # failing: q6 (reranking), q7 (generation), q8 (retrieval), q9 (undetermined stage)
        _scores(run, {"q6": 0.8, "q7": 0.0, "q8": "undetermined", "q9": 0.5})
    return run


def test_html_metrics_section_and_faithfulness_order(tmp_path: Path) -> None:
    traces, diags = sample_records()
    metrics = load_run_metrics(_run(tmp_path))
    assert metrics is not None
    views, _ = build_example_views(diags, traces, metrics=metrics)
    assert [v.diagnosis.example_id for v in views] == ["q7", "q9", "q6", "q8"]
    assert views[0].faithfulness == 0.0 and views[-1].faithfulness is None
    assert dict(views[0].metrics) == {"faithfulness": 0.0, "f1": 0.25}
    html = render_html(summarize(diags, traces), diags, traces, metrics=metrics)
    section = html.split('<section id="metrics">')[1].split("</section>")[0]
    assert "0.400" in section and "0.100–0.700" in section and "scores.jsonl" in section
    assert 'id="f-sort"' in html and 'href="#metrics"' in html
    faiths = re.findall(r'data-faith="([^"]*)"', html)
    assert faiths == ["0.000000", "0.500000", "0.800000", ""]
    assert "faithfulness 0.00</span>" in html


def test_html_without_metrics_is_unchanged(tmp_path: Path) -> None:
    traces, diags = sample_records()
    plain = render_html(summarize(diags, traces), diags, traces)
    assert plain == render_html(summarize(diags, traces), diags, traces, metrics=None)
    assert 'id="metrics"' not in plain and "f-sort" not in plain and "data-faith" not in plain
    assert load_run_metrics(_run(tmp_path, with_scores=False)) is None


def test_terminal_metrics_and_report_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _traces, diags = sample_records()
    run = _run(tmp_path)
    metrics = load_run_metrics(run)
    assert metrics is not None
    assert [d.example_id for d, _ in lowest_faithfulness(diags, metrics)] == ["q7", "q9", "q6"]
    console = Console(record=True, width=160)
    render_metrics(metrics, diags, console)
    text = console.export_text()
    assert "Evaluation metrics (offline judge)" in text and "0.100–0.700" in text
    lines = [ln for ln in text.splitlines() if re.search(r"\bq[0-9]\b", ln)]
    assert [re.search(r"\bq[0-9]\b", ln).group() for ln in lines] == ["q7", "q9", "q6"]  # type: ignore[union-attr]
    assert "generation" in lines[0] and "E16 Numerical Error" in lines[0] and "f1 0.25" in lines[0]
    with pytest.raises(SystemExit) as exc:
        main(["report", str(run), "--out", str(tmp_path / "r.html")])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "Failing examples by faithfulness" in out
    assert '<section id="metrics">' in (tmp_path / "r.html").read_text(encoding="utf-8")


def test_bad_scores_file_is_an_input_error(tmp_path: Path) -> None:
    run = _run(tmp_path)
    (run / "scores.jsonl").write_text('{"example_id": "q1"}\n', encoding="utf-8")
    with pytest.raises(InputError) as exc:
        load_run_metrics(run)
    assert exc.value.line == 1
    with pytest.raises(InputError):
        load_run_metrics(run, tmp_path / "missing.jsonl")


@pytest.mark.browser
def test_sort_control_in_a_browser(tmp_path: Path) -> None:
    from test_html_browser import ARGS, CHROMIUM, _skip_reason

    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    import shutil

    from playwright.sync_api import sync_playwright

    from ragtriage.report import write_html

    traces, diags = sample_records()
    metrics = load_run_metrics(_run(tmp_path))
    page_path = tmp_path / "report.html"
    write_html(page_path, summarize(diags, traces), diags, traces, metrics=metrics)
    errors: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium"),
            args=ARGS,
        )
        try:
            page = browser.new_page()
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(page_path.as_uri())

            def order() -> list[str | None]:
                loc = page.locator("details.ex")
                return [loc.nth(i).get_attribute("data-id") for i in range(loc.count())]

            assert order() == ["q7", "q9", "q6", "q8"]  # faithfulness, lowest first
            page.select_option("#f-sort", "stage")
            assert order() == ["q8", "q6", "q7", "q9"]  # retrieval, reranking, generation, -
            page.select_option("#f-sort", "faith")
            assert order() == ["q7", "q9", "q6", "q8"]
            page.select_option("#f-stage", "generation")
            assert page.locator("details.ex:visible").count() == 1
        finally:
            browser.close()
    assert errors == []
