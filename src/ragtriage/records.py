"""Frozen, typed records that flow through ragtriage.

Every record carries its ids. Records are pydantic models with ``frozen=True`` and
``extra="forbid"`` so that a typo in a user's JSONL file is an error, not a silently
ignored field. Each serialized line carries a ``schema`` version field.

Data flow::

    Document ──chunk──▶ Chunk ──retrieve──▶ Hit ──rerank──▶ Hit ──generate──▶ answer
       ▲                                                                        │
    Example (query, ground truth, references) ──────────────▶ Trace ◀──────────┘
                                                                │
                                      Judgement (answer label) ─┴─▶ Diagnosis
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, field_validator, model_validator

__all__ = [
    "ERROR_TYPE_NAMES",
    "ERROR_TYPE_STAGE",
    "SCHEMA_VERSION",
    "AnswerCorrectness",
    "AnswerLabel",
    "Chunk",
    "Diagnosis",
    "Document",
    "ErrorType",
    "Example",
    "Hit",
    "Judgement",
    "LLMUsage",
    "Record",
    "Stage",
    "StageStats",
    "Trace",
    "Vote",
    "types_of_stage",
]

#: Version of the on-disk record formats (documents, examples, traces, diagnoses).
SCHEMA_VERSION: Final = 1

NonEmptyStr = Annotated[str, Field(min_length=1)]
Metadata = dict[str, JsonValue]


class Record(BaseModel):
    """Base of every record: frozen, strict about unknown fields, versioned."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True, defer_build=True)

    schema_version: Literal[1] = Field(
        default=SCHEMA_VERSION,
        alias="schema",
        description="Format version of this record; currently 1.",
    )

    def to_json(self) -> str:
        """One JSONL line (no trailing newline), keys by their on-disk names."""
        return self.model_dump_json(by_alias=True, exclude_none=False)

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)


class Stage(StrEnum):
    """Pipeline stages, in pipeline order."""

    CHUNKING = "chunking"
    RETRIEVAL = "retrieval"
    RERANKING = "reranking"
    GENERATION = "generation"


class ErrorType(StrEnum):
    """The 16 RAGEC error types (seed 000, §4)."""

    E1 = "E1"
    E2 = "E2"
    E3 = "E3"
    E4 = "E4"
    E5 = "E5"
    E6 = "E6"
    E7 = "E7"
    E8 = "E8"
    E9 = "E9"
    E10 = "E10"
    E11 = "E11"
    E12 = "E12"
    E13 = "E13"
    E14 = "E14"
    E15 = "E15"
    E16 = "E16"

    @property
    def title(self) -> str:  # type: ignore[override]
        return ERROR_TYPE_NAMES[self]

    @property
    def stage(self) -> Stage:
        return ERROR_TYPE_STAGE[self]


ERROR_TYPE_NAMES: dict[ErrorType, str] = {
    ErrorType.E1: "Overchunking",
    ErrorType.E2: "Underchunking",
    ErrorType.E3: "Context Mismatch",
    ErrorType.E4: "Missed Retrieval",
    ErrorType.E5: "Low Relevance",
    ErrorType.E6: "Semantic Drift",
    ErrorType.E7: "Low Recall",
    ErrorType.E8: "Low Precision",
    ErrorType.E9: "Abstention Failure",
    ErrorType.E10: "Fabricated Content",
    ErrorType.E11: "Parametric Overreliance",
    ErrorType.E12: "Incomplete Answer",
    ErrorType.E13: "Misinterpretation",
    ErrorType.E14: "Contextual Misalignment",
    ErrorType.E15: "Chronological Inconsistency",
    ErrorType.E16: "Numerical Error",
}

