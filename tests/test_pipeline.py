"""The traced pipeline end to end on a tiny corpus, query transforms, the resumable
runner and its manifest."""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path
from typing import Any

import pytest

from ragtriage.config import (
    ChunkingConfig,
    EmbeddingConfig,
    GenerationConfig,
    LLMConfig,
    PipelineConfig,
    QueryTransformConfig,
    RerankConfig,
    RetrievalConfig,
    config_hash,
)
from ragtriage.data import Dataset
from ragtriage.errors import ConfigError, LLMResponseError, StoreError
from ragtriage.formats import validate_file
from ragtriage.llm import ChatRequest, LLMRunner, ScriptedLLM
from ragtriage.pipeline import Pipeline, corpus_hash, run_dataset, stage_timings
from ragtriage.query_transforms import (
    LLMQueryTransformer,
    fuse_hits,
    make_query_transformer,
    parse_query_lines,
)
from ragtriage.records import Document, Example, Hit, Trace

DOCS = (
    Document(
        doc_id="acme",
        title="Acme Corp",
        text=(
            "Acme Corp was founded in 1999 in Springfield by Wile Coyote. "
            "The company makes anvils, rockets and giant magnets for desert customers. "
            "In 2019 Acme Corp appointed Jane Roe as chief executive officer. "
            "Under Jane Roe the company opened a second factory in Tucson. "
            "Acme Corp reported revenue of 12 million dollars in 2021."
        ),
    ),
    Document(
        doc_id="beta",
        title="Beta Ltd",
        text=(
            "Beta Ltd is a bakery chain headquartered in Lyon. "
            "Beta Ltd was acquired by Gamma Foods in 2020 for 40 million euros. "
            "The bakery is known for its croissants and sourdough bread."
        ),
    ),
    Document(
        doc_id="river",
        title="Springfield",
        text=(
            "Springfield is a town on a slow river with an old stone bridge. "
            "The town hosts a fair every autumn with music and food stalls."
        ),
    ),
    Document(
        doc_id="zh",
        title="某公司",
        text="某公司成立于2005年，总部位于上海。2021年，某公司实现营业收入12.5亿元，同比增长8%。",
    ),
)

EXAMPLES = (
    Example(
        example_id="q1",
        query="Who did Acme Corp appoint as chief executive officer in 2019?",
        answer="Jane Roe",
        doc_ids=["acme"],
        references=["In 2019 Acme Corp appointed Jane Roe as chief executive officer."],
        label="fact_single",
    ),
    Example(
        example_id="q2",
        query="Which company acquired Beta Ltd?",
        answer="Gamma Foods",
        doc_ids=["beta"],
        references=["Beta Ltd was acquired by Gamma Foods in 2020 for 40 million euros."],
        label="fact_single",
    ),
    Example(
        example_id="q3",
        query="Who won the chess championship in 1987?",
        answer="",
        answerable=False,
        doc_ids=["river"],
        label="unanswerable",
    ),
    Example(
        example_id="q4",
        query="某公司2021年的营业收入是多少？",
        answer="12.5亿元",
        doc_ids=["zh"],
        references=["2021年，某公司实现营业收入12.5亿元"],
        language="zh",
    ),
    Example(
        example_id="q5",
        query="When was Acme Corp founded?",
        answer="1999",
        doc_ids=["acme"],
    ),
)

DATASET = Dataset(name="tiny", documents=DOCS, examples=EXAMPLES, format="generic")


def _cfg(**sections: Any) -> PipelineConfig:
    base: dict[str, Any] = {
        "name": "tiny",
        "chunking": ChunkingConfig(strategy="fixed", size=24, overlap=4, unit="auto", cjk_size=64),
        "embedding": EmbeddingConfig(model="hash"),
        "retrieval": RetrievalConfig(mode="hybrid_rrf", top_k=6),
        "rerank": RerankConfig(method="lexical", top_k=3),
        "generation": GenerationConfig(backend="extractive"),
        "llm": LLMConfig(max_retries=0),
    }
    base.update(sections)
    return PipelineConfig(**base)


