"""The rules judge's weights and thresholds, as data (issue 27).

``weights.json`` next to this module holds the numbers the offline judge decides with,
apart from the rules' own logic:

* ``type_votes`` -- for every declared answer rule (:data:`ragtriage.diagnosis.rules.RULES`),
  the generation error types its verdict votes for and the score of each (the rules
  type tests add them first, see ``types_rules._gen_answer_rule``); ``{}`` for a rule that
  votes for none;
* ``answer_thresholds`` -- the grade step's cut-offs (token F1 and recall, keypoint and
  statement coverage) and the share of a ground-truth statement's words that makes it
  stated;
* ``stage_thresholds`` -- the stage cascade's: the share of GT chunks that must reach the
  generator for a generation call, the concept coverage below which chunking is blamed,
  and the size (times the document's median) that makes a chunk oversized;
* ``retired_rules`` -- contradiction-step rules switched off (their check never decides;
  the evaluation goes on to the next), for rules that cost more than they bring on
  unseen parts (empty in the shipped file).

The shipped values are the hand-set ones; ``benchmarks/fit_weights.py`` fits them leave
one labelled part out and writes back only the values that beat the hand-set ones on
unseen parts. :func:`shipped_weights` reads the file once. :func:`active_weights` is what
the judge reads while diagnosing: the shipped weights, or those given to
:func:`using_weights` for the block it wraps (the fitting script's candidates; the answer
thresholds ``keypoint_recall`` and ``unit_recall`` feed cached coverage functions and are
read once, from the shipped file). The stage thresholds and ``correct_f1`` /
``possible_f1`` are the defaults of :class:`ragtriage.config.DiagnosisConfig`; a config
file still overrides them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace
from functools import lru_cache
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final

from ragtriage.errors import InputError
from ragtriage.jsonl import read_json_object

__all__ = [
    "ANSWER_THRESHOLDS",
    "STAGE_THRESHOLDS",
    "WEIGHTS_FILE",
    "Weights",
    "active_weights",
    "shipped_weights",
    "using_weights",
]

WEIGHTS_FILE: Final = "weights.json"

#: the answer-evaluation thresholds the file must give, each a share in [0, 1]
ANSWER_THRESHOLDS: Final = (
    # a keypoint / ground-truth statement counts as stated with more than / at least
    # this share of its words in the answer (read once: cached coverage functions)
    "keypoint_recall",
    "unit_recall",
    # long-form coverage: at or above full -> may be correct; below partial -> incorrect
    "full_coverage",
    "partial_coverage",
    # overlap grade: correct with F1 >= correct_f1 and recall >= f1_min_recall, or with
    # recall >= correct_recall; possible_correct with F1 >= possible_f1 or recall >=
    # possible_recall (correct_f1 and possible_f1 are DiagnosisConfig defaults)
    "correct_f1",
    "f1_min_recall",
    "correct_recall",
    "possible_f1",
    "possible_recall",
    # keypoint grade: correct at or above keypoints_correct, partial above keypoints_partial
    "keypoints_correct",
    "keypoints_partial",
)
#: the stage cascade's thresholds (DiagnosisConfig defaults): name -> (low, high) bounds
STAGE_THRESHOLDS: Final[Mapping[str, tuple[float, float]]] = MappingProxyType(
    {
        "generator_gt_share": (0.0, 1.0),
        "concept_coverage": (0.0, 1.0),
        "oversized_chunk_ratio": (1.0, math.inf),
    }
)
#: the error types an answer rule may vote for (generation's, seed 000 §4.4)
_GENERATION_TYPES: Final = frozenset(f"E{i}" for i in range(9, 17))


@dataclass(frozen=True, slots=True)
class Weights:
    """The data of ``weights.json`` (see the module docstring)."""

    #: rule name -> ((error type, score), ...) in the file's order
    type_votes: Mapping[str, tuple[tuple[str, float], ...]]
    answer: Mapping[str, float]
    stage: Mapping[str, float]
    source: str = "hand-set"
    #: contradiction-step rules switched off (checked against the registry by
    #: :mod:`ragtriage.diagnosis.rules`)
    retired: frozenset[str] = frozenset()

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any], *, path: str = "<weights>") -> Weights:
        """Checked weights; :class:`InputError` naming ``path`` and the field otherwise."""
        if raw.get("version") != 1:
            raise InputError("expected version 1", path=path, field="version")
        votes_raw = raw.get("type_votes")
        if not isinstance(votes_raw, dict):
            raise InputError(
                "expected an object rule -> {type: score}", path=path, field="type_votes"
            )
        votes: dict[str, tuple[tuple[str, float], ...]] = {}
        for rule, types in votes_raw.items():
            where = f"type_votes.{rule}"
            if not isinstance(types, dict):
                raise InputError("expected an object {error type: score}", path=path, field=where)
            pairs = []
            for t, score in types.items():
                if t not in _GENERATION_TYPES:
                    raise InputError(
                        f"expected a generation error type (E9-E16), got {t!r}",
                        path=path,
                        field=where,
                    )
                if not _share(score):
                    raise InputError("expected a score in [0, 1]", path=path, field=f"{where}.{t}")
                pairs.append((t, float(score)))
            votes[str(rule)] = tuple(pairs)
        answer = _numbers(raw, "answer_thresholds", ANSWER_THRESHOLDS, path)
        stage = _numbers(raw, "stage_thresholds", tuple(STAGE_THRESHOLDS), path)
        for name, (lo, hi) in STAGE_THRESHOLDS.items():
            if not lo <= stage[name] <= hi:
                raise InputError(
                    f"expected a number in [{lo}, {hi}]",
                    path=path,
                    field=f"stage_thresholds.{name}",
                )
        retired = raw.get("retired_rules", [])
        if not isinstance(retired, list) or not all(isinstance(r, str) for r in retired):
            raise InputError("expected a list of rule names", path=path, field="retired_rules")
        return cls(
            MappingProxyType(votes),
            MappingProxyType(answer),
            MappingProxyType(stage),
            str(raw.get("source", "hand-set")),
            frozenset(retired),
        )

    @classmethod
    def load(cls, path: str | Path) -> Weights:
        """Weights from a JSON file of the shipped file's shape."""
        return cls.from_dict(read_json_object(path, "weights"), path=str(path))

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": 1,
            "source": self.source,
            "type_votes": {r: dict(pairs) for r, pairs in self.type_votes.items()},
            "answer_thresholds": dict(self.answer),
            "stage_thresholds": dict(self.stage),
            "retired_rules": sorted(self.retired),
        }

    def with_values(
        self,
        *,
        type_votes: Mapping[str, tuple[tuple[str, float], ...]] | None = None,
        answer: Mapping[str, float] | None = None,
        stage: Mapping[str, float] | None = None,
        source: str | None = None,
        retired: frozenset[str] | None = None,
    ) -> Weights:
        """A copy with the given entries replaced (the others kept)."""
        return replace(
            self,
            type_votes=MappingProxyType({**self.type_votes, **(type_votes or {})}),
            answer=MappingProxyType({**self.answer, **(answer or {})}),
            stage=MappingProxyType({**self.stage, **(stage or {})}),
            source=self.source if source is None else source,
            retired=self.retired if retired is None else retired,
        )


