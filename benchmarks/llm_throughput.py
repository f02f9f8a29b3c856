"""Throughput of LLMRunner(OpenAICompatible) against a local server with fixed latency.

Run: .venv/bin/python benchmarks/llm_throughput.py [--calls 500] [--concurrency 32]
     [--latency 0.2] [--server process|thread] [--transport auto|aiohttp|httpx]
     [--baseline] [--repeat N]

Pass 1 sends CALLS distinct requests through a fresh cache and compares the wall time
with the ideal CALLS × LATENCY / CONCURRENCY (target: ideal/achieved ≥ 0.90).
Pass 2 sends the identical batch again through the same cache: it must make 0 HTTP calls.
``--baseline`` also times the bare SDK (one AsyncOpenAI, a semaphore, no runner) on the
same batch, to separate the runner's overhead from the machine's. ``--transport`` picks
the HTTP transport under the SDK (``llm.http_transport``; default auto = aiohttp).

By default the server runs in a child process, as a real endpoint would (its CPU work
then does not compete for this process's GIL); ``--server thread`` runs it in-process.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

import openai

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from llm_server import Behaviour, LocalLLMServer  # noqa: E402
from ragtriage.config import LLMConfig  # noqa: E402
from ragtriage.llm import (  # noqa: E402
    ChatRequest,
    Completion,
    LLMRunner,
    OpenAICompatible,
    ResponseCache,
    run_sync,
)


def _requests(calls: int) -> list[ChatRequest]:
    return [
        ChatRequest.of(
            "You are a careful judge.",
            f"Question {i}: is the answer supported by the context? Reply yes or no.",
            max_tokens=16,
        )
        for i in range(calls)
    ]


async def _runner_batch(
    base_url: str,
    cache_path: Path,
    requests: list[ChatRequest],
    concurrency: int,
    transport: Literal["auto", "aiohttp", "httpx"],
) -> tuple[float, list[Completion], int]:
    config = LLMConfig(
        base_url=base_url,
        model="bench",
        concurrency=concurrency,
        timeout_s=30,
        max_retries=2,
        http_transport=transport,
    )
    with ResponseCache(cache_path) as cache:
        runner = LLMRunner(OpenAICompatible(config), config, cache=cache)
        started = time.perf_counter()
        outcomes = await runner.complete_many(requests, purpose="bench")
        wall = time.perf_counter() - started
        await runner.aclose()
    done = [o for o in outcomes if isinstance(o, Completion)]
    return wall, done, len(outcomes) - len(done)


async def _baseline_batch(base_url: str, requests: list[ChatRequest], concurrency: int) -> float:
    sdk = openai.AsyncOpenAI(base_url=base_url, api_key="x", max_retries=0, timeout=30)
    gate = asyncio.Semaphore(concurrency)

    async def one(request: ChatRequest) -> object:
        body = {
            "model": "bench",
            "messages": [m.model_dump() for m in request.messages],
            "max_tokens": request.max_tokens,
        }
        async with gate:
            return await sdk.post("/chat/completions", body=body, cast_to=object)

    started = time.perf_counter()
    await asyncio.gather(*(one(r) for r in requests))
    wall = time.perf_counter() - started
    await sdk.close()
    return wall


def _run(base_url: str, count_requests: Callable[[], int], args: argparse.Namespace) -> None:
    requests = _requests(args.calls)
    ideal = args.calls * args.latency / args.concurrency
    print(
        f"{args.calls} requests, concurrency {args.concurrency}, server latency "
        f"{args.latency:g}s ({args.server} server, {args.transport} transport); "
        f"ideal wall {ideal:.3f}s"
    )
    ratios: list[float] = []
    baseline_ratios: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(args.repeat):
            if args.baseline:
                before = count_requests()
                cpu = time.process_time()
                wall = run_sync(_baseline_batch(base_url, requests, args.concurrency))
                cpu = time.process_time() - cpu
                baseline_ratios.append(ideal / wall)
                print(
                    f"  baseline (bare AsyncOpenAI + semaphore): "
                    f"{count_requests() - before} HTTP calls, wall {wall:.3f}s, "
                    f"ideal/achieved {ideal / wall:.3f}; CPU {1000 * cpu / args.calls:.2f} ms/request"
                )
            cache_path = Path(tmp) / f"cache{rep}.sqlite"
            before = count_requests()
            cpu = time.process_time()
            wall, _, failures = run_sync(
                _runner_batch(base_url, cache_path, requests, args.concurrency, args.transport)
            )
            cpu = time.process_time() - cpu
            ratios.append(ideal / wall)
            print(
                f"pass 1 (cold cache): {count_requests() - before} HTTP calls, {failures} failures, "
                f"wall {wall:.3f}s, ideal/achieved {ideal / wall:.3f}; "
                f"CPU of this process {1000 * cpu / args.calls:.2f} ms/request"
            )
        if args.repeat > 1:
            print(
                f"pass 1 ideal/achieved over {args.repeat} runs: median "
                f"{statistics.median(ratios):.3f}, best {max(ratios):.3f} (target >= 0.90)"
                + (
                    f"; bare-SDK baseline median {statistics.median(baseline_ratios):.3f}"
                    if baseline_ratios
                    else ""
                )
            )
        before = count_requests()
        wall2, done2, failures2 = run_sync(
            _runner_batch(base_url, cache_path, requests, args.concurrency, args.transport)
        )
        new_calls = count_requests() - before
        cached = sum(c.cached for c in done2)
        print(
            f"pass 2 (warm cache, same batch): {new_calls} new HTTP calls (must be 0), "
            f"{cached}/{args.calls} cached, {failures2} failures, wall {wall2:.3f}s"
        )


@contextmanager
def _server(args: argparse.Namespace) -> Iterator[tuple[str, Callable[[], int]]]:
    if args.server == "thread":
        with LocalLLMServer(Behaviour(delay_s=args.latency)) as server:
            yield server.base_url, lambda: server.chat_requests
        return
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "llm_server.py"), "--delay", str(args.latency)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        base_url = proc.stdout.readline().strip()

        def chat_requests() -> int:
            with urllib.request.urlopen(f"{base_url}/_stats", timeout=10) as resp:
                return int(json.load(resp)["chat"])

        yield base_url, chat_requests
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--server", choices=("process", "thread"), default="process")
    parser.add_argument("--transport", choices=("auto", "aiohttp", "httpx"), default="auto")
    parser.add_argument("--baseline", action="store_true", help="also time the bare SDK")
    parser.add_argument("--repeat", type=int, default=1, help="repeat pass 1, report the median")
    args = parser.parse_args()
    with _server(args) as (base_url, count_requests):
        _run(base_url, count_requests, args)


if __name__ == "__main__":
    main()
