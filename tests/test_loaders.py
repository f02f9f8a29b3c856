"""Dataset loaders: field-by-field mapping, sniffing, file:line:field errors, fuzzing."""

from __future__ import annotations

import json
import tempfile
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragtriage.data import (
    Dataset,
    chunk_id_of,
    is_unanswerable_text,
    load_clapnq,
    load_dataset,
    load_demo,
    load_dragonball,
    load_folder,
    load_generic,
    markdown_title,
    normalize_language,
    normalize_query_type,
    passage_doc_id,
    read_dragonball_docs,
    read_dragonball_queries,
    sniff_file,
)
from ragtriage.errors import InputError

FIX = Path(__file__).parent / "fixtures"
DB = FIX / "dragonball"
CQ = FIX / "clapnq"
BAD = FIX / "bad"


def _write(path: Path, rows: list[Any]) -> Path:
    path.write_text(
        "".join(
            (r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n" for r in rows
        ),
        encoding="utf-8",
    )
    return path


def _db_query(**over: Any) -> dict[str, Any]:
    q: dict[str, Any] = {
        "domain": "Finance",
        "language": "en",
        "query": {"query_id": 1, "query_type": "Factual Question", "content": "What?"},
        "ground_truth": {"doc_ids": [1], "content": "This.", "references": ["x"], "keypoints": []},
    }
    q.update(over)
    return q


# --------------------------------------------------------------------------- DragonBall


@pytest.fixture(scope="module")
def dragonball() -> Dataset:
    return load_dragonball(DB)


def test_dragonball_documents_field_by_field(dragonball: Dataset) -> None:
    assert dragonball.format == "dragonball"
    assert dragonball.name == "dragonball"
    assert dragonball.prechunked is None
    docs = dragonball.document_map()
    assert list(docs) == ["1", "2", "3", "101", "102"]
    acme = docs["1"]
    assert acme.title == "Acme Robotics Ltd."
    assert acme.text.startswith("Acme Robotics Ltd. was founded in 2004")
    assert acme.metadata == {
        "company_name": "Acme Robotics Ltd.",
        "domain": "Finance",
        "language": "en",
        "title_field": "company_name",
    }
    assert docs["3"].title == "Brightwater Intermediate Court"
    assert docs["3"].metadata["title_field"] == "court_name"
    patient = docs["102"]
    assert patient.title == "青岛市人民医院_王某"
    assert patient.metadata["title_field"] == "hospital_patient_name"
    assert patient.metadata["language"] == "zh"


def test_dragonball_factual_english(dragonball: Dataset) -> None:
    ex = dragonball.example_map()["1"]
    assert ex.query == "How much did Acme Robotics Ltd. pay for Polar Sensors in March 2019?"
    assert ex.answer == "120 million dollars."
    assert ex.answerable is True
    assert ex.doc_ids == ["1"]
    assert ex.references == [
        "In March 2019, Acme Robotics Ltd. acquired Polar Sensors for 120 million dollars."
    ]
    assert ex.keypoints == ["Acme Robotics Ltd. paid 120 million dollars"]
    assert ex.gt_chunk_ids == []
    assert ex.label == "fact_single"
    assert ex.language == "en"
    assert ex.metadata == {
        "source": "dragonball",
        "query_type": "Factual Question",
        "domain": "Finance",
    }


def test_dragonball_multi_document(dragonball: Dataset) -> None:
    ex = dragonball.example_map()["2"]
    assert ex.doc_ids == ["1", "2"]
    assert ex.label == "reasoning"
    assert ex.metadata["query_type"] == "Multi-document Comparison Question"
    assert len(ex.references) == 2
    assert ex.keypoints == ["Acme revenue grew 18 percent", "Globex net profit fell 6 percent"]


def test_dragonball_unanswerable_english_and_chinese(dragonball: Dataset) -> None:
    exs = dragonball.example_map()
    en, zh = exs["3"], exs["6"]
    for ex in (en, zh):
        assert ex.answerable is False
        assert ex.answer == ""
        assert ex.references == []
        assert ex.label == "unanswerable"
    assert en.metadata["ground_truth_content"] == "Unable to answer."
    assert zh.metadata["ground_truth_content"] == "无法回答"
    assert zh.language == "zh"
    assert zh.metadata["query_type"] == "无关无解问"


def test_dragonball_chinese_types_and_string_doc_ids(dragonball: Dataset) -> None:
    exs = dragonball.example_map()
    assert exs["5"].label == "fact_single"
    assert exs["5"].answer == "3亿元。"
    assert exs["5"].language == "zh"
    assert exs["7"].label == "reasoning"
    assert exs["7"].doc_ids == ["102"]  # given as the string "102" in the source
    assert exs["7"].keypoints == ["诊断为急性心肌梗死", "接受经皮冠状动脉介入治疗", "住院7天"]
    assert exs["4"].label == "summary"


def test_dragonball_language_filter() -> None:
    ds = load_dragonball(
        docs=DB / "dragonball_docs.jsonl",
        queries=DB / "dragonball_queries.jsonl",
        language="Chinese",
    )
    assert ds.name == "dragonball-zh"
    assert [d.doc_id for d in ds.documents] == ["101", "102"]
    assert [e.example_id for e in ds.examples] == ["5", "6", "7"]
    assert load_dataset(DB, language="en").examples[0].language == "en"
    assert len(load_dataset(DB, language="en").examples) == 4


@pytest.mark.parametrize(
    ("raw", "label"),
    [
        ("Factual Question", "fact_single"),
        ("Summary Question", "summary"),
        ("Summarization Question", "summary"),
        ("Multi-hop Reasoning Question", "reasoning"),
        ("Multi-document Comparison Question", "reasoning"),
        ("Multi-document Time Sequence Question", "reasoning"),
        ("Multi-document Information Integration Question", "summary"),
        ("Irrelevant Unsolvable Question", "unanswerable"),
        ("事实性问题", "fact_single"),
        ("总结性问题", "summary"),
        ("多跳推理问题", "reasoning"),
        ("多文档对比问题", "reasoning"),
        ("多文档时间序列问题", "reasoning"),
        ("多文档信息整合问题", "summary"),
        ("无关无解问", "unanswerable"),
        ("fact_single", "fact_single"),
        ("Opinion Question", None),
        ("", None),
        (None, None),
    ],
)
def test_normalize_query_type(raw: str | None, label: str | None) -> None:
    assert normalize_query_type(raw) == label


def test_unknown_query_type_keeps_raw_label(tmp_path: Path) -> None:
    q = _db_query()
    q["query"]["query_type"] = "Opinion Question"
    docs = _write(tmp_path / "d.jsonl", [{"doc_id": 1, "content": "x", "language": "en"}])
    (ex,) = read_dragonball_queries(_write(tmp_path / "q.jsonl", [q]), known_doc_ids={"1"})
    assert ex.label == "Opinion Question"
    assert ex.metadata["query_type"] == "Opinion Question"
    (doc,) = read_dragonball_docs(docs)
    assert doc.title is None  # no name field


def test_dragonball_numbered_keypoints_load_without_numbers(tmp_path: Path) -> None:
    q = _db_query()
    q["ground_truth"]["keypoints"] = [
        "1. Green Fields appointed a new CEO in January 2021.",
        "2. The CEO came from organic farming.",
    ]
    (ex,) = read_dragonball_queries(_write(tmp_path / "q.jsonl", [q]), known_doc_ids={"1"})
    assert ex.keypoints == [
        "Green Fields appointed a new CEO in January 2021.",
        "The CEO came from organic farming.",
    ]


@pytest.mark.parametrize(
    "text",
    [
        "Unable to answer",
        "Unable to answer.",
        "unable to answer the question based on the documents",
        "I am unable to answer this question.",
        "The question cannot be answered from the given information.",
        "Cannot be determined.",
        "Insufficient information.",
        "无法回答",
        "无法回答。",
        "根据文档内容，无法回答该问题。",
        "信息不足",
        "  ",
        "",
    ],
)
def test_unanswerable_phrases(text: str) -> None:
    assert is_unanswerable_text(text)


@pytest.mark.parametrize(
    "text",
    [
        "120 million dollars.",
        "None.",
        "No.",
        "The company said it was unable to answer regulators' questions about the merger "
        "in time, so the deal was delayed until 2021 and the fine was paid in full by the "
        "parent company after a lengthy review.",
        "该公司在2019年没有信息披露违规",
        "3亿元。",
        "No information security incidents occurred in 2019, and the company invested heavily in staff training.",
    ],
)
def test_real_answers_are_not_abstentions(text: str) -> None:
    assert not is_unanswerable_text(text)


def test_dragonball_title_from_any_nonstandard_field(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "docs.jsonl",
        [
            {
                "domain": "Education",
                "language": "en",
                "doc_id": 7,
                "school_name": "Hill School",
                "pages": 3,
                "content": "c",
            }
        ],
    )
    (doc,) = read_dragonball_docs(path)
    assert doc.doc_id == "7"
    assert doc.title == "Hill School"
    assert doc.metadata == {
        "school_name": "Hill School",
        "pages": 3,
        "domain": "Education",
        "language": "en",
        "title_field": "school_name",
    }


def test_dragonball_duplicate_documents(tmp_path: Path) -> None:
    same = {"doc_id": 1, "content": "a", "company_name": "A"}
    assert len(read_dragonball_docs(_write(tmp_path / "a.jsonl", [same, same]))) == 1
    other = {"doc_id": 1, "content": "b", "company_name": "A"}
    with pytest.raises(InputError) as ei:
        read_dragonball_docs(_write(tmp_path / "b.jsonl", [same, other]))
    assert (ei.value.line, ei.value.field) == (2, "doc_id")


def test_dragonball_query_id_clash_across_languages(tmp_path: Path) -> None:
    zh = _db_query(language="zh")
    path = _write(tmp_path / "q.jsonl", [_db_query(), zh])
    ids = [e.example_id for e in read_dragonball_queries(path)]
    assert ids == ["1-en", "1-zh"]
    with pytest.raises(InputError) as ei:
        read_dragonball_queries(_write(tmp_path / "q2.jsonl", [_db_query(), _db_query()]))
    assert (ei.value.line, ei.value.field) == (2, "query.query_id")


def test_dragonball_missing_language_is_detected(tmp_path: Path) -> None:
    q = _db_query()
    del q["language"]
    q["query"]["content"] = "公司的收入是多少？"
    (ex,) = read_dragonball_queries(_write(tmp_path / "q.jsonl", [q]))
    assert ex.language == "zh"


# ----------------------------------------------------------------------- DragonBall errors


def test_error_missing_doc_ids_names_file_line_field() -> None:
    path = BAD / "dragonball_queries_missing_doc_ids.jsonl"
    with pytest.raises(InputError) as ei:
        load_dragonball(docs=DB / "dragonball_docs.jsonl", queries=path)
    err = ei.value
    assert (err.path, err.line, err.field) == (str(path), 2, "ground_truth.doc_ids")
    assert str(err) == f"{path}:2:ground_truth.doc_ids: missing required field"


def test_error_bad_doc_id_type() -> None:
    path = BAD / "dragonball_docs_bad_doc_id.jsonl"
    with pytest.raises(InputError) as ei:
        load_dragonball(docs=path, queries=DB / "dragonball_queries.jsonl")
    assert str(ei.value) == f"{path}:2:doc_id: expected a string or integer id, got array"


def test_error_unknown_ground_truth_document() -> None:
    path = BAD / "dragonball_queries_unknown_doc.jsonl"
    with pytest.raises(InputError) as ei:
        load_dragonball(docs=DB / "dragonball_docs.jsonl", queries=path)
    assert (ei.value.line, ei.value.field) == (1, "ground_truth.doc_ids.1")
    assert "'999'" in ei.value.message


def test_error_not_json_names_line() -> None:
    path = BAD / "not_json.jsonl"
    with pytest.raises(InputError) as ei:
        load_dragonball(docs=DB / "dragonball_docs.jsonl", queries=path)
    assert (ei.value.path, ei.value.line) == (str(path), 3)
    assert "not valid JSON" in ei.value.message


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda q: q.pop("query"), "query"),
        (lambda q: q.__setitem__("query", "text"), "query"),
        (lambda q: q["query"].pop("query_id"), "query.query_id"),
        (lambda q: q["query"].__setitem__("query_id", 1.5), "query.query_id"),
        (lambda q: q["query"].__setitem__("content", ""), "query.content"),
        (lambda q: q["query"].__setitem__("query_type", 3), "query.query_type"),
        (lambda q: q.pop("ground_truth"), "ground_truth"),
        (lambda q: q["ground_truth"].__setitem__("doc_ids", "1"), "ground_truth.doc_ids"),
        (lambda q: q["ground_truth"].__setitem__("doc_ids", [1, None]), "ground_truth.doc_ids.1"),
        (lambda q: q["ground_truth"].pop("content"), "ground_truth.content"),
        (
            lambda q: q["ground_truth"].__setitem__("references", ["a", 2]),
            "ground_truth.references.1",
        ),
        (lambda q: q["ground_truth"].__setitem__("keypoints", {"a": 1}), "ground_truth.keypoints"),
        (lambda q: q.__setitem__("language", 5), "language"),
    ],
)
def test_dragonball_query_field_errors(tmp_path: Path, mutate: Any, field: str) -> None:
    q = _db_query()
    mutate(q)
    path = _write(tmp_path / "q.jsonl", [_db_query(), "", q])
    path.write_text(path.read_text().replace('"query_id": 1,', '"query_id": 9,', 1))
    with pytest.raises(InputError) as ei:
        read_dragonball_queries(path)
    assert (ei.value.path, ei.value.line, ei.value.field) == (str(path), 3, field)


