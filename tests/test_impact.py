"""BM25 top-k over impact postings (MaxScore) equals scoring every document."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from ragtriage.chunking import make_chunker
from ragtriage.config import ChunkingConfig, RetrievalConfig
from ragtriage.data import load_demo
from ragtriage.embedding import HashEmbedder
from ragtriage.index import BM25Index, rrf, top_k_indices, weighted_fusion
from ragtriage.index.impact import UPPER_FILE, ImpactPostings
from ragtriage.records import Chunk
from ragtriage.retrieval import RRF_DEPTH, IndexedRetriever, build_retriever


def _brute(
    index: BM25Index, query: str | Sequence[str], k: int, mask: npt.NDArray[np.bool_] | None
) -> list[tuple[int, float]]:
    """The implementation before impact postings: bm25s scores every document
    (``np.add.at`` per query term), then the top ``k`` positive rows."""
    ids = index._term_ids(query)
    if not ids or index._model is None:
        return []
    s = np.asarray(index._model.get_scores_from_ids(ids), dtype=np.float32)
    keep = s > 0 if mask is None else (s > 0) & mask
    return [(int(i), float(s[i])) for i in top_k_indices(s, k, keep)]


def _check_exact(index: BM25Index, queries: Sequence[str], masks: Sequence[object]) -> int:
    checked = 0
    for q in queries:
        ids = index._term_ids(q)
        if ids and index._model is not None:
            want_scores = np.asarray(index._model.get_scores_from_ids(ids), dtype=np.float32)
            assert np.array_equal(index.scores(q), want_scores), q
        for k in (1, 3, 10, 100):
            for m in masks:
                mask = m if isinstance(m, np.ndarray) else None
                assert index.search(q, k, mask) == _brute(index, q, k, mask), (q, k)
                checked += 1
    return checked


def _demo_chunks() -> list[Chunk]:
    ds = load_demo()
    chunker = make_chunker(ChunkingConfig(strategy="fixed", size=128, overlap=25))
    return [c for d in ds.documents for c in chunker.chunk(d)]


def test_demo_corpus_every_question_equals_full_scoring() -> None:
    ds = load_demo()
    chunks = _demo_chunks()
    index = BM25Index.from_texts([c.text for c in chunks])
    rng = np.random.default_rng(0)
    masks = [None, rng.random(len(chunks)) < 0.5]
    queries = [ex.query for ex in ds.examples]
    assert len(queries) > 50
    assert any(not q.isascii() for q in queries)  # the demo has Chinese questions too
    assert _check_exact(index, queries, masks) == len(queries) * 8


def _zipf_corpus(
    n: int, alphabet: Sequence[str], sep: str, seed: int
) -> tuple[list[str], list[str]]:
    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, len(alphabet) + 1) ** 1.07
    p /= p.sum()
    lens = np.clip(rng.poisson(40, n), 4, None)
    flat = rng.choice(len(alphabet), size=int(lens.sum()), p=p)
    texts, pos = [], 0
    for k in lens:
        texts.append(sep.join(alphabet[i] for i in flat[pos : pos + k]))
        pos += k
    queries = []
    for j in range(60):
        words = texts[int(rng.integers(n))].split(sep) if sep else list(texts[j * 7])
        pick = rng.choice(len(words), size=min(5, len(words)), replace=False)
        q = sep.join(words[i] for i in sorted(pick))
        if j % 5 == 0:
            q = q + sep + q  # repeated terms count twice
        if j % 7 == 0:
            q = q + sep + "zzunknownzz"
        queries.append(q)
    return texts, queries


@pytest.fixture(scope="module")
def en20k() -> tuple[BM25Index, list[str]]:
    words = [f"word{chr(97 + i % 26)}{i}" for i in range(8000)]
    texts, queries = _zipf_corpus(20_000, words, " ", seed=1)
    return BM25Index.from_texts(texts), queries


def test_synthetic_20k_english_equals_full_scoring(en20k: tuple[BM25Index, list[str]]) -> None:
    index, queries = en20k
    rng = np.random.default_rng(2)
    masks = [None, rng.random(index.size) < 0.7, rng.random(index.size) < 0.02]
    assert _check_exact(index, queries, masks) == len(queries) * 12


def test_synthetic_20k_chinese_equals_full_scoring() -> None:
    chars = [chr(0x4E00 + i) for i in range(1500)]  # CJK unified ideographs
    texts, queries = _zipf_corpus(20_000, chars, "", seed=3)
    # Chinese queries: phrases cut out of documents (tokenised as character bigrams)
    rng = np.random.default_rng(4)
    queries = [texts[int(i)][3:11] for i in rng.integers(0, len(texts), 60)]
    queries += [q + q for q in queries[:10]]
    index = BM25Index.from_texts(texts)
    assert index._term_ids(queries[0]), "bigrams of the corpus are in the vocabulary"
    masks = [None, rng.random(index.size) < 0.5]
    assert _check_exact(index, queries, masks) == len(queries) * 8


def test_pruning_skips_documents(en20k: tuple[BM25Index, list[str]]) -> None:
    """The point of MaxScore: most queries score far fewer rows than share a term."""
    index, queries = en20k
    imp = index._impacts
    assert imp is not None and imp.prunable
    sizes: list[int] = []
    exact = imp._exact

    def counting(cand: npt.NDArray[np.integer], *rest: Any) -> Any:
        sizes.append(int(cand.shape[0]))
        return exact(cand, *rest)

    scored: list[int] = []
    sharing: list[int] = []
    imp._exact = counting  # type: ignore[method-assign]
    try:
        for q in queries:
            ids = np.asarray(index._term_ids(q))
            sizes.clear()
            imp.top_k(ids, 10)
            if sizes:
                scored.append(max(sizes))
                sharing.append(int(np.count_nonzero(imp.scores(ids))))
    finally:
        del imp._exact
    assert len(scored) > len(queries) // 2
    assert np.median(scored) < 0.2 * np.median(sharing)


def test_persisted_upper_bounds_and_old_indexes(
    tmp_path: Path, en20k: tuple[BM25Index, list[str]]
) -> None:
    index, queries = en20k
    index.save(tmp_path / "bm25")
    saved = np.load(tmp_path / "bm25" / UPPER_FILE, allow_pickle=False)
    assert saved.dtype == np.float32 and saved.shape == index._impacts.upper.shape  # type: ignore[union-attr]
    loaded = BM25Index.load(tmp_path / "bm25")
    for q in queries[:20]:
        assert loaded.search(q, 10) == index.search(q, 10)
    (tmp_path / "bm25" / UPPER_FILE).unlink()  # an index saved before impact bounds
    older = BM25Index.load(tmp_path / "bm25")
    assert np.array_equal(older._impacts.upper, saved)  # type: ignore[union-attr]
    assert older.search(queries[0], 10) == index.search(queries[0], 10)


def test_unsorted_postings_and_non_positive_impacts() -> None:
    # term 0: rows 2, 0, 1 (unsorted); term 1: rows 1, 0; five documents
    indptr = [0, 3, 5]
    indices = np.array([2, 0, 1, 1, 0], dtype=np.int32)
    data = np.array([1.0, 0.5, 2.0, 0.25, 3.0], dtype=np.float32)
    imp = ImpactPostings(indptr, indices, data, 5)
    assert imp.indices.tolist() == [0, 1, 2, 0, 1]
    assert imp.upper.tolist() == [2.0, 3.0]
    full = imp.scores([0, 1])
    assert full.tolist() == [3.5, 2.25, 1.0, 0.0, 0.0]
    assert imp.top_k([0, 1], 2) == [(0, 3.5), (1, 2.25)]
    assert imp.top_k([1], 5) == [(0, 3.0), (1, 0.25)]
    negative = ImpactPostings(indptr, indices, -data, 5)
    assert not negative.prunable
    assert negative.top_k([0, 1], 3) == []  # nothing positive: like the full scoring
    with pytest.raises(ValueError, match="twice"):
        ImpactPostings([0, 2], np.array([1, 1], dtype=np.int32), data[:2], 3)


def _old_rank(r: IndexedRetriever, query: str, k: int) -> list[tuple[str, float]]:
    """Hybrid retrieval as before impact postings: full BM25 score vector for both
    fusions, RRF through the dict of :func:`rrf`."""
    assert r.bm25 is not None and r.dense is not None and r.embedder is not None
    lex = np.asarray(r.bm25._model.get_scores_from_ids(r.bm25._term_ids(query)), np.float32)
    qv = r.embedder.embed([query])[0]
    if r.cfg.mode == "hybrid_weighted":
        fused = weighted_fusion(r.dense.scores(qv), lex, r.cfg.text_weight)
        return [(r.table.chunk_ids[i], float(fused[i])) for i in top_k_indices(fused, k)]
    dense_rank = [i for i, _ in r.dense.search(qv, max(k, RRF_DEPTH))]
    lex_rank = [int(i) for i in top_k_indices(lex, max(k, RRF_DEPTH), lex > 0)]
    fused_map = rrf([dense_rank, lex_rank], k=r.cfg.rrf_k)
    ordered = sorted(fused_map.items(), key=lambda kv: (-kv[1], kv[0]))
    return [(r.table.chunk_ids[i], s) for i, s in ordered[:k]]


@pytest.mark.parametrize("mode", ["hybrid_rrf", "hybrid_weighted"])
def test_hybrid_top10_identical_to_before(mode: str) -> None:
    """Tolerance 0: the lexical top-k is exact, so fused lists are the same lists."""
    ds = load_demo()
    chunks = _demo_chunks()
    emb = HashEmbedder(128)
    r = build_retriever(RetrievalConfig(mode=mode), chunks, emb)  # type: ignore[arg-type]
    for ex in ds.examples:
        got = [(h.chunk_id, h.score) for h in r.retrieve(ex.query, 10)]
        assert got == _old_rank(r, ex.query, 10), ex.query
