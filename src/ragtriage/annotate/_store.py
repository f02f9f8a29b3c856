"""Annotations saved per annotator to ``RUN/annotations/<annotator>.jsonl``.

Every save is one whole line appended and fsynced (a re-annotation of the same trace
rewrites the file atomically, temp file + rename, so the file keeps one line per
example and ``ragtriage agree --labels`` reads it as is). A reload, a crash or a killed
server loses nothing: loading is resuming; a torn last line (a crash mid-write) is
skipped with a warning and dropped at the next save.
"""

from __future__ import annotations

import json
import os
import re
import threading
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ragtriage.annotate._labels import BUILTIN_TAXONOMIES, LabelSet, label_set
from ragtriage.jsonl import append_jsonl, atomic_write_text, file_lock, scan_done_ids

__all__ = [
    "ANNOTATIONS_DIR",
    "ANNOTATOR_RE",
    "Annotation",
    "AnnotationStore",
    "check_annotator",
    "validate_annotation",
]

ANNOTATIONS_DIR = "annotations"
ANNOTATOR_RE: re.Pattern[str] = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}\Z")  # \Z: no "\n"
_MAX_NOTE = 10_000


def check_annotator(name: str) -> str:
    """``name`` if it is a valid annotator name (letters, digits, ``_.-``; 1-64
    characters, starting with a letter or digit), else ValueError."""
    if not isinstance(name, str) or not ANNOTATOR_RE.fullmatch(name):
        raise ValueError(
            f"annotator: {name!r} is not a valid name (1-64 letters, digits, '_', '.', '-', "
            "starting with a letter or digit)"
        )
    return name


@dataclass(frozen=True)
class Annotation:
    """One annotator's labels for one trace. ``types`` are codes of the ``taxonomy``'s
    label set (E1-E16 for ``ragec``). ``example_id`` is filled from the run on save."""

    trace_id: str
    annotator: str
    answer_label: str | None
    stage: str | None
    types: tuple[str, ...]
    question_type: str | None
    note: str = ""
    taxonomy: str = "ragec"
    saved_at: str = ""
    example_id: str = ""

    def to_line(self) -> dict[str, Any]:
        """The JSONL line: readable by ``ragtriage agree --labels`` (``types`` hold
        RAGEC codes only; another taxonomy's types go to ``tags``)."""
        ragec = self.taxonomy == "ragec"
        return {
            "example_id": self.example_id or self.trace_id,
            "trace_id": self.trace_id,
            "annotator": self.annotator,
            "answer_label": self.answer_label,
            "stage": self.stage,
            "types": list(self.types) if ragec else [],
            "tags": [] if ragec else list(self.types),
            "question_type": self.question_type,
            "note": self.note,
            "taxonomy": self.taxonomy,
            "saved_at": self.saved_at,
        }

    @classmethod
    def from_line(cls, obj: dict[str, Any]) -> Annotation:
        """Inverse of :meth:`to_line`; ValueError on a malformed line."""
        tid = obj.get("trace_id") or obj.get("example_id")
        ann = obj.get("annotator")
        if not isinstance(tid, str) or not tid or not isinstance(ann, str):
            raise ValueError("a line needs 'trace_id' (or 'example_id') and 'annotator'")
        taxonomy = obj.get("taxonomy") or "ragec"
        raw_types = obj.get("types") if taxonomy == "ragec" else obj.get("tags")
        if not isinstance(raw_types, list) or not all(isinstance(t, str) for t in raw_types):
            raise ValueError("'types' must be a list of strings")
        return cls(
            trace_id=tid,
            annotator=ann,
            answer_label=_opt_str(obj.get("answer_label")),
            stage=_opt_str(obj.get("stage")),
            types=tuple(raw_types),
            question_type=_opt_str(obj.get("question_type")),
            note=str(obj.get("note") or ""),
            taxonomy=str(taxonomy),
            saved_at=str(obj.get("saved_at") or ""),
            example_id=str(obj.get("example_id") or tid),
        )


def _opt_str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def validate_annotation(a: Annotation, labels: LabelSet | None = None) -> None:
    """ValueError naming the field when ``a`` is not a label ``ragtriage agree`` accepts:
    an answer label or a stage is needed; an ``incorrect`` answer needs a stage; types
    need a stage and (RAGEC) must belong to it; every value from the label set."""
    check_annotator(a.annotator)
    if not a.trace_id:
        raise ValueError("trace_id: empty")
    ls = labels if labels is not None else label_set(a.taxonomy)
    if a.answer_label is not None and a.answer_label not in ls.answer_labels:
        raise ValueError(f"answer_label: {a.answer_label!r} is not one of {list(ls.answer_labels)}")
    if a.stage is not None and a.stage not in ls.stages:
        raise ValueError(f"stage: {a.stage!r} is not one of {list(ls.stages)}")
    if a.answer_label is None and a.stage is None:
        raise ValueError("answer_label: give an answer label or a stage")
    if a.answer_label == "incorrect" and a.stage is None:
        raise ValueError("stage: an 'incorrect' answer is a failure: give the stage of its cause")
    if a.types and a.stage is None:
        raise ValueError("types: error types need the stage of the failure")
    for t in a.types:
        if t not in ls.codes:
            raise ValueError(f"types: {t!r} is not in the {ls.name} label set")
        owner = ls.stage_of(t)
        if owner is not None and owner != a.stage:
            raise ValueError(f"types: {t} belongs to stage {owner}, not {a.stage}")
    if len(set(a.types)) != len(a.types):
        raise ValueError("types: listed twice")
    if a.question_type is not None and a.question_type not in ls.question_types:
        raise ValueError(
            f"question_type: {a.question_type!r} is not one of {list(ls.question_types)}"
        )
    if len(a.note) > _MAX_NOTE:
        raise ValueError(f"note: longer than {_MAX_NOTE} characters")


