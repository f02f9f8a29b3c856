"""Aggregate diagnoses (and optionally traces) into one frozen :class:`Summary`.

Pure functions: nothing here reads files or mutates its inputs. The tables follow
seed 000 (RAGEC): Table 2 (mode / second-mode counts per error type, with per-stage
percentages), Table 3 (distribution of the mode frequency over the K votes) and
App. C.3 / Figure 3 (joint distribution of first and second mode for the generation
stage). A share over zero items is ``None`` (rendered "n/a"), never NaN or 0.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence

from pydantic import BaseModel, ConfigDict

from ragtriage.diagnosis.advice import advice_owners
from ragtriage.records import (
    ERROR_TYPE_NAMES,
    ERROR_TYPE_STAGE,
    AnswerLabel,
    Diagnosis,
    ErrorType,
    Stage,
    Trace,
    types_of_stage,
)

__all__ = [
    "AdviceCount",
    "AnswerTotals",
    "ConfidenceBin",
    "Cooccurrence",
    "LabelBreakdown",
    "ModeFrequencyBin",
    "PairCount",
    "PipelineStageCost",
    "StageCount",
    "StageTypeTotal",
    "Summary",
    "TypeCount",
    "UndeterminedCount",
    "UsageTotals",
    "dedupe_diagnoses",
    "mode_vote_count",
    "pipeline_costs",
    "share",
    "summarize",
    "undetermined_step",
]

NO_LABEL = "(none)"
_STEP_RE = re.compile(r"^\s*([A-Za-z][A-Za-z0-9_\- ]{0,40}?)\s*:\s*(.+)$", re.S)
_QUOTED_RE = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")
_MAX_REASON = 160
_TOP_PAIRS = 10


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class AnswerTotals(_Frozen):
    """How the answer evaluation went (seed 000, App. B.1)."""

    examples: int
    diagnosis_records: int
    not_diagnosed: int
    duplicates_dropped: int
    correct: int
    possible_correct: int
    incorrect: int
    abstain: int
    undetermined: int
    determined: int
    failing: int


class StageCount(_Frozen):
    stage: Stage
    count: int
    share: float | None


class TypeCount(_Frozen):
    error_type: ErrorType
    title: str
    stage: Stage
    mode: int
    second: int


class StageTypeTotal(_Frozen):
    """The "Percentage <stage>" rows of seed 000 Table 2."""

    stage: Stage
    mode: int
    mode_share: float | None
    second: int
    second_share: float | None


class ModeFrequencyBin(_Frozen):
    """How many examples had ``agree`` of ``k`` votes equal to their mode (Table 3).

    When a record has no votes but a ``mode_frequency``, ``agree``/``k`` are ``None``
    and the label is the rounded percentage.
    """

    label: str
    agree: int | None
    k: int | None
    count: int


class ConfidenceBin(_Frozen):
    """Diagnoses whose confidence lies in ``[lower, upper)`` (the last bin is closed)."""

    label: str
    lower: float
    upper: float
    count: int


class PairCount(_Frozen):
    first: ErrorType
    second: ErrorType
    count: int


class Cooccurrence(_Frozen):
    """Joint counts of (mode, second mode) among generation error types (App. C.3)."""

    types: list[ErrorType]
    matrix: list[list[int]]
    top: list[PairCount]
    examples: int


class LabelBreakdown(_Frozen):
    label: str
    examples: int
    determined: int
    failing: int
    accuracy: float | None
    stages: dict[str, int]
    top_type: ErrorType | None


class UndeterminedCount(_Frozen):
    step: str
    reason: str
    count: int


class UsageTotals(_Frozen):
    calls: int
    cached_calls: int
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class PipelineStageCost(_Frozen):
    """Cost of one pipeline stage summed over traces."""

    stage: str
    traces: int
    calls: int
    prompt_tokens: int
    completion_tokens: int
    latency_ms_total: float
    latency_ms_mean: float | None


class AdviceCount(_Frozen):
    """An advice text, the number of failing examples carrying it, and the error types
    (and their stages) it was given for in those examples: the modal or second type whose
    advice it is (:func:`~ragtriage.diagnosis.advice.advice_owners`); a text that neither
    type owns (written by another tool or an older version) counts for the modal type
    and the diagnosis' stage."""

    text: str
    count: int
    error_types: list[ErrorType]
    stages: list[Stage]


