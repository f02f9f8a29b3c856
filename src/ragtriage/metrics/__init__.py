"""Evaluation metrics."""

# The submodules load on first use of one of their names: the diagnoser needs the offline
# answer correctness (claim entailment), not the metrics' numpy, LLM judges or bootstrap
# (benchmarks/startup.py). A name added to __all__ goes into _EXPORTS too
# (tests/test_startup.py checks).
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ragtriage import _lazy

if TYPE_CHECKING:
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
    from ragtriage.metrics._entail import (
        ClaimCheck,
        Entailment,
        Premise,
        check_claims,
        split_claims,
    )
    from ragtriage.metrics._evaluate import (
        PrefetchingEmbedder,
        aggregate_rows,
        bootstrap_ci,
        evaluate_answers,
        prefetch_embeddings,
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

#: Public name -> the submodule that defines it (loaded on first use of the name).
_EXPORTS: dict[str, str] = {
    "Metric": "retrieval",
    "evaluate": "retrieval",
    "hit_at": "retrieval",
    "mrr": "retrieval",
    "mrr_at": "retrieval",
    "ndcg_at": "retrieval",
    "parse_metric": "retrieval",
    "precision_at": "retrieval",
    "recall_at": "retrieval",
    "MetricDelta": "_compare",
    "MetricGate": "_compare",
    "MetricGateResult": "_compare",
    "compare_scores": "_compare",
    "evaluate_metric_gate": "_compare",
    "is_metric_gate": "_compare",
    "parse_metric_gate": "_compare",
    "read_scores": "_compare",
    "answer_claims": "_context",
    "context_texts": "_context",
    "reference_sentences": "_context",
    "CORRECTNESS_METRICS": "_correctness",
    "Correctness": "_correctness",
    "CorrectnessInput": "_correctness",
    "CorrectnessResult": "_correctness",
    "OfflineCorrectness": "_correctness",
    "correctness_input": "_correctness",
    "correctness_offline": "_correctness",
    "correctness_scores": "_correctness",
    "LLMCorrectness": "_correctness_llm",
    "ClaimCheck": "_entail",
    "Entailment": "_entail",
    "Premise": "_entail",
    "check_claims": "_entail",
    "split_claims": "_entail",
    "PrefetchingEmbedder": "_evaluate",
    "aggregate_rows": "_evaluate",
    "bootstrap_ci": "_evaluate",
    "evaluate_answers": "_evaluate",
    "prefetch_embeddings": "_evaluate",
    "reference_scores": "_evaluate",
    "score_rows": "_evaluate",
    "score_trace": "_evaluate",
    "extra_scores": "_extra",
    "DEFAULT_RUBRICS": "_geval",
    "Rubric": "_geval",
    "g_eval_llm": "_geval",
    "g_eval_offline": "_geval",
    "load_rubrics": "_geval",
    "ClaimVerdict": "_judgements",
    "MetricScore": "_judgements",
    "TraceJudge": "_judgements",
    "TraceJudgements": "_judgements",
    "Verdict": "_judgements",
    "latency_cost": "_latency",
    "exact_match": "_lexical",
    "rouge_l": "_lexical",
    "token_f1": "_lexical",
    "LLMTraceJudge": "_llm_judge",
    "OfflineJudge": "_offline",
    "claim_verdict": "_offline",
    "answer_relevancy": "_rag",
    "context_precision_at": "_rag",
    "context_recall": "_rag",
    "faithfulness": "_rag",
    "find_slots": "_reverse",
    "main_claim": "_reverse",
    "reverse_questions": "_reverse",
    "PERTURBATIONS": "_robustness",
    "QUERY_PERTURBATIONS": "_robustness",
    "Retrieve": "_robustness",
    "paraphrase": "_robustness",
    "perturb_context": "_robustness",
    "robustness": "_robustness",
    "typos": "_robustness",
    "sample_answers": "_selfcheck",
    "samples_of": "_selfcheck",
    "selfcheck": "_selfcheck",
}


def __getattr__(name: str) -> Any:
    return _lazy.load(__name__, _EXPORTS, globals(), name)


def __dir__() -> list[str]:
    return _lazy.names(_EXPORTS, globals())


__all__ = [
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
    "Metric",
    "MetricDelta",
    "MetricGate",
    "MetricGateResult",
    "MetricScore",
    "OfflineCorrectness",
    "OfflineJudge",
    "PrefetchingEmbedder",
    "Premise",
    "Retrieve",
    "Rubric",
    "TraceJudge",
    "TraceJudgements",
    "Verdict",
    "aggregate_rows",
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
    "evaluate",
    "evaluate_answers",
    "evaluate_metric_gate",
    "exact_match",
    "extra_scores",
    "faithfulness",
    "find_slots",
    "g_eval_llm",
    "g_eval_offline",
    "hit_at",
    "is_metric_gate",
    "latency_cost",
    "load_rubrics",
    "main_claim",
    "mrr",
    "mrr_at",
    "ndcg_at",
    "paraphrase",
    "parse_metric",
    "parse_metric_gate",
    "perturb_context",
    "precision_at",
    "prefetch_embeddings",
    "read_scores",
    "recall_at",
    "reference_scores",
    "reference_sentences",
    "reverse_questions",
    "robustness",
    "rouge_l",
    "sample_answers",
    "samples_of",
    "score_rows",
    "score_trace",
    "selfcheck",
    "split_claims",
    "token_f1",
    "typos",
]
