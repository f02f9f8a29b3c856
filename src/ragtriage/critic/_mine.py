"""Error mining (seed 004, §3.1.1–3.1.3): rationales → open-set tags → normalisation →
embeddings → standardise → Ward clustering → one summary per cluster → a taxonomy.

* **rationales** (Prompt B-style) and **tags** (Prompt C-style) come from an LLM through
  the runner, or offline from the rules diagnosis: its answer reason, stage reason and
  evidence sentences are the rationale; the RAGEC type name, the stage's failure and the
  answer-evaluation rule are the tags;
* **normalisation**: whitespace and case folded (first spelling kept), at most
  ``max_tokens`` (25) tokens, valid in JSON (no control characters), frequency ≥ ``alpha``;
* **embeddings**: the bundled offline embedder (``minilm``) or any configured one;
* **standardise** (z-score per dimension) → **Ward** agglomerative clustering
  (scikit-learn, Euclidean) into ``n_clusters``;
* **summaries**: an LLM names each cluster from up to 50 sampled tags; offline, the most
  frequent tag of the cluster names it.

:func:`purity` and :func:`nmi` score a clustering against reference labels (the
published tier-2 names, for the real check in ``benchmarks/critic_mining.py``).
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ragtriage.records import ERROR_TYPE_NAMES, Diagnosis
from ragtriage.text import word_tokens

if TYPE_CHECKING:  # numpy loads when tags are clustered: the diagnoser imports this package
    import numpy as np

__all__ = [
    "MinedCluster",
    "MinedTaxonomy",
    "build_taxonomy",
    "cluster_tags",
    "mine_runs",
    "nmi",
    "normalize_tags",
    "offline_tags",
    "parse_tag_list",
    "purity",
    "rationale_prompt",
    "read_tag_frequencies",
    "sample_for_summary",
    "summary_prompt",
    "tagging_prompt",
]

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def offline_tags(d: Diagnosis) -> tuple[str, list[str]]:
    """``(rationale, tags)`` of a failing diagnosis, from the rules judge's evidence."""
    rationale = " ".join(p for p in (d.answer_reason, d.stage_reason, *d.evidence) if p)
    tags: list[str] = []
    if d.error_type is not None:
        tags.append(ERROR_TYPE_NAMES[d.error_type])
    if d.second_type is not None:
        tags.append(ERROR_TYPE_NAMES[d.second_type])
    if d.stage is not None:
        tags.append(f"{d.stage.value.capitalize()} Failure")
    if d.answer_rule:
        tags.append(d.answer_rule.replace("_", " ").replace(".", " ").strip().title())
    elif d.answer_label is not None:
        tags.append(f"{d.answer_label.value.replace('_', ' ').title()} Answer")
    return rationale, tags


def normalize_tags(
    counts: Mapping[str, int], *, alpha: int = 1, max_tokens: int = 25
) -> dict[str, int]:
    """Tags folded by case and whitespace (first spelling kept, counts summed), keeping
    those of at most ``max_tokens`` tokens, valid in JSON, seen at least ``alpha`` times."""
    folded: dict[str, tuple[str, int]] = {}
    for tag, n in counts.items():
        text = " ".join(str(tag).split()).strip(" \"'`.,;:")
        if not text or _CONTROL.search(text) or len(word_tokens(text)) > max_tokens:
            continue
        try:
            json.loads(json.dumps(text))
        except (TypeError, ValueError):  # pragma: no cover - str always round-trips
            continue
        key = text.casefold()
        first, total = folded.get(key, (text, 0))
        folded[key] = (first, total + int(n))
    return {tag: n for tag, n in folded.values() if n >= alpha}


