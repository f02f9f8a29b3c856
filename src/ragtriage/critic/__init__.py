"""RAG-Critic (seed 004): error system, critic, bench scoring, error mining, and a
sandboxed critic-guided correction loop. See docs/critic.md."""

# The submodules load on first use of one of their names: the diagnoser needs only the
# error system (``_system``), and the critic, bench, correction and mining parts would
# add their imports to every `ragtriage diagnose` (benchmarks/startup.py).
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ragtriage.critic._bench import (
        BenchPrediction,
        BenchSample,
        BenchScore,
        LabelF1,
        published_tag_labels,
        read_bench,
        read_published_critic_samples,
        score_bench,
    )
    from ragtriage.critic._correct import (
        ACTION_NAMES,
        TIER1_ACTIONS,
        TIER1_PROGRAMS,
        CorrectionOutcome,
        CorrectionSummary,
        LLMPlanner,
        OfflinePlanner,
        PipelineActions,
        answer_rank,
        correct_traces,
        corrected_run,
        correction_summary,
        critic_rank,
        planner_prompt,
        programs_for,
        programs_for_ragec,
    )
    from ragtriage.critic._critic import (
        Critic,
        CriticInput,
        CriticVerdict,
        LLMCritic,
        ReferenceFreeCritic,
        RulesCritic,
        critic_prompt,
        critique_traces,
        parse_critic_reply,
        snap_tags,
        trace_of_input,
        verdict_of_diagnosis,
    )
    from ragtriage.critic._executor import ProgramLimits, run_program
    from ragtriage.critic._export import dpo_records, sft_records
    from ragtriage.critic._mine import (
        MinedCluster,
        MinedTaxonomy,
        build_taxonomy,
        cluster_tags,
        mine_runs,
        nmi,
        normalize_tags,
        offline_tags,
        parse_tag_list,
        purity,
        read_tag_frequencies,
    )
    from ragtriage.critic._reffree import (
        FINDING_TAGS,
        Ask,
        Finding,
        question_asks,
        reference_free_findings,
    )
    from ragtriage.critic._system import (
        RAGEC_TO_TIERS,
        UNMAPPED_TIER2,
        ErrorSystem,
        Tier2Type,
        error_system,
        ragec_of_tier1,
        ragec_of_tier2,
        tiers_of_ragec,
    )

#: Public name -> the submodule that defines it.
_EXPORTS: dict[str, str] = {
    "BenchPrediction": "_bench",
    "BenchSample": "_bench",
    "BenchScore": "_bench",
    "LabelF1": "_bench",
    "published_tag_labels": "_bench",
    "read_bench": "_bench",
    "read_published_critic_samples": "_bench",
    "score_bench": "_bench",
    "ACTION_NAMES": "_correct",
    "TIER1_ACTIONS": "_correct",
    "TIER1_PROGRAMS": "_correct",
    "CorrectionOutcome": "_correct",
    "CorrectionSummary": "_correct",
    "correction_summary": "_correct",
    "critic_rank": "_correct",
    "LLMPlanner": "_correct",
    "OfflinePlanner": "_correct",
    "PipelineActions": "_correct",
    "answer_rank": "_correct",
    "correct_traces": "_correct",
    "corrected_run": "_correct",
    "planner_prompt": "_correct",
    "programs_for": "_correct",
    "programs_for_ragec": "_correct",
    "Critic": "_critic",
    "CriticInput": "_critic",
    "CriticVerdict": "_critic",
    "LLMCritic": "_critic",
    "ReferenceFreeCritic": "_critic",
    "RulesCritic": "_critic",
    "critic_prompt": "_critic",
    "critique_traces": "_critic",
    "parse_critic_reply": "_critic",
    "snap_tags": "_critic",
    "trace_of_input": "_critic",
    "verdict_of_diagnosis": "_critic",
    "ProgramLimits": "_executor",
    "run_program": "_executor",
    "dpo_records": "_export",
    "sft_records": "_export",
    "MinedCluster": "_mine",
    "MinedTaxonomy": "_mine",
    "build_taxonomy": "_mine",
    "cluster_tags": "_mine",
    "mine_runs": "_mine",
    "nmi": "_mine",
    "normalize_tags": "_mine",
    "offline_tags": "_mine",
    "parse_tag_list": "_mine",
    "purity": "_mine",
    "read_tag_frequencies": "_mine",
    "FINDING_TAGS": "_reffree",
    "Ask": "_reffree",
    "Finding": "_reffree",
    "question_asks": "_reffree",
    "reference_free_findings": "_reffree",
    "RAGEC_TO_TIERS": "_system",
    "UNMAPPED_TIER2": "_system",
    "ErrorSystem": "_system",
    "Tier2Type": "_system",
    "error_system": "_system",
    "ragec_of_tier1": "_system",
    "ragec_of_tier2": "_system",
    "tiers_of_ragec": "_system",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


__all__ = [
    "ACTION_NAMES",
    "FINDING_TAGS",
    "RAGEC_TO_TIERS",
    "TIER1_ACTIONS",
    "TIER1_PROGRAMS",
    "UNMAPPED_TIER2",
    "Ask",
    "BenchPrediction",
    "BenchSample",
    "BenchScore",
    "CorrectionOutcome",
    "CorrectionSummary",
    "Critic",
    "CriticInput",
    "CriticVerdict",
    "ErrorSystem",
    "Finding",
    "LLMCritic",
    "LLMPlanner",
    "LabelF1",
    "MinedCluster",
    "MinedTaxonomy",
    "OfflinePlanner",
    "PipelineActions",
    "ProgramLimits",
    "ReferenceFreeCritic",
    "RulesCritic",
    "Tier2Type",
    "answer_rank",
    "build_taxonomy",
    "cluster_tags",
    "correct_traces",
    "corrected_run",
    "correction_summary",
    "critic_prompt",
    "critic_rank",
    "critique_traces",
    "dpo_records",
    "error_system",
    "mine_runs",
    "nmi",
    "normalize_tags",
    "offline_tags",
    "parse_critic_reply",
    "parse_tag_list",
    "planner_prompt",
    "programs_for",
    "programs_for_ragec",
    "published_tag_labels",
    "purity",
    "question_asks",
    "ragec_of_tier1",
    "ragec_of_tier2",
    "read_bench",
    "read_published_critic_samples",
    "read_tag_frequencies",
    "reference_free_findings",
    "run_program",
    "score_bench",
    "sft_records",
    "snap_tags",
    "tiers_of_ragec",
    "trace_of_input",
    "verdict_of_diagnosis",
]
