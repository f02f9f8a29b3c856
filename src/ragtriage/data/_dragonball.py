"""DragonBall (RAGEval) loader.

Documents, one JSON object a line::

    {"domain": "finance", "language": "en", "doc_id": 3,
     "company_name": "Acme Ltd.", "content": "..."}

The name field varies by domain (``company_name``, ``court_name``,
``hospital_patient_name``, ...): any non-standard string field is taken as the title.

Queries, one JSON object a line::

    {"domain": "finance", "language": "en",
     "query": {"query_id": 7, "query_type": "Factual Question", "content": "..."},
     "ground_truth": {"doc_ids": [3], "content": "answer", "references": ["..."],
                      "keypoints": ["..."]}}

Unanswerable questions carry an abstention such as "Unable to answer" / "无法回答" as
the ground-truth content; they load with ``answerable=False`` and an empty answer.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

from pydantic import JsonValue

from ragtriage.data._dataset import Dataset
from ragtriage.data._fields import (
    Line,
    as_paths,
    build_record,
    iter_objects,
    normalize_language,
)
from ragtriage.errors import InputError
from ragtriage.records import Document, Example
from ragtriage.text import detect_language

__all__ = [
    "DOC_STANDARD_FIELDS",
    "is_unanswerable_text",
    "load_dragonball",
    "normalize_query_type",
    "read_dragonball_docs",
    "read_dragonball_queries",
]

#: Fields of a DragonBall document line that are not its title.
DOC_STANDARD_FIELDS = ("domain", "language", "doc_id", "content")

# --- query types ----------------------------------------------------------------
# Know-Your-RAG labels (seed 001, Table 1): fact_single, summary, reasoning, unanswerable.
# Matched by keywords so that spelling variants ("Summarization Question", "总结性问题",
# "Multi-document Time Sequence Question", "多文档对比问题") map too. Checked in order.
_TYPE_RULES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("unanswerable", ("unsolvable", "unanswerable", "irrelevant", "无关", "无解", "不可回答")),
    (
        "reasoning",
        (
            "multi-hop",
            "multihop",
            "multi hop",
            "reasoning",
            "comparison",
            "compare",
            "time sequence",
            "temporal",
            "chronolog",
            "推理",
            "对比",
            "比较",
            "时间序列",
            "时序",
        ),
    ),
    # information integration gathers several explicitly stated facts: summary-like
    ("summary", ("summary", "summari", "integration", "总结", "摘要", "概括", "整合")),
    ("fact_single", ("factual", "fact", "事实")),
)


def normalize_query_type(raw: str | None) -> str | None:
    """Map a dataset's question type to a Know-Your-RAG label, or ``None`` if unclear.

    ``"Factual Question"`` → ``fact_single``; ``"Summary Question"`` → ``summary``;
    multi-hop, comparison and time-sequence questions → ``reasoning``;
    ``"Irrelevant Unsolvable Question"`` → ``unanswerable`` (and the Chinese
    counterparts). Already-normalised labels map to themselves.
    """
    if raw is None:
        return None
    low = unicodedata.normalize("NFKC", raw).strip().lower().replace("_", " ")
    if not low:
        return None
    if low.replace(" ", "_") in ("fact_single", "summary", "reasoning", "unanswerable"):
        return low.replace(" ", "_")
    for label, keys in _TYPE_RULES:
        if any(k in low for k in keys):
            return label
    return None


# --- abstention answers ---------------------------------------------------------
# "Strong" phrases say outright that the question cannot be answered; they may be
# followed by a short explanation. "Weak" phrases (no information, 信息不足) are also
# common inside real answers, so they count only when they are nearly the whole answer.
_EN_STRONG = re.compile(
    r"""^(?:(?:sorry|unfortunately)[,\s]+)?(?:
        (?:(?:i\s+am|i'm|we\s+are|it\s+is|it's)\s+)?
        (?:unable|not\s+able|impossible)\s+to\s+(?:answer|determine|respond)
      | (?:(?:i|we|it|this|the\s+question)\s+)?(?:cannot|can't|can\s+not|could\s+not|couldn't)
        \s+(?:be\s+)?(?:answer(?:ed)?|determine[d]?)
      | (?:the\s+)?(?:question\s+is\s+)?(?:unanswerable|not\s+answerable)
    )\b""",
    re.IGNORECASE | re.VERBOSE,
)
_EN_WEAK = re.compile(
    r"""^(?:
        no\s+(?:answer|relevant\s+information|information\s+(?:available|provided|found))
      | (?:there\s+is\s+)?(?:insufficient|not\s+enough)\s+information
      | (?:the\s+)?answer\s+is\s+(?:unknown|not\s+(?:available|provided|mentioned|found))
    )\b""",
    re.IGNORECASE | re.VERBOSE,
)
_ZH_STRONG = re.compile(r"无法(?:回答|作答|解答)|不能回答|无从(?:回答|作答)|无答案|不可回答")
_ZH_WEAK = re.compile(
    r"^(?:抱歉[，,]?)?(?:无法(?:确定|得知|判断|获知|给出答案)|信息不足|没有相关信息"
    r"|未(?:提及|提供)相关信息|无从得知)"
)
_EDGE_CHARS = "\"'“”‘’「」。.!! "  # characters trimmed from both ends
_MAX_STRONG_CHARS_EN = 160
_MAX_STRONG_CHARS_ZH = 50
_MAX_WEAK_CHARS_EN = 60
_MAX_WEAK_CHARS_ZH = 20


def is_unanswerable_text(answer: str) -> bool:
    """True when a ground-truth answer is an abstention ("Unable to answer.",
    "无法回答", "Insufficient information.", ...) rather than an answer.

    Blank answers count as abstentions. A long answer that merely mentions such a
    phrase in passing is a real answer.
    """
    text = unicodedata.normalize("NFKC", answer).strip().strip(_EDGE_CHARS)
    if not text:
        return True
    n = len(text)
    if n <= _MAX_STRONG_CHARS_ZH and _ZH_STRONG.search(text):
        return True
    if n <= _MAX_WEAK_CHARS_ZH and _ZH_WEAK.match(text):
        return True
    if n <= _MAX_STRONG_CHARS_EN and _EN_STRONG.match(text):
        return True
    return n <= _MAX_WEAK_CHARS_EN and _EN_WEAK.match(text) is not None


# --- documents -------------------------------------------------------------------


def _language(loc: Line, obj: dict[str, Any], field: str) -> str | None:
    value = loc.text(obj, "language", field, required=False)
    if value is None or not value.strip():
        return None
    return normalize_language(value)


def read_dragonball_docs(path: str | Path, *, language: str | None = None) -> list[Document]:
    """DragonBall documents; ``language`` keeps only documents in that language."""
    p = Path(path)
    want = normalize_language(language) if language else None
    docs: list[Document] = []
    seen: dict[str, tuple[int, str]] = {}
    for lineno, obj in iter_objects(p):
        loc = Line(str(p), lineno)
        doc_id = loc.ident(obj, "doc_id", "doc_id")
        content = loc.req_text(obj, "content", "content", nonempty=False)
        lang = _language(loc, obj, "language")
        domain = loc.text(obj, "domain", "domain", required=False)
        if want is not None and lang is not None and lang != want:
            continue
        title_field: str | None = None
        title: str | None = None
        meta: dict[str, JsonValue] = {}
        for key, value in obj.items():
            if key in DOC_STANDARD_FIELDS or key in ("schema", "title"):
                continue
            meta[key] = value
            if title is None and isinstance(value, str) and value.strip():
                title_field, title = key, value.strip()
        explicit = loc.text(obj, "title", "title", required=False)
        if explicit is not None and explicit.strip():
            title_field, title = "title", explicit.strip()
        if domain is not None:
            meta["domain"] = domain
        if lang is not None:
            meta["language"] = lang
        if title_field is not None:
            meta["title_field"] = title_field
        if doc_id in seen:
            first_line, first_content = seen[doc_id]
            if first_content == content:
                continue  # the same document listed twice
            raise loc.error(
                "doc_id",
                f"duplicate id {doc_id!r} with different content (first on line {first_line})",
            )
        seen[doc_id] = (lineno, content)
        docs.append(
            build_record(
                loc,
                partial(Document, doc_id=doc_id, text=content, title=title, metadata=meta),
            )
        )
    return docs


# --- queries ---------------------------------------------------------------------


def _example_from_line(loc: Line, obj: dict[str, Any]) -> Example:
    query = loc.mapping(obj, "query", "query")
    qid = loc.ident(query, "query_id", "query.query_id")
    text = loc.req_text(query, "content", "query.content", nonempty=True)
    qtype = loc.text(query, "query_type", "query.query_type", required=False)
    truth = loc.mapping(obj, "ground_truth", "ground_truth")
    raw_ids = loc.list_of(truth, "doc_ids", "ground_truth.doc_ids")
    if raw_ids is None:
        raise loc.error("ground_truth.doc_ids", "missing required field")
    doc_ids = list(
        dict.fromkeys(
            loc.ident_value(v, f"ground_truth.doc_ids.{i}") for i, v in enumerate(raw_ids)
        )
    )
    answer = loc.req_text(truth, "content", "ground_truth.content", nonempty=False)
    references = loc.text_list(truth, "references", "ground_truth.references")
    keypoints = loc.text_list(truth, "keypoints", "ground_truth.keypoints")
    lang = _language(loc, obj, "language") or detect_language(text)
    domain = loc.text(obj, "domain", "domain", required=False)

    answerable = not is_unanswerable_text(answer)
    label = normalize_query_type(qtype)
    if label is None:
        label = qtype if qtype and qtype.strip() else None
    if label is None and not answerable:
        label = "unanswerable"
    meta: dict[str, JsonValue] = {"source": "dragonball"}
    if qtype is not None:
        meta["query_type"] = qtype
    if domain is not None:
        meta["domain"] = domain
    if not answerable:
        meta["ground_truth_content"] = answer
    return build_record(
        loc,
        partial(
            Example,
            example_id=qid,
            query=text,
            answer=answer if answerable else "",
            answerable=answerable,
            doc_ids=doc_ids,
            references=references,
            keypoints=keypoints,
            label=label,
            language=lang,
            metadata=meta,
        ),
    )


def read_dragonball_queries(
    path: str | Path,
    *,
    language: str | None = None,
    known_doc_ids: set[str] | None = None,
) -> list[Example]:
    """DragonBall queries as Examples (ids are the ``query_id`` as a string).

    ``known_doc_ids``, when given, must contain every ground-truth document.
    ``language`` keeps only queries in that language. When the same ``query_id``
    appears in two languages both get a ``-<language>`` suffix; the same id twice in
    one language is an error.
    """
    p = Path(path)
    want = normalize_language(language) if language else None
    examples: list[Example] = []
    lines: dict[tuple[str, str | None], int] = {}
    for lineno, obj in iter_objects(p):
        loc = Line(str(p), lineno)
        ex = _example_from_line(loc, obj)
        if want is not None and ex.language != want:
            continue
        key = (ex.example_id, ex.language)
        if key in lines:
            raise loc.error(
                "query.query_id",
                f"duplicate query id {ex.example_id!r} (first on line {lines[key]})",
            )
        lines[key] = lineno
        if known_doc_ids is not None:
            for i, d in enumerate(ex.doc_ids):
                if d not in known_doc_ids:
                    raise loc.error(f"ground_truth.doc_ids.{i}", f"unknown document {d!r}")
        examples.append(ex)
    return _disambiguate(examples)


def _disambiguate(examples: list[Example]) -> list[Example]:
    langs: dict[str, set[str | None]] = {}
    for ex in examples:
        langs.setdefault(ex.example_id, set()).add(ex.language)
    clash = {i for i, ls in langs.items() if len(ls) > 1}
    if not clash:
        return examples
    return [
        ex.model_copy(
            update={
                "example_id": f"{ex.example_id}-{ex.language}",
                "metadata": {**ex.metadata, "query_id": ex.example_id},
            }
        )
        if ex.example_id in clash
        else ex
        for ex in examples
    ]


def load_dragonball(
    path: str | Path | None = None,
    *,
    docs: str | Path | Sequence[str | Path] | None = None,
    queries: str | Path | Sequence[str | Path] | None = None,
    language: str | None = None,
    name: str | None = None,
) -> Dataset:
    """Load DragonBall documents and queries.

    Give ``docs=`` and ``queries=`` (a path or several), or a directory ``path``
    whose JSONL files are recognised by content. ``language`` (``"en"``/``"zh"``)
    keeps one language. Every ground-truth doc id must name a loaded document.
    """
    doc_paths = as_paths(docs)
    query_paths = as_paths(queries)
    if path is not None and (not doc_paths or not query_paths):
        from ragtriage.data._sniff import sniff_directory

        found = sniff_directory(Path(path))
        doc_paths = doc_paths or found.get("dragonball_docs", [])
        query_paths = query_paths or found.get("dragonball_queries", [])
    if not doc_paths:
        raise InputError(
            "no DragonBall documents file found (lines with doc_id and content); pass docs=",
            path=None if path is None else str(path),
        )
    if not query_paths:
        raise InputError(
            "no DragonBall queries file found (lines with query and ground_truth); pass queries=",
            path=None if path is None else str(path),
        )
    all_docs: list[Document] = []
    where: dict[str, str] = {}
    for dp in doc_paths:
        for d in read_dragonball_docs(dp, language=language):
            if d.doc_id in where:
                raise InputError(
                    f"duplicate document id {d.doc_id!r} (also in {where[d.doc_id]})",
                    path=str(dp),
                    field="doc_id",
                )
            where[d.doc_id] = str(dp)
            all_docs.append(d)
    known = set(where)
    all_examples: list[Example] = []
    for qp in query_paths:
        all_examples.extend(read_dragonball_queries(qp, language=language, known_doc_ids=known))
    _check_unique_examples(all_examples, query_paths)
    lang = normalize_language(language) if language else None
    return Dataset(
        name=name or ("dragonball" if lang is None else f"dragonball-{lang}"),
        documents=tuple(all_docs),
        examples=tuple(all_examples),
        prechunked=None,
        format="dragonball",
    )


def _check_unique_examples(examples: list[Example], paths: Sequence[Path]) -> None:
    if len(paths) < 2:
        return
    seen: set[str] = set()
    for ex in examples:
        if ex.example_id in seen:
            raise InputError(
                f"query id {ex.example_id!r} appears in more than one queries file",
                path=", ".join(str(p) for p in paths),
                field="query.query_id",
            )
        seen.add(ex.example_id)
