"""Before/after comparison (seed 000 Table 2 "Impr.") and CI gates."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

from _reportdata import ADV_GEN, ADV_RERANK, ADV_RETRIEVE, make_diag, sample_records, write_run
from ragtriage.cli import main
from ragtriage.errors import InputError
from ragtriage.records import AnswerLabel, Diagnosis, ErrorType, Stage
from ragtriage.report import compare_summaries, evaluate_gate, parse_gate, summarize
from ragtriage.report.compare import Comparison, config_changes
from ragtriage.report.terminal import render_comparison
from ragtriage.store import RunStore, load_run_dir

E = ErrorType


def _after() -> list[Diagnosis]:
    """Run B: q6 (reranking, E7) and q9 (undetermined stage) are fixed; q8 still fails."""
    _, diags = sample_records()
    out: list[Diagnosis] = []
    for d in diags:
        if d.example_id in ("q6", "q9"):
            out.append(make_diag(d.example_id, answer_label=AnswerLabel.CORRECT, label=d.label))
        elif d.example_id == "q7":
            out.append(
                make_diag(
                    "q7",
                    stage=Stage.GENERATION,
                    mode=E.E16,
                    second=E.E13,
                    advice=[ADV_GEN],
                    label="fact",
                )
            )
        else:
            out.append(d)
    return out


def _comparison() -> Comparison:
    _, before = sample_records()
    return compare_summaries(
        summarize(before),
        summarize(_after()),
        name_a="A",
        name_b="B",
        config_a={"rerank": {"top_k": 5}, "llm": {"api_key": "secret", "model": "m"}},
        config_b={"rerank": {"top_k": 10}, "llm": {"api_key": "other", "model": "m"}},
    )


def test_deltas_per_stage_type_and_accuracy() -> None:
    c = _comparison()
    assert c.accuracy_a == 5 / 9 and c.accuracy_b == 7 / 9
    assert c.accuracy_delta == pytest.approx(2 / 9)
    assert c.incorrect_share_delta == pytest.approx(-2 / 9)
    assert (c.failing_a, c.failing_b) == (4, 2)
    st = {s.stage: s for s in c.stages}
    assert (st[Stage.RERANKING].a, st[Stage.RERANKING].b, st[Stage.RERANKING].delta) == (1, 0, -1)
    assert st[Stage.RETRIEVAL].delta == 0
    assert st[Stage.RETRIEVAL].share_b == 0.5
    ty = {t.error_type: t for t in c.types}
    assert (ty[E.E7].a, ty[E.E7].b, ty[E.E7].delta) == (1, 0, -1)
    assert ty[E.E7].second_a == 0 and ty[E.E8].second_a == 1
    assert (c.mode_total_a, c.mode_total_b) == (3, 2)
    assert (c.undetermined_a, c.undetermined_b) == (2, 1)


def test_advice_followed_is_advice_whose_types_dropped() -> None:
    adv = {a.text: a for a in _comparison().advice}
    # ADV_RERANK covered E7, E16, E4: 3 before, 2 after (E7 fixed)
    assert (adv[ADV_RERANK].before, adv[ADV_RERANK].after, adv[ADV_RERANK].dropped) == (3, 2, True)
    assert adv[ADV_GEN].dropped is False  # E16 still there
    assert adv[ADV_RETRIEVE].dropped is False  # E4 still there


def test_config_changes_hide_secrets() -> None:
    changes = config_changes(
        {"rerank": {"top_k": 5}, "llm": {"api_key": "s1"}},
        {"rerank": {"top_k": 10}, "llm": {"api_key": "s2"}, "new": 1},
    )
    assert [(c.key, c.a, c.b) for c in changes] == [
        ("llm.api_key", "***", "***"),
        ("new", None, 1),
        ("rerank.top_k", 5, 10),
    ]


@pytest.mark.parametrize(
    ("text", "metric", "op", "value"),
    [
        ("accuracy>=+0.02", "accuracy", ">=", 0.02),
        ("stage.retrieval<=0", "stage.retrieval", "<=", 0.0),
        ("type.E16<=0", "type.E16", "<=", 0.0),
        ("type.e3 < 1", "type.E3", "<", 1.0),
        (" incorrect_share <= -0.05 ", "incorrect_share", "<=", -0.05),
        ("failing==-2", "failing", "==", -2.0),
        ("undetermined!=.5", "undetermined", "!=", 0.5),
    ],
)
def test_parse_gate(text: str, metric: str, op: str, value: float) -> None:
    g = parse_gate(text)
    assert (g.metric, g.op, g.value) == (metric, op, value)


@pytest.mark.parametrize(
    "text",
    [
        "accuracy",
        "accuracy=>0.1",
        "stage.embedding<=0",
        "type.E17<=0",
        "type.E0<=0",
        "acc>=1",
        "accuracy>=x",
        "accuracy>=1 2",
        "",
    ],
)
def test_bad_gate_is_an_input_error(text: str) -> None:
    with pytest.raises(InputError) as exc:
        parse_gate(text)
    assert exc.value.field == "--gate"


def test_evaluate_gates() -> None:
    c = _comparison()
    ok = [
        "accuracy>=+0.2",
        "incorrect_share<=-0.2",
        "stage.reranking<=-1",
        "stage.retrieval<=0",
        "type.E7<0",
        "type.E16==0",
        "failing==-2",
    ]
    for text in ok:
        r = evaluate_gate(parse_gate(text), c)
        assert r.passed, r.message
    bad = evaluate_gate(parse_gate("accuracy>=+0.25"), c)
    assert not bad.passed
    assert bad.message == "gate accuracy>=+0.25 failed: delta of accuracy is +22.2 pp"
    assert not evaluate_gate(parse_gate("stage.retrieval<0"), c).passed


def test_gate_on_undefined_metric_fails_with_reason() -> None:
    c = compare_summaries(summarize([]), summarize(_after()))
    r = evaluate_gate(parse_gate("accuracy>=0"), c)
    assert not r.passed and r.actual is None and "undefined" in r.message


def test_render_comparison_table() -> None:
    con = Console(record=True, width=160, color_system=None)
    render_comparison(_comparison(), con)
    out = con.export_text()
    assert "Impr." in out and "2ndMode" in out
    assert "E7 Low Recall" in out
    assert "+22.2 pp" in out
    assert "dropped" in out
    assert "rerank.top_k" in out and "secret" not in out


def _runs(tmp_path: Path) -> tuple[Path, Path]:
    traces, before = sample_records()
    a = write_run(tmp_path / "a", "run-a", traces, before, config={"rerank": {"top_k": 5}})
    b = write_run(tmp_path / "b", "run-b", traces, _after(), config={"rerank": {"top_k": 10}})
    return a, b


def test_compare_cli_gates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = _runs(tmp_path)
    with pytest.raises(SystemExit) as exc:
        main(["compare", str(a), str(b), "--gate", "accuracy>=+0.02", "--gate", "type.E7<=0"])
    assert exc.value.code == 0
    out = capsys.readouterr()
    assert "gate accuracy>=+0.02 passed" in out.out

    with pytest.raises(SystemExit) as exc:
        main(["compare", str(a), str(b), "--gate", "stage.retrieval<0", "--gate", "failing<=0"])
    assert exc.value.code == 1
    err = capsys.readouterr().err
    assert "gate stage.retrieval<0 failed" in err
    assert "1 gate(s) failed: stage.retrieval<0" in err


def test_compare_cli_bad_gate_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = _runs(tmp_path)
    with pytest.raises(SystemExit) as exc:
        main(["compare", str(a), str(b), "--gate", "accuracy=>1"])
    assert exc.value.code == 2
    assert "--gate" in capsys.readouterr().err


def test_compare_cli_stored_id_against_dir(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = _runs(tmp_path)
    sp = tmp_path / "s.sqlite"
    with RunStore(sp) as store:
        store.add_run(load_run_dir(a))
    with pytest.raises(SystemExit) as exc:
        main(["compare", "run-a", str(b), "--store", str(sp), "--json", str(tmp_path / "c.json")])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "run-a → run-b" in out
    assert "rerank.top_k" in out
    assert (tmp_path / "c.json").is_file()

    with pytest.raises(SystemExit) as exc:
        main(["compare", "missing-run", str(b), "--store", str(sp)])
    assert exc.value.code == 2
