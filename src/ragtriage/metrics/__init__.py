"""Evaluation metrics."""

from ragtriage.metrics.retrieval import (
    Metric,
    evaluate,
    hit_at,
    mrr,
    mrr_at,
    ndcg_at,
    parse_metric,
    precision_at,
    recall_at,
)

__all__ = [
    "Metric",
    "aggregate_rows",
    "evaluate",
    "hit_at",
    "mrr",
    "mrr_at",
    "ndcg_at",
    "parse_metric",
    "precision_at",
    "recall_at",
    "score_rows",
]

from ragtriage.metrics._compare import (
    MetricDelta,
    MetricGate,
    MetricGateResult,
    compare_scores,
    evaluate_metric_gate,
    is_metric_gate,
    parse_metric_gate,
    read_scores,
)
from ragtriage.metrics._context import answer_claims, context_texts, reference_sentences
from ragtriage.metrics._correctness import (
    CORRECTNESS_METRICS,
    Correctness,
    CorrectnessInput,
    CorrectnessResult,
    OfflineCorrectness,
    correctness_input,
    correctness_offline,
    correctness_scores,
)
from ragtriage.metrics._correctness_llm import LLMCorrectness
from ragtriage.metrics._entail import ClaimCheck, Entailment, Premise, check_claims, split_claims
from ragtriage.metrics._evaluate import (
    aggregate_rows,
    bootstrap_ci,
    evaluate_answers,
    reference_scores,
    score_rows,
    score_trace,
)
from ragtriage.metrics._extra import extra_scores
from ragtriage.metrics._geval import (
    DEFAULT_RUBRICS,
    Rubric,
    g_eval_llm,
    g_eval_offline,
    load_rubrics,
)
from ragtriage.metrics._judgements import (
    ClaimVerdict,
    MetricScore,
    TraceJudge,
    TraceJudgements,
    Verdict,
)
from ragtriage.metrics._latency import latency_cost
from ragtriage.metrics._lexical import exact_match, rouge_l, token_f1
from ragtriage.metrics._llm_judge import LLMTraceJudge
from ragtriage.metrics._offline import OfflineJudge, claim_verdict
from ragtriage.metrics._rag import (
    answer_relevancy,
    context_precision_at,
    context_recall,
    faithfulness,
)
from ragtriage.metrics._reverse import find_slots, main_claim, reverse_questions
from ragtriage.metrics._robustness import (
    PERTURBATIONS,
    QUERY_PERTURBATIONS,
    Retrieve,
    paraphrase,
    perturb_context,
    robustness,
    typos,
)
from ragtriage.metrics._selfcheck import sample_answers, samples_of, selfcheck

__all__ += [
    "CORRECTNESS_METRICS",
    "DEFAULT_RUBRICS",
    "PERTURBATIONS",
    "QUERY_PERTURBATIONS",
    "ClaimCheck",
    "ClaimVerdict",
    "Correctness",
    "CorrectnessInput",
    "CorrectnessResult",
    "Entailment",
    "LLMCorrectness",
    "LLMTraceJudge",
    "MetricDelta",
    "MetricGate",
    "MetricGateResult",
    "MetricScore",
    "OfflineCorrectness",
    "OfflineJudge",
    "Premise",
    "Retrieve",
    "Rubric",
    "TraceJudge",
    "TraceJudgements",
    "Verdict",
    "answer_claims",
    "answer_relevancy",
    "bootstrap_ci",
    "check_claims",
    "claim_verdict",
    "compare_scores",
    "context_precision_at",
    "context_recall",
    "context_texts",
    "correctness_input",
    "correctness_offline",
    "correctness_scores",
    "evaluate_answers",
    "evaluate_metric_gate",
    "exact_match",
    "extra_scores",
    "faithfulness",
    "find_slots",
    "g_eval_llm",
    "g_eval_offline",
    "is_metric_gate",
    "latency_cost",
    "load_rubrics",
    "main_claim",
    "paraphrase",
    "parse_metric_gate",
    "perturb_context",
    "read_scores",
    "reference_scores",
    "reference_sentences",
    "reverse_questions",
    "robustness",
    "rouge_l",
    "sample_answers",
    "samples_of",
    "score_trace",
    "selfcheck",
    "split_claims",
    "token_f1",
    "typos",
]
