"""The prompt that asks the generator LLM to make one generation error (``--llm-rewrite``).

The mistakes follow the generation error types of seed 000, §4.4 (E9-E16); the
instructions are written for this project. The reply is the wrong answer only; the
parser strips labels, quotes and citations' brackets around it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ragtriage.llm import ChatRequest, Message
from ragtriage.records import ErrorType

__all__ = ["MISTAKES", "parse_rewrite", "rewrite_request"]

#: What the model is asked to get wrong, per generation error type.
MISTAKES: dict[ErrorType, str] = {
    ErrorType.E9: "The question cannot be answered from the context. Do NOT abstain: "
    "answer it confidently anyway, using whatever in the context looks related.",
    ErrorType.E10: "Answer, but make up a specific detail (a name, an organisation or a "
    "fact) that appears nowhere in the context and put it at the centre of the answer.",
    ErrorType.E11: "Ignore the context completely and answer from general world knowledge, "
    "as a model that did not read the documents would.",
    ErrorType.E12: "Give only part of the correct answer: leave out at least one of the "
    "facts the question asks for, without saying that anything is missing.",
    ErrorType.E13: "Misread the context: attribute the fact asked about to the wrong "
    "person, company or other entity mentioned in the context.",
    ErrorType.E14: "Answer with a true fact from the context that is about the same subject "
    "but about a different aspect than the one the question asks about.",
    ErrorType.E15: "Get the chronology wrong: swap the order of the events, or give a wrong "
    "date that changes which event came first.",
    ErrorType.E16: "Get a number wrong: change an amount, a percentage or a count, or "
    "compute a sum or difference incorrectly.",
}

_SYSTEM = (
    "You help test a tool that diagnoses errors of retrieval-augmented generation "
    "systems. You write realistic WRONG answers that contain exactly one kind of mistake. "
    "Write the answer in the language of the question, as briefly as the correct answer, "
    "in the confident tone of a normal answer. Reply with the wrong answer only."
)


def rewrite_request(
    error_type: ErrorType,
    query: str,
    ground_truth: str,
    context: Sequence[str],
    *,
    model: str = "",
    seed: int = 0,
    max_tokens: int = 200,
) -> ChatRequest:
    """A chat request asking for a wrong answer with the mistake of ``error_type``."""
    if error_type not in MISTAKES:
        raise ValueError(f"{error_type} is not a generation error type")
    blocks = "\n".join(f"[{i}] {' '.join(t.split())}" for i, t in enumerate(context, 1))
    truth = ground_truth.strip() or "Unable to answer: the context does not say."
    user = (
        f"Question: {query}\n\nContext:\n{blocks or '(no context)'}\n\n"
        f"Correct answer: {truth}\n\n"
        f"Mistake to make: {MISTAKES[error_type]}\n\nWrong answer:"
    )
    return ChatRequest(
        messages=(Message(role="system", content=_SYSTEM), Message(role="user", content=user)),
        model=model,
        temperature=0.0,
        max_tokens=max_tokens,
        seed=seed,
    )


_LABEL = re.compile(
    r"^\s*(?:\*\*)?(?:wrong\s+answer|answer|错误答案|答案)(?:\*\*)?\s*[:：]\s*", re.I
)


def parse_rewrite(text: str) -> str | None:
    """The answer in a reply (label and surrounding quotes removed); ``None`` if empty."""
    out = text.strip()
    out = _LABEL.sub("", out).strip()
    if len(out) >= 2 and out[0] == out[-1] and out[0] in "\"'“”":
        out = out[1:-1].strip()
    out = out.strip("“”").strip()
    return out or None
