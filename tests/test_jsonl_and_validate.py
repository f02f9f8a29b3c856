from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragtriage.errors import InputError
from ragtriage.formats import KINDS, detect_kind, json_schema, validate_file
from ragtriage.jsonl import (
    DoneScan,
    append_jsonl,
    iter_json_lines,
    read_done_ids,
    read_records,
    scan_done_ids,
    write_jsonl,
)
from ragtriage.records import Document, Example

ROOT = Path(__file__).resolve().parents[1]


def _ragtriage(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ragtriage", *args], capture_output=True, text=True, check=False
    )


def test_write_then_read_round_trip(tmp_path: Path) -> None:
    docs = [Document(doc_id=f"d{i}", text=f"text {i}", title=None) for i in range(5)]
    path = tmp_path / "documents.jsonl"
    assert write_jsonl(path, docs) == 5
    assert list(read_records(path, Document)) == docs
    assert validate_file(path, "documents") == 5


def test_validate_cli_names_file_line_and_field(tmp_path: Path) -> None:
    path = tmp_path / "examples.jsonl"
    good = {"example_id": "e1", "query": "Who?", "answer": "Ann", "doc_ids": ["d1"]}
    bad = {"example_id": "e2", "query": "Who?", "answer": "Ann", "answerable": "perhaps"}
    path.write_text(json.dumps(good) + "\n\n" + json.dumps(bad) + "\n", encoding="utf-8")
    proc = _ragtriage("validate", str(path))
    assert proc.returncode == 2
    assert f"{path}:3:answerable" in proc.stderr
    assert "bool" in proc.stderr


def test_validate_cli_ok_and_kind_detection(tmp_path: Path) -> None:
    path = tmp_path / "mine.jsonl"
    path.write_text(json.dumps({"doc_id": "d", "text": "t"}) + "\n", encoding="utf-8")
    assert detect_kind(path) == "documents"
    proc = _ragtriage("validate", str(path))
    assert proc.returncode == 0, proc.stderr
    assert "ok (1 documents)" in proc.stdout


def test_validate_names_what_it_expects_and_points_other_tools_files_to_import(
    tmp_path: Path,
) -> None:
    """A RAGChecker or RAGAS file is not one of ragtriage's record files: the error says
    what `validate` checks (JSON Lines of a schema) and which `ragtriage import FORMAT`
    reads the file; a record file's own bad line further down gets no such note."""
    fix = ROOT / "tests" / "fixtures" / "import"
    for src, fmt in (
        (fix / "ragchecker_input.json", "ragchecker"),
        (fix / "ragchecker_output.json", "ragchecker"),
        (fix / "ragas_v01.jsonl", "ragas"),
        (fix / "deepeval.json", "deepeval"),
        (fix / "langfuse_traces.json", "langfuse"),
        (fix / "openinference_spans.jsonl", "openinference"),
    ):
        proc = _ragtriage("validate", str(src))
        assert proc.returncode == 2, proc.stdout
        assert "`ragtriage validate` checks ragtriage's own record files: JSON Lines" in proc.stderr
        assert f"`ragtriage import {fmt} {src} --out RUN`" in proc.stderr
    # a file named for its kind that is not of it: that kind's schema is named
    traces = tmp_path / "traces.jsonl"
    traces.write_text(json.dumps({"trace_id": "t1", "answer": "x"}) + "\n", encoding="utf-8")
    proc = _ragtriage("validate", str(traces))
    assert proc.returncode == 2
    assert f"{traces}:1:example: Field required" in proc.stderr
    assert "one traces record per line (schema: `ragtriage schema traces`" in proc.stderr
    assert "ragtriage import" not in proc.stderr  # nothing suggests another tool's format
    # a documents file whose second record is bad: the error alone
    docs = tmp_path / "documents.jsonl"
    docs.write_text('{"doc_id": "d", "text": "t"}\n{"doc_id": ""}\n', encoding="utf-8")
    proc = _ragtriage("validate", str(docs))
    assert proc.returncode == 2 and f"{docs}:2:" in proc.stderr
    assert "checks ragtriage's own record files" not in proc.stderr


