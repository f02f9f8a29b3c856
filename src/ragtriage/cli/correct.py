"""``ragtriage correct RUN`` — critic-guided correction with a closed loop (seed 004 §3.3).

Rebuilds the run's pipeline (from its manifest config, or ``--config``; the bundled demo
corpus for a demo run, else ``--data``), corrects every trace the reference-free critic
judges an error with planned programs run in the sandboxed executor, keeps a correction
only when the critic (and the LLM critic with ``--llm-critic``) ranks it higher — no gold
answer is read to decide — and writes a new run directory (manifest, traces, gold-answer
diagnoses) for ``ragtriage compare RUN OUT``. The gold answer only evaluates: how many
kept corrections are better, worse or no different by it.
"""

from __future__ import annotations

import json
from pathlib import Path

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
from ragtriage.errors import InputError

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    @app.command("correct")
    @batch_rounds
    def correct(
        run: Path = typer.Argument(..., help="Run directory (manifest.json + traces.jsonl)."),
        out: Path = typer.Option(..., "--out", help="Directory of the corrected run."),
        planner_name: str = typer.Option(
            "table",
            "--planner",
            help="table (offline, Table 11) | llm (the LLM writes the programs; the table "
            "plans an attempt the LLM gives no program for)",
        ),
        llm_critic: bool = typer.Option(
            False,
            "--llm-critic",
            help="Also judge candidates with the LLM critic (reference-free): kept only "
            "when neither critic ranks them lower and one ranks them higher.",
        ),
        iterations: int = typer.Option(2, "--iterations", min=1, max=10, help="Rounds per trace."),
        data: str | None = typer.Option(None, "--data", help="Dataset of the run (not demo)."),
        config: Path | None = typer.Option(
            None, "--config", help="Pipeline config (default: the run manifest's)."
        ),
        model: str | None = typer.Option(None, "--model", help="LLM model name (llm planner)."),
        base_url: str | None = typer.Option(None, "--base-url", help="OpenAI-compatible endpoint."),
        cache: Path | None = typer.Option(None, "--cache", help="LLM cache file."),
        max_steps: int = typer.Option(2000, "--max-steps", min=1, help="Executor step budget."),
        timeout_s: float = typer.Option(60.0, "--timeout", help="Executor wall time per program."),
        llm_batch_out: Path | None = BATCH_OUT,
        llm_batch_in: list[Path] | None = BATCH_IN,
        llm_batch_submit: bool = BATCH_SUBMIT,
        llm_batch_retry_failed: bool = BATCH_RETRY_FAILED,
    ) -> None:
        """Correct failing answers; keep only judge-proven improvements; write a new run."""
        from ragtriage.cli.diagnose import _config, _runner, read_traces
        from ragtriage.config import PipelineConfig, load_config
        from ragtriage.critic import (
            LLMCritic,
            LLMPlanner,
            OfflinePlanner,
            correct_traces,
            corrected_run,
            correction_summary,
        )
        from ragtriage.data import load_dataset, load_demo
        from ragtriage.jsonl import atomic_write_text, write_jsonl
        from ragtriage.llm import run_sync
        from ragtriage.pipeline import Pipeline, needs_llm
        from ragtriage.store import read_diagnoses

        if planner_name not in ("table", "llm"):
            raise InputError("expected table or llm", field="--planner")
        manifest_path = run / "manifest.json"
        if not manifest_path.is_file():
            raise InputError("no manifest.json in this run directory", path=str(run))
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        if config is not None:
            cfg = load_config(config)
        else:
            cfg = PipelineConfig.model_validate(manifest.get("config") or {})
        dataset_name = (manifest.get("dataset") or {}).get("name")
        if data is None and dataset_name != "demo":
            raise InputError("pass --data: the run is not a demo run", field="--data")
        dataset = load_demo() if data is None else load_dataset(data, "auto")
        traces = read_traces(run / "traces.jsonl")
        dpath = run / "diagnoses.jsonl"
        diagnoses = read_diagnoses(dpath) if dpath.is_file() else []
        runner = None
        planner: OfflinePlanner | LLMPlanner = OfflinePlanner()
        llm_cfg = _config(None, base_url, model, None)
        batch = open_batch(
            llm_cfg.llm,
            out=llm_batch_out,
            inputs=llm_batch_in,
            submit=llm_batch_submit,
            retry_failed=llm_batch_retry_failed,
            cache=cache,
            uses_llm=planner_name == "llm" or llm_critic,
        )
        judge_llm: LLMCritic | None = None
        if planner_name == "llm" or llm_critic:
            runner = (
                batch.runner()
                if batch is not None
                else _runner(llm_cfg, dry_run=False, no_cache=False, cache=cache)
            )
            llm_model = llm_cfg.llm.with_env().model or ""
            if planner_name == "llm":
                planner = LLMPlanner(runner, model=llm_model)
            if llm_critic:
                judge_llm = LLMCritic(runner, model=llm_model)
        if batch is not None and needs_llm(cfg):
            # the pipeline's LLM stages export their requests to the same batch
            from ragtriage.llm._batch import BatchOnlyClient
            from ragtriage.pipeline import metered_client

            stub = BatchOnlyClient(cfg.llm.with_env().model or "")
            pipeline = Pipeline.from_config(cfg, dataset, llm_client=stub, use_llm_cache=False)
            pipeline = pipeline.with_runner(batch.runner(client=metered_client))
        else:
            pipeline = Pipeline.from_config(cfg, dataset)

        async def go() -> list:  # type: ignore[type-arg]
            try:
                return await correct_traces(
                    traces,
                    diagnoses,
                    pipeline,
                    planner=planner,
                    iterations=iterations,
                    max_steps=max_steps,
                    timeout_s=timeout_s,
                    config=cfg.diagnosis,
                    llm_critic=judge_llm,
                )
            finally:
                await pipeline.aclose()
                if runner is not None:
                    await runner.aclose()

        try:
            outcomes = run_sync(go())
        finally:
            if runner is not None:
                runner.close()
        if batch is not None and batch.finish():
            return
        new_manifest, new_traces, new_diags = corrected_run(
            outcomes, manifest, planner=planner_name
        )
        out.mkdir(parents=True, exist_ok=True)
        write_jsonl(out / "traces.jsonl", new_traces)
        write_jsonl(out / "diagnoses.jsonl", new_diags)
        atomic_write_text(out / "manifest.json", json.dumps(new_manifest, indent=1) + "\n")
        console = Console()
        console.print(correction_summary(outcomes).line(), highlight=False)
        console.print(f"wrote {out}", highlight=False)
        console.print(f"compare: ragtriage compare {run} {out}", highlight=False)
