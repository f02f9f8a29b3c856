"""K-vote self-consistency (seed 000, §5 and App. B.3): mode, second mode, frequency.

Each of the K samples of an error-type judgement is one vote: an :class:`ErrorType`,
or ``"undetermined"`` when that sample could not be parsed. The mode is taken over the
determined votes only; ties are broken by taxonomy order (E1 before E2 ...) and the
tie is recorded. The mode frequency is the share of *all* K votes equal to the mode, so
undetermined samples lower the confidence instead of disappearing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ragtriage.records import ErrorType, Vote

__all__ = [
    "UNDETERMINED",
    "LabelVoteSummary",
    "VoteSummary",
    "apportion_votes",
    "summarize_label_votes",
    "summarize_votes",
]

UNDETERMINED = "undetermined"
_ORDER = {t: i for i, t in enumerate(ErrorType)}


@dataclass(frozen=True, slots=True)
class VoteSummary:
    """What K votes say.

    ``mode`` is ``None`` exactly when no vote was determined. ``ties`` lists the types
    that shared the top count when taxonomy order had to pick the mode (empty when the
    mode was clear); ``second_ties`` likewise for the second mode.
    """

    votes: tuple[Vote, ...]
    mode: ErrorType | None
    second: ErrorType | None
    mode_count: int
    second_count: int
    mode_frequency: float | None
    undetermined: int
    ties: tuple[ErrorType, ...] = ()
    second_ties: tuple[ErrorType, ...] = ()

    @property
    def k(self) -> int:
        return len(self.votes)

    @property
    def determined(self) -> int:
        return len(self.votes) - self.undetermined

    def describe(self) -> str:
        """One line for the evidence list, e.g. ``votes: E13 7/10, E10 2/10, undetermined 1``."""
        if self.mode is None:
            return f"votes: all {self.k} undetermined"
        counts = Counter(v for v in self.votes if v != UNDETERMINED)
        ranked = sorted(counts.items(), key=lambda kv: (-kv[1], _ORDER[ErrorType(kv[0])]))
        parts = [f"{t} {c}/{self.k}" for t, c in ranked]
        if self.undetermined:
            parts.append(f"undetermined {self.undetermined}")
        text = "votes: " + ", ".join(parts)
        if self.ties:
            text += f" (tie between {', '.join(self.ties)} broken by taxonomy order)"
        return text


def _ranked(counts: Counter[ErrorType]) -> list[tuple[ErrorType, int]]:
    return sorted(counts.items(), key=lambda kv: (-kv[1], _ORDER[kv[0]]))


def summarize_votes(votes: Sequence[Vote]) -> VoteSummary:
    """Mode, second mode and mode frequency of ``votes``.

    >>> s = summarize_votes([ErrorType.E13] * 6 + [ErrorType.E10] * 3 + ["undetermined"])
    >>> (s.mode, s.second, s.mode_frequency, s.undetermined)
    (<ErrorType.E13: 'E13'>, <ErrorType.E10: 'E10'>, 0.6, 1)
    """
    normalized: list[Vote] = []
    counts: Counter[ErrorType] = Counter()
    for v in votes:
        if v == UNDETERMINED:
            normalized.append("undetermined")
        else:
            t = ErrorType(v)
            normalized.append(t)
            counts[t] += 1
    undetermined = len(normalized) - sum(counts.values())
    if not counts:
        return VoteSummary(
            votes=tuple(normalized),
            mode=None,
            second=None,
            mode_count=0,
            second_count=0,
            mode_frequency=None,
            undetermined=undetermined,
        )
    ranked = _ranked(counts)
    mode, mode_count = ranked[0]
    ties = tuple(t for t, c in ranked if c == mode_count)
    second: ErrorType | None = None
    second_count = 0
    second_ties: tuple[ErrorType, ...] = ()
    if len(ranked) > 1:
        second, second_count = ranked[1]
        second_ties = tuple(t for t, c in ranked[1:] if c == second_count)
    return VoteSummary(
        votes=tuple(normalized),
        mode=mode,
        second=second,
        mode_count=mode_count,
        second_count=second_count,
        mode_frequency=mode_count / len(normalized),
        undetermined=undetermined,
        ties=ties if len(ties) > 1 else (),
        second_ties=second_ties if len(second_ties) > 1 else (),
    )


def apportion_votes(scores: Mapping[ErrorType, float], k: int) -> list[Vote]:
    """K votes split among types in proportion to positive ``scores`` (largest
    remainder; ties by taxonomy order), in taxonomy order. No positive score gives K
    undetermined votes. Used to turn pooled rule evidence into votes."""
    positive = {t: s for t, s in scores.items() if s > 0}
    if k <= 0:
        return []
    if not positive:
        return ["undetermined"] * k
    total = sum(positive.values())
    quotas = {t: k * s / total for t, s in positive.items()}
    seats = {t: int(q) for t, q in quotas.items()}
    left = k - sum(seats.values())
    by_remainder = sorted(positive, key=lambda t: (-(quotas[t] - seats[t]), _ORDER[t]))
    for t in by_remainder[:left]:
        seats[t] += 1
    # the strictly strongest type keeps a strict plurality: rounding among many weak
    # types must not tie it with a weaker one (the mode would then fall to taxonomy order)
    ranked = sorted(positive, key=lambda t: (-positive[t], _ORDER[t]))
    best = ranked[0]
    if len(ranked) > 1 and positive[best] > positive[ranked[1]]:
        while True:
            rivals = [t for t in positive if t != best and seats[t] >= seats[best]]
            if not rivals:
                break
            donor = max(
                (t for t in positive if t != best and seats[t] > 0),
                key=lambda t: (seats[t], -positive[t], -_ORDER[t]),
            )
            seats[donor] -= 1
            seats[best] += 1
    out: list[Vote] = []
    for t in sorted(seats, key=lambda t: _ORDER[t]):
        out.extend([t] * seats[t])
    return out


@dataclass(frozen=True, slots=True)
class LabelVoteSummary:
    """:func:`summarize_votes` for any closed label set (question-type labels of seed
    001): the mode over determined votes, ties broken by the order of ``labels`` (and
    recorded), the mode frequency over *all* K votes."""

    votes: tuple[str, ...]
    mode: str | None
    mode_frequency: float | None
    undetermined: int
    ties: tuple[str, ...] = ()

    def describe(self) -> str:
        """One line, e.g. ``votes: summary 3/5, fact_single 1/5, undetermined 1``."""
        k = len(self.votes)
        if self.mode is None:
            return f"votes: all {k} undetermined"
        counts = Counter(v for v in self.votes if v != UNDETERMINED)
        parts = [f"{label} {c}/{k}" for label, c in counts.most_common()]
        if self.undetermined:
            parts.append(f"undetermined {self.undetermined}")
        text = "votes: " + ", ".join(parts)
        if self.ties:
            text += f" (tie between {', '.join(self.ties)} broken by label order)"
        return text


def summarize_label_votes(votes: Sequence[str], labels: Sequence[str]) -> LabelVoteSummary:
    """Mode and mode frequency of K label votes; a vote outside ``labels`` counts as
    undetermined.

    >>> s = summarize_label_votes(["summary", "fact_single", "summary", "junk"], ["fact_single", "summary"])
    >>> (s.mode, s.mode_frequency, s.undetermined)
    ('summary', 0.5, 1)
    """
    order = {label: i for i, label in enumerate(labels)}
    normalized = tuple(v if v in order else UNDETERMINED for v in votes)
    counts = Counter(v for v in normalized if v != UNDETERMINED)
    undetermined = len(normalized) - sum(counts.values())
    if not counts:
        return LabelVoteSummary(normalized, None, None, undetermined)
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], order[kv[0]]))
    mode, mode_count = ranked[0]
    ties = tuple(label for label, c in ranked if c == mode_count)
    return LabelVoteSummary(
        normalized,
        mode,
        mode_count / len(normalized),
        undetermined,
        ties if len(ties) > 1 else (),
    )
