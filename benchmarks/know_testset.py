"""Offline test-set generation on the demo corpus: how close the measured label
composition (re-labelled by the offline rules labeller) comes to the requested --mix,
for several mixes, all documents / English only / Chinese only.

The rules labeller and the offline templates share heuristics (a "summarise" cue, a
derived number, the answerable flag), so this measures that the generator produces what
the labeller recognises, not an independent judgement of the questions.

    .venv/bin/python benchmarks/know_testset.py [--limit 40]
"""

from __future__ import annotations

import argparse
import asyncio

from ragtriage.data import Dataset, load_demo
from ragtriage.know import (
    LABELS,
    OfflineGenerator,
    RulesCritic,
    RulesLabeller,
    composition,
    corpus_chunks,
    generate_testset,
    items_of,
    parse_mix,
)

MIXES = (
    "fact_single:0.4,summary:0.25,reasoning:0.25,unanswerable:0.1",
    "fact_single:0.2,summary:0.2,reasoning:0.5,unanswerable:0.1",
    "fact_single:0.7,reasoning:0.3",
    "summary:0.5,reasoning:0.5",
)


async def one(docs: list, mix: str, limit: int) -> tuple[float | None, str, int]:
    chunks = corpus_chunks(docs)
    wanted = parse_mix(mix)
    result = await generate_testset(
        docs,
        OfflineGenerator(docs, chunks),
        RulesCritic([d.text for d in docs]),
        mix=wanted,
        limit=limit,
        chunks=chunks,
    )
    data = Dataset(name="gen", documents=tuple(docs), examples=tuple(result.examples))
    decisions = await RulesLabeller().label_many(items_of(data))
    comp = composition(decisions, "gen", intended=wanted)
    shares = " ".join(f"{lab[:4]} {comp.share(lab) or 0:.2f}" for lab in LABELS)
    return comp.max_gap(), shares, len(result.examples)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=int, default=40)
    args = ap.parse_args()
    demo = load_demo()
    corpora = {
        "all": list(demo.documents),
        "en": [d for d in demo.documents if not d.doc_id.startswith("zh-")],
        "zh": [d for d in demo.documents if d.doc_id.startswith("zh-")],
    }
    for name, docs in corpora.items():
        for mix in MIXES:
            gap, shares, n = asyncio.run(one(docs, mix, args.limit))
            gap_text = "n/a" if gap is None else f"{gap * 100:.1f}"
            print(f"{name:3} n={n:3} max gap {gap_text:>5} points | {shares} | mix {mix}")


if __name__ == "__main__":
    main()
