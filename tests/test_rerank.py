"""Rerankers: identity, lexical signals, LLM listwise with a scripted model, factory."""

from __future__ import annotations

import importlib.util
import re

import pytest

from ragtriage.config import LLMConfig, RerankConfig
from ragtriage.embedding import HashEmbedder
from ragtriage.errors import ConfigError, ModelUnavailableError
from ragtriage.llm import ChatRequest, LLMRunner, LLMStatusError, ScriptedLLM
from ragtriage.records import Chunk, Hit
from ragtriage.rerank import (
    IdentityReranker,
    LexicalReranker,
    LLMReranker,
    make_reranker,
    parse_permutation,
    query_key_items,
    rank_prompt,
    window_starts,
)


def _corpus(texts: list[str]) -> tuple[list[Hit], dict[str, Chunk]]:
    chunks = {
        f"d{i}#0": Chunk(chunk_id=f"d{i}#0", doc_id=f"d{i}", text=t, start=0, end=len(t), index=0)
        for i, t in enumerate(texts)
    }
    hits = [
        Hit(chunk_id=cid, doc_id=c.doc_id, score=1.0 - i / 100, rank=i + 1)
        for i, (cid, c) in enumerate(chunks.items())
    ]
    return hits, chunks


async def test_identity_keeps_order_and_cuts() -> None:
    hits, chunks = _corpus(["a", "b", "c"])
    out = await IdentityReranker().rerank("q", hits, chunks, 2)
    assert [h.chunk_id for h in out] == ["d0#0", "d1#0"]
    assert [h.rank for h in out] == [1, 2] and out[0].score == hits[0].score


def test_query_key_items() -> None:
    assert query_key_items('When did Apple release the "iPhone 4" in 2010?') == [
        "iphone 4",
        "4",
        "2010",
        "apple",
    ]
    assert query_key_items("How many people live in New York City?") == ["new york city"]
    assert query_key_items("Revenue of 1,200 million") == ["1200"]
    assert query_key_items("2021年《流浪地球》的票房是多少？") == ["流浪地球", "2021"]
    assert query_key_items("what is love") == []


async def test_lexical_prefers_exact_numbers_and_coverage() -> None:
    hits, chunks = _corpus(
        [
            "The company reported strong growth over several years.",
            "Acme Corp revenue in 2019 was 5 billion dollars. Other news followed.",
            "Revenue figures for Acme Corp in 2018 were 4 billion dollars.",
            "Completely unrelated text about gardening and tomatoes.",
        ]
    )
    reranker = LexicalReranker(HashEmbedder(256))
    out = await reranker.rerank("What was Acme Corp revenue in 2019?", hits, chunks, 3)
    assert [h.chunk_id for h in out[:2]] == ["d1#0", "d2#0"]
    assert len(out) == 3 and [h.rank for h in out] == [1, 2, 3]
    assert all(0.0 <= h.score <= 1.0 for h in out)
    assert hits[0].rank == 1  # input untouched


async def test_lexical_uses_sentence_level_similarity_in_chinese() -> None:
    filler = "这是一段关于别的事情的文字。" * 6
    hits, chunks = _corpus(
        [
            filler + "公司的股票价格上涨了。",
            filler + "长江是中国最长的河流，全长约6300公里。",
            "黄河是中国第二长的河流。",
        ]
    )
    out = await LexicalReranker(HashEmbedder(256)).rerank("长江有多长？", hits, chunks, 3)
    assert out[0].chunk_id == "d1#0"


async def test_lexical_ties_keep_input_order_and_empty_input() -> None:
    hits, chunks = _corpus(["same text", "same text", "same text"])
    out = await LexicalReranker(HashEmbedder(64)).rerank("text", hits, chunks, 3)
    assert [h.chunk_id for h in out] == ["d0#0", "d1#0", "d2#0"]
    assert await LexicalReranker(HashEmbedder(64)).rerank("q", [], chunks, 3) == []


def test_parse_permutation_is_robust() -> None:
    assert parse_permutation("[2] > [1] > [3]", 3) == ([1, 0, 2], True)
    assert parse_permutation("[3] > [3] > [9] > [1]", 4) == ([2, 0, 1, 3], True)
    assert parse_permutation("Sure! The ranking is [ 2 ] > [4].", 4) == ([1, 3, 0, 2], True)
    assert parse_permutation("2 > 3 > 1", 3) == ([1, 2, 0], True)
    assert parse_permutation("I cannot rank these.", 3) == ([0, 1, 2], False)
    assert parse_permutation("[0] > [7]", 2) == ([0, 1], False)


def test_window_starts_cover_front() -> None:
    assert window_starts(0, 20, 10) == []
    assert window_starts(5, 20, 10) == [(0, 5)]
    assert window_starts(25, 20, 10) == [(5, 25), (0, 20)]
    assert window_starts(40, 20, 10) == [(20, 40), (10, 30), (0, 20)]