class CorrectnessMean(_Frozen):
    """Mean claim-level answer correctness over the diagnoses that carry a determined
    one (:attr:`~ragtriage.records.Diagnosis.answer_correctness`)."""

    precision: float
    recall: float
    f1: float
    n: int
    undetermined: int


class Summary(_Frozen):
    totals: AnswerTotals
    accuracy: float | None
    incorrect_share: float | None
    failing_share: float | None
    stages: list[StageCount]
    stage_undetermined: int
    types: list[TypeCount]
    stage_type_totals: list[StageTypeTotal]
    mode_total: int
    second_total: int
    mode_frequency: list[ModeFrequencyBin]
    cooccurrence: Cooccurrence
    by_label: list[LabelBreakdown]
    undetermined: list[UndeterminedCount]
    undetermined_votes: int
    usage: UsageTotals
    pipeline: list[PipelineStageCost]
    advice: list[AdviceCount]
    #: distribution of the per-diagnosis confidence (empty when none has one)
    confidence_bins: list[ConfidenceBin] = []
    #: diagnoses flagged low confidence (reports do not present them as facts)
    low_confidence: int = 0
    #: mean claim-level answer correctness (None when no diagnosis carries one)
    answer_correctness: CorrectnessMean | None = None

    def stage_count(self, stage: Stage) -> int:
        return next((s.count for s in self.stages if s.stage is stage), 0)

    def type_count(self, error_type: ErrorType) -> TypeCount:
        return next(t for t in self.types if t.error_type is error_type)


def share(numerator: int, denominator: int) -> float | None:
    """``numerator / denominator``, or ``None`` when the denominator is zero."""
    return None if denominator <= 0 else numerator / denominator


def dedupe_diagnoses(diagnoses: Iterable[Diagnosis]) -> tuple[list[Diagnosis], int]:
    """Keep the last record per ``example_id`` (first-seen order); return the drop count."""
    by_id: dict[str, Diagnosis] = {}
    dropped = 0
    for d in diagnoses:
        if d.example_id in by_id:
            dropped += 1
            del by_id[d.example_id]
        by_id[d.example_id] = d
    return list(by_id.values()), dropped


def mode_vote_count(diagnosis: Diagnosis) -> tuple[int, int] | None:
    """``(votes equal to the mode, K)``, or ``None`` without mode or votes."""
    if diagnosis.error_type is None or not diagnosis.votes:
        return None
    return sum(1 for v in diagnosis.votes if v == diagnosis.error_type), len(diagnosis.votes)


def undetermined_step(diagnosis: Diagnosis) -> tuple[str, str] | None:
    """``(step, reason)`` for a record some step could not decide, else ``None``.

    A reason written as ``"step: cause"`` names its step; otherwise the step is
    inferred from which field is missing.
    """
    reason = (diagnosis.undetermined_reason or "").strip()
    m = _STEP_RE.match(reason) if reason else None
    if diagnosis.answer_label is None:
        cause = m.group(2) if m else reason
        return "answer_evaluation", _clip(cause or diagnosis.answer_reason or "no reason given")
    missing_stage = diagnosis.needs_diagnosis and diagnosis.stage is None
    missing_type = diagnosis.needs_diagnosis and diagnosis.error_type is None
    if not (diagnosis.undetermined or missing_stage or missing_type):
        return None
    if m:
        return m.group(1).strip().replace(" ", "_").lower(), _clip(m.group(2))
    if missing_stage:
        step = "stage_attribution"
    elif missing_type:
        step = "type_classification"
    else:
        step = "diagnosis"
    return step, _clip(reason or "no reason given")


