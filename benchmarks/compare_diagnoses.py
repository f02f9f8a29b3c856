"""Check that two runs diagnosed alike: diagnoses JSONL files compared line by line.

Run: .venv/bin/python benchmarks/compare_diagnoses.py BEFORE.jsonl AFTER.jsonl

For performance work that must not change a result: write the diagnoses before and after
(``benchmarks/diagnose_rules.py --real --save FILE``, or the ``diagnoses.jsonl`` of
``ragtriage calibrate --judge rules --strategy ragec --seed 0 --out DIR``) with the same
``PYTHONHASHSEED``, then compare. Exits 0 when every line is byte-identical; otherwise
prints how many diagnoses differ and, for the first few, which fields, and exits 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--show", type=int, default=5, help="differing diagnoses to detail")
    args = parser.parse_args()
    before = args.before.read_text(encoding="utf-8").splitlines()
    after = args.after.read_text(encoding="utf-8").splitlines()
    if len(before) != len(after):
        sys.exit(f"{args.before}: {len(before)} lines, {args.after}: {len(after)} lines")
    differ = [i for i, (b, a) in enumerate(zip(before, after, strict=True)) if b != a]
    for i in differ[: args.show]:
        b, a = json.loads(before[i]), json.loads(after[i])
        fields = sorted(k for k in b.keys() | a.keys() if b.get(k) != a.get(k))
        print(f"line {i + 1} ({b.get('trace_id')}): {', '.join(fields)}")
    print(f"{len(before) - len(differ)}/{len(before)} diagnoses byte-identical")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
