"""The RAG error critic (seed 004, §3.2): Correct/Error + tier-1/2/3 tags + an analysis.

Three implementations of one protocol (:class:`Critic`):

* :class:`RulesCritic` — offline, **needs a gold answer**: the rules diagnosis (RAGEC,
  seed 000) decides correct/error and the modal error type, mapped to tiers with
  :data:`~ragtriage.critic.RAGEC_TO_TIERS`;
* :class:`ReferenceFreeCritic` — offline, **no gold answer**: what can honestly be told
  from the question, the passages and the answer alone — an empty answer, an answer not
  supported by the passages, or an abstention although a passage covers the question is
  an error; an answer grounded in the passages is taken as correct (its facts are in the
  passages; whether they answer the question is not verified); anything in between is
  undetermined with the reason;
* :class:`LLMCritic` — Prompt D/E (seed 004, App. "Prompt D/E", adapted) through the LLM
  runner, with the gold answer when there is one; JSON schema when the endpoint supports
  it, tolerant parsing, tags snapped to the error system with rapidfuzz, undetermined on
  failure.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field
from rapidfuzz import fuzz, process, utils

from ragtriage.config import DiagnosisConfig
from ragtriage.critic._system import RAGEC_TIER3, error_system, tiers_of_ragec
from ragtriage.llm import ChatRequest, LLMFailure, LLMRunner, parse_json_object
from ragtriage.records import Chunk, Diagnosis, ErrorType, Example, Trace
from ragtriage.text import detect_language

__all__ = [
    "Critic",
    "CriticAgreement",
    "CriticInput",
    "CriticVerdict",
    "LLMCritic",
    "ReferenceFreeCritic",
    "RulesCritic",
    "critic_agreement",
    "critic_prompt",
    "critique_traces",
    "parse_critic_reply",
    "snap_tags",
    "trace_of_input",
    "verdict_of_diagnosis",
]

Judgement = Literal["correct", "error"]


class CriticInput(BaseModel):
    """What a critic sees: question, top-k passages, prediction, and optionally the
    gold answers (``references``; empty = reference-free)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    example_id: str
    question: str
    passages: list[str] = Field(default_factory=list)
    prediction: str = ""
    references: list[str] = Field(default_factory=list)
    trace_id: str = ""
    run_id: str | None = None

    @classmethod
    def from_trace(cls, trace: Trace, *, reference: bool, top_k: int = 5) -> CriticInput:
        texts = {c.chunk_id: c.text for c in [*trace.gt_doc_chunks, *trace.chunks]}
        ids = trace.context or [h.chunk_id for h in trace.reranked]
        passages = [texts[i] for i in ids if i in texts][:top_k]
        ex = trace.example
        refs: list[str] = []
        if reference:
            refs = [ex.answer] if ex.answer.strip() else list(ex.keypoints)
        return cls(
            example_id=ex.example_id,
            question=ex.query,
            passages=passages,
            prediction=trace.answer,
            references=refs,
            trace_id=trace.trace_id,
            run_id=trace.run_id,
        )


class CriticVerdict(BaseModel):
    """One critic judgement (a line of ``critic.jsonl``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    example_id: str
    trace_id: str = ""
    run_id: str | None = None
    critic: str
    reference: bool = Field(description="The gold answer was used.")
    judgement: Judgement | None
    tier1: list[str] = Field(default_factory=list)
    tier2: list[str] = Field(default_factory=list)
    tier3: list[str] = Field(default_factory=list)
    analysis: str = ""
    ragec_types: list[str] = Field(default_factory=list)
    undetermined: bool = False
    undetermined_reason: str | None = None

    def critic_json(self) -> dict[str, Any]:
        """The verdict in the critic's own output format (Prompt D)."""
        if self.judgement == "correct":
            return {"Judgement": "Correct"}
        return {
            "Judgement": "Error",
            "Error analysis": self.analysis,
            "tag1": list(self.tier1),
            "tag2": list(self.tier2),
            "tag3": list(self.tier3),
        }


class Critic(Protocol):
    """Judges critic inputs; never raises for one bad input (undetermined instead)."""

    name: str

    async def judge(self, inputs: Sequence[CriticInput]) -> list[CriticVerdict]: ...


