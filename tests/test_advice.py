"""Advice per error type and its ranking over a run's diagnoses."""

from __future__ import annotations

from typing import Any

import pytest

from ragtriage.config import PipelineConfig
from ragtriage.diagnosis.advice import ADVICE, SECOND_MODE_WEIGHT, advice_for, rank_advice
from ragtriage.records import AnswerLabel, Diagnosis, ErrorType

E = ErrorType


def test_every_type_has_concrete_advice() -> None:
    assert set(ADVICE) == set(ErrorType)
    for t, adv in ADVICE.items():
        assert adv.error_type is t
        assert advice_for(t) is adv
        assert adv.title and len(adv.actions) >= 2
        assert all(a.endswith(".") for a in adv.actions)
        assert adv.config_hints


@pytest.mark.parametrize("error_type", list(ErrorType))
def test_config_hints_name_real_settings(error_type: ErrorType) -> None:
    defaults = PipelineConfig().model_dump()
    for hint in advice_for(error_type).config_hints:
        key, _, value = hint.partition("=")
        section, _, field = key.partition(".")
        assert section in defaults, hint
        assert field in defaults[section], hint
        if value:
            # the suggested value is accepted by the typed config
            data: dict[str, Any] = {section: {field: _coerce(value)}}
            PipelineConfig.model_validate(data)


def _coerce(value: str) -> Any:
    try:
        return int(value)
    except ValueError:
        return value


def test_advice_follows_the_seed_remedies() -> None:
    assert "chunking.overlap" in advice_for(E.E3).config_hints
    assert "retrieval.mode=hybrid_rrf" in advice_for(E.E4).config_hints
    assert "rerank.top_k" in advice_for(E.E7).config_hints
    assert "generation.ordering=edges" in advice_for(E.E8).config_hints
    assert any("abstain" in a for a in advice_for(E.E9).actions)
    assert any("code" in a for a in advice_for(E.E16).actions)


def _diag(
    i: int,
    mode: ErrorType | None,
    second: ErrorType | None = None,
    *,
    needs: bool = True,
) -> Diagnosis:
    return Diagnosis(
        example_id=f"ex{i}",
        trace_id=f"t{i}",
        judge="rules",
        strategy="ragec",
        answer_label=AnswerLabel.INCORRECT if needs else AnswerLabel.CORRECT,
        needs_diagnosis=needs,
        error_type=mode,
        second_type=second,
        undetermined=needs and mode is None,
        undetermined_reason="type_classification: no votes" if needs and mode is None else None,
    )


def test_rank_advice_by_examples_addressed() -> None:
    diagnoses = [
        _diag(1, E.E4, E.E5),
        _diag(2, E.E4),
        _diag(3, E.E13, E.E4),
        _diag(4, E.E13, E.E12),
        _diag(5, E.E12),
        _diag(6, E.E12, E.E12),  # second == mode counts once
        _diag(7, None),  # undetermined: not counted
        _diag(8, E.E1, needs=False),  # correct answers are not failures
    ]
    ranked = rank_advice(diagnoses)
    order = [a.error_type for a, _ in ranked]
    # E4: 2 + 0.5 = 2.5 ; E12: 2 + 0.5 = 2.5 (fewer... same modal count 2 -> taxonomy order)
    # E13: 2 ; E5: 0.5
    assert order == [E.E4, E.E12, E.E13, E.E5]
    counts = dict((a.error_type, n) for a, n in ranked)
    assert counts == {E.E4: 3, E.E12: 3, E.E13: 2, E.E5: 1}
    assert SECOND_MODE_WEIGHT < 1


def test_rank_advice_prefers_modes_over_second_modes() -> None:
    ranked = rank_advice(
        [_diag(1, E.E7), _diag(2, E.E10, E.E8), _diag(3, E.E16, E.E8), _diag(4, E.E10)]
    )
    assert [a.error_type for a, _ in ranked][:2] == [E.E10, E.E7]
    assert rank_advice([]) == []