@pytest.fixture(autouse=True)
def _no_llm_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("RAGTRIAGE_LLM_BASE_URL", "RAGTRIAGE_LLM_MODEL", "RAGTRIAGE_LLM_API_KEY"):
        monkeypatch.delenv(var, raising=False)


def _pipeline(cfg: PipelineConfig | None = None, llm: ScriptedLLM | None = None) -> Pipeline:
    return Pipeline.from_config(cfg or _cfg(), DATASET, llm_client=llm, use_llm_cache=False)


def _traces(path: Path) -> list[Trace]:
    return [Trace.model_validate_json(line) for line in path.read_text().splitlines() if line]


# ------------------------------------------------------------------------ one example


async def test_run_example_records_every_stage() -> None:
    cfg = _cfg()
    pipe = _pipeline(cfg)
    trace = await pipe.run_example(EXAMPLES[0], run_id="r1")
    assert trace.trace_id == "q1" and trace.run_id == "r1"
    assert trace.config_hash == config_hash(cfg) == pipe.config_hash
    # all chunks of the ground-truth document, in document order
    acme = [c for c in pipe.chunks if c.doc_id == "acme"]
    assert len(acme) >= 2
    assert [c.chunk_id for c in trace.gt_doc_chunks] == [c.chunk_id for c in acme]
    assert 0 < len(trace.retrieved) <= 6
    assert [h.rank for h in trace.retrieved] == list(range(1, len(trace.retrieved) + 1))
    assert 0 < len(trace.reranked) <= 3
    assert set(h.chunk_id for h in trace.reranked) <= set(h.chunk_id for h in trace.retrieved)
    # score ordering, generous budget: the context is the reranked list
    assert trace.context == [h.chunk_id for h in trace.reranked]
    assert trace.dropped_context == []
    assert "Jane Roe" in trace.answer
    assert trace.citations and set(trace.citations) <= set(trace.context)
    assert set(trace.stages) == {"retrieval", "reranking", "generation"}
    assert all(s.latency_ms >= 0 for s in trace.stages.values())
    assert trace.metadata["language"] == "en"
    assert trace.metadata["generation"] == {
        "backend": "extractive",
        "model": "extractive",
        "prompt_variant": "default",
    }
    assert "error" not in trace.metadata
    # every referenced chunk has its text in the trace; no chunk twice
    known = trace.chunk_map()
    assert all(h.chunk_id in known for h in trace.retrieved)
    ids = [c.chunk_id for c in trace.gt_doc_chunks] + [c.chunk_id for c in trace.chunks]
    assert len(ids) == len(set(ids))
    assert not {c.chunk_id for c in trace.chunks} & {c.chunk_id for c in trace.gt_doc_chunks}
    assert Trace.model_validate_json(trace.to_json()) == trace


async def test_unanswerable_and_chinese_examples() -> None:
    pipe = _pipeline()
    t3 = await pipe.run_example(EXAMPLES[2])
    assert t3.answer == "I don't know." and t3.citations == []
    t4 = await pipe.run_example(EXAMPLES[3])
    assert "12.5亿元" in t4.answer
    assert t4.metadata["language"] == "zh"
    gen_meta = t4.metadata["generation"]
    assert isinstance(gen_meta, dict) and gen_meta["prompt_variant"] == "zh_keypoints"


async def test_the_callers_objects_are_not_mutated() -> None:
    before_ds = [d.to_dict() for d in DATASET.documents]
    before_ex = EXAMPLES[0].to_dict()
    cfg = _cfg()
    cfg_before = cfg.model_dump()
    pipe = _pipeline(cfg)
    await pipe.run_example(EXAMPLES[0])
    assert [d.to_dict() for d in DATASET.documents] == before_ds
    assert EXAMPLES[0].to_dict() == before_ex
    assert cfg.model_dump() == cfg_before