ERROR_TYPE_STAGE: dict[ErrorType, Stage] = {
    **{t: Stage.CHUNKING for t in (ErrorType.E1, ErrorType.E2, ErrorType.E3)},
    **{t: Stage.RETRIEVAL for t in (ErrorType.E4, ErrorType.E5, ErrorType.E6)},
    **{t: Stage.RERANKING for t in (ErrorType.E7, ErrorType.E8)},
    **{
        t: Stage.GENERATION
        for t in (
            ErrorType.E9,
            ErrorType.E10,
            ErrorType.E11,
            ErrorType.E12,
            ErrorType.E13,
            ErrorType.E14,
            ErrorType.E15,
            ErrorType.E16,
        )
    },
}


def types_of_stage(stage: Stage) -> list[ErrorType]:
    """Error types belonging to ``stage``, in taxonomy order."""
    return [t for t in ErrorType if ERROR_TYPE_STAGE[t] is stage]


class AnswerLabel(StrEnum):
    """Answer-evaluation labels (seed 000, App. B.1, Listing 3)."""

    CORRECT = "correct"
    POSSIBLE_CORRECT = "possible_correct"
    INCORRECT = "incorrect"
    ABSTAIN = "abstain"


class Document(Record):
    """A source document of the corpus."""

    doc_id: NonEmptyStr
    text: str
    title: str | None = None
    metadata: Metadata = Field(default_factory=dict)


class Chunk(Record):
    """A span of one document: ``document.text[start:end] == text``."""

    chunk_id: NonEmptyStr
    doc_id: NonEmptyStr
    text: str
    start: int = Field(ge=0, description="Character offset of the chunk start in its document.")
    end: int = Field(ge=0, description="Character offset one past the chunk end.")
    index: int = Field(ge=0, description="Position of the chunk within its document.")
    metadata: Metadata = Field(default_factory=dict)

    @model_validator(mode="after")
    def _check_span(self) -> Chunk:
        if self.end < self.start:
            raise ValueError(f"end ({self.end}) must be >= start ({self.start})")
        return self


class Example(Record):
    """A question with its ground truth.

    ``references`` are verbatim evidence strings copied from the documents in
    ``doc_ids``; ``keypoints`` are short key facts of the answer, stored without list
    numbering ("1. ", "（2）", "3、" are removed); ``gt_chunk_ids`` are ground-truth
    chunks given by a pre-chunked dataset (CLAPnq). An unanswerable example has ``answerable=False`` and its
    answer may be empty.
    """

    example_id: NonEmptyStr
    query: NonEmptyStr
    answer: str = ""
    answerable: bool = True
    doc_ids: list[str] = Field(default_factory=list)
    references: list[str] = Field(default_factory=list)
    keypoints: list[str] = Field(default_factory=list)
    gt_chunk_ids: list[str] = Field(default_factory=list)
    label: str | None = Field(
        default=None,
        description="Question type, e.g. fact_single, summary, reasoning, unanswerable.",
    )
    language: str | None = Field(default=None, description="BCP-47 code such as 'en' or 'zh'.")
    metadata: Metadata = Field(default_factory=dict)

    @field_validator("keypoints", mode="after")
    @classmethod
    def _unnumbered(cls, keypoints: list[str]) -> list[str]:
        # "1. The CEO was appointed in 2021" (DragonBall style): the list is the order;
        # the marker would read as a number the answer must contain
        from ragtriage.text import strip_list_marker

        return [strip_list_marker(k) for k in keypoints]

    @model_validator(mode="after")
    def _check_answer(self) -> Example:
        if self.answerable and not self.answer.strip():
            raise ValueError("an answerable example needs a non-empty 'answer'")
        return self


class Hit(Record):
    """One ranked result of a retrieval or reranking stage."""

    chunk_id: NonEmptyStr
    doc_id: NonEmptyStr
    score: float | None = Field(
        default=None,
        allow_inf_nan=False,
        description="The stage's score; null when the source recorded none (an imported "
        "trace whose tool kept only the ranked passages): never made up from the rank.",
    )
    rank: int = Field(ge=1, description="1-based rank.")


