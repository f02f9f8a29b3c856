"""The on-disk index of one run directory: byte offsets and filter/sort columns.

Layout (``RUN/.ragtriage-index/``): ``CURRENT`` names the live build directory, which
holds ``meta.json`` (source files' size and mtime, vocabularies), ``ids.json``, one ``.npy``
file per column (no pickle), ``questions.txt`` (normalised, case-folded questions, one a
line, UTF-8, for text search), ``shown.txt`` (questions cut for display) and
``summary.json``. A view maps the text files into memory, so a rebuild that removes an
old build (in this process or another) never pulls files from under a reader.
A build is written to a fresh directory and published by rewriting ``CURRENT``
atomically, so a reader never sees half an index; it is rebuilt when a source file's
size or mtime changes. A large run is indexed in a child process, so a server's memory
stays what the columns need.
"""

from __future__ import annotations

import hashlib
import json
import mmap
import os
import shutil
import subprocess
import sys
import tempfile
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pydantic_core
from pydantic import ValidationError

from ragtriage.errors import InputError, RagtriageError
from ragtriage.jsonl import atomic_write_text, file_lock, validation_to_input_error
from ragtriage.records import (
    AnswerLabel,
    Diagnosis,
    ErrorType,
    Stage,
)
from ragtriage.report.aggregate import Summary, pipeline_costs, summarize
from ragtriage.rundir import diagnosis_mismatch
from ragtriage.runview._filter import QUESTION_CHARS

__all__ = [
    "INDEX_DIR",
    "INDEX_VERSION",
    "BuiltIndex",
    "IndexData",
    "fold_text",
    "index_root",
    "load_or_build",
    "source_files",
]

INDEX_DIR = ".ragtriage-index"
INDEX_VERSION = 3
#: a traces file larger than this is indexed in a child process (memory stays there)
CHILD_BUILD_BYTES = 64 * 2**20
TRACES = "traces.jsonl"
DIAGNOSES = "diagnoses.jsonl"
MANIFEST = "manifest.json"
LABELS = "labels.jsonl"
SCORES = "scores.jsonl"
CRITIC = "critic.jsonl"
METRICS_JSON = "metrics.json"
_SKIP_DIRS = {INDEX_DIR, "annotations"}

STAGES: tuple[str, ...] = tuple(s.value for s in Stage)
ANSWER_LABELS: tuple[str, ...] = tuple(a.value for a in AnswerLabel)
TYPES: tuple[str, ...] = tuple(t.value for t in ErrorType)
_COLUMNS = (
    "t_off",
    "t_len",
    "d_off",
    "d_len",
    "s_off",
    "s_len",
    "c_off",
    "c_len",
    "answer",
    "stage",
    "type1",
    "type2",
    "failing",
    "confidence",
    "qtype",
    "tier_ptr",
    "tier_ids",
    "metrics",
    "fold_starts",
    "shown_starts",
)