def read_tag_frequencies(text: str) -> dict[str, int]:
    """``tag: count`` lines (the authors' ``error_tag_frequent.txt``)."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        tag, sep, count = line.rpartition(":")
        if not sep or not count.strip().isdigit():
            continue
        out[tag.strip()] = out.get(tag.strip(), 0) + int(count)
    return out


@dataclass
class MinedCluster:
    cluster_id: int
    name: str
    count: int
    tags: list[tuple[str, int]]
    examples: list[str] = field(default_factory=list)


@dataclass
class MinedTaxonomy:
    clusters: list[MinedCluster]
    tag_cluster: dict[str, int]
    trace_clusters: dict[str, list[int]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "clusters": [
                {
                    "id": c.cluster_id,
                    "name": c.name,
                    "count": c.count,
                    "tags": [{"tag": t, "count": n} for t, n in c.tags],
                    "examples": c.examples,
                }
                for c in self.clusters
            ],
            "traces": {k: v for k, v in sorted(self.trace_clusters.items())},
        }


def cluster_tags(vectors: np.ndarray[Any, Any], n_clusters: int) -> list[int]:
    """Standardise (z-score per dimension) then Ward-cluster into ``n_clusters``."""
    import numpy as np
    from sklearn.cluster import AgglomerativeClustering
    from sklearn.preprocessing import StandardScaler

    n = int(vectors.shape[0])
    if n == 0:
        return []
    k = max(1, min(n_clusters, n))
    if k == 1:
        return [0] * n
    scaled = StandardScaler().fit_transform(np.asarray(vectors, dtype=np.float64))
    labels = AgglomerativeClustering(n_clusters=k, linkage="ward").fit_predict(scaled)
    return [int(x) for x in labels]


def build_taxonomy(
    tag_counts: Mapping[str, int],
    labels: Sequence[int],
    *,
    names: Mapping[int, str] | None = None,
    tag_examples: Mapping[str, Sequence[str]] | None = None,
) -> MinedTaxonomy:
    """Clusters with counts, tags, example ids, and the trace → clusters mapping."""
    tags = list(tag_counts)
    members: dict[int, list[str]] = {}
    for tag, label in zip(tags, labels, strict=True):
        members.setdefault(label, []).append(tag)
    clusters: list[MinedCluster] = []
    trace_clusters: dict[str, list[int]] = {}
    for cid in sorted(members, key=lambda c: -sum(tag_counts[t] for t in members[c])):
        ranked = sorted(members[cid], key=lambda t: (-tag_counts[t], t))
        examples: list[str] = []
        for t in ranked:
            for ex in (tag_examples or {}).get(t, ()):
                if ex not in examples:
                    examples.append(ex)
                if cid not in trace_clusters.setdefault(ex, []):
                    trace_clusters[ex].append(cid)
        clusters.append(
            MinedCluster(
                cluster_id=cid,
                name=(names or {}).get(cid) or ranked[0],
                count=sum(tag_counts[t] for t in ranked),
                tags=[(t, tag_counts[t]) for t in ranked],
                examples=examples[:10],
            )
        )
    return MinedTaxonomy(
        clusters=clusters,
        tag_cluster=dict(zip(tags, labels, strict=True)),
        trace_clusters=trace_clusters,
    )


def sample_for_summary(tags: Sequence[str], k: int = 50, seed: int = 0) -> list[str]:
    """Up to ``k`` tags of a cluster for its summary prompt (seeded sample)."""
    if len(tags) <= k:
        return list(tags)
    return random.Random(seed).sample(list(tags), k)


def purity(labels: Sequence[int], truth: Sequence[str]) -> float:
    """Share of items whose cluster's majority reference label is their own."""
    if not labels:
        raise ValueError("no items")
    by: dict[int, Counter[str]] = {}
    for c, t in zip(labels, truth, strict=True):
        by.setdefault(c, Counter())[t] += 1
    return sum(cnt.most_common(1)[0][1] for cnt in by.values()) / len(labels)


def nmi(labels: Sequence[int], truth: Sequence[str]) -> float:
    """Normalised mutual information (arithmetic mean normalisation, as scikit-learn)."""
    from sklearn.metrics import normalized_mutual_info_score

    if not labels:
        raise ValueError("no items")
    return float(normalized_mutual_info_score(list(truth), list(labels)))


# Adapted from seed 004 (RAG-Critic), App. B, Prompt B (detailed error rationale) and
# Prompt C (open-set annotation).
def rationale_prompt(question: str, passages: Sequence[str], prediction: str, gold: str) -> str:
    listing = "\n".join(f"[{i + 1}] {p}" for i, p in enumerate(passages)) or "(none)"
    return (
        "You are an expert in error analysis for retrieval-augmented generation tasks. We "
        "provide the question and relevant knowledge, a model's prediction and the golden "
        f"answer.\n\nQuestion: {question}\nKnowledge:\n{listing}\n\n"
        f"Model's Prediction: {prediction}\nGolden Answer: {gold}\n\n"
        "If the prediction is incorrect, respond with one JSON object "
        '{"Judgement": "incorrect", "Error analysis": "The model\'s prediction is incorrect '
        'because ..."}; if it is correct, {"Judgement": "Correct", "Error analysis": "None"}.'
    )


def tagging_prompt(analysis: str) -> str:
    return (
        "You are a tagging system designed to provide useful error type tags for "
        "retrieval-augmented generation (RAG) tasks. Below is a detailed error analysis:\n\n"
        f"{analysis}\n\nProvide fine-grained error tags for the main error types in the "
        'analysis: a JSON list of objects {"tag": "", "explanation": ""}. '
        "Please respond in English."
    )


