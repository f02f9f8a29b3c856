"""Live capture from LlamaIndex: :func:`instrument` (``pip install 'ragtriage[llamaindex]'``).

``capture = instrument("runs/live")`` registers an event handler and a span handler
on LlamaIndex's instrumentation dispatcher (``llama_index.core.instrumentation``);
every top-level query (``QueryStartEvent`` ... ``QueryEndEvent`` of a query engine)
becomes one trace in ``traces.jsonl``:

- the question: the query string;
- retrieval: the outermost retriever's ``RetrievalEndEvent`` nodes (node ids, scores);
- reranking: the output of the last node postprocessor (a reranker, a similarity
  cutoff, ...), read from its ``_postprocess_nodes`` span's result, with its latency;
- the generator's context: the final nodes that the last LLM prompt holds
  (``LLMChatStartEvent`` messages / ``LLMCompletionStartEvent`` prompt), in prompt
  order; the answer: the query's response text;
- latencies (retrieval and LLM start/end events, postprocessor spans) and the token
  usage an LLM reports (``raw["usage"]`` or ``additional_kwargs``).

Retrieval outside a query engine (a chat engine, a pipeline in an own
``@dispatcher.span`` function) is one run per top-level span that retrieved and called
an LLM: the question is the retriever's query, the answer the synthesizer's response
(else the last LLM output); it is written when the span ends.

``capture.detach()`` (or leaving ``with instrument(...)``) removes the handlers.
Capture errors are logged (logger ``ragtriage.integrations``), never raised into the
query.
"""

from __future__ import annotations

import inspect
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

# both are re-exported by llama_index.core without __all__ (mypy: not explicit)
from llama_index.core.instrumentation import get_dispatcher  # type: ignore[attr-defined]
from llama_index.core.instrumentation.dispatcher import Dispatcher  # type: ignore[attr-defined]
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events import BaseEvent
from llama_index.core.instrumentation.events.llm import (
    LLMChatEndEvent,
    LLMChatStartEvent,
    LLMCompletionEndEvent,
    LLMCompletionStartEvent,
)
from llama_index.core.instrumentation.events.query import QueryEndEvent, QueryStartEvent
from llama_index.core.instrumentation.events.retrieval import (
    RetrievalEndEvent,
    RetrievalStartEvent,
)
from llama_index.core.instrumentation.events.synthesis import SynthesizeEndEvent
from llama_index.core.instrumentation.span import SimpleSpan
from llama_index.core.instrumentation.span_handlers import BaseSpanHandler
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore

from ragtriage.integrations._live import (
    CaptureBase,
    LiveRun,
    LLMCall,
    TraceSink,
    content_text,
    passage,
)
from ragtriage.integrations._rows import RetrievedText

__all__ = ["LlamaIndexCapture", "instrument"]


def _query_text(query: Any) -> str | None:
    if isinstance(query, str):
        return query
    text = getattr(query, "query_str", None)
    return text if isinstance(text, str) else None


def _passages(nodes: Sequence[Any], run: LiveRun) -> list[RetrievedText]:
    out: list[RetrievedText] = []
    for n in nodes:
        if not isinstance(n, NodeWithScore):
            continue
        node = n.node
        if node.ref_doc_id:
            run.doc_of[node.node_id] = node.ref_doc_id
        out.append(passage(node.get_content(), node.node_id, node.metadata, n.score))
    return out


def _usage(response: Any) -> tuple[int, int]:
    """(prompt, completion) tokens an LLM response reports; (0, 0) when none."""
    if response is None:
        return 0, 0
    raw = getattr(response, "raw", None)
    usage = raw.get("usage") if isinstance(raw, Mapping) else getattr(raw, "usage", None)
    if usage is not None and not isinstance(usage, Mapping):
        usage = {
            k: getattr(usage, k, None)
            for k in ("prompt_tokens", "completion_tokens", "input_tokens", "output_tokens")
        }
    extra = getattr(response, "additional_kwargs", None) or {}
    for source in (usage, extra):
        if isinstance(source, Mapping):
            p = source.get("prompt_tokens") or source.get("input_tokens")
            c = source.get("completion_tokens") or source.get("output_tokens")
            if isinstance(p, int) or isinstance(c, int):
                return (p if isinstance(p, int) else 0), (c if isinstance(c, int) else 0)
    return 0, 0


