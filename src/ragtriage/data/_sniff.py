"""Recognise dataset files by content and dispatch to the right loader."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from ragtriage.data._clapnq import DOC_ID_COLUMNS, load_clapnq
from ragtriage.data._dataset import Dataset
from ragtriage.data._dragonball import load_dragonball
from ragtriage.data._fields import normalize_language
from ragtriage.data._generic import (
    CHUNKS_FILE,
    DOCUMENTS_FILE,
    EXAMPLES_FILE,
    TEXT_SUFFIXES,
    load_folder,
    load_generic,
)
from ragtriage.errors import InputError

__all__ = [
    "FORMATS",
    "IMPORT_FORMAT_NAMES",
    "RECORD_LIST_KEYS",
    "guess_import_format",
    "import_hint",
    "load_dataset",
    "sniff_directory",
    "sniff_file",
]

#: Formats :func:`load_dataset` accepts besides ``"auto"``.
FORMATS = ("generic", "folder", "dragonball", "clapnq")

_DATA_SUFFIXES = (".jsonl", ".json", ".ndjson", ".tsv", ".tab")
_MAX_DEPTH = 3
_SNIFF_BYTES = 1 << 22  # a first line longer than 4 MiB is not sniffed


def _kind_of(obj: dict[str, Any]) -> str | None:
    keys = set(obj)
    if {"query", "ground_truth"} <= keys:
        return "dragonball_queries"
    if {"input", "passages"} <= keys or ({"input", "output", "id"} <= keys):
        return "clapnq_questions"
    if "example_id" in keys:
        return "generic_examples"
    if "chunk_id" in keys:
        return "generic_chunks"
    if {"doc_id", "text"} <= keys:
        return "generic_documents"
    if {"doc_id", "content"} <= keys:
        return "dragonball_docs"
    if {"id", "text"} <= keys:
        return "clapnq_passages"
    return None


def sniff_file(path: str | Path) -> str | None:
    """Kind of a data file from its first non-blank line, or ``None``.

    Kinds: ``generic_documents``, ``generic_examples``, ``generic_chunks``,
    ``dragonball_docs``, ``dragonball_queries``, ``clapnq_questions``,
    ``clapnq_passages`` (JSONL, or TSV with an ``id``/``text`` header),
    ``clapnq_qrels`` (retrieval question TSV: ``id``/``question``/``doc-id-list``).
    """
    p = Path(path)
    try:
        with p.open("r", encoding="utf-8-sig", errors="replace") as fh:
            while True:
                line = fh.readline(_SNIFF_BYTES)
                if not line:
                    return None
                if line.strip():
                    break
    except OSError:
        return None
    if p.suffix.lower() in (".tsv", ".tab"):
        header = {h.strip().lower() for h in line.rstrip("\r\n").split("\t")}
        if {"id", "text"} <= header:
            return "clapnq_passages"
        if {"id", "question"} <= header and header & set(DOC_ID_COLUMNS):
            return "clapnq_qrels"
        return None
    try:
        obj = json.loads(line)
    except (json.JSONDecodeError, RecursionError):
        return None
    return _kind_of(obj) if isinstance(obj, dict) else None


# ---------------------------------------------------------------- other tools' files
# Which import format a file looks like, from the keys of its first record: for the
# errors of `ragtriage validate` (ragtriage's own record files) and of the dataset
# loaders, so a file of another tool is pointed to `ragtriage import FORMAT`.

#: how the formats are called in messages
IMPORT_FORMAT_NAMES: Final = {
    "ragas": "RAGAS",
    "deepeval": "DeepEval",
    "ragchecker": "RAGChecker",
    "openinference": "OpenInference (Phoenix) spans",
    "langfuse": "Langfuse",
}
_GUESS_MAX_BYTES: Final = 256 << 20
#: keys under which a JSON export keeps its list of records, first present list wins (the
#: importers read them so too; RAGChecker: ``input_data`` in its input files, ``results``
#: in its output files)
RECORD_LIST_KEYS: Final = (
    "test_cases",
    "goldens",
    "data",
    "rows",
    "examples",
    "spans",
    "traces",
    "items",
    "records",
    "samples",
    "input_data",
    "results",
)


def _by_keys(obj: Mapping[str, Any]) -> str | None:
    keys = set(obj)
    if "resourceSpans" in keys:
        return "openinference"
    if {"query", "gt_answer"} <= keys or {"query", "retrieved_context"} <= keys:
        return "ragchecker"
    if "user_input" in keys and keys & {"retrieved_contexts", "response", "reference"}:
        return "ragas"
    if {"question", "contexts"} <= keys and keys & {"answer", "ground_truth", "ground_truths"}:
        return "ragas"
    if "input" in keys and keys & {"actual_output", "actualOutput", "retrieval_context"}:
        return "deepeval"
    if "span_kind" in keys or (
        isinstance(obj.get("context"), Mapping) and "trace_id" in obj["context"]
    ):
        return "openinference"
    if "observations" in keys or {"traceId", "type"} <= keys:
        return "langfuse"
    return None


def _first_record(path: Path) -> Mapping[str, Any] | None:
    try:
        with path.open("rb") as fh:
            for raw in fh:
                if raw.strip():
                    line = raw[:_SNIFF_BYTES]
                    break
            else:
                return None
        try:
            obj = json.loads(line.decode("utf-8-sig"))
        except ValueError:
            if path.stat().st_size > _GUESS_MAX_BYTES:
                return None
            obj = json.loads(path.read_text(encoding="utf-8-sig"))
    except (OSError, ValueError, RecursionError):
        return None
    if isinstance(obj, list):
        obj = obj[0] if obj else None
    if not isinstance(obj, Mapping):
        return None
    lists = [k for k in RECORD_LIST_KEYS if isinstance(obj.get(k), list)]
    if not lists and not any(isinstance(v, str | int | float) for v in obj.values()):
        lists = [
            k for k, v in obj.items() if isinstance(v, list) and v and isinstance(v[0], Mapping)
        ]
    if lists:
        items = obj[lists[0]]
        return items[0] if items and isinstance(items[0], Mapping) else None
    return obj


def guess_import_format(path: str | Path) -> str | None:
    """The import format (one of :data:`IMPORT_FORMAT_NAMES`) the file's first record looks
    like, or ``None``."""
    p = Path(path)
    if p.suffix.lower() not in (".json", ".jsonl", ".ndjson", ".txt", ""):
        return None
    obj = _first_record(p)
    return _by_keys(obj) if obj is not None else None


def import_hint(path: str | Path) -> str:
    """``"; this file looks like a RAGChecker file: import it with ..."``, or ``""``."""
    fmt = guess_import_format(path)
    if fmt is None:
        return ""
    return (
        f"; this file looks like a {IMPORT_FORMAT_NAMES[fmt]} file: import it with "
        f"`ragtriage import {fmt} {path} --out RUN` (then `ragtriage validate RUN`)"
    )


def sniff_directory(root: Path) -> dict[str, list[Path]]:
    """Data files under ``root`` (up to 3 levels, hidden ones skipped) by kind."""
    found: dict[str, list[Path]] = {}
    for p in sorted(_data_files(root, 0)):
        kind = sniff_file(p)
        if kind is not None:
            found.setdefault(kind, []).append(p)
    return found


def _data_files(root: Path, depth: int) -> list[Path]:
    out: list[Path] = []
    try:
        entries = list(root.iterdir())
    except OSError:
        return out
    for p in entries:
        if p.name.startswith("."):
            continue
        if p.is_dir():
            if depth < _MAX_DEPTH:
                out.extend(_data_files(p, depth + 1))
        elif p.suffix.lower() in _DATA_SUFFIXES:
            out.append(p)
    return out


def _has_text_files(root: Path) -> bool:
    return any(
        p.suffix.lower() in TEXT_SUFFIXES and p.is_file()
        for p in root.rglob("*")
        if not any(part.startswith(".") for part in p.relative_to(root).parts)
    )


def _sibling(path: Path, kind: str) -> list[Path]:
    return [
        p
        for p in sorted(path.parent.iterdir())
        if p != path and p.suffix.lower() in _DATA_SUFFIXES and sniff_file(p) == kind
    ]


def _generic_file(path: Path, kind: str | None, name: str | None) -> Dataset:
    parent = path.parent
    ds_name = name or parent.resolve().name
    if kind in ("generic_examples", "generic_chunks"):
        docs = parent / DOCUMENTS_FILE
        if not docs.is_file():
            raise InputError(f"this file needs {DOCUMENTS_FILE} beside it", path=str(path))
        examples = parent / EXAMPLES_FILE
        chunks = parent / CHUNKS_FILE
        if kind == "generic_examples":
            examples = path
        else:
            chunks = path
        return load_generic(
            documents=docs,
            examples=examples if examples.is_file() else None,
            chunks=chunks if chunks.is_file() else None,
            name=ds_name,
        )
    examples = parent / EXAMPLES_FILE
    chunks = parent / CHUNKS_FILE
    return load_generic(
        documents=path,
        examples=examples if examples.is_file() and examples != path else None,
        chunks=chunks if chunks.is_file() and chunks != path else None,
        name=ds_name,
    )


def _dragonball_file(
    path: Path, kind: str | None, language: str | None, name: str | None
) -> Dataset:
    if kind == "dragonball_docs":
        return load_dragonball(
            docs=path, queries=_sibling(path, "dragonball_queries"), language=language, name=name
        )
    return load_dragonball(
        docs=_sibling(path, "dragonball_docs"), queries=path, language=language, name=name
    )


def _auto_directory(root: Path) -> str:
    if (root / DOCUMENTS_FILE).is_file():
        return "generic"
    found = sniff_directory(root)
    families = sorted({k.split("_", 1)[0] for k in found if k.startswith(("dragonball", "clapnq"))})
    if len(families) > 1:
        raise InputError(
            f"files of several dataset formats found ({', '.join(families)}); "
            "pass format= or point at one dataset's directory",
            path=str(root),
        )
    if families:
        return families[0]
    if _has_text_files(root):
        return "folder"
    raise InputError(
        "cannot tell the dataset format: no documents.jsonl, no DragonBall or CLAPnq "
        "files and no .txt/.md files",
        path=str(root),
    )


def _auto_file(kind: str | None, path: Path) -> str:
    if kind is None:
        if path.suffix.lower() in TEXT_SUFFIXES:
            raise InputError("a single text file is not a dataset; pass its folder", path=str(path))
        raise InputError(
            "cannot tell the dataset format from the first line (pass format=)" + import_hint(path),
            path=str(path),
        )
    family = kind.split("_", 1)[0]
    if kind == "clapnq_passages":
        raise InputError(
            "this is a CLAPnq passages file; load the questions file (or the directory)",
            path=str(path),
        )
    return family


def load_dataset(
    path_or_dir: str | Path,
    format: str = "auto",
    *,
    name: str | None = None,
    language: str | None = None,
) -> Dataset:
    """Load a dataset, recognising its format when ``format="auto"``.

    * ``generic`` — a directory with ``documents.jsonl`` (+ ``examples.jsonl``,
      ``chunks.jsonl``), or one of those files;
    * ``folder`` — a directory of ``.txt``/``.md`` files (+ ``examples.jsonl``);
    * ``dragonball`` — a directory with DragonBall docs and queries files, or one of
      them (the other is looked for beside it);
    * ``clapnq`` — a CLAPnq annotated questions file, or a directory of annotated
      question, retrieval question (TSV) and passage files (a clone of the repo).

    ``language`` keeps only DragonBall documents and examples in that language; for
    the other formats it drops examples whose language is set to another one.
    """
    path = Path(path_or_dir)
    if format != "auto" and format not in FORMATS:
        raise InputError(f"unknown dataset format {format!r}; expected auto or one of {FORMATS}")
    if not path.exists():
        raise InputError("no such file or directory", path=str(path))
    kind = None if path.is_dir() else sniff_file(path)
    fmt = format
    if fmt == "auto":
        fmt = _auto_directory(path) if path.is_dir() else _auto_file(kind, path)

    if fmt == "dragonball":
        if path.is_dir():
            return load_dragonball(path, language=language, name=name)
        return _dragonball_file(path, kind, language, name)
    if fmt == "clapnq":
        ds = load_clapnq(path, name=name)
    elif fmt == "folder":
        ds = load_folder(path, name=name)
    elif path.is_dir():
        ds = load_generic(path, name=name)
    else:
        ds = _generic_file(path, kind, name)
    if language:
        want = normalize_language(language)
        kept = tuple(e for e in ds.examples if e.language in (None, want))
        ds = Dataset(ds.name, ds.documents, kept, ds.prechunked, ds.format)
    return ds