def _undetermined(inp: CriticInput, critic: str, reason: str) -> CriticVerdict:
    return CriticVerdict(
        example_id=inp.example_id,
        trace_id=inp.trace_id,
        run_id=inp.run_id,
        critic=critic,
        reference=bool(inp.references),
        judgement=None,
        undetermined=True,
        undetermined_reason=reason,
    )


# -- rules (with a reference) -----------------------------------------------------------


def verdict_of_diagnosis(d: Diagnosis, *, critic: str = "rules") -> CriticVerdict:
    """A RAGEC diagnosis read as a critic verdict: failing → Error with the tiers of its
    modal type (and its second type) and their published tier-3 tags
    (:data:`~ragtriage.critic.RAGEC_TIER3`, whose tier-2/1 join the lists)."""
    base: dict[str, Any] = {
        "example_id": d.example_id,
        "trace_id": d.trace_id,
        "run_id": d.run_id,
        "critic": critic,
        "reference": True,
    }
    if d.answer_label is None:
        reason = d.undetermined_reason or "answer evaluation undetermined"
        return CriticVerdict(**base, judgement=None, undetermined=True, undetermined_reason=reason)
    if not d.needs_diagnosis:
        return CriticVerdict(**base, judgement="correct", analysis=d.answer_reason)
    types = [t for t in (d.error_type, d.second_type) if t is not None]
    tier1: list[str] = []
    tier2: list[str] = []
    tier3: list[str] = []
    system = error_system()
    for t in types:
        t1, t2 = tiers_of_ragec(t)
        tag3, tag_t2 = RAGEC_TIER3[ErrorType(t)]
        t2 = [*t2, tag_t2]
        t1 = [*t1, system.tier1_of(tag_t2)]
        tier1 += [x for x in t1 if x not in tier1]
        tier2 += [x for x in t2 if x not in tier2]
        tier3 += [tag3] if tag3 not in tier3 else []
    parts = [d.answer_reason, d.stage_reason, *d.evidence[:3]]
    analysis = " ".join(p.strip() for p in parts if p and p.strip())
    return CriticVerdict(
        **base,
        judgement="error",
        tier1=tier1,
        tier2=tier2,
        tier3=tier3,
        analysis=analysis,
        ragec_types=[t.value for t in types],
    )


def trace_of_input(inp: CriticInput) -> Trace:
    """A minimal trace of a critic input (passages as the context chunks), so the
    rules diagnosis can judge samples that come without a pipeline run."""
    chunks = [
        Chunk(chunk_id=f"p{i}", doc_id=f"p{i}", text=text, start=0, end=len(text), index=0)
        for i, text in enumerate(inp.passages)
    ]
    refs = [r for r in inp.references if r.strip()]
    example = Example(
        example_id=inp.example_id,
        query=inp.question,
        answer=refs[0] if refs else "",
        answerable=bool(refs),
        keypoints=refs[1:] if len(refs) > 1 else [],
        language=detect_language(inp.question),
    )
    return Trace(
        trace_id=inp.trace_id or inp.example_id,
        run_id=inp.run_id,
        example=example,
        chunks=chunks,
        context=[c.chunk_id for c in chunks],
        answer=inp.prediction,
    )


class RulesCritic:
    """Offline critic from the rules diagnosis; needs gold answers (undetermined without)."""

    name = "rules"

    def __init__(self, config: DiagnosisConfig | None = None) -> None:
        self._config = config if config is not None else DiagnosisConfig()

    async def judge(self, inputs: Sequence[CriticInput]) -> list[CriticVerdict]:
        from ragtriage.diagnosis.engine import Diagnoser

        with_ref = [i for i in inputs if i.references]
        diagnoser = Diagnoser("rules", "ragec", self._config, None)
        diagnoses = await diagnoser.diagnose_many([trace_of_input(i) for i in with_ref], 8)
        by_id = {d.example_id: d for d in diagnoses}
        out: list[CriticVerdict] = []
        for inp in inputs:
            d = by_id.get(inp.example_id)
            if not inp.references or d is None:
                out.append(_undetermined(inp, self.name, "the rules critic needs a gold answer"))
            else:
                out.append(verdict_of_diagnosis(d, critic=self.name))
        return out


