"""A scripted metrics judge for the local HTTP server (tests and benchmarks/metrics_vs_ragas):
answers the two LLM-judge prompts of :mod:`ragtriage.metrics` with valid JSON, verifying
each answer sentence with the offline claim rule."""

from __future__ import annotations

import json
import re
from typing import Any

from llm_server import last_user
from ragtriage.metrics import Premise, answer_claims, check_claims, claim_verdict, split_claims

__all__ = ["ZH", "metrics_reply"]

#: make_trace keyword arguments for a Chinese trace (diag_helpers.make_trace)
ZH = {
    "query": "阿克米公司成立于哪一年？",
    "gt_answer": "阿克米公司成立于1999年。",
    "gt_texts": ("阿克米公司成立于1999年，总部位于春田市。", "公司销售小部件。"),
    "other_texts": ("环球公司成立于2005年。", "英尼泰克为银行开发软件。"),
}

_ITEM = re.compile(r"^\[\d+\] (.*)$", re.M)


_LABEL = {"entailed": "entailment", "contradicted": "contradiction"}


def _section(user: str, head: str, *ends: str) -> str:
    text = user.split(head, 1)[1]
    for end in ends:
        text = text.split(end, 1)[0]
    return text.strip()


def correctness_reply(body: dict[str, Any], index: int) -> str | None:
    """The two answer-correctness prompts: claims by the offline splitter, labels by the
    offline entailment core (``None`` for any other prompt)."""
    user = last_user(body)
    system = body["messages"][0]["content"]
    if not system.startswith(("You break texts into factual claims", "You check claims")):
        return None
    answer = _section(user, "ANSWER:\n", "\n\nREFERENCE:")
    reference = _section(user, "REFERENCE:\n", "\n\nAnswer claims", "\n\nReply with")
    if system.startswith("You break texts into factual claims"):
        return json.dumps(
            {"answer_claims": split_claims(answer), "reference_claims": split_claims(reference)},
            ensure_ascii=False,
        )
    a_claims = _ITEM.findall(_section(user, "(check against the REFERENCE):\n", "\n\nReference"))
    r_claims = _ITEM.findall(_section(user, "(check against the ANSWER):\n", "\n\nReply with"))
    ref_p, ans_p = Premise.of(reference), Premise.of(answer)
    checks = check_claims([(c, ref_p) for c in a_claims] + [(c, ans_p) for c in r_claims])
    labels = [_LABEL.get(c.verdict, "neutral") for c in checks]
    return json.dumps(
        {"answer_claims": labels[: len(a_claims)], "reference_claims": labels[len(a_claims) :]}
    )


def metrics_reply(body: dict[str, Any], index: int) -> str:
    user = last_user(body)
    system = body["messages"][0]["content"]
    scripted = correctness_reply(body, index)
    if scripted is not None:
        return scripted
    if system.startswith("You evaluate an answer"):
        ctx = user.split("Context:\n")[1].split("\n\nAnswer:")[0]
        answer = user.split("Answer: ")[1].split("\n\nReply with")[0]
        question = user.split("Question: ")[1].split("\n\n")[0]
        claims = [{"claim": c, "verdict": claim_verdict(c, ctx)} for c in answer_claims(answer)]
        return json.dumps(
            {"claims": claims, "question": question, "noncommittal": False}, ensure_ascii=False
        )
    ref = user.split("Reference answer sentences:\n")[1].split("\n\nChunks:")[0]
    chunks = _ITEM.findall(user.split("Chunks:")[-1])
    ref_items = _ITEM.findall(ref)
    joined = "\n".join(chunks)
    return json.dumps(
        {
            "chunks": [any(claim_verdict(r, c) == "supported" for r in ref_items) for c in chunks],
            "reference": [claim_verdict(r, joined) == "supported" for r in ref_items],
        }
    )
