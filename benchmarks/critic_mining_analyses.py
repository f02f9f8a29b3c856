"""Error mining on analyses (issue 29 item 5) on the natural parts' real data.

Analyses mined, per part ``benchmarks/data/natural/nat*``:

* ``labels``: the rationales of the failing human labels (``labels.jsonl``, two annotators);
* ``diagnosis``: the rules diagnoses of ``traces.jsonl`` (reasons and findings);
* ``critic``: the reference-free rules critic's analyses of its Error verdicts.

Prints the clusters of all analyses together (size, NEW, name, nearest existing type and
its similarity, two examples) and these figures:

* names that are a taxonomy name, or contain one (RAGEC 16 names, RAG-Critic tier-1/2);
* the same count for the tag mining of the same diagnoses (``mine_runs`` offline, which
  clusters the diagnoses' type / stage / rule names) — the defect this replaces;
* purity and NMI of the clusters against the annotators' first type, on the labels'
  analyses (the types were masked out of the text), with a shuffled baseline;
* clusters whose nearest RAGEC type is the majority annotator type of their labelled
  members.

    python benchmarks/critic_mining_analyses.py [--embedding minilm] [--clusters K]
        [--new-below 0.5] [--sources labels,diagnosis,critic] [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from critic_mining import _baseline  # noqa: E402  (the shuffled-labels baseline)
from ragtriage.calibrate.agreement import read_labels  # noqa: E402
from ragtriage.cli.diagnose import read_traces  # noqa: E402
from ragtriage.config import EmbeddingConfig  # noqa: E402
from ragtriage.critic import (  # noqa: E402
    Analysis,
    analyses_of_diagnoses,
    analyses_of_labels,
    analyses_of_verdicts,
    critique_traces,
    mine_analyses,
    mine_runs,
    nmi,
    purity,
)
from ragtriage.critic._analyses import _taxonomy_names  # noqa: E402
from ragtriage.diagnosis.engine import Diagnoser  # noqa: E402
from ragtriage.embedding import make_embedder  # noqa: E402
from ragtriage.records import Diagnosis, Trace  # noqa: E402

DATA = ROOT / "benchmarks" / "data" / "natural"


def _taxonomy_hits(names: list[str]) -> tuple[int, int]:
    tax = {n.casefold() for n in _taxonomy_names()}
    exact = sum(n.casefold() in tax for n in names)
    contains = sum(any(t in n.casefold() for t in tax) for n in names)
    return exact, contains


async def _collect(
    sources: set[str],
) -> tuple[list[Analysis], list[Trace], list[Diagnosis]]:
    analyses: list[Analysis] = []
    all_traces: list[Trace] = []
    all_diags: list[Diagnosis] = []
    for part in sorted(p for p in DATA.glob("nat*") if (p / "traces.jsonl").is_file()):
        traces = read_traces(part / "traces.jsonl")
        by_id = {t.example.example_id: t for t in traces}
        diags = await Diagnoser("rules", "ragec").diagnose_many(traces, 2)
        all_traces += traces
        all_diags += diags
        if "labels" in sources:
            analyses += analyses_of_labels(read_labels(part / "labels.jsonl"), by_id)
        if "diagnosis" in sources:
            analyses += analyses_of_diagnoses(diags, by_id)
        if "critic" in sources:
            verdicts = await critique_traces(traces, critic="rules", reference=False)
            analyses += analyses_of_verdicts(verdicts, by_id)
    return analyses, all_traces, all_diags


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--embedding", default="minilm")
    ap.add_argument("--clusters", type=int, default=None)
    ap.add_argument("--new-below", type=float, default=0.5)
    ap.add_argument("--sources", default="labels,diagnosis,critic")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    t0 = time.perf_counter()
    analyses, traces, diags = asyncio.run(_collect(set(args.sources.split(","))))
    by_source = Counter(a.source.split(":")[0] for a in analyses)
    print(
        f"{len(analyses)} analyses from {len(traces)} traces of the natural parts: "
        + ", ".join(f"{k} {v}" for k, v in sorted(by_source.items()))
        + f" (read and diagnosed in {time.perf_counter() - t0:.1f} s)"
    )
    embedder = make_embedder(EmbeddingConfig(model=args.embedding))
    t0 = time.perf_counter()
    mining = mine_analyses(analyses, embedder, n_clusters=args.clusters, threshold=args.new_below)
    print(
        f"mined in {time.perf_counter() - t0:.1f} s with {embedder.name}: "
        f"{len(mining.clusters)} clusters over {mining.n_used} analyses "
        f"(cosine silhouette {mining.silhouette or 0:.3f})\n"
    )
    print("size  new  name  ~ nearest existing type (system) similarity")
    for line in mining.lines(examples=2, width=110):
        print(line)
    names = [c.name for c in mining.clusters]
    exact, contains = _taxonomy_hits(names)
    n_new = sum(c.new for c in mining.clusters)
    print(
        f"\ncluster names that are a taxonomy name: {exact} of {len(names)}; "
        f"that contain one: {contains}; new (nearest below {args.new_below}): {n_new}"
    )
    sims = sorted(round(c.similarity, 2) for c in mining.clusters)
    print(f"nearest-type similarities: {sims}")
    tax = asyncio.run(mine_runs(traces, diags, embedder, n_clusters=20))
    t_exact, t_contains = _taxonomy_hits([c.name for c in tax.clusters])
    print(
        f"tag mining of the same diagnoses (before): names that are a taxonomy name "
        f"{t_exact} of {len(tax.clusters)}, that contain one {t_contains}"
    )
    # against the annotators' types, on the labels' analyses
    lab = [
        (mining.assignments[i], a.label)
        for i, a in enumerate(analyses)
        if a.source.startswith("labels") and a.label and mining.assignments[i] >= 0
    ]
    if lab:
        labels, truth = [c for c, _ in lab], [t for _, t in lab if t]
        bp, bn = _baseline(labels, truth)
        print(
            f"labels' analyses ({len(lab)}) against the annotators' first type: purity "
            f"{purity(labels, truth):.3f}, NMI {nmi(labels, truth):.3f} | shuffled "
            f"{bp:.3f}, {bn:.3f}"
        )
        agree = n_lab = 0
        for c in mining.clusters:
            members = Counter(t for cid, t in lab if cid == c.cluster_id)
            if not members:
                continue
            n_lab += 1
            top = members.most_common(1)[0][0]
            agree += c.nearest_system == "RAGEC" and c.nearest.split()[0] == top
        print(
            f"clusters whose nearest type is their annotators' majority RAGEC type: "
            f"{agree} of {n_lab} with labelled members"
        )
    print("\neach source mined alone:")
    for source in sorted(by_source):
        alone = [a for a in analyses if a.source.split(":")[0] == source]
        m = mine_analyses(alone, embedder, n_clusters=args.clusters, threshold=args.new_below)
        print(f"  {source}: {len(alone)} analyses, {len(m.clusters)} clusters")
        for c in m.clusters:
            flag = "NEW" if c.new else "   "
            print(f"    {c.size:4d}  {flag}  {c.name}  ~ {c.nearest} {c.similarity:.2f}")
    if args.json is not None:
        args.json.write_text(json.dumps(mining.to_dict(), ensure_ascii=False, indent=2))


if __name__ == "__main__":
    main()
