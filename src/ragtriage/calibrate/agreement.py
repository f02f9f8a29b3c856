"""Agreement between the diagnosis judge and human annotations.

Input: diagnoses plus a CSV or JSONL file of human labels with ``example_id``,
``stage``, ``types`` (one or more error types, ``;``-separated in CSV; may be empty
for a stage-only annotation) and optionally ``annotator``, ``answer_label``
(correct | possible_correct | incorrect | abstain) and ``split`` and ``rationale`` (kept for
listing disagreements); other fields are ignored. With an ``answer_label`` the ``stage`` may be empty,
``null`` or ``none``: the human says the answer is not a failure. Without one, every
labelled example is a failure (the original format).

Output (seed 000 §5, Table 1; seed 001 §4):

* answer-label agreement (4-class, on examples with a human ``answer_label``) and
  failing/not-failing agreement (human: a stage was given; judge: the answer went on
  to diagnosis), each with κ and a confusion matrix, and how many of the human
  failures the judge found;
* stage and type agreement on the examples both call failing;
* the reliability table and ECE of the per-diagnosis ``confidence`` against "the
  diagnosis is right" (not failing: both say not failing; failing: both say failing,
  the stage is the human majority stage and the modal type one of the human types),
  and of ``mode_frequency`` against "the modal type is right";

* stage agreement rate and the stage confusion matrix (rows human, columns judge);
* error-type accuracy (the judge's mode is one of the human types) and top-2
  accuracy (mode or second mode is), with a type confusion matrix;
* Cohen's κ between the judge and the majority human label;
* Fleiss' κ across annotators;
* for each annotator A, κ(A, majority of the others) against κ(judge, same
  majority) on the same examples (seed 001 §4 uses this to compare an LLM labeller
  with humans).

An undefined κ (no items, or every label in one class) is ``None`` with a reason.
"""

from __future__ import annotations

import csv
import json
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict
from sklearn.metrics import cohen_kappa_score, confusion_matrix

from ragtriage.errors import InputError
from ragtriage.jsonl import iter_json_lines
from ragtriage.metrics.calibration import Reliability, reliability
from ragtriage.records import (
    ERROR_TYPE_NAMES,
    ERROR_TYPE_STAGE,
    AnswerLabel,
    Diagnosis,
    ErrorType,
    Stage,
)

__all__ = [
    "AgreementReport",
    "AnnotatorComparison",
    "Confusion",
    "HumanLabel",
    "KappaResult",
    "agreement",
    "cohen_kappa",
    "diagnosis_correct",
    "fleiss_kappa",
    "labels_of_split",
    "parse_stage",
    "parse_types",
    "read_labels",
    "report_json",
]

DEFAULT_ANNOTATOR = "annotator"
#: the "stage" of a label whose human says the answer is not a failure
NOT_FAILING = "none"
FAILING = "failing"
_ANSWER_COLUMNS = [*(a.value for a in AnswerLabel), "undetermined"]
_FAILING_COLUMNS = [FAILING, "not_failing", "undetermined"]
_NO_STAGE_VALUES = ("", "none", "null", "-")

_STAGE_ALIASES: dict[str, Stage] = {
    "chunk": Stage.CHUNKING,
    "chunker": Stage.CHUNKING,
    "retrieve": Stage.RETRIEVAL,
    "retriever": Stage.RETRIEVAL,
    "rerank": Stage.RERANKING,
    "reranker": Stage.RERANKING,
    "generate": Stage.GENERATION,
    "generator": Stage.GENERATION,
}
_TYPE_BY_NAME: dict[str, ErrorType] = {n.lower(): t for t, n in ERROR_TYPE_NAMES.items()}


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class HumanLabel(_Frozen):
    """One annotator's label for one example; ``stage is None``: not a failure."""

    example_id: str
    stage: Stage | None
    types: tuple[ErrorType, ...]
    annotator: str
    line: int
    answer_label: AnswerLabel | None = None
    split: str | None = None
    rationale: str | None = None

    @property
    def failing(self) -> bool:
        return self.stage is not None

    @property
    def stage_name(self) -> str:
        return self.stage.value if self.stage is not None else NOT_FAILING


class KappaResult(_Frozen):
    """A κ value, or ``None`` with the reason it is undefined; ``n`` items used."""

    value: float | None
    n: int
    reason: str | None = None


class Confusion(_Frozen):
    """Counts with rows = human label, columns = judge label."""

    labels: list[str]
    matrix: list[list[int]]


