"""Scale measurements for docs/scaling.md (prints numbers; not a test).

    .venv/bin/python benchmarks/scale.py diagnose --traces 20000        # (a) + memory
    .venv/bin/python benchmarks/scale.py index --chunks 100000          # (b) + memory
    .venv/bin/python benchmarks/scale.py index --chunks 20000 --skip-pg # quicker
    nice -n 10 .venv/bin/python benchmarks/scale.py index --chunks 1000000 --skip-pg \
        --modes dense bm25 hybrid_rrf                                   # 1M: ~30+ min

(a) ``diagnose``: rules diagnosis of N long real-style traces
    (``benchmarks/diagnose_rules.py --real``: ~300-word chain-of-thought answers, full GT
    documents, EN and ZH) in one local process and on a local Ray cluster
    (``num_cpus`` = the machine's cores), traces/s each, diagnoses checked identical.
(b) ``index``: N synthetic chunks (clustered 384-d unit vectors like sentence
    embeddings, Zipf-distributed words), build time and single-query latency p50/p95
    of dense and hybrid-RRF retrieval for the in-process exact index, the in-process
    HNSW graph (faiss) and pgvector (embedded server; exact sequential scan and HNSW),
    with recall@10 of the approximate ones against exact.
    Every index is built once and shared by the modes (the HNSW graph is added after
    the exact measurements). The lexical top-100 of the impact postings (MaxScore) is
    checked against scoring every row with bm25s as before (``identical lists``), and
    both are timed.
(c) memory: peak RSS of this process after each part, and the PostgreSQL table and
    index sizes.

The machine is shared: the script prints the load average before and after.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import resource
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from ragtriage.config import IndexConfig, RetrievalConfig  # noqa: E402
from ragtriage.records import Chunk  # noqa: E402


def _module(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # dataclasses look their module up while it loads
    spec.loader.exec_module(mod)
    return mod


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _pct(v: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(v), q))


# ----------------------------------------------------------------------------- (a)
def bench_diagnose(n: int, batch: int) -> None:
    import ray

    from ragtriage.config import DiagnosisConfig
    from ragtriage.diagnosis import Diagnoser
    from ragtriage.executors import diagnose_on_ray, parse_executor
    from ragtriage.llm import run_sync

    bench = _module("diagnose_rules")
    t0 = time.perf_counter()
    traces = bench.real_traces(n)
    print(f"built {n} real-style traces in {time.perf_counter() - t0:.1f} s", flush=True)
    t0 = time.perf_counter()
    local = run_sync(Diagnoser("rules").diagnose_many(traces))
    t_local = time.perf_counter() - t0
    print(f"local, 1 process : {n / t_local:8.0f} traces/s ({t_local:.1f} s)", flush=True)
    cpus = os.cpu_count() or 1
    t0 = time.perf_counter()
    ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False, configure_logging=False)
    t_init = time.perf_counter() - t0
    try:
        t0 = time.perf_counter()
        remote = diagnose_on_ray(
            traces,
            strategy="ragec",
            config=DiagnosisConfig(),
            executor=parse_executor("ray"),
            batch_size=batch,
        )
        t_ray = time.perf_counter() - t0
    finally:
        ray.shutdown()
    same = [d.to_json() for d in remote] == [d.to_json() for d in local]
    print(
        f"Ray local cluster ({cpus} CPUs, batch {batch}): {n / t_ray:8.0f} traces/s "
        f"({t_ray:.1f} s, plus {t_init:.1f} s to start the cluster); identical: {same}",
        flush=True,
    )
    print(f"peak RSS of the driver: {_rss_mb():.0f} MB")


# ----------------------------------------------------------------------------- (b)
class _LookupEmbedder:
    """Query text -> a precomputed vector (the benchmark's queries are ids)."""

    name = "lookup"
    asymmetric = False

    def __init__(self, table: dict[str, np.ndarray], dim: int) -> None:
        self._table, self.dim = table, dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self._table[t] for t in texts]).astype(np.float32)


