"""Chunkers: exact offsets, full coverage, configured sizes/overlap, EN and ZH."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragtriage.chunking import (
    FixedChunker,
    PassthroughChunker,
    SemanticChunker,
    SentenceChunker,
    StructureChunker,
    make_chunker,
)
from ragtriage.config import ChunkingConfig
from ragtriage.embedding import HashEmbedder
from ragtriage.errors import ConfigError
from ragtriage.records import Chunk, Document
from ragtriage.text import token_spans

EN_WORDS = [
    "the", "river", "flows", "north", "2023", "Dr.", "Smith", "said", "3.5", "covid-19",
    "o'neil", "data", "model", "(note)", "e.g.", "quickly", "U.S.", "mountain", "1,200",
]  # fmt: skip
ZH_CHARS = list("今天天气很好我们去公园散步长江流经中国的许多省份人工智能技术发展迅速")
PUNCT = [". ", ", ", "! ", "? ", "。", "，", "；", "\n", "\n\n", " ", "  ", "：", "、"]


@st.composite
def texts(draw: st.DrawFn) -> str:
    parts = draw(
        st.lists(
            st.one_of(
                st.sampled_from(EN_WORDS).map(lambda w: w + " "),
                st.lists(st.sampled_from(ZH_CHARS), min_size=1, max_size=12).map("".join),
                st.sampled_from(PUNCT),
            ),
            min_size=0,
            max_size=120,
        )
    )
    lead = draw(st.sampled_from(["", " ", "\n", "  \n"]))
    return lead + "".join(parts)


def _check_basic(doc: Document, chunks: list[Chunk]) -> None:
    covered = [False] * len(doc.text)
    for i, c in enumerate(chunks):
        assert doc.text[c.start : c.end] == c.text
        assert c.chunk_id == f"{doc.doc_id}#{i}"
        assert c.index == i and c.doc_id == doc.doc_id
        assert c.text and c.text == c.text.strip()
        for p in range(c.start, c.end):
            covered[p] = True
        if i:
            assert c.start >= chunks[i - 1].start and c.end > chunks[i - 1].end
    missing = [p for p, ch in enumerate(doc.text) if not ch.isspace() and not covered[p]]
    assert not missing, f"uncovered characters at {missing[:5]}"


def _tokens_in(doc: Document, c: Chunk) -> set[int]:
    return {i for i, (s, e) in enumerate(token_spans(doc.text)) if s >= c.start and e <= c.end}


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts(), size=st.integers(2, 20), data=st.data())
def test_fixed_tokens_offsets_coverage_overlap(text: str, size: int, data: st.DataObject) -> None:
    overlap = data.draw(st.integers(0, size - 1))
    doc = Document(doc_id="d1", text=text)
    chunks = make_chunker(ChunkingConfig(size=size, overlap=overlap, unit="tokens")).chunk(doc)
    _check_basic(doc, chunks)
    n_tokens = len(token_spans(text))
    token_sets = [_tokens_in(doc, c) for c in chunks]
    for toks in token_sets:
        assert len(toks) <= size
    if n_tokens > size:
        for a, b in itertools.pairwise(token_sets):
            assert len(a & b) == overlap
        assert all(len(t) == size for t in token_sets[:-1])
    if n_tokens and n_tokens <= size:
        assert len(chunks) == 1
    assert set().union(*token_sets) == set(range(n_tokens)) if chunks else n_tokens == 0


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts(), size=st.integers(3, 40), data=st.data())
def test_fixed_chars_limits(text: str, size: int, data: st.DataObject) -> None:
    overlap = data.draw(st.integers(0, size - 1))
    doc = Document(doc_id="z", text=text)
    chunks = make_chunker(ChunkingConfig(size=size, overlap=overlap, unit="chars")).chunk(doc)
    _check_basic(doc, chunks)
    for a, b in itertools.pairwise(chunks):
        shared = doc.text[b.start : a.end] if b.start < a.end else ""
        assert sum(1 for ch in shared if not ch.isspace()) <= overlap
    for c in chunks:
        toks = _tokens_in(doc, c)
        # a window over-runs the size only when it holds one over-long token unit
        if sum(1 for ch in c.text if not ch.isspace()) > size:
            assert len(toks) <= 1


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts(), size=st.integers(2, 30))
def test_sentence_and_structure_cover(text: str, size: int) -> None:
    doc = Document(doc_id="s", text=text)
    cfg = ChunkingConfig(strategy="sentence", size=size, overlap=0, unit="tokens")
    chunks = SentenceChunker(cfg).chunk(doc)
    _check_basic(doc, chunks)
    for c in chunks:
        assert len(_tokens_in(doc, c)) <= size
    s_chunks = StructureChunker(cfg.model_copy(update={"strategy": "structure"})).chunk(doc)
    _check_basic(doc, s_chunks)
    for c in s_chunks:
        assert len(_tokens_in(doc, c)) <= size


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts(), pct=st.floats(10, 95))
def test_semantic_cover(text: str, pct: float) -> None:
    doc = Document(doc_id="m", text=text)
    cfg = ChunkingConfig(strategy="semantic", size=30, semantic_percentile=pct, unit="tokens")
    _check_basic(doc, SemanticChunker(cfg, HashEmbedder(64)).chunk(doc))


def test_paper_default_128_25_on_english() -> None:
    words = [f"w{i}" for i in range(400)]
    doc = Document(doc_id="en", text=" ".join(words) + ".")
    chunks = make_chunker(ChunkingConfig()).chunk(doc)
    assert [c.text.split()[0] for c in chunks] == ["w0", "w103", "w206", "w309"]
    assert all(len(c.text.split()) == 128 for c in chunks[:-1])
    assert chunks[-1].text.endswith("w399.")


def test_auto_unit_uses_characters_for_chinese() -> None:
    zh = "今天天气很好，我们去公园散步。公园里有很多人，大家都很开心。" * 40  # 1200 chars
    doc = Document(doc_id="zh", text=zh)
    chunks = make_chunker(ChunkingConfig(size=128, overlap=25, cjk_size=512)).chunk(doc)
    _check_basic(doc, chunks)
    assert len(chunks) == 3
    assert all(len(c.text) <= 512 for c in chunks)
    assert len(chunks[0].text) >= 500
    # overlap scaled to the character size: 25 / 128 * 512 = 100 characters
    assert 90 <= chunks[0].end - chunks[1].start <= 100
    # English text in the same config stays token based
    en = Document(doc_id="en", text=" ".join(["word"] * 300))
    assert len(make_chunker(ChunkingConfig(size=128, overlap=25)).chunk(en)) == 3


def test_punctuation_sticks_to_neighbouring_words() -> None:
    doc = Document(doc_id="p", text='He said (quietly), "yes." Then left.')
    chunks = FixedChunker(ChunkingConfig(size=2, overlap=0, unit="tokens")).chunk(doc)
    assert [c.text for c in chunks] == ["He said", '(quietly), "yes."', "Then left."]


def test_structure_headers_and_paragraphs() -> None:
    md = (
        "Preamble line.\n\n# Guide\n\nIntro paragraph.\n\n## Install\nRun pip.\n\n"
        "Then import it.\n\n## Empty\n## Usage\n\nCall the API.\n"
    )
    doc = Document(doc_id="md", text=md, metadata={"lang": "en"})
    chunks = StructureChunker(ChunkingConfig(strategy="structure", size=50)).chunk(doc)
    _check_basic(doc, chunks)
    got = [(c.text, c.metadata.get("section")) for c in chunks]
    assert got == [
        ("Preamble line.", None),
        ("# Guide\n\nIntro paragraph.", "Guide"),
        ("## Install\nRun pip.", "Install"),
        ("Then import it.", "Install"),
        ("## Empty", "Empty"),
        ("## Usage\n\nCall the API.", "Usage"),
    ]
    assert chunks[3].metadata["section_path"] == ["Guide", "Install"]
    assert all(c.metadata["lang"] == "en" for c in chunks)


def test_semantic_splits_between_topics() -> None:
    cats = [
        "Cats purr when cats feel safe.",
        "Cats sleep all day, cats hunt mice.",
        "Mice fear cats and cats chase mice.",
        "Cats groom fur; cats like warm fur.",
    ]
    stocks = [
        "Stock markets fell as stock traders sold.",
        "Traders sold stock shares on markets.",
        "Markets rallied when traders bought shares.",
        "Shares of stock rose on markets.",
    ]
    text = " ".join(cats + stocks)
    doc = Document(doc_id="sem", text=text)
    cfg = ChunkingConfig(strategy="semantic", size=500, semantic_percentile=80)
    chunks = make_chunker(cfg, HashEmbedder(256)).chunk(doc)
    _check_basic(doc, chunks)
    assert any(c.text.endswith(cats[-1]) for c in chunks)
    assert not any("purr" in c.text and "Markets" in c.text for c in chunks)


def test_passthrough_keeps_text_verbatim() -> None:
    doc = Document(doc_id="x", text="  already a chunk \n")
    (c,) = PassthroughChunker().chunk(doc)
    assert (c.text, c.start, c.end, c.chunk_id) == (doc.text, 0, len(doc.text), "x#0")


def test_empty_and_blank_documents() -> None:
    for text in ("", "   \n  "):
        doc = Document(doc_id="e", text=text)
        assert FixedChunker(ChunkingConfig()).chunk(doc) == []
        assert SentenceChunker(ChunkingConfig(strategy="sentence")).chunk(doc) == []
    only_punct = Document(doc_id="p", text=" ... !!! ")
    (c,) = FixedChunker(ChunkingConfig()).chunk(only_punct)
    assert c.text == "... !!!"


def test_bad_configs() -> None:
    with pytest.raises(ConfigError) as e1:
        make_chunker(ChunkingConfig(size=10, overlap=10))
    assert e1.value.field == "chunking.overlap"
    with pytest.raises(ConfigError):
        make_chunker(ChunkingConfig(strategy="semantic"))


def test_does_not_mutate_document_metadata() -> None:
    meta = {"k": [1, 2]}
    doc = Document(doc_id="m", text="# H\n\nbody text", metadata=meta)
    chunks = StructureChunker(ChunkingConfig(strategy="structure")).chunk(doc)
    assert doc.metadata == {"k": [1, 2]} and "section" in chunks[0].metadata
