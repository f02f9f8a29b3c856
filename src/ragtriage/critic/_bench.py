"""RAG-Error-bench scoring (seed 004, §3.4 "Evaluation Protocol").

A bench file is JSONL, one labelled sample a line::

    {"id": "s1", "question": "...", "passages": ["...", ...], "prediction": "...",
     "judgement": "Correct" | "Error", "tag1": ["..."], "tag2": ["..."],
     "golden_answers": ["..."],                       # optional (reference mode)
     "critic": {"judgement": "Error", "tag1": [...], "tag2": [...]}}   # optional

``critic`` holds a critic's prediction to score; without it a critic of ours
(:mod:`ragtriage.critic`) is run on the sample. Scores:

* **error identification**: accuracy on the samples labelled Correct, on those labelled
  Error, and their average (an undetermined prediction counts as wrong and is counted);
* **error classification**: per-label F1 of tier-1 and tier-2 tags on the samples labelled
  Error (multi-label: a label is a true positive of a sample when both gold and
  prediction carry it), and the macro average over the labels seen in gold or prediction.
  Valid-label filtering: predicted tags that are not names of the error system are
  dropped (counted), and samples whose gold tags hold no valid name are left out of F1.

:func:`read_published_critic_samples` reads the RAG-Critic authors' published critic
samples (``critic_*.jsonl``: ``output`` is ``"None"`` for a correct prediction, else the
error analysis) as bench rows; with their ``error_type_*.jsonl`` file (the open-set tags of
each error analysis, Prompt C) the Error rows get tier-1/tier-2 labels: those of the
error system's tier-2 types that list one of the sample's tags verbatim (case-insensitive)
as a tier-3 tag — the authors' own grouping of their tags (:func:`published_tag_labels`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ragtriage.critic._critic import CriticInput, CriticVerdict
from ragtriage.critic._system import error_system
from ragtriage.errors import InputError
from ragtriage.jsonl import iter_json_lines, validation_to_input_error

__all__ = [
    "BenchPrediction",
    "BenchSample",
    "BenchScore",
    "LabelF1",
    "published_tag_labels",
    "read_bench",
    "read_published_critic_samples",
    "score_bench",
]


class BenchPrediction(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    judgement: str | None = None
    tag1: list[str] = Field(default_factory=list)
    tag2: list[str] = Field(default_factory=list)


class BenchSample(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    id: str
    question: str
    passages: list[str] = Field(default_factory=list)
    prediction: str = ""
    judgement: str
    tag1: list[str] = Field(default_factory=list)
    tag2: list[str] = Field(default_factory=list)
    golden_answers: list[str] = Field(default_factory=list)
    critic: BenchPrediction | None = None

    def critic_input(self, *, reference: bool) -> CriticInput:
        return CriticInput(
            example_id=self.id,
            question=self.question,
            passages=self.passages,
            prediction=self.prediction,
            references=self.golden_answers if reference else [],
        )


def _judgement(text: str | None) -> str | None:
    if text is None:
        return None
    t = text.strip().lower()
    if t in ("correct", "right", "true"):
        return "correct"
    if t in ("error", "incorrect", "wrong", "false"):
        return "error"
    return None


def read_bench(path: Path) -> list[BenchSample]:
    """Bench samples of a JSONL file; bad lines name file, line and field."""
    out: list[BenchSample] = []
    for lineno, obj in iter_json_lines(path):
        if "id" not in obj:
            obj = {**obj, "id": f"line{lineno}"}
        try:
            sample = BenchSample.model_validate(obj)
        except ValidationError as exc:
            raise validation_to_input_error(exc, path=str(path), line=lineno) from exc
        if _judgement(sample.judgement) is None:
            raise InputError(
                f"judgement must be Correct or Error, not {sample.judgement!r}",
                path=str(path),
                line=lineno,
                field="judgement",
            )
        out.append(sample)
    return out


def published_tag_labels(path: Path) -> dict[tuple[str, str], tuple[list[str], list[str]]]:
    """``(question, prediction)`` → (tier-1, tier-2) labels of the authors'
    ``error_type_*.jsonl`` rows (``meta_data.question``, ``prediction``, ``Error_type``: a
    list of ``{"tag", "explanation"}``): the tier-2 types whose published tier-3 tags hold
    one of the row's tags verbatim (case-insensitive), and their tier-1 types. Rows whose
    tags match no tier-3 tag get empty labels (left out of F1)."""
    system = error_system()
    by_tag = system.tier2_of_tag()
    out: dict[tuple[str, str], tuple[list[str], list[str]]] = {}
    for lineno, obj in iter_json_lines(path):
        meta = obj.get("meta_data")
        if not isinstance(meta, dict) or "question" not in meta:
            raise InputError("expected meta_data.question", path=str(path), line=lineno)
        tags = obj.get("Error_type")
        if not isinstance(tags, list):
            raise InputError(
                "expected a list of {tag, explanation}",
                path=str(path),
                line=lineno,
                field="Error_type",
            )
        tier2: list[str] = []
        for item in tags:
            tag = item.get("tag") if isinstance(item, dict) else item
            if not isinstance(tag, str):
                continue
            for t2 in by_tag.get(" ".join(tag.split()).casefold(), ()):
                if t2 not in tier2:
                    tier2.append(t2)
        tier1 = list(dict.fromkeys(system.tier1_of(t) for t in tier2))
        out[(str(meta["question"]), str(obj.get("prediction", "")))] = (tier1, tier2)
    return out


def read_published_critic_samples(
    path: Path, *, error_tags: Path | None = None
) -> list[BenchSample]:
    """The authors' ``critic_*.jsonl`` samples (``meta_data``, ``prediction``, ``output``);
    with ``error_tags`` (their ``error_type_*.jsonl``) the Error samples carry the tier
    labels of :func:`published_tag_labels`."""
    labels = published_tag_labels(error_tags) if error_tags is not None else {}
    out: list[BenchSample] = []
    for lineno, obj in iter_json_lines(path):
        meta = obj.get("meta_data")
        if not isinstance(meta, dict) or "question" not in meta:
            raise InputError("expected meta_data.question", path=str(path), line=lineno)
        docs = meta.get("retrieval_docs") or []
        output = str(obj.get("output", "None")).strip()
        judgement = "Correct" if output in ("None", "") else "Error"
        prediction = str(obj.get("prediction", ""))
        tag1, tag2 = labels.get((str(meta["question"]), prediction), ([], []))
        out.append(
            BenchSample(
                id=str(meta.get("id", f"line{lineno}")),
                question=str(meta["question"]),
                passages=[str(d.get("contents", "")) for d in docs if isinstance(d, dict)][:5],
                prediction=prediction,
                judgement=judgement,
                tag1=tag1 if judgement == "Error" else [],
                tag2=tag2 if judgement == "Error" else [],
                golden_answers=[str(a) for a in meta.get("golden_answers") or []],
            )
        )
    return out


class LabelF1(BaseModel):
    model_config = ConfigDict(frozen=True)

    label: str
    support: int
    precision: float | None
    recall: float | None
    f1: float | None


class BenchScore(BaseModel):
    model_config = ConfigDict(frozen=True)

    n: int
    n_correct: int
    n_error: int
    undetermined: int
    accuracy_correct: float | None
    accuracy_error: float | None
    accuracy_average: float | None
    tier1: list[LabelF1]
    tier2: list[LabelF1]
    tier1_macro_f1: float | None
    tier2_macro_f1: float | None
    tagged_errors: int = Field(description="Error samples with valid gold tags (F1 basis).")
    invalid_predicted_tags: int


def _f1(gold: Sequence[set[str]], pred: Sequence[set[str]]) -> list[LabelF1]:
    labels = sorted(set().union(*gold, *pred)) if gold else []
    rows: list[LabelF1] = []
    for label in labels:
        tp = sum(1 for g, p in zip(gold, pred, strict=True) if label in g and label in p)
        fp = sum(1 for g, p in zip(gold, pred, strict=True) if label not in g and label in p)
        fn = sum(1 for g, p in zip(gold, pred, strict=True) if label in g and label not in p)
        precision = tp / (tp + fp) if tp + fp else None
        recall = tp / (tp + fn) if tp + fn else None
        f1 = (
            2 * tp / (2 * tp + fp + fn) if 2 * tp + fp + fn else None
        )  # 2PR/(P+R) without undefined divisions
        rows.append(
            LabelF1(
                label=label,
                support=sum(1 for g in gold if label in g),
                precision=precision,
                recall=recall,
                f1=f1,
            )
        )
    return rows


def _macro(rows: Sequence[LabelF1]) -> float | None:
    values = [r.f1 for r in rows if r.f1 is not None]
    return sum(values) / len(values) if values else None


def _valid(tags: Sequence[str], names: Sequence[str]) -> tuple[set[str], int]:
    folded = {n.casefold(): n for n in names}
    keep = {folded[t.casefold().strip()] for t in tags if t.casefold().strip() in folded}
    return keep, sum(1 for t in tags if t.casefold().strip() not in folded)


def score_bench(
    samples: Sequence[BenchSample], predictions: Sequence[BenchPrediction | CriticVerdict]
) -> BenchScore:
    """Scores of ``predictions`` (one per sample, same order) against the labels."""
    if len(samples) != len(predictions):
        raise ValueError("one prediction per sample")
    system = error_system()
    hits = {"correct": [0, 0], "error": [0, 0]}
    undetermined = 0
    invalid = 0
    gold1: list[set[str]] = []
    gold2: list[set[str]] = []
    pred1: list[set[str]] = []
    pred2: list[set[str]] = []
    for sample, given in zip(samples, predictions, strict=True):
        pred = (
            BenchPrediction(judgement=given.judgement, tag1=given.tier1, tag2=given.tier2)
            if isinstance(given, CriticVerdict)
            else given
        )
        gold = _judgement(sample.judgement)
        assert gold is not None
        said = _judgement(pred.judgement) if pred.judgement else None
        if said is None:
            undetermined += 1
        hits[gold][1] += 1
        hits[gold][0] += int(said == gold)
        if gold != "error":
            continue
        g1, _ = _valid(sample.tag1, system.tier1)
        g2, _ = _valid(sample.tag2, system.tier2_names)
        p1, bad1 = _valid(pred.tag1, system.tier1)
        p2, bad2 = _valid(pred.tag2, system.tier2_names)
        invalid += bad1 + bad2
        if g1 or g2:
            gold1.append(g1)
            gold2.append(g2)
            pred1.append(p1 if said == "error" else set())
            pred2.append(p2 if said == "error" else set())
    acc = {k: (v[0] / v[1] if v[1] else None) for k, v in hits.items()}
    both = [a for a in acc.values() if a is not None]
    t1 = _f1(gold1, pred1)
    t2 = _f1(gold2, pred2)
    return BenchScore(
        n=len(samples),
        n_correct=hits["correct"][1],
        n_error=hits["error"][1],
        undetermined=undetermined,
        accuracy_correct=acc["correct"],
        accuracy_error=acc["error"],
        accuracy_average=sum(both) / len(both) if both else None,
        tier1=t1,
        tier2=t2,
        tier1_macro_f1=_macro(t1),
        tier2_macro_f1=_macro(t2),
        tagged_errors=len(gold1),
        invalid_predicted_tags=invalid,
    )
