"""Read table-like sources row by row, each row with its location for error messages:
JSONL, a JSON array (or an object holding one), CSV/TSV, Parquet (pyarrow) and a
Hugging Face ``datasets`` dataset saved with ``save_to_disk``."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ragtriage.data._fields import iter_objects
from ragtriage.data._sniff import RECORD_LIST_KEYS
from ragtriage.errors import InputError, ModelUnavailableError
from ragtriage.integrations._rows import Where

__all__ = ["read_table", "records_in_document"]

#: keys under which a JSON export keeps its list of rows, first present list wins
_LIST_KEYS = RECORD_LIST_KEYS
_JSON_SUFFIXES = (".json", ".jsonl", ".ndjson")
_SHOWN_KEYS = 8


def _keys(names: Iterable[str]) -> str:
    names = list(names)
    more = len(names) - _SHOWN_KEYS
    return ", ".join(names[:_SHOWN_KEYS]) + (f" (+{more} more)" if more > 0 else "")


def _rows(n: int) -> str:
    return f"{n} row{'s' if n != 1 else ''}"


def read_table(
    path: str | Path, *, records_key: str | None = None
) -> Iterator[tuple[Where, dict[str, Any]]]:
    """Rows of a table-like file (or HF dataset directory) with where each came from
    and how the file was read (:attr:`Where.how`). ``records_key`` names the list of
    records inside a JSON document (a dotted path: ``data.items``); without it a JSON
    object's records are found under a usual key or, in an object without text or
    number values of its own, its only list of objects. A file
    without a row is an error saying how it was read."""
    p = Path(path)
    if not p.exists():
        raise InputError("no such file or directory", path=str(p))
    suffix = p.suffix.lower()
    if records_key is not None and (p.is_dir() or suffix not in _JSON_SUFFIXES):
        raise InputError(
            f"--records-key names a list inside a JSON document; this "
            f"{'directory' if p.is_dir() else (suffix or 'extension-less') + ' file'} "
            "is not read as one",
            path=str(p),
            field="--records-key",
        )
    if p.is_dir():
        yield from _hf_dataset(p)
    elif suffix in (".csv", ".tsv", ".tab"):
        yield from _csv(p, "\t" if suffix != ".csv" else ",")
    elif suffix in (".parquet", ".pq"):
        yield from _parquet(p)
    elif suffix == ".json" or records_key is not None:
        yield from _json(p, records_key)
    else:
        yield from _lines(p)


def _no_rows(p: Path, how: str) -> InputError:
    return InputError(f"no rows found — {how}", path=str(p))


_LINES_HOW = "read as JSON Lines, one row per line"


def _lines(p: Path) -> Iterator[tuple[Where, dict[str, Any]]]:
    """JSON Lines; a file that is one JSON document spread over several lines (a
    pretty-printed export saved as .jsonl) is read as that document."""
    it = iter_objects(p)
    try:
        first = next(it, None)
    except InputError as exc:
        doc = _whole_document(p) if exc.message.startswith("not valid JSON") else None
        if doc is None:
            raise Where(str(p), exc.line, _LINES_HOW).wrap(exc) from exc
        yield from _document_rows(p, doc, None)
        return
    if first is None:
        raise _no_rows(p, f"{_LINES_HOW}: the file has no non-blank line")
    yield Where(str(p), first[0], _LINES_HOW), first[1]
    try:
        for lineno, obj in it:
            yield Where(str(p), lineno, _LINES_HOW), obj
    except InputError as exc:
        raise Where(str(p), exc.line, _LINES_HOW).wrap(exc) from exc


def _whole_document(p: Path) -> Any:
    """The file parsed as one JSON document spread over several lines, or None."""
    try:
        text = p.read_text(encoding="utf-8-sig")
        if sum(1 for line in text.splitlines() if line.strip()) < 2:
            return None
        doc = json.loads(text)
    except (UnicodeDecodeError, ValueError, RecursionError, OSError):
        return None
    return doc if isinstance(doc, dict | list) else None


def _json(p: Path, records_key: str | None) -> Iterator[tuple[Where, dict[str, Any]]]:
    """A JSON document: an array of objects, an object holding one (under
    ``records_key``, a usual key or a wrapper's only list of objects), or JSON Lines saved as
    .json (then each line is its own row)."""
    try:
        text = p.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"not valid UTF-8 ({exc.reason})", path=str(p)) from exc
    try:
        doc = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as whole:
        if records_key is not None:
            raise _document_error(p, whole, "--records-key needs one JSON document") from whole
        try:
            first = next(iter_objects(p), None)
        except InputError as exc:  # neither one document nor JSON Lines
            raise _document_error(p, whole, "nor is it JSON Lines") from exc
        if first is not None:  # JSON Lines under a .json name
            yield from _lines(p)
        return
    yield from _document_rows(p, doc, records_key)


def _document_error(p: Path, exc: ValueError | RecursionError, also: str) -> InputError:
    if isinstance(exc, json.JSONDecodeError):
        msg = exc.msg.removesuffix(" at")
        return InputError(
            f"not valid JSON: {msg} at column {exc.colno} (read as one JSON document; {also})",
            path=str(p),
            line=exc.lineno,
        )
    return InputError(f"not valid JSON: {exc} (read as one JSON document; {also})", path=str(p))


def _lookup(doc: Any, dotted: str) -> tuple[Any, str | None]:
    """The value at a dotted path, or ``(None, missing part)``."""
    value = doc
    walked: list[str] = []
    for part in dotted.split("."):
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return None, ".".join([*walked, part])
        walked.append(part)
    return value, None


def _object_lists(obj: dict[str, Any], prefix: str = "", depth: int = 0) -> list[str]:
    """Dotted paths of the non-empty lists of objects in ``obj`` (3 levels deep)."""
    out: list[str] = []
    for k, v in obj.items():
        name = f"{prefix}{k}"
        if isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            out.append(name)
        elif isinstance(v, dict) and depth < 2:
            out.extend(_object_lists(v, f"{name}.", depth + 1))
    return out


def records_in_document(
    doc: Any, records_key: str | None = None, *, path: str = ""
) -> tuple[list[Any], str]:
    """The records of a JSON document and how they were found: ``records_key``'s list;
    a top-level array; an object's list under a usual key (:data:`_LIST_KEYS`) or, when
    the object has no text or number of its own, its only non-empty list of objects;
    else the object itself as one row (the description then names its keys and where
    lists of objects sit)."""
    if records_key is not None:
        if not isinstance(doc, dict):
            raise InputError(
                f"--records-key {records_key!r}: the document is a JSON "
                f"{'array' if isinstance(doc, list) else type(doc).__name__}, not an object; "
                "leave --records-key out to read an array's items as the rows",
                path=path,
                field="--records-key",
            )
        value, missing = _lookup(doc, records_key)
        if missing is not None:
            raise InputError(
                f"--records-key {records_key!r}: no key {missing!r} (top-level keys: "
                f"{_keys(doc)}){_where_lists(doc)}",
                path=path,
                field="--records-key",
            )
        if not isinstance(value, list):
            raise InputError(
                f"--records-key {records_key!r} holds {_kind(value)}, not a list of records"
                f"{_where_lists(doc)}",
                path=path,
                field="--records-key",
            )
        others = [k for k in doc if k != records_key.split(".")[0]]
        tail = f"; other top-level keys: {_keys(others)}" if others else ""
        return value, f"read as {_rows(len(value))} from the list under {records_key!r}{tail}"
    if isinstance(doc, list):
        return doc, f"read as {_rows(len(doc))} from a JSON array"
    if not isinstance(doc, dict):
        raise InputError(f"expected a JSON array or object, got {_kind(doc)}", path=path)
    key = next((k for k in _LIST_KEYS if isinstance(doc.get(k), list)), None)
    if key is None and not any(_is_scalar(v) for v in doc.values()):
        # a wrapper (no text or number of its own, as RAGChecker's output beside its
        # 'metrics'): its only list of objects; an object with values of its own (a
        # Langfuse trace and its 'observations') is one row
        lists = [k for k in _object_lists(doc) if "." not in k]
        key = lists[0] if len(lists) == 1 else None
    if key is not None:
        others = [k for k in doc if k != key]
        tail = f"; other top-level keys: {_keys(others)}" if others else ""
        return doc[key], (
            f"read as {_rows(len(doc[key]))} from the list under {key!r} of a JSON object"
            f"{tail}; --records-key KEY names another list"
        )
    return [doc], f"read as 1 row from a JSON object; top-level keys: {_keys(doc)}" + (
        _where_lists(doc, " —")
    )


def _where_lists(doc: dict[str, Any], lead: str = ";") -> str:
    lists = _object_lists(doc)
    if not lists:
        return ""
    if len(lists) == 1:
        return f"{lead} the records may sit under {lists[0]!r}: use --records-key {lists[0]}"
    return (
        f"{lead} the records may sit under one of {_keys(repr(k) for k in lists)}: "
        "use --records-key KEY"
    )


def _is_scalar(value: Any) -> bool:
    return isinstance(value, str | int | float | bool)


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "null"
    return f"a {type(value).__name__}"


def _document_rows(
    p: Path, doc: Any, records_key: str | None
) -> Iterator[tuple[Where, dict[str, Any]]]:
    items, how = records_in_document(doc, records_key, path=str(p))
    if not items:
        raise _no_rows(p, how)
    for i, obj in enumerate(items, 1):
        # a JSON document has no useful line numbers: rows are numbered from 1
        where = Where(f"{p}[row {i}]", None, how)
        if not isinstance(obj, dict):
            raise where.error(None, f"expected an object, got {_kind(obj)}")
        yield where, obj


def _csv(p: Path, delimiter: str) -> Iterator[tuple[Where, dict[str, Any]]]:
    try:
        fh = p.open(encoding="utf-8-sig", newline="")
    except OSError as exc:
        raise InputError(f"cannot open file: {exc.strerror}", path=str(p)) from exc
    with fh:
        reader = csv.DictReader(fh, delimiter=delimiter)
        kind = "CSV" if delimiter == "," else "TSV"
        how = f"read as {kind}"
        try:
            header = reader.fieldnames  # reads the header line
            how = f"read as {kind} with the header columns {_keys(header or [])}"
            start = reader.line_num + 1
            count = 0
            for row in reader:
                count += 1
                # line_num is the last physical line read: a row spanning several lines
                # (quoted newlines) is named by its first
                where = Where(str(p), start, how)
                start = reader.line_num + 1
                if None in row:
                    raise where.error(None, "more cells than header columns")
                yield where, {k: v for k, v in row.items() if k is not None}
        except UnicodeDecodeError as exc:
            raise InputError(f"not valid UTF-8 ({exc.reason}) — {how}", path=str(p)) from exc
        except csv.Error as exc:
            raise InputError(f"bad CSV: {exc} — {how}", path=str(p), line=reader.line_num) from exc
        if not count:
            raise _no_rows(p, how if header else f"read as {kind}: the file is empty")


def _parquet(p: Path) -> Iterator[tuple[Where, dict[str, Any]]]:
    try:
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise ModelUnavailableError(
            "reading Parquet needs pyarrow: pip install 'ragtriage[pandas]'"
        ) from exc
    try:
        table = pq.read_table(p)
    except Exception as exc:  # pyarrow raises its own error types for bad files
        raise InputError(f"not a readable Parquet file: {exc}", path=str(p)) from exc
    how = f"read as a Parquet table with the columns {_keys(table.column_names)}"
    if not table.num_rows:
        raise _no_rows(p, how)
    for i, row in enumerate(table.to_pylist(), 1):
        yield Where(f"{p}[row {i}]", None, how), row


def _hf_dataset(p: Path) -> Iterator[tuple[Where, dict[str, Any]]]:
    """A dataset saved by ``datasets.Dataset.save_to_disk`` (needs the ``datasets``
    package; a ``DatasetDict`` directory yields every split in turn)."""
    if not (p / "dataset_info.json").is_file() and not (p / "dataset_dict.json").is_file():
        raise InputError(
            "a directory must be a Hugging Face dataset saved with save_to_disk "
            "(dataset_info.json or dataset_dict.json inside)",
            path=str(p),
        )
    try:
        import datasets
    except ImportError as exc:
        raise ModelUnavailableError(
            f"{p} is a Hugging Face dataset directory; reading it needs the 'datasets' "
            "package: pip install 'ragtriage[hf]' (or export it to JSONL/Parquet first)"
        ) from exc
    loaded = datasets.load_from_disk(str(p))
    splits = loaded.items() if isinstance(loaded, datasets.DatasetDict) else [("", loaded)]
    for split, ds in splits:
        name = f"{p}[{split}]" if split else str(p)
        how = f"read as a Hugging Face dataset{f' (split {split})' if split else ''}"
        for i, row in enumerate(ds, 1):
            yield Where(f"{name}[row {i}]", None, how), dict(row)
