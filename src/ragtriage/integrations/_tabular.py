"""Read table-like sources row by row, each row with its location for error messages:
JSONL, a JSON array (or an object holding one), CSV/TSV, Parquet (pyarrow) and a
Hugging Face ``datasets`` dataset saved with ``save_to_disk``."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ragtriage.data._fields import iter_objects
from ragtriage.errors import InputError, ModelUnavailableError
from ragtriage.integrations._rows import Where

__all__ = ["read_table"]

#: keys under which a JSON export keeps its list of rows
_LIST_KEYS = ("test_cases", "goldens", "data", "rows", "examples", "spans", "traces", "items")


def read_table(path: str | Path) -> Iterator[tuple[Where, dict[str, Any]]]:
    """Rows of a table-like file (or HF dataset directory) with where each came from."""
    p = Path(path)
    if not p.exists():
        raise InputError("no such file or directory", path=str(p))
    if p.is_dir():
        yield from _hf_dataset(p)
        return
    suffix = p.suffix.lower()
    if suffix in (".csv", ".tsv", ".tab"):
        yield from _csv(p, "\t" if suffix != ".csv" else ",")
    elif suffix in (".parquet", ".pq"):
        yield from _parquet(p)
    elif suffix == ".json":
        yield from _json(p)
    else:
        for lineno, obj in iter_objects(p):
            yield Where(str(p), lineno), obj


def _json(p: Path) -> Iterator[tuple[Where, dict[str, Any]]]:
    """A JSON document: an array of objects, an object holding one under a usual key,
    or JSON Lines saved as .json (then each line is its own row)."""
    try:
        text = p.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"not valid UTF-8 ({exc.reason})", path=str(p)) from exc
    try:
        doc = json.loads(text)
    except json.JSONDecodeError:
        for lineno, obj in iter_objects(p):  # JSON Lines under a .json name
            yield Where(str(p), lineno), obj
        return
    items: Any = doc
    if isinstance(doc, dict):
        items = next((doc[k] for k in _LIST_KEYS if isinstance(doc.get(k), list)), [doc])
    if not isinstance(items, list):
        raise InputError("expected a JSON array of objects", path=str(p))
    for i, obj in enumerate(items, 1):
        # a JSON array has no useful line numbers: rows are numbered from 1
        where = Where(f"{p}[row {i}]", None)
        if not isinstance(obj, dict):
            raise InputError(f"expected an object, got {type(obj).__name__}", path=where.path)
        yield where, obj


def _csv(p: Path, delimiter: str) -> Iterator[tuple[Where, dict[str, Any]]]:
    try:
        fh = p.open(encoding="utf-8-sig", newline="")
    except OSError as exc:
        raise InputError(f"cannot open file: {exc.strerror}", path=str(p)) from exc
    with fh:
        reader = csv.DictReader(fh, delimiter=delimiter)
        try:
            _ = reader.fieldnames  # reads the header line
            start = reader.line_num + 1
            for row in reader:
                # line_num is the last physical line read: a row spanning several lines
                # (quoted newlines) is named by its first
                where = Where(str(p), start)
                start = reader.line_num + 1
                if None in row:
                    raise where.error(None, "more cells than header columns")
                yield where, {k: v for k, v in row.items() if k is not None}
        except UnicodeDecodeError as exc:
            raise InputError(f"not valid UTF-8 ({exc.reason})", path=str(p)) from exc
        except csv.Error as exc:
            raise InputError(f"bad CSV: {exc}", path=str(p), line=reader.line_num) from exc


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
    for i, row in enumerate(table.to_pylist(), 1):
        yield Where(f"{p}[row {i}]", None), row


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
        for i, row in enumerate(ds, 1):
            yield Where(f"{name}[row {i}]", None), dict(row)
