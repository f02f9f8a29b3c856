"""Record factories for the report, store, compare and agreement tests."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ragtriage.jsonl import write_jsonl
from ragtriage.records import (
    AnswerLabel,
    Chunk,
    Diagnosis,
    ErrorType,
    Example,
    Hit,
    LLMUsage,
    Stage,
    StageStats,
    Trace,
    Vote,
)

INJECTION = "<script>alert('x')</script> & \"quotes\""


def make_trace(
    eid: str,
    *,
    query: str = "When was the company founded?",
    answer: str = "In 2001.",
    gt_answer: str = "In 1999.",
    label: str | None = None,
    doc_text: Sequence[str] = (
        "Acme was founded in 1999.",
        "It sells widgets.",
        "Its CEO is Ann.",
    ),
) -> Trace:
    """A trace with 3 GT-doc chunks (c0 is the GT chunk) and 2 distractor chunks.

    retrieved: c1, x0, c0, x1; reranked: c1, x0 (c0 and x1 dropped by the reranker);
    context: c1 (x0 dropped by the budget).
    """
    doc = f"{eid}-doc"
    offs, gt_chunks = 0, []
    for i, t in enumerate(doc_text):
        gt_chunks.append(
            Chunk(
                chunk_id=f"{eid}-c{i}", doc_id=doc, text=t, start=offs, end=offs + len(t), index=i
            )
        )
        offs += len(t) + 1
    other = [
        Chunk(
            chunk_id=f"{eid}-x{i}", doc_id="other", text=f"distractor {i}", start=0, end=12, index=i
        )
        for i in range(2)
    ]
    retrieved = [
        Hit(chunk_id=f"{eid}-c1", doc_id=doc, score=0.9, rank=1),
        Hit(chunk_id=f"{eid}-x0", doc_id="other", score=0.8, rank=2),
        Hit(chunk_id=f"{eid}-c0", doc_id=doc, score=0.7, rank=3),
        Hit(chunk_id=f"{eid}-x1", doc_id="other", score=0.6, rank=4),
    ]
    reranked = [
        Hit(chunk_id=f"{eid}-c1", doc_id=doc, score=2.0, rank=1),
        Hit(chunk_id=f"{eid}-x0", doc_id="other", score=1.0, rank=2),
    ]
    return Trace(
        trace_id=f"t-{eid}",
        example=Example(
            example_id=eid,
            query=query,
            answer=gt_answer,
            doc_ids=[doc],
            references=[doc_text[0]],
            label=label,
        ),
        gt_doc_chunks=gt_chunks,
        chunks=other,
        retrieved=retrieved,
        reranked=reranked,
        context=[f"{eid}-c1"],
        dropped_context=[f"{eid}-x0"],
        answer=answer,
        stages={
            "retrieval": StageStats(latency_ms=2.0),
            "generation": StageStats(
                latency_ms=10.0, prompt_tokens=100, completion_tokens=10, calls=1
            ),
        },
    )


def make_diag(
    eid: str,
    *,
    answer_label: AnswerLabel | None = AnswerLabel.INCORRECT,
    stage: Stage | None = None,
    mode: ErrorType | None = None,
    second: ErrorType | None = None,
    votes: Sequence[Vote] = (),
    advice: Sequence[str] = (),
    label: str | None = None,
    undetermined_reason: str | None = None,
    calls: int = 0,
    cached: int = 0,
    mode_frequency: float | None = None,
    needs_diagnosis: bool | None = None,
    gt_chunk_ids: Sequence[str] | None = None,
) -> Diagnosis:
    needs = (
        answer_label in (AnswerLabel.INCORRECT, AnswerLabel.ABSTAIN)
        if needs_diagnosis is None
        else needs_diagnosis
    )
    if mode_frequency is None and votes and mode is not None:
        mode_frequency = sum(1 for v in votes if v == mode) / len(votes)
    return Diagnosis(
        example_id=eid,
        trace_id=f"t-{eid}",
        judge="rules",
        strategy="ragec",
        answer_label=answer_label,
        answer_reason="answer differs from the ground truth" if needs else "matches",
        needs_diagnosis=needs,
        stage=stage,
        stage_reason="GT chunk dropped by the reranker" if stage else "",
        gt_chunk_ids=list(gt_chunk_ids) if gt_chunk_ids is not None else [f"{eid}-c0"],
        error_type=mode,
        second_type=second,
        mode_frequency=mode_frequency,
        votes=list(votes),
        evidence=["chunk c0 holds the answer"] if stage else [],
        advice=list(advice),
        undetermined=undetermined_reason is not None,
        undetermined_reason=undetermined_reason,
        usage=LLMUsage(
            calls=calls, cached_calls=cached, prompt_tokens=10 * calls, completion_tokens=2 * calls
        ),
        label=label,
    )


def votes_of(mode: ErrorType, agree: int, other: ErrorType, k: int = 10) -> list[Vote]:
    return [mode] * agree + [other] * (k - agree)


ADV_RERANK = "Pass more reranked chunks to the generator (raise rerank top_k)."
ADV_RETRIEVE = "Retrieve more chunks or add BM25 hybrid retrieval."
ADV_GEN = "Ask the generator to copy numbers verbatim from the context."


def sample_records() -> tuple[list[Trace], list[Diagnosis]]:
    """Ten examples: 4 correct, 1 possible_correct, 1 undetermined answer, 4 failing."""
    E = ErrorType
    S = Stage
    traces = [make_trace(f"q{i}", label="fact" if i % 2 else "multi_hop") for i in range(10)]
    traces[6] = make_trace("q6", query=INJECTION, label="multi_hop")
    traces[7] = make_trace(
        "q7", query="公司是哪一年成立的？", gt_answer="1999年。", answer="2001年。", label="fact"
    )
    diags = [
        make_diag("q0", answer_label=AnswerLabel.CORRECT, label="multi_hop"),
        make_diag("q1", answer_label=AnswerLabel.CORRECT, label="fact"),
        make_diag("q2", answer_label=AnswerLabel.CORRECT, label="multi_hop"),
        make_diag("q3", answer_label=AnswerLabel.CORRECT, label="fact"),
        make_diag("q4", answer_label=AnswerLabel.POSSIBLE_CORRECT, label="multi_hop"),
        make_diag(
            "q5",
            answer_label=None,
            label="fact",
            undetermined_reason="answer_evaluation: judge reply unparseable",
        ),
        make_diag(
            "q6",
            stage=S.RERANKING,
            mode=E.E7,
            second=E.E8,
            votes=votes_of(E.E7, 8, E.E8),
            advice=[ADV_RERANK],
            label="multi_hop",
            calls=11,
            cached=3,
        ),
        make_diag(
            "q7",
            stage=S.GENERATION,
            mode=E.E16,
            second=E.E13,
            votes=votes_of(E.E16, 6, E.E13),
            advice=[ADV_GEN, ADV_RERANK],
            label="fact",
            calls=11,
        ),
        make_diag(
            "q8",
            stage=S.RETRIEVAL,
            mode=E.E4,
            second=E.E5,
            votes=[*votes_of(E.E4, 9, E.E5, k=9), "undetermined"],
            advice=[ADV_RETRIEVE, ADV_RERANK],
            label="multi_hop",
            calls=11,
        ),
        make_diag(
            "q9",
            stage=None,
            label="fact",
            undetermined_reason="stage_attribution: no ground-truth chunk found",
            calls=1,
        ),
    ]
    return traces, diags


def write_run(
    root: Path,
    run_id: str,
    traces: Sequence[Trace],
    diags: Sequence[Diagnosis] | None,
    *,
    created_at: str = "2025-01-01T00:00:00+00:00",
    config: dict[str, Any] | None = None,
    name: str | None = None,
) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    manifest: dict[str, Any] = {
        "run_id": run_id,
        "created_at": created_at,
        "config": config if config is not None else {"chunking": {"strategy": "fixed"}},
        "config_hash": f"hash-{run_id}",
    }
    if name:
        manifest["name"] = name
    (root / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    write_jsonl(root / "traces.jsonl", traces)
    if diags is not None:
        write_jsonl(root / "diagnoses.jsonl", diags)
    return root


def dated_runs(root: Path) -> tuple[Path, Path]:
    """Two run directories over the same 4 traces, ``b`` (2025-03, half retrieval, half
    generation failures, 2 correct) written before ``a`` (2025-01, 4 retrieval failures)."""
    traces, _ = sample_records()
    early = [make_diag(f"q{i}", stage=Stage.RETRIEVAL, mode=ErrorType.E4) for i in range(4)]
    late = [
        make_diag("q0", stage=Stage.RETRIEVAL, mode=ErrorType.E4),
        make_diag("q1", stage=Stage.GENERATION, mode=ErrorType.E13),
        make_diag("q2", answer_label=AnswerLabel.CORRECT),
        make_diag("q3", answer_label=AnswerLabel.CORRECT),
    ]
    b = write_run(root / "b", "b", traces[:4], late, created_at="2025-03-01T00:00:00Z")
    a = write_run(root / "a", "a", traces[:4], early, created_at="2025-01-01T00:00:00Z")
    return b, a
