"""The live agreement panel: annotators vs each other and vs the judge.

Each annotator's numbers against the judge are :func:`ragtriage.calibrate.agreement`
on their annotation file, so they are the numbers ``ragtriage agree RUN --labels
RUN/annotations/<annotator>.jsonl`` prints; ``combined`` is the same over all
annotators' files together (Fleiss κ, each annotator vs the others' majority).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Any

from ragtriage.annotate._store import ANNOTATIONS_DIR, Annotation, AnnotationStore
from ragtriage.calibrate.agreement import (
    NOT_FAILING,
    AgreementReport,
    Confusion,
    HumanLabel,
    KappaResult,
    agreement,
    cohen_kappa,
    parse_types,
)
from ragtriage.records import AnswerLabel, Diagnosis, Stage

__all__ = ["AgreementPanel", "PairAgreement", "agreement_panel", "human_labels"]

_STAGE_COLUMNS = [*(s.value for s in Stage), NOT_FAILING]
_ANSWER_COLUMNS = [a.value for a in AnswerLabel]


@dataclass(frozen=True)
class PairAgreement:
    """Two annotators on the traces both labelled: stage (``none`` = not a failure)
    and answer label, each with Cohen's κ and a confusion matrix (rows ``a``)."""

    a: str
    b: str
    n: int
    stage_agreement: float | None
    stage_kappa: KappaResult
    stage_confusion: Confusion
    answer_n: int
    answer_kappa: KappaResult
    answer_confusion: Confusion
    type_n: int
    type_agreement: float | None

    def to_json(self) -> dict[str, Any]:
        return {
            "a": self.a,
            "b": self.b,
            "n": self.n,
            "stage_agreement": self.stage_agreement,
            "stage_kappa": self.stage_kappa.model_dump(mode="json"),
            "stage_confusion": self.stage_confusion.model_dump(mode="json"),
            "answer_n": self.answer_n,
            "answer_kappa": self.answer_kappa.model_dump(mode="json"),
            "answer_confusion": self.answer_confusion.model_dump(mode="json"),
            "type_n": self.type_n,
            "type_agreement": self.type_agreement,
        }


@dataclass(frozen=True)
class AgreementPanel:
    """``vs_judge``: one agreement report per annotator (as ``ragtriage agree`` on their
    file); ``combined``: all annotators together; ``pairs``: Cohen's κ per pair;
    ``fleiss``: Fleiss' κ on the stage with three or more annotators."""

    taxonomy: str
    annotators: tuple[str, ...]
    counts: Mapping[str, int]
    vs_judge: Mapping[str, AgreementReport]
    combined: AgreementReport | None
    pairs: tuple[PairAgreement, ...]
    fleiss: KappaResult

    def to_json(self) -> dict[str, Any]:
        return {
            "taxonomy": self.taxonomy,
            "annotators": list(self.annotators),
            "counts": dict(self.counts),
            "vs_judge": {a: r.model_dump(mode="json") for a, r in self.vs_judge.items()},
            "combined": self.combined.model_dump(mode="json") if self.combined else None,
            "pairs": [p.to_json() for p in self.pairs],
            "fleiss": self.fleiss.model_dump(mode="json"),
        }


def human_labels(annotations: Sequence[Annotation]) -> list[HumanLabel]:
    """The annotations as ``ragtriage agree`` reads their lines (another taxonomy's
    types are not RAGEC types: they are left out, as ``agree`` sees ``types: []``)."""
    out = []
    for line, a in enumerate(annotations, start=1):
        out.append(
            HumanLabel(
                example_id=a.example_id or a.trace_id,
                stage=Stage(a.stage) if a.stage is not None else None,
                types=parse_types(list(a.types)) if a.taxonomy == "ragec" else (),
                annotator=a.annotator,
                line=line,
                answer_label=AnswerLabel(a.answer_label) if a.answer_label else None,
            )
        )
    return out


def _confusion(labels: list[str], rows: Sequence[str], cols: Sequence[str]) -> Confusion:
    at = {name: i for i, name in enumerate(labels)}
    m = [[0] * len(labels) for _ in labels]
    for r, c in zip(rows, cols, strict=True):
        m[at[r]][at[c]] += 1
    return Confusion(labels=labels, matrix=m)