class CriticAgreement(BaseModel):
    """A critic's Correct/Error against gold-answer diagnoses of the same traces."""

    model_config = ConfigDict(frozen=True)

    n: int = Field(description="Traces with both a verdict and a decided diagnosis.")
    agree: int
    false_correct: int = Field(description="Called correct; the gold answer fails it.")
    false_error: int = Field(description="Called an error; the gold answer passes it.")
    undetermined: int = Field(description="Undetermined verdicts (counted as disagreeing).")

    def line(self) -> str:
        return (
            f"against the gold-answer diagnoses: agree on {self.agree} of {self.n}; "
            f"{self.false_correct} called correct that the gold answer fails, "
            f"{self.false_error} called an error that it passes, "
            f"{self.undetermined} undetermined"
        )


def critic_agreement(
    verdicts: Sequence[CriticVerdict], diagnoses: Sequence[Diagnosis]
) -> CriticAgreement:
    """Correct/Error of ``verdicts`` against the diagnoses' passing/failing (a diagnosis
    whose answer evaluation is undetermined is left out)."""
    gold = {d.example_id: not d.needs_diagnosis for d in diagnoses if d.answer_label is not None}
    n = agree = false_correct = false_error = undetermined = 0
    for v in verdicts:
        passes = gold.get(v.example_id)
        if passes is None:
            continue
        n += 1
        if v.judgement is None:
            undetermined += 1
        elif (v.judgement == "correct") == passes:
            agree += 1
        elif v.judgement == "correct":
            false_correct += 1
        else:
            false_error += 1
    return CriticAgreement(
        n=n,
        agree=agree,
        false_correct=false_correct,
        false_error=false_error,
        undetermined=undetermined,
    )


# -- reference-free, offline ---------------------------------------------------------------


class ReferenceFreeCritic:
    """Offline, no gold answer: does the answer answer *this* question?

    The checks of :mod:`ragtriage.critic._reffree` (answer type per ask, every part
    addressed, off-topic answers, declines against what the passages hold, contradiction
    with the passages, mixed-up entities, grounding); each finding maps to a published
    tier-3 tag and its tier-2/tier-1 (:data:`~ragtriage.critic._reffree.FINDING_TAGS`).
    No finding → Correct (not checked against a reference); an answer with neither
    content words nor facts → undetermined.
    """

    name = "reference-free"

    def __init__(self, *, unsupported: float = 0.5) -> None:
        self.unsupported = unsupported

    def judge_one(self, inp: CriticInput) -> CriticVerdict:
        from ragtriage.critic._reffree import FINDING_TAGS, reference_free_findings

        base: dict[str, Any] = {
            "example_id": inp.example_id,
            "trace_id": inp.trace_id,
            "run_id": inp.run_id,
            "critic": self.name,
            "reference": False,
        }
        findings, notes = reference_free_findings(
            inp.question, inp.passages, inp.prediction, unsupported=self.unsupported
        )
        if not findings:
            if not notes:
                return _undetermined(inp, self.name, "the prediction has nothing to check")
            return CriticVerdict(**base, judgement="correct", analysis="; ".join(notes) + ".")
        system = error_system()
        tier1: list[str] = []
        tier2: list[str] = []
        tier3: list[str] = []
        ragec: list[str] = []
        for f in findings:
            tag3, t2, types = FINDING_TAGS[f.kind]
            t1 = system.tier1_of(t2)
            for out, value in ((tier1, t1), (tier2, t2), (tier3, tag3)):
                if value not in out:
                    out.append(value)
            ragec += [t for t in types if t not in ragec]
        return CriticVerdict(
            **base,
            judgement="error",
            tier1=tier1,
            tier2=tier2,
            tier3=tier3,
            analysis=" ".join(f.detail for f in findings),
            ragec_types=ragec,
        )

    async def judge(self, inputs: Sequence[CriticInput]) -> list[CriticVerdict]:
        return [self.judge_one(i) for i in inputs]


# -- LLM -------------------------------------------------------------------------------------

# Adapted from seed 004 (RAG-Critic), App. B, Prompt D (fine-tuning template) and Prompt E
# (RAG-Error bench evaluation template): the tier lists are given as in Prompt E; the gold
# answer line, when there is one, follows the authors' published critic inputs.
_SYSTEM = (
    "You are a critical system designed to provide useful error type tags for "
    "retrieval-augmented generation (RAG) tasks. Your goal is to assist in detailed error "
    "analysis to improve the performance of AI assistants."
)


