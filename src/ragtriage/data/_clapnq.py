"""CLAPnq loader (pre-chunked: every passage is one chunk of its own document).

Questions, one JSON object a line::

    {"id": "q1", "input": "who ...?",
     "passages": [{"title": "...", "text": "...", "sentences": ["...", ...]}],
     "output": [{"answer": "...", "selected_sentences": ["..."], "meta": {...}}]}

An empty answer (or no output) marks an unanswerable question. Passages may also come
in a separate file of ``{"id", "title", "text"}`` lines (JSONL) or a TSV with an
``id``/``text``/``title`` header; those become extra documents, and a question passage
with the same title and text reuses that document's id.
"""

from __future__ import annotations

import csv
import hashlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from pydantic import JsonValue

from ragtriage.data._dataset import Dataset
from ragtriage.data._fields import Line, as_paths, build_record, iter_objects
from ragtriage.errors import InputError
from ragtriage.records import Chunk, Document, Example

__all__ = ["chunk_id_of", "load_clapnq", "passage_doc_id"]


def passage_doc_id(title: str, text: str) -> str:
    """Stable id of a passage that has none: a hash of its title and text."""
    return f"clapnq-{_content_key(title, text)[:16]}"


def chunk_id_of(doc_id: str) -> str:
    """Id of the single pass-through chunk of a passage document."""
    return f"{doc_id}#0"


def _content_key(title: str, text: str) -> str:
    return hashlib.sha1(f"{title}\x1f{text}".encode("utf-8", "surrogatepass")).hexdigest()


@dataclass
class _Corpus:
    """Passage documents collected so far (mutable, local to one load call)."""

    docs: list[Document] = field(default_factory=list)
    by_key: dict[str, str] = field(default_factory=dict)  # content key -> doc id
    ids: dict[str, str] = field(default_factory=dict)  # doc id -> content key

    def add(self, loc: Line, id_field: str, doc_id: str | None, title: str, text: str) -> str:
        key = _content_key(title, text)
        if doc_id is None:
            existing = self.by_key.get(key)
            if existing is not None:
                return existing
            doc_id = passage_doc_id(title, text)
        if doc_id in self.ids:
            if self.ids[doc_id] == key:
                return doc_id
            raise loc.error(id_field, f"duplicate passage id {doc_id!r} with different content")
        meta: dict[str, JsonValue] = {"source": "clapnq"}
        self.docs.append(
            build_record(
                loc,
                partial(Document, doc_id=doc_id, text=text, title=title or None, metadata=meta),
            )
        )
        self.ids[doc_id] = key
        self.by_key.setdefault(key, doc_id)
        return doc_id


def _read_passages_jsonl(path: Path, corpus: _Corpus) -> None:
    for lineno, obj in iter_objects(path):
        loc = Line(str(path), lineno)
        pid = loc.ident(obj, "id", "id")
        text = loc.req_text(obj, "text", "text", nonempty=True)
        title = loc.text(obj, "title", "title", required=False) or ""
        corpus.add(loc, "id", pid, title, text)


def _tsv_rows(path: Path) -> Iterator[tuple[int, dict[str, str]]]:
    try:
        fh = path.open("r", encoding="utf-8", newline="")
    except OSError as exc:
        raise InputError(f"cannot open file: {exc.strerror}", path=str(path)) from exc
    with fh:
        reader = csv.reader(fh, delimiter="\t")
        header: list[str] | None = None
        while True:
            try:
                row = next(reader)
            except StopIteration:
                return
            except (csv.Error, UnicodeDecodeError) as exc:
                raise InputError(
                    f"unreadable TSV row: {exc}", path=str(path), line=reader.line_num + 1
                ) from exc
            if header is None:
                header = [h.strip().lower() for h in row]
                for need in ("id", "text"):
                    if need not in header:
                        raise InputError(
                            "TSV header needs 'id' and 'text' columns (and optionally 'title')",
                            path=str(path),
                            line=1,
                            field=need,
                        )
                continue
            if not row or not any(cell.strip() for cell in row):
                continue
            if len(row) != len(header):
                raise InputError(
                    f"expected {len(header)} tab-separated columns, got {len(row)}",
                    path=str(path),
                    line=reader.line_num,
                )
            yield reader.line_num, dict(zip(header, row, strict=True))


def _read_passages_tsv(path: Path, corpus: _Corpus) -> None:
    for lineno, row in _tsv_rows(path):
        loc = Line(str(path), lineno)
        pid = loc.ident(row, "id", "id")
        text = loc.req_text(row, "text", "text", nonempty=True)
        title = row.get("title") or ""
        corpus.add(loc, "id", pid, title, text)


