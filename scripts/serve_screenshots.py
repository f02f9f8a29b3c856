"""Screenshots of ``ragtriage serve`` for the README: docs/serve-trace.png and
docs/serve-annotate.png.

Builds two small demo runs offline (the ``make demo`` loop: the weak config, ``diagnose``,
``advise --write-config``, the fixed config; both ``evaluate``-d), starts ``ragtriage serve`` on 127.0.0.1 and
drives headless Debian Chromium (Playwright, ``/usr/bin/chromium``) with the keyboard.

    python scripts/serve_screenshots.py [--out docs] [--limit 12] [--work DIR]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from ragtriage.serve._browser import CHROMIUM, CHROMIUM_ARGS, free_port

ROOT = Path(__file__).resolve().parent.parent


def _cli(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "ragtriage", *args], check=True, cwd=ROOT)


def build_runs(work: Path, limit: int) -> Path:
    """The `make demo` loop on ``limit`` questions: weak run, diagnose, advice as a
    config, the fixed run (runs/before, runs/after), both evaluated."""
    runs = work / "runs"
    before, after, fixed = runs / "before", runs / "after", work / "fixed.yaml"
    common = ["--demo", "--limit", str(limit), "--overwrite", "--no-progress"]
    _cli("run", *common, "--config", "configs/demo-weak.yaml", "--out", str(before))
    _cli("diagnose", str(before), "--judge", "rules")
    _cli("advise", str(before), "--top", "3", "--write-config", str(fixed))
    _cli("run", *common, "--config", str(fixed), "--out", str(after))
    _cli("diagnose", str(after), "--judge", "rules")
    for run in (before, after):
        _cli("evaluate", str(run), "--out", str(run))
    return runs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "docs")
    ap.add_argument("--limit", type=int, default=12)
    ap.add_argument("--work", type=Path, default=None, help="Keep the runs here.")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    work = args.work or Path(tempfile.mkdtemp(prefix="ragtriage-serve-"))
    runs = build_runs(work, args.limit)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen(
        [sys.executable, "-m", "ragtriage", "serve", str(runs), "--port", str(port)],
        cwd=ROOT,
        env=dict(os.environ),
    )
    try:
        for _ in range(150):
            try:
                if httpx.get(base + "/", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.2)
        with sync_playwright() as pw:
            browser = pw.chromium.launch(
                executable_path=CHROMIUM, headless=True, args=list(CHROMIUM_ARGS)
            )
            page = browser.new_page(viewport={"width": 1440, "height": 1000})
            # the least faithful answer that states something: claims shaded by support
            page.goto(
                base + "/runs/before?metric=faithfulness&metric_min=0.01&sort=metric:faithfulness"
            )
            page.click("a.trace-link")
            page.wait_for_load_state()
            page.screenshot(path=str(args.out / "serve-trace.png"), full_page=False)
            # the annotation screen: blind, keyboard only, after the save revealed the verdict
            page.goto(base + "/runs/before/annotate")
            page.keyboard.type("alice")
            with page.expect_navigation():
                page.keyboard.press("Enter")
            # the context names the interim CFO, the generator abstained
            page.keyboard.press("4")
            page.keyboard.press("g")
            page.keyboard.press("t")
            page.keyboard.type("9")
            page.keyboard.press("Enter")
            page.keyboard.press("Escape")
            page.keyboard.press("n")
            page.keyboard.type("the context names Marcus Lindqvist; the generator abstained")
            page.keyboard.press("Escape")
            page.keyboard.press("Enter")
            page.wait_for_selector("#status.ok")
            page.wait_for_selector("#kappa")
            page.screenshot(path=str(args.out / "serve-annotate.png"), full_page=False)
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    print(f"wrote {args.out / 'serve-trace.png'} and {args.out / 'serve-annotate.png'}")
    print(f"runs kept in {work}")


if __name__ == "__main__":
    main()
