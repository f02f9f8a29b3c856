"""Live capture from a real LangChain RAG chain: langchain-core's own fakes
(``DeterministicFakeEmbedding``, ``FakeListChatModel``, ``GenericFakeChatModel``,
``FakeListLLM``) over a real ``InMemoryVectorStore``; no network."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langchain_core")

from langchain_core.callbacks import CallbackManagerForRetrieverRun, Callbacks
from langchain_core.documents import BaseDocumentCompressor, Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models import FakeListChatModel, FakeListLLM
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate, PromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import Runnable, RunnableLambda, RunnablePassthrough
from langchain_core.vectorstores import InMemoryVectorStore

from live_helpers import CORPUS, QUESTIONS, read_traces, validate_and_diagnose
from ragtriage.integrations.langchain import TraceCallbackHandler
from ragtriage.text import content_tokens


def _store() -> InMemoryVectorStore:
    vs = InMemoryVectorStore(DeterministicFakeEmbedding(size=64))
    vs.add_documents(
        [Document(page_content=t, id=cid, metadata={"doc_id": doc}) for cid, doc, t in CORPUS]
    )
    return vs


class ScoredRetriever(BaseRetriever):
    """The vector store's top-k with the similarity in ``metadata["score"]``."""

    store: InMemoryVectorStore
    k: int = 4

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        out = []
        for doc, score in self.store.similarity_search_with_score(query, k=self.k):
            out.append(doc.model_copy(update={"metadata": {**doc.metadata, "score": score}}))
        return out


class OverlapReranker(BaseDocumentCompressor):
    """Keeps the ``top_n`` documents sharing most content words with the query."""

    top_n: int = 2

    def compress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[Document]:
        q = set(content_tokens(query))

        def overlap(d: Document) -> int:
            return len(q & set(content_tokens(d.page_content)))

        ranked = sorted(documents, key=overlap, reverse=True)[: self.top_n]
        return [
            d.model_copy(update={"metadata": {**d.metadata, "relevance_score": float(overlap(d))}})
            for d in ranked
        ]


class CompressionRetriever(BaseRetriever):
    """A retriever wrapping another and a compressor (the shape of LangChain's
    ``ContextualCompressionRetriever``, which lives outside langchain-core)."""

    base: BaseRetriever
    compressor: BaseDocumentCompressor

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        docs = self.base.invoke(query, config={"callbacks": run_manager.get_child()})
        return list(self.compressor.compress_documents(docs, query))


def _format(docs: list[Document]) -> str:
    return "\n\n".join(d.page_content for d in docs)


PROMPT = ChatPromptTemplate.from_template(
    "Answer from the context.\nContext:\n{context}\n\nQuestion: {question}"
)


def _chain(retriever: Runnable[str, list[Document]], llm: Any) -> Runnable[str, str]:
    return (
        {"context": retriever | RunnableLambda(_format), "question": RunnablePassthrough()}
        | PROMPT
        | llm
        | StrOutputParser()
    )


def test_compression_retriever_chain_writes_valid_traces(tmp_path: Path) -> None:
    vs = _store()
    base = ScoredRetriever(store=vs, k=4)
    reranker = OverlapReranker(top_n=2)
    answers = [QUESTIONS[q] for q in QUESTIONS]
    chain = _chain(
        CompressionRetriever(base=base, compressor=reranker),
        FakeListChatModel(responses=answers),
    )
    handler = TraceCallbackHandler(tmp_path / "run", references=QUESTIONS, run_id="lc")
    outputs = [chain.invoke(q, config={"callbacks": [handler]}) for q in QUESTIONS]
    assert outputs == answers
    assert handler.errors == 0 and handler.written == len(QUESTIONS)
    assert handler.path == tmp_path / "run" / "traces.jsonl"

    traces = read_traces(handler.path)
    assert [t["example"]["query"] for t in traces] == list(QUESTIONS)
    for t, q in zip(traces, QUESTIONS, strict=True):
        hits = vs.similarity_search_with_score(q, k=4)
        assert [h["chunk_id"] for h in t["retrieved"]] == [d.id for d, _s in hits]
        assert [h["score"] for h in t["retrieved"]] == pytest.approx([s for _d, s in hits])
        assert [h["doc_id"] for h in t["retrieved"]] == [d.metadata["doc_id"] for d, _ in hits]
        kept = reranker.compress_documents([d for d, _s in hits], q)
        assert [h["chunk_id"] for h in t["reranked"]] == [d.id for d in kept]
        assert [h["score"] for h in t["reranked"]] == [d.metadata["relevance_score"] for d in kept]
        assert t["context"] == [d.id for d in kept]  # the prompt holds both, in this order
        assert t["answer"] == QUESTIONS[q] and t["example"]["answer"] == QUESTIONS[q]
        assert set(t["stages"]) == {"retrieval", "reranking", "generation"}
        assert all(s["latency_ms"] > 0 and s["calls"] == 1 for s in t["stages"].values())
        assert t["run_id"] == "lc"
        assert t["metadata"]["observable_stages"] == ["retrieval", "reranking", "generation"]
        assert t["metadata"]["capture"]["context_from"] == "prompt"
    diagnoses = validate_and_diagnose(tmp_path / "run", len(QUESTIONS))
    assert {d["trace_id"] for d in diagnoses} == {t["trace_id"] for t in traces}