class AnnotatorComparison(_Frozen):
    """κ(annotator, majority of the others) vs κ(judge, the same majority)."""

    annotator: str
    n: int
    kappa_annotator: KappaResult
    kappa_judge: KappaResult
    relative_drop: float | None


class AgreementReport(_Frozen):
    labels_file: str | None
    label_rows: int
    annotators: list[str]
    labeled_examples: int
    missing_diagnosis: list[str]
    judge_confirmed_failing: int
    judge_confirmed_share: float | None
    judge_no_stage: int
    no_consensus: int
    stage_compared: int
    stage_agreement: float | None
    stage_confusion: Confusion
    stage_kappa: KappaResult
    type_compared: int
    no_human_types: int
    type_accuracy: float | None
    type_top2_accuracy: float | None
    type_confusion: Confusion
    type_kappa: KappaResult
    fleiss_stage: KappaResult
    annotator_vs_judge: list[AnnotatorComparison]
    answer_compared: int
    answer_agreement: float | None
    answer_confusion: Confusion
    answer_kappa: KappaResult
    failing_compared: int
    failing_agreement: float | None
    failing_confusion: Confusion
    failing_kappa: KappaResult
    human_failures: int
    failures_found: int
    #: answers people judged not failing (among those compared)
    human_not_failing: int = 0
    #: answers people judged not failing that the judge failed ("false failures")
    false_failures: int = 0
    #: of the answers the judge failed, the share people failed too (None: it failed none)
    failing_precision: float | None = None
    #: of the answers people failed, the share the judge failed too (None: people failed none)
    failing_recall: float | None = None
    low_confidence: int
    #: confidence vs "the diagnosis is right"
    reliability: Reliability
    #: mode frequency vs "the modal type is one of the human types"
    mode_reliability: Reliability


# ------------------------------------------------------------------ parsing


def parse_stage(value: str) -> Stage:
    """A stage name (or a common alias such as ``retriever``), case-insensitive."""
    v = value.strip().lower()
    try:
        return Stage(v)
    except ValueError:
        pass
    if v in _STAGE_ALIASES:
        return _STAGE_ALIASES[v]
    raise ValueError(f"unknown stage {value!r}; expected one of {[s.value for s in Stage]}")


def _parse_type(value: str) -> ErrorType:
    v = value.strip()
    code = v.upper()
    if code.isdigit():
        code = f"E{code}"
    try:
        return ErrorType(code)
    except ValueError:
        pass
    if v.lower() in _TYPE_BY_NAME:
        return _TYPE_BY_NAME[v.lower()]
    raise ValueError(f"unknown error type {value!r}; expected E1..E16 or a type name")


def parse_types(value: str | Sequence[str]) -> tuple[ErrorType, ...]:
    """``"E3; E4"`` or ``["E3", "E4"]`` → error types (duplicates dropped, order kept)."""
    parts = value.split(";") if isinstance(value, str) else list(value)
    out: list[ErrorType] = []
    for p in parts:
        if not isinstance(p, str):
            raise ValueError(f"expected a string error type, got {type(p).__name__}")
        if not p.strip():
            continue
        t = _parse_type(p)
        if t not in out:
            out.append(t)
    return tuple(out)