async def test_token_budget_drops_are_recorded_in_the_trace() -> None:
    cfg = _cfg(generation=GenerationConfig(backend="extractive", max_context_tokens=40))
    trace = await _pipeline(cfg).run_example(EXAMPLES[0])
    assert trace.dropped_context, "a 40-token budget cannot hold three 24-token chunks"
    reranked = [h.chunk_id for h in trace.reranked]
    assert trace.context + trace.dropped_context == reranked
    assert set(trace.dropped_context) <= set(trace.chunk_map())


async def test_edges_ordering_is_the_prompt_order_in_the_trace() -> None:
    cfg = _cfg(
        rerank=RerankConfig(method="lexical", top_k=5),
        generation=GenerationConfig(backend="extractive", ordering="edges"),
    )
    trace = await _pipeline(cfg).run_example(EXAMPLES[0])
    ranked = [h.chunk_id for h in trace.reranked]
    assert len(ranked) == 5
    assert trace.context == [ranked[0], ranked[2], ranked[4], ranked[3], ranked[1]]


async def test_prechunked_dataset_uses_the_given_chunks() -> None:
    from ragtriage.records import Chunk

    doc = DOCS[1]
    cut = doc.text.index("Beta Ltd was")
    chunks = (
        Chunk(chunk_id="p1", doc_id="beta", text=doc.text[:cut], start=0, end=cut, index=0),
        Chunk(
            chunk_id="p2",
            doc_id="beta",
            text=doc.text[cut:],
            start=cut,
            end=len(doc.text),
            index=1,
        ),
    )
    ex = EXAMPLES[1].model_copy(update={"gt_chunk_ids": ["p2"]})
    ds = Dataset(name="pre", documents=(doc,), examples=(ex,), prechunked=chunks, format="generic")
    pipe = Pipeline.from_config(_cfg(), ds)
    assert [c.chunk_id for c in pipe.chunks] == ["p1", "p2"]
    trace = await pipe.run_example(ex)
    assert [c.chunk_id for c in trace.gt_doc_chunks] == ["p1", "p2"]
    assert "Gamma Foods" in trace.answer


# ------------------------------------------------------------------- scripted LLM


def _scripted_generator(request: ChatRequest, _i: int) -> str:
    return "Answer: Jane Roe. [1]" if "Jane" in request.messages[-1].content else "I don't know."


async def test_pipeline_with_a_scripted_llm_generator() -> None:
    llm = ScriptedLLM(_scripted_generator)
    cfg = _cfg(generation=GenerationConfig(backend="openai", max_tokens=32))
    pipe = _pipeline(cfg, llm)
    trace = await pipe.run_example(EXAMPLES[0])
    assert trace.answer == "Jane Roe. [1]"
    assert trace.citations == [trace.context[0]]
    gen = trace.stages["generation"]
    assert gen.calls == 1 and gen.prompt_tokens > 0 and gen.completion_tokens > 0
    assert len(llm.requests) == 1
    assert EXAMPLES[0].query in llm.requests[0].messages[-1].content
    assert pipe.model_ids()["generation"].startswith("openai")
    await pipe.aclose()


async def test_multi_query_transform_is_traced() -> None:
    llm = ScriptedLLM(
        {
            r"rephrasings": "1. Who became Acme's CEO in 2019?\n2. Acme Corp chief executive\n",
            r"Question:": "Answer: Jane Roe. [1]",
        }
    )
    cfg = _cfg(
        generation=GenerationConfig(backend="openai"),
        query_transform=QueryTransformConfig(method="multi_query", n_variants=2),
    )
    pipe = _pipeline(cfg, llm)
    trace = await pipe.run_example(EXAMPLES[0])
    qt = trace.metadata["query_transform"]
    assert qt == {
        "method": "multi_query",
        "queries": [
            EXAMPLES[0].query,
            "Who became Acme's CEO in 2019?",
            "Acme Corp chief executive",
        ],
    }
    assert trace.stages["query_transform"].calls == 1
    assert trace.stages["query_transform"].prompt_tokens > 0
    assert trace.stages["generation"].calls == 1
    assert trace.stages["reranking"].calls == 0
    assert len(trace.retrieved) <= 6
    assert trace.answer == "Jane Roe. [1]"


