"""Offline reverse questions for answer relevancy (issue 11): the answer's main claim
turned into wh-questions by slot type, EN and ZH, and the relevancy they give."""

from __future__ import annotations

import pytest

from diag_helpers import make_trace
from metrics_helpers import ZH
from ragtriage.embedding import MiniLMEmbedder
from ragtriage.metrics import OfflineJudge, answer_relevancy, find_slots, reverse_questions


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("Acme Corp was founded in 1999.", "When was Acme Corp founded?"),
        ("Acme employs 120 people.", "How many people Acme employs?"),
        ("The revenue reached $5 million.", "How much the revenue reached?"),
        ("Dr. Smith founded Acme.", "Who founded Acme?"),
        ("The CEO of Acme is Jane Doe.", "Who is the CEO of Acme?"),
        ("The capital of France is Paris.", "What is the capital of France?"),
        ("阿克米公司成立于1999年。", "阿克米公司成立于何时？"),
        ("公司有120名员工。", "公司有多少名员工？"),
        ("公司由张伟创立。", "公司由谁创立？"),
        ("法国的首都是巴黎。", "法国的首都是什么？"),
    ],
)
def test_question_from_slot_type(answer: str, expected: str) -> None:
    assert reverse_questions(answer)[0] == expected


def test_main_claim_skips_declining_sentences_and_slots_do_not_overlap() -> None:
    qs = reverse_questions("The documents do not say. Acme was founded in 1999.")
    assert qs == ("When was Acme founded?",)
    assert reverse_questions("I don't know.") == ()
    assert reverse_questions("文中没有提到。") == ()
    slots = find_slots("The firm was founded by John Smith in 1980.")
    assert [s.kind for s in slots] == ["date", "person"]
    assert all(a.end <= b.start or b.end <= a.start for a in slots for b in slots if a is not b)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_offline_relevancy_uses_reverse_questions(lang: str) -> None:
    kw = ZH if lang == "zh" else {}
    on = "阿克米公司成立于1999年。" if lang == "zh" else "Acme Corp was founded in 1999."
    off = "阿克米公司有三名厨师。" if lang == "zh" else "Acme Corp serves pizza with olives."
    judge = OfflineJudge()
    emb = MiniLMEmbedder()
    good, bad = (judge.judge_one(make_trace(answer=a, context=["gd_0"], **kw)) for a in (on, off))
    assert good.questions is not None and good.questions[0] != on  # not the answer itself
    query = make_trace(**kw).example.query
    rg, rb = answer_relevancy(good, query, emb), answer_relevancy(bad, query, emb)
    assert rg.value is not None and rb.value is not None
    assert rg.value > rb.value
    declined = judge.judge_one(make_trace(answer="I don't know.", context=["gd_0"]))
    assert answer_relevancy(declined, query, emb).value == 0.0  # non-committal penalty
