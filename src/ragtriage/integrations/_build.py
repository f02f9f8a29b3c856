"""Imported rows -> :class:`~ragtriage.records.Trace` records.

With the documents, every passage is located (:class:`~ragtriage.integrations._locate.Locator`)
and each document that holds a located passage or is a gold document is cut into chunks
consistent with every passage found in it, across all rows (one chunking, as a real
pipeline has). The gold documents of a row are, in order: the ones its source names
(``reference_doc_ids``); the ones holding its gold evidence (``reference_contexts``); the
ones holding its gold answer verbatim (at most :data:`_MAX_ANSWER_DOCS`); the fewest
documents holding together at least :data:`_MIN_ANSWER_RECALL` of the gold answer's
content words (greedily, at most :data:`_MAX_ANSWER_DOCS`).

Without documents, traces are *minimal*: each passage is a chunk of its own, nothing
is known of the documents, and ``metadata.observable_stages`` leaves chunking out (the
diagnosis then decides generation vs retrieval from the passages alone and reports
chunking as not observable). Reranking is observable only when the source records a
list before the final one (retriever output beside reranker output or prompt).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from ragtriage.data import is_unanswerable_text
from ragtriage.integrations._locate import Located, Locator, chunk_id_for, partition
from ragtriage.integrations._rows import ImportedRow, RetrievedText
from ragtriage.jsonl import validation_to_input_error
from ragtriage.records import Chunk, Document, Example, Hit, Stage, StageStats, Trace

__all__ = ["ImportStats", "build_traces"]

#: a gold answer found verbatim in more documents than this names none of them
_MAX_ANSWER_DOCS = 3
#: else: the fewest documents holding together at least this share of its content words
_MIN_ANSWER_RECALL = 0.8

UNLOCATED_DOC = "(unlocated)"


@dataclass
class ImportStats:
    """What an import found, for the command's summary and the tests."""

    rows: int = 0
    passages: Counter[str] = field(default_factory=Counter)  # exact/normalised/fuzzy/none
    gold_docs_from: Counter[str] = field(default_factory=Counter)
    minimal: int = 0
    reranking_observed: int = 0

    def lines(self) -> list[str]:
        out = [f"{self.rows} trace(s)"]
        if self.passages:
            out.append(
                "passages located: "
                + ", ".join(f"{k} {v}" for k, v in sorted(self.passages.items()))
            )
        if self.gold_docs_from:
            out.append(
                "gold documents from: "
                + ", ".join(f"{k} {v}" for k, v in sorted(self.gold_docs_from.items()))
            )
        out.append(
            f"minimal traces (chunking not observable): {self.minimal}; "
            f"reranking observed: {self.reranking_observed}"
        )
        return out


def _passages(row: ImportedRow) -> list[RetrievedText]:
    return [*row.contexts, *(row.retrieved or ()), *(row.reranked or ())]


def _short_hash(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:12]


def _gold_docs(row: ImportedRow, locator: Locator | None) -> tuple[list[str], str]:
    if row.reference_doc_ids:
        if locator is not None:
            unknown = [d for d in row.reference_doc_ids if d not in locator.documents]
            if unknown:
                raise row.where.error(
                    "reference_doc_ids", f"unknown document(s) {unknown[:3]} (not in --documents)"
                )
        return list(dict.fromkeys(row.reference_doc_ids)), "source"
    if locator is None:
        return [], "none"
    docs: list[str] = []
    for ref in row.reference_contexts:
        # every document holding the evidence (it may be quoted in several), else the
        # one it is fuzzily found in
        holding = locator.find_text(ref)
        got = None if holding else locator.locate(ref)
        docs.extend(holding or ([got.doc_id] if got is not None else []))
    if docs:
        return list(dict.fromkeys(docs)), "reference_contexts"
    answer = row.reference.strip()
    if answer and not is_unanswerable_text(answer):
        holding = locator.find_text(answer)
        if 0 < len(holding) <= _MAX_ANSWER_DOCS:
            return holding, "answer_in_document"
        best = locator.cover(answer, _MIN_ANSWER_RECALL, _MAX_ANSWER_DOCS)
        if best:
            return best, "answer_words_in_document"
    return [], "none"


