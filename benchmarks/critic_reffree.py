"""The reference-free critic (``ragtriage critic``, ``--critic rules``) against human labels.

Runs the critic (no gold answer read) on every trace of the labelled parts — the natural
parts ``benchmarks/data/natural/nat*`` and the real-style parts
``benchmarks/data/realstyle/*`` — and counts, against the human answer labels (a trace
whose label has no failing ``stage`` passes: correct, possible_correct, a warranted
abstention; one with a stage fails):

* passing answers called Correct, failing answers called Error;
* **false errors**: a passing answer called Error, by the finding kind that made it one;
* missed errors: a failing answer called Correct; undetermined verdicts.

An example whose annotators disagree on pass/fail is left out (counted).

    python benchmarks/critic_reffree.py                       # natural + real-style
    python benchmarks/critic_reffree.py --set natural --list false-errors.jsonl

``--list FILE`` writes one line per false error (id, question, prediction, findings) so two
versions of the critic can be compared case by case.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from ragtriage.calibrate.agreement import read_labels  # noqa: E402
from ragtriage.cli.diagnose import read_traces  # noqa: E402
from ragtriage.critic._critic import CriticInput  # noqa: E402
from ragtriage.critic._reffree import reference_free_findings  # noqa: E402

SETS = {
    "natural": ROOT / "benchmarks" / "data" / "natural",
    "realstyle": ROOT / "benchmarks" / "data" / "realstyle",
}


def _parts(root: Path) -> list[Path]:
    return sorted(
        (
            p
            for p in root.iterdir()
            if (p / "traces.jsonl").is_file() and (p / "labels.jsonl").is_file()
        ),
        key=lambda p: (len(p.name), p.name),
    )


def _human_pass(path: Path) -> tuple[dict[str, bool], int]:
    """example id → the answer passes (no failing stage); examples whose annotators
    disagree are left out and counted."""
    votes: dict[str, set[bool]] = {}
    for lab in read_labels(path):
        votes.setdefault(lab.example_id, set()).add(lab.stage is None)
    return {k: next(iter(v)) for k, v in votes.items() if len(v) == 1}, sum(
        len(v) > 1 for v in votes.values()
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", choices=[*SETS, "all"], default="all")
    ap.add_argument("--list", type=Path, help="write the false errors here (JSONL)")
    args = ap.parse_args()
    names = list(SETS) if args.set == "all" else [args.set]
    listed: list[dict[str, object]] = []
    t0 = time.perf_counter()
    for name in names:
        n: Counter[str] = Counter()
        false_kinds: Counter[str] = Counter()
        caught_kinds: Counter[str] = Counter()
        for part in _parts(SETS[name]):
            passes, disputed = _human_pass(part / "labels.jsonl")
            n["disputed"] += disputed
            for trace in read_traces(part / "traces.jsonl"):
                ok = passes.get(trace.example.example_id)
                if ok is None:
                    continue
                inp = CriticInput.from_trace(trace, reference=False)
                findings, notes = reference_free_findings(
                    inp.question, inp.passages, inp.prediction
                )
                n["traces"] += 1
                n["pass" if ok else "fail"] += 1
                if not findings and not notes:
                    n["undetermined"] += 1
                    continue
                error = bool(findings)
                kinds = sorted({f.kind for f in findings})
                if ok and not error:
                    n["pass called correct"] += 1
                elif not ok and error:
                    n["fail called error"] += 1
                    caught_kinds.update(kinds)
                elif ok and error:
                    n["false errors"] += 1
                    false_kinds.update(kinds)
                    listed.append(
                        {
                            "part": f"{name}/{part.name}",
                            "example_id": trace.example.example_id,
                            "question": inp.question,
                            "prediction": inp.prediction,
                            "findings": [[f.kind, f.detail] for f in findings],
                        }
                    )
                else:
                    n["missed errors"] += 1
        total = n["pass"] + n["fail"]
        agree = n["pass called correct"] + n["fail called error"]
        print(f"== {name}: {n['traces']} traces ({n['disputed']} disputed examples left out)")
        print(
            f"   pass called correct {n['pass called correct']} of {n['pass']}; "
            f"fail called error {n['fail called error']} of {n['fail']}; "
            f"agree {agree} of {total} ({agree / max(total, 1):.1%})"
        )
        print(
            f"   FALSE ERRORS {n['false errors']}; missed errors {n['missed errors']}; "
            f"undetermined {n['undetermined']}"
        )
        print(
            "   false errors by finding: "
            + ", ".join(f"{k} {v}" for k, v in false_kinds.most_common())
        )
        print(
            "   errors caught by finding: "
            + ", ".join(f"{k} {v}" for k, v in caught_kinds.most_common())
        )
    print(f"({time.perf_counter() - t0:.1f} s)")
    if args.list is not None:
        args.list.write_text(
            "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in listed), encoding="utf-8"
        )


if __name__ == "__main__":
    main()
