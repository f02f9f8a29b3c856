"""``ragtriage serve`` pages and annotation API through Starlette's test client (httpx)."""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("starlette")

from starlette.testclient import TestClient

from _reportdata import INJECTION, dated_runs, make_trace, sample_records, write_run
from ragtriage.calibrate.agreement import agreement, read_labels
from ragtriage.cli import main
from ragtriage.jsonl import write_jsonl
from ragtriage.records import Trace
from ragtriage.runview import scan_roots
from ragtriage.serve import create_app
from ragtriage.store import read_diagnoses

XSS = "<script>alert(1)</script><img src=x onerror=alert(2)>"


def _csrf(html: str) -> str:
    m = re.search(r'<meta name="csrf-token" content="([^"]+)">', html)
    assert m, "page has no CSRF meta tag"
    return m.group(1)


@pytest.fixture
def served(tmp_path: Path) -> tuple[TestClient, Path]:
    traces, diags = sample_records()
    # one answer is an XSS attempt; the run also holds Chinese text (q7)
    data = traces[8].to_dict()
    data["answer"] = XSS
    traces[8] = Trace.model_validate(data)
    root = tmp_path / "runs"
    write_run(root / "demo", "demo", traces, diags)
    dated_runs(root)
    return TestClient(create_app([root])), root


def test_runs_page_lists_runs_and_offers_compare(served: tuple[TestClient, Path]) -> None:
    client, _ = served
    r = client.get("/")
    assert r.status_code == 200
    assert 'href="/runs/demo"' in r.text and 'href="/runs/a"' in r.text
    assert "55.6%" in r.text  # demo: 5 of 9 judged answers not failing
    assert 'action="/compare"' in r.text
    assert "<svg" in r.text  # the accuracy trend
    assert r.headers["content-security-policy"].startswith("default-src 'none'")


def test_run_page_tables_filter_sort_and_pagination(served: tuple[TestClient, Path]) -> None:
    client, _ = served
    r = client.get("/runs/demo")
    assert r.status_code == 200
    assert "10 match" in r.text
    for section in ('id="stages"', 'id="types"', 'id="cooccurrence"', 'id="advice"'):
        assert section in r.text
    assert "Pass more reranked chunks" in r.text
    only = client.get("/runs/demo", params={"stage": "retrieval"})
    assert "1 match" in only.text
    assert only.text.count('class="trace-row"') == 1 and 'data-trace="t-q8"' in only.text
    # the trace link keeps the filter
    assert "/runs/demo/traces/t-q8?stage=retrieval" in only.text
    failing = client.get("/runs/demo", params={"answer_label": "failing"})
    assert "4 match" in failing.text
    paged = client.get("/runs/demo", params={"page_size": 3, "page": 2})
    assert paged.text.count('class="trace-row"') == 3
    assert 'data-trace="t-q3"' in paged.text and "page 2 of 4" in paged.text
    srt = client.get("/runs/demo", params={"sort": "-confidence"})
    assert srt.status_code == 200
    bad = client.get("/runs/demo", params={"conf_min": "lots"})
    assert bad.status_code == 400 and "conf_min" in bad.text
    assert client.get("/runs/demo", params={"sort": "nonsense"}).status_code == 400
    # Impr. against a later run
    vs = client.get("/runs/a", params={"vs": "b"})
    assert vs.status_code == 200 and "Impr." in vs.text


def test_trace_page_escapes_untrusted_text_and_shows_everything(
    served: tuple[TestClient, Path],
) -> None:
    client, _ = served
    r = client.get("/runs/demo/traces/t-q8")
    assert r.status_code == 200
    html = r.text
    assert XSS not in html and "<img src=x" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt;" in html
    # script only from /static, never inline
    assert re.findall(r"<script[^>]*>", html) == ['<script src="/static/app.js" defer>']
    assert "chunk 1 of 3 in doc q8-doc, chars 0–25" in html
    assert "dropped by reranker" in html and "gold" in html
    assert "E4" in html and "Missed Retrieval" in html and "Retrieve more chunks" in html
    q6 = client.get("/runs/demo/traces/t-q6").text
    assert INJECTION not in q6 and "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in q6
    zh = client.get("/runs/demo/traces/t-q7").text
    assert "公司是哪一年成立的？" in zh and "2001年。" in zh
    # prev / next within the current filter
    nav = client.get("/runs/demo/traces/t-q7", params={"answer_label": "incorrect"}).text
    assert 'id="prev" rel="prev" href="/runs/demo/traces/t-q6?answer_label=incorrect"' in nav
    assert 'id="next" rel="next" href="/runs/demo/traces/t-q8?answer_label=incorrect"' in nav


