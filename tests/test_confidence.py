"""Per-diagnosis confidence: features, the logistic model, the table and the flag."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from diag_helpers import make_trace
from ragtriage.config import DiagnosisConfig
from ragtriage.diagnosis.confidence import (
    ConfidenceTable,
    GroupModel,
    confidence_features,
    default_table,
    diagnosis_confidence,
    with_confidence,
)
from ragtriage.errors import InputError
from ragtriage.records import AnswerLabel, Diagnosis, ErrorType, Stage, Vote

E = ErrorType


def _failing(**kw: object) -> Diagnosis:
    base: dict[str, object] = {
        "example_id": "q1",
        "trace_id": "t-q1",
        "judge": "rules",
        "strategy": "ragec",
        "answer_label": AnswerLabel.INCORRECT,
        "needs_diagnosis": True,
        "stage": Stage.GENERATION,
        "error_type": E.E16,
        "second_type": E.E13,
        "mode_frequency": 0.7,
        "votes": [E.E16] * 7 + [E.E13] * 2 + ["undetermined"],
        # gd_0 reached the generator, gd_1 did not: share 0.5
        "gt_chunk_ids": ["gd_0", "gd_1"],
        "gt_chunk_source": "references",
        "concept_coverage": 0.9,
        "answer_rule": "number_contradiction",
    }
    base.update(kw)
    return Diagnosis.model_validate(base)


TABLE = ConfidenceTable(
    {
        "failing": GroupModel(
            -1.0,
            {
                "mode_frequency": 2.0,
                "vote_margin": 1.0,
                "gt_share_margin": 4.0,
                "coverage_margin": 10.0,
                "stage=generation": 0.5,
                "rule=number_contradiction": 0.25,
            },
        ),
        "not_failing": GroupModel(0.5, {"label=correct": 1.0, "judge=llm": -0.5}),
    },
    source="test",
)


def test_failing_features_are_read_off_the_diagnosis_and_trace() -> None:
    found = confidence_features(_failing(), make_trace(context=["gd_0", "od_0"]))
    assert found is not None
    group, x = found
    assert group == "failing"
    assert x["mode_frequency"] == pytest.approx(0.7)
    assert x["vote_margin"] == pytest.approx(0.5)  # (7 - 2) / 10
    assert x["gt_share_margin"] == pytest.approx(0.0)  # share 0.5 vs threshold 0.5
    assert x["coverage_margin"] == pytest.approx(0.1)  # 0.9 vs 0.8
    assert x["stage=generation"] == 1.0
    assert x["rule=number_contradiction"] == 1.0
    assert x["gt_source=references"] == 1.0
    assert x["label=incorrect"] == 1.0
    assert "judge=llm" not in x


def test_confidence_is_the_logistic_of_the_weighted_features() -> None:
    conf, basis = diagnosis_confidence(_failing(), make_trace(context=["gd_0", "od_0"]), TABLE)
    z = -1.0 + 2.0 * 0.7 + 1.0 * 0.5 + 4.0 * 0.0 + 10.0 * 0.1 + 0.5 + 0.25
    assert conf == pytest.approx(1 / (1 + math.exp(-z)))
    assert basis.startswith("failing model (test): ")
    assert "mode_frequency +1.40" in basis


def test_thresholds_come_from_the_config() -> None:
    cfg = DiagnosisConfig(generator_gt_share=0.2, concept_coverage=0.5)
    found = confidence_features(_failing(), make_trace(context=["gd_0"]), cfg)
    assert found is not None
    assert found[1]["gt_share_margin"] == pytest.approx(0.3)
    assert found[1]["coverage_margin"] == pytest.approx(0.4)


def test_not_failing_and_llm_judge() -> None:
    d = _failing(
        answer_label=AnswerLabel.CORRECT,
        needs_diagnosis=False,
        stage=None,
        error_type=None,
        second_type=None,
        mode_frequency=None,
        votes=[],
        judge="llm",
        answer_rule=None,
    )
    conf, basis = diagnosis_confidence(d, make_trace(), TABLE)
    assert conf == pytest.approx(1 / (1 + math.exp(-(0.5 + 1.0 - 0.5))))
    assert basis.startswith("not_failing model")


def test_missing_gt_chunks_is_a_feature() -> None:
    found = confidence_features(_failing(gt_chunk_ids=[], gt_chunk_source=None), make_trace())
    assert found is not None
    assert found[1]["no_gt_chunks"] == 1.0
    assert "gt_share_margin" not in found[1]


def test_undetermined_diagnosis_has_no_confidence() -> None:
    d = _failing(undetermined=True, undetermined_reason="stage: no GT chunks")
    conf, basis = diagnosis_confidence(d, make_trace(), TABLE)
    assert conf is None
    assert basis.startswith("undetermined")
    out = with_confidence(d, make_trace())
    assert out.confidence is None and not out.low_confidence


def test_with_confidence_flags_low_confidence() -> None:
    weak_votes: list[Vote] = [E.E16] * 4 + [E.E13] * 3 + [E.E10] * 3
    weak = _failing(mode_frequency=0.4, votes=weak_votes)
    out = with_confidence(weak, make_trace(context=["gd_0"]), DiagnosisConfig(), TABLE)
    assert out.confidence is not None
    assert out.low_confidence is (out.confidence < 0.5)
    never = with_confidence(
        weak, make_trace(context=["gd_0"]), DiagnosisConfig(low_confidence=0.0), TABLE
    )
    always = with_confidence(
        weak, make_trace(context=["gd_0"]), DiagnosisConfig(low_confidence=1.0), TABLE
    )
    assert not never.low_confidence and always.low_confidence
    assert always.confidence_basis


def test_shipped_table_loads_and_gives_probabilities() -> None:
    t = default_table()
    assert set(t.groups) == {"failing", "not_failing"}
    conf, _ = diagnosis_confidence(_failing(), make_trace(context=["gd_0"]), t)
    assert conf is not None and 0.0 < conf < 1.0


def test_table_round_trip_and_errors(tmp_path: Path) -> None:
    p = tmp_path / "table.json"
    p.write_text(json.dumps(TABLE.to_dict()), encoding="utf-8")
    again = ConfidenceTable.load(p)
    assert again.source == "test"
    assert dict(again.groups["failing"].weights) == dict(TABLE.groups["failing"].weights)
    bad = TABLE.to_dict()
    bad["groups"]["failing"]["bias"] = "high"
    p.write_text(json.dumps(bad), encoding="utf-8")
    with pytest.raises(InputError, match=r"groups\.failing\.bias"):
        ConfidenceTable.load(p)
    p.write_text('{"groups": {"failing": {"bias": 1}}}', encoding="utf-8")
    with pytest.raises(InputError, match=r"groups\.not_failing"):
        ConfidenceTable.load(p)
    p.write_text("{", encoding="utf-8")
    with pytest.raises(InputError, match="not valid JSON"):
        ConfidenceTable.load(p)


def test_diagnoser_fills_confidence_for_every_diagnosis() -> None:
    import asyncio

    from ragtriage.diagnosis import Diagnoser

    ref = ["Acme Corp was founded in 1999"]
    traces = [
        make_trace(example_id="ok", references=ref, answer="Acme Corp was founded in 1999."),
        make_trace(example_id="ret", references=ref),
    ]
    found = asyncio.run(Diagnoser("rules").diagnose_many(traces))
    for d, trace in zip(found, traces, strict=True):
        assert d.confidence is not None
        assert d.confidence_basis
        # the engine's confidence is the shipped model's
        assert (d.confidence, d.confidence_basis) == diagnosis_confidence(d, trace)
        assert d.low_confidence is (d.confidence < DiagnosisConfig().low_confidence)
    assert found[0].confidence_basis.startswith("not_failing")
    assert found[1].confidence_basis.startswith("failing")
