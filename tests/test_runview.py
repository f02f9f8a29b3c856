"""RunView: the on-disk index, filters vs a brute-force filter over the loaded run,
index reuse and rebuild, run discovery confined to its roots."""

from __future__ import annotations

import json
import math
import os
import random
import subprocess
import sys
import unicodedata
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from ragtriage.errors import InputError
from ragtriage.jsonl import iter_json_lines
from ragtriage.records import Diagnosis, Trace
from ragtriage.report.aggregate import summarize
from ragtriage.runview import (
    INDEX_DIR,
    RunView,
    TraceFilter,
    discover,
    discover_runs,
    resolve_key,
)
from ragtriage.runview._index import load_or_build
from runview_helpers import QTYPES, random_run


class Loaded:
    """The whole run in memory: the reference the index is checked against."""

    def __init__(self, run: Path) -> None:
        self.traces = [Trace.model_validate(o) for _, o in iter_json_lines(run / "traces.jsonl")]
        diags = [Diagnosis.model_validate(o) for _, o in iter_json_lines(run / "diagnoses.jsonl")]
        self.diags = {d.trace_id: d for d in diags}
        labels = {
            o["example_id"]: o["label"] for _, o in iter_json_lines(run / "label" / "labels.jsonl")
        }
        self.qtype = {}
        for t in self.traces:
            d = self.diags.get(t.trace_id)
            self.qtype[t.trace_id] = (
                labels.get(t.example.example_id) or (d.label if d else None) or t.example.label
            )
        self.critic = {o["trace_id"]: o for _, o in iter_json_lines(run / "critic.jsonl")}
        self.tiers: dict[str, list[str]] = {
            t: [*d.tier1, *d.tier2, *d.tier3] for t, d in self.diags.items()
        }
        for _, o in iter_json_lines(run / "critic.jsonl"):
            self.tiers.setdefault(o["trace_id"], []).extend([*o["tier1"], *o["tier2"], *o["tier3"]])
        self.scores: dict[str, dict[str, float]] = {}
        self.score_lines = {
            o["trace_id"]: o for _, o in iter_json_lines(run / "eval" / "scores.jsonl")
        }
        for _, o in iter_json_lines(run / "eval" / "scores.jsonl"):
            self.scores[o["trace_id"]] = {
                k: v["value"] for k, v in o["scores"].items() if not isinstance(v["value"], str)
            }

    def keep(self, flt: TraceFilter) -> list[str]:
        out = []
        for t in self.traces:
            d = self.diags.get(t.trace_id)
            if flt.stage is not None and not (d and d.stage and d.stage.value == flt.stage):
                continue
            if flt.type is not None and not (d and d.error_type and d.error_type.value == flt.type):
                continue
            if flt.answer_label in ("failing", "not_failing"):
                if d is None or d.answer_label is None:
                    continue
                if d.needs_diagnosis != (flt.answer_label == "failing"):
                    continue
            elif flt.answer_label is not None:
                label = (
                    None
                    if d is None
                    else (d.answer_label.value if d.answer_label else "undetermined")
                )
                if label != flt.answer_label:
                    continue
            if flt.question_type is not None and self.qtype[t.trace_id] != flt.question_type:
                continue
            if flt.critic_tier is not None and flt.critic_tier not in self.tiers.get(
                t.trace_id, []
            ):
                continue
            conf = d.confidence if d else None
            if flt.conf_min is not None and not (conf is not None and conf >= flt.conf_min):
                continue
            if flt.conf_max is not None and not (conf is not None and conf <= flt.conf_max):
                continue
            if flt.metric is not None:
                v = self.scores.get(t.trace_id, {}).get(flt.metric)
                if v is None:
                    continue
                if flt.metric_min is not None and v < flt.metric_min:
                    continue
                if flt.metric_max is not None and v > flt.metric_max:
                    continue
            if flt.text is not None:
                fold = unicodedata.normalize("NFKC", t.example.query).casefold()
                if unicodedata.normalize("NFKC", flt.text).casefold() not in fold:
                    continue
            out.append(t.trace_id)
        return out


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Loaded, RunView]:
    root, _, _ = random_run(tmp_path_factory.mktemp("rv") / "runs" / "r1", n=120, seed=3)
    return root, Loaded(root), RunView.open(root)


