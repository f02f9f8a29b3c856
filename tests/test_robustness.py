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
from ragtriage.records import Chunk


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


_DOCS = [
    {
        "doc_id": "acme",
        "text": "Acme Corp was founded in 1999 in Springfield. Acme Corp makes anvils and "
        "rockets for desert customers.",
    },
    {"doc_id": "beta", "text": "Beta Ltd is a bakery chain headquartered in Lyon since 2004."},
    {"doc_id": "river", "text": "Springfield is a town on a slow river with an old bridge."},
    {"doc_id": "zh", "text": "阿克米公司成立于1999年，总部位于春田市。公司销售小部件。"},
    {"doc_id": "zh2", "text": "环球公司成立于2005年，总部位于上海。英尼泰克为银行开发软件。"},
]
_EXAMPLES = [
    {
        "example_id": "en1",
        "query": "When was Acme Corp founded?",
        "answer": "1999",
        "doc_ids": ["acme"],
    },
    {
        "example_id": "en2",
        "query": "Where is Beta Ltd headquartered?",
        "answer": "Lyon",
        "doc_ids": ["beta"],
    },
    {
        "example_id": "zh1",
        "query": "阿克米公司成立于哪一年？",
        "answer": "1999年",
        "doc_ids": ["zh"],
        "language": "zh",
    },
    {
        "example_id": "zh2",
        "query": "环球公司的总部在哪里？",
        "answer": "上海",
        "doc_ids": ["zh2"],
        "language": "zh",
    },
]
_CONFIG = """\
chunking: {strategy: fixed, size: 12, overlap: 2, unit: auto, cjk_size: 16}
embedding: {model: hash}
retrieval: {mode: bm25, top_k: 4}
rerank: {method: lexical, top_k: 2}
generation: {backend: extractive}
"""


def _corpus_run(tmp_path: Path) -> tuple[Path, Path]:
    data = tmp_path / "data"
    data.mkdir()
    for name, rows in (("documents.jsonl", _DOCS), ("examples.jsonl", _EXAMPLES)):
        (data / name).write_text(
            "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8"
        )
    cfg = tmp_path / "pipeline.yaml"
    cfg.write_text(_CONFIG, encoding="utf-8")
    run = tmp_path / "run"
    with pytest.raises(SystemExit) as exc:
        main(["run", "--data", str(data), "--config", str(cfg), "--out", str(run), "--no-progress"])
    assert exc.value.code in (0, None)
    return data, run


def test_robustness_reruns_retrieval_for_question_perturbations(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, run = _corpus_run(tmp_path)
    outs = []
    for name in ("a.json", "b.json"):
        with pytest.raises(SystemExit) as exc:
            main(
                [
                    "robustness",
                    str(run),
                    "--data",
                    str(data),
                    "--json",
                    str(tmp_path / name),
                    "--resamples",
                    "50",
                ]
            )
        assert exc.value.code == 0
        outs.append((tmp_path / name).read_bytes())
    assert outs[0] == outs[1]  # seeded: identical reports
    report = json.loads(outs[0])
    assert report["retrieval"] == "re-run for question perturbations"
    cells = report["perturbations"]
    for p in ("paraphrase", "typos"):
        assert cells[p]["retrieval"] == "re-run"
        assert 0 <= cells[p]["context_changed"] <= 4
    for p in ("distractor@first", "permute"):
        assert cells[p]["retrieval"] == "kept" and "context_changed" not in cells[p]
    for cell in cells.values():
        acc = cell["accuracy"]
        assert acc["n"] + cell["not_applicable"] == 4
        lo, hi = acc["ci95"]
        assert lo <= acc["delta"] <= hi
        assert acc["delta"] == pytest.approx(acc["perturbed"] - acc["baseline"], abs=1e-6)
    assert "re-run" in capsys.readouterr().out


def test_robustness_library_retrieve_is_called_with_perturbed_queries() -> None:
    import asyncio

    from ragtriage.config import GenerationConfig
    from ragtriage.generation import ExtractiveGenerator
    from ragtriage.metrics import robustness

    trace = make_trace(example_id="en", answer="Acme Corp was founded in 1999.", context=["gd_0"])
    seen: list[str] = []
    chunks = trace.chunk_map()

    async def retrieve(query: str) -> list[Chunk]:
        seen.append(query)
        # a perturbed question retrieves the wrong chunk: the delta must show it
        return [chunks["gd_0"] if query == trace.example.query else chunks["od_0"]]

    report = asyncio.run(
        robustness(
            [trace],
            ExtractiveGenerator(GenerationConfig(backend="extractive")),
            perturbations=["paraphrase", "permute"],
            retrieve=retrieve,
            resamples=20,
        )
    )
    assert seen == [trace.example.query, paraphrase(trace.example.query)]
    para = report["perturbations"]["paraphrase"]
    assert para["context_changed"] == 1
    assert para["f1"]["delta"] < 0
