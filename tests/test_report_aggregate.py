"""summarize(): the numbers of seed 000 Tables 2/3 and App. C.3, never NaN."""

from __future__ import annotations

import math
from typing import Any

from rich.console import Console

from _reportdata import (
    ADV_GEN,
    ADV_RERANK,
    ADV_RETRIEVE,
    make_diag,
    make_trace,
    sample_records,
    votes_of,
)
from ragtriage.records import AnswerLabel, ErrorType, Stage
from ragtriage.report import render_summary, summarize
from ragtriage.report.aggregate import undetermined_step

E = ErrorType


def _floats(obj: Any) -> list[float]:
    if isinstance(obj, float):
        return [obj]
    if isinstance(obj, dict):
        return [f for v in obj.values() for f in _floats(v)]
    if isinstance(obj, list):
        return [f for v in obj for f in _floats(v)]
    return []


def test_totals_accuracy_and_shares() -> None:
    traces, diags = sample_records()
    s = summarize(diags, traces)
    t = s.totals
    assert (t.examples, t.correct, t.possible_correct, t.incorrect, t.undetermined) == (
        10,
        4,
        1,
        4,
        1,
    )
    assert t.determined == 9
    assert t.failing == 4
    assert s.accuracy == 5 / 9
    assert s.incorrect_share == 4 / 9
    assert s.failing_share == 4 / 9


def test_stage_counts_are_shares_of_staged_failures() -> None:
    _, diags = sample_records()
    s = summarize(diags)
    counts = {x.stage: (x.count, x.share) for x in s.stages}
    assert counts[Stage.CHUNKING] == (0, 0.0)
    assert counts[Stage.RETRIEVAL] == (1, 1 / 3)
    assert counts[Stage.RERANKING] == (1, 1 / 3)
    assert counts[Stage.GENERATION] == (1, 1 / 3)
    assert s.stage_undetermined == 1
    assert [x.stage for x in s.stages] == list(Stage)


def test_type_mode_and_second_counts_table2() -> None:
    diags = [
        make_diag("a", stage=Stage.CHUNKING, mode=E.E3, second=E.E2),
        make_diag("b", stage=Stage.CHUNKING, mode=E.E3, second=E.E1),
        make_diag("c", stage=Stage.RETRIEVAL, mode=E.E4, second=E.E5),
        make_diag("d", stage=Stage.GENERATION, mode=E.E13, second=None),
    ]
    s = summarize(diags)
    assert s.type_count(E.E3).mode == 2
    assert s.type_count(E.E2).second == 1
    assert s.type_count(E.E13).mode == 1 and s.type_count(E.E13).second == 0
    assert (s.mode_total, s.second_total) == (4, 3)
    tot = {x.stage: x for x in s.stage_type_totals}
    assert tot[Stage.CHUNKING].mode_share == 0.5
    assert tot[Stage.CHUNKING].second_share == 2 / 3
    assert tot[Stage.RERANKING].mode == 0 and tot[Stage.RERANKING].mode_share == 0.0
    assert len(s.types) == 16


def test_mode_frequency_bins_for_k_votes_and_fallback() -> None:
    diags = [
        make_diag("a", stage=Stage.RERANKING, mode=E.E7, votes=votes_of(E.E7, 8, E.E8)),
        make_diag("b", stage=Stage.RERANKING, mode=E.E7, votes=votes_of(E.E7, 8, E.E8)),
        make_diag("c", stage=Stage.GENERATION, mode=E.E13, votes=votes_of(E.E13, 3, E.E10, k=5)),
        make_diag("d", stage=Stage.GENERATION, mode=E.E10, mode_frequency=0.5),
    ]
    s = summarize(diags)
    bins = {b.label: b.count for b in s.mode_frequency}
    assert bins["8/10 (80%)"] == 2
    assert bins["10/10 (100%)"] == 0
    assert bins["3/5 (60%)"] == 1
    assert bins["50%"] == 1
    assert sum(b.count for b in s.mode_frequency) == 4
    # every agreement level 1..K is listed for each K, K=5 before K=10
    assert [b.k for b in s.mode_frequency[:5]] == [5] * 5
    assert [b.agree for b in s.mode_frequency if b.k == 10] == list(range(1, 11))


def test_cooccurrence_of_generation_types() -> None:
    diags = [
        make_diag("a", stage=Stage.GENERATION, mode=E.E13, second=E.E10),
        make_diag("b", stage=Stage.GENERATION, mode=E.E13, second=E.E10),
        make_diag("c", stage=Stage.GENERATION, mode=E.E10, second=E.E13),
        make_diag("d", stage=Stage.GENERATION, mode=E.E13, second=E.E14),
        make_diag("e", stage=Stage.RETRIEVAL, mode=E.E4, second=E.E5),
    ]
    co = summarize(diags).cooccurrence
    idx = {t: i for i, t in enumerate(co.types)}
    assert co.types[0] is E.E9 and len(co.types) == 8
    assert co.matrix[idx[E.E13]][idx[E.E10]] == 2
    assert co.matrix[idx[E.E10]][idx[E.E13]] == 1
    assert co.examples == 4
    assert (co.top[0].first, co.top[0].second, co.top[0].count) == (E.E10, E.E13, 3)
    assert (co.top[1].first, co.top[1].second, co.top[1].count) == (E.E13, E.E14, 1)