class StageStats(Record):
    """What one stage cost."""

    latency_ms: float = Field(ge=0, allow_inf_nan=False)
    prompt_tokens: int = Field(default=0, ge=0)
    completion_tokens: int = Field(default=0, ge=0)
    calls: int = Field(default=0, ge=0)


class Trace(Record):
    """Everything one example went through in a RAG pipeline.

    ``gt_doc_chunks`` are *all* chunks of the ground-truth documents (the material
    from which ground-truth chunks are determined); ``chunks`` holds the text of
    every other chunk referenced by ``retrieved``/``reranked``/``context``.
    ``context`` lists the chunk ids actually given to the generator, in prompt order.
    """

    trace_id: NonEmptyStr
    run_id: str | None = None
    example: Example
    config_hash: str = ""
    gt_doc_chunks: list[Chunk] = Field(default_factory=list)
    chunks: list[Chunk] = Field(default_factory=list)
    retrieved: list[Hit] = Field(default_factory=list)
    reranked: list[Hit] = Field(default_factory=list)
    context: list[str] = Field(default_factory=list)
    dropped_context: list[str] = Field(
        default_factory=list, description="Chunk ids dropped by the generator's token budget."
    )
    answer: str = ""
    citations: list[str] = Field(default_factory=list)
    stages: dict[str, StageStats] = Field(default_factory=dict)
    metadata: Metadata = Field(default_factory=dict)

    @model_validator(mode="after")
    def _check_refs(self) -> Trace:
        known = {c.chunk_id for c in self.gt_doc_chunks} | {c.chunk_id for c in self.chunks}
        for field_name, ids in (
            ("retrieved", [h.chunk_id for h in self.retrieved]),
            ("reranked", [h.chunk_id for h in self.reranked]),
            ("context", list(self.context)),
        ):
            missing = [i for i in ids if i not in known]
            if missing:
                raise ValueError(
                    f"{field_name} references chunk ids with no text in "
                    f"'chunks' or 'gt_doc_chunks': {missing[:5]}"
                )
        return self

    def chunk_map(self) -> dict[str, Chunk]:
        """All chunks known to this trace by id."""
        out = {c.chunk_id: c for c in self.chunks}
        out.update({c.chunk_id: c for c in self.gt_doc_chunks})
        return out


class LLMUsage(Record):
    """LLM cost of one diagnosis or run step, counted in requests (one judging step's
    prompt): the runner's ledger counts HTTP calls, which can be more when an endpoint
    ignores ``n`` and each vote needs its own call."""

    calls: int = Field(
        default=0, ge=0, description="Requests the endpoint answered (paid, not cached)."
    )
    cached_calls: int = Field(
        default=0, ge=0, description="Requests served entirely from the response cache."
    )
    prompt_tokens: int = Field(default=0, ge=0)
    completion_tokens: int = Field(default=0, ge=0)


class Judgement(Record):
    """The answer-evaluation verdict for one trace (seed 000, App. B.1).

    ``label`` is ``None`` exactly when the judge could not decide; then
    ``undetermined_reason`` says why.
    """

    example_id: NonEmptyStr
    label: AnswerLabel | None
    reason: str = ""
    judge: str = "rules"
    undetermined_reason: str | None = None
    rule: str | None = Field(
        default=None, description="Id of the answer-evaluation rule that decided (rules judge)."
    )
    confidence: float | None = Field(
        default=None,
        ge=0,
        le=1,
        allow_inf_nan=False,
        description="Probability that the label is right, when the judge gives one.",
    )

    @model_validator(mode="after")
    def _check(self) -> Judgement:
        if self.label is None and not self.undetermined_reason:
            raise ValueError("an undetermined judgement needs 'undetermined_reason'")
        return self

    @property
    def undetermined(self) -> bool:
        return self.label is None


Vote = ErrorType | Literal["undetermined"]

_Share = Annotated[float | None, Field(ge=0, le=1, allow_inf_nan=False)]