def _random_filters(rng: random.Random, tiers: list[str]) -> list[TraceFilter]:
    out = [TraceFilter()]
    for _ in range(200):
        kw: dict[str, object] = {}
        if rng.random() < 0.4:
            kw["stage"] = rng.choice(["chunking", "retrieval", "reranking", "generation", "bogus"])
        if rng.random() < 0.3:
            kw["type"] = rng.choice([f"E{i}" for i in range(1, 17)])
        if rng.random() < 0.3:
            kw["answer_label"] = rng.choice(
                [
                    *("correct", "possible_correct", "incorrect", "abstain"),
                    *("undetermined", "failing", "not_failing"),
                ]
            )
        if rng.random() < 0.3:
            kw["question_type"] = rng.choice([*QTYPES, "nope"])
        if rng.random() < 0.2 and tiers:
            kw["critic_tier"] = rng.choice(tiers)
        if rng.random() < 0.3:
            kw["conf_min"] = round(rng.random(), 2)
        if rng.random() < 0.3:
            kw["conf_max"] = round(rng.random(), 2)
        if rng.random() < 0.3:
            kw["metric"] = rng.choice(["faithfulness", "f1"])
            if rng.random() < 0.7:
                kw["metric_min"] = round(rng.random() * 0.5, 2)
            if rng.random() < 0.7:
                kw["metric_max"] = round(0.5 + rng.random() * 0.5, 2)
        if rng.random() < 0.3:
            kw["text"] = rng.choice(["CEO", "ceo", "成立", "首席", "abc", "#1", "script>", "zzz"])
        out.append(TraceFilter(**kw))  # type: ignore[arg-type]
    return out


def test_filters_match_brute_force(run: tuple[Path, Loaded, RunView]) -> None:
    _, loaded, view = run
    tiers = sorted({x for ts in loaded.tiers.values() for x in ts})
    nonempty = 0
    for flt in _random_filters(random.Random(7), tiers):
        expected = loaded.keep(flt)
        page = view.query(flt, page_size=1000)
        assert [r.trace_id for r in page.rows] == expected, flt
        assert page.total == len(expected)
        nonempty += bool(expected)
    assert nonempty > 50  # the filters are not all trivially empty


def test_rows_hold_the_loaded_values(run: tuple[Path, Loaded, RunView]) -> None:
    _, loaded, view = run
    for t in loaded.traces:
        row = view.row(t.trace_id)
        d = loaded.diags.get(t.trace_id)
        assert row.question == " ".join(t.example.query.split())[:200]
        assert row.example_id == t.example.example_id
        assert row.question_type == loaded.qtype[t.trace_id]
        assert row.confidence == (d.confidence if d else None)
        assert row.stage == (d.stage.value if d and d.stage else None)
        assert row.types == (
            tuple(x.value for x in (d.error_type, d.second_type) if x) if d else ()
        )
        assert dict(row.metrics) == loaded.scores.get(t.trace_id, {})
        tiers = loaded.tiers.get(t.trace_id) or [None]
        assert row.critic_tier == tiers[0]
        assert view.trace(t.trace_id) == t
        assert view.diagnosis(t.trace_id) == d
        assert view.label(t.trace_id) == loaded.qtype[t.trace_id]
        assert view.critic_verdict(t.trace_id) == loaded.critic.get(t.trace_id)
        assert view.trace_metrics(t.trace_id) == loaded.score_lines.get(t.trace_id)


def _brute_sorted(
    loaded: Loaded, ids: list[str], value: Callable[[str], float | None], desc: bool
) -> list[str]:
    pos = {t.trace_id: i for i, t in enumerate(loaded.traces)}
    have = [i for i in ids if value(i) is not None]
    none = [i for i in ids if value(i) is None]
    have.sort(key=lambda i: ((-1 if desc else 1) * float(value(i) or 0.0), pos[i]))
    return have + none


