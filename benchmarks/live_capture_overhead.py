"""What live capture adds to a run: a LangChain RAG chain (langchain-core's
``DeterministicFakeEmbedding`` over an ``InMemoryVectorStore`` of N chunks, a
document -> document reranker step, ``FakeListChatModel``) and a LlamaIndex query
engine (``MockEmbedding``, ``MockLLM``, a similarity postprocessor) run R times without
and with capture. Prints milliseconds per run for each and the difference (the
capture's cost: callbacks/events, building the trace, an fsynced append).

    .venv/bin/python benchmarks/live_capture_overhead.py [--chunks 200] [--runs 200]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path


def _per_run_ms(fn: Callable[[int], object], runs: int) -> float:
    fn(0)  # warm up
    t0 = time.perf_counter()
    for i in range(runs):
        fn(i)
    return (time.perf_counter() - t0) * 1000.0 / runs


def langchain(chunks: int, runs: int, tmp: Path) -> dict[str, float]:
    from langchain_core.documents import Document
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.language_models import FakeListChatModel
    from langchain_core.output_parsers import StrOutputParser
    from langchain_core.prompts import ChatPromptTemplate
    from langchain_core.runnables import RunnableLambda, RunnablePassthrough
    from langchain_core.vectorstores import InMemoryVectorStore

    from ragtriage.integrations.langchain import TraceCallbackHandler

    vs = InMemoryVectorStore(DeterministicFakeEmbedding(size=64))
    vs.add_documents(
        [
            Document(page_content=f"Passage {i} about topic {i % 17}.", id=f"c{i}")
            for i in range(chunks)
        ]
    )

    def rerank(docs: list[Document]) -> list[Document]:
        return sorted(docs, key=lambda d: len(d.page_content))[:3]

    chain = (
        {
            "context": vs.as_retriever(search_kwargs={"k": 5})
            | RunnableLambda(rerank)
            | RunnableLambda(lambda ds: "\n".join(d.page_content for d in ds)),
            "question": RunnablePassthrough(),
        }
        | ChatPromptTemplate.from_template("Context:\n{context}\nQuestion: {question}")
        | FakeListChatModel(responses=["an answer"])
        | StrOutputParser()
    )
    questions = [f"What about topic {i % 17} number {i}?" for i in range(runs + 1)]
    handler = TraceCallbackHandler(tmp / "lc", references={q: "an answer" for q in questions})
    plain = _per_run_ms(lambda i: chain.invoke(questions[i]), runs)
    captured = _per_run_ms(
        lambda i: chain.invoke(questions[i], config={"callbacks": [handler]}), runs
    )
    assert handler.errors == 0
    return {"plain_ms": plain, "captured_ms": captured, "traces": handler.written}


def llamaindex(chunks: int, runs: int, tmp: Path) -> dict[str, float]:
    from llama_index.core import Document, VectorStoreIndex
    from llama_index.core.embeddings import MockEmbedding
    from llama_index.core.llms import MockLLM
    from llama_index.core.postprocessor import SimilarityPostprocessor

    from ragtriage.integrations.llamaindex import instrument

    index = VectorStoreIndex.from_documents(
        [Document(text=f"Passage {i} about topic {i % 17}.") for i in range(chunks)],
        embed_model=MockEmbedding(embed_dim=16),
    )
    engine = index.as_query_engine(
        llm=MockLLM(max_tokens=4),
        similarity_top_k=5,
        node_postprocessors=[SimilarityPostprocessor(similarity_cutoff=0.1)],
    )
    questions = [f"What about topic {i % 17} number {i}?" for i in range(runs + 1)]
    plain = _per_run_ms(lambda i: engine.query(questions[i]), runs)
    with instrument(tmp / "li", references={q: "an answer" for q in questions}) as capture:
        captured = _per_run_ms(lambda i: engine.query(questions[i]), runs)
    assert capture.errors == 0
    return {"plain_ms": plain, "captured_ms": captured, "traces": capture.written}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--chunks", type=int, default=200)
    ap.add_argument("--runs", type=int, default=200)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for name, bench in (("langchain", langchain), ("llamaindex", llamaindex)):
            got = bench(args.chunks, args.runs, Path(tmp))
            got["overhead_ms"] = got["captured_ms"] - got["plain_ms"]
            print(json.dumps({"framework": name, **{k: round(v, 3) for k, v in got.items()}}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
