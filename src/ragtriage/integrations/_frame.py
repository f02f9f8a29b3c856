"""pandas frames of records: :func:`to_frame` (one row per record, one column per
field) and :func:`from_frame` (back to records, checked like a JSONL file).

pandas is optional (``pip install 'ragtriage[pandas]'``): it is imported when a frame
is asked for, and its absence is a clear error.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import ValidationError

from ragtriage.errors import InputError, ModelUnavailableError
from ragtriage.jsonl import validation_to_input_error
from ragtriage.records import Diagnosis, Record

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["from_frame", "to_frame"]

R = TypeVar("R", bound=Record)


def _pandas() -> Any:
    try:
        import pandas
    except ImportError as exc:
        raise ModelUnavailableError("frames need pandas: pip install 'ragtriage[pandas]'") from exc
    return pandas


def to_frame(records: Iterable[Record]) -> pd.DataFrame:
    """A DataFrame with one row per record (diagnoses, traces ...) and one column per
    field, by its on-disk name (``schema`` included); lists and objects stay Python
    lists and dicts, undecided values stay ``None``."""
    pandas = _pandas()
    rows = [r.to_dict() for r in records]
    frame = pandas.DataFrame.from_records(rows) if rows else pandas.DataFrame()
    return frame.astype(object).where(frame.notna(), None) if rows else frame


def _clean(value: Any) -> Any:
    """pandas/numpy values back to JSON ones: NaN -> None, arrays -> lists, numpy
    scalars -> Python scalars."""
    if value is None:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    if hasattr(value, "tolist") and not isinstance(value, str | bytes):
        return _clean(value.tolist())
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    return value


def from_frame(frame: pd.DataFrame, record: type[R] = Diagnosis) -> list[R]:  # type: ignore[assignment]
    """Records (diagnoses by default) from a frame made by :func:`to_frame` or read
    back from CSV/Parquet; a bad row is an :class:`InputError` naming the row (1-based)
    and the field. Columns the record does not know are errors, as in JSONL files."""
    _pandas()
    out: list[R] = []
    for i, raw in enumerate(frame.to_dict(orient="records"), 1):
        obj = {str(k): _clean(v) for k, v in raw.items()}
        # a missing value (None/NaN: CSV and Parquet round trips make them) of a field
        # with a default other than None takes that default
        defaults = _has_default(record)
        obj = {k: v for k, v in obj.items() if v is not None or k not in defaults}
        try:
            out.append(record.model_validate(obj))
        except ValidationError as exc:
            raise validation_to_input_error(exc, path="frame", line=i) from exc
    if frame.columns.duplicated().any():
        raise InputError("duplicate column names", path="frame")
    return out


def _has_default(record: type[Record]) -> frozenset[str]:
    """Fields (by their on-disk names) with a default other than ``None``."""
    names: set[str] = set()
    for name, info in record.model_fields.items():
        if info.is_required() or info.default is None:
            continue
        names.add(info.alias or name)
    return frozenset(names)