def test_dragonball_missing_files(tmp_path: Path) -> None:
    _write(tmp_path / "docs.jsonl", [{"doc_id": 1, "content": "x"}])
    with pytest.raises(InputError, match="queries"):
        load_dragonball(tmp_path)


# ------------------------------------------------------------------------------ CLAPnq


@pytest.fixture(scope="module")
def clapnq() -> Dataset:
    return load_clapnq(CQ)


def test_clapnq_documents_and_chunks(clapnq: Dataset) -> None:
    assert clapnq.format == "clapnq"
    docs = clapnq.document_map()
    hamlet_text = docs["827"].text
    assert docs["827"].title == "Hamlet"
    assert docs["828"].title == "Ophelia"
    danube_id = passage_doc_id(
        "Danube",
        "The Danube is the second-longest river in Europe. It flows through ten countries. "
        "It empties into the Black Sea.",
    )
    assert list(docs) == ["827", "828", danube_id]
    assert clapnq.prechunked is not None
    chunks = {c.chunk_id: c for c in clapnq.prechunked}
    assert set(chunks) == {chunk_id_of(d) for d in docs}
    c = chunks["827#0"]
    assert (c.doc_id, c.start, c.end, c.index, c.text) == (
        "827",
        0,
        len(hamlet_text),
        0,
        hamlet_text,
    )
    assert clapnq.chunks_of("828")[0].text.startswith("Ophelia")


