"""Open the HTML report in headless Debian Chromium (offline) and click a drill-down.

Needs ``apt-get install chromium`` and ``pip install playwright`` (the ``browser``
extra); playwright's own browser download is never used. Skips when either is missing.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from _reportdata import sample_records
from ragtriage.report import summarize, write_html

pytestmark = pytest.mark.browser

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]


def _skip_reason() -> str | None:
    if not Path(CHROMIUM).exists() and shutil.which("chromium") is None:
        return "Debian chromium is not installed (apt-get install -y chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (pip install 'ragtriage[browser]')"
    return None


def test_report_renders_and_drilldown_expands(tmp_path: Path) -> None:
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    traces, diags = sample_records()
    page_path = tmp_path / "report.html"
    write_html(page_path, summarize(diags, traces), diags, traces, title="browser test")
    requests: list[str] = []
    errors: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium"),
            args=ARGS,
        )
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.on("request", lambda r: requests.append(r.url))
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(page_path.as_uri())
            assert page.title() == "browser test"
            assert "accuracy 55.6%" in page.inner_text("#headline")
            assert page.locator("svg.chart").count() == 5
            box = page.locator("svg.chart").first.bounding_box()
            assert box is not None and box["width"] > 100 and box["height"] > 50

            first = page.locator("details.ex").first
            assert first.get_attribute("open") is None
            assert not first.locator(".exbody").is_visible()
            first.locator("summary").click()
            assert first.get_attribute("open") is not None
            assert first.locator(".exbody").is_visible()
            assert first.locator("li.gt").count() >= 1

            # the stage filter hides the other failing examples
            page.select_option("#f-stage", "generation")
            assert page.locator("details.ex:visible").count() == 1
            assert "1 of 4 shown" in page.inner_text("#f-count")
            page.select_option("#f-stage", "")
            page.click("#expand-all")
            assert page.locator("details.ex[open]").count() == 4
            page.screenshot(path=str(tmp_path / "report.png"), full_page=False)
        finally:
            browser.close()
    assert errors == []
    assert all(u.startswith("file://") for u in requests), requests
