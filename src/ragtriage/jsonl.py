"""Reading and writing record files: JSONL with exact error locations, atomic writes.

Every reader error is an :class:`~ragtriage.errors.InputError` naming the file, the
1-based line and the field, and what was expected there.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

from pydantic import BaseModel, ValidationError

from ragtriage.errors import InputError

__all__ = [
    "DoneScan",
    "append_jsonl",
    "append_lines",
    "atomic_write_text",
    "drop_records",
    "file_lock",
    "iter_json_lines",
    "read_done_ids",
    "read_json_object",
    "read_records",
    "record_json",
    "scan_done_ids",
    "stream_write_lines",
    "validation_to_input_error",
    "write_jsonl",
]

M = TypeVar("M", bound=BaseModel)

_BOM = b"\xef\xbb\xbf"


def _json_error_message(exc: json.JSONDecodeError) -> str:
    # json's messages for some errors end in "at" ("Invalid control character at"):
    # drop it so the location reads once, "... at column 12".
    return f"not valid JSON: {exc.msg.removesuffix(' at')} at column {exc.colno}"


def read_json_object(path: str | Path, what: str) -> dict[str, Any]:
    """A JSON file holding one object (a run manifest, a weights or confidence table);
    ``what`` names it in the error when the file cannot be read, is not JSON (with the
    line) or holds something else than an object. A UTF-8 BOM is skipped."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise InputError(f"cannot read {what}: {exc.strerror}", path=str(p)) from exc
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON: {exc.msg}", path=str(p), line=exc.lineno) from exc
    if not isinstance(raw, dict):
        raise InputError("expected a JSON object", path=str(p))
    return raw


def _parse_line(text: str, path: str, lineno: int) -> dict[str, Any] | None:
    """The JSON object on one line, or None for a blank line; errors name path:line."""
    if not text.strip():
        return None
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(_json_error_message(exc), path=path, line=lineno) from exc
    except (ValueError, RecursionError) as exc:  # huge integers, absurd nesting
        raise InputError(f"not valid JSON: {exc}", path=path, line=lineno) from exc
    if not isinstance(obj, dict):
        raise InputError(
            f"expected a JSON object, got {type(obj).__name__}", path=path, line=lineno
        )
    return obj