def _observable(row: ImportedRow, chunking: bool) -> tuple[list[str], dict[str, str]]:
    stages = [Stage.RETRIEVAL.value, Stage.GENERATION.value]
    why: dict[str, str] = {}
    if chunking:
        stages.insert(0, Stage.CHUNKING.value)
    reranking = row.retrieved is not None and (
        row.reranked is not None
        or [p.text for p in row.retrieved] != [p.text for p in row.contexts]
    )
    if reranking:
        stages.insert(-1, Stage.RERANKING.value)
    else:
        why[Stage.RERANKING.value] = (
            "the source records only the passages given to the generator, not the "
            "retriever's list before reranking"
        )
    return stages, why


class _Builder:
    def __init__(self, rows: Sequence[ImportedRow], documents: Sequence[Document] | None) -> None:
        self.rows = rows
        self.locator = Locator(documents) if documents is not None else None
        self.stats = ImportStats(rows=len(rows))
        self.doc_chunks: dict[str, list[Chunk]] = {}
        self.chunk_by_id: dict[str, Chunk] = {}
        self.located: dict[tuple[str, str | None], Located | None] = {}
        self.gold: list[tuple[list[str], str]] = []
        if self.locator is not None:
            self._chunk_documents(self.locator)

    def _chunk_documents(self, locator: Locator) -> None:
        spans: dict[str, set[tuple[int, int]]] = {}
        meta: dict[str, dict[str, Any]] = {}
        for row in self.rows:
            for p in _passages(row):
                key = (p.text, p.source_id)
                if key in self.located:
                    continue
                got = locator.locate(p.text, p.source_id)
                self.located[key] = got
                if got is None:
                    continue
                spans.setdefault(got.doc_id, set()).add((got.start, got.end))
                meta[chunk_id_for(got.doc_id, got.start, got.end)] = {
                    "match": got.method,
                    "match_score": got.score,
                    **({"source_id": p.source_id} if p.source_id else {}),
                }
            self.gold.append(_gold_docs(row, locator))
        self.stats.passages.update(g.method if g else "none" for g in self.located.values())
        for _docs, _src in self.gold:
            for d in _docs:
                spans.setdefault(d, set())
        for doc_id, doc_spans in spans.items():
            chunks = partition(locator.documents[doc_id], doc_spans)
            self.doc_chunks[doc_id] = [
                c.model_copy(update={"metadata": {**c.metadata, **meta.get(c.chunk_id, {})}})
                for c in chunks
            ]
            self.chunk_by_id.update((c.chunk_id, c) for c in self.doc_chunks[doc_id])

    def _chunk_of(self, p: RetrievedText) -> Chunk:
        got = self.located.get((p.text, p.source_id)) if self.locator is not None else None
        if got is not None:
            return self.chunk_by_id[chunk_id_for(got.doc_id, got.start, got.end)]
        cid = f"ctx-{_short_hash(p.text + chr(0) + (p.source_id or ''))}"
        return Chunk(
            chunk_id=cid,
            # with documents, a passage found in none of them must not pass for a span
            # of the document its source named: it belongs to no known document
            doc_id=UNLOCATED_DOC if self.locator is not None else (p.source_id or cid),
            text=p.text,
            start=0,
            end=len(p.text),
            index=0,
            metadata={
                "match": "none" if self.locator is not None else "no documents",
                **({"source_id": p.source_id} if p.source_id else {}),
            },
        )

    def trace(self, i: int, row: ImportedRow, run_id: str, fmt: str) -> Trace:
        gold_docs, gold_from = self.gold[i] if self.locator is not None else _gold_docs(row, None)
        answerable = not is_unanswerable_text(row.reference)
        chunking = self.locator is not None and (bool(gold_docs) or not answerable)
        observable, why = _observable(row, chunking)
        if not chunking:
            why[Stage.CHUNKING.value] = (
                "no documents were given (--documents), so the chunks of the gold documents "
                "are unknown"
                if self.locator is None
                else "the gold documents could not be identified (no reference document ids, "
                "no gold evidence or answer found in the documents)"
            )
            self.stats.minimal += 1
        if Stage.RERANKING.value in observable:
            self.stats.reranking_observed += 1
        self.stats.gold_docs_from[gold_from] += 1

        known: dict[str, Chunk] = {}
        scored: Counter[bool] = Counter()

        def hits(passages: Iterable[RetrievedText], *, ranked: bool = True) -> list[Hit]:
            out: list[Hit] = []
            for rank, p in enumerate(passages, 1):
                c = self._chunk_of(p)
                known[c.chunk_id] = c
                # a score the source did not record stays absent: never made up from the rank
                if ranked:
                    scored[p.score is not None] += 1
                out.append(Hit(chunk_id=c.chunk_id, doc_id=c.doc_id, score=p.score, rank=rank))
            return out

        retrieved = hits(row.retrieved if row.retrieved is not None else row.contexts)
        reranked = hits(row.reranked) if row.reranked is not None else []
        context = [h.chunk_id for h in hits(row.contexts, ranked=False)]
        scores = _scores_note(scored)
        gt_doc_chunks = [c for d in gold_docs for c in self.doc_chunks.get(d, [])]
        gt_ids = {c.chunk_id for c in gt_doc_chunks}
        source = row.where.path + (f":{row.where.line}" if row.where.line is not None else "")
        try:
            example = Example(
                example_id=row.row_id,
                query=row.question,
                answer=row.reference if answerable else "",
                answerable=answerable,
                doc_ids=gold_docs,
                references=[r for r in row.reference_contexts if r.strip()],
                label=None if answerable else "unanswerable",
                metadata={"source": source},
            )
            return Trace(
                trace_id=row.row_id,
                run_id=run_id,
                example=example,
                gt_doc_chunks=gt_doc_chunks,
                chunks=[c for cid, c in known.items() if cid not in gt_ids],
                retrieved=retrieved,
                reranked=reranked,
                context=context,
                answer=row.answer,
                stages={k: StageStats.model_validate(_stats(v)) for k, v in row.stages.items()},
                metadata={
                    **dict(row.metadata),
                    "import": {
                        "format": fmt,
                        "source": source,
                        "documents": self.locator is not None,
                        "gold_docs_from": gold_from,
                        "scores": scores,
                    },
                    "observable_stages": list(observable),
                    "not_observable": dict(why),
                },
            )
        except ValidationError as exc:
            raise row.where.wrap(
                validation_to_input_error(exc, path=row.where.path, line=row.where.line)
            ) from exc


