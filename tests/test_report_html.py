"""The HTML report: self-contained, escaped, with charts and per-example drill-downs."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest

from _reportdata import make_diag, make_trace, sample_records, write_run
from ragtriage.cli import main
from ragtriage.records import ErrorType, Stage
from ragtriage.report import render_html, summarize
from ragtriage.report.html import build_example_views


def _html(max_examples: int | None = None) -> str:
    traces, diags = sample_records()
    return render_html(summarize(diags, traces), diags, traces, max_examples=max_examples)


def test_page_is_self_contained() -> None:
    html = _html()
    assert html.startswith("<!DOCTYPE html>")
    assert '<meta charset="utf-8">' in html
    # the only URL is the SVG namespace, which browsers never fetch
    urls = set(re.findall(r"(?:https?:)?//[\w.-]+\.[a-z]{2,}[^\s\"'<>]*", html))
    assert urls <= {"http://www.w3.org/2000/svg"}
    assert "<link" not in html
    assert not re.search(r"<script[^>]+src=", html)
    assert "@import" not in html and "url(" not in html


def test_charts_are_inline_svg() -> None:
    html = _html()
    assert html.count('<svg xmlns="http://www.w3.org/2000/svg" class="chart"') == 5
    assert "Failing examples by stage" in html
    assert "mode (rows) × second mode (columns)" in html


def test_user_text_is_escaped() -> None:
    html = _html()
    assert "<script>alert(" not in html
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &#34;quotes&#34;" in html


def test_svg_labels_are_escaped() -> None:
    d = make_diag(
        "a", stage=Stage.RETRIEVAL, mode=ErrorType.E4, label="<b>x</b>", advice=["<i>y</i>"]
    )
    t = make_trace("a", label="<b>x</b>")
    html = render_html(summarize([d], [t]), [d], [t])
    assert "<b>x</b>" not in html and "<i>y</i>" not in html
    assert "&lt;b&gt;x&lt;/b&gt;" in html


def test_drilldown_has_every_stage_with_gt_highlight_and_drops() -> None:
    html = _html()
    # four failing examples, each a <details> element
    assert html.count('<details class="ex"') == 4
    q6 = html[html.index("<b>q6</b>") :]
    q6 = q6[: q6.index("</details>")]
    assert "Chunks of the ground-truth documents" in q6
    assert re.search(r'<li class="gt">\s*<span class="cid">q6-c0</span>', q6)
    assert re.search(r'<li class="gt">\s*<span class="cid">#3 q6-c0</span>', q6)  # retrieved
    assert '<span class="flag drop">dropped by reranker</span>' in q6
    assert '<span class="flag drop">dropped by budget</span>' in q6
    assert 'Retrieved but dropped by the reranker <span class="muted">(2)' in q6
    assert 'Dropped by the context budget <span class="muted">(1)' in q6
    assert "E7 Low Recall · 8/10" in q6
    assert "GT chunk dropped by the reranker" in q6  # stage reason
    assert "answer differs from the ground truth" in q6  # judge reason


def test_example_views_mark_what_each_stage_dropped() -> None:
    traces, diags = sample_records()
    views, omitted = build_example_views(diags, traces)
    assert omitted == 0
    v = next(x for x in views if x.diagnosis.example_id == "q7")
    assert [c.chunk_id for c in v.dropped_by_reranker] == ["q7-c0", "q7-x1"]
    assert [c.chunk_id for c in v.dropped_by_budget] == ["q7-x0"]
    gt = next(c for c in v.gt_doc_chunks if c.chunk_id == "q7-c0")
    assert gt.is_gt and gt.flags == ("retrieved #3", "dropped by reranker")
    c1 = next(c for c in v.gt_doc_chunks if c.chunk_id == "q7-c1")
    assert c1.flags == ("retrieved #1", "reranked #1", "in context")
    # failing examples in pipeline stage order, undetermined stage last
    assert [x.diagnosis.example_id for x in views] == ["q8", "q6", "q7", "q9"]


def test_chinese_text_is_kept() -> None:
    html = _html()
    assert "公司是哪一年成立的？" in html


def test_max_examples_notes_what_is_left_out() -> None:
    html = _html(max_examples=1)
    assert html.count('<details class="ex"') == 1
    assert "3 more failing examples are not shown" in html


def test_missing_trace_is_said_not_hidden() -> None:
    d = make_diag("zz", stage=Stage.GENERATION, mode=ErrorType.E10)
    html = render_html(summarize([d]), [d], [])
    assert "trace t-zz not found in traces.jsonl" in html


def test_empty_run_renders_na() -> None:
    html = render_html(summarize([]), [], [])
    assert "n/a" in html and "No failing examples." in html


def test_report_cli_writes_html_csv_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    traces, diags = sample_records()
    run = write_run(tmp_path / "run", "r1", traces, diags)
    out = tmp_path / "r.html"
    with pytest.raises(SystemExit) as exc:
        main(
            [
                "report",
                str(run),
                "--out",
                str(out),
                "--csv",
                str(tmp_path / "rows.csv"),
                "--json",
                str(tmp_path / "r.json"),
            ]
        )
    assert exc.value.code == 0
    printed = capsys.readouterr().out
    assert "accuracy 55.6%" in printed
    assert out.read_text(encoding="utf-8").count("<details") == 4
    rows = list(csv.DictReader((tmp_path / "rows.csv").open(encoding="utf-8")))
    assert len(rows) == 10
    q5 = next(r for r in rows if r["example_id"] == "q5")
    assert q5["answer_label"] == "" and q5["stage"] == ""
    q6 = next(r for r in rows if r["example_id"] == "q6")
    assert (q6["stage"], q6["error_type"], q6["mode_votes"]) == ("reranking", "E7", "8/10")
    summary_rows = list(csv.reader((tmp_path / "rows.summary.csv").open(encoding="utf-8")))
    assert ["headline", "", "accuracy", str(5 / 9)] in summary_rows
    data = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert data["summary"]["totals"]["failing"] == 4
    assert len(data["examples"]) == 10
    assert data["run"]["run"] == "r1"


def test_report_cli_default_out_and_tables(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    traces, diags = sample_records()
    run = write_run(tmp_path / "run", "r1", traces, diags)
    with pytest.raises(SystemExit) as exc:
        main(["report", str(run), "--tables"])
    assert exc.value.code == 0
    assert (run / "report.html").is_file()
    assert "Percentage generation" in capsys.readouterr().out


def test_report_cli_without_diagnoses_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    traces, _ = sample_records()
    run = write_run(tmp_path / "run", "r1", traces, None)
    with pytest.raises(SystemExit) as exc:
        main(["report", str(run)])
    assert exc.value.code == 2
    assert "diagnoses.jsonl" in capsys.readouterr().err


def test_report_cli_bad_diagnosis_line_names_file_line_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    traces, diags = sample_records()
    run = write_run(tmp_path / "run", "r1", traces, diags)
    lines = (run / "diagnoses.jsonl").read_text(encoding="utf-8").splitlines()
    bad = json.loads(lines[2])
    bad["stage"] = "nowhere"
    lines[2] = json.dumps(bad)
    (run / "diagnoses.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(SystemExit) as exc:
        main(["report", str(run)])
    assert exc.value.code == 2
    assert "diagnoses.jsonl:3:stage" in capsys.readouterr().err
