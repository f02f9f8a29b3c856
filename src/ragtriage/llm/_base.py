"""The LLM client protocol: one tiny async interface every backend implements.

A backend turns a :class:`ChatRequest` into a :class:`Completion`. Everything else —
concurrency limits, retries, timeouts, the response cache, the cost ledger — wraps
any client from the outside (see ``ragtriage.llm.runner``), the way httpx wraps one
small transport.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "ChatRequest",
    "Completion",
    "LLMClient",
    "Message",
    "Usage",
]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class Message(_Frozen):
    role: Literal["system", "user", "assistant"]
    content: str


class ChatRequest(_Frozen):
    """One chat request. ``n`` asks for that many samples of the same prompt."""

    messages: tuple[Message, ...]
    model: str = ""
    temperature: float = 0.0
    max_tokens: int = 512
    n: int = Field(default=1, ge=1)
    seed: int | None = None
    json_schema: dict[str, Any] | None = None
    stop: tuple[str, ...] = ()

    @classmethod
    def of(cls, system: str | None, user: str, **kw: Any) -> ChatRequest:
        msgs = ([Message(role="system", content=system)] if system else []) + [
            Message(role="user", content=user)
        ]
        return cls(messages=tuple(msgs), **kw)

    def canonical_json(self) -> str:
        """Canonical JSON (sorted keys, no spaces) — the basis of cache keys."""
        return json.dumps(
            self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"), ensure_ascii=False
        )

    def cache_key(self, sample_index: int = 0) -> str:
        """sha256 over the canonical request plus the sample index, so the K samples of
        one prompt are distinct cache entries yet reproducible."""
        blob = f"{self.canonical_json()}#sample={sample_index}"
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class Usage(_Frozen):
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
        )


class Completion(_Frozen):
    """The answer to a :class:`ChatRequest`: ``len(texts) == request.n``."""

    texts: tuple[str, ...]
    usage: Usage = Field(default_factory=Usage)
    cached: bool = False
    latency_s: float = 0.0
    model: str = ""

    @property
    def text(self) -> str:
        return self.texts[0] if self.texts else ""


@runtime_checkable
class LLMClient(Protocol):
    """Anything that can complete a chat request asynchronously."""

    async def complete(self, request: ChatRequest) -> Completion: ...
