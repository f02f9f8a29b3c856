"""The question-type taxonomy of seed 001 (Know Your RAG, Table 1) and the records that
carry a label decision.

A label belongs to a (ground-truth context, question) pair, not to the question alone:

* ``fact_single`` — the answer is in the context and is one unit of information;
* ``summary`` — the answer is in the context and has several units (a list, a
  procedure, a composite of parts): a shorter answer is partially correct;
* ``reasoning`` — the answer is not stated but can be inferred from the context;
* ``unanswerable`` — neither stated nor inferable.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ragtriage.data import Dataset
from ragtriage.errors import InputError
from ragtriage.records import Example

__all__ = [
    "ANSWERABLE_LABELS",
    "LABELS",
    "UNDETERMINED",
    "LabelDecision",
    "LabelItem",
    "items_of",
    "parse_mix",
]

LABELS: tuple[str, ...] = ("fact_single", "summary", "reasoning", "unanswerable")
ANSWERABLE_LABELS: tuple[str, ...] = LABELS[:3]
UNDETERMINED = "undetermined"
#: characters of document text used as the context when an example has no references
_MAX_CONTEXT_CHARS = 6000


@dataclass(frozen=True, slots=True)
class LabelItem:
    """One (context, question) pair to label, with the dataset's answer when known."""

    example_id: str
    question: str
    context: str
    answer: str = ""
    answerable: bool = True
    language: str | None = None
    given_label: str | None = None
    #: the full text of the example's documents (the rules look values up in it)
    documents: str = ""
    #: the context as the LLM is shown it: references drawn from several documents each
    #: after their document's title ("" when that is the context itself)
    sourced_context: str = ""


@dataclass(frozen=True, slots=True)
class LabelDecision:
    """A labeller's verdict: one of :data:`LABELS` or ``undetermined``, and why.

    ``votes`` and ``mode_frequency`` are filled by K-sample labellers (the LLM one);
    the rules labeller gives one deterministic vote.
    """

    example_id: str
    label: str
    reason: str
    labeller: str
    votes: tuple[str, ...] = ()
    mode_frequency: float | None = None
    given_label: str | None = None
    extra: Mapping[str, object] = field(default_factory=dict)
    #: set when several datasets are labelled in one go
    dataset: str | None = None

    def to_json(self) -> dict[str, object]:
        head: dict[str, object] = {} if self.dataset is None else {"dataset": self.dataset}
        return head | {
            "example_id": self.example_id,
            "label": self.label,
            "reason": self.reason,
            "labeller": self.labeller,
            "votes": list(self.votes),
            "mode_frequency": self.mode_frequency,
            "given_label": self.given_label,
        }


def _context_of(example: Example, docs: Mapping[str, str]) -> str:
    """The ground-truth context: the verbatim references, else the example's documents."""
    refs = [r for r in example.references if r.strip()]
    if refs:
        return "\n".join(refs)
    texts = [docs[d] for d in example.doc_ids if d in docs]
    return "\n\n".join(texts)[:_MAX_CONTEXT_CHARS]


def _sourced_context(example: Example, docs: Mapping[str, str], titles: Mapping[str, str]) -> str:
    """The references of an example drawn from several documents, each after the title
    (else the id) of the document it comes from: "Age: 81." and "Age: 34." alone do not say
    whose age is whose. "" for an example of one document or without references."""
    refs = [r for r in example.references if r.strip()]
    if not refs or len(example.doc_ids) < 2:
        return ""
    return "\n".join(_with_source(r, example.doc_ids, docs, titles) for r in refs)


def _with_source(
    ref: str, doc_ids: Sequence[str], docs: Mapping[str, str], titles: Mapping[str, str]
) -> str:
    """``ref`` after the title (or id) of the first of ``doc_ids`` whose text holds it;
    unchanged when none does."""
    for d in doc_ids:
        if ref.strip() in docs.get(d, ""):
            return f"[{titles.get(d) or d}] {ref}"
    return ref


def items_of(dataset: Dataset, *, limit: int | None = None) -> list[LabelItem]:
    """The (context, question) pairs of a dataset, in file order."""
    docs = {d.doc_id: d.text for d in dataset.documents}
    titles = {d.doc_id: d.title for d in dataset.documents if d.title}
    examples: Sequence[Example] = dataset.examples[:limit] if limit else dataset.examples
    return [
        LabelItem(
            example_id=e.example_id,
            question=e.query,
            context=_context_of(e, docs),
            sourced_context=_sourced_context(e, docs, titles),
            answer=e.answer,
            answerable=e.answerable,
            language=e.language,
            given_label=e.label,
            documents="\n\n".join(docs[d] for d in e.doc_ids if d in docs),
        )
        for e in examples
    ]


def parse_mix(text: str, *, field_name: str = "--mix") -> dict[str, float]:
    """``fact_single:0.6,summary:0.3,reasoning:0.1`` → shares normalised to sum to 1."""
    mix: dict[str, float] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        name, sep, value = part.partition(":")
        name = name.strip()
        if not sep or name not in LABELS:
            raise InputError(
                f"expected LABEL:SHARE with LABEL one of {', '.join(LABELS)}, got {part!r}",
                field=field_name,
            )
        try:
            share = float(value)
        except ValueError as exc:
            raise InputError(
                f"share of {name!r} is not a number: {value!r}", field=field_name
            ) from exc
        if not share >= 0 or share == float("inf"):
            raise InputError(f"share of {name!r} must be >= 0, got {value!r}", field=field_name)
        mix[name] = mix.get(name, 0.0) + share
    total = sum(mix.values())
    if total <= 0:
        raise InputError("the mix needs at least one positive share", field=field_name)
    return {k: v / total for k, v in mix.items() if v > 0}
