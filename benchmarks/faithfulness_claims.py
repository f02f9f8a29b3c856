"""Offline claim verdicts against the hand-written claim set (issue 28).

Run: .venv/bin/python benchmarks/faithfulness_claims.py [--set FILE] [--embedder minilm|hash|none]
     [--show-misses]

Reads ``benchmarks/data/claims/faithfulness_claims.jsonl`` (context, claim, expected
``supported | contradicted | unsupported``) and judges every claim against its context
with the offline entailment core (:mod:`ragtriage.metrics._entail`, the one the offline
``faithfulness`` and ``answer_correctness`` use). Prints, overall and per language:

* contradiction detection -- precision and recall of ``contradicted``;
* unsupported detection -- precision and recall of "not supported" (``contradicted``
  or ``neutral`` predicted, against ``contradicted`` or ``unsupported`` expected);
* the confusion table and, per claim kind (negation, antonym, number, ...), how many
  were right. ``undetermined`` verdicts count as wrong and are listed.

Targets (issue 28): >= 0.9 for each precision and recall. No assertions.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from ragtriage.metrics._entail import Premise, check_claims  # noqa: E402

DEFAULT_SET = ROOT / "benchmarks" / "data" / "claims" / "faithfulness_claims.jsonl"
_PRED = {"entailed": "supported", "contradicted": "contradicted", "neutral": "unsupported"}


def _pr(pairs: list[tuple[bool, bool]]) -> tuple[float | None, float | None, int, int]:
    """(precision, recall, predicted positives, actual positives) of (expected, predicted)."""
    tp = sum(e and p for e, p in pairs)
    pp = sum(p for _, p in pairs)
    ap = sum(e for e, _ in pairs)
    return (tp / pp if pp else None), (tp / ap if ap else None), pp, ap


def _fmt(x: float | None) -> str:
    return "  n/a" if x is None else f"{x:.3f}"


def _report(name: str, rows: list[dict[str, Any]]) -> None:
    contra = [(r["expected"] == "contradicted", r["predicted"] == "contradicted") for r in rows]
    unsup = [
        (r["expected"] != "supported", r["predicted"] in ("contradicted", "unsupported"))
        for r in rows
    ]
    cp, cr, cpp, cap = _pr(contra)
    up, ur, upp, uap = _pr(unsup)
    right = sum(r["expected"] == r["predicted"] for r in rows)
    print(
        f"{name:<8} n={len(rows):<3} exact {right}/{len(rows)}  "
        f"contradiction P {_fmt(cp)} R {_fmt(cr)} ({cpp} flagged / {cap} true)  "
        f"unsupported P {_fmt(up)} R {_fmt(ur)} ({upp} flagged / {uap} true)"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--set", type=Path, default=DEFAULT_SET)
    ap.add_argument("--embedder", default="minilm", help="minilm | hash | none")
    ap.add_argument("--show-misses", action="store_true")
    args = ap.parse_args()
    rows = [
        json.loads(line)
        for line in args.set.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    emb: Any = None
    if args.embedder != "none":
        from ragtriage.config import EmbeddingConfig
        from ragtriage.embedding import make_embedder

        emb = make_embedder(EmbeddingConfig(model=args.embedder), cache=False)
    premises: dict[str, Premise] = {}
    items = []
    for r in rows:
        p = premises.get(r["context"])
        if p is None:
            p = premises[r["context"]] = Premise.of(r["context"])
        items.append((r["claim"], p))
    started = time.perf_counter()
    checks = check_claims(items, emb)
    wall = time.perf_counter() - started
    for r, c in zip(rows, checks, strict=True):
        r["predicted"] = _PRED.get(c.verdict, "undetermined")
        r["reason"] = c.reason
    print(f"{len(rows)} claims from {args.set.name}; embedder {args.embedder}; {wall:.2f} s")
    _report("all", rows)
    for lang in sorted({r["language"] for r in rows}):
        _report(lang, [r for r in rows if r["language"] == lang])
    conf = Counter((r["expected"], r["predicted"]) for r in rows)
    labels = ("supported", "contradicted", "unsupported", "undetermined")
    print("\nexpected \\ predicted  " + "  ".join(f"{lab[:12]:>12}" for lab in labels))
    for e in labels[:3]:
        print(f"{e:<20} " + "  ".join(f"{conf[(e, p)]:>12}" for p in labels))
    kinds = Counter(r["kind"] for r in rows)
    ok = Counter(r["kind"] for r in rows if r["expected"] == r["predicted"])
    print("\nby kind: " + ", ".join(f"{k} {ok[k]}/{n}" for k, n in sorted(kinds.items())))
    und = [r for r in rows if r["predicted"] == "undetermined"]
    for r in und:
        print(f"undetermined {r['id']}: {r['claim']} ({r['reason']})")
    if args.show_misses:
        print()
        for r in rows:
            if r["expected"] != r["predicted"]:
                print(
                    f"{r['id']} [{r['kind']}] expected {r['expected']}, got {r['predicted']}: "
                    f"{r['claim']}  -- {r['reason']}"
                )


if __name__ == "__main__":
    main()
