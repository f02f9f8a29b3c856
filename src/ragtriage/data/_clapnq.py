"""CLAPnq loader (pre-chunked: every passage is one chunk of its own document).

Annotated questions (``annotated_data/*/clapnq_*.jsonl``), one JSON object a line::

    {"id": "q1", "input": "who ...?",
     "passages": [{"title": "...", "text": "...", "sentences": ["...", ...]}],
     "output": [{"answer": "...", "selected_sentences": ["..."], "meta": {...}}]}

An empty answer (or no output) marks an unanswerable question. The retrieval corpus
(``retrieval/passages.tsv``: ``id``/``text``/``title`` columns, or JSONL lines with
those fields) becomes the documents; the retrieval question files
(``retrieval/*/question_*.tsv``: ``id``, ``question``, ``doc-id-list``, ``answers``
joined by ``::``) give each question's gold passage ids in that corpus.

How an annotated question's passage is tied to the corpus, in order: the gold ids of
its retrieval TSV row; a corpus passage with the same text (whitespace-insensitive);
a corpus passage of the same title whose text is at least 90 % similar (the corpus
keeps one of several slightly different versions of a passage); else the passage
becomes a document of its own (id ``clapnq-<hash>``). ``Example.metadata
["gt_passage_match"]`` says which rule applied. Retrieval TSV questions without an
annotated line become examples of their own only when no annotated file is loaded.
"""

from __future__ import annotations

import csv
import hashlib
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from pydantic import JsonValue
from rapidfuzz import fuzz

from ragtriage.data._dataset import Dataset
from ragtriage.data._fields import Line, as_paths, build_record, iter_objects
from ragtriage.errors import InputError
from ragtriage.records import Chunk, Document, Example

__all__ = ["DOC_ID_COLUMNS", "FUZZY_PASSAGE_MATCH", "chunk_id_of", "load_clapnq", "passage_doc_id"]


def passage_doc_id(title: str, text: str) -> str:
    """Stable id of a passage that has none: a hash of its title and text."""
    return f"clapnq-{_content_key(title, text)[:16]}"


def chunk_id_of(doc_id: str) -> str:
    """Id of the single pass-through chunk of a passage document."""
    return f"{doc_id}#0"


def _squash(text: str) -> str:
    """Whitespace-insensitive form used to compare passages."""
    return " ".join(text.split())


def _content_key(title: str, text: str) -> str:
    blob = f"{_squash(title)}\x1f{_squash(text)}"
    return hashlib.sha1(blob.encode("utf-8", "surrogatepass")).hexdigest()


#: Least rapidfuzz ratio (0-100) for a same-title corpus passage to stand in for an
#: annotated passage; the CLAPnq corpus kept one of near-identical versions.
FUZZY_PASSAGE_MATCH = 90.0
_ID_SPLIT = re.compile(r"[\s,;|]+")


@dataclass
class _Corpus:
    """Passage documents collected so far (mutable, local to one load call)."""

    docs: list[Document] = field(default_factory=list)
    by_key: dict[str, str] = field(default_factory=dict)  # content key -> doc id
    ids: dict[str, str] = field(default_factory=dict)  # doc id -> content key
    by_title: dict[str, list[int]] = field(default_factory=dict)  # title -> doc positions

    def match(self, title: str, text: str) -> tuple[str, str] | None:
        """``(doc id, how)`` of a corpus passage standing for this one, if any."""
        existing = self.by_key.get(_content_key(title, text))
        if existing is not None:
            return existing, "exact"
        wanted = _squash(text)
        best: tuple[float, int] | None = None
        for pos in self.by_title.get(_squash(title).lower(), ()):
            score = fuzz.ratio(wanted, _squash(self.docs[pos].text))
            if score >= FUZZY_PASSAGE_MATCH and (best is None or score > best[0]):
                best = (score, pos)
        if best is None:
            return None
        return self.docs[best[1]].doc_id, f"similar {best[0] / 100:.2f}"

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
        if title:
            self.by_title.setdefault(_squash(title).lower(), []).append(len(self.docs) - 1)
        return doc_id


def _read_passages_jsonl(path: Path, corpus: _Corpus) -> None:
    for lineno, obj in iter_objects(path):
        loc = Line(str(path), lineno)
        pid = loc.ident(obj, "id", "id")
        text = loc.req_text(obj, "text", "text", nonempty=True)
        title = loc.text(obj, "title", "title", required=False) or ""
        corpus.add(loc, "id", pid, title, text)


