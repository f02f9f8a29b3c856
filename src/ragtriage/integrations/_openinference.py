"""OpenInference spans as Phoenix exports them (JSON array or JSON Lines, one span per
row), grouped into traces by ``context.trace_id``.

Span fields read (OpenInference semantic conventions): ``span_kind`` (or the
``openinference.span.kind`` attribute) RETRIEVER / RERANKER / LLM / CHAIN;
``retrieval.documents.N.document.{content,id,score}``;
``reranker.output_documents.N.document.{content,id,score}``; ``input.value`` and
``output.value``; ``llm.input_messages.N.message.content`` (the prompt: it tells which
passages reached the generator); ``llm.token_count.{prompt,completion}``;
``start_time`` / ``end_time``; ``parent_id`` (the root span holds the question and the
final answer). Attributes may be nested objects, lists, or flattened dotted keys
(``attributes.retrieval.documents``), as the exporter wrote them. An OTLP JSON export
(``resourceSpans`` / ``scopeSpans`` / ``spans`` with ``key``/``value`` attribute lists,
as an OpenTelemetry collector's file exporter writes it) is read too.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ragtriage.integrations._rows import ImportedRow, RetrievedText, Where
from ragtriage.integrations._spans import (
    GoldTable,
    SpanRow,
    check_nonempty,
    gold_from_mapping,
    parse_time,
    query_text,
)
from ragtriage.integrations._tabular import read_table

__all__ = ["read_openinference"]


def _flatten(prefix: str, value: Any, out: dict[str, Any]) -> None:
    if isinstance(value, Mapping):
        for k, v in value.items():
            _flatten(f"{prefix}.{k}" if prefix else str(k), v, out)
    elif isinstance(value, list) and value and all(isinstance(v, Mapping) for v in value):
        for i, v in enumerate(value):
            _flatten(f"{prefix}.{i}", v, out)
    else:
        out[prefix] = value


def _json_text(value: Any) -> Any:
    """A value an exporter may have written as a JSON string (attributes, metadata)
    decoded; ``None`` when such a string is not JSON."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        return None


def _attributes(span: Mapping[str, Any]) -> dict[str, Any]:
    """All attributes as flat dotted keys (nested objects, lists of objects and
    ``attributes.``-prefixed dataframe columns alike)."""
    out: dict[str, Any] = {}
    attrs = _json_text(span.get("attributes"))
    if isinstance(attrs, Mapping):
        _flatten("", attrs, out)
    for k, v in span.items():
        if k.startswith("attributes.") and v is not None:
            _flatten(k.removeprefix("attributes."), v, out)
    return out


def _get(span: Mapping[str, Any], dotted: str) -> Any:
    """``span["context"]["trace_id"]`` or ``span["context.trace_id"]``."""
    if dotted in span:
        return span[dotted]
    head, _, rest = dotted.partition(".")
    inner = span.get(head)
    if rest and isinstance(inner, Mapping):
        return _get(inner, rest)
    return None


def _documents(attrs: Mapping[str, Any], prefix: str, where: Where) -> list[RetrievedText] | None:
    indices = sorted(
        {
            int(k[len(prefix) + 1 :].split(".", 1)[0])
            for k in attrs
            if k.startswith(prefix + ".") and k[len(prefix) + 1 :].split(".", 1)[0].isdigit()
        }
    )
    if not indices:
        return None
    out: list[RetrievedText] = []
    for i in indices:
        base = f"{prefix}.{i}.document"
        content = attrs.get(f"{base}.content")
        if not isinstance(content, str):
            raise where.error(f"attributes.{base}.content", "missing document content")
        raw_id = attrs.get(f"{base}.id")
        raw_score = attrs.get(f"{base}.score")
        score: float | None = None
        if raw_score is not None:
            try:
                score = float(raw_score)
            except (TypeError, ValueError) as exc:
                raise where.error(
                    f"attributes.{base}.score", f"not a number: {raw_score!r}"
                ) from exc
        out.append(RetrievedText(content, None if raw_id is None else str(raw_id), score))
    return out


def _prompt(attrs: Mapping[str, Any]) -> str:
    parts = [
        v
        for k, v in sorted(attrs.items())
        if k.startswith("llm.input_messages.")
        and k.endswith("message.content")
        and isinstance(v, str)
    ]
    if not parts and isinstance(attrs.get("input.value"), str):
        parts = [attrs["input.value"]]
    return "\n".join(parts)


def _llm_answer(attrs: Mapping[str, Any]) -> str | None:
    for k in ("llm.output_messages.0.message.content", "output.value"):
        v = attrs.get(k)
        if isinstance(v, str):
            return v
    return None


def _int(v: Any) -> int:
    try:
        return max(int(v), 0)
    except (TypeError, ValueError):
        return 0


