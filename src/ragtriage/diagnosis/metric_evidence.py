"""Evaluation metrics as diagnosis evidence (issue 11, seed 003 next to seed 000).

``ragtriage evaluate RUN --out RUN`` writes ``scores.jsonl``: per trace, the
faithfulness of the answer and the verdict of each of its claims against the context
the generator saw (supported / not supported / contradicted). When a run has that file,
``ragtriage diagnose`` reads it and a type judge step wraps the bundle's own:

* only failures attributed to the **generation** stage are touched, and only their
  error-type votes: answer labels and stages are never changed;
* low faithfulness (below :data:`LOW_FAITHFULNESS`) — claims the context does not
  support — supports **E10 Fabricated Content**; contradicted claims support the
  generation type of what they contradict: a date → E15 Chronological Inconsistency, a
  number → E16 Numerical Error, otherwise E13 Misinterpretation;
* the support is added to the vote weights (each vote 1/K, plus
  :data:`WEIGHT` × the share of such claims) and the K votes re-apportioned; the
  evidence line names the file and the metric judge.

With no scores file nothing is wrapped: diagnoses are byte-identical to those without
this module. Plug it in with ``Diagnoser(..., judges=with_metric_evidence(cfg, ev))``.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Final

from ragtriage.config import DiagnosisConfig
from ragtriage.diagnosis._calls import LLMCalls
from ragtriage.diagnosis._context import CaseContext
from ragtriage.diagnosis.judges import (
    CostOptions,
    Judges,
    JudgesFactory,
    TypeJudge,
    llm_judges,
    rules_judges,
)
from ragtriage.diagnosis.votes import apportion_votes
from ragtriage.errors import InputError
from ragtriage.records import ErrorType, Stage, Trace, Vote

__all__ = [
    "LOW_FAITHFULNESS",
    "WEIGHT",
    "MetricEvidence",
    "MetricTypeJudge",
    "TraceMetrics",
    "contradiction_type",
    "read_metric_evidence",
    "with_metric_evidence",
]

#: faithfulness below this supports E10 (fewer than half of the claims supported)
LOW_FAITHFULNESS: Final = 0.5
#: vote weight added per unit share of unsupported / contradicted claims
WEIGHT: Final = 0.5
_VERDICTS = ("supported", "not_supported", "contradicted")
_YEAR_OR_DATE = re.compile(
    r"\b(?:1[5-9]|20)\d{2}\b|\d{4}-\d{2}-\d{2}|[0-9０-９]+年|[0-9０-９]+月[0-9０-９]+[日号]"
)
_NUMBER = re.compile(r"[0-9０-９]")


@dataclass(frozen=True, slots=True)
class TraceMetrics:
    """What ``scores.jsonl`` says about one trace."""

    faithfulness: float | None
    judge: str
    supported: int = 0
    not_supported: int = 0
    contradicted: tuple[str, ...] = ()

    @property
    def claims(self) -> int:
        return self.supported + self.not_supported + len(self.contradicted)


@dataclass(frozen=True, slots=True)
class MetricEvidence:
    """The metrics of a run, by trace id (and example id), and the file they came from."""

    source: str
    by_trace: Mapping[str, TraceMetrics]
    by_example: Mapping[str, TraceMetrics]

    def for_trace(self, trace: Trace) -> TraceMetrics | None:
        return self.by_trace.get(trace.trace_id) or self.by_example.get(trace.example.example_id)


def _row(obj: object, path: Path, lineno: int) -> tuple[str, str, TraceMetrics]:
    def bad(msg: str, field: str) -> InputError:
        return InputError(msg, path=str(path), line=lineno, field=field)

    if not isinstance(obj, dict):
        raise bad("expected a JSON object", "scores")
    tid, eid = obj.get("trace_id"), obj.get("example_id")
    if not isinstance(tid, str) or not isinstance(eid, str):
        raise bad("expected string trace_id and example_id", "trace_id")
    scores = obj.get("scores")
    if not isinstance(scores, dict):
        raise bad("expected an object of metric scores", "scores")
    cell = scores.get("faithfulness")
    value: float | None = None
    judge = ""
    if cell is not None:
        if not isinstance(cell, dict) or "value" not in cell:
            raise bad("expected {value, judge}", "scores.faithfulness")
        raw = cell["value"]
        if isinstance(raw, bool) or not isinstance(raw, int | float | str):
            raise bad("expected a number or 'undetermined'", "scores.faithfulness.value")
        if not isinstance(raw, str):
            if not 0.0 <= float(raw) <= 1.0:
                raise bad("expected a value in [0, 1]", "scores.faithfulness.value")
            value = float(raw)
        judge = str(cell.get("judge", ""))
    counts: Counter[str] = Counter()
    contradicted: list[str] = []
    claims = obj.get("claims", [])
    if not isinstance(claims, list):
        raise bad("expected a list of {claim, verdict}", "claims")
    for c in claims:
        verdict = c.get("verdict") if isinstance(c, dict) else None
        if verdict not in _VERDICTS or not isinstance(c.get("claim"), str):
            raise bad(f"expected {{claim, verdict}} with verdict in {_VERDICTS}", "claims")
        counts[verdict] += 1
        if verdict == "contradicted":
            contradicted.append(c["claim"])
    metrics = TraceMetrics(
        faithfulness=value,
        judge=judge,
        supported=counts["supported"],
        not_supported=counts["not_supported"],
        contradicted=tuple(contradicted),
    )
    return tid, eid, metrics


def read_metric_evidence(path: str | Path) -> MetricEvidence:
    """Read ``scores.jsonl`` (written by ``ragtriage evaluate``); a bad line is an
    :class:`~ragtriage.errors.InputError` naming file, line and field."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read scores: {exc.strerror}", path=str(p)) from exc
    by_trace: dict[str, TraceMetrics] = {}
    by_example: dict[str, TraceMetrics] = {}
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"not valid JSON: {exc.msg}", path=str(p), line=lineno) from exc
        tid, eid, m = _row(obj, p, lineno)
        by_trace[tid] = m
        by_example[eid] = m
    return MetricEvidence(source=str(p), by_trace=by_trace, by_example=by_example)


