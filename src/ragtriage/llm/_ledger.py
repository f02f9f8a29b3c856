"""A token and cost ledger, broken down by a ``purpose`` tag ("answer_eval", ...).

The ledger is an accumulator owned by one :class:`~ragtriage.llm.LLMRunner`; read it
through :meth:`Ledger.summary`, which returns frozen records.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from pydantic import BaseModel, ConfigDict

from ragtriage.llm._base import Usage

__all__ = ["Ledger", "LedgerSummary", "PurposeStats"]


class PurposeStats(BaseModel):
    """Counters for one purpose (or the total).

    ``requests``: calls to ``LLMRunner.complete``; ``calls``: successful client calls
    (paid); ``cache_hits``: samples served without a call; ``failures``: requests that
    failed for good (``timeouts`` of them by timeout); ``retries``: extra attempts.
    ``estimated_*``: what a dry run would have paid (completion tokens as the upper
    bound ``max_tokens`` per sample).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    requests: int = 0
    calls: int = 0
    cache_hits: int = 0
    failures: int = 0
    timeouts: int = 0
    retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    estimated_calls: int = 0
    estimated_prompt_tokens: int = 0
    estimated_completion_tokens: int = 0
    estimated_cost: float = 0.0


class LedgerSummary(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    by_purpose: dict[str, PurposeStats]
    total: PurposeStats


@dataclass
class _Counts:
    requests: int = 0
    calls: int = 0
    cache_hits: int = 0
    failures: int = 0
    timeouts: int = 0
    retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    estimated_calls: int = 0
    estimated_prompt_tokens: int = 0
    estimated_completion_tokens: int = 0


class Ledger:
    """Counts calls, cache hits, failures, retries, tokens and cost per purpose."""

    def __init__(self, price_per_1k_prompt: float = 0.0, price_per_1k_completion: float = 0.0):
        self._price_prompt = price_per_1k_prompt
        self._price_completion = price_per_1k_completion
        self._counts: dict[str, _Counts] = {}

    def _of(self, purpose: str) -> _Counts:
        counts = self._counts.get(purpose)
        if counts is None:
            counts = self._counts[purpose] = _Counts()
        return counts

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (
            prompt_tokens * self._price_prompt + completion_tokens * self._price_completion
        ) / 1000.0

    def record_request(self, purpose: str) -> None:
        self._of(purpose).requests += 1

    def record_call(self, purpose: str, usage: Usage) -> None:
        counts = self._of(purpose)
        counts.calls += 1
        counts.prompt_tokens += usage.prompt_tokens
        counts.completion_tokens += usage.completion_tokens

    def record_cache_hits(self, purpose: str, samples: int) -> None:
        self._of(purpose).cache_hits += samples

    def record_retry(self, purpose: str) -> None:
        self._of(purpose).retries += 1

    def record_failure(self, purpose: str, *, timeout: bool = False) -> None:
        counts = self._of(purpose)
        counts.failures += 1
        counts.timeouts += int(timeout)

    def record_estimate(
        self, purpose: str, *, calls: int, prompt_tokens: int, completion_tokens: int
    ) -> None:
        counts = self._of(purpose)
        counts.estimated_calls += calls
        counts.estimated_prompt_tokens += prompt_tokens
        counts.estimated_completion_tokens += completion_tokens

    def add(self, summary: LedgerSummary) -> None:
        """Add another ledger's counts, purpose by purpose (a Ray worker's ledger of one
        batch, summed on the driver); cost follows from the tokens at this ledger's
        prices."""
        for purpose, stats in summary.by_purpose.items():
            counts = self._of(purpose)
            for f in fields(_Counts):
                setattr(counts, f.name, getattr(counts, f.name) + getattr(stats, f.name))

    def _stats(self, counts: _Counts) -> PurposeStats:
        return PurposeStats(
            **{f.name: getattr(counts, f.name) for f in fields(_Counts)},
            cost=self.cost(counts.prompt_tokens, counts.completion_tokens),
            estimated_cost=self.cost(
                counts.estimated_prompt_tokens, counts.estimated_completion_tokens
            ),
        )

    def summary(self) -> LedgerSummary:
        total = _Counts()
        for counts in self._counts.values():
            for f in fields(_Counts):
                setattr(total, f.name, getattr(total, f.name) + getattr(counts, f.name))
        return LedgerSummary(
            by_purpose={p: self._stats(c) for p, c in sorted(self._counts.items())},
            total=self._stats(total),
        )
