"""Loaders for ragtriage's own formats: JSONL records and a folder of text files."""

from __future__ import annotations

import re
from collections.abc import Iterable
from contextlib import ExitStack
from functools import partial
from importlib import resources
from pathlib import Path

from ragtriage.data._dataset import Dataset
from ragtriage.data._fields import Line, build_record, iter_objects
from ragtriage.errors import InputError
from ragtriage.records import Chunk, Document, Example

__all__ = [
    "CHUNKS_FILE",
    "DOCUMENTS_FILE",
    "EXAMPLES_FILE",
    "TEXT_SUFFIXES",
    "load_demo",
    "load_folder",
    "load_generic",
    "markdown_title",
]

DOCUMENTS_FILE = "documents.jsonl"
EXAMPLES_FILE = "examples.jsonl"
CHUNKS_FILE = "chunks.jsonl"
TEXT_SUFFIXES = (".txt", ".md", ".markdown")


def _read_documents(path: Path) -> list[Document]:
    docs: list[Document] = []
    seen: dict[str, int] = {}
    for lineno, obj in iter_objects(path):
        loc = Line(str(path), lineno)
        doc = build_record(loc, partial(Document.model_validate, obj))
        if doc.doc_id in seen:
            raise loc.error(
                "doc_id", f"duplicate id {doc.doc_id!r} (first on line {seen[doc.doc_id]})"
            )
        seen[doc.doc_id] = lineno
        docs.append(doc)
    return docs


def _read_chunks(path: Path, docs: dict[str, Document]) -> list[Chunk]:
    chunks: list[Chunk] = []
    seen: dict[str, int] = {}
    for lineno, obj in iter_objects(path):
        loc = Line(str(path), lineno)
        chunk = build_record(loc, partial(Chunk.model_validate, obj))
        if chunk.chunk_id in seen:
            raise loc.error(
                "chunk_id",
                f"duplicate id {chunk.chunk_id!r} (first on line {seen[chunk.chunk_id]})",
            )
        seen[chunk.chunk_id] = lineno
        doc = docs.get(chunk.doc_id)
        if doc is None:
            raise loc.error("doc_id", f"unknown document {chunk.doc_id!r}")
        if doc.text[chunk.start : chunk.end] != chunk.text:
            raise loc.error(
                "text",
                f"chunk text differs from document {chunk.doc_id!r} "
                f"characters [{chunk.start}, {chunk.end})",
            )
        chunks.append(chunk)
    return chunks


def _read_examples(path: Path, doc_ids: Iterable[str], chunk_ids: set[str] | None) -> list[Example]:
    known = set(doc_ids)
    examples: list[Example] = []
    seen: dict[str, int] = {}
    for lineno, obj in iter_objects(path):
        loc = Line(str(path), lineno)
        ex = build_record(loc, partial(Example.model_validate, obj))
        if ex.example_id in seen:
            raise loc.error(
                "example_id",
                f"duplicate id {ex.example_id!r} (first on line {seen[ex.example_id]})",
            )
        seen[ex.example_id] = lineno
        for i, d in enumerate(ex.doc_ids):
            if d not in known:
                raise loc.error(f"doc_ids.{i}", f"unknown document {d!r}")
        if chunk_ids is not None:
            for i, c in enumerate(ex.gt_chunk_ids):
                if c not in chunk_ids:
                    raise loc.error(f"gt_chunk_ids.{i}", f"unknown chunk {c!r}")
        examples.append(ex)
    return examples


def load_generic(
    path: str | Path | None = None,
    *,
    documents: str | Path | None = None,
    examples: str | Path | None = None,
    chunks: str | Path | None = None,
    name: str | None = None,
) -> Dataset:
    """Load ``documents.jsonl`` (+ optional ``examples.jsonl`` and ``chunks.jsonl``).

    ``path`` is a directory holding files with those names; explicit file paths
    override it. Examples must cite known documents; chunks must match their
    document's text; ids must be unique. Errors name file, line and field.
    """
    base = Path(path) if path is not None else None
    if base is not None and not base.is_dir():
        raise InputError("expected a directory holding documents.jsonl", path=str(base))
    doc_path = Path(documents) if documents is not None else None
    if doc_path is None and base is not None:
        doc_path = base / DOCUMENTS_FILE
    if doc_path is None:
        raise InputError("no documents file given (pass a directory or documents=)")
    if not doc_path.is_file():
        raise InputError(f"{DOCUMENTS_FILE} not found", path=str(doc_path))
    ex_path = Path(examples) if examples is not None else None
    if ex_path is None and base is not None and (base / EXAMPLES_FILE).is_file():
        ex_path = base / EXAMPLES_FILE
    ch_path = Path(chunks) if chunks is not None else None
    if ch_path is None and base is not None and (base / CHUNKS_FILE).is_file():
        ch_path = base / CHUNKS_FILE

    docs = _read_documents(doc_path)
    doc_map = {d.doc_id: d for d in docs}
    chunk_list = _read_chunks(ch_path, doc_map) if ch_path is not None else None
    chunk_ids = {c.chunk_id for c in chunk_list} if chunk_list is not None else None
    exs = _read_examples(ex_path, doc_map, chunk_ids) if ex_path is not None else []
    ds_name = name or (base.resolve().name if base is not None else doc_path.resolve().parent.name)
    return Dataset(
        name=ds_name or "dataset",
        documents=tuple(docs),
        examples=tuple(exs),
        prechunked=tuple(chunk_list) if chunk_list is not None else None,
        format="generic",
    )


