"""Generate ``src/ragtriage/critic/error_system.json`` from the RAG-Critic error system.

The source is the authors' published 3-tier error system (seed 004, RAG-Critic, MIT;
``../shared/data/rag_critic_error_system.json``): 19 records ``{idx, tag1, tag2, tag3}``.
This script copies it into package data in a stable, normalised form, so nothing is
hand-typed::

    python scripts/build_critic_error_system.py [SOURCE] [--out PATH]

Output: ``{"source", "license", "tier1": [...], "tier2": [{"name", "tier1", "tier3": [...]}]}``
with tier-1 names in first-seen order and tier-3 tags de-duplicated case-insensitively
within each tier-2 type (a tag may still belong to several tier-2 types).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SOURCE = ROOT.parent / "shared" / "data" / "rag_critic_error_system.json"
DEFAULT_OUT = ROOT / "src" / "ragtriage" / "critic" / "error_system.json"


def build(records: list[dict[str, Any]]) -> dict[str, Any]:
    tier1: list[str] = []
    tier2: list[dict[str, Any]] = []
    for rec in sorted(records, key=lambda r: int(r["idx"])):
        t1 = str(rec["tag1"]).strip()
        t2 = str(rec["tag2"]).strip()
        if t1 not in tier1:
            tier1.append(t1)
        seen: set[str] = set()
        tags: list[str] = []
        for tag in rec.get("tag3") or []:
            text = " ".join(str(tag).split())
            if text and text.casefold() not in seen:
                seen.add(text.casefold())
                tags.append(text)
        tier2.append({"name": t2, "tier1": t1, "tier3": tags})
    return {
        "source": "RAG-Critic error system (seed 004), rag_critic_error_system.json",
        "license": "MIT (RAG-Critic authors)",
        "tier1": tier1,
        "tier2": tier2,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Build the critic's error-system package data.")
    ap.add_argument("source", nargs="?", type=Path, default=DEFAULT_SOURCE)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args(argv)
    data = build(json.loads(args.source.read_text(encoding="utf-8")))
    args.out.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    n3 = sum(len(t["tier3"]) for t in data["tier2"])
    print(
        f"wrote {args.out}: {len(data['tier1'])} tier-1, {len(data['tier2'])} tier-2, {n3} tier-3"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
