"""Integrity checks for the bundled demo corpus (src/ragtriage/data/demo)."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

import ragtriage
from ragtriage.jsonl import read_records
from ragtriage.records import Document, Example

DEMO_DIR = Path(ragtriage.__file__).parent / "data" / "demo"

LABELS = {"fact_single", "summary", "reasoning", "unanswerable"}
QTYPES = {
    "factual",
    "multi_entity",
    "temporal",
    "numeric",
    "summary",
    "multi_hop",
    "unanswerable",
}
# Know-Your-RAG label implied by each finer question type.
LABEL_OF_QTYPE = {
    "factual": "fact_single",
    "summary": "summary",
    "unanswerable": "unanswerable",
    "multi_entity": "reasoning",
    "temporal": "reasoning",
    "numeric": "reasoning",
    "multi_hop": "reasoning",
}
DOMAINS = {"finance": "fin", "law": "law", "medical": "med"}


@pytest.fixture(scope="module")
def docs() -> dict[str, Document]:
    records = list(read_records(DEMO_DIR / "documents.jsonl", Document))
    ids = [d.doc_id for d in records]
    assert len(ids) == len(set(ids)), "duplicate doc_id"
    return {d.doc_id: d for d in records}


@pytest.fixture(scope="module")
def examples() -> list[Example]:
    return list(read_records(DEMO_DIR / "examples.jsonl", Example))


def test_files_and_readme_exist() -> None:
    for name in ("documents.jsonl", "examples.jsonl", "README.md"):
        assert (DEMO_DIR / name).is_file(), name


def test_document_ids_metadata_and_sizes(docs: dict[str, Document]) -> None:
    en = [d for d in docs.values() if d.metadata.get("language") == "en"]
    zh = [d for d in docs.values() if d.metadata.get("language") == "zh"]
    assert len(en) >= 27
    assert len(zh) >= 6
    assert len(en) + len(zh) == len(docs)
    for d in docs.values():
        domain = d.metadata.get("domain")
        assert domain in DOMAINS, d.doc_id
        prefix = DOMAINS[str(domain)]
        lang = d.metadata["language"]
        pattern = rf"{prefix}-\d\d" if lang == "en" else rf"zh-{prefix}-\d\d"
        assert re.fullmatch(pattern, d.doc_id), d.doc_id
        assert d.title, d.doc_id
        assert "\n## " in d.text, f"{d.doc_id} has no section headers"
        if lang == "en":
            words = len(d.text.split())
            assert 350 <= words <= 900, (d.doc_id, words)
        else:
            assert 250 <= len(d.text) <= 600, (d.doc_id, len(d.text))
    # each domain is represented in each language
    for lang in ("en", "zh"):
        present = {d.metadata["domain"] for d in docs.values() if d.metadata["language"] == lang}
        assert present == set(DOMAINS), lang


def test_example_ids_unique_and_patterned(examples: list[Example]) -> None:
    ids = [e.example_id for e in examples]
    assert len(ids) == len(set(ids))
    for e in examples:
        pattern = r"ex-\d{3}" if e.language == "en" else r"zh-ex-\d{3}"
        assert re.fullmatch(pattern, e.example_id), e.example_id


def test_examples_point_to_existing_docs_of_same_language(
    docs: dict[str, Document], examples: list[Example]
) -> None:
    for e in examples:
        assert e.doc_ids, e.example_id
        assert len(e.doc_ids) == len(set(e.doc_ids)), e.example_id
        for doc_id in e.doc_ids:
            assert doc_id in docs, (e.example_id, doc_id)
            assert docs[doc_id].metadata["language"] == e.language, (e.example_id, doc_id)


def test_references_are_verbatim(docs: dict[str, Document], examples: list[Example]) -> None:
    for e in examples:
        for ref in e.references:
            assert ref.strip(), e.example_id
            assert any(ref in docs[d].text for d in e.doc_ids), (e.example_id, ref)


def test_answerable_and_unanswerable_shape(examples: list[Example]) -> None:
    for e in examples:
        if e.answerable:
            assert e.answer.strip(), e.example_id
            assert len(e.references) >= 1, e.example_id
            assert 1 <= len(e.keypoints) <= 4, e.example_id
            assert e.label != "unanswerable", e.example_id
        else:
            assert e.answer == "", e.example_id
            assert e.references == [], e.example_id
            assert e.label == "unanswerable", e.example_id
            assert len(e.doc_ids) == 1, e.example_id


def test_labels_and_qtypes_consistent(examples: list[Example]) -> None:
    for e in examples:
        qtype = e.metadata.get("qtype")
        assert qtype in QTYPES, (e.example_id, qtype)
        assert e.label in LABELS, e.example_id
        assert e.label == LABEL_OF_QTYPE[str(qtype)], e.example_id
        if qtype == "multi_entity":
            assert len(e.doc_ids) == 2, e.example_id


def test_coverage(examples: list[Example]) -> None:
    by_lang = Counter(e.language for e in examples)
    assert by_lang["en"] >= 80
    assert by_lang["zh"] >= 15
    assert set(by_lang) == {"en", "zh"}
    for lang in ("en", "zh"):
        qtypes = Counter(e.metadata.get("qtype") for e in examples if e.language == lang)
        assert set(qtypes) == QTYPES, (lang, qtypes)
        labels = {e.label for e in examples if e.language == lang}
        assert labels == LABELS, lang
    en = [e for e in examples if e.language == "en"]
    unanswerable = sum(1 for e in en if not e.answerable)
    assert 0.05 <= unanswerable / len(en) <= 0.2


def test_every_english_document_is_asked_about(
    docs: dict[str, Document], examples: list[Example]
) -> None:
    used = {d for e in examples for d in e.doc_ids}
    missing = sorted(d for d in docs if d not in used)
    assert not missing, missing