def _output(loc: Line, item: Any, i: int) -> dict[str, JsonValue]:
    prefix = f"output.{i}"
    if not isinstance(item, dict):
        raise loc.error(prefix, "expected an object with 'answer' and 'selected_sentences'")
    answer = loc.text(item, "answer", f"{prefix}.answer", required=False, default="") or ""
    selected = loc.text_list(item, "selected_sentences", f"{prefix}.selected_sentences")
    meta = item.get("meta")
    if meta is not None and not isinstance(meta, dict):
        raise loc.error(f"{prefix}.meta", "expected an object")
    return {"answer": answer, "selected_sentences": list(selected), "meta": meta}


def _read_questions(path: Path, corpus: _Corpus, seen: dict[str, str]) -> list[Example]:
    examples: list[Example] = []
    for lineno, obj in iter_objects(path):
        loc = Line(str(path), lineno)
        qid = loc.ident(obj, "id", "id")
        if qid in seen:
            raise loc.error("id", f"duplicate question id {qid!r} (first in {seen[qid]})")
        seen[qid] = f"{path}:{lineno}"
        query = loc.req_text(obj, "input", "input", nonempty=True)
        doc_ids: list[str] = []
        for i, p in enumerate(loc.list_of(obj, "passages", "passages") or []):
            if not isinstance(p, dict):
                raise loc.error(f"passages.{i}", "expected an object with 'title' and 'text'")
            text = loc.req_text(p, "text", f"passages.{i}.text", nonempty=True)
            title = loc.text(p, "title", f"passages.{i}.title", required=False) or ""
            pid: str | None = None
            if p.get("id") is not None:
                pid = loc.ident(p, "id", f"passages.{i}.id")
            doc_id = corpus.add(loc, f"passages.{i}.id", pid, title, text)
            if doc_id not in doc_ids:
                doc_ids.append(doc_id)
        outputs = [
            _output(loc, o, i) for i, o in enumerate(loc.list_of(obj, "output", "output") or [])
        ]
        chosen = next(
            (o for o in outputs if isinstance(o["answer"], str) and o["answer"].strip()), None
        )
        meta: dict[str, JsonValue] = {"source": "clapnq"}
        references: list[str] = []
        answer = ""
        if chosen is not None:
            answer = str(chosen["answer"])
            sel = chosen["selected_sentences"]
            references = [s for s in sel if isinstance(s, str)] if isinstance(sel, list) else []
            if chosen["meta"] is not None:
                meta["output_meta"] = chosen["meta"]
        others: list[JsonValue] = [o for o in outputs if o is not chosen]
        if others:
            meta["other_outputs"] = others
        answerable = chosen is not None
        examples.append(
            build_record(
                loc,
                partial(
                    Example,
                    example_id=qid,
                    query=query,
                    answer=answer,
                    answerable=answerable,
                    doc_ids=doc_ids,
                    references=references,
                    gt_chunk_ids=[chunk_id_of(d) for d in doc_ids],
                    label=None if answerable else "unanswerable",
                    language="en",
                    metadata=meta,
                ),
            )
        )
    return examples


def load_clapnq(
    path: str | Path | None = None,
    *,
    questions: str | Path | Sequence[str | Path] | None = None,
    passages: str | Path | Sequence[str | Path] | None = None,
    name: str | None = None,
) -> Dataset:
    """Load CLAPnq questions (and optional extra passages) as a pre-chunked dataset.

    ``path`` is a questions file or a directory whose question and passage files are
    recognised by content; ``questions=``/``passages=`` name files explicitly.
    Each distinct passage (by title + text) is one Document with one pass-through
    Chunk ``<doc_id>#0``; an example's ``gt_chunk_ids`` are its passages' chunks and
    its ``references`` the selected sentences of the first non-empty answer.
    """
    q_paths = as_paths(questions)
    p_paths = as_paths(passages)
    if path is not None:
        base = Path(path)
        if base.is_dir():
            from ragtriage.data._sniff import sniff_directory

            found = sniff_directory(base)
            if not q_paths:
                q_paths = found.get("clapnq_questions", [])
            if passages is None:
                p_paths = found.get("clapnq_passages", [])
        elif not q_paths:
            q_paths = [base]
    if not q_paths:
        raise InputError(
            "no CLAPnq questions file found (lines with id, input, passages, output)",
            path=None if path is None else str(path),
        )
    corpus = _Corpus()
    for pp in p_paths:
        if pp.suffix.lower() in (".tsv", ".tab"):
            _read_passages_tsv(pp, corpus)
        else:
            _read_passages_jsonl(pp, corpus)
    seen: dict[str, str] = {}
    examples: list[Example] = []
    for qp in q_paths:
        examples.extend(_read_questions(qp, corpus, seen))
    chunks = tuple(
        Chunk(
            chunk_id=chunk_id_of(d.doc_id),
            doc_id=d.doc_id,
            text=d.text,
            start=0,
            end=len(d.text),
            index=0,
            metadata={"passthrough": True},
        )
        for d in corpus.docs
    )
    return Dataset(
        name=name or "clapnq",
        documents=tuple(corpus.docs),
        examples=tuple(examples),
        prechunked=chunks,
        format="clapnq",
    )
