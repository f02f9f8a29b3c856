"""Judge vs human agreement: reading labels, κ statistics, confusion matrices."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console

from _reportdata import make_diag
from ragtriage.calibrate import agreement, cohen_kappa, fleiss_kappa, read_labels
from ragtriage.cli import main
from ragtriage.errors import InputError
from ragtriage.jsonl import write_jsonl
from ragtriage.records import AnswerLabel, Diagnosis, ErrorType, Stage
from ragtriage.report.terminal import render_agreement

E = ErrorType

LABELS_CSV = """example_id,stage,types,annotator
ex1,retrieval,E4,A
ex1,retrieval,E5,B
ex1,chunking,E3,C
ex2,generation,E13,A
ex2,generation,E13;E10,B
ex2,generation,E13,C
ex3,reranking,E7,A
ex3,retrieval,E4,B
ex3,reranking,E7,C
ex4,chunking,E3,A
ex4,retrieval,E4,B
ex4,generation,E13,C
ex5,generation,E12,A
ex5,generation,E12,B
ex5,generation,E12,C
ex6,retrieval,E4,A
ex6,retrieval,E4,B
ex6,retrieval,E4,C
"""


def _diagnoses() -> list[Diagnosis]:
    return [
        make_diag("ex1", stage=Stage.RETRIEVAL, mode=E.E4, second=E.E5),
        make_diag("ex2", stage=Stage.RETRIEVAL, mode=E.E4, second=E.E5),
        make_diag("ex3", stage=Stage.RERANKING, mode=E.E8, second=E.E7),
        make_diag("ex4", stage=Stage.GENERATION, mode=E.E13, second=E.E10),
        make_diag("ex5", answer_label=AnswerLabel.CORRECT),
        # ex6 has no diagnosis
    ]


def _labels_file(tmp_path: Path, text: str = LABELS_CSV, name: str = "labels.csv") -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


# ---------------------------------------------------------------- κ statistics


def test_fleiss_kappa_hand_computed() -> None:
    # P_i = 1, 1, 0 → P̄ = 2/3; p = (1/2, 1/2) → P_e = 1/2; κ = (2/3 − 1/2)/(1/2) = 1/3
    k = fleiss_kappa([[2, 0], [0, 2], [1, 1]])
    assert k.value == pytest.approx(1 / 3) and k.n == 3


def test_fleiss_kappa_classic_table() -> None:
    # Fleiss (1971)-style worked example: 10 items, 14 raters, 5 categories → κ ≈ 0.210
    table = [
        [0, 0, 0, 0, 14],
        [0, 2, 6, 4, 2],
        [0, 0, 3, 5, 6],
        [0, 3, 9, 2, 0],
        [2, 2, 8, 1, 1],
        [7, 7, 0, 0, 0],
        [3, 2, 6, 3, 0],
        [2, 5, 3, 2, 2],
        [6, 5, 2, 1, 0],
        [0, 2, 2, 3, 7],
    ]
    assert fleiss_kappa(table).value == pytest.approx(0.2099, abs=1e-3)


def test_fleiss_kappa_with_varying_rater_counts() -> None:
    # P = (1, 0) → P̄ = 0.5; p = (4/5, 1/5) → P_e = 0.68; κ = (0.5 − 0.68)/0.32
    k = fleiss_kappa([[3, 0], [1, 1], [1, 0]])  # the single-rating item is skipped
    assert k.value == pytest.approx(-0.5625) and k.n == 2


def test_fleiss_kappa_undefined_cases() -> None:
    one = fleiss_kappa([[3, 0], [2, 0]])
    assert one.value is None and one.reason and "one category" in one.reason
    none = fleiss_kappa([[1, 0]])
    assert none.value is None and none.n == 0


def test_cohen_kappa_hand_computed_and_undefined() -> None:
    # p_o = 3/4, p_e = 1/2 → κ = 1/2
    assert cohen_kappa(["x", "x", "y", "y"], ["x", "y", "y", "y"]).value == pytest.approx(0.5)
    single = cohen_kappa(["x", "x"], ["x", "x"])
    assert single.value is None and single.reason
    empty = cohen_kappa([], [])
    assert empty.value is None and empty.n == 0


# ---------------------------------------------------------------- agreement


def test_agreement_metrics(tmp_path: Path) -> None:
    rep = agreement(_diagnoses(), read_labels(_labels_file(tmp_path)))
    assert rep.annotators == ["A", "B", "C"]
    assert (rep.label_rows, rep.labeled_examples) == (18, 6)
    assert rep.missing_diagnosis == ["ex6"]
    assert rep.judge_confirmed_failing == 4 and rep.judge_confirmed_share == 0.8
    assert rep.judge_no_stage == 1
    assert rep.no_consensus == 1  # ex4: chunking / retrieval / generation
    assert rep.stage_compared == 3
    assert rep.stage_agreement == pytest.approx(2 / 3)
    # rows human, columns judge
    conf = {
        (h, j): rep.stage_confusion.matrix[i][k]
        for i, h in enumerate(rep.stage_confusion.labels)
        for k, j in enumerate(rep.stage_confusion.labels)
    }
    assert conf[("retrieval", "retrieval")] == 1
    assert conf[("generation", "retrieval")] == 1
    assert conf[("reranking", "reranking")] == 1
    assert sum(conf.values()) == 3
    assert rep.stage_kappa.value == pytest.approx(0.5)
    # types: ex1 hit (E4 ∈ {E4, E5}); ex2 miss; ex3 top-2 hit; ex4 hit via all annotators
    assert rep.type_compared == 4
    assert rep.type_accuracy == 0.5
    assert rep.type_top2_accuracy == 0.75
    tconf = rep.type_confusion
    i13 = tconf.labels.index("E13")
    i4 = tconf.labels.index("E4")
    assert tconf.matrix[i13][i4] == 1  # ex2: human E13, judge E4
    # Fleiss over the 6 examples × 3 annotators = 46/109 (see the module notes)
    assert rep.fleiss_stage.value == pytest.approx(46 / 109)


def test_annotator_vs_judge_seed001(tmp_path: Path) -> None:
    rep = agreement(_diagnoses(), read_labels(_labels_file(tmp_path)))
    by = {c.annotator: c for c in rep.annotator_vs_judge}
    # C vs majority(A, B) on ex1 (retrieval) and ex2 (generation): κ = 1/3; judge κ = 0
    c = by["C"]
    assert c.n == 2
    assert c.kappa_annotator.value == pytest.approx(1 / 3)
    assert c.kappa_judge.value == pytest.approx(0.0)
    assert c.relative_drop == pytest.approx(1.0)
    # A: only ex2 has a majority among B, C → a single class: undefined, with a reason
    a = by["A"]
    assert a.n == 1 and a.kappa_annotator.value is None and a.kappa_annotator.reason


def test_single_annotator_without_column(tmp_path: Path) -> None:
    p = _labels_file(tmp_path, "example_id,stage,types\nex1,retrieval,E4\nex2,generation,\n")
    labels = read_labels(p)
    assert [lab.annotator for lab in labels] == ["annotator", "annotator"]
    assert labels[1].types == ()
    rep = agreement(_diagnoses(), labels)
    assert rep.fleiss_stage.value is None and rep.fleiss_stage.reason
    assert rep.annotator_vs_judge == []
    assert rep.no_human_types == 1
    assert rep.type_accuracy == 1.0 and rep.type_compared == 1


def test_jsonl_labels(tmp_path: Path) -> None:
    rows = [
        {"example_id": "ex1", "stage": "Retriever", "types": ["e4", "Low Relevance"]},
        {"example_id": "ex2", "stage": "generation", "types": "E13; 10", "annotator": "x"},
    ]
    p = tmp_path / "l.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    labels = read_labels(p)
    assert labels[0].stage is Stage.RETRIEVAL and labels[0].types == (E.E4, E.E5)
    assert labels[1].types == (E.E13, E.E10) and labels[1].annotator == "x"


@pytest.mark.parametrize(
    ("text", "line", "field"),
    [
        ("example_id,stage,types\nex1,retrieval,E4\nex2,nowhere,E4\n", 3, "stage"),
        ("example_id,stage,types\nex1,retrieval,E99\n", 2, "types"),
        ("example_id,stage,types\nex1,generation,E4\n", 2, "types"),  # E4 is a retrieval type
        ("example_id,stage,types\n,retrieval,E4\n", 2, "example_id"),
        ("example_id,stage\nex1,retrieval\n", 2, "types"),
        ("example_id,stage,types\nex1,retrieval,E4\nex1,retrieval,E5\n", 3, "example_id"),
        ("example_id,stage,types\nex1,retrieval,E4,extra\n", 2, "row"),
    ],
)
def test_bad_csv_rows_name_file_line_field(
    tmp_path: Path, text: str, line: int, field: str
) -> None:
    p = _labels_file(tmp_path, text)
    with pytest.raises(InputError) as exc:
        read_labels(p)
    assert (exc.value.path, exc.value.line, exc.value.field) == (str(p), line, field)


def test_bad_jsonl_row(tmp_path: Path) -> None:
    p = tmp_path / "l.jsonl"
    p.write_text('{"example_id": "a", "stage": "retrieval", "types": 3}\n', encoding="utf-8")
    with pytest.raises(InputError) as exc:
        read_labels(p)
    assert (exc.value.line, exc.value.field) == (1, "types")


def test_empty_labels_file(tmp_path: Path) -> None:
    with pytest.raises(InputError):
        read_labels(_labels_file(tmp_path, "example_id,stage,types\n"))


def test_render_agreement() -> None:
    from ragtriage.calibrate.agreement import HumanLabel

    labels = [
        HumanLabel(example_id="ex1", stage=Stage.RETRIEVAL, types=(E.E4,), annotator="A", line=2)
    ]
    con = Console(record=True, width=200, color_system=None)
    render_agreement(agreement(_diagnoses(), labels), con)
    out = con.export_text()
    assert "stage agreement" in out and "100.0% (n=1)" in out
    assert "n/a (both raters used a single, identical class)" in out
    assert "Stage confusion" in out


def test_agree_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run"
    write_jsonl(run / "diagnoses.jsonl", _diagnoses())
    labels = _labels_file(tmp_path)
    with pytest.raises(SystemExit) as exc:
        main(["agree", str(run), "--labels", str(labels), "--json", str(tmp_path / "a.json")])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "κ vs the majority of the other annotators" in out
    data = json.loads((tmp_path / "a.json").read_text(encoding="utf-8"))
    assert data["stage_compared"] == 3 and data["type_top2_accuracy"] == 0.75

    bad = _labels_file(tmp_path, "example_id,stage,types\nex1,nowhere,E4\n", name="bad.csv")
    with pytest.raises(SystemExit) as exc:
        main(["agree", str(run / "diagnoses.jsonl"), "--labels", str(bad)])
    assert exc.value.code == 2
    assert f"{bad}:2:stage" in capsys.readouterr().err


# ------------------------------------------------- answer labels, splits, reliability

ANSWER_LABELS = [
    # a failure both call failing, right stage and type
    {
        "example_id": "f1",
        "answer_label": "incorrect",
        "stage": "retrieval",
        "types": ["E4"],
        "rationale": "one company missing",
        "split": "dev",
    },
    # a failure, judge right on failing but wrong stage
    {
        "example_id": "f2",
        "answer_label": "abstain",
        "stage": "generation",
        "types": ["E9"],
        "split": "dev",
    },
    # a failure the judge missed (judge says correct)
    {
        "example_id": "f3",
        "answer_label": "incorrect",
        "stage": "generation",
        "types": ["E16"],
        "split": "test",
    },
    # not failures: judge agrees on n1, calls n2 failing
    {"example_id": "n1", "answer_label": "correct", "stage": None, "types": [], "split": "test"},
    {
        "example_id": "n2",
        "answer_label": "possible_correct",
        "stage": "none",
        "types": [],
        "split": "test",
    },
]


def _answer_diagnoses() -> list[Diagnosis]:
    out = [
        make_diag("f1", stage=Stage.RETRIEVAL, mode=E.E4),
        make_diag("f2", answer_label=AnswerLabel.ABSTAIN, stage=Stage.RETRIEVAL, mode=E.E4),
        make_diag("f3", answer_label=AnswerLabel.CORRECT),
        make_diag("n1", answer_label=AnswerLabel.CORRECT),
        make_diag("n2", stage=Stage.GENERATION, mode=E.E13),
    ]
    conf = {"f1": 0.9, "f2": 0.7, "f3": 0.3, "n1": 0.85, "n2": 0.45}
    return [
        d.model_copy(
            update={"confidence": conf[d.example_id], "low_confidence": conf[d.example_id] < 0.5}
        )
        for d in out
    ]


def _answer_labels_file(tmp_path: Path) -> Path:
    p = tmp_path / "labels.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in ANSWER_LABELS) + "\n", encoding="utf-8")
    return p


def test_answer_label_agreement_and_reliability(tmp_path: Path) -> None:
    labels = read_labels(_answer_labels_file(tmp_path))
    assert labels[3].stage is None and labels[4].stage is None
    assert labels[0].answer_label is AnswerLabel.INCORRECT and labels[0].split == "dev"
    rep = agreement(_answer_diagnoses(), labels)
    # 4-class: f1 incorrect=incorrect, f2 abstain=abstain, f3 incorrect≠correct,
    # n1 correct=correct, n2 possible_correct≠incorrect
    assert (rep.answer_compared, rep.answer_agreement) == (5, pytest.approx(3 / 5))
    a = rep.answer_confusion
    assert a.matrix[a.labels.index("incorrect")][a.labels.index("correct")] == 1
    # failing: f1, f2 agree; f3 missed; n1 agrees; n2 judge failing
    assert (rep.failing_compared, rep.failing_agreement) == (5, pytest.approx(3 / 5))
    assert (rep.human_failures, rep.failures_found) == (3, 2)
    # n2 (people: possible_correct) is failed by the judge: one false failure of 2 fine answers;
    # the judge fails f1, f2, n2 (2 right of 3) and finds 2 of the 3 human failures
    assert (rep.false_failures, rep.human_not_failing) == (1, 2)
    assert rep.failing_precision == pytest.approx(2 / 3)
    assert rep.failing_recall == pytest.approx(2 / 3)
    f = rep.failing_confusion
    assert f.matrix[f.labels.index("failing")][f.labels.index("not_failing")] == 1
    assert f.matrix[f.labels.index("not_failing")][f.labels.index("failing")] == 1
    # stage only where both call failing: f1 right, f2 wrong; n2 is not compared
    assert (rep.stage_compared, rep.stage_agreement) == (2, pytest.approx(0.5))
    assert rep.type_compared == 2 and rep.type_accuracy == pytest.approx(0.5)
    # right: f1 (0.9) yes, f2 (0.7) no, f3 (0.3) no, n1 (0.85) yes, n2 (0.45) no
    r = rep.reliability
    assert r.n == 5
    bins = {round(b.lower, 1): b for b in r.bins if not b.empty}
    assert set(bins) == {0.3, 0.4, 0.7, 0.8, 0.9}
    assert r.ece == pytest.approx((0.1 + 0.7 + 0.3 + 0.15 + 0.45) / 5)
    assert rep.low_confidence == 2


def test_labels_split_filter_and_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from ragtriage.calibrate.agreement import labels_of_split

    path = _answer_labels_file(tmp_path)
    labels = read_labels(path)
    assert [lab.example_id for lab in labels_of_split(labels, "dev", path=str(path))] == [
        "f1",
        "f2",
    ]
    with pytest.raises(InputError, match="no label has split 'dev'"):
        labels_of_split(labels[2:], "dev", path=str(path))
    run = tmp_path / "run"
    write_jsonl(run / "diagnoses.jsonl", _answer_diagnoses())
    out_json = tmp_path / "a.json"
    with pytest.raises(SystemExit) as exc:
        main(["agree", str(run), "--labels", str(path), "--split", "test", "--json", str(out_json)])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "human failures found" in out and "1 of 1" not in out and "0 of 1" in out
    assert "Reliability: confidence vs diagnosis right" in out and "ECE" in out
    data = json.loads(out_json.read_text(encoding="utf-8"))
    assert data["answer_compared"] == 3
    assert data["reliability"]["n"] == 3
    assert len(data["reliability"]["bins"]) == 10


@pytest.mark.parametrize(
    ("row", "field"),
    [
        ({"example_id": "a", "answer_label": "incorrect", "stage": None, "types": []}, "stage"),
        ({"example_id": "a", "answer_label": "correct", "stage": None, "types": ["E4"]}, "types"),
        ({"example_id": "a", "answer_label": "great", "stage": None, "types": []}, "answer_label"),
        ({"example_id": "a", "stage": None, "types": []}, "stage"),
        ({"example_id": "a", "answer_label": "correct", "split": 3}, "split"),
    ],
)
def test_bad_answer_label_rows(tmp_path: Path, row: dict[str, object], field: str) -> None:
    p = tmp_path / "l.jsonl"
    p.write_text(json.dumps(row) + "\n", encoding="utf-8")
    with pytest.raises(InputError) as exc:
        read_labels(p)
    assert (exc.value.line, exc.value.field) == (1, field)


def test_csv_with_answer_label_and_empty_stage(tmp_path: Path) -> None:
    p = _labels_file(
        tmp_path,
        "example_id,answer_label,stage,types,rationale,split\n"
        "n1,correct,,,fine,dev\nf1,incorrect,retrieval,E4,missing,test\n",
    )
    labels = read_labels(p)
    assert labels[0].stage is None and labels[0].split == "dev"
    assert labels[1].stage is Stage.RETRIEVAL
