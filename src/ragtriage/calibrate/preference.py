"""Which automatic score follows people when they compare two answers (issue 28).

A pairwise preference file is JSON Lines (UTF-8), one answer pair a line::

    {"pair_id": "p1", "question": "...", "ground_truth": "...", "answer_a": "...",
     "answer_b": "...", "language": "en",
     "judgements": [{"annotator": "h1", "correctness": 2, "completeness": 1}, ...]}

``correctness`` and ``completeness`` run from -2 (B much better) to 2 (A much better).
A score agrees with people when its difference score(A) - score(B) correlates with the
annotators' mean preference: :func:`correlate` gives Pearson and Spearman with seeded
percentile-bootstrap 95 % intervals (pairs resampled), and :func:`inter_annotator` the
annotators' own agreement (mean Pearson over annotator pairs) -- the ceiling a score
can hope to reach. Pure functions; ``benchmarks/correctness_vs_people.py`` runs them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Any, Final, Literal

import numpy as np

from ragtriage.errors import InputError

__all__ = [
    "ASPECTS",
    "AnnotatorAgreement",
    "Aspect",
    "Correlation",
    "PairJudgement",
    "PreferencePair",
    "correlate",
    "inter_annotator",
    "mean_preference",
    "pearson",
    "rank",
    "read_preferences",
    "spearman",
]

Aspect = Literal["correctness", "completeness", "overall"]
#: the judged aspects, and ``overall``: their mean
ASPECTS: Final[tuple[Aspect, ...]] = ("correctness", "completeness", "overall")
_HOW = "read as JSON Lines (UTF-8), one answer pair per line"


@dataclass(frozen=True, slots=True)
class PairJudgement:
    annotator: str
    correctness: float
    completeness: float

    def value(self, aspect: Aspect) -> float:
        if aspect == "overall":
            return (self.correctness + self.completeness) / 2
        return self.correctness if aspect == "correctness" else self.completeness


@dataclass(frozen=True, slots=True)
class PreferencePair:
    pair_id: str
    question: str
    ground_truth: str
    answer_a: str
    answer_b: str
    language: str
    judgements: tuple[PairJudgement, ...]


def _field(row: dict[str, Any], name: str, path: Path, line: int, kind: type) -> Any:
    value = row.get(name)
    if not isinstance(value, kind) or isinstance(value, bool):
        want = "a string" if kind is str else ("a list" if kind is list else "a number")
        raise InputError(f"expected {want} ({_HOW})", path=str(path), line=line, field=name)
    return value


def read_preferences(path: Path) -> list[PreferencePair]:
    """The pairs of a preference file; a bad line is an :class:`InputError` naming the
    file, the line and the field."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read the file ({_HOW}): {exc}", path=str(path)) from exc
    out: list[PreferencePair] = []
    seen: set[str] = set()
    for n, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            row = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise InputError(f"not JSON: {exc.msg} ({_HOW})", path=str(path), line=n) from exc
        if not isinstance(row, dict):
            raise InputError(f"expected a JSON object ({_HOW})", path=str(path), line=n)
        pid = _field(row, "pair_id", path, n, str)
        if pid in seen:
            raise InputError(f"duplicate pair_id {pid!r}", path=str(path), line=n, field="pair_id")
        seen.add(pid)
        judgements = []
        for i, j in enumerate(_field(row, "judgements", path, n, list)):
            where = f"judgements[{i}]"
            if not isinstance(j, dict):
                raise InputError(
                    f"expected an object ({_HOW})", path=str(path), line=n, field=where
                )
            vals = []
            for aspect in ("correctness", "completeness"):
                v = j.get(aspect)
                if not (isinstance(v, int | float) and not isinstance(v, bool) and -2 <= v <= 2):
                    raise InputError(
                        f"expected a number from -2 to 2 ({_HOW})",
                        path=str(path),
                        line=n,
                        field=f"{where}.{aspect}",
                    )
                vals.append(float(v))
            who = j.get("annotator")
            if not isinstance(who, str) or not who:
                raise InputError(
                    f"expected an annotator name ({_HOW})",
                    path=str(path),
                    line=n,
                    field=f"{where}.annotator",
                )
            judgements.append(PairJudgement(who, vals[0], vals[1]))
        if not judgements:
            raise InputError(
                f"a pair needs at least one judgement ({_HOW})",
                path=str(path),
                line=n,
                field="judgements",
            )
        out.append(
            PreferencePair(
                pair_id=pid,
                question=_field(row, "question", path, n, str),
                ground_truth=_field(row, "ground_truth", path, n, str),
                answer_a=_field(row, "answer_a", path, n, str),
                answer_b=_field(row, "answer_b", path, n, str),
                language=str(row.get("language") or ""),
                judgements=tuple(judgements),
            )
        )
    return out


