"""Lazy access to one run directory through its on-disk index (see ``_index``)."""

from __future__ import annotations

import json
import re
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
from pydantic import ValidationError

from ragtriage.jsonl import validation_to_input_error
from ragtriage.records import Diagnosis, Trace
from ragtriage.report.aggregate import Summary
from ragtriage.rundir import check_run_dir, run_note
from ragtriage.runview._filter import Page, TraceFilter, TraceRow, check_sort
from ragtriage.runview._index import (
    ANSWER_LABELS,
    STAGES,
    TYPES,
    IndexData,
    fold_text,
    load_or_build,
)

__all__ = ["MetricSummary", "Outcome", "RunSummary", "RunView"]

UNDETERMINED = "undetermined"
#: answer-label filter values beyond the labels: the judge's failing verdict or not
FAILING = "failing"
NOT_FAILING = "not_failing"
_CACHE_ORDERS = 32


@dataclass(frozen=True)
class MetricSummary:
    """Mean of one per-trace metric over the traces it could score."""

    name: str
    mean: float | None
    n: int
    undetermined: int


@dataclass(frozen=True)
class RunSummary:
    """What the run page's tables show, computed once when the index is built.

    ``report`` is the report's :class:`~ragtriage.report.aggregate.Summary` (stage x
    type table, co-occurrence, advice, ...), ``None`` for a run without diagnoses.
    """

    n_traces: int
    accuracy: float | None
    failing: int | None
    stages: Mapping[str, int]
    report: Summary | None
    metrics: tuple[MetricSummary, ...] = ()
    metrics_aggregate: Mapping[str, Any] | None = None
    question_types: Mapping[str, int] = field(default_factory=dict)
    critic_tiers: Mapping[str, int] = field(default_factory=dict)
    run_id: str | None = None
    created: str | None = None
    config_hash: str | None = None
    sources: Mapping[str, str | None] = field(default_factory=dict)
    #: where the manifest or traces came from when not ``ragtriage run`` (``run_note``)
    note: tuple[str, str] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "n_traces": self.n_traces,
            "accuracy": self.accuracy,
            "failing": self.failing,
            "stages": dict(self.stages),
            "report": self.report.model_dump(mode="json") if self.report is not None else None,
            "metrics": [m.__dict__ for m in self.metrics],
            "metrics_aggregate": self.metrics_aggregate,
            "question_types": dict(self.question_types),
            "critic_tiers": dict(self.critic_tiers),
            "run_id": self.run_id,
            "created": self.created,
            "config_hash": self.config_hash,
            "sources": dict(self.sources),
            "note": list(self.note) if self.note is not None else None,
        }


class Outcome(NamedTuple):
    """The judge's verdict on one example: ``status`` is ``failing``, ``not_failing``,
    ``undetermined`` (no answer label) or ``no_diagnosis``. (A named tuple: a run of
    100k examples builds them in a fraction of a second.)"""

    trace_id: str
    status: str
    answer_label: str | None
    stage: str | None
    error_type: str | None


_VIEWS: dict[Path, RunView] = {}
_VIEWS_LOCK = threading.Lock()


