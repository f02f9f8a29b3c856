"""Fault injection: faulty traces whose true stage and error type are known.

The diagnoser is calibrated on cases made like this:

1. **Healthy bases** (:func:`build_bases`). Every example runs through the real
   pipeline (chunk → retrieve → rerank → generate). An answerable example is a base
   when all its ground-truth (GT) chunks — given by the dataset or located from its
   verbatim references — reached the generator and the answer is right; an
   unanswerable one when the answer abstains. With ``answer_mode="oracle"`` (the
   default) the generated answer of a base is *replaced by the ground truth* (an
   abstention for unanswerable questions): a weak offline generator answers few
   questions right, and what is calibrated is the diagnoser, not the generator. With
   ``"generated"`` the real answer is kept and must be judged correct.
2. **Faults** (:func:`inject`). Each :class:`Injector` changes the pipeline or one of
   its intermediate results, never a label:

   * chunking (E1-E3): the GT documents are re-chunked (tiny windows, huge chunks) or
     their GT chunks refer to the query's entity only as "the company"/"该公司";
   * retrieval (E4-E6) and reranking (E7-E8): the retriever or reranker reorders its
     real output (GT chunks missed, same-document or keyword-drift chunks first, GT
     chunks cut by the reranker or ranked under noise);
   * after those, the example runs through the real pipeline again, so the answer is
     what the configured generator says from the faulty context;
   * generation (E9-E16): the answer is rewritten deterministically (EN and ZH), and
     with an LLM also by asking it to make that mistake (:class:`LLMRewriter`).

   A case is kept only when the fault took hold physically (checked per injector) and
   the rules answer evaluation judges the answer wrong; the others are counted.
3. Each kept trace gets a fresh opaque ``trace_id`` and ``metadata["injected"] =
   {type, stage, injector, base_trace_id, detail}`` — for scoring only. Diagnose
   :func:`strip_label` copies, which do not carry it.
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from pydantic import JsonValue

from ragtriage.calibrate import _rewrite, _upstream
from ragtriage.calibrate._parts import PipelineParts
from ragtriage.calibrate._prompts import parse_rewrite, rewrite_request
from ragtriage.calibrate._rewrite import AnswerFault, RewriteInput
from ragtriage.calibrate._upstream import Base, Outcome, gt_ids_of
from ragtriage.config import DiagnosisConfig
from ragtriage.diagnosis.answer_eval import evaluate_rules, needs_diagnosis
from ragtriage.generation import ABSTAIN_ANSWERS
from ragtriage.llm import LLMFailure, LLMRunner
from ragtriage.records import AnswerLabel, ErrorType, Example, Stage, Trace, types_of_stage
from ragtriage.text import detect_language

__all__ = [
    "ANSWER_MODES",
    "INJECTED_KEY",
    "INJECTORS",
    "LLM_INJECTORS",
    "AnswerMode",
    "Base",
    "BaseSummary",
    "InjectedCase",
    "Injector",
    "InjectorCounts",
    "LLMRewriter",
    "build_bases",
    "gt_ids_of",
    "inject",
    "injected_label",
    "strip_label",
]

AnswerMode = Literal["oracle", "generated"]
ANSWER_MODES: tuple[AnswerMode, ...] = ("oracle", "generated")

#: The trace metadata key holding an injected case's label (never shown to a diagnoser).
INJECTED_KEY: Final = "injected"

UpstreamFn = Callable[[Base, PipelineParts, random.Random], Awaitable["Outcome | str"]]


@dataclass(frozen=True, slots=True)
class Injector:
    """One way of making one error type happen.

    ``method``: ``upstream`` (a chunking/retrieval/reranking fault, re-run through the
    pipeline), ``rewrite`` (a deterministic answer rewrite) or ``llm`` (the generator
    LLM asked to make the mistake). ``needs``: which bases it applies to.
    """

    name: str
    error_type: ErrorType
    method: Literal["upstream", "rewrite", "llm"]
    needs: Literal["answerable", "unanswerable"]
    description: str

    @property
    def stage(self) -> Stage:
        return self.error_type.stage


_UPSTREAM: dict[str, tuple[ErrorType, UpstreamFn]] = {
    "E1-overchunk": (ErrorType.E1, _upstream.overchunk),
    "E2-underchunk": (ErrorType.E2, _upstream.underchunk),
    "E3-anaphora": (ErrorType.E3, _upstream.split_anaphora),
    "E4-missed": (ErrorType.E4, _upstream.retrieval_miss),
    "E5-same-document": (ErrorType.E5, _upstream.retrieval_same_document),
    "E6-keyword-drift": (ErrorType.E6, _upstream.retrieval_keyword_drift),
    "E7-rerank-cut": (ErrorType.E7, _upstream.rerank_drop),
    "E8-rerank-noise": (ErrorType.E8, _upstream.rerank_noise),
}


def _doc(fn: Callable[..., Any]) -> str:
    return (fn.__doc__ or "").strip().split("\n\n")[0].replace("\n", " ")


INJECTORS: tuple[Injector, ...] = (
    *(
        Injector(name, t, "upstream", "answerable", " ".join(_doc(fn).split()))
        for name, (t, fn) in _UPSTREAM.items()
    ),
    *(
        Injector(
            name,
            t,
            "rewrite",
            "unanswerable" if t is ErrorType.E9 else "answerable",
            " ".join(_doc(fn).split()),
        )
        for name, (t, fn) in _rewrite.REWRITES.items()
    ),
)

LLM_INJECTORS: tuple[Injector, ...] = tuple(
    Injector(
        f"{t.value}-llm",
        t,
        "llm",
        "unanswerable" if t is ErrorType.E9 else "answerable",
        f"the generator LLM is asked to make a {t.title} mistake",
    )
    for t in types_of_stage(Stage.GENERATION)
)


@dataclass(frozen=True, slots=True)
class InjectedCase:
    """A faulty trace with its known type; the label also sits in
    ``trace.metadata["injected"]``."""

    trace: Trace
    error_type: ErrorType
    injector: str
    base_trace_id: str
    detail: str

    @property
    def stage(self) -> Stage:
        return self.error_type.stage


@dataclass
class InjectorCounts:
    """How one injector fared over the bases."""

    applied: int = 0
    not_applicable: int = 0
    dropped_still_correct: int = 0
    reasons: Counter[str] = field(default_factory=Counter)

    def to_dict(self) -> dict[str, JsonValue]:
        return {
            "applied": self.applied,
            "not_applicable": self.not_applicable,
            "dropped_still_correct": self.dropped_still_correct,
            "reasons": dict(self.reasons.most_common()),
        }


@dataclass(frozen=True, slots=True)
class BaseSummary:
    """How many examples became healthy bases, and why the others did not."""

    examples: int
    answerable_bases: int
    unanswerable_bases: int
    answer_mode: AnswerMode
    skipped: dict[str, int]

    def to_dict(self) -> dict[str, JsonValue]:
        return {
            "examples": self.examples,
            "answerable_bases": self.answerable_bases,
            "unanswerable_bases": self.unanswerable_bases,
            "answer_mode": self.answer_mode,
            "skipped": dict(self.skipped),
        }


# ---------------------------------------------------------------------- traces


def _clean_metadata(meta: dict[str, JsonValue]) -> dict[str, JsonValue]:
    """Trace metadata a diagnoser may see: no label, no raw generator output (which
    would differ from a rewritten answer)."""
    out = {k: v for k, v in meta.items() if k != INJECTED_KEY}
    gen = out.get("generation")
    if isinstance(gen, dict):
        out["generation"] = {k: v for k, v in gen.items() if k != "raw_output"}
    return out


def _retrace(trace: Trace, **updates: Any) -> Trace:
    data = trace.model_dump()
    data.update(updates)
    return Trace.model_validate(data)


def _with_answer(trace: Trace, answer: str, citations: Sequence[str]) -> Trace:
    known = trace.chunk_map()
    return _retrace(
        trace,
        answer=answer,
        citations=[c for c in dict.fromkeys(citations) if c in known],
        metadata=_clean_metadata(dict(trace.metadata)),
    )


def strip_label(trace: Trace) -> Trace:
    """The copy of a trace a diagnoser sees: without ``metadata["injected"]``."""
    if INJECTED_KEY not in trace.metadata:
        return trace
    return _retrace(trace, metadata=_clean_metadata(dict(trace.metadata)))


def injected_label(trace: Trace) -> tuple[ErrorType, str, str] | None:
    """``(type, injector, base_trace_id)`` of an injected trace, or ``None``."""
    meta = trace.metadata.get(INJECTED_KEY)
    if not isinstance(meta, dict):
        return None
    try:
        return ErrorType(str(meta["type"])), str(meta["injector"]), str(meta["base_trace_id"])
    except (KeyError, ValueError):
        return None


def _case_id(base_id: str, injector: str, seed: int) -> str:
    digest = hashlib.sha256(f"{injector}|{seed}|{base_id}".encode()).hexdigest()[:10]
    return f"{base_id}~{digest}"


def _language(example: Example) -> str:
    return (example.language or detect_language(example.query)).lower()


# ---------------------------------------------------------------------- bases


async def build_bases(
    parts: PipelineParts,
    examples: Iterable[Example],
    *,
    answer_mode: AnswerMode = "oracle",
    config: DiagnosisConfig | None = None,
    on_example: Callable[[], None] | None = None,
) -> tuple[list[Base], BaseSummary]:
    """Run every example through the pipeline and keep the healthy ones (see the module
    docstring). The returned traces carry the oracle answer in ``oracle`` mode."""
    if answer_mode not in ANSWER_MODES:
        raise ValueError(f"unknown answer mode {answer_mode!r}; expected one of {ANSWER_MODES}")
    cfg = config if config is not None else DiagnosisConfig()
    pipeline = parts.pipeline()
    bases: list[Base] = []
    skipped: Counter[str] = Counter()
    n = 0
    for ex in examples:
        n += 1
        trace = await pipeline.run_example(ex)
        if on_example is not None:
            on_example()
        lang = _language(ex)
        if trace.metadata.get("error"):
            skipped["the pipeline failed"] += 1
            continue
        if not ex.answerable:
            if answer_mode == "oracle":
                abstain = ABSTAIN_ANSWERS["zh" if lang.startswith("zh") else "en"]
                trace = _with_answer(trace, abstain, [])
            elif evaluate_rules(ex, trace.answer, cfg).label is not AnswerLabel.ABSTAIN:
                skipped["generated answer does not abstain"] += 1
                continue
            else:
                trace = _with_answer(trace, trace.answer, trace.citations)
            bases.append(Base(trace, (), lang))
            continue
        gt, unlocated = gt_ids_of(ex, trace.gt_doc_chunks)
        if not gt:
            skipped["no ground-truth chunk located"] += 1
            continue
        if unlocated:
            skipped["a reference could not be located"] += 1
            continue
        if not set(gt) <= set(trace.context):
            skipped["not every ground-truth chunk reached the generator"] += 1
            continue
        if answer_mode == "oracle":
            trace = _with_answer(trace, ex.answer, [c for c in trace.context if c in set(gt)])
        elif evaluate_rules(ex, trace.answer, cfg).label is not AnswerLabel.CORRECT:
            skipped["generated answer not judged correct"] += 1
            continue
        else:
            trace = _with_answer(trace, trace.answer, trace.citations)
        bases.append(Base(trace, tuple(gt), lang))
    summary = BaseSummary(
        examples=n,
        answerable_bases=sum(1 for b in bases if b.trace.example.answerable),
        unanswerable_bases=sum(1 for b in bases if not b.trace.example.answerable),
        answer_mode=answer_mode,
        skipped=dict(skipped.most_common()),
    )
    return bases, summary


# ---------------------------------------------------------------------- rewrites


def _rewrite_input(base: Base) -> RewriteInput:
    trace = base.trace
    ex = trace.example
    cm = trace.chunk_map()
    context = tuple(cm[c] for c in trace.context if c in cm)
    known = (*(c.text for c in cm.values()), ex.query)
    return RewriteInput(
        query=ex.query,
        ground_truth=ex.answer,
        keypoints=tuple(ex.keypoints),
        references=tuple(ex.references),
        language=base.language,
        context=context,
        known_texts=known,
        citations=tuple(trace.citations),
    )


class LLMRewriter:
    """Asks the generator LLM (through an :class:`LLMRunner`: cached, retried) to
    rewrite a base's answer so that it makes one generation error."""

    def __init__(self, runner: LLMRunner, *, model: str = "", seed: int = 0) -> None:
        self._runner = runner
        self._model = model
        self._seed = seed

    async def rewrite(self, error_type: ErrorType, base: Base) -> AnswerFault | str:
        inp = _rewrite_input(base)
        request = rewrite_request(
            error_type,
            inp.query,
            inp.ground_truth if base.trace.example.answerable else "",
            [c.text for c in inp.context],
            model=self._model,
            seed=self._seed,
        )
        reply = await self._runner.try_complete(request, purpose="calibrate_rewrite")
        if isinstance(reply, LLMFailure):
            return f"LLM rewrite failed: {reply.kind}"
        answer = parse_rewrite(reply.text)
        if answer is None:
            return "LLM returned an empty rewrite"
        if answer.strip() == inp.ground_truth.strip():
            return "LLM returned the correct answer unchanged"
        return AnswerFault(answer, inp.citations, "rewritten by the generator LLM")


