"""Live capture from a real LlamaIndex query engine: llama-index-core's own
``MockEmbedding`` and ``MockLLM`` over an in-memory ``VectorStoreIndex``, with a
``SimilarityPostprocessor`` and a reranking postprocessor; no network."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("llama_index.core")

from llama_index.core import Document, VectorStoreIndex
from llama_index.core.bridge.pydantic import Field
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms import (
    CompletionResponse,
    CompletionResponseGen,
    CustomLLM,
    LLMMetadata,
    MockLLM,
)
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.postprocessor import SimilarityPostprocessor
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle

from live_helpers import CORPUS, QUESTIONS, read_traces, validate_and_diagnose
from ragtriage.integrations.llamaindex import LlamaIndexCapture, instrument
from ragtriage.text import content_tokens


class OverlapRerank(BaseNodePostprocessor):
    """Keeps the ``top_n`` nodes sharing most content words with the query, scored by
    that overlap; remembers what it was given."""

    top_n: int = 2
    seen: list[list[str]] = Field(default_factory=list)

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        self.seen.append([n.node.node_id for n in nodes])
        q = set(content_tokens(query_bundle.query_str if query_bundle else ""))
        scored = [
            NodeWithScore(node=n.node, score=float(len(q & set(content_tokens(n.node.text)))))
            for n in nodes
        ]
        scored.sort(key=lambda n: n.score or 0.0, reverse=True)
        return scored[: self.top_n]


class UsageLLM(CustomLLM):
    """A completion LLM that reports token usage the way OpenAI-style clients do."""

    answer: str = "Paris"

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(num_output=16, context_window=4096)

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        usage = {"prompt_tokens": len(prompt.split()), "completion_tokens": 1}
        return CompletionResponse(text=self.answer, raw={"usage": usage})

    @llm_completion_callback()
    def stream_complete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponseGen:
        yield self.complete(prompt, formatted=formatted)


def _index() -> VectorStoreIndex:
    docs = [Document(text=t, id_=cid, metadata={"doc": doc}) for cid, doc, t in CORPUS]
    return VectorStoreIndex.from_documents(docs, embed_model=MockEmbedding(embed_dim=8))


def test_query_engine_writes_valid_traces_with_every_stage(tmp_path: Path) -> None:
    index = _index()
    rerank = OverlapRerank(top_n=2, seen=[])
    engine = index.as_query_engine(
        llm=MockLLM(max_tokens=6),
        similarity_top_k=4,
        node_postprocessors=[SimilarityPostprocessor(similarity_cutoff=0.1), rerank],
    )
    with instrument(tmp_path / "run", references=QUESTIONS, run_id="li") as capture:
        responses = [engine.query(q) for q in QUESTIONS]
    assert capture.errors == 0 and capture.written == len(QUESTIONS)
    traces = read_traces(capture.path)
    assert [t["example"]["query"] for t in traces] == list(QUESTIONS)
    for t, r, seen in zip(traces, responses, rerank.seen, strict=True):
        # the retriever's nodes went through the cutoff unchanged into the reranker
        assert [h["chunk_id"] for h in t["retrieved"]] == seen
        assert len(seen) == 4 and all(h["score"] > 0.99 for h in t["retrieved"])
        final = [(n.node.node_id, n.score) for n in r.source_nodes]
        assert [(h["chunk_id"], h["score"]) for h in t["reranked"]] == final
        assert t["context"] == [cid for cid, _s in final]  # both are in the prompt
        chunks = {c["chunk_id"]: c for c in t["chunks"]}
        for h in t["retrieved"]:  # chunk id = node id, doc id = the source document's
            node = index.docstore.get_node(h["chunk_id"])
            assert h["doc_id"] == node.ref_doc_id and chunks[h["chunk_id"]]["text"] == node.text
        assert t["answer"] == r.response
        assert set(t["stages"]) == {"retrieval", "reranking", "generation"}
        assert all(s["latency_ms"] > 0 and s["calls"] >= 1 for s in t["stages"].values())
        assert t["run_id"] == "li"
        assert t["metadata"]["postprocessors"] == ["SimilarityPostprocessor", "OverlapRerank"]
        assert t["metadata"]["observable_stages"] == ["retrieval", "reranking", "generation"]
    validate_and_diagnose(tmp_path / "run", len(QUESTIONS))

    engine.query("What is the capital of France?")  # detached: nothing more is written
    assert len(read_traces(capture.path)) == len(QUESTIONS)


def test_token_usage_and_late_gold_answers(tmp_path: Path) -> None:
    engine = _index().as_query_engine(llm=UsageLLM(), similarity_top_k=2)
    capture = LlamaIndexCapture(tmp_path / "live.jsonl").attach()
    try:
        q = "What is the capital of France?"
        r = engine.query(q)
        assert capture.written == 0 and capture.pending == 1
        capture.set_reference(q, "Paris")
    finally:
        capture.detach()
    (t,) = read_traces(tmp_path / "live.jsonl")
    gen = t["stages"]["generation"]
    assert gen["completion_tokens"] == 1 and gen["prompt_tokens"] > 10
    assert t["answer"] == "Paris" == str(r)
    assert t["reranked"] == [] and "no reranker" in t["metadata"]["not_observable"]["reranking"]
    assert t["context"] == [h["chunk_id"] for h in t["retrieved"]]


def test_a_capture_failure_never_breaks_the_query(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocked = tmp_path / "traces.jsonl"
    blocked.mkdir()
    engine = _index().as_query_engine(llm=UsageLLM(), similarity_top_k=2)
    with (
        caplog.at_level(logging.WARNING, logger="ragtriage.integrations"),
        instrument(blocked, references=QUESTIONS) as capture,
    ):
        r = engine.query("What is the capital of France?")
    assert str(r) == "Paris"
    assert capture.errors == 1 and capture.written == 0
    assert "ragtriage capture" in caplog.text


def test_concurrent_async_queries_are_not_mixed_up(tmp_path: Path) -> None:
    rerank = OverlapRerank(top_n=2)
    engine = _index().as_query_engine(
        llm=MockLLM(max_tokens=4), similarity_top_k=3, node_postprocessors=[rerank]
    )

    async def run_all() -> list[Any]:
        return list(await asyncio.gather(*(engine.aquery(q) for q in QUESTIONS)))

    with instrument(tmp_path, references=QUESTIONS) as capture:
        responses = asyncio.run(run_all())
    assert capture.errors == 0 and capture.written == len(QUESTIONS)
    by_question = {t["example"]["query"]: t for t in read_traces(tmp_path / "traces.jsonl")}
    assert set(by_question) == set(QUESTIONS)
    for q, r in zip(QUESTIONS, responses, strict=True):
        t = by_question[q]
        assert t["context"] == [n.node.node_id for n in r.source_nodes]
        assert len(t["retrieved"]) == 3 and len(t["reranked"]) == 2


def test_chat_engine_runs_are_captured_by_their_top_level_span(tmp_path: Path) -> None:
    """No query engine (no QueryStartEvent): the chat call's span is the run."""
    engine = _index().as_chat_engine(chat_mode="context", llm=UsageLLM(answer="Madrid"))
    q = "What is the capital of Spain?"
    with instrument(tmp_path, references=QUESTIONS) as capture:
        reply = engine.chat(q)
    assert capture.errors == 0 and capture.written == 1
    (t,) = read_traces(tmp_path / "traces.jsonl")
    assert t["example"]["query"] == q and t["answer"] == str(reply) == "Madrid"
    assert t["metadata"]["question_from"] == "retriever query"
    assert [h["chunk_id"] for h in t["retrieved"]] == [n.node.node_id for n in reply.source_nodes]
    assert t["context"] == [h["chunk_id"] for h in t["retrieved"]]
    assert t["stages"]["generation"]["completion_tokens"] == 1
    validate_and_diagnose(tmp_path, 1)
