"""Find retrieved passages in the user's documents and cut the documents into chunks
consistent with them.

:class:`Locator` tries, for each passage: the exact text in any document; the same
ignoring whitespace, punctuation, case and full/half width
(:func:`ragtriage.groundtruth.locate_reference` without fuzziness); a fuzzy alignment
(rapidfuzz, :data:`FUZZY_THRESHOLD`) in the few documents sharing most of its words.
Each found span records how it was found (``exact`` / ``normalised`` / ``fuzzy``) and a
quality score (rapidfuzz ``ratio`` of the passage and the span, 0-100).

:func:`partition` turns the spans found in one document into its chunks: every span is
a chunk (spans may overlap, as chunks with overlap do), and the text around them is cut
into pieces of about the spans' median length, at sentence or word boundaries.
"""

from __future__ import annotations

import re
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
#: documents tried for a normalised / fuzzy match, ranked by shared words
_CANDIDATES = 5
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
        self._tokens: dict[str, frozenset[str]] | None = None
        self._cache: dict[tuple[str, str | None], Located | None] = {}

    def _doc_tokens(self) -> dict[str, frozenset[str]]:
        if self._tokens is None:
            self._tokens = {
                d: frozenset(content_tokens(doc.text)) for d, doc in self.documents.items()
            }
        return self._tokens

    def candidates(self, text: str, limit: int = _CANDIDATES) -> list[str]:
        """Documents sharing most of the text's content tokens, best first."""
        toks = set(content_tokens(text))
        if not toks:
            return []
        scored = sorted(
            ((len(toks & dt), d) for d, dt in self._doc_tokens().items() if toks & dt),
            key=lambda x: (-x[0], x[1]),
        )
        return [d for _n, d in scored[:limit]]

    def most_of(self, text: str, min_share: float) -> list[str]:
        """Documents holding the largest share of the text's content tokens, when that
        share is at least ``min_share`` (ties all kept)."""
        toks = set(content_tokens(text))
        if not toks:
            return []
        shares = {d: len(toks & dt) / len(toks) for d, dt in self._doc_tokens().items()}
        best = max(shares.values(), default=0.0)
        if best < min_share:
            return []
        return [d for d, v in shares.items() if v == best]

    def locate(self, text: str, hint: str | None = None) -> Located | None:
        """The passage's span, preferring the document named ``hint`` (the id the
        source gave it) when it occurs there."""
        key = (text, hint)
        if key not in self._cache:
            self._cache[key] = self._locate(text, hint)
        return self._cache[key]

    def _locate(self, text: str, hint: str | None) -> Located | None:
        needle = text.strip()
        if not needle:
            return None
        order = list(self.documents)
        if hint is not None and hint in self.documents:
            order.remove(hint)
            order.insert(0, hint)
        for doc_id in order:
            at = self.documents[doc_id].text.find(needle)
            if at >= 0:
                return Located(doc_id, at, at + len(needle), "exact", 100.0)
        cands = self.candidates(needle)
        if hint is not None and hint in self.documents and hint not in cands:
            cands.insert(0, hint)
        for doc_id in cands:
            span = locate_reference(self.documents[doc_id].text, needle, fuzzy=False)
            if span is not None:
                return Located(doc_id, span[0], span[1], "normalised", 100.0)
        best: Located | None = None
        for doc_id in cands:
            doc = self.documents[doc_id].text
            span = locate_reference(doc, needle, threshold=FUZZY_THRESHOLD)
            if span is None:
                continue
            score = round(float(fuzz.ratio(needle, doc[span[0] : span[1]])), 1)
            if best is None or score > best.score:
                best = Located(doc_id, span[0], span[1], "fuzzy", score)
        return best

    def find_text(self, text: str, doc_ids: Iterable[str] | None = None) -> list[str]:
        """Documents holding ``text`` exactly or normalised (no fuzzy match)."""
        needle = text.strip()
        if not needle:
            return []
        ids = list(doc_ids) if doc_ids is not None else list(self.documents)
        exact = [d for d in ids if needle in self.documents[d].text]
        if exact:
            return exact
        cands = [d for d in self.candidates(needle, limit=20) if d in set(ids)]
        return [
            d
            for d in cands
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
