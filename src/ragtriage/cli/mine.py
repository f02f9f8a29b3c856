"""``ragtriage mine RUNS…`` — mine your own error taxonomy from failing traces (seed 004 §3.1).

Default ``--on analyses``: the free-text analyses (rules diagnoses, critic verdicts,
``--rationales`` files) are clustered and each cluster compared with the existing types
(:func:`ragtriage.critic.mine_analyses`); ``--on tags``: the open-set tag pipeline
(:func:`ragtriage.critic.mine_runs`)."""

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
    run_closing,
)

if TYPE_CHECKING:  # the records load with the command, not with the CLI
    from ragtriage.critic import CriticVerdict
    from ragtriage.records import Diagnosis, Trace

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    @app.command("mine")
    @batch_rounds
    def mine(
        runs: list[Path] | None = typer.Argument(
            None, help="Run directories (traces; diagnoses.jsonl and critic.jsonl if present)."
        ),
        out: Path = typer.Option(Path("taxonomy.yaml"), "--out", help="Taxonomy YAML to write."),
        on: str = typer.Option(
            "analyses", "--on", help="analyses (free-text rationales) or tags (open-set tags)."
        ),
        rationales: list[Path] | None = typer.Option(
            None,
            "--rationales",
            help="Also mine this file's analyses: a labels file (rationale column), a "
            "critic.jsonl or a diagnoses.jsonl (repeatable; --on analyses).",
        ),
        clusters: int | None = typer.Option(
            None,
            "--clusters",
            min=1,
            help="Ward clusters (tags: 20, the paper's; analyses: sqrt(n/2)).",
        ),
        new_below: float = typer.Option(
            0.5,
            "--new-below",
            help="A cluster whose nearest existing type is less similar "
            "than this (cosine) is reported new (--on analyses).",
        ),
        alpha: int = typer.Option(1, "--alpha", min=1, help="Keep tags seen at least this often."),
        llm: bool = typer.Option(
            False,
            "--llm",
            help="analyses: an LLM names the clusters; tags: Prompt B/C rationales and tags by LLM.",
        ),
        embedding: str = typer.Option("minilm", "--embedding", help="Embedder (default bundled)."),
        model: str | None = typer.Option(None, "--model", help="LLM model name."),
        base_url: str | None = typer.Option(None, "--base-url", help="OpenAI-compatible endpoint."),
        cache: Path | None = typer.Option(None, "--cache", help="LLM cache file."),
        llm_batch_out: Path | None = BATCH_OUT,
        llm_batch_in: list[Path] | None = BATCH_IN,
        llm_batch_submit: bool = BATCH_SUBMIT,
        llm_batch_retry_failed: bool = BATCH_RETRY_FAILED,
    ) -> None:
        """Analyses → masked terms → TF-IDF → Ward → named clusters, each against the
        existing types; or (--on tags) rationales → tags → embed → Ward → named clusters."""
        import yaml

        from ragtriage.cli.diagnose import _config, _runner, read_traces, resolve_input
        from ragtriage.config import EmbeddingConfig
        from ragtriage.critic import MinedTaxonomy, mine_runs
        from ragtriage.diagnosis.engine import Diagnoser
        from ragtriage.embedding import make_embedder
        from ragtriage.errors import InputError
        from ragtriage.jsonl import atomic_write_text
        from ragtriage.llm import run_sync
        from ragtriage.store import read_diagnoses

        if on not in ("analyses", "tags"):
            raise InputError(f"--on must be analyses or tags, not {on!r}", field="--on")
        if rationales and on != "analyses":
            raise InputError("--rationales are mined with --on analyses", field="--rationales")
        if not runs and not (rationales and on == "analyses"):
            raise InputError(
                "nothing to mine: give run directories (or --rationales)", field="RUNS"
            )
        traces: list[Trace] = []
        diagnoses: list[Diagnosis] = []
        verdicts: list[CriticVerdict] = []
        for run in runs or []:
            path, _ = resolve_input(run)
            these = read_traces(path)
            dpath = path.parent / "diagnoses.jsonl"
            if dpath.is_file():
                diags = read_diagnoses(dpath)
            else:
                diags = run_sync(Diagnoser("rules", "ragec").diagnose_many(these, 8))
            traces += these
            diagnoses += diags
            cpath = path.parent / "critic.jsonl"
            if on == "analyses" and cpath.is_file():
                from ragtriage.critic import CriticVerdict
                from ragtriage.jsonl import read_records

                verdicts += read_records(cpath, CriticVerdict)
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
        if on == "analyses":
            from ragtriage.critic import AnalysisMining, mine_run_analyses

            mining: AnalysisMining = run_closing(
                runner,
                lambda: mine_run_analyses(
                    traces,
                    diagnoses,
                    verdicts,
                    embedder,
                    rationales=rationales or [],
                    n_clusters=clusters,
                    threshold=new_below,
                    runner=runner,
                    model=llm_model,
                ),
            )
            if batch is not None and batch.finish():
                return
            atomic_write_text(
                out, yaml.safe_dump(mining.to_dict(), allow_unicode=True, sort_keys=False)
            )
            console = Console()
            for line in mining.lines():
                console.print(line, highlight=False, markup=False, soft_wrap=True)
            n_new = sum(c.new for c in mining.clusters)
            console.print(
                f"{len(mining.clusters)} clusters over {mining.n_used} of {mining.n_analyses} "
                f"analyses, {n_new} new (nearest type below {new_below}); wrote {out}",
                highlight=False,
                soft_wrap=True,
            )
            return

        taxonomy: MinedTaxonomy = run_closing(
            runner,
            lambda: mine_runs(
                traces,
                diagnoses,
                embedder,
                n_clusters=clusters or 20,
                alpha=alpha,
                runner=runner,
                model=llm_model,
            ),
        )
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
