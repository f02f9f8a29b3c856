"""How the browser test and ``scripts/serve_screenshots.py`` drive the app: Debian's
Chromium, headless, with nothing reaching the network (Playwright's own browser download
is never used)."""

from __future__ import annotations

import socket

__all__ = ["CHROMIUM", "CHROMIUM_ARGS", "free_port"]

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS: tuple[str, ...] = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port
