"""Tolerant parsing of LLM output: JSON objects, pydantic models, labels."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from ragtriage.llm import ParseStats, extract_label, parse_json_object, parse_model

ERROR_TYPES = [f"E{i}" for i in range(1, 17)]
ANSWER_LABELS = ["correct", "partially correct", "incorrect"]


class Verdict(BaseModel):
    label: str
    confidence: float


# -- JSON --------------------------------------------------------------------------------


def test_parse_json_object_accepts_common_shapes() -> None:
    stats = ParseStats()
    assert parse_json_object('{"a": 1}', stats=stats) == {"a": 1}
    assert parse_json_object('```json\n{"a": [1, 2]}\n```', stats=stats) == {"a": [1, 2]}
    assert parse_json_object('Sure! Here it is: {"a": "x"} Hope it helps.', stats=stats) == {
        "a": "x"
    }
    assert parse_json_object('```\n{"b": true}\n```', stats=stats) == {"b": True}
    assert stats.as_dict() == {"ok": 4, "repaired": 0, "failed": 0}


def test_parse_json_object_repairs_broken_json() -> None:
    stats = ParseStats()
    assert parse_json_object('{"label": "E3", "reason": "missing",}', stats=stats) == {
        "label": "E3",
        "reason": "missing",
    }
    assert parse_json_object("{'label': 'E4'}", stats=stats) == {"label": "E4"}
    assert parse_json_object('```json\n{"a": [1, 2\n```', stats=stats) == {"a": [1, 2]}
    assert parse_json_object('{"答案": "正确"', stats=stats) == {"答案": "正确"}
    assert stats.as_dict() == {"ok": 0, "repaired": 4, "failed": 0}


def test_parse_json_object_returns_none_for_non_objects() -> None:
    stats = ParseStats()
    texts = ["", "The answer is correct.", "[1, 2, 3]", "42", "{ not json", "{]", "```\n```"]
    for text in texts:
        assert parse_json_object(text, stats=stats) is None, text
    assert stats.failed == len(texts) and stats.total == len(texts)


def test_parse_model_validates_and_tolerates_key_case() -> None:
    stats = ParseStats()
    assert parse_model('{"label": "E1", "confidence": 0.5}', Verdict, stats=stats) == Verdict(
        label="E1", confidence=0.5
    )
    assert parse_model('{"Label": "E2", "Confidence": "0.9"}', Verdict, stats=stats) == Verdict(
        label="E2", confidence=0.9
    )
    assert parse_model('{"label": "E1"}', Verdict, stats=stats) is None
    assert parse_model("no json here", Verdict, stats=stats) is None
    assert stats.as_dict() == {"ok": 1, "repaired": 1, "failed": 2}


def test_parse_stats_merge_is_pure() -> None:
    a, b = ParseStats(ok=1), ParseStats(failed=2)
    merged = a.merged(b)
    assert merged == ParseStats(ok=1, failed=2)
    assert a == ParseStats(ok=1) and b == ParseStats(failed=2)


# -- labels ------------------------------------------------------------------------------


def test_extract_label_exact_and_decorated() -> None:
    assert extract_label("correct", ANSWER_LABELS) == "correct"
    assert extract_label("  **Partially Correct.**  ", ANSWER_LABELS) == "partially correct"
    assert extract_label("`E12`", ERROR_TYPES) == "E12"
    assert extract_label("Ｅ７", ERROR_TYPES) == "E7"  # full-width


def test_extract_label_from_json() -> None:
    assert extract_label('{"label": "incorrect", "why": "correct is wrong"}', ANSWER_LABELS) == (
        "incorrect"
    )
    assert extract_label('```json\n{"error_type": "E3"}\n```', ERROR_TYPES) == "E3"


def test_extract_label_word_boundaries() -> None:
    assert extract_label("This looks like error type E1 to me.", ERROR_TYPES) == "E1"
    assert extract_label("Most likely E16 (answer mismatch).", ERROR_TYPES) == "E16"
    assert extract_label("The answer is incorrect.", ANSWER_LABELS) == "incorrect"
    assert extract_label("I'd say partially correct overall", ANSWER_LABELS) == (
        "partially correct"
    )


def test_extract_label_chinese() -> None:
    labels = ["正确", "部分正确", "不正确"]
    assert extract_label("答案：部分正确。", labels) == "部分正确"
    assert extract_label("这个回答不正确", labels) == "不正确"
    assert extract_label("判断：正确", labels) == "正确"
    assert extract_label("无法判断", labels) is None


def test_extract_label_negation_and_ambiguity_give_none() -> None:
    assert extract_label("The answer is not correct", ["correct", "wrong"]) is None
    assert extract_label("It could be correct or incorrect.", ANSWER_LABELS) is None
    assert extract_label("Either E3 or E4.", ERROR_TYPES) is None
    assert extract_label("I cannot tell.", ANSWER_LABELS) is None
    assert extract_label("", ANSWER_LABELS) is None
    assert extract_label("correct", []) is None


def test_extract_label_resolves_by_marker_or_line() -> None:
    text = "It first seemed incorrect, but the date matches.\nFinal answer: correct"
    assert extract_label(text, ANSWER_LABELS) == "correct"
    assert extract_label("E5\nNot E4 because the chunk exists; E6 is close.", ERROR_TYPES) == "E5"
    assert extract_label("Candidates: E2, E9. Label: E9", ERROR_TYPES) == "E9"


def test_extract_label_fuzzy_for_typos_only() -> None:
    stats = ParseStats()
    assert extract_label("corect", ANSWER_LABELS, stats=stats) == "correct"
    assert extract_label("partialy correct", ANSWER_LABELS, stats=stats) == "partially correct"
    assert extract_label("correct", ["incorrect", "unknown"], stats=stats) is None
    assert extract_label("E17", ERROR_TYPES, stats=stats) is None
    assert extract_label("The answer is partialy correct.", ANSWER_LABELS) == "partially correct"
    assert extract_label("部份正确", ["正确", "部分正确"]) == "正确"  # too far from 部分正确
    assert stats.as_dict() == {"ok": 0, "repaired": 2, "failed": 2}


# -- properties --------------------------------------------------------------------------

decorations = st.tuples(
    st.sampled_from(["", " ", "\n", "**", "`", '"', "Label: ", "Answer: ", "答案："]),
    st.sampled_from(["", ".", " ", "**", "`", '"', "\n", "!", "。"]),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    label=st.sampled_from(ERROR_TYPES + ANSWER_LABELS + ["部分正确", "yes"]),
    deco=decorations,
    upper=st.booleans(),
)
def test_property_decorated_label_is_recovered(
    label: str, deco: tuple[str, str], upper: bool
) -> None:
    allowed = ERROR_TYPES + ANSWER_LABELS + ["部分正确", "yes"]
    shown = label.upper() if upper else label
    assert extract_label(f"{deco[0]}{shown}{deco[1]}", allowed) == label


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.text(max_size=200))
def test_property_never_crashes_and_answers_within_allowed(text: str) -> None:
    stats = ParseStats()
    label = extract_label(text, ANSWER_LABELS + ERROR_TYPES, stats=stats)
    assert label is None or label in ANSWER_LABELS + ERROR_TYPES
    value = parse_json_object(text, stats=stats)
    assert value is None or isinstance(value, dict)
    assert stats.total == 2


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=10,
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    obj=st.dictionaries(st.text(max_size=10), json_values, max_size=5),
    fence=st.booleans(),
    prose=st.booleans(),
)
def test_property_json_objects_round_trip(obj: dict[str, Any], fence: bool, prose: bool) -> None:
    text = json.dumps(obj, ensure_ascii=False)
    if fence:
        text = f"```json\n{text}\n```"
    if prose:
        text = f"Here is my verdict:\n{text}\nThanks."
    assert parse_json_object(text) == obj
