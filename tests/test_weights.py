"""The judge's weights file (diagnosis/weights.json): the registry's type votes and the
answer and stage thresholds come from it, every declared rule has an entry, a bad file
is refused with the field named, and weights given to ``using_weights`` are the ones a
diagnosis reads."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from ragtriage.cli.diagnose import read_traces
from ragtriage.config import DiagnosisConfig
from ragtriage.diagnosis import Diagnoser
from ragtriage.diagnosis.rules import RULES
from ragtriage.diagnosis.weights import (
    ANSWER_THRESHOLDS,
    STAGE_THRESHOLDS,
    WEIGHTS_FILE,
    Weights,
    active_weights,
    shipped_weights,
    using_weights,
)
from ragtriage.errors import InputError
from ragtriage.records import ErrorType

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "src" / "ragtriage" / "diagnosis" / WEIGHTS_FILE
#: a real-style trace failed by ``impossible_date`` at generation (E16 from its vote)
FRESH13 = ROOT / "benchmarks" / "data" / "realstyle" / "fresh13" / "traces.jsonl"
IMPOSSIBLE_DATE_CASE = "rs-fresh13-020"


def _raw() -> dict[str, object]:
    data = json.loads(SHIPPED.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def test_every_declared_rule_has_a_type_vote_entry_and_no_other_rule_has_one() -> None:
    votes = _raw()["type_votes"]
    assert isinstance(votes, dict)
    assert list(votes) == [r.name for r in RULES]


def test_the_registrys_type_votes_are_the_files() -> None:
    votes = _raw()["type_votes"]
    assert isinstance(votes, dict)
    for r in RULES:
        assert r.types == tuple((ErrorType(t), w) for t, w in votes[r.name].items()), r.name
    # the hand-set votes moved here from rules.py: 16 rules vote, each for one type
    assert sum(1 for r in RULES if r.types) == 16
    assert dict(next(r for r in RULES if r.name == "impossible_date").types) == {ErrorType.E16: 0.7}


def test_the_configs_threshold_defaults_are_the_files() -> None:
    raw = _raw()
    stage, answer = raw["stage_thresholds"], raw["answer_thresholds"]
    assert isinstance(stage, dict) and isinstance(answer, dict)
    assert set(stage) == set(STAGE_THRESHOLDS) and set(answer) == set(ANSWER_THRESHOLDS)
    cfg = DiagnosisConfig()
    assert cfg.generator_gt_share == stage["generator_gt_share"] == 0.5
    assert cfg.concept_coverage == stage["concept_coverage"] == 0.8
    assert cfg.oversized_chunk_ratio == stage["oversized_chunk_ratio"] == 3.0
    assert (cfg.correct_f1, cfg.possible_f1) == (answer["correct_f1"], answer["possible_f1"])


def test_the_shipped_file_round_trips() -> None:
    w = Weights.load(SHIPPED)
    assert Weights.from_dict(w.to_dict()) == w == shipped_weights()
    assert active_weights() is shipped_weights()


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"type_votes": {"exact": {"E4": 0.5}}}, "type_votes.exact"),
        ({"type_votes": {"exact": {"E13": 1.5}}}, "type_votes.exact.E13"),
        ({"answer_thresholds": {"full_coverage": 0.75}}, "answer_thresholds.keypoint_recall"),
        ({"stage_thresholds": None}, "stage_thresholds"),
        ({"version": 2}, "version"),
    ],
)
def test_a_bad_weights_file_names_the_field(
    tmp_path: Path, change: dict[str, object], field: str
) -> None:
    raw = {**_raw(), **change}
    path = tmp_path / "w.json"
    path.write_text(json.dumps(raw), encoding="utf-8")
    with pytest.raises(InputError) as err:
        Weights.load(path)
    assert err.value.field == field and err.value.path == str(path)


def test_an_unknown_threshold_is_refused(tmp_path: Path) -> None:
    raw = _raw()
    answer = raw["answer_thresholds"]
    assert isinstance(answer, dict)
    raw["answer_thresholds"] = {**answer, "full_coverag": 0.7}
    with pytest.raises(InputError, match="unknown threshold 'full_coverag'"):
        Weights.from_dict(raw, path="w.json")


def _diagnose_case() -> tuple[ErrorType | None, tuple[str, ...]]:
    trace = next(t for t in read_traces(FRESH13) if t.example.example_id == IMPOSSIBLE_DATE_CASE)
    d = asyncio.run(Diagnoser("rules", config=DiagnosisConfig()).diagnose(trace))
    assert d.answer_rule == "impossible_date"
    return d.error_type, tuple(d.evidence)


def test_a_diagnosis_reads_the_weights_in_force() -> None:
    error_type, evidence = _diagnose_case()
    assert error_type is ErrorType.E16
    assert any("E16 Numerical Error (0.70): answer evaluation" in e for e in evidence)
    # the rule's vote moved to E13 at 0.9: the type follows the weights given
    moved = shipped_weights().with_values(type_votes={"impossible_date": (("E13", 0.9),)})
    with using_weights(moved):
        assert active_weights() is moved
        error_type, evidence = _diagnose_case()
    assert error_type is ErrorType.E13
    assert any(
        e.startswith(f"E13 {ErrorType.E13.title} (")
        and "answer evaluation: the answer states a date no calendar has" in e
        for e in evidence
    )
    assert active_weights() is shipped_weights()