def test_clapnq_answerable_field_by_field(clapnq: Dataset) -> None:
    ex = clapnq.example_map()["-101"]
    assert ex.query == "when was hamlet written and where is it set"
    assert ex.answer.startswith("Hamlet was written by William Shakespeare")
    assert ex.answerable is True
    assert ex.doc_ids == ["827"]  # same title+text as passage 827 of passages.tsv
    assert ex.gt_chunk_ids == ["827#0"]
    assert ex.references == [
        "Hamlet is a tragedy written by William Shakespeare sometime between 1599 and 1601.",
        "The play is set in Denmark.",
    ]
    assert ex.language == "en"
    assert ex.label is None
    assert ex.metadata["output_meta"] == {
        "annotator": [3],
        "has_minimal_answer": False,
        "non_consecutive": True,
        "round": 0,
    }
    others = ex.metadata["other_outputs"]
    assert isinstance(others, list) and len(others) == 1
    assert others[0] == {
        "answer": "Between 1599 and 1601.",
        "selected_sentences": [
            "Hamlet is a tragedy written by William Shakespeare sometime between 1599 and 1601."
        ],
        "meta": {"annotator": [7]},
    }


def test_clapnq_first_nonempty_answer_wins(clapnq: Dataset) -> None:
    ex = clapnq.example_map()["102"]  # integer id in the source
    assert ex.answer == "The Danube empties into the Black Sea."
    assert ex.references == ["It empties into the Black Sea."]
    assert ex.answerable