def _label_from(
    raw: Mapping[str, Any], *, path: str, line: int, fields_present: Iterable[str]
) -> HumanLabel:
    present = set(fields_present)
    answer_label = _answer_label(raw.get("answer_label"), path=path, line=line)
    required = ("example_id", "stage", "types") if answer_label is None else ("example_id",)
    for key in required:
        if key not in present:
            raise InputError(f"missing required field {key!r}", path=path, line=line, field=key)
    eid = raw.get("example_id")
    if isinstance(eid, int) and not isinstance(eid, bool):
        eid = str(eid)
    if not isinstance(eid, str) or not eid.strip():
        raise InputError("empty or non-string example id", path=path, line=line, field="example_id")
    stage_raw = raw.get("stage")
    stage: Stage | None = None
    if answer_label is not None and (
        stage_raw is None
        or (isinstance(stage_raw, str) and stage_raw.strip().lower() in _NO_STAGE_VALUES)
    ):
        if answer_label is AnswerLabel.INCORRECT:
            raise InputError(
                "an 'incorrect' answer is a failure: give the stage of its root cause",
                path=path,
                line=line,
                field="stage",
            )
    elif not isinstance(stage_raw, str):
        raise InputError("expected a stage name", path=path, line=line, field="stage")
    else:
        try:
            stage = parse_stage(stage_raw)
        except ValueError as exc:
            raise InputError(str(exc), path=path, line=line, field="stage") from exc
    types_raw = raw.get("types")
    if types_raw is None:
        types_raw = ""
    if not isinstance(types_raw, str | list):
        raise InputError(
            "expected a ';'-separated string or a list of error types",
            path=path,
            line=line,
            field="types",
        )
    try:
        types = parse_types(types_raw)
    except ValueError as exc:
        raise InputError(str(exc), path=path, line=line, field="types") from exc
    if stage is None and types:
        raise InputError(
            "types given for an answer that is not a failure (empty stage)",
            path=path,
            line=line,
            field="types",
        )
    wrong = [t for t in types if ERROR_TYPE_STAGE[t] is not stage]
    if wrong and stage is not None:
        raise InputError(
            f"error type {wrong[0].value} belongs to stage {ERROR_TYPE_STAGE[wrong[0]].value}, "
            f"not {stage.value}",
            path=path,
            line=line,
            field="types",
        )
    ann = raw.get("annotator")
    if ann is None or (isinstance(ann, str) and not ann.strip()):
        ann = DEFAULT_ANNOTATOR
    if not isinstance(ann, str | int) or isinstance(ann, bool):
        raise InputError("expected an annotator name", path=path, line=line, field="annotator")
    split = raw.get("split")
    rationale = raw.get("rationale")
    if split is not None and not isinstance(split, str):
        raise InputError("expected a split name such as 'dev'", path=path, line=line, field="split")
    return HumanLabel(
        example_id=eid.strip(),
        stage=stage,
        types=types,
        annotator=str(ann).strip(),
        line=line,
        answer_label=answer_label,
        split=split.strip() or None if split is not None else None,
        rationale=rationale.strip() or None if isinstance(rationale, str) else None,
    )


SPLITS = ("dev", "test", "all")


def labels_of_split(labels: Sequence[HumanLabel], split: str, *, path: str) -> list[HumanLabel]:
    """The labels whose ``split`` field is ``split`` (``all``: every label)."""
    if split not in SPLITS:
        raise InputError(f"unknown split {split!r}; use dev, test or all", field="--split")
    if split == "all":
        return list(labels)
    out = [lab for lab in labels if lab.split == split]
    if not out:
        raise InputError(f"no label has split {split!r}", path=path, field="split")
    return out


def _answer_label(value: object, *, path: str, line: int) -> AnswerLabel | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, str):
        try:
            return AnswerLabel(value.strip().lower())
        except ValueError:
            pass
    raise InputError(
        f"unknown answer label {value!r}; expected one of {[a.value for a in AnswerLabel]}",
        path=path,
        line=line,
        field="answer_label",
    )


def _iter_csv(path: Path) -> Iterator[HumanLabel]:
    try:
        fh = path.open("r", encoding="utf-8-sig", newline="")
    except OSError as exc:
        raise InputError(f"cannot open file: {exc.strerror}", path=str(path)) from exc
    with fh:
        sample = fh.read(4096)
        fh.seek(0)
        delimiter = (
            "\t" if path.suffix.lower() == ".tsv" or ("\t" in sample and "," not in sample) else ","
        )
        reader = csv.DictReader(fh, delimiter=delimiter)
        try:
            header = [h.strip() for h in (reader.fieldnames or [])]
        except (csv.Error, UnicodeDecodeError) as exc:
            raise InputError(f"cannot read CSV header: {exc}", path=str(path), line=1) from exc
        if not header:
            raise InputError("empty file: expected a header row", path=str(path), line=1)
        reader.fieldnames = header
        try:
            for row in reader:
                line = reader.line_num
                if all((v or "").strip() == "" for k, v in row.items() if k is not None):
                    continue
                if None in row:
                    raise InputError(
                        "more cells than header columns", path=str(path), line=line, field="row"
                    )
                clean = {k: (v.strip() if isinstance(v, str) else v) for k, v in row.items()}
                missing = [k for k in header if clean.get(k) is None]
                present = [k for k in header if k not in missing]
                yield _label_from(clean, path=str(path), line=line, fields_present=present)
        except (csv.Error, UnicodeDecodeError) as exc:
            raise InputError(f"bad CSV: {exc}", path=str(path), line=reader.line_num) from exc