def summary_prompt(tags: Sequence[str]) -> str:
    return (
        "These fine-grained error tags of a RAG system were grouped together:\n"
        + "\n".join(f"- {t}" for t in tags)
        + "\n\nName the error type they share in at most six words. Reply with the name only."
    )


def parse_tag_list(text: str) -> list[str]:
    """Tags of a Prompt C reply: a JSON list of {tag, explanation} (or one object, or a
    list of strings); anything unreadable gives no tags."""
    from json_repair import repair_json

    start = min((i for i in (text.find("["), text.find("{")) if i >= 0), default=-1)
    if start < 0:
        return []
    try:
        data = json.loads(repair_json(text[start:]))
    except (ValueError, TypeError):
        return []
    items = data if isinstance(data, list) else [data]
    out: list[str] = []
    for item in items:
        tag = item.get("tag") if isinstance(item, dict) else item
        if isinstance(tag, str) and tag.strip():
            out.append(tag.strip())
    return out


async def mine_runs(
    traces: Sequence[Any],
    diagnoses: Sequence[Diagnosis],
    embedder: Any,
    *,
    n_clusters: int = 20,
    alpha: int = 1,
    runner: Any = None,
    model: str = "",
) -> MinedTaxonomy:
    """Mine an error taxonomy from the failing traces of one or more runs.

    Offline (``runner=None``) the tags are :func:`offline_tags` of the rules diagnoses;
    with a runner, Prompt B (rationale) then Prompt C (tags) per failing trace, and one
    summary per cluster. A failed LLM step falls back to the offline tags of that trace.
    """
    from ragtriage.llm import ChatRequest, LLMFailure

    by_id = {t.example.example_id: t for t in traces}
    failing = [d for d in diagnoses if d.needs_diagnosis and d.answer_label is not None]
    tag_counts: Counter[str] = Counter()
    tag_examples: dict[str, list[str]] = {}
    for d in failing:
        rationale, tags = offline_tags(d)
        trace = by_id.get(d.example_id)
        if runner is not None and trace is not None:
            texts = {c.chunk_id: c.text for c in [*trace.gt_doc_chunks, *trace.chunks]}
            passages = [texts[i] for i in trace.context if i in texts][:5]
            req = ChatRequest.of(
                None,
                rationale_prompt(trace.example.query, passages, trace.answer, trace.example.answer),
                model=model,
                max_tokens=400,
            )
            got = await runner.try_complete(req, purpose="mine_rationale")
            if not isinstance(got, LLMFailure):
                from ragtriage.llm import parse_json_object

                data = parse_json_object(got.text) or {}
                analysis = next(
                    (v for k, v in data.items() if "analysis" in k.lower() and isinstance(v, str)),
                    "",
                )
                if analysis and analysis.strip().lower() != "none":
                    tag_req = ChatRequest.of(
                        None, tagging_prompt(analysis), model=model, max_tokens=400
                    )
                    tagged = await runner.try_complete(tag_req, purpose="mine_tags")
                    llm_tags = (
                        parse_tag_list(tagged.text) if not isinstance(tagged, LLMFailure) else []
                    )
                    if llm_tags:
                        rationale, tags = analysis, llm_tags
        del rationale
        for tag in tags:
            tag_counts[tag] += 1
            tag_examples.setdefault(tag, []).append(d.example_id)
    normalized = normalize_tags(tag_counts, alpha=alpha)
    folded_examples: dict[str, list[str]] = {}
    for tag, exs in tag_examples.items():
        key = next(
            (t for t in normalized if t.casefold() == " ".join(tag.split()).casefold()), None
        )
        if key is not None:
            folded_examples.setdefault(key, []).extend(exs)
    tags = list(normalized)
    if not tags:
        return MinedTaxonomy(clusters=[], tag_cluster={})
    import numpy as np

    vectors = np.asarray(embedder.embed(tags))
    labels = cluster_tags(vectors, n_clusters)
    names: dict[int, str] = {}
    # in batch mode, while tags are still pending the clusters are not the final ones:
    # their summaries would be paid for nothing (they are asked in a later round)
    tags_pending = runner is not None and runner.batch is not None and len(runner.batch) > 0
    if runner is not None and not tags_pending:
        members: dict[int, list[str]] = {}
        for tag, label in zip(tags, labels, strict=True):
            members.setdefault(label, []).append(tag)
        for cid, group in members.items():
            req = ChatRequest.of(
                None, summary_prompt(sample_for_summary(group, 50, cid)), model=model, max_tokens=32
            )
            got = await runner.try_complete(req, purpose="mine_summary")
            if not isinstance(got, LLMFailure):
                name = " ".join(got.text.strip().strip("\"'`").split())
                if name and len(word_tokens(name)) <= 12:
                    names[cid] = name
    return build_taxonomy(normalized, labels, names=names, tag_examples=folded_examples)
