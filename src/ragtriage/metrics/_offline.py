"""Offline judge for the evaluation metrics: lexical entailment over content tokens (EN
words, ZH characters) with a number check — no model, deterministic.

A claim is *supported* when most of its content tokens occur in the context and every
number it states does; *contradicted* when it overlaps the context but states a number the
context does not have; otherwise *not supported*. Answer relevancy's reverse questions
come from rules (:mod:`ragtriage.metrics._reverse`): the answer's main claim turned into
wh-questions by the type of its answer slot (number, date, person, other; EN and ZH).
"""

from __future__ import annotations

import re
from typing import Final

from ragtriage.diagnosis.answer_styles import declining_sentence
from ragtriage.metrics._context import (
    CITATION,
    answer_claims,
    context_texts,
    reference_sentences,
)
from ragtriage.metrics._judgements import ClaimVerdict, TraceJudgements, Verdict
from ragtriage.metrics._reverse import reverse_questions
from ragtriage.records import Trace
from ragtriage.text import content_tokens, nfkc

__all__ = ["OfflineJudge", "claim_verdict"]

SUPPORT: Final = 0.7
RELEVANT: Final = 0.5
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


def _numbers(text: str) -> set[str]:
    return {n.replace(",", "") for n in _NUMBER.findall(nfkc(text))}


def _recall(tokens: list[str], pool: set[str]) -> float | None:
    if not tokens:
        return None
    return sum(t in pool for t in tokens) / len(tokens)


def claim_verdict(claim: str, context: str) -> Verdict:
    claim = CITATION.sub(" ", claim)  # "[1]" cites a chunk: not a number the claim states
    pool = set(content_tokens(context))
    rec = _recall(content_tokens(claim), pool) or 0.0
    missing_numbers = _numbers(claim) - _numbers(context)
    if missing_numbers and rec >= 0.5:
        return "contradicted"
    if rec >= SUPPORT and not missing_numbers:
        return "supported"
    return "not_supported"


class OfflineJudge:
    """Rules/lexical implementation of :class:`~ragtriage.metrics.TraceJudge`."""

    name = "offline"

    def judge_one(self, trace: Trace) -> TraceJudgements:
        ctx = context_texts(trace)
        joined = "\n".join(ctx)
        answer = trace.answer.strip()
        claims: tuple[ClaimVerdict, ...] | None = None
        claims_reason = None
        if not answer:
            claims_reason = "empty answer"
        elif declining_sentence(answer) and len(answer_claims(answer)) <= 1:
            claims_reason = "the answer declines to answer: no claims"
        elif not ctx:
            claims_reason = "no context chunks"
        else:
            claims = tuple(
                ClaimVerdict(claim=c, verdict=claim_verdict(c, joined))
                for c in answer_claims(answer)
            )
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

    def judge_many(self, traces: list[Trace]) -> list[TraceJudgements]:
        return [self.judge_one(t) for t in traces]
