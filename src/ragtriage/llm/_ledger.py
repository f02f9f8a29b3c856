"""A token and cost ledger, broken down by a ``purpose`` tag ("answer_eval", ...).

The ledger is an accumulator owned by one :class:`~ragtriage.llm.LLMRunner`; read it
through :meth:`Ledger.summary`, which returns frozen records.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from pydantic import BaseModel, ConfigDict

from ragtriage.llm._base import Usage

__all__ = ["BATCH_PRICE_FACTOR", "Ledger", "LedgerSummary", "PurposeStats"]

#: what a request answered through a batch costs, as a share of the listed price
#: (OpenAI's Batch API: half); ``llm.batch_price_factor`` sets it per endpoint
BATCH_PRICE_FACTOR = 0.5


class PurposeStats(BaseModel):
    """Counters for one purpose (or the total).

    ``requests``: calls to ``LLMRunner.complete``; ``calls``: successful client calls
    (paid); ``cache_hits``: samples served without a call; ``failures``: requests that
    failed for good (``timeouts`` of them by timeout); ``retries``: extra attempts.
    ``estimated_*``: what a dry run (or a batch export) would pay (completion tokens as
    the upper bound ``max_tokens`` per sample). ``batch_*``: the part of ``calls`` and
    the tokens answered through a batch (imported replies), which ``cost`` counts at the
    batch price.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

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
    batch_calls: int = 0
    batch_prompt_tokens: int = 0
    batch_completion_tokens: int = 0


class LedgerSummary(BaseModel):
    """Per-purpose and total counts. ``batch_price_factor``: the share of the listed
    price a batch request costs; ``batch_estimates``: whether ``estimated_cost`` is at
    that price (a batch export) or the listed one (a dry run)."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    by_purpose: dict[str, PurposeStats]
    total: PurposeStats
    batch_price_factor: float = BATCH_PRICE_FACTOR
    batch_estimates: bool = False


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
    batch_calls: int = 0
    batch_prompt_tokens: int = 0
    batch_completion_tokens: int = 0


class Ledger:
    """Counts calls, cache hits, failures, retries, tokens and cost per purpose.

    Prices are per 1,000 tokens as listed; a reply that came through a batch costs
    ``batch_price_factor`` of that (:meth:`record_batch_reply`). ``batch_estimates``:
    estimates are for a batch export, so at the batch price too.
    """

    def __init__(
        self,
        price_per_1k_prompt: float = 0.0,
        price_per_1k_completion: float = 0.0,
        *,
        batch_price_factor: float = BATCH_PRICE_FACTOR,
        batch_estimates: bool = False,
    ):
        self._price_prompt = price_per_1k_prompt
        self._price_completion = price_per_1k_completion
        self._batch_factor = batch_price_factor
        self._batch_estimates = batch_estimates
        self._counts: dict[str, _Counts] = {}

    @property
    def batch_price_factor(self) -> float:
        return self._batch_factor

    @property
    def batch_estimates(self) -> bool:
        return self._batch_estimates

    def set_batch_estimates(self, value: bool = True) -> None:
        """Estimate at the batch price from now on (a runner exporting a batch)."""
        self._batch_estimates = value

    def _of(self, purpose: str) -> _Counts:
        counts = self._counts.get(purpose)
        if counts is None:
            counts = self._counts[purpose] = _Counts()
        return counts

    def cost(self, prompt_tokens: int, completion_tokens: int, *, batch: bool = False) -> float:
        """The listed price of these tokens, or the batch price (``batch=True``)."""
        listed = (
            prompt_tokens * self._price_prompt + completion_tokens * self._price_completion
        ) / 1000.0
        return listed * self._batch_factor if batch else listed

    def record_request(self, purpose: str) -> None:
        self._of(purpose).requests += 1

    def record_call(self, purpose: str, usage: Usage) -> None:
        counts = self._of(purpose)
        counts.calls += 1
        counts.prompt_tokens += usage.prompt_tokens
        counts.completion_tokens += usage.completion_tokens

    def record_batch_reply(self, purpose: str, usage: Usage) -> None:
        """One reply answered through a batch (imported): a paid call at the batch price."""
        counts = self._of(purpose)
        counts.calls += 1
        counts.prompt_tokens += usage.prompt_tokens
        counts.completion_tokens += usage.completion_tokens
        counts.batch_calls += 1
        counts.batch_prompt_tokens += usage.prompt_tokens
        counts.batch_completion_tokens += usage.completion_tokens

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
        live = self.cost(
            counts.prompt_tokens - counts.batch_prompt_tokens,
            counts.completion_tokens - counts.batch_completion_tokens,
        )
        batched = self.cost(counts.batch_prompt_tokens, counts.batch_completion_tokens, batch=True)
        return PurposeStats(
            **{f.name: getattr(counts, f.name) for f in fields(_Counts)},
            cost=live + batched,
            estimated_cost=self.cost(
                counts.estimated_prompt_tokens,
                counts.estimated_completion_tokens,
                batch=self._batch_estimates,
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
            batch_price_factor=self._batch_factor,
            batch_estimates=self._batch_estimates,
        )