async def test_llm_reranking_is_metered_per_stage() -> None:
    llm = ScriptedLLM({r"Rank the \d+ passages": "[3] > [1] > [2]"})
    cfg = _cfg(
        retrieval=RetrievalConfig(mode="dense", top_k=3),
        rerank=RerankConfig(method="llm", top_k=2),
    )
    pipe = _pipeline(cfg, llm)
    trace = await pipe.run_example(EXAMPLES[0])
    retrieved = [h.chunk_id for h in trace.retrieved]
    assert [h.chunk_id for h in trace.reranked] == [retrieved[2], retrieved[0]]
    rr = trace.stages["reranking"]
    assert rr.calls == 1 and rr.prompt_tokens > 0 and rr.completion_tokens > 0
    assert trace.stages["generation"].calls == 0  # the extractive generator
    assert pipe.model_ids()["rerank"].startswith("llm")


async def test_hyde_retrieves_with_the_hypothetical_passage() -> None:
    passage = "Beta Ltd was bought by the food group Gamma Foods in 2020."
    llm = ScriptedLLM({r"passage": passage})
    cfg = _cfg(query_transform=QueryTransformConfig(method="hyde"))
    trace = await _pipeline(cfg, llm).run_example(EXAMPLES[1])
    assert trace.metadata["query_transform"] == {"method": "hyde", "queries": [passage]}
    assert trace.retrieved[0].doc_id == "beta"


def test_a_transform_without_an_llm_is_a_config_error() -> None:
    cfg = _cfg(query_transform=QueryTransformConfig(method="decompose"))
    with pytest.raises(ConfigError, match="needs an LLM"):
        Pipeline.from_config(cfg, DATASET)
    with pytest.raises(ConfigError, match="needs an LLM"):
        make_query_transformer(QueryTransformConfig(method="hyde"), None)
    assert make_query_transformer(QueryTransformConfig(), None) is None


async def test_decompose_and_unusable_replies() -> None:
    runner = LLMRunner(
        ScriptedLLM(["Sub-questions:\n- Who founded Acme?\n- When was it founded?", "   "]),
        LLMConfig(max_retries=0),
    )
    tr = LLMQueryTransformer(QueryTransformConfig(method="decompose", n_variants=3), runner)
    out = await tr.transform("Who founded Acme and when?", language="en")
    assert out.queries == ("Who founded Acme?", "When was it founded?")
    assert out.calls == 1 and out.note == ""
    empty = await tr.transform("Who founded Acme and when?", language="en")
    assert empty.queries == ("Who founded Acme and when?",)
    assert "original query" in empty.note
    assert empty.to_metadata()["note"] == empty.note


def test_parse_query_lines() -> None:
    text = 'Here are variants:\n1) "alpha beta"\n2. Gamma?\n- gamma?\n\n* delta\nQuery 5: eps'
    assert parse_query_lines(text, limit=10) == ["alpha beta", "Gamma?", "delta", "eps"]
    assert parse_query_lines(text, limit=2) == ["alpha beta", "Gamma?"]
    assert parse_query_lines("1、公司收入是多少？\n2、营业收入", limit=5) == [
        "公司收入是多少？",
        "营业收入",
    ]


def test_fuse_hits_reciprocal_rank_fusion() -> None:
    def hits(*ids: str) -> list[Hit]:
        return [Hit(chunk_id=c, doc_id=c[0], score=1.0 / r, rank=r) for r, c in enumerate(ids, 1)]

    fused = fuse_hits([hits("a1", "b1", "c1"), hits("b1", "c1", "d1")], top_k=3, rrf_k=60)
    assert [h.chunk_id for h in fused] == ["b1", "c1", "a1"]
    assert [h.rank for h in fused] == [1, 2, 3]
    assert fused[0].score == pytest.approx(1 / 62 + 1 / 61)
    single = fuse_hits([hits("x1", "y1", "z1")], top_k=2)
    assert [(h.chunk_id, h.rank) for h in single] == [("x1", 1), ("y1", 2)]


