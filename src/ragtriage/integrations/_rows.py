"""What every importer produces: one :class:`ImportedRow` per question, source-agnostic.

An importer (RAGAS, DeepEval, OpenInference, Langfuse, arbitrary columns) only maps its
source's fields onto these rows; :mod:`ragtriage.integrations._build` turns rows into
:class:`~ragtriage.records.Trace` records, with or without the documents.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ragtriage.errors import InputError

__all__ = ["ImportedRow", "RetrievedText", "Where", "as_text", "as_text_list", "retrieved_list"]


@dataclass(frozen=True, slots=True)
class Where:
    """Where a row came from: file, 1-based line (or row number) and, for errors, field;
    ``how`` says how the file was read ("read as 2 rows from the list under
    'input_data' of a JSON object"), appended to every error so a file read the wrong
    way shows it."""

    path: str
    line: int | None = None
    how: str | None = None

    def error(self, field_name: str | None, message: str) -> InputError:
        return InputError(self.explain(message), path=self.path, line=self.line, field=field_name)

    def explain(self, message: str) -> str:
        """``message`` with how the file was read."""
        return f"{message} — {self.how}" if self.how else message

    def wrap(self, exc: InputError) -> InputError:
        """``exc`` (raised for this row's values) with how the file was read."""
        return InputError(self.explain(exc.message), path=exc.path, line=exc.line, field=exc.field)


@dataclass(frozen=True, slots=True)
class RetrievedText:
    """One retrieved passage as the source recorded it: its text, and the id and score
    the source gave it, when it gave them."""

    text: str
    source_id: str | None = None
    score: float | None = None


@dataclass(frozen=True, slots=True)
class ImportedRow:
    """One question as a source recorded it.

    ``contexts`` are the passages given to the generator, in prompt order.
    ``retrieved`` (the retriever's list before reranking) and ``reranked`` (the
    reranker's output) are ``None`` when the source does not record them.
    ``reference`` is the gold answer; ``reference_contexts`` gold evidence passages;
    ``reference_doc_ids`` the gold documents, when the source names them.
    """

    where: Where
    row_id: str
    question: str
    answer: str
    reference: str
    contexts: tuple[RetrievedText, ...]
    retrieved: tuple[RetrievedText, ...] | None = None
    reranked: tuple[RetrievedText, ...] | None = None
    reference_contexts: tuple[str, ...] = ()
    reference_doc_ids: tuple[str, ...] = ()
    #: stage name -> {latency_ms, prompt_tokens, completion_tokens, calls}
    stages: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    metadata: Mapping[str, Any] = field(default_factory=dict)


def as_text(value: Any, where: Where, field_name: str, *, required: bool = True) -> str:
    """A string field (numbers are accepted and written as text)."""
    if value is None or (isinstance(value, float) and value != value):  # NaN from pandas
        if required:
            raise where.error(field_name, "missing value")
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        raise where.error(field_name, f"expected text, got {value!r}")
    if isinstance(value, int | float):
        return str(value)
    raise where.error(field_name, f"expected text, got {type(value).__name__}")


def _parse_list_text(text: str, where: Where, field_name: str, sep: str | None = None) -> list[Any]:
    """A list written into one CSV cell: JSON, or a Python literal (what
    ``DataFrame.to_csv`` writes for a list column); a plain string is one item, or its
    ``sep``-separated parts when a separator is given."""
    s = text.strip()
    if not s:
        return []
    if sep and not s.startswith("["):
        return [part for part in text.split(sep) if part.strip()]
    if s.startswith("["):
        try:
            got = json.loads(s)
        except ValueError:
            try:
                got = ast.literal_eval(s)  # data only: literals, never code
            except (ValueError, SyntaxError, MemoryError, RecursionError) as exc:
                raise where.error(
                    field_name, "looks like a list but is neither JSON nor a list literal"
                ) from exc
        if not isinstance(got, list):
            raise where.error(field_name, f"expected a list, got {type(got).__name__}")
        return got
    return [text]


def as_text_list(value: Any, where: Where, field_name: str, sep: str | None = None) -> list[str]:
    """A list of strings: a JSON/Parquet list, a list written as text, or one string."""
    if value is None or (isinstance(value, float) and value != value):
        return []
    if isinstance(value, str):
        value = _parse_list_text(value, where, field_name, sep)
    elif hasattr(value, "tolist"):  # numpy arrays from Parquet / pandas
        value = value.tolist()
    if not isinstance(value, list | tuple):
        raise where.error(field_name, f"expected a list of texts, got {type(value).__name__}")
    out: list[str] = []
    for i, item in enumerate(value):
        if isinstance(item, Mapping):
            text = _doc_text(item)
            if text is None:
                raise where.error(f"{field_name}.{i}", "a passage object needs a text field")
            out.append(text)
        else:
            out.append(as_text(item, where, f"{field_name}.{i}"))
    return out


_TEXT_KEYS = ("page_content", "content", "contents", "text", "document.content", "document")
_ID_KEYS = ("id", "doc_id", "document.id", "chunk_id", "node_id")
_SCORE_KEYS = ("score", "document.score", "relevance_score")


def _doc_text(item: Mapping[str, Any]) -> str | None:
    for k in _TEXT_KEYS:
        v = item.get(k)
        if isinstance(v, str):
            return v
        if isinstance(v, Mapping):  # {"document": {"content": ...}}
            inner = _doc_text(v)
            if inner is not None:
                return inner
    node = item.get("node")
    if isinstance(node, Mapping):  # LlamaIndex NodeWithScore
        return _doc_text(node)
    return None


def _first(item: Mapping[str, Any], keys: tuple[str, ...]) -> Any:
    for k in keys:
        if item.get(k) is not None:
            return item[k]
    for nest in ("document", "node", "metadata"):
        inner = item.get(nest)
        if isinstance(inner, Mapping):
            for k in keys:
                if inner.get(k) is not None:
                    return inner[k]
    return None


def retrieved_list(
    value: Any, where: Where, field_name: str, sep: str | None = None
) -> tuple[RetrievedText, ...]:
    """Passages with their ids and scores when the source gives objects
    (``{"page_content", "metadata"}``, ``{"content", "id", "score"}``, LlamaIndex
    ``{"node": {...}, "score"}``), or plain strings."""
    if isinstance(value, str):
        value = _parse_list_text(value, where, field_name, sep)
    elif hasattr(value, "tolist"):
        value = value.tolist()
    if value is None:
        return ()
    if isinstance(value, Mapping):
        for key in ("documents", "nodes", "source_nodes", "contexts"):
            if isinstance(value.get(key), list):
                return retrieved_list(value[key], where, f"{field_name}.{key}")
        raise where.error(field_name, "expected a list of passages")
    if not isinstance(value, list | tuple):
        raise where.error(field_name, f"expected a list of passages, got {type(value).__name__}")
    out: list[RetrievedText] = []
    for i, item in enumerate(value):
        loc = f"{field_name}.{i}"
        if isinstance(item, str):
            out.append(RetrievedText(item))
            continue
        if not isinstance(item, Mapping):
            raise where.error(loc, f"expected a passage, got {type(item).__name__}")
        text = _doc_text(item)
        if text is None:
            raise where.error(loc, "a passage needs its text (page_content / content / text)")
        raw_id = _first(item, _ID_KEYS)
        raw_score = _first(item, _SCORE_KEYS)
        score: float | None = None
        if raw_score is not None:
            try:
                score = float(raw_score)
            except (TypeError, ValueError) as exc:
                raise where.error(f"{loc}.score", f"not a number: {raw_score!r}") from exc
            if score != score or score in (float("inf"), float("-inf")):
                raise where.error(f"{loc}.score", "score must be a finite number")
        out.append(RetrievedText(text, None if raw_id is None else str(raw_id), score))
    return tuple(out)