def _clip(text: str) -> str:
    """One line, quoted payloads (LLM reply snippets) folded so reasons group together."""
    text = _QUOTED_RE.sub("'…'", " ".join(text.split()))
    return text if len(text) <= _MAX_REASON else text[: _MAX_REASON - 1] + "…"


def _answer_totals(
    diags: Sequence[Diagnosis], traces: Sequence[Trace] | None, dropped: int
) -> AnswerTotals:
    labels = Counter(d.answer_label for d in diags)
    ids = {d.example_id for d in diags}
    not_diagnosed = 0
    if traces is not None:
        trace_ids = {t.example.example_id for t in traces}
        not_diagnosed = len(trace_ids - ids)
        ids |= trace_ids
    determined = sum(1 for d in diags if d.answer_label is not None)
    return AnswerTotals(
        examples=len(ids),
        diagnosis_records=len(diags),
        not_diagnosed=not_diagnosed,
        duplicates_dropped=dropped,
        correct=labels[AnswerLabel.CORRECT],
        possible_correct=labels[AnswerLabel.POSSIBLE_CORRECT],
        incorrect=labels[AnswerLabel.INCORRECT],
        abstain=labels[AnswerLabel.ABSTAIN],
        undetermined=labels[None],
        determined=determined,
        failing=sum(1 for d in diags if d.needs_diagnosis and d.answer_label is not None),
    )


def _mode_frequency(failing: Sequence[Diagnosis]) -> list[ModeFrequencyBin]:
    by_k: dict[int, Counter[int]] = defaultdict(Counter)
    by_pct: Counter[int] = Counter()
    for d in failing:
        mv = mode_vote_count(d)
        if mv is not None:
            by_k[mv[1]][mv[0]] += 1
        elif d.error_type is not None and d.mode_frequency is not None:
            by_pct[round(d.mode_frequency * 100)] += 1
    bins: list[ModeFrequencyBin] = []
    for k in sorted(by_k):
        for agree in range(1, k + 1):
            pct = round(100 * agree / k)
            bins.append(
                ModeFrequencyBin(
                    label=f"{agree}/{k} ({pct}%)", agree=agree, k=k, count=by_k[k][agree]
                )
            )
    for pct in sorted(by_pct):
        bins.append(ModeFrequencyBin(label=f"{pct}%", agree=None, k=None, count=by_pct[pct]))
    return bins


def _cooccurrence(failing: Sequence[Diagnosis]) -> Cooccurrence:
    gen = types_of_stage(Stage.GENERATION)
    index = {t: i for i, t in enumerate(gen)}
    matrix = [[0] * len(gen) for _ in gen]
    pairs: Counter[tuple[ErrorType, ErrorType]] = Counter()
    n = 0
    for d in failing:
        a, b = d.error_type, d.second_type
        if a is None or b is None or a not in index or b not in index or a is b:
            continue
        n += 1
        matrix[index[a]][index[b]] += 1
        key = (a, b) if index[a] <= index[b] else (b, a)
        pairs[key] += 1
    top = [
        PairCount(first=a, second=b, count=c)
        for (a, b), c in sorted(pairs.items(), key=lambda kv: (-kv[1], index[kv[0][0]]))
    ][:_TOP_PAIRS]
    return Cooccurrence(types=gen, matrix=matrix, top=top, examples=n)


