"""Accuracy of the offline question-type labeller (ragtriage.know.RulesLabeller) against
hand labels of demo questions (benchmarks/data/know/).

``hand_labels.csv`` (40 items) was used while writing the rules, so its figure is
optimistic; ``hand_labels_heldout.csv`` (30 other items) was labelled before the rules
were run on it and was not tuned on. Also prints agreement with the labels the demo
corpus ships with (written by other developers: a second annotator).

    .venv/bin/python benchmarks/know_labels.py
"""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

from ragtriage.data import load_demo
from ragtriage.know import RulesLabeller, items_of, label_agreement, read_label_column

HERE = Path(__file__).parent / "data" / "know"


def main() -> None:
    dataset = load_demo()
    decisions = asyncio.run(RulesLabeller().label_many(items_of(dataset)))
    machine = {d.example_id: d.label for d in decisions}
    given = {e.example_id: e.label for e in dataset.examples if e.label}
    for name in ("hand_labels.csv", "hand_labels_heldout.csv"):
        human = read_label_column(HERE / name)
        report = label_agreement(human, machine)
        both = label_agreement({**human, "dataset": given}, machine)
        ds_vs_hand = label_agreement(human, given)
        print(
            f"{name}: {report.items} items; rules vs hand accuracy {report.accuracy:.1%} "
            f"kappa {report.kappa:.3f}; dataset labels vs hand accuracy "
            f"{ds_vs_hand.accuracy:.1%} kappa {ds_vs_hand.kappa:.3f}"
        )
        for a in both.annotators:
            print(
                f"  two annotators (hand, dataset): {a.annotator}: "
                f"kappa(A_i, M-A_i) {a.kappa_annotator:.3f}, "
                f"kappa(rules, M-A_i) {a.kappa_labeller:.3f}"
            )
    all_given = label_agreement({"dataset": given}, machine)
    print(
        f"all {all_given.items} demo questions: rules vs dataset labels accuracy "
        f"{all_given.accuracy:.1%} kappa {all_given.kappa:.3f}"
    )
    # seed 001 labels the (context, question) pair: the same rules without the gold answer
    bare = [dataclasses.replace(i, answer="") for i in items_of(dataset)]
    alone = {d.example_id: d.label for d in asyncio.run(RulesLabeller().label_many(bare))}
    for name in ("hand_labels.csv", "hand_labels_heldout.csv"):
        r = label_agreement(read_label_column(HERE / name), alone)
        print(f"{name}, question + context only: accuracy {r.accuracy:.1%} kappa {r.kappa:.3f}")
    flagged = {k for k, v in given.items() if v == "unanswerable"}
    found = {k for k, v in alone.items() if v == "unanswerable"}
    print(
        f"unanswerable from question + context only: {len(found & flagged)} of {len(flagged)} "
        f"dataset-unanswerable found, {len(found - flagged)} false alarms among "
        f"{len(given) - len(flagged)}"
    )


if __name__ == "__main__":
    main()
