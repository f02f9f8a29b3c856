"""What a trace's generator saw: context chunk texts, answer claims, GT sentences."""

from __future__ import annotations

import re

from ragtriage.records import Chunk, Trace
from ragtriage.text import split_sentences

__all__ = [
    "CITATION",
    "answer_claims",
    "context_chunks",
    "context_texts",
    "reference_sentences",
]

#: a citation marker of a chunk ("[1]", "[1, 3]", "[2、4]"): not a claim, not a number
CITATION = re.compile(r"\[\d+(?:\s*[,，、]\s*\d+)*\]")


def context_chunks(trace: Trace) -> list[Chunk]:
    """The chunks given to the generator in prompt order (``context``; else the reranked,
    else the retrieved hits)."""
    ids = list(trace.context) or [h.chunk_id for h in (trace.reranked or trace.retrieved)]
    chunks = trace.chunk_map()
    return [chunks[i] for i in ids if i in chunks]


def context_texts(trace: Trace) -> list[str]:
    """Texts of :func:`context_chunks`."""
    return [c.text for c in context_chunks(trace)]


def answer_claims(answer: str) -> list[str]:
    """Offline claim extraction: the answer's sentences (EN and ZH terminators); a
    "sentence" that is only citation markers ("… Norway. [2]") is none."""
    out = [s.text.strip() for s in split_sentences(answer)]
    return [c for c in out if CITATION.sub("", c).strip(" \t\n.,;:，。；：")]


def reference_sentences(trace: Trace) -> list[str]:
    """Ground-truth answer sentences (context recall attributes each to the context)."""
    return answer_claims(trace.example.answer) if trace.example.answerable else []
