"""Label sets an annotator picks from: RAGEC E1-E16, the RAG-Critic tiers, or a
taxonomy mined by ``ragtriage mine``."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from ragtriage.errors import InputError
from ragtriage.records import ERROR_TYPE_NAMES, ERROR_TYPE_STAGE, AnswerLabel, ErrorType, Stage

__all__ = ["BUILTIN_TAXONOMIES", "LabelSet", "label_set"]

BUILTIN_TAXONOMIES = ("ragec", "critic")


@dataclass(frozen=True)
class LabelSet:
    """What an annotator can choose. ``types`` are ``(code, description)``;
    ``type_stage`` maps a code to the stage it belongs to (RAGEC only; other
    taxonomies leave it empty: any stage goes)."""

    name: str
    answer_labels: tuple[str, ...]
    stages: tuple[str, ...]
    types: tuple[tuple[str, str], ...]
    question_types: tuple[str, ...]
    type_stage: tuple[tuple[str, str], ...] = ()

    @property
    def codes(self) -> tuple[str, ...]:
        return tuple(code for code, _ in self.types)

    def stage_of(self, code: str) -> str | None:
        return dict(self.type_stage).get(code)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "answer_labels": list(self.answer_labels),
            "stages": list(self.stages),
            "types": [
                {"code": c, "description": d, "stage": self.stage_of(c)} for c, d in self.types
            ],
            "question_types": list(self.question_types),
        }


_ANSWERS = tuple(a.value for a in AnswerLabel)


def _question_types() -> tuple[str, ...]:
    """The question types of seed 001 (``ragtriage label``)."""
    from ragtriage.know import LABELS

    return LABELS


_STAGES = tuple(s.value for s in Stage)


@cache
def _ragec() -> LabelSet:
    return LabelSet(
        name="ragec",
        answer_labels=_ANSWERS,
        stages=_STAGES,
        types=tuple((t.value, ERROR_TYPE_NAMES[t]) for t in ErrorType),
        question_types=_question_types(),
        type_stage=tuple((t.value, ERROR_TYPE_STAGE[t].value) for t in ErrorType),
    )


@cache
def _critic() -> LabelSet:
    from ragtriage.critic import error_system

    system = error_system()
    types = [(t1, "tier 1") for t1 in system.tier1]
    types += [(t2.name, f"tier 2 of {t2.tier1}") for t2 in system.tier2]
    return LabelSet(
        name="critic",
        answer_labels=_ANSWERS,
        stages=_STAGES,
        types=tuple(dict.fromkeys(types)),
        question_types=_question_types(),
    )


def _mined(path: Path) -> LabelSet:
    import yaml

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"cannot read taxonomy: {exc.strerror}", path=str(path)) from exc
    except yaml.YAMLError as exc:
        raise InputError(f"not valid YAML: {exc}", path=str(path)) from exc
    clusters = data.get("clusters") if isinstance(data, dict) else None
    if not isinstance(clusters, list) or not clusters:
        raise InputError(
            "expected a `ragtriage mine` taxonomy with a non-empty 'clusters' list",
            path=str(path),
            field="clusters",
        )
    types: list[tuple[str, str]] = []
    for i, c in enumerate(clusters):
        name = c.get("name") if isinstance(c, dict) else None
        if not isinstance(name, str) or not name.strip():
            raise InputError("a cluster needs a 'name'", path=str(path), field=f"clusters.{i}.name")
        tags = c.get("tags") or []
        shown = [
            str(t.get("tag")) for t in tags[:5] if isinstance(t, dict) and t.get("tag") is not None
        ]
        if not shown and c.get("nearest_type"):  # mined on analyses: no tags
            sim = c.get("similarity")
            near = f"nearest {c['nearest_type']}" + (f" ({sim})" if sim is not None else "")
            shown = [("new; " if c.get("new") else "") + near]
        types.append((name.strip(), ", ".join(shown)))
    return LabelSet(
        name=str(path),
        answer_labels=_ANSWERS,
        stages=_STAGES,
        types=tuple(dict.fromkeys(types)),
        question_types=_question_types(),
    )


def label_set(taxonomy: str) -> LabelSet:
    """``ragec`` (E1-E16), ``critic`` (RAG-Critic tier-1 and tier-2 types, seed 004), or
    the path of a taxonomy YAML written by ``ragtriage mine`` (its cluster names)."""
    if taxonomy == "ragec":
        return _ragec()
    if taxonomy == "critic":
        return _critic()
    path = Path(taxonomy)
    if not path.is_file():
        raise ValueError(
            f"taxonomy: expected ragec, critic or a `ragtriage mine` YAML file, got {taxonomy!r}"
        )
    return _mined(path)
