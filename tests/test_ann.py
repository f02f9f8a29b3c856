"""HNSW (faiss) dense search: recall against exact, the size threshold, filters,
persistence without pickle, and the exact fallback."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ragtriage.config import IndexConfig, RetrievalConfig
from ragtriage.embedding import HashEmbedder
from ragtriage.index import DenseIndex, HNSWParams
from ragtriage.records import Chunk
from ragtriage.retrieval import IndexedRetriever, build_retriever, use_ann

pytest.importorskip("faiss")

DIM = 64


def _clustered(n: int, seed: int = 0) -> np.ndarray:
    """Unit vectors around 50 centroids with an 8-dimensional spread (like sentence
    embeddings, which have a low intrinsic dimension)."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((50, DIM))
    basis = rng.standard_normal((8, DIM)) / np.sqrt(DIM)
    x = centres[rng.integers(0, 50, n)] / np.sqrt(DIM) * 3 + rng.standard_normal((n, 8)) @ basis
    x += 0.05 * rng.standard_normal((n, DIM)) / np.sqrt(DIM)
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture(scope="module")
def data() -> tuple[np.ndarray, np.ndarray]:
    x = _clustered(5000)
    rng = np.random.default_rng(1)
    q = x[rng.integers(0, len(x), 100)] + 0.05 * rng.standard_normal((100, DIM)) / np.sqrt(DIM)
    return x, q.astype(np.float32)


def test_recall_at_10_against_exact(data: tuple[np.ndarray, np.ndarray]) -> None:
    x, queries = data
    exact = DenseIndex(x)
    approx = DenseIndex(x).with_ann(HNSWParams(m=16, ef_construction=128, ef_search=128))
    hits = 0
    for q in queries:
        want = {i for i, _ in exact.search(q, 10)}
        got = approx.search(q, 10)
        assert len(got) == 10
        # the graph's scores are the exact cosines of the rows it returns
        for i, s in got:
            assert s == pytest.approx(float(exact.vectors[i] @ (q / np.linalg.norm(q))), abs=1e-4)
        hits += len(want & {i for i, _ in got})
    recall = hits / (10 * len(queries))
    assert recall >= 0.98, recall


def test_threshold_picks_exact_below_and_ann_above() -> None:
    cfg = IndexConfig(ann="auto", ann_min_rows=100)
    assert not use_ann(cfg, 99)
    assert use_ann(cfg, 100)
    assert not use_ann(IndexConfig(ann="exact", ann_min_rows=0), 10**6)
    assert use_ann(IndexConfig(ann="hnsw", ann_min_rows=10**9), 5)


def _chunks(n: int) -> list[Chunk]:
    topics = ["river flood", "solar panel", "tax law", "chess opening", "bread yeast"]
    return [
        Chunk(
            chunk_id=f"c{i}",
            doc_id=f"d{i // 4}",
            text=f"{topics[i % 5]} note {i} about {topics[(i * 7) % 5]}",
            index=i % 4,
            start=0,
            end=10,
            metadata={"part": i % 2},
        )
        for i in range(n)
    ]


def test_retriever_with_lowered_threshold_matches_exact_top10() -> None:
    chunks = _chunks(400)
    emb = HashEmbedder(dim=DIM)
    vecs = _clustered(400, seed=3)
    rcfg = RetrievalConfig(mode="dense", top_k=10)
    exact = build_retriever(rcfg, chunks, emb, vectors=vecs, index=IndexConfig(ann="exact"))
    approx = build_retriever(
        rcfg, chunks, emb, vectors=vecs, index=IndexConfig(ann="auto", ann_min_rows=100)
    )
    assert exact.dense is not None and exact.dense.ann is None
    assert approx.dense is not None and approx.dense.ann is not None
    queries = ["river flood", "tax law chess", "bread yeast solar", "opening note 3"]
    agree = 0
    for q in queries:
        a = [h.chunk_id for h in exact.retrieve(q, 10)]
        b = [h.chunk_id for h in approx.retrieve(q, 10)]
        agree += len(set(a) & set(b))
    assert agree / (10 * len(queries)) >= 0.98
    # a broad filter keeps only allowed rows and still returns k of them
    filtered = approx.retrieve("river flood", 10, filters={"part": 1})
    assert len(filtered) == 10
    assert all(int(h.chunk_id[1:]) % 2 == 1 for h in filtered)


def test_hybrid_rrf_uses_graph_and_persists_without_pickle(tmp_path: Path) -> None:
    chunks = _chunks(300)
    emb = HashEmbedder(dim=DIM)
    vecs = _clustered(300, seed=5)
    rcfg = RetrievalConfig(mode="hybrid_rrf", top_k=10)
    r = build_retriever(rcfg, chunks, emb, vectors=vecs, index=IndexConfig(ann="hnsw"))
    before = [h.chunk_id for h in r.retrieve("solar panel tax", 10)]
    r.save(tmp_path / "idx")
    files = sorted(p.name for p in (tmp_path / "idx").iterdir())
    assert "ann.faiss" in files and "ann.json" in files
    assert not any(name.endswith((".pkl", ".pickle")) for name in files)
    loaded = IndexedRetriever.load(tmp_path / "idx", emb)
    assert loaded.dense is not None and loaded.dense.ann is not None
    assert [h.chunk_id for h in loaded.retrieve("solar panel tax", 10)] == before


def test_corrupt_graph_file_is_a_clear_error(tmp_path: Path) -> None:
    idx = DenseIndex(_clustered(200)).with_ann()
    idx.save(tmp_path)
    (tmp_path / "ann.faiss").write_bytes(b"not a faiss index")
    from ragtriage.errors import InputError

    with pytest.raises(InputError, match="cannot read ANN index"):
        DenseIndex.load(tmp_path)
