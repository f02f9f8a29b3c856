"""What an answer judgement found, in a form the stage cascade reads from either judge
(issue #26, item 4).

The rules judge names the rule that decided its verdict (``Judgement.rule``); the rules
registry (:mod:`ragtriage.diagnosis.rules`) says what that rule tells the later steps --
above all whether the answer lacks a ground-truth fact it declined or replaced by another
value (``unseen_fact``, read by the declined-facts step of the cascade). The LLM judge
names no rule: its reply carries the same kind of findings as structured JSON (a declined
part naming the entity or fact asked, a wrong value with the answer's value and the
correct one, a misordered event, an unsupported claim), parsed here strictly into the
same :class:`AnswerFindings` the rules give. The cascade reads only
:class:`AnswerFindings`, never which judge spoke.

| source | how the findings were made |
|---|---|
| ``rules`` | the flags of the rules judge's deciding rule (:meth:`AnswerFindings.of_rule`) |
| ``llm`` | the LLM judge's reply, parsed by :func:`parse_findings` |
| ``offline`` | the LLM reply carried no readable findings: the rules judge's findings for the same trace stand in, and :attr:`AnswerFindings.note` says why |
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Final, Literal

from ragtriage.diagnosis.rules import RULES_BY_NAME

__all__ = [
    "FINDING_KINDS",
    "AnswerFindings",
    "DeclinedPart",
    "FindingsError",
    "MisorderedEvents",
    "WrongValue",
    "findings_from_object",
]

Source = Literal["rules", "llm", "offline"]


@dataclass(frozen=True, slots=True)
class DeclinedPart:
    """A part of the question (an entity, an event, one figure) the answer declines or
    leaves out although the ground truth answers it; ``ground_truth`` is the ground
    truth's own words for it ("" when not given)."""

    part: str
    ground_truth: str = ""


@dataclass(frozen=True, slots=True)
class WrongValue:
    """A value of the answer (number, date, name) in the place of the ground truth's."""

    about: str
    answer_value: str
    correct_value: str
    ground_truth: str = ""


@dataclass(frozen=True, slots=True)
class MisorderedEvents:
    """Events the answer puts in another order than the ground truth (in the answer's
    order)."""

    events: tuple[str, ...]
    ground_truth: str = ""


@dataclass(frozen=True, slots=True)
class AnswerFindings:
    """What the answer judgement found (see the module docstring). The flags are what the
    later steps read; the lists are the LLM judge's details (the rules judge gives its
    flags through its rule and leaves the lists empty)."""

    source: Source
    #: the answer lacks a ground-truth fact: declined, or another value in its place (the
    #: declined-facts stage step asks whether the generator ever saw that fact)
    unseen_fact: bool = False
    #: the answer states something the ground truth contradicts
    wrong_statement: bool = False
    #: the answer takes up the question's own comparison, order or yes/no
    picks_option: bool = False
    declined: tuple[DeclinedPart, ...] = ()
    wrong_values: tuple[WrongValue, ...] = ()
    misordered: tuple[MisorderedEvents, ...] = ()
    unsupported: tuple[str, ...] = ()
    #: the rules judge's deciding rule (``rules`` and ``offline`` findings)
    rule: str | None = None
    #: why the LLM's own findings were not used (``offline``)
    note: str = ""

    @classmethod
    def of_rule(cls, rule: str | None, source: Source = "rules") -> AnswerFindings:
        """The findings a rules verdict by ``rule`` carries (none for an unknown rule or
        no rule at all: a custom answer judge that names none)."""
        r = RULES_BY_NAME.get(rule) if rule is not None else None
        if r is None:
            return cls(source, rule=rule)
        return cls(
            source,
            unseen_fact=r.unseen_fact,
            wrong_statement=r.wrong_statement,
            picks_option=r.picks_option,
            rule=rule,
        )

    def instead_of_llm(self, why: str) -> AnswerFindings:
        """These (rules) findings standing in for an LLM reply's, for the reason ``why``."""
        return replace(self, source="offline", note=why)

    @property
    def missing_facts(self) -> tuple[str, ...]:
        """The ground truth's words for what the answer lacks, as the judge quoted them
        (declined parts, then wrong values), without repeats; ``()`` when none quoted."""
        out = [d.ground_truth for d in self.declined] + [w.ground_truth for w in self.wrong_values]
        return tuple(dict.fromkeys(f for f in out if f.strip()))

    def describe(self) -> str:
        """One evidence line: where the findings came from and what they say."""
        if self.source == "rules":
            return f"answer findings (rules): rule {self.rule or 'none'}"
        parts: list[str] = []
        if self.declined:
            parts.append("declined " + ", ".join(repr(d.part) for d in self.declined[:3]))
        if self.wrong_values:
            parts.append(
                "wrong value "
                + ", ".join(
                    f"{w.about!r} {w.answer_value!r} (correct {w.correct_value!r})"
                    for w in self.wrong_values[:3]
                )
            )
        if self.misordered:
            parts.append(
                "misordered "
                + "; ".join(" before ".join(repr(e) for e in m.events) for m in self.misordered[:2])
            )
        if self.unsupported:
            parts.append(f"{len(self.unsupported)} unsupported claim(s)")
        if self.source == "offline":
            return (
                f"answer findings (offline, rule {self.rule or 'none'}): {self.note}; "
                "the rules judge's findings for this trace used"
            )
        return "answer findings (llm): " + ("; ".join(parts) if parts else "none")


