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
from ragtriage.diagnosis.confidence import with_confidence
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
    # confidences from the shipped model, with its technical basis
    diags = [with_confidence(d, t) for d, t in zip(diags, traces, strict=True)]
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


#: the window of a common laptop: the annotation screen must work in it without zooming out
LAPTOP = {"width": 1280, "height": 800}


def _open(browser: Any, base: str, viewport: dict[str, int] = LAPTOP) -> tuple[Any, Any]:
    ctx = browser.new_context(viewport=viewport)
    page = ctx.new_page()
    page.goto(base + f"/?token={TOKEN}")
    return ctx, page


def _inside(box: dict[str, float] | None, width: float, height: float) -> bool:
    return (
        box is not None
        and box["x"] >= 0
        and box["y"] >= 0
        and box["x"] + box["width"] <= width
        and box["y"] + box["height"] <= height
    )


#: true when the element is what the window shows at its centre: not clipped by a
#: scrolling box, not covered (a bounding box alone says neither)
SEEN = """e => {
  const r = e.getBoundingClientRect();
  const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
  return hit !== null && (hit === e || e.contains(hit));
}"""


def test_run_page_numbers_rows_from_one(server: tuple[str, Path], browser: Any) -> None:
    base, _ = server
    ctx, page = _open(browser, base)
    page.goto(base + "/runs/demo")
    numbers = page.locator("#rows tr.trace-row td:first-child").all_inner_texts()
    assert numbers == [str(n) for n in range(1, 11)]
    # filtered, a row keeps its number: the trace's position in the run
    page.goto(base + "/runs/demo?stage=retrieval")
    assert page.locator("#rows tr.trace-row td:first-child").all_inner_texts() == ["9"]
    assert page.locator("#rows tr.trace-row a.trace-link").inner_text() == "t-q8"
    ctx.close()


def test_annotate_panel_shows_all_16_types_in_a_laptop_window(
    server: tuple[str, Path], browser: Any
) -> None:
    base, _ = server
    ctx, page = _open(browser, base)
    page.goto(base + "/runs/demo/annotate?annotator=dora&i=0")
    items = page.locator("#typelist [data-type]")
    assert items.count() == 16
    for n in range(16):
        item = items.nth(n)
        assert item.is_visible()
        assert _inside(item.bounding_box(), LAPTOP["width"], LAPTOP["height"]), (
            item.get_attribute("data-type"),
            item.bounding_box(),
        )
        assert item.evaluate(SEEN), item.get_attribute("data-type")
    e16 = page.locator("#typelist [data-type='E16']")
    assert "Numerical" in e16.inner_text()
    # reachable by mouse where it stands (no scrolling needed) and by keyboard
    e16.click()
    assert page.inner_text("#type-chosen") == "E16"
    page.keyboard.press("t")
    page.keyboard.type("16")
    page.keyboard.press("Enter")
    page.keyboard.press("Escape")
    assert page.inner_text("#type-chosen") == ""
    assert _inside(page.locator("#save").bounding_box(), LAPTOP["width"], LAPTOP["height"])
    ctx.close()


def test_key_help_fits_the_window_or_scrolls(server: tuple[str, Path], browser: Any) -> None:
    base, _ = server
    ctx, page = _open(browser, base)
    page.goto(base + "/runs/demo/annotate?annotator=dora&i=2")
    help_box = page.locator("#keyhelp")
    assert not help_box.is_visible()
    page.keyboard.press("?")
    assert help_box.is_visible()
    assert _inside(help_box.bounding_box(), LAPTOP["width"], LAPTOP["height"])
    last = page.locator("#keyhelp li").last
    assert "this help" in last.inner_text()
    assert _inside(last.bounding_box(), LAPTOP["width"], LAPTOP["height"])
    assert last.evaluate(SEEN)
    page.keyboard.press("Escape")
    assert not help_box.is_visible()
    # the page scrolled down, then a low window: the box stays in it and scrolls inside
    page.set_viewport_size({"width": 1280, "height": 240})
    page.mouse.wheel(0, 2000)
    page.keyboard.press("?")
    assert help_box.is_visible()
    assert _inside(help_box.bounding_box(), 1280, 240)
    sizes = help_box.evaluate("e => [e.scrollHeight, e.clientHeight]")
    assert sizes[0] > sizes[1]  # more than fits: it scrolls
    last.scroll_into_view_if_needed()
    assert _inside(last.bounding_box(), 1280, 240)
    assert last.evaluate(SEEN)
    assert _inside(help_box.bounding_box(), 1280, 240)
    page.keyboard.press("?")
    assert not help_box.is_visible()
    ctx.close()


def test_progress_line_counts_a_save_at_once(server: tuple[str, Path], browser: Any) -> None:
    base, _ = server
    ctx, page = _open(browser, base)
    page.goto(base + "/runs/demo/annotate?annotator=erin&blind=1")
    progress = page.locator("#progress")
    assert "0 of 10 labelled by erin" in progress.inner_text()
    assert "this one is labelled" not in progress.inner_text()
    page.keyboard.press("1")
    page.keyboard.press("Enter")  # blind: save, the verdict appears, the page stays
    page.wait_for_selector("#status.ok")
    assert "1 of 10 labelled by erin" in progress.inner_text()
    assert "this one is labelled" in progress.inner_text()
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert page.get_attribute("#annot", "data-trace") == "t-q1"
    assert "1 of 10 labelled by erin" in page.inner_text("#progress")
    # the last trace, shown with the verdict: the save stays on the page
    page.goto(base + "/runs/demo/annotate?annotator=erin&i=9")
    page.keyboard.press("1")
    page.keyboard.press("Enter")
    page.wait_for_selector("#status.ok")
    assert "2 of 10 labelled by erin" in page.inner_text("#progress")
    # labelling the same trace again counts it once ("saving…" clears the old mark at once)
    page.keyboard.press("2")
    with page.expect_response(lambda r: r.url.endswith("/annotations")) as saved:
        page.keyboard.press("Enter")
    assert saved.value.json()["n_labelled"] == 2
    page.wait_for_selector("#status.ok")
    assert "2 of 10 labelled by erin" in page.inner_text("#progress")
    ctx.close()


def test_confidence_line_speaks_plainly(server: tuple[str, Path], browser: Any) -> None:
    base, _ = server
    ctx, page = _open(browser, base)
    page.goto(base + "/runs/demo/traces/t-q6")
    line = page.locator("#confidence")
    text = line.inner_text()
    # the shipped model's confidence of that diagnosis, as the fixture stored it
    traces, diags = sample_records()
    shown = next(
        with_confidence(d, t) for d, t in zip(diags, traces, strict=True) if t.trace_id == "t-q6"
    )
    assert shown.confidence is not None
    expected = f"{shown.confidence:.2f}: the estimated chance that this verdict is right"
    assert text.startswith(expected), text
    assert "how often verdicts like this one were right on labelled data" in text
    # the fitted model is one click away, not in the line
    assert "first-contact" not in text and "C=10" not in text and "model (" not in text
    assert not page.locator("#confidence details .text").is_visible()
    page.click("#confidence summary")
    basis = page.locator("#confidence details .text")
    assert basis.is_visible()
    assert basis.inner_text().startswith("failing model (fit on")
    # an undetermined diagnosis says why it has none
    page.goto(base + "/runs/demo/traces/t-q9")
    assert page.inner_text("#confidence") == "undetermined: no verdict to be confident in"
    ctx.close()
