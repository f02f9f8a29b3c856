"""Bring your own traces: importers from RAGAS / DeepEval datasets, RAGChecker input
and output files, OpenInference (Phoenix) spans, Langfuse exports and arbitrary tables,
and pandas frames.

``import_traces("ragas", "eval.jsonl", "runs/mine", documents="docs/")`` writes
``runs/mine/traces.jsonl``; see ``docs/formats.md`` ("Importing traces") for the
mapping of each format. Live capture: :mod:`ragtriage.integrations.langchain` and
:mod:`ragtriage.integrations.llamaindex` (imported on their own: they need the
``langchain`` / ``llamaindex`` extras).
"""

from __future__ import annotations

from ragtriage.integrations._build import ImportStats, build_traces
from ragtriage.integrations._columns import DEEPEVAL, RAGAS, ColumnMap
from ragtriage.integrations._frame import from_frame, to_frame
from ragtriage.integrations._importer import (
    IMPORT_FORMATS,
    ImportResult,
    column_map,
    import_traces,
    load_documents,
    read_rows,
)
from ragtriage.integrations._locate import FUZZY_THRESHOLD, Located, Locator, partition
from ragtriage.integrations._ragchecker import RAGCHECKER
from ragtriage.integrations._rows import ImportedRow, RetrievedText, Where

__all__ = [
    "DEEPEVAL",
    "FUZZY_THRESHOLD",
    "IMPORT_FORMATS",
    "RAGAS",
    "RAGCHECKER",
    "ColumnMap",
    "ImportResult",
    "ImportStats",
    "ImportedRow",
    "Located",
    "Locator",
    "RetrievedText",
    "Where",
    "build_traces",
    "column_map",
    "from_frame",
    "import_traces",
    "load_documents",
    "partition",
    "read_rows",
    "to_frame",
]
