"""``import_traces``: read a source in one of :data:`IMPORT_FORMATS`, build traces and
write them atomically to ``RUN/traces.jsonl`` (with a ``RUN/manifest.json`` whose
``import`` section summarises what was found), so ``ragtriage validate`` and ``ragtriage diagnose RUN`` take them as is."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from ragtriage.data import load_dataset
from ragtriage.errors import InputError
from ragtriage.integrations._build import ImportStats, build_traces
from ragtriage.integrations._columns import DEEPEVAL, RAGAS, ColumnMap, rows_from_records
from ragtriage.integrations._langfuse import read_langfuse
from ragtriage.integrations._openinference import read_openinference
from ragtriage.integrations._ragchecker import read_ragchecker
from ragtriage.integrations._rows import ImportedRow
from ragtriage.integrations._spans import GoldTable, load_gold
from ragtriage.integrations._tabular import read_table
from ragtriage.jsonl import atomic_write_text, write_jsonl
from ragtriage.records import Document, Trace

__all__ = [
    "IMPORT_FORMATS",
    "ImportResult",
    "column_map",
    "import_traces",
    "load_documents",
    "read_rows",
]

IMPORT_FORMATS: tuple[str, ...] = (
    "ragas",
    "deepeval",
    "ragchecker",
    "openinference",
    "langfuse",
    "columns",
)


def column_map(
    question: str,
    contexts: str,
    answer: str,
    reference: str,
    *,
    reference_contexts: str | None = None,
    reference_doc_ids: str | None = None,
    retrieved: str | None = None,
    row_id: str | None = None,
    list_sep: str | None = None,
) -> ColumnMap:
    """A :class:`ColumnMap` for the ``columns`` format: one column per field."""
    return ColumnMap(
        question=(question,),
        contexts=(contexts,),
        answer=(answer,),
        reference=(reference,),
        reference_contexts=(reference_contexts,) if reference_contexts else (),
        reference_doc_ids=(reference_doc_ids,) if reference_doc_ids else (),
        retrieved=(retrieved,) if retrieved else (),
        row_id=(row_id,) if row_id else ("id", "example_id"),
        list_sep=list_sep,
    )


def read_rows(
    fmt: str,
    src: str | Path,
    *,
    columns: ColumnMap | None = None,
    references: GoldTable | None = None,
    list_sep: str | None = None,
    records_key: str | None = None,
) -> Iterator[ImportedRow]:
    """Rows of ``src`` read as ``fmt`` (``list_sep``: see :class:`ColumnMap`;
    ``records_key``: the list of records inside a JSON document, a dotted path)."""
    key = records_key
    if fmt == "ragas":
        return rows_from_records(
            read_table(src, records_key=key), replace(RAGAS, list_sep=list_sep)
        )
    if fmt == "deepeval":
        return rows_from_records(
            read_table(src, records_key=key), replace(DEEPEVAL, list_sep=list_sep)
        )
    if fmt == "ragchecker":
        return read_ragchecker(src, records_key=key)
    if fmt == "columns":
        if columns is None:
            raise InputError("the columns format needs the column names", field="columns")
        return rows_from_records(
            read_table(src, records_key=key),
            replace(columns, list_sep=list_sep or columns.list_sep),
        )
    if fmt == "openinference":
        return read_openinference(src, references, records_key=key)
    if fmt == "langfuse":
        return read_langfuse(src, references, records_key=key)
    raise InputError(f"unknown format {fmt!r}; expected one of {', '.join(IMPORT_FORMATS)}")


@dataclass(frozen=True, slots=True)
class ImportResult:
    traces: list[Trace]
    stats: ImportStats
    out: Path | None


def load_documents(path: str | Path) -> list[Document]:
    """Documents from anything the dataset loaders read (documents.jsonl, a folder of
    text files, DragonBall, CLAPnq)."""
    docs = list(load_dataset(path).documents)
    if not docs:
        raise InputError("no documents found", path=str(path))
    return docs


def import_traces(
    fmt: str,
    src: str | Path,
    out: str | Path | None = None,
    *,
    documents: str | Path | Sequence[Document] | None = None,
    references: str | Path | None = None,
    columns: ColumnMap | None = None,
    run_id: str | None = None,
    list_sep: str | None = None,
    records_key: str | None = None,
) -> ImportResult:
    """Import ``src`` as ``fmt``; with ``out``, write ``out/traces.jsonl`` atomically.
    ``records_key`` names the list of records inside a JSON document (a dotted path);
    without it a JSON object's records are found under a usual key (``data``,
    ``input_data``, ``results`` ...) or its only list of objects."""
    golds = load_gold(references) if references is not None else None
    rows = list(
        read_rows(
            fmt,
            src,
            columns=columns,
            references=golds,
            list_sep=list_sep,
            records_key=records_key,
        )
    )
    if not rows:
        raise InputError("no rows found", path=str(src))
    docs: Sequence[Document] | None = (
        load_documents(documents) if isinstance(documents, str | Path) else documents
    )
    rid = run_id or f"import-{fmt}-{Path(src).stem}"
    traces, stats = build_traces(rows, docs, run_id=rid, fmt=fmt)
    out_dir: Path | None = None
    if out is not None:
        out_dir = Path(out)
        if out_dir.exists() and not out_dir.is_dir():
            raise InputError("--out must be a directory", path=str(out_dir))
        out_dir.mkdir(parents=True, exist_ok=True)
        write_jsonl(out_dir / "traces.jsonl", traces)
        summary = {
            "format": fmt,
            "source": str(src),
            "documents": str(documents) if isinstance(documents, str | Path) else None,
            "references": str(references) if references is not None else None,
            "records_key": records_key,
            "traces": len(traces),
            "passages_located": dict(stats.passages),
            "gold_docs_from": dict(stats.gold_docs_from),
            "minimal_traces": stats.minimal,
            "reranking_observed": stats.reranking_observed,
        }
        manifest = {
            "schema": 1,
            "kind": "import",
            "run_id": rid,
            "name": rid,
            "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "config_hash": "",
            "config": {},
            "import": summary,
        }
        atomic_write_text(out_dir / "manifest.json", json.dumps(manifest, indent=2) + "\n")
    return ImportResult(traces, stats, out_dir)
