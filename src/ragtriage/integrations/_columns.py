"""Column-mapped sources: RAGAS and DeepEval datasets, and arbitrary tables.

A :class:`ColumnMap` names, for each field of an :class:`ImportedRow`, the columns that
may hold it (the first present one wins). RAGAS and DeepEval are two presets:

* RAGAS 0.1: ``question``, ``contexts``, ``answer``, ``ground_truth`` (or the older
  ``ground_truths`` list); RAGAS >= 0.2 (``SingleTurnSample``): ``user_input``,
  ``retrieved_contexts``, ``response``, ``reference``, ``reference_contexts``.
* DeepEval ``LLMTestCase`` / ``Golden``: ``input``, ``actual_output``,
  ``expected_output``, ``retrieval_context`` and ``context`` (the ideal context: gold
  evidence), in snake_case or the camelCase of JSON exports.

A column name may be a dotted path into nested JSON (``meta_data.question``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from ragtriage.integrations._rows import (
    ImportedRow,
    RetrievedText,
    Where,
    as_text,
    as_text_list,
    retrieved_list,
)

__all__ = ["DEEPEVAL", "RAGAS", "ColumnMap", "row_from_record", "rows_from_records"]


@dataclass(frozen=True, slots=True)
class ColumnMap:
    """Candidate column names per field, first present wins. ``retrieved`` (the list
    before reranking) is optional: without it the contexts are all that was observed."""

    question: tuple[str, ...]
    contexts: tuple[str, ...]
    answer: tuple[str, ...]
    reference: tuple[str, ...]
    reference_contexts: tuple[str, ...] = ()
    reference_doc_ids: tuple[str, ...] = ("reference_doc_ids", "gold_doc_ids", "doc_ids")
    retrieved: tuple[str, ...] = ()
    row_id: tuple[str, ...] = ("id", "example_id", "question_id", "sample_id")
    #: separator of list items written as plain text in one CSV cell (None: a cell that
    #: is not a JSON list or list literal is one item)
    list_sep: str | None = None


RAGAS = ColumnMap(
    question=("user_input", "question"),
    contexts=("retrieved_contexts", "contexts"),
    answer=("response", "answer"),
    reference=("reference", "ground_truth", "ground_truths"),
    reference_contexts=("reference_contexts",),
)

DEEPEVAL = ColumnMap(
    question=("input",),
    contexts=("retrieval_context", "retrievalContext"),
    answer=("actual_output", "actualOutput"),
    reference=("expected_output", "expectedOutput"),
    reference_contexts=("context",),
    row_id=("id", "name", "example_id"),
)


def _lookup(obj: Any, name: str) -> Any:
    """``obj[name]``, or a nested field by a dotted path (``meta_data.question``)."""
    if not isinstance(obj, dict):
        return None
    if name in obj:
        return obj[name]
    head, dot, rest = name.partition(".")
    return _lookup(obj.get(head), rest) if dot else None


def _pick(obj: dict[str, Any], names: Iterable[str]) -> tuple[str | None, Any]:
    for n in names:
        value = _lookup(obj, n)
        if value is not None:
            return n, value
    return None, None


def _reference(obj: dict[str, Any], cmap: ColumnMap, where: Where) -> str:
    name, value = _pick(obj, cmap.reference)
    if name is None:
        raise where.error(
            cmap.reference[0],
            f"no gold answer: expected one of the columns {', '.join(cmap.reference)}",
        )
    if isinstance(value, list | tuple) or hasattr(value, "tolist"):
        # RAGAS 0.1 'ground_truths' is a list: its first item is the answer
        items = as_text_list(value, where, name)
        return items[0] if items else ""
    return as_text(value, where, name)


def _row(obj: dict[str, Any], cmap: ColumnMap, where: Where, index: int) -> ImportedRow:
    qname, question = _pick(obj, cmap.question)
    if qname is None:
        raise where.error(cmap.question[0], f"missing column (one of {', '.join(cmap.question)})")
    q = as_text(question, where, qname)
    if not q.strip():
        raise where.error(qname, "empty question")
    cname, contexts = _pick(obj, cmap.contexts)
    if cname is None:
        raise where.error(cmap.contexts[0], f"missing column (one of {', '.join(cmap.contexts)})")
    sep = cmap.list_sep
    ctx = retrieved_list(contexts, where, cname, sep)
    aname, answer = _pick(obj, cmap.answer)
    if aname is None:
        raise where.error(cmap.answer[0], f"missing column (one of {', '.join(cmap.answer)})")
    rname, rctx = _pick(obj, cmap.reference_contexts)
    dname, docs = _pick(obj, cmap.reference_doc_ids)
    retrieved: tuple[RetrievedText, ...] | None = None
    tname, raw_retrieved = _pick(obj, cmap.retrieved)
    if tname is not None:
        retrieved = retrieved_list(raw_retrieved, where, tname, sep)
    iname, raw_id = _pick(obj, cmap.row_id)
    row_id = as_text(raw_id, where, iname) if iname is not None else f"row-{index:05d}"
    return ImportedRow(
        where=where,
        row_id=row_id.strip() or f"row-{index:05d}",
        question=q,
        answer=as_text(answer, where, aname, required=False),
        reference=_reference(obj, cmap, where),
        contexts=ctx,
        retrieved=retrieved,
        reference_contexts=tuple(as_text_list(rctx, where, rname, sep)) if rname else (),
        reference_doc_ids=tuple(as_text_list(docs, where, dname, sep)) if dname else (),
    )


def row_from_record(obj: dict[str, Any], cmap: ColumnMap, where: Where, index: int) -> ImportedRow:
    """The row of one record (``index``: its 1-based place, for a default id)."""
    return _row(obj, cmap, where, index)


def rows_from_records(
    records: Iterable[tuple[Where, dict[str, Any]]], cmap: ColumnMap
) -> Iterator[ImportedRow]:
    """One row per record; a record without a question, contexts, answer or gold
    answer column is an error naming its file, line and field."""
    for i, (where, obj) in enumerate(records, 1):
        yield _row(obj, cmap, where, i)
