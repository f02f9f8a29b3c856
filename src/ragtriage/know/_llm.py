"""LLM question-type labeller: the labelling prompt of seed 001 (App. D), JSON out,
K-sample self-consistency summarised with the diagnosis votes' mode / frequency rule.

Every call goes through :class:`~ragtriage.llm.LLMRunner` (cache by request hash,
retries, concurrency limit, ledger, dry-run estimate). A sample that names no label of
the taxonomy is an ``undetermined`` vote; a pair whose K votes are all undetermined
(garbage, endpoint down, dry run) is labelled ``undetermined`` with the reason.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from ragtriage.diagnosis.votes import summarize_label_votes
from ragtriage.know._taxonomy import LABELS, UNDETERMINED, LabelDecision, LabelItem
from ragtriage.llm import ChatRequest, LLMFailure, LLMRunner, extract_label, parse_json_object

__all__ = ["LLMLabeller", "label_prompt", "parse_label_reply"]

#: contexts longer than this many characters are cut (the prompt must fit small models)
MAX_CONTEXT_CHARS = 6000

# Adapted from seed 001 (Know Your RAG), Appendix D "Labelling Prompt".
_PROMPT = """Consider the following context information and a related question.

-- Context start --
[[{context}]]
-- Context end --

-- Question start --
[[{question}]]
-- Question end --

Select the most suitable label from the list below:
{{label_name: fact_single, label_description: A complete answer to this question is explicitly mentioned in the context and is a single simple value}}
{{label_name: summary, label_description: A complete answer to this question is explicitly mentioned in the context and is more like a summary, a procedure for doing something, or a composite of multiple parts}}
{{label_name: reasoning, label_description: A complete answer to this question is not explicitly mentioned in the context but can be inferred from the information given in it}}
{{label_name: unanswerable, label_description: A complete answer to this question is neither explicitly mentioned in the context nor can be inferred from the information given in it}}

Return your response in the following JSON format: {{"label_name": "selected_label_name", "reason": "reason_for_your_choice"}}
You must select exactly one label from the list above. Do not select anything that is not in the list. Do not return anything other than the JSON format requested above."""


def label_prompt(item: LabelItem) -> str:
    """The App. D prompt for one (context, question) pair."""
    context = item.sourced_context or item.context
    return _PROMPT.format(context=context[:MAX_CONTEXT_CHARS], question=item.question)


def parse_label_reply(text: str) -> tuple[str | None, str]:
    """``(label, reason)`` from one reply; ``label`` is ``None`` when the reply names no
    label of the taxonomy (or several)."""
    data = parse_json_object(text)
    if data is not None:
        raw = data.get("label_name", data.get("label"))
        reason = str(data.get("reason", "")).strip()
        if isinstance(raw, str):
            label = extract_label(raw, LABELS)
            if label is not None:
                return label, reason
    return extract_label(text, LABELS), ""


class LLMLabeller:
    """K samples of the App. D prompt per pair; the label is the mode of the votes."""

    name = "llm"

    def __init__(
        self,
        runner: LLMRunner,
        *,
        k: int = 1,
        temperature: float | None = None,
        max_tokens: int = 160,
        seed: int | None = 0,
    ) -> None:
        if k < 1:
            raise ValueError("k must be >= 1")
        self.runner = runner
        self.k = k
        # one sample is the greedy answer; several need sampling to disagree at all
        self.temperature = temperature if temperature is not None else (0.0 if k == 1 else 0.7)
        self.max_tokens = max_tokens
        self.seed = seed

    def request(self, item: LabelItem) -> ChatRequest:
        return ChatRequest.of(
            None,
            label_prompt(item),
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            n=self.k,
            seed=self.seed,
        )

    async def label_one(self, item: LabelItem) -> LabelDecision:
        outcome = await self.runner.try_complete(self.request(item), purpose="label")
        if isinstance(outcome, LLMFailure):
            return LabelDecision(
                example_id=item.example_id,
                label=UNDETERMINED,
                reason=f"no LLM answer: {outcome.reason}",
                labeller="llm",
                votes=(UNDETERMINED,) * self.k,
                given_label=item.given_label,
            )
        parsed = [parse_label_reply(t) for t in outcome.texts]
        summary = summarize_label_votes([p[0] or UNDETERMINED for p in parsed], LABELS)
        if summary.mode is None:
            return LabelDecision(
                example_id=item.example_id,
                label=UNDETERMINED,
                reason=f"no reply named a label ({summary.describe()})",
                labeller="llm",
                votes=summary.votes,
                given_label=item.given_label,
            )
        why = next((r for lab, r in parsed if lab == summary.mode and r), "")
        reason = f"{summary.describe()}" + (f"; {why}" if why else "")
        return LabelDecision(
            example_id=item.example_id,
            label=summary.mode,
            reason=reason,
            labeller="llm",
            votes=summary.votes,
            mode_frequency=summary.mode_frequency,
            given_label=item.given_label,
        )

    async def label_many(self, items: Sequence[LabelItem]) -> list[LabelDecision]:
        return list(await asyncio.gather(*(self.label_one(i) for i in items)))
