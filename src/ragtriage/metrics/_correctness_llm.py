"""Claim-level answer correctness with an LLM (RAGChecker, Ru et al. 2024, §3.2-3.3: claims
extracted by an LLM, each checked for entailment against the other text; its checker
follows RefChecker's three-way entailment / contradiction / neutral). The prompts below
are ragtriage's own wording of that method, not RAGChecker's or RefChecker's prompts.

Two requests per trace, through :class:`~ragtriage.llm.LLMRunner` (cache, concurrency
limit, dry-run estimate, batch mode):

1. ``correctness_extract`` (temperature 0, one sample): the answer's claims and the ground
   truth's claims, short standalone statements, one fact each;
2. ``correctness_check`` (``n`` samples at ``temperature``, seeded): for each answer claim
   whether the ground truth entails it, contradicts it or neither, and for each ground-truth
   claim the same against the answer. Each claim's verdict is the majority of the samples
   that parsed; no majority (1-1-1) leaves that claim ``undetermined``.

The second request depends on the first: in batch mode the extraction goes out in one
round and the checks in the next. An empty answer scores 0 without a call; an example
without a ground truth is ``undetermined`` without a call.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

from ragtriage.metrics._correctness import (
    NO_REFERENCE,
    ZERO_EMPTY,
    CorrectnessInput,
    CorrectnessResult,
    declined_reference_check,
    precheck,
    result_of,
)
from ragtriage.metrics._entail import ClaimCheck, Entailment, split_claims
from ragtriage.metrics._llm_judge import llm_judge_name

if TYPE_CHECKING:  # the LLM layer (openai, aiohttp) is imported when a call is made
    from ragtriage.llm import ChatRequest, Completion, LLMFailure, LLMRunner

__all__ = ["CHECK_SCHEMA", "EXTRACT_SCHEMA", "LLMCorrectness"]

_LABELS: Final[dict[str, Entailment]] = {
    "entailment": "entailed",
    "contradiction": "contradicted",
    "neutral": "neutral",
}

EXTRACT_SCHEMA: Final[dict[str, Any]] = {
    "title": "claims",
    "type": "object",
    "properties": {
        "answer_claims": {"type": "array", "items": {"type": "string"}},
        "reference_claims": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["answer_claims", "reference_claims"],
}
CHECK_SCHEMA: Final[dict[str, Any]] = {
    "title": "claim_checks",
    "type": "object",
    "properties": {
        "answer_claims": {"type": "array", "items": {"type": "string", "enum": list(_LABELS)}},
        "reference_claims": {"type": "array", "items": {"type": "string", "enum": list(_LABELS)}},
    },
    "required": ["answer_claims", "reference_claims"],
}

_EXTRACT_SYSTEM: Final = (
    "You break texts into factual claims. A claim is a short standalone statement of one "
    "fact, understandable without the text (write names instead of pronouns), in the "
    "text's language. Leave out statements that only decline to answer or only cite "
    "sources. Give the claims of the ANSWER and of the REFERENCE separately, each list in "
    'text order. Reply with JSON only: {"answer_claims": [...], "reference_claims": [...]}.'
)
_CHECK_SYSTEM: Final = (
    "You check claims against a text. For each numbered answer claim decide whether the "
    "REFERENCE entails it (entailment), states the opposite or something incompatible "
    "(contradiction), or neither (neutral). For each numbered reference claim decide the "
    "same against the ANSWER. Judge only by the given text, not by world knowledge. Reply "
    'with JSON only: {"answer_claims": [...], "reference_claims": [...]}, one label '
    "(entailment, contradiction or neutral) per claim, in order."
)


def _numbered(items: Sequence[str]) -> str:
    return "\n".join(f"[{i}] {t}" for i, t in enumerate(items, start=1)) or "(none)"


class LLMCorrectness:
    """:class:`~ragtriage.metrics._correctness.Correctness` by an LLM (RAGChecker-style)."""

    #: waits on an endpoint
    io_bound = True

    def __init__(
        self,
        runner: LLMRunner,
        *,
        n: int = 3,
        temperature: float = 0.7,
        seed: int = 0,
        max_tokens: int = 1024,
    ) -> None:
        if n < 1:
            raise ValueError("n must be >= 1")
        self.runner = runner
        self.n = n
        self.temperature = temperature if n > 1 else 0.0
        self.seed = seed
        self.max_tokens = max_tokens
        self.name = llm_judge_name(runner)

    def extract_request(self, item: CorrectnessInput) -> ChatRequest:
        from ragtriage.llm import ChatRequest

        return ChatRequest.of(
            _EXTRACT_SYSTEM,
            f"Question: {item.question}\n\nANSWER:\n{item.answer.strip()}\n\n"
            f"REFERENCE:\n{(item.reference or '').strip()}",
            json_schema=EXTRACT_SCHEMA,
            max_tokens=self.max_tokens,
        )

    def check_request(
        self, item: CorrectnessInput, answer_claims: Sequence[str], reference_claims: Sequence[str]
    ) -> ChatRequest:
        from ragtriage.llm import ChatRequest

        return ChatRequest.of(
            _CHECK_SYSTEM,
            f"Question: {item.question}\n\nANSWER:\n{item.answer.strip()}\n\n"
            f"REFERENCE:\n{(item.reference or '').strip()}\n\n"
            f"Answer claims (check against the REFERENCE):\n{_numbered(answer_claims)}\n\n"
            f"Reference claims (check against the ANSWER):\n{_numbered(reference_claims)}",
            json_schema=CHECK_SCHEMA,
            max_tokens=self.max_tokens,
            n=self.n,
            temperature=self.temperature,
            seed=self.seed,
        )

    async def _one(self, item: CorrectnessInput) -> CorrectnessResult:
        if item.reference is None or not item.reference.strip():
            return NO_REFERENCE
        if not item.answer.strip():
            return ZERO_EMPTY
        ext = await self.runner.try_complete(
            self.extract_request(item), purpose="correctness_extract"
        )
        claims = _claims(ext)
        if isinstance(claims, str):
            if self.runner.dry_run:
                # the checks depend on the extraction: estimated on the offline claims
                stand_in = self.check_request(
                    item, split_claims(item.answer), split_claims(item.reference)
                )
                await self.runner.try_complete(stand_in, purpose="correctness_check")
            return CorrectnessResult(None, None, None, claims)
        a_claims, r_claims = claims
        fixed = precheck(item, a_claims, r_claims)
        if fixed is not None:
            return fixed
        chk = await self.runner.try_complete(
            self.check_request(item, a_claims, r_claims), purpose="correctness_check"
        )
        result = _votes(chk, a_claims, r_claims)
        if not r_claims and result.precision is not None:  # a ground truth that declines
            return result_of(result.answer_claims, [declined_reference_check(item)])
        return result

    async def ascore_many(self, items: Sequence[CorrectnessInput]) -> list[CorrectnessResult]:
        return list(await asyncio.gather(*(self._one(i) for i in items)))

    def score_many(self, items: Sequence[CorrectnessInput]) -> list[CorrectnessResult]:
        from ragtriage.llm import run_sync

        return run_sync(self.ascore_many(items))


def _claims(out: Completion | LLMFailure) -> tuple[list[str], list[str]] | str:
    """The two claim lists of an extraction reply, or why there are none."""
    from ragtriage.llm import LLMFailure, parse_json_object

    if isinstance(out, LLMFailure):
        return f"LLM call failed: {out.reason}"
    data = parse_json_object(out.text)
    if data is None:
        return "unparseable LLM reply (claim extraction)"
    lists = []
    for key in ("answer_claims", "reference_claims"):
        raw = data.get(key)
        if not isinstance(raw, list) or not all(isinstance(c, str) for c in raw):
            return f"LLM reply without a list of {key}"
        lists.append([c.strip() for c in raw if c.strip()])
    return lists[0], lists[1]


def _labels(text: str, n_answer: int, n_reference: int) -> tuple[list[str], list[str]] | None:
    from ragtriage.llm import parse_json_object

    data = parse_json_object(text)
    if data is None:
        return None
    out = []
    for key, n in (("answer_claims", n_answer), ("reference_claims", n_reference)):
        raw = data.get(key)
        if not isinstance(raw, list) or len(raw) != n:
            return None
        labels = [str(x).strip().lower() for x in raw]
        if not all(lab in _LABELS for lab in labels):
            return None
        out.append(labels)
    return out[0], out[1]


def _majority(claim: str, votes: Sequence[str]) -> ClaimCheck:
    counts = Counter(votes).most_common()
    if len(counts) > 1 and counts[0][1] == counts[1][1]:
        tally = ", ".join(f"{lab} {k}" for lab, k in sorted(counts))
        return ClaimCheck(claim, "undetermined", f"no majority among the samples ({tally})")
    label, k = counts[0]
    return ClaimCheck(claim, _LABELS[label], f"{k} of {len(votes)} samples")


def _votes(
    out: Completion | LLMFailure, answer_claims: Sequence[str], reference_claims: Sequence[str]
) -> CorrectnessResult:
    from ragtriage.llm import LLMFailure

    if isinstance(out, LLMFailure):
        return CorrectnessResult(None, None, None, f"LLM call failed: {out.reason}")
    parsed = [
        p
        for t in out.texts
        if (p := _labels(t, len(answer_claims), len(reference_claims))) is not None
    ]
    if not parsed:
        return CorrectnessResult(
            None, None, None, "LLM reply without one label per claim (claim checks)"
        )
    a_checks = [_majority(c, [p[0][i] for p in parsed]) for i, c in enumerate(answer_claims)]
    r_checks = [_majority(c, [p[1][i] for p in parsed]) for i, c in enumerate(reference_claims)]
    return result_of(a_checks, r_checks)
