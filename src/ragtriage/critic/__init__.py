"""RAG-Critic (seed 004): error system, critic, bench scoring, error mining, and a
sandboxed critic-guided correction loop. See docs/critic.md."""

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
    "ErrorSystem",
    "ProgramLimits",
    "Tier2Type",
    "error_system",
    "ragec_of_tier1",
    "ragec_of_tier2",
    "run_program",
    "tiers_of_ragec",
]
