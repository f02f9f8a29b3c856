"""Security of the local web app (issue 16, item 4).

Trace text is untrusted (answers and chunks come from models and corpora), so:

* every response carries a Content-Security-Policy without inline script
  (``script-src 'self'``), ``nosniff``, no framing and no referrer;
* with an access token every request must carry it: ``?token=`` once (the server then
  sets an HttpOnly SameSite=Strict cookie and redirects to the URL without it), the
  cookie, or ``Authorization: Bearer``;
* state-changing requests need the per-process CSRF token in ``X-CSRF-Token`` (pages
  carry it in a ``<meta>`` tag that only same-origin script can read), a JSON body, and
  an ``Origin`` (when the browser sends one) equal to the server's own;
* the ``Host`` header must be one of the allowed names when given (a loopback server
  without a token is otherwise reachable by DNS rebinding);
* ``--read-only`` refuses every state-changing request.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from dataclasses import dataclass
from urllib.parse import urlencode

from starlette.datastructures import MutableHeaders
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = [
    "CSP",
    "CSRF_HEADER",
    "LOOPBACK_HOSTS",
    "TOKEN_COOKIE",
    "SecurityConfig",
    "SecurityMiddleware",
    "allowed_hosts_for",
    "is_loopback",
    "new_token",
]

TOKEN_COOKIE = "ragtriage_token"
CSRF_HEADER = "x-csrf-token"
#: No inline script, no inline style, nothing from elsewhere.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; form-action 'self'; base-uri 'none'; "
    "frame-ancestors 'none'"
)
_HEADERS: tuple[tuple[str, str], ...] = (
    ("content-security-policy", CSP),
    ("x-content-type-options", "nosniff"),
    ("x-frame-options", "DENY"),
    ("referrer-policy", "no-referrer"),
    ("cross-origin-opener-policy", "same-origin"),
    ("cross-origin-resource-policy", "same-origin"),
)
#: Host names a loopback server answers to (port is ignored).
LOOPBACK_HOSTS: tuple[str, ...] = ("127.0.0.1", "localhost", "::1")
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def new_token() -> str:
    """A random URL-safe token (192 bits)."""
    return secrets.token_urlsafe(24)


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback IP addresses (``127.0.0.0/8``, ``::1``)."""
    h = host.strip().strip("[]")
    if h == "localhost":
        return True
    try:
        return ipaddress.ip_address(h).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class SecurityConfig:
    """What the middleware enforces; ``allowed_hosts=None`` skips the Host check."""

    token: str | None
    csrf: str
    read_only: bool = False
    allowed_hosts: tuple[str, ...] | None = None


def _same(a: str | None, b: str) -> bool:
    return a is not None and hmac.compare_digest(a.encode(), b.encode())


def _host_name(host_header: str) -> str:
    h = host_header.strip().lower()
    if h.startswith("["):
        return h[1 : h.find("]")] if "]" in h else h
    return h.rsplit(":", 1)[0] if h.count(":") == 1 else h


class SecurityMiddleware:
    """Pure ASGI middleware: host, token, CSRF and read-only checks, security headers."""

    def __init__(self, app: ASGIApp, config: SecurityConfig) -> None:
        self.app = app
        self.config = config

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        refused = self._check(request)
        if refused is not None:
            await self._send_with_headers(refused, scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for k, v in _HEADERS:
                    headers[k] = v
            await send(message)

        await self.app(scope, receive, send_with_headers)

    async def _send_with_headers(
        self, response: Response, scope: Scope, receive: Receive, send: Send
    ) -> None:
        for k, v in _HEADERS:
            response.headers[k] = v
        await response(scope, receive, send)

    def _check(self, request: Request) -> Response | None:
        cfg = self.config
        host = _host_name(request.headers.get("host", ""))
        if cfg.allowed_hosts is not None and host not in cfg.allowed_hosts:
            return PlainTextResponse(
                f"host {host!r} is not served here (allowed: {', '.join(cfg.allowed_hosts)})",
                status_code=400,
            )
        if cfg.token is not None:
            # cookies ignore the port: one name per port keeps two local servers apart
            port = request.url.port
            cookie = f"{TOKEN_COOKIE}_{port}" if port else TOKEN_COOKIE
            given = request.query_params.get("token")
            if given is not None:
                if not _same(given, cfg.token):
                    return PlainTextResponse("wrong access token", status_code=401)
                if request.method in _SAFE_METHODS:
                    # keep the token out of the address bar, history and logs
                    rest = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
                    url = request.url.path + ("?" + urlencode(rest) if rest else "")
                    redirect = RedirectResponse(url, status_code=303)
                    redirect.set_cookie(
                        cookie, cfg.token, httponly=True, samesite="strict", path="/"
                    )
                    return redirect
            else:
                auth = request.headers.get("authorization", "")
                bearer = auth[7:].strip() if auth.lower().startswith("bearer ") else None
                if not (_same(request.cookies.get(cookie), cfg.token) or _same(bearer, cfg.token)):
                    return PlainTextResponse(
                        "this server needs its access token: open the URL it printed "
                        "(…/?token=…) or send 'Authorization: Bearer <token>'",
                        status_code=401,
                    )
        if request.method not in _SAFE_METHODS:
            if cfg.read_only:
                return PlainTextResponse("this server is read-only (--read-only)", status_code=403)
            if not _same(request.headers.get(CSRF_HEADER), cfg.csrf):
                return PlainTextResponse(
                    "missing or wrong CSRF token (header X-CSRF-Token)", status_code=403
                )
            origin = request.headers.get("origin")
            if (
                origin is not None
                and _host_of_origin(origin) != request.headers.get("host", "").lower()
            ):
                return PlainTextResponse("cross-origin request refused", status_code=403)
            ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
            if ctype != "application/json":
                return PlainTextResponse("expected a JSON body", status_code=415)
        return None


def _host_of_origin(origin: str) -> str:
    o = origin.strip().lower()
    return o.split("://", 1)[1].rstrip("/") if "://" in o else o


def allowed_hosts_for(host: str, token: str | None) -> tuple[str, ...] | None:
    """The Host names to accept: the loopback names for a loopback server without a
    token (DNS rebinding), else any (the token protects it)."""
    if token is None and is_loopback(host):
        return LOOPBACK_HOSTS
    return None