def test_clapnq_unanswerable_and_deduplication(clapnq: Dataset) -> None:
    exs = clapnq.example_map()
    for qid in ("-201", "-202"):
        ex = exs[qid]
        assert ex.answerable is False
        assert ex.answer == ""
        assert ex.references == []
        assert ex.label == "unanswerable"
    # passages shared across questions are one document
    assert exs["-201"].doc_ids == exs["-101"].doc_ids
    assert exs["-202"].doc_ids == exs["102"].doc_ids
    assert exs["-202"].gt_chunk_ids == [chunk_id_of(exs["102"].doc_ids[0])]
    assert len(clapnq.documents) == 3


def test_clapnq_single_file_uses_hash_ids() -> None:
    ds = load_dataset(CQ / "clapnq_dev_answerable.jsonl")
    ex = ds.example_map()["-101"]
    assert ex.doc_ids[0].startswith("clapnq-")
    assert ex.doc_ids == [passage_doc_id("Hamlet", ds.documents[0].text)]
    assert load_clapnq(questions=CQ / "clapnq_dev_answerable.jsonl").documents == ds.documents


def test_clapnq_passages_jsonl_and_conflicts(tmp_path: Path) -> None:
    q = {
        "id": "a",
        "input": "q?",
        "passages": [{"title": "T", "text": "body"}],
        "output": [{"answer": "x", "selected_sentences": ["body"]}],
    }
    qs = _write(tmp_path / "q.jsonl", [q])
    ps = _write(
        tmp_path / "p.jsonl",
        [{"id": 5, "title": "T", "text": "body"}, {"id": "6", "text": "other"}],
    )
    ds = load_clapnq(questions=qs, passages=ps)
    assert [d.doc_id for d in ds.documents] == ["5", "6"]
    assert ds.examples[0].gt_chunk_ids == ["5#0"]
    bad = _write(
        tmp_path / "p2.jsonl",
        [{"id": 5, "title": "T", "text": "body"}, {"id": 5, "text": "different"}],
    )
    with pytest.raises(InputError) as ei:
        load_clapnq(questions=qs, passages=bad)
    assert (ei.value.line, ei.value.field) == (2, "id")


