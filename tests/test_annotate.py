"""Annotation store (atomic appends, torn-line and crash resume, names), label sets,
the agreement panel (the same numbers as `ragtriage agree`) and sampling."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import yaml
from sklearn.metrics import cohen_kappa_score

from ragtriage.annotate import (
    ANNOTATOR_RE,
    Annotation,
    AnnotationStore,
    agreement_panel,
    label_set,
    sample_order,
)
from ragtriage.calibrate import read_labels
from ragtriage.cli import main
from ragtriage.records import ERROR_TYPE_STAGE, ErrorType
from ragtriage.runview import RunView
from runview_helpers import random_run


def _ann(trace_id: str, annotator: str = "ann", **kw: object) -> Annotation:
    base: dict[str, object] = {
        "trace_id": trace_id,
        "annotator": annotator,
        "answer_label": "incorrect",
        "stage": "retrieval",
        "types": ("E4",),
        "question_type": None,
    }
    base.update(kw)
    return Annotation(**base)  # type: ignore[arg-type]


@pytest.fixture
def run(tmp_path: Path) -> Path:
    root, _, _ = random_run(tmp_path / "run", n=40, seed=5)
    return root


def test_save_load_last_wins_and_agree_reads_the_file(run: Path) -> None:
    store = AnnotationStore(run)
    ids = RunView.open(run).trace_ids()
    saved = store.save(_ann(ids[0], note="漏掉了正确的段落 missed the gold passage"))
    assert saved.example_id == "ex0000" and saved.saved_at
    store.save(_ann(ids[1], answer_label="correct", stage=None, types=()))
    store.save(_ann(ids[0], stage="generation", types=("E10", "E16"), question_type="summary"))
    got = store.load("ann")
    assert list(got) == [ids[1], ids[0]]
    assert got[ids[0]].types == ("E10", "E16") and got[ids[0]].question_type == "summary"
    assert got[ids[0]].note == ""
    assert store.annotators() == ["ann"]
    path = run / "annotations" / "ann.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 2  # a re-annotation replaces its line
    labels = read_labels(path)  # what `ragtriage agree --labels` reads
    assert {lab.example_id: lab.stage_name for lab in labels} == {
        "ex0000": "generation",
        "ex0001": "none",
    }


def test_torn_last_line_is_skipped_then_repaired(run: Path) -> None:
    store = AnnotationStore(run)
    ids = RunView.open(run).trace_ids()
    for t in ids[:3]:
        store.save(_ann(t))
    path = store.path("ann")
    whole = path.read_bytes()
    # a crash in the middle of writing the 4th line (cut inside a Chinese character)
    torn = json.dumps(_ann(ids[3], note="中文注释").to_line(), ensure_ascii=False).encode()
    path.write_bytes(whole + torn[: len(torn) - 5])
    with pytest.warns(UserWarning, match="torn last line"):
        got = store.load("ann")
    assert list(got) == ids[:3]
    store.save(_ann(ids[4], note="中文注释 ok"))
    assert list(store.load("ann")) == [*ids[:3], ids[4]]
    assert path.read_bytes().startswith(whole) and path.read_bytes().endswith(b"\n")
    assert len(read_labels(path)) == 4


def test_killed_process_loses_nothing_saved(run: Path) -> None:
    code = f"""
import os, signal, sys
sys.path.insert(0, {str(Path(__file__).parent)!r})
from pathlib import Path
from ragtriage.annotate import Annotation, AnnotationStore
from ragtriage.runview import RunView
run = Path({str(run)!r})
store = AnnotationStore(run)
for t in RunView.open(run).trace_ids()[:5]:
    store.save(Annotation(t, "killed", "incorrect", "reranking", ("E7",), None))
os.kill(os.getpid(), signal.SIGKILL)
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120)
    assert proc.returncode == -9, proc.stderr.decode()
    store = AnnotationStore(run)
    got = store.load("killed")
    assert len(got) == 5 and all(a.stage == "reranking" for a in got.values())
    # resume: the next trace to annotate is the sixth
    ids = RunView.open(run).trace_ids()
    assert next(t for t in ids if t not in got) == ids[5]


@pytest.mark.parametrize(
    "name",
    ["", "../etc", "a/b", "a b", "-x", ".hidden", "x" * 65, "名字", "a\nb", "a;b", "alice\n"],
)
def test_bad_annotator_names(run: Path, name: str) -> None:
    store = AnnotationStore(run)
    assert not ANNOTATOR_RE.fullmatch(name) and not ANNOTATOR_RE.match(name)
    with pytest.raises(ValueError, match="annotator"):
        store.save(_ann("t-ex0000", annotator=name))
    with pytest.raises(ValueError, match="annotator"):
        store.load(name)
    assert not (run / "annotations").exists() or not list((run / "annotations").iterdir())


