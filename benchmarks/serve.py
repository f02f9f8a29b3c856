"""Large runs in the web app (issue #16 item 3): prints numbers, not a test.

    .venv/bin/python benchmarks/serve.py                      # 100k traces, server + HTTP
    .venv/bin/python benchmarks/serve.py --traces 20000 --requests 30
    .venv/bin/python benchmarks/serve.py --direct             # time RunView calls only

1. Writes N synthetic but realistic traces (EN and ZH questions, ~120-word answers,
   four gold-document chunks, ten retrieved and five reranked hits with their text, a
   three-chunk context) and their diagnoses (stages, types with K=5 votes, evidence,
   advice, confidence, RAG-Critic tiers), plus ``eval/scores.jsonl`` per-trace metrics,
   into a temporary directory.
2. Times ``RunView.open``: the index build, then a reuse in a fresh process, and prints
   that process's RSS (what a server holds for the run).
3. Starts the real server (``python -m ragtriage serve ROOT --port P``) and times, with
   an HTTP client (keep-alive), each page type: runs list, run page, run page filtered by
   stage + text search, page 500 of a filter, trace pages (random ids); p50 / p95 per
   page type and the server's RSS (``/proc/PID/status``). Without the ``serve`` command
   (or with ``--direct``) it times the equivalent RunView calls in-process and says so.

The machine is shared: the load average is printed before and after.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from ragtriage.critic import tiers_of_ragec  # noqa: E402
from ragtriage.records import ERROR_TYPE_STAGE, Diagnosis, ErrorType, Trace  # noqa: E402
from ragtriage.runview import RunView, TraceFilter, discover_runs  # noqa: E402

TARGET_P95_MS = 200.0

_EN_SUBJECTS = ["Northwind Energy", "Acme Corp", "Globex", "Initech", "Umbrella Health"]
_EN_FACTS = [
    "opened a plant in Bergen in March {y}",
    "reported revenue of {n} million dollars in {y}",
    "appointed a new chief executive officer in {y}",
    "acquired a regional competitor for {n} million in {y}",
    "cut its carbon emissions by {p} percent between {y} and {y2}",
    "moved its headquarters to Oslo in {y}",
]
_ZH_SUBJECTS = ["北风能源", "星河科技", "华夏医疗", "东方银行", "绿洲农业"]
_ZH_FACTS = [
    "于{y}年在卑尔根开设了工厂",
    "在{y}年报告营收{n}百万元",
    "在{y}年任命了新的首席执行官",
    "在{y}年以{n}百万元收购了一家地区竞争对手",
    "在{y}年至{y2}年间减排{p}%",
]


def _fact(rng: random.Random, zh: bool) -> tuple[str, str]:
    y = rng.randint(1990, 2023)
    vals = {"y": y, "y2": y + rng.randint(1, 5), "n": rng.randint(5, 900), "p": rng.randint(3, 60)}
    if zh:
        s = rng.choice(_ZH_SUBJECTS)
        return s, s + rng.choice(_ZH_FACTS).format(**vals) + "。"
    s = rng.choice(_EN_SUBJECTS)
    return s, f"{s} {rng.choice(_EN_FACTS).format(**vals)}."


def _para(rng: random.Random, zh: bool, sentences: int) -> str:
    return ("" if zh else " ").join(_fact(rng, zh)[1] for _ in range(sentences))


def _trace(i: int, rng: random.Random) -> dict[str, Any]:
    zh = i % 4 == 3
    subject, gold = _fact(rng, zh)
    eid = f"ex{i:06d}"
    doc = f"doc{i % 5000:05d}"
    gt_chunks = []
    off = 0
    texts = [_para(rng, zh, 3) for _ in range(4)]
    texts[1] = gold + ("" if zh else " ") + texts[1]
    for k, t in enumerate(texts):
        gt_chunks.append(
            {
                "chunk_id": f"{doc}#{k}",
                "doc_id": doc,
                "text": t,
                "start": off,
                "end": off + len(t),
                "index": k,
            }
        )
        off += len(t) + 1
    others = [
        {
            "chunk_id": f"x{i}-{k}",
            "doc_id": f"other{(i + k) % 7000}",
            "text": _para(rng, zh, 3),
            "start": 0,
            "end": 0,
            "index": 0,
        }
        for k in range(6)
    ]
    for c in others:
        c["end"] = len(c["text"])
    pool = [c["chunk_id"] for c in gt_chunks] + [c["chunk_id"] for c in others]
    rng.shuffle(pool)
    doc_of = {c["chunk_id"]: c["doc_id"] for c in [*gt_chunks, *others]}
    retrieved = [
        {"chunk_id": cid, "doc_id": doc_of[cid], "score": round(1 - r * 0.07, 4), "rank": r + 1}
        for r, cid in enumerate(pool)
    ]
    reranked = [
        {"chunk_id": cid, "doc_id": doc_of[cid], "score": round(0.99 - r * 0.1, 4), "rank": r + 1}
        for r, cid in enumerate(pool[:5])
    ]
    q = (
        f"{subject}在哪一年发生了这件事？请结合年报说明。（问题 {i}）"
        if zh
        else f"When did {subject} do this, according to its annual report? (question {i})"
    )
    answer = _para(rng, zh, 8)
    return {
        "schema": 1,
        "trace_id": f"t{i:06d}",
        "run_id": "bench",
        "example": {
            "example_id": eid,
            "query": q,
            "answer": gold,
            "answerable": True,
            "doc_ids": [doc],
            "references": [gold],
            "keypoints": [gold[:30]],
            "gt_chunk_ids": [],
            "label": None,
            "language": "zh" if zh else "en",
            "metadata": {},
        },
        "config_hash": "bench",
        "gt_doc_chunks": gt_chunks,
        "chunks": others,
        "retrieved": retrieved,
        "reranked": reranked,
        "context": pool[:3],
        "dropped_context": [],
        "answer": answer,
        "citations": pool[:2],
        "stages": {
            "retrieval": {"latency_ms": round(rng.uniform(5, 40), 2)},
            "reranking": {"latency_ms": round(rng.uniform(20, 90), 2)},
            "generation": {
                "latency_ms": round(rng.uniform(300, 2000), 1),
                "prompt_tokens": 900,
                "completion_tokens": 150,
                "calls": 1,
            },
        },
        "metadata": {},
    }


def _diagnosis(i: int, rng: random.Random) -> dict[str, Any]:
    eid, tid = f"ex{i:06d}", f"t{i:06d}"
    base: dict[str, Any] = {
        "example_id": eid,
        "trace_id": tid,
        "run_id": "bench",
        "judge": "rules",
        "strategy": "ragec",
    }
    r = rng.random()
    if r < 0.25:
        return {
            **base,
            "answer_label": "correct",
            "answer_reason": "matches the gold answer",
            "needs_diagnosis": False,
            "confidence": round(rng.uniform(0.6, 1), 3),
        }
    if r < 0.27:
        return {
            **base,
            "answer_label": None,
            "needs_diagnosis": False,
            "undetermined": True,
            "undetermined_reason": "answer_evaluation: judge reply unparseable",
        }
    # generation half of the failures, as on real runs
    mode = rng.choice(
        [ErrorType.E10, ErrorType.E12, ErrorType.E13, ErrorType.E16] * 3
        + [
            ErrorType.E4,
            ErrorType.E5,
            ErrorType.E7,
            ErrorType.E8,
            ErrorType.E1,
            ErrorType.E3,
            ErrorType.E6,
            ErrorType.E2,
        ]
    )
    second = rng.choice([t for t in ErrorType if t is not mode])
    agree = rng.randint(2, 5)
    t1, t2 = tiers_of_ragec(mode)
    conf = round(rng.random(), 3)
    return {
        **base,
        "answer_label": "incorrect",
        "answer_reason": "the year differs from the gold",
        "needs_diagnosis": True,
        "stage": ERROR_TYPE_STAGE[mode].value,
        "stage_reason": "the gold chunk was retrieved and kept; the answer misreads it",
        "gt_chunk_ids": [f"doc{i % 5000:05d}#1"],
        "gt_chunk_source": "references",
        "error_type": mode.value,
        "second_type": second.value,
        "mode_frequency": agree / 5,
        "votes": [mode.value] * agree + [second.value] * (5 - agree),
        "evidence": ["chunk #1 holds the gold year", "the answer names another year"],
        "advice": [f"Advice for {mode.value}: check the prompt and the chunk size."],
        "confidence": conf,
        "low_confidence": conf < 0.5,
        "confidence_basis": "bench",
        "tier1": t1,
        "tier2": t2,
    }


def generate(run: Path, n: int, seed: int) -> None:
    rng = random.Random(seed)
    run.mkdir(parents=True, exist_ok=True)
    (run / "manifest.json").write_text(
        json.dumps(
            {
                "run_id": "bench",
                "created_at": "2026-11-24T00:00:00+00:00",
                "config_hash": "bench0001",
                "config": {},
            }
        ),
        encoding="utf-8",
    )
    (run / "eval").mkdir(exist_ok=True)
    with (
        (run / "traces.jsonl").open("w", encoding="utf-8") as ft,
        (run / "diagnoses.jsonl").open("w", encoding="utf-8") as fd,
        (run / "eval" / "scores.jsonl").open("w", encoding="utf-8") as fs,
    ):
        for i in range(n):
            t = _trace(i, rng)
            d = _diagnosis(i, rng)
            if i < 50:  # the generator writes valid records
                Trace.model_validate(t)
                Diagnosis.model_validate(d)
            ft.write(json.dumps(t, ensure_ascii=False) + "\n")
            fd.write(json.dumps(d, ensure_ascii=False) + "\n")
            s = {
                "trace_id": t["trace_id"],
                "example_id": t["example"]["example_id"],
                "scores": {
                    "faithfulness": {"value": round(rng.random(), 4), "judge": "offline"},
                    "f1": {"value": round(rng.random(), 4), "judge": "lexical"},
                },
            }
            fs.write(json.dumps(s) + "\n")


def rss_mb(pid: int | str = "self") -> tuple[float, float]:
    """(VmRSS, VmHWM) in MiB of a process."""
    out = {"VmRSS": 0.0, "VmHWM": 0.0}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in out:
            out[key] = int(rest.split()[0]) / 1024
    return out["VmRSS"], out["VmHWM"]


def _pct(ms: list[float]) -> str:
    a = np.asarray(ms)
    p95 = float(np.percentile(a, 95))
    flag = "ok" if p95 <= TARGET_P95_MS else f"OVER {TARGET_P95_MS:.0f} ms"
    return (
        f"p50 {np.percentile(a, 50):7.1f} ms  p95 {p95:7.1f} ms  max {a.max():7.1f} ms  "
        f"n={len(a)}  [{flag}]"
    )


def _child_open(run: str) -> None:
    t0 = time.perf_counter()
    view = RunView.open(Path(run))
    t1 = time.perf_counter()
    view.query(TraceFilter(stage="generation", text="annual"), page=1)
    t2 = time.perf_counter()
    rss, hwm = rss_mb()
    print(
        json.dumps(
            {
                "rebuilt": view.rebuilt,
                "open_s": t1 - t0,
                "first_query_s": t2 - t1,
                "rss_mb": rss,
                "hwm_mb": hwm,
            }
        )
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _serve_available() -> bool:
    proc = subprocess.run(
        [sys.executable, "-m", "ragtriage", "serve", "--help"],
        capture_output=True,
        env=_env(),
        timeout=120,
    )
    return proc.returncode == 0


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _word(rng: random.Random) -> str:
    """A search word: common ones (most questions hold them) and rare ones (a number),
    so most filtered requests miss the view's per-filter cache."""
    common = [*_EN_SUBJECTS, *_ZH_SUBJECTS, "annual", "report", "年报", "哪一年"]
    return rng.choice(common) if rng.random() < 0.5 else f"question {rng.randint(0, 99999)}"


