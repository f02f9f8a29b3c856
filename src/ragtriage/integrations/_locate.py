"""Find retrieved passages in the user's documents and cut the documents into chunks
consistent with them.

:class:`Locator` tries, for each passage: the exact text in any document; the same
ignoring whitespace, punctuation, case and full/half width
(:func:`ragtriage.groundtruth.locate_reference` without fuzziness); a fuzzy alignment
(rapidfuzz, :data:`FUZZY_THRESHOLD`) in the few documents sharing most of its rarest
words (an inverted index of the documents' content tokens picks the candidates, so a
large corpus is not scanned per passage).
Each found span records how it was found (``exact`` / ``normalised`` / ``fuzzy``) and a
quality score (rapidfuzz ``ratio`` of the passage and the span, 0-100).

:func:`partition` turns the spans found in one document into its chunks: every span is
a chunk (spans may overlap, as chunks with overlap do), and the text around them is cut
into pieces of about the spans' median length, at sentence or word boundaries.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from statistics import median
from typing import Literal

from rapidfuzz import fuzz

from ragtriage.diagnosis.observability import CHUNK_ROLE_KEY, INFERRED_CHUNK
from ragtriage.groundtruth import locate_reference
from ragtriage.records import Chunk, Document
from ragtriage.text import content_tokens

__all__ = ["FUZZY_THRESHOLD", "Located", "Locator", "chunk_id_for", "partition"]

#: minimum rapidfuzz partial_ratio (0-100) for a fuzzy location
FUZZY_THRESHOLD = 90.0
#: documents tried for a normalised / fuzzy match, ranked by shared rare words
_CANDIDATES = 5
#: documents searched for an exact match first (then every document of a small corpus)
_EXACT_CANDIDATES = 50
#: a corpus of at most this many documents is scanned whole for exact matches
_SCAN_ALL = 500
#: rarest content tokens of a passage that vote for its candidate documents
_VOTERS = 16
#: piece length when a document has no located span to take the size from
_DEFAULT_PIECE_CHARS = 800

Method = Literal["exact", "normalised", "fuzzy"]


@dataclass(frozen=True, slots=True)
class Located:
    """Where a passage was found: ``document.text[start:end]``."""

    doc_id: str
    start: int
    end: int
    method: Method
    score: float


def chunk_id_for(doc_id: str, start: int, end: int) -> str:
    return f"{doc_id}@{start}-{end}"


class Locator:
    """Locates passages in a fixed set of documents (results cached by text)."""

    def __init__(self, documents: Sequence[Document]) -> None:
        self.documents = {d.doc_id: d for d in documents}
        self._order = {d: i for i, d in enumerate(self.documents)}
        self._postings: dict[str, list[str]] | None = None
        self._cache: dict[tuple[str, str | None], Located | None] = {}

    def _index(self) -> dict[str, list[str]]:
        """Content token -> documents holding it (built on first use)."""
        if self._postings is None:
            postings: dict[str, list[str]] = {}
            for d, doc in self.documents.items():
                for t in set(content_tokens(doc.text)):
                    postings.setdefault(t, []).append(d)
            self._postings = postings
        return self._postings

    def candidates(self, text: str, limit: int = _CANDIDATES) -> list[str]:
        """Documents holding most of the text's rarest content tokens, best first (a
        passage cut mid-word still finds its document: no token is required)."""
        index = self._index()
        toks = [t for t in set(content_tokens(text)) if t in index]
        if not toks:
            return []
        rare = sorted(toks, key=lambda t: (len(index[t]), t))[:_VOTERS]
        votes: Counter[str] = Counter()
        for t in rare:
            votes.update(index[t])
        ranked = sorted(votes.items(), key=lambda x: (-x[1], self._order[x[0]]))
        return [d for d, _n in ranked[:limit]]

    def cover(self, text: str, min_share: float, max_docs: int = 3) -> list[str]:
        """Fewest documents (at most ``max_docs``, picked greedily) that together hold
        at least ``min_share`` of the text's content tokens; each added document must
        bring at least a fifth of them. ``[]`` when no such set exists. An answer
        comparing two companies draws its words from two documents."""
        index = self._index()
        toks = set(content_tokens(text))
        if not toks:
            return []
        holders: dict[str, set[str]] = {}
        for t in toks:
            for d in index.get(t, ()):
                holders.setdefault(d, set()).add(t)
        chosen: list[str] = []
        covered: set[str] = set()
        while len(chosen) < max_docs and len(covered) / len(toks) < min_share:
            best = max(
                holders.items(),
                key=lambda kv: (len(kv[1] - covered), -self._order[kv[0]]),
                default=None,
            )
            if best is None or len(best[1] - covered) < max(1, len(toks) / 5):
                break
            chosen.append(best[0])
            covered |= best[1]
            del holders[best[0]]
        return chosen if len(covered) / len(toks) >= min_share else []

    def locate(self, text: str, hint: str | None = None) -> Located | None:
        """The passage's span, preferring the document named ``hint`` (the id the
        source gave it) when it occurs there."""
        key = (text, hint)
        if key not in self._cache:
            self._cache[key] = self._locate(text, hint)
        return self._cache[key]

    def _exact(self, needle: str, doc_ids: Iterable[str]) -> Located | None:
        for doc_id in doc_ids:
            at = self.documents[doc_id].text.find(needle)
            if at >= 0:
                return Located(doc_id, at, at + len(needle), "exact", 100.0)
        return None

    def _locate(self, text: str, hint: str | None) -> Located | None:
        needle = text.strip()
        if not needle:
            return None
        cands = self.candidates(needle, _EXACT_CANDIDATES)
        if hint is not None and hint in self.documents:
            cands = [hint, *(c for c in cands if c != hint)]
        got = self._exact(needle, cands)
        if got is None and len(self.documents) <= _SCAN_ALL:
            tried = set(cands)
            got = self._exact(needle, (d for d in self.documents if d not in tried))
        if got is not None:
            return got
        near = cands[: _CANDIDATES + (1 if hint in self.documents else 0)]
        for doc_id in near:
            span = locate_reference(self.documents[doc_id].text, needle, fuzzy=False)
            if span is not None:
                return Located(doc_id, span[0], span[1], "normalised", 100.0)
        best: Located | None = None
        for doc_id in near:
            doc = self.documents[doc_id].text
            span = locate_reference(doc, needle, threshold=FUZZY_THRESHOLD)
            if span is None:
                continue
            score = round(float(fuzz.ratio(needle, doc[span[0] : span[1]])), 1)
            if best is None or score > best.score:
                best = Located(doc_id, span[0], span[1], "fuzzy", score)
        return best

    def find_text(self, text: str) -> list[str]:
        """Documents holding ``text`` exactly, else ignoring case, whitespace and
        punctuation (no fuzzy match). A large corpus is searched among the documents
        sharing the text's rarest tokens only."""
        needle = text.strip()
        if not needle:
            return []
        ids = (
            list(self.documents)
            if len(self.documents) <= _SCAN_ALL
            else self.candidates(needle, _EXACT_CANDIDATES)
        )
        exact = [d for d in ids if needle in self.documents[d].text]
        if exact:
            return exact
        return [
            d
            for d in self.candidates(needle, _EXACT_CANDIDATES)
            if locate_reference(self.documents[d].text, needle, fuzzy=False) is not None
        ]