@pytest.mark.parametrize(
    ("kw", "field"),
    [
        ({"answer_label": "wrong"}, "answer_label"),
        ({"stage": "indexing"}, "stage"),
        ({"answer_label": None, "stage": None, "types": ()}, "answer_label"),
        ({"stage": None, "types": ()}, "stage"),
        ({"types": ("E10",)}, "types"),  # generation type under retrieval
        ({"types": ("E99",)}, "types"),
        ({"answer_label": "correct", "stage": None, "types": ("E4",)}, "types"),
        ({"question_type": "trivia"}, "question_type"),
        ({"trace_id": "not-a-trace"}, "trace_id"),
    ],
)
def test_bad_labels_are_refused(run: Path, kw: dict[str, object], field: str) -> None:
    kw = {"trace_id": "t-ex0002", **kw}
    with pytest.raises(ValueError, match=field):
        AnnotationStore(run).save(_ann(**kw))  # type: ignore[arg-type]


def test_label_sets(tmp_path: Path) -> None:
    ragec = label_set("ragec")
    assert ragec.codes == tuple(t.value for t in ErrorType)
    assert ragec.stage_of("E4") == "retrieval" and "Missed Retrieval" in dict(ragec.types).values()
    assert ragec.question_types == ("fact_single", "summary", "reasoning", "unanswerable")
    critic = label_set("critic")
    assert "Incomplete Information" in critic.codes and len(critic.codes) > 7
    assert critic.stage_of("Incomplete Information") is None
    mined = tmp_path / "taxonomy.yaml"
    mined.write_text(
        yaml.safe_dump(
            {
                "clusters": [
                    {
                        "id": 0,
                        "name": "数字错误",
                        "count": 3,
                        "tags": [{"tag": "wrong number", "count": 3}],
                    },
                    {"id": 1, "name": "Missing evidence", "count": 2, "tags": []},
                ]
            },
            allow_unicode=True,
        ),
        encoding="utf-8",
    )
    ls = label_set(str(mined))
    assert (
        ls.codes == ("数字错误", "Missing evidence")
        and dict(ls.types)["数字错误"] == "wrong number"
    )
    json.dumps(ls.to_json(), ensure_ascii=False)
    with pytest.raises(ValueError, match="taxonomy"):
        label_set("nope")


def test_other_taxonomy_annotations_stay_agree_readable(run: Path) -> None:
    store = AnnotationStore(run)
    store.save(_ann("t-ex0003", types=("Incomplete Information",), taxonomy="critic"))
    with pytest.raises(ValueError, match="types"):
        store.save(_ann("t-ex0004", types=("E4",), taxonomy="critic"))
    (a,) = store.load("ann").values()
    assert a.types == ("Incomplete Information",) and a.taxonomy == "critic"
    (lab,) = read_labels(store.path("ann"))
    assert lab.types == () and lab.stage_name == "retrieval"


def _annotate(run: Path, name: str, seed: int, n: int = 30) -> None:
    """Annotator ``name`` labels the first n traces, agreeing with the judge most of the
    time (seeded), sometimes picking another stage or not failing."""
    import random

    rng = random.Random(seed)
    view = RunView.open(run)
    store = AnnotationStore(run)
    types = list(ErrorType)
    for t in view.trace_ids()[:n]:
        d = view.diagnosis(t)
        r = rng.random()
        if d is not None and d.stage is not None and r < 0.6:
            store.save(
                _ann(
                    t,
                    name,
                    stage=d.stage.value,
                    types=(d.error_type.value,) if d.error_type else (),
                )
            )
        elif r < 0.8:
            store.save(_ann(t, name, answer_label="correct", stage=None, types=()))
        else:
            e = rng.choice(types)
            store.save(_ann(t, name, stage=ERROR_TYPE_STAGE[e].value, types=(e.value,)))