def critic_prompt(inp: CriticInput) -> str:
    system = error_system()
    passages = "\n".join(f"[{i + 1}] {p}" for i, p in enumerate(inp.passages)) or "(none)"
    gold = (
        f"**Golden answer:** {json.dumps(inp.references, ensure_ascii=False)}\n\n"
        if inp.references
        else ""
    )
    return (
        "Below are the [Question], the top-5 retrieved relevant [Passages], and the "
        "[Model's Prediction] for the RAG task.\n\n"
        f"**Question:** {inp.question}\n\n**Passage:**\n{passages}\n\n"
        f"**Model's Prediction:** {inp.prediction}\n\n{gold}"
        "Please first determine whether the model's prediction is correct. If it is "
        'correct, output: {"Judgement": "Correct"}\n\n'
        "If it is incorrect, give these error types, tag1 corresponds to tag2 one-to-one:\n"
        f"tag1 = {json.dumps(list(system.tier1))}\n"
        f"tag2 = {json.dumps(list(system.tier2_names))}\n\n"
        "Please identify the error tags at three levels, from coarse to fine (tag3 are "
        "short free-form tags), and provide a detailed error analysis. Adhere strictly to "
        'the following JSON format:\n{"Judgement": "Error", "Error analysis": "", '
        '"tag1": [], "tag2": [], "tag3": []}'
    )


