"""Per-diagnosis confidence: the probability that a finished diagnosis is right.

"Right" means, for a failing answer, that the answer really fails *and* the stage *and*
the modal error type are the ones a careful human names; for an answer judged not
failing, that it really does not fail. An undetermined diagnosis has no confidence
(``None``, with the reason in the basis).

The model is a logistic regression per *group* (``failing`` / ``not_failing``)::

    confidence = 1 / (1 + exp(-(bias + sum_f weight_f * x_f)))

over a handful of features read off the diagnosis and its trace:

* ``label=<answer label>`` and ``rule=<id>`` — which verdict, from which
  answer-evaluation rule (when the judge names one);
* ``judge=llm`` — 1 for the LLM judge;
* failing answers only: ``mode_frequency`` (share of the K votes on the modal type),
  ``vote_margin`` (mode minus second mode, as a share of K), ``stage=<stage>``,
  ``gt_source=<how GT chunks were found>``, ``gt_share_margin`` (distance of the share
  of GT chunks that reached the generator from ``generator_gt_share``, the cascade's
  first threshold), ``coverage_margin`` (distance of the concept coverage from
  ``concept_coverage``, when the cascade measured it), ``no_gt_chunks`` (1 when no GT
  chunk is known).

Indicator features absent from the table weigh 0. The parameters live in
``confidence_table.json`` next to this module (hand-set defaults until
``benchmarks/fit_confidence.py`` refits them on human-labelled cases); a table can
also be loaded from any JSON file of the same shape.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Final, TypeGuard

from ragtriage.config import DiagnosisConfig
from ragtriage.diagnosis.rules import RULES
from ragtriage.diagnosis.stage import gt_flow
from ragtriage.errors import InputError
from ragtriage.jsonl import read_json_object
from ragtriage.records import Diagnosis, Trace

__all__ = [
    "GROUPS",
    "TABLE_FILE",
    "ConfidenceTable",
    "GroupModel",
    "confidence_features",
    "default_table",
    "diagnosis_confidence",
    "rule_weights",
    "with_confidence",
]

TABLE_FILE: Final = "confidence_table.json"
GROUPS: Final = ("failing", "not_failing")
_UNDETERMINED_VOTE = "undetermined"
_RULE_FEATURE = "rule="


@dataclass(frozen=True, slots=True)
class GroupModel:
    """Logistic-regression parameters of one group."""

    bias: float
    weights: Mapping[str, float] = field(default_factory=dict)

    def logit(self, features: Mapping[str, float]) -> float:
        return self.bias + sum(self.weights.get(f, 0.0) * x for f, x in features.items())


@dataclass(frozen=True, slots=True)
class ConfidenceTable:
    """The confidence model: one :class:`GroupModel` per group, and where it came from."""

    groups: Mapping[str, GroupModel]
    source: str = "default"

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any], *, path: str = "<table>") -> ConfidenceTable:
        groups_raw = raw.get("groups")
        if not isinstance(groups_raw, dict):
            raise InputError("expected an object 'groups'", path=path, field="groups")
        groups: dict[str, GroupModel] = {}
        for name in GROUPS:
            g = groups_raw.get(name)
            where = f"groups.{name}"
            if not isinstance(g, dict):
                raise InputError("missing group", path=path, field=where)
            bias = g.get("bias")
            weights = g.get("weights", {})
            if not _finite(bias):
                raise InputError("expected a finite number", path=path, field=f"{where}.bias")
            if not isinstance(weights, dict) or not all(
                isinstance(k, str) and _finite(v) for k, v in weights.items()
            ):
                raise InputError(
                    "expected an object of finite numbers", path=path, field=f"{where}.weights"
                )
            groups[name] = GroupModel(float(bias), {k: float(v) for k, v in weights.items()})
        source = raw.get("source", "default")
        return cls(groups, str(source))

    @classmethod
    def load(cls, path: str | Path) -> ConfidenceTable:
        return cls.from_dict(read_json_object(path, "confidence table"), path=str(path))

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": 1,
            "source": self.source,
            "groups": {
                name: {"bias": g.bias, "weights": dict(sorted(g.weights.items()))}
                for name, g in self.groups.items()
            },
        }


def _finite(v: object) -> TypeGuard[float]:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


@lru_cache(maxsize=1)
def default_table() -> ConfidenceTable:
    """The table shipped with the package."""
    text = resources.files("ragtriage.diagnosis").joinpath(TABLE_FILE).read_text("utf-8")
    return ConfidenceTable.from_dict(json.loads(text), path=TABLE_FILE)


def rule_weights(table: ConfidenceTable) -> dict[str, tuple[str, ...]]:
    """The answer rules a table weighs: rule name -> the groups with a ``rule=<name>``
    weight, for every rule of the table and every declared rule
    (:data:`ragtriage.diagnosis.rules.RULES`; ``()`` for a declared rule without one)."""
    out: dict[str, tuple[str, ...]] = {r.name: () for r in RULES}
    for group, model in table.groups.items():
        for feature in model.weights:
            if feature.startswith(_RULE_FEATURE):
                name = feature[len(_RULE_FEATURE) :]
                out[name] = (*out.get(name, ()), group)
    return out


def _vote_margin(diagnosis: Diagnosis) -> float | None:
    if not diagnosis.votes:
        return None
    counts = Counter(v for v in diagnosis.votes if v != _UNDETERMINED_VOTE).most_common(2)
    if not counts:
        return None
    second = counts[1][1] if len(counts) > 1 else 0
    return (counts[0][1] - second) / len(diagnosis.votes)


def confidence_features(
    diagnosis: Diagnosis, trace: Trace, config: DiagnosisConfig | None = None
) -> tuple[str, dict[str, float]] | None:
    """``(group, features)`` of a diagnosis, or ``None`` when it is undetermined."""
    d = diagnosis
    if d.undetermined or d.answer_label is None:
        return None
    cfg = config if config is not None else DiagnosisConfig()
    x: dict[str, float] = {f"label={d.answer_label.value}": 1.0}
    if d.answer_rule:
        x[f"{_RULE_FEATURE}{d.answer_rule}"] = 1.0
    if d.judge == "llm":
        x["judge=llm"] = 1.0
    if not d.needs_diagnosis:
        return "not_failing", x
    if d.stage is None or d.error_type is None:
        return None
    x[f"stage={d.stage.value}"] = 1.0
    if d.mode_frequency is not None:
        x["mode_frequency"] = d.mode_frequency
    margin = _vote_margin(d)
    if margin is not None:
        x["vote_margin"] = margin
    if d.gt_chunk_source:
        x[f"gt_source={d.gt_chunk_source}"] = 1.0
    share = gt_flow(trace, d.gt_chunk_ids).context_share if d.gt_chunk_ids else None
    if share is None:
        x["no_gt_chunks"] = 1.0
    else:
        x["gt_share_margin"] = abs(share - cfg.generator_gt_share)
    if d.concept_coverage is not None:
        x["coverage_margin"] = abs(d.concept_coverage - cfg.concept_coverage)
    return "failing", x


def _basis(group: str, features: Mapping[str, float], table: ConfidenceTable) -> str:
    model = table.groups[group]
    parts = sorted(
        ((f, model.weights.get(f, 0.0) * v) for f, v in features.items()),
        key=lambda fc: -abs(fc[1]),
    )
    strongest = ", ".join(f"{f} {c:+.2f}" for f, c in parts[:3] if c)
    return f"{group} model ({table.source})" + (f": {strongest}" if strongest else "")


def diagnosis_confidence(
    diagnosis: Diagnosis,
    trace: Trace,
    table: ConfidenceTable | None = None,
    *,
    config: DiagnosisConfig | None = None,
) -> tuple[float | None, str]:
    """``(confidence, basis)``; ``(None, reason)`` for an undetermined diagnosis."""
    found = confidence_features(diagnosis, trace, config)
    if found is None:
        return None, "undetermined: no verdict to be confident in"
    t = table if table is not None else default_table()
    group, features = found
    z = t.groups[group].logit(features)
    # clamp the logit: exp overflows past ~709, and a probability of exactly 0 or 1 is
    # never warranted by a handful of features
    z = max(-30.0, min(30.0, z))
    return 1.0 / (1.0 + math.exp(-z)), _basis(group, features, t)


def with_confidence(
    diagnosis: Diagnosis,
    trace: Trace,
    config: DiagnosisConfig | None = None,
    table: ConfidenceTable | None = None,
) -> Diagnosis:
    """The diagnosis with ``confidence``, ``confidence_basis`` and ``low_confidence``
    filled in (``low_confidence``: below ``config.low_confidence``)."""
    cfg = config if config is not None else DiagnosisConfig()
    conf, basis = diagnosis_confidence(diagnosis, trace, table, config=cfg)
    return diagnosis.model_copy(
        update={
            "confidence": conf,
            "confidence_basis": basis,
            "low_confidence": conf is not None and conf < cfg.low_confidence,
        }
    )