def test_paths_are_confined_to_the_roots(served: tuple[TestClient, Path]) -> None:
    client, root = served
    (root.parent / "outside").mkdir()
    write_run(root.parent / "outside", "outside", [make_trace("o1")], None)
    for url in (
        "/runs/nope",
        "/runs/..~outside",
        "/runs/a~..~..~outside",
        "/runs/%2Fetc",
        "/runs/demo/traces/nope",
        "/api/runs/..~outside/agreement",
        "/compare?a=demo&b=..~outside",
    ):
        r = client.get(url)
        assert r.status_code == 404, url
    assert client.get("/static/../_app.py").status_code == 404


def test_annotation_blind_mode_csrf_and_agree_numbers(served: tuple[TestClient, Path]) -> None:
    client, root = served
    start = client.get("/runs/demo/annotate")
    assert start.status_code == 200 and 'name="annotator"' in start.text
    assert client.get("/runs/demo/annotate", params={"annotator": "../x"}).status_code == 400
    page = client.get(
        "/runs/demo/annotate", params={"annotator": "ann", "blind": "1", "strategy": "sequential"}
    )
    assert page.status_code == 200
    html = page.text
    assert 'data-trace="t-q0"' in html
    # blind: the tool's verdict is not in the page before the save
    assert "Blind mode" in html and "answer differs" not in html and "matches" not in html
    token = _csrf(html)
    body = {
        "trace_id": "t-q8",
        "annotator": "ann",
        "taxonomy": "ragec",
        "answer_label": "incorrect",
        "stage": "retrieval",
        "types": ["E4"],
        "note": "GT chunk never retrieved",
    }
    assert client.post("/runs/demo/annotations", json=body).status_code == 403
    r = client.post("/runs/demo/annotations", json=body, headers={"X-CSRF-Token": token})
    assert r.status_code == 200, r.text
    got = r.json()
    assert got["saved"]["types"] == ["E4"] and got["verdict"]["stage"] == "retrieval"
    # the save's answer carries the progress the page shows at once
    assert (got["n_labelled"], got["n_traces"]) == (1, 10)
    r = client.post("/runs/demo/annotations", json=body, headers={"X-CSRF-Token": token})
    assert (r.json()["n_labelled"], r.json()["n_traces"]) == (1, 10)  # a relabel counts once
    bad = dict(body, types=["E99"])
    r = client.post("/runs/demo/annotations", json=bad, headers={"X-CSRF-Token": token})
    assert r.status_code == 400 and "E99" in r.json()["error"]
    bad = dict(body, annotator="a b")
    assert (
        client.post("/runs/demo/annotations", json=bad, headers={"X-CSRF-Token": token}).status_code
        == 400
    )
    for tid, label, stage, types in (
        ("t-q0", "correct", None, []),
        ("t-q6", "incorrect", "reranking", ["E7"]),
        ("t-q7", "incorrect", "retrieval", ["E4"]),
    ):
        r = client.post(
            "/runs/demo/annotations",
            json=dict(body, trace_id=tid, answer_label=label, stage=stage, types=types),
            headers={"X-CSRF-Token": token},
        )
        assert r.status_code == 200, r.text
    # resume: the next unlabelled trace in order is t-q1
    resumed = client.get("/runs/demo/annotate", params={"annotator": "ann", "blind": "1"})
    assert 'data-trace="t-q1"' in resumed.text
    assert "4 of 10 labelled by ann" in resumed.text
    # a labelled trace shows the verdict even in blind mode
    seen = client.get("/runs/demo/annotate", params={"annotator": "ann", "blind": "1", "i": 8})
    assert 'data-trace="t-q8"' in seen.text and "Missed Retrieval" in seen.text
    # the panel's numbers are `ragtriage agree`'s on the same file
    path = root / "demo" / "annotations" / "ann.jsonl"
    assert len(path.read_text(encoding="utf-8").splitlines()) == 4
    expected = agreement(
        read_diagnoses(root / "demo" / "diagnoses.jsonl"), read_labels(path), labels_file=str(path)
    )
    panel = client.get("/api/runs/demo/agreement").json()
    mine = panel["vs_judge"]["ann"]
    assert mine["answer_kappa"] == expected.answer_kappa.model_dump(mode="json")
    assert mine["stage_kappa"] == expected.stage_kappa.model_dump(mode="json")
    assert mine["failing_confusion"] == expected.failing_confusion.model_dump(mode="json")
    html = client.get("/runs/demo/agreement").text
    assert 'data-annotator="ann"' in html and "answer κ" in html


