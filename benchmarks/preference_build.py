"""Build the answer pairs of the pairwise human-preference set (issue #28).

::

    .venv/bin/python benchmarks/preference_build.py --out benchmarks/data/preference/pairs.jsonl \
        --parts nat1 nat2 nat3 nat4
    # the held-out second set (built after the first set's scores were seen)
    .venv/bin/python benchmarks/preference_build.py --out benchmarks/data/preference2/pairs.jsonl \
        --parts nat5 nat6 nat7 nat8 --seed 1

For every natural-answer trace (benchmarks/data/natural/*/traces.jsonl) the pair is the
capable model's answer (the trace's answer) and the answer of ragtriage's offline
``extractive_multi`` generator given *the same question and the same context chunks*:
two pipelines that differ only in their generator. Which one is ``answer_a`` is decided
by a seeded coin per pair, so position says nothing. Each row:
``{pair_id, part, example_id, language, question, ground_truth, answer_a, answer_b,
source_a, source_b}``; people add ``judgements`` ([{annotator, correctness, completeness}],
-2..2, positive = A better) blind to every score, in a separate file.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
from pathlib import Path

from ragtriage.config import GenerationConfig
from ragtriage.generation import make_generator
from ragtriage.jsonl import read_records, write_jsonl
from ragtriage.records import Trace

ROOT = Path(__file__).resolve().parent / "data" / "natural"


async def _extractive(traces: list[Trace]) -> list[str]:
    gen = make_generator(GenerationConfig(backend="extractive_multi", max_tokens=200))
    out = []
    for t in traces:
        chunks = {c.chunk_id: c for c in [*t.gt_doc_chunks, *t.chunks]}
        context = [chunks[cid] for cid in t.context]
        language = str(t.metadata.get("language") or t.example.language or "en")
        g = await gen.generate(t.example.query, context, language=language)
        out.append(g.answer)
    return out


def build(seed: int = 0, parts: list[str] | None = None) -> list[dict[str, object]]:
    """The pairs of ``parts`` (default: every part with traces), coins seeded by ``seed``."""
    rng = random.Random(seed)
    rows: list[dict[str, object]] = []
    for part in sorted(p for p in ROOT.iterdir() if (p / "traces.jsonl").is_file()):
        if parts is not None and part.name not in parts:
            continue
        traces = list(read_records(part / "traces.jsonl", Trace))
        other = asyncio.run(_extractive(traces))
        for t, ext in zip(traces, other, strict=True):
            pair = [("capable-model", t.answer), ("extractive_multi", ext)]
            if rng.random() < 0.5:
                pair.reverse()
            rows.append(
                {
                    "pair_id": f"pref-{t.example.example_id}",
                    "part": part.name,
                    "example_id": t.example.example_id,
                    "language": str(t.metadata.get("language") or t.example.language or "en"),
                    "question": t.example.query,
                    "ground_truth": t.example.answer,
                    "answer_a": pair[0][1],
                    "answer_b": pair[1][1],
                    "source_a": pair[0][0],
                    "source_b": pair[1][0],
                }
            )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--parts", nargs="+", default=None, help="only these parts (default: all with traces)"
    )
    args = ap.parse_args()
    rows = build(args.seed, args.parts)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_jsonl(args.out, rows)
    same = sum(1 for r in rows if r["answer_a"] == r["answer_b"])
    print(f"{len(rows)} pairs -> {args.out} ({same} with identical answers)")
    print(json.dumps({"languages": sorted({str(r["language"]) for r in rows})}))


if __name__ == "__main__":
    main()