class LlamaIndexCapture(CaptureBase):
    """Turns LlamaIndex instrumentation into traces (see the module docstring).

    ``out``: a run directory (``out/traces.jsonl``) or a ``.jsonl`` file;
    ``references``: gold answers by question (:meth:`set_reference` adds one).
    """

    def __init__(
        self,
        out: str | Path = "traces.jsonl",
        *,
        references: Mapping[str, str] | None = None,
        run_id: str = "live",
    ) -> None:
        self.sink = TraceSink(out, fmt="llamaindex", run_id=run_id, references=references)
        self._lock = threading.RLock()
        self._root: dict[str, str] = {}  # span -> its top-level span
        self._parent: dict[str, str | None] = {}
        self._members: dict[str, set[str]] = {}  # top-level span -> its spans
        self._start: dict[str, float] = {}
        self._runs: dict[str, LiveRun] = {}  # top-level span -> run
        self._query_span: dict[str, str] = {}  # top-level span -> the query's span
        self._retrieval: dict[str, float] = {}  # open retrieval span -> start
        self._llm: dict[str, LLMCall] = {}  # open LLM span -> call
        self._events = _Events()
        self._events.capture = self
        self._spans = _Spans()
        self._spans.capture = self
        self._dispatcher: Dispatcher | None = None

    def attach(self, dispatcher: Dispatcher | None = None) -> LlamaIndexCapture:
        """Register the handlers on ``dispatcher`` (the root dispatcher by default)."""
        if self._dispatcher is not None:
            return self
        d = dispatcher or get_dispatcher()
        d.add_event_handler(self._events)
        d.add_span_handler(self._spans)
        self._dispatcher = d
        return self

    def detach(self) -> None:
        """Remove the handlers (runs still open are dropped)."""
        d, self._dispatcher = self._dispatcher, None
        if d is None:
            return
        if self._events in d.event_handlers:
            d.event_handlers.remove(self._events)
        if self._spans in d.span_handlers:
            d.span_handlers.remove(self._spans)

    def __enter__(self) -> LlamaIndexCapture:
        return self.attach()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.detach()

    # ---------------------------------------------------------------- spans

    def _ancestors(self, span_id: str | None) -> list[str]:
        out: list[str] = []
        p = self._parent.get(span_id) if span_id is not None else None
        while p is not None:
            out.append(p)
            p = self._parent.get(p)
        return out

    def _run_of(self, span_id: str | None) -> LiveRun | None:
        root = self._root.get(span_id) if span_id is not None else None
        return self._runs.get(root) if root is not None else None

    def span_enter(self, span_id: str, parent_id: str | None) -> None:
        with self.sink.guard("span enter"), self._lock:
            root = self._root.get(parent_id, span_id) if parent_id is not None else span_id
            self._root[span_id] = root
            self._parent[span_id] = parent_id if parent_id in self._root else None
            self._members.setdefault(root, set()).add(span_id)
            self._start[span_id] = time.perf_counter()

    def span_exit(self, span_id: str, instance: Any, result: Any) -> None:
        finished: LiveRun | None = None
        with self.sink.guard("span exit"), self._lock:
            started = self._start.pop(span_id, None)
            root = self._root.get(span_id)
            if (
                isinstance(instance, BaseNodePostprocessor)
                and span_id.startswith(f"{type(instance).__name__}._postprocess_nodes-")
                and isinstance(result, list)
            ):
                run = self._run_of(span_id)
                if run is not None and run.retrieved is not None and started is not None:
                    run.add_rerank(_passages(result, run), time.perf_counter() - started)
                    names = run.metadata.setdefault("postprocessors", [])
                    names.append(type(instance).__name__)
            if root == span_id:
                run = self._runs.pop(root, None)
                if run is not None and root not in self._query_span and run.llm_calls:
                    finished = run  # a chat engine / own pipeline: its top-level span ended
                for s in self._members.pop(root, {span_id}):
                    self._root.pop(s, None)
                    self._parent.pop(s, None)
                    self._start.pop(s, None)
                    self._retrieval.pop(s, None)
                    self._llm.pop(s, None)
                self._query_span.pop(root, None)  # a query that never ended (error)
        if finished is not None:
            self.sink.write(finished)

    # ---------------------------------------------------------------- events

    def event(self, event: BaseEvent) -> None:
        finished: LiveRun | None = None
        with self.sink.guard(f"{type(event).__name__}"), self._lock:
            span = event.span_id
            root = self._root.get(span) if span is not None else None
            if root is None or span is None:
                return
            if isinstance(event, QueryStartEvent):
                if root not in self._runs:
                    self._runs[root] = LiveRun(key=root, question=_query_text(event.query))
                    self._query_span[root] = span
                return
            run = self._runs.get(root)
            if run is None and isinstance(event, RetrievalStartEvent):
                # retrieval outside a query engine (a chat engine, an own pipeline): the
                # run is the top-level span, the question the retriever's query
                run = LiveRun(key=root, question=_query_text(event.str_or_query_bundle))
                run.metadata["question_from"] = "retriever query"
                self._runs[root] = run
            if run is None:
                return
            if isinstance(event, QueryEndEvent):
                if self._query_span.get(root) == span:
                    response = event.response
                    text = getattr(response, "response", None)
                    run.answer = text if isinstance(text, str) else str(response)
                    finished = self._runs.pop(root)
                    self._query_span.pop(root, None)
            elif isinstance(event, SynthesizeEndEvent) and root not in self._query_span:
                text = getattr(event.response, "response", None)
                if isinstance(text, str):
                    run.answer = text
            elif isinstance(event, RetrievalStartEvent):
                self._retrieval[span] = time.perf_counter()
            elif isinstance(event, RetrievalEndEvent):
                started = self._retrieval.pop(span, None)
                if any(a in self._retrieval for a in self._ancestors(span)):
                    return  # a retriever inside another one: the outer list counts
                took = time.perf_counter() - started if started is not None else 0.0
                run.add_retrieval(_passages(event.nodes, run), took)
            elif isinstance(event, LLMChatStartEvent | LLMCompletionStartEvent):
                if any(a in self._llm for a in self._ancestors(span)):
                    return  # e.g. complete() implemented with chat(): one call
                if isinstance(event, LLMChatStartEvent):
                    prompt = "\n".join(content_text(m.content) for m in event.messages)
                else:
                    prompt = event.prompt
                call = LLMCall(prompt=prompt, started=time.perf_counter())
                run.llm_calls.append(call)
                self._llm[span] = call
            elif isinstance(event, LLMChatEndEvent | LLMCompletionEndEvent):
                ended = self._llm.pop(span, None)
                if ended is None:
                    return
                ended.ended = time.perf_counter()
                if isinstance(event, LLMChatEndEvent):
                    chat = event.response
                    ended.output = content_text(chat.message.content) if chat else ""
                    ended.prompt_tokens, ended.completion_tokens = _usage(chat)
                else:
                    ended.output = event.response.text
                    usage = _usage(event.response)
                    ended.prompt_tokens, ended.completion_tokens = usage
        if finished is not None:
            self.sink.write(finished)


