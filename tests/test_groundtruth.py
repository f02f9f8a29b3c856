"""Locating verbatim references and mapping them to ground-truth chunks."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragtriage.data import load_dragonball
from ragtriage.groundtruth import (
    chunks_overlapping,
    gt_chunks_from_references,
    locate_reference,
    reconstruct_text,
)
from ragtriage.records import Chunk, Document, Example

FIX = Path(__file__).parent / "fixtures"

EN = (
    "Acme Robotics Ltd. was founded in 2004. In March 2019, Acme acquired Polar Sensors "
    "for 120 million dollars. Revenue grew by 18 percent in 2019."
)
ZH = "北京市第一中级人民法院于２０２１年３月判决：被告人张某犯盗窃罪，判处有期徒刑三年。"


def _chunk(doc_id: str, text: str, start: int, end: int, index: int) -> Chunk:
    return Chunk(
        chunk_id=f"{doc_id}#{index}",
        doc_id=doc_id,
        text=text[start:end],
        start=start,
        end=end,
        index=index,
    )


def _windows(doc: Document, size: int, step: int) -> list[Chunk]:
    out: list[Chunk] = []
    start = 0
    while start < len(doc.text):
        end = min(start + size, len(doc.text))
        out.append(_chunk(doc.doc_id, doc.text, start, end, len(out)))
        if end >= len(doc.text):
            break
        start += step
    return out


# ---------------------------------------------------------------------- locate_reference


def test_exact_english_and_chinese() -> None:
    ref = "In March 2019, Acme acquired Polar Sensors for 120 million dollars."
    span = locate_reference(EN, ref)
    assert span is not None and EN[span[0] : span[1]] == ref
    span = locate_reference(ZH, "被告人张某犯盗窃罪")
    assert span is not None and ZH[span[0] : span[1]] == "被告人张某犯盗窃罪"
    # surrounding whitespace of the reference is ignored
    span = locate_reference(EN, "  Revenue grew by 18 percent in 2019.\n")
    assert span is not None and EN[span[0] : span[1]] == "Revenue grew by 18 percent in 2019."


@pytest.mark.parametrize(
    ("doc", "ref", "expected"),
    [
        (
            EN,
            "in march  2019 acme acquired polar-sensors",
            "In March 2019, Acme acquired Polar Sensors",
        ),
        (EN, "REVENUE GREW BY 18 PERCENT IN 2019", "Revenue grew by 18 percent in 2019"),
        (ZH, "于2021年3月判决", "于２０２１年３月判决"),  # full-width digits in the document
        (ZH, "被告人张某犯盗窃罪 判处有期徒刑三年", "被告人张某犯盗窃罪，判处有期徒刑三年"),
        (ZH, "「被告人张某犯盗窃罪,判处有期徒刑三年。」", "被告人张某犯盗窃罪，判处有期徒刑三年"),
    ],
)
def test_normalised_match_maps_back_to_original_offsets(doc: str, ref: str, expected: str) -> None:
    span = locate_reference(doc, ref)
    assert span is not None
    assert doc[span[0] : span[1]] == expected


def test_fuzzy_english() -> None:
    ref = "In March 2019, Acme aquired Polar Sensor for 120 milion dollars."
    span = locate_reference(EN, ref)
    assert span is not None
    located = EN[span[0] : span[1]]
    # the alignment may trim a character or a word at the edges
    assert "March 2019" in located and "Polar Sensors" in located
    assert len(located) >= 0.85 * len(ref)
    assert locate_reference(EN, ref, fuzzy=False) is None


def test_fuzzy_chinese_and_threshold() -> None:
    one_edit = "被告人张某犯抢窃罪，判处有期徒刑三年"  # one character changed
    span = locate_reference(ZH, one_edit)
    assert span is not None and ZH[span[0] : span[1]] == "被告人张某犯盗窃罪，判处有期徒刑三年"
    two_edits = "被告人张某犯抢劫罪，判处有期徒刑三年"
    assert locate_reference(ZH, two_edits) is None  # below the default 90
    span = locate_reference(ZH, two_edits, threshold=85)
    assert span is not None and ZH[span[0] : span[1]].startswith("被告人张某")


def test_unrelated_short_and_empty_references() -> None:
    assert locate_reference(EN, "The weather in Oslo was cold in January.") is None
    assert locate_reference(ZH, "原告李某要求赔偿损失五万元") is None
    assert locate_reference(EN, "Acme acquird") is None  # too short for fuzzy matching
    assert locate_reference(EN, "") is None
    assert locate_reference(EN, " ,. ") is None
    assert locate_reference("", "anything") is None
    assert locate_reference("short", "a much longer reference than the document") is None


_alphabet = st.sampled_from(list("abcdefg XYZ,.\n") + list("北京法院判决，。") + ["２", "1"])


@settings(max_examples=200, deadline=None)
@given(doc=st.text(alphabet=_alphabet, min_size=1, max_size=200), data=st.data())
def test_any_substring_is_located_exactly(doc: str, data: st.DataObject) -> None:
    i = data.draw(st.integers(0, len(doc) - 1))
    j = data.draw(st.integers(i + 1, len(doc)))
    ref = doc[i:j]
    span = locate_reference(doc, ref)
    if not ref.strip():
        assert span is None
        return
    assert span is not None
    assert doc[span[0] : span[1]] == ref.strip()


@settings(max_examples=150, deadline=None)
@given(
    words=st.lists(
        st.text(alphabet="abcdefgh北京法院", min_size=1, max_size=6), min_size=3, max_size=30
    ),
    data=st.data(),
)
def test_reflowed_substring_is_located(words: list[str], data: st.DataObject) -> None:
    doc = " ".join(words)
    i = data.draw(st.integers(0, len(words) - 1))
    j = data.draw(st.integers(i + 1, len(words)))
    # the same words joined with different whitespace/punctuation and upper-cased
    sep = data.draw(st.sampled_from(["  ", "\n", ", ", " - "]))
    ref = sep.join(words[i:j]).upper()
    span = locate_reference(doc, ref)
    assert span is not None
    located = doc[span[0] : span[1]]
    assert located.replace(" ", "").lower() == "".join(words[i:j]).lower()


# ----------------------------------------------------------------------- reconstruct_text


def test_reconstruct_overlapping_and_gaps() -> None:
    text = "0123456789abcdefghij"
    chunks = [
        _chunk("d", text, 2, 8, 0),
        _chunk("d", text, 6, 12, 1),  # overlaps the first
        _chunk("d", text, 15, 18, 2),  # gap 12..15
    ]
    rebuilt, offset = reconstruct_text(reversed(chunks))
    assert offset == 2
    assert rebuilt == "23456789ab   fgh"
    assert reconstruct_text([]) == ("", 0)
    with pytest.raises(ValueError, match="more than one document"):
        reconstruct_text([chunks[0], _chunk("e", text, 0, 3, 0)])


@settings(max_examples=150, deadline=None)
@given(
    doc=st.text(alphabet=_alphabet, min_size=1, max_size=120),
    size=st.integers(1, 30),
    step=st.integers(1, 30),
)
def test_reconstruct_rebuilds_fully_covered_document(doc: str, size: int, step: int) -> None:
    chunks = _windows(Document(doc_id="d", text=doc), size, min(step, size))
    rebuilt, offset = reconstruct_text(chunks)
    assert (rebuilt, offset) == (doc, 0)


# --------------------------------------------------------------------- chunks_overlapping


def test_chunks_overlapping_boundaries() -> None:
    text = "x" * 100
    chunks = [
        _chunk("d", text, 0, 40, 0),
        _chunk("d", text, 30, 70, 1),
        _chunk("d", text, 60, 100, 2),
    ]
    assert chunks_overlapping(chunks, [(40, 50)]) == ["d#1"]  # [0,40) ends where the span starts
    assert chunks_overlapping(chunks, [(35, 65)]) == ["d#0", "d#1", "d#2"]
    assert chunks_overlapping(chunks, [(35, 65)], min_overlap_chars=6) == ["d#1"]
    assert chunks_overlapping(chunks, [(38, 40)], min_overlap_chars=10) == [
        "d#0",
        "d#1",
    ]  # short span
    assert chunks_overlapping(chunks, [(10, 10)]) == []
    assert chunks_overlapping(chunks, []) == []
    assert chunks_overlapping(chunks + chunks, [(0, 5), (1, 3)]) == ["d#0"]
    with pytest.raises(ValueError, match="min_overlap_chars"):
        chunks_overlapping(chunks, [(0, 1)], min_overlap_chars=0)


@settings(max_examples=150, deadline=None)
@given(
    n=st.integers(20, 150),
    size=st.integers(1, 40),
    step=st.integers(1, 40),
    data=st.data(),
)
def test_chunks_overlapping_matches_brute_force(
    n: int, size: int, step: int, data: st.DataObject
) -> None:
    doc = Document(doc_id="d", text="y" * n)
    chunks = _windows(doc, size, step)
    s = data.draw(st.integers(0, n - 1))
    e = data.draw(st.integers(s, n))
    expected = [c.chunk_id for c in chunks if set(range(c.start, c.end)) & set(range(s, e))]
    assert chunks_overlapping(chunks, [(s, e)]) == expected


# -------------------------------------------------------------- gt_chunks_from_references


def _example(**kw: object) -> Example:
    base: dict[str, object] = {"example_id": "e", "query": "q", "answer": "a"}
    base.update(kw)
    return Example.model_validate(base)


def test_gt_chunks_on_dragonball_fixture() -> None:
    ds = load_dragonball(FIX / "dragonball")
    chunks_by_doc = {d.doc_id: _windows(d, 60, 45) for d in ds.documents}
    for ex in ds.examples:
        gt_doc_chunks = [c for d in ex.doc_ids for c in chunks_by_doc[d]]
        ids, missing = gt_chunks_from_references(ex, gt_doc_chunks)
        assert missing == []
        if not ex.references:
            assert ids == []
            continue
        assert ids
        docs = ds.document_map()
        for ref in ex.references:
            located = False
            for d in ex.doc_ids:
                span = locate_reference(docs[d].text, ref)
                if span is not None:
                    located = True
                    assert set(chunks_overlapping(chunks_by_doc[d], [span])) <= set(ids)
            assert located, ref
    multi = ds.example_map()["2"]  # comparison across documents 1 and 2
    ids, missing = gt_chunks_from_references(
        multi, [c for d in multi.doc_ids for c in chunks_by_doc[d]]
    )
    assert {i.split("#")[0] for i in ids} == {"1", "2"} and missing == []


def test_gt_chunks_chinese_and_missing_references() -> None:
    doc = Document(doc_id="z", text=ZH * 2)
    chunks = _windows(doc, 12, 10)
    ex = _example(
        doc_ids=["z"],
        references=["被告人张某犯盗窃罪", "原告李某要求赔偿损失五万元", "  "],
    )
    ids, missing = gt_chunks_from_references(ex, chunks)
    assert missing == ["原告李某要求赔偿损失五万元"]
    start = ZH.index("被告人张某犯盗窃罪")
    expected = chunks_overlapping(chunks, [(start, start + 9)])
    expected += chunks_overlapping(chunks, [(len(ZH) + start, len(ZH) + start + 9)])
    assert ids == [c.chunk_id for c in chunks if c.chunk_id in set(expected)]


def test_gt_chunks_partial_trace_and_doc_filter() -> None:
    """Only some chunks known (as in a Trace): references in gaps are missing."""
    doc = Document(doc_id="a", text=EN)
    chunks = _windows(doc, 40, 40)
    kept = [chunks[0], chunks[-1]]  # the middle of the document is unknown
    ex = _example(
        doc_ids=["a"],
        references=[
            "Acme Robotics Ltd. was founded",
            "acquired Polar Sensors",
            "18 percent in 2019",
        ],
    )
    ids, missing = gt_chunks_from_references(ex, kept)
    assert ids == [kept[0].chunk_id, kept[1].chunk_id]
    assert missing == ["acquired Polar Sensors"]
    other = Document(doc_id="b", text="Polar Sensors makes thermometers. " * 3)
    ex_b = _example(doc_ids=["a"], references=["Polar Sensors makes thermometers."])
    ids, missing = gt_chunks_from_references(ex_b, chunks + _windows(other, 40, 40))
    assert ids == [] and missing == ["Polar Sensors makes thermometers."]  # b is not a GT doc
    ex_any = _example(references=["Polar Sensors makes thermometers."])
    ids, _ = gt_chunks_from_references(ex_any, chunks + _windows(other, 40, 40))
    assert ids and all(i.startswith("b#") for i in ids)


def test_gt_chunks_fuzzy_prefers_best_document() -> None:
    a = Document(
        doc_id="a", text="The board approved a dividend of 0.35 dollars per share in 2019."
    )
    b = Document(doc_id="b", text="The board approved a dividend of 0.50 euros per share in 2020.")
    ex = _example(
        doc_ids=["a", "b"],
        references=["The board aproved a dividend of 0.35 dollars per share in 2019."],
    )
    ids, missing = gt_chunks_from_references(ex, [*_windows(a, 200, 200), *_windows(b, 200, 200)])
    assert ids == ["a#0"] and missing == []