def _iter_jsonl(path: Path) -> Iterator[HumanLabel]:
    for lineno, obj in iter_json_lines(path):
        yield _label_from(obj, path=str(path), line=lineno, fields_present=obj.keys())


def read_labels(path: str | Path) -> list[HumanLabel]:
    """Read human labels from CSV/TSV or JSONL (by extension; else by the first byte)."""
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix in (".jsonl", ".json", ".ndjson"):
        it = _iter_jsonl(p)
    elif suffix in (".csv", ".tsv"):
        it = _iter_csv(p)
    else:
        try:
            head = p.read_text(encoding="utf-8-sig")[:1].strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"cannot read labels file: {exc}", path=str(p)) from exc
        it = _iter_jsonl(p) if head == "{" else _iter_csv(p)
    seen: dict[tuple[str, str], int] = {}
    out: list[HumanLabel] = []
    for lab in it:
        key = (lab.example_id, lab.annotator)
        if key in seen:
            raise InputError(
                f"example {lab.example_id!r} labelled twice by annotator {lab.annotator!r} "
                f"(first on line {seen[key]}); add an 'annotator' column for several annotators",
                path=str(p),
                line=lab.line,
                field="example_id",
            )
        seen[key] = lab.line
        out.append(lab)
    if not out:
        raise InputError("no labels in file", path=str(p))
    return out


# ------------------------------------------------------------------ statistics


def fleiss_kappa(counts: Sequence[Sequence[int]]) -> KappaResult:
    """Fleiss' κ from an items × categories matrix of rating counts.

    Items may have different numbers of raters (each item's agreement uses its own
    count); items with fewer than two ratings are skipped. Undefined (``None``) with
    no usable items or when every rating falls in one category.
    """
    rows = [list(r) for r in counts if sum(r) >= 2]
    if not rows:
        return KappaResult(value=None, n=0, reason="no example has two or more ratings")
    if any(v < 0 for r in rows for v in r):
        raise ValueError("rating counts must be non-negative")
    total = sum(sum(r) for r in rows)
    p_i = [(sum(v * v for v in r) - sum(r)) / (sum(r) * (sum(r) - 1)) for r in rows]
    p_bar = sum(p_i) / len(rows)
    k = max(len(r) for r in rows)
    p_j = [sum(r[j] for r in rows if j < len(r)) / total for j in range(k)]
    p_e = sum(p * p for p in p_j)
    if math.isclose(p_e, 1.0):
        return KappaResult(value=None, n=len(rows), reason="every rating is in one category")
    return KappaResult(value=(p_bar - p_e) / (1 - p_e), n=len(rows))


def cohen_kappa(a: Sequence[str], b: Sequence[str]) -> KappaResult:
    """Cohen's κ of two raters over the same items (scikit-learn)."""
    if len(a) != len(b):
        raise ValueError("both raters need the same number of items")
    n = len(a)
    if n == 0:
        return KappaResult(value=None, n=0, reason="no items to compare")
    if len(set(a) | set(b)) < 2:
        return KappaResult(value=None, n=n, reason="both raters used a single, identical class")
    # chance agreement of 1 is only possible with one class, handled above
    value = float(cohen_kappa_score(list(a), list(b)))
    if math.isnan(value):
        return KappaResult(value=None, n=n, reason="chance agreement is 1")
    return KappaResult(value=value, n=n)


def _majority(values: Iterable[str]) -> str | None:
    """The unique most common value, or ``None`` on a tie."""
    ranked = Counter(values).most_common()
    if not ranked or (len(ranked) > 1 and ranked[0][1] == ranked[1][1]):
        return None
    return ranked[0][0]


def _confusion(labels: list[str], human: Sequence[str], judge: Sequence[str]) -> Confusion:
    if not human:
        return Confusion(labels=labels, matrix=[[0] * len(labels) for _ in labels])
    m = confusion_matrix(list(human), list(judge), labels=labels)
    return Confusion(labels=labels, matrix=[[int(v) for v in row] for row in m])


def _share(n: int, d: int) -> float | None:
    return None if d <= 0 else n / d


def _human_failing(labs: Sequence[HumanLabel]) -> bool | None:
    """Majority of the annotators' failing/not-failing calls; ``None`` on a tie."""
    m = _majority(FAILING if lab.failing else NOT_FAILING for lab in labs)
    return None if m is None else m == FAILING


