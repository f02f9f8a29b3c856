"""G-Eval rubric judge and SelfCheck scores (issue 11), EN and ZH."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from diag_helpers import make_trace
from llm_server import LocalLLMServer
from metrics_helpers import ZH
from ragtriage.config import LLMConfig
from ragtriage.embedding import HashEmbedder
from ragtriage.errors import InputError
from ragtriage.llm import LLMRunner
from ragtriage.metrics import (
    DEFAULT_RUBRICS,
    g_eval_llm,
    g_eval_offline,
    load_rubrics,
    sample_answers,
    selfcheck,
)

EMB = HashEmbedder(64)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_g_eval_is_not_offered_offline(lang: str) -> None:
    # offline G-Eval only re-mapped other scores: every rubric is undetermined, with why
    kw: dict[str, Any] = ZH if lang == "zh" else {}
    answer = "阿克米公司成立于1999年。" if lang == "zh" else "Acme Corp was founded in 1999."
    out = g_eval_offline(make_trace(answer=answer, context=["gd_0"], **kw), DEFAULT_RUBRICS, EMB)
    assert set(out) == {
        "g_eval.faithfulness",
        "g_eval.relevance",
        "g_eval.completeness",
        "g_eval.clarity",
    }
    for score in out.values():
        assert score.value is None and score.judge == "offline"
        assert "LLM judge" in (score.undetermined_reason or "")


def test_custom_rubric_offline_is_undetermined(tmp_path: Path) -> None:
    path = tmp_path / "r.yaml"
    path.write_text(
        "rubrics:\n  - name: politeness\n    description: The answer is polite.\n"
        "    steps: [Look for rude words]\n",
        encoding="utf-8",
    )
    rubs = load_rubrics(path)
    assert rubs[0].steps == ("Look for rude words",)
    s = g_eval_offline(make_trace(), rubs, EMB)["g_eval.politeness"]
    assert s.value is None and "LLM" in (s.undetermined_reason or "")
    path.write_text("rubrics:\n  - name: x\n", encoding="utf-8")
    with pytest.raises(InputError) as exc:
        load_rubrics(path)
    assert "rubrics[0].description" in str(exc.value)


def _runner(server: LocalLLMServer, tmp_path: Path) -> LLMRunner:
    cfg = LLMConfig(base_url=server.base_url, model="m", max_retries=0)
    return LLMRunner.from_config(cfg, cache_path=tmp_path / "c.sqlite")


def test_g_eval_llm_one_call_all_criteria(llm_server: LocalLLMServer, tmp_path: Path) -> None:
    def reply(body: dict[str, Any], index: int) -> str:
        crit = [
            {"name": r.name, "reasoning": "step by step", "score": i + 2}
            for i, r in enumerate(DEFAULT_RUBRICS)
        ]
        return json.dumps({"criteria": crit})

    llm_server.behaviour.reply = reply
    llm_server.behaviour.reject_response_format = True
    runner = _runner(llm_server, tmp_path)
    traces = [make_trace(example_id="a"), make_trace(example_id="b", **ZH, answer="成立于1999年。")]
    out = g_eval_llm(traces, DEFAULT_RUBRICS, runner)
    runner.close()
    assert runner.ledger.summary().total.calls == 2
    assert [out[0][f"g_eval.{r.name}"].value for r in DEFAULT_RUBRICS] == [2.0, 3.0, 4.0, 5.0]
    assert out[1]["g_eval.clarity"].judge == "llm:m"


@pytest.mark.parametrize("garbage", ["no json", '{"criteria": [{"name": "clarity", "score": 9}]}'])
def test_g_eval_llm_garbage_undetermined(
    llm_server: LocalLLMServer, tmp_path: Path, garbage: str
) -> None:
    llm_server.behaviour.reply = lambda body, index: garbage
    runner = _runner(llm_server, tmp_path)
    out = g_eval_llm([make_trace()], DEFAULT_RUBRICS, runner)
    runner.close()
    assert all(s.value is None and s.undetermined_reason for s in out[0].values())


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_selfcheck_consistent_vs_hallucinated(lang: str) -> None:
    if lang == "zh":
        answer, agree, other = "公司成立于1999年。", "该公司成立于1999年。", "公司成立于2003年。"
    else:
        answer = "The company was founded in 1999."
        agree, other = "It was founded in 1999 by the company.", "The company was founded in 2003."
    ok = selfcheck(answer, [agree, agree, agree])
    assert ok["selfcheck"].value == 0.0 and ok["selfcheck_contradiction"].value == 0.0
    bad = selfcheck(answer, [other, other, agree])
    assert bad["selfcheck"].value == pytest.approx(2 / 3)
    assert bad["selfcheck_contradiction"].value == 1.0
    none = selfcheck(answer, [])
    assert none["selfcheck"].value is None and "sampled" in (
        none["selfcheck"].undetermined_reason or ""
    )


def test_sample_answers_seeded_n(llm_server: LocalLLMServer, tmp_path: Path) -> None:
    runner = _runner(llm_server, tmp_path)
    first = sample_answers([make_trace()], runner, n=3, seed=7)
    runner.close()
    runner2 = _runner(llm_server, tmp_path)
    again = sample_answers([make_trace()], runner2, n=3, seed=7)
    runner2.close()
    assert len(first[0]) == 3 and first == again
    assert runner2.ledger.summary().total.calls == 0  # reproducible from the cache