def test_sort_and_paginate(run: tuple[Path, Loaded, RunView]) -> None:
    _, loaded, view = run
    flt = TraceFilter(answer_label="incorrect")
    ids = loaded.keep(flt)
    conf = {t: (d.confidence if (d := loaded.diags.get(t)) else None) for t in ids}
    for sort, desc in (("confidence", False), ("-confidence", True)):
        expected = _brute_sorted(loaded, ids, conf.get, desc)
        got = [r.trace_id for r in view.query(flt, sort=sort, page_size=1000).rows]
        assert got == expected
        pages = [view.query(flt, sort=sort, page=p, page_size=7) for p in range(1, 20)]
        assert [r.trace_id for p in pages for r in p.rows] == expected
        assert pages[0].pages == math.ceil(len(ids) / 7)
    f1 = {t: loaded.scores.get(t, {}).get("f1") for t in ids}
    got = [r.trace_id for r in view.query(flt, sort="-metric:f1", page_size=1000).rows]
    assert got == _brute_sorted(loaded, ids, f1.get, True)
    with pytest.raises(ValueError, match="sort"):
        view.query(flt, sort="metric:nope")
    with pytest.raises(ValueError, match="sort"):
        view.query(flt, sort="random")
    with pytest.raises(ValueError, match="page"):
        view.query(flt, page=0)


def test_neighbours_follow_filter_and_sort(run: tuple[Path, Loaded, RunView]) -> None:
    _, loaded, view = run
    flt = TraceFilter(stage="generation")
    order = [r.trace_id for r in view.query(flt, sort="-confidence", page_size=1000).rows]
    assert len(order) >= 3
    assert view.neighbours(order[0], flt, "-confidence") == (None, order[1])
    assert view.neighbours(order[1], flt, "-confidence") == (order[0], order[2])
    assert view.neighbours(order[-1], flt, "-confidence") == (order[-2], None)
    outside = next(t.trace_id for t in loaded.traces if t.trace_id not in order)
    assert view.neighbours(outside, flt) == (None, None)
    with pytest.raises(KeyError):
        view.neighbours("nope", flt)
    with pytest.raises(KeyError):
        view.trace("nope")


def test_outcomes_per_example(run: tuple[Path, Loaded, RunView]) -> None:
    _, loaded, view = run
    out = view.outcomes()
    assert len(out) == len(loaded.traces)
    for t in loaded.traces:
        o = out[t.example.example_id]
        d = loaded.diags.get(t.trace_id)
        assert o.trace_id == t.trace_id
        if d is None:
            assert o.status == "no_diagnosis" and o.answer_label is None
        elif d.answer_label is None:
            assert o.status == "undetermined"
        else:
            assert o.status == ("failing" if d.needs_diagnosis else "not_failing")
            assert o.answer_label == d.answer_label.value
        assert o.stage == (d.stage.value if d and d.stage else None)
        assert o.error_type == (d.error_type.value if d and d.error_type else None)


def test_summary_is_the_report_summary(run: tuple[Path, Loaded, RunView]) -> None:
    _, loaded, view = run
    s = view.summary()
    expected = summarize(list(loaded.diags.values()), loaded.traces)
    assert s.report == expected
    assert s.n_traces == len(loaded.traces)
    assert s.accuracy == expected.accuracy and s.failing == expected.totals.failing
    assert s.stages == {x.stage.value: x.count for x in expected.stages}
    assert s.config_hash == "h-3"
    f1 = [v["f1"] for v in loaded.scores.values()]
    m = {x.name: x for x in s.metrics}
    assert m["f1"].n == len(f1) and m["f1"].mean == pytest.approx(float(np.mean(f1)))
    und = sum(1 for v in loaded.scores.values() if "faithfulness" not in v)
    assert m["faithfulness"].undetermined == und > 0
    json.dumps(s.to_json())  # serialisable
    qt = s.question_types
    assert sum(qt.values()) == sum(1 for v in loaded.qtype.values() if v)


def test_index_reused_then_rebuilt_when_a_file_changes(tmp_path: Path) -> None:
    root, traces, _ = random_run(tmp_path / "run", n=30, seed=1)
    first = load_or_build(root)
    assert first.rebuilt
    again = load_or_build(root)
    assert not again.rebuilt and again.data.dir == first.data.dir
    assert not list((root / INDEX_DIR).glob("*.pkl"))
    assert all(p.suffix in (".npy", ".json", ".txt") for p in first.data.dir.iterdir())
    view = RunView.open(root)
    assert view.n == 30
    # append a trace (new question) and a diagnosis: the index is rebuilt
    extra = traces[0].model_copy(
        update={
            "trace_id": "t-new",
            "example": traces[0].example.model_copy(
                update={"example_id": "new", "query": "全新的问题 brand new?"}
            ),
        }
    )
    with (root / "traces.jsonl").open("a", encoding="utf-8") as fh:
        fh.write(extra.to_json() + "\n")
    view2 = RunView.open(root)
    assert view2.rebuilt and view2.n == 31 and view2 is not view
    assert [r.trace_id for r in view2.query(TraceFilter(text="全新")).rows] == ["t-new"]
    assert view2.trace("t-new") == extra
    dirs = [p for p in (root / INDEX_DIR).iterdir() if p.is_dir()]
    assert len(dirs) == 1  # the old build is removed
    # a changed labels file (mtime) also rebuilds
    lab = root / "label" / "labels.jsonl"
    lab.write_text(json.dumps({"example_id": "new", "label": "summary"}) + "\n", encoding="utf-8")
    os.utime(lab, ns=(1, 1))
    view3 = RunView.open(root)
    assert view3.rebuilt and view3.label("t-new") == "summary"
    assert RunView.open(root) is view3