def _judge_failing(d: Diagnosis) -> str:
    if d.answer_label is None:
        return "undetermined"
    return FAILING if d.needs_diagnosis else "not_failing"


def _failing_pool(labs: Sequence[HumanLabel]) -> tuple[str | None, Counter[ErrorType]]:
    """The human majority stage among the failing labels (``None`` on a tie) and the
    human types of that stage (of all failing labels on a tie)."""
    failing = [lab for lab in labs if lab.stage is not None]
    majority = _majority(lab.stage_name for lab in failing)
    pool = failing if majority is None else [lab for lab in failing if lab.stage_name == majority]
    return majority, Counter(t for lab in pool for t in lab.types)


def diagnosis_correct(d: Diagnosis, labs: Sequence[HumanLabel]) -> bool | None:
    """Is the diagnosis right by the human labels of its example? Not failing: both say
    not failing. Failing: both say failing, the stage is the human majority stage and
    the modal type is one of that stage's human types. ``None`` when the humans tie on
    failing/stage or gave no types (cannot tell)."""
    human = _human_failing(labs)
    if human is None or d.answer_label is None:
        return None
    if not human:
        return not d.needs_diagnosis
    if not d.needs_diagnosis:
        return False
    majority, types = _failing_pool(labs)
    if majority is None or not types:
        return None
    return d.stage is not None and d.stage.value == majority and d.error_type in types