def test_rank_prompt_follows_listing_1() -> None:
    req = rank_prompt("who?", ["first passage", "second " * 400])
    system, user = req.messages[0].content, req.messages[-1].content
    assert "RankLLM" in system
    assert "[1] first passage" in user and "[2] second" in user
    assert "Search Query: who?" in user and "[2] > [1]" in user
    assert len(user.split()) < 400  # long passages are truncated


def _reverse_script(request: ChatRequest, _i: int) -> str:
    ids = re.findall(r"^\[(\d+)\]", request.messages[-1].content, flags=re.MULTILINE)
    return " > ".join(f"[{i}]" for i in reversed(ids))


def _runner(script: object, retries: int = 0) -> tuple[LLMRunner, ScriptedLLM]:
    llm = ScriptedLLM(script)  # type: ignore[arg-type]
    return LLMRunner(llm, LLMConfig(max_retries=retries, backoff_base_s=0.0), cache=None), llm


async def test_llm_reranker_applies_permutation() -> None:
    hits, chunks = _corpus(["p0", "p1", "p2", "p3"])
    runner, llm = _runner(_reverse_script)
    reranker = LLMReranker(runner, window=20, step=10)
    out = await reranker.rerank("q", hits, chunks, 3)
    assert [h.chunk_id for h in out] == ["d3#0", "d2#0", "d1#0"]
    assert [h.rank for h in out] == [1, 2, 3]
    assert out[0].score > out[1].score > out[2].score
    assert reranker.last_errors == [] and len(llm.requests) == 1


async def test_llm_reranker_sliding_window_brings_last_to_front() -> None:
    texts = [f"passage {i}" for i in range(25)]
    hits, chunks = _corpus(texts)

    def best_is_marked(request: ChatRequest, _i: int) -> str:
        user = request.messages[-1].content
        ids = re.findall(r"^\[(\d+)\] (.*)$", user, flags=re.MULTILINE)
        ranked = sorted(ids, key=lambda x: (x[1] != "passage 24", int(x[0])))
        return " > ".join(f"[{i}]" for i, _ in ranked)

    runner, llm = _runner(best_is_marked)
    out = await LLMReranker(runner, window=10, step=5).rerank("q", hits, chunks, 5)
    assert out[0].chunk_id == "d24#0"
    assert len(llm.requests) == len(window_starts(25, 10, 5)) == 4


async def test_llm_reranker_falls_back_on_failure_and_garbage() -> None:
    hits, chunks = _corpus(["p0", "p1", "p2"])
    runner, _ = _runner([LLMStatusError("down", status=503)])
    reranker = LLMReranker(runner)
    out = await reranker.rerank("q", hits, chunks, 3)
    assert [h.chunk_id for h in out] == ["d0#0", "d1#0", "d2#0"]
    assert reranker.last_errors and "llm call failed" in reranker.last_errors[0]

    runner2, _ = _runner("I think passage two is best")
    out2, errors = await LLMReranker(runner2).rerank_with_errors("q", hits, chunks, 2)
    assert [h.chunk_id for h in out2] == ["d0#0", "d1#0"]
    assert errors and "unparsable" in errors[0]

    runner3, _ = _runner("Ranking: [3] > [1] and that's it")
    out3 = await LLMReranker(runner3).rerank("q", hits, chunks, 3)
    assert [h.chunk_id for h in out3] == ["d2#0", "d0#0", "d1#0"]


def test_make_reranker_factory() -> None:
    assert isinstance(make_reranker(RerankConfig(method="identity")), IdentityReranker)
    lex = make_reranker(RerankConfig(method="lexical"))
    assert isinstance(lex, LexicalReranker) and isinstance(lex.embedder, HashEmbedder)
    with pytest.raises(ConfigError):
        make_reranker(RerankConfig(method="llm"))
    runner, _ = _runner("[1]")
    llm = make_reranker(RerankConfig(method="llm", window=8, step=4), llm=runner)
    assert isinstance(llm, LLMReranker) and (llm.window, llm.step) == (8, 4)
    with pytest.raises(ConfigError):
        make_reranker(RerankConfig(method="llm", window=4, step=8), llm=runner)
    with pytest.raises(ConfigError):
        make_reranker(RerankConfig(method="cross_encoder"))
    if importlib.util.find_spec("sentence_transformers") is None:
        with pytest.raises(ModelUnavailableError, match=r"ragtriage\[st\]"):
            make_reranker(RerankConfig(method="cross_encoder", model_path="/tmp"))


def test_query_key_items_latin_names_in_chinese() -> None:
    assert query_key_items("Apple公司在2020年发布了什么产品？") == ["2020", "apple"]