def test_bad_trace_line_names_file_and_line(tmp_path: Path) -> None:
    root, _, _ = random_run(tmp_path / "run", n=5, seed=2, with_extras=False)
    with (root / "traces.jsonl").open("a", encoding="utf-8") as fh:
        fh.write('{"trace_id": "x", "example": \n')
    with pytest.raises(InputError) as exc:
        RunView.open(root)
    assert exc.value.line == 6 and "traces.jsonl" in str(exc.value)
    assert not (root / INDEX_DIR / "CURRENT").exists()


def test_run_without_diagnoses(tmp_path: Path) -> None:
    root, traces, _ = random_run(tmp_path / "run", n=5, seed=2, with_extras=False)
    (root / "diagnoses.jsonl").unlink()
    view = RunView.open(root)
    s = view.summary()
    assert s.report is None and s.accuracy is None and s.failing is None and s.n_traces == 5
    assert view.diagnosis(traces[0].trace_id) is None
    assert view.query(TraceFilter(stage="generation")).total == 0
    assert view.query(TraceFilter()).total == 5


def test_filter_from_and_to_query() -> None:
    flt = TraceFilter.from_query(
        {
            "stage": "retrieval",
            "q": "公司",
            "conf_min": "0.25",
            "metric": "f1",
            "metric_max": "1",
            "type": "",
            "page": "3",
        }
    )
    assert flt == TraceFilter(
        stage="retrieval", text="公司", conf_min=0.25, metric="f1", metric_max=1.0
    )
    assert TraceFilter.from_query(flt.to_query()) == flt
    assert TraceFilter.from_query({}) == TraceFilter()
    with pytest.raises(ValueError, match="conf_min"):
        TraceFilter.from_query({"conf_min": "high"})
    with pytest.raises(ValueError, match="metric_max"):
        TraceFilter.from_query({"metric": "f1", "metric_max": "nan"})
    with pytest.raises(ValueError, match="metric"):
        TraceFilter.from_query({"metric_min": "0.5"})


def test_discovery_is_confined_to_roots(tmp_path: Path) -> None:
    root = tmp_path / "root"
    random_run(root / "team" / "a", n=4, seed=1, with_extras=False)
    random_run(root / "b", n=6, seed=2, with_extras=False)
    outside, _, _ = random_run(tmp_path / "outside", n=3, seed=3, with_extras=False)
    (root / "link").symlink_to(outside, target_is_directory=True)
    (root / "team" / "hidden").mkdir()
    entries = discover_runs([root])
    assert [e.key for e in entries] == ["b", "team~a"]
    by_key = {e.key: e for e in entries}
    assert by_key["b"].n_traces == 6 and by_key["b"].config_hash == "h-2"
    assert resolve_key([root], "team~a") == root / "team" / "a"
    for bad in ["..", "team~..", "team/a", "~", "", "link", "../outside", "b@3", "nope"]:
        with pytest.raises(KeyError):
            resolve_key([root], bad)
    # a root that is itself a run is listed under its own name
    solo = discover_runs([root / "b"])
    assert [e.key for e in solo] == ["b"] and resolve_key([root / "b"], "b") == root / "b"
    # the link is passed over, and said so
    skipped = discover([root]).skipped
    assert [(d.path, d.reason.split(":")[0]) for d in skipped] == [
        (root / "link", "a symbolic link")
    ]


