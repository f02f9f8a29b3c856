"""Retrieval speed on synthetic data (prints numbers; not a test).

    .venv/bin/python benchmarks/retrieval.py                 # 100k chunks
    .venv/bin/python benchmarks/retrieval.py --chunks 20000  # quicker

* dense: random unit vectors (dim 384), exact matmul + argpartition top-k;
* BM25: synthetic Zipf-distributed vocabulary, ``bm25s`` scoring through
  :class:`ragtriage.index.BM25Index`, side by side with ``rank_bm25`` (BM25Okapi) on
  fewer queries;
* hybrid (RRF and weighted) through the full :class:`IndexedRetriever` path;
* the packaged MiniLM embedder on 256 sentences (sentences/s).

Latencies are per query, single-threaded caller, warm index.
"""

from __future__ import annotations

import argparse
import gc
import resource
import time
from collections.abc import Callable, Sequence

import numpy as np

from ragtriage.config import RetrievalConfig
from ragtriage.embedding import HashEmbedder, MiniLMEmbedder
from ragtriage.index import BM25Index, DenseIndex, bm25_tokens
from ragtriage.retrieval import ChunkTable, IndexedRetriever


def _pct(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def _latency(fn: Callable[[int], object], n: int) -> tuple[float, float, float]:
    """(p50 ms, p95 ms, queries/s) over ``n`` calls."""
    times = []
    for i in range(n):
        t0 = time.perf_counter()
        fn(i)
        times.append((time.perf_counter() - t0) * 1000)
    return _pct(times, 50), _pct(times, 95), 1000 * n / sum(times)


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def zipf_corpus(
    n_docs: int, vocab: int, mean_len: int, rng: np.random.Generator
) -> tuple[list[list[str]], list[str], np.ndarray]:
    words = [f"w{i}" for i in range(vocab)]
    p = 1.0 / np.arange(1, vocab + 1) ** 1.07
    p /= p.sum()
    lengths = np.clip(rng.poisson(mean_len, n_docs), 8, None)
    flat = rng.choice(vocab, size=int(lengths.sum()), p=p)
    docs: list[list[str]] = []
    pos = 0
    for n in lengths:
        docs.append([words[i] for i in flat[pos : pos + n]])
        pos += n
    return docs, words, p


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--chunks", type=int, default=100_000)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--vocab", type=int, default=50_000)
    ap.add_argument("--doc-len", type=int, default=64)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--top-k", type=int, default=20)
    ap.add_argument("--rank-bm25-queries", type=int, default=20)
    ap.add_argument("--skip-rank-bm25", action="store_true")
    ap.add_argument("--skip-minilm", action="store_true")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    n, k = args.chunks, args.top_k
    print(f"# {n} chunks, dim {args.dim}, vocab {args.vocab}, ~{args.doc_len} terms/chunk")

    # ------------------------------------------------------------------ dense
    vecs = rng.standard_normal((n, args.dim), dtype=np.float32)
    t0 = time.perf_counter()
    dense = DenseIndex(vecs)
    build_dense = time.perf_counter() - t0
    del vecs
    qv = rng.standard_normal((args.queries, args.dim), dtype=np.float32)
    p50, p95, qps = _latency(lambda i: dense.search(qv[i], k), args.queries)
    print(
        f"dense  build {build_dense:7.2f} s   query p50 {p50:7.2f} ms  p95 {p95:7.2f} ms  "
        f"{qps:8.1f} q/s"
    )

    # ------------------------------------------------------------------ bm25
    docs, words, _p = zipf_corpus(n, args.vocab, args.doc_len, rng)
    sample_text = [" ".join(d) for d in docs[:5000]]
    t0 = time.perf_counter()
    for t in sample_text:
        bm25_tokens(t)
    tok_rate = len(sample_text) / (time.perf_counter() - t0)
    t0 = time.perf_counter()
    bm25 = BM25Index(docs)
    build_bm25 = time.perf_counter() - t0
    # queries: 2-6 terms drawn from the mid-frequency range of the vocabulary
    q_terms = [
        [words[j] for j in rng.integers(50, min(5000, args.vocab), size=int(rng.integers(2, 7)))]
        for _ in range(args.queries)
    ]
    q_texts = [" ".join(q) for q in q_terms]
    p50b, p95b, qpsb = _latency(lambda i: bm25.search(q_terms[i], k), args.queries)
    print(
        f"bm25   build {build_bm25:7.2f} s   query p50 {p50b:7.2f} ms  p95 {p95b:7.2f} ms  "
        f"{qpsb:8.1f} q/s   (tokenizer: {tok_rate:,.0f} chunks/s of text)"
    )

    # ------------------------------------------------------------------ hybrid (full path)
    table = ChunkTable(
        [f"c{i}" for i in range(n)], [f"d{i // 4}" for i in range(n)], [{} for _ in range(n)]
    )
    # queries are embedded with the hashing embedder into the same 384-d space
    emb = HashEmbedder(args.dim)
    for mode in ("dense", "bm25", "hybrid_rrf", "hybrid_weighted"):
        cfg = RetrievalConfig(mode=mode, top_k=k)  # type: ignore[arg-type]
        r = IndexedRetriever(cfg, table, dense=dense, bm25=bm25, embedder=emb)
        a, b, c = _latency(lambda i, r=r: r.retrieve(q_texts[i], k), args.queries)  # type: ignore[misc]
        print(f"retriever {mode:16s} query p50 {a:7.2f} ms  p95 {b:7.2f} ms  {c:8.1f} q/s")
    filt = IndexedRetriever(RetrievalConfig(mode="dense"), table, dense=dense, embedder=emb)
    ids = [f"d{i}" for i in range(0, n // 4, 7)]
    filt.retrieve("warm", k, {"doc_id": ids})
    a, b, c = _latency(lambda i: filt.retrieve(q_texts[i], k, {"doc_id": ids}), args.queries)
    print(f"retriever dense+filter({len(ids)} docs) p50 {a:7.2f} ms  p95 {b:7.2f} ms")
    print(f"peak RSS so far: {_rss_mb():,.0f} MB")

    # ------------------------------------------------------------------ rank_bm25
    if not args.skip_rank_bm25:
        from rank_bm25 import BM25Okapi

        t0 = time.perf_counter()
        ref = BM25Okapi(docs)
        build_ref = time.perf_counter() - t0
        nq = min(args.rank_bm25_queries, args.queries)
        r50, r95, rqps = _latency(lambda i: ref.get_scores(q_terms[i]), nq)
        # same queries through ours, for a like-for-like rate
        o50, o95, oqps = _latency(lambda i: bm25.scores(q_terms[i]), nq)
        print(
            f"rank_bm25 build {build_ref:7.2f} s   full scoring p50 {r50:7.2f} ms  "
            f"p95 {r95:7.2f} ms  {rqps:8.1f} q/s  ({nq} queries)"
        )
        print(
            f"bm25s     build {build_bm25:7.2f} s   full scoring p50 {o50:7.2f} ms  "
            f"p95 {o95:7.2f} ms  {oqps:8.1f} q/s  -> {oqps / rqps:,.0f}x faster"
        )
        # agreement check on one query (top-10 sets under the two idf variants)
        top_ref = set(np.argsort(-ref.get_scores(q_terms[0]))[:10].tolist())
        top_our = {i for i, _ in bm25.search(q_terms[0], 10)}
        print(f"top-10 overlap with rank_bm25 on query 0: {len(top_ref & top_our)}/10")
        del ref
        gc.collect()
        print(f"peak RSS: {_rss_mb():,.0f} MB")

    # ------------------------------------------------------------------ minilm
    if not args.skip_minilm:
        subjects = [
            "The river",
            "A small company",
            "The new vaccine",
            "Our team",
            "The city council",
            "This algorithm",
            "The museum",
            "A local farmer",
        ]
        verbs = ["announced", "reduced", "doubled", "studied", "rejected", "improved"]
        objects = [
            "the annual budget for public transport",
            "its output in the third quarter",
            "the number of visitors since 2019",
            "a plan to build new schools",
            "water quality along the northern bank",
            "the cost of training models",
        ]
        sents = [
            f"{subjects[i % 8]} {verbs[(i // 8) % 6]} {objects[(i // 48) % 6]} "
            f"according to report {i}."
            for i in range(256)
        ]
        m = MiniLMEmbedder()
        m.embed(sents[:8])  # warm-up
        t0 = time.perf_counter()
        m.embed(sents)
        dt = time.perf_counter() - t0
        print(
            f"minilm (int8 ONNX, batch 32): 256 sentences in {dt:.2f} s = {256 / dt:,.0f} sentences/s"
        )


if __name__ == "__main__":
    main()