def test_panel_gives_the_numbers_agree_prints(run: Path, tmp_path: Path) -> None:
    for i, name in enumerate(["alice", "bob", "chen"]):
        _annotate(run, name, seed=i)
    panel = agreement_panel(run)
    assert panel.annotators == ("alice", "bob", "chen")
    for name in panel.annotators:
        out = tmp_path / f"{name}.json"
        labels = run / "annotations" / f"{name}.jsonl"
        with pytest.raises(SystemExit) as exc:
            main(["agree", str(run), "--labels", str(labels), "--json", str(out)])
        assert exc.value.code == 0
        cli = json.loads(out.read_text(encoding="utf-8"))
        assert panel.vs_judge[name].model_dump(mode="json") == cli
        assert cli["answer_compared"] > 20  # traces without a diagnosis are not compared
    # all three files together = `agree` on their concatenation (Fleiss κ, A vs others)
    both = tmp_path / "all.jsonl"
    both.write_text(
        "".join(
            (run / "annotations" / f"{n}.jsonl").read_text(encoding="utf-8")
            for n in panel.annotators
        ),
        encoding="utf-8",
    )
    with pytest.raises(SystemExit):
        main(["agree", str(run), "--labels", str(both), "--json", str(tmp_path / "all.json")])
    cli_all = json.loads((tmp_path / "all.json").read_text(encoding="utf-8"))
    assert panel.combined is not None
    combined = panel.combined.model_dump(mode="json")
    combined["labels_file"] = cli_all["labels_file"]
    assert combined == cli_all
    assert panel.fleiss == panel.combined.fleiss_stage and panel.fleiss.value is not None
    # pairwise Cohen κ on the stage ("none" = not a failure), by scikit-learn directly
    store = AnnotationStore(run)
    a, b = store.load("alice"), store.load("bob")
    common = [t for t in a if t in b]
    pair = next(p for p in panel.pairs if (p.a, p.b) == ("alice", "bob"))
    sa = [a[t].stage or "none" for t in common]
    sb = [b[t].stage or "none" for t in common]
    assert pair.n == len(common) == 30
    assert pair.stage_kappa.value == pytest.approx(cohen_kappa_score(sa, sb))
    assert sum(map(sum, pair.stage_confusion.matrix)) == 30
    assert len(panel.pairs) == 3
    json.dumps(panel.to_json(), ensure_ascii=False)


def test_panel_with_two_annotators_has_no_fleiss(run: Path) -> None:
    _annotate(run, "alice", seed=0, n=10)
    assert agreement_panel(run).fleiss.value is None
    _annotate(run, "bob", seed=1, n=10)
    panel = agreement_panel(run)
    assert panel.fleiss.value is None and "three" in (panel.fleiss.reason or "")
    assert len(panel.pairs) == 1 and panel.counts == {"alice": 10, "bob": 10}
    empty = agreement_panel(run, taxonomy="critic")
    assert empty.annotators == () and empty.combined is None


def test_sampling_orders(run: Path) -> None:
    view = RunView.open(run)
    ids = view.trace_ids()
    assert sample_order(view, "sequential") == ids
    unc = sample_order(view, "uncertain")
    assert sorted(unc) == sorted(ids)
    confs = [d.confidence if (d := view.diagnosis(t)) else None for t in unc]
    n_none = sum(c is None for c in confs)
    assert all(c is None for c in confs[:n_none])
    rest = [c for c in confs[n_none:] if c is not None]
    assert rest == sorted(rest) and len(rest) == len(confs) - n_none
    s1 = sample_order(view, "stratified", seed=1)
    assert (
        s1 == sample_order(view, "stratified", seed=1) != sample_order(view, "stratified", seed=2)
    )
    assert sorted(s1) == sorted(ids)

    def stratum(t: str) -> str:
        r = view.row(t)
        return f"{r.answer_label}/{r.stage}/{r.types[:1]}"

    sizes = Counter(stratum(t) for t in ids)
    half = Counter(stratum(t) for t in s1[: len(ids) // 2])
    for key, size in sizes.items():
        # every prefix holds each stratum in proportion (systematic sampling: +-1)
        assert abs(half[key] - size / 2) <= 1, key
    with pytest.raises(ValueError, match="strategy"):
        sample_order(view, "random")


def test_a_hand_edited_bad_line_is_skipped_on_load(run: Path) -> None:
    store = AnnotationStore(run)
    store.save(_ann("t-ex0001"))
    with store.path("ann").open("a", encoding="utf-8") as fh:
        bad = _ann("t-ex0002").to_line() | {"stage": "indexing"}
        fh.write(json.dumps(bad) + "\n")
    store.save(_ann("t-ex0003", answer_label="abstain", stage=None, types=()))
    with pytest.warns(UserWarning, match=r"line 2\)"):
        got = store.load("ann")
    assert list(got) == ["t-ex0001", "t-ex0003"]


def test_panel_follows_every_save(run: Path) -> None:
    view = RunView.open(run)
    store = AnnotationStore(run)
    failing = [t for t in view.trace_ids() if (d := view.diagnosis(t)) and d.stage is not None]
    t = failing[0]
    d = view.diagnosis(t)
    assert d is not None and d.stage is not None and d.error_type is not None
    other = next(e for e in ErrorType if ERROR_TYPE_STAGE[e] is d.stage and e is not d.error_type)
    store.save(_ann(t, stage=d.stage.value, types=(d.error_type.value,)))
    first = agreement_panel(run)
    assert agreement_panel(run) is first  # cached while nothing changed
    assert first.vs_judge["ann"].type_accuracy == 1.0
    # same line length, saved at once: the panel still sees the change
    store.save(_ann(t, stage=d.stage.value, types=(other.value,)))
    assert agreement_panel(run).vs_judge["ann"].type_accuracy == 0.0
