"""Tolerant parsing of LLM output: JSON objects, pydantic models and labels.

Every function returns ``None`` when it cannot decide — never a guess, never NaN — and
can count its outcome in a :class:`ParseStats` (``ok``: parsed as given, possibly
after unwrapping code fences or surrounding prose; ``repaired``: needed
``json_repair``, case-insensitive keys or a fuzzy match; ``failed``). Callers turn
``None`` into ``undetermined`` with a reason and report the stats.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Sequence
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ValidationError
from rapidfuzz import fuzz

__all__ = [
    "ParseOutcome",
    "ParseStats",
    "extract_label",
    "parse_json_object",
    "parse_model",
]

M = TypeVar("M", bound=BaseModel)
ParseOutcome = Literal["ok", "repaired", "failed"]

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_-]*)[ \t]*\n?(.*?)(?:```|\Z)", re.DOTALL)
_MAX_OBJECT_STARTS = 64
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
_EDGE_PUNCT = " \t\r\n\"'`*_~#>.,;:!?()[]{}<>|-–—。，、；：！？「」『』【】（）《》“”‘’"
_MARKER = re.compile(
    r"(?:label|answer|verdict|category|type|class|classification|result|judge?ment|"
    r"decision|conclusion|output|标签|答案|结论|类别|类型|判断|结果|判定)"
    r"[\s*_`\"'()]*(?:is|=|:|：|是|为|為)?[\s*_`\"'“”「」]*$"
)
_NEGATION = re.compile(
    r"(?:\b(?:not|no|never|isn't|isnt|wasn't|is not)\s+|(?:不|没有|沒有|非|未|并非|並非))$"
)
_JSON_LABEL_KEYS = (
    "label",
    "answer",
    "verdict",
    "category",
    "classification",
    "error_type",
    "type",
    "result",
    "judgement",
    "judgment",
    "decision",
)


class ParseStats:
    """Counts parse outcomes. A plain accumulator owned by the caller."""

    def __init__(self, ok: int = 0, repaired: int = 0, failed: int = 0) -> None:
        self.ok = ok
        self.repaired = repaired
        self.failed = failed

    def record(self, outcome: ParseOutcome) -> None:
        if outcome == "ok":
            self.ok += 1
        elif outcome == "repaired":
            self.repaired += 1
        else:
            self.failed += 1

    @property
    def total(self) -> int:
        return self.ok + self.repaired + self.failed

    def merged(self, other: ParseStats) -> ParseStats:
        """A new counter holding both (neither input changes)."""
        return ParseStats(
            self.ok + other.ok, self.repaired + other.repaired, self.failed + other.failed
        )

    def as_dict(self) -> dict[str, int]:
        return {"ok": self.ok, "repaired": self.repaired, "failed": self.failed}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ParseStats) and self.as_dict() == other.as_dict()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"ParseStats(ok={self.ok}, repaired={self.repaired}, failed={self.failed})"


def _record(stats: ParseStats | None, outcome: ParseOutcome) -> None:
    if stats is not None:
        stats.record(outcome)


# -- JSON ---------------------------------------------------------------------------


def _strict_object(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _embedded_object(text: str) -> dict[str, Any] | None:
    """The first complete JSON object embedded in prose."""
    decoder = json.JSONDecoder()
    start = text.find("{")
    tries = 0
    while start != -1 and tries < _MAX_OBJECT_STARTS:
        tries += 1
        try:
            value, _ = decoder.raw_decode(text, start)
        except (ValueError, RecursionError):
            pass
        else:
            if isinstance(value, dict):
                return value
        start = text.find("{", start + 1)
    return None


def _candidates(text: str) -> list[str]:
    """The text itself, then the bodies of its code fences (json-tagged first)."""
    fences = [(m.group(1).lower(), m.group(2).strip()) for m in _FENCE.finditer(text)]
    tagged = [body for lang, body in fences if lang == "json"]
    others = [body for lang, body in fences if lang != "json"]
    out = [text.strip(), *tagged, *others]
    return [c for c in dict.fromkeys(out) if c]


def _parse_json(text: str) -> tuple[dict[str, Any] | None, ParseOutcome]:
    if "{" not in text:
        return None, "failed"
    candidates = _candidates(text)
    for candidate in candidates:
        value = _strict_object(candidate)
        if value is not None:
            return value, "ok"
    for candidate in candidates:
        value = _embedded_object(candidate)
        if value is not None:
            return value, "ok"
    import json_repair  # only when plain parsing failed

    for candidate in candidates:
        start = candidate.find("{")
        if start == -1:
            continue
        try:
            repaired = json_repair.loads(candidate[start:])
        except Exception:  # json_repair is best effort; any crash means "no object"
            continue
        if isinstance(repaired, dict) and repaired:
            return repaired, "repaired"
    return None, "failed"


def parse_json_object(text: str, *, stats: ParseStats | None = None) -> dict[str, Any] | None:
    """The JSON object in an LLM reply, or ``None``.

    Accepts bare JSON, JSON inside code fences or surrounded by prose, and broken JSON
    that ``json_repair`` can fix (unclosed braces, single quotes, trailing commas).
    """
    value, outcome = _parse_json(text)
    _record(stats, outcome)
    return value


def _casefold_keys(data: dict[str, Any], model: type[BaseModel]) -> dict[str, Any] | None:
    names: dict[str, str] = {}
    for name, info in model.model_fields.items():
        names[name.casefold()] = name
        if info.alias:
            names[info.alias.casefold()] = info.alias
    remapped: dict[str, Any] = {}
    changed = False
    for key, value in data.items():
        target = names.get(key.strip().casefold().replace(" ", "_").replace("-", "_"), key)
        changed = changed or target != key
        remapped[target] = value
    return remapped if changed else None


def parse_model(text: str, model: type[M], *, stats: ParseStats | None = None) -> M | None:
    """Parse a reply into a pydantic ``model`` (via :func:`parse_json_object`), or ``None``.

    Keys differing only in case, spaces or dashes from the field names are accepted.
    """
    data, outcome = _parse_json(text)
    if data is None:
        _record(stats, "failed")
        return None
    try:
        parsed = model.model_validate(data)
    except ValidationError:
        remapped = _casefold_keys(data, model)
        if remapped is None:
            _record(stats, "failed")
            return None
        try:
            parsed = model.model_validate(remapped)
        except ValidationError:
            _record(stats, "failed")
            return None
        outcome = "repaired"
    _record(stats, outcome)
    return parsed


# -- labels -------------------------------------------------------------------------


def _fold(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def _norm(text: str) -> str:
    return _fold(text).strip(_EDGE_PUNCT)


def _label_pattern(folded_label: str) -> re.Pattern[str]:
    body = re.escape(folded_label).replace(r"\ ", r"\s+")
    if _CJK.search(folded_label):
        return re.compile(body)
    return re.compile(rf"(?<![\w]){body}(?![\w])")


def _unique(found: Sequence[str]) -> str | None:
    distinct = list(dict.fromkeys(found))
    return distinct[0] if len(distinct) == 1 else None


def _from_json(text: str, folded: dict[str, str]) -> str | None:
    data, _ = _parse_json(text)
    if data is None:
        return None
    keyed = {str(k).casefold(): v for k, v in data.items()}
    for key in _JSON_LABEL_KEYS:
        value = keyed.get(key)
        if isinstance(value, str) and _norm(value) in folded:
            return folded[_norm(value)]
    found = [folded[_norm(v)] for v in data.values() if isinstance(v, str) and _norm(v) in folded]
    return _unique(found)


def _misspelt_longer_label(
    hay: str, key: str, spans: list[tuple[int, int]], folded: dict[str, str], cutoff: float
) -> str | None:
    """A longer label containing ``key`` that the text around ``key`` nearly spells
    ("partialy correct" → "partially correct" rather than "correct")."""
    found: list[str] = []
    for other in folded:
        if other == key or key not in other:
            continue
        for s, e in spans:
            windows = (hay[max(0, e - len(other)) : e], hay[s : s + len(other)])
            if any(fuzz.ratio(other, w) >= cutoff for w in windows):
                found.append(other)
                break
    return _unique(found)


def _search(
    text: str, folded: dict[str, str], cutoff: float
) -> tuple[str | None, bool, ParseOutcome]:
    """Word-boundary search. Returns (label, anything_found, outcome)."""
    hay = _fold(text)
    spans: dict[str, list[tuple[int, int]]] = {}
    negated: set[str] = set()
    for key in folded:
        for m in _label_pattern(key).finditer(hay):
            if _NEGATION.search(hay[max(0, m.start() - 12) : m.start()]):
                negated.add(key)
                continue
            spans.setdefault(key, []).append(m.span())
    # drop a label whose every occurrence lies inside an occurrence of a longer label
    # ("correct" inside "partially correct", "正确" inside "不正确")
    kept: dict[str, list[tuple[int, int]]] = {}
    for key, own in spans.items():
        outside = [
            (s, e)
            for s, e in own
            if not any(
                other != key and os <= s and e <= oe and (oe - os) > (e - s)
                for other, other_spans in spans.items()
                for os, oe in other_spans
            )
        ]
        if outside:
            kept[key] = outside
    if not kept:
        return None, bool(negated), "failed"
    if len(kept) == 1:
        key = next(iter(kept))
        longer = _misspelt_longer_label(hay, key, kept[key], folded, cutoff)
        if longer is not None:
            return folded[longer], True, "repaired"
        return folded[key], True, "ok"
    lines = [_norm(line) for line in text.splitlines() if _norm(line)]
    for line in (lines[0], lines[-1]) if lines else ():
        if line in folded:
            return folded[line], True, "ok"
    marked = [
        key for key, own in kept.items() for s, _ in own if _MARKER.search(hay[max(0, s - 40) : s])
    ]
    chosen = _unique([folded[k] for k in marked])
    return chosen, True, "ok" if chosen is not None else "failed"


def _fuzzy(text: str, folded: dict[str, str], cutoff: float) -> str | None:
    hay = _norm(text)
    words = hay.split()
    if not hay or len(words) > 60:
        return None
    best: dict[str, float] = {}
    for key in folded:
        width = max(1, len(key.split()))
        windows = {" ".join(words[i : i + width]).strip(_EDGE_PUNCT) for i in range(len(words))}
        windows.add(hay)
        best[key] = max(fuzz.ratio(key, w) for w in windows if w)
    ranked = sorted(best.items(), key=lambda kv: kv[1], reverse=True)
    if not ranked or ranked[0][1] < cutoff:
        return None
    if len(ranked) > 1 and ranked[1][1] >= cutoff:
        return None  # two labels plausible: ambiguous
    return folded[ranked[0][0]]


def extract_label(
    text: str,
    allowed: Sequence[str],
    *,
    cutoff: float = 90.0,
    stats: ParseStats | None = None,
) -> str | None:
    """The one label of ``allowed`` that ``text`` states, or ``None``.

    Tries, in order: the whole reply equals a label (case, width, surrounding
    punctuation and markdown ignored); a JSON object whose ``label``/``answer``/...
    value is a label; a word-boundary search (CJK labels by substring) where a label
    found inside a longer found label or after a negation ("not", "不") does not count
    and several labels are resolved by a first/last line that is exactly a label or by
    a marker such as ``Answer:``/``答案：``; finally a fuzzy match (``rapidfuzz`` ratio
    ≥ ``cutoff``) for typos. Returns ``None`` when absent or ambiguous.
    """
    folded: dict[str, str] = {}
    for label in allowed:
        key = _norm(label)
        if key and key not in folded:
            folded[key] = label
    if not folded or not text.strip():
        _record(stats, "failed")
        return None
    whole = _norm(text)
    if whole in folded:
        _record(stats, "ok")
        return folded[whole]
    if "{" in text:
        from_json = _from_json(text, folded)
        if from_json is not None:
            _record(stats, "ok")
            return from_json
    found, anything, outcome = _search(text, folded, cutoff)
    if found is not None:
        _record(stats, outcome)
        return found
    if not anything:
        fuzzy = _fuzzy(text, folded, cutoff)
        if fuzzy is not None:
            _record(stats, "repaired")
            return fuzzy
    _record(stats, "failed")
    return None
