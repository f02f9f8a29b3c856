"""One exception tree for ragtriage.

::

    RagtriageError
    ├── InputError              bad user input (file, line, field, expected)
    │   └── ConfigError         bad configuration file or environment
    ├── LLMError                a language-model call failed for good
    │   ├── LLMTimeoutError     per-request timeout exceeded after all retries
    │   └── LLMResponseError    the endpoint answered with something unusable
    ├── ModelUnavailableError   an optional model/extra is not installed
    ├── ProgramRejected         a planner program was refused or ran out of budget
    └── StoreError              the run store or a run directory is inconsistent

The CLI maps ``InputError`` (and ``ConfigError``) to exit code 2 and every other
``RagtriageError`` to exit code 1.
"""

from __future__ import annotations

__all__ = [
    "ConfigError",
    "InputError",
    "LLMError",
    "LLMResponseError",
    "LLMTimeoutError",
    "ModelUnavailableError",
    "ProgramRejected",
    "RagtriageError",
    "StoreError",
]


class RagtriageError(Exception):
    """Base of all ragtriage errors."""


class InputError(RagtriageError):
    """Bad input. Names the file, the 1-based line and the field when known."""

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.path = path
        self.line = line
        self.field = field
        self.message = message
        super().__init__(self.__str__())

    def location(self) -> str:
        parts = [p for p in (self.path, None if self.line is None else str(self.line)) if p]
        loc = ":".join(parts)
        if self.field:
            loc = f"{loc}:{self.field}" if loc else self.field
        return loc

    def __str__(self) -> str:
        loc = self.location()
        return f"{loc}: {self.message}" if loc else self.message


class ConfigError(InputError):
    """A configuration file or environment variable is invalid."""


class LLMError(RagtriageError):
    """An LLM call failed after all retries."""


class LLMTimeoutError(LLMError):
    """An LLM call exceeded its per-request timeout on every attempt."""


class LLMResponseError(LLMError):
    """The endpoint answered with an unusable response."""


class ModelUnavailableError(RagtriageError):
    """An optional model or extra is not installed; the message says how to get it."""


class StoreError(RagtriageError):
    """The run store or a run directory is inconsistent."""


class ProgramRejected(RagtriageError):
    """A program (e.g. a correction plan an LLM wrote) was refused by the sandboxed
    executor: a construct outside the allow-list, or a step/time/call/size budget
    overrun. ``line`` is the 1-based source line when known."""

    def __init__(self, reason: str, *, line: int | None = None) -> None:
        self.reason = reason
        self.line = line
        super().__init__(f"line {line}: {reason}" if line is not None else reason)