def test_clapnq_errors() -> None:
    path = BAD / "clapnq_passages_not_list.jsonl"
    with pytest.raises(InputError) as ei:
        load_clapnq(questions=path)
    assert str(ei.value) == f"{path}:2:passages: expected a list, got object"
    path = BAD / "clapnq_empty_input.jsonl"
    with pytest.raises(InputError) as ei:
        load_dataset(path)
    assert (ei.value.line, ei.value.field) == (1, "input")


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda q: q.pop("id"), "id"),
        (lambda q: q.__setitem__("input", None), "input"),
        (lambda q: q["passages"].append("text"), "passages.1"),
        (lambda q: q["passages"][0].pop("text"), "passages.0.text"),
        (lambda q: q["passages"][0].__setitem__("title", ["t"]), "passages.0.title"),
        (lambda q: q.__setitem__("output", {"answer": "x"}), "output"),
        (lambda q: q["output"].append(3), "output.1"),
        (lambda q: q["output"][0].__setitem__("answer", 1), "output.0.answer"),
        (
            lambda q: q["output"][0].__setitem__("selected_sentences", [1]),
            "output.0.selected_sentences.0",
        ),
        (lambda q: q["output"][0].__setitem__("meta", "m"), "output.0.meta"),
    ],
)
def test_clapnq_field_errors(tmp_path: Path, mutate: Any, field: str) -> None:
    q = {
        "id": "a",
        "input": "q?",
        "passages": [{"title": "T", "text": "body"}],
        "output": [{"answer": "x", "selected_sentences": ["body"], "meta": {}}],
    }
    mutate(q)
    path = _write(tmp_path / "q.jsonl", [q])
    with pytest.raises(InputError) as ei:
        load_clapnq(questions=path)
    assert (ei.value.line, ei.value.field) == (1, field)


def test_clapnq_bad_tsv(tmp_path: Path) -> None:
    qs = _write(tmp_path / "q.jsonl", [{"id": "a", "input": "q?", "passages": [], "output": []}])
    tsv = tmp_path / "p.tsv"
    tsv.write_text("pid\ttext\n1\tx\n", encoding="utf-8")
    with pytest.raises(InputError) as ei:
        load_clapnq(questions=qs, passages=tsv)
    assert (ei.value.line, ei.value.field) == (1, "id")
    tsv.write_text("id\ttext\ttitle\n1\tx\tT\n2\tonly two\n", encoding="utf-8")
    with pytest.raises(InputError) as ei:
        load_clapnq(questions=qs, passages=tsv)
    assert ei.value.line == 3


CQR = FIX / "clapnq_repo"  # laid out like a clone of the CLAPnq repository


def test_clapnq_repository_layout_uses_the_retrieval_gold_ids() -> None:
    ds = load_dataset(CQR)
    assert ds.format == "clapnq"
    # the corpus is passages.tsv; annotated passages tied to it add no documents
    assert [d.doc_id for d in ds.documents] == [
        "700100_0-240",
        "700200_10-180",
        "700300_5-160",
        "700400_0-90",
    ]
    exs = ds.example_map()
    assert sorted(exs) == ["-4410", "5521", "7730"]  # the train TSV adds no examples
    light = exs["-4410"]
    assert light.doc_ids == ["700100_0-240"] and light.gt_chunk_ids == ["700100_0-240#0"]
    assert light.metadata["gt_passage_match"] == ["qrels"]
    assert light.references == ["It was lit for the first time in 1871 and automated in 1968 ."]
    assert exs["5521"].answer == "The crossing takes twelve minutes."
    # the unanswerable TSV row has no ids: its passage is matched to the corpus by text
    # (the corpus copy has no trailing space, and quotes doubled by the TSV writer)
    choir = exs["7730"]
    assert (choir.answerable, choir.label) == (False, "unanswerable")
    assert choir.doc_ids == ["700300_5-160"]
    assert choir.metadata["gt_passage_match"] == ["exact"]
    assert 'Its "winter concert" is held' in ds.document_map()["700300_5-160"].text


def test_clapnq_without_retrieval_tsvs_matches_passages_by_text() -> None:
    ds = load_clapnq(
        questions=sorted((CQR / "annotated_data" / "dev").glob("*.jsonl")),
        passages=CQR / "retrieval" / "passages.tsv",
    )
    exs = ds.example_map()
    # the corpus kept a slightly different version of the lighthouse passage
    light = exs["-4410"]
    assert light.doc_ids == ["700100_0-240"]
    (how,) = light.metadata["gt_passage_match"]  # type: ignore[misc]
    assert isinstance(how, str) and how.startswith("similar 0.9")
    assert exs["5521"].doc_ids == ["700200_10-180"]
    assert exs["5521"].metadata["gt_passage_match"] == ["exact"]
    assert len(ds.documents) == 4
    # without the corpus every annotated passage is a document of its own
    alone = load_clapnq(questions=CQR / "annotated_data" / "dev" / "clapnq_dev_answerable.jsonl")
    assert [e.metadata["gt_passage_match"] for e in alone.examples] == [["inline"], ["inline"]]
    assert all(d.doc_id.startswith("clapnq-") for d in alone.documents)


