"""The JSON body of one chat-completion request, as sent to an OpenAI-compatible endpoint.

Shared by the live client (:mod:`ragtriage.llm._openai`) and batch export
(:mod:`ragtriage.llm._batch`), so an exported request is byte for byte what the live path
would post. Pure: no SDK import.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from ragtriage.llm._base import ChatRequest

__all__ = ["SchemaMode", "chat_payload"]

#: how a request's JSON schema travels: as ``response_format`` json_schema, appended to
#: the last user message (endpoints that reject response_format), or not at all
SchemaMode = Literal["response_format", "prompt", "none"]

_SCHEMA_NAME = re.compile(r"[^a-zA-Z0-9_-]")


def chat_payload(
    request: ChatRequest,
    *,
    model: str,
    n: int,
    seed: int | None,
    schema_mode: SchemaMode | str,
) -> dict[str, Any]:
    """The ``/chat/completions`` body of ``request`` (``model`` when the request names
    none), asking for ``n`` samples with ``seed``."""
    messages = [{"role": m.role, "content": m.content} for m in request.messages]
    schema = request.json_schema
    payload: dict[str, Any] = {
        "model": request.model or model,
        "temperature": request.temperature,
        "max_tokens": request.max_tokens,
    }
    if n > 1:
        payload["n"] = n
    if seed is not None:
        payload["seed"] = seed
    if request.stop:
        payload["stop"] = list(request.stop)
    if schema is not None and schema_mode == "response_format":
        title = str(schema.get("title") or "response")
        payload["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": _SCHEMA_NAME.sub("_", title)[:64], "schema": schema},
        }
    elif schema is not None and schema_mode == "prompt":
        instruction = (
            "Reply with one JSON object only, no other text, matching this JSON Schema:\n"
            + json.dumps(schema, ensure_ascii=False, sort_keys=True)
        )
        for message in reversed(messages):
            if message["role"] == "user":
                message["content"] = f"{message['content']}\n\n{instruction}"
                break
        else:
            messages.append({"role": "user", "content": instruction})
    payload["messages"] = messages
    return payload
