"""Build the traces of one natural-answer part (benchmarks/data/natural/, issue #26).

::

    # round 1: export the generator's requests (nothing else is written)
    .venv/bin/python benchmarks/natural_build.py --part nat1 --batch-out /tmp/nat1-batch
    # answer /tmp/nat1-batch/requests.jsonl (a capable model, OpenAI Batch API output
    # format), keep the output as benchmarks/data/natural/nat1/replies/generator.jsonl, then
    .venv/bin/python benchmarks/natural_build.py --part nat1 \\
        --batch-in benchmarks/data/natural/nat1/replies/generator.jsonl

Runs ragtriage's real pipeline (chunk, embed/index, retrieve, rerank, generate) with the
part's ``openai`` generator over every example of ``<part>/dataset``, one pipeline config
per case (``<part>/cases.jsonl``: ``config``, optional ``retrieval_query``, ``simulated``).
Nothing is called live: the generator's chat requests go through batch mode
(:class:`ragtriage.llm.BatchSession`); the answers are the replies imported from the
committed replies files, so the build reruns offline and byte for byte.

A ``retrieval_query`` simulates a faulty query rewrite (e.g. one that dropped one of two
companies): retrieval runs on that text, while the reranker and the generator see the
user's question, as in a pipeline with a rewrite step. The trace records the text in
``metadata.retrieval_query`` and ``metadata.query_transform``.

Output: ``<part>/traces.jsonl`` (run id ``natural-<part>``; stage timings dropped so the
file is deterministic; ``metadata.answer_source`` = ``capable-model-offline``). With
``--preview FILE`` a plain-text view of each case for blind labelling (question, ground
truth, where the ground-truth chunks went, the context, the answer -- never a diagnosis).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from ragtriage.config import load_config
from ragtriage.data import Dataset, load_dataset
from ragtriage.jsonl import iter_json_lines, write_jsonl
from ragtriage.llm import BatchSession
from ragtriage.pipeline import Pipeline, metered_client
from ragtriage.query_transforms import TransformedQuery
from ragtriage.records import Example, Trace

ROOT = Path(__file__).resolve().parent / "data" / "natural"


class FixedRewrite:
    """A query transformer that returns one given text: a simulated faulty rewrite."""

    def __init__(self, text: str) -> None:
        self._text = text

    async def transform(self, query: str, *, language: str) -> TransformedQuery:
        return TransformedQuery(method="simulated_rewrite", original=query, queries=(self._text,))


def read_cases(path: Path) -> dict[str, dict[str, Any]]:
    cases: dict[str, dict[str, Any]] = {}
    for lineno, obj in iter_json_lines(path):
        if not isinstance(obj, dict) or "example_id" not in obj:
            raise SystemExit(f"{path}:{lineno}: a case needs example_id")
        cases[str(obj["example_id"])] = obj
    return cases


def build(
    part_dir: Path, dataset: Dataset, cases: dict[str, dict[str, Any]], session: BatchSession
) -> list[Trace] | None:
    """Every example's trace, or ``None`` when requests are still unanswered."""
    part = part_dir.name
    pipelines: dict[tuple[str, str | None], Pipeline] = {}

    def pipeline_for(config: str, rewrite: str | None) -> Pipeline:
        key = (config, rewrite)
        if key not in pipelines:
            cfg = load_config(part_dir / config)
            pipe = Pipeline.from_config(cfg, dataset).with_runner(
                session.runner(client=metered_client)
            )
            if rewrite:
                # the pipeline has no rewrite step of its own: a simulated one is set in
                pipe._transformer = FixedRewrite(rewrite)  # type: ignore[assignment]
            pipelines[key] = pipe
        return pipelines[key]

    async def one(example: Example) -> Trace:
        case = cases.get(example.example_id) or {}
        pipe = pipeline_for(str(case.get("config") or "pipeline.yaml"), case.get("retrieval_query"))
        return await pipe.run_example(example, run_id=f"natural-{part}")

    async def run_all() -> list[Trace]:
        try:
            return [await one(e) for e in dataset.examples]
        finally:
            for p in pipelines.values():
                await p.aclose()

    traces = asyncio.run(run_all())
    if session.finish():
        return None
    out: list[Trace] = []
    for example, trace in zip(dataset.examples, traces, strict=True):
        case = cases.get(example.example_id) or {}
        error = trace.metadata.get("error")
        if error is not None:
            raise SystemExit(f"{example.example_id}: pipeline failed: {error}")
        meta = dict(example.metadata)
        meta["simulated"] = case.get("simulated")
        trace_meta: dict[str, Any] = {
            "language": trace.metadata.get("language"),
            "answer_source": "capable-model-offline",
            "pipeline_config": str(case.get("config") or "pipeline.yaml"),
            "generation": trace.metadata.get("generation"),
        }
        if case.get("retrieval_query"):
            trace_meta["retrieval_query"] = case["retrieval_query"]
            trace_meta["query_transform"] = trace.metadata.get("query_transform")
        out.append(
            trace.model_copy(
                update={
                    "example": example.model_copy(update={"metadata": meta}),
                    "stages": {},
                    "metadata": trace_meta,
                }
            )
        )
    return out


