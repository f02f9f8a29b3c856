"""Small formatting helpers shared by the terminal and HTML renderers."""

from __future__ import annotations

__all__ = ["CONFIDENCE_MEANING", "fmt_delta", "fmt_float", "fmt_int", "fmt_pct"]

NA = "n/a"

#: What a diagnosis' confidence means, in the reader's words; the fitted model behind it
#: (``Diagnosis.confidence_basis``) is shown on request, not in the line itself.
CONFIDENCE_MEANING = (
    "the estimated chance that this verdict is right (how often verdicts like this one "
    "were right on labelled data)"
)


def fmt_pct(value: float | None, digits: int = 1) -> str:
    """``0.123`` → ``"12.3%"``; ``None`` → ``"n/a"``."""
    return NA if value is None else f"{100 * value:.{digits}f}%"


def fmt_float(value: float | None, digits: int = 3) -> str:
    return NA if value is None else f"{value:.{digits}f}"


def fmt_int(value: int | None) -> str:
    return NA if value is None else f"{value:,}"


def fmt_delta(value: float | int | None, *, pct: bool = False, digits: int = 1) -> str:
    """Signed delta: ``+3``, ``-0.020``, ``+2.0 pp``; ``None`` → ``"n/a"``."""
    if value is None:
        return NA
    if pct:
        return f"{100 * value:+.{digits}f} pp"
    if isinstance(value, int):
        return f"{value:+d}"
    return f"{value:+.3f}"
