"""The offline judge's answer rules, declared once (issue 27).

Every verdict of :func:`~ragtriage.diagnosis.answer_eval.evaluate_rules` names the rule
that decided it (``Judgement.rule``, ``Diagnosis.answer_rule``). This module declares each
rule as an :class:`AnswerRule`: its place in the evaluation, the labels it gives, what it
tells the generation type tests (error types with weights and the evidence sentence), and
the flags other steps read -- a wrong statement (E12 damped), a pick among the question's
options (E14 halved), a fact the generator may never have seen (the declined-facts stage
step). :data:`RULES` lists them in evaluation order; ``answer_eval`` registers one check
per rule in that order and refuses to import when a check names a rule not declared here,
a declared rule has no check, or the order differs. A name looked up with
:func:`answer_rule` must be declared, so a misspelt name fails at import instead of
switching a rule off.

:func:`markdown_table` renders the registry for ``docs/method.md`` (between the
``answer-rules`` markers, written by ``scripts/write_rule_table.py``;
``tests/test_rules.py`` checks the two agree).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Final, Literal

from ragtriage.diagnosis.weights import WEIGHTS_FILE, shipped_weights
from ragtriage.records import AnswerLabel, ErrorType

__all__ = [
    "DOC_MARKERS",
    "PICKS_AN_OPTION",
    "RULES",
    "RULES_BY_NAME",
    "STEPS",
    "UNSEEN_FACT",
    "WRONG_STATEMENT",
    "AnswerRule",
    "Step",
    "UnknownRuleError",
    "answer_rule",
    "markdown_table",
    "rule_names",
    "with_markdown_table",
]

Step = Literal["unanswerable", "match", "decline", "contradiction", "grade"]
#: the evaluation's steps, in order: an unanswerable question; an empty or exact answer;
#: what the answer declines; a statement the ground truth contradicts (the first that
#: fires decides); the grade by overlap and coverage, adjusted in turn by the rules of
#: the last step
STEPS: Final[tuple[Step, ...]] = ("unanswerable", "match", "decline", "contradiction", "grade")

_C, _P, _I, _A = (
    AnswerLabel.CORRECT,
    AnswerLabel.POSSIBLE_CORRECT,
    AnswerLabel.INCORRECT,
    AnswerLabel.ABSTAIN,
)
_GRADES = (_C, _P, _I)


class UnknownRuleError(KeyError):
    """A rule name that :data:`RULES` does not declare."""


@dataclass(frozen=True, slots=True)
class AnswerRule:
    """One answer-evaluation rule (see the module docstring)."""

    #: the id recorded as ``Judgement.rule``
    name: str
    step: Step
    #: position in :data:`RULES` (the order the checks run in; a rule that decides in
    #: more than one place is placed where it first does)
    order: int
    #: the labels a verdict by this rule can carry
    labels: tuple[AnswerLabel, ...]
    #: what it decides, in a line (the docs table)
    summary: str
    #: generation error types it points to, with the score each gets (from the
    #: ``type_votes`` of ``weights.json``, see :mod:`ragtriage.diagnosis.weights`)
    types: tuple[tuple[ErrorType, float], ...] = ()
    #: the evidence sentence of those types (after "answer evaluation: ")
    hint: str = ""
    #: fails the answer for stating something the ground truth contradicts (E12 damped)
    wrong_statement: bool = False
    #: takes up the question's own comparison, order or yes/no (E14 halved)
    picks_option: bool = False
    #: the answer lacks a ground-truth fact, declined or replaced: the declined-facts
    #: stage step asks whether the generator ever saw it
    unseen_fact: bool = False
    #: where its test lives (module.function under ragtriage.diagnosis)
    origin: str = "answer_eval.evaluate_rules"


def _r(
    name: str,
    step: Step,
    labels: tuple[AnswerLabel, ...],
    summary: str,
    *,
    hint: str = "",
    wrong_statement: bool = False,
    picks_option: bool = False,
    unseen_fact: bool = False,
    origin: str = "answer_eval.evaluate_rules",
) -> AnswerRule:
    return AnswerRule(
        name,
        step,
        -1,
        labels,
        summary,
        (),
        hint,
        wrong_statement,
        picks_option,
        unseen_fact,
        origin,
    )


def _declare(*rules: AnswerRule) -> tuple[AnswerRule, ...]:
    """``rules`` numbered in the order given, each with the type votes of the shipped
    weights file (:func:`ragtriage.diagnosis.weights.shipped_weights`), which must have an
    entry for every rule and none for an undeclared one."""
    weights = shipped_weights()
    votes = weights.type_votes
    names = [r.name for r in rules]
    can_retire = {r.name for r in rules if r.step == "contradiction"}
    if not weights.retired <= can_retire:
        raise ValueError(
            f"{WEIGHTS_FILE}: retired_rules may name contradiction-step rules only, not "
            f"{', '.join(sorted(weights.retired - can_retire))}"
        )
    missing = [n for n in names if n not in votes]
    unknown = [n for n in votes if n not in names]
    if missing or unknown:
        raise ValueError(
            f"{WEIGHTS_FILE}: type_votes must name every declared answer rule exactly; "
            f"missing: {', '.join(missing) or '-'}; undeclared: {', '.join(unknown) or '-'}"
        )
    return tuple(
        replace(r, order=i, types=tuple((ErrorType(t), w) for t, w in votes[r.name]))
        for i, r in enumerate(rules)
    )


#: every rule, in evaluation order
RULES: Final[tuple[AnswerRule, ...]] = _declare(
    _r(
        "unanswerable_guess",
        "unanswerable",
        (_I,),
        "an unanswerable question declined, then answered with a guess",
        origin="answer_styles.answer_view",
    ),
    _r(
        "unanswerable_abstain",
        "unanswerable",
        (_A,),
        "an unanswerable question declined (empty answer, declining conclusion, or little "
        "else said)",
        origin="answer_eval.is_abstention",
    ),
    _r(
        "unanswerable_answered",
        "unanswerable",
        (_I,),
        "an unanswerable question answered",
    ),
    _r("empty", "match", (_A,), "an empty answer (after cleaning)"),
    _r("exact", "match", (_C,), "the answer equals the ground truth (normalised)"),
    _r(
        "partial_abstention",
        "decline",
        (_I,),
        "one part of a multi-part question declined while another is answered; a part of "
        "the ground truth stated before declining the rest; (grade) an incomplete answer "
        "that declines the rest",
        hint="the answer declines a part of the question that the ground truth answers",
        unseen_fact=True,
        origin="answer_eval._declined_parts",
    ),
    _r(
        "abstain",
        "decline",
        (_A,),
        "declines in its conclusion (or says little else), states nothing of the ground truth",
        origin="answer_eval.is_abstention",
    ),
    _r(
        "polar_conflict",
        "contradiction",
        (_I,),
        "the opposite yes/no or before/after of the ground truth's",
        picks_option=True,
        origin="answer_eval._polar_conflict",
    ),
    _r(
        "impossible_date",
        "contradiction",
        (_I,),
        "a date no calendar has where the ground truth gives a date",
        hint="the answer states a date no calendar has where the ground truth gives a date",
        wrong_statement=True,
        unseen_fact=True,
        origin="answer_checks.impossible_dates",
    ),
    _r(
        "value_conflict",
        "contradiction",
        (_I,),
        "a number or date other than the ground truth's of the same kind",
        wrong_statement=True,
        unseen_fact=True,
        origin="answer_eval._values",
    ),
    _r(
        "bound_conflict",
        "contradiction",
        (_I,),
        "the ground truth's amount behind a bound that excludes it",
        hint="the answer states the ground truth's amount behind a bound that excludes it",
        wrong_statement=True,
        origin="answer_checks.bound_conflict",
    ),
    _r(
        "rank_conflict",
        "contradiction",
        (_I,),
        "a ranked superlative of the ground truth at another rank",
        hint="the answer gives a ranked superlative of the ground truth another rank",
        wrong_statement=True,
        origin="answer_checks.rank_conflict",
    ),
    _r(
        "numeral_conflict",
        "contradiction",
        (_I,),
        "a grade or stage with another Roman numeral",
        hint="the answer gives a grade or stage another numeral than the ground truth",
        wrong_statement=True,
        origin="answer_checks.numeral_conflict",
    ),
    _r(
        "ordinal_conflict",
        "contradiction",
        (_I,),
        "other ordinals before the ground truth's noun",
        wrong_statement=True,
        origin="answer_checks.ordinal_conflict",
    ),
    _r(
        "count_conflict",
        "contradiction",
        (_I,),
        "a count of what a how-many question asks, other than the ground truth's",
        wrong_statement=True,
        origin="answer_checks.count_conflict",
    ),
    _r(
        "fact_swap",
        "contradiction",
        (_I,),
        "the ground truth's facts exchanged between its events",
        wrong_statement=True,
        origin="alignment.fact_swaps",
    ),
    _r(
        "name_substituted",
        "contradiction",
        (_I,),
        "another name in the clause that restates a ground-truth name's",
        wrong_statement=True,
        origin="alignment.substituted_names",
    ),
    _r(
        "direction_flip",
        "contradiction",
        (_I,),
        "a ground-truth amount with the opposite direction of change",
        hint="the answer states a ground-truth amount with the opposite direction of change",
        wrong_statement=True,
        origin="answer_checks.direction_flips",
    ),
    _r(
        "opposite_term",
        "contradiction",
        (_I,),
        "another value of a ground-truth term's family (or the term negated) in its place",
        hint="the answer says the opposite of a ground-truth term about the same thing "
        "(side, result, event)",
        wrong_statement=True,
        origin="answer_checks.opposite_terms",
    ),
    _r(
        "list_substitution",
        "contradiction",
        (_I,),
        "a listed item of its own in place of a ground-truth item",
        wrong_statement=True,
        origin="answer_eval._list_substitution",
    ),
    _r(
        "crossed_terms",
        "contradiction",
        (_I,),
        "the ground truth's two statements dealt out crosswise",
        wrong_statement=True,
        origin="answer_checks.crossed_terms",
    ),
    _r(
        "measures_swapped",
        "contradiction",
        (_I,),
        "the ground truth's amounts behind each other's measure words",
        hint="the answer puts the ground truth's amounts behind each other's measure words",
        wrong_statement=True,
        origin="answer_checks.measures_swapped",
    ),
    _r(
        "roles_swapped",
        "contradiction",
        (_I,),
        "a ground-truth name given another name's role",
        hint="the answer gives one name of the ground truth another one's role (the context "
        "misread)",
        wrong_statement=True,
        origin="answer_checks.roles_swapped",
    ),
    _r(
        "order",
        "contradiction",
        (_I,),
        "an ordering question's dated events in another order",
        hint="the answer puts the ground truth's dated events in another order",
        wrong_statement=True,
        picks_option=True,
        origin="answer_checks.order_conflict",
    ),
    _r(
        "choice_time",
        "contradiction",
        (_I,),
        "the other option of a comparison in time",
        hint="the answer picks the other option of a comparison in time (earlier/later, longer)",
        wrong_statement=True,
        picks_option=True,
        origin="answer_checks.choice_conflict",
    ),
    _r(
        "choice",
        "contradiction",
        (_I,),
        "the other option of a comparison",
        hint="the answer picks the other option of a comparison of amounts",
        wrong_statement=True,
        picks_option=True,
        origin="answer_checks.choice_conflict",
    ),
    _r(
        "entity_value",
        "contradiction",
        (_I,),
        "one of the question's entities given another amount",
        hint="the answer gives one entity another amount than the ground truth gives it",
        wrong_statement=True,
        unseen_fact=True,
        origin="answer_checks.entity_value_conflict",
    ),
    _r(
        "slot_conflict",
        "contradiction",
        (_I,),
        "an uncovered keypoint's wording with another name or number",
        hint="the answer fills one of the ground truth's slots with another name or number",
        wrong_statement=True,
        unseen_fact=True,
        origin="answer_checks.slot_conflict",
    ),
    _r(
        "keypoint_replaced",
        "contradiction",
        (_I,),
        "something else between the ground truth's words around a keypoint, or the keypoint "
        "with a sibling word",
        hint="the answer puts something else in a keypoint's place, between the ground "
        "truth's own words around it",
        wrong_statement=True,
        unseen_fact=True,
        origin="answer_checks.keypoint_replaced",
    ),
    _r(
        "contains",
        "grade",
        (_C,),
        "the answer contains the ground truth",
        origin="answer_eval.answer_facts",
    ),
    _r(
        "gt_coverage",
        "grade",
        _GRADES,
        "how many of the ground truth's statements the answer makes",
        hint="the answer makes only some of the ground truth's statements",
        origin="answer_eval.gt_coverage",
    ),
    _r(
        "overlap",
        "grade",
        _GRADES,
        "token F1 and recall against the ground truth",
        origin="answer_eval.answer_facts",
    ),
    _r(
        "keypoints",
        "grade",
        _GRADES,
        "the share of the dataset's keypoints stated",
        origin="answer_eval.answer_facts",
    ),
    _r(
        "key_facts",
        "grade",
        (_P, _I),
        "the share of the ground truth's numbers, dates and names stated",
        origin="answer_eval.answer_facts",
    ),
    _r(
        "polar_agrees",
        "grade",
        (_C,),
        "a yes/no question answered as the ground truth does, nothing else added",
        origin="answer_eval._polar_agrees",
    ),
    _r(
        "hedged",
        "grade",
        (_P,),
        "a correct answer that doubts the fact or declines the question in its conclusion",
        origin="answer_eval._hedges",
    ),
    _r(
        "candidate_list",
        "grade",
        (_P,),
        "the ground truth's value one of three or more listed",
        origin="answer_eval._values",
    ),
)

RULES_BY_NAME: Final[Mapping[str, AnswerRule]] = MappingProxyType({r.name: r for r in RULES})


def answer_rule(name: str) -> AnswerRule:
    """The declared rule ``name``; :class:`UnknownRuleError` for any other name."""
    try:
        return RULES_BY_NAME[name]
    except KeyError:
        raise UnknownRuleError(
            f"no answer rule {name!r}; declared: {', '.join(RULES_BY_NAME)}"
        ) from None


def rule_names(names: Iterable[str]) -> frozenset[str]:
    """``names`` as a set, each checked with :func:`answer_rule`."""
    return frozenset(answer_rule(n).name for n in names)


#: names of the rules with each flag (the sets the type tests and the cascade read)
WRONG_STATEMENT: Final = frozenset(r.name for r in RULES if r.wrong_statement)
PICKS_AN_OPTION: Final = frozenset(r.name for r in RULES if r.picks_option)
UNSEEN_FACT: Final = frozenset(r.name for r in RULES if r.unseen_fact)


def _check_declarations() -> None:
    seen: set[str] = set()
    for i, r in enumerate(RULES):
        if r.name in seen:
            raise ValueError(f"answer rule {r.name!r} declared twice")
        seen.add(r.name)
        if r.order != i or r.step not in STEPS or not r.labels:
            raise ValueError(f"answer rule {r.name!r}: bad order, step or labels")
        if r.types and not r.hint:
            raise ValueError(f"answer rule {r.name!r}: error types need a hint")
    steps = [STEPS.index(r.step) for r in RULES]
    if steps != sorted(steps):
        raise ValueError("answer rules must be declared step by step, in evaluation order")


_check_declarations()

#: the lines around the generated table in docs/method.md
DOC_MARKERS: Final = (
    "<!-- answer-rules:begin (generated by ragtriage.diagnosis.rules.markdown_table) -->",
    "<!-- answer-rules:end -->",
)


def _flags(r: AnswerRule) -> str:
    names = (
        ("wrong statement", r.wrong_statement),
        ("picks an option", r.picks_option),
        ("unseen fact", r.unseen_fact),
    )
    return ", ".join(n for n, on in names if on) or "-"


def markdown_table() -> str:
    """The registry as a markdown table, one row per rule in evaluation order."""
    lines = [
        "| # | rule (id) | step | labels | what it decides | generation types | flags | test |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in RULES:
        types = ", ".join(f"{t.value} {w:.2f}" for t, w in r.types) or "-"
        labels = ", ".join(f"`{lab.value}`" for lab in r.labels)
        lines.append(
            f"| {r.order + 1} | `{r.name}` | {r.step} | {labels} | {r.summary} | {types} "
            f"| {_flags(r)} | `{r.origin}` |"
        )
    return "\n".join(lines) + "\n"


def with_markdown_table(text: str, *, path: str = "docs/method.md") -> str:
    """``text`` with the lines between the :data:`DOC_MARKERS` replaced by
    :func:`markdown_table`; :class:`ValueError` naming ``path`` when a marker is missing
    or out of order."""
    begin, end = DOC_MARKERS
    i, j = text.find(begin), text.find(end)
    if i < 0 or j < i:
        raise ValueError(f"{path}: expected the lines {begin!r} and then {end!r}")
    return text[: i + len(begin)] + "\n" + markdown_table() + text[j:]