def test_reranker_step_tokens_and_a_template_that_drops_a_passage(tmp_path: Path) -> None:
    """A document -> document chain step is the reranker; the LLM's usage_metadata
    gives the tokens; a passage the template leaves out is not in the context."""
    vs = _store()
    reranker = OverlapReranker(top_n=3)

    def rerank(inputs: dict[str, Any]) -> list[Document]:
        return list(reranker.compress_documents(inputs["docs"], inputs["question"]))

    llm = GenericFakeChatModel(
        messages=iter(
            AIMessage(
                content=a,
                usage_metadata={"input_tokens": 40 + i, "output_tokens": 2, "total_tokens": 42 + i},
            )
            for i, a in enumerate(QUESTIONS.values())
        )
    )
    chain = (
        {"docs": ScoredRetriever(store=vs, k=5), "question": RunnablePassthrough()}
        | RunnablePassthrough.assign(docs=RunnableLambda(rerank))
        | {
            "context": lambda x: _format(x["docs"][:2]),  # the template keeps two of three
            "question": lambda x: x["question"],
        }
        | PROMPT
        | llm
        | StrOutputParser()
    )
    handler = TraceCallbackHandler(tmp_path / "run")
    for q, a in QUESTIONS.items():
        handler.set_reference(q, a)
    for q in QUESTIONS:
        chain.invoke(q, config={"callbacks": [handler]})
    traces = read_traces(handler.path)
    assert len(traces) == len(QUESTIONS) and handler.errors == 0
    for i, (t, q) in enumerate(zip(traces, QUESTIONS, strict=True)):
        hits = vs.similarity_search_with_score(q, k=5)
        kept = reranker.compress_documents([d for d, _s in hits], q)
        assert [h["chunk_id"] for h in t["retrieved"]] == [d.id for d, _s in hits]
        assert [h["chunk_id"] for h in t["reranked"]] == [d.id for d in kept]
        assert t["context"] == [d.id for d in kept[:2]]
        gen = t["stages"]["generation"]
        assert (gen["prompt_tokens"], gen["completion_tokens"]) == (40 + i, 2)
    validate_and_diagnose(tmp_path / "run", len(QUESTIONS))


def test_plain_llm_and_retriever_without_scores(tmp_path: Path) -> None:
    """A completion LLM (``on_llm_start``) and the store's own retriever, which gives
    no scores: the hits have none (never made up from the rank) and the trace says so;
    no reranker is seen."""
    vs = _store()
    prompt = PromptTemplate.from_template("Context:\n{context}\nQuestion: {question}\nAnswer:")
    chain = (
        {
            "context": vs.as_retriever(search_kwargs={"k": 3}) | RunnableLambda(_format),
            "question": RunnablePassthrough(),
        }
        | prompt
        | FakeListLLM(responses=list(QUESTIONS.values()))
        | StrOutputParser()
    )
    handler = TraceCallbackHandler(tmp_path / "traces.jsonl", references=QUESTIONS)
    chain.batch(list(QUESTIONS), config={"callbacks": [handler], "max_concurrency": 4})
    traces = read_traces(tmp_path / "traces.jsonl")
    assert len(traces) == len(QUESTIONS) and handler.errors == 0
    for t in traces:  # concurrent runs are not mixed up
        q = t["example"]["query"]
        ids = [d.id for d in vs.similarity_search(q, k=3)]
        assert [h["chunk_id"] for h in t["retrieved"]] == ids
        assert t["context"] == ids and t["reranked"] == []
        assert [h["score"] for h in t["retrieved"]] == [None, None, None]
        assert t["metadata"]["import"]["scores"].startswith("not recorded")
        assert "no reranker" in t["metadata"]["not_observable"]["reranking"]
        assert set(t["stages"]) == {"retrieval", "generation"}


