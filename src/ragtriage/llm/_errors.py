"""LLM call errors that carry what a retry loop needs: retryable or not, Retry-After.

These refine the tree in :mod:`ragtriage.errors` (every class is an ``LLMError``), so
callers that only know ``LLMError`` keep working.
"""

from __future__ import annotations

import datetime
import email.utils
import math
import time
from collections.abc import Mapping

from ragtriage.errors import LLMError, LLMResponseError, LLMTimeoutError

__all__ = [
    "LLMBadResponseError",
    "LLMBatchFailedError",
    "LLMBatchPendingError",
    "LLMConnectionError",
    "LLMDryRunError",
    "LLMStatusError",
    "is_retryable",
    "parse_retry_after",
    "retry_after_of",
]

_RETRYABLE_STATUS = frozenset({408, 409, 429})


class LLMStatusError(LLMError):
    """The endpoint answered with an HTTP error status.

    ``retryable`` is true for 408, 409, 429 and every 5xx; ``retry_after_s`` holds the
    server's ``Retry-After`` (seconds from now) when it sent one.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int,
        retry_after_s: float | None = None,
    ) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status = status
        self.retry_after_s = retry_after_s
        self.retryable = status in _RETRYABLE_STATUS or status >= 500


class LLMConnectionError(LLMError):
    """The endpoint could not be reached (refused, reset, DNS). Always retryable."""

    retryable = True


class LLMBadResponseError(LLMResponseError):
    """The endpoint answered 2xx with a body that is not a usable chat completion
    (invalid JSON, no choices). Retryable: proxies and overloaded servers do this."""

    retryable = True


def is_retryable(exc: BaseException) -> bool:
    """Whether a failed attempt is worth another try."""
    if isinstance(exc, LLMTimeoutError | TimeoutError):
        return True
    return bool(getattr(exc, "retryable", False))


def retry_after_of(exc: BaseException) -> float | None:
    """The server-requested wait in seconds, if the error carries one."""
    value = getattr(exc, "retry_after_s", None)
    return float(value) if isinstance(value, int | float) else None


def parse_retry_after(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms``, or ``Retry-After`` given as seconds or as
    an HTTP-date. Returns ``None`` when absent or unparsable; never negative."""
    lowered = {k.lower(): v for k, v in headers.items()}
    ms = lowered.get("retry-after-ms")
    if ms is not None:
        try:
            value: float | None = float(ms) / 1000.0
        except ValueError:
            value = None
        if value is not None and math.isfinite(value):
            return max(0.0, value)
    raw = lowered.get("retry-after")
    if raw is None:
        return None
    raw = raw.strip()
    try:
        seconds = float(raw)
    except ValueError:
        pass
    else:
        return max(0.0, seconds) if math.isfinite(seconds) else None
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # HTTP-dates are always GMT
        when = when.replace(tzinfo=datetime.UTC)
    current = time.time() if now is None else now
    return max(0.0, when.timestamp() - current)


class LLMDryRunError(LLMError):
    """Raised by a dry-run :class:`LLMRunner` instead of making a call (not a failure)."""


class LLMBatchPendingError(LLMError):
    """Raised by a batch-exporting :class:`LLMRunner` instead of making a call: the
    request was added to the batch (not a failure; the command stops before writing)."""


class LLMBatchFailedError(LLMError):
    """A batch answered this request with an error (recorded when its output file was
    imported); ``status`` is the HTTP status the batch gave, when it gave one."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class BatchNextRound(Exception):
    """A submitted batch was answered and imported: run the command again (the CLI
    does), to compute with the replies and export the next round's requests. (Here, not
    in ``_batch``, so that the CLI's round loop catches it without importing batch mode.)"""