def _scores_note(scored: Counter[bool]) -> str:
    """What ``metadata.import.scores`` says of the ranked lists' scores."""
    if not scored:
        return "no ranked passages"
    if not scored[False]:
        return "given"
    if not scored[True]:
        return "not recorded (the source gives none: the hits have no score)"
    return "partly recorded (the hits the source gave no score have none)"


def _stats(v: Mapping[str, float]) -> dict[str, float | int]:
    return {
        "latency_ms": float(v.get("latency_ms", 0.0)),
        "prompt_tokens": int(v.get("prompt_tokens", 0)),
        "completion_tokens": int(v.get("completion_tokens", 0)),
        "calls": int(v.get("calls", 0)),
    }


def build_traces(
    rows: Sequence[ImportedRow],
    documents: Sequence[Document] | None,
    *,
    run_id: str,
    fmt: str,
) -> tuple[list[Trace], ImportStats]:
    """Traces for ``rows`` (see the module docstring); duplicate row ids are errors."""
    seen: dict[str, ImportedRow] = {}
    for row in rows:
        if row.row_id in seen:
            first = seen[row.row_id].where
            raise row.where.error(
                "id", f"duplicate id {row.row_id!r} (first at {first.path}:{first.line})"
            )
        seen[row.row_id] = row
    b = _Builder(rows, documents)
    traces = [b.trace(i, row, run_id, fmt) for i, row in enumerate(rows)]
    return traces, b.stats