class _Events(BaseEventHandler):
    capture: Any = None

    @classmethod
    def class_name(cls) -> str:
        return "RagtriageEvents"

    def handle(self, event: BaseEvent, **kwargs: Any) -> Any:
        capture = self.capture
        if isinstance(capture, LlamaIndexCapture):
            capture.event(event)


class _Spans(BaseSpanHandler[SimpleSpan]):
    capture: Any = None

    @classmethod
    def class_name(cls) -> str:
        return "RagtriageSpans"

    def new_span(
        self,
        id_: str,
        bound_args: inspect.BoundArguments,
        instance: Any | None = None,
        parent_span_id: str | None = None,
        tags: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> SimpleSpan | None:
        if isinstance(self.capture, LlamaIndexCapture):
            self.capture.span_enter(id_, parent_span_id)
        return SimpleSpan(id_=id_, parent_id=parent_span_id)

    def prepare_to_exit_span(
        self,
        id_: str,
        bound_args: inspect.BoundArguments,
        instance: Any | None = None,
        result: Any | None = None,
        **kwargs: Any,
    ) -> SimpleSpan | None:
        if isinstance(self.capture, LlamaIndexCapture):
            self.capture.span_exit(id_, instance, result)
        return self.open_spans.get(id_)

    def prepare_to_drop_span(
        self,
        id_: str,
        bound_args: inspect.BoundArguments,
        instance: Any | None = None,
        err: BaseException | None = None,
        **kwargs: Any,
    ) -> SimpleSpan | None:
        if isinstance(self.capture, LlamaIndexCapture):
            self.capture.span_exit(id_, None, None)
        return self.open_spans.get(id_)


def instrument(
    out: str | Path = "traces.jsonl",
    *,
    references: Mapping[str, str] | None = None,
    run_id: str = "live",
    dispatcher: Dispatcher | None = None,
) -> LlamaIndexCapture:
    """Start capturing LlamaIndex queries into ``out`` (see the module docstring)."""
    return LlamaIndexCapture(out, references=references, run_id=run_id).attach(dispatcher)
