"""G-Eval rubric judge (seed 003: LLM-as-judge with criteria, chain of thought, then a
1–5 score per criterion).

Default rubrics: faithfulness, relevance, completeness, clarity; user rubrics come from a
YAML file (``rubrics: [{name, description, steps?}]``). The LLM judge asks for all
criteria of a trace in one call (reasoning first, then the score).

G-Eval is not offered offline: every rubric is ``undetermined`` with the reason. An
earlier offline "approximation" only re-mapped other scores to 1-5 (the offline
faithfulness, the relevance cosine, reference-token coverage, sentence length) -- no
measurement of its own, and misleading (clarity 4.99 on a run where 71 answers were
"I don't know."). The measured scores themselves (``faithfulness``,
``answer_relevancy``, ``answer_correctness.*``) are reported beside it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ragtriage.embedding import Embedder
from ragtriage.errors import InputError
from ragtriage.metrics._context import context_texts
from ragtriage.metrics._judgements import MetricScore
from ragtriage.metrics._llm_judge import llm_judge_name
from ragtriage.records import Trace

if TYPE_CHECKING:  # the LLM layer (openai, aiohttp) is imported when a call is made
    from ragtriage.llm import ChatRequest, Completion, LLMFailure, LLMRunner

__all__ = ["DEFAULT_RUBRICS", "Rubric", "g_eval_llm", "g_eval_offline", "load_rubrics"]


class Rubric(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1)
    description: str = Field(min_length=1)
    steps: tuple[str, ...] = ()


DEFAULT_RUBRICS: Final = (
    Rubric(
        name="faithfulness", description="Every statement of the answer is backed by the context."
    ),
    Rubric(name="relevance", description="The answer addresses the question asked."),
    Rubric(
        name="completeness",
        description="The answer covers every part of the question that the reference covers.",
    ),
    Rubric(name="clarity", description="The answer is clear, concise and well organised."),
)
_OFFLINE: Final = frozenset(r.name for r in DEFAULT_RUBRICS)


def load_rubrics(path: Path) -> tuple[Rubric, ...]:
    """Rubrics of a YAML file ``{rubrics: [{name, description, steps?}]}``."""
    from ragtriage.config import load_mapping

    data = load_mapping(path)
    items = data.get("rubrics")
    if not isinstance(items, list) or not items:
        raise InputError("expected a non-empty 'rubrics' list", path=str(path), field="rubrics")
    out = []
    for i, item in enumerate(items):
        try:
            out.append(Rubric.model_validate(item))
        except ValidationError as exc:
            first = exc.errors()[0]
            loc = ".".join(str(x) for x in first["loc"])
            raise InputError(
                first["msg"], path=str(path), field=f"rubrics[{i}]" + (f".{loc}" if loc else "")
            ) from exc
    return tuple(out)


#: why G-Eval has no offline score
OFFLINE_REASON: Final = (
    "G-Eval needs an LLM judge (--judge llm); offline it would only re-map other scores"
)


def g_eval_offline(
    trace: Trace, rubrics: Sequence[Rubric], embedder: Embedder
) -> dict[str, MetricScore]:
    """Every rubric ``undetermined`` offline, with the reason (:data:`OFFLINE_REASON`)."""
    del trace, embedder  # nothing offline measures a rubric
    return {
        f"g_eval.{r.name}": MetricScore(judge="offline", undetermined_reason=OFFLINE_REASON)
        for r in rubrics
    }


_SYSTEM: Final = (
    "You grade an answer of a retrieval-augmented system against criteria (G-Eval). For "
    "each criterion first reason briefly step by step, then give an integer score from 1 "
    '(worst) to 5 (best). Reply with JSON only: {"criteria": [{"name": ..., '
    '"reasoning": ..., "score": 1-5}]} with the criteria in the given order.'
)
_SCHEMA: Final[dict[str, Any]] = {
    "title": "g_eval",
    "type": "object",
    "properties": {
        "criteria": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "reasoning": {"type": "string"},
                    "score": {"type": "integer", "minimum": 1, "maximum": 5},
                },
                "required": ["name", "reasoning", "score"],
            },
        }
    },
    "required": ["criteria"],
}


def _request(trace: Trace, rubrics: Sequence[Rubric]) -> ChatRequest:
    crit = "\n".join(
        f"- {r.name}: {r.description}" + "".join(f"\n  * {s}" for s in r.steps) for r in rubrics
    )
    ctx = "\n".join(f"[{i}] {t}" for i, t in enumerate(context_texts(trace), start=1))
    ref = trace.example.answer if trace.example.answerable else "(none)"
    from ragtriage.llm import ChatRequest

    return ChatRequest.of(
        _SYSTEM,
        f"Criteria:\n{crit}\n\nQuestion: {trace.example.query}\n\nContext:\n{ctx or '(none)'}"
        f"\n\nReference answer: {ref}\n\nAnswer: {trace.answer}",
        json_schema=_SCHEMA,
        max_tokens=768,
    )


def _parse(
    out: Completion | LLMFailure, rubrics: Sequence[Rubric], judge: str
) -> dict[str, MetricScore]:
    from ragtriage.llm import LLMFailure, parse_json_object

    names = [f"g_eval.{r.name}" for r in rubrics]
    if isinstance(out, LLMFailure):
        return {
            n: MetricScore(judge=judge, undetermined_reason=f"LLM call failed: {out.reason}")
            for n in names
        }
    data = parse_json_object(out.text)
    items = data.get("criteria") if data else None
    scores: dict[str, int] = {}
    if isinstance(items, list):
        for item in items:
            if isinstance(item, dict) and isinstance(item.get("name"), str):
                s = item.get("score")
                if isinstance(s, int) and not isinstance(s, bool) and 1 <= s <= 5:
                    scores[item["name"].strip().lower()] = s
    result: dict[str, MetricScore] = {}
    for r, n in zip(rubrics, names, strict=True):
        s = scores.get(r.name.lower())
        result[n] = (
            MetricScore(value=float(s), judge=judge)
            if s is not None
            else MetricScore(judge=judge, undetermined_reason="LLM reply without a 1-5 score")
        )
    return result


def g_eval_llm(
    traces: Sequence[Trace], rubrics: Sequence[Rubric], runner: LLMRunner
) -> list[dict[str, MetricScore]]:
    """One call per trace grading every rubric; unparseable replies → undetermined."""
    judge = llm_judge_name(runner)

    async def go() -> list[Completion | LLMFailure]:
        return list(
            await asyncio.gather(
                *(runner.try_complete(_request(t, rubrics), purpose="g_eval") for t in traces)
            )
        )

    empty = "empty answer"
    from ragtriage.llm import run_sync

    outs = run_sync(go())
    return [
        _parse(o, rubrics, judge)
        if t.answer.strip()
        else {
            f"g_eval.{r.name}": MetricScore(judge=judge, undetermined_reason=empty) for r in rubrics
        }
        for t, o in zip(traces, outs, strict=True)
    ]