def _corpus(n: int, dim: int, n_queries: int) -> tuple[list[Chunk], np.ndarray, list[str], Any]:
    ann = _module("ann")
    rng = np.random.default_rng(0)
    vecs = ann.clustered(n, dim, rng)
    words = np.array([f"w{i}" for i in range(30_000)])
    p = 1.0 / np.arange(1, len(words) + 1) ** 1.07
    p /= p.sum()
    lens = np.clip(rng.poisson(60, n), 8, None)
    flat = words[rng.choice(len(words), size=int(lens.sum()), p=p)]
    chunks, pos = [], 0
    for i, k in enumerate(lens):
        text = " ".join(flat[pos : pos + k])
        pos += k
        chunks.append(
            Chunk(
                chunk_id=f"c{i}",
                doc_id=f"d{i // 8}",
                text=text,
                start=0,
                end=len(text),
                index=i % 8,
                metadata={"part": int(i % 4)},
            )
        )
    pick = rng.integers(0, n, n_queries)
    qv = vecs[pick] + 0.3 * rng.standard_normal((n_queries, dim)).astype(np.float32) / np.sqrt(dim)
    qv /= np.linalg.norm(qv, axis=1, keepdims=True)
    queries = []
    table = {}
    for j, i in enumerate(pick):
        toks = chunks[int(i)].text.split()
        q = " ".join(toks[:: max(1, len(toks) // 5)][:5]) + f" #{j}"
        queries.append(q)
        table[q] = qv[j]
    return chunks, vecs, queries, _LookupEmbedder(table, dim)


def _latencies(
    fn: Callable[[str], list[str]], queries: Sequence[str]
) -> tuple[list[list[str]], float, float]:
    out, times = [], []
    for q in queries:
        t = time.perf_counter()
        out.append(fn(q))
        times.append((time.perf_counter() - t) * 1000)
    return out, _pct(times, 50), _pct(times, 95)


def _recall(got: list[list[str]], want: list[list[str]]) -> float:
    hits = sum(len(set(a) & set(b)) for a, b in zip(got, want, strict=True))
    return hits / max(1, sum(len(b) for b in want))


def _old_rrf_lexical(bm25: Any, query: str, depth: int) -> list[int]:
    """The lexical half of hybrid RRF before impact postings: score every row with
    ``bm25s`` (``np.add.at`` per term), then the top ``depth`` positive rows."""
    from ragtriage.index.dense import top_k_indices

    ids = bm25._term_ids(query)
    if not ids:
        return []
    s = np.asarray(bm25._model.get_scores_from_ids(ids), dtype=np.float32)
    return [int(i) for i in top_k_indices(s, depth, s > 0)]


def bench_index(
    n: int,
    n_queries: int,
    skip_pg: bool,
    modes: Sequence[str],
    skip_memory: bool = False,
    pg_ann: Sequence[str] = ("exact", "hnsw"),
    skip_hnsw: bool = False,
) -> None:
    from ragtriage.index import BM25Index, DenseIndex, HNSWParams
    from ragtriage.retrieval import RRF_DEPTH, ChunkTable, IndexedRetriever

    dim = 384
    t0 = time.perf_counter()
    chunks, vecs, queries, emb = _corpus(n, dim, n_queries)
    print(
        f"built {n} synthetic chunks in {time.perf_counter() - t0:.1f} s  "
        f"peak RSS {_rss_mb():.0f} MB  load {_load()}",
        flush=True,
    )
    exact_lists: dict[str, list[list[str]]] = {}

    def report(name: str, mode: str, build_s: float, r: Any) -> None:
        lists, p50, p95 = _latencies(lambda q: [h.chunk_id for h in r.retrieve(q, 10)], queries)
        if name == "in-process exact":
            exact_lists[mode] = lists
        rec = _recall(lists, exact_lists[mode]) if mode in exact_lists else float("nan")
        print(
            f"{name:38s} {mode:10s} build {build_s:7.1f} s  p50 {p50:7.2f} ms  "
            f"p95 {p95:7.2f} ms  top-10 overlap with exact {rec:.3f}  "
            f"peak RSS {_rss_mb():.0f} MB  load {_load()}",
            flush=True,
        )

    # one table, one dense matrix, one BM25 index, shared by every mode; the HNSW
    # graph is added to the same dense index after the exact measurements
    table = ChunkTable.of(chunks)
    t0 = time.perf_counter()
    dense = DenseIndex(vecs)
    t_dense = time.perf_counter() - t0
    bm25 = None
    t_bm25 = 0.0
    if any(m != "dense" for m in modes):
        t0 = time.perf_counter()
        bm25 = BM25Index.from_texts([c.text for c in chunks])
        t_bm25 = time.perf_counter() - t0
        print(
            f"BM25 index (tokenise + bm25s + impact bounds): {t_bm25:.1f} s  "
            f"peak RSS {_rss_mb():.0f} MB  load {_load()}",
            flush=True,
        )
        # the exact lexical top-100 (hybrid RRF's depth) of the impact postings against
        # scoring every row as before; equal lists make hybrid RRF identical
        same = sum(
            [r for r, _ in bm25.search(q, RRF_DEPTH)] == _old_rrf_lexical(bm25, q, RRF_DEPTH)
            for q in queries
        )
        _, p50, p95 = _latencies(lambda q: _old_rrf_lexical(bm25, q, RRF_DEPTH), queries)
        print(f"BM25 top-{RRF_DEPTH}, full scoring (before):  p50 {p50:7.2f} ms  p95 {p95:7.2f} ms")
        _, p50, p95 = _latencies(lambda q: bm25.search(q, RRF_DEPTH), queries)  # type: ignore[union-attr]
        print(
            f"BM25 top-{RRF_DEPTH}, impact postings + MaxScore: p50 {p50:7.2f} ms  "
            f"p95 {p95:7.2f} ms  identical lists: {same}/{len(queries)}",
            flush=True,
        )

    def retriever(mode: str) -> IndexedRetriever:
        rcfg = RetrievalConfig(mode=mode, top_k=10)  # type: ignore[arg-type]
        return IndexedRetriever(rcfg, table, dense=dense, bm25=bm25, embedder=emb)  # type: ignore[arg-type]

    for mode in modes:
        build = t_dense + (t_bm25 if mode != "dense" else 0.0)
        report("in-process exact", mode, build, retriever(mode))
    if not skip_memory and not skip_hnsw:
        t0 = time.perf_counter()
        dense.with_ann(HNSWParams())
        t_ann = time.perf_counter() - t0
        print(f"HNSW graph (faiss, M 16, ef_construction 128): {t_ann:.1f} s", flush=True)
        for mode in modes:
            if mode == "hybrid_weighted":
                continue  # min-max needs every dense score: never goes through the graph
            build = t_dense + t_ann + (t_bm25 if mode != "dense" else 0.0)
            report("in-process HNSW", mode, build, retriever(mode))
    if skip_pg:
        return
    from ragtriage.pgindex import PgServer, PgVectorRetriever

    home = Path(tempfile.mkdtemp(prefix="ragtriage-pg-bench-"))
    server = PgServer(data_dir=home)
    try:
        for ann in pg_ann:
            for mode in modes:
                index = IndexConfig(backend="pgvector", dsn=server.dsn, ann=ann)  # type: ignore[arg-type]
                t0 = time.perf_counter()
                r = PgVectorRetriever.build(
                    RetrievalConfig(mode=mode, top_k=10),  # type: ignore[arg-type]
                    index,
                    chunks,
                    emb,  # type: ignore[arg-type]
                    corpus=f"bench-{n}",
                    table_key={"bench": True},
                    vectors=vecs,
                )
                build_s = time.perf_counter() - t0
                # later builds of the same table only sync (0 rows written) or add HNSW
                report(f"pgvector {ann} ({r.changed} rows written)", mode, build_s, r)
                size = r._conn.execute(
                    f"SELECT pg_size_pretty(pg_total_relation_size('{r.table}')), "
                    f"pg_size_pretty(pg_total_relation_size('{r.table}_post'))"
                ).fetchone()
                print(f"    table {size[0]} (with indexes), postings {size[1]}", flush=True)
                r.close()
    finally:
        server.close()
        shutil.rmtree(home, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="part", required=True)
    d = sub.add_parser("diagnose")
    d.add_argument("--traces", type=int, default=20_000)
    d.add_argument("--batch-size", type=int, default=256)
    i = sub.add_parser("index")
    i.add_argument("--chunks", type=int, default=100_000)
    i.add_argument("--queries", type=int, default=200)
    i.add_argument("--skip-pg", action="store_true")
    i.add_argument("--modes", nargs="+", default=["dense", "hybrid_rrf"])
    i.add_argument(
        "--skip-memory", action="store_true", help="only the exact in-process index (reference)"
    )
    i.add_argument("--pg-ann", nargs="+", default=["exact", "hnsw"], choices=["exact", "hnsw"])
    i.add_argument("--skip-hnsw", action="store_true", help="no in-process HNSW graph")
    args = ap.parse_args()
    print(f"load average before: {_load()} ({os.cpu_count()} cores, shared)", flush=True)
    if args.part == "diagnose":
        bench_diagnose(args.traces, args.batch_size)
    else:
        bench_index(
            args.chunks,
            args.queries,
            args.skip_pg,
            args.modes,
            args.skip_memory,
            args.pg_ann,
            args.skip_hnsw,
        )
    print(f"load average after: {_load()}")


if __name__ == "__main__":
    main()