#: the keys of the reply's ``findings`` object (each a list, possibly empty)
FINDING_KINDS: Final = ("declined", "wrong_values", "misordered", "unsupported")


class FindingsError(ValueError):
    """A reply's ``findings`` object that does not have the asked shape; the message
    names the field."""


def _text(item: Mapping[str, Any], key: str, where: str, *, required: bool) -> str:
    value = item.get(key)
    if value is None:
        if required:
            raise FindingsError(f"{where}: missing {key!r}")
        return ""
    if not isinstance(value, str):
        raise FindingsError(f"{where}.{key}: expected a string, got {type(value).__name__}")
    text = " ".join(value.split())
    if required and not text:
        raise FindingsError(f"{where}.{key}: empty")
    return text


def _items(obj: Mapping[str, Any], key: str) -> list[Any]:
    value = obj.get(key, [])
    if value is None:
        return []
    if not isinstance(value, list):
        raise FindingsError(f"findings.{key}: expected a list, got {type(value).__name__}")
    return value


def _objects(obj: Mapping[str, Any], key: str, fields: tuple[str, ...]) -> list[Mapping[str, Any]]:
    out: list[Mapping[str, Any]] = []
    for i, item in enumerate(_items(obj, key)):
        where = f"findings.{key}[{i}]"
        if not isinstance(item, dict):
            raise FindingsError(f"{where}: expected an object, got {type(item).__name__}")
        unknown = sorted(set(item) - set(fields))
        if unknown:
            raise FindingsError(f"{where}: unknown field(s) {', '.join(map(repr, unknown))}")
        out.append(item)
    return out


def findings_from_object(obj: object) -> AnswerFindings:
    """The LLM judge's findings from the ``findings`` value of its JSON reply, read
    strictly: an object with (some of) the keys of :data:`FINDING_KINDS`, each a list of
    items of the asked shape; anything else raises :class:`FindingsError` naming the
    field (the caller falls back and says so -- a malformed reply is never read as
    findings)."""
    if not isinstance(obj, dict):
        raise FindingsError(f"findings: expected an object, got {type(obj).__name__}")
    unknown = sorted(set(obj) - set(FINDING_KINDS))
    if unknown:
        raise FindingsError(f"findings: unknown key(s) {', '.join(map(repr, unknown))}")
    declined = tuple(
        DeclinedPart(
            _text(d, "part", f"findings.declined[{i}]", required=True),
            _text(d, "ground_truth", f"findings.declined[{i}]", required=False),
        )
        for i, d in enumerate(_objects(obj, "declined", ("part", "ground_truth")))
    )
    wrong = tuple(
        WrongValue(
            _text(w, "about", f"findings.wrong_values[{i}]", required=True),
            _text(w, "answer", f"findings.wrong_values[{i}]", required=True),
            _text(w, "correct", f"findings.wrong_values[{i}]", required=True),
            _text(w, "ground_truth", f"findings.wrong_values[{i}]", required=False),
        )
        for i, w in enumerate(
            _objects(obj, "wrong_values", ("about", "answer", "correct", "ground_truth"))
        )
    )
    misordered: list[MisorderedEvents] = []
    for i, m in enumerate(_objects(obj, "misordered", ("events", "ground_truth"))):
        where = f"findings.misordered[{i}]"
        events = m.get("events")
        if not isinstance(events, list) or len(events) < 2:
            raise FindingsError(f"{where}.events: expected a list of at least two events")
        if not all(isinstance(e, str) and e.strip() for e in events):
            raise FindingsError(f"{where}.events: every event must be a non-empty string")
        misordered.append(
            MisorderedEvents(
                tuple(" ".join(e.split()) for e in events),
                _text(m, "ground_truth", where, required=False),
            )
        )
    unsupported: list[str] = []
    for i, claim in enumerate(_items(obj, "unsupported")):
        if not isinstance(claim, str) or not claim.strip():
            raise FindingsError(f"findings.unsupported[{i}]: expected a non-empty string")
        unsupported.append(" ".join(claim.split()))
    return AnswerFindings(
        "llm",
        # a declined part or another value in a ground-truth fact's place: the answer
        # lacks that fact (the rules' unseen_fact rules: partial_abstention,
        # value_conflict, entity_value, slot_conflict, keypoint_replaced, impossible_date)
        unseen_fact=bool(declined or wrong),
        wrong_statement=bool(wrong or misordered),
        picks_option=bool(misordered),
        declined=declined,
        wrong_values=wrong,
        misordered=tuple(misordered),
        unsupported=tuple(unsupported),
    )
