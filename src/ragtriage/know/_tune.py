"""Label-aware retrieval tuning (seed 001 §5, Tables 2, 4, 5, 6) on the user's data.

A hybrid text-weight scan ``score = (1 − w)·minmax(dense) + w·minmax(BM25)`` over
``w ∈ {0, 0.05, 0.1, 0.2, 0.5, 1}`` (0 = dense, 1 = lexical), with and without the
reranker, measured with Recall@5 and nDCG@5 per question label and inclusively.

Everything expensive is done once per scan: the corpus is chunked and embedded once,
each query is embedded once, the BM25 index is built once, each query's dense and
lexical score vectors are computed once and only re-weighted per ``w``; the reranker
scores the union of every weight's candidates once per query (pointwise rerankers:
a chunk's score does not depend on the other candidates).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ragtriage.config import PipelineConfig, RetrievalConfig
from ragtriage.data import Dataset
from ragtriage.embedding import Embedder, embed_queries
from ragtriage.errors import ConfigError
from ragtriage.index.dense import top_k_indices
from ragtriage.index.fusion import weighted_fusion
from ragtriage.know._taxonomy import ANSWERABLE_LABELS
from ragtriage.metrics.retrieval import ndcg_at, recall_at
from ragtriage.records import Chunk, Example, Hit

__all__ = [
    "INCLUSIVE",
    "TEXT_WEIGHTS",
    "ScanCell",
    "ScanResult",
    "best_config",
    "gt_chunk_ids",
    "scan_csv",
    "scan_retrieval",
    "scan_rows",
]

TEXT_WEIGHTS: tuple[float, ...] = (0.0, 0.05, 0.1, 0.2, 0.5, 1.0)
INCLUSIVE = "inclusive"


@dataclass(frozen=True, slots=True)
class ScanCell:
    """Mean Recall@k and nDCG@k of one label at one text weight."""

    label: str
    weight: float
    rerank: bool
    recall: float
    ndcg: float
    n: int


@dataclass(frozen=True, slots=True)
class ScanResult:
    cells: tuple[ScanCell, ...]
    weights: tuple[float, ...]
    k: int
    skipped: int
    #: example count per label (and ``inclusive``)
    counts: Mapping[str, int]

    def cell(self, label: str, weight: float, rerank: bool) -> ScanCell | None:
        for c in self.cells:
            if c.label == label and c.weight == weight and c.rerank == rerank:
                return c
        return None

    def labels(self) -> list[str]:
        """``inclusive`` first, then the labels that have examples (taxonomy order)."""
        present = [lab for lab in ANSWERABLE_LABELS if self.counts.get(lab)]
        return [INCLUSIVE, *present]

    def best(self, label: str, rerank: bool) -> ScanCell | None:
        """The weight with the highest recall (ties: the higher nDCG, then the smaller
        weight)."""
        cells = [c for c in self.cells if c.label == label and c.rerank == rerank]
        if not cells:
            return None
        return max(cells, key=lambda c: (round(c.recall, 9), round(c.ndcg, 9), -c.weight))

    def close_runner_up(self, weight: float, rerank: bool) -> ScanCell | None:
        """The best inclusive cell other than ``(weight, rerank)`` when its recall is
        within one question of that cell's (``1 / n``): on so few questions the pick is
        not reliable; ``None`` when the pick leads by a question or more."""
        pick = self.cell(INCLUSIVE, weight, rerank)
        n = self.counts.get(INCLUSIVE, 0)
        if pick is None or n == 0:
            return None
        others = [
            c
            for c in self.cells
            if c.label == INCLUSIVE and (c.weight, c.rerank) != (weight, rerank)
        ]
        if not others:
            return None
        # the runner-up nearest in weight among the closest recalls: the one a reader compares
        runner = max(others, key=lambda c: (round(c.recall, 9), -abs(c.weight - weight)))
        return runner if pick.recall - runner.recall < 1.0 / n - 1e-9 else None

    def mix_recall(self, mix: Mapping[str, float], weight: float, rerank: bool) -> float | None:
        """Recall expected under a label mix (labels without examples are dropped and
        the rest renormalised)."""
        parts = [
            (share, c)
            for lab, share in mix.items()
            if (c := self.cell(lab, weight, rerank)) is not None
        ]
        total = sum(s for s, _ in parts)
        if total <= 0:
            return None
        return sum(s * c.recall for s, c in parts) / total

    def best_for_mix(self, mix: Mapping[str, float]) -> tuple[float, bool, float] | None:
        """``(weight, rerank, expected recall)`` best for ``mix``."""
        scored = [
            (r, -w, rr, w)
            for rr in (False, True)
            for w in self.weights
            if (r := self.mix_recall(mix, w, rr)) is not None
        ]
        if not scored:
            return None
        r, _, rr, w = max(scored)
        return w, rr, r


def gt_chunk_ids(example: Example, chunks_by_doc: Mapping[str, Sequence[Chunk]]) -> list[str]:
    """The example's ground-truth chunks: given (pre-chunked data) or located from its
    verbatim references."""
    from ragtriage.groundtruth import gt_chunks_from_references

    if example.gt_chunk_ids:
        return list(example.gt_chunk_ids)
    if not example.references:
        return []
    docs = example.doc_ids or list(chunks_by_doc)
    pool = [c for d in docs for c in chunks_by_doc.get(d, ())]
    ids, _missing = gt_chunks_from_references(example, pool)
    return ids


def _chunks(cfg: PipelineConfig, dataset: Dataset, embedder: Embedder) -> list[Chunk]:
    from ragtriage.chunking import make_chunker

    if dataset.prechunked is not None:
        return list(dataset.prechunked)
    chunker = make_chunker(cfg.chunking, embedder)
    return [c for doc in dataset.documents for c in chunker.chunk(doc)]


def scan_retrieval(
    dataset: Dataset,
    cfg: PipelineConfig,
    labels: Mapping[str, str],
    *,
    embedder: Embedder,
    weights: Sequence[float] = TEXT_WEIGHTS,
    k: int = 5,
    rerank: bool = True,
    on_query: Callable[[int, int], None] | None = None,
) -> ScanResult:
    """The scan (see the module docstring). ``labels`` maps example ids to labels;
    examples without ground-truth chunks (unanswerable ones) have no recall and are
    counted in ``skipped``."""
    from ragtriage.llm import run_sync
    from ragtriage.rerank import make_reranker
    from ragtriage.retrieval import build_retriever

    if cfg.rerank.method == "llm" and rerank:
        raise ConfigError(
            "tune-retrieval scores the reranker once per query (pointwise rerankers: "
            "identity, lexical, cross_encoder); the listwise llm reranker is not supported",
            field="rerank.method",
        )
    chunks = _chunks(cfg, dataset, embedder)
    by_doc: dict[str, list[Chunk]] = {}
    for c in chunks:
        by_doc.setdefault(c.doc_id, []).append(c)
    chunk_map = {c.chunk_id: c for c in chunks}
    examples = []
    skipped = 0
    for e in dataset.examples:
        gt = gt_chunk_ids(e, by_doc)
        if gt:
            examples.append((e, frozenset(gt)))
        else:
            skipped += 1
    retriever = build_retriever(RetrievalConfig(mode="hybrid_weighted"), chunks, embedder)
    assert retriever.dense is not None and retriever.bm25 is not None
    qvecs = embed_queries(embedder, [e.query for e, _ in examples]) if examples else None
    reranker = make_reranker(cfg.rerank, embedder) if rerank else None
    depth = max(cfg.retrieval.top_k, k)
    rec, ndcg = recall_at(k), ndcg_at(k)
    modes = (False, True) if rerank else (False,)
    # per (label, weight, rerank): the per-example recall and nDCG
    sums: dict[tuple[str, float, bool], list[tuple[float, float]]] = {}
    for qi, (example, gold) in enumerate(examples):
        assert qvecs is not None
        dense = retriever.dense.scores(qvecs[qi])
        lexical = retriever.bm25.scores(example.query)
        candidates = {
            w: [int(i) for i in top_k_indices(weighted_fusion(dense, lexical, w), depth)]
            for w in weights
        }
        rr_score: dict[int, float] = {}
        if reranker is not None:
            union = list(dict.fromkeys(i for w in weights for i in candidates[w]))
            hits = [
                Hit(chunk_id=chunks[i].chunk_id, doc_id=chunks[i].doc_id, score=0.0, rank=r)
                for r, i in enumerate(union, start=1)
            ]
            ranked = run_sync(reranker.rerank(example.query, hits, chunk_map, len(hits)))
            index_of = {chunks[i].chunk_id: i for i in union}
            rr_score = {index_of[h.chunk_id]: h.score for h in ranked if h.score is not None}
        label = labels.get(example.example_id)
        for w in weights:
            for mode in modes:
                order = candidates[w]
                if mode:
                    order = sorted(order, key=lambda i: -rr_score.get(i, float("-inf")))
                ids = [chunks[i].chunk_id for i in order[:k]]
                r, n = rec(ids, gold), ndcg(ids, gold)
                assert r is not None and n is not None  # gold is never empty here
                for lab in (INCLUSIVE, label):
                    if lab in (INCLUSIVE, *ANSWERABLE_LABELS):
                        sums.setdefault((lab, w, mode), []).append((r, n))
        if on_query is not None:
            on_query(qi + 1, len(examples))
    cells = tuple(
        ScanCell(
            label=lab,
            weight=w,
            rerank=mode,
            recall=float(np.mean([v[0] for v in vals])),
            ndcg=float(np.mean([v[1] for v in vals])),
            n=len(vals),
        )
        for (lab, w, mode), vals in sums.items()
    )
    counts: dict[str, int] = {}
    for e, _ in examples:
        counts[INCLUSIVE] = counts.get(INCLUSIVE, 0) + 1
        lab = labels.get(e.example_id)
        if lab is not None:
            counts[lab] = counts.get(lab, 0) + 1
    return ScanResult(cells=cells, weights=tuple(weights), k=k, skipped=skipped, counts=counts)


def best_config(cfg: PipelineConfig, weight: float, rerank: bool) -> PipelineConfig:
    """``cfg`` with the scan's winner: dense (w = 0), bm25 (w = 1) or weighted hybrid,
    and the reranker kept or replaced by ``identity``."""
    mode = "dense" if weight == 0 else "bm25" if weight == 1 else "hybrid_weighted"
    retrieval = cfg.retrieval.model_copy(update={"mode": mode, "text_weight": float(weight)})
    update: dict[str, object] = {"retrieval": retrieval}
    if not rerank:
        update["rerank"] = cfg.rerank.model_copy(update={"method": "identity"})
    return cfg.model_copy(update=update)


def _fmt(v: float) -> str:
    return f"{v:.3f}"


def scan_rows(result: ScanResult, rerank: bool) -> list[dict[str, str]]:
    """The paper's table (seed 001, Table 2): per label Dense, Lexical, Best recall and
    Best strategy; the best recall carries, in parentheses, what the *inclusive*
    optimum's weight loses on that label; nDCG@k at the best weight."""
    incl = result.best(INCLUSIVE, rerank)
    rows: list[dict[str, str]] = []
    for lab in result.labels():
        best = result.best(lab, rerank)
        dense = result.cell(lab, 0.0, rerank)
        lexical = result.cell(lab, 1.0, rerank)
        if best is None:
            continue
        best_text = _fmt(best.recall)
        if incl is not None and lab != INCLUSIVE:
            at_incl = result.cell(lab, incl.weight, rerank)
            if at_incl is not None and at_incl.recall < best.recall - 1e-9:
                best_text += f" ({at_incl.recall - best.recall:+.3f})"
        rows.append(
            {
                "label": lab,
                "n": str(best.n),
                "dense": "-" if dense is None else _fmt(dense.recall),
                "lexical": "-" if lexical is None else _fmt(lexical.recall),
                "best_recall": best_text,
                "best_strategy": f"{best.weight:.2f}",
                "ndcg_at_best": _fmt(best.ndcg),
            }
        )
    return rows


def scan_csv(result: ScanResult) -> str:
    """Every cell of the scan: label, rerank, text weight, Recall@k, nDCG@k, n."""
    lines = [f"label,rerank,text_weight,recall@{result.k},ndcg@{result.k},n"]
    for c in sorted(result.cells, key=lambda c: (c.rerank, c.label, c.weight)):
        lines.append(
            f"{c.label},{str(c.rerank).lower()},{c.weight:g},{c.recall:.4f},{c.ndcg:.4f},{c.n}"
        )
    return "\n".join(lines) + "\n"
