"""Claim-level answer correctness and the offline entailment core (issue 28): claim
splitting, verdicts (negation, opposites, conflicting numbers/dates/names), hand-computed
precision/recall/F1, empty answers scoring 0, the LLM implementation against the local
HTTP server (majority vote over samples, two calls a trace, cache, dry run), and the
registered metric names in ``evaluate``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from diag_helpers import make_trace
from llm_server import LocalLLMServer, last_user
from metrics_helpers import ZH
from ragtriage.config import LLMConfig
from ragtriage.embedding import HashEmbedder
from ragtriage.llm import LLMRunner
from ragtriage.metrics import (
    CORRECTNESS_METRICS,
    CorrectnessInput,
    LLMCorrectness,
    OfflineJudge,
    Premise,
    check_claims,
    correctness_offline,
    evaluate_answers,
    extra_scores,
    faithfulness,
    parse_metric_gate,
    split_claims,
)

EMB = HashEmbedder(64)

CFO = "In January 2020 Tomas Reiersen took over as CFO of Halden Energy."


def _verdict(claim: str, premise: str, background: str = "") -> str:
    return check_claims([(claim, Premise.of(premise, background))])[0].verdict


def test_split_claims_en_and_zh() -> None:
    text = (
        "**Revenue** rose 8% in 2021 [1]. Costs fell 3% (Doc 2); the dividend was cut, but "
        "the buyback went on. I don't know when the plant opened."
    )
    assert split_claims(text) == [
        "Revenue rose 8% in 2021.",
        "Costs fell 3%",
        "the dividend was cut",
        "but the buyback went on.",
    ]
    assert split_claims(
        "公司营业收入增长8%【1】。文中没有提及工厂的开业时间。负债下降；利润上升。"
    ) == [
        "公司营业收入增长8%。",
        "负债下降",
        "利润上升。",
    ]
    assert split_claims("") == [] and split_claims("[1] [2]") == []


@pytest.mark.parametrize(
    ("claim", "premise", "verdict"),
    [
        ("Tomas Reiersen took over as CFO of Halden Energy in 2020.", CFO, "entailed"),
        ("Tomas Reiersen never took over as CFO.", CFO, "contradicted"),
        ("Tomas Reiersen did not become CFO of Halden Energy.", CFO, "contradicted"),
        ("Tomas Reiersen took over as CFO in January 2021.", CFO, "contradicted"),
        ("Tomas Reiersen took over as CEO of Halden Energy.", CFO, "contradicted"),
        ("Tomas Reiersen holds a law degree.", CFO, "neutral"),
        ("Revenue fell 8% in 2021.", "Revenue rose 8% in 2021.", "contradicted"),
        ("Troponin was normal.", "Troponin was elevated at 2.4 ng/mL.", "contradicted"),
        ("The plant employed 320 workers.", "The plant employed 230 workers.", "contradicted"),
        ("雷尔森从未担任首席财务官。", "雷尔森于2019年担任首席财务官。", "contradicted"),
        ("患者未接受阿司匹林治疗。", "患者接受阿司匹林治疗。", "contradicted"),
        ("图书馆由李娜创办。", "图书馆由商人张伟于1887年创办。", "contradicted"),
        ("图书馆由张伟创办。", "图书馆由商人张伟于1887年创办。", "entailed"),
        ("公司于2020年开设了新码头。", "公司负债下降。", "neutral"),
    ],
)
def test_claim_verdicts(claim: str, premise: str, verdict: str) -> None:
    assert _verdict(claim, premise) == verdict


def test_undecidable_claim_is_undetermined_with_a_reason() -> None:
    check = check_claims([("It was.", Premise.of(CFO))])[0]
    assert check.verdict == "undetermined" and check.reason
    empty = check_claims([("Tomas Reiersen is CFO.", Premise.of(""))])[0]
    assert empty.verdict == "undetermined" and empty.reason == "empty premise"


def test_question_words_are_known_but_prove_nothing() -> None:
    q = "What is the capital of France?"
    assert _verdict("The capital of France is Paris.", "Paris", q) == "entailed"
    assert _verdict("France has a capital.", "Paris", q) == "neutral"


def test_precision_recall_f1_hand_computed() -> None:
    reference = (
        "Acme Corp was founded in 1999 in Springfield. Its chief executive is Ann Lee. "
        "It sells widgets to retailers."
    )
    answer = (
        "Acme Corp was founded in 1999. Ann Lee is its chief executive. "
        "It has 4,000 employees. Acme Corp also builds rockets in Texas."
    )
    (r,) = correctness_offline([CorrectnessInput(answer, reference, "Tell me about Acme Corp.")])
    verdicts = [c.verdict for c in r.answer_claims]
    # founded 1999: entailed; Ann Lee: entailed; 4,000 employees, rockets: not found
    assert verdicts == ["entailed", "entailed", "neutral", "neutral"]
    # reference: founded in 1999 in Springfield (Springfield missing), Ann Lee, retailers
    assert [c.verdict for c in r.reference_claims] == ["neutral", "entailed", "neutral"]
    # a neutral claim counts with the share of its content the other side holds, a
    # number, date or name weighing three words: "4,000 employees" none; "Acme Corp …
    # builds rockets in Texas" 5 words and 2 names (2 more each), Acme Corp there: 4 of 9;
    # "Acme Corp was founded in 1999 in Springfield": 4 words, the year (3) and 2 names,
    # all but Springfield (1 + 2): 8 of 11; "sells widgets to retailers" none
    assert [c.coverage for c in r.answer_claims] == [None, None, 0.0, pytest.approx(4 / 9)]
    assert [c.coverage for c in r.reference_claims] == [pytest.approx(8 / 11), None, 0.0]
    p, rc = (1 + 1 + 0 + 4 / 9) / 4, (8 / 11 + 1 + 0) / 3
    assert r.precision == pytest.approx(p)
    assert r.recall == pytest.approx(rc)
    assert r.f1 == pytest.approx(2 * p * rc / (p + rc))


def test_empty_declining_and_unanswerable() -> None:
    ref = "Acme Corp was founded in 1999."
    empty, declines, none = correctness_offline(
        [
            CorrectnessInput("  ", ref),
            CorrectnessInput("I don't know.", ref),
            CorrectnessInput("Acme Corp was founded in 1999.", None),
        ]
    )
    assert (empty.precision, empty.recall, empty.f1) == (0.0, 0.0, 0.0)
    assert (declines.precision, declines.recall, declines.f1) == (0.0, 0.0, 0.0)
    assert none.precision is None and none.f1 is None and none.reason == "no ground-truth answer"


def test_evaluate_registers_the_scores_and_empty_answers_score_zero() -> None:
    zh: dict[str, Any] = ZH
    traces = [
        make_trace(example_id="right", answer="Acme Corp was founded in 1999.", context=["gd_0"]),
        make_trace(example_id="empty", answer="", context=["gd_0"]),
        make_trace(example_id="dots", answer="…。", context=["gd_0"]),
        make_trace(example_id="una", answerable=False, gt_answer="", answer="Maybe 1999."),
        make_trace(example_id="zh", answer="阿克米公司成立于1999年。", context=["gd_0"], **zh),
    ]
    extra = extra_scores(traces, None, EMB, g_eval=False, rubrics=None, selfcheck_n=0, seed=0)
    rows, agg = evaluate_answers(traces, OfflineJudge(EMB), EMB, resamples=50, extra=extra)
    by_id = {r["example_id"]: r["scores"] for r in rows}
    for name in CORRECTNESS_METRICS:
        assert by_id["right"][name] == {"judge": "offline", "value": 1.0}
        assert by_id["zh"][name]["value"] == 1.0
        assert by_id["una"][name]["value"] == "undetermined"
        assert agg["metrics"][name]["n"] == 4
    for eid in ("empty", "dots"):
        for name in (*CORRECTNESS_METRICS, "exact_match", "f1", "rouge_l", "semantic_similarity"):
            assert by_id[eid][name]["value"] == 0.0, (eid, name)
    assert by_id["empty"]["faithfulness"]["value"] == "undetermined"  # no claim to judge


def test_offline_faithfulness_sees_negation() -> None:
    trace = make_trace(
        answer="Tomas Reiersen never took over as CFO.",
        gt_texts=(CFO, "He had led a bank's finance team before."),
        context=["gd_0"],
    )
    j = OfflineJudge().judge_one(trace)
    assert j.claims is not None and [c.verdict for c in j.claims] == ["contradicted"]
    assert faithfulness(j).value == 0.0


def test_gate_on_answer_correctness() -> None:
    gate = parse_metric_gate("answer_correctness.f1>=-0.05")
    assert gate.metric == "answer_correctness.f1" and gate.value == -0.05


# ---------------------------------------------------------------- LLM implementation


def _scripted(body: dict[str, Any], index: int) -> str:
    """Claims A, B, D of the answer and C of the reference; sample ``index`` votes:
    A entailment x3, B contradiction x2, D one of each (no majority), C entailment x2."""
    system = body["messages"][0]["content"]
    if system.startswith("You break texts into factual claims"):
        assert "ANSWER:\nthe answer" in last_user(body)
        return json.dumps({"answer_claims": ["A", "B", "D"], "reference_claims": ["C"]})
    b = ("contradiction", "contradiction", "entailment")[index]
    d = ("entailment", "contradiction", "neutral")[index]
    c = ("entailment", "neutral", "entailment")[index]
    return json.dumps({"answer_claims": ["entailment", b, d], "reference_claims": [c]})


def _runner(server: LocalLLMServer, tmp_path: Path, **kw: Any) -> LLMRunner:
    cfg = LLMConfig(base_url=server.base_url, model="m", concurrency=4, max_retries=0)
    return LLMRunner.from_config(cfg, cache_path=tmp_path / "cache.sqlite", **kw)


def test_llm_correctness_majority_vote_and_cache(
    llm_server: LocalLLMServer, tmp_path: Path
) -> None:
    llm_server.behaviour.reply = _scripted
    items = [
        CorrectnessInput("the answer", "the reference", "q?"),
        CorrectnessInput("", "the reference", "q?"),
        CorrectnessInput("the answer", None, "q?"),
    ]
    runner = _runner(llm_server, tmp_path)
    judge = LLMCorrectness(runner, n=3)
    r, empty, none = judge.score_many(items)
    runner.close()
    assert [c.verdict for c in r.answer_claims] == ["entailed", "contradicted", "undetermined"]
    assert "no majority" in r.answer_claims[2].reason
    assert r.precision == 0.5 and r.recall == 1.0 and r.f1 == pytest.approx(2 / 3)
    assert (empty.precision, empty.recall, empty.f1) == (0.0, 0.0, 0.0)
    assert none.f1 is None and none.reason == "no ground-truth answer"
    # two requests for the one trace that needs them; the check asked for 3 samples
    assert runner.ledger.summary().total.requests == 2
    assert llm_server.chat_requests == 2
    again = _runner(llm_server, tmp_path)
    r2 = LLMCorrectness(again, n=3).score_many(items[:1])[0]
    again.close()
    assert llm_server.chat_requests == 2 and r2 == r


def test_llm_correctness_garbage_is_undetermined(
    llm_server: LocalLLMServer, tmp_path: Path
) -> None:
    llm_server.behaviour.reply = lambda body, index: '{"answer_claims": "x"}'
    runner = _runner(llm_server, tmp_path, use_cache=False)
    (r,) = LLMCorrectness(runner, n=1).score_many([CorrectnessInput("a b", "c d", "q")])
    runner.close()
    assert r.f1 is None and r.reason is not None and "answer_claims" in r.reason


def test_llm_correctness_dry_run_estimates_both_calls(
    llm_server: LocalLLMServer, tmp_path: Path
) -> None:
    runner = _runner(llm_server, tmp_path, dry_run=True)
    items = [CorrectnessInput("Acme was founded in 1999.", "Acme: 1999.", "q")] * 2
    LLMCorrectness(runner, n=3).score_many(items)
    runner.close()
    assert llm_server.chat_requests == 0
    assert runner.ledger.summary().total.estimated_calls == 2  # identical items share both


# ---------------------------------------------------------------- diagnosis and report


def test_every_diagnosis_carries_the_graded_score_and_reports_show_its_mean() -> None:
    import asyncio

    from ragtriage.diagnosis import Diagnoser
    from ragtriage.report.aggregate import summarize
    from ragtriage.report.compare import compare_summaries, evaluate_gate, parse_gate
    from ragtriage.report.terminal import headline

    right = make_trace(example_id="r", answer="Acme Corp was founded in 1999.")
    wrong = make_trace(example_id="w", answer="Acme Corp was founded in 2005.")
    una = make_trace(example_id="u", answerable=False, gt_answer="", answer="I don't know.")
    diagnoser = Diagnoser("rules")
    d_right, d_wrong, d_una = (asyncio.run(diagnoser.diagnose(t)) for t in (right, wrong, una))
    assert d_right.answer_correctness is not None and d_wrong.answer_correctness is not None
    assert (d_right.answer_correctness.precision, d_right.answer_correctness.f1) == (1.0, 1.0)
    assert d_wrong.answer_correctness.f1 == 0.0  # the year conflicts with the ground truth
    assert d_una.answer_correctness is not None and d_una.answer_correctness.f1 is None
    assert d_una.answer_correctness.undetermined_reason == "no ground-truth answer"
    # the rest of the diagnosis is what it was: the field is additive
    assert d_wrong.answer_label is not None and d_wrong.needs_diagnosis

    before = summarize([d_wrong, d_wrong.model_copy(update={"example_id": "w2"}), d_una])
    after = summarize([d_right, d_wrong, d_una])
    assert before.answer_correctness is not None and after.answer_correctness is not None
    assert before.answer_correctness.f1 == 0.0 and before.answer_correctness.undetermined == 1
    assert after.answer_correctness.f1 == 0.5 and after.answer_correctness.n == 2
    assert "answer correctness F1 0.500" in headline(after)
    c = compare_summaries(before, after)
    assert (c.answer_correctness_a, c.answer_correctness_b) == (0.0, 0.5)
    assert c.answer_correctness_delta == 0.5
    assert evaluate_gate(parse_gate("answer_correctness>=+0.2"), c).passed
    failed = evaluate_gate(parse_gate("answer_correctness>=+0.6"), c)
    assert not failed.passed and "+0.500" in failed.message


def test_a_ground_truth_that_declines() -> None:
    gt = "The document does not give the amount, it only says Sun paid the family."
    both, claims = correctness_offline(
        [
            CorrectnessInput("I don't know.", gt, "How much did Sun pay?"),
            CorrectnessInput("Sun paid the family. He paid $5,000.", gt, "How much did Sun pay?"),
        ]
    )
    assert (both.precision, both.recall, both.f1) == (1.0, 1.0, 1.0)
    # "Sun paid the family" is what the ground truth gives; "$5,000" is not there: of "He
    # paid $5,000" only "paid" (1 word of 1 + 3 for the amount)
    assert [c.verdict for c in claims.answer_claims] == ["entailed", "neutral"]
    assert claims.answer_claims[1].coverage == pytest.approx(1 / 4)
    assert claims.precision == pytest.approx((1 + 1 / 4) / 2)
    # the ground truth's two claims: what it says the material gives (in the answer) and
    # its decline (not made by the answer)
    assert [c.verdict for c in claims.reference_claims] == ["entailed", "neutral"]
    assert claims.reference_claims[1].reason == "the ground truth declines, the answer does not"
    assert claims.recall == pytest.approx(1 / 2)
    assert claims.f1 is not None and claims.f1 < both.f1


def test_a_ground_truth_that_declines_in_part() -> None:
    gt = "The documents do not give its height; they only say construction began in 2006."
    q = "How tall is the tower?"
    idk, partial, both, none = correctness_offline(
        [
            CorrectnessInput("I don't know.", gt, q),
            CorrectnessInput("Construction began in 2006.", gt, q),
            CorrectnessInput("Its height is not given; construction began in 2006.", gt, q),
            CorrectnessInput("The tower is 300 metres tall.", gt, q),
        ]
    )
    # the decline is a claim of its own: an answer that declines makes it (precision 1),
    # and misses what the ground truth gives beside it (recall 1 of 2)
    assert (idk.precision, idk.recall) == (1.0, 0.5)
    assert idk.answer_claims[0].reason == "both say the material does not answer"
    assert partial.precision == 1.0 and partial.recall == 0.5
    assert (both.precision, both.recall, both.f1) == (1.0, 1.0, 1.0)
    assert none.f1 is not None and none.f1 < 0.3
