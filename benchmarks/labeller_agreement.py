"""Agreement of a labels file written by ``ragtriage label`` (any labeller) with the demo
corpus' own labels and the hand labels of benchmarks/data/know/ (docs/llm_paths.md).

    ragtriage label demo --labeller llm --config benchmarks/data/natural/llm_judge.yaml \\
        --cache /tmp/lbl.sqlite --out /tmp/lbl \\
        --llm-batch-in benchmarks/data/know/replies_llm_labeller_demo.jsonl \\
        --llm-batch-in benchmarks/data/know/replies_llm_labeller_sourced.jsonl \\
        --llm-batch-out /tmp/lbl-batch
    .venv/bin/python benchmarks/labeller_agreement.py /tmp/lbl/labels.jsonl
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ragtriage.data import load_demo
from ragtriage.know import label_agreement, read_label_column

HERE = Path(__file__).parent / "data" / "know"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("labels", type=Path, help="labels.jsonl of 'ragtriage label'")
    args = ap.parse_args()
    machine: dict[str, str] = {}
    for line in args.labels.read_text(encoding="utf-8").splitlines():
        if line.strip():
            obj = json.loads(line)
            machine[str(obj["example_id"])] = str(obj["label"])
    given = {e.example_id: e.label for e in load_demo().examples if e.label}
    against = {"dataset labels": {"dataset": given}}
    for name in ("hand_labels.csv", "hand_labels_heldout.csv"):
        against[name] = read_label_column(HERE / name)
    for name, human in against.items():
        r = label_agreement(human, machine)
        print(f"{name}: {r.items} items, accuracy {r.accuracy:.1%}, kappa {r.kappa:.3f}")
    counts: dict[str, int] = {}
    for lab in machine.values():
        counts[lab] = counts.get(lab, 0) + 1
    print("label mix: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))


if __name__ == "__main__":
    main()
