"""Calibration metrics: how often the diagnoser finds the injected stage and type.

Pure functions on parallel lists of true labels and predictions. A prediction that is
not a label — the diagnoser could not decide (``undetermined``) or judged the answer
correct and diagnosed nothing (``not_flagged``) — is kept as its own column of the
confusion matrix and counts as wrong in accuracies; it is never dropped. Precision,
recall and F1 come from scikit-learn; a value that is undefined (no prediction of a
type, no case of it) is ``None``, never a silent 0 or NaN.

Each setting also gets two reliability tables with ECE
(:mod:`ragtriage.metrics.calibration`): the diagnosis ``confidence`` against "stage and
type both right", and ``mode_frequency`` against "the modal type is right".
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from pydantic import JsonValue
from sklearn.metrics import precision_recall_fscore_support

from ragtriage.metrics.calibration import Reliability, reliability
from ragtriage.records import Diagnosis, ErrorType, Stage

__all__ = [
    "NOT_FLAGGED",
    "STAGE_LABELS",
    "TYPE_LABELS",
    "UNDETERMINED",
    "ClassScore",
    "ConfusionMatrix",
    "Prediction",
    "SettingReport",
    "accuracy",
    "class_scores",
    "confusion_matrix",
    "score_setting",
    "top_k_accuracy",
]

UNDETERMINED = "undetermined"
NOT_FLAGGED = "not_flagged"
STAGE_LABELS: tuple[str, ...] = tuple(s.value for s in Stage)
TYPE_LABELS: tuple[str, ...] = tuple(t.value for t in ErrorType)

Outcome = Literal["diagnosed", "undetermined", "not_flagged"]


@dataclass(frozen=True, slots=True)
class Prediction:
    """What the diagnoser said about one case.

    ``outcome``: ``diagnosed``; ``undetermined`` (a step could not decide; ``stage``
    may still be set when only the type was undecidable); ``not_flagged`` (the answer
    was judged correct, so nothing was diagnosed).
    """

    stage: str | None
    error_type: str | None
    second_type: str | None = None
    outcome: Outcome = "diagnosed"
    confidence: float | None = None
    mode_frequency: float | None = None

    @classmethod
    def from_diagnosis(cls, d: Diagnosis) -> Prediction:
        if not d.needs_diagnosis and not d.undetermined:
            return cls(None, None, None, "not_flagged", d.confidence)
        return cls(
            d.stage.value if d.stage is not None else None,
            d.error_type.value if d.error_type is not None else None,
            d.second_type.value if d.second_type is not None else None,
            "undetermined" if d.undetermined else "diagnosed",
            d.confidence,
            d.mode_frequency,
        )

    def _missing(self) -> str:
        return NOT_FLAGGED if self.outcome == "not_flagged" else UNDETERMINED

    @property
    def stage_label(self) -> str:
        """The stage, or ``undetermined`` / ``not_flagged``."""
        return self.stage if self.stage is not None else self._missing()

    @property
    def type_label(self) -> str:
        """The modal type, or ``undetermined`` / ``not_flagged``."""
        return self.error_type if self.error_type is not None else self._missing()


@dataclass(frozen=True, slots=True)
class ConfusionMatrix:
    """``counts[i][j]``: cases of true ``labels[i]`` predicted as ``columns[j]``.
    ``columns`` are the labels followed by any other predicted value (e.g.
    ``undetermined``) in sorted order."""

    labels: tuple[str, ...]
    columns: tuple[str, ...]
    counts: tuple[tuple[int, ...], ...]

    def to_dict(self) -> dict[str, JsonValue]:
        return {
            "labels": list(self.labels),
            "columns": list(self.columns),
            "counts": [list(r) for r in self.counts],
        }

    def count(self, true: str, predicted: str) -> int:
        if true not in self.labels or predicted not in self.columns:
            return 0
        return self.counts[self.labels.index(true)][self.columns.index(predicted)]


def _check(true: Sequence[object], pred: Sequence[object]) -> None:
    if len(true) != len(pred):
        raise ValueError(f"{len(true)} true labels but {len(pred)} predictions")


def confusion_matrix(
    true: Sequence[str], pred: Sequence[str], labels: Sequence[str]
) -> ConfusionMatrix:
    """Rows: ``labels`` (true); columns: ``labels`` then other predicted values."""
    _check(true, pred)
    unknown = sorted({t for t in true if t not in labels})
    if unknown:
        raise ValueError(f"true labels not in labels: {unknown}")
    extra = sorted({p for p in pred if p not in labels})
    columns = (*labels, *extra)
    index = {c: i for i, c in enumerate(columns)}
    rows = [[0] * len(columns) for _ in labels]
    row_of = {label: i for i, label in enumerate(labels)}
    for t, p in zip(true, pred, strict=True):
        rows[row_of[t]][index[p]] += 1
    return ConfusionMatrix(tuple(labels), columns, tuple(tuple(r) for r in rows))


@dataclass(frozen=True, slots=True)
class ClassScore:
    """Precision, recall and F1 of one label (``None`` where undefined: precision
    without any prediction of the label, recall and F1 without any case of it)."""

    label: str
    precision: float | None
    recall: float | None
    f1: float | None
    support: int
    predicted: int

    def to_dict(self) -> dict[str, JsonValue]:
        return {
            "label": self.label,
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
            "support": self.support,
            "predicted": self.predicted,
        }


def class_scores(
    true: Sequence[str], pred: Sequence[str], labels: Sequence[str]
) -> list[ClassScore]:
    """Per-label precision/recall/F1 (scikit-learn, undefined values as ``None``)."""
    _check(true, pred)
    if not true:
        return [ClassScore(lab, None, None, None, 0, 0) for lab in labels]
    p, r, f, s = precision_recall_fscore_support(
        list(true), list(pred), labels=list(labels), zero_division=0.0, average=None
    )
    predicted = Counter(pred)
    out: list[ClassScore] = []
    for i, lab in enumerate(labels):
        support = int(s[i])
        n_pred = int(predicted.get(lab, 0))
        # precision is undefined when the label was never predicted, recall and F1 when
        # it never occurs: those are None, never a made-up 0
        out.append(
            ClassScore(
                label=lab,
                precision=float(p[i]) if n_pred else None,
                recall=float(r[i]) if support else None,
                f1=float(f[i]) if support and n_pred else (0.0 if support else None),
                support=support,
                predicted=n_pred,
            )
        )
    return out


def accuracy(true: Sequence[str], pred: Sequence[str]) -> float | None:
    """Share of exact matches; ``None`` for no cases."""
    _check(true, pred)
    if not true:
        return None
    return sum(1 for t, p in zip(true, pred, strict=True) if t == p) / len(true)


def top_k_accuracy(true: Sequence[str], ranked: Sequence[Sequence[str | None]]) -> float | None:
    """Share of cases whose true label is among its ranked predictions; ``None`` for no
    cases."""
    _check(true, ranked)
    if not true:
        return None
    return sum(1 for t, r in zip(true, ranked, strict=True) if t in r) / len(true)


def _macro_f1(scores: Sequence[ClassScore]) -> float | None:
    defined = [s.f1 for s in scores if s.support > 0 and s.f1 is not None]
    return sum(defined) / len(defined) if defined else None


@dataclass(frozen=True, slots=True)
class SettingReport:
    """Calibration of one judge x strategy setting."""

    judge: str
    strategy: str
    cases: int
    stage_accuracy: float | None
    type_accuracy: float | None
    top2_type_accuracy: float | None
    type_macro_f1: float | None
    stage_confusion: ConfusionMatrix
    type_confusion: ConfusionMatrix
    stage_scores: tuple[ClassScore, ...]
    type_scores: tuple[ClassScore, ...]
    outcomes: dict[str, int]
    #: cases whose stage was found but whose type was undecidable
    type_undetermined: int
    by_injector: dict[str, dict[str, float | int | None]] = field(default_factory=dict)
    #: confidence vs "stage and type right"
    reliability: Reliability = field(default_factory=lambda: reliability([], []))
    #: mode frequency vs "modal type right" (cases with a modal type)
    mode_reliability: Reliability = field(default_factory=lambda: reliability([], []))

    @property
    def key(self) -> str:
        return f"{self.judge}/{self.strategy}"

    def to_dict(self) -> dict[str, JsonValue]:
        return {
            "judge": self.judge,
            "strategy": self.strategy,
            "cases": self.cases,
            "stage_accuracy": self.stage_accuracy,
            "type_accuracy": self.type_accuracy,
            "top2_type_accuracy": self.top2_type_accuracy,
            "type_macro_f1": self.type_macro_f1,
            "outcomes": dict(self.outcomes),
            "type_undetermined": self.type_undetermined,
            "stage_confusion": self.stage_confusion.to_dict(),
            "type_confusion": self.type_confusion.to_dict(),
            "stage_scores": [s.to_dict() for s in self.stage_scores],
            "type_scores": [s.to_dict() for s in self.type_scores],
            "by_injector": {k: dict(v) for k, v in self.by_injector.items()},
            "reliability": self.reliability.to_dict(),
            "mode_reliability": self.mode_reliability.to_dict(),
        }


def score_setting(
    judge: str,
    strategy: str,
    true_types: Sequence[ErrorType],
    predictions: Sequence[Prediction],
    injectors: Sequence[str] | None = None,
) -> SettingReport:
    """Every metric of one setting. ``injectors`` (parallel to the cases) adds stage and
    type accuracy per injector."""
    _check(true_types, predictions)
    true_t = [t.value for t in true_types]
    true_s = [t.stage.value for t in true_types]
    pred_t = [p.type_label for p in predictions]
    pred_s = [p.stage_label for p in predictions]
    type_scores = class_scores(true_t, pred_t, TYPE_LABELS)
    by_injector: dict[str, dict[str, float | int | None]] = {}
    if injectors is not None:
        _check(true_types, injectors)
        for name in dict.fromkeys(injectors):
            idx = [i for i, n in enumerate(injectors) if n == name]
            by_injector[name] = {
                "cases": len(idx),
                "stage_accuracy": accuracy([true_s[i] for i in idx], [pred_s[i] for i in idx]),
                "type_accuracy": accuracy([true_t[i] for i in idx], [pred_t[i] for i in idx]),
            }
    outcomes = Counter(p.outcome for p in predictions)
    typed = [(p, t) for p, t in zip(predictions, true_t, strict=True) if p.error_type is not None]
    return SettingReport(
        judge=judge,
        strategy=strategy,
        cases=len(predictions),
        stage_accuracy=accuracy(true_s, pred_s),
        type_accuracy=accuracy(true_t, pred_t),
        top2_type_accuracy=top_k_accuracy(
            true_t, [(p.error_type, p.second_type) for p in predictions]
        ),
        type_macro_f1=_macro_f1(type_scores),
        stage_confusion=confusion_matrix(true_s, pred_s, STAGE_LABELS),
        type_confusion=confusion_matrix(true_t, pred_t, TYPE_LABELS),
        stage_scores=tuple(class_scores(true_s, pred_s, STAGE_LABELS)),
        type_scores=tuple(type_scores),
        outcomes={k: outcomes.get(k, 0) for k in ("diagnosed", "undetermined", "not_flagged")},
        type_undetermined=sum(
            1 for p in predictions if p.stage is not None and p.error_type is None
        ),
        by_injector=by_injector,
        reliability=reliability(
            [p.confidence for p in predictions],
            [
                p.stage_label == s and p.type_label == t
                for p, s, t in zip(predictions, true_s, true_t, strict=True)
            ],
        ),
        mode_reliability=reliability(
            [p.mode_frequency for p, _ in typed], [p.error_type == t for p, t in typed]
        ),
    )