def test_invalid_json_and_non_object_lines(tmp_path: Path) -> None:
    path = tmp_path / "documents.jsonl"
    path.write_text('{"doc_id": "d", "text": "t"}\n{"doc_id": \n', encoding="utf-8")
    with pytest.raises(InputError) as info:
        validate_file(path, "documents")
    assert info.value.line == 2 and info.value.path == str(path)
    path.write_text("[1, 2]\n", encoding="utf-8")
    with pytest.raises(InputError, match="JSON object"):
        validate_file(path, "documents")


def test_a_byte_order_mark_is_skipped(tmp_path: Path) -> None:
    """Windows editors start UTF-8 files with a BOM; files, configs and TSVs still load."""
    from ragtriage.config import load_config
    from ragtriage.data import load_clapnq, load_dataset

    bom = "\ufeff"
    docs = tmp_path / "documents.jsonl"
    docs.write_text(bom + '{"doc_id": "a", "text": "Acme was founded in 1999."}\n', "utf-8")
    assert validate_file(docs, detect_kind(docs)) == 1
    assert [d.doc_id for d in load_dataset(tmp_path).documents] == ["a"]
    cfg = tmp_path / "p.yaml"
    cfg.write_text(bom + "name: with-bom\nretrieval: {mode: bm25}\n", "utf-8")
    assert load_config(cfg, env={}).retrieval.mode == "bm25"
    toml = tmp_path / "p.toml"
    toml.write_text(bom + 'name = "with-bom"\n', "utf-8")
    assert load_config(toml, env={}).name == "with-bom"
    passages = tmp_path / "passages.tsv"
    passages.write_text(bom + "id\ttext\ttitle\n7\tAcme was founded in 1999.\tAcme\n", "utf-8")
    qs = tmp_path / "q.jsonl"
    qs.write_text(
        json.dumps(
            {
                "id": "q",
                "input": "when was acme founded",
                "passages": [{"title": "Acme", "text": "Acme was founded in 1999."}],
                "output": [{"answer": "In 1999.", "selected_sentences": []}],
            }
        )
        + "\n",
        "utf-8",
    )
    assert load_clapnq(questions=qs, passages=passages).examples[0].doc_ids == ["7"]


def test_missing_file_is_input_error(tmp_path: Path) -> None:
    proc = _ragtriage("validate", str(tmp_path / "nope.jsonl"), "--kind", "documents")
    assert proc.returncode == 2
    assert "nope.jsonl" in proc.stderr


def test_duplicate_ids_are_reported_with_both_lines(tmp_path: Path) -> None:
    path = tmp_path / "documents.jsonl"
    write_jsonl(path, [Document(doc_id="a", text="1"), Document(doc_id="a", text="2")])
    with pytest.raises(InputError, match="first seen on line 1") as info:
        validate_file(path, "documents")
    assert info.value.line == 2 and info.value.field == "doc_id"


