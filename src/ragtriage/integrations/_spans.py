"""What the span-based importers (OpenInference, Langfuse) share: the gold answers
(from the trace's own metadata or a ``--references`` file), the contexts actually in
the generator's prompt, and the row they assemble."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from ragtriage.errors import InputError
from ragtriage.groundtruth import locate_reference
from ragtriage.integrations._rows import (
    ImportedRow,
    RetrievedText,
    Where,
    as_text,
    as_text_list,
)
from ragtriage.integrations._tabular import read_table

__all__ = ["Gold", "GoldTable", "SpanRow", "load_gold", "parse_time", "query_text"]

_GOLD_KEYS = ("reference", "ground_truth", "expected_output", "expectedOutput", "gold_answer")
_GOLD_CTX_KEYS = ("reference_contexts", "context", "gold_contexts")
_GOLD_DOC_KEYS = ("reference_doc_ids", "gold_doc_ids", "doc_ids")


@dataclass(frozen=True, slots=True)
class Gold:
    """The ground truth of one question."""

    reference: str
    reference_contexts: tuple[str, ...] = ()
    reference_doc_ids: tuple[str, ...] = ()


def gold_from_mapping(obj: Mapping[str, Any], where: Where, prefix: str) -> Gold | None:
    """Ground truth stored beside a trace (its metadata), or ``None``."""
    for k in _GOLD_KEYS:
        if obj.get(k) is not None:
            ref = as_text(obj[k], where, f"{prefix}{k}")
            ctx_key = next((c for c in _GOLD_CTX_KEYS if obj.get(c) is not None), None)
            doc_key = next((c for c in _GOLD_DOC_KEYS if obj.get(c) is not None), None)
            return Gold(
                ref,
                tuple(as_text_list(obj[ctx_key], where, f"{prefix}{ctx_key}")) if ctx_key else (),
                tuple(as_text_list(obj[doc_key], where, f"{prefix}{doc_key}")) if doc_key else (),
            )
    return None


def _norm_question(q: str) -> str:
    return " ".join(q.split()).casefold()


@dataclass(frozen=True, slots=True)
class GoldTable:
    """Gold answers of a ``--references`` file, by trace/row id and by question."""

    by_id: Mapping[str, Gold]
    by_question: Mapping[str, Gold]

    def find(self, row_id: str, question: str) -> Gold | None:
        return self.by_id.get(row_id) or self.by_question.get(_norm_question(question))


def load_gold(path: str | Path) -> GoldTable:
    """A JSONL/CSV/JSON/Parquet file of gold answers: a ``reference`` (or
    ``ground_truth`` / ``expected_output``) column and an ``id`` / ``trace_id`` or a
    ``question`` / ``user_input`` / ``input`` column to match it with."""
    by_id: dict[str, Gold] = {}
    by_q: dict[str, Gold] = {}
    for where, obj in read_table(path):
        gold = gold_from_mapping(obj, where, "")
        if gold is None:
            raise where.error(
                _GOLD_KEYS[0], f"missing gold answer (one of {', '.join(_GOLD_KEYS)})"
            )
        key_id = next((obj[k] for k in ("trace_id", "id", "example_id") if obj.get(k)), None)
        key_q = next(
            (obj[k] for k in ("question", "user_input", "input", "query") if obj.get(k)), None
        )
        if key_id is None and key_q is None:
            raise where.error("id", "needs an id/trace_id or a question to match a trace")
        if key_id is not None:
            by_id[str(key_id)] = gold
        if isinstance(key_q, str):
            by_q[_norm_question(key_q)] = gold
    return GoldTable(by_id, by_q)


def query_text(value: Any) -> str | None:
    """The question out of a span/trace input: a string, a JSON string, or an object
    with a ``query`` / ``question`` / ``input`` / ``user_input`` field."""
    if isinstance(value, str):
        s = value.strip()
        if s.startswith("{"):
            try:
                inner = json.loads(s)
            except ValueError:
                return value
            return query_text(inner) or value
        return value
    if isinstance(value, Mapping):
        for k in ("query", "question", "input", "user_input", "query_str"):
            got = query_text(value.get(k))
            if got:
                return got
    return None


def parse_time(value: Any) -> float | None:
    """Seconds since the epoch from an ISO-8601 string or a number of nanoseconds /
    seconds; ``None`` when absent or unreadable."""
    if isinstance(value, datetime):  # Parquet / pandas timestamps
        return value.timestamp()
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value) / 1e9 if value > 1e14 else float(value)
    if isinstance(value, str) and value:
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    return None


def in_prompt(candidates: Sequence[RetrievedText], prompt: str) -> tuple[RetrievedText, ...]:
    """The candidates whose text is in the generator's prompt, in prompt order
    (exact, else ignoring case/whitespace/punctuation, no fuzzy match)."""
    found: list[tuple[int, int, RetrievedText]] = []
    for i, c in enumerate(candidates):
        if not c.text.strip():
            continue
        span = locate_reference(prompt, c.text, fuzzy=False)
        if span is not None:
            found.append((span[0], i, c))
    return tuple(c for _at, _i, c in sorted(found))


@dataclass
class SpanRow:
    """A trace being assembled from spans/observations."""

    where: Where
    trace_id: str
    question: str | None = None
    answer: str | None = None
    retrieved: list[RetrievedText] | None = None
    reranked: list[RetrievedText] | None = None
    prompt: str = ""
    gold: Gold | None = None
    #: the trace's own output (root span / trace output): preferred to the LLM's
    final_answer: str | None = None

    def __post_init__(self) -> None:
        self.stages: dict[str, dict[str, float]] = {}

    def add_stage(
        self, name: str, start: float | None, end: float | None, prompt_t: int = 0, compl_t: int = 0
    ) -> None:
        st = self.stages.setdefault(
            name, {"latency_ms": 0.0, "prompt_tokens": 0, "completion_tokens": 0, "calls": 0}
        )
        if start is not None and end is not None and end >= start:
            st["latency_ms"] += (end - start) * 1000.0
        st["prompt_tokens"] += prompt_t
        st["completion_tokens"] += compl_t
        st["calls"] += 1

    def finish(self, golds: GoldTable | None, fmt: str) -> ImportedRow:
        w = self.where
        if not self.question:
            raise w.error(
                "input.value",
                f"trace {self.trace_id}: no question (no input on the root or retriever span)",
            )
        gold = self.gold or (golds.find(self.trace_id, self.question) if golds else None)
        if gold is None:
            raise w.error(
                "metadata.reference",
                f"trace {self.trace_id}: no gold answer; put 'reference' in the trace metadata "
                "or pass --references FILE (id or question + reference)",
            )
        if self.retrieved is None and self.reranked is None:
            raise w.error("retrieval.documents", f"trace {self.trace_id}: no retriever output")
        last = self.reranked if self.reranked is not None else self.retrieved or []
        contexts = in_prompt(last, self.prompt) if self.prompt else ()
        return ImportedRow(
            where=w,
            row_id=self.trace_id,
            question=self.question,
            answer=self.final_answer or self.answer or "",
            reference=gold.reference,
            contexts=contexts or tuple(last),
            retrieved=tuple(self.retrieved) if self.retrieved is not None else None,
            reranked=tuple(self.reranked) if self.reranked is not None else None,
            reference_contexts=gold.reference_contexts,
            reference_doc_ids=gold.reference_doc_ids,
            stages=self.stages,
            metadata={
                "source_format": fmt,
                "contexts_from": "prompt" if contexts else "last ranked list",
            },
        )


def check_nonempty(rows: Sequence[ImportedRow], path: str | Path) -> None:
    if not rows:
        raise InputError("no traces found", path=str(path))
