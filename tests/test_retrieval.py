"""Retrievers: modes, fusion, filters, persistence, batch queries."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ragtriage.chunking import make_chunker
from ragtriage.config import ChunkingConfig, EmbeddingConfig, RetrievalConfig
from ragtriage.embedding import HashEmbedder, make_embedder
from ragtriage.errors import ConfigError, InputError
from ragtriage.index import rrf, weighted_fusion
from ragtriage.records import Chunk, Document
from ragtriage.retrieval import IndexedRetriever, Retriever, build_retriever

TEXTS = {
    "rivers": "The Yangtze is the longest river in China and flows into the East China Sea.",
    "mountains": "Mount Everest is the highest mountain on Earth at 8,849 metres.",
    "cooking": "To bake bread you mix flour, water, yeast and salt, then knead the dough.",
    "space": "The Moon orbits the Earth roughly every 27 days.",
    "zh_river": "长江是中国最长的河流，全长约6300公里，流入东海。",
    "zh_weather": "今天北京天气晴朗，气温二十五度，适合户外活动。",
    "finance": "The central bank raised interest rates to fight inflation in 2022.",
}
META = {
    "rivers": {"topic": "geo", "lang": "en", "tags": ["water", "china"]},
    "mountains": {"topic": "geo", "lang": "en", "tags": ["land"]},
    "cooking": {"topic": "food", "lang": "en"},
    "space": {"topic": "science", "lang": "en"},
    "zh_river": {"topic": "geo", "lang": "zh", "tags": ["water", "china"]},
    "zh_weather": {"topic": "weather", "lang": "zh"},
    "finance": {"topic": "economy", "lang": "en", "year": 2022},
}


def _chunks() -> list[Chunk]:
    chunker = make_chunker(ChunkingConfig(strategy="passthrough"))
    out: list[Chunk] = []
    for doc_id, text in TEXTS.items():
        out.extend(chunker.chunk(Document(doc_id=doc_id, text=text, metadata=META[doc_id])))
    return out


CHUNKS = _chunks()
EMB = HashEmbedder(256)


@pytest.mark.parametrize("mode", ["dense", "bm25", "hybrid_rrf", "hybrid_weighted"])
def test_modes_find_the_relevant_chunk(mode: str) -> None:
    r = build_retriever(RetrievalConfig(mode=mode), CHUNKS, EMB)  # type: ignore[arg-type]
    assert isinstance(r, Retriever)
    for query, want in [
        ("longest river in China", "rivers"),
        ("highest mountain Everest", "mountains"),
        ("长江有多长", "zh_river"),
        ("bank interest rates inflation", "finance"),
    ]:
        hits = r.retrieve(query, 3)
        assert hits[0].doc_id == want, (mode, query, hits)
        assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
        assert all(np.isfinite(h.score) for h in hits)
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_bm25_returns_only_matching_chunks_and_top_k_beyond_corpus() -> None:
    r = build_retriever(RetrievalConfig(mode="bm25"), CHUNKS, None)
    assert r.retrieve("zebra", 5) == []
    assert len(r.retrieve("the", 5)) == 0  # stopword only
    dense = build_retriever(RetrievalConfig(mode="dense"), CHUNKS, EMB)
    assert len(dense.retrieve("anything", 100)) == len(CHUNKS)


def test_hybrid_scores_follow_the_fusion_formulas() -> None:
    dense = build_retriever(RetrievalConfig(mode="dense"), CHUNKS, EMB)
    query = "river China water"
    qv = EMB.embed([query])[0]
    assert dense.dense is not None
    d_scores = dense.dense.scores(qv)
    bm = build_retriever(RetrievalConfig(mode="bm25"), CHUNKS, None)
    assert bm.bm25 is not None
    l_scores = bm.bm25.scores(query)

    weighted = build_retriever(
        RetrievalConfig(mode="hybrid_weighted", text_weight=0.4), CHUNKS, EMB
    )
    fused = weighted_fusion(d_scores, l_scores, 0.4)
    hits = weighted.retrieve(query, 7)
    assert [h.score for h in hits] == pytest.approx(sorted(fused, reverse=True))

    rrf_r = build_retriever(RetrievalConfig(mode="hybrid_rrf", rrf_k=60), CHUNKS, EMB)
    d_rank = [h.chunk_id for h in dense.retrieve(query, 7)]
    l_rank = [h.chunk_id for h in bm.retrieve(query, 7)]
    expected = rrf([d_rank, l_rank], k=60)
    got = rrf_r.retrieve(query, 7)
    assert {h.chunk_id: h.score for h in got} == pytest.approx(expected)


def test_text_weight_extremes_reduce_to_single_signals() -> None:
    query = "Earth Moon orbit days"
    dense = build_retriever(RetrievalConfig(mode="dense"), CHUNKS, EMB).retrieve(query, 7)
    w0 = build_retriever(
        RetrievalConfig(mode="hybrid_weighted", text_weight=0.0), CHUNKS, EMB
    ).retrieve(query, 7)
    assert [h.chunk_id for h in w0] == [h.chunk_id for h in dense]
    lex = build_retriever(RetrievalConfig(mode="bm25"), CHUNKS, None).retrieve(query, 7)
    w1 = build_retriever(
        RetrievalConfig(mode="hybrid_weighted", text_weight=1.0), CHUNKS, EMB
    ).retrieve(query, 7)
    assert [h.chunk_id for h in w1[: len(lex)]] == [h.chunk_id for h in lex]


def test_filters_equality_membership_lists_and_merge() -> None:
    cfg = RetrievalConfig(mode="dense", filters={"lang": "en"})
    r = build_retriever(cfg, CHUNKS, EMB)
    assert {h.doc_id for h in r.retrieve("river", 10)} == {
        d for d, m in META.items() if m["lang"] == "en"
    }
    geo = r.retrieve("river", 10, {"topic": ["geo", "science"]})
    assert {h.doc_id for h in geo} == {"rivers", "mountains", "space"}
    # the call overrides the config on the same key
    zh = r.retrieve("river", 10, {"lang": "zh", "tags": "china"})
    assert [h.doc_id for h in zh] == ["zh_river"]
    assert [h.doc_id for h in r.retrieve("x", 10, {"doc_id": "finance"})] == ["finance"]
    assert [h.doc_id for h in r.retrieve("x", 10, {"year": 2022})] == ["finance"]
    assert r.retrieve("x", 10, {"missing_key": 1}) == []
    assert r.retrieve("x", 10, {"doc_id": []}) == []
    bm = build_retriever(RetrievalConfig(mode="bm25"), CHUNKS, None)
    assert [h.doc_id for h in bm.retrieve("river water China", 10, {"lang": "zh"})] == []
    hy = build_retriever(RetrievalConfig(mode="hybrid_rrf"), CHUNKS, EMB)
    assert {h.doc_id for h in hy.retrieve("river", 10, {"tags": ["water"]})} == {
        "rivers",
        "zh_river",
    }


def test_save_load_roundtrip(tmp_path: Path) -> None:
    for mode in ("dense", "bm25", "hybrid_rrf", "hybrid_weighted"):
        cfg = RetrievalConfig(mode=mode)  # type: ignore[arg-type]
        r = build_retriever(cfg, CHUNKS, EMB if mode != "bm25" else None)
        target = tmp_path / mode
        r.save(target)
        r.save(target)  # overwriting an existing index works
        back = IndexedRetriever.load(target, EMB if mode != "bm25" else None)
        for q in ("longest river", "长江", "bread dough"):
            assert back.retrieve(q, 4, {"lang": ["en", "zh"]}) == r.retrieve(
                q, 4, {"lang": ["en", "zh"]}
            )
        for f in target.rglob("*.npy"):
            np.load(f, allow_pickle=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["dense", "bm25", "hybrid_rrf", "hybrid_weighted"]
    )
    with pytest.raises(ConfigError):
        IndexedRetriever.load(tmp_path / "dense", HashEmbedder(128))
    switched = IndexedRetriever.load(
        tmp_path / "hybrid_rrf", EMB, RetrievalConfig(mode="bm25", top_k=3)
    )
    assert switched.retrieve("river", 3)[0].doc_id in {"rivers", "zh_river"}
    with pytest.raises(InputError):
        IndexedRetriever.load(tmp_path / "nothing-here", EMB)


def test_retrieve_many_matches_single_queries() -> None:
    r = build_retriever(RetrievalConfig(mode="hybrid_rrf"), CHUNKS, EMB)
    queries = ["river", "mountain height", "天气"]
    assert r.retrieve_many(queries, 3) == [r.retrieve(q, 3) for q in queries]


def test_errors_and_empty_corpus() -> None:
    with pytest.raises(ConfigError):
        build_retriever(RetrievalConfig(mode="dense"), CHUNKS, None)
    dup = [*CHUNKS, CHUNKS[0]]
    with pytest.raises(InputError, match="duplicate chunk id"):
        build_retriever(RetrievalConfig(mode="bm25"), dup, None)
    for mode in ("dense", "bm25", "hybrid_rrf", "hybrid_weighted"):
        empty = build_retriever(RetrievalConfig(mode=mode), [], EMB)  # type: ignore[arg-type]
        assert empty.retrieve("anything", 5) == []


def test_minilm_dense_retrieval_understands_paraphrase(tmp_path: Path) -> None:
    emb = make_embedder(EmbeddingConfig(model="minilm", cache_dir=str(tmp_path)))
    r = build_retriever(RetrievalConfig(mode="dense"), CHUNKS, emb)
    assert r.retrieve("What is the tallest peak in the world?", 1)[0].doc_id == "mountains"
    assert r.retrieve("how do I make a loaf", 1)[0].doc_id == "cooking"
