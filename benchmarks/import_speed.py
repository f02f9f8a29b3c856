"""Import speed on a synthetic corpus: N documents built from the demo corpus's
sentences (shuffled, numbered so each document is distinct), M RAGAS rows whose five
passages are cut from random documents (a third changed as in import_agreement's
``perturb``). Prints documents, rows, passages located by method and seconds.

    .venv/bin/python benchmarks/import_speed.py [--docs 20000] [--rows 500]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import tempfile
import time
from pathlib import Path

from ragtriage.data import load_demo
from ragtriage.integrations import import_traces
from ragtriage.records import Document


def corpus(n: int, rng: random.Random) -> list[Document]:
    sentences = [
        s.strip()
        for d in load_demo().documents
        for s in re.split(r"(?<=[.!?。！？])\s*", d.text)
        if len(s.strip()) > 20
    ]
    docs = []
    for i in range(n):
        picked = rng.sample(sentences, 12)
        text = " ".join(f"[{i}-{k}] {s}" for k, s in enumerate(picked))
        docs.append(Document(doc_id=f"d{i}", text=text))
    return docs


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=20_000)
    ap.add_argument("--rows", type=int, default=500)
    args = ap.parse_args()
    sys.path.insert(0, str(Path(__file__).parent))
    from import_agreement import perturb

    rng = random.Random(0)
    docs = corpus(args.docs, rng)
    rows = []
    for r in range(args.rows):
        passages = []
        for _ in range(5):
            d = rng.choice(docs)
            start = rng.randrange(0, len(d.text) // 2)
            passages.append(perturb(d.text[start : start + 400]))
        rows.append(
            {
                "user_input": f"q{r}?",
                "retrieved_contexts": passages,
                "response": "x",
                "reference": "y",
            }
        )
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "rows.jsonl"
        src.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
        t0 = time.perf_counter()
        res = import_traces("ragas", src, None, documents=docs)
        elapsed = time.perf_counter() - t0
    print(
        json.dumps(
            {
                "documents": args.docs,
                "rows": args.rows,
                "passages_located": dict(res.stats.passages),
                "seconds": round(elapsed, 2),
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