class RunView:
    """One run, read through its index: filters and sorts over numpy columns, traces
    and diagnoses read by byte offset. Never holds every trace in memory."""

    def __init__(
        self,
        run_dir: Path,
        data: IndexData,
        *,
        rebuilt: bool = False,
        manifest: dict[str, Any] | None = None,
    ) -> None:
        self.path = run_dir
        #: the run's manifest, or the one made up from its files (``ragtriage.rundir``)
        self.manifest: dict[str, Any] = manifest if manifest is not None else _manifest(run_dir)
        self.rebuilt = rebuilt
        self._data = data
        self._meta = data.meta
        self._cols = data.cols
        self._pos: dict[str, int] = {t: i for i, t in enumerate(data.meta["trace_ids"])}
        self._lock = threading.Lock()
        self._orders: OrderedDict[tuple[TraceFilter, str], np.ndarray[Any, Any]] = OrderedDict()
        self._fold = data.folded
        self._shown = data.shown
        self._summary_text = data.summary_json
        self._summary: RunSummary | None = None
        self._sources = {k: str(v) if v else None for k, v in _source_paths(data).items()}

    # ------------------------------------------------------------------ opening

    @classmethod
    def open(cls, run_dir: Path) -> RunView:
        """Open a run directory (with ``traces.jsonl``): reuse its index when the source
        files are unchanged, else rebuild it. Views are cached per directory while
        their index stays current, so calling this on every request is cheap (a few
        ``stat`` calls, about 0.5 ms) and always gives the current run."""
        run = Path(run_dir)
        checked = check_run_dir(run)  # the rule `ragtriage report` applies too
        key = run.resolve()
        with _VIEWS_LOCK:
            cached = _VIEWS.get(key)
            built = load_or_build(key, known=cached._data if cached is not None else None)
            if cached is not None and built.data is cached._data:
                return cached
            view = cls(run, built.data, rebuilt=built.rebuilt, manifest=checked.manifest)
            _VIEWS[key] = view
            return view

    @property
    def n(self) -> int:
        return self._data.n

    @property
    def metric_names(self) -> tuple[str, ...]:
        return tuple(self._meta["metrics"])

    @property
    def question_types(self) -> tuple[str, ...]:
        return tuple(self._meta["question_types"])

    @property
    def critic_tiers(self) -> tuple[str, ...]:
        return tuple(self._meta["critic_tiers"])

    @property
    def has_diagnoses(self) -> bool:
        return bool(self._meta["has_diagnoses"])

    def column(self, name: str) -> np.ndarray[Any, Any]:
        """A read-only index column by position: ``answer`` (code into
        ``ANSWER_LABELS``; -1 no diagnosis, -2 undetermined), ``stage``, ``type1``,
        ``type2`` (codes, -1 none), ``failing`` (0/1), ``confidence`` (NaN: none)."""
        if name not in ("answer", "stage", "type1", "type2", "failing", "confidence"):
            raise KeyError(name)
        return np.asarray(self._cols[name])

    def trace_ids(self) -> list[str]:
        return list(self._meta["trace_ids"])

    def example_id(self, trace_id: str) -> str:
        return str(self._meta["example_ids"][self._position(trace_id)])

    # ------------------------------------------------------------------ summary

    def summary(self) -> RunSummary:
        if self._summary is None:
            self._summary = self._load_summary()
        return self._summary

    def _load_summary(self) -> RunSummary:
        text = self._summary_text
        report = None if text.strip() == "null" else Summary.model_validate_json(text)
        manifest = self.manifest
        stages: dict[str, int] = {}
        if report is not None:
            stages = {s.stage.value: s.count for s in report.stages}
        metrics = []
        m = self._cols["metrics"]
        has_score = self._cols["s_off"] >= 0
        for j, name in enumerate(self.metric_names):
            col = m[:, j]
            ok = ~np.isnan(col)
            k = int(ok.sum())
            metrics.append(
                MetricSummary(
                    name=name,
                    mean=float(col[ok].mean()) if k else None,
                    n=k,
                    undetermined=int((has_score & ~ok).sum()),
                )
            )
        agg = None
        mpath = self._sources.get("metrics")
        if mpath:
            try:
                agg = json.loads(Path(mpath).read_text(encoding="utf-8"))
            except (OSError, ValueError):
                agg = None
        qt = self._cols["qtype"]
        qcounts = np.bincount(qt[qt >= 0], minlength=len(self.question_types))
        tcounts = np.bincount(self._cols["tier_ids"], minlength=len(self.critic_tiers))
        return RunSummary(
            n_traces=self.n,
            accuracy=report.accuracy if report is not None else None,
            failing=report.totals.failing if report is not None else None,
            stages=stages,
            report=report,
            metrics=tuple(metrics),
            metrics_aggregate=agg if isinstance(agg, dict) else None,
            question_types={
                name: int(c) for name, c in zip(self.question_types, qcounts, strict=True)
            },
            critic_tiers={name: int(c) for name, c in zip(self.critic_tiers, tcounts, strict=True)},
            run_id=_str_or_none(manifest.get("run_id")),
            created=_str_or_none(manifest.get("created_at")),
            config_hash=_str_or_none(manifest.get("config_hash")),
            sources=self._sources,
            note=run_note(manifest),
        )

    # ------------------------------------------------------------------ queries

    def mask(self, flt: TraceFilter) -> np.ndarray[Any, Any]:
        """Boolean mask over trace positions of the traces ``flt`` keeps."""
        c = self._cols
        keep = np.ones(self.n, dtype=bool)
        if flt.stage is not None:
            keep &= c["stage"] == _code(STAGES, flt.stage)
        if flt.type is not None:
            keep &= c["type1"] == _code(TYPES, flt.type.upper())
        if flt.answer_label in (FAILING, NOT_FAILING):
            failing = (np.asarray(c["failing"]) > 0) & (np.asarray(c["answer"]) >= 0)
            keep &= (
                failing
                if flt.answer_label == FAILING
                else (np.asarray(c["answer"]) >= 0) & ~failing
            )
        elif flt.answer_label is not None:
            code = (
                -2 if flt.answer_label == UNDETERMINED else _code(ANSWER_LABELS, flt.answer_label)
            )
            keep &= c["answer"] == code
        if flt.question_type is not None:
            keep &= c["qtype"] == _code(self.question_types, flt.question_type)
        if flt.critic_tier is not None:
            code = _code(self.critic_tiers, flt.critic_tier)
            rows = np.zeros(self.n, dtype=bool)
            if code >= 0:
                hits = np.flatnonzero(c["tier_ids"] == code)
                rows[np.searchsorted(c["tier_ptr"], hits, side="right") - 1] = True
            keep &= rows
        keep &= _in_range(c["confidence"], flt.conf_min, flt.conf_max)
        if flt.metric is not None:
            j = _code(self.metric_names, flt.metric)
            if j < 0:
                keep &= False
            else:
                col = c["metrics"][:, j]
                keep &= ~np.isnan(col) & _in_range(col, flt.metric_min, flt.metric_max)
        if flt.text is not None:
            keep &= self._text_mask(flt.text)
        return keep

    def _text_mask(self, text: str) -> np.ndarray[Any, Any]:
        needle = fold_text(text)
        out = np.zeros(self.n, dtype=bool)
        if not needle:
            out[:] = True
            return out
        # every occurrence (C speed, in the mapped UTF-8 bytes: a UTF-8 substring match
        # is a character substring match), then one vectorised lookup of their lines
        pattern = re.compile(re.escape(needle.encode("utf-8")))
        hits = np.fromiter((m.start() for m in pattern.finditer(self._fold)), dtype=np.int64)
        if len(hits):
            out[np.searchsorted(self._cols["fold_starts"], hits, side="right") - 1] = True
        return out

    def order(self, flt: TraceFilter, sort: str = "position") -> np.ndarray[Any, Any]:
        """Positions of the matching traces in display order (cached per filter+sort)."""
        check_sort(sort)
        key = (flt, sort)
        with self._lock:
            hit = self._orders.get(key)
            if hit is not None:
                self._orders.move_to_end(key)
                return hit
        idx = np.flatnonzero(self.mask(flt))
        if sort != "position":
            values = self._sort_values(sort.removeprefix("-"))[idx]
            desc = sort.startswith("-")
            # missing values (NaN) last in both directions; ties by position
            nan = np.isnan(values)
            keyv = np.where(nan, 0.0, -values if desc else values)
            idx = idx[np.lexsort((idx, keyv, nan))]
        idx.setflags(write=False)
        with self._lock:
            self._orders[key] = idx
            while len(self._orders) > _CACHE_ORDERS:
                self._orders.popitem(last=False)
        return idx

    def _sort_values(self, name: str) -> np.ndarray[Any, Any]:
        if name == "confidence":
            return np.asarray(self._cols["confidence"])
        metric = name.removeprefix("metric:")
        j = _code(self.metric_names, metric)
        if j < 0:
            raise ValueError(f"sort: unknown metric {metric!r}; known: {list(self.metric_names)}")
        return np.asarray(self._cols["metrics"][:, j])

    def query(
        self, flt: TraceFilter, sort: str = "position", page: int = 1, page_size: int = 50
    ) -> Page:
        """One page (1-based) of the traces ``flt`` keeps, in ``sort`` order."""
        if page < 1:
            raise ValueError(f"page: expected 1 or more, got {page}")
        if not 1 <= page_size <= 1000:
            raise ValueError(f"page_size: expected 1 to 1000, got {page_size}")
        idx = self.order(flt, sort)
        chunk = idx[(page - 1) * page_size : page * page_size]
        return Page(
            total=len(idx),
            page=page,
            page_size=page_size,
            rows=tuple(self._row(int(i)) for i in chunk),
        )

    def row(self, trace_id: str) -> TraceRow:
        return self._row(self._position(trace_id))

    def _row(self, i: int) -> TraceRow:
        c = self._cols
        starts = c["shown_starts"]
        a, s, t1, t2 = (
            int(c["answer"][i]),
            int(c["stage"][i]),
            int(c["type1"][i]),
            int(c["type2"][i]),
        )
        conf = float(c["confidence"][i])
        q = int(c["qtype"][i])
        lo, hi = int(c["tier_ptr"][i]), int(c["tier_ptr"][i + 1])
        tiers = self.critic_tiers
        m = c["metrics"][i]
        return TraceRow(
            trace_id=self._meta["trace_ids"][i],
            position=i + 1,
            question=self._shown[int(starts[i]) : int(starts[i + 1]) - 1].decode("utf-8"),
            answer_label=ANSWER_LABELS[a] if a >= 0 else (UNDETERMINED if a == -2 else None),
            stage=STAGES[s] if s >= 0 else None,
            types=tuple(TYPES[t] for t in (t1, t2) if t >= 0),
            confidence=None if np.isnan(conf) else conf,
            question_type=self.question_types[q] if q >= 0 else None,
            critic_tier=tiers[int(c["tier_ids"][lo])] if hi > lo else None,
            metrics={
                name: float(m[j]) for j, name in enumerate(self.metric_names) if not np.isnan(m[j])
            },
            example_id=self._meta["example_ids"][i],
        )

    def neighbours(
        self, trace_id: str, flt: TraceFilter, sort: str = "position"
    ) -> tuple[str | None, str | None]:
        """(previous, next) trace ids around ``trace_id`` within the filter and order;
        ``(None, None)`` when the filter does not keep it."""
        i = self._position(trace_id)
        idx = self.order(flt, sort)
        where = np.flatnonzero(idx == i)
        if not len(where):
            return None, None
        k = int(where[0])
        ids = self._meta["trace_ids"]
        prev = ids[int(idx[k - 1])] if k > 0 else None
        nxt = ids[int(idx[k + 1])] if k + 1 < len(idx) else None
        return prev, nxt

    # ------------------------------------------------------------------ records

    def _position(self, trace_id: str) -> int:
        try:
            return self._pos[trace_id]
        except KeyError:
            raise KeyError(f"unknown trace id {trace_id!r}") from None

    def _read(self, name: str, off: int, n: int) -> bytes:
        path = self._sources[name]
        assert path is not None
        with open(path, "rb") as fh:
            fh.seek(off)
            return fh.read(n)

    def trace(self, trace_id: str) -> Trace:
        """The full trace, read by byte offset; KeyError if unknown."""
        i = self._position(trace_id)
        raw = self._read("traces", int(self._cols["t_off"][i]), int(self._cols["t_len"][i]))
        try:
            return Trace.model_validate_json(raw)
        except ValidationError as exc:
            raise validation_to_input_error(exc, path=self._sources["traces"], line=None) from exc

    def diagnosis(self, trace_id: str) -> Diagnosis | None:
        i = self._position(trace_id)
        off = int(self._cols["d_off"][i])
        if off < 0:
            return None
        raw = self._read("diagnoses", off, int(self._cols["d_len"][i]))
        try:
            return Diagnosis.model_validate_json(raw)
        except ValidationError as exc:
            raise validation_to_input_error(
                exc, path=self._sources["diagnoses"], line=None
            ) from exc

    def trace_metrics(self, trace_id: str) -> Mapping[str, Any] | None:
        """The trace's line of ``scores.jsonl`` (``ragtriage evaluate``), when present."""
        i = self._position(trace_id)
        off = int(self._cols["s_off"][i])
        if off < 0:
            return None
        obj = json.loads(self._read("scores", off, int(self._cols["s_len"][i])))
        return obj if isinstance(obj, dict) else None

    def critic_verdict(self, trace_id: str) -> Mapping[str, Any] | None:
        """The trace's line of ``critic.jsonl`` (``ragtriage critic``), when present."""
        i = self._position(trace_id)
        off = int(self._cols["c_off"][i])
        if off < 0:
            return None
        obj = json.loads(self._read("critic", off, int(self._cols["c_len"][i])))
        return obj if isinstance(obj, dict) else None

    def label(self, trace_id: str) -> str | None:
        """The question-type label (``ragtriage label``, else the diagnosis', else the
        example's)."""
        q = int(self._cols["qtype"][self._position(trace_id)])
        return self.question_types[q] if q >= 0 else None

    def outcomes(self) -> dict[str, Outcome]:
        """example id -> the judge's verdict on it, from the index columns (no
        diagnosis is read): what comparing two runs example by example needs."""
        c = self._cols
        answer = np.asarray(c["answer"]).tolist()
        fails = np.asarray(c["failing"]).tolist()
        stage = np.asarray(c["stage"]).tolist()
        type1 = np.asarray(c["type1"]).tolist()
        out: dict[str, Outcome] = {}
        for i, (tid, eid) in enumerate(
            zip(self._meta["trace_ids"], self._meta["example_ids"], strict=True)
        ):
            a = answer[i]
            if a == -1:
                status, label = "no_diagnosis", None
            elif a == -2:
                status, label = UNDETERMINED, UNDETERMINED
            else:
                status, label = ("failing" if fails[i] else "not_failing"), ANSWER_LABELS[a]
            out[eid] = Outcome(
                trace_id=tid,
                status=status,
                answer_label=label,
                stage=STAGES[stage[i]] if stage[i] >= 0 else None,
                error_type=TYPES[type1[i]] if type1[i] >= 0 else None,
            )
        return out


def _in_range(
    values: np.ndarray[Any, Any], lo: float | None, hi: float | None
) -> np.ndarray[Any, Any]:
    """``lo <= values <= hi`` (a bound that is None is open); NaN is outside any bound."""
    keep = np.ones(len(values), dtype=bool)
    with np.errstate(invalid="ignore"):
        if lo is not None:
            keep &= values >= lo
        if hi is not None:
            keep &= values <= hi
    return keep


def _code(names: tuple[str, ...], value: str) -> int:
    try:
        return names.index(value)
    except ValueError:
        return -3  # matches nothing (no column holds -3)


def _str_or_none(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _manifest(run: Path) -> dict[str, Any]:
    try:
        data = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _source_paths(data: IndexData) -> dict[str, Path | None]:
    out: dict[str, Path | None] = {}
    for key, st in data.meta["sources"].items():
        out[key] = Path(st[0]) if st else None
    return out
