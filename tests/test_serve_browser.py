"""``ragtriage serve`` end to end in headless Debian Chromium (Playwright for Python).

One real server (``python -m ragtriage serve`` on 127.0.0.1, a free port) and one browser
for the module. The run is written by the test: ten traces with English and Chinese text,
one answer an XSS attempt. Skips when chromium or playwright is missing (``make
browser-deps``; playwright's own browser download is never used).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("starlette", reason="the serve extra is not installed")

from _reportdata import dated_runs, sample_records, write_run
from ragtriage.records import Trace
from ragtriage.serve._browser import CHROMIUM, CHROMIUM_ARGS, free_port

pytestmark = pytest.mark.browser

XSS = "<script>alert(1)</script><img src=x onerror=alert(2)>"
TOKEN = "browser-test-token-0123"


def _skip_reason() -> str | None:
    if not Path(CHROMIUM).exists():
        return "Debian chromium is not installed (make browser-deps / apt-get install chromium)"
    for mod in ("playwright.sync_api", "uvicorn"):
        try:
            __import__(mod)
        except ImportError:
            return f"{mod} is not installed (pip install 'ragtriage[serve,browser]')"
    return None


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    root = tmp_path_factory.mktemp("serve") / "runs"
    traces, diags = sample_records()
    data = traces[8].to_dict()
    data["answer"] = XSS
    traces[8] = Trace.model_validate(data)
    write_run(root / "demo", "demo", traces, diags)
    dated_runs(root)
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "ragtriage", "serve", str(root), "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        # every request needs the token: the browser gets it once in the URL
        env={**os.environ, "RAGTRIAGE_SERVE_TOKEN": TOKEN},
    )
    base = f"http://127.0.0.1:{port}"
    auth = {"Authorization": f"Bearer {TOKEN}"}
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(base + "/", headers=auth, timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                out = proc.stdout.read().decode() if proc.stdout else ""
                pytest.fail(f"server did not start: {out}")
            time.sleep(0.2)
        yield base, root / "demo"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout:
            proc.stdout.close()


@pytest.fixture(scope="module")
def browser(server: tuple[str, Path]) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=list(CHROMIUM_ARGS))
        try:
            yield b
        finally:
            b.close()


def test_browse_filter_annotate_and_agreement(
    server: tuple[str, Path], browser: Any, tmp_path: Path
) -> None:
    base, run_dir = server
    shots = tmp_path / "shots"
    shots.mkdir()
    ctx = browser.new_context(viewport={"width": 1366, "height": 900})
    page = ctx.new_page()
    requests: list[str] = []
    errors: list[str] = []
    dialogs: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.on("pageerror", lambda e: errors.append(str(e)))
    console: list[str] = []
    page.on("console", lambda m: console.append(m.text) if m.type == "error" else None)

    def on_dialog(d: Any) -> None:
        dialogs.append(d.message)
        d.dismiss()

    page.on("dialog", on_dialog)

    # without the token nothing is served; with it once, a cookie carries it
    assert page.goto(base + "/").status == 401
    page.goto(base + f"/?token={TOKEN}")
    assert page.url == base + "/"
    # runs page -> run page, filtered to one stage
    assert page.locator("tr[data-run]").count() == 3
    page.screenshot(path=str(shots / "runs.png"), full_page=True)
    page.click("a.run-link:text-is('demo')")
    page.wait_for_url(base + "/runs/demo")
    assert page.locator("tr.trace-row").count() == 10
    with page.expect_navigation():
        page.select_option("#f-stage", "retrieval")
    assert "stage=retrieval" in page.url
    assert page.locator("tr.trace-row").count() == 1
    page.screenshot(path=str(shots / "run.png"), full_page=True)

    # the filtered trace: the XSS answer is text, no dialog fires
    page.click("a.trace-link")
    page.wait_for_url("**/runs/demo/traces/t-q8?stage=retrieval")
    assert page.locator("#answer").is_visible()
    assert page.inner_text("#answer") == XSS
    assert page.locator("#answer img, #answer script").count() == 0
    assert page.locator("li.gt").count() >= 1
    assert "chunk 1 of 3 in doc q8-doc" in page.inner_text("#sec-retrieval")
    page.screenshot(path=str(shots / "trace-xss.png"), full_page=True)
    # Chinese text, reached with the keyboard (k = previous, filter off)
    page.goto(base + "/runs/demo/traces/t-q8")
    with page.expect_navigation():
        page.keyboard.press("k")
    assert page.url.endswith("/runs/demo/traces/t-q7")
    assert page.inner_text("#question") == "公司是哪一年成立的？"
    assert page.locator("#question").bounding_box()["width"] > 60
    page.screenshot(path=str(shots / "trace-zh.png"), full_page=True)

    # annotation, keyboard only: start form (autofocused name), blind mode by default
    page.goto(base + "/runs/demo/annotate")
    page.screenshot(path=str(shots / "annotate-start.png"), full_page=True)
    page.keyboard.type("alice")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert "annotator=alice" in page.url and "blind=1" in page.url
    assert page.inner_text("#kappa-box").find("No labels of alice yet") >= 0
    plan = [  # (answer key, stage key or None, types, note)
        ("1", None, [], ""),
        ("3", "g", ["E13"], "misread the question"),
        ("1", None, [], ""),
        ("1", None, [], ""),
        ("2", None, [], ""),
    ]
    kappas: list[str] = []
    for n, (answer, stage, types, note) in enumerate(plan):
        assert page.get_attribute("#annot", "data-trace") == f"t-q{n}"
        assert "Blind mode" in page.inner_text("#sec-verdict")
        page.keyboard.press(answer)
        if stage:
            page.keyboard.press(stage)
        for t in types:
            page.keyboard.press("t")
            page.keyboard.type(t)
            page.keyboard.press("Enter")
            page.keyboard.press("Escape")
        if note:
            page.keyboard.press("n")
            page.keyboard.type(note)
            page.keyboard.press("Escape")
        page.keyboard.press("Enter")  # save: the verdict appears
        page.wait_for_selector("#status.ok")
        assert "answer label" in page.inner_text("#verdict-live")
        page.wait_for_selector("#kappa td[data-kappa='answer κ']")
        kappas.append(page.inner_text("#kappa td[data-kappa='answer κ']"))
        if n == 1:
            page.screenshot(path=str(shots / "annotate.png"), full_page=True)
        with page.expect_navigation():
            page.keyboard.press("Enter")  # next trace
    assert kappas[0] == "undefined" and kappas[-1] != "undefined"
    assert len(set(kappas)) > 1, kappas
    lines = (run_dir / "annotations" / "alice.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 5

    # reload: the labels are kept and annotation resumes at the sixth trace
    page.reload()
    assert page.get_attribute("#annot", "data-trace") == "t-q5"
    page.goto(base + "/runs/demo/annotate?annotator=alice&blind=1&i=1")
    assert page.inner_text("#answer-choices .choice.on") == "3 incorrect"
    assert page.inner_text("#stage-choices .choice.on") == "g generation"
    assert page.inner_text("#type-chosen") == "E13"
    assert page.input_value("#note") == "misread the question"
    verdict = page.inner_text("#sec-verdict")  # labelled: the verdict is shown at once
    assert "Blind mode" not in verdict and "correct" in verdict

    # agreement panel and compare page
    page.goto(base + "/runs/demo/agreement")
    row = page.inner_text("#vs-judge tr[data-annotator='alice']")
    assert row.startswith("alice") and kappas[-1] in row
    page.screenshot(path=str(shots / "agreement.png"), full_page=True)
    page.goto(base + "/compare?a=a&b=b")
    assert "fixed: 2" in page.inner_text("#transitions")
    assert page.inner_text("#verdict h2").endswith("passed")
    page.screenshot(path=str(shots / "compare.png"), full_page=True)
    ctx.close()

    assert dialogs == []
    assert errors == []
    # nothing the Content-Security-Policy had to block (no inline script or style)
    assert not [c for c in console if "Content Security Policy" in c], console
    assert all(u.startswith(base + "/") for u in requests), [
        u for u in requests if not u.startswith(base)
    ]
    assert sorted(p.name for p in shots.iterdir()) == [
        "agreement.png",
        "annotate-start.png",
        "annotate.png",
        "compare.png",
        "run.png",
        "runs.png",
        "trace-xss.png",
        "trace-zh.png",
    ]
    assert all(p.stat().st_size > 5_000 for p in shots.iterdir())