class AnswerCorrectness(Record):
    """Claim-level correctness of an answer against its ground truth (RAGChecker):
    precision = share of the answer's claims the ground truth entails, recall = share of
    the ground truth's claims the answer entails, F1 their harmonic mean. A graded score
    beside the answer label; an empty or only declining answer scores 0. ``None`` values
    with ``undetermined_reason`` when it cannot be computed (no ground truth)."""

    precision: _Share = None
    recall: _Share = None
    f1: _Share = None
    judge: str = Field(default="offline", description="offline | llm:MODEL")
    undetermined_reason: str | None = None

    @model_validator(mode="after")
    def _check(self) -> AnswerCorrectness:
        if None in (self.precision, self.recall, self.f1) and not self.undetermined_reason:
            raise ValueError("an undetermined answer correctness needs 'undetermined_reason'")
        return self


class Diagnosis(Record):
    """Why one example failed: stage, error type with K-vote confidence, advice.

    ``needs_diagnosis`` is false for examples the answer evaluation judged correct;
    then stage and types stay empty. When a step cannot decide, ``undetermined`` is
    true and ``undetermined_reason`` names the step and the cause.
    """

    example_id: NonEmptyStr
    trace_id: NonEmptyStr
    run_id: str | None = None
    judge: str
    strategy: str
    answer_label: AnswerLabel | None
    answer_reason: str = ""
    needs_diagnosis: bool
    stage: Stage | None = None
    stage_reason: str = ""
    gt_chunk_ids: list[str] = Field(default_factory=list)
    gt_chunk_source: str | None = Field(
        default=None, description="dataset | references | llm_votes | lexical"
    )
    concept_coverage: float | None = Field(default=None, ge=0, le=1, allow_inf_nan=False)
    concepts: list[str] = Field(default_factory=list)
    error_type: ErrorType | None = Field(default=None, description="Mode of the K votes.")
    second_type: ErrorType | None = Field(default=None, description="Second mode of the votes.")
    mode_frequency: float | None = Field(default=None, ge=0, le=1, allow_inf_nan=False)
    votes: list[Vote] = Field(default_factory=list)
    evidence: list[str] = Field(default_factory=list)
    advice: list[str] = Field(default_factory=list)
    undetermined: bool = False
    undetermined_reason: str | None = None
    usage: LLMUsage = Field(default_factory=LLMUsage)
    label: str | None = Field(default=None, description="Question type copied from the example.")
    answer_rule: str | None = Field(
        default=None, description="Id of the answer-evaluation rule that decided (rules judge)."
    )
    confidence: float | None = Field(
        default=None,
        ge=0,
        le=1,
        allow_inf_nan=False,
        description="Estimated probability that this diagnosis is right: for a failing answer "
        "the failing verdict, the stage and the modal type; otherwise the not-failing verdict. "
        "None for an undetermined diagnosis.",
    )
    low_confidence: bool = Field(
        default=False, description="confidence is below diagnosis.low_confidence."
    )
    confidence_basis: str = Field(
        default="", description="What the confidence was computed from, in a few words."
    )
    tier1: list[str] = Field(
        default_factory=list,
        description="RAG-Critic tier-1 error types (seed 004) of error_type; empty if none.",
    )
    tier2: list[str] = Field(
        default_factory=list, description="RAG-Critic tier-2 error types of error_type."
    )
    tier3: list[str] = Field(
        default_factory=list, description="RAG-Critic tier-3 tags (open-set, from a critic)."
    )
    answer_correctness: AnswerCorrectness | None = Field(
        default=None,
        description="Claim-level precision/recall/F1 of the answer against the ground truth "
        "(offline claim entailment); a graded score beside answer_label. None in records "
        "written before it existed.",
    )

    @model_validator(mode="after")
    def _check(self) -> Diagnosis:
        if self.undetermined and not self.undetermined_reason:
            raise ValueError("an undetermined diagnosis needs 'undetermined_reason'")
        return self