def contradiction_type(claim: str) -> ErrorType:
    """The generation type a contradicted claim points to: E15 for a date or year, E16
    for another number, else E13 (the context was misread)."""
    if _YEAR_OR_DATE.search(claim):
        return ErrorType.E15
    if _NUMBER.search(claim):
        return ErrorType.E16
    return ErrorType.E13


def _support(m: TraceMetrics) -> dict[ErrorType, float]:
    """Extra vote weight per type from the claim verdicts (shares of all claims)."""
    n = m.claims
    out: dict[ErrorType, float] = {}
    if n == 0:  # a scores file without claim verdicts: faithfulness alone
        if m.faithfulness is not None:
            out[ErrorType.E10] = WEIGHT * (1.0 - m.faithfulness)
        return out
    if m.not_supported:
        out[ErrorType.E10] = WEIGHT * m.not_supported / n
    for claim in m.contradicted:
        t = contradiction_type(claim)
        out[t] = out.get(t, 0.0) + WEIGHT / n
    return out


def _describe(m: TraceMetrics, support: Mapping[ErrorType, float], source: str) -> str:
    parts = [f"faithfulness {m.faithfulness:.2f}" if m.faithfulness is not None else ""]
    if m.claims:
        parts.append(f"{m.supported} of {m.claims} claims supported by the generator's context")
        if m.not_supported:
            parts.append(f"{m.not_supported} not supported")
        if m.contradicted:
            shown = "; ".join(f"'{c[:80]}'" for c in m.contradicted[:2])
            parts.append(f"{len(m.contradicted)} contradicted ({shown})")
    helps = ", ".join(f"{t} {t.title} (+{w:.2f})" for t, w in support.items())
    judge = f"{m.judge} judge, " if m.judge else ""
    return f"metrics ({judge}{source}): {'; '.join(p for p in parts if p)} — supports {helps}"


def _reweigh(votes: Sequence[Vote], support: Mapping[ErrorType, float], k: int) -> list[Vote]:
    """The determined votes re-apportioned over their weights (1/K each) plus
    ``support``; undetermined votes stay undetermined."""
    determined = [v for v in votes if v != "undetermined"]
    if not determined:
        return list(votes)
    weights: dict[ErrorType, float] = {}
    for v in determined:
        t = ErrorType(v)
        weights[t] = weights.get(t, 0.0) + 1.0 / k
    for t, w in support.items():
        weights[t] = weights.get(t, 0.0) + w
    out: list[Vote] = list(apportion_votes(weights, len(determined)))
    return out + ["undetermined"] * (len(votes) - len(determined))


@dataclass(frozen=True, slots=True)
class MetricTypeJudge:
    """A :class:`~ragtriage.diagnosis.judges.TypeJudge` that asks ``inner`` and, for a
    generation-stage failure with low faithfulness, adds the metric as evidence and
    weight for E10 (and the contradicted claims' types)."""

    inner: TypeJudge
    evidence: MetricEvidence

    async def type_votes(self, ctx: CaseContext, k: int) -> tuple[list[Vote], list[str]]:
        votes, lines = await self.inner.type_votes(ctx, k)
        if ctx.stage is not Stage.GENERATION:
            return votes, lines
        m = self.evidence.for_trace(ctx.trace)
        if m is None or m.faithfulness is None or m.faithfulness >= LOW_FAITHFULNESS:
            return votes, lines
        support = _support(m)
        if not support:
            return votes, lines
        return _reweigh(votes, support, k), [
            *lines,
            _describe(m, support, self.evidence.source),
        ]


def with_metric_evidence(
    config: DiagnosisConfig, evidence: MetricEvidence, options: CostOptions | None = None
) -> JudgesFactory:
    """The default judges factory (rules, or LLM when a trace has metered calls) with
    the type step wrapped by :class:`MetricTypeJudge`."""
    rules = rules_judges(config)
    opts = options if options is not None else CostOptions()

    def factory(calls: LLMCalls | None) -> Judges:
        base = rules if calls is None else llm_judges(config, calls, opts)
        return replace(base, types=MetricTypeJudge(base.types, evidence))

    return factory
