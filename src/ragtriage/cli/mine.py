"""``ragtriage mine RUNS…`` — mine your own error taxonomy from failing traces (seed 004 §3.1)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console

from ragtriage.cli._batch import (
    BATCH_IN,
    BATCH_OUT,
    BATCH_RETRY_FAILED,
    BATCH_SUBMIT,
    batch_rounds,
    open_batch,
)

if TYPE_CHECKING:  # the records load with the command, not with the CLI
    from ragtriage.records import Diagnosis, Trace

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    @app.command("mine")
    @batch_rounds
    def mine(
        runs: list[Path] = typer.Argument(..., help="Run directories (traces + diagnoses)."),
        out: Path = typer.Option(Path("taxonomy.yaml"), "--out", help="Taxonomy YAML to write."),
        clusters: int = typer.Option(20, "--clusters", min=1, help="Ward clusters (paper: 20)."),
        alpha: int = typer.Option(1, "--alpha", min=1, help="Keep tags seen at least this often."),
        llm: bool = typer.Option(False, "--llm", help="Prompt B/C rationales and tags by LLM."),
        embedding: str = typer.Option("minilm", "--embedding", help="Embedder (default bundled)."),
        model: str | None = typer.Option(None, "--model", help="LLM model name."),
        base_url: str | None = typer.Option(None, "--base-url", help="OpenAI-compatible endpoint."),
        cache: Path | None = typer.Option(None, "--cache", help="LLM cache file."),
        llm_batch_out: Path | None = BATCH_OUT,
        llm_batch_in: list[Path] | None = BATCH_IN,
        llm_batch_submit: bool = BATCH_SUBMIT,
        llm_batch_retry_failed: bool = BATCH_RETRY_FAILED,
    ) -> None:
        """Rationales → tags → normalise → embed → standardise → Ward → named clusters."""
        import yaml

        from ragtriage.cli.diagnose import _config, _runner, read_traces, resolve_input
        from ragtriage.config import EmbeddingConfig
        from ragtriage.critic import MinedTaxonomy, mine_runs
        from ragtriage.diagnosis.engine import Diagnoser
        from ragtriage.embedding import make_embedder
        from ragtriage.jsonl import atomic_write_text
        from ragtriage.llm import run_sync
        from ragtriage.store import read_diagnoses

        traces: list[Trace] = []
        diagnoses: list[Diagnosis] = []
        for run in runs:
            path, _ = resolve_input(run)
            these = read_traces(path)
            dpath = path.parent / "diagnoses.jsonl"
            if dpath.is_file():
                diags = read_diagnoses(dpath)
            else:
                diags = run_sync(Diagnoser("rules", "ragec").diagnose_many(these, 8))
            traces += these
            diagnoses += diags
        runner = None
        llm_model = ""
        cfg = _config(None, base_url, model, None)
        batch = open_batch(
            cfg.llm,
            out=llm_batch_out,
            inputs=llm_batch_in,
            submit=llm_batch_submit,
            retry_failed=llm_batch_retry_failed,
            cache=cache,
            uses_llm=llm,
        )
        if llm:
            runner = (
                batch.runner()
                if batch is not None
                else _runner(cfg, dry_run=False, no_cache=False, cache=cache)
            )
            llm_model = cfg.llm.with_env().model or ""
        embedder = make_embedder(EmbeddingConfig(model=embedding))

        async def go() -> MinedTaxonomy:
            try:
                return await mine_runs(
                    traces,
                    diagnoses,
                    embedder,
                    n_clusters=clusters,
                    alpha=alpha,
                    runner=runner,
                    model=llm_model,
                )
            finally:
                if runner is not None:
                    await runner.aclose()

        try:
            taxonomy = run_sync(go())
        finally:
            if runner is not None:
                runner.close()
        if batch is not None and batch.finish():
            return
        atomic_write_text(
            out, yaml.safe_dump(taxonomy.to_dict(), allow_unicode=True, sort_keys=False)
        )
        console = Console()
        for c in taxonomy.clusters:
            console.print(f"{c.count:5d}  {c.name}  ({len(c.tags)} tags)", highlight=False)
        console.print(
            f"{len(taxonomy.clusters)} clusters over {len(taxonomy.tag_cluster)} tags; wrote {out}",
            highlight=False,
        )
