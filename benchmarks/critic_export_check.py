"""What the critic training export (``ragtriage critic-export``) teaches, on real runs.

For each traces file: the Error labels (gold-answer rules diagnosis) and where their
exported analysis comes from — the reference-free critic's own analysis, the diagnosis's
clauses that name nothing the prompt lacks, or the sentence from the judgement and tags —;
how many analyses say something the reference-free prompt does not show
(:func:`ragtriage.critic.prompt_leaks`: chunk ids, gold wording, gold-only words) before
(the diagnosis's analysis, as exported until issue 29) and now; the SFT rows, the DPO pairs
by level and how many of them differ in the judgement.

    python benchmarks/critic_export_check.py TRACES.jsonl [...]
    python benchmarks/critic_export_check.py benchmarks/data/natural/nat*/traces.jsonl
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from ragtriage.cli.diagnose import read_traces  # noqa: E402
from ragtriage.critic import (  # noqa: E402
    critique_traces,
    dpo_records,
    grounded_verdicts,
    prompt_leaks,
    sft_records,
)


def main() -> None:
    total: Counter[str] = Counter()
    for arg in sys.argv[1:]:
        traces = read_traces(Path(arg))
        inputs, labels, free = asyncio.run(grounded_verdicts(traces))
        before = asyncio.run(critique_traces(traces, critic="rules", reference=True))
        by_id = {v.example_id: v for v in free}
        n: Counter[str] = Counter()
        for t, inp, v, old in zip(traces, inputs, labels, before, strict=True):
            if v.judgement != "error":
                continue
            gold = [t.example.answer, *t.example.keypoints]
            n["error labels"] += 1
            n["leaking before"] += bool(prompt_leaks(old.analysis, inp, gold))
            n["leaking now"] += bool(prompt_leaks(v.analysis, inp, gold, numbers=False))
            rf = by_id[inp.example_id]
            if rf.judgement == "error" and v.analysis == rf.analysis:
                n["from the reference-free critic"] += 1
            elif v.analysis.startswith("Judged from the question"):
                n["from judgement and tags"] += 1
            else:
                n["from the diagnosis's visible clauses"] += 1
        rows = dpo_records(inputs, labels, critic_verdicts=free)
        n["SFT rows"] += len(sft_records(inputs, labels))
        n["DPO pairs"] += len(rows)
        n.update(f"DPO {r['level']}" for r in rows)
        n["DPO judgement differs"] += sum(
            json.loads(r["chosen"][0]["content"])["Judgement"]
            != json.loads(r["rejected"][0]["content"])["Judgement"]
            for r in rows
        )
        print(f"{arg}: " + ", ".join(f"{k} {v}" for k, v in n.items()))
        total.update(n)
    if len(sys.argv) > 2:
        print("all: " + ", ".join(f"{k} {v}" for k, v in total.items()))


if __name__ == "__main__":
    main()