def mean_preference(pair: PreferencePair, aspect: Aspect) -> float:
    """The annotators' mean preference for A (positive) on ``aspect``."""
    return sum(j.value(aspect) for j in pair.judgements) / len(pair.judgements)


def pearson(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Pearson's r; ``None`` with fewer than two points or a constant side."""
    if len(x) != len(y):
        raise ValueError("x and y differ in length")
    if len(x) < 2:
        return None
    a, b = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    da, db = a - a.mean(), b - b.mean()
    den = math.sqrt(float(da @ da) * float(db @ db))
    if den == 0:
        return None
    return max(-1.0, min(1.0, float(da @ db) / den))


def rank(x: Sequence[float]) -> list[float]:
    """Ranks from 1, ties given their mean rank."""
    order = sorted(range(len(x)), key=lambda i: x[i])
    out = [0.0] * len(x)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and x[order[j + 1]] == x[order[i]]:
            j += 1
        for k in range(i, j + 1):
            out[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return out


def spearman(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Spearman's rho: Pearson's r of the ranks (ties averaged)."""
    return pearson(rank(x), rank(y))


@dataclass(frozen=True, slots=True)
class Correlation:
    """Pearson and Spearman of ``n`` pairs with bootstrap 95 % intervals (``None`` where
    undefined: fewer than two pairs, a constant side, or too few usable resamples)."""

    n: int
    pearson: float | None
    pearson_ci: tuple[float, float] | None
    spearman: float | None
    spearman_ci: tuple[float, float] | None


def _interval(values: list[float], resamples: int) -> tuple[float, float] | None:
    if len(values) < max(10, resamples // 2):
        return None  # most resamples undefined: no honest interval
    lo, hi = np.percentile(np.asarray(values), [2.5, 97.5])
    return float(lo), float(hi)


def correlate(
    x: Sequence[float], y: Sequence[float], *, seed: int = 0, resamples: int = 1000
) -> Correlation:
    """Pearson and Spearman of ``x`` and ``y`` with seeded percentile-bootstrap 95 %
    intervals (pairs resampled with replacement; resamples where a coefficient is
    undefined are left out)."""
    n = len(x)
    p, s = pearson(x, y), spearman(x, y)
    ps: list[float] = []
    ss: list[float] = []
    if n >= 2:
        rng = np.random.default_rng(seed)
        xa, ya = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
        for idx in rng.integers(0, n, size=(resamples, n)):
            bx, by = xa[idx].tolist(), ya[idx].tolist()
            if (bp := pearson(bx, by)) is not None:
                ps.append(bp)
            if (bs := spearman(bx, by)) is not None:
                ss.append(bs)
    return Correlation(
        n=n,
        pearson=p,
        pearson_ci=_interval(ps, resamples) if p is not None else None,
        spearman=s,
        spearman_ci=_interval(ss, resamples) if s is not None else None,
    )


@dataclass(frozen=True, slots=True)
class AnnotatorAgreement:
    """The annotators' mean Pearson over every two of them (each pair of annotators
    weighted by the answer pairs both judged, at least three), and how many such
    annotator pairs there were. ``None`` when no two annotators share three pairs."""

    pearson: float | None
    annotator_pairs: int
    items: int


def inter_annotator(pairs: Sequence[PreferencePair], aspect: Aspect) -> AnnotatorAgreement:
    by_annotator: dict[str, dict[str, float]] = {}
    for p in pairs:
        for j in p.judgements:
            by_annotator.setdefault(j.annotator, {})[p.pair_id] = j.value(aspect)
    total, weight, count, items = 0.0, 0, 0, 0
    for a, b in combinations(sorted(by_annotator), 2):
        common = sorted(by_annotator[a].keys() & by_annotator[b].keys())
        if len(common) < 3:
            continue
        r = pearson([by_annotator[a][k] for k in common], [by_annotator[b][k] for k in common])
        if r is None:
            continue
        total += r * len(common)
        weight += len(common)
        count += 1
        items += len(common)
    return AnnotatorAgreement(
        pearson=total / weight if weight else None, annotator_pairs=count, items=items
    )