def preview(traces: list[Trace]) -> str:
    """Where each case's ground-truth documents went, the context and the answer."""
    out: list[str] = []
    for t in traces:
        ex = t.example
        texts = {c.chunk_id: c.text for c in [*t.gt_doc_chunks, *t.chunks]}
        ret = [h.chunk_id for h in t.retrieved]
        rer = [h.chunk_id for h in t.reranked]
        out.append(f"=== {ex.example_id} [{ex.label}] answerable={ex.answerable}")
        out.append(f"Q: {ex.query}")
        if t.metadata.get("retrieval_query"):
            out.append(f"RETRIEVAL QUERY (a simulated rewrite): {t.metadata['retrieval_query']}")
        out.append(f"GROUND TRUTH: {ex.answer}")
        out.append(f"REFERENCES: {json.dumps(ex.references, ensure_ascii=False)}")
        for c in t.gt_doc_chunks:
            has = [r for r in ex.references if r and r in c.text]
            where = (
                f"retrieved@{ret.index(c.chunk_id) + 1}" if c.chunk_id in ret else "not retrieved",
                f"reranked@{rer.index(c.chunk_id) + 1}" if c.chunk_id in rer else "not reranked",
                "IN CONTEXT" if c.chunk_id in t.context else "not in context",
            )
            out.append(
                f"  gt-doc chunk {c.chunk_id}: {' / '.join(where)}; whole refs inside={len(has)}"
            )
            out.append(f"      text: {c.text}")
        out.append(f"CONTEXT given to the generator ({len(t.context)} chunks):")
        for i, cid in enumerate(t.context, 1):
            out.append(f"  [{i}] {cid}: {texts.get(cid, '?')}")
        out.append(f"ANSWER: {t.answer}")
        out.append("")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--part", required=True, help="part name under benchmarks/data/natural")
    ap.add_argument("--batch-out", type=Path, help="export unanswered requests here")
    ap.add_argument("--batch-in", type=Path, action="append", default=[], help="replies file")
    ap.add_argument("--cache", type=Path, help="LLM cache file (default: a fresh one in /tmp)")
    ap.add_argument("--out", type=Path, help="traces file (default: <part>/traces.jsonl)")
    ap.add_argument("--preview", type=Path, help="also write a text view for labelling")
    args = ap.parse_args()
    part_dir = ROOT / args.part
    dataset = load_dataset(part_dir / "dataset")
    cases = read_cases(part_dir / "cases.jsonl")
    unknown = sorted(set(cases) - {e.example_id for e in dataset.examples})
    if unknown:
        raise SystemExit(f"cases.jsonl names examples not in the dataset: {unknown}")
    replies = list(args.batch_in)
    if not replies and (part_dir / "replies").is_dir():
        replies = sorted((part_dir / "replies").glob("*.jsonl"))
    cache = args.cache or Path(f"/tmp/natural-{args.part}-cache.sqlite")
    if args.cache is None and cache.exists():
        cache.unlink()  # the committed replies files are the source of truth
    cfg = load_config(part_dir / "pipeline.yaml")
    session = BatchSession(
        cfg.llm,
        out_dir=args.batch_out or Path(f"/tmp/natural-{args.part}-batch"),
        inputs=replies,
        cache_path=cache,
        log=lambda line: print(line, file=sys.stderr),
    )
    session.start()
    traces = build(part_dir, dataset, cases, session)
    if traces is None:
        print("requests exported; answer them and run again with --batch-in", file=sys.stderr)
        return
    out = args.out or part_dir / "traces.jsonl"
    write_jsonl(out, traces)
    if args.preview:
        args.preview.write_text(preview(traces), encoding="utf-8")
    print(f"{len(traces)} traces -> {out}")


if __name__ == "__main__":
    main()
