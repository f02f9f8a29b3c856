"""Live capture from LangChain: :class:`TraceCallbackHandler` (``pip install
'ragtriage[langchain]'``).

Pass the handler in a chain's config (``chain.invoke(q, config={"callbacks": [h]})``)
and every top-level chain run becomes one trace in ``traces.jsonl``:

- the question: the chain's input (a string, or the ``question`` / ``query`` /
  ``input`` field of a dict), else the retriever's query;
- retrieval: the innermost retriever's documents, with ``Document.id`` (else an id in
  the metadata) and a score from the metadata (``score``, ``relevance_score``, ...);
- reranking: a retriever that wraps another (a compression retriever: its output), or
  a chain step that takes documents and returns documents (a reranker / compressor
  step, e.g. a ``RunnableLambda``); the last one is the reranked list;
- the generator's context: the final list's passages that the last LLM prompt holds,
  in prompt order; the answer: the chain's string output (else the last LLM output);
- latencies per stage and the LLM's token usage when it reports one.

Capture errors are logged (logger ``ragtriage.integrations``), never raised into the
chain.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.messages import BaseMessage
from langchain_core.outputs import LLMResult

from ragtriage.integrations._live import (
    CaptureBase,
    LiveRun,
    LLMCall,
    TraceSink,
    content_text,
    passage,
)
from ragtriage.integrations._rows import RetrievedText

__all__ = ["TraceCallbackHandler"]

_QUESTION_KEYS = ("question", "query", "input", "user_input", "q")
_ANSWER_KEYS = ("answer", "output", "result", "text", "response")


def _question(inputs: Any) -> str | None:
    """The question in a chain's input (``None`` when blank: a streamed run's input
    is given as ``""`` at start and in full with the end event)."""
    if isinstance(inputs, str):
        return inputs if inputs.strip() else None
    if isinstance(inputs, Mapping):
        for k in _QUESTION_KEYS:
            v = inputs.get(k)
            if isinstance(v, str) and v.strip():
                return v
        texts = [v for v in inputs.values() if isinstance(v, str) and v.strip()]
        if len(texts) == 1:
            return texts[0]
    return None


def _answer(outputs: Any) -> str | None:
    if isinstance(outputs, str):
        return outputs
    if isinstance(outputs, BaseMessage):
        return content_text(outputs.content)
    if isinstance(outputs, Mapping):
        for k in _ANSWER_KEYS:
            v = outputs.get(k)
            if isinstance(v, str | BaseMessage):
                return _answer(v)
    return None


def _documents(value: Any) -> list[Document] | None:
    if (
        isinstance(value, Sequence)
        and not isinstance(value, str)
        and value
        and all(isinstance(d, Document) for d in value)
    ):
        return list(value)
    return None


def _has_documents(value: Any) -> bool:
    if _documents(value) is not None:
        return True
    if isinstance(value, Mapping):
        return any(_documents(v) is not None for v in value.values())
    return False


_DOC_KEYS = ("doc_id", "document_id", "source")


def _passages(
    docs: Sequence[Document], run: LiveRun, *, reranked: bool = False
) -> list[RetrievedText]:
    out: list[RetrievedText] = []
    for d in docs:
        ident = getattr(d, "id", None)
        if ident is not None:
            doc = next((d.metadata[k] for k in _DOC_KEYS if d.metadata.get(k) is not None), None)
            if doc is not None:
                run.doc_of[str(ident)] = str(doc)
        out.append(passage(d.page_content, ident, d.metadata, reranked=reranked))
    return out


class TraceCallbackHandler(CaptureBase, BaseCallbackHandler):
    """Writes one ragtriage trace per top-level chain run (see the module docstring).

    ``out``: a run directory (``out/traces.jsonl``) or a ``.jsonl`` file.
    ``references``: gold answers by question; :meth:`set_reference` adds one later.
    ``run_id``: the traces' ``run_id``. :attr:`written` / :attr:`errors` count traces
    written and capture errors logged.
    """

    run_inline = True

    def __init__(
        self,
        out: str | Path = "traces.jsonl",
        *,
        references: Mapping[str, str] | None = None,
        run_id: str = "live",
    ) -> None:
        super().__init__()
        self.sink = TraceSink(out, fmt="langchain", run_id=run_id, references=references)
        self._lock = threading.RLock()
        self._runs: dict[UUID, LiveRun] = {}
        self._root: dict[UUID, UUID] = {}
        self._parent: dict[UUID, UUID | None] = {}
        self._start: dict[UUID, float] = {}
        self._takes_docs: set[UUID] = set()
        self._retrievers: set[UUID] = set()
        self._inner_s: dict[UUID, float] = {}  # outer retriever -> its inner retrievers' time
        self._llm: dict[UUID, LLMCall] = {}

    # ---------------------------------------------------------------- bookkeeping

    def _enter(self, run_id: UUID, parent_run_id: UUID | None) -> LiveRun | None:
        """Register a child run; its top-level run's :class:`LiveRun` (None if untracked)."""
        root = self._root.get(parent_run_id) if parent_run_id is not None else None
        if root is None:
            return None
        self._root[run_id] = root
        self._parent[run_id] = parent_run_id
        self._start[run_id] = time.perf_counter()
        return self._runs.get(root)

    def _leave(self, run_id: UUID) -> tuple[LiveRun | None, float]:
        root = self._root.pop(run_id, None)
        self._parent.pop(run_id, None)
        started = self._start.pop(run_id, None)
        took = time.perf_counter() - started if started is not None else 0.0
        return (self._runs.get(root) if root is not None else None), took

    def _retriever_ancestor(self, run_id: UUID) -> UUID | None:
        p = self._parent.get(run_id)
        while p is not None:
            if p in self._retrievers:
                return p
            p = self._parent.get(p)
        return None

    # ---------------------------------------------------------------- chains

    def on_chain_start(
        self,
        serialized: dict[str, Any],
        inputs: dict[str, Any],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> Any:
        with self.sink.guard("on_chain_start"), self._lock:
            if parent_run_id is None or parent_run_id not in self._root:
                run = LiveRun(key=str(run_id), question=_question(inputs))
                name = kwargs.get("name")
                if isinstance(name, str):
                    run.metadata["chain"] = name
                self._runs[run_id] = run
                self._root[run_id] = run_id
                self._parent[run_id] = None
                self._start[run_id] = time.perf_counter()
                return
            if self._enter(run_id, parent_run_id) is not None and _has_documents(inputs):
                self._takes_docs.add(run_id)

    def on_chain_end(
        self,
        outputs: dict[str, Any],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> Any:
        finished: LiveRun | None = None
        with self.sink.guard("on_chain_end"), self._lock:
            is_root = self._root.get(run_id) == run_id
            run, took = self._leave(run_id)
            takes_docs = run_id in self._takes_docs
            self._takes_docs.discard(run_id)
            if run is None:
                return
            if is_root:
                question = _question(kwargs.get("inputs"))
                if question is not None:  # the full input of a streamed run
                    run.question = question
                answer = _answer(outputs)
                if answer is not None:
                    run.answer = answer
                finished = self._runs.pop(run_id)
            else:
                docs = _documents(outputs)
                if takes_docs and docs is not None and run.retrieved is not None:
                    run.add_rerank(_passages(docs, run, reranked=True), took)
        if finished is not None:
            self.sink.write(finished)

    def on_chain_error(
        self,
        error: BaseException,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> Any:
        with self.sink.guard("on_chain_error"), self._lock:
            is_root = self._root.get(run_id) == run_id
            self._leave(run_id)
            self._takes_docs.discard(run_id)
            if is_root:  # a failed run has no answer to diagnose
                self._runs.pop(run_id, None)

    # ---------------------------------------------------------------- retrievers

    def on_retriever_start(
        self,
        serialized: dict[str, Any],
        query: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> Any:
        with self.sink.guard("on_retriever_start"), self._lock:
            run = self._enter(run_id, parent_run_id)
            if run is None:
                return
            self._retrievers.add(run_id)
            if run.question is None:
                run.question = query
            queries = run.metadata.setdefault("retriever_queries", [])
            if query not in queries:
                queries.append(query)

    def on_retriever_end(
        self,
        documents: Sequence[Document],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> Any:
        with self.sink.guard("on_retriever_end"), self._lock:
            outer = self._retriever_ancestor(run_id)
            run, took = self._leave(run_id)
            self._retrievers.discard(run_id)
            inner_s = self._inner_s.pop(run_id, None)
            if run is None:
                return
            if inner_s is not None:  # wraps a retriever: a compression / rerank step
                run.add_rerank(_passages(documents, run, reranked=True), took - inner_s)
            elif outer is not None:
                self._inner_s[outer] = self._inner_s.get(outer, 0.0) + took
                run.add_retrieval(_passages(documents, run), took)
            else:
                run.add_retrieval(_passages(documents, run), took)

    def on_retriever_error(
        self,
        error: BaseException,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> Any:
        with self.sink.guard("on_retriever_error"), self._lock:
            self._leave(run_id)
            self._retrievers.discard(run_id)
            self._inner_s.pop(run_id, None)

    # ---------------------------------------------------------------- LLMs

    def _llm_start(self, run_id: UUID, parent_run_id: UUID | None, prompt: str) -> None:
        run = self._enter(run_id, parent_run_id)
        if run is None:
            return
        call = LLMCall(prompt=prompt, started=time.perf_counter())
        run.llm_calls.append(call)
        self._llm[run_id] = call

    def on_llm_start(
        self,
        serialized: dict[str, Any],
        prompts: list[str],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> Any:
        with self.sink.guard("on_llm_start"), self._lock:
            self._llm_start(run_id, parent_run_id, "\n".join(prompts))

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> Any:
        with self.sink.guard("on_chat_model_start"), self._lock:
            prompt = "\n".join(content_text(m.content) for batch in messages for m in batch)
            self._llm_start(run_id, parent_run_id, prompt)

    def on_llm_end(
        self,
        response: LLMResult,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        **kwargs: Any,
    ) -> Any:
        with self.sink.guard("on_llm_end"), self._lock:
            self._leave(run_id)
            call = self._llm.pop(run_id, None)
            if call is None:
                return
            call.ended = time.perf_counter()
            gens = response.generations[0] if response.generations else []
            if gens:
                call.output = gens[0].text
            prompt_tokens, completion_tokens = _usage(response)
            call.prompt_tokens, call.completion_tokens = prompt_tokens, completion_tokens

    def on_llm_error(
        self,
        error: BaseException,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        **kwargs: Any,
    ) -> Any:
        with self.sink.guard("on_llm_error"), self._lock:
            self._leave(run_id)
            self._llm.pop(run_id, None)


def _usage(response: LLMResult) -> tuple[int, int]:
    """(prompt, completion) tokens the LLM reported: the messages' ``usage_metadata``,
    else ``llm_output["token_usage"]`` (OpenAI style); (0, 0) when it reports none."""
    p = c = 0
    for batch in response.generations:
        for g in batch:
            usage = getattr(getattr(g, "message", None), "usage_metadata", None)
            if isinstance(usage, Mapping):
                p += int(usage.get("input_tokens") or 0)
                c += int(usage.get("output_tokens") or 0)
    if p or c:
        return p, c
    out = response.llm_output or {}
    usage = out.get("token_usage") or out.get("usage")
    if isinstance(usage, Mapping):
        p = int(usage.get("prompt_tokens") or usage.get("input_tokens") or 0)
        c = int(usage.get("completion_tokens") or usage.get("output_tokens") or 0)
    return p, c
