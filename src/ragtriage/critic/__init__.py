"""RAG-Critic (seed 004): error system, critic, bench scoring, error mining, and a
sandboxed critic-guided correction loop. See docs/critic.md."""

from ragtriage.critic._bench import (
    BenchPrediction,
    BenchSample,
    BenchScore,
    LabelF1,
    read_bench,
    read_published_critic_samples,
    score_bench,
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

__all__ = [
    "RAGEC_TO_TIERS",
    "UNMAPPED_TIER2",
    "BenchPrediction",
    "BenchSample",
    "BenchScore",
    "Critic",
    "CriticInput",
    "CriticVerdict",
    "ErrorSystem",
    "LLMCritic",
    "LabelF1",
    "ProgramLimits",
    "ReferenceFreeCritic",
    "RulesCritic",
    "Tier2Type",
    "critic_prompt",
    "critique_traces",
    "error_system",
    "parse_critic_reply",
    "ragec_of_tier1",
    "ragec_of_tier2",
    "read_bench",
    "read_published_critic_samples",
    "run_program",
    "score_bench",
    "snap_tags",
    "tiers_of_ragec",
    "trace_of_input",
    "verdict_of_diagnosis",
]