def _share(v: object) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and 0.0 <= v <= 1.0


def _numbers(
    raw: Mapping[str, Any], key: str, names: tuple[str, ...], path: str
) -> dict[str, float]:
    section = raw.get(key)
    if not isinstance(section, dict):
        raise InputError("expected an object of numbers", path=path, field=key)
    unknown = sorted(set(section) - set(names))
    if unknown:
        raise InputError(
            f"unknown threshold {unknown[0]!r}; expected: {', '.join(names)}", path=path, field=key
        )
    out: dict[str, float] = {}
    for name in names:
        v = section.get(name)
        if not isinstance(v, int | float) or isinstance(v, bool) or not math.isfinite(v):
            raise InputError("expected a finite number", path=path, field=f"{key}.{name}")
        if key == "answer_thresholds" and not _share(v):
            raise InputError("expected a share in [0, 1]", path=path, field=f"{key}.{name}")
        out[name] = float(v)
    return out


@lru_cache(maxsize=1)
def shipped_weights() -> Weights:
    """The weights shipped with the package (``weights.json``)."""
    text = resources.files("ragtriage.diagnosis").joinpath(WEIGHTS_FILE).read_text("utf-8")
    return Weights.from_dict(json.loads(text), path=WEIGHTS_FILE)


_ACTIVE: ContextVar[Weights | None] = ContextVar("ragtriage_weights", default=None)


def active_weights() -> Weights:
    """The weights in force: those of the innermost :func:`using_weights`, else the
    shipped ones."""
    w = _ACTIVE.get()
    return w if w is not None else shipped_weights()


@contextmanager
def using_weights(weights: Weights) -> Iterator[Weights]:
    """Diagnose with ``weights`` inside the block (in this thread or task; a worker
    process reads the shipped file). The stage thresholds and ``correct_f1`` /
    ``possible_f1`` are read from the :class:`~ragtriage.config.DiagnosisConfig`, not
    from here: pass a config with the values wanted."""
    token = _ACTIVE.set(weights)
    try:
        yield weights
    finally:
        _ACTIVE.reset(token)
