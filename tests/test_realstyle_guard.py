"""Regression guard on the real-style development set (issue #9, item 5).

The set (``benchmarks/data/realstyle``) holds hand-written answers in the styles real LLMs
use over the pipeline's own traces, hand-labelled without looking at ragtriage's output.
``benchmarks/realstyle.py`` prints the full figures; this test diagnoses every case with
the offline rules judge and fails when agreement drops below floors a few points under
what the judge measured when they were set (see the issue #9 note). It also checks each
real-answer phenomenon the issue names on the cases written for it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragtriage.calibrate.agreement import agreement, read_labels
from ragtriage.diagnosis import Diagnoser
from ragtriage.records import AnswerLabel, Diagnosis, Stage, Trace

ROOT = Path(__file__).resolve().parents[1] / "benchmarks" / "data" / "realstyle"
# The floors were set on demo and public; the fresh* parts were each measured blind once
# and have been development parts since (benchmarks/data/realstyle/README.md), so they are
# guarded too. A new unseen part stays out of this list until its blind row is recorded.
GUARDED_PARTS = (
    "demo",
    "public",
    "fresh",
    "fresh2",
    "fresh3",
    "fresh4",
    "fresh5",
    "fresh6",
    "fresh7",
    "fresh8",
    "fresh9",
    "fresh10",
    "fresh11",
    "fresh12",
    "fresh13",
    "fresh14",
    "fresh15",
    "fresh16",
    "fresh17",
    "fresh18",
    "fresh19",
    "fresh20",
    "fresh21",
    "fresh22",
    "fresh23",
    "fresh24",
    "fresh25",
    "fresh26",
    "fresh27",
    "fresh28",
    "fresh29",
    "fresh30",
    "fresh31",
    "fresh32",
    "fresh33",
    "fresh34",
    "fresh35",
    "fresh36",
    "fresh37",
    "fresh38",
    "fresh39",
    "fresh40",
    "fresh41",
    "fresh42",
    "fresh43",
    "fresh44",
    "fresh45",
    "fresh46",
    "fresh47",
    "fresh48",
    "fresh49",
    "fresh50",
    "fresh51",
    "fresh52",
    "fresh53",
    "fresh54",
    "fresh55",
)
PARTS = [ROOT / name for name in GUARDED_PARTS if (ROOT / name / "labels.jsonl").is_file()]


def _traces(part: Path) -> Iterator[Trace]:
    with (part / "traces.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield Trace.model_validate_json(line)


@pytest.fixture(scope="module")
def judged() -> tuple[list[Trace], list[Diagnosis]]:
    traces = [t for part in PARTS for t in _traces(part)]
    diagnoses = asyncio.run(Diagnoser("rules").diagnose_many(traces))
    return traces, diagnoses


def test_the_set_is_large_and_bilingual() -> None:
    assert len(PARTS) >= 2
    labels = [lab for part in PARTS for lab in read_labels(part / "labels.jsonl")]
    assert len(labels) >= 200
    traces = [t for part in PARTS for t in _traces(part)]
    assert {t.example.language for t in traces} >= {"en", "zh"}


def test_agreement_floors(judged: tuple[list[Trace], list[Diagnosis]]) -> None:
    diagnoses = judged[1]
    labels = [lab for part in PARTS for lab in read_labels(part / "labels.jsonl")]
    report = agreement(diagnoses, labels)
    assert report.answer_agreement is not None and report.answer_agreement >= 0.84
    assert report.failing_agreement is not None and report.failing_agreement >= 0.89
    assert report.stage_agreement is not None and report.stage_agreement >= 0.85
    assert report.type_accuracy is not None and report.type_accuracy >= 0.70
    ece = report.reliability.ece
    assert ece is not None and ece <= 0.10


def _human(part: Path) -> dict[str, dict[str, object]]:
    out = {}
    with (part / "labels.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                row = json.loads(line)
                out[row["example_id"]] = row
    return out


def _by_style(
    judged: tuple[list[Trace], list[Diagnosis]], style: str
) -> list[tuple[Trace, Diagnosis, dict[str, object]]]:
    human = {k: v for part in PARTS for k, v in _human(part).items()}
    traces, diagnoses = judged
    return [
        (t, d, human[t.example.example_id])
        for t, d in zip(traces, diagnoses, strict=True)
        if t.example.metadata.get("style") == style and t.example.example_id in human
    ]


@pytest.mark.parametrize("language", ["en", "zh"])
def test_verbose_abstentions_on_unanswerable_questions(
    judged: tuple[list[Trace], list[Diagnosis]], language: str
) -> None:
    cases = [
        (t, d)
        for t, d, h in _by_style(judged, "verbose_abstention")
        if not t.example.answerable
        and h["answer_label"] == "abstain"
        and (t.example.language or "en") == language
    ]
    assert cases
    right = sum(d.answer_label is AnswerLabel.ABSTAIN for _t, d in cases)
    assert right / len(cases) >= 0.8


def test_partial_abstentions_and_entity_splits_fail(
    judged: tuple[list[Trace], list[Diagnosis]],
) -> None:
    cases = [
        (t, d)
        for style in ("partial_abstention", "entity_split")
        for t, d, h in _by_style(judged, style)
        if h["stage"]
    ]
    assert len(cases) >= 10
    assert {t.example.language for t, _d in cases} >= {"en", "zh"}
    failing = sum(d.needs_diagnosis for _t, d in cases)
    assert failing / len(cases) >= 0.85


def test_one_entity_never_retrieved_is_retrieval(
    judged: tuple[list[Trace], list[Diagnosis]],
) -> None:
    cases = [
        d
        for style in ("partial_abstention", "entity_split")
        for _t, d, h in _by_style(judged, style)
        if h["stage"] == "retrieval"
    ]
    assert len(cases) >= 4
    assert sum(d.stage is Stage.RETRIEVAL for d in cases) / len(cases) >= 0.5


def test_wrong_numbers_fail(judged: tuple[list[Trace], list[Diagnosis]]) -> None:
    cases = [d for _t, d, h in _by_style(judged, "wrong_number") if h["stage"]]
    assert len(cases) >= 20
    assert sum(d.needs_diagnosis for d in cases) / len(cases) >= 0.9