def test_child_process_build_is_the_same_index(tmp_path: Path) -> None:
    root, _, _ = random_run(tmp_path / "run", n=25, seed=4)
    here = load_or_build(root, force=True)
    summary = (here.data.dir / "summary.json").read_text(encoding="utf-8")
    child = load_or_build(root, force=True, child_bytes=0)  # removes the first build
    assert child.rebuilt and child.data.dir != here.data.dir
    assert child.data.meta == here.data.meta
    for name, col in here.data.cols.items():
        assert np.array_equal(col, child.data.cols[name], equal_nan=True), name
    assert (child.data.dir / "summary.json").read_text(encoding="utf-8") == summary
    assert not here.data.dir.exists()
    with (root / "diagnoses.jsonl").open("a", encoding="utf-8") as fh:
        fh.write('{"trace_id": "t-ex0001", "example_id": 5}\n')
    with pytest.raises(InputError) as exc:
        load_or_build(root, child_bytes=0)
    assert exc.value.path is not None and exc.value.path.endswith("diagnoses.jsonl")
    assert exc.value.line == sum(1 for _ in (root / "diagnoses.jsonl").open())


def test_an_open_view_survives_a_rebuild_that_removes_its_files(tmp_path: Path) -> None:
    root, traces, _ = random_run(tmp_path / "run", n=20, seed=6)
    old = RunView.open(root)
    old_dir = next(p for p in (root / INDEX_DIR).iterdir() if p.name.startswith("idx-"))
    with (root / "traces.jsonl").open("a", encoding="utf-8") as fh:
        fh.write(
            traces[0]
            .model_copy(
                update={
                    "trace_id": "t-late",
                    "example": traces[0].example.model_copy(update={"example_id": "late"}),
                }
            )
            .to_json()
            + "\n"
        )
    assert load_or_build(root).rebuilt and not old_dir.exists()
    # the old view still answers from its mapped build (the run as it was)
    assert old.n == 20 and old.summary().n_traces == 20
    hits = old.query(TraceFilter(text="公司"), page_size=100).rows
    assert hits and all("公司" in r.question for r in hits)
    assert RunView.open(root).n == 21


def test_concurrent_builds_in_two_processes(tmp_path: Path) -> None:
    root, _, _ = random_run(tmp_path / "run", n=40, seed=8)
    code = (
        "import sys; from pathlib import Path; from ragtriage.runview import RunView; "
        "v = RunView.open(Path(sys.argv[1])); print(v.n, v.summary().failing)"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    procs = [
        subprocess.Popen([sys.executable, "-c", code, str(root)], stdout=subprocess.PIPE, env=env)
        for _ in range(3)
    ]
    outs = {p.communicate(timeout=120)[0] for p in procs}
    assert all(p.returncode == 0 for p in procs)
    assert len(outs) == 1
    builds = [p for p in (root / INDEX_DIR).iterdir() if p.is_dir()]
    assert len(builds) == 1
    assert not load_or_build(root).rebuilt


def test_a_broken_run_is_listed_with_its_error(tmp_path: Path) -> None:
    root = tmp_path / "root"
    random_run(root / "good", n=3, seed=1, with_extras=False)
    bad, _, _ = random_run(root / "bad", n=3, seed=2, with_extras=False)
    with (bad / "diagnoses.jsonl").open("a", encoding="utf-8") as fh:
        fh.write("{not json\n")
    entries = {e.key: e for e in discover_runs([root])}
    assert entries["good"].error is None and entries["good"].n_traces == 3
    last = sum(1 for _ in (bad / "diagnoses.jsonl").open(encoding="utf-8"))
    assert entries["bad"].error is not None
    assert f"diagnoses.jsonl:{last}: not valid JSON" in entries["bad"].error
    assert entries["bad"].n_traces == 0 and entries["bad"].accuracy is None
    with pytest.raises(InputError, match=r"traces\.jsonl"):
        RunView.open(tmp_path / "root")


def test_index_goes_to_the_cache_when_the_run_cannot_be_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, _, _ = random_run(tmp_path / "run", n=6, seed=9, with_extras=False)
    (root / INDEX_DIR).write_text("not a directory", encoding="utf-8")  # mkdir fails
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    view = RunView.open(root)
    assert view.n == 6 and view.query(TraceFilter(text="#3")).total == 1
    built = load_or_build(root)
    assert not built.rebuilt and built.data.dir.is_relative_to(tmp_path / "cache")