def test_clapnq_retrieval_tsvs_alone_make_the_examples() -> None:
    ds = load_dataset(CQR / "retrieval")
    exs = ds.example_map()
    assert sorted(exs) == ["-4410", "5521", "7730", "9901"]
    ferry = exs["5521"]
    assert ferry.answer == "The crossing takes twelve minutes."
    assert ferry.metadata["other_answers"] == [
        'It takes 12 minutes, "door to door".\nThe first boat leaves at 6:10.'
    ]
    assert (ferry.doc_ids, ferry.gt_chunk_ids, ferry.references) == (
        ["700200_10-180"],
        ["700200_10-180#0"],
        [],
    )
    none = exs["7730"]
    assert (none.answerable, none.answer, none.doc_ids, none.label) == (
        False,
        "",
        [],
        "unanswerable",
    )
    assert sniff_file(CQR / "retrieval" / "dev" / "question_dev_answerable.tsv") == "clapnq_qrels"


def test_clapnq_retrieval_tsv_errors(tmp_path: Path) -> None:
    tsv = CQR / "retrieval" / "dev" / "question_dev_answerable.tsv"
    with pytest.raises(InputError, match=r"passages\.tsv"):
        load_dataset(tsv)  # gold ids need the corpus
    few = tmp_path / "p.tsv"
    few.write_text("id\ttext\ttitle\n700100_0-240\tx\tT\n", encoding="utf-8")
    with pytest.raises(InputError) as ei:
        load_clapnq(qrels=tsv, passages=few)
    assert (ei.value.path, ei.value.line, ei.value.field) == (str(tsv), 3, "doc-id-list")
    assert "'700200_10-180'" in str(ei.value)
    dup = tmp_path / "q.tsv"
    dup.write_text(
        "id\tquestion\tdoc-id-list\tanswers\n1\tq?\t700100_0-240\ta\n1\tq?\t\t\n",
        encoding="utf-8",
    )
    with pytest.raises(InputError) as ei:
        load_clapnq(qrels=dup, passages=few)
    assert (ei.value.line, ei.value.field) == (3, "id")
    no_ids = tmp_path / "q2.tsv"
    no_ids.write_text("id\tquestion\tanswers\n1\tq?\ta\n", encoding="utf-8")
    assert sniff_file(no_ids) is None
    with pytest.raises(InputError) as ei:
        load_clapnq(qrels=no_ids, passages=few)
    assert (ei.value.line, ei.value.field) == (2, "doc-id-list")


# ----------------------------------------------------------------------------- generic


def test_generic_directory() -> None:
    ds = load_generic(FIX / "generic")
    assert (ds.name, ds.format) == ("generic", "generic")
    assert [d.doc_id for d in ds.documents] == ["kb/a", "kb/b"]
    assert ds.documents[0].title == "Letters"
    g1, g2 = ds.examples
    assert (g1.answer, g1.references, g1.label) == ("Beta", ["Beta follows it."], "fact_single")
    assert (g2.answerable, g2.answer) == (False, "")
    assert ds.prechunked is not None and [c.chunk_id for c in ds.prechunked] == [
        "kb/a#0",
        "kb/a#1",
        "kb/b#0",
    ]


def test_generic_explicit_paths_and_file_sniffing() -> None:
    ds = load_generic(documents=FIX / "generic" / "documents.jsonl")
    assert ds.examples == () and ds.prechunked is None
    via_examples = load_dataset(FIX / "generic" / "examples.jsonl")
    assert len(via_examples.examples) == 2 and via_examples.prechunked is not None
    assert sniff_file(FIX / "generic" / "chunks.jsonl") == "generic_chunks"


