"""Claim-level answer correctness (RAGChecker, Ru et al. 2024, "RAGChecker: A Fine-grained
Framework for Diagnosing Retrieval-Augmented Generation", §3.2; RAGAS ``answer_correctness``
in its factual part): the answer and the ground truth are each split into claims, and

* **precision** = share of the answer's claims the ground truth entails,
* **recall** = share of the ground truth's claims the answer entails,
* **F1** = their harmonic mean (0 when both are 0).

Two implementations behind :class:`Correctness`: offline here (claims = sentences and
clauses, verdicts from :mod:`ragtriage.metrics._entail`), and the LLM one in
:mod:`ragtriage.metrics._correctness_llm`. Both give the same three scores,
``answer_correctness.precision``, ``.recall`` and ``.f1``.

Conventions: an empty answer scores 0 on all three (it states nothing correct); an answer
that only declines ("I don't know.") has no claim and scores 0 too, unless the ground
truth declines (in whole or in part): its decline is then one claim of the ground truth,
made by an answer that declines too (whose decline counts as a correct claim of the
answer); an example without a ground-truth answer leaves all three ``undetermined``; a
claim the checker cannot decide is left out of its share, and a share with no decided
claim is ``undetermined``. Offline, a neutral claim counts with the share of its content
the other side holds (:attr:`ClaimCheck.coverage`), an entailed one 1, a contradicted
one 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

from ragtriage.diagnosis.answer_styles import clean_answer, declining_sentence
from ragtriage.metrics._entail import ClaimCheck, Premise, check_claims, split_claims
from ragtriage.metrics._judgements import MetricScore
from ragtriage.records import Trace
from ragtriage.text import split_sentences

__all__ = [
    "BOTH_DECLINE",
    "CORRECTNESS_METRICS",
    "Correctness",
    "CorrectnessInput",
    "CorrectnessResult",
    "OfflineCorrectness",
    "correctness_input",
    "correctness_offline",
    "correctness_scores",
    "declined_reference_check",
    "precheck",
    "reference_declines",
    "result_of",
]

CORRECTNESS_METRICS: Final = (
    "answer_correctness.precision",
    "answer_correctness.recall",
    "answer_correctness.f1",
)


@dataclass(frozen=True, slots=True)
class CorrectnessInput:
    """What correctness compares: the answer, the ground truth (``None``: the example has
    none) and the question (its words count as known, never as proof)."""

    answer: str
    reference: str | None
    question: str = ""


def correctness_input(trace: Trace) -> CorrectnessInput:
    ex = trace.example
    ref = ex.answer if ex.answerable and ex.answer.strip() else None
    return CorrectnessInput(answer=trace.answer, reference=ref, question=ex.query)


@dataclass(frozen=True, slots=True)
class CorrectnessResult:
    """Precision, recall and F1 (``None`` with ``reason`` when undetermined) and the
    verdict on every claim."""

    precision: float | None
    recall: float | None
    f1: float | None
    reason: str | None = None
    answer_claims: tuple[ClaimCheck, ...] = ()
    reference_claims: tuple[ClaimCheck, ...] = ()


class Correctness(Protocol):
    """One implementation of answer correctness (offline or LLM)."""

    name: str

    def score_many(self, items: Sequence[CorrectnessInput]) -> list[CorrectnessResult]: ...


def _share(checks: Sequence[ClaimCheck]) -> float | None:
    decided = [c for c in checks if c.verdict != "undetermined"]
    if not decided:
        return None
    return sum(_credit(c) for c in decided) / len(decided)


def _credit(check: ClaimCheck) -> float:
    """What one decided claim counts: 1 entailed, 0 contradicted, and a neutral claim the
    share of its content the other side holds (:attr:`ClaimCheck.coverage`; 0 when not
    measured) -- a long claim missing one slot is mostly there, not absent."""
    if check.verdict == "entailed":
        return 1.0
    if check.verdict == "neutral" and check.coverage is not None:
        return check.coverage
    return 0.0


def _f1(p: float | None, r: float | None) -> float | None:
    if p is None or r is None:
        return None
    return 0.0 if p + r == 0 else 2 * p * r / (p + r)


def result_of(
    answer_checks: Sequence[ClaimCheck], reference_checks: Sequence[ClaimCheck]
) -> CorrectnessResult:
    """Precision, recall and F1 from the verdicts (claims on both sides given)."""
    p, r = _share(answer_checks), _share(reference_checks)
    reasons = []
    if p is None:
        reasons.append("no claim of the answer could be decided")
    if r is None:
        reasons.append("no claim of the ground truth could be decided")
    return CorrectnessResult(
        precision=p,
        recall=r,
        f1=_f1(p, r),
        reason="; ".join(reasons) or None,
        answer_claims=tuple(answer_checks),
        reference_claims=tuple(reference_checks),
    )


ZERO_EMPTY: Final = CorrectnessResult(0.0, 0.0, 0.0, "empty answer")
ZERO_NO_CLAIM: Final = CorrectnessResult(
    0.0, 0.0, 0.0, "the answer states no claim (it declines or is only citations)"
)
NO_REFERENCE: Final = CorrectnessResult(None, None, None, "no ground-truth answer")
NO_REFERENCE_CLAIM: Final = CorrectnessResult(
    None, None, None, "the ground-truth answer states no claim"
)
BOTH_DECLINE: Final = CorrectnessResult(
    1.0, 1.0, 1.0, "the ground truth says the material does not answer, and so does the answer"
)


def reference_declines(item: CorrectnessInput, reference_claims: Sequence[str]) -> bool:
    """The ground truth states nothing but that the material does not answer ("The
    document does not give the amount, only …", "文档没有说明…")."""
    return not reference_claims and declining_sentence(item.reference or "")


def declined_reference_check(item: CorrectnessInput) -> ClaimCheck:
    """The ground truth's one statement -- that there is no answer -- which an answer
    making claims does not make (its recall is 0)."""
    return ClaimCheck(
        (item.reference or "").strip(), "neutral", "the ground truth declines, the answer does not"
    )


def precheck(
    item: CorrectnessInput, answer_claims: Sequence[str], reference_claims: Sequence[str]
) -> CorrectnessResult | None:
    """The result fixed before any claim is checked (no reference, empty answer...). A
    ground truth that only declines is matched by an answer that declines too (1.0 on
    all three); an answer making claims then has them checked against the ground truth's
    text (what it says the material does give) and recall 0."""
    if item.reference is None or not item.reference.strip():
        return NO_REFERENCE
    if not item.answer.strip():
        return ZERO_EMPTY
    if not reference_claims:
        if not reference_declines(item, reference_claims):
            return NO_REFERENCE_CLAIM
        return BOTH_DECLINE if not answer_claims else None
    if not answer_claims:
        return ZERO_NO_CLAIM
    return None


def declines(text: str) -> bool:
    """Some sentence of ``text`` says the material does not answer ("The documents do not
    give its height; they only say …", "我不知道。")."""
    return any(declining_sentence(s.text) for s in split_sentences(clean_answer(text)))


def _decline_checks(
    item: CorrectnessInput, gt_declines: bool, answer_declines: bool
) -> tuple[list[ClaimCheck], list[ClaimCheck]]:
    """The decline as one claim on each side: a ground truth that says (in part) that the
    material does not answer makes that claim, which an answer saying so too entails and
    any other answer does not; the answer's own decline then counts as a claim the ground
    truth entails. An answer's decline where the ground truth answers is no claim."""
    if not gt_declines:
        return [], []
    if answer_declines:
        why = "both say the material does not answer"
        return [ClaimCheck("(declines)", "entailed", why)], [
            ClaimCheck("(declines)", "entailed", why)
        ]
    return [], [declined_reference_check(item)]


def correctness_offline(
    items: Sequence[CorrectnessInput], embedder: Any | None = None
) -> list[CorrectnessResult]:
    """Offline answer correctness of many items; one embedder batch for all of them."""
    out: list[CorrectnessResult | None] = []
    premises: dict[tuple[str, str], Premise] = {}
    jobs: list[tuple[str, Premise]] = []
    spans: list[tuple[int, int, int]] = []
    extra: list[tuple[list[ClaimCheck], list[ClaimCheck]]] = []
    for item in items:
        fixed = precheck(item, ["?"], ["?"])  # no ground truth, empty answer: no claims read
        a_claims: list[str] = []
        r_claims: list[str] = []
        more: tuple[list[ClaimCheck], list[ClaimCheck]] = ([], [])
        if fixed is None:
            a_claims = split_claims(item.answer)
            # a ground truth whose every sentence declines matches an answer that only
            # declines (1.0); what it says beside its decline is weighed against claims
            r_claims = split_claims(item.reference or "", beside_decline=False)
            fixed = precheck(item, a_claims, r_claims)
            gt_declines = declines(item.reference or "")
            answer_declines = gt_declines and declines(item.answer)
            if fixed is ZERO_NO_CLAIM and answer_declines:
                fixed = None  # it declines, as the ground truth does in part
            if fixed is None:
                more = _decline_checks(item, gt_declines, answer_declines)
                # what the ground truth says the material does give ("…，只提到…",
                # "they only say …") is weighed against the answer
                r_claims = split_claims(item.reference or "")
                if not r_claims and a_claims:
                    r_claims = [(item.reference or "").strip()]
        out.append(fixed)
        extra.append(more)
        if fixed is not None:
            spans.append((0, 0, 0))
            continue
        reference = item.reference or ""
        # two pipelines' answers to one question share its ground-truth premise
        gt = premises.get((reference, item.question))
        if gt is None:
            gt = premises[(reference, item.question)] = Premise.of(reference, item.question)
        ans = Premise.of(item.answer, background=item.question)
        start = len(jobs)
        jobs.extend((c, gt) for c in a_claims)
        jobs.extend((c, ans) for c in r_claims)
        spans.append((start, start + len(a_claims), len(jobs)))
    checks = check_claims(jobs, embedder, with_coverage=True)
    results: list[CorrectnessResult] = []
    for fixed, (start, mid, end), (a_more, r_more) in zip(out, spans, extra, strict=True):
        if fixed is not None:
            results.append(fixed)
            continue
        results.append(result_of([*checks[start:mid], *a_more], [*checks[mid:end], *r_more]))
    return results


class OfflineCorrectness:
    """:class:`Correctness` offline: sentence/clause claims, the entailment core, and the
    embedder (when given) for paraphrases."""

    def __init__(self, embedder: Any | None = None) -> None:
        self.embedder = embedder
        self.name = "offline"

    def score_many(self, items: Sequence[CorrectnessInput]) -> list[CorrectnessResult]:
        return correctness_offline(items, self.embedder)


def correctness_scores(result: CorrectnessResult, judge: str) -> dict[str, MetricScore]:
    """The three metric scores of one result, named :data:`CORRECTNESS_METRICS`."""
    out: dict[str, MetricScore] = {}
    for name, value in zip(
        CORRECTNESS_METRICS, (result.precision, result.recall, result.f1), strict=True
    ):
        out[name] = (
            MetricScore(value=value, judge=judge)
            if value is not None
            else MetricScore(judge=judge, undetermined_reason=result.reason or "not judged")
        )
    return out