def test_read_only_refuses_annotations(tmp_path: Path) -> None:
    traces, diags = sample_records()
    run = write_run(tmp_path / "r", "r", traces, diags)
    client = TestClient(create_app([tmp_path], read_only=True))
    page = client.get("/runs/r/annotate", params={"annotator": "ann"})
    assert "read-only" in page.text
    r = client.post(
        "/runs/r/annotations",
        json={"trace_id": "t-q0", "annotator": "ann", "answer_label": "correct"},
        headers={"X-CSRF-Token": _csrf(page.text)},
    )
    assert r.status_code == 403
    assert not (run / "annotations").exists()


def test_compare_page_transitions_and_gate(served: tuple[TestClient, Path]) -> None:
    client, _ = served
    r = client.get("/compare", params={"a": "a", "b": "b"})
    assert r.status_code == 200
    assert "fixed: 2" in r.text and "broken: 0" in r.text and "still failing: 2" in r.text
    assert "gate accuracy&gt;=0 passed" in r.text
    r = client.get("/compare", params={"a": "b", "b": "a", "gate": ["stage.retrieval<=0"]})
    assert "broken: 2" in r.text and 'class="gate fail"' in r.text
    bad = client.get("/compare", params={"a": "a", "b": "b", "gate": "accuracy >> 1"})
    assert bad.status_code == 400 and "bad gate" in bad.text


def test_token_required_everywhere(tmp_path: Path) -> None:
    traces, diags = sample_records()
    write_run(tmp_path / "r", "r", traces, diags)
    client = TestClient(create_app([tmp_path], token="s3cret-token-1234"), follow_redirects=False)
    for url in ("/", "/runs/r", "/static/app.js", "/api/runs/r/agreement"):
        assert client.get(url).status_code == 401, url
    r = client.get("/runs/r?token=s3cret-token-1234")
    assert r.status_code == 303 and r.headers["location"] == "/runs/r"
    assert client.get("/runs/r").status_code == 200


