"""RAGEC diagnosis: answer evaluation → stage attribution → error-type votes → advice.

The public entry point is :class:`Diagnoser` (``ragtriage.diagnosis.engine``).
Submodules are imported lazily, so importing one of them (``facts``, ``votes`` ...)
does not pull in the whole engine.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ragtriage.diagnosis.answer_eval import (
        evaluate_llm,
        evaluate_rules,
        is_abstention,
        needs_diagnosis,
    )
    from ragtriage.diagnosis.cascade import classify_stage
    from ragtriage.diagnosis.concepts import (
        ConceptCoverage,
        llm_concept_coverage,
        rules_concept_coverage,
    )
    from ragtriage.diagnosis.engine import JUDGES, Diagnoser, Judge, advice_texts
    from ragtriage.diagnosis.findings import AnswerFindings
    from ragtriage.diagnosis.gt_chunks import GTChunks, determine_gt_chunks
    from ragtriage.diagnosis.judges import (
        AnswerJudge,
        ConceptJudge,
        FindingAnswerJudge,
        GTChunkJudge,
        Judges,
        JudgesFactory,
        SingleStepJudge,
        StageSequentialJudge,
        TypeJudge,
        llm_judges,
        rules_judges,
    )
    from ragtriage.diagnosis.stage import (
        GTFlow,
        StageCall,
        gt_flow,
        stage_from_coverage,
        stage_from_flow,
    )
    from ragtriage.diagnosis.strategies import (
        PAPER_PROTOCOL,
        STRATEGIES,
        Attribution,
        CostOptions,
        Strategy,
    )
    from ragtriage.diagnosis.votes import VoteSummary, apportion_votes, summarize_votes

__all__ = [
    "JUDGES",
    "PAPER_PROTOCOL",
    "STRATEGIES",
    "AnswerFindings",
    "AnswerJudge",
    "Attribution",
    "ConceptCoverage",
    "ConceptJudge",
    "CostOptions",
    "Diagnoser",
    "FindingAnswerJudge",
    "GTChunkJudge",
    "GTChunks",
    "GTFlow",
    "Judge",
    "Judges",
    "JudgesFactory",
    "SingleStepJudge",
    "StageCall",
    "StageSequentialJudge",
    "Strategy",
    "TypeJudge",
    "VoteSummary",
    "advice_texts",
    "apportion_votes",
    "classify_stage",
    "determine_gt_chunks",
    "evaluate_llm",
    "evaluate_rules",
    "gt_flow",
    "is_abstention",
    "llm_concept_coverage",
    "llm_judges",
    "needs_diagnosis",
    "rules_concept_coverage",
    "rules_judges",
    "stage_from_coverage",
    "stage_from_flow",
    "summarize_votes",
]

_WHERE = {
    **dict.fromkeys(
        ("evaluate_llm", "evaluate_rules", "is_abstention", "needs_diagnosis"), "answer_eval"
    ),
    **dict.fromkeys(
        ("ConceptCoverage", "llm_concept_coverage", "rules_concept_coverage"), "concepts"
    ),
    **dict.fromkeys(("JUDGES", "Diagnoser", "Judge", "advice_texts"), "engine"),
    **dict.fromkeys(("GTChunks", "determine_gt_chunks"), "gt_chunks"),
    **dict.fromkeys(
        (
            "AnswerJudge",
            "ConceptJudge",
            "FindingAnswerJudge",
            "GTChunkJudge",
            "Judges",
            "JudgesFactory",
            "SingleStepJudge",
            "StageSequentialJudge",
            "TypeJudge",
            "llm_judges",
            "rules_judges",
        ),
        "judges",
    ),
    **dict.fromkeys(
        (
            "GTFlow",
            "StageCall",
            "gt_flow",
            "stage_from_coverage",
            "stage_from_flow",
        ),
        "stage",
    ),
    **dict.fromkeys(
        ("PAPER_PROTOCOL", "STRATEGIES", "Attribution", "CostOptions", "Strategy"), "strategies"
    ),
    "classify_stage": "cascade",
    "AnswerFindings": "findings",
    **dict.fromkeys(("VoteSummary", "apportion_votes", "summarize_votes"), "votes"),
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'ragtriage.diagnosis' has no attribute {name!r}")
    return getattr(importlib.import_module(f"ragtriage.diagnosis.{module}"), name)