def _otlp_value(value: Any) -> Any:
    """An OTLP JSON ``AnyValue`` (``{"stringValue": ...}``, ``{"intValue": "3"}``,
    ``{"arrayValue": {"values": [...]}}`` ...) as a plain value."""
    if not isinstance(value, Mapping):
        return value
    if "stringValue" in value:
        return value["stringValue"]
    if "intValue" in value:
        try:
            return int(value["intValue"])
        except (TypeError, ValueError):
            return None
    for k in ("doubleValue", "boolValue"):
        if k in value:
            return value[k]
    if "arrayValue" in value:
        inner = value["arrayValue"]
        items = inner.get("values", []) if isinstance(inner, Mapping) else []
        return [_otlp_value(v) for v in items]
    return None


def _otlp_spans(obj: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """Spans of an OTLP JSON export (``{"resourceSpans": [{"scopeSpans": [{"spans":
    [...]}]}]}``, as an OpenTelemetry collector's file exporter writes them) in the
    shape the rest of this module reads."""
    for rs in obj.get("resourceSpans") or []:
        for ss in (rs or {}).get("scopeSpans") or []:
            for sp in (ss or {}).get("spans") or []:
                attrs = {
                    str(a.get("key")): _otlp_value(a.get("value"))
                    for a in sp.get("attributes") or []
                    if isinstance(a, Mapping)
                }
                yield {
                    "name": sp.get("name"),
                    "context": {"trace_id": sp.get("traceId"), "span_id": sp.get("spanId")},
                    "parent_id": sp.get("parentSpanId") or None,
                    "start_time": _nanos(sp.get("startTimeUnixNano")),
                    "end_time": _nanos(sp.get("endTimeUnixNano")),
                    "attributes": attrs,
                }


def _nanos(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _spans(
    path: str | Path, records_key: str | None = None
) -> Iterator[tuple[Where, Mapping[str, Any]]]:
    for loc, obj in read_table(path, records_key=records_key):
        if "resourceSpans" in obj:
            for span in _otlp_spans(obj):
                yield loc, span
        elif "scopeSpans" in obj:  # one ResourceSpans of an export's list
            for span in _otlp_spans({"resourceSpans": [obj]}):
                yield loc, span
        else:
            yield loc, obj


def read_openinference(
    path: str | Path, golds: GoldTable | None = None, *, records_key: str | None = None
) -> Iterator[ImportedRow]:
    """One row per trace id, in order of first appearance."""
    groups: dict[str, list[tuple[Where, Mapping[str, Any]]]] = {}
    for loc, obj in _spans(path, records_key):
        tid = _get(obj, "context.trace_id") or obj.get("trace_id") or obj.get("traceId")
        if not tid:
            raise loc.error("context.trace_id", "span without a trace id")
        groups.setdefault(str(tid), []).append((loc, obj))
    rows: list[ImportedRow] = []
    for tid, spans in groups.items():
        spans.sort(key=lambda ws: parse_time(ws[1].get("start_time")) or 0.0)
        row = SpanRow(spans[0][0], tid)
        for where, span in spans:
            attrs = _attributes(span)
            kind = str(span.get("span_kind") or attrs.get("openinference.span.kind") or "").upper()
            start = parse_time(span.get("start_time"))
            end = parse_time(span.get("end_time"))
            is_root = not (span.get("parent_id") or _get(span, "context.parent_id"))
            if is_root:
                row.where = where
                q = query_text(attrs.get("input.value"))
                row.question = q or row.question
                out = attrs.get("output.value")
                if isinstance(out, str):
                    row.final_answer = out
                meta = _json_text(attrs.get("metadata"))
                if isinstance(meta, Mapping):
                    row.gold = gold_from_mapping(meta, where, "attributes.metadata.") or row.gold
            if kind == "RETRIEVER":
                docs = _documents(attrs, "retrieval.documents", where) or []
                row.retrieved = [*(row.retrieved or []), *docs]
                row.question = row.question or query_text(attrs.get("input.value"))
                row.add_stage("retrieval", start, end)
            elif kind == "RERANKER":
                row.reranked = _documents(attrs, "reranker.output_documents", where) or []
                if row.retrieved is None:
                    row.retrieved = _documents(attrs, "reranker.input_documents", where)
                row.add_stage("reranking", start, end)
            elif kind == "LLM":
                row.prompt = _prompt(attrs)
                row.answer = _llm_answer(attrs) or row.answer
                row.add_stage(
                    "generation",
                    start,
                    end,
                    _int(attrs.get("llm.token_count.prompt")),
                    _int(attrs.get("llm.token_count.completion")),
                )
        rows.append(row.finish(golds, "openinference"))
    check_nonempty(rows, path)
    yield from rows
