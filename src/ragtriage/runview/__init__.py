"""Lazy access to run directories for the web app (``ragtriage serve``): run
discovery confined to the given roots, and an on-disk index (byte offsets, filter and
sort columns as ``.npy``) so a run of 100k traces opens without reading every trace."""

from ragtriage.runview._discover import (
    Discovery,
    RunEntry,
    SkippedDir,
    discover,
    discover_runs,
    resolve_key,
    scan_roots,
)
from ragtriage.runview._filter import Page, TraceFilter, TraceRow
from ragtriage.runview._index import INDEX_DIR
from ragtriage.runview._view import MetricSummary, Outcome, RunSummary, RunView

__all__ = [
    "INDEX_DIR",
    "Discovery",
    "MetricSummary",
    "Outcome",
    "Page",
    "RunEntry",
    "RunSummary",
    "RunView",
    "SkippedDir",
    "TraceFilter",
    "TraceRow",
    "discover",
    "discover_runs",
    "resolve_key",
    "scan_roots",
]
