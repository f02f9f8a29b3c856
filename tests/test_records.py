from __future__ import annotations

import pytest
from pydantic import ValidationError

from ragtriage.records import (
    ERROR_TYPE_NAMES,
    Chunk,
    Diagnosis,
    Document,
    ErrorType,
    Example,
    Hit,
    Judgement,
    Stage,
    Trace,
    types_of_stage,
)


def _chunk(cid: str, start: int = 0, end: int = 5) -> Chunk:
    return Chunk(chunk_id=cid, doc_id="d1", text="x" * (end - start), start=start, end=end, index=0)


def test_taxonomy_has_sixteen_types_over_four_stages() -> None:
    assert len(ErrorType) == 16
    assert len(ERROR_TYPE_NAMES) == 16
    counts = {s: len(types_of_stage(s)) for s in Stage}
    assert counts == {
        Stage.CHUNKING: 3,
        Stage.RETRIEVAL: 3,
        Stage.RERANKING: 2,
        Stage.GENERATION: 8,
    }
    assert ErrorType.E16.title == "Numerical Error"
    assert ErrorType.E7.stage is Stage.RERANKING


def test_records_are_frozen_and_strict() -> None:
    doc = Document(doc_id="d1", text="hello")
    with pytest.raises(ValidationError):
        doc.text = "changed"  # type: ignore[misc]
    with pytest.raises(ValidationError, match="extra"):
        Document.model_validate({"doc_id": "d1", "text": "x", "txet": "typo"})


def test_schema_field_round_trips_under_its_alias() -> None:
    doc = Document(doc_id="d1", text="hello", title="T")
    data = doc.to_dict()
    assert data["schema"] == 1
    assert Document.model_validate_json(doc.to_json()) == doc


def test_chunk_span_must_be_ordered() -> None:
    with pytest.raises(ValidationError, match="end"):
        Chunk(chunk_id="c", doc_id="d", text="", start=5, end=2, index=0)


def test_answerable_example_needs_answer_but_unanswerable_may_be_empty() -> None:
    with pytest.raises(ValidationError, match="non-empty 'answer'"):
        Example(example_id="e", query="q?", answer="  ")
    ex = Example(example_id="e", query="q?", answerable=False)
    assert ex.answer == ""


def test_trace_rejects_hits_without_chunk_text() -> None:
    ex = Example(example_id="e", query="q?", answer="a")
    with pytest.raises(ValidationError, match="no text"):
        Trace(
            trace_id="t",
            example=ex,
            retrieved=[Hit(chunk_id="missing", doc_id="d1", score=1.0, rank=1)],
        )
    tr = Trace(
        trace_id="t",
        example=ex,
        gt_doc_chunks=[_chunk("c1")],
        chunks=[_chunk("c2", 5, 9)],
        retrieved=[Hit(chunk_id="c2", doc_id="d1", score=0.5, rank=1)],
        context=["c1"],
    )
    assert set(tr.chunk_map()) == {"c1", "c2"}


def test_hit_rejects_nan_score_and_zero_rank() -> None:
    with pytest.raises(ValidationError):
        Hit(chunk_id="c", doc_id="d", score=float("nan"), rank=1)
    with pytest.raises(ValidationError):
        Hit(chunk_id="c", doc_id="d", score=1.0, rank=0)


def test_undetermined_records_need_a_reason() -> None:
    with pytest.raises(ValidationError, match="undetermined_reason"):
        Judgement(example_id="e", label=None)
    j = Judgement(example_id="e", label=None, undetermined_reason="empty ground truth")
    assert j.undetermined
    with pytest.raises(ValidationError, match="undetermined_reason"):
        Diagnosis(
            example_id="e",
            trace_id="t",
            judge="rules",
            strategy="ragec",
            answer_label=None,
            needs_diagnosis=True,
            undetermined=True,
        )


def test_diagnosis_votes_accept_types_and_undetermined() -> None:
    d = Diagnosis(
        example_id="e",
        trace_id="t",
        judge="rules",
        strategy="ragec",
        answer_label="incorrect",  # type: ignore[arg-type]
        needs_diagnosis=True,
        stage=Stage.GENERATION,
        error_type=ErrorType.E16,
        second_type=ErrorType.E10,
        mode_frequency=0.7,
        votes=[ErrorType.E16] * 7 + [ErrorType.E10] * 2 + ["undetermined"],
    )
    again = Diagnosis.model_validate_json(d.to_json())
    assert again == d
    with pytest.raises(ValidationError):
        Diagnosis.model_validate({**d.to_dict(), "mode_frequency": 1.5})
