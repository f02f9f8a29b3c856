"""``ragtriage robustness RUN`` — accuracy/faithfulness deltas of the run's pipeline under
perturbed questions and contexts (paraphrase, typos, distractor chunks at positions,
chunk order permutation), with paired-bootstrap intervals.

Question perturbations re-run retrieval and reranking: the pipeline is rebuilt from the
run's config over its corpus (``--data``; the bundled demo corpus for a demo run), which
must hash like the run's. Without a corpus they are answered from the trace's context,
and the report says so."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console
from rich.table import Table

from ragtriage.errors import InputError

if TYPE_CHECKING:
    from ragtriage.config import PipelineConfig
    from ragtriage.data import Dataset
    from ragtriage.store import RunData

__all__ = ["register"]


def _print(report: dict[str, Any], console: Console) -> None:
    table = Table(
        title=f"robustness ({report['traces']} traces; retrieval {report['retrieval']})",
        title_justify="left",
    )
    cols = ("perturbation", "retrieval", "Δ accuracy", "Δ F1", "Δ exact match", "Δ faithfulness")
    for col in (*cols, "n", "n/a"):
        table.add_column(col, justify="left" if col in cols[:2] else "right")
    for name, cell in report["perturbations"].items():

        def fmt(metric: str, c: dict[str, Any] = cell) -> str:
            d = c[metric]["delta"]
            if isinstance(d, str):
                return d
            lo, hi = c[metric]["ci95"]
            return f"{d:+.3f} [{lo:+.3f}, {hi:+.3f}]"

        changed = cell.get("context_changed")
        table.add_row(
            name,
            cell["retrieval"] + (f" ({changed} changed)" if changed is not None else ""),
            fmt("accuracy"),
            fmt("f1"),
            fmt("exact_match"),
            fmt("faithfulness"),
            str(max(cell[m]["n"] for m in ("accuracy", "f1", "faithfulness"))),
            str(cell["not_applicable"]),
        )
    console.print(table)
    console.print("Δ = perturbed − baseline, [95% paired-bootstrap interval]", highlight=False)


def _corpus(run: RunData, data: str | None, fmt: str) -> Dataset | None:
    """The run's corpus: ``--data``, or the bundled demo corpus for a demo run."""
    from ragtriage.data import load_dataset, load_demo

    if data is not None:
        return load_dataset(data, fmt)
    ds = run.manifest.get("dataset") or {}
    return load_demo() if isinstance(ds, dict) and ds.get("name") == "demo" else None


def _check_corpus(run: RunData, run_dir: Path, corpus_hash: str) -> None:
    ds = run.manifest.get("dataset") or {}
    want = ds.get("corpus_hash") if isinstance(ds, dict) else None
    if isinstance(want, str) and want and want != corpus_hash:
        raise InputError(
            f"the corpus chunks to {corpus_hash[:12]}…, not the run's {want[:12]}…: pass the "
            "run's --data (and config)",
            path=str(run_dir / "manifest.json"),
            field="dataset.corpus_hash",
        )


async def _with_pipeline(
    cfg: PipelineConfig,
    corpus: Dataset,
    run: RunData,
    run_dir: Path,
    traces: list[Any],
    names: list[str],
    seed: int,
    resamples: int,
) -> tuple[dict[str, Any], str]:
    """Robustness through the rebuilt pipeline (retrieval re-run for question
    perturbations)."""
    from ragtriage.metrics import robustness
    from ragtriage.pipeline import Pipeline

    pipeline = Pipeline.from_config(cfg, corpus)
    try:
        _check_corpus(run, run_dir, pipeline.build_info.corpus_hash)
        gen = _PipelineGenerator(pipeline)

        async def retrieve(query: str) -> list[Any]:
            return await pipeline.retrieve_chunks(query, cfg.rerank.top_k)

        report = await robustness(
            traces, gen, perturbations=names, seed=seed, retrieve=retrieve, resamples=resamples
        )
        return report, pipeline.model_ids().get("generation", cfg.generation.backend)
    finally:
        await pipeline.aclose()


