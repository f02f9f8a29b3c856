"""RAGChecker's checking files, its input and its output alike.

The input file is ``{"input_data": [item, ...]}``, each item ``query_id``, ``query``,
``gt_answer``, ``response`` and ``retrieved_context`` (a list of ``{doc_id, text}``, the
passages given to the generator, in order). The output file RAGChecker writes after
checking holds the same items under ``results`` (and the run's ``metrics`` beside them),
each with what the checker found: ``response_claims`` and ``gt_answer_claims``
(subject-relation-object triples), ``answer2response``, ``response2answer``,
``retrieved2response`` and ``retrieved2answer`` (entailment labels) and the item's
``metrics``. Those, and any other field of an item, are kept in the trace's
``metadata.ragchecker``; ``metrics`` must be an object of numbers (or nulls).

RAGChecker records no retriever list before the passages and no scores: reranking is
not observable and the hits have no score.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from ragtriage.integrations._columns import ColumnMap, row_from_record
from ragtriage.integrations._rows import ImportedRow, Where
from ragtriage.integrations._tabular import read_table

__all__ = ["RAGCHECKER", "read_ragchecker"]

RAGCHECKER = ColumnMap(
    question=("query",),
    contexts=("retrieved_context",),
    answer=("response",),
    reference=("gt_answer",),
    row_id=("query_id", "id"),
)

#: fields the row is built from; every other field of an item is kept as it is
_MAPPED = frozenset({"query", "retrieved_context", "response", "gt_answer", "query_id"})


def _check_metrics(value: Any, where: Where) -> None:
    if not isinstance(value, dict):
        raise where.error("metrics", f"expected an object of metric values, got {value!r:.60}")
    for name, v in value.items():
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
            raise where.error(f"metrics.{name}", f"expected a finite number, got {v!r:.60}")


def read_ragchecker(src: str | Path, *, records_key: str | None = None) -> Iterator[ImportedRow]:
    """One row per item of a RAGChecker input or output file."""
    for i, (where, obj) in enumerate(read_table(src, records_key=records_key), 1):
        row = row_from_record(obj, RAGCHECKER, where, i)
        kept = {k: v for k, v in obj.items() if k not in _MAPPED and v is not None}
        if "metrics" in kept:
            _check_metrics(kept["metrics"], where)
        if kept:
            row = replace(row, metadata={**row.metadata, "ragchecker": kept})
        yield row
