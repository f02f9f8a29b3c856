"""``ragtriage serve``: a local web app over run directories (issue 16).

Pages: runs, run (tables, filters, pagination), trace, compare, keyboard-first
annotation with blind mode, and the live agreement panel. Server-rendered Jinja2 with a
little vanilla JS shipped in the package; nothing is fetched from elsewhere. Needs the
``serve`` extra (starlette, uvicorn).
"""

from __future__ import annotations

from ragtriage.serve._app import DEFAULT_PAGE_SIZE, STRATEGIES, create_app
from ragtriage.serve._security import (
    CSP,
    CSRF_HEADER,
    LOOPBACK_HOSTS,
    TOKEN_COOKIE,
    allowed_hosts_for,
    is_loopback,
    new_token,
)
from ragtriage.serve._traceview import TraceView, build_trace_view

__all__ = [
    "CSP",
    "CSRF_HEADER",
    "DEFAULT_PAGE_SIZE",
    "LOOPBACK_HOSTS",
    "STRATEGIES",
    "TOKEN_COOKIE",
    "TraceView",
    "allowed_hosts_for",
    "build_trace_view",
    "create_app",
    "is_loopback",
    "new_token",
]
