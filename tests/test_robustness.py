"""``ragtriage robustness`` (issue 11): perturbations and deltas with the offline generator."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from _reportdata import write_run
from diag_helpers import doc_chunks, make_trace
from metrics_helpers import ZH
from ragtriage.cli import main
from ragtriage.metrics import PERTURBATIONS, paraphrase, perturb_context, typos


def test_paraphrase_and_typos_en_zh() -> None:
    assert paraphrase("When was Acme founded?") == "Could you tell me: when was Acme founded?"
    assert paraphrase("阿克米公司成立于哪一年？") == "请问阿克米公司成立于哪一年？"
    assert paraphrase("请问公司在哪里？") == "我想知道公司在哪里？"
    q = "When was Acme Corporation founded?"
    t1, t2 = typos(q, random.Random(3)), typos(q, random.Random(3))
    assert t1 == t2 and t1 != q and sorted(t1) == sorted(q)
    zh = typos("阿克米公司成立于哪一年？", random.Random(0))
    assert len(zh) == len("阿克米公司成立于哪一年？") + 1


def test_distractor_positions_and_permutation() -> None:
    ctx = doc_chunks("d", ["a", "b", "c", "d"])
    (x,) = doc_chunks("x", ["x"])
    rng = random.Random(0)
    for kind, texts in (
        ("distractor@first", "xabcd"),
        ("distractor@middle", "abxcd"),
        ("distractor@last", "abcdx"),
    ):
        assert "".join(c.text for c in perturb_context(ctx, kind, rng, x) or []) == texts
    perm = perturb_context(ctx, "permute", random.Random(1), None) or []
    assert sorted(c.text for c in perm) == ["a", "b", "c", "d"]
    assert perturb_context(ctx[:1], "permute", rng, None) is None
    assert perturb_context(ctx, "distractor@first", rng, None) is None


def test_robustness_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    traces = [
        make_trace(
            example_id="en", answer="Acme Corp was founded in 1999.", context=["gd_0", "od_0"]
        ),
        make_trace(
            example_id="zh", answer="阿克米公司成立于1999年。", context=["gd_0", "od_1"], **ZH
        ),
    ]
    run = write_run(
        tmp_path / "run", "r1", traces, None, config={"generation": {"backend": "extractive"}}
    )
    outs = []
    for name in ("a.json", "b.json"):
        with pytest.raises(SystemExit) as exc:
            main(["robustness", str(run), "--json", str(tmp_path / name)])
        assert exc.value.code == 0
        outs.append((tmp_path / name).read_bytes())
    assert outs[0] == outs[1]
    report = json.loads(outs[0])
    assert sorted(report["perturbations"]) == sorted(PERTURBATIONS)
    assert report["generator"] == "extractive"
    for cell in report["perturbations"].values():
        assert cell["f1"]["n"] + cell["not_applicable"] == 2
        assert isinstance(cell["f1"]["delta"], float)
    assert "robustness" in capsys.readouterr().out


def test_robustness_unknown_perturbation_exits_2(tmp_path: Path) -> None:
    run = write_run(
        tmp_path / "run",
        "r1",
        [make_trace()],
        None,
        config={"generation": {"backend": "extractive"}},
    )
    with pytest.raises(SystemExit) as exc:
        main(["robustness", str(run), "--perturb", "shout"])
    assert exc.value.code == 2
