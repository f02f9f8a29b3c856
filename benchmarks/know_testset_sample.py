"""The committed 50-question offline test-set sample of the demo corpus
(benchmarks/data/know/testset_sample.jsonl, written by
``ragtriage testset --demo --generator offline --limit 50 --seed 0`` before any score
was computed on it): its label mix measured by a labeller other than the generator's
own rules, and the pair-level agreement with the labels the generator intended.

The labeller is the rules labeller on the (context, question) pair alone: the
generator's answer is removed, so the rules cannot re-read what the generator wrote,
and unanswerable is decided from the context (no span of the expected answer type
about the question's terms), not from the generator's flag.

    .venv/bin/python benchmarks/know_testset_sample.py
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections import Counter
from pathlib import Path

from ragtriage.data import Dataset, load_demo
from ragtriage.jsonl import read_records
from ragtriage.know import LABELS, RulesLabeller, items_of, label_agreement
from ragtriage.records import Example

SAMPLE = Path(__file__).parent / "data" / "know" / "testset_sample.jsonl"


def main() -> None:
    demo = load_demo()
    examples = tuple(read_records(SAMPLE, Example))
    data = Dataset(name="sample", documents=demo.documents, examples=examples)
    items = [dataclasses.replace(i, answer="") for i in items_of(data)]
    decisions = asyncio.run(RulesLabeller().label_many(items))
    measured = {d.example_id: d.label for d in decisions}
    intended = {e.example_id: e.label or "" for e in examples}
    counts = Counter(measured.values())
    n = len(examples)
    print(f"{n} questions; intended vs measured share (rules on question + context only):")
    for lab in LABELS:
        want = sum(v == lab for v in intended.values())
        print(f"  {lab:13s} intended {want / n:5.1%}  measured {counts.get(lab, 0) / n:5.1%}")
    report = label_agreement({"intended": intended}, measured)
    print(
        f"pair agreement with the intended labels: {report.accuracy:.1%} kappa {report.kappa:.3f}"
    )
    for d in decisions:
        if d.label != intended[d.example_id]:
            print(f"  {d.example_id}: intended {intended[d.example_id]}, measured {d.label}")


if __name__ == "__main__":
    main()
