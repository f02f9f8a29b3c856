"""Reading and writing record files: JSONL with exact error locations, atomic writes.

Every reader error is an :class:`~ragtriage.errors.InputError` naming the file, the
1-based line and the field, and what was expected there.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from ragtriage.errors import InputError

__all__ = [
    "append_jsonl",
    "atomic_write_text",
    "iter_json_lines",
    "read_done_ids",
    "read_records",
    "validation_to_input_error",
    "write_jsonl",
]

M = TypeVar("M", bound=BaseModel)


def iter_json_lines(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for each non-blank line; errors name file:line.

    A UTF-8 byte-order mark at the start of the file (Windows editors write one) is
    skipped."""
    p = Path(path)
    try:
        fh = p.open("r", encoding="utf-8-sig")
    except OSError as exc:
        raise InputError(f"cannot open file: {exc.strerror}", path=str(p)) from exc
    with fh:
        lineno = 0
        while True:
            try:
                line = fh.readline()
            except UnicodeDecodeError as exc:
                raise InputError(
                    f"not valid UTF-8 ({exc.reason})", path=str(p), line=lineno + 1
                ) from exc
            if not line:
                break
            lineno += 1
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(
                    f"not valid JSON: {exc.msg} at column {exc.colno}", path=str(p), line=lineno
                ) from exc
            except (ValueError, RecursionError) as exc:  # huge integers, absurd nesting
                raise InputError(f"not valid JSON: {exc}", path=str(p), line=lineno) from exc
            if not isinstance(obj, dict):
                raise InputError(
                    f"expected a JSON object, got {type(obj).__name__}", path=str(p), line=lineno
                )
            yield lineno, obj


def validation_to_input_error(
    exc: ValidationError, *, path: str | None, line: int | None
) -> InputError:
    """Turn the first pydantic error into an InputError naming the field."""
    err = exc.errors()[0]
    field = ".".join(str(x) for x in err["loc"]) or None
    got = err.get("input")
    detail = err["msg"]
    if err["type"] != "missing" and not isinstance(got, dict):
        detail = f"{detail} (got {got!r:.80})"
    more = len(exc.errors()) - 1
    if more:
        detail += f" [+{more} more error{'s' if more > 1 else ''}]"
    return InputError(detail, path=path, line=line, field=field)


def read_records(path: str | Path, model: type[M]) -> Iterator[M]:
    """Parse each JSONL line of ``path`` as ``model``."""
    for lineno, obj in iter_json_lines(path):
        try:
            yield model.model_validate(obj)
        except ValidationError as exc:
            raise validation_to_input_error(exc, path=str(path), line=lineno) from exc


def _dump(record: BaseModel | dict[str, Any]) -> str:
    if isinstance(record, BaseModel):
        return record.model_dump_json(by_alias=True)
    return json.dumps(record, ensure_ascii=False, sort_keys=False)


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` via a temp file + rename, so readers never see half a file."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
    try:
        # mkstemp creates 0600; give the file the mode a plain open() would (0666 & ~umask)
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, p)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_jsonl(path: str | Path, records: Iterable[BaseModel | dict[str, Any]]) -> int:
    """Atomically write all records as JSONL; returns the count."""
    lines = [_dump(r) for r in records]
    atomic_write_text(path, "".join(line + "\n" for line in lines))
    return len(lines)


def append_jsonl(path: str | Path, record: BaseModel | dict[str, Any]) -> None:
    """Append one complete line and fsync (for resumable runs: a crash loses at most
    the line being written, and readers skip a torn last line via :func:`read_done_ids`)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    with p.open("a", encoding="utf-8") as fh:
        fh.write(_dump(record) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def read_done_ids(path: str | Path, key: str) -> set[str]:
    """Ids already written to a resumable JSONL output; a torn last line is dropped."""
    p = Path(path)
    if not p.exists():
        return set()
    done: set[str] = set()
    good: list[str] = []
    with p.open("r", encoding="utf-8-sig", errors="replace") as fh:
        for line in fh:
            if not line.endswith("\n"):
                break
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                break
            if isinstance(obj, dict) and isinstance(obj.get(key), str):
                done.add(obj[key])
                good.append(line)
    # rewrite without a torn tail so later appends start on a clean line
    atomic_write_text(p, "".join(good))
    return done
