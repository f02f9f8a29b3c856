"""Query transformations before retrieval (seed 002, "Query Transformation").

* **HyDE** — the LLM writes a hypothetical passage answering the query; that passage
  is retrieved with instead of the query (its vocabulary resembles the documents').
* **multi_query** — the LLM writes 1–5 rephrasings; the original and each variant are
  retrieved and the ranked lists fused (reciprocal rank fusion), then reranked.
* **decompose** — the LLM splits the query into simpler sub-questions; each is
  retrieved and the lists fused.

Each transform needs an LLM: asking for one without an endpoint is a
:class:`~ragtriage.errors.ConfigError`, never a silent no-op. Reranking and generation
still use the original query. The prompts are ragtriage's own.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Protocol

from pydantic import JsonValue

from ragtriage.config import QueryTransformConfig
from ragtriage.errors import ConfigError
from ragtriage.generation import ChatCompleter
from ragtriage.llm import ChatRequest
from ragtriage.records import Hit
from ragtriage.text import normalize

__all__ = [
    "LLMQueryTransformer",
    "QueryTransformer",
    "TransformedQuery",
    "fuse_hits",
    "make_query_transformer",
    "parse_query_lines",
]


@dataclass(frozen=True, slots=True)
class TransformedQuery:
    """The queries to retrieve with, and what producing them cost.

    ``note`` explains a fallback (e.g. the LLM returned nothing usable, so the original
    query was used); it is empty otherwise.
    """

    method: str
    original: str
    queries: tuple[str, ...]
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0
    latency_ms: float = 0.0
    note: str = ""

    def to_metadata(self) -> dict[str, JsonValue]:
        """What goes into ``Trace.metadata["query_transform"]``."""
        out: dict[str, JsonValue] = {"method": self.method, "queries": list(self.queries)}
        if self.note:
            out["note"] = self.note
        return out


class QueryTransformer(Protocol):
    """Turns one query into the queries to retrieve with."""

    @property
    def method(self) -> str: ...

    async def transform(self, query: str, *, language: str) -> TransformedQuery: ...


_PROMPTS: Final[dict[str, dict[str, str]]] = {
    "hyde": {
        "en": (
            "Write a short passage (2-4 sentences) that answers the question below, in the "
            "style of a document that would contain the answer. Invent plausible details if "
            "needed. Reply with the passage only.\n\nQuestion: {query}"
        ),
        "zh": (
            "请写一段简短的文字（2到4句），以文档的口吻回答下面的问题；必要时可以编造合理的细节。"
            "只输出这段文字。\n\n问题：{query}"
        ),
    },
    "multi_query": {
        "en": (
            "Write {n} different rephrasings of the search question below that could retrieve "
            "the relevant documents (use synonyms and other wordings). One per line, no "
            "numbering, no other text.\n\nQuestion: {query}"
        ),
        "zh": (
            "请把下面的检索问题改写成{n}种不同的说法（使用同义词或其他表述），以便检索到相关文档。"
            "每行一个，不要编号，不要输出其他内容。\n\n问题：{query}"
        ),
    },
    "decompose": {
        "en": (
            "Break the question below into at most {n} simpler sub-questions that can each be "
            "answered from one document and that together answer it. If it is already "
            "simple, repeat it. One per line, no numbering, no other text.\n\nQuestion: {query}"
        ),
        "zh": (
            "请把下面的问题拆分成不超过{n}个更简单的子问题，每个子问题都能从单个文档中找到答案，"
            "合起来能回答原问题。如果问题已经足够简单，就原样输出。每行一个，不要编号，"
            "不要输出其他内容。\n\n问题：{query}"
        ),
    },
}

_BULLET = re.compile(r"^\s*(?:[-*•·]|\(?\d{1,2}[.)、:：]|\(?[a-z][.)])\s*", re.IGNORECASE)
_LABEL = re.compile(
    r"^(?:rephrasing|variant|query|question|sub-?question|子问题|问题)\s*\d*\s*[:：]\s*", re.I
)


def parse_query_lines(text: str, *, limit: int) -> list[str]:
    """Queries from an LLM reply, one per line: bullets, numbering, labels and quotes
    stripped; blank lines, preambles ending in ':' and duplicates dropped."""
    out: list[str] = []
    seen: set[str] = set()
    for line in text.splitlines():
        item = _LABEL.sub("", _BULLET.sub("", line.strip())).strip()
        item = item.strip("\"'“”「」 ").strip()
        if not item or item.endswith((":", "：")):
            continue
        key = normalize(item)
        if not key or key in seen:
            continue
        seen.add(key)
        out.append(item)
        if len(out) >= limit:
            break
    return out


class LLMQueryTransformer:
    """HyDE, multi-query or decomposition with an LLM (deterministic: temperature 0)."""

    def __init__(
        self, cfg: QueryTransformConfig, llm: ChatCompleter, *, model: str = "", seed: int = 0
    ) -> None:
        if cfg.method not in _PROMPTS:
            raise ConfigError(
                f"unknown query transform {cfg.method!r}", field="query_transform.method"
            )
        self._cfg = cfg
        self._llm = llm
        self._model = model
        self._seed = seed

    @property
    def method(self) -> str:
        return self._cfg.method

    async def transform(self, query: str, *, language: str) -> TransformedQuery:
        lang = "zh" if language.lower().startswith("zh") else "en"
        n = self._cfg.n_variants
        prompt = _PROMPTS[self._cfg.method][lang].format(query=query, n=n)
        request = ChatRequest.of(
            None,
            prompt,
            model=self._model,
            temperature=0.0,
            max_tokens=256,
            seed=self._seed,
        )
        started = time.perf_counter()
        completion = await self._llm.complete(request, purpose=f"query_{self._cfg.method}")
        latency = (time.perf_counter() - started) * 1000.0
        reply = completion.text.strip()
        note = ""
        if self._cfg.method == "hyde":
            queries = [" ".join(reply.split())] if reply else []
        elif self._cfg.method == "multi_query":
            variants = [
                q for q in parse_query_lines(reply, limit=n + 1) if normalize(q) != normalize(query)
            ][:n]
            queries = [query, *variants]
            if not variants:
                note = "the LLM gave no usable rephrasing; retrieved with the original query only"
        else:
            queries = parse_query_lines(reply, limit=n)
        if not queries:
            queries = [query]
            note = "the LLM reply was empty or unusable; retrieved with the original query"
        return TransformedQuery(
            method=self._cfg.method,
            original=query,
            queries=tuple(queries),
            prompt_tokens=completion.usage.prompt_tokens,
            completion_tokens=completion.usage.completion_tokens,
            calls=1,
            latency_ms=latency,
            note=note,
        )


def make_query_transformer(
    cfg: QueryTransformConfig, llm: ChatCompleter | None, *, model: str = "", seed: int = 0
) -> QueryTransformer | None:
    """``None`` for ``method: none``; a :class:`ConfigError` when an LLM is needed but
    none is configured."""
    if cfg.method == "none":
        return None
    if llm is None:
        raise ConfigError(
            f"query_transform.method {cfg.method!r} needs an LLM endpoint: set llm.base_url "
            "and llm.model in the config (or RAGTRIAGE_LLM_BASE_URL / RAGTRIAGE_LLM_MODEL), "
            "or use method 'none'",
            field="query_transform.method",
        )
    return LLMQueryTransformer(cfg, llm, model=model, seed=seed)


def fuse_hits(lists: Sequence[Sequence[Hit]], top_k: int, *, rrf_k: int = 60) -> list[Hit]:
    """Reciprocal rank fusion of ranked hit lists: score = Σ 1/(rrf_k + rank).

    One list is returned re-ranked but otherwise unchanged (scores kept). Ties break by
    the best rank in any list, then by chunk id, so the result is deterministic.
    """
    if len(lists) == 1:
        return [h.model_copy(update={"rank": i}) for i, h in enumerate(lists[0][:top_k], 1)]
    scores: dict[str, float] = {}
    best_rank: dict[str, int] = {}
    doc_of: dict[str, str] = {}
    for hits in lists:
        for h in hits:
            scores[h.chunk_id] = scores.get(h.chunk_id, 0.0) + 1.0 / (rrf_k + h.rank)
            best_rank[h.chunk_id] = min(best_rank.get(h.chunk_id, h.rank), h.rank)
            doc_of[h.chunk_id] = h.doc_id
    order = sorted(scores, key=lambda cid: (-scores[cid], best_rank[cid], cid))[:top_k]
    return [
        Hit(chunk_id=cid, doc_id=doc_of[cid], score=scores[cid], rank=i)
        for i, cid in enumerate(order, 1)
    ]
