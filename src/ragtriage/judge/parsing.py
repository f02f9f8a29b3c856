"""Robust parsers for the judge prompts' answers. Each returns ``None`` when a reply
cannot be read, so the caller records an ``undetermined`` vote instead of guessing.

Models wrap answers in prose, Markdown, JSON or code fences, number their lines,
use full-width punctuation, or answer "E13" instead of "Misinterpretation"; these
parsers accept all of that but never pick a label that is not plainly there.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ragtriage.judge.prompts import NO_ERROR
from ragtriage.llm import ParseStats, extract_label, parse_json_object
from ragtriage.records import ERROR_TYPE_NAMES, AnswerLabel, ErrorType

__all__ = [
    "parse_answer_label",
    "parse_chunk_choice",
    "parse_concept_list",
    "parse_containment",
    "parse_containment_batched",
    "parse_error_type",
    "parse_json_dict",
]


def parse_json_dict(text: str, *, stats: ParseStats | None = None) -> dict[str, Any] | None:
    """The JSON object in ``text`` (bare, fenced or in prose; repaired when slightly
    broken), or ``None`` — :func:`ragtriage.llm.parse_json_object`."""
    return parse_json_object(text, stats=stats)


# -- answer evaluation ----------------------------------------------------------------

_LABEL_SPELLINGS: dict[str, AnswerLabel] = {
    "correct": AnswerLabel.CORRECT,
    "possible_correct": AnswerLabel.POSSIBLE_CORRECT,
    "possible correct": AnswerLabel.POSSIBLE_CORRECT,
    "possibly correct": AnswerLabel.POSSIBLE_CORRECT,
    "partially correct": AnswerLabel.POSSIBLE_CORRECT,
    "incorrect": AnswerLabel.INCORRECT,
    "abstain": AnswerLabel.ABSTAIN,
    "abstention": AnswerLabel.ABSTAIN,
}


def _label_of(value: str) -> AnswerLabel | None:
    key = " ".join(value.strip().strip("'\"").lower().split())
    return _LABEL_SPELLINGS.get(key) or _LABEL_SPELLINGS.get(key.replace("-", "_"))


def parse_answer_label(
    text: str, *, stats: ParseStats | None = None
) -> tuple[AnswerLabel, str] | None:
    """``(label, reasoning)`` from a Listing-3 style reply.

    JSON ``{"label": ..., "reasoning": ...}`` first; otherwise the one label the reply
    states (:func:`ragtriage.llm.extract_label`: "correct" inside "possible_correct"
    or "incorrect" does not count). Ambiguous or label-free replies give ``None``.
    """
    obj = parse_json_object(text)
    if obj is not None:
        raw = obj.get("label")
        if isinstance(raw, str) and (label := _label_of(raw)) is not None:
            if stats is not None:
                stats.record("ok")
            reason = obj.get("reasoning", obj.get("reason", ""))
            return label, "" if reason is None else " ".join(str(reason).split())
    found = extract_label(text, list(_LABEL_SPELLINGS), stats=stats)
    if found is None:
        return None
    return _LABEL_SPELLINGS[found], _first_sentence(text)


def _first_sentence(text: str) -> str:
    flat = " ".join(text.split()).strip(" \"',}:")
    return re.split(r"(?<=[.!?。])\s", flat, maxsplit=1)[0][:200]


# -- ground-truth chunks --------------------------------------------------------------

_ALIAS = re.compile(r"\bC\s?(\d{1,4})\b", re.I)
_HEADER = re.compile(r"relevant\s*chunks?\s*[:：]?", re.I)


def parse_chunk_choice(text: str, aliases: Mapping[str, str]) -> list[str] | None:
    """Chunk ids chosen in a Listing-4 style reply (``Relevant Chunks: [C1, C4]``).

    ``aliases`` maps ``C1``... to chunk ids. Only the text after the last "Relevant
    Chunks" header is read when there is one; raw chunk ids are accepted too. An
    explicit empty list gives ``[]``; a reply naming nothing gives ``None``.
    """
    headers = list(_HEADER.finditer(text))
    tail = text[headers[-1].end() :] if headers else text
    if headers:
        # the list ends at the closing bracket or the end of the line
        m = re.match(r"\s*[\[【(（]([^\]】)）]*)[\]】)）]", tail)
        tail = m.group(1) if m else tail.split("\n", 1)[0]
    chosen: list[str] = []
    upper = {k.upper(): v for k, v in aliases.items()}
    for m in _ALIAS.finditer(tail):
        cid = upper.get(f"C{int(m.group(1))}")
        if cid is not None:
            chosen.append(cid)
    raw_ids = set(aliases.values())
    if not chosen:
        for token in re.split(r"[\s,，;；\[\]【】'\"]+", tail):
            if token in raw_ids:
                chosen.append(token)
    if chosen:
        return list(dict.fromkeys(chosen))
    if headers and re.match(r"\s*[\[【(（]\s*[\]】)）]", text[headers[-1].end() :]):
        return []
    if headers and re.match(r"\s*(none|无|没有)", text[headers[-1].end() :], re.I):
        return []
    return None


# -- concepts -------------------------------------------------------------------------

_BULLET = re.compile(r"^\s*(?:[-*•·]+|\(?\d{1,2}[.)、:：]|\d{1,2}\s+-)\s*")
_SKIP_LINE = re.compile(r"^(concept\s*list|concepts?|example\s*\d+|question)\s*[:：]?\s*$", re.I)


def parse_concept_list(text: str, limit: int = 20) -> list[str]:
    """Concepts from a Listing-5 style reply: one per line; numbering, bullets, quotes
    and headers are stripped; duplicates (case-insensitive) dropped."""
    body = text
    m = re.search(r"concept\s*list\s*[:：]", body, re.I)
    if m:
        body = body[m.end() :]
    out: list[str] = []
    seen: set[str] = set()
    for line in body.splitlines():
        line = _BULLET.sub("", line).strip().strip("\"'`*").strip()
        if not line or _SKIP_LINE.match(line) or len(line) > 200:
            continue
        key = line.casefold()
        if key not in seen:
            seen.add(key)
            out.append(line)
        if len(out) >= limit:
            break
    return out


_TRUE = re.compile(r"\b(true|yes)\b|是|包含", re.I)
_FALSE = re.compile(r"\b(false|no)\b|否|不包含", re.I)


def parse_containment(text: str, aliases: Sequence[str]) -> dict[str, bool]:
    """``{alias: contained}`` from a Listing-6 style reply (``[C1] True`` lines).
    Aliases whose line is missing or unreadable are left out."""
    wanted = {a.upper() for a in aliases}
    out: dict[str, bool] = {}
    for line in text.splitlines():
        m = _ALIAS.search(line)
        if not m:
            continue
        key = f"C{int(m.group(1))}"
        if key not in wanted or key in out:
            continue
        rest = line[m.end() :]
        is_false = bool(_FALSE.search(rest))
        is_true = bool(_TRUE.search(rest)) and not re.search(r"不包含", rest)
        if is_true != is_false:
            out[key] = is_true
    return out


_CONCEPT_LINE = re.compile(r"^\s*[\[(]?\s*K\s?(\d{1,3})\s*[\])]?\s*[.:：)\-]*\s*(.*)$", re.I)


def parse_containment_batched(
    text: str, n_concepts: int, aliases: Sequence[str]
) -> dict[int, frozenset[str]]:
    """``{concept_index: aliases containing it}`` (0-based) from the batched reply.

    Accepts ``K1: C2, C5`` / ``K2: NONE`` lines or a JSON object such as
    ``{"K1": ["C2"], "K2": []}``. Concepts whose line is missing are left out (the
    caller decides them another way and says so).
    """
    wanted = {a.upper() for a in aliases}
    out: dict[int, frozenset[str]] = {}
    obj = parse_json_dict(text)
    if obj is not None:
        for key, value in obj.items():
            m = re.fullmatch(r"\s*K?\s?(\d{1,3})\s*", str(key), re.I)
            if not m:
                continue
            idx = int(m.group(1)) - 1
            if not 0 <= idx < n_concepts:
                continue
            items = value if isinstance(value, list) else [value]
            found = {
                f"C{int(a.group(1))}"
                for item in items
                if isinstance(item, str)
                for a in _ALIAS.finditer(item)
            }
            out[idx] = frozenset(found & wanted)
        if out:
            return out
    for line in text.splitlines():
        m = _CONCEPT_LINE.match(line)
        if not m:
            continue
        idx = int(m.group(1)) - 1
        if not 0 <= idx < n_concepts or idx in out:
            continue
        rest = m.group(2)
        found = {f"C{int(a.group(1))}" for a in _ALIAS.finditer(rest)} & wanted
        if found:
            out[idx] = frozenset(found)
        elif re.search(r"\bnone\b|\bno\b|无|没有|\[\s*\]|^\s*-?\s*$", rest, re.I):
            out[idx] = frozenset()
    return out


# -- error types ----------------------------------------------------------------------


def parse_error_type(
    text: str,
    allowed: Sequence[ErrorType],
    *,
    allow_no_error: bool = False,
    stats: ParseStats | None = None,
) -> ErrorType | str | None:
    """The one allowed error type a reply states, via
    :func:`ragtriage.llm.extract_label` over the type names ("Low Recall"), then over
    the codes ("E7"); :data:`NO_ERROR` when ``allow_no_error`` and the reply says so.
    ``None`` when absent or ambiguous (the caller records an undetermined vote)."""
    by_name: dict[str, ErrorType | str] = {ERROR_TYPE_NAMES[t]: t for t in allowed}
    if allow_no_error:
        by_name[NO_ERROR] = NO_ERROR
    label = extract_label(text, list(by_name), stats=stats)
    if label is not None:
        return by_name[label]
    by_code: dict[str, ErrorType | str] = {t.value: t for t in allowed}
    label = extract_label(text, list(by_code))
    if label is not None:
        return by_code[label]
    return None