def fold_text(text: str) -> str:
    """Text search form: NFKC (full/half width), case-folded, one line."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def _find_next_to(run: Path, name: str) -> Path | None:
    """``RUN/name``, else ``RUN/<subdir>/name`` (first by name), else None."""
    direct = run / name
    if direct.is_file():
        return direct
    try:
        subdirs = sorted(p for p in run.iterdir() if p.is_dir() and p.name not in _SKIP_DIRS)
    except OSError:
        return None
    for sub in subdirs:
        if sub.name.startswith("."):
            continue
        cand = sub / name
        if cand.is_file():
            return cand
    return None


def source_files(run: Path) -> dict[str, Path | None]:
    """The files an index is built from (``None``: absent)."""
    scores = _find_next_to(run, SCORES)
    metrics = scores.parent / METRICS_JSON if scores is not None else None
    return {
        "traces": run / TRACES,
        "diagnoses": run / DIAGNOSES if (run / DIAGNOSES).is_file() else None,
        "manifest": run / MANIFEST if (run / MANIFEST).is_file() else None,
        "labels": _find_next_to(run, LABELS),
        "critic": _find_next_to(run, CRITIC),
        "scores": scores,
        "metrics": metrics if metrics is not None and metrics.is_file() else None,
    }


def _stamp(files: dict[str, Path | None]) -> dict[str, list[Any] | None]:
    out: dict[str, list[Any] | None] = {}
    for key, p in files.items():
        if p is None:
            out[key] = None
            continue
        try:
            st = p.stat()
        except OSError:
            out[key] = None
            continue
        out[key] = [str(p), st.st_size, st.st_mtime_ns]
    return out


@dataclass(frozen=True)
class IndexData:
    """A loaded index: columns are memory-mapped, read-only numpy arrays."""

    dir: Path
    meta: dict[str, Any]
    cols: dict[str, np.ndarray[Any, Any]]
    #: questions.txt and shown.txt, memory-mapped (they outlive a rebuild that deletes
    #: this build's files, in this process or another)
    folded: mmap.mmap | bytes
    shown: mmap.mmap | bytes
    summary_json: str

    @property
    def n(self) -> int:
        return int(self.meta["n"])


@dataclass(frozen=True)
class BuiltIndex:
    data: IndexData
    rebuilt: bool


def _iter_lines(path: Path) -> Iterator[tuple[int, int, int, bytes]]:
    """``(lineno, offset, length, raw)`` for each non-blank line (offset in bytes)."""
    off = 0
    with path.open("rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            n = len(raw)
            start = off
            off += n
            if lineno == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
                start += 3
                n -= 3
            if not raw.strip():
                continue
            yield lineno, start, n, raw


def _loads(raw: bytes, path: Path, lineno: int) -> dict[str, Any]:
    try:
        # pydantic-core's parser: about 1.5x (traces) to 5x (diagnoses) json.loads
        obj = pydantic_core.from_json(raw)
    except (ValueError, RecursionError) as exc:
        raise InputError(f"not valid JSON: {exc}", path=str(path), line=lineno) from exc
    if not isinstance(obj, dict):
        raise InputError("expected a JSON object", path=str(path), line=lineno)
    return obj


class _Vocab:
    def __init__(self) -> None:
        self.names: list[str] = []
        self._codes: dict[str, int] = {}

    def code(self, name: str) -> int:
        c = self._codes.get(name)
        if c is None:
            c = self._codes[name] = len(self.names)
            self.names.append(name)
        return c


def _need_str(obj: dict[str, Any], key: str, path: Path, lineno: int) -> str:
    value = obj.get(key)
    if not isinstance(value, str) or not value:
        raise InputError("missing or empty string", path=str(path), line=lineno, field=key)
    return value


# diagnosis fields a summary does not read (dropped to keep the build's memory small)
_HEAVY = ("evidence", "stage_reason", "concepts", "gt_chunk_ids", "confidence_basis")


def _build(run: Path, files: dict[str, Path | None], out: Path) -> dict[str, Any]:
    tpath = files["traces"]
    assert tpath is not None
    if not tpath.is_file():
        raise InputError("run directory has no traces.jsonl", path=str(tpath))
    pos_of: dict[str, int] = {}
    run_of: dict[str, str | None] = {}  # example id -> run id, to check the diagnoses
    trace_ids: list[str] = []
    example_ids: list[str] = []
    t_off: list[int] = []
    t_len: list[int] = []
    qtype_raw: list[str | None] = []
    fold_lines: list[str] = []
    shown_lines: list[str] = []
    pipeline: dict[str, list[float]] = {}
    for lineno, off, n, raw in _iter_lines(tpath):
        obj = _loads(raw, tpath, lineno)
        tid = _need_str(obj, "trace_id", tpath, lineno)
        if tid in pos_of:
            raise InputError(
                f"duplicate trace_id {tid!r}", path=str(tpath), line=lineno, field="trace_id"
            )
        ex = obj.get("example")
        if not isinstance(ex, dict):
            raise InputError(
                "expected an example object", path=str(tpath), line=lineno, field="example"
            )
        eid = _need_str(ex, "example_id", tpath, lineno)
        query = ex.get("query")
        if not isinstance(query, str):
            raise InputError(
                "expected a string", path=str(tpath), line=lineno, field="example.query"
            )
        pos_of[tid] = len(trace_ids)
        rid = obj.get("run_id")
        run_of[eid] = rid if isinstance(rid, str) else None
        trace_ids.append(tid)
        example_ids.append(eid)
        t_off.append(off)
        t_len.append(n)
        lab = ex.get("label")
        qtype_raw.append(lab if isinstance(lab, str) and lab else None)
        flat = " ".join(query.split())
        fold_lines.append(fold_text(query))
        shown_lines.append(flat[:QUESTION_CHARS])
        stages = obj.get("stages")
        if isinstance(stages, dict):
            for name, st in stages.items():
                if not isinstance(st, dict):
                    continue
                row = pipeline.setdefault(str(name), [0, 0, 0, 0, 0.0])
                row[0] += 1
                row[1] += int(st.get("calls") or 0)
                row[2] += int(st.get("prompt_tokens") or 0)
                row[3] += int(st.get("completion_tokens") or 0)
                row[4] += float(st.get("latency_ms") or 0.0)
    n_traces = len(trace_ids)

    d_off = np.full(n_traces, -1, dtype=np.int64)
    d_len = np.zeros(n_traces, dtype=np.int64)
    answer = np.full(n_traces, -1, dtype=np.int8)  # -1 no diagnosis, -2 undetermined
    stage = np.full(n_traces, -1, dtype=np.int8)
    type1 = np.full(n_traces, -1, dtype=np.int8)
    type2 = np.full(n_traces, -1, dtype=np.int8)
    failing = np.zeros(n_traces, dtype=np.int8)
    # NaN here is the column's "absent" mark, as -1 is in the integer columns: a trace
    # without a confidence (or, below, a metric that is undetermined or not scored)
    # never leaves the index as a number -- RunView reads it back as None / no entry,
    # and filters and sorts treat it as missing (runview/_view.py)
    confidence = np.full(n_traces, np.nan, dtype=np.float64)
    tiers: list[list[int]] = [[] for _ in range(n_traces)]
    tier_vocab = _Vocab()
    diag_label: list[str | None] = [None] * n_traces
    slim: dict[str, Diagnosis] = {}
    dpath = files["diagnoses"]
    if dpath is not None:
        for lineno, off, n, raw in _iter_lines(dpath):
            obj = _loads(raw, dpath, lineno)
            tid = _need_str(obj, "trace_id", dpath, lineno)
            for key in _HEAVY:
                obj.pop(key, None)
            try:
                d = Diagnosis.model_validate(obj)
            except ValidationError as exc:
                raise validation_to_input_error(exc, path=str(dpath), line=lineno) from exc
            # refused here as `ragtriage report` refuses them (store.load_run_dir)
            if d.example_id in slim:
                raise InputError(
                    f"duplicate example_id {d.example_id!r}",
                    path=str(dpath),
                    line=lineno,
                    field="example_id",
                )
            wrong = diagnosis_mismatch(d.example_id, d.run_id, run_of)
            if wrong is not None:
                raise InputError(wrong[0], path=str(dpath), line=lineno, field=wrong[1])
            slim[d.example_id] = d
            i = pos_of.get(tid)
            if i is None:
                continue
            d_off[i] = off
            d_len[i] = n
            answer[i] = ANSWER_LABELS.index(d.answer_label.value) if d.answer_label else -2
            stage[i] = STAGES.index(d.stage.value) if d.stage is not None else -1
            type1[i] = TYPES.index(d.error_type.value) if d.error_type is not None else -1
            type2[i] = TYPES.index(d.second_type.value) if d.second_type is not None else -1
            failing[i] = d.needs_diagnosis and d.answer_label is not None
            confidence[i] = d.confidence if d.confidence is not None else np.nan
            tiers[i] = [tier_vocab.code(t) for t in dict.fromkeys([*d.tier1, *d.tier2, *d.tier3])]
            diag_label[i] = d.label

    # RAG-Critic tags of `ragtriage critic` (critic.jsonl), added to the diagnoses'
    c_off = np.full(n_traces, -1, dtype=np.int64)
    c_len = np.zeros(n_traces, dtype=np.int64)
    cpath = files["critic"]
    if cpath is not None:
        pos_of_example = {eid: i for i, eid in enumerate(example_ids)}
        for lineno, off, n, raw in _iter_lines(cpath):
            obj = _loads(raw, cpath, lineno)
            c_tid, c_eid = obj.get("trace_id"), obj.get("example_id")
            ci = pos_of.get(c_tid) if isinstance(c_tid, str) and c_tid else None
            if ci is None and isinstance(c_eid, str):
                ci = pos_of_example.get(c_eid)
            if ci is None:
                continue
            c_off[ci] = off
            c_len[ci] = n
            tags = [
                t
                for key in ("tier1", "tier2", "tier3")
                if isinstance(obj.get(key), list)
                for t in obj[key]
                if isinstance(t, str) and t
            ]
            tiers[ci] = list(dict.fromkeys([*tiers[ci], *(tier_vocab.code(t) for t in tags)]))

    # question types: `ragtriage label` output, else the diagnosis', else the example's
    labels_by_example: dict[str, str] = {}
    lpath = files["labels"]
    if lpath is not None:
        for lineno, _off, _n, raw in _iter_lines(lpath):
            obj = _loads(raw, lpath, lineno)
            l_eid = obj.get("example_id")
            l_lab = obj.get("label")
            if isinstance(l_eid, str) and isinstance(l_lab, str) and l_lab:
                labels_by_example[l_eid] = l_lab
    qvocab = _Vocab()
    qtype = np.full(n_traces, -1, dtype=np.int16)
    for i in range(n_traces):
        qlab = labels_by_example.get(example_ids[i]) or diag_label[i] or qtype_raw[i]
        if qlab is not None:
            qtype[i] = qvocab.code(qlab)

    # per-trace scores of `ragtriage evaluate`
    s_off = np.full(n_traces, -1, dtype=np.int64)
    s_len = np.zeros(n_traces, dtype=np.int64)
    metric_names: list[str] = []
    metric_vals: dict[str, np.ndarray[Any, Any]] = {}
    spath = files["scores"]
    if spath is not None:
        for lineno, off, n, raw in _iter_lines(spath):
            obj = _loads(raw, spath, lineno)
            s_tid = obj.get("trace_id")
            i = pos_of.get(s_tid) if isinstance(s_tid, str) else None
            if i is None:
                continue
            s_off[i] = off
            s_len[i] = n
            scores = obj.get("scores")
            if not isinstance(scores, dict):
                continue
            for name, cell in scores.items():
                if name not in metric_vals:
                    metric_names.append(name)
                    metric_vals[name] = np.full(n_traces, np.nan, dtype=np.float64)
                value = cell.get("value") if isinstance(cell, dict) else cell
                if isinstance(value, int | float) and not isinstance(value, bool):
                    metric_vals[name][i] = float(value)
    metrics = (
        np.stack([metric_vals[m] for m in metric_names], axis=1)
        if metric_names
        else np.zeros((n_traces, 0), dtype=np.float64)
    )

    tier_ptr = np.zeros(n_traces + 1, dtype=np.int64)
    tier_ptr[1:] = np.cumsum([len(t) for t in tiers]) if n_traces else []
    tier_ids = np.fromiter((c for t in tiers for c in t), dtype=np.int32)

    fold_bytes = [line.encode("utf-8") for line in fold_lines]
    shown_bytes = [line.encode("utf-8") for line in shown_lines]
    cols: dict[str, np.ndarray[Any, Any]] = {
        "t_off": np.asarray(t_off, dtype=np.int64),
        "t_len": np.asarray(t_len, dtype=np.int64),
        "d_off": d_off,
        "d_len": d_len,
        "s_off": s_off,
        "s_len": s_len,
        "c_off": c_off,
        "c_len": c_len,
        "answer": answer,
        "stage": stage,
        "type1": type1,
        "type2": type2,
        "failing": failing,
        "confidence": confidence,
        "qtype": qtype,
        "tier_ptr": tier_ptr,
        "tier_ids": tier_ids,
        "metrics": metrics,
        "fold_starts": _starts(fold_bytes),
        "shown_starts": _starts(shown_bytes),
    }
    for name, arr in cols.items():
        np.save(out / f"{name}.npy", arr, allow_pickle=False)
    # a trailing newline: every line, the last too, ends one byte before the next start
    (out / "questions.txt").write_bytes(b"".join(b + b"\n" for b in fold_bytes))
    (out / "shown.txt").write_bytes(b"".join(b + b"\n" for b in shown_bytes))

    summary = _summary(list(slim.values()), dpath is not None, set(example_ids), pipeline)
    (out / "summary.json").write_text(
        summary.model_dump_json() if summary is not None else "null", encoding="utf-8"
    )
    (out / "ids.json").write_text(
        json.dumps({"trace_ids": trace_ids, "example_ids": example_ids}, ensure_ascii=False),
        encoding="utf-8",
    )
    return {
        "n": n_traces,
        "question_types": qvocab.names,
        "critic_tiers": tier_vocab.names,
        "metrics": metric_names,
        "has_diagnoses": dpath is not None,
    }


def _starts(lines: list[bytes]) -> np.ndarray[Any, Any]:
    """Byte offset of each line in the newline-terminated file of ``lines``, plus the
    end."""
    out = np.zeros(len(lines) + 1, dtype=np.int64)
    if lines:
        out[1:] = np.cumsum(np.fromiter((len(b) + 1 for b in lines), dtype=np.int64))
    return out


def _summary(
    diags: list[Diagnosis],
    has_diagnoses: bool,
    trace_examples: set[str],
    pipeline: dict[str, list[float]],
) -> Summary | None:
    """The report summary (ragtriage.report.aggregate), with the trace-derived parts
    (examples without a diagnosis, pipeline cost) filled from the streamed traces."""
    if not has_diagnoses:
        return None
    s = summarize(diags)
    ids = {d.example_id for d in diags}
    totals = s.totals.model_copy(
        update={
            "examples": len(ids | trace_examples),
            "not_diagnosed": len(trace_examples - ids),
        }
    )
    costs = pipeline_costs(pipeline)
    return s.model_copy(update={"totals": totals, "pipeline": costs})


def _build_dir(
    run: Path, files: dict[str, Path | None], out: Path, stamp: dict[str, list[Any] | None]
) -> None:
    meta = _build(run, files, out)
    meta["version"] = INDEX_VERSION
    # the sources may change while they are read: stamp what the build started from
    meta["sources"] = stamp
    (out / "meta.json").write_text(json.dumps(meta, ensure_ascii=False), encoding="utf-8")


def _build_in_child(run: Path, out: Path) -> None:
    """Build in a child process, so the parent (a server) does not keep the memory a
    build of a large run touches; an InputError in the child is raised here."""
    import ragtriage

    pkg_root = str(Path(ragtriage.__file__).resolve().parents[1])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([pkg_root, *filter(None, [env.get("PYTHONPATH")])])
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, str(run), str(out)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if proc.returncode == 0:
        return
    try:
        err = json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        err = None
    if isinstance(err, dict) and "message" in err:
        raise InputError(
            str(err["message"]), path=err.get("path"), line=err.get("line"), field=err.get("field")
        )
    raise RagtriageError(
        f"building the index of {run} failed (exit {proc.returncode}): {proc.stderr[-2000:]}"
    )


_CHILD = (
    "import sys; from ragtriage.runview._index import _child_main; "
    "raise SystemExit(_child_main(sys.argv[1:]))"
)


def _child_main(argv: list[str]) -> int:
    run, out = Path(argv[0]), Path(argv[1])
    files = source_files(run)
    try:
        _build_dir(run, files, out, _stamp(files))
    except InputError as exc:
        print(
            json.dumps(
                {"message": exc.message, "path": exc.path, "line": exc.line, "field": exc.field}
            )
        )
        return 2
    return 0


def _read_current(root: Path) -> Path | None:
    try:
        name = (root / "CURRENT").read_text(encoding="utf-8").strip()
    except OSError:
        return None
    if not name or "/" in name or name.startswith("."):
        return None
    d = root / name
    return d if d.is_dir() else None


def _load(d: Path) -> IndexData:
    meta = json.loads((d / "meta.json").read_text(encoding="utf-8"))
    meta.update(json.loads((d / "ids.json").read_text(encoding="utf-8")))
    cols = {
        name: np.load(d / f"{name}.npy", mmap_mode="r", allow_pickle=False) for name in _COLUMNS
    }
    return IndexData(
        dir=d,
        meta=meta,
        cols=cols,
        folded=_map(d / "questions.txt"),
        shown=_map(d / "shown.txt"),
        summary_json=(d / "summary.json").read_text(encoding="utf-8"),
    )


def _map(path: Path) -> mmap.mmap | bytes:
    """A read-only memory map of ``path`` (``b""`` for an empty file)."""
    with path.open("rb") as fh:
        if os.fstat(fh.fileno()).st_size == 0:
            return b""
        return mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)


def _fresh(meta: dict[str, Any], stamp: dict[str, list[Any] | None]) -> bool:
    return bool(meta.get("version") == INDEX_VERSION and meta.get("sources") == stamp)


def _cache_home() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ragtriage" / "run-index"


def index_root(run: Path) -> Path:
    """``RUN/.ragtriage-index``, or, when the run directory cannot be written (a
    read-only share), a directory of its own under ``$XDG_CACHE_HOME/ragtriage``."""
    own = run / INDEX_DIR
    if own.is_dir() and os.access(own, os.W_OK):
        return own  # the usual case, checked without writing
    try:
        own.mkdir(exist_ok=True)
        probe = own / ".probe"
        probe.touch()
        probe.unlink()
        return own
    except OSError:
        digest = hashlib.sha256(str(run.resolve()).encode("utf-8")).hexdigest()[:20]
        alt = _cache_home() / digest
        alt.mkdir(parents=True, exist_ok=True)
        return alt


def load_or_build(
    run: Path,
    *,
    known: IndexData | None = None,
    force: bool = False,
    child_bytes: int = CHILD_BUILD_BYTES,
) -> BuiltIndex:
    """The run's index: reused when its sources are unchanged, else built again (in a
    child process when traces.jsonl is larger than ``child_bytes``). ``known`` (an
    index already loaded) is returned as is while it is still current, so checking
    costs a few ``stat`` calls."""
    root = index_root(run)
    files = source_files(run)
    stamp = _stamp(files)
    current = _read_current(root)
    if (
        known is not None
        and not force
        and current is not None
        and current == known.dir
        and _fresh(known.meta, stamp)
    ):
        return BuiltIndex(known, rebuilt=False)
    if current is not None and not force:
        data = _try_load(current)
        if data is not None and _fresh(data.meta, stamp):
            return BuiltIndex(data, rebuilt=False)
    root.mkdir(parents=True, exist_ok=True)
    # one build at a time per run, across processes
    with file_lock(root / ".lock"):
        # another process may have built it while this one waited
        current = _read_current(root)
        data = _try_load(current) if current is not None and not force else None
        if data is not None and _fresh(data.meta, stamp):
            return BuiltIndex(data, rebuilt=False)
        return _rebuild(run, root, files, stamp, child_bytes)


def _try_load(d: Path) -> IndexData | None:
    try:
        return _load(d)
    except (OSError, ValueError, KeyError):
        return None


def _rebuild(
    run: Path,
    root: Path,
    files: dict[str, Path | None],
    stamp: dict[str, list[Any] | None],
    child_bytes: int,
) -> BuiltIndex:
    tmp = Path(tempfile.mkdtemp(prefix="build-", dir=root))
    try:
        traces = files["traces"]
        big = traces is not None and traces.is_file() and traces.stat().st_size > child_bytes
        if big:
            _build_in_child(run, tmp)
        else:
            _build_dir(run, files, tmp, stamp)
        final = root / f"idx-{os.getpid()}-{tmp.name.removeprefix('build-')}"
        os.rename(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    data = _load(final)  # before publishing: its files stay readable once loaded
    atomic_write_text(root / "CURRENT", final.name + "\n")
    for old in root.iterdir():
        if old.is_dir() and old != final and old.name.startswith(("idx-", "build-")):
            shutil.rmtree(old, ignore_errors=True)
    return BuiltIndex(data, rebuilt=True)
