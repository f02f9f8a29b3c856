"""Chunkers: split documents into spans that keep their exact character offsets.

Every chunk satisfies ``doc.text[c.start:c.end] == c.text`` and has id
``f"{doc_id}#{index}"``. Chunks never start or end with whitespace, and together
they cover every non-whitespace character of the document (pass-through keeps the
text verbatim). Chunks inherit the document's metadata; the structure chunker adds
``section`` (the innermost Markdown header) and ``section_path``.

Strategies (``ChunkingConfig.strategy``):

``fixed``
    windows of ``size`` units with ``overlap`` units shared by neighbours; boundaries
    snap to token spans from :func:`ragtriage.text.token_spans` (the RAGEC DragonBall
    set-up uses 128 tokens, overlap 25; seed 000, App. A, Table 4).
``sentence``
    consecutive sentences packed up to ``size`` units; a longer sentence is split by
    the fixed-size chunker (no overlap).
``structure``
    paragraphs (blank lines) and Markdown headers start a new chunk; long paragraphs
    are packed by sentences.
``semantic``
    split where the cosine distance between consecutive sentence embeddings exceeds
    the ``semantic_percentile`` of all such distances in the document; groups larger
    than ``size`` are packed by sentences.
``passthrough``
    one chunk per document, for corpora that are already chunked.

Units: ``tokens`` counts tokens; ``chars`` counts non-whitespace characters (windows
still snap to token spans; punctuation counts with the token before it); ``auto`` uses tokens, except that a document detected as
Chinese uses characters with ``cjk_size`` (and the overlap scaled by
``cjk_size / size``).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import Protocol, runtime_checkable

import numpy as np
from pydantic import JsonValue

from ragtriage.config import ChunkingConfig
from ragtriage.embedding import Embedder, embed_documents
from ragtriage.errors import ConfigError
from ragtriage.records import Chunk, Document
from ragtriage.text import Sentence, detect_language, split_sentences, token_spans

__all__ = [
    "Chunker",
    "FixedChunker",
    "PassthroughChunker",
    "SemanticChunker",
    "SentenceChunker",
    "Span",
    "StructureChunker",
    "Units",
    "make_chunker",
    "spans_to_chunks",
]

Span = tuple[int, int]


@runtime_checkable
class Chunker(Protocol):
    """Splits one document into chunks with exact offsets."""

    def chunk(self, doc: Document) -> list[Chunk]: ...


# --------------------------------------------------------------------------- units


@dataclass(frozen=True, slots=True)
class Units:
    """How chunk sizes are measured for one document."""

    kind: str  # "tokens" | "chars"
    size: int
    overlap: int

    @staticmethod
    def resolve(cfg: ChunkingConfig, text: str) -> Units:
        if cfg.unit == "chars":
            return Units("chars", cfg.size, cfg.overlap)
        if cfg.unit == "auto" and detect_language(text) == "zh":
            overlap = round(cfg.overlap * cfg.cjk_size / cfg.size)
            return Units("chars", cfg.cjk_size, min(overlap, cfg.cjk_size - 1))
        return Units("tokens", cfg.size, cfg.overlap)

    def weights(self, text: str, spans: Sequence[Span], bounds: Sequence[int]) -> list[int]:
        """Size of each token's unit: 1 per token, or its non-space characters
        (the token plus the punctuation attached to it)."""
        if self.kind == "chars":
            return [
                max(1, sum(1 for c in text[bounds[i] : bounds[i + 1]] if not c.isspace()))
                for i in range(len(spans))
            ]
        return [1] * len(spans)

    def measure(self, text: str) -> int:
        if self.kind == "chars":
            return sum(1 for c in text if not c.isspace())
        return len(token_spans(text))


def _trim(text: str, start: int, end: int) -> Span:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _unit_bounds(text: str, spans: Sequence[Span], lo: int, hi: int) -> list[int]:
    """Cut points between consecutive tokens inside ``[lo, hi)``.

    ``bounds[i]`` is where token *i*'s unit starts: the unit runs from there to the
    next cut and holds the token plus the punctuation that follows it up to the last
    whitespace before the next token (so "(" sticks to the word after it and "," to
    the word before). ``bounds[0] == lo`` and a final ``hi`` is appended.
    """
    bounds = [lo]
    for i in range(1, len(spans)):
        prev_end, nxt = spans[i - 1][1], spans[i][0]
        gap = text[prev_end:nxt]
        ws = max((j for j, c in enumerate(gap) if c.isspace()), default=-1)
        bounds.append(prev_end + ws + 1 if ws >= 0 else nxt)
    bounds.append(hi)
    return bounds


def _fixed_spans(text: str, lo: int, hi: int, units: Units, overlap: int) -> list[Span]:
    """Windows over the tokens of ``text[lo:hi]``; trimmed spans."""
    lo, hi = _trim(text, lo, hi)
    if lo >= hi:
        return []
    spans = [(s + lo, e + lo) for s, e in token_spans(text[lo:hi])]
    if not spans:
        return [(lo, hi)]
    bounds = _unit_bounds(text, spans, lo, hi)
    prefix = [0, *accumulate(units.weights(text, spans, bounds))]
    n = len(spans)
    out: list[Span] = []
    start = 0

    def window_end(begin: int) -> int:
        # largest end with weight(begin:end) <= size, at least one token
        return min(max(bisect.bisect_right(prefix, prefix[begin] + units.size) - 1, begin + 1), n)

    end = window_end(start)
    while True:
        out.append(_trim(text, bounds[start], bounds[end]))
        if end >= n:
            break
        # next window: starts so that weight(next:end) <= overlap and must reach past
        # the current end (otherwise drop the overlap for this step)
        nxt = bisect.bisect_left(prefix, prefix[end] - overlap) if overlap > 0 else end
        nxt = min(max(nxt, start + 1), end)
        nxt_end = window_end(nxt)
        if nxt_end <= end:
            nxt, nxt_end = end, window_end(end)
        start, end = nxt, nxt_end
    return out


def spans_to_chunks(
    doc: Document, spans: Sequence[Span], extra: Sequence[dict[str, JsonValue]] = ()
) -> list[Chunk]:
    """Chunk records for ``spans`` of ``doc`` (ids ``doc_id#i``, doc metadata inherited)."""
    out: list[Chunk] = []
    for i, (s, e) in enumerate(spans):
        meta = dict(doc.metadata)
        if i < len(extra):
            meta.update(extra[i])
        out.append(
            Chunk(
                chunk_id=f"{doc.doc_id}#{i}",
                doc_id=doc.doc_id,
                text=doc.text[s:e],
                start=s,
                end=e,
                index=i,
                metadata=meta,
            )
        )
    return out


# --------------------------------------------------------------------------- chunkers


class FixedChunker:
    """Fixed-size windows with overlap, snapped to token spans."""

    def __init__(self, cfg: ChunkingConfig) -> None:
        self.cfg = cfg

    def spans(self, text: str, lo: int = 0, hi: int | None = None) -> list[Span]:
        units = Units.resolve(self.cfg, text)
        return _fixed_spans(text, lo, len(text) if hi is None else hi, units, units.overlap)

    def chunk(self, doc: Document) -> list[Chunk]:
        return spans_to_chunks(doc, self.spans(doc.text))


def _pack_sentences(text: str, sentences: Sequence[Sentence], units: Units) -> list[Span]:
    """Greedy packing of consecutive sentences up to ``units.size``; an oversized
    sentence is split into fixed windows without overlap."""
    out: list[Span] = []
    cur_start: int | None = None
    cur_end = 0
    cur_size = 0
    for sent in sentences:
        size = units.measure(sent.text)
        if size > units.size:
            if cur_start is not None:
                out.append((cur_start, cur_end))
                cur_start, cur_size = None, 0
            out.extend(_fixed_spans(text, sent.start, sent.end, units, 0))
            continue
        if cur_start is not None and cur_size + size > units.size:
            out.append((cur_start, cur_end))
            cur_start, cur_size = None, 0
        if cur_start is None:
            cur_start = sent.start
        cur_end = sent.end
        cur_size += size
    if cur_start is not None:
        out.append((cur_start, cur_end))
    return out


def _sentences_in(text: str, lo: int, hi: int) -> list[Sentence]:
    return [Sentence(s.text, s.start + lo, s.end + lo) for s in split_sentences(text[lo:hi])]


class SentenceChunker:
    """Consecutive sentences packed up to ``size`` units (recursive for long ones)."""

    def __init__(self, cfg: ChunkingConfig) -> None:
        self.cfg = cfg

    def chunk(self, doc: Document) -> list[Chunk]:
        units = Units.resolve(self.cfg, doc.text)
        return spans_to_chunks(doc, _pack_sentences(doc.text, split_sentences(doc.text), units))


_HEADER = re.compile(r"^[ \t]{0,3}(#{1,6})[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
_BLANK = re.compile(r"\n[ \t\r]*\n")


class StructureChunker:
    """Paragraphs and Markdown headers start new chunks; headers go to ``section``.

    A header line is kept with the first paragraph of its section (so the chunk text
    reads naturally); a header with no body becomes a chunk of its own.
    """

    def __init__(self, cfg: ChunkingConfig) -> None:
        self.cfg = cfg

    def chunk(self, doc: Document) -> list[Chunk]:
        text = doc.text
        units = Units.resolve(self.cfg, text)
        headers = list(_HEADER.finditer(text))
        # sections: (start, end, header path)
        sections: list[tuple[int, int, list[str]]] = []
        path: list[tuple[int, str]] = []
        first = headers[0].start() if headers else len(text)
        if text[:first].strip():
            sections.append((0, first, []))
        for i, m in enumerate(headers):
            level = len(m.group(1))
            while path and path[-1][0] >= level:
                path.pop()
            path.append((level, m.group(2).strip()))
            end = headers[i + 1].start() if i + 1 < len(headers) else len(text)
            sections.append((m.start(), end, [t for _, t in path]))
        spans: list[Span] = []
        extra: list[dict[str, JsonValue]] = []
        for s_start, s_end, hpath in sections:
            for p_start, p_end in self._paragraphs(text, s_start, s_end, bool(hpath)):
                if units.measure(text[p_start:p_end]) <= units.size:
                    pieces = [(p_start, p_end)]
                else:
                    pieces = _pack_sentences(text, _sentences_in(text, p_start, p_end), units)
                for piece in pieces:
                    spans.append(piece)
                    section: dict[str, JsonValue] = (
                        {"section": hpath[-1], "section_path": list[JsonValue](hpath)}
                        if hpath
                        else {}
                    )
                    extra.append(section)
        return spans_to_chunks(doc, spans, extra)

    @staticmethod
    def _paragraphs(text: str, lo: int, hi: int, has_header: bool) -> list[Span]:
        cuts = [lo]
        for m in _BLANK.finditer(text, lo, hi):
            cuts.extend((m.start(), m.end()))
        cuts.append(hi)
        paras = []
        for a, b in zip(cuts[0::2], cuts[1::2], strict=True):
            s, e = _trim(text, a, b)
            if s < e:
                paras.append((s, e))
        if has_header and len(paras) >= 2:
            # the header line (first "paragraph" when followed by a blank line) joins
            # the next paragraph
            header_end = text.find("\n", paras[0][0], hi)
            if header_end == -1 or header_end >= paras[0][1]:
                paras = [(paras[0][0], paras[1][1]), *paras[2:]]
        return paras


class SemanticChunker:
    """Split between sentences whose embeddings are far apart.

    Distance ``d_i = 1 - cos(s_i, s_{i+1})``; a cut goes after sentence *i* when
    ``d_i`` exceeds the given percentile of the document's distances. Groups larger
    than ``size`` units are then packed by sentences.
    """

    def __init__(self, cfg: ChunkingConfig, embedder: Embedder) -> None:
        self.cfg = cfg
        self.embedder = embedder

    def chunk(self, doc: Document) -> list[Chunk]:
        text = doc.text
        units = Units.resolve(self.cfg, text)
        sents = split_sentences(text)
        if len(sents) <= 1:
            return spans_to_chunks(doc, _pack_sentences(text, sents, units))
        vecs = embed_documents(self.embedder, [s.text for s in sents])
        dist = 1.0 - np.sum(vecs[:-1] * vecs[1:], axis=1)
        threshold = float(np.percentile(dist, self.cfg.semantic_percentile))
        groups: list[list[Sentence]] = [[sents[0]]]
        for i in range(1, len(sents)):
            if dist[i - 1] > threshold:
                groups.append([])
            groups[-1].append(sents[i])
        spans: list[Span] = []
        for g in groups:
            if units.measure(text[g[0].start : g[-1].end]) <= units.size:
                spans.append((g[0].start, g[-1].end))
            else:
                spans.extend(_pack_sentences(text, g, units))
        return spans_to_chunks(doc, spans)


class PassthroughChunker:
    """One chunk per document, text verbatim (for pre-chunked corpora)."""

    def chunk(self, doc: Document) -> list[Chunk]:
        return spans_to_chunks(doc, [(0, len(doc.text))])


def make_chunker(cfg: ChunkingConfig, embedder: Embedder | None = None) -> Chunker:
    """The chunker for ``cfg``; ``semantic`` needs an ``embedder``."""
    if cfg.strategy == "fixed" and cfg.overlap >= cfg.size:
        raise ConfigError(
            f"overlap ({cfg.overlap}) must be smaller than size ({cfg.size})",
            field="chunking.overlap",
        )
    if cfg.strategy == "fixed":
        return FixedChunker(cfg)
    if cfg.strategy == "sentence":
        return SentenceChunker(cfg)
    if cfg.strategy == "structure":
        return StructureChunker(cfg)
    if cfg.strategy == "semantic":
        if embedder is None:
            raise ConfigError("semantic chunking needs an embedder", field="chunking.strategy")
        return SemanticChunker(cfg, embedder)
    return PassthroughChunker()
