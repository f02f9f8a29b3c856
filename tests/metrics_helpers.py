"""A scripted metrics judge for the local HTTP server (tests and benchmarks/metrics_vs_ragas):
answers the two LLM-judge prompts of :mod:`ragtriage.metrics` with valid JSON, verifying
each answer sentence with the offline claim rule."""

from __future__ import annotations

import json
import re
from typing import Any

from llm_server import last_user
from ragtriage.metrics import answer_claims, claim_verdict

__all__ = ["ZH", "metrics_reply"]

#: make_trace keyword arguments for a Chinese trace (diag_helpers.make_trace)
ZH = {
    "query": "阿克米公司成立于哪一年？",
    "gt_answer": "阿克米公司成立于1999年。",
    "gt_texts": ("阿克米公司成立于1999年，总部位于春田市。", "公司销售小部件。"),
    "other_texts": ("环球公司成立于2005年。", "英尼泰克为银行开发软件。"),
}

_ITEM = re.compile(r"^\[\d+\] (.*)$", re.M)


def metrics_reply(body: dict[str, Any], index: int) -> str:
    user = last_user(body)
    system = body["messages"][0]["content"]
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
