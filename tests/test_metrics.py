"""Retrieval metrics: hand-computed values, undefined cases, parsing, aggregation."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragtriage.errors import InputError
from ragtriage.metrics import (
    evaluate,
    hit_at,
    mrr,
    mrr_at,
    ndcg_at,
    parse_metric,
    precision_at,
    recall_at,
)

RANKED = ["a", "x", "b", "y", "c"]
REL = {"a", "b", "z"}


def test_hand_computed_values() -> None:
    assert recall_at(1)(RANKED, REL) == pytest.approx(1 / 3)
    assert recall_at(3)(RANKED, REL) == pytest.approx(2 / 3)
    assert precision_at(3)(RANKED, REL) == pytest.approx(2 / 3)
    assert precision_at(10)(RANKED, REL) == pytest.approx(2 / 10)  # divides by k
    assert hit_at(1)(RANKED, REL) == 1.0
    assert hit_at(2)(["x", "y"], REL) == 0.0
    assert mrr(["x", "y", "b"], REL) == pytest.approx(1 / 3)
    assert mrr_at(2)(["x", "y", "b"], REL) == 0.0
    dcg = 1 / math.log2(2) + 1 / math.log2(4)
    idcg = 1 / math.log2(2) + 1 / math.log2(3) + 1 / math.log2(4)
    assert ndcg_at(5)(RANKED, REL) == pytest.approx(dcg / idcg)
    assert ndcg_at(1)(["a"], REL) == 1.0


def test_undefined_is_none_never_nan() -> None:
    for metric in (recall_at(5), precision_at(5), hit_at(5), mrr, ndcg_at(5)):
        assert metric(RANKED, set()) is None
        assert metric([], REL) == 0.0


def test_duplicates_count_once() -> None:
    assert recall_at(3)(["a", "a", "a"], {"a", "b"}) == 0.5
    assert precision_at(2)(["a", "a", "b"], {"a", "b"}) == 1.0


def test_parse_metric_names() -> None:
    assert parse_metric("recall@5").name == "recall@5"
    assert parse_metric("R@5").name == "recall@5"
    assert parse_metric(" P@3 ").name == "precision@3"
    assert parse_metric("nDCG@10").name == "ndcg@10"
    assert parse_metric("success@1").name == "hit@1"
    assert parse_metric("MRR") is mrr and parse_metric("RR@10").name == "mrr@10"
    assert parse_metric("recall@2")(RANKED, REL) == recall_at(2)(RANKED, REL)
    for bad in ("recall", "foo@3", "recall@0", "recall@x", ""):
        with pytest.raises(InputError):
            parse_metric(bad)
    with pytest.raises(ValueError):
        recall_at(0)


def test_evaluate_aggregates_and_counts_undefined() -> None:
    runs = {
        "q1": (["a", "b"], {"a"}),
        "q2": (["x", "a"], {"a"}),
        "q3": (["a"], set()),
    }
    out = evaluate(["recall@1", "mrr", "hit@2"], runs)
    assert out["recall@1"] == {"mean": 0.5, "n": 2, "undefined": 1}
    assert out["mrr"]["mean"] == pytest.approx(0.75)
    assert out["hit@2"]["mean"] == 1.0
    none = evaluate([recall_at(3)], [(["a"], set())])
    assert none["recall@3"] == {"mean": None, "n": 0, "undefined": 1}


@given(
    ranked=st.lists(st.sampled_from("abcdefghij"), max_size=12),
    relevant=st.sets(st.sampled_from("abcdefghij"), min_size=1, max_size=5),
    k=st.integers(1, 12),
)
def test_metric_ranges_and_monotonicity(ranked: list[str], relevant: set[str], k: int) -> None:
    for metric in (recall_at(k), precision_at(k), hit_at(k), mrr_at(k), ndcg_at(k)):
        value = metric(ranked, relevant)
        assert value is not None and 0.0 <= value <= 1.0 + 1e-12
    r_k = recall_at(k)(ranked, relevant)
    r_k1 = recall_at(k + 1)(ranked, relevant)
    assert r_k is not None and r_k1 is not None and r_k <= r_k1
    assert hit_at(k)(ranked, relevant) == (
        1.0 if (recall_at(k)(ranked, relevant) or 0) > 0 else 0.0
    )