def iter_json_lines(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for each non-blank line; errors name file:line.

    The file is read as bytes and each line decoded on its own, so a byte that is not
    UTF-8 is reported on its exact line. A UTF-8 byte-order mark at the very start of
    the file (Windows editors write one) is skipped. Line breaks are LF, CRLF and a
    lone CR, as in Python's text mode."""
    p = Path(path)
    name = str(p)
    try:
        fh = p.open("rb")
    except OSError as exc:
        raise InputError(f"cannot open file: {exc.strerror}", path=name) from exc
    with fh:
        lineno = 0
        for raw in fh:
            if lineno == 0 and raw.startswith(_BOM):
                raw = raw[len(_BOM) :]
            lineno += 1
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                # a lone CR before the bad byte is a line break too
                bad_line = lineno + raw.count(b"\r", 0, exc.start)
                raise InputError(
                    f"not valid UTF-8 ({exc.reason})", path=name, line=bad_line
                ) from exc
            cr = text.find("\r")
            if cr == -1 or text[cr + 1 :] in ("\n", ""):  # no CR, or only at the end
                obj = _parse_line(text, name, lineno)
                if obj is not None:
                    yield lineno, obj
                continue
            # rare: lone CRs split this chunk into several lines (old Mac line endings)
            parts = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
            if parts[-1] == "":
                parts.pop()
            for i, part in enumerate(parts):
                obj = _parse_line(part, name, lineno + i)
                if obj is not None:
                    yield lineno + i, obj
            lineno += len(parts) - 1


def validation_to_input_error(
    exc: ValidationError, *, path: str | None, line: int | None
) -> InputError:
    """Turn the first pydantic error into an InputError naming the field."""
    err = exc.errors()[0]
    field = ".".join(str(x) for x in err["loc"]) or None
    got = err.get("input")
    # our own validators raise ValueError; pydantic prefixes their text with this
    detail = err["msg"].removeprefix("Value error, ")
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


@contextmanager
def _atomic_file(path: Path) -> Iterator[BinaryIO]:
    """A binary file that replaces ``path`` (via temp file + fsync + rename) on success."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        # mkstemp creates 0600; give the file the mode a plain open() would (0666 & ~umask)
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)
        with os.fdopen(fd, "wb") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def stream_write_lines(path: str | Path, lines: Iterable[str]) -> None:
    """Write ``lines`` (one JSON document each, no newline) to ``path`` as they come, via
    a temp file + rename: readers see the old file or the whole new one."""
    with _atomic_file(Path(path)) as fh:
        for line in lines:
            fh.write(line.encode("utf-8"))
            fh.write(b"\n")


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` via a temp file + rename, so readers never see half a file."""
    with _atomic_file(Path(path)) as fh:
        fh.write(text.encode("utf-8"))


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


def record_json(record: BaseModel | dict[str, Any]) -> str:
    """The one JSON line :func:`append_jsonl` writes for ``record`` (no newline)."""
    return _dump(record)


def append_lines(path: str | Path, lines: Sequence[str]) -> None:
    """Append complete JSON lines (from :func:`record_json`) in one write, then fsync:
    a batch lands whole, or a crash leaves a prefix whose torn last line
    :func:`scan_done_ids` drops."""
    if not lines:
        return
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    with p.open("a", encoding="utf-8") as fh:
        fh.write("".join(line + "\n" for line in lines))
        fh.flush()
        os.fsync(fh.fileno())


@contextmanager
def file_lock(path: str | Path) -> Iterator[None]:
    """An exclusive lock across processes (``flock`` on ``path``, created if missing);
    without ``fcntl`` (not POSIX) only the caller's own locking applies."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    with p.open("a") as fh:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX
            yield
            return
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


@dataclass(frozen=True, slots=True)
class DoneScan:
    """What :func:`scan_done_ids` found in a resumable JSONL output.

    ``ids``: the ids of the kept lines. ``dropped_lines``: 1-based numbers of the lines
    removed from the file. ``corrupt_lines``: those of them that were not the last
    non-blank line: a torn last line is the normal trace of a crash, anything before it
    means the file was damaged (or edited) and those results will be computed again.
    """

    ids: frozenset[str]
    dropped_lines: tuple[int, ...] = ()
    corrupt_lines: tuple[int, ...] = ()

    def note(self, path: str | Path) -> str | None:
        """A line for the user when damaged lines were dropped (``None`` otherwise)."""
        if not self.corrupt_lines:
            return None
        shown = ", ".join(str(n) for n in self.corrupt_lines[:10])
        return (
            f"note: dropped {len(self.corrupt_lines)} unreadable line(s) of {path} "
            f"(line {shown}); those records are computed again"
        )


def drop_records(path: str | Path, key: str, drop: Callable[[dict[str, Any]], bool]) -> set[str]:
    """Rewrite a resumable JSONL output without the records ``drop`` selects (so a
    resume redoes them); return their ``key`` values. Lines that are not JSON objects
    are kept for :func:`scan_done_ids` to judge. The file is rewritten atomically, and
    only when something was dropped."""
    p = Path(path)
    kept: list[bytes] = []
    dropped: set[str] = set()
    with p.open("rb") as fh:
        for raw in fh:
            try:
                obj = json.loads(raw)
            except (ValueError, RecursionError):
                obj = None
            if isinstance(obj, dict) and drop(obj):
                dropped.add(str(obj.get(key)))
            else:
                kept.append(raw if raw.endswith(b"\n") else raw + b"\n")
    if dropped:
        with _atomic_file(p) as out:
            out.writelines(kept)
    return dropped


def _done_id(raw: bytes, key: str) -> str | None:
    """The string ``key`` of the JSON object on this line, or None if it is unreadable."""
    try:
        obj = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError):  # not UTF-8, not JSON, huge integer, deep nesting
        return None
    if isinstance(obj, dict):
        value = obj.get(key)
        if isinstance(value, str):
            return value
    return None


def scan_done_ids(path: str | Path, key: str) -> DoneScan:
    """Prepare a resumable JSONL output for appending; report the ids already in it.

    A line is kept when it is a UTF-8 JSON object whose ``key`` is a string; its id
    counts as done. Blank lines are kept. Every other line is unreadable and dropped
    (its result will be computed again), wherever it is: valid lines after it are kept.
    A last line without its newline is dropped unless it is complete (blank, or a valid
    line: then the newline is appended). A UTF-8 byte-order mark at the start of the
    file is ignored.

    The file is rewritten (atomically: temp file + rename) only when a line is dropped;
    otherwise it is left untouched. A missing file gives an empty scan.
    """
    p = Path(path)
    if not p.exists():
        return DoneScan(frozenset())
    done: set[str] = set()
    dropped: list[int] = []
    last_nonblank = 0
    unterminated = False
    with p.open("rb") as fh:
        lineno = 0
        for raw in fh:
            lineno += 1
            line = raw[len(_BOM) :] if lineno == 1 and raw.startswith(_BOM) else raw
            unterminated = not line.endswith(b"\n")
            if not line.strip():
                continue
            last_nonblank = lineno
            line_id = _done_id(line, key)
            if line_id is None:
                dropped.append(lineno)
            else:
                done.add(line_id)
    if dropped:
        skip = set(dropped)
        with p.open("rb") as src, _atomic_file(p) as out:
            for n, raw in enumerate(src, 1):
                if n not in skip:
                    out.write(raw if raw.endswith(b"\n") else raw + b"\n")
    elif unterminated:
        # the complete last line lacks its newline: add it so appends start a new line
        with p.open("ab") as fh:
            fh.write(b"\n")
            fh.flush()
            os.fsync(fh.fileno())
    corrupt = tuple(n for n in dropped if n != last_nonblank)
    return DoneScan(frozenset(done), tuple(dropped), corrupt)


def read_done_ids(path: str | Path, key: str) -> set[str]:
    """Ids already written to a resumable JSONL output, dropping unreadable lines.

    Same as :func:`scan_done_ids` (which see for what is kept, dropped and rewritten)
    but returns only the ids; call that to learn how many lines were dropped."""
    return set(scan_done_ids(path, key).ids)
