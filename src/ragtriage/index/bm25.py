"""BM25 over language-aware tokens, indexed by ``bm25s``, top-k by impact postings.

Tokens (:func:`bm25_tokens`): English words lower-cased with stopwords removed and a
light plural-stripping stem; Chinese as character bigrams (from
:func:`ragtriage.text.content_tokens`, which builds on ``match_tokens``). The token
lists are handed to ``bm25s`` pre-tokenised, so the same analysis applies to any
language mix. ``bm25s`` computes each (term, document) impact; queries read those
impacts as postings (:class:`ragtriage.index.impact.ImpactPostings`): :meth:`BM25Index.
search` is an exact MaxScore top-k that scores only the candidates a query can put in
the top k, :meth:`BM25Index.scores` one scatter-add per query term (the same float32
sums as ``bm25s``). Persisted with ``bm25s``'s own npy + json format plus the terms'
upper bounds as ``impact_upper.npy`` (no pickle).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from ragtriage.errors import InputError
from ragtriage.index.dense import top_k_indices
from ragtriage.index.impact import ImpactPostings
from ragtriage.text import content_tokens

__all__ = ["BM25Index", "bm25_tokens", "light_stem"]

FloatArray = npt.NDArray[np.float32]
Method = Literal["lucene", "robertson", "atire", "bm25l", "bm25+"]


@lru_cache(maxsize=1 << 18)
def light_stem(word: str) -> str:
    """Strip English plural endings (an "S" stemmer): ``studies``→``study``,
    ``boxes``→``boxe``, ``cats``→``cat``; leaves ``bus``, ``glass``, short words,
    non-ASCII words and numbers alone. Cached: a corpus repeats its words, and equal
    stems then share one string object (much less memory for a large index)."""
    if len(word) <= 3 or not word.isascii() or not word.isalpha():
        return word
    if word.endswith("ies") and not word.endswith(("eies", "aies")):
        return word[:-3] + "y"
    if word.endswith("es") and not word.endswith(("aes", "ees", "oes")):
        return word[:-1]
    if word.endswith("s") and not word.endswith(("us", "ss")):
        return word[:-1]
    return word


def bm25_tokens(text: str) -> list[str]:
    """Index/query terms of ``text`` for BM25 (see module docstring)."""
    return [light_stem(t) for t in content_tokens(text)]


class BM25Index:
    """A BM25 index over pre-tokenised documents (``bm25s`` scoring).

    :meth:`scores` returns the full score vector (for fusion); :meth:`search` the
    best rows with a positive score.
    """

    def __init__(
        self,
        docs_tokens: Sequence[Sequence[str]],
        *,
        k1: float = 1.5,
        b: float = 0.75,
        method: Method = "lucene",
    ) -> None:
        self.k1, self.b, self.method = k1, b, method
        self.size = len(docs_tokens)
        self._model: Any = None
        self._vocab: dict[str, int] = {}
        self._impacts: ImpactPostings | None = None
        if any(len(toks) for toks in docs_tokens):
            import bm25s

            model = bm25s.BM25(k1=k1, b=b, method=method)
            model.index([list(t) for t in docs_tokens], show_progress=False)
            self._attach(model, None)

    def _attach(self, model: Any, upper: npt.ArrayLike | None) -> None:
        self._model = model
        self._vocab = {str(k): int(v) for k, v in model.vocab_dict.items()}
        if getattr(model, "nonoccurrence_array", None) is not None:
            return  # bm25l / bm25+: absent terms score too; bm25s scores every row
        sc = model.scores
        self._impacts = ImpactPostings(
            sc["indptr"], sc["indices"], sc["data"], int(sc["num_docs"]), upper
        )
        # the impacts share (or, when sorted, replace) bm25s's arrays: one copy in memory
        sc["indices"], sc["data"] = self._impacts.indices, self._impacts.data

    def _term_ids(self, query: str | Sequence[str]) -> list[int]:
        toks = bm25_tokens(query) if isinstance(query, str) else list(query)
        return [self._vocab[t] for t in toks if t and t in self._vocab]

    @classmethod
    def from_texts(cls, texts: Sequence[str], **kw: Any) -> BM25Index:
        return cls([bm25_tokens(t) for t in texts], **kw)

    def scores(self, query: str | Sequence[str]) -> FloatArray:
        """BM25 score of every document for ``query`` (text, or its tokens)."""
        ids = self._term_ids(query)
        if self._model is None or not ids:
            return np.zeros(self.size, dtype=np.float32)
        if self._impacts is not None:
            return self._impacts.scores(ids)
        return np.asarray(self._model.get_scores_from_ids(ids), dtype=np.float32)

    def search(
        self,
        query: str | Sequence[str],
        top_k: int,
        mask: npt.NDArray[np.bool_] | None = None,
    ) -> list[tuple[int, float]]:
        """``(row, score)`` of the best ``top_k`` rows with a positive score, best first,
        ties to the lower row: exactly the top of :meth:`scores`, without scoring every
        row (:meth:`ImpactPostings.top_k`)."""
        ids = self._term_ids(query)
        if self._model is None or not ids or top_k <= 0:
            return []
        if self._impacts is not None:
            return self._impacts.top_k(ids, top_k, mask)
        s = np.asarray(self._model.get_scores_from_ids(ids), dtype=np.float32)
        positive = s > 0
        keep = positive if mask is None else positive & mask
        return [(int(i), float(s[i])) for i in top_k_indices(s, top_k, keep)]

    def save(self, directory: str | Path) -> None:
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        params = {"k1": self.k1, "b": self.b, "method": self.method, "size": self.size}
        params["empty"] = self._model is None
        (d / "bm25.json").write_text(json.dumps(params), encoding="utf-8")
        if self._model is not None:
            self._model.save(str(d / "bm25s"), allow_pickle=False)
        if self._impacts is not None:
            self._impacts.save_upper(d)

    @classmethod
    def load(cls, directory: str | Path) -> BM25Index:
        d = Path(directory)
        try:
            params = json.loads((d / "bm25.json").read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise InputError(f"cannot read BM25 index: {exc}", path=str(d)) from exc
        obj = cls.__new__(cls)
        obj.k1, obj.b, obj.method = params["k1"], params["b"], params["method"]
        obj.size = int(params["size"])
        obj._model, obj._vocab, obj._impacts = None, {}, None
        if not params.get("empty"):
            import bm25s

            try:
                model = bm25s.BM25.load(str(d / "bm25s"), allow_pickle=False)
            except (OSError, ValueError) as exc:
                raise InputError(f"cannot read BM25 index: {exc}", path=str(d)) from exc
            obj._attach(model, ImpactPostings.load_upper(d))
        return obj
