"""benchmarks/realstyle.py on a tiny part built here (rules judge, and the LLM judge
against the local OpenAI-compatible server)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

from diag_helpers import judge_reply, make_trace, server_reply
from llm_server import LocalLLMServer
from ragtriage.jsonl import write_jsonl
from ragtriage.records import Trace

ROOT = Path(__file__).resolve().parents[1]
REF = ["Acme Corp was founded in 1999"]


def _script(module: str, file: str) -> ModuleType:
    """A benchmark script loaded as ``module``."""
    spec = importlib.util.spec_from_file_location(module, ROOT / "benchmarks" / file)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def _bench() -> ModuleType:
    return _script("realstyle_bench", "realstyle.py")


def _with_style(trace: Trace, style: str) -> Trace:
    ex = trace.example.model_copy(update={"metadata": {"style": style}})
    return trace.model_copy(update={"example": ex})


def _part(root: Path, name: str = "tiny") -> Path:
    """Three cases: a correct answer, a wrong year whose GT chunk reached the
    generator (generation E16), and a wrong year whose GT chunk was never retrieved
    (retrieval E4)."""
    part = root / name
    traces = [
        _with_style(
            make_trace(
                example_id=f"{name}-ok",
                references=REF,
                answer="Acme Corp was founded in 1999.",
                context=["gd_0"],
            ),
            "concise",
        ),
        _with_style(
            make_trace(
                example_id=f"{name}-gen",
                references=REF,
                retrieved=["gd_0", "od_0"],
                reranked=["gd_0"],
                context=["gd_0"],
            ),
            "wrong_number",
        ),
        _with_style(make_trace(example_id=f"{name}-ret", references=REF), "wrong_number"),
    ]
    labels = [
        {"example_id": f"{name}-ok", "answer_label": "correct", "stage": None, "types": [],
         "rationale": "right year", "annotator": "dev", "split": "dev"},
        {"example_id": f"{name}-gen", "answer_label": "incorrect", "stage": "generation",
         "types": ["E16", "E15"], "rationale": "year changed although the chunk was there",
         "annotator": "dev", "split": "test"},
        # labelled (on purpose) as generation: the judge says retrieval, a miss to list
        {"example_id": f"{name}-ret", "answer_label": "incorrect", "stage": "generation",
         "types": ["E10"], "rationale": "made-up year", "annotator": "dev", "split": "test"},
    ]  # fmt: skip
    write_jsonl(part / "traces.jsonl", traces)
    (part / "labels.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in labels), encoding="utf-8"
    )
    return part


def test_rules_judge_over_a_tiny_part(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bench = _bench()
    _part(tmp_path)
    out = tmp_path / "r.json"
    code = bench.main(["--root", str(tmp_path), "--json", str(out), "--show-misses"])
    assert code == 0
    text = capsys.readouterr().out
    assert "real-style set" in text and "answer-label agreement per style" in text
    assert "disagreements" in text and "made-up year" in text
    data = json.loads(out.read_text(encoding="utf-8"))
    overall = data["overall"]
    assert overall["labeled_examples"] == 3
    assert overall["answer_compared"] == 3
    assert overall["answer_agreement"] == 1.0
    assert (overall["human_failures"], overall["failures_found"]) == (2, 2)
    assert overall["stage_compared"] == 2 and overall["stage_agreement"] == 0.5
    assert overall["reliability"]["n"] == 3
    assert set(data["styles"]) == {"concise", "wrong_number"}
    assert [m["example_id"] for m in data["misses"]] == ["tiny-ret"]
    assert data["settings"]["cases"] == 3


def test_split_and_part_filters(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bench = _bench()
    _part(tmp_path, "a")
    _part(tmp_path, "b")
    parts = bench.load_parts(tmp_path, ["b"], "test")
    assert [p.name for p in parts] == ["b"]
    assert [t.example.example_id for t in parts[0].traces] == ["b-gen", "b-ret"]
    assert bench.main(["--root", str(tmp_path), "--split", "dev"]) == 0
    assert "overall" in capsys.readouterr().out
    assert bench.main(["--root", str(tmp_path), "--part", "c"]) == 2
    assert "no part 'c'" in capsys.readouterr().err


def test_llm_judge_against_the_local_server(
    tmp_path: Path,
    llm_server: LocalLLMServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    bench = _bench()
    _part(tmp_path)
    llm_server.behaviour.reply = server_reply(judge_reply(correct_if="1999"))  # type: ignore[assignment]
    monkeypatch.setenv("RAGTRIAGE_LLM_BASE_URL", llm_server.base_url)
    monkeypatch.setenv("RAGTRIAGE_LLM_MODEL", "judge-model")
    out = tmp_path / "llm.json"
    args = ["--root", str(tmp_path), "--judge", "llm", "--json", str(out)]
    assert bench.main([*args, "--cache", str(tmp_path / "cache.sqlite")]) == 0
    assert llm_server.chat_requests > 0
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["settings"]["judge"] == "llm"
    overall = data["overall"]
    # the scripted judge says correct exactly when the answer has 1999
    assert overall["answer_agreement"] == 1.0
    assert overall["failures_found"] == 2
    assert overall["reliability"]["n"] + overall["reliability"]["without_confidence"] == 3
    served = llm_server.chat_requests
    assert bench.main([*args, "--cache", str(tmp_path / "cache.sqlite")]) == 0
    assert llm_server.chat_requests == served  # the second run came from the cache
    monkeypatch.delenv("RAGTRIAGE_LLM_BASE_URL")
    assert bench.main(args) == 2
    assert "RAGTRIAGE_LLM_BASE_URL" in capsys.readouterr().err


def _fit_script() -> ModuleType:
    _bench()
    return _script("fit_confidence_bench", "fit_confidence.py")


def test_fit_confidence_on_first_contact_diagnoses(tmp_path: Path) -> None:
    """--blind: each part's stored first-contact diagnoses are paired with its labels,
    scored leave-one-part-out, and fitted together with the current diagnoses."""
    import asyncio

    from ragtriage.diagnosis import Diagnoser
    from ragtriage.diagnosis.confidence import ConfidenceTable

    fit = _fit_script()
    bench = sys.modules["realstyle_bench"]
    names = ["p1", "p2"]
    for name in names:
        part = _part(tmp_path, name)
        traces = [Trace.model_validate_json(x) for x in (part / "traces.jsonl").open()]
        found = asyncio.run(Diagnoser("rules", "ragec").diagnose_many(traces))
        write_jsonl(part / fit.BLIND_FILE, found)
    by_part = fit.blind_cases(tmp_path, names)
    assert sorted(by_part) == names and all(len(c) == 3 for c in by_part.values())
    parts = bench.load_parts(tmp_path, names)
    assert [c[0].example_id for c in by_part["p1"]] == [
        t.example.example_id for t in parts[0].traces
    ]
    out = tmp_path / "table.json"
    argv = ["--blind", "--root", str(tmp_path), "--c", "0.5", "--out", str(out)]
    for name in names:
        argv += ["--part", name]
    assert fit.main(argv) == 0
    table = ConfidenceTable.load(out)
    assert "first-contact diagnoses of 2 blind parts" in table.source
    assert "6 current diagnoses of 2 parts" in table.source
    # one part without stored diagnoses is not enough to fit on
    (tmp_path / "p2" / fit.BLIND_FILE).unlink()
    assert fit.main(argv) == 2