def _pair(
    a: str, b: str, la: Mapping[str, Annotation], lb: Mapping[str, Annotation]
) -> PairAgreement:
    common = [t for t in la if t in lb]
    sa = [la[t].stage or NOT_FAILING for t in common]
    sb = [lb[t].stage or NOT_FAILING for t in common]
    both = [t for t in common if la[t].answer_label and lb[t].answer_label]
    aa = [str(la[t].answer_label) for t in both]
    ab = [str(lb[t].answer_label) for t in both]
    typed = [t for t in common if la[t].types and lb[t].types and la[t].stage == lb[t].stage]
    type_hits = sum(1 for t in typed if set(la[t].types) & set(lb[t].types))
    return PairAgreement(
        a=a,
        b=b,
        n=len(common),
        stage_agreement=(sum(x == y for x, y in zip(sa, sb, strict=True)) / len(common))
        if common
        else None,
        stage_kappa=cohen_kappa(sa, sb),
        stage_confusion=_confusion(_STAGE_COLUMNS, sa, sb),
        answer_n=len(both),
        answer_kappa=cohen_kappa(aa, ab),
        answer_confusion=_confusion(_ANSWER_COLUMNS, aa, ab),
        type_n=len(typed),
        type_agreement=type_hits / len(typed) if typed else None,
    )


_PANELS: dict[tuple[Any, ...], AgreementPanel] = {}
_PANELS_LOCK = threading.Lock()
_MAX_PANELS = 16


def _panel_key(run_dir: Path, taxonomy: str) -> tuple[Any, ...]:
    """What a panel depends on: the annotation files and the run's sources."""
    files = []
    ann = run_dir / ANNOTATIONS_DIR
    for p in sorted(ann.glob("*.jsonl")) if ann.is_dir() else []:
        st = p.stat()
        files.append((p.name, st.st_ino, st.st_size, st.st_mtime_ns))
    sources = []
    for name in ("traces.jsonl", "diagnoses.jsonl"):
        try:
            st = (run_dir / name).stat()
        except OSError:
            continue
        sources.append((name, st.st_ino, st.st_size, st.st_mtime_ns))
    return (str(run_dir.resolve()), taxonomy, tuple(files), tuple(sources))


def agreement_panel(run_dir: Path, taxonomy: str = "ragec") -> AgreementPanel:
    """Agreement of the run's annotators (``RUN/annotations/*.jsonl``) with each other
    and with the judge's diagnoses. ``taxonomy`` selects which annotations count (those
    saved with that label set). Cached until an annotation file or the run changes."""
    key = _panel_key(Path(run_dir), taxonomy)
    with _PANELS_LOCK:
        hit = _PANELS.get(key)
    if hit is not None:
        return hit
    panel = _compute_panel(Path(run_dir), taxonomy)
    with _PANELS_LOCK:
        _PANELS[key] = panel
        while len(_PANELS) > _MAX_PANELS:
            _PANELS.pop(next(iter(_PANELS)))
    return panel


def _compute_panel(run_dir: Path, taxonomy: str) -> AgreementPanel:
    store = AnnotationStore(run_dir)
    loaded = {
        name: {t: a for t, a in anns.items() if a.taxonomy == taxonomy}
        for name, anns in store.load_all().items()
    }
    loaded = {name: anns for name, anns in loaded.items() if anns}
    names = tuple(sorted(loaded))
    diags = _diagnoses(run_dir, {t for anns in loaded.values() for t in anns})
    vs_judge: dict[str, AgreementReport] = {}
    for name in names:
        labels = human_labels(list(loaded[name].values()))
        vs_judge[name] = agreement(diags, labels, labels_file=str(store.path(name)))
    combined = None
    if names:
        every = human_labels([a for name in names for a in loaded[name].values()])
        combined = agreement(diags, every, labels_file=None)
    pairs = tuple(_pair(a, b, loaded[a], loaded[b]) for a, b in combinations(names, 2))
    if len(names) >= 3 and combined is not None:
        fleiss = combined.fleiss_stage
    else:
        fleiss = KappaResult(
            value=None,
            n=0,
            reason="Fleiss' κ needs three or more annotators (two: see the pairwise Cohen κ)",
        )
    return AgreementPanel(
        taxonomy=taxonomy,
        annotators=names,
        counts={name: len(loaded[name]) for name in names},
        vs_judge=vs_judge,
        combined=combined,
        pairs=pairs,
        fleiss=fleiss,
    )


def _diagnoses(run_dir: Path, trace_ids: set[str]) -> list[Diagnosis]:
    """The diagnoses of the annotated traces (agreement only looks those up)."""
    from ragtriage.runview import RunView

    if not trace_ids or not (Path(run_dir) / "traces.jsonl").is_file():
        return []
    view = RunView.open(Path(run_dir))
    out = []
    for t in sorted(trace_ids):
        try:
            d = view.diagnosis(t)
        except KeyError:
            continue
        if d is not None:
            out.append(d)
    return out
