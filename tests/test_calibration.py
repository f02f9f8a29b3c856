"""Calibration maths (calibrate/calibration.py) and a small end-to-end calibrate run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from ragtriage.calibrate.calibration import (
    NOT_FLAGGED,
    STAGE_LABELS,
    TYPE_LABELS,
    UNDETERMINED,
    Prediction,
    accuracy,
    class_scores,
    confusion_matrix,
    score_setting,
    top_k_accuracy,
)
from ragtriage.records import AnswerLabel, Diagnosis, ErrorType, Stage

# --------------------------------------------------------------------------- maths


def test_confusion_matrix_counts_and_extra_columns() -> None:
    true = ["a", "a", "b", "b", "c"]
    pred = ["a", "b", "b", UNDETERMINED, NOT_FLAGGED]
    m = confusion_matrix(true, pred, ["a", "b", "c"])
    assert m.columns == ("a", "b", "c", NOT_FLAGGED, UNDETERMINED)
    assert m.counts == ((1, 1, 0, 0, 0), (0, 1, 0, 0, 1), (0, 0, 0, 1, 0))
    assert m.count("b", UNDETERMINED) == 1 and m.count("c", "a") == 0
    assert sum(map(sum, m.counts)) == len(true)
    assert m.to_dict()["counts"] == [list(r) for r in m.counts]
    with pytest.raises(ValueError, match="not in labels"):
        confusion_matrix(["z"], ["a"], ["a"])
    with pytest.raises(ValueError, match="predictions"):
        confusion_matrix(["a"], [], ["a"])


def test_class_scores_match_hand_computed_values() -> None:
    true = ["a", "a", "a", "b", "b", "c"]
    pred = ["a", "a", "b", "b", "a", UNDETERMINED]
    scores = {s.label: s for s in class_scores(true, pred, ["a", "b", "c", "d"])}
    # a: tp 2, fp 1, fn 1
    assert scores["a"].precision == pytest.approx(2 / 3)
    assert scores["a"].recall == pytest.approx(2 / 3)
    assert scores["a"].f1 == pytest.approx(2 / 3)
    # b: tp 1, fp 1, fn 1
    assert scores["b"].precision == pytest.approx(0.5) and scores["b"].f1 == pytest.approx(0.5)
    # c: never predicted -> precision undefined, recall 0, F1 0
    assert scores["c"].precision is None
    assert scores["c"].recall == 0.0 and scores["c"].f1 == 0.0
    assert scores["c"].support == 1 and scores["c"].predicted == 0
    # d: no case and no prediction -> everything undefined, never NaN
    assert (scores["d"].precision, scores["d"].recall, scores["d"].f1) == (None, None, None)
    assert all(s.support == 0 for s in class_scores([], [], ["a"]))


def test_accuracy_and_top_k() -> None:
    assert accuracy(["a", "b", "c", "d"], ["a", "b", "x", UNDETERMINED]) == 0.5
    assert accuracy([], []) is None
    ranked = [("a", "b"), ("c", "b"), (None, None), ("d", None)]
    assert top_k_accuracy(["a", "b", "c", "e"], ranked) == 0.5
    assert top_k_accuracy([], []) is None


def test_score_setting_counts_undetermined_and_unflagged_as_wrong() -> None:
    true = [ErrorType.E1, ErrorType.E4, ErrorType.E7, ErrorType.E16, ErrorType.E16, ErrorType.E10]
    preds = [
        Prediction("chunking", "E1", "E3"),
        Prediction("chunking", "E3", "E1"),  # wrong stage, wrong type
        Prediction("reranking", "E8", "E7"),  # right stage, type only second
        Prediction("generation", "E16", None),
        Prediction(None, None, None, "not_flagged"),
        Prediction("generation", None, None, "undetermined"),  # stage found, type not
    ]
    r = score_setting("rules", "ragec", true, preds, ["i1", "i4", "i7", "i16", "i16", "i10"])
    assert r.key == "rules/ragec" and r.cases == 6
    assert r.stage_accuracy == pytest.approx(4 / 6)
    assert r.type_accuracy == pytest.approx(2 / 6)
    assert r.top2_type_accuracy == pytest.approx(3 / 6)
    assert r.outcomes == {"diagnosed": 4, "undetermined": 1, "not_flagged": 1}
    assert r.type_undetermined == 1
    assert r.stage_confusion.count("generation", NOT_FLAGGED) == 1
    assert r.stage_confusion.count("retrieval", "chunking") == 1
    assert r.type_confusion.count("E10", UNDETERMINED) == 1
    assert r.stage_confusion.labels == STAGE_LABELS and r.type_confusion.labels == TYPE_LABELS
    f1 = {s.label: s for s in r.type_scores}
    assert f1["E16"].recall == pytest.approx(0.5) and f1["E16"].precision == 1.0
    assert f1["E2"].f1 is None  # no case of E2
    assert r.by_injector["i16"] == {"cases": 2, "stage_accuracy": 0.5, "type_accuracy": 0.5}
    data = r.to_dict()
    json.dumps(data)  # JSON-ready, no NaN
    assert "NaN" not in json.dumps(data)


def _diagnosis(**kw: object) -> Diagnosis:
    base: dict[str, object] = {
        "example_id": "q",
        "trace_id": "q~1",
        "judge": "rules",
        "strategy": "ragec",
        "answer_label": AnswerLabel.INCORRECT,
        "needs_diagnosis": True,
    }
    base.update(kw)
    return Diagnosis.model_validate(base)


def test_prediction_from_diagnosis() -> None:
    p = Prediction.from_diagnosis(
        _diagnosis(stage=Stage.RETRIEVAL, error_type=ErrorType.E5, second_type=ErrorType.E4)
    )
    assert (p.stage_label, p.type_label, p.second_type, p.outcome) == (
        "retrieval",
        "E5",
        "E4",
        "diagnosed",
    )
    ok = Prediction.from_diagnosis(
        _diagnosis(answer_label=AnswerLabel.CORRECT, needs_diagnosis=False)
    )
    assert (ok.stage_label, ok.type_label) == (NOT_FLAGGED, NOT_FLAGGED)
    und = Prediction.from_diagnosis(
        _diagnosis(stage=Stage.GENERATION, undetermined=True, undetermined_reason="votes: none")
    )
    assert (und.stage_label, und.type_label, und.outcome) == (
        "generation",
        UNDETERMINED,
        "undetermined",
    )


# --------------------------------------------------------------------------- end to end


async def test_calibration_run_end_to_end_with_the_rules_judge(tmp_path: Path) -> None:
    from ragtriage.calibrate import PipelineParts, run_calibration, write_calibration
    from ragtriage.calibrate.inject import INJECTED_KEY, strip_label
    from ragtriage.diagnosis import Diagnoser
    from ragtriage.records import Trace
    from test_inject import tiny_config, tiny_dataset

    ds = tiny_dataset()
    parts = PipelineParts.build(tiny_config(), ds)
    result = await run_calibration(
        parts,
        ds.examples,
        judges=("rules",),
        strategies=("ragec", "single-step", "stage-sequential"),
        seed=0,
    )
    assert result.cases
    assert [r.key for r in result.reports] == [
        "rules/ragec",
        "rules/single-step",
        "rules/stage-sequential",
    ]
    for r in result.reports:
        assert r.cases == len(result.cases)
        assert sum(map(sum, r.stage_confusion.counts)) == len(result.cases)
        assert r.stage_accuracy is not None and 0.0 <= r.stage_accuracy <= 1.0
    paths = write_calibration(result, tmp_path / "cal")
    report = json.loads(paths["calibration"].read_text(encoding="utf-8"))
    assert set(report["settings"]) == {r.key for r in result.reports}
    assert report["cases"] == len(result.cases)
    assert set(report["injectors"]) >= {"E1-overchunk", "E16-alter-number"}
    lines = paths["injected"].read_text(encoding="utf-8").splitlines()
    traces = [Trace.model_validate_json(line) for line in lines]
    assert len(traces) == len(result.cases)
    assert all(INJECTED_KEY in t.metadata for t in traces)
    diag_lines = paths["diagnoses"].read_text(encoding="utf-8").splitlines()
    assert len(diag_lines) == 3 * len(result.cases)
    # the label is invisible to the diagnoser: with or without it, the same diagnosis
    diagnoser = Diagnoser("rules", "ragec")
    for t in traces[:8]:
        with_label = await diagnoser.diagnose(t)
        without = await diagnoser.diagnose(strip_label(t))
        assert with_label == without


def tiny_calibration_inputs(tmp_path: Path) -> tuple[Path, Path]:
    """A dataset directory and a pipeline file for the tiny calibration corpus."""
    from ragtriage.jsonl import write_jsonl
    from test_inject import tiny_config, tiny_dataset

    ds = tiny_dataset()
    data = tmp_path / "data"
    data.mkdir()
    write_jsonl(data / "documents.jsonl", ds.documents)
    write_jsonl(data / "examples.jsonl", ds.examples)
    cfg = tmp_path / "pipeline.yaml"
    cfg.write_text(yaml.safe_dump(tiny_config().model_dump(mode="json")), encoding="utf-8")
    return data, cfg


def calibrate_cli(data: Path, cfg: Path, out: Path, *extra: str) -> None:
    """``ragtriage calibrate`` with the rules judge and the hash embedder; must exit 0."""
    from ragtriage.cli import main

    args = ["--data", str(data), "--config", str(cfg), "--embedder", "hash"]
    with pytest.raises(SystemExit) as exc:
        main(["calibrate", *args, "--judge", "rules", "--out", str(out), "--no-progress", *extra])
    assert exc.value.code in (0, None)


def test_calibrate_cli_writes_the_report(tmp_path: Path) -> None:
    data, cfg = tiny_calibration_inputs(tmp_path)
    out = tmp_path / "out"
    calibrate_cli(data, cfg, out, "--strategy", "ragec")
    report = json.loads((out / "calibration.json").read_text(encoding="utf-8"))
    assert list(report["settings"]) == ["rules/ragec"]
    assert (out / "injected_traces.jsonl").stat().st_size > 0
    assert (out / "base_traces.jsonl").is_file()


def test_calibrate_cli_rejects_bad_options(tmp_path: Path) -> None:
    from ragtriage.cli import main

    for args in (["--judge", "oracle"], ["--strategy", "best"], ["--answer-mode", "x"]):
        with pytest.raises(SystemExit) as exc:
            main(["calibrate", "--out", str(tmp_path), *args])
        assert exc.value.code == 2


async def test_llm_judge_setting_runs_on_a_scripted_llm() -> None:
    from ragtriage.calibrate import PipelineParts, run_calibration
    from ragtriage.llm import LLMRunner, ScriptedLLM
    from test_inject import tiny_config, tiny_dataset

    ds = tiny_dataset()
    parts = PipelineParts.build(tiny_config(), ds)
    llm = ScriptedLLM("I cannot tell.")  # unreadable for every judge step
    result = await run_calibration(
        parts,
        ds.examples[:1],
        judges=("llm",),
        strategies=("ragec",),
        judge_llm=LLMRunner(llm),
    )
    assert result.cases and llm.requests
    (report,) = result.reports
    assert report.key == "llm/ragec"
    # an unreadable answer evaluation is undetermined, counted, never dropped
    assert report.outcomes["undetermined"] == len(result.cases)
    assert report.stage_accuracy == 0.0


def test_calibrate_cli_llm_judge_needs_an_endpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragtriage.cli import main

    for var in ("RAGTRIAGE_LLM_BASE_URL", "RAGTRIAGE_LLM_MODEL"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(SystemExit) as exc:
        main(["calibrate", "--judge", "llm", "--out", str(tmp_path)])
    assert exc.value.code == 2
