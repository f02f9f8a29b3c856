"""Calibration of a confidence score: reliability table, ECE and Brier score.

Pure functions over parallel sequences of confidences (probabilities in [0, 1]) and
outcomes (was the thing the confidence was about right?).

* **Reliability table**: ``n_bins`` equal-width bins over [0, 1]; bin ``b`` holds the
  confidences in ``[b/n, (b+1)/n)`` (the last bin also holds 1.0). Per bin: ``n``, the
  mean confidence and the accuracy (share correct). An empty bin is reported as empty
  (``n == 0``, mean and accuracy ``None``), never as 0.
* **ECE** (expected calibration error): ``sum_b n_b / N * |acc_b - conf_b|`` over the
  non-empty bins.
* **Brier score**: ``mean((confidence - correct)^2)``.

A case without a confidence (``None``: the diagnosis was undetermined) is not binned
and is counted in ``without_confidence``. With no case left, ECE and Brier are
``None`` and ``reason`` says why. A confidence outside [0, 1] or NaN is an error.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import JsonValue

__all__ = ["DEFAULT_BINS", "Reliability", "ReliabilityBin", "brier_score", "reliability"]

DEFAULT_BINS = 10


@dataclass(frozen=True, slots=True)
class ReliabilityBin:
    """One confidence bin: ``[lower, upper)`` (the last bin is closed)."""

    lower: float
    upper: float
    n: int
    mean_confidence: float | None
    accuracy: float | None

    @property
    def empty(self) -> bool:
        return self.n == 0

    @property
    def gap(self) -> float | None:
        """``|accuracy - mean confidence|``; ``None`` for an empty bin."""
        if self.accuracy is None or self.mean_confidence is None:
            return None
        return abs(self.accuracy - self.mean_confidence)

    def to_dict(self) -> dict[str, JsonValue]:
        return {
            "lower": self.lower,
            "upper": self.upper,
            "n": self.n,
            "mean_confidence": self.mean_confidence,
            "accuracy": self.accuracy,
        }


@dataclass(frozen=True, slots=True)
class Reliability:
    """Reliability table, ECE and Brier score of one set of (confidence, correct) pairs.

    ``ece``/``brier``/``accuracy``/``mean_confidence`` are ``None`` exactly when
    ``n == 0``; then ``reason`` says why."""

    bins: tuple[ReliabilityBin, ...]
    n: int
    without_confidence: int
    accuracy: float | None
    mean_confidence: float | None
    ece: float | None
    brier: float | None
    reason: str | None = None

    def to_dict(self) -> dict[str, JsonValue]:
        return {
            "n": self.n,
            "without_confidence": self.without_confidence,
            "accuracy": self.accuracy,
            "mean_confidence": self.mean_confidence,
            "ece": self.ece,
            "brier": self.brier,
            "reason": self.reason,
            "bins": [b.to_dict() for b in self.bins],
        }


def _checked(confidences: Sequence[float | None], correct: Sequence[bool]) -> list[float | None]:
    if len(confidences) != len(correct):
        raise ValueError(f"{len(confidences)} confidences but {len(correct)} outcomes")
    out: list[float | None] = []
    for i, c in enumerate(confidences):
        if c is not None and (math.isnan(c) or not 0.0 <= c <= 1.0):
            raise ValueError(f"confidence #{i} is {c!r}; expected a probability in [0, 1]")
        out.append(c)
    return out


def _bin_of(confidence: float, n_bins: int) -> int:
    return min(int(confidence * n_bins), n_bins - 1)


def brier_score(confidences: Sequence[float], correct: Sequence[bool]) -> float | None:
    """Mean squared gap between confidence and outcome; ``None`` for no cases."""
    return reliability(confidences, correct, n_bins=1).brier


def reliability(
    confidences: Sequence[float | None], correct: Sequence[bool], *, n_bins: int = DEFAULT_BINS
) -> Reliability:
    """Reliability table with ``n_bins`` equal-width bins, ECE and Brier score."""
    if n_bins < 1:
        raise ValueError(f"n_bins must be >= 1, got {n_bins}")
    checked = _checked(confidences, correct)
    pairs = [(c, ok) for c, ok in zip(checked, correct, strict=True) if c is not None]
    counts = [0] * n_bins
    conf_sum = [0.0] * n_bins
    right = [0] * n_bins
    for c, ok in pairs:
        b = _bin_of(c, n_bins)
        counts[b] += 1
        conf_sum[b] += c
        right[b] += int(ok)
    bins = tuple(
        ReliabilityBin(
            lower=b / n_bins,
            upper=(b + 1) / n_bins,
            n=counts[b],
            mean_confidence=conf_sum[b] / counts[b] if counts[b] else None,
            accuracy=right[b] / counts[b] if counts[b] else None,
        )
        for b in range(n_bins)
    )
    n = len(pairs)
    without = len(checked) - n
    if n == 0:
        reason = "no cases" if not checked else f"none of the {without} cases has a confidence"
        return Reliability(bins, 0, without, None, None, None, None, reason)
    ece = sum(
        counts[b] / n * abs(right[b] / counts[b] - conf_sum[b] / counts[b])
        for b in range(n_bins)
        if counts[b]
    )
    brier = sum((c - float(ok)) ** 2 for c, ok in pairs) / n
    return Reliability(
        bins=bins,
        n=n,
        without_confidence=without,
        accuracy=sum(right) / n,
        mean_confidence=sum(conf_sum) / n,
        ece=ece,
        brier=brier,
    )
