"""Answer/context evaluation metrics (issue 11): pure metric functions, the offline judge,
the LLM judge against the local HTTP server, and ``ragtriage evaluate``."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from diag_helpers import make_trace
from llm_server import LocalLLMServer
from metrics_helpers import ZH, metrics_reply
from ragtriage.config import LLMConfig
from ragtriage.embedding import HashEmbedder
from ragtriage.llm import LLMRunner
from ragtriage.metrics import (
    ClaimVerdict,
    LLMTraceJudge,
    OfflineJudge,
    TraceJudgements,
    claim_verdict,
    context_precision_at,
    context_recall,
    evaluate_answers,
    exact_match,
    faithfulness,
    prefetch_embeddings,
    rouge_l,
    token_f1,
)
from ragtriage.records import Trace

EMB = HashEmbedder(64)


def test_lexical_metrics_en_and_zh() -> None:
    assert exact_match("The Acme Corp.", "the acme corp") == 1.0
    assert exact_match("Acme", "Acme Corp") == 0.0
    assert token_f1("founded in 1999", "Acme was founded in 1999") == pytest.approx(0.75)
    # Chinese: characters are the tokens
    f1_zh = token_f1("成立于1999年", "公司成立于1999年")
    assert f1_zh is not None and 0.8 < f1_zh < 1.0
    assert rouge_l("a b c d", "a c d") == pytest.approx(2 * 0.75 * 1.0 / 1.75)
    # an empty answer overlaps nothing: a real 0; a reference without tokens: no score
    assert token_f1("", "x") == 0.0 and rouge_l("。", "x") == 0.0
    assert token_f1("x", "") is None and rouge_l("x", "。") is None


def _lcs_table(a: list[str], b: list[str]) -> int:
    """The textbook dynamic programme, to check the bit-parallel LCS against."""
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            table[i + 1][j + 1] = (
                table[i][j] + 1 if x == y else max(table[i][j + 1], table[i + 1][j])
            )
    return table[-1][-1]


def test_rouge_l_lcs_equals_the_dynamic_programme() -> None:
    from ragtriage.metrics._lexical import _lcs

    rng = random.Random(7)
    for _ in range(3000):
        alphabet = "abcdefg"[: rng.randint(1, 7)]
        a = [rng.choice(alphabet) for _ in range(rng.randint(0, 25))]
        b = [rng.choice(alphabet) for _ in range(rng.randint(0, 90))]  # > 64 bits too
        assert _lcs(a, b) == _lcs_table(a, b), (a, b)
    assert _lcs(list("上海市浦东新区"), list("浦东新区在上海")) == 4


def test_position_weighted_precision_and_recall() -> None:
    j = TraceJudgements(judge="t", chunk_relevant=(False, True, True), gt_attributed=(True, False))
    # precision@2 = 1/2 at rank 2, precision@3 = 2/3 at rank 3 -> mean 7/12
    assert context_precision_at(j, 3).value == pytest.approx((0.5 + 2 / 3) / 2)
    assert context_precision_at(j, 1).value == 0.0
    assert context_recall(j).value == 0.5
    und = context_recall(TraceJudgements(judge="t", gt_reason="no ground-truth answer"))
    assert und.value is None and und.undetermined_reason == "no ground-truth answer"


def test_faithfulness_counts_supported_claims() -> None:
    j = TraceJudgements(
        judge="t",
        claims=(
            ClaimVerdict(claim="a", verdict="supported"),
            ClaimVerdict(claim="b", verdict="contradicted"),
        ),
    )
    assert faithfulness(j).value == 0.5
    assert faithfulness(TraceJudgements(judge="t", claims=())).undetermined


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_offline_judge_supported_and_contradicted(lang: str) -> None:
    kw: dict[str, Any] = ZH if lang == "zh" else {}
    right = "阿克米公司成立于1999年。" if lang == "zh" else "Acme Corp was founded in 1999."
    wrong = "阿克米公司成立于2005年。" if lang == "zh" else "Acme Corp was founded in 2005."
    good = make_trace(answer=right, context=["gd_0"], **kw)
    bad = make_trace(answer=wrong, context=["gd_0"], **kw)
    judge = OfflineJudge()
    jg, jb = judge.judge_many([good, bad])
    assert faithfulness(jg).value == 1.0
    assert jb.claims is not None and jb.claims[0].verdict == "contradicted"
    assert faithfulness(jb).value == 0.0
    assert context_recall(jg).value == 1.0
    assert context_precision_at(jg, 5).value == 1.0


def test_claim_verdict_not_supported_when_unrelated() -> None:
    assert claim_verdict("Bananas are yellow.", "Acme Corp was founded in 1999.") == "not_supported"


def test_undetermined_never_nan() -> None:
    traces = [
        make_trace(example_id="e", answer=""),
        make_trace(example_id="u", answerable=False, gt_answer="", answer="I don't know."),
    ]
    rows, agg = evaluate_answers(traces, OfflineJudge(), EMB, resamples=50)
    empty = rows[0]["scores"]
    assert empty["faithfulness"] == {
        "judge": "offline",
        "value": "undetermined",
        "reason": "empty answer",
    }
    una = rows[1]["scores"]
    assert una["exact_match"]["value"] == "undetermined"
    assert una["answer_relevancy"]["value"] == 0.0  # non-committal penalty: a real 0
    text = json.dumps(rows) + json.dumps(agg)
    assert "NaN" not in text and "Infinity" not in text
    assert agg["metrics"]["faithfulness"]["mean"] == "undetermined"


def _traces() -> list[Trace]:
    out = []
    for i in range(6):
        out.append(
            make_trace(
                example_id=f"en{i}",
                answer="Acme Corp was founded in 1999."
                if i % 2
                else "Acme Corp was founded in 2007.",
                context=["gd_0", "od_0"] if i % 3 else ["od_0", "gd_0"],
            )
        )
        out.append(
            make_trace(
                example_id=f"zh{i}",
                answer="阿克米公司成立于1999年。" if i % 2 else "阿克米公司成立于2007年。",
                context=["gd_0", "od_0"],
                **ZH,
            )
        )
    return out


class _Recording(HashEmbedder):
    """The hashing embedder, noting each batch it is asked for."""

    def __init__(self) -> None:
        super().__init__(64)
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> Any:
        self.calls.append(list(texts))
        return super().embed(texts)


def test_prefetched_embeddings_score_the_same() -> None:
    traces = _traces()
    plain = evaluate_answers(traces, OfflineJudge(EMB), EMB, resamples=50)
    inner = _Recording()
    pre = prefetch_embeddings(traces, inner)
    try:
        again = evaluate_answers(traces, OfflineJudge(pre), pre, resamples=50)
        direct = pre.embed(["not prefetched", traces[0].answer, "not prefetched"])
    finally:
        pre.close()
    assert json.dumps(again, sort_keys=True) == json.dumps(plain, sort_keys=True)
    assert pre.name == EMB.name and pre.dim == 64
    # queries, answers and ground truths once, in the background; the rest on demand
    (first,) = [c for c in inner.calls if traces[0].answer in c]  # one slice (< 256 texts)
    assert len(first) == len(set(first))
    assert {t.answer for t in traces} <= set(first) and traces[0].example.query in first
    assert inner.calls[-1] == ["not prefetched"]
    np.testing.assert_array_equal(direct[1], EMB.embed([traces[0].answer])[0])
    np.testing.assert_array_equal(direct[0], direct[2])
    assert pre.embed([]).shape == (0, 64)


def _write(path: Path, traces: list[Trace]) -> Path:
    path.write_text("".join(t.model_dump_json() + "\n" for t in traces), encoding="utf-8")
    return path


def test_cli_evaluate_byte_identical(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from ragtriage.cli import app

    for var in ("RAGTRIAGE_LLM_BASE_URL", "RAGTRIAGE_LLM_MODEL"):
        monkeypatch.delenv(var, raising=False)
    src = _write(tmp_path / "traces.jsonl", _traces())
    outs = []
    for name in ("a", "b"):
        res = CliRunner().invoke(
            app, ["evaluate", str(src), "--out", str(tmp_path / name), "--embedder", "hash"]
        )
        assert res.exit_code == 0, res.output
        assert "offline judge" in res.output
        assert "lowest faithfulness: en0 0.00" in res.output
        outs.append(
            (tmp_path / name / "scores.jsonl").read_bytes()
            + (tmp_path / name / "metrics.json").read_bytes()
        )
    assert outs[0] == outs[1]
    agg = json.loads((tmp_path / "a" / "metrics.json").read_text())
    faith = agg["metrics"]["faithfulness"]
    assert faith["n"] == 12 and faith["mean"] == 0.5
    assert faith["ci95"][0] <= 0.5 <= faith["ci95"][1]


# ---------------------------------------------------------------- LLM judge


def _runner(server: LocalLLMServer, tmp_path: Path, **kw: Any) -> LLMRunner:
    cfg = LLMConfig(base_url=server.base_url, model="m", concurrency=4, max_retries=0)
    return LLMRunner.from_config(cfg, cache_path=tmp_path / "cache.sqlite", **kw)


@pytest.mark.parametrize("reject", [False, True])
def test_llm_judge_two_calls_per_trace(
    llm_server: LocalLLMServer, tmp_path: Path, reject: bool
) -> None:
    llm_server.behaviour.reply = metrics_reply
    llm_server.behaviour.reject_response_format = reject
    traces = _traces()[:4]
    runner = _runner(llm_server, tmp_path)
    rows, agg = evaluate_answers(traces, LLMTraceJudge(runner), EMB, resamples=50)
    runner.close()
    total = runner.ledger.summary().total
    assert total.requests == 2 * len(traces)
    # zh0 and zh1 share question, reference and context: one context call serves both
    assert total.calls == 2 * len(traces) - 1 and total.cache_hits == 1
    by_id = {r["example_id"]: r["scores"] for r in rows}
    assert by_id["en1"]["faithfulness"] == {"judge": "llm:m", "value": 1.0}
    assert by_id["en0"]["faithfulness"]["value"] == 0.0
    assert by_id["zh1"]["faithfulness"]["value"] == 1.0
    assert by_id["en1"]["context_precision@5"]["value"] == 1.0
    assert by_id["en0"]["context_precision@5"]["value"] == 0.5  # relevant chunk at rank 2
    assert agg["judge"] == "llm:m"
    # a second run is served from the cache: no new call, identical scores
    runner2 = _runner(llm_server, tmp_path)
    rows2, agg2 = evaluate_answers(traces, LLMTraceJudge(runner2), EMB, resamples=50)
    runner2.close()
    assert runner2.ledger.summary().total.calls == 0
    assert json.dumps(rows2, sort_keys=True) == json.dumps(rows, sort_keys=True)
    assert json.dumps(agg2, sort_keys=True) == json.dumps(agg, sort_keys=True)


@pytest.mark.parametrize(
    "garbage", ["not json at all", '{"claims": "x"}', '{"chunks": [1, 2], "reference": []}']
)
def test_llm_garbage_is_undetermined(
    llm_server: LocalLLMServer, tmp_path: Path, garbage: str
) -> None:
    llm_server.behaviour.reply = lambda body, index: garbage
    runner = _runner(llm_server, tmp_path, use_cache=False)
    rows, agg = evaluate_answers(_traces()[:2], LLMTraceJudge(runner), EMB, resamples=50)
    runner.close()
    for row in rows:
        for name in ("faithfulness", "context_precision@5", "context_recall"):
            cell = row["scores"][name]
            assert cell["value"] == "undetermined" and cell["reason"], (name, cell)
    assert agg["metrics"]["faithfulness"]["mean"] == "undetermined"


def test_llm_dry_run_estimates_without_calls(llm_server: LocalLLMServer, tmp_path: Path) -> None:
    runner = _runner(llm_server, tmp_path, dry_run=True)
    evaluate_answers(_traces()[:3], LLMTraceJudge(runner), EMB, resamples=50)
    runner.close()
    total = runner.ledger.summary().total
    assert llm_server.chat_requests == 0
    assert total.estimated_calls == 6 and total.estimated_prompt_tokens > 0
