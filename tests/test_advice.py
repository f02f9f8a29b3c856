"""Advice per error type and its ranking over a run's diagnoses."""

from __future__ import annotations

from typing import Any

import pytest

from ragtriage.config import PipelineConfig
from ragtriage.diagnosis.advice import (
    ADVICE,
    SECOND_MODE_WEIGHT,
    advice_for,
    advice_owners,
    rank_advice,
)
from ragtriage.diagnosis.engine import advice_texts
from ragtriage.records import ERROR_TYPE_STAGE, AnswerLabel, Diagnosis, ErrorType, Stage
from ragtriage.report.aggregate import summarize

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


FEWER = "Forward fewer chunks so that noise does not crowd the context."
MORE = "Forward more chunks after reranking."


def test_each_advice_line_belongs_to_one_type() -> None:
    for t, adv in ADVICE.items():
        for action in adv.actions:
            assert advice_owners(action) == (t,), action
            assert advice_owners(f"  {action} ") == (t,)
    assert FEWER in advice_for(E.E8).actions and MORE in advice_for(E.E7).actions
    assert advice_owners("Something another tool wrote.") == ()


def _failing(i: int, mode: ErrorType, second: ErrorType | None, advice: list[str]) -> Diagnosis:
    return _diag(i, mode, second).model_copy(
        update={"stage": ERROR_TYPE_STAGE[mode], "advice": advice}
    )


@pytest.mark.parametrize(("mode", "second"), [(E.E7, E.E8), (E.E4, E.E10), (E.E12, None)])
def test_each_advice_line_sits_under_its_own_type_in_a_summary(
    mode: ErrorType, second: ErrorType | None
) -> None:
    d = _failing(1, mode, second, advice_texts(mode, second))
    adv = summarize([d]).advice
    assert [a.text for a in adv] == advice_texts(mode, second)
    for a in adv:
        (owner,) = advice_owners(a.text)
        # the second mode's advice is listed under the second mode, never the modal type
        assert a.error_types == [owner], a.text
        assert a.stages == [ERROR_TYPE_STAGE[owner]], a.text
        assert a.count == 1


def test_e8_advice_is_not_listed_under_e7() -> None:
    diags = [
        _failing(1, E.E7, E.E8, advice_texts(E.E7, E.E8)),
        _failing(2, E.E7, None, advice_texts(E.E7, None)),
        _failing(3, E.E8, None, advice_texts(E.E8, None)),
    ]
    by_text = {a.text: a for a in summarize(diags).advice}
    assert by_text[MORE].error_types == [E.E7] and by_text[MORE].count == 2
    assert by_text[FEWER].error_types == [E.E8] and by_text[FEWER].count == 2
    assert by_text[FEWER].stages == [Stage.RERANKING]


def test_advice_no_type_owns_counts_for_the_modal_type() -> None:
    d = _failing(1, E.E7, E.E8, ["Something another tool wrote."])
    (a,) = summarize([d]).advice
    assert a.error_types == [E.E7] and a.stages == [Stage.RERANKING]