def test_cli_refuses_non_loopback_host_without_token(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["serve", str(tmp_path), "--host", "0.0.0.0"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "refusing to serve on the non-loopback address '0.0.0.0' without an access token" in err
    with pytest.raises(SystemExit) as exc:
        main(["serve", str(tmp_path), "--token", "short"])
    assert exc.value.code == 2
    assert "too short" in capsys.readouterr().err


def test_annotation_lines_read_by_agree_cli(served: tuple[TestClient, Path]) -> None:
    client, root = served
    token = _csrf(client.get("/runs/demo/annotate", params={"annotator": "bo"}).text)
    r = client.post(
        "/runs/demo/annotations",
        json={
            "trace_id": "t-q6",
            "annotator": "bo",
            "answer_label": "incorrect",
            "stage": "reranking",
            "types": ["E7", "E8"],
        },
        headers={"X-CSRF-Token": token},
    )
    assert r.status_code == 200
    line = json.loads((root / "demo" / "annotations" / "bo.jsonl").read_text().splitlines()[-1])
    assert line["example_id"] == "q6" and line["types"] == ["E7", "E8"]
    (label,) = read_labels(root / "demo" / "annotations" / "bo.jsonl")
    assert label.example_id == "q6" and label.annotator == "bo"


def test_taxonomies_critic_and_confined_mined_file(
    served: tuple[TestClient, Path], tmp_path: Path
) -> None:
    client, root = served
    outside = tmp_path / "taxonomy.yaml"
    outside.write_text("clusters:\n  - name: Stale facts\n", encoding="utf-8")
    r = client.get("/runs/demo/annotate", params={"annotator": "cy", "taxonomy": str(outside)})
    assert r.status_code == 400 and "inside a served directory" in r.text
    assert (
        client.get(
            "/runs/demo/annotate", params={"annotator": "cy", "taxonomy": "../x"}
        ).status_code
        == 400
    )
    inside = root / "taxonomy.yaml"
    inside.write_text(outside.read_text(encoding="utf-8"), encoding="utf-8")
    page = client.get("/runs/demo/annotate", params={"annotator": "cy", "taxonomy": str(inside)})
    assert page.status_code == 200 and 'data-type="Stale facts"' in page.text
    token = _csrf(page.text)
    r = client.post(
        "/runs/demo/annotations",
        json={
            "trace_id": "t-q7",
            "annotator": "cy",
            "taxonomy": str(inside),
            "answer_label": "incorrect",
            "stage": "generation",
            "types": ["Stale facts"],
        },
        headers={"X-CSRF-Token": token},
    )
    assert r.status_code == 200, r.text
    critic = client.get("/runs/demo/annotate", params={"annotator": "cy", "taxonomy": "critic"})
    assert critic.status_code == 200
    # an 'incorrect' answer without a stage is refused with the reason
    r = client.post(
        "/runs/demo/annotations",
        json={"trace_id": "t-q7", "annotator": "cy", "answer_label": "incorrect"},
        headers={"X-CSRF-Token": token},
    )
    assert r.status_code == 400 and "stage" in r.json()["error"]


def test_run_without_diagnoses_and_odd_trace_ids(tmp_path: Path) -> None:
    base = make_trace("q1").to_dict()
    base["trace_id"] = "dir/x#1 ?z"
    odd = Trace.model_validate(base)
    write_run(tmp_path / "raw", "raw", [odd, make_trace("q2")], None)
    client = TestClient(create_app([tmp_path]))
    run = client.get("/runs/raw")
    assert run.status_code == 200 and "no diagnoses yet" in run.text
    assert "/runs/raw/traces/dir%2Fx%231%20%3Fz" in run.text
    page = client.get("/runs/raw/traces/dir%2Fx%231%20%3Fz")
    assert page.status_code == 200 and "No diagnosis for this trace" in page.text
    assert 'id="next" rel="next" href="/runs/raw/traces/t-q2"' in page.text


def test_cli_rejects_a_missing_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["serve", str(tmp_path / "nope")])
    assert exc.value.code == 2
    assert "not a directory" in capsys.readouterr().err


def test_annotation_orders(tmp_path: Path) -> None:
    traces, diags = sample_records()
    confidence = [0.9, 0.8, 0.95, 0.7, 0.6, None, 0.3, 0.55, 0.2, None]
    diags = [d.model_copy(update={"confidence": c}) for d, c in zip(diags, confidence, strict=True)]
    write_run(tmp_path / "r", "r", traces, diags)
    client = TestClient(create_app([tmp_path]))
    first = {}
    for strategy in ("sequential", "stratified", "uncertain"):
        r = client.get("/runs/r/annotate", params={"annotator": "dee", "strategy": strategy})
        assert r.status_code == 200, strategy
        m = re.search(r'data-trace="([^"]+)"', r.text)
        assert m
        first[strategy] = m.group(1)
    assert first["sequential"] == "t-q0"
    # undetermined diagnoses (no confidence) first, then the lowest confidence
    assert first["uncertain"] == "t-q5"
    nxt = client.get(
        "/runs/r/annotate", params={"annotator": "dee", "strategy": "uncertain", "i": 2}
    )
    assert 'data-trace="t-q8"' in nxt.text  # 0.2
    bad = client.get("/runs/r/annotate", params={"annotator": "dee", "strategy": "random"})
    assert bad.status_code == 400
    assert client.get("/runs/r/annotate", params={"annotator": "dee", "i": "99"}).status_code == 400


def test_trace_page_shows_the_critic_verdict(tmp_path: Path) -> None:
    from ragtriage.critic import CriticVerdict
    from ragtriage.jsonl import write_jsonl

    traces, diags = sample_records()
    run = write_run(tmp_path / "r", "r", traces, diags)
    write_jsonl(
        run / "critic.jsonl",
        [
            CriticVerdict(
                example_id="q8",
                trace_id="t-q8",
                critic="rules",
                reference=False,
                judgement="error",
                tier1=["Incomplete Information"],
                tier2=["Insufficient or Incomplete Information Retrieval"],
                analysis=XSS,
                ragec_types=["E4"],
            )
        ],
    )
    client = TestClient(create_app([tmp_path]))
    html = client.get("/runs/r/traces/t-q8").text
    assert 'id="sec-critic"' in html and "Incomplete Information" in html
    assert XSS not in html and "&lt;img src=x onerror=alert(2)&gt;" in html
    assert 'id="sec-critic"' not in client.get("/runs/r/traces/t-q7").text


def _cli_code(*args: str) -> int:
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    return 0 if exc.value.code is None else int(exc.value.code)


def test_a_diagnosed_traces_file_is_served(tmp_path: Path) -> None:
    traces, _ = sample_records()
    src = tmp_path / "exported" / "t.jsonl"
    src.parent.mkdir()
    write_jsonl(src, traces)
    root = tmp_path / "runs"
    out = root / "mine"
    assert (
        _cli_code("diagnose", str(src), "--out", str(out), "--no-progress", "--workers", "1") == 0
    )
    assert _cli_code("report", str(out)) == 0
    client = TestClient(create_app([root]))
    index = client.get("/")
    assert 'href="/runs/mine"' in index.text and 'id="skipped"' not in index.text
    assert f"traces: copied from {src.resolve()}" in index.text
    run = client.get("/runs/mine")
    assert run.status_code == 200 and run.text.count('class="trace-row"') == 10
    for t in traces:
        page = client.get(f"/runs/mine/traces/{t.trace_id}")
        assert page.status_code == 200 and t.example.query[:20] in html.unescape(page.text)


def _odd_folders(root: Path) -> None:
    """A run without a manifest (served), and folders that are not runs."""
    traces, diags = sample_records()
    write_run(root / "nomanifest", "x", traces, diags)
    (root / "nomanifest" / "manifest.json").unlink()
    (root / "legacy").mkdir(parents=True)
    write_jsonl(root / "legacy" / "diagnoses.jsonl", diags)
    write_run(root / "badmanifest", "bad", traces, diags)
    (root / "badmanifest" / "manifest.json").write_text('{"created_at": "x"}', encoding="utf-8")
    write_run(root / "a" / "b" / "c" / "d" / "deep", "deep", traces, diags)


def test_report_and_serve_accept_and_refuse_the_same_folders(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "runs"
    _odd_folders(root)
    client = TestClient(create_app([root]))
    index = client.get("/").text
    # traces + diagnoses without a manifest: a run for both, its manifest read from the files
    assert 'href="/runs/nomanifest"' in index and "manifest: none, read from the files" in index
    assert client.get("/runs/nomanifest").status_code == 200
    assert client.get("/runs/nomanifest/traces/t-q8").status_code == 200
    capsys.readouterr()
    assert _cli_code("report", str(root / "nomanifest")) == 0
    html_report = (root / "nomanifest" / "report.html").read_text(encoding="utf-8")
    assert "none, read from the files" in html_report
    # the others: listed as skipped with the reason `report` gives
    skipped = {d.path.name: d.reason for d in scan_roots([root])}
    assert sorted(skipped) == ["badmanifest", "deep", "legacy"]
    assert 'id="skipped"' in index
    for name, reason in skipped.items():
        assert f'data-skipped="{root / name}"' in index or name == "deep"
        assert html.escape(reason) in index
    assert "diagnoses.jsonl but no traces.jsonl" in skipped["legacy"]
    assert "run_id" in skipped["badmanifest"] and "more than 4 folders" in skipped["deep"]
    for name in ("legacy", "badmanifest"):
        capsys.readouterr()
        assert _cli_code("report", str(root / name)) == 2
        assert f"error: {skipped[name]}" in capsys.readouterr().err
    # a link to a skipped folder says why it is not a run
    gone = client.get("/runs/legacy", headers={"accept": "text/html"})
    assert gone.status_code == 404 and html.escape(skipped["legacy"]) in gone.text
    refused = client.get("/runs/badmanifest")
    assert refused.status_code == 422 and "missing or empty run id" in refused.text


def test_serve_prints_the_skipped_folders_at_start_up(tmp_path: Path) -> None:
    from ragtriage.serve._browser import free_port

    root = tmp_path / "runs"
    _odd_folders(root)
    proc = subprocess.Popen(
        [sys.executable, "-m", "ragtriage", "serve", str(root), "--port", str(free_port())],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[str] = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("open http"):
                break
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        if proc.stdout is not None:
            proc.stdout.close()
    printed = "".join(lines)
    assert any(line.startswith("open http") for line in lines), printed
    for d in scan_roots([root]):
        assert f"skipped {d.path}: {d.reason}\n" in printed
    assert "nomanifest" not in printed