def test_runs_wait_for_their_gold_answer(tmp_path: Path) -> None:
    chain = _chain(ScoredRetriever(store=_store(), k=2), FakeListChatModel(responses=["Paris"]))
    handler = TraceCallbackHandler(tmp_path)
    q = "What is the capital of France?"
    chain.invoke(q, config={"callbacks": [handler]})
    assert handler.written == 0 and handler.pending == 1
    assert not (tmp_path / "traces.jsonl").exists()
    handler.set_reference(q, "Paris")
    assert handler.written == 1 and handler.pending == 0
    (t,) = read_traces(tmp_path / "traces.jsonl")
    assert t["example"]["answer"] == "Paris" and t["answer"] == "Paris"


def test_a_capture_failure_never_breaks_the_chain(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocked = tmp_path / "traces.jsonl"
    blocked.mkdir()  # the output is a directory: every append fails
    chain = _chain(
        ScoredRetriever(store=_store(), k=2), FakeListChatModel(responses=["Paris", "Rome"])
    )
    handler = TraceCallbackHandler(blocked, references=QUESTIONS)
    with caplog.at_level(logging.WARNING, logger="ragtriage.integrations"):
        got = [
            chain.invoke(q, config={"callbacks": [handler]})
            for q in ("What is the capital of France?", "Which river flows through Rome?")
        ]
    assert got == ["Paris", "Rome"]
    assert handler.errors == 2 and handler.written == 0
    assert "ragtriage capture" in caplog.text


def test_streamed_and_async_runs(tmp_path: Path) -> None:
    """``stream`` (whose input arrives with the end event) and ``ainvoke``."""
    vs = _store()
    reranker = OverlapReranker(top_n=2)
    chain = _chain(
        CompressionRetriever(base=ScoredRetriever(store=vs, k=4), compressor=reranker),
        FakeListChatModel(responses=list(QUESTIONS.values())),
    )
    handler = TraceCallbackHandler(tmp_path, references=QUESTIONS)
    questions = list(QUESTIONS)
    streamed = "".join(chain.stream(questions[0], config={"callbacks": [handler]}))

    async def rest() -> list[str]:
        return [await chain.ainvoke(q, config={"callbacks": [handler]}) for q in questions[1:]]

    answers = [streamed, *asyncio.run(rest())]
    assert answers == list(QUESTIONS.values()) and handler.errors == 0
    traces = read_traces(tmp_path / "traces.jsonl")
    assert [t["example"]["query"] for t in traces] == questions
    for t, q in zip(traces, questions, strict=True):
        kept = reranker.compress_documents(
            [d for d, _s in vs.similarity_search_with_score(q, 4)], q
        )
        assert t["context"] == [d.id for d in kept] and t["answer"] == QUESTIONS[q]
    validate_and_diagnose(tmp_path, len(QUESTIONS))


class TwoQueryRetriever(BaseRetriever):
    """Retrieves for the query and for its last word, and merges (a multi-query
    retriever's shape): its inner retrievals are the retriever's list, each passage
    once; its merged output is the step after retrieval."""

    base: BaseRetriever

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        config = {"callbacks": run_manager.get_child()}
        first = self.base.invoke(query, config=config)
        second = self.base.invoke(query.split()[-1], config=config)
        merged = {d.id: d for d in [*second, *first]}
        return list(merged.values())[:3]


def test_nested_retrievals_are_one_list_without_repeats(tmp_path: Path) -> None:
    vs = _store()
    base = ScoredRetriever(store=vs, k=3)
    chain = _chain(TwoQueryRetriever(base=base), FakeListChatModel(responses=["Paris"]))
    q = "What is the capital of France?"
    handler = TraceCallbackHandler(tmp_path, references=QUESTIONS)
    chain.invoke(q, config={"callbacks": [handler]})
    (t,) = read_traces(tmp_path / "traces.jsonl")
    first = [d.id for d, _s in vs.similarity_search_with_score(q, k=3)]
    second = [d.id for d, _s in vs.similarity_search_with_score("France?", k=3)]
    union = list(dict.fromkeys([*first, *second]))
    assert [h["chunk_id"] for h in t["retrieved"]] == union
    assert t["stages"]["retrieval"]["calls"] == 2 and t["stages"]["reranking"]["calls"] == 1
    assert [h["chunk_id"] for h in t["reranked"]] == list(dict.fromkeys([*second, *first]))[:3]
    validate_and_diagnose(tmp_path, 1)