def _by_label(diags: Sequence[Diagnosis]) -> list[LabelBreakdown]:
    groups: dict[str, list[Diagnosis]] = defaultdict(list)
    for d in diags:
        groups[d.label if d.label else NO_LABEL].append(d)
    out: list[LabelBreakdown] = []
    for label in sorted(groups, key=lambda x: (x == NO_LABEL, x)):
        ds = groups[label]
        determined = [d for d in ds if d.answer_label is not None]
        failing = [d for d in determined if d.needs_diagnosis]
        stages = Counter(d.stage.value for d in failing if d.stage is not None)
        types = Counter(d.error_type for d in failing if d.error_type is not None)
        top = types.most_common(1)[0][0] if types else None
        out.append(
            LabelBreakdown(
                label=label,
                examples=len(ds),
                determined=len(determined),
                failing=len(failing),
                accuracy=share(len(determined) - len(failing), len(determined)),
                stages={s.value: stages[s.value] for s in Stage},
                top_type=top,
            )
        )
    return out


def _undetermined(diags: Sequence[Diagnosis]) -> list[UndeterminedCount]:
    counts: Counter[tuple[str, str]] = Counter()
    for d in diags:
        sr = undetermined_step(d)
        if sr is not None:
            counts[sr] += 1
    return [
        UndeterminedCount(step=s, reason=r, count=c)
        for (s, r), c in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    ]


def _pipeline(traces: Sequence[Trace] | None) -> list[PipelineStageCost]:
    if not traces:
        return []
    acc: dict[str, list[float]] = {}
    for t in traces:
        for name, st in t.stages.items():
            row = acc.setdefault(name, [0, 0, 0, 0, 0.0])
            row[0] += 1
            row[1] += st.calls
            row[2] += st.prompt_tokens
            row[3] += st.completion_tokens
            row[4] += st.latency_ms
    return pipeline_costs(acc)


def pipeline_costs(acc: dict[str, list[float]]) -> list[PipelineStageCost]:
    """Stage costs from per-stage sums ``[traces, calls, prompt_tokens,
    completion_tokens, latency_ms]`` (so a caller streaming traces can fill them)."""
    order = {s.value: i for i, s in enumerate(Stage)}
    return [
        PipelineStageCost(
            stage=name,
            traces=int(r[0]),
            calls=int(r[1]),
            prompt_tokens=int(r[2]),
            completion_tokens=int(r[3]),
            latency_ms_total=r[4],
            latency_ms_mean=r[4] / r[0] if r[0] else None,
        )
        for name, r in sorted(acc.items(), key=lambda kv: (order.get(kv[0], 99), kv[0]))
    ]


def _advice(failing: Sequence[Diagnosis]) -> list[AdviceCount]:
    counts: Counter[str] = Counter()
    types: dict[str, Counter[ErrorType]] = defaultdict(Counter)
    stages: dict[str, Counter[Stage]] = defaultdict(Counter)
    first_seen: dict[str, int] = {}
    for d in failing:
        for text in dict.fromkeys(a.strip() for a in d.advice if a.strip()):
            counts[text] += 1
            first_seen.setdefault(text, len(first_seen))
            owners = advice_owners(text)
            # the type the advice was given for: with mode E7 and second mode E8, E8's
            # "forward fewer chunks" belongs to E8, not to the modal E7
            given_for = list(dict.fromkeys(t for t in (d.error_type, d.second_type) if t in owners))
            if given_for:
                for t in given_for:
                    types[text][t] += 1
                for st in dict.fromkeys(ERROR_TYPE_STAGE[t] for t in given_for):
                    stages[text][st] += 1
                continue
            if d.error_type is not None:
                types[text][d.error_type] += 1
            if d.stage is not None:
                stages[text][d.stage] += 1
    return [
        AdviceCount(
            text=text,
            count=c,
            error_types=[t for t, _ in types[text].most_common()],
            stages=[s for s, _ in stages[text].most_common()],
        )
        for text, c in sorted(counts.items(), key=lambda kv: (-kv[1], first_seen[kv[0]]))
    ]