def _tsv_rows(
    path: Path, required: Sequence[str] = ("id", "text"), what: str = "'id' and 'text'"
) -> Iterator[tuple[int, dict[str, str]]]:
    try:
        fh = path.open("r", encoding="utf-8-sig", newline="")
    except OSError as exc:
        raise InputError(f"cannot open file: {exc.strerror}", path=str(path)) from exc
    with fh:
        reader = csv.reader(fh, delimiter="\t")
        header: list[str] | None = None
        while True:
            start = reader.line_num + 1  # a quoted cell may span several lines
            try:
                row = next(reader)
            except StopIteration:
                return
            except (csv.Error, UnicodeDecodeError) as exc:
                raise InputError(f"unreadable TSV row: {exc}", path=str(path), line=start) from exc
            if header is None:
                header = [h.strip().lower() for h in row]
                for need in required:
                    if need not in header:
                        raise InputError(
                            f"TSV header needs {what} columns",
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
                    line=start,
                )
            yield start, dict(zip(header, row, strict=True))


def _read_passages_tsv(path: Path, corpus: _Corpus) -> None:
    for lineno, row in _tsv_rows(path):
        loc = Line(str(path), lineno)
        pid = loc.ident(row, "id", "id")
        text = loc.req_text(row, "text", "text", nonempty=True)
        title = row.get("title") or ""
        corpus.add(loc, "id", pid, title, text)


#: Column names of the gold passage ids in a retrieval question TSV.
DOC_ID_COLUMNS = ("doc-id-list", "doc_id_list", "doc-ids", "doc_ids")


@dataclass(frozen=True)
class _TsvQuestion:
    """One row of a retrieval question TSV (``id, question, doc-id-list, answers``)."""

    loc: Line
    qid: str
    question: str
    doc_ids: tuple[str, ...]
    answers: tuple[str, ...]


def _read_question_tsv(path: Path) -> list[_TsvQuestion]:
    rows: list[_TsvQuestion] = []
    for lineno, row in _tsv_rows(path, ("id", "question"), "'id', 'question' and 'doc-id-list'"):
        loc = Line(str(path), lineno)
        column = next((c for c in DOC_ID_COLUMNS if c in row), None)
        if column is None:
            raise loc.error("doc-id-list", "missing column of gold passage ids")
        ids = tuple(dict.fromkeys(x for x in _ID_SPLIT.split(row[column].strip()) if x))
        answers = tuple(a.strip() for a in (row.get("answers") or "").split("::") if a.strip())
        rows.append(
            _TsvQuestion(
                loc=loc,
                qid=loc.ident(row, "id", "id"),
                question=loc.req_text(row, "question", "question", nonempty=True),
                doc_ids=ids,
                answers=answers,
            )
        )
    return rows


def _tsv_example(q: _TsvQuestion, corpus: _Corpus) -> Example:
    """An example from a retrieval TSV row alone (no annotated line for it)."""
    for d in q.doc_ids:
        if d not in corpus.ids:
            raise q.loc.error(
                "doc-id-list", f"passage id {d!r} is in no passages file (load passages.tsv)"
            )
    answerable = bool(q.doc_ids)
    meta: dict[str, JsonValue] = {
        "source": "clapnq",
        "gt_passage_match": ["qrels"] * len(q.doc_ids),
    }
    if len(q.answers) > 1:
        meta["other_answers"] = list(q.answers[1:])
    return build_record(
        q.loc,
        partial(
            Example,
            example_id=q.qid,
            query=q.question,
            answer=q.answers[0] if q.answers and answerable else "",
            answerable=answerable,
            doc_ids=list(q.doc_ids),
            references=[],
            gt_chunk_ids=[chunk_id_of(d) for d in q.doc_ids],
            label=None if answerable else "unanswerable",
            language="en",
            metadata=meta,
        ),
    )


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


def _gold_passages(
    loc: Line, obj: dict[str, Any], corpus: _Corpus, gold: _TsvQuestion | None
) -> tuple[list[str], list[str]]:
    """``(doc ids, how each was found)`` of an annotated question's passages."""
    inline: list[tuple[int, str | None, str, str]] = []
    for i, p in enumerate(loc.list_of(obj, "passages", "passages") or []):
        if not isinstance(p, dict):
            raise loc.error(f"passages.{i}", "expected an object with 'title' and 'text'")
        text = loc.req_text(p, "text", f"passages.{i}.text", nonempty=True)
        title = loc.text(p, "title", f"passages.{i}.title", required=False) or ""
        pid: str | None = None
        if p.get("id") is not None:
            pid = loc.ident(p, "id", f"passages.{i}.id")
        inline.append((i, pid, title, text))
    if gold is not None and gold.doc_ids and all(d in corpus.ids for d in gold.doc_ids):
        return list(gold.doc_ids), ["qrels"] * len(gold.doc_ids)
    doc_ids: list[str] = []
    how: list[str] = []
    for i, pid, title, text in inline:
        found = corpus.match(title, text) if pid is None else None
        if found is None:
            found = (corpus.add(loc, f"passages.{i}.id", pid, title, text), "inline")
        if found[0] not in doc_ids:
            doc_ids.append(found[0])
            how.append(found[1])
    return doc_ids, how


