"""Stages an imported trace cannot show are undetermined, never guessed (issue 27 item 4)."""

from __future__ import annotations

import pytest

from ragtriage.diagnosis.engine import Diagnoser
from ragtriage.diagnosis.observability import observable_stages
from ragtriage.records import Chunk, Example, Hit, Stage, Trace


def _imported(query: str, gt: str, answer: str, passages: list[str]) -> Trace:
    chunks = [
        Chunk(chunk_id=f"p{i}", doc_id=f"d{i}", text=t, start=0, end=len(t), index=0)
        for i, t in enumerate(passages)
    ]
    hits = [
        Hit(chunk_id=c.chunk_id, doc_id=c.doc_id, rank=i + 1, score=1.0)
        for i, c in enumerate(chunks)
    ]
    return Trace(
        trace_id="t1",
        example=Example(example_id="e1", query=query, answer=gt),
        chunks=chunks,
        retrieved=hits,
        reranked=hits,
        context=[c.chunk_id for c in chunks],
        answer=answer,
        metadata={
            "observable_stages": ["retrieval", "generation"],
            "not_observable": {"reranking": "only the passages given to the generator"},
        },
    )


@pytest.mark.parametrize(
    ("query", "gt", "answer"),
    [
        (
            "When was Acme Corp founded?",
            "Acme Corp was founded in 1999.",
            "It was founded in 2005.",
        ),
        ("甲公司成立于哪一年？", "甲公司成立于1999年。", "甲公司成立于2005年。"),
    ],
)
async def test_a_row_without_passages_leaves_retrieval_undetermined(
    query: str, gt: str, answer: str
) -> None:
    trace = _imported(query, gt, answer, [])
    assert Stage.RETRIEVAL not in observable_stages(trace)
    d = await Diagnoser("rules").diagnose(trace)
    assert d.needs_diagnosis and d.stage is None and d.error_type is None
    assert d.undetermined and "retrieval: not observable" in (d.undetermined_reason or "")
    # with the passages recorded and the facts missing from them, retrieval is blamed
    other = _imported(query, gt, answer, ["Globex Inc makes software. 乙公司生产软件。"])
    assert Stage.RETRIEVAL in observable_stages(other)
    d2 = await Diagnoser("rules").diagnose(other)
    assert d2.stage is Stage.RETRIEVAL, d2.stage_reason
