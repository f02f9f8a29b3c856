"""The order in which traces are offered for annotation."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from ragtriage.runview import RunView

__all__ = ["STRATEGIES", "sample_order"]

STRATEGIES = ("sequential", "stratified", "uncertain")


def sample_order(view: RunView, strategy: str, seed: int = 0) -> list[str]:
    """Every trace id of the run, in the order to annotate them:

    * ``sequential`` — file order;
    * ``stratified`` — strata by the judge's verdict (answer label, stage, modal type);
      a seeded shuffle within each stratum, interleaved so that every prefix holds each
      stratum in proportion to its size (systematic stratified sampling);
    * ``uncertain`` — lowest diagnosis confidence first (undetermined diagnoses and
      traces without one before any confidence), ties in file order.
    """
    ids = view.trace_ids()
    n = len(ids)
    if strategy == "sequential":
        return ids
    if strategy == "uncertain":
        conf = np.asarray(view.column("confidence"), dtype=np.float64)
        missing = np.isnan(conf)
        order = np.lexsort((np.arange(n), np.where(missing, 0.0, conf), ~missing))
        return [ids[int(i)] for i in order]
    if strategy == "stratified":
        rng = np.random.default_rng(seed)
        answer = np.asarray(view.column("answer"), dtype=np.int64)
        stage = np.asarray(view.column("stage"), dtype=np.int64)
        type1 = np.asarray(view.column("type1"), dtype=np.int64)
        strata = (answer + 3) * 10_000 + (stage + 3) * 100 + (type1 + 3)
        key = np.empty(n, dtype=np.float64)
        for s in np.unique(strata):
            members = np.flatnonzero(strata == s)
            rank = rng.permutation(len(members))
            # member of rank r sits at (r + u) / size: evenly spread over [0, 1)
            key[members] = (rank + rng.random()) / len(members)
        tiebreak = rng.random(n)
        order = np.lexsort((tiebreak, key))
        return [ids[int(i)] for i in order]
    raise ValueError(f"strategy: unknown {strategy!r}; use one of {list(STRATEGIES)}")
