"""How much of a test set's question wording is copied from its evidence: for each
answerable question with references, the share of the question's content words (stopwords
and question words removed) that occur among the content words of its reference
sentences ("refs") and of its source documents ("docs"); the mean per label and overall.

Hand-written questions describe things in their own words ("the drunk driver"); a
generator that copies its source sentence makes lexical retrieval and the lexical
reranker find its questions too easily, so a retrieval tune on its set picks a more
lexical text weight than one on real questions would.

    .venv/bin/python benchmarks/know_testset_overlap.py demo OUT_DIR_OF_TESTSET ...
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path
from statistics import mean

from ragtriage.data import Dataset, load_dataset, load_demo
from ragtriage.text import content_tokens

_QUESTION_WORDS = {"what", "when", "who", "whom", "which", "why", "how", "many", "much", "where"}


def _words(text: str) -> set[str]:
    return {t for t in content_tokens(text) if t not in _QUESTION_WORDS}


def overlap(dataset: Dataset) -> dict[str, list[tuple[float, float]]]:
    """label → [(share in references, share in source documents)] per question."""
    docs = {d.doc_id: d.text for d in dataset.documents}
    out: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for e in dataset.examples:
        q = _words(e.query)
        if not e.answerable or not e.references or not q:
            continue
        refs = _words(" ".join(e.references))
        text = _words(" ".join(docs.get(d, "") for d in e.doc_ids))
        label = f"{e.label or '?'} {e.language or '?'}"
        out[label].append((len(q & refs) / len(q), len(q & text) / len(q)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sets", nargs="+", help="'demo' or a test-set folder")
    args = ap.parse_args()
    for name in args.sets:
        data = load_demo() if name == "demo" else load_dataset(Path(name))
        rows = overlap(data)
        every = [v for vs in rows.values() for v in vs]
        en = [v for k, vs in rows.items() if k.endswith(" en") for v in vs]
        print(f"{name}: {len(every)} questions")
        for label, vs in sorted(rows.items()):
            print(
                f"  {label:18s} n={len(vs):3d}  refs {mean(r for r, _ in vs):.2f}"
                f"  docs {mean(d for _, d in vs):.2f}"
            )
        for tag, vs in (("all", every), ("EN", en)):
            if vs:
                print(
                    f"  {tag:18s} n={len(vs):3d}  refs {mean(r for r, _ in vs):.2f}"
                    f"  docs {mean(d for _, d in vs):.2f}"
                )


if __name__ == "__main__":
    main()