def test_breakdown_by_question_label() -> None:
    _, diags = sample_records()
    by = {b.label: b for b in summarize(diags).by_label}
    assert set(by) == {"fact", "multi_hop"}
    fact = by["fact"]
    # fact: q1, q3 correct; q5 undetermined; q7, q9 failing
    assert (fact.examples, fact.determined, fact.failing) == (5, 4, 2)
    assert fact.accuracy == 0.5
    assert fact.stages["generation"] == 1
    assert by["multi_hop"].top_type in (E.E7, E.E4)


def test_unlabelled_examples_are_grouped_last() -> None:
    diags = [make_diag("a", answer_label=AnswerLabel.CORRECT), make_diag("b", label="z")]
    labels = [b.label for b in summarize(diags).by_label]
    assert labels == ["z", "(none)"]


def test_undetermined_counts_by_step_and_votes() -> None:
    _, diags = sample_records()
    s = summarize(diags)
    und = {(u.step, u.reason): u.count for u in s.undetermined}
    assert und == {
        ("answer_evaluation", "judge reply unparseable"): 1,
        ("stage_attribution", "no ground-truth chunk found"): 1,
    }
    assert s.undetermined_votes == 1


def test_undetermined_step_is_inferred_without_prefix() -> None:
    d = make_diag("a", stage=None, undetermined_reason="the LLM did not answer in time!")
    assert undetermined_step(d) == ("stage_attribution", "the LLM did not answer in time!")
    d2 = make_diag("b", stage=Stage.GENERATION, mode=None, undetermined_reason="x")
    assert undetermined_step(d2) == ("type_classification", "x")
    assert undetermined_step(make_diag("c", answer_label=AnswerLabel.CORRECT)) is None


def test_usage_and_pipeline_costs() -> None:
    traces, diags = sample_records()
    s = summarize(diags, traces)
    assert (s.usage.calls, s.usage.cached_calls) == (34, 3)
    assert s.usage.total_tokens == s.usage.prompt_tokens + s.usage.completion_tokens == 34 * 12
    gen = next(p for p in s.pipeline if p.stage == "generation")
    assert (gen.traces, gen.calls, gen.prompt_tokens) == (10, 10, 1000)
    assert gen.latency_ms_mean == 10.0
    assert [p.stage for p in s.pipeline] == ["retrieval", "generation"]


def test_advice_ranked_by_failing_examples_carrying_it() -> None:
    _, diags = sample_records()
    adv = summarize(diags).advice
    assert [a.text for a in adv] == [ADV_RERANK, ADV_GEN, ADV_RETRIEVE]
    assert adv[0].count == 3
    assert set(adv[0].error_types) == {E.E7, E.E16, E.E4}
    assert adv[1].error_types == [E.E16]


def test_advice_repeated_within_one_example_counts_once() -> None:
    d = make_diag("a", stage=Stage.RETRIEVAL, mode=E.E4, advice=["x", "x ", "y"])
    adv = summarize([d]).advice
    assert [(a.text, a.count) for a in adv] == [("x", 1), ("y", 1)]


def test_empty_input_gives_none_never_nan() -> None:
    s = summarize([])
    assert s.accuracy is None and s.incorrect_share is None and s.failing_share is None
    assert all(x.share is None for x in s.stages)
    assert all(x.mode_share is None for x in s.stage_type_totals)
    assert s.mode_frequency == [] and s.advice == [] and s.by_label == []
    assert not any(math.isnan(f) for f in _floats(s.model_dump()))


def test_no_nan_anywhere_in_sample_summary() -> None:
    traces, diags = sample_records()
    dump = summarize(diags, traces).model_dump()
    assert not any(math.isnan(f) or math.isinf(f) for f in _floats(dump))


def test_duplicates_keep_last_and_traces_without_diagnosis_counted() -> None:
    diags = [
        make_diag("a", stage=Stage.RETRIEVAL, mode=E.E4),
        make_diag("a", answer_label=AnswerLabel.CORRECT),
    ]
    traces = [make_trace("a"), make_trace("b")]
    s = summarize(diags, traces)
    assert s.totals.duplicates_dropped == 1
    assert s.totals.failing == 0 and s.totals.correct == 1
    assert s.totals.not_diagnosed == 1 and s.totals.examples == 2


def test_render_summary_prints_tables_and_na() -> None:
    traces, diags = sample_records()
    con = Console(record=True, width=200, color_system=None)
    render_summary(summarize(diags, traces), con)
    out = con.export_text()
    assert "accuracy 55.6%" in out
    assert "Percentage reranking" in out
    assert "E7 Low Recall" in out
    assert "8/10 (80%)" in out
    assert "stage_attribution" in out
    assert ADV_RERANK in out

    con2 = Console(record=True, width=200, color_system=None)
    render_summary(summarize([]), con2)
    assert "accuracy n/a" in con2.export_text()


def test_render_summary_does_not_interpret_markup_in_user_text() -> None:
    d = make_diag("a", stage=Stage.RETRIEVAL, mode=E.E4, advice=["use [bold]BM25[/bold] too"])
    con = Console(record=True, width=200, color_system=None)
    render_summary(summarize([d]), con)
    assert "use [bold]BM25[/bold] too" in con.export_text()


def test_undetermined_reasons_with_quoted_snippets_group_together() -> None:
    diags = [
        make_diag(
            "a",
            answer_label=None,
            undetermined_reason="answer_evaluation: unreadable LLM reply 'foo'",
        ),
        make_diag(
            "b",
            answer_label=None,
            undetermined_reason='answer_evaluation: unreadable LLM reply "b\\"ar"',
        ),
    ]
    (u,) = summarize(diags).undetermined
    assert (u.step, u.reason, u.count) == ("answer_evaluation", "unreadable LLM reply '…'", 2)
