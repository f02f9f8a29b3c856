"""Step judges as protocols: a caller's own answer judge and type judge, written here
as real implementations of the protocols, plug into the Diagnoser without touching
the strategies."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from diag_helpers import make_trace
from ragtriage.config import DiagnosisConfig
from ragtriage.diagnosis import (
    AnswerJudge,
    Diagnoser,
    Judges,
    TypeJudge,
    rules_judges,
)
from ragtriage.diagnosis._calls import LLMCalls
from ragtriage.diagnosis._context import CaseContext
from ragtriage.records import AnswerLabel, Judgement, Stage, Trace, Vote, types_of_stage
from ragtriage.text import normalize

REF = ["Acme Corp was founded in 1999"]


@dataclass
class ExactMatchJudge:
    """Correct only when the answer equals the ground truth after normalisation."""

    seen: list[str] = field(default_factory=list)

    async def evaluate(self, trace: Trace) -> Judgement:
        self.seen.append(trace.trace_id)
        ex = trace.example
        same = normalize(trace.answer) == normalize(ex.answer)
        return Judgement(
            example_id=ex.example_id,
            label=AnswerLabel.CORRECT if same else AnswerLabel.INCORRECT,
            reason="exact match" if same else "exact match: the answer differs",
            judge="exact-match",
        )


@dataclass
class LastTypeJudge:
    """Votes the stage's last error type K times (a stand-in for a critic model)."""

    stages: list[Stage] = field(default_factory=list)

    async def type_votes(self, ctx: CaseContext, k: int) -> tuple[list[Vote], list[str]]:
        self.stages.append(ctx.stage)
        last = types_of_stage(ctx.stage)[-1]
        return [last] * k, [f"last-type judge: {last} for {ctx.stage.value}"]


def _factory(
    config: DiagnosisConfig, answer: AnswerJudge, types: TypeJudge, built: list[LLMCalls | None]
) -> Diagnoser:
    def judges(calls: LLMCalls | None) -> Judges:
        built.append(calls)
        return replace(rules_judges(config), answer=answer, types=types)

    return Diagnoser("rules", "ragec", config, judges=judges)


async def test_custom_answer_and_type_judges_are_used_by_ragec() -> None:
    cfg = DiagnosisConfig()
    answer, types = ExactMatchJudge(), LastTypeJudge()
    built: list[LLMCalls | None] = []
    trace = make_trace(references=REF)
    d = await _factory(cfg, answer, types, built).diagnose(trace)
    assert answer.seen == [trace.trace_id] and built == [None]  # one bundle per trace
    assert d.answer_label is AnswerLabel.INCORRECT
    assert d.answer_reason == "exact match: the answer differs"
    # the cascade (GT chunks, flow, concepts) is the rules one: the GT chunk was never
    # retrieved and the query's concepts are in it, so retrieval; the votes are ours
    assert d.stage is Stage.RETRIEVAL and types.stages == [Stage.RETRIEVAL]
    last = types_of_stage(Stage.RETRIEVAL)[-1]
    assert d.error_type is last and d.votes == [last] * cfg.k and d.mode_frequency == 1.0
    assert f"last-type judge: {last} for retrieval" in d.evidence
    assert (d.judge, d.strategy) == ("rules", "ragec")


async def test_custom_answer_judge_decides_what_is_diagnosed() -> None:
    answer, types = ExactMatchJudge(), LastTypeJudge()
    diagnoser = _factory(DiagnosisConfig(), answer, types, [])
    right = make_trace(references=REF, answer="Acme Corp was founded in 1999.")
    d = await diagnoser.diagnose(right)
    assert d.answer_label is AnswerLabel.CORRECT and not d.needs_diagnosis
    assert d.stage is None and d.error_type is None and types.stages == []


async def test_rules_stage_sequential_votes_with_the_bundles_type_judge() -> None:
    types = LastTypeJudge()
    cfg = DiagnosisConfig()
    diagnoser = Diagnoser(
        "rules",
        "stage-sequential",
        cfg,
        judges=lambda calls: replace(rules_judges(cfg), types=types),
    )
    d = await diagnoser.diagnose(make_trace(references=REF))
    assert d.stage is not None and types.stages[-1] is d.stage
    assert d.error_type is types_of_stage(d.stage)[-1]


async def test_default_bundle_is_unchanged_by_a_custom_one_elsewhere() -> None:
    trace = make_trace(references=REF)
    plain = await Diagnoser("rules").diagnose(trace)
    cfg = DiagnosisConfig()
    same = await Diagnoser("rules", judges=lambda calls: rules_judges(cfg)).diagnose(trace)
    assert same == plain
