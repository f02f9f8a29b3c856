"""Offline judge for the evaluation metrics — no LLM, deterministic.

Claims are the answer's sentences and clauses (:func:`~ragtriage.metrics._entail.split_claims`)
and each is judged against the context by the offline entailment core
(:mod:`ragtriage.metrics._entail`, shared with ``answer_correctness``): *supported* when
entailed, *contradicted* when a number, date or name of the claim conflicts with the
context clause saying the same thing, or the claim negates it ("never took over as CFO"),
or says an opposite term ("fell" for "rose"); otherwise *not supported*. With an
embedder, English claims that hold 40-70 % of their words in the context are compared
with its best sentences (paraphrase). Answer relevancy's reverse questions come from
rules (:mod:`ragtriage.metrics._reverse`): the answer's main claim turned into
wh-questions by the type of its answer slot (number, date, person, other; EN and ZH).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Final

from ragtriage.diagnosis.answer_styles import declining_sentence
from ragtriage.metrics._context import context_texts, reference_sentences
from ragtriage.metrics._entail import Entailment, Premise, check_claims, split_claims
from ragtriage.metrics._judgements import ClaimVerdict, TraceJudgements, Verdict
from ragtriage.metrics._reverse import reverse_questions
from ragtriage.records import Trace
from ragtriage.text import content_tokens

__all__ = ["OfflineJudge", "claim_verdict"]

SUPPORT: Final = 0.7
RELEVANT: Final = 0.5
_VERDICT: Final[dict[Entailment, Verdict]] = {
    "entailed": "supported",
    "contradicted": "contradicted",
    "neutral": "not_supported",
}


def _recall(tokens: list[str], pool: set[str]) -> float | None:
    if not tokens:
        return None
    return sum(t in pool for t in tokens) / len(tokens)


@lru_cache(maxsize=256)
def _premise(context: str) -> Premise:
    return Premise.of(context)


def claim_verdict(claim: str, context: str) -> Verdict:
    """One claim against a context (the offline entailment core, no embedder); a claim
    without content is ``not_supported``."""
    check = check_claims([(claim, _premise(context))])[0]
    return _VERDICT.get(check.verdict, "not_supported")


class OfflineJudge:
    """Rules/lexical implementation of :class:`~ragtriage.metrics.TraceJudge`."""

    name = "offline"

    def __init__(self, embedder: Any | None = None) -> None:
        #: compares English paraphrases (claims holding 40-70 % of their words)
        self.embedder = embedder

    def judge_one(self, trace: Trace) -> TraceJudgements:
        return self.judge_many([trace])[0]

    def judge_many(self, traces: list[Trace]) -> list[TraceJudgements]:
        """Every trace's judgements; the claims of all traces checked in one pass (one
        embedder batch)."""
        jobs: list[tuple[str, Premise]] = []
        premises: dict[str, Premise] = {}
        spans: list[tuple[int, int] | str] = []
        for trace in traces:
            ctx = context_texts(trace)
            answer = trace.answer.strip()
            claims = split_claims(answer) if answer else []
            if not answer:
                spans.append("empty answer")
            elif not claims and declining_sentence(answer):
                spans.append("the answer declines to answer: no claims")
            elif not claims:
                spans.append("no claims in the answer")
            elif not ctx:
                spans.append("no context chunks")
            else:
                joined = "\n".join(ctx)
                premise = premises.get(joined)
                if premise is None:  # answers over one context share it
                    premise = premises[joined] = Premise.of(joined)
                spans.append((len(jobs), len(jobs) + len(claims)))
                jobs.extend((c, premise) for c in claims)
        checks = check_claims(jobs, self.embedder)
        out = []
        for trace, span in zip(traces, spans, strict=True):
            if isinstance(span, str):
                out.append(self._judgements(trace, None, span))
                continue
            decided = [c for c in checks[span[0] : span[1]] if c.verdict != "undetermined"]
            if not decided:
                out.append(self._judgements(trace, None, "no claim of the answer could be decided"))
                continue
            verdicts = tuple(
                ClaimVerdict(claim=c.claim, verdict=_VERDICT[c.verdict]) for c in decided
            )
            out.append(self._judgements(trace, verdicts, None))
        return out

    def _judgements(
        self, trace: Trace, claims: tuple[ClaimVerdict, ...] | None, claims_reason: str | None
    ) -> TraceJudgements:
        ctx = context_texts(trace)
        joined = "\n".join(ctx)
        answer = trace.answer.strip()
        reference = trace.example.answer if trace.example.answerable else ""
        ref_tokens = content_tokens(reference or trace.example.query)
        chunk_relevant = (
            tuple((_recall(ref_tokens, set(content_tokens(c))) or 0.0) >= RELEVANT for c in ctx)
            if ctx and ref_tokens
            else None
        )
        pool = set(content_tokens(joined))
        gt = reference_sentences(trace)
        gt_attr = (
            tuple((_recall(content_tokens(s), pool) or 0.0) >= SUPPORT for s in gt)
            if gt and ctx
            else None
        )
        noncommittal = declining_sentence(answer) if answer else None
        questions = reverse_questions(answer) if answer else ()
        questions_reason = None
        if not answer:
            questions_reason = "empty answer"
        elif not questions and not noncommittal:
            questions_reason = "no claim to turn into a question"
        return TraceJudgements(
            judge=self.name,
            claims=claims,
            claims_reason=claims_reason,
            chunk_relevant=chunk_relevant,
            chunks_reason=None if chunk_relevant is not None else "no context chunks",
            gt_attributed=gt_attr,
            gt_reason=None
            if gt_attr is not None
            else ("no ground-truth answer" if not gt else "no context chunks"),
            questions=questions if questions or noncommittal else None,
            noncommittal=noncommittal,
            questions_reason=questions_reason,
        )