def agreement(
    diagnoses: Sequence[Diagnosis],
    labels: Sequence[HumanLabel],
    *,
    labels_file: str | None = None,
) -> AgreementReport:
    """Compare the judge's diagnoses with human labels (see the module docstring)."""
    by_example: dict[str, list[HumanLabel]] = defaultdict(list)
    for lab in labels:
        by_example[lab.example_id].append(lab)
    diag = {d.example_id: d for d in diagnoses}
    annotators = sorted({lab.annotator for lab in labels})
    stage_names = [s.value for s in Stage]
    type_names = [t.value for t in ErrorType]

    missing = sorted(e for e in by_example if e not in diag)
    confirmed = no_stage = no_consensus = no_types = 0
    h_stage: list[str] = []
    j_stage: list[str] = []
    h_type: list[str] = []
    j_type: list[str] = []
    h_answer: list[str] = []
    j_answer: list[str] = []
    h_fail: list[str] = []
    j_fail: list[str] = []
    confidences: list[float | None] = []
    right: list[bool] = []
    mode_freqs: list[float | None] = []
    type_right: list[bool] = []
    top1 = top2 = low = 0
    order = {t: i for i, t in enumerate(ErrorType)}
    for eid, labs in by_example.items():
        d = diag.get(eid)
        if d is None:
            continue
        low += d.low_confidence
        answer_majority = _majority(
            lab.answer_label.value for lab in labs if lab.answer_label is not None
        )
        if answer_majority is not None:
            h_answer.append(answer_majority)
            j_answer.append(d.answer_label.value if d.answer_label is not None else "undetermined")
        human_failing = _human_failing(labs)
        if human_failing is not None:
            h_fail.append(FAILING if human_failing else "not_failing")
            j_fail.append(_judge_failing(d))
        ok = diagnosis_correct(d, labs)
        if ok is not None:
            confidences.append(d.confidence)
            right.append(ok)
        if d.needs_diagnosis and d.answer_label is not None:
            confirmed += 1
        if human_failing is False:
            continue
        if d.stage is None or not d.needs_diagnosis:
            no_stage += 1
            continue
        majority, human_types = _failing_pool(labs)
        if majority is None:
            no_consensus += 1
        else:
            h_stage.append(majority)
            j_stage.append(d.stage.value)
        if d.error_type is None:
            continue
        if not human_types:
            no_types += 1
            continue
        hit1 = d.error_type in human_types
        hit2 = hit1 or (d.second_type is not None and d.second_type in human_types)
        top1 += hit1
        top2 += hit2
        mode_freqs.append(d.mode_frequency)
        type_right.append(hit1)
        primary = (
            d.error_type
            if hit1
            else sorted(human_types, key=lambda t: (-human_types[t], order[t]))[0]
        )
        h_type.append(primary.value)
        j_type.append(d.error_type.value)

    stage_agree = sum(1 for h, j in zip(h_stage, j_stage, strict=True) if h == j)

    # Fleiss' κ across annotators: one row of stage counts per example ("none" is a
    # category of its own when some human said "not a failure")
    categories = stage_names + ([NOT_FAILING] if any(not lab.failing for lab in labels) else [])
    fleiss_rows = []
    for labs in by_example.values():
        c = Counter(lab.stage_name for lab in labs)
        fleiss_rows.append([c[s] for s in categories])
    fleiss = (
        fleiss_kappa(fleiss_rows)
        if len(annotators) >= 2
        else KappaResult(value=None, n=0, reason="needs two or more annotators")
    )

    comparisons: list[AnnotatorComparison] = []
    if len(annotators) >= 2:
        for ann in annotators:
            a_lab: list[str] = []
            j_lab: list[str] = []
            m_lab: list[str] = []
            for eid, labs in by_example.items():
                mine = [lab for lab in labs if lab.annotator == ann]
                others = [lab.stage_name for lab in labs if lab.annotator != ann]
                d = diag.get(eid)
                if not mine or not others or d is None or d.stage is None or not d.needs_diagnosis:
                    continue
                m = _majority(others)
                if m is None:
                    continue
                a_lab.append(mine[0].stage_name)
                j_lab.append(d.stage.value)
                m_lab.append(m)
            ka = cohen_kappa(a_lab, m_lab)
            kj = cohen_kappa(j_lab, m_lab)
            drop = (
                1 - kj.value / ka.value
                if ka.value is not None and kj.value is not None and ka.value > 0
                else None
            )
            comparisons.append(
                AnnotatorComparison(
                    annotator=ann,
                    n=len(a_lab),
                    kappa_annotator=ka,
                    kappa_judge=kj,
                    relative_drop=drop,
                )
            )

    matched = len(by_example) - len(missing)
    pairs_fail = list(zip(h_fail, j_fail, strict=True))
    return AgreementReport(
        labels_file=labels_file,
        label_rows=len(labels),
        annotators=annotators,
        labeled_examples=len(by_example),
        missing_diagnosis=missing,
        judge_confirmed_failing=confirmed,
        judge_confirmed_share=_share(confirmed, matched),
        judge_no_stage=no_stage,
        no_consensus=no_consensus,
        stage_compared=len(h_stage),
        stage_agreement=_share(stage_agree, len(h_stage)),
        stage_confusion=_confusion(stage_names, h_stage, j_stage),
        stage_kappa=cohen_kappa(j_stage, h_stage),
        type_compared=len(h_type),
        no_human_types=no_types,
        type_accuracy=_share(top1, len(h_type)),
        type_top2_accuracy=_share(top2, len(h_type)),
        type_confusion=_confusion(type_names, h_type, j_type),
        type_kappa=cohen_kappa(j_type, h_type),
        fleiss_stage=fleiss,
        annotator_vs_judge=comparisons,
        answer_compared=len(h_answer),
        answer_agreement=_share(
            sum(1 for h, j in zip(h_answer, j_answer, strict=True) if h == j), len(h_answer)
        ),
        answer_confusion=_confusion(_ANSWER_COLUMNS, h_answer, j_answer),
        answer_kappa=cohen_kappa(j_answer, h_answer),
        failing_compared=len(h_fail),
        failing_agreement=_share(sum(1 for h, j in pairs_fail if h == j), len(h_fail)),
        failing_confusion=_confusion(_FAILING_COLUMNS, h_fail, j_fail),
        failing_kappa=cohen_kappa(j_fail, h_fail),
        human_failures=sum(1 for h in h_fail if h == FAILING),
        failures_found=sum(1 for h, j in pairs_fail if h == j == FAILING),
        human_not_failing=sum(1 for h in h_fail if h != FAILING),
        false_failures=sum(1 for h, j in pairs_fail if h != FAILING and j == FAILING),
        failing_precision=_share(
            sum(1 for h, j in pairs_fail if h == j == FAILING),
            sum(1 for _, j in pairs_fail if j == FAILING),
        ),
        failing_recall=_share(
            sum(1 for h, j in pairs_fail if h == j == FAILING),
            sum(1 for h in h_fail if h == FAILING),
        ),
        low_confidence=low,
        reliability=reliability(confidences, right),
        mode_reliability=reliability(mode_freqs, type_right),
    )


def report_json(report: AgreementReport) -> str:
    """The agreement report as indented JSON (``null`` for undefined values)."""
    return json.dumps(report.model_dump(mode="json"), ensure_ascii=False, indent=2) + "\n"
