"""Advice -> config change (see :mod:`ragtriage.tuning`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from ragtriage.config import PipelineConfig
from ragtriage.diagnosis.advice import Advice, rank_advice
from ragtriage.errors import ConfigError
from ragtriage.records import Diagnosis, ErrorType

__all__ = ["AdviceChange", "AppliedAdvice", "apply_advice", "change_for_hint"]

E = ErrorType


@dataclass(frozen=True, slots=True)
class AdviceChange:
    """One setting changed for one piece of advice."""

    key: str  # "section.field", e.g. "retrieval.top_k"
    old: Any
    new: Any
    error_type: ErrorType
    title: str
    addressed: int  # failing examples whose mode or second mode is error_type

    def describe(self) -> str:
        return f"{self.key}: {self.old} -> {self.new}"


@dataclass(frozen=True, slots=True)
class AppliedAdvice:
    """The new config, the changes made (highest-ranked advice first), and the advice
    that had no applicable setting (with the reason)."""

    config: PipelineConfig
    changes: tuple[AdviceChange, ...]
    skipped: tuple[tuple[ErrorType, str], ...]


# Tuned hints (no value in the hint): which way each error type pushes the setting.
# Too-small chunks (E1) want larger ones, too-large chunks (E2) smaller ones; missing
# chunks (E4, E7, E12) want more of them; noise (E8, E9, E13, E14) fewer.
_DOWN: frozenset[tuple[ErrorType, str]] = frozenset(
    {
        (E.E2, "chunking.size"),
        (E.E2, "chunking.cjk_size"),
        (E.E8, "rerank.top_k"),
        (E.E9, "rerank.top_k"),
        (E.E13, "rerank.top_k"),
        (E.E14, "rerank.top_k"),
    }
)
_TUNABLE: frozenset[str] = frozenset(
    {
        "chunking.size",
        "chunking.cjk_size",
        "chunking.overlap",
        "retrieval.top_k",
        "rerank.top_k",
        "generation.max_tokens",
        "generation.max_context_tokens",
    }
)

# the generation settings the extractive generators read
_EXTRACTIVE_KEYS: frozenset[str] = frozenset({"backend", "ordering", "max_context_tokens"})


def _get(cfg: PipelineConfig, key: str) -> Any:
    section, name = key.split(".", 1)
    return getattr(getattr(cfg, section), name)


def _tuned(cfg: PipelineConfig, error_type: ErrorType, key: str) -> Any | str:
    """The tuned value of a numeric setting, or a reason (str) it cannot be tuned."""
    old = _get(cfg, key)
    if key == "chunking.overlap":
        size = cfg.chunking.size
        new = max(old, size // 5)
        return new if new != old else f"overlap already {old} (a fifth of size {size} or more)"
    if (error_type, key) in _DOWN:
        floor = {"rerank.top_k": 1}.get(key, 16)
        new = max(floor, old // 2)
        return new if new != old else f"{key} already at its floor ({old})"
    # at least double, and at least the library's default (a sensible middle ground);
    # a rerank.top_k above retrieval.top_k raises retrieval.top_k with it (apply_advice)
    return max(old * 2, _default(key))


def _default(key: str) -> Any:
    section, name = key.split(".", 1)
    model = type(getattr(PipelineConfig(), section))
    return model.model_fields[name].default


def change_for_hint(cfg: PipelineConfig, error_type: ErrorType, hint: str) -> tuple[str, Any] | str:
    """The ``(key, new value)`` a config hint (``section.key`` or ``section.key=value``)
    asks for under ``cfg``, or why it does not apply (a str).

    Only changes that run offline with what ``cfg`` already has are made: an LLM
    reranker, query transform or generator needs a configured endpoint; a cross-encoder
    needs ``rerank.model_path``; the extractive generators read only the context
    budget and ordering of the generation settings.
    """
    key, sep, value = hint.partition("=")
    section, _, name = key.partition(".")
    if not name or not hasattr(cfg, section) or not hasattr(getattr(cfg, section), name):
        return f"{key} is not a pipeline setting"
    extractive = cfg.generation.backend.startswith("extractive")
    if extractive and section == "generation" and name not in _EXTRACTIVE_KEYS:
        return f"{key} has no effect on the extractive generator"
    if not sep:
        if key not in _TUNABLE:
            return f"{key} has no automatic tuning rule"
        new = _tuned(cfg, error_type, key)
        return new if isinstance(new, str) else (key, new)
    needs_llm = value in ("llm", "openai", "hyde", "multi_query", "decompose")
    if needs_llm and not cfg.llm.configured:
        return f"{hint} needs an LLM endpoint (llm.base_url and llm.model)"
    if value == "cross_encoder" and not cfg.rerank.model_path:
        return f"{hint} needs rerank.model_path (a cross-encoder model)"
    old = _get(cfg, key)
    new_value: Any = value
    if isinstance(old, bool):
        new_value = value.lower() in ("1", "true", "yes")
    elif isinstance(old, int):
        new_value = int(value)
    elif isinstance(old, float):
        new_value = float(value)
    if new_value == old:
        return f"{key} is already {old}"
    return key, new_value


def _with(cfg: PipelineConfig, key: str, value: Any) -> PipelineConfig:
    section, name = key.split(".", 1)
    data = cfg.model_dump(mode="python")
    data[section][name] = value
    if key == "chunking.size" and data["chunking"]["overlap"] >= value:
        data["chunking"]["overlap"] = value // 5
    try:
        return PipelineConfig.model_validate(data)
    except ValidationError as exc:  # a hint the schema refuses is a bug in the advice table
        raise ConfigError(f"advice produced an invalid config: {exc}", field=key) from exc


def apply_advice(
    cfg: PipelineConfig,
    diagnoses: Sequence[Diagnosis],
    *,
    top: int = 1,
    name: str | None = None,
) -> AppliedAdvice:
    """Apply the ``top`` highest-ranked pieces of advice that map to a setting.

    A larger ``rerank.top_k`` than ``retrieval.top_k`` raises ``retrieval.top_k`` to
    match (a second change for the same advice).

    Advice is ranked by :func:`rank_advice`; for each, the first of its ``config_hints``
    that applies (see :func:`change_for_hint`) and touches a setting no higher-ranked
    advice changed is applied. Advice with no applicable hint is skipped with a reason.
    """
    if top < 1:
        raise ConfigError("top must be at least 1", field="top")
    changes: list[AdviceChange] = []
    skipped: list[tuple[ErrorType, str]] = []
    touched: set[str] = set()
    for advice, addressed in rank_advice(diagnoses):
        if len({c.error_type for c in changes}) >= top:
            break
        change = _first_change(cfg, advice, touched)
        if isinstance(change, str):
            skipped.append((advice.error_type, change))
            continue
        key, new = change
        coupled = [(key, new)]
        if key == "rerank.top_k" and new > cfg.retrieval.top_k:
            # forwarding more chunks than are retrieved needs more retrieved
            coupled.append(("retrieval.top_k", new))
        for k, v in coupled:
            old = _get(cfg, k)
            cfg = _with(cfg, k, v)
            touched.add(k)
            changes.append(AdviceChange(k, old, v, advice.error_type, advice.title, addressed))
    if changes:
        cfg = cfg.model_copy(update={"name": name or f"{cfg.name}+advice"})
    return AppliedAdvice(cfg, tuple(changes), tuple(skipped))


def _first_change(cfg: PipelineConfig, advice: Advice, touched: set[str]) -> tuple[str, Any] | str:
    reasons: list[str] = []
    for hint in advice.config_hints:
        if hint.partition("=")[0] in touched:
            reasons.append(f"{hint.partition('=')[0]} already changed")
            continue
        change = change_for_hint(cfg, advice.error_type, hint)
        if not isinstance(change, str):
            return change
        reasons.append(change)
    return "; ".join(reasons) or "no config hints"