def _read_questions(
    path: Path, corpus: _Corpus, seen: dict[str, str], qrels: dict[str, _TsvQuestion]
) -> list[Example]:
    examples: list[Example] = []
    for lineno, obj in iter_objects(path):
        loc = Line(str(path), lineno)
        qid = loc.ident(obj, "id", "id")
        if qid in seen:
            raise loc.error("id", f"duplicate question id {qid!r} (first in {seen[qid]})")
        seen[qid] = f"{path}:{lineno}"
        query = loc.req_text(obj, "input", "input", nonempty=True)
        doc_ids, how = _gold_passages(loc, obj, corpus, qrels.get(qid))
        outputs = [
            _output(loc, o, i) for i, o in enumerate(loc.list_of(obj, "output", "output") or [])
        ]
        chosen = next(
            (o for o in outputs if isinstance(o["answer"], str) and o["answer"].strip()), None
        )
        meta: dict[str, JsonValue] = {"source": "clapnq", "gt_passage_match": list(how)}
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
    qrels: str | Path | Sequence[str | Path] | None = None,
    name: str | None = None,
) -> Dataset:
    """Load CLAPnq as a pre-chunked dataset.

    ``path`` is an annotated questions file, a retrieval question TSV, or a directory
    (such as a clone of the CLAPnq repository) whose files are recognised by content;
    ``questions=`` (annotated JSONL), ``passages=`` (the corpus) and ``qrels=``
    (retrieval question TSVs) name files explicitly. Each distinct passage is one
    Document with one pass-through Chunk ``<doc_id>#0``; an example's
    ``gt_chunk_ids`` are its gold passages' chunks and its ``references`` the selected
    sentences of the first non-empty answer (see the module docstring for how
    annotated passages are tied to corpus passages).
    """
    q_paths = as_paths(questions)
    p_paths = as_paths(passages)
    t_paths = as_paths(qrels)
    if path is not None:
        base = Path(path)
        if base.is_dir():
            from ragtriage.data._sniff import sniff_directory

            found = sniff_directory(base)
            if not q_paths:
                q_paths = found.get("clapnq_questions", [])
            if passages is None:
                p_paths = found.get("clapnq_passages", [])
            if qrels is None:
                t_paths = found.get("clapnq_qrels", [])
        elif base.suffix.lower() in (".tsv", ".tab"):
            if base not in t_paths:
                t_paths = [*t_paths, base]
        elif not q_paths:
            q_paths = [base]
    if not q_paths and not t_paths:
        raise InputError(
            "no CLAPnq questions found (annotated JSONL lines with id, input, passages, "
            "output; or retrieval TSVs with id, question, doc-id-list, answers)",
            path=None if path is None else str(path),
        )
    if not q_paths and not p_paths:
        raise InputError(
            "retrieval question TSVs name their gold passages by id: load the passages "
            "file (passages.tsv) too, or the directory holding both",
            path=str(t_paths[0]),
        )
    corpus = _Corpus()
    for pp in p_paths:
        if pp.suffix.lower() in (".tsv", ".tab"):
            _read_passages_tsv(pp, corpus)
        else:
            _read_passages_jsonl(pp, corpus)
    tsv_questions: dict[str, _TsvQuestion] = {}
    for tp in t_paths:
        for q in _read_question_tsv(tp):
            first = tsv_questions.setdefault(q.qid, q)
            if first is not q:
                raise q.loc.error(
                    "id",
                    f"duplicate question id {q.qid!r} (first in {first.loc.path}:{first.loc.line})",
                )
    seen: dict[str, str] = {}
    examples: list[Example] = []
    for qp in q_paths:
        examples.extend(_read_questions(qp, corpus, seen, tsv_questions))
    if not q_paths:
        examples.extend(_tsv_example(q, corpus) for q in tsv_questions.values())
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
