"""Batch mode for the benchmark scripts: their ``--llm-batch-out`` / ``--llm-batch-in``
options and the LLM runner those give, through the CLI's own
:func:`ragtriage.cli._batch.open_batch` (so a benchmark exports, imports and refuses
option mixes exactly as ``ragtriage diagnose`` does). Used by ``realstyle.py``,
``correctness_vs_people.py`` and ``faithfulness_claims.py``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ragtriage.config import PipelineConfig
    from ragtriage.llm import BatchSession, LLMRunner


def add_batch_arguments(ap: argparse.ArgumentParser, what: str = "the LLM path") -> None:
    """``--llm-batch-out DIR`` and ``--llm-batch-in FILE`` (repeatable)."""
    ap.add_argument(
        "--llm-batch-out",
        type=Path,
        default=None,
        help=f"{what} in batch mode: export the requests the cache lacks to "
        "DIR/requests.jsonl and stop; answer them, then run again with --llm-batch-in "
        "(docs/batch.md).",
    )
    ap.add_argument(
        "--llm-batch-in",
        type=Path,
        action="append",
        default=[],
        help="Batch API output file to import into the LLM cache first (repeatable).",
    )


def open_llm(
    cfg: PipelineConfig, args: argparse.Namespace, *, no_cache: bool = False
) -> tuple[LLMRunner, BatchSession | None]:
    """The runner of ``cfg.llm`` (``args.cache``) after importing ``--llm-batch-in``; with
    ``--llm-batch-out``, the exporting session's runner and the session (its ``finish()``
    says whether requests are still pending)."""
    from ragtriage.cli._batch import open_batch
    from ragtriage.cli.diagnose import _runner

    batch = open_batch(
        cfg.llm,
        out=args.llm_batch_out,
        inputs=args.llm_batch_in,
        cache=args.cache,
        no_cache=no_cache,
        log=lambda line: print(line, file=sys.stderr),
    )
    if batch is not None:
        return batch.runner(), batch
    return _runner(cfg, dry_run=False, no_cache=no_cache, cache=args.cache), None
