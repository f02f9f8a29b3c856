"""Advice -> config change (ragtriage.tuning) and the demo loop it enables."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from diag_helpers import make_trace
from ragtriage.cli import app
from ragtriage.config import PipelineConfig, load_config
from ragtriage.errors import ConfigError
from ragtriage.records import Diagnosis, ErrorType, Stage
from ragtriage.report.aggregate import summarize
from ragtriage.report.compare import compare_summaries
from ragtriage.tuning import apply_advice, change_for_hint, story_lines

E = ErrorType
ROOT = Path(__file__).resolve().parents[1]
WEAK = ROOT / "configs" / "demo-weak.yaml"

_STAGE = {
    E.E1: Stage.CHUNKING,
    E.E3: Stage.CHUNKING,
    E.E4: Stage.RETRIEVAL,
    E.E7: Stage.RERANKING,
    E.E8: Stage.RERANKING,
    E.E10: Stage.GENERATION,
}


def _diag(i: int, mode: ErrorType, second: ErrorType | None = None) -> Diagnosis:
    return Diagnosis(
        example_id=f"ex-{i}",
        trace_id=f"ex-{i}",
        judge="rules",
        strategy="ragec",
        answer_label="incorrect",
        needs_diagnosis=True,
        stage=_STAGE[mode],
        error_type=mode,
        second_type=second,
    )


def _weak() -> PipelineConfig:
    return load_config(WEAK)


def test_hints_map_to_concrete_settings() -> None:
    cfg = _weak()  # fixed 40-token chunks, no overlap, dense top-3, rerank top-1
    assert change_for_hint(cfg, E.E3, "chunking.strategy=sentence") == (
        "chunking.strategy",
        "sentence",
    )
    assert change_for_hint(cfg, E.E1, "chunking.size") == ("chunking.size", 128)  # the default
    assert change_for_hint(cfg, E.E1, "chunking.overlap") == ("chunking.overlap", 8)
    assert change_for_hint(cfg, E.E4, "retrieval.top_k") == ("retrieval.top_k", 20)
    # more chunks after reranking: double, at least the default (5)
    assert change_for_hint(cfg, E.E7, "rerank.top_k") == ("rerank.top_k", 5)
    assert change_for_hint(cfg, E.E8, "rerank.top_k") == "rerank.top_k already at its floor (1)"
    big = cfg.model_copy(update={"chunking": cfg.chunking.model_copy(update={"size": 512})})
    assert change_for_hint(big, E.E2, "chunking.size") == ("chunking.size", 256)


def test_hints_that_cannot_run_offline_say_why() -> None:
    cfg = _weak()
    assert "LLM endpoint" in str(change_for_hint(cfg, E.E7, "rerank.method=llm"))
    assert "model_path" in str(change_for_hint(cfg, E.E7, "rerank.method=cross_encoder"))
    assert "extractive" in str(change_for_hint(cfg, E.E12, "generation.prompt=zh_keypoints"))
    assert "extractive" in str(change_for_hint(cfg, E.E10, "generation.max_tokens"))
    llm = cfg.model_copy(
        update={"generation": cfg.generation.model_copy(update={"backend": "llama_cpp"})}
    )
    assert change_for_hint(llm, E.E12, "generation.max_tokens") == ("generation.max_tokens", 192)
    assert "no automatic tuning" in str(change_for_hint(llm, E.E10, "generation.prompt"))
    assert "already" in str(change_for_hint(cfg, E.E4, "retrieval.mode=dense"))
    assert "not a pipeline setting" in str(change_for_hint(cfg, E.E4, "nope.top_k"))


def test_apply_advice_follows_the_ranking_one_setting_each() -> None:
    cfg = _weak()
    diagnoses = [_diag(i, E.E7) for i in range(5)]
    diagnoses += [_diag(10 + i, E.E3) for i in range(4)]
    diagnoses += [_diag(20 + i, E.E4) for i in range(2)]
    diagnoses += [_diag(30, E.E10)]
    one = apply_advice(cfg, diagnoses)
    # forwarding 5 chunks needs 5 retrieved: one advice, two coupled settings
    assert [(c.error_type, c.key, c.old, c.new) for c in one.changes] == [
        (E.E7, "rerank.top_k", 1, 5),
        (E.E7, "retrieval.top_k", 3, 5),
    ]
    assert one.config.rerank.top_k == 5 and one.config.chunking == cfg.chunking
    assert one.config.name == "demo-weak+advice"
    three = apply_advice(cfg, diagnoses, top=3)
    # E4's first hint (retrieval.top_k) was already changed for E7: its second applies
    assert [c.key for c in three.changes] == [
        "rerank.top_k",
        "retrieval.top_k",
        "chunking.strategy",
        "retrieval.mode",
    ]
    assert three.changes[2].addressed == 4
    assert three.config.retrieval.mode == "hybrid_rrf"
    assert three.config.chunking.strategy == "sentence"
    # E10's hints (temperature already 0, prompts) do not apply to the extractive generator
    four = apply_advice(cfg, diagnoses, top=4)
    assert len(four.changes) == 4
    assert [t for t, _ in four.skipped] == [E.E10]
    with pytest.raises(ConfigError):
        apply_advice(cfg, diagnoses, top=0)


def test_no_failing_examples_change_nothing() -> None:
    cfg = _weak()
    ok = Diagnosis(
        example_id="a",
        trace_id="a",
        judge="rules",
        strategy="ragec",
        answer_label="correct",
        needs_diagnosis=False,
    )
    applied = apply_advice(cfg, [ok])
    assert applied.changes == () and applied.config == cfg


def test_weak_config_diagnose_advise_rerun_improves_accuracy(tmp_path: Path) -> None:
    """The demo loop, end to end on the demo corpus: the weak config fails at all four
    stages; the top three pieces of advice, applied, raise accuracy."""
    from ragtriage.data import load_demo
    from ragtriage.diagnosis import Diagnoser
    from ragtriage.pipeline import Pipeline

    # the finance third of the demo corpus (12 documents, EN and ZH) keeps this fast
    demo = load_demo()
    docs = tuple(d for d in demo.documents if "fin-" in d.doc_id)
    keep = {d.doc_id for d in docs}
    examples = tuple(
        e for e in demo.examples if e.metadata.get("domain") == "finance" or set(e.doc_ids) & keep
    )
    dataset = replace(demo, documents=docs, examples=examples)
    cache = str(tmp_path / "emb")

    def run(cfg: PipelineConfig) -> list[Diagnosis]:
        emb = cfg.embedding.model_copy(update={"cache_dir": cache})  # the demo's minilm
        cfg = cfg.model_copy(update={"embedding": emb})

        async def go() -> list[Diagnosis]:
            pipe = Pipeline.from_config(cfg, dataset)
            try:
                traces = await asyncio.gather(*(pipe.run_example(ex) for ex in dataset.examples))
            finally:
                await pipe.aclose()
            return list(await Diagnoser("rules").diagnose_many(traces))

        return asyncio.run(go())

    weak = _weak()
    before = run(weak)
    sb = summarize(before)
    assert all(s.count > 0 for s in sb.stages), sb.stages  # chunking .. generation
    applied = apply_advice(weak, before, top=3)
    assert len({c.error_type for c in applied.changes}) == 3
    after = run(applied.config)
    sa = summarize(after)
    assert sb.accuracy is not None and sa.accuracy is not None
    assert sa.accuracy >= sb.accuracy + 0.05, (sb.accuracy, sa.accuracy)
    comparison = compare_summaries(
        sb,
        sa,
        config_a=weak.model_dump(mode="json"),
        config_b=applied.config.model_dump(mode="json"),
    )
    broke, changed, improved, worse = story_lines(comparison)
    assert broke.startswith("what broke:") and "reranking" in broke
    assert changed.startswith("what changed:") and applied.changes[0].key in changed
    assert improved.startswith("what improved:  accuracy")
    assert worse.startswith("what got worse: ")


def test_the_story_says_what_got_worse_as_well_as_what_improved() -> None:
    """A fix that moves failures from one stage to another: reranking failures vanish,
    generation failures rise; the story names both."""
    before = [_diag(i, E.E7) for i in range(3)] + [_diag(3, E.E3), _diag(4, E.E3)]
    before.append(_diag(5, E.E10))
    after = [_diag(3, E.E3)] + [_diag(i, E.E10) for i in (0, 1, 2, 5)]
    comparison = compare_summaries(
        summarize(before),
        summarize(after),
        config_a={"rerank": {"top_k": 1}},
        config_b={"rerank": {"top_k": 5}},
    )
    broke, changed, improved, worse = story_lines(comparison)
    assert broke.startswith("what broke:     6 of 6 answers failed")
    assert changed == "what changed:   rerank.top_k 1 -> 5"
    assert improved.startswith("what improved:  accuracy 0.0% -> 0.0%")
    assert "chunking 2 -> 1, reranking 3 -> 0" in improved
    assert "E7 3 -> 0, E3 2 -> 1" in improved
    assert worse == "what got worse: generation 1 -> 4; E10 1 -> 4"
    # the reverse comparison: what improved before got worse
    _, _, improved_back, worse_back = story_lines(
        compare_summaries(summarize(after), summarize(before))
    )
    assert worse_back == "what got worse: chunking 1 -> 2, reranking 0 -> 3; E7 0 -> 3, E3 1 -> 2"
    assert "generation 4 -> 1" in improved_back
    # nothing rose
    _, _, _, none_worse = story_lines(compare_summaries(summarize(before), summarize(before[:2])))
    assert none_worse == "what got worse: no stage or error type has more failures"


def test_advise_cli_writes_a_loadable_config(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    cfg = _weak()
    (run_dir / "manifest.json").write_text(
        '{"run_id": "r1", "config": ' + cfg.model_dump_json() + "}", encoding="utf-8"
    )
    diagnoses = [_diag(i, E.E7) for i in range(3)] + [_diag(10, E.E3)]
    traces = [make_trace(example_id=d.example_id, run_id="r1") for d in diagnoses]
    (run_dir / "traces.jsonl").write_text(
        "".join(t.model_dump_json() + "\n" for t in traces), encoding="utf-8"
    )
    lines = [d.model_dump_json() for d in diagnoses]
    (run_dir / "diagnoses.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "fixed.yaml"
    res = CliRunner().invoke(
        app, ["advise", str(run_dir), "--top", "2", "--write-config", str(out)]
    )
    assert res.exit_code == 0, res.output
    assert "rerank.top_k: 1 -> 5" in res.output and "retrieval.top_k: 3 -> 5" in res.output
    fixed = load_config(out)
    assert fixed.rerank.top_k == 5 and fixed.retrieval.top_k == 5
    assert fixed.chunking.strategy == "sentence"
    assert fixed.generation.backend == "extractive_multi"
    assert fixed.retrieval.mode == cfg.retrieval.mode
