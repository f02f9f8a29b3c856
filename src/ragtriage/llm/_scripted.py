"""ScriptedLLM: a real, deterministic :class:`LLMClient` driven by a script.

It is meant for tests (ours and users'): it implements the same protocol as the HTTP
client, honours ``n``, counts tokens with :func:`estimate_tokens`, records every request
it receives, and fails loudly with :class:`LLMResponseError` when its script runs out.

A script is one of

* a string — the reply to every sample of every request;
* a sequence of replies, consumed in order, one per sample;
* a callable ``(request, sample_index) -> str``;
* a mapping ``{regex: reply | [replies...]}``: the first regex that matches
  (``re.search``) the last user message picks the reply; a list is consumed in order.

A reply may also be an ``Exception`` instance, which is raised instead — handy to
script transient failures (e.g. ``LLMStatusError("busy", status=503)``).
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from ragtriage.errors import LLMResponseError
from ragtriage.llm._base import ChatRequest, Completion, Usage
from ragtriage.llm._tokens import estimate_prompt_tokens, estimate_tokens

__all__ = ["Script", "ScriptFn", "ScriptItem", "ScriptedLLM"]

ScriptItem = str | Exception
ScriptFn = Callable[[ChatRequest, int], str]
Script = str | Sequence[ScriptItem] | ScriptFn | Mapping[str, ScriptItem | Sequence[ScriptItem]]


@dataclass
class _Rule:
    pattern: re.Pattern[str]
    replies: list[ScriptItem]
    repeat: bool
    used: int = field(default=0)


def _last_user(request: ChatRequest) -> str:
    for message in reversed(request.messages):
        if message.role == "user":
            return message.content
    return ""


def _short(text: str, limit: int = 80) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


class ScriptedLLM:
    """A scripted LLM client. See the module docstring for the script forms.

    ``supports_n=False`` emulates endpoints that ignore ``n`` (one text per call).
    ``delay_s`` makes every call take that long (to exercise timeouts and concurrency).
    """

    def __init__(
        self,
        script: Script,
        *,
        supports_n: bool = True,
        model: str = "scripted",
        delay_s: float = 0.0,
    ) -> None:
        self._supports_n = supports_n
        self._model = model
        self._delay_s = delay_s
        self._requests: list[ChatRequest] = []
        self._constant: str | None = None
        self._fn: ScriptFn | None = None
        self._queue: list[ScriptItem] | None = None
        self._cursor = 0
        self._rules: list[_Rule] | None = None
        if isinstance(script, str):
            self._constant = script
        elif isinstance(script, Mapping):
            self._rules = [
                _Rule(
                    pattern=re.compile(pattern),
                    replies=[reply] if isinstance(reply, str | Exception) else list(reply),
                    repeat=isinstance(reply, str | Exception),
                )
                for pattern, reply in script.items()
            ]
        elif callable(script):
            self._fn = script
        else:
            self._queue = list(script)

    @property
    def model_name(self) -> str:
        return self._model

    @property
    def requests(self) -> tuple[ChatRequest, ...]:
        """Every request received so far, in arrival order."""
        return tuple(self._requests)

    @property
    def remaining(self) -> int | None:
        """Replies left in a sequence script; ``None`` for other script forms."""
        return None if self._queue is None else len(self._queue) - self._cursor

    async def complete(self, request: ChatRequest) -> Completion:
        started = time.perf_counter()
        self._requests.append(request)
        if self._delay_s > 0:
            await asyncio.sleep(self._delay_s)
        samples = request.n if self._supports_n else 1
        if self._queue is not None and self._cursor + samples > len(self._queue):
            raise LLMResponseError(
                f"ScriptedLLM script exhausted: request #{len(self._requests)} needs "
                f"{samples} repl{'y' if samples == 1 else 'ies'} but "
                f"{len(self._queue) - self._cursor} left of {len(self._queue)} "
                f"(last user message: {_short(_last_user(request))!r})"
            )
        texts = tuple(self._reply(request, i) for i in range(samples))
        usage = Usage(
            prompt_tokens=estimate_prompt_tokens(request),
            completion_tokens=sum(estimate_tokens(t) for t in texts),
        )
        return Completion(
            texts=texts,
            usage=usage,
            latency_s=time.perf_counter() - started,
            model=request.model or self._model,
        )

    def _reply(self, request: ChatRequest, sample_index: int) -> str:
        item: ScriptItem
        if self._constant is not None:
            item = self._constant
        elif self._fn is not None:
            item = self._fn(request, sample_index)
            if not isinstance(item, str):
                raise LLMResponseError(
                    f"ScriptedLLM script function returned {type(item).__name__}, expected str"
                )
        elif self._queue is not None:
            item = self._queue[self._cursor]
            self._cursor += 1
        else:
            item = self._from_rules(request)
        if isinstance(item, Exception):
            raise item
        return item

    def _from_rules(self, request: ChatRequest) -> ScriptItem:
        assert self._rules is not None
        message = _last_user(request)
        for rule in self._rules:
            if not rule.pattern.search(message):
                continue
            if rule.repeat:
                return rule.replies[0]
            if rule.used >= len(rule.replies):
                raise LLMResponseError(
                    f"ScriptedLLM rule {rule.pattern.pattern!r} exhausted after "
                    f"{len(rule.replies)} replies (last user message: {_short(message)!r})"
                )
            rule.used += 1
            return rule.replies[rule.used - 1]
        patterns = ", ".join(repr(r.pattern.pattern) for r in self._rules)
        raise LLMResponseError(
            f"ScriptedLLM: no rule matches the last user message {_short(message)!r} "
            f"(rules: {patterns})"
        )