_ATX = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}=+[ \t]*$")


def markdown_title(text: str) -> str | None:
    """The first Markdown header (ATX ``# Title`` or setext ``Title\\n=====``), if any.

    A leading YAML front-matter block is skipped; fenced code is not a header.
    """
    lines = text.splitlines()
    i = 0
    if lines and lines[0].strip() == "---":
        for j in range(1, len(lines)):
            if lines[j].strip() in ("---", "..."):
                i = j + 1
                break
    in_fence = False
    for k in range(i, len(lines)):
        line = lines[k]
        if line.lstrip().startswith(("```", "~~~")):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        m = _ATX.match(line)
        if m and m.group(1).strip():
            return m.group(1).strip()
        if line.strip() and k + 1 < len(lines) and _SETEXT.match(lines[k + 1]):
            return line.strip()
    return None


def _text_files(root: Path) -> list[Path]:
    out: list[Path] = []
    for p in root.rglob("*"):
        rel = p.relative_to(root)
        if any(part.startswith(".") for part in rel.parts):
            continue
        if p.suffix.lower() in TEXT_SUFFIXES and p.is_file():
            out.append(p)
    return sorted(out, key=lambda p: p.relative_to(root).as_posix())


def load_folder(
    path: str | Path,
    *,
    examples: str | Path | None = None,
    name: str | None = None,
) -> Dataset:
    """Every ``.txt``/``.md`` file under ``path`` (recursively, hidden ones skipped)
    becomes a Document: ``doc_id`` is the relative POSIX path, ``title`` the first
    Markdown header of a ``.md`` file, else the file name without suffix. An
    ``examples.jsonl`` beside the files (or ``examples=``) is loaded and checked.
    """
    root = Path(path)
    if not root.is_dir():
        raise InputError("expected a directory of .txt/.md files", path=str(root))
    files = _text_files(root)
    if not files:
        raise InputError("no .txt or .md files found", path=str(root))
    docs: list[Document] = []
    for f in files:
        rel = f.relative_to(root).as_posix()
        try:
            raw = f.read_bytes()
        except OSError as exc:
            raise InputError(f"cannot read file: {exc.strerror}", path=str(f)) from exc
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            line = raw[: exc.start].count(b"\n") + 1
            raise InputError(f"not valid UTF-8 ({exc.reason})", path=str(f), line=line) from exc
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        title = markdown_title(text) if f.suffix.lower() != ".txt" else None
        docs.append(
            Document(
                doc_id=rel,
                text=text,
                title=title or f.stem,
                metadata={"path": rel},
            )
        )
    ex_path = Path(examples) if examples is not None else root / EXAMPLES_FILE
    exs: list[Example] = []
    if examples is not None or ex_path.is_file():
        exs = _read_examples(ex_path, (d.doc_id for d in docs), None)
    return Dataset(
        name=name or root.resolve().name or "folder",
        documents=tuple(docs),
        examples=tuple(exs),
        prechunked=None,
        format="folder",
    )


def load_demo() -> Dataset:
    """The small demo corpus bundled with ragtriage (``ragtriage/data/demo``)."""
    demo = resources.files("ragtriage.data").joinpath("demo")
    docs_res = demo.joinpath(DOCUMENTS_FILE)
    ex_res = demo.joinpath(EXAMPLES_FILE)
    if not docs_res.is_file():
        raise InputError(
            "the bundled demo corpus is missing from this installation",
            path=f"ragtriage/data/demo/{DOCUMENTS_FILE}",
        )
    with ExitStack() as stack:
        docs_path = stack.enter_context(resources.as_file(docs_res))
        ex_path = stack.enter_context(resources.as_file(ex_res)) if ex_res.is_file() else None
        ds = load_generic(documents=docs_path, examples=ex_path, name="demo")
    return ds
