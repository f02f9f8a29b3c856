"""Evaluation metrics as diagnosis evidence (issue 11): low faithfulness supports E10,
contradicted claims their generation type; only generation-stage type votes change,
never answer labels or stages; without a scores file nothing changes. EN and ZH."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from _reportdata import write_run
from diag_helpers import make_trace
from metrics_helpers import ZH
from ragtriage.cli import main
from ragtriage.config import DiagnosisConfig
from ragtriage.diagnosis.engine import Diagnoser
from ragtriage.diagnosis.metric_evidence import (
    MetricEvidence,
    TraceMetrics,
    contradiction_type,
    read_metric_evidence,
    with_metric_evidence,
)
from ragtriage.errors import InputError
from ragtriage.records import Diagnosis, ErrorType, Trace


def _traces() -> list[Trace]:
    # generation failures: the GT chunk reached the generator, the answer misstates it
    return [
        make_trace(example_id="en", answer="Acme Corp was founded in 2005.", context=["gd_0"]),
        make_trace(
            example_id="zh",
            answer="阿克米公司成立于2005年。",
            context=["gd_0"],
            run_id="run1",
            **ZH,
        ),
        # a retrieval failure (the GT chunk never retrieved): never touched by metrics
        make_trace(example_id="ret", answer="Globex Inc was founded in 2005."),
    ]


def _diagnose(run: Path, *extra: str) -> list[dict[str, Any]]:
    with pytest.raises(SystemExit) as exc:
        main(["diagnose", str(run), "--no-progress", "--workers", "1", "--overwrite", *extra])
    assert exc.value.code == 0
    lines = (run / "diagnoses.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def test_diagnose_uses_scores_only_when_present(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run", "run1", _traces(), None)
    before = _diagnose(run)
    before_bytes = (run / "diagnoses.jsonl").read_bytes()
    with pytest.raises(SystemExit) as exc:
        main(["evaluate", str(run), "--out", str(run), "--resamples", "20", "--no-g-eval"])
    assert exc.value.code == 0
    after = _diagnose(run)
    by_id = {d["example_id"]: d for d in after}
    for b in before:
        a = by_id[b["example_id"]]
        for key in ("answer_label", "answer_rule", "stage", "needs_diagnosis", "undetermined"):
            assert a[key] == b[key]
    assert {d["example_id"]: d["stage"] for d in after} == {
        "en": "generation",
        "zh": "generation",
        "ret": "retrieval",
    }
    for eid in ("en", "zh"):
        lines = [e for e in by_id[eid]["evidence"] if e.startswith("metrics (")]
        assert len(lines) == 1, by_id[eid]["evidence"]
        assert "scores.jsonl" in lines[0] and "offline judge" in lines[0]
        assert "E15 Chronological Inconsistency" in lines[0]  # a contradicted year
        assert "E15" in by_id[eid]["votes"]
    assert by_id["ret"] == next(b for b in before if b["example_id"] == "ret")
    # the scores file moved away: byte-identical to the diagnoses without metrics
    (run / "scores.jsonl").rename(tmp_path / "scores.jsonl")
    _diagnose(run)
    assert (run / "diagnoses.jsonl").read_bytes() == before_bytes
    # named explicitly
    explicit = _diagnose(run, "--scores", str(tmp_path / "scores.jsonl"))
    assert [d["votes"] for d in explicit] == [d["votes"] for d in after]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_unsupported_claims_support_e10(lang: str) -> None:
    kw: dict[str, Any] = ZH if lang == "zh" else {}
    trace = make_trace(
        answer="阿克米公司成立于2005年。" if lang == "zh" else "Acme Corp was founded in 2005.",
        context=["gd_0"],
        **kw,
    )
    cfg = DiagnosisConfig()
    m = TraceMetrics(faithfulness=0.0, judge="llm", not_supported=2)
    ev = MetricEvidence(source="s.jsonl", by_trace={trace.trace_id: m}, by_example={})
    plain = asyncio.run(Diagnoser("rules", config=cfg).diagnose(trace))
    with_m = asyncio.run(
        Diagnoser("rules", config=cfg, judges=with_metric_evidence(cfg, ev)).diagnose(trace)
    )
    assert with_m.answer_label == plain.answer_label and with_m.stage == plain.stage
    assert plain.stage is not None and plain.stage.value == "generation"
    assert with_m.votes.count(ErrorType.E10) > plain.votes.count(ErrorType.E10)
    assert any("supports E10 Fabricated Content" in e for e in with_m.evidence)


def test_high_faithfulness_adds_nothing() -> None:
    trace = make_trace(answer="Acme Corp was founded in 2005.", context=["gd_0"])
    cfg = DiagnosisConfig()
    m = TraceMetrics(faithfulness=1.0, judge="offline", supported=1)
    ev = MetricEvidence(source="s.jsonl", by_trace={}, by_example={"q1": m})
    plain = asyncio.run(Diagnoser("rules", config=cfg).diagnose(trace))
    same = asyncio.run(
        Diagnoser("rules", config=cfg, judges=with_metric_evidence(cfg, ev)).diagnose(trace)
    )
    assert isinstance(same, Diagnosis) and same == plain


def test_contradiction_types_en_zh() -> None:
    assert contradiction_type("Acme was founded in 2005.") is ErrorType.E15
    assert contradiction_type("阿克米公司成立于2005年。") is ErrorType.E15
    assert contradiction_type("Acme employs 250 people.") is ErrorType.E16
    assert contradiction_type("公司有250名员工。") is ErrorType.E16
    assert contradiction_type("Acme sells rockets, not widgets.") is ErrorType.E13


def test_bad_scores_line_names_file_line_field(tmp_path: Path) -> None:
    p = tmp_path / "scores.jsonl"
    good = {"trace_id": "t", "example_id": "e", "scores": {"faithfulness": {"value": 0.5}}}
    bad = {**good, "claims": [{"claim": "x", "verdict": "maybe"}]}
    p.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n", encoding="utf-8")
    with pytest.raises(InputError) as exc:
        read_metric_evidence(p)
    assert exc.value.line == 2 and exc.value.field == "claims"
    p.write_text(json.dumps({**good, "scores": {"faithfulness": {"value": 3}}}), encoding="utf-8")
    with pytest.raises(InputError) as exc:
        read_metric_evidence(p)
    assert exc.value.field == "scores.faithfulness.value"