# ---------------------------------------------------------------------- inject


async def _apply(
    injector: Injector,
    base: Base,
    parts: PipelineParts,
    rng: random.Random,
    rewriter: LLMRewriter | None,
) -> Outcome | str:
    if injector.method == "upstream":
        _, fn = _UPSTREAM[injector.name]
        return await fn(base, parts, rng)
    fault: AnswerFault | str
    if injector.method == "rewrite":
        _, rewrite = _rewrite.REWRITES[injector.name]
        fault = rewrite(_rewrite_input(base), rng)
    else:
        if rewriter is None:
            return "no LLM configured for rewrites"
        fault = await rewriter.rewrite(injector.error_type, base)
    if isinstance(fault, str):
        return fault
    return Outcome(_with_answer(base.trace, fault.answer, fault.citations), fault.detail)


async def inject(
    bases: Sequence[Base],
    parts: PipelineParts,
    *,
    seed: int = 0,
    injectors: Sequence[Injector] = INJECTORS,
    config: DiagnosisConfig | None = None,
    rewriter: LLMRewriter | None = None,
    on_case: Callable[[], None] | None = None,
) -> tuple[list[InjectedCase], dict[str, InjectorCounts]]:
    """Apply every injector to every base it fits; keep the faults that took hold and
    whose answer the rules answer evaluation judges wrong. Deterministic for a seed:
    each (base, injector) pair draws from its own seeded generator."""
    cfg = config if config is not None else DiagnosisConfig()
    counts = {inj.name: InjectorCounts() for inj in injectors}
    cases: list[InjectedCase] = []
    for base in bases:
        answerable = base.trace.example.answerable
        for inj in injectors:
            tally = counts[inj.name]
            if (inj.needs == "answerable") != answerable:
                if on_case is not None:
                    on_case()
                continue
            rng = random.Random(f"{seed}|{base.trace.trace_id}|{inj.name}")
            outcome = await _apply(inj, base, parts, rng, rewriter)
            if on_case is not None:
                on_case()
            if isinstance(outcome, str):
                tally.not_applicable += 1
                tally.reasons[outcome] += 1
                continue
            trace = outcome.trace
            judged = evaluate_rules(trace.example, trace.answer, cfg)
            if judged.label is None or not needs_diagnosis(trace.example, judged.label):
                tally.dropped_still_correct += 1
                label = judged.label.value if judged.label is not None else "undetermined"
                tally.reasons[f"answer still judged {label}"] += 1
                continue
            tally.applied += 1
            base_id = base.trace.trace_id
            meta = _clean_metadata(dict(trace.metadata))
            meta[INJECTED_KEY] = {
                "type": inj.error_type.value,
                "stage": inj.stage.value,
                "injector": inj.name,
                "base_trace_id": base_id,
                "detail": outcome.detail,
            }
            final = _retrace(trace, trace_id=_case_id(base_id, inj.name, seed), metadata=meta)
            cases.append(InjectedCase(final, inj.error_type, inj.name, base_id, outcome.detail))
    return cases, counts
