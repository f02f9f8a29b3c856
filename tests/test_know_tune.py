"""``ragtriage tune-retrieval``: the text-weight scan per label (seed 001 §5) builds the
index and embeds every text once per scan however many weights it tries, prints the
paper's table and writes a config ``ragtriage run`` accepts."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
import yaml

from know_helpers import cli, no_llm_env  # noqa: F401 (autouse fixture)
from ragtriage.chunking import make_chunker
from ragtriage.config import PipelineConfig, load_config
from ragtriage.data import Dataset
from ragtriage.embedding import HashEmbedder, Vectors
from ragtriage.jsonl import write_jsonl
from ragtriage.know import INCLUSIVE, ScanCell, ScanResult, best_config, scan_retrieval, scan_rows
from ragtriage.records import Document, Example


class CountingEmbedder:
    """A real embedder (feature hashing) that counts its calls and texts."""

    def __init__(self) -> None:
        self._inner = HashEmbedder(dim=64)
        self.calls = 0
        self.texts: list[str] = []

    @property
    def name(self) -> str:
        return "counting-hash-64"

    @property
    def dim(self) -> int:
        return self._inner.dim

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.calls += 1
        self.texts.extend(texts)
        return self._inner.embed(texts)


TOPICS = [
    ("wind", "The Sierra Alta wind farm has 36 turbines and 180 MW of capacity."),
    ("solar", "Three solar parks in Portugal were bought for EUR 142 million."),
    ("bond", "The green bond of USD 150 million carries a coupon of 3.15 percent."),
    ("cfo", "Elena Broch resigned as chief financial officer on 30 June 2021."),
    ("fleet", "The company operated a fleet of 34 vessels at the end of the year."),
    ("fire", "An engine-room fire took the vessel out of service for 41 days."),
]


def _dataset() -> Dataset:
    filler = " ".join(f"Filler sentence number {i} talks about nothing." for i in range(8))
    docs = tuple(
        Document(doc_id=f"d-{name}", text=f"{filler} {fact} {filler}") for name, fact in TOPICS
    )
    labels = ["fact_single", "summary", "reasoning"]
    answerable = [
        Example(
            example_id=f"q-{name}",
            query=f"What about the {name}: {fact.split()[1]} {fact.split()[-2]}?",
            answer=fact,
            doc_ids=[f"d-{name}"],
            references=[fact],
            label=labels[i % 3],
        )
        for i, (name, fact) in enumerate(TOPICS)
    ]
    none = Example(example_id="q-none", query="Who won?", answerable=False, label="unanswerable")
    examples = (*answerable, none)
    return Dataset(name="tiny", documents=docs, examples=examples)


def _cfg() -> PipelineConfig:
    return PipelineConfig.model_validate(
        {
            "chunking": {"strategy": "fixed", "size": 24, "overlap": 4},
            "embedding": {"model": "hash"},
            "retrieval": {"top_k": 10},
            "generation": {"backend": "extractive"},
        }
    )


def test_scan_embeds_each_text_once_whatever_the_weights() -> None:
    data = _dataset()
    labels = {e.example_id: e.label or "" for e in data.examples}
    counts = []
    for weights in ((0.0, 1.0), (0.0, 0.05, 0.1, 0.2, 0.5, 1.0)):
        emb = CountingEmbedder()
        result = scan_retrieval(data, _cfg(), labels, embedder=emb, weights=weights, rerank=False)
        counts.append((emb.calls, len(emb.texts)))
        # chunks once (one call), queries once (one call); every text exactly once
        assert emb.calls == 2
        chunker = make_chunker(_cfg().chunking)
        n_chunks = sum(len(chunker.chunk(d)) for d in data.documents)
        queries = [e.query for e in data.examples if e.references]
        assert len(emb.texts) == n_chunks + len(queries)
        assert emb.texts[n_chunks:] == queries
        assert result.skipped == 1 and result.counts[INCLUSIVE] == 6
    assert counts[0] == counts[1]
    reranked = []
    for weights in ((0.0, 1.0), (0.0, 0.05, 0.1, 0.2, 0.5, 1.0)):
        emb = CountingEmbedder()
        scan_retrieval(data, _cfg(), labels, embedder=emb, weights=weights, rerank=True)
        reranked.append(emb.calls)
    # the reranker scores the union of candidates once per query: 2 calls per query
    assert reranked[0] == reranked[1] == 2 + 2 * 6


def test_scan_figures_and_table() -> None:
    data = _dataset()
    labels = {e.example_id: e.label or "" for e in data.examples}
    result = scan_retrieval(data, _cfg(), labels, embedder=HashEmbedder(dim=64), rerank=True)
    for c in result.cells:
        assert 0.0 <= c.recall <= 1.0 and 0.0 <= c.ndcg <= 1.0
    lexical = result.cell(INCLUSIVE, 1.0, False)
    assert lexical is not None and lexical.recall == 1.0  # every query names its fact's words
    rows = scan_rows(result, False)
    assert [r["label"] for r in rows] == [INCLUSIVE, "fact_single", "summary", "reasoning"]
    assert all(r["best_strategy"] in {"0.00", "0.05", "0.10", "0.20", "0.50", "1.00"} for r in rows)
    pick = result.best_for_mix({"fact_single": 0.5, "summary": 0.5})
    assert pick is not None and pick[2] == pytest.approx(1.0)
    chosen = best_config(_cfg(), 0.2, False)
    assert (chosen.retrieval.mode, chosen.retrieval.text_weight, chosen.rerank.method) == (
        "hybrid_weighted",
        0.2,
        "identity",
    )
    assert best_config(_cfg(), 0.0, True).retrieval.mode == "dense"
    assert best_config(_cfg(), 1.0, True).retrieval.mode == "bm25"
    assert np.isfinite([c.recall for c in result.cells]).all()


def test_tune_retrieval_cli_writes_a_config_run_accepts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _dataset()
    ddir = tmp_path / "data"
    ddir.mkdir()
    write_jsonl(ddir / "documents.jsonl", data.documents)
    write_jsonl(ddir / "examples.jsonl", data.examples)
    cfg_path = tmp_path / "cfg.yaml"
    cfg_path.write_text(yaml.safe_dump(_cfg().model_dump(mode="json")))
    out = tmp_path / "tune"
    code = cli(
        "tune-retrieval",
        str(ddir),
        "--config",
        str(cfg_path),
        "--out",
        str(out),
        "--mix",
        "fact_single:0.6,summary:0.3,reasoning:0.1",
    )
    text = capsys.readouterr().out
    assert code == 0, text
    assert "Best strategy" in text and "inclusive" in text and "best for fact_single 60%" in text
    assert (out / "scan.csv").read_text().startswith("label,rerank,text_weight,recall@5,ndcg@5,n")
    best = load_config(out / "best.yaml")
    assert best.embedding.model == "hash"
    run_dir = tmp_path / "run"
    assert (
        cli(
            "run",
            "--data",
            str(ddir),
            "--config",
            str(out / "best.yaml"),
            "--out",
            str(run_dir),
            "--no-progress",
        )
        == 0
    )
    assert (run_dir / "traces.jsonl").exists()
    assert cli("tune-retrieval", str(ddir), "--weights", "0,2", "--out", str(out)) == 2
    labels = tmp_path / "labels"
    assert cli("label", str(ddir), "--out", str(labels)) == 0
    code = cli(
        "tune-retrieval",
        str(ddir),
        "--config",
        str(cfg_path),
        "--labels",
        str(labels),
        "--out",
        str(out),
        "--no-rerank",
        "--weights",
        "0,0.5,1",
    )
    text = capsys.readouterr().out
    assert code == 0 and f"labels from {labels}" in text
    assert "reranker lexical" not in text and "best for inclusive" in text


def test_a_pick_within_one_question_of_the_runner_up_is_flagged() -> None:
    def cell(w: float, rr: bool, recall: float) -> ScanCell:
        return ScanCell(INCLUSIVE, w, rr, recall, recall, 40)

    close = ScanResult(
        cells=(cell(0.2, False, 0.85), cell(0.5, False, 0.84), cell(0.0, False, 0.70)),
        weights=(0.0, 0.2, 0.5),
        k=5,
        skipped=0,
        counts={INCLUSIVE: 40},
    )
    runner = close.close_runner_up(0.2, False)
    assert runner is not None and runner.weight == 0.5  # 0.01 < 1/40
    clear = ScanResult(
        cells=(cell(0.2, False, 0.85), cell(0.5, False, 0.80)),
        weights=(0.2, 0.5),
        k=5,
        skipped=0,
        counts={INCLUSIVE: 40},
    )
    assert clear.close_runner_up(0.2, False) is None  # 0.05 >= 1/40
