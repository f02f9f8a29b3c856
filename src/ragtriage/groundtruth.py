"""Ground truth from verbatim references: locate evidence text, map it to chunks.

Datasets such as DragonBall give the evidence of an answer as *sentences copied from
the documents* (``Example.references``), not as character offsets. These pure functions
turn such references into spans and the spans into ground-truth chunk ids:

* :func:`locate_reference` finds a reference in a document: exactly, then ignoring
  whitespace, punctuation, case and full/half-width differences (offsets are mapped back
  to the original text), then by fuzzy alignment for references with small edits.
* :func:`reconstruct_text` rebuilds the covered text of one document from its chunks,
  so a :class:`~ragtriage.records.Trace` alone (its ``gt_doc_chunks``) is enough.
* :func:`chunks_overlapping` selects the chunks whose span meets any located span.
* :func:`gt_chunks_from_references` puts the three together for one example.

Everything works for English and Chinese text (no word boundaries are assumed).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import chain, repeat

from rapidfuzz import fuzz

from ragtriage.records import Chunk, Example

__all__ = [
    "DEFAULT_FUZZY_THRESHOLD",
    "chunks_overlapping",
    "gt_chunks_from_references",
    "locate_reference",
    "reconstruct_text",
]

#: Minimum rapidfuzz ``partial_ratio`` (0-100) for a fuzzy reference match.
DEFAULT_FUZZY_THRESHOLD = 90.0
#: References shorter than this (in normalised characters) are never matched fuzzily:
#: a short string aligns "well enough" almost anywhere.
DEFAULT_MIN_FUZZY_CHARS = 12
#: Cap on the occurrences of one reference marked in one document.
_MAX_OCCURRENCES = 64


class _Normalized:
    """Text reduced to case-folded, width-folded letters and digits, with the index of
    the original character each normalised character came from (worked out when first
    asked for: most searches find nothing to map back)."""

    __slots__ = ("_origin", "_source", "text")

    def __init__(self, text: str, source: str) -> None:
        self.text = text
        self._source = source
        self._origin: tuple[int, ...] | None = None

    @property
    def origin(self) -> tuple[int, ...]:
        if self._origin is None:
            counts = map(_FOLD_LENGTHS.__getitem__, self._source)
            self._origin = tuple(chain.from_iterable(map(repeat, range(len(self._source)), counts)))
        return self._origin

    def span(self, start: int, end: int) -> tuple[int, int]:
        """Original ``[start, end)`` covering normalised ``[start, end)`` (end > start)."""
        return self.origin[start], self.origin[end - 1] + 1


def _fold_char(ch: str) -> str:
    """What one character leaves in a normalised text: ASCII letters and digits lower
    cased, other ASCII dropped; otherwise the letters and digits of its NFKC form, lower
    cased (NFKC folds full-width forms (Ａ１，) and ligatures; it may give several)."""
    if ch.isascii():
        return ch.lower() if ch.isalnum() else ""
    return "".join(out for out in unicodedata.normalize("NFKC", ch).lower() if out.isalnum())


#: per character seen so far: its fold (a ``str.translate`` table) and the fold's length
_FOLDS: dict[int, str] = {}
_FOLD_LENGTHS: dict[str, int] = {}


def _normalize(text: str) -> _Normalized:
    """``text`` folded character by character (:func:`_fold_char`), with each output
    character's origin; the per-character work is done once per distinct character,
    the rest by ``str.translate`` and C-level iterators. Texts up to 20,000 characters
    are cached (one trace's documents are searched for each of its references)."""
    if len(text) <= _CACHED_CHARS:
        return _normalize_cached(text)
    return _fold_text(text)


_CACHED_CHARS = 20_000


def _fold_text(text: str) -> _Normalized:
    for ch in set(text).difference(_FOLD_LENGTHS):
        fold = _fold_char(ch)
        _FOLDS[ord(ch)] = fold
        _FOLD_LENGTHS[ch] = len(fold)
    return _Normalized(text.translate(_FOLDS), text)


_normalize_cached = lru_cache(maxsize=256)(_fold_text)


@dataclass(frozen=True)
class _Match:
    start: int
    end: int
    score: float  # 100 for exact and normalised matches


def _fuzzy(
    doc_text: str,
    doc_norm: _Normalized | None,
    reference: str,
    *,
    threshold: float,
    min_fuzzy_chars: int,
) -> tuple[_Match | None, _Normalized | None]:
    """Best fuzzy alignment of ``reference`` in the normalised document, if good enough."""
    ref_norm = _normalize(reference.strip()).text
    if len(ref_norm) < max(min_fuzzy_chars, 1) or not doc_text:
        return None, doc_norm
    if doc_norm is None:
        doc_norm = _normalize(doc_text)
    if len(ref_norm) > len(doc_norm.text):  # cannot lie inside a shorter document
        return None, doc_norm
    aligned = fuzz.partial_ratio_alignment(ref_norm, doc_norm.text, score_cutoff=threshold)
    if aligned is None or aligned.dest_end <= aligned.dest_start:
        return None, doc_norm
    start, end = doc_norm.span(aligned.dest_start, aligned.dest_end)
    return _Match(start, end, float(aligned.score)), doc_norm


def locate_reference(
    doc_text: str,
    reference: str,
    *,
    threshold: float = DEFAULT_FUZZY_THRESHOLD,
    min_fuzzy_chars: int = DEFAULT_MIN_FUZZY_CHARS,
    fuzzy: bool = True,
) -> tuple[int, int] | None:
    """Character span ``[start, end)`` of ``reference`` in ``doc_text``, or ``None``.

    Tried in order: exact substring of the stripped reference; the same after dropping
    whitespace and punctuation and folding case and full-width forms (offsets mapped
    back to ``doc_text``); a fuzzy alignment (rapidfuzz ``partial_ratio_alignment`` on
    the normalised strings) scoring at least ``threshold`` (0-100), only for references
    of at least ``min_fuzzy_chars`` normalised characters and only when ``fuzzy``.
    The first occurrence wins when the reference occurs more than once.
    """
    spans, doc_norm = _occurrences(doc_text, None, reference, limit=1)
    if spans:
        return spans[0]
    if not fuzzy:
        return None
    match, _ = _fuzzy(
        doc_text, doc_norm, reference, threshold=threshold, min_fuzzy_chars=min_fuzzy_chars
    )
    return None if match is None else (match.start, match.end)


def _occurrences(
    doc_text: str,
    doc_norm: _Normalized | None,
    reference: str,
    *,
    limit: int = _MAX_OCCURRENCES,
) -> tuple[list[tuple[int, int]], _Normalized | None]:
    """Non-overlapping exact occurrences of the stripped ``reference``; failing that,
    its normalised occurrences mapped back to ``doc_text`` (at most ``limit``).
    Also returns the normalised document, built only when needed."""
    ref = reference.strip()
    if not ref or not doc_text:
        return [], doc_norm
    spans = _find_all(doc_text, ref, limit)
    if spans:
        return spans, doc_norm
    ref_norm = _normalize(ref).text
    if not ref_norm:
        return [], doc_norm
    if doc_norm is None:
        doc_norm = _normalize(doc_text)
    found = _find_all(doc_norm.text, ref_norm, limit)
    return [doc_norm.span(s, e) for s, e in found], doc_norm


def _find_all(text: str, needle: str, limit: int) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    at = text.find(needle)
    while at >= 0 and len(out) < limit:
        out.append((at, at + len(needle)))
        at = text.find(needle, at + len(needle))
    return out


def reconstruct_text(chunks: Iterable[Chunk]) -> tuple[str, int]:
    """Rebuild the text of one document covered by ``chunks``.

    Returns ``(text, offset)`` where ``text[i]`` is the document character at
    ``offset + i``: each chunk's text is placed at its ``start``; overlaps agree (the
    later chunk wins if they do not); uncovered gaps are filled with spaces. No chunks
    gives ``("", 0)``. Raises ``ValueError`` if the chunks come from different documents.
    """
    items = sorted(chunks, key=lambda c: (c.start, c.index))
    if not items:
        return "", 0
    doc_ids = {c.doc_id for c in items}
    if len(doc_ids) > 1:
        raise ValueError(f"chunks of more than one document: {sorted(doc_ids)[:5]}")
    offset = items[0].start
    stop = max(c.start + len(c.text) for c in items)
    buf = [" "] * (stop - offset)
    for c in items:
        lo = c.start - offset
        buf[lo : lo + len(c.text)] = c.text
    return "".join(buf), offset


def chunks_overlapping(
    chunks: Iterable[Chunk],
    spans: Iterable[tuple[int, int]],
    min_overlap_chars: int = 1,
) -> list[str]:
    """Ids of the chunks whose ``[start, end)`` meets some span in at least
    ``min_overlap_chars`` characters (capped at the span's own length, so a span
    shorter than the minimum still counts when a chunk contains it whole).

    Spans are ``(start, end)`` offsets in the chunks' document: pass the chunks of one
    document. Ids come in the order of ``chunks``, each once; empty spans match nothing.
    """
    if min_overlap_chars < 1:
        raise ValueError("min_overlap_chars must be >= 1")
    span_list = [(s, e) for s, e in spans if e > s]
    out: list[str] = []
    seen: set[str] = set()
    for c in chunks:
        if c.chunk_id in seen:
            continue
        for s, e in span_list:
            need = min(min_overlap_chars, e - s)
            if min(c.end, e) - max(c.start, s) >= need:
                out.append(c.chunk_id)
                seen.add(c.chunk_id)
                break
    return out


@dataclass
class _DocView:
    chunks: list[Chunk]
    text: str
    offset: int
    norm: _Normalized | None = None


def gt_chunks_from_references(
    example: Example,
    gt_doc_chunks: Sequence[Chunk],
    *,
    threshold: float = DEFAULT_FUZZY_THRESHOLD,
    min_fuzzy_chars: int = DEFAULT_MIN_FUZZY_CHARS,
    min_overlap_chars: int = 1,
) -> tuple[list[str], list[str]]:
    """Ground-truth chunk ids of ``example`` from its verbatim ``references``.

    ``gt_doc_chunks`` are the chunks of the example's documents (e.g.
    ``Trace.gt_doc_chunks``). Chunks are grouped by ``doc_id`` and each document's text
    is rebuilt with :func:`reconstruct_text`; only documents listed in
    ``example.doc_ids`` are searched (all of them when it is empty). Each reference is
    located exactly/normalised in every such document (every occurrence in every
    document counts); failing that, fuzzily, keeping only the best-scoring document.

    Returns ``(chunk_ids, unlocated_references)``: ids in the order of
    ``gt_doc_chunks``, and the references found in none of the documents.
    """
    groups: dict[str, list[Chunk]] = {}
    for c in gt_doc_chunks:
        groups.setdefault(c.doc_id, []).append(c)
    if example.doc_ids:
        wanted = [d for d in dict.fromkeys(example.doc_ids) if d in groups]
    else:
        wanted = list(groups)
    views: dict[str, _DocView] = {}
    for doc_id in wanted:
        text, offset = reconstruct_text(groups[doc_id])
        views[doc_id] = _DocView(groups[doc_id], text, offset)

    hit_ids: set[str] = set()
    missing: list[str] = []
    for reference in example.references:
        if not reference.strip():
            continue
        found = False
        for view in views.values():
            spans, view.norm = _occurrences(view.text, view.norm, reference)
            if spans:
                found = True
                shifted = [(view.offset + a, view.offset + b) for a, b in spans]
                hit_ids.update(chunks_overlapping(view.chunks, shifted, min_overlap_chars))
        if not found:
            best: tuple[float, _DocView, _Match] | None = None
            for view in views.values():
                match, view.norm = _fuzzy(
                    view.text,
                    view.norm,
                    reference,
                    threshold=threshold,
                    min_fuzzy_chars=min_fuzzy_chars,
                )
                if match is not None and (best is None or match.score > best[0]):
                    best = (match.score, view, match)
            if best is not None:
                found = True
                _, view, match = best
                span = (view.offset + match.start, view.offset + match.end)
                hit_ids.update(chunks_overlapping(view.chunks, [span], min_overlap_chars))
        if not found:
            missing.append(reference)
    ordered = [c.chunk_id for c in gt_doc_chunks if c.chunk_id in hit_ids]
    return list(dict.fromkeys(ordered)), missing