def _schema() -> dict[str, Any]:
    system = error_system()
    return {
        "title": "rag_critic",
        "type": "object",
        "properties": {
            "Judgement": {"type": "string", "enum": ["Correct", "Error"]},
            "Error analysis": {"type": "string"},
            "tag1": {"type": "array", "items": {"type": "string", "enum": list(system.tier1)}},
            "tag2": {
                "type": "array",
                "items": {"type": "string", "enum": list(system.tier2_names)},
            },
            "tag3": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["Judgement"],
    }


def snap_tags(raw: Any, names: Sequence[str], *, cutoff: float = 85.0) -> list[str]:
    """Tags of ``raw`` (a list, or a comma/semicolon separated string) snapped to the
    closest of ``names`` with rapidfuzz; tags that match nothing well are dropped."""
    if isinstance(raw, str):
        items: list[Any] = [p for part in raw.split(";") for p in part.split(",")]
    elif isinstance(raw, list):
        items = raw
    else:
        return []
    out: list[str] = []
    for item in items:
        if not isinstance(item, str) or not item.strip():
            continue
        hit = process.extractOne(
            item.strip(),
            list(names),
            scorer=fuzz.WRatio,
            processor=utils.default_process,
            score_cutoff=cutoff,
        )
        if hit is not None and hit[0] not in out:
            out.append(str(hit[0]))
    return out


def _field(data: dict[str, Any], *names: str) -> Any:
    folded = {"".join(k.lower().split()).replace("_", ""): v for k, v in data.items()}
    for name in names:
        key = "".join(name.lower().split()).replace("_", "")
        if key in folded:
            return folded[key]
    return None


def parse_critic_reply(text: str, inp: CriticInput, *, critic: str = "llm") -> CriticVerdict:
    """A critic reply → verdict; unreadable replies are undetermined with the reason."""
    data = parse_json_object(text)
    if data is None:
        return _undetermined(inp, critic, "critic reply is not a JSON object")
    raw = _field(data, "Judgement", "Judgment", "verdict")
    if not isinstance(raw, str):
        return _undetermined(inp, critic, "critic reply has no 'Judgement'")
    snapped = snap_tags([raw], ["Correct", "Error", "Incorrect"], cutoff=80.0)
    if not snapped:
        return _undetermined(inp, critic, f"unknown judgement {raw[:40]!r}")
    base: dict[str, Any] = {
        "example_id": inp.example_id,
        "trace_id": inp.trace_id,
        "run_id": inp.run_id,
        "critic": critic,
        "reference": bool(inp.references),
    }
    if snapped[0] == "Correct":
        return CriticVerdict(**base, judgement="correct")
    system = error_system()
    tier2 = snap_tags(_field(data, "tag2"), system.tier2_names)
    tier1 = snap_tags(_field(data, "tag1"), system.tier1)
    for t2 in tier2:  # the tier-1 of every tier-2 type is implied
        t1 = system.tier1_of(t2)
        if t1 not in tier1:
            tier1.append(t1)
    raw3 = _field(data, "tag3")
    tier3 = (
        [t.strip() for t in raw3 if isinstance(t, str) and t.strip()]
        if isinstance(raw3, list)
        else []
    )
    analysis = _field(data, "Error analysis", "Error_analysis", "analysis")
    from ragtriage.critic._system import ragec_of_tier2

    ragec = list(dict.fromkeys(t.value for t2 in tier2 for t in ragec_of_tier2(t2)))
    return CriticVerdict(
        **base,
        judgement="error",
        tier1=tier1,
        tier2=tier2,
        tier3=tier3[:10],
        analysis=analysis if isinstance(analysis, str) else "",
        ragec_types=ragec,
    )


class LLMCritic:
    """Prompt D/E through the runner (cached, concurrency-limited, dry-run-estimable)."""

    name = "llm"

    def __init__(
        self, runner: LLMRunner, *, model: str = "", use_schema: bool = True, max_tokens: int = 512
    ) -> None:
        self._runner = runner
        self._model = model
        self._use_schema = use_schema
        self._max_tokens = max_tokens

    def request(self, inp: CriticInput) -> ChatRequest:
        return ChatRequest.of(
            _SYSTEM,
            critic_prompt(inp),
            model=self._model,
            temperature=0.0,
            max_tokens=self._max_tokens,
            json_schema=_schema() if self._use_schema else None,
        )

    async def judge_one(self, inp: CriticInput) -> CriticVerdict:
        outcome = await self._runner.try_complete(self.request(inp), purpose="critic")
        if isinstance(outcome, LLMFailure):
            return _undetermined(inp, self.name, f"critic LLM call failed: {outcome.reason}")
        return parse_critic_reply(outcome.text, inp, critic=self.name)

    async def judge(self, inputs: Sequence[CriticInput]) -> list[CriticVerdict]:
        return list(await asyncio.gather(*(self.judge_one(i) for i in inputs)))


async def critique_traces(
    traces: Sequence[Trace],
    *,
    critic: str = "rules",
    reference: bool = False,
    runner: LLMRunner | None = None,
    model: str = "",
    diagnoses: Sequence[Diagnosis] | None = None,
    config: DiagnosisConfig | None = None,
) -> list[CriticVerdict]:
    """Critic verdicts of a run's traces.

    ``critic="rules"``: with ``reference`` the rules diagnosis of each trace (``diagnoses``
    when given, else computed) read as a verdict; without, :class:`ReferenceFreeCritic`.
    ``critic="llm"``: :class:`LLMCritic` over ``runner``, with the gold answer when
    ``reference``.
    """
    inputs = [CriticInput.from_trace(t, reference=reference) for t in traces]
    if critic == "llm":
        if runner is None:
            raise ValueError("the llm critic needs an LLM runner")
        return await LLMCritic(runner, model=model).judge(inputs)
    if critic != "rules":
        raise ValueError(f"unknown critic {critic!r}")
    if not reference:
        return await ReferenceFreeCritic().judge(inputs)
    by_id = await rules_diagnoses(traces, diagnoses, config)
    return [verdict_of_diagnosis(by_id[t.example.example_id]) for t in traces]


async def rules_diagnoses(
    traces: Sequence[Trace],
    diagnoses: Sequence[Diagnosis] | None = None,
    config: DiagnosisConfig | None = None,
) -> dict[str, Diagnosis]:
    """Each trace's gold-answer rules diagnosis by example id: ``diagnoses`` where they
    cover a trace, the rules judge (RAGEC strategy) for the others."""
    by_id = {d.example_id: d for d in diagnoses or ()}
    todo = [t for t in traces if t.example.example_id not in by_id]
    if todo:
        from ragtriage.diagnosis.engine import Diagnoser

        cfg = config if config is not None else DiagnosisConfig()
        for d in await Diagnoser("rules", "ragec", cfg, None).diagnose_many(todo, 8):
            by_id[d.example_id] = d
    return by_id
