"""The documented file formats: kinds, JSON Schemas and validation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from ragtriage.errors import InputError
from ragtriage.jsonl import iter_json_lines, validation_to_input_error
from ragtriage.records import Diagnosis, Document, Example, Trace

__all__ = ["KINDS", "detect_kind", "json_schema", "validate_file"]

KINDS: dict[str, type[BaseModel]] = {
    "documents": Document,
    "examples": Example,
    "traces": Trace,
    "diagnoses": Diagnosis,
}

_ID_FIELD = {
    "documents": "doc_id",
    "examples": "example_id",
    "traces": "trace_id",
    "diagnoses": "trace_id",
}

# a key that only records of that kind carry, checked in this order
_SIGNATURE = (
    ("diagnoses", "needs_diagnosis"),
    ("traces", "trace_id"),
    ("examples", "example_id"),
    ("documents", "doc_id"),
)


def detect_kind(path: str | Path) -> str:
    """Guess the record kind from the file name, else from the first line's keys."""
    name = Path(path).name.lower()
    for kind in KINDS:
        if name.startswith(kind) or name.startswith(kind.rstrip("s")):
            return kind
    for _lineno, obj in iter_json_lines(path):
        for kind, key in _SIGNATURE:
            if key in obj:
                return kind
        break
    raise InputError(
        "cannot tell the record kind; pass --kind documents|examples|traces|diagnoses",
        path=str(path),
    )


def validate_file(path: str | Path, kind: str) -> int:
    """Validate every line; return the record count.

    Raises :class:`InputError` naming file:line:field for the first bad line, including
    duplicate ids.
    """
    if kind not in KINDS:
        raise InputError(f"unknown kind {kind!r}; expected one of {sorted(KINDS)}", path=str(path))
    model = KINDS[kind]
    id_field = _ID_FIELD[kind]
    seen: dict[str, int] = {}
    count = 0
    for lineno, obj in iter_json_lines(path):
        try:
            rec = model.model_validate(obj)
        except ValidationError as exc:
            raise validation_to_input_error(exc, path=str(path), line=lineno) from exc
        count += 1
        rid = getattr(rec, id_field)
        if rid in seen:
            raise InputError(
                f"duplicate id {rid!r} (first seen on line {seen[rid]})",
                path=str(path),
                line=lineno,
                field=id_field,
            )
        seen[rid] = lineno
    return count


def json_schema(kind: str) -> dict[str, Any]:
    """JSON Schema (draft 2020-12) of one record kind, as read from disk."""
    return KINDS[kind].model_json_schema(by_alias=True, mode="validation")
