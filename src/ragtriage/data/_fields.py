"""Typed access to fields of one parsed JSON line, with file:line:field errors."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError

from ragtriage.errors import InputError
from ragtriage.jsonl import iter_json_lines, validation_to_input_error

__all__ = ["Line", "as_paths", "build_record", "iter_objects", "normalize_language"]

R = TypeVar("R")


def iter_objects(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """:func:`ragtriage.jsonl.iter_json_lines`, also rejecting strings with lone
    surrogates (``"\\ud800"`` escapes): they load but can never be written back."""
    for lineno, obj in iter_json_lines(path):
        bad = _surrogate_field(obj)
        if bad is not None:
            raise InputError(
                "invalid Unicode: a lone surrogate escape such as \\ud800",
                path=str(path),
                line=lineno,
                field=bad or None,
            )
        yield lineno, obj


_SURROGATE = re.compile("[\ud800-\udfff]")


def _surrogate_field(obj: Any) -> str | None:
    """Dotted path of the first string (key or value) holding a lone surrogate."""
    stack: list[tuple[str, Any]] = [("", obj)]
    while stack:
        where, value = stack.pop()
        if isinstance(value, str):
            if _SURROGATE.search(value):
                return where
        elif isinstance(value, dict):
            for k, v in value.items():
                sub = f"{where}.{k}" if where else str(k)
                if _SURROGATE.search(k):
                    return sub
                stack.append((sub, v))
        elif isinstance(value, list):
            stack.extend((f"{where}.{i}" if where else str(i), v) for i, v in enumerate(value))
    return None


@dataclass(frozen=True)
class Line:
    """Where a value comes from: file and 1-based line."""

    path: str
    line: int | None = None

    def error(self, field: str | None, message: str) -> InputError:
        return InputError(message, path=self.path, line=self.line, field=field)

    # -- getters ---------------------------------------------------------------

    def mapping(self, obj: Mapping[str, Any], key: str, field: str) -> Mapping[str, Any]:
        if key not in obj:
            raise self.error(field, "missing required field")
        value = obj[key]
        if not isinstance(value, dict):
            raise self.error(field, f"expected an object, got {_kind(value)}")
        return value

    def text(
        self,
        obj: Mapping[str, Any],
        key: str,
        field: str,
        *,
        required: bool = True,
        nonempty: bool = False,
        default: str | None = None,
    ) -> str | None:
        if key not in obj or obj[key] is None:
            if required:
                raise self.error(field, "missing required field")
            return default
        value = obj[key]
        if not isinstance(value, str):
            raise self.error(field, f"expected a string, got {_kind(value)}")
        if nonempty and not value.strip():
            raise self.error(field, "must not be empty")
        return value

    def req_text(self, obj: Mapping[str, Any], key: str, field: str, *, nonempty: bool) -> str:
        value = self.text(obj, key, field, required=True, nonempty=nonempty)
        assert value is not None
        return value

    def ident(self, obj: Mapping[str, Any], key: str, field: str) -> str:
        """An id given as a non-empty string or an integer; returned as a string."""
        if key not in obj or obj[key] is None:
            raise self.error(field, "missing required field")
        return self.ident_value(obj[key], field)

    def ident_value(self, value: Any, field: str) -> str:
        if isinstance(value, bool) or not isinstance(value, int | str):
            raise self.error(field, f"expected a string or integer id, got {_kind(value)}")
        out = str(value).strip()
        if not out:
            raise self.error(field, "id must not be empty")
        return out

    def text_list(
        self, obj: Mapping[str, Any], key: str, field: str, *, required: bool = False
    ) -> list[str]:
        """A list of strings; blank entries are dropped. Missing/null gives [] unless required."""
        if key not in obj or obj[key] is None:
            if required:
                raise self.error(field, "missing required field")
            return []
        value = obj[key]
        if isinstance(value, str):
            return [value] if value.strip() else []
        if not isinstance(value, list):
            raise self.error(field, f"expected a list of strings, got {_kind(value)}")
        out: list[str] = []
        for i, item in enumerate(value):
            if not isinstance(item, str):
                raise self.error(f"{field}.{i}", f"expected a string, got {_kind(item)}")
            if item.strip():
                out.append(item)
        return out

    def list_of(self, obj: Mapping[str, Any], key: str, field: str) -> list[Any] | None:
        """A list (or ``None`` when absent/null)."""
        if key not in obj or obj[key] is None:
            return None
        value = obj[key]
        if not isinstance(value, list):
            raise self.error(field, f"expected a list, got {_kind(value)}")
        return value


def build_record(loc: Line, factory: Callable[[], R]) -> R:
    """Call a record constructor; a pydantic error becomes an InputError at ``loc``."""
    try:
        return factory()
    except ValidationError as exc:
        raise validation_to_input_error(exc, path=loc.path, line=loc.line) from exc


_LANGUAGES = {
    "en": "en",
    "eng": "en",
    "english": "en",
    "zh": "zh",
    "zho": "zh",
    "chi": "zh",
    "cn": "zh",
    "chinese": "zh",
    "中文": "zh",
    "英文": "en",
}


def normalize_language(value: str) -> str:
    """``"en"``/``"zh"`` for the usual spellings (``English``, ``zh-CN``, ``中文`` ...),
    else the lower-cased value."""
    low = value.strip().lower().replace("_", "-")
    if low in _LANGUAGES:
        return _LANGUAGES[low]
    head = low.split("-", 1)[0]
    if head in ("en", "zh"):
        return head
    return low


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def as_paths(value: str | Path | Sequence[str | Path] | None) -> list[Path]:
    """One path or several as a list of Paths (``None`` gives [])."""
    if value is None:
        return []
    if isinstance(value, str | Path):
        return [Path(value)]
    return [Path(v) for v in value]
