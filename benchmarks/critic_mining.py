"""Real check of the error-mining clustering (seed 004 §3.1.3) on the authors' tags.

Reads the published open-set tags with their frequencies (``error_tag_frequent.txt``),
normalises them, embeds them with the bundled embedder, standardises and Ward-clusters
them, and scores the clusters against the published tier-2 names of the tags that also
appear (case-insensitively) as tier-3 tags of the error system (a tag listed under several
tier-2 types takes the first, in the system's order). Prints purity and NMI for:

* ``subset``: only those tags, clustered into 19 clusters (one per tier-2 type);
* ``all``: all normalised tags clustered into 20 clusters (the paper's setting), scored
  on the subset;
* a shuffled-label baseline of each (same cluster sizes, labels permuted; mean of 20).

    python benchmarks/critic_mining.py [--tags PATH] [--alpha 1] [--embedding minilm]
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path

import numpy as np

from ragtriage.config import EmbeddingConfig
from ragtriage.critic import (
    cluster_tags,
    error_system,
    nmi,
    normalize_tags,
    purity,
    read_tag_frequencies,
)
from ragtriage.embedding import make_embedder

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ROOT.parent / "shared" / "data" / "rag_critic_samples" / "error_tag_frequent.txt"


def _baseline(labels: list[int], truth: list[str]) -> tuple[float, float]:
    rng = random.Random(0)
    ps, ns = [], []
    for _ in range(20):
        shuffled = list(labels)
        rng.shuffle(shuffled)
        ps.append(purity(shuffled, truth))
        ns.append(nmi(shuffled, truth))
    return sum(ps) / len(ps), sum(ns) / len(ns)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tags", type=Path, default=DEFAULT)
    ap.add_argument("--alpha", type=int, default=1)
    ap.add_argument("--embedding", default="minilm")
    args = ap.parse_args()
    raw = read_tag_frequencies(args.tags.read_text(encoding="utf-8"))
    tags = normalize_tags(raw, alpha=args.alpha)
    tier2_of = error_system().tier2_of_tag()
    names = list(tags)
    subset = [t for t in names if t.casefold() in tier2_of]
    truth = [tier2_of[t.casefold()][0] for t in subset]
    print(
        f"{len(raw)} raw tags, {len(names)} after normalisation (alpha={args.alpha}); "
        f"{len(subset)} are tier-3 tags of the error system, {len(set(truth))} tier-2 types"
    )
    embedder = make_embedder(EmbeddingConfig(model=args.embedding))
    t0 = time.perf_counter()
    vectors = np.asarray(embedder.embed(names))
    print(f"embedded {len(names)} tags with {embedder.name} in {time.perf_counter() - t0:.1f} s")
    index = {t: i for i, t in enumerate(names)}
    sub_vectors = vectors[[index[t] for t in subset]]
    sub_labels = cluster_tags(sub_vectors, 19)
    bp, bn = _baseline(sub_labels, truth)
    print(
        f"subset (19 clusters): purity {purity(sub_labels, truth):.3f}, "
        f"NMI {nmi(sub_labels, truth):.3f}  | shuffled baseline purity {bp:.3f}, NMI {bn:.3f}"
    )
    all_labels = cluster_tags(vectors, 20)
    on_subset = [all_labels[index[t]] for t in subset]
    bp, bn = _baseline(on_subset, truth)
    print(
        f"all (20 clusters) scored on the subset: purity {purity(on_subset, truth):.3f}, "
        f"NMI {nmi(on_subset, truth):.3f}  | shuffled baseline purity {bp:.3f}, NMI {bn:.3f}"
    )


if __name__ == "__main__":
    main()
