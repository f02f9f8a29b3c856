"""The answer-rule registry (diagnosis/rules.py): every rule name read anywhere is
declared, the docs table is the registry's, and the shipped confidence table's rule
weights are accounted for."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

from ragtriage.diagnosis import answer_eval, types_rules
from ragtriage.diagnosis.confidence import TABLE_FILE, ConfidenceTable, default_table, rule_weights
from ragtriage.diagnosis.findings import AnswerFindings
from ragtriage.diagnosis.rules import (
    RULES,
    RULES_BY_NAME,
    UnknownRuleError,
    answer_rule,
    markdown_table,
    with_markdown_table,
)
from ragtriage.records import AnswerLabel, Example

ROOT = Path(__file__).resolve().parents[1]
METHOD = ROOT / "docs" / "method.md"
SHIPPED = ROOT / "src" / "ragtriage" / "diagnosis" / TABLE_FILE

#: the declared rules the shipped confidence table has no weight for (it was fitted before
#: they existed, or they never decided a labelled case): their verdicts get the label's
#: weight alone. Refitting the table (benchmarks/fit_confidence.py) shrinks this list.
UNWEIGHTED = {
    "empty",
    "gt_coverage",
    "polar_agrees",
    "candidate_list",
}


def test_every_rule_the_confidence_table_weighs_is_declared() -> None:
    raw = json.loads(SHIPPED.read_text(encoding="utf-8"))
    named = {
        f.removeprefix("rule=")
        for g in raw["groups"].values()
        for f in g["weights"]
        if f.startswith("rule=")
    }
    assert named, "the shipped table weighs no rule"
    assert sorted(named - set(RULES_BY_NAME)) == []


def test_the_declared_rules_without_a_confidence_weight() -> None:
    weights = rule_weights(default_table())
    assert set(weights) == set(RULES_BY_NAME)  # and no weight for an undeclared rule
    unweighted = {name for name, groups in weights.items() if not groups}
    # the report: which rules the confidence model cannot tell apart from their label
    assert unweighted == UNWEIGHTED, sorted(unweighted ^ UNWEIGHTED)


def test_rule_weights_lists_a_tables_rules_by_group() -> None:
    table = ConfidenceTable.from_dict(
        {
            "groups": {
                "failing": {"bias": 0.0, "weights": {"rule=order": 1.0, "rule=gone": 2.0}},
                "not_failing": {"bias": 0.0, "weights": {"rule=order": -1.0, "label=x": 1}},
            }
        }
    )
    weights = rule_weights(table)
    assert weights["order"] == ("failing", "not_failing")
    assert weights["gone"] == ("failing",)  # a table may weigh a rule no longer declared
    assert weights["exact"] == ()


def test_a_misspelt_rule_name_fails_where_it_is_read() -> None:
    with pytest.raises(UnknownRuleError, match="value_conflcit"):
        answer_rule("value_conflcit")
    # a check registered under a name the registry lacks fails at import
    with pytest.raises(UnknownRuleError):
        answer_eval._decides("valu_conflict")


def test_the_flag_sets_read_by_the_type_tests_and_the_cascade_are_the_registrys() -> None:
    assert {r.name for r in RULES if r.wrong_statement} == types_rules._WRONG_STATEMENT_RULES
    assert {r.name for r in RULES if r.picks_option} == types_rules._PICKS_AN_OPTION
    # the cascade reads a rules verdict through its findings (diagnosis/findings.py)
    for r in RULES:
        f = AnswerFindings.of_rule(r.name)
        assert (f.unseen_fact, f.wrong_statement, f.picks_option) == (
            r.unseen_fact,
            r.wrong_statement,
            r.picks_option,
        ), r.name
    assert dict(types_rules._ANSWER_RULES) == {r.name: r for r in RULES}
    assert all(r.hint for r in RULES if r.types)
    assert all(0 < w <= 1 for r in RULES for _, w in r.types)


def test_the_checks_run_in_registry_order() -> None:
    checked = [ch.rule.name for ch in answer_eval._CHECKS if ch.rule is not None]
    graded = [r.name for g in answer_eval._GRADERS for r in g.rules]
    first = list(dict.fromkeys([*checked, *graded]))
    assert first == [r.name for r in RULES]
    assert [r.order for r in RULES] == list(range(len(RULES)))


def test_every_origin_names_a_function_of_the_diagnosis_package() -> None:
    for r in RULES:
        module, _, name = r.origin.rpartition(".")
        mod = importlib.import_module(f"ragtriage.diagnosis.{module}")
        assert callable(getattr(mod, name, None)), r


def test_verdicts_name_declared_rules_with_their_labels() -> None:
    cfg = answer_eval.DiagnosisConfig()
    ex = Example(
        example_id="e",
        query="When was Acme Corp founded?",
        answer="Acme Corp was founded in 1999.",
        keypoints=["1999"],
    )
    cases = {
        "Acme Corp was founded in 1999.": "exact",
        "": "empty",
        "Acme Corp was founded in 2004.": "value_conflict",
        "The documents do not say when Acme Corp was founded.": "abstain",
    }
    for answer, rule in cases.items():
        j = answer_eval.evaluate_rules(ex, answer, cfg)
        assert j.rule == rule, (answer, j.rule, j.reason)
        assert j.label in RULES_BY_NAME[rule].labels
    unanswerable = ex.model_copy(update={"answerable": False})
    j = answer_eval.evaluate_rules(unanswerable, "It was founded in 1999.", cfg)
    assert (j.rule, j.label) == ("unanswerable_answered", AnswerLabel.INCORRECT)


def test_the_docs_rule_table_is_the_registrys() -> None:
    text = METHOD.read_text(encoding="utf-8")
    assert markdown_table() in text
    assert with_markdown_table(text) == text, "run scripts/write_rule_table.py"
    assert text.count("| `") >= len(RULES)


def test_the_docs_table_needs_its_markers() -> None:
    with pytest.raises(ValueError, match=r"method\.md"):
        with_markdown_table("no markers here", path="docs/method.md")