_BREAK = re.compile(r"(?<=[.!?。！？；;\n])\s*|\s+")


def _cut_points(text: str, lo: int, hi: int, size: int) -> list[int]:
    """Cut ``text[lo:hi]`` every ``size`` characters or so, at the nearest sentence end
    or whitespace within a quarter of ``size`` (else exactly there: CJK text)."""
    points = [lo]
    pos = lo
    while hi - pos > size * 1.25:
        target = pos + size
        window = text[max(pos + 1, target - size // 4) : min(hi, target + size // 4)]
        base = max(pos + 1, target - size // 4)
        best = None
        for m in _BREAK.finditer(window):
            cut = base + m.end()
            if pos < cut < hi and (best is None or abs(cut - target) < abs(best - target)):
                best = cut
        pos = best if best is not None else target
        points.append(pos)
    points.append(hi)
    return points


def partition(
    doc: Document, spans: Iterable[tuple[int, int]], size: int | None = None
) -> list[Chunk]:
    """Chunks of ``doc``: each located span, and the uncovered text between them cut
    into pieces of about ``size`` characters (default: the spans' median length).
    Whitespace-only pieces are left out. Chunks come in document order, indexed."""
    found = sorted({(s, e) for s, e in spans if e > s})
    piece = size or (int(median(e - s for s, e in found)) if found else _DEFAULT_PIECE_CHARS)
    piece = max(piece, 50)
    gaps: list[tuple[int, int]] = []
    pos = 0
    for s, e in found:
        if s > pos:
            gaps.append((pos, s))
        pos = max(pos, e)
    if pos < len(doc.text):
        gaps.append((pos, len(doc.text)))
    pieces: list[tuple[int, int, str]] = [(s, e, "retrieved") for s, e in found]
    for lo, hi in gaps:
        cuts = _cut_points(doc.text, lo, hi, piece)
        for a, b in pairwise(cuts):
            if doc.text[a:b].strip():
                pieces.append((a, b, INFERRED_CHUNK))
    pieces.sort(key=lambda p: (p[0], p[1]))
    return [
        Chunk(
            chunk_id=chunk_id_for(doc.doc_id, s, e),
            doc_id=doc.doc_id,
            text=doc.text[s:e],
            start=s,
            end=e,
            index=i,
            metadata={CHUNK_ROLE_KEY: role},
        )
        for i, (s, e, role) in enumerate(pieces)
    ]