async def test_a_failing_stage_is_recorded_not_raised() -> None:
    def garbage(_request: ChatRequest, _i: int) -> str:
        raise LLMResponseError("endpoint returned garbage")

    llm = ScriptedLLM(garbage)
    cfg = _cfg(generation=GenerationConfig(backend="openai"))
    trace = await _pipeline(cfg, llm).run_example(EXAMPLES[0])
    err = trace.metadata["error"]
    assert isinstance(err, dict)
    assert err["stage"] == "generation" and err["type"] == "LLMResponseError"
    assert "garbage" in str(err["message"])
    assert trace.retrieved and trace.reranked  # the stages before it are kept
    assert trace.answer == "" and trace.context == []
    assert "generation" not in trace.stages


# --------------------------------------------------------------------------- runner


async def test_run_dataset_writes_valid_traces_and_manifest(tmp_path: Path) -> None:
    out = tmp_path / "run1"
    summary = await run_dataset(_pipeline(), EXAMPLES, out, progress=False, concurrency=2)
    assert summary.done == 5 and summary.failed == 0 and summary.ran == 5
    assert validate_file(out / "traces.jsonl", "traces") == 5
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["run_id"] == summary.run_id and summary.run_id.startswith("run1-")
    assert manifest["status"] == "complete"
    assert manifest["config_hash"] == config_hash(_cfg())
    assert manifest["config"]["generation"]["backend"] == "extractive"
    assert manifest["versions"]["ragtriage"]
    assert manifest["models"]["embedding"].startswith("hash")
    assert manifest["dataset"] == {
        "name": "tiny",
        "format": "generic",
        "documents": 4,
        "examples": 5,
        "chunks": len(_pipeline().chunks),
        "prechunked": False,
        "corpus_hash": corpus_hash(_pipeline().chunks),
    }
    assert manifest["examples"]["done"] == 5 and manifest["examples"]["failed"] == 0
    timings = manifest["timings"]
    assert list(timings) == ["retrieval", "reranking", "generation"]
    assert all(t["n"] == 5 and t["p95_ms"] >= t["p50_ms"] >= 0 for t in timings.values())
    assert manifest["tokens"]["total"]["calls"] == 0
    assert {t.run_id for t in _traces(out / "traces.jsonl")} == {summary.run_id}


def test_manifest_holds_no_secrets(tmp_path: Path) -> None:
    cfg = _cfg(llm=LLMConfig(base_url="http://127.0.0.1:9/v1", model="m", api_key="sk-SECRET"))
    asyncio.run(run_dataset(_pipeline(cfg), EXAMPLES[:1], tmp_path / "r", progress=False))
    text = (tmp_path / "r" / "manifest.json").read_text()
    assert "sk-SECRET" not in text and "api_key" not in text
    assert "sk-SECRET" not in (tmp_path / "r" / "traces.jsonl").read_text()


def _comparable(traces: list[Trace]) -> dict[str, tuple[Any, ...]]:
    return {
        t.trace_id: (
            t.answer,
            t.citations,
            [h.chunk_id for h in t.retrieved],
            [h.chunk_id for h in t.reranked],
            t.context,
        )
        for t in traces
    }


async def test_resume_after_an_interrupted_run(tmp_path: Path) -> None:
    fresh = tmp_path / "fresh"
    await run_dataset(_pipeline(), EXAMPLES, fresh, progress=False)
    out = tmp_path / "resumed"
    first = await run_dataset(_pipeline(), EXAMPLES[:2], out, progress=False)
    # a crash while writing leaves a torn last line
    with (out / "traces.jsonl").open("a") as fh:
        fh.write('{"schema": 1, "trace_id": "q3", "exam')
    second = await run_dataset(_pipeline(), EXAMPLES, out, progress=False)
    assert second.run_id == first.run_id
    assert second.skipped == 2 and second.ran == 3 and second.done == 5
    traces = _traces(out / "traces.jsonl")
    assert sorted(t.trace_id for t in traces) == ["q1", "q2", "q3", "q4", "q5"]
    assert _comparable(traces) == _comparable(_traces(fresh / "traces.jsonl"))
    # a third run has nothing left to do
    third = await run_dataset(_pipeline(), EXAMPLES, out, progress=False)
    assert third.ran == 0 and third.done == 5
    assert validate_file(out / "traces.jsonl", "traces") == 5


