"""The ``direct`` HTTP transport: ``POST /chat/completions`` with aiohttp, no SDK models.

Under load the openai SDK's request pipeline (httpx request and URL models, header
merging, option objects) costs about three quarters of the client CPU of a chat call
(``cProfile`` of ``benchmarks/metrics_vs_ragas.py``: ``_build_request`` alone ~40 %).
With many calls in flight their replies arrive together and are processed one after
the other on the event loop, so that CPU delays every slot's next request. This
transport sends the same JSON body with the same headers over one keep-alive aiohttp
pool per event loop and maps failures onto the same errors as the SDK path
(:func:`ragtriage.llm._openai.translate_openai_error`): HTTP status → ``LLMStatusError``
(message from the body, ``Retry-After`` honoured), timeouts → ``LLMTimeoutError``,
refused or reset connections → ``LLMConnectionError``, a body that is not JSON →
``LLMBadResponseError``.
"""

from __future__ import annotations

import json
import ssl
from typing import Any

from ragtriage import __version__
from ragtriage.errors import LLMTimeoutError
from ragtriage.llm._errors import (
    LLMBadResponseError,
    LLMConnectionError,
    LLMStatusError,
    parse_retry_after,
)

__all__ = ["DirectHTTP", "aiohttp_available"]


def aiohttp_available() -> bool:
    try:
        import aiohttp  # noqa: F401
    except ImportError:
        return False
    return True


def _error_message(raw: bytes, status: int) -> str:
    """The ``error.message`` (or ``message``) of an error body, else its start."""
    try:
        body = json.loads(raw)
    except ValueError:
        body = None
    if isinstance(body, dict):
        inner = body.get("error", body)
        msg = inner.get("message") if isinstance(inner, dict) else inner
        if isinstance(msg, str) and msg:
            return msg
    text = raw[:200].decode("utf-8", "replace").strip()
    return text or f"HTTP {status}"


class DirectHTTP:
    """One aiohttp session for one event loop; ``close()`` releases it."""

    def __init__(self, base_url: str, api_key: str, timeout_s: float, tls: ssl.SSLContext) -> None:
        import aiohttp

        self._aiohttp = aiohttp
        self._base = base_url.rstrip("/")
        self._headers = {
            "Authorization": f"Bearer {api_key}",
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": f"ragtriage/{__version__}",
        }
        connector = aiohttp.TCPConnector(
            limit=0, ssl=tls if self._base.startswith("https:") else False
        )
        self._timeout_s = timeout_s
        self._session = aiohttp.ClientSession(
            connector=connector,
            # per phase, like the SDK's httpx timeouts: the runner's own timeout around
            # the whole call fires first when both are set to the same value
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=timeout_s, sock_read=timeout_s),
            skip_auto_headers=("Accept-Encoding",),
        )

    async def post(self, path: str, payload: dict[str, Any]) -> object:
        """The parsed JSON reply of ``POST base_url + path``; raises an ``LLMError``."""
        aiohttp = self._aiohttp
        data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        try:
            async with self._session.post(
                self._base + path, data=data, headers=self._headers
            ) as resp:
                raw = await resp.read()
                status, headers = resp.status, resp.headers
        except TimeoutError as exc:
            raise LLMTimeoutError(
                f"request timed out: no answer within {self._timeout_s:g}s"
            ) from exc
        except (aiohttp.ClientConnectionError, OSError) as exc:
            raise LLMConnectionError(f"connection failed ({type(exc).__name__}: {exc})") from exc
        except aiohttp.ClientError as exc:
            raise LLMBadResponseError(f"unusable response: {type(exc).__name__}: {exc}") from exc
        if status >= 400:
            raise LLMStatusError(
                _error_message(raw, status),
                status=status,
                retry_after_s=parse_retry_after(headers),
            )
        try:
            return json.loads(raw)
        except ValueError as exc:
            raise LLMBadResponseError(f"unusable response body: {exc}") from exc

    async def close(self) -> None:
        await self._session.close()
