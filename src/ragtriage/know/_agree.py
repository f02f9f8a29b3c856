"""Labeller vs human question-type labels (seed 001 §4 and App. B).

For each annotator ``A_i``, ``M − A_i`` is the majority vote of the *other* annotators
on an item (items without a unique majority are left out, as the paper discards
entries without consensus). The report gives κ(A_i, M − A_i) next to
κ(labeller, M − A_i) on the same items, how much lower the labeller's concordance is,
and the confusion matrix of the labeller against the majority of all annotators (rows:
majority label, columns: labeller label).
"""

from __future__ import annotations

import csv
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ragtriage.errors import InputError
from ragtriage.jsonl import iter_json_lines
from ragtriage.know._taxonomy import LABELS, UNDETERMINED

__all__ = [
    "AnnotatorKappa",
    "LabelAgreement",
    "label_agreement",
    "read_label_column",
]


@dataclass(frozen=True, slots=True)
class AnnotatorKappa:
    annotator: str
    items: int
    kappa_annotator: float | None
    kappa_labeller: float | None

    @property
    def relative_drop(self) -> float | None:
        """``1 − κ(labeller, M−A_i) / κ(A_i, M−A_i)`` (seed 001 reports 9–16 % for
        Llama-3-70b)."""
        if self.kappa_annotator is None or self.kappa_labeller is None:
            return None
        if self.kappa_annotator <= 0:
            return None
        return 1.0 - self.kappa_labeller / self.kappa_annotator


@dataclass(frozen=True, slots=True)
class LabelAgreement:
    annotators: tuple[AnnotatorKappa, ...]
    #: the labeller vs the majority of all annotators
    items: int
    accuracy: float | None
    kappa: float | None
    labels: tuple[str, ...]
    matrix: tuple[tuple[int, ...], ...]
    note: str = ""

    def to_json(self) -> dict[str, object]:
        return {
            "items": self.items,
            "accuracy": self.accuracy,
            "kappa_vs_majority": self.kappa,
            "annotators": [
                {
                    "annotator": a.annotator,
                    "items": a.items,
                    "kappa_annotator_vs_rest": a.kappa_annotator,
                    "kappa_labeller_vs_rest": a.kappa_labeller,
                    "relative_drop": a.relative_drop,
                }
                for a in self.annotators
            ],
            "confusion": {
                "rows_majority": list(self.labels),
                "columns_labeller": [*self.labels, UNDETERMINED],
                "matrix": [list(r) for r in self.matrix],
            },
            "note": self.note,
        }


def _label_value(value: object, *, path: str, line: int, column: str) -> str:
    text = str(value or "").strip()
    if text not in LABELS and text != UNDETERMINED:
        raise InputError(
            f"unknown label {text!r}; expected one of {', '.join(LABELS)}",
            path=path,
            line=line,
            field=column,
        )
    return text


def read_label_column(path: str | Path, *, column: str = "label") -> dict[str, dict[str, str]]:
    """``{annotator: {example_id: label}}`` from a CSV (``example_id, label[,
    annotator]``) or JSONL file (labeller output, or examples with a ``label``);
    a missing annotator is ``"labeller"``."""
    p = Path(path)
    out: dict[str, dict[str, str]] = {}

    def add(row: Mapping[str, object], line: int) -> None:
        eid = str(row.get("example_id") or "").strip()
        if not eid:
            raise InputError("missing example_id", path=str(p), line=line, field="example_id")
        if row.get(column) in (None, ""):
            return  # an example without a label: nothing to compare
        label = _label_value(row.get(column), path=str(p), line=line, column=column)
        who = str(row.get("annotator") or "labeller").strip()
        if eid in out.setdefault(who, {}):
            raise InputError(
                f"example {eid!r} labelled twice by {who!r}",
                path=str(p),
                line=line,
                field="example_id",
            )
        out[who][eid] = label

    if p.suffix.lower() in (".jsonl", ".json", ".ndjson"):
        for line, obj in iter_json_lines(p):
            add(obj, line)
    else:
        try:
            with p.open(encoding="utf-8-sig", newline="") as fh:
                reader = csv.DictReader(fh)
                if not reader.fieldnames or "example_id" not in reader.fieldnames:
                    raise InputError("expected a header with example_id", path=str(p), line=1)
                for row in reader:
                    add(row, reader.line_num)
        except OSError as exc:
            raise InputError(f"cannot read file: {exc.strerror}", path=str(p)) from exc
    if not out:
        raise InputError("no labels in file", path=str(p))
    return out


def _majority(values: Sequence[str]) -> str | None:
    ranked = Counter(v for v in values if v != UNDETERMINED).most_common()
    if not ranked or (len(ranked) > 1 and ranked[0][1] == ranked[1][1]):
        return None
    return ranked[0][0]


def _kappa(a: Sequence[str], b: Sequence[str]) -> float | None:
    from ragtriage.calibrate.agreement import cohen_kappa

    return cohen_kappa(a, b).value


def label_agreement(
    human: Mapping[str, Mapping[str, str]], labeller: Mapping[str, str]
) -> LabelAgreement:
    """Agreement of ``labeller`` (example_id → label) with annotators
    (annotator → example_id → label)."""
    names = sorted(human)
    per: list[AnnotatorKappa] = []
    note = ""
    if len(names) == 1:
        note = (
            "one annotator: κ(A_i, M − A_i) needs two or more; the labeller is compared "
            "with that annotator directly"
        )
    for name in names:
        a_lab: list[str] = []
        m_lab: list[str] = []
        l_lab: list[str] = []
        for eid, lab in human[name].items():
            if eid not in labeller:
                continue
            rest = [human[o][eid] for o in names if o != name and eid in human[o]]
            if len(names) > 1:
                m = _majority(rest)
                if m is None:
                    continue
            else:
                m = lab
            a_lab.append(lab)
            m_lab.append(m)
            l_lab.append(labeller[eid])
        per.append(
            AnnotatorKappa(
                annotator=name,
                items=len(a_lab),
                kappa_annotator=_kappa(a_lab, m_lab) if len(names) > 1 and a_lab else None,
                kappa_labeller=_kappa(l_lab, m_lab) if l_lab else None,
            )
        )
    ids = sorted({e for h in human.values() for e in h} & set(labeller))
    maj: list[str] = []
    lab_: list[str] = []
    for eid in ids:
        m = _majority([human[n][eid] for n in names if eid in human[n]])
        if m is not None:
            maj.append(m)
            lab_.append(labeller[eid])
    cols = [*LABELS, UNDETERMINED]
    matrix = tuple(
        tuple(sum(1 for m, x in zip(maj, lab_, strict=True) if m == r and x == c) for c in cols)
        for r in LABELS
    )
    return LabelAgreement(
        annotators=tuple(per),
        items=len(maj),
        accuracy=(sum(m == x for m, x in zip(maj, lab_, strict=True)) / len(maj)) if maj else None,
        kappa=_kappa(lab_, maj) if maj else None,
        labels=LABELS,
        matrix=matrix,
        note=note,
    )
