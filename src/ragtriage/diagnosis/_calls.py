"""Per-diagnosis access to the LLM runner, metering what one example costs.

One :class:`LLMCalls` is created for each diagnosed trace and discarded afterwards,
so the usage it reports (requests paid, requests served from the cache, tokens) is
attributable to that example. The runner's ledger keeps the run-wide totals.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from ragtriage.judge.prompts import Prompt
from ragtriage.llm import Completion, LLMFailure, LLMRunner
from ragtriage.records import LLMUsage

__all__ = ["LLMCalls", "RequestOptions"]


@dataclass(frozen=True, slots=True)
class RequestOptions:
    """How requests are shaped: ``n`` sampling (one request for K samples) or K
    separate requests with distinct seeds; token limits; sampling temperature."""

    n_sampling: bool = True
    vote_temperature: float = 1.0
    max_tokens: int = 512
    vote_max_tokens: int = 48
    seed: int = 0


class LLMCalls:
    """Forwards requests to one runner and counts this example's usage."""

    def __init__(self, runner: LLMRunner, options: RequestOptions) -> None:
        self._runner = runner
        self._options = options
        self.calls = 0
        self.cached_calls = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.failures: list[LLMFailure] = []

    @property
    def dry_run(self) -> bool:
        return self._runner.dry_run

    @property
    def skipped_by_dry_run(self) -> bool:
        """Whether a request of this example went unanswered only because of a dry run."""
        return any(f.kind == "dry_run" for f in self.failures)

    def _count(self, outcome: Completion | LLMFailure) -> None:
        if isinstance(outcome, LLMFailure):
            self.failures.append(outcome)
            return
        if outcome.cached:
            self.cached_calls += 1
        else:
            self.calls += 1
            self.prompt_tokens += outcome.usage.prompt_tokens
            self.completion_tokens += outcome.usage.completion_tokens

    async def one(
        self, prompt: Prompt, *, purpose: str, max_tokens: int | None = None
    ) -> Completion | LLMFailure:
        """One deterministic sample (temperature 0)."""
        request = prompt.request(
            temperature=0.0,
            max_tokens=max_tokens or self._options.max_tokens,
            seed=self._options.seed,
        )
        outcome = await self._runner.try_complete(request, purpose=purpose)
        self._count(outcome)
        return outcome

    async def samples(
        self, prompt: Prompt, k: int, *, purpose: str, max_tokens: int | None = None
    ) -> tuple[list[str | None], list[LLMFailure]]:
        """K samples of one prompt: one request with ``n=K`` (the runner falls back to
        single calls when the endpoint ignores ``n``), or K requests with seeds
        ``seed..seed+K-1``. Returns one text per sample (``None`` for a sample whose
        request failed) and the failures."""
        limit = max_tokens or self._options.vote_max_tokens
        temperature = self._options.vote_temperature
        if self._options.n_sampling:
            request = prompt.request(
                temperature=temperature, max_tokens=limit, n=k, seed=self._options.seed
            )
            outcome = await self._runner.try_complete(request, purpose=purpose)
            self._count(outcome)
            if isinstance(outcome, LLMFailure):
                return [None] * k, [outcome]
            texts: list[str | None] = list(outcome.texts[:k])
            return texts + [None] * (k - len(texts)), []
        requests = [
            prompt.request(temperature=temperature, max_tokens=limit, seed=self._options.seed + i)
            for i in range(k)
        ]
        outcomes = await asyncio.gather(
            *(self._runner.try_complete(r, purpose=purpose) for r in requests)
        )
        texts = []
        failures: list[LLMFailure] = []
        for outcome in outcomes:
            self._count(outcome)
            if isinstance(outcome, LLMFailure):
                failures.append(outcome)
                texts.append(None)
            else:
                texts.append(outcome.text)
        return texts, failures

    def usage(self) -> LLMUsage:
        return LLMUsage(
            calls=self.calls,
            cached_calls=self.cached_calls,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
        )