class _PipelineGenerator:
    """The pipeline's own generator, as the :class:`~ragtriage.generation.Generator`
    that :func:`~ragtriage.metrics.robustness` calls."""

    def __init__(self, pipeline: Any) -> None:
        self._p = pipeline
        self.name = pipeline.config.generation.backend

    async def generate(self, query: str, context: Any, *, language: str) -> Any:
        return await self._p.generate_answer(query, context, language=language)


def register(app: typer.Typer) -> None:
    @app.command("robustness")
    def robustness_cmd(
        run_dir: Path = typer.Argument(..., help="Run directory (manifest.json, traces.jsonl)."),
        config: Path | None = typer.Option(
            None, "--config", help="Pipeline YAML/TOML (default: the run's manifest config)."
        ),
        perturb: str = typer.Option(
            "all", "--perturb", help="Comma-separated perturbations, or all."
        ),
        seed: int = typer.Option(0, "--seed", help="Seed of typos, distractors, permutations."),
        limit: int = typer.Option(0, "--limit", min=0, help="First N traces only (0 = all)."),
        json_out: Path | None = typer.Option(None, "--json", help="Also write the report as JSON."),
        data: str | None = typer.Option(
            None,
            "--data",
            help="The run's corpus (dataset dir/file) to re-run retrieval for question "
            "perturbations (default: the bundled corpus for a demo run).",
        ),
        fmt: str = typer.Option("auto", "--format", help="Format of --data."),
        retrieval: bool = typer.Option(
            True,
            "--retrieval/--no-retrieval",
            help="Re-run retrieval and reranking for question perturbations.",
        ),
        resamples: int = typer.Option(1000, "--resamples", min=10, help="Bootstrap resamples."),
    ) -> None:
        """Re-run the pipeline on perturbed inputs and report the metric deltas."""
        from ragtriage.config import PipelineConfig, load_config
        from ragtriage.generation import make_generator
        from ragtriage.llm import LLMRunner, run_sync
        from ragtriage.metrics import PERTURBATIONS, robustness
        from ragtriage.store import load_run_dir

        run = load_run_dir(run_dir, require_diagnoses=False)
        if config is not None:
            cfg = load_config(config)
        else:
            try:
                cfg = PipelineConfig.model_validate(run.config)
            except ValueError as exc:
                raise InputError(
                    f"the run's config is not a pipeline config: {exc}",
                    path=str(run_dir / "manifest.json"),
                    field="config",
                ) from exc
        names = (
            list(PERTURBATIONS)
            if perturb == "all"
            else [p.strip() for p in perturb.split(",") if p.strip()]
        )
        traces = list(run.traces[:limit] if limit else run.traces)
        corpus = _corpus(run, data, fmt) if retrieval else None
        console = Console(width=160)
        if corpus is not None:
            report, gen_name = run_sync(
                _with_pipeline(cfg, corpus, run, run_dir, traces, names, seed, resamples)
            )
            report["generator"] = gen_name
            _finish(report, console, json_out)
            return
        if retrieval:
            console.print(
                "no corpus for this run (pass --data): question perturbations are answered "
                "from the trace's context, retrieval is not re-run",
                highlight=False,
            )
        llm = cfg.llm.with_env()
        runner = (
            LLMRunner.from_config(llm)
            if cfg.generation.backend == "openai" and llm.configured
            else None
        )
        try:
            gen = make_generator(cfg.generation, llm=runner, llm_model=llm.model or "")
            report = run_sync(
                robustness(traces, gen, perturbations=names, seed=seed, resamples=resamples)
            )
        finally:
            if runner is not None:
                runner.close()
        report["generator"] = gen.name
        _finish(report, console, json_out)


def _finish(report: dict[str, Any], console: Console, json_out: Path | None) -> None:
    _print(report, console)
    if json_out is not None:
        from ragtriage.jsonl import atomic_write_text

        atomic_write_text(
            json_out, json.dumps(report, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
        )
        typer.echo(f"wrote {json_out}")