@pytest.mark.parametrize(
    ("examples", "chunks", "where"),
    [
        (
            [{"example_id": "e", "query": "q", "answer": "a", "doc_ids": ["nope"]}],
            None,
            ("examples", 1, "doc_ids.0"),
        ),
        (
            [
                {"example_id": "e", "query": "q", "answer": "a"},
                {"example_id": "e", "query": "q", "answer": "b"},
            ],
            None,
            ("examples", 2, "example_id"),
        ),
        ([{"example_id": "e", "query": "q", "answer": " "}], None, ("examples", 1, None)),
        (
            [{"example_id": "e", "query": "q", "answer": "a", "typo": 1}],
            None,
            ("examples", 1, "typo"),
        ),
        (
            None,
            [{"chunk_id": "c", "doc_id": "d", "text": "wrong", "start": 0, "end": 5, "index": 0}],
            ("chunks", 1, "text"),
        ),
        (
            None,
            [{"chunk_id": "c", "doc_id": "zz", "text": "hello", "start": 0, "end": 5, "index": 0}],
            ("chunks", 1, "doc_id"),
        ),
        (
            [{"example_id": "e", "query": "q", "answer": "a", "gt_chunk_ids": ["c", "x"]}],
            [{"chunk_id": "c", "doc_id": "d", "text": "hello", "start": 0, "end": 5, "index": 0}],
            ("examples", 1, "gt_chunk_ids.1"),
        ),
    ],
)
def test_generic_errors(
    tmp_path: Path, examples: Any, chunks: Any, where: tuple[str, int, str | None]
) -> None:
    _write(tmp_path / "documents.jsonl", [{"doc_id": "d", "text": "hello world"}])
    if examples is not None:
        _write(tmp_path / "examples.jsonl", examples)
    if chunks is not None:
        _write(tmp_path / "chunks.jsonl", chunks)
    with pytest.raises(InputError) as ei:
        load_generic(tmp_path)
    kind, line, field = where
    assert ei.value.path == str(tmp_path / f"{kind}.jsonl")
    assert ei.value.line == line
    assert ei.value.field == field


def test_generic_requires_documents(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"documents\.jsonl"):
        load_generic(tmp_path)


# ------------------------------------------------------------------------------ folder


def test_folder_documents_and_titles() -> None:
    ds = load_folder(FIX / "folder")
    assert ds.format == "folder"
    docs = ds.document_map()
    assert list(docs) == ["intro.md", "notes/meeting.txt", "notes/plain.md"]
    assert docs["intro.md"].title == "Getting Started"
    assert docs["notes/meeting.txt"].title == "meeting"
    assert docs["notes/plain.md"].title == "plain"
    assert docs["notes/meeting.txt"].text == (
        "# not a title in a .txt file\nThe meeting moved to Thursday at 10 am.\n"
    )
    assert docs["intro.md"].metadata == {"path": "intro.md"}
    (ex,) = ds.examples
    assert ex.doc_ids == ["notes/meeting.txt"]


def test_folder_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"no \.txt or \.md"):
        load_folder(tmp_path)
    (tmp_path / "a.txt").write_bytes(b"ok line\nbad \xff byte\n")
    with pytest.raises(InputError) as ei:
        load_folder(tmp_path)
    assert (ei.value.path, ei.value.line) == (str(tmp_path / "a.txt"), 2)
    (tmp_path / "a.txt").write_text("fine", encoding="utf-8")
    _write(
        tmp_path / "examples.jsonl",
        [{"example_id": "e", "query": "q", "answer": "a", "doc_ids": ["b.txt"]}],
    )
    with pytest.raises(InputError) as ei:
        load_folder(tmp_path)
    assert (ei.value.line, ei.value.field) == (1, "doc_ids.0")


@pytest.mark.parametrize(
    ("text", "title"),
    [
        ("# Title #\nbody", "Title"),
        ("intro\n\n## Section two\n", "Section two"),
        ("Setext Title\n=====\nbody", "Setext Title"),
        ("```\n# not a header\n```\n# Real", "Real"),
        ("#hashtag is not a header\n", None),
        ("plain text", None),
    ],
)
def test_markdown_title(text: str, title: str | None) -> None:
    assert markdown_title(text) == title


# ------------------------------------------------------------------------------ sniffing


@pytest.mark.parametrize(
    ("path", "fmt"),
    [
        (DB, "dragonball"),
        (DB / "dragonball_queries.jsonl", "dragonball"),
        (DB / "dragonball_docs.jsonl", "dragonball"),
        (CQ, "clapnq"),
        (CQ / "clapnq_dev_unanswerable.jsonl", "clapnq"),
        (FIX / "generic", "generic"),
        (FIX / "generic" / "documents.jsonl", "generic"),
        (FIX / "folder", "folder"),
    ],
)
def test_load_dataset_sniffs(path: Path, fmt: str) -> None:
    ds = load_dataset(path)
    assert ds.format == fmt
    assert ds.documents
    assert load_dataset(path, format=fmt).format == fmt


