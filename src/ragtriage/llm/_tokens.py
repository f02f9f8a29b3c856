"""A dependency-free token estimator for budgeting (dry runs, scripted clients).

It is an estimate, not a tokenizer: about four characters per token for alphabetic
scripts and one token per CJK character, plus a small per-message overhead — close
enough to BPE counts for cost planning in English and Chinese.
"""

from __future__ import annotations

import math
import re

from ragtriage.llm._base import ChatRequest

__all__ = ["estimate_prompt_tokens", "estimate_tokens"]

_CJK = re.compile(
    r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]"
)
_MESSAGE_OVERHEAD = 4
_REQUEST_OVERHEAD = 3


def estimate_tokens(text: str) -> int:
    """Estimated number of tokens in ``text`` (0 for the empty string)."""
    if not text:
        return 0
    cjk = len(_CJK.findall(text))
    rest = len(text) - cjk
    return cjk + math.ceil(rest / 4)


def estimate_prompt_tokens(request: ChatRequest) -> int:
    """Estimated prompt tokens of a chat request, including message framing."""
    total = _REQUEST_OVERHEAD
    for message in request.messages:
        total += _MESSAGE_OVERHEAD + estimate_tokens(message.content)
    return total
