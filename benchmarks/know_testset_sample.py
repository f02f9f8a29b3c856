"""The committed 50-question offline test-set sample of the demo corpus
(benchmarks/data/know/testset_sample.jsonl, written by
``ragtriage testset --demo --generator offline --limit 50 --seed 0`` before any score
was computed on it): its label mix measured by a labeller other than the generator's
own rules, and the pair-level agreement with the labels the generator intended.

The labeller is the rules labeller on the (context, question) pair alone: the
generator's answer is removed, so the rules cannot re-read what the generator wrote,
and unanswerable is decided from the context (no span of the expected answer type
about the question's terms), not from the generator's flag.

    .venv/bin/python benchmarks/know_testset_sample.py [--sample FILE]

``--sample`` picks another committed sample (``testset_sample_v2.jsonl``: seed 1 after the
first round of generator fixes; ``testset_sample_v3.jsonl``: seed 2 after the second; ``testset_sample_v4.jsonl``: seed 3
after questions name entities as a user would). When
``<sample>_judgements.jsonl`` lies beside it (a blind judge's verdicts, written before any
score), their counts are printed too.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
from collections import Counter
from pathlib import Path

from ragtriage.data import Dataset, load_demo
from ragtriage.jsonl import read_records
from ragtriage.know import LABELS, RulesLabeller, items_of, label_agreement
from ragtriage.records import Example

SAMPLE = Path(__file__).parent / "data" / "know" / "testset_sample.jsonl"


def _judged(sample: Path) -> None:
    path = sample.with_name(sample.stem + "_judgements.jsonl")
    if not path.is_file():
        return
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    meant = [r for r in rows if r.get("plausible") is None]
    unans = [r for r in rows if r.get("plausible") is not None]
    print(
        f"blind judge ({path.name}): fluent {sum(bool(r['fluent']) for r in rows)}/{len(rows)}, "
        f"stand-alone {sum(bool(r['stand_alone']) for r in rows)}/{len(rows)}, answerable "
        f"{sum(r.get('answerable') is True for r in meant)}/{len(meant)}, unanswerable "
        f"plausible {sum(r.get('plausible') is True for r in unans)}/{len(unans)}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sample", type=Path, default=SAMPLE)
    args = ap.parse_args()
    _judged(args.sample)
    demo = load_demo()
    examples = tuple(read_records(args.sample, Example))
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
