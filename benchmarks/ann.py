"""Choose the in-process ANN library by measurement (prints numbers; not a test).

    .venv/bin/python benchmarks/ann.py                    # 100k x 384
    .venv/bin/python benchmarks/ann.py --rows 20000       # quicker
    .venv/bin/python benchmarks/ann.py --libs usearch     # one library

For each installed library among faiss-cpu (IndexHNSWFlat, inner product), usearch
(cos, f32) and hnswlib (cosine), with the same graph parameters (M, ef_construction,
ef_search): build time, single-query latency p50/p95 (ms) and recall@10 against the
exact top-10 (``DenseIndex``). The vectors are synthetic but clustered like sentence
embeddings (a mixture of Gaussians around unit centroids plus noise), since uniform
random vectors are an unrealistically hard case for graph indexes. Threads: 1 for
queries (one caller), all cores for the build.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from ragtriage.index import DenseIndex

F32 = npt.NDArray[np.float32]


def clustered(n: int, dim: int, rng: np.random.Generator, clusters: int = 500) -> F32:
    """Unit vectors: a centroid per cluster, a 32-dimensional spread around it (sentence
    embeddings have a low intrinsic dimension) and a little isotropic noise."""
    centres = rng.standard_normal((clusters, dim)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    basis = rng.standard_normal((32, dim)).astype(np.float32) / np.sqrt(dim)
    out = np.empty((n, dim), dtype=np.float32)
    for lo in range(0, n, 50_000):
        m = min(50_000, n - lo)
        which = rng.integers(0, clusters, m)
        spread = rng.standard_normal((m, 32)).astype(np.float32) @ basis
        noise = rng.standard_normal((m, dim)).astype(np.float32) * (0.3 / np.sqrt(dim))
        x = centres[which] + 0.8 * spread + noise
        out[lo : lo + m] = x / np.linalg.norm(x, axis=1, keepdims=True)
    return out


def _pct(v: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(v), q))


Search = Callable[[F32], list[int]]


def measure(
    name: str,
    build: Callable[[], Callable[[int], Search]],
    efs: list[int],
    queries: F32,
    truth: list[set[int]],
) -> None:
    """Build once, then query at each ``ef_search``."""
    t0 = time.perf_counter()
    with_ef = build()
    build_s = time.perf_counter() - t0
    for ef in efs:
        search = with_ef(ef)
        times, hits = [], 0
        for q, want in zip(queries, truth, strict=True):
            t = time.perf_counter()
            got = search(q)
            times.append((time.perf_counter() - t) * 1000)
            hits += len(want & set(got[:10]))
        recall = hits / (10 * len(truth))
        print(
            f"{name + f' ef={ef}':34s} build {build_s:7.1f} s  p50 {_pct(times, 50):6.3f} ms  "
            f"p95 {_pct(times, 95):6.3f} ms  recall@10 {recall:.4f}",
            flush=True,
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--m", type=int, default=16)
    ap.add_argument("--ef-construction", type=int, default=128)
    ap.add_argument("--ef-search", type=int, nargs="+", default=[64, 128])
    ap.add_argument("--libs", nargs="+", default=["usearch", "faiss", "hnswlib"])
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    data = clustered(args.rows, args.dim, rng)
    # queries: perturbed corpus rows (a question near its passage), not corpus rows
    pick = rng.integers(0, args.rows, args.queries)
    queries = data[pick] + 0.3 * rng.standard_normal((args.queries, args.dim)).astype(
        np.float32
    ) / np.sqrt(args.dim)
    queries = (queries / np.linalg.norm(queries, axis=1, keepdims=True)).astype(np.float32)
    exact = DenseIndex(data, normalize=False)
    times = []
    truth = []
    for q in queries:
        t = time.perf_counter()
        truth.append({i for i, _ in exact.search(q, 10)})
        times.append((time.perf_counter() - t) * 1000)
    print(
        f"rows {args.rows} dim {args.dim} queries {args.queries} M {args.m} "
        f"ef_construction {args.ef_construction}"
    )
    print(
        f"{'exact (numpy matmul)':34s} build {0.0:7.1f} s  p50 {_pct(times, 50):6.3f} ms  "
        f"p95 {_pct(times, 95):6.3f} ms  recall@10 1.0000",
        flush=True,
    )
    if "usearch" in args.libs:
        from usearch.index import Index

        def b_usearch() -> Callable[[int], Search]:
            idx = Index(
                ndim=args.dim,
                metric="cos",
                dtype="f32",
                connectivity=args.m,
                expansion_add=args.ef_construction,
            )
            idx.add(np.arange(args.rows, dtype=np.uint64), data, threads=2)

            def with_ef(ef: int) -> Search:
                idx.expansion_search = ef
                return lambda q: [int(k) for k in idx.search(q, 10, threads=1).keys]

            return with_ef

        measure("usearch", b_usearch, args.ef_search, queries, truth)
    if "faiss" in args.libs:
        import faiss

        def b_faiss() -> Callable[[int], Search]:
            faiss.omp_set_num_threads(2)
            idx = faiss.IndexHNSWFlat(args.dim, args.m, faiss.METRIC_INNER_PRODUCT)
            idx.hnsw.efConstruction = args.ef_construction
            idx.add(data)
            faiss.omp_set_num_threads(1)

            def with_ef(ef: int) -> Search:
                idx.hnsw.efSearch = ef
                return lambda q: [int(i) for i in idx.search(q.reshape(1, -1), 10)[1][0]]

            return with_ef

        measure("faiss HNSWFlat", b_faiss, args.ef_search, queries, truth)
    if "hnswlib" in args.libs:
        import hnswlib

        def b_hnswlib() -> Callable[[int], Search]:
            idx = hnswlib.Index(space="cosine", dim=args.dim)
            idx.init_index(max_elements=args.rows, M=args.m, ef_construction=args.ef_construction)
            idx.add_items(data, np.arange(args.rows), num_threads=2)
            idx.set_num_threads(1)

            def with_ef(ef: int) -> Search:
                idx.set_ef(ef)
                return lambda q: [int(i) for i in idx.knn_query(q, k=10)[0][0]]

            return with_ef

        measure("hnswlib", b_hnswlib, args.ef_search, queries, truth)


if __name__ == "__main__":
    main()