def test_resumable_append_drops_torn_tail(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    for i in range(3):
        append_jsonl(path, {"trace_id": f"t{i}"})
    with path.open("a", encoding="utf-8") as fh:
        fh.write('{"trace_id": "t3", "answ')  # crash mid-line
    assert read_done_ids(path, "trace_id") == {"t0", "t1", "t2"}
    append_jsonl(path, {"trace_id": "t3"})
    lines = path.read_text(encoding="utf-8").splitlines()
    assert [json.loads(x)["trace_id"] for x in lines] == ["t0", "t1", "t2", "t3"]


def _padded_line(i: int) -> bytes:
    """One ~200-byte JSONL record."""
    return json.dumps({"doc_id": f"d{i}", "text": "x" * 170}).encode() + b"\n"


def test_a_bad_byte_deep_in_a_large_file_names_its_exact_line(tmp_path: Path) -> None:
    lines = [_padded_line(i) for i in range(200)]
    lines[149] = lines[149].replace(b"xxxx", b"x\xffxx", 1)  # line 150, ~30 KB in
    path = tmp_path / "documents.jsonl"
    path.write_bytes(b"".join(lines))
    with pytest.raises(InputError, match=r"not valid UTF-8 \(invalid start byte\)") as info:
        list(iter_json_lines(path))
    assert (info.value.path, info.value.line) == (str(path), 150)
    # with a BOM in front, line numbers do not move; a BOM later on is not skipped
    path.write_bytes(b"\xef\xbb\xbf" + b"".join(lines))
    with pytest.raises(InputError) as info:
        list(iter_json_lines(path))
    assert info.value.line == 150
    path.write_bytes(_padded_line(0) + b"\xef\xbb\xbf" + _padded_line(1))
    with pytest.raises(InputError, match="not valid JSON") as info:
        list(iter_json_lines(path))
    assert info.value.line == 2


def test_line_numbers_follow_crlf_and_lone_cr_breaks(tmp_path: Path) -> None:
    """Lines break at LF, CRLF and a lone CR, as in text mode."""
    path = tmp_path / "documents.jsonl"
    path.write_bytes(b'{"doc_id": "a"}\r\n\r\n{"doc_id": "b"}\r{"doc_id": "c"}\n{"doc_id": "d"}\r')
    assert [(n, o["doc_id"]) for n, o in iter_json_lines(path)] == [
        (1, "a"),
        (3, "b"),
        (4, "c"),
        (5, "d"),
    ]
    path.write_bytes(b'{"doc_id": "a"}\r{"doc_id": "b"}\r{"doc_id": "\xff"}\n')
    with pytest.raises(InputError, match="UTF-8") as info:
        list(iter_json_lines(path))
    assert info.value.line == 3


def test_json_error_message_names_the_column_once(tmp_path: Path) -> None:
    path = tmp_path / "documents.jsonl"
    path.write_text('{"doc_id": "d"}\n{"doc_id": "d2", "text": "a\tb"}\n', encoding="utf-8")
    with pytest.raises(InputError) as info:
        list(iter_json_lines(path))
    assert info.value.line == 2
    assert info.value.message == "not valid JSON: Invalid control character at column 28"
    path.write_text('{"doc_id": }\n', encoding="utf-8")
    with pytest.raises(InputError) as info:
        list(iter_json_lines(path))
    assert info.value.message == "not valid JSON: Expecting value at column 12"


def test_resume_keeps_valid_lines_after_a_corrupt_middle_line(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    good = [json.dumps({"trace_id": f"t{i}"}).encode() + b"\n" for i in range(6)]
    path.write_bytes(
        b"".join(good[:2])
        + b'{"trace_id": "lost", "ans\n'  # line 3: torn by an old crash, then appended to
        + good[2]
        + b'{"trace_id": "\xff"}\n'  # line 5: not UTF-8
        + b"\n"  # line 6: blank, harmless
        + good[3]
        + b'{"no_id": 1}\n'  # line 8: no id
        + b"".join(good[4:])
        + b'{"trace_id": "t6", "ans'  # line 11: torn last line
    )
    scan = scan_done_ids(path, "trace_id")
    assert scan == DoneScan(
        ids=frozenset({f"t{i}" for i in range(6)}),
        dropped_lines=(3, 5, 8, 11),
        corrupt_lines=(3, 5, 8),
    )
    assert path.read_bytes() == b"".join(good[:3]) + b"\n" + b"".join(good[3:])
    assert read_done_ids(path, "trace_id") == {f"t{i}" for i in range(6)}
    append_jsonl(path, {"trace_id": "t6"})
    assert [o["trace_id"] for _, o in iter_json_lines(path)] == [f"t{i}" for i in range(7)]


def test_resume_drops_only_a_torn_last_line_without_reporting_it(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    for i in range(3):
        append_jsonl(path, {"trace_id": f"t{i}"})
    with path.open("ab") as fh:
        fh.write(b'{"trace_id": "t3", "answ\n\n')  # invalid last line, blank lines after it
    scan = scan_done_ids(path, "trace_id")
    assert scan.ids == {"t0", "t1", "t2"}
    assert (scan.dropped_lines, scan.corrupt_lines) == ((4,), ())
    assert [o["trace_id"] for _, o in iter_json_lines(path)] == ["t0", "t1", "t2"]


def test_resume_leaves_an_intact_file_untouched(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    body = b"\xef\xbb\xbf" + b"".join(
        json.dumps({"trace_id": f"t{i}"}).encode() + b"\n" for i in range(3)
    )
    path.write_bytes(body)
    before = path.stat()
    scan = scan_done_ids(path, "trace_id")
    assert scan == DoneScan(ids=frozenset({"t0", "t1", "t2"}))  # the BOM line counts
    after = path.stat()
    assert path.read_bytes() == body
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert scan_done_ids(tmp_path / "missing.jsonl", "trace_id") == DoneScan(frozenset())
    assert not (tmp_path / "missing.jsonl").exists()


def test_resume_keeps_a_complete_last_line_missing_its_newline(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    path.write_bytes(b'{"trace_id": "t0"}\n{"trace_id": "t1"}')
    assert scan_done_ids(path, "trace_id") == DoneScan(ids=frozenset({"t0", "t1"}))
    append_jsonl(path, {"trace_id": "t2"})
    assert [o["trace_id"] for _, o in iter_json_lines(path)] == ["t0", "t1", "t2"]


def test_committed_schemas_match_the_records() -> None:
    for kind in KINDS:
        committed = json.loads((ROOT / "docs" / "schemas" / f"{kind}.schema.json").read_text())
        assert committed == json_schema(kind), (
            f"docs/schemas/{kind}.schema.json is stale: run `ragtriage schema all --out docs/schemas`"
        )


_json_scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)
_json_values = st.recursive(
    _json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=10,
)
_record_like = st.fixed_dictionaries(
    {},
    optional={
        "doc_id": _json_values,
        "text": _json_values,
        "example_id": _json_values,
        "query": _json_values,
        "answer": _json_values,
        "answerable": _json_values,
        "trace_id": _json_values,
        "example": _json_values,
        "retrieved": _json_values,
        "schema": _json_values,
    },
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    lines=st.lists(
        st.one_of(
            _record_like.map(json.dumps),
            st.text(max_size=40),
            st.binary(max_size=20).map(lambda b: b.decode("latin-1")),
        ),
        min_size=1,
        max_size=5,
    ),
    kind=st.sampled_from(sorted(KINDS)),
)
def test_readers_fuzz_only_raise_input_error(tmp_path: Path, lines: list[str], kind: str) -> None:
    path = tmp_path / "fuzz.jsonl"
    path.write_text("\n".join(line.replace("\n", " ") for line in lines) + "\n", encoding="utf-8")
    try:
        validate_file(path, kind)
    except InputError as exc:
        assert exc.path == str(path)
        assert exc.line is not None and exc.line >= 1


@settings(max_examples=50, deadline=None)
@given(st.binary(min_size=1, max_size=40))
def test_non_utf8_bytes_give_input_error(
    tmp_path_factory: pytest.TempPathFactory, raw: bytes
) -> None:
    path = tmp_path_factory.mktemp("bin") / "x.jsonl"
    path.write_bytes(b'{"doc_id": "d", "text": "t"}\n' + raw + b"\xff\n")
    with pytest.raises(InputError):
        validate_file(path, "documents")


def test_example_reader_fuzz_valid_records_round_trip() -> None:
    ex = Example(example_id="e", query="q", answer="a", references=["r"], label="fact_single")
    assert Example.model_validate_json(ex.to_json()) == ex


def test_drop_records_rewrites_only_when_something_is_dropped(tmp_path: Path) -> None:
    from ragtriage.jsonl import drop_records, scan_done_ids

    path = tmp_path / "out.jsonl"
    path.write_text(
        '{"id": "a", "undetermined": true}\n{"id": "b"}\n{torn\n{"id": "c", "undetermined": true}',
        encoding="utf-8",
    )
    assert drop_records(path, "id", lambda r: r.get("undetermined") is True) == {"a", "c"}
    assert path.read_text(encoding="utf-8") == '{"id": "b"}\n{torn\n'
    before = path.stat().st_mtime_ns
    assert drop_records(path, "id", lambda r: False) == set()
    assert path.stat().st_mtime_ns == before
    scan = scan_done_ids(path, "id")
    assert scan.ids == {"b"} and scan.note(path) is None  # a torn last line is no damage