def _check_loaded(a: Annotation) -> None:
    """A line read back must be one ``save`` accepts (a hand-edited file may not be);
    a mined taxonomy's own types are not checked (its file may have moved)."""
    if a.taxonomy in BUILTIN_TAXONOMIES:
        validate_annotation(a)
        return
    ls = label_set("ragec")
    validate_annotation(
        a, replace(ls, name=a.taxonomy, types=tuple((t, "") for t in a.types), type_stage=())
    )


_LOCKS: dict[Path, threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


def _lock_for(path: Path) -> threading.Lock:
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(path.resolve(), threading.Lock())


class AnnotationStore:
    """The annotations of one run directory, one file per annotator."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = Path(run_dir)
        self.dir = self.run_dir / ANNOTATIONS_DIR
        self._example_of: dict[str, str] | None = None

    def path(self, annotator: str) -> Path:
        return self.dir / f"{check_annotator(annotator)}.jsonl"

    def _example_id(self, trace_id: str, given: str) -> str:
        """The example id of ``trace_id`` in the run (in a directory without
        traces.jsonl: ``given``, else the trace id)."""
        from ragtriage.runview import RunView

        if not (self.run_dir / "traces.jsonl").is_file():
            return given or trace_id
        view = RunView.open(self.run_dir)
        try:
            return view.example_id(trace_id)
        except KeyError:
            raise ValueError(f"trace_id: {trace_id!r} is not a trace of this run") from None

    def save(self, a: Annotation) -> Annotation:
        """Validate and save ``a`` (its ``example_id`` taken from the run, ``saved_at``
        filled in when empty); the saved annotation is returned."""
        validate_annotation(a)
        a = replace(
            a,
            example_id=self._example_id(a.trace_id, a.example_id),
            saved_at=a.saved_at or datetime.now(UTC).isoformat(timespec="seconds"),
        )
        path = self.path(a.annotator)
        line = a.to_line()
        with _lock_for(path), file_lock(path.parent / f".{a.annotator}.lock"):
            # drops a torn last line (a crash mid-write) so the next line starts clean
            new = not path.exists()
            done = scan_done_ids(path, "example_id").ids
            if a.example_id in done:
                self._rewrite(path, a)
            else:
                append_jsonl(path, line)
            if new:
                _fsync_dir(path.parent)
        return a

    def _rewrite(self, path: Path, a: Annotation) -> None:
        kept: list[str] = []
        with path.open("r", encoding="utf-8") as fh:
            for raw in fh:
                try:
                    obj = json.loads(raw)
                except ValueError:
                    continue
                if isinstance(obj, dict) and obj.get("example_id") == a.example_id:
                    continue
                if raw.strip():
                    kept.append(raw if raw.endswith("\n") else raw + "\n")
        kept.append(json.dumps(a.to_line(), ensure_ascii=False) + "\n")
        atomic_write_text(path, "".join(kept))

    def load(self, annotator: str) -> dict[str, Annotation]:
        """trace id -> the annotator's last annotation of it. Unreadable lines (a torn
        last line after a crash) are skipped with a warning."""
        path = self.path(annotator)
        out: dict[str, Annotation] = {}
        if not path.is_file():
            return out
        bad: list[int] = []
        with path.open("rb") as fh:
            for lineno, raw in enumerate(fh, start=1):
                if not raw.strip():
                    continue
                try:
                    obj = json.loads(raw.decode("utf-8"))
                    if not isinstance(obj, dict):
                        raise ValueError("not an object")
                    a = Annotation.from_line(obj)
                    _check_loaded(a)
                except (ValueError, UnicodeDecodeError, RecursionError):
                    bad.append(lineno)
                    continue
                out.pop(a.trace_id, None)
                out[a.trace_id] = a
        if bad:
            warnings.warn(
                f"{path}: skipped {len(bad)} unreadable line(s) (line {', '.join(map(str, bad[:5]))}"
                "); a torn last line is what a crash mid-save leaves",
                stacklevel=2,
            )
        return out

    def annotators(self) -> list[str]:
        """Annotators with a file in ``RUN/annotations/`` (valid names only), sorted."""
        if not self.dir.is_dir():
            return []
        return sorted(
            p.stem
            for p in self.dir.glob("*.jsonl")
            if p.is_file() and ANNOTATOR_RE.fullmatch(p.stem)
        )

    def load_all(self, annotators: Sequence[str] | None = None) -> dict[str, dict[str, Annotation]]:
        return {a: self.load(a) for a in (annotators or self.annotators())}


def _fsync_dir(path: Path) -> None:
    """fsync a directory so a new file's entry survives a crash (best effort)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