def test_ctrl_c_mid_run_then_resume(tmp_path: Path) -> None:
    """A real SIGINT during the third LLM call: asyncio.run cancels the run, which
    writes an 'interrupted' manifest; rerunning finishes without duplicates."""
    calls = {"n": 0}

    def script(request: ChatRequest, _i: int) -> str:
        calls["n"] += 1
        if calls["n"] == 3:
            signal.raise_signal(signal.SIGINT)
        return "Answer: something. [1]"

    cfg = _cfg(generation=GenerationConfig(backend="openai"))
    out = tmp_path / "run"
    # Python's own handler, as in a terminal: asyncio.run turns SIGINT into cancelling
    # the run only over it, and a library imported by another test module (collection
    # imports them all) may have installed its own
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            asyncio.run(
                run_dataset(
                    _pipeline(cfg, ScriptedLLM(script)),
                    EXAMPLES,
                    out,
                    progress=False,
                    concurrency=1,
                )
            )
    finally:
        signal.signal(signal.SIGINT, previous)
    written = len(_traces(out / "traces.jsonl"))
    assert 2 <= written < 5
    assert json.loads((out / "manifest.json").read_text())["status"] == "interrupted"
    summary = asyncio.run(
        run_dataset(_pipeline(cfg, ScriptedLLM(script)), EXAMPLES, out, progress=False)
    )
    assert summary.skipped == written and summary.done == 5 and summary.failed == 0
    ids = [t.trace_id for t in _traces(out / "traces.jsonl")]
    assert sorted(ids) == ["q1", "q2", "q3", "q4", "q5"]
    assert json.loads((out / "manifest.json").read_text())["status"] == "complete"


async def test_failures_are_counted_and_can_be_retried(tmp_path: Path) -> None:
    replies: list[str | Exception] = [
        "Answer: a. [1]",
        LLMResponseError("boom"),
        "Answer: c. [1]",
        "Answer: d. [1]",
        "Answer: e. [1]",
    ]
    cfg = _cfg(generation=GenerationConfig(backend="openai"))
    out = tmp_path / "run"
    summary = await run_dataset(
        _pipeline(cfg, ScriptedLLM(replies)), EXAMPLES, out, progress=False, concurrency=1
    )
    assert summary.done == 4 and summary.failed == 1
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["failures"]["by_stage"] == {"generation": 1}
    assert manifest["failures"]["first"][0]["trace_id"] == "q2"
    again = await run_dataset(
        _pipeline(cfg, ScriptedLLM("Answer: b. [1]")),
        EXAMPLES,
        out,
        progress=False,
        retry_failed=True,
    )
    assert again.ran == 1 and again.done == 5 and again.failed == 0
    traces = {t.trace_id: t for t in _traces(out / "traces.jsonl")}
    assert len(traces) == 5 and traces["q2"].answer == "b. [1]"


async def test_another_config_in_the_same_directory_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "run"
    await run_dataset(_pipeline(), EXAMPLES[:1], out, progress=False)
    other = _pipeline(_cfg(rerank=RerankConfig(method="lexical", top_k=2)))
    with pytest.raises(StoreError, match="another config"):
        await run_dataset(other, EXAMPLES, out, progress=False)
    summary = await run_dataset(other, EXAMPLES, out, progress=False, overwrite=True)
    assert summary.done == 5 and summary.skipped == 0


def test_stage_timings_percentiles() -> None:
    stages = [{"retrieval": {"latency_ms": float(v)}} for v in range(1, 101)]
    t = stage_timings(stages)["retrieval"]
    assert t["n"] == 100 and t["p50_ms"] == pytest.approx(50.5) and t["max_ms"] == 100.0
    assert t["p95_ms"] == pytest.approx(95.05)
