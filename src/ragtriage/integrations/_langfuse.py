"""Langfuse trace exports: a trace downloaded as JSON (``{"id", "input", "output",
"metadata", "observations": [...]}``), a JSON array / JSON Lines of such traces, or a
flat export of observations (each with its ``traceId``).

Observations read: ``type`` (``RETRIEVER``, ``GENERATION``, ``SPAN`` ...), ``name``
(a span named like ``retriever`` / ``rerank`` counts as that stage when the type is a
plain span), ``input``, ``output`` (retrieved passages: a list of strings or of
``{"page_content"|"content"|"text", "metadata", "score", "id"}`` objects),
``startTime`` / ``endTime`` and ``usage`` / ``usageDetails`` (``input``, ``output``).
The trace's ``input`` is the question, its ``output`` the answer (else the last
generation's), and its ``metadata.reference`` (or ``ground_truth`` /
``expected_output``) the gold answer unless ``--references`` gives it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ragtriage.integrations._rows import ImportedRow, Where, retrieved_list
from ragtriage.integrations._spans import (
    GoldTable,
    SpanRow,
    check_nonempty,
    gold_from_mapping,
    parse_time,
    query_text,
)
from ragtriage.integrations._tabular import read_table

__all__ = ["read_langfuse"]


def _text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        for k in ("content", "output", "text", "answer", "completion"):
            if isinstance(value.get(k), str):
                return str(value[k])
        choices = value.get("choices")
        if isinstance(choices, list) and choices:
            return _text(choices[0].get("message") if isinstance(choices[0], Mapping) else None)
    if isinstance(value, list) and value:
        return _text(value[-1])
    return None


def _prompt(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)


def _usage(obs: Mapping[str, Any]) -> tuple[int, int]:
    u = obs.get("usageDetails") or obs.get("usage") or {}
    if not isinstance(u, Mapping):
        return 0, 0

    def num(*keys: str) -> int:
        for k in keys:
            v = u.get(k)
            if isinstance(v, int | float) and not isinstance(v, bool):
                return max(int(v), 0)
        return 0

    return num("input", "promptTokens", "prompt_tokens"), num(
        "output", "completionTokens", "completion_tokens"
    )


def _stage_of(obs: Mapping[str, Any]) -> str | None:
    kind = str(obs.get("type") or "").upper()
    name = str(obs.get("name") or "").lower()
    if kind == "GENERATION":
        return "generation"
    if "rerank" in name:
        return "reranking"
    if kind == "RETRIEVER" or "retriev" in name:
        return "retrieval"
    return None


def _traces(path: Path, records_key: str | None) -> Iterator[tuple[Where, dict[str, Any]]]:
    """Traces with their observations; a flat observation export is grouped by traceId."""
    loose: dict[str, tuple[Where, dict[str, Any]]] = {}
    for where, obj in read_table(path, records_key=records_key):
        if "observations" in obj or "traceId" not in obj:
            yield where, obj
            continue
        tid = str(obj["traceId"])
        if tid not in loose:
            loose[tid] = (where, {"id": tid, "observations": []})
        loose[tid][1]["observations"].append(obj)
    yield from loose.values()


def read_langfuse(
    path: str | Path, golds: GoldTable | None = None, *, records_key: str | None = None
) -> Iterator[ImportedRow]:
    rows: list[ImportedRow] = []
    for where, trace in _traces(Path(path), records_key):
        tid = trace.get("id")
        if not tid:
            raise where.error("id", "trace without an id")
        row = SpanRow(where, str(tid))
        row.question = query_text(trace.get("input"))
        row.final_answer = _text(trace.get("output"))
        meta = trace.get("metadata")
        if isinstance(meta, Mapping):
            row.gold = gold_from_mapping(meta, where, "metadata.")
        observations = trace.get("observations")
        if not isinstance(observations, list):
            raise where.error("observations", "expected a list of observations")
        ordered = sorted(
            (o for o in observations if isinstance(o, Mapping)),
            key=lambda o: parse_time(o.get("startTime")) or 0.0,
        )
        for i, obs in enumerate(ordered):
            stage = _stage_of(obs)
            if stage is None:
                continue
            start, end = parse_time(obs.get("startTime")), parse_time(obs.get("endTime"))
            loc = f"observations.{i}"
            if stage == "retrieval":
                docs = list(retrieved_list(obs.get("output"), where, f"{loc}.output"))
                row.retrieved = [*(row.retrieved or []), *docs]
                row.question = row.question or query_text(obs.get("input"))
                row.add_stage("retrieval", start, end)
            elif stage == "reranking":
                row.reranked = list(retrieved_list(obs.get("output"), where, f"{loc}.output"))
                row.add_stage("reranking", start, end)
            else:
                row.prompt = _prompt(obs.get("input"))
                row.answer = _text(obs.get("output")) or row.answer
                p, c = _usage(obs)
                row.add_stage("generation", start, end, p, c)
        rows.append(row.finish(golds, "langfuse"))
    check_nonempty(rows, path)
    yield from rows