def summarize(diagnoses: Sequence[Diagnosis], traces: Sequence[Trace] | None = None) -> Summary:
    """Everything a report shows, computed from diagnosis records (and traces for cost).

    Accuracy is the share of examples with a determined answer label that did not
    need a diagnosis; stage shares are over failing examples with a stage; type
    counts follow seed 000 Table 2 (mode and second mode of the K votes).
    """
    diags, dropped = dedupe_diagnoses(diagnoses)
    totals = _answer_totals(diags, traces, dropped)
    failing = [d for d in diags if d.needs_diagnosis and d.answer_label is not None]

    stage_counts = Counter(d.stage for d in failing if d.stage is not None)
    staged = sum(stage_counts.values())
    stages = [
        StageCount(stage=s, count=stage_counts[s], share=share(stage_counts[s], staged))
        for s in Stage
    ]

    modes = Counter(d.error_type for d in failing if d.error_type is not None)
    seconds = Counter(d.second_type for d in failing if d.second_type is not None)
    types = [
        TypeCount(
            error_type=t,
            title=ERROR_TYPE_NAMES[t],
            stage=ERROR_TYPE_STAGE[t],
            mode=modes[t],
            second=seconds[t],
        )
        for t in ErrorType
    ]
    mode_total, second_total = sum(modes.values()), sum(seconds.values())
    stage_type_totals = []
    for s in Stage:
        m = sum(modes[t] for t in types_of_stage(s))
        sc = sum(seconds[t] for t in types_of_stage(s))
        stage_type_totals.append(
            StageTypeTotal(
                stage=s,
                mode=m,
                mode_share=share(m, mode_total),
                second=sc,
                second_share=share(sc, second_total),
            )
        )

    usage_calls = sum(d.usage.calls for d in diags)
    prompt = sum(d.usage.prompt_tokens for d in diags)
    completion = sum(d.usage.completion_tokens for d in diags)
    usage = UsageTotals(
        calls=usage_calls,
        cached_calls=sum(d.usage.cached_calls for d in diags),
        prompt_tokens=prompt,
        completion_tokens=completion,
        total_tokens=prompt + completion,
    )

    return Summary(
        totals=totals,
        accuracy=share(totals.determined - totals.failing, totals.determined),
        incorrect_share=share(totals.incorrect, totals.determined),
        failing_share=share(totals.failing, totals.determined),
        stages=stages,
        stage_undetermined=len(failing) - staged,
        types=types,
        stage_type_totals=stage_type_totals,
        mode_total=mode_total,
        second_total=second_total,
        mode_frequency=_mode_frequency(failing),
        cooccurrence=_cooccurrence(failing),
        by_label=_by_label(diags),
        undetermined=_undetermined(diags),
        undetermined_votes=sum(1 for d in failing for v in d.votes if v == "undetermined"),
        usage=usage,
        pipeline=_pipeline(traces),
        advice=_advice(failing),
        confidence_bins=_confidence_bins(diags),
        low_confidence=sum(1 for d in diags if d.low_confidence),
        answer_correctness=_correctness_mean(diags),
    )


def _correctness_mean(diags: Sequence[Diagnosis]) -> CorrectnessMean | None:
    carried = [d.answer_correctness for d in diags if d.answer_correctness is not None]
    scored = [
        c for c in carried if c.precision is not None and c.recall is not None and c.f1 is not None
    ]
    if not scored:
        return None
    n = len(scored)
    return CorrectnessMean(
        precision=sum(c.precision or 0.0 for c in scored) / n,
        recall=sum(c.recall or 0.0 for c in scored) / n,
        f1=sum(c.f1 or 0.0 for c in scored) / n,
        n=n,
        undetermined=len(carried) - n,
    )


def _confidence_bins(diags: Sequence[Diagnosis], n_bins: int = 10) -> list[ConfidenceBin]:
    confs = [d.confidence for d in diags if d.confidence is not None]
    if not confs:
        return []
    counts = Counter(min(int(c * n_bins), n_bins - 1) for c in confs)
    return [
        ConfidenceBin(
            label=f"{b / n_bins:.1f}", lower=b / n_bins, upper=(b + 1) / n_bins, count=counts[b]
        )
        for b in range(n_bins)
    ]