def _pages(view: RunView, key: str, rng: random.Random, requests: int) -> dict[str, list[str]]:
    q = urllib.parse.quote
    big = TraceFilter(answer_label="incorrect")
    total = view.query(big, page_size=50).total
    last = min(500, max(1, total // 50))
    ids = view.trace_ids()
    return {
        "runs list": ["/"] * requests,
        "run page": [f"/runs/{q(key)}"] * requests,
        "run page stage+text": [
            f"/runs/{q(key)}?stage={rng.choice(['generation', 'retrieval'])}&q={q(w)}"
            for w in (_word(rng) for _ in range(requests))
        ],
        f"page {last} of a filter": [f"/runs/{q(key)}?answer_label=incorrect&page={last}"]
        * requests,
        "trace page": [
            f"/runs/{q(key)}/traces/{q(rng.choice(ids))}?stage=generation" for _ in range(requests)
        ],
    }


def _time_http(
    port: int, pages: dict[str, list[str]]
) -> tuple[dict[str, list[float]], dict[str, int]]:
    """Milliseconds per request and mean body bytes, per page type."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    out: dict[str, list[float]] = {}
    sizes: dict[str, int] = {}
    for name, urls in pages.items():
        for url in urls[:2]:  # warm-up (first render of a template, first filter)
            conn.request("GET", url)
            conn.getresponse().read()
        times = []
        total = 0
        for url in urls:
            t0 = time.perf_counter()
            conn.request("GET", url)
            resp = conn.getresponse()
            body = resp.read()
            times.append((time.perf_counter() - t0) * 1000)
            if resp.status != 200:
                raise SystemExit(f"GET {url}: HTTP {resp.status}: {body[:300]!r}")
            total += len(body)
        out[name] = times
        sizes[name] = total // max(1, len(urls))
    conn.close()
    return out, sizes


def _time_direct(
    root: Path, view: RunView, rng: random.Random, requests: int
) -> dict[str, list[float]]:
    def timed(fn: Callable[[], object]) -> list[float]:
        fn()
        out = []
        for _ in range(requests):
            t0 = time.perf_counter()
            fn()
            out.append((time.perf_counter() - t0) * 1000)
        return out

    ids = view.trace_ids()
    big = TraceFilter(answer_label="incorrect")
    last = min(500, max(1, view.query(big).total // 50))

    def trace_page() -> None:
        t = rng.choice(ids)
        flt = TraceFilter(stage="generation")
        view.trace(t)
        view.diagnosis(t)
        view.trace_metrics(t)
        view.neighbours(t, flt)

    def filtered() -> None:
        w = _word(rng)
        view.query(TraceFilter(stage=rng.choice(["generation", "retrieval"]), text=w))

    return {
        "runs list (discover_runs)": timed(lambda: discover_runs([root])),
        "run page (summary + page 1)": timed(lambda: (view.summary(), view.query(TraceFilter()))),
        "run page stage+text": timed(filtered),
        f"page {last} of a filter": timed(lambda: view.query(big, page=last)),
        "trace page (trace, diagnosis, scores, prev/next)": timed(trace_page),
    }


def _time_annotation(run: Path, view: RunView, rng: random.Random, n: int = 100) -> None:
    """Three annotators label the same n traces (saves: one fsynced line each), then
    the agreement panel is computed (it reads the annotated diagnoses by offset)."""
    from ragtriage.annotate import Annotation, AnnotationStore, agreement_panel, sample_order

    shutil.rmtree(run / "annotations", ignore_errors=True)
    store = AnnotationStore(run)
    t0 = time.perf_counter()
    order = sample_order(view, "stratified", seed=1)
    order_ms = (time.perf_counter() - t0) * 1000
    saves: list[float] = []
    for name in ("alice", "bob", "chen"):
        for tid in order[:n]:
            d = view.diagnosis(tid)
            stage = d.stage.value if d is not None and d.stage is not None else None
            if rng.random() < 0.2 or stage is None:
                a = Annotation(tid, name, "correct", None, (), None)
            else:
                a = Annotation(tid, name, "incorrect", stage, (), None, note="漏掉了 / missed")
            t0 = time.perf_counter()
            store.save(a)
            saves.append((time.perf_counter() - t0) * 1000)
    agreement_panel(run)  # the first call imports scikit-learn (about a second)
    # live: each save changes an annotation file, so the next panel is computed afresh
    panel_ms: list[float] = []
    for tid in order[n : n + 10]:
        store.save(Annotation(tid, "alice", "correct", None, (), None))
        t0 = time.perf_counter()
        panel = agreement_panel(run)
        panel_ms.append((time.perf_counter() - t0) * 1000)
    t0 = time.perf_counter()
    agreement_panel(run)
    cached_ms = (time.perf_counter() - t0) * 1000
    fleiss = panel.fleiss.value
    print(
        f"annotation: stratified order of {view.n} traces {order_ms:.0f} ms; "
        f"save (append + fsync) {_pct(saves)}"
    )
    print(
        f"agreement panel, 3 annotators x ~{n} traces, after each save: {_pct(panel_ms)}; "
        f"unchanged (cached) {cached_ms:.1f} ms (Fleiss κ "
        f"{fleiss if fleiss is None else round(fleiss, 3)})"
    )
    shutil.rmtree(run / "annotations", ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--traces", type=int, default=100_000)
    ap.add_argument("--requests", type=int, default=50, help="requests per page type")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dir", type=Path, default=None, help="keep the data here (reused)")
    ap.add_argument("--direct", action="store_true", help="time RunView calls, no server")
    ap.add_argument("--child-open", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child_open:
        _child_open(args.child_open)
        return

    print(
        f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}, "
        f"{os.cpu_count()} CPUs"
    )
    tmp = args.dir or Path(tempfile.mkdtemp(prefix="ragtriage-serve-bench-"))
    run = tmp / "bench"
    try:
        if (
            not (run / "traces.jsonl").is_file()
            or sum(1 for _ in (run / "traces.jsonl").open("rb")) != args.traces
        ):
            shutil.rmtree(run, ignore_errors=True)
            t0 = time.perf_counter()
            generate(run, args.traces, args.seed)
            size = (run / "traces.jsonl").stat().st_size + (run / "diagnoses.jsonl").stat().st_size
            print(
                f"generated {args.traces} traces + diagnoses ({size / 2**20:.0f} MiB) in "
                f"{time.perf_counter() - t0:.1f} s under {tmp}"
            )
        shutil.rmtree(run / ".ragtriage-index", ignore_errors=True)
        t0 = time.perf_counter()
        view = RunView.open(run)
        build_s = time.perf_counter() - t0
        rss, hwm = rss_mb()
        print(
            f"RunView.open, index build: {build_s:.1f} s (rebuilt={view.rebuilt}); "
            f"this process: RSS {rss:.0f} MiB, peak {hwm:.0f} MiB"
        )
        child = subprocess.run(
            [sys.executable, __file__, "--child-open", str(run)],
            capture_output=True,
            text=True,
            env=_env(),
            timeout=600,
            check=True,
        )
        info = json.loads(child.stdout.strip().splitlines()[-1])
        print(
            f"RunView.open, index reuse (fresh process): {info['open_s'] * 1000:.0f} ms "
            f"(rebuilt={info['rebuilt']}), first filtered query {info['first_query_s'] * 1000:.0f} ms; "
            f"RSS after open + query: {info['rss_mb']:.0f} MiB (peak {info['hwm_mb']:.0f} MiB)"
        )
        s = view.summary()
        print(
            f"run: {s.n_traces} traces, accuracy {s.accuracy:.3f}, failing {s.failing}, "
            f"stages {dict(s.stages)}"
        )

        rng = random.Random(args.seed)
        _time_annotation(run, view, rng)
        direct = args.direct or not _serve_available()
        if direct:
            why = "--direct" if args.direct else "`ragtriage serve` is not available on this branch"
            print(f"\nNO SERVER ({why}): timing the equivalent RunView calls in-process")
            times = _time_direct(tmp, view, rng, args.requests)
            for name, ms in times.items():
                print(f"  {name:50s} {_pct(ms)}")
            rss, hwm = rss_mb()
            print(f"this process after the calls: RSS {rss:.0f} MiB (includes the build above)")
            return
        port = _free_port()
        server = subprocess.Popen(
            [sys.executable, "-m", "ragtriage", "serve", str(tmp), "--port", str(port)],
            env=_env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            t0 = time.perf_counter()
            while True:
                if server.poll() is not None:
                    err = server.stderr.read().decode() if server.stderr else ""
                    raise SystemExit(f"server exited with {server.returncode}: {err[-2000:]}")
                try:
                    c = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
                    c.request("GET", "/")
                    c.getresponse().read()
                    c.close()
                    break
                except OSError:
                    if time.perf_counter() - t0 > 300:
                        raise SystemExit("server did not answer within 300 s") from None
                    time.sleep(0.2)
            print(
                f"\nserver up (first GET / answered) after {time.perf_counter() - t0:.1f} s; "
                f"RSS {rss_mb(server.pid)[0]:.0f} MiB"
            )
            key = next(e.key for e in discover_runs([tmp]) if e.path.resolve() == run.resolve())
            times, sizes = _time_http(port, _pages(view, key, rng, args.requests))
            print(
                f"HTTP GET timings ({args.requests} requests per page type, keep-alive, "
                f"after 2 warm-up requests each):"
            )
            for name, ms in times.items():
                print(f"  {name:28s} {_pct(ms)}  ~{sizes[name] / 1024:.0f} KiB")
            rss, hwm = rss_mb(server.pid)
            print(f"server RSS: {rss:.0f} MiB (peak {hwm:.0f} MiB)")
        finally:
            server.terminate()
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                server.kill()
    finally:
        print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        if args.dir is None:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
