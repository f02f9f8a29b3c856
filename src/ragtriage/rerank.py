"""Rerankers: reorder retrieved hits and keep the best ``top_k``.

``lexical`` (offline default)
    a cheap reranker that uses other signals than the retriever: the best cosine
    similarity between the query and any *sentence* of the chunk (embedder), the
    share of the query's content terms that the chunk contains (English words, CJK
    bigrams), and a bonus for numbers, names and quoted phrases of the query found
    verbatim in the chunk.
``identity``
    keeps the retrieval order.
``llm``
    listwise reranking through an LLM (RankGPT-style permutation, sliding window from
    the end of the list to the front), prompt adapted from seed 000, App. A, Listing 1.
``cross_encoder``
    a local sentence-transformers cross-encoder directory (``st`` extra).

Every reranker returns new :class:`Hit` records ranked 1..k with its own score; the
input is never mutated. When the LLM reranker cannot get or parse an answer for a
window it keeps that window's input order and records why in ``last_errors``.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final, Protocol, runtime_checkable

import numpy as np

from ragtriage.config import RerankConfig
from ragtriage.embedding import Embedder, HashEmbedder, embed_documents, embed_queries
from ragtriage.errors import ConfigError, ModelUnavailableError
from ragtriage.index.bm25 import bm25_tokens
from ragtriage.llm import ChatRequest, Completion, LLMRunner
from ragtriage.records import Chunk, Hit
from ragtriage.text import detect_language, split_sentences, token_spans

__all__ = [
    "CrossEncoderReranker",
    "IdentityReranker",
    "LLMReranker",
    "LexicalReranker",
    "Reranker",
    "make_reranker",
    "parse_permutation",
    "query_key_items",
    "rank_prompt",
    "window_starts",
]


@runtime_checkable
class Reranker(Protocol):
    """Reorders ``hits`` (texts in ``chunks``) and keeps the best ``top_k``."""

    async def rerank(
        self, query: str, hits: Sequence[Hit], chunks: Mapping[str, Chunk], top_k: int
    ) -> list[Hit]: ...


def _renumber(hits: Sequence[Hit], scores: Sequence[float | None], top_k: int) -> list[Hit]:
    return [
        Hit(chunk_id=h.chunk_id, doc_id=h.doc_id, score=None if s is None else float(s), rank=r)
        for r, (h, s) in enumerate(zip(hits[:top_k], scores[:top_k], strict=False), start=1)
    ]


def _text(chunks: Mapping[str, Chunk], hit: Hit) -> str:
    c = chunks.get(hit.chunk_id)
    return c.text if c is not None else ""


class IdentityReranker:
    """Keeps the input order (and scores); cuts to ``top_k``."""

    async def rerank(
        self, query: str, hits: Sequence[Hit], chunks: Mapping[str, Chunk], top_k: int
    ) -> list[Hit]:
        return _renumber(hits, [h.score for h in hits], top_k)


# --------------------------------------------------------------------------- lexical

_NUMBER = re.compile(r"\d+(?:[.,:/]\d+)*%?")
_QUOTED = re.compile(r"[\"“「『《]([^\"”」』》]{2,60})[\"”」』》]")
_CAPITAL = re.compile(r"(?<![A-Za-z0-9])[A-Z][A-Za-z0-9'’-]*(?:[ \t]+[A-Z][A-Za-z0-9'’-]*)*")
_MAX_SENTENCES: Final = 64


def query_key_items(query: str) -> list[str]:
    """Exact items a good passage should contain verbatim: numbers, quoted phrases,
    and capitalised names (in English text not a lone sentence-initial word).
    Lower-cased, in order of appearance by kind."""
    items: list[str] = []
    for m in _QUOTED.finditer(query):
        items.append(m.group(1).strip())
    for m in _NUMBER.finditer(query):
        items.append(m.group(0).replace(",", ""))
    sentence_case = detect_language(query) == "en"  # Chinese has no sentence-initial caps
    for m in _CAPITAL.finditer(query):
        phrase = m.group(0)
        before = query[: m.start()].rstrip()
        if sentence_case and (not before or before[-1] in ".?!"):
            words = phrase.split()
            if len(words) == 1:
                continue
            phrase = " ".join(words[1:])
        items.append(phrase)
    out: list[str] = []
    for it in items:
        low = it.lower()
        if low and low not in out:
            out.append(low)
    return out


def _contains(haystack_low: str, item: str) -> bool:
    if not item.isascii():
        return item in haystack_low
    return re.search(r"(?<!\w)" + re.escape(item) + r"(?!\w)", haystack_low) is not None


class LexicalReranker:
    """Sentence-level semantic match + query-term coverage + exact-item bonus.

    ``score = (w_sim * max_sentence_cosine + w_cov * coverage + w_exact * exact) /
    (sum of the weights of the signals that apply)`` — coverage applies when the
    query has content terms, exact when it has numbers/names/quotes. Ties keep the
    input order.
    """

    def __init__(
        self,
        embedder: Embedder,
        *,
        w_sim: float = 0.5,
        w_cov: float = 0.35,
        w_exact: float = 0.15,
    ) -> None:
        self.embedder = embedder
        self.w_sim, self.w_cov, self.w_exact = w_sim, w_cov, w_exact

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        """The reranker score of each text for ``query`` (in [0, 1])."""
        if not texts:
            return []
        sent_lists = []
        for t in texts:
            sents = [s.text for s in split_sentences(t)][:_MAX_SENTENCES]
            sent_lists.append(sents or [t])
        flat = [s for sl in sent_lists for s in sl]
        qv = embed_queries(self.embedder, [query])[0]
        sims = embed_documents(self.embedder, flat) @ qv
        q_terms = set(bm25_tokens(query))
        items = query_key_items(query)
        out: list[float] = []
        pos = 0
        for t, sl in zip(texts, sent_lists, strict=True):
            best = float(np.max(sims[pos : pos + len(sl)]))
            pos += len(sl)
            total = self.w_sim * max(0.0, min(1.0, best))
            weight = self.w_sim
            if q_terms:
                c_terms = set(bm25_tokens(t))
                total += self.w_cov * len(q_terms & c_terms) / len(q_terms)
                weight += self.w_cov
            if items:
                low = t.lower().replace(",", "") if any(i[:1].isdigit() for i in items) else None
                t_low = t.lower()
                found = sum(
                    1
                    for i in items
                    if _contains(t_low, i) or (low is not None and _contains(low, i))
                )
                total += self.w_exact * found / len(items)
                weight += self.w_exact
            out.append(total / weight if weight > 0 else 0.0)
        return out

    async def rerank(
        self, query: str, hits: Sequence[Hit], chunks: Mapping[str, Chunk], top_k: int
    ) -> list[Hit]:
        if not hits:
            return []
        scores = self.score(query, [_text(chunks, h) for h in hits])
        order = sorted(range(len(hits)), key=lambda i: (-scores[i], i))
        return _renumber([hits[i] for i in order], [scores[i] for i in order], top_k)


# --------------------------------------------------------------------------- llm

# Adapted from the RankLLM reranker prompt of seed 000 (RAGEC), App. A, Listing 1.
_RANK_SYSTEM: Final = (
    "You are RankLLM, an intelligent assistant that can rank passages based on their "
    "relevancy to the query."
)
_MAX_PASSAGE_TOKENS: Final = 300


def _truncate(text: str, max_tokens: int) -> str:
    spans = token_spans(text)
    if len(spans) <= max_tokens:
        return " ".join(text.split())
    return " ".join(text[: spans[max_tokens - 1][1]].split()) + " …"


def rank_prompt(query: str, passages: Sequence[str]) -> ChatRequest:
    """The listwise ranking request for ``passages`` (ids 1..K)."""
    k = len(passages)
    lines = [
        f"I will provide you with {k} passages, each indicated by a numerical identifier []. "
        f"Rank the passages based on their relevance to the search query: {query}",
        "",
    ]
    lines += [f"[{i}] {_truncate(p, _MAX_PASSAGE_TOKENS)}" for i, p in enumerate(passages, 1)]
    lines += [
        "",
        f"Search Query: {query}",
        f"Rank the {k} passages above based on their relevance to the search query. All the "
        "passages should be included and listed using identifiers, in descending order of "
        "relevance. The output format should be [] > [], e.g., [2] > [1]. Only respond with "
        "the ranking results, do not say any word or explain.",
    ]
    return ChatRequest.of(_RANK_SYSTEM, "\n".join(lines), temperature=0.0, max_tokens=8 * k + 16)


_BRACKET_ID = re.compile(r"\[\s*(\d+)\s*\]")
_BARE_CHAIN = re.compile(r"\d+(?:\s*(?:>|,)\s*\d+)+")


def parse_permutation(text: str, n: int) -> tuple[list[int], bool]:
    """0-based order of ``n`` items from a reply like ``[2] > [1] > [3]``.

    Ids out of 1..n and repeats are ignored; missing ids follow in their original
    order. Without bracketed ids a bare chain ``2 > 1 > 3`` is accepted. The flag is
    false when the reply held no usable id (the order is then the input order).
    """
    found = [int(m) for m in _BRACKET_ID.findall(text)]
    if not found:
        chain = _BARE_CHAIN.search(text)
        if chain:
            found = [int(x) for x in re.findall(r"\d+", chain.group(0))]
    order: list[int] = []
    for i in found:
        if 1 <= i <= n and (i - 1) not in order:
            order.append(i - 1)
    ok = bool(order)
    order += [i for i in range(n) if i not in order]
    return order, ok


def window_starts(n: int, window: int, step: int) -> list[tuple[int, int]]:
    """``(start, end)`` windows from the end of a list of ``n`` to the front; the last
    window always starts at 0 so the top of the list is compared too."""
    if n <= window:
        return [(0, n)] if n else []
    out = []
    end = n
    start = n - window
    while True:
        out.append((start, end))
        if start == 0:
            break
        start = max(0, start - step)
        end = start + window
    return out


class LLMReranker:
    """Listwise LLM reranking with a sliding window (seed 000, App. A, Listing 1).

    Calls go through an :class:`LLMRunner` (cache, retries, ledger) with purpose
    ``"rerank"``. A failed or unparsable window keeps its order; ``last_errors``
    holds the reasons of the latest :meth:`rerank` call.
    """

    def __init__(self, llm: LLMRunner, *, window: int = 20, step: int = 10) -> None:
        if step > window:
            raise ConfigError(
                f"rerank.step ({step}) must not exceed rerank.window ({window})",
                field="rerank.step",
            )
        self.llm = llm
        self.window = window
        self.step = step
        self.last_errors: list[str] = []

    async def _permute(self, query: str, passages: Sequence[str]) -> tuple[list[int], str | None]:
        request = rank_prompt(query, passages)
        result = await self.llm.try_complete(request, purpose="rerank")
        if not isinstance(result, Completion):
            return list(range(len(passages))), f"llm call failed: {result.reason}"
        order, ok = parse_permutation(result.text, len(passages))
        if not ok:
            return order, f"unparsable ranking: {result.text[:80]!r}"
        return order, None

    async def rerank_with_errors(
        self, query: str, hits: Sequence[Hit], chunks: Mapping[str, Chunk], top_k: int
    ) -> tuple[list[Hit], list[str]]:
        """:meth:`rerank` plus the reasons of windows that kept their input order."""
        items = list(hits)
        errors: list[str] = []
        for start, end in window_starts(len(items), self.window, self.step):
            part = items[start:end]
            order, err = await self._permute(query, [_text(chunks, h) for h in part])
            if err:
                errors.append(f"window {start}-{end}: {err}")
            items[start:end] = [part[i] for i in order]
        n = len(items)
        scores = [(n - i) / n for i in range(n)]
        return _renumber(items, scores, top_k), errors

    async def rerank(
        self, query: str, hits: Sequence[Hit], chunks: Mapping[str, Chunk], top_k: int
    ) -> list[Hit]:
        out, errors = await self.rerank_with_errors(query, hits, chunks, top_k)
        self.last_errors = errors
        return out


# --------------------------------------------------------------------------- cross-encoder


class CrossEncoderReranker:
    """A local sentence-transformers cross-encoder directory (``st`` extra)."""

    def __init__(self, model_path: str, *, batch_size: int = 16) -> None:
        try:
            from sentence_transformers import CrossEncoder
        except ImportError as exc:
            raise ModelUnavailableError(
                "the cross_encoder reranker needs the st extra: pip install 'ragtriage[st]'"
            ) from exc
        self._model: Any = CrossEncoder(model_path, device="cpu", local_files_only=True)
        self.batch_size = batch_size

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        if not texts:
            return []
        raw = self._model.predict(
            [(query, t) for t in texts], batch_size=self.batch_size, show_progress_bar=False
        )
        return [float(x) for x in np.asarray(raw, dtype=np.float64).reshape(-1)]

    async def rerank(
        self, query: str, hits: Sequence[Hit], chunks: Mapping[str, Chunk], top_k: int
    ) -> list[Hit]:
        if not hits:
            return []
        scores = await asyncio.to_thread(self.score, query, [_text(chunks, h) for h in hits])
        scores = [s if np.isfinite(s) else -1e9 for s in scores]
        order = sorted(range(len(hits)), key=lambda i: (-scores[i], i))
        return _renumber([hits[i] for i in order], [scores[i] for i in order], top_k)


def make_reranker(
    cfg: RerankConfig, embedder: Embedder | None = None, llm: LLMRunner | None = None
) -> Reranker:
    """The reranker for ``cfg``. ``lexical`` without an embedder uses the hashing
    embedder; ``llm`` needs a runner; ``cross_encoder`` needs ``model_path``."""
    if cfg.method == "identity":
        return IdentityReranker()
    if cfg.method == "lexical":
        return LexicalReranker(embedder if embedder is not None else HashEmbedder())
    if cfg.method == "llm":
        if llm is None:
            raise ConfigError(
                "rerank method 'llm' needs an LLM endpoint (llm.base_url and llm.model)",
                field="rerank.method",
            )
        return LLMReranker(llm, window=cfg.window, step=cfg.step)
    if not cfg.model_path:
        raise ConfigError(
            "rerank method 'cross_encoder' needs rerank.model_path", field="rerank.model_path"
        )
    return CrossEncoderReranker(cfg.model_path)