def test_load_dataset_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="unknown dataset format"):
        load_dataset(DB, format="parquet")
    with pytest.raises(InputError, match="no such file"):
        load_dataset(tmp_path / "missing")
    with pytest.raises(InputError, match="cannot tell"):
        load_dataset(tmp_path)
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    _write(mixed / "a.jsonl", [_db_query()])
    _write(mixed / "b.jsonl", [{"id": "1", "input": "q", "passages": [], "output": []}])
    with pytest.raises(InputError, match="several dataset formats"):
        load_dataset(mixed)
    with pytest.raises(InputError, match="passages file"):
        load_dataset(CQ / "passages.tsv")
    odd = _write(tmp_path / "odd.jsonl", [{"foo": 1}])
    with pytest.raises(InputError, match="cannot tell"):
        load_dataset(odd)


def test_normalize_language() -> None:
    assert [normalize_language(x) for x in ("EN", "english", "zh-CN", "zh_Hans", "中文", "fr")] == [
        "en",
        "en",
        "zh",
        "zh",
        "zh",
        "fr",
    ]


# ---------------------------------------------------------------------------------- demo


def test_load_demo() -> None:
    demo = resources.files("ragtriage.data").joinpath("demo")
    assert demo.joinpath("documents.jsonl").is_file()
    ds = load_demo()
    assert (ds.name, ds.format) == ("demo", "generic")
    assert ds.documents
    ids = {d.doc_id for d in ds.documents}
    assert all(set(e.doc_ids) <= ids for e in ds.examples)


# ---------------------------------------------------------------------------------- fuzz

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=12,
)
_valid_lines = [
    *[json.loads(x) for x in (DB / "dragonball_docs.jsonl").read_text("utf-8").splitlines()[:2]],
    *[json.loads(x) for x in (DB / "dragonball_queries.jsonl").read_text("utf-8").splitlines()[:3]],
    *[json.loads(x) for x in (CQ / "clapnq_dev_answerable.jsonl").read_text("utf-8").splitlines()],
]


@st.composite
def _mutated(draw: st.DrawFn) -> Any:
    """A valid line of some format with random keys replaced, removed or added."""
    obj = json.loads(json.dumps(draw(st.sampled_from(_valid_lines))))
    for _ in range(draw(st.integers(0, 3))):
        target = obj
        if isinstance(obj, dict) and obj and draw(st.booleans()):
            key = draw(st.sampled_from(sorted(obj)))
            if isinstance(obj[key], dict) and obj[key]:
                target = obj[key]
        if not isinstance(target, dict) or not target:
            break
        key = draw(st.sampled_from(sorted(target)))
        action = draw(st.sampled_from(["drop", "replace", "add"]))
        if action == "drop":
            del target[key]
        elif action == "replace":
            target[key] = draw(_json)
        else:
            target[draw(st.text(max_size=5))] = draw(_json)
    return obj


_line = st.one_of(
    st.text(max_size=40),
    _json.map(lambda v: json.dumps(v, ensure_ascii=False)),
    _mutated().map(lambda v: json.dumps(v, ensure_ascii=False)),
)


def _loaders(d: Path, p: Path) -> list[Any]:
    return [
        lambda: read_dragonball_docs(p),
        lambda: read_dragonball_queries(p),
        lambda: load_clapnq(questions=p),
        lambda: load_clapnq(questions=_write(d / "q.jsonl", []), passages=p),
        lambda: load_generic(documents=p),
        lambda: load_generic(documents=DB.parent / "generic" / "documents.jsonl", examples=p),
        lambda: load_dataset(p),
    ]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=st.lists(_line, min_size=1, max_size=4))
def test_fuzz_readers_load_or_raise_input_error(lines: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        p = d / "data.jsonl"
        p.write_text(
            "\n".join(x.replace("\n", " ").replace("\r", " ") for x in lines) + "\n",
            encoding="utf-8",
            errors="surrogatepass",
        )
        for load in _loaders(d, p):
            try:
                load()
            except InputError as err:
                assert err.path is not None or err.message


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ('{"doc_id": 1, "content": "x\\ud800y"}', "content"),
        ('{"doc_id": 1, "content": "x", "meta": {"k\\udfff": 1}}', "meta.k\udfff"),
        ('{"doc_id": ' + "9" * 5000 + ', "content": "x"}', None),
        ("[" * 100_000 + "]" * 100_000, None),
        ('{"doc_id": NaN, "content": "x"}', "doc_id"),
        ('{"doc_id": 1e400, "content": "x"}', "doc_id"),
        ('{"doc_id": true, "content": "x"}', "doc_id"),
    ],
)
def test_pathological_lines_are_input_errors(tmp_path: Path, line: str, field: str | None) -> None:
    path = tmp_path / "docs.jsonl"
    path.write_text("\n" + line + "\n", encoding="utf-8", errors="surrogatepass")
    with pytest.raises(InputError) as ei:
        read_dragonball_docs(path)
    assert (ei.value.path, ei.value.line, ei.value.field) == (str(path), 2, field)
