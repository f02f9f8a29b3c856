"""``ragtriage calibrate`` — measure the diagnoser's accuracy on injected faults.

Healthy bases from the real pipeline, one faulty trace per injector and base (true stage
and type known), diagnosed by each judge x strategy; prints the stage and type confusion
matrices and per-type F1, writes ``calibration.json``, ``injected_traces.jsonl``,
``diagnoses.jsonl`` and ``base_traces.jsonl`` to ``--out``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, cast

import typer
from rich.console import Console
from rich.table import Table

from ragtriage.errors import ConfigError, InputError

if TYPE_CHECKING:
    from ragtriage.calibrate._run import CalibrationResult
    from ragtriage.calibrate.calibration import ConfusionMatrix, SettingReport
    from ragtriage.config import PipelineConfig
    from ragtriage.data import Dataset

__all__ = ["calibration_config", "register"]

_JUDGES = ("rules", "llm", "both")
_STRATEGIES = ("ragec", "single-step", "stage-sequential", "all")


def calibration_config(
    config: Path | None, *, embedder: str | None, generator: str
) -> PipelineConfig:
    """The pipeline to calibrate with: ``--config`` or the demo config, with the
    generator set to ``extractive`` unless ``--generator config`` keeps the file's."""
    from ragtriage.cli.run import demo_config_path
    from ragtriage.config import load_config

    cfg = load_config(config if config is not None else demo_config_path())
    updates: dict[str, object] = {}
    if generator != "config":
        if generator not in ("extractive", "openai", "llama_cpp"):
            raise InputError(
                f"unknown generator {generator!r}; use extractive, openai, llama_cpp or config",
                field="--generator",
            )
        updates["generation"] = cfg.generation.model_copy(update={"backend": generator})
    if embedder:
        updates["embedding"] = cfg.embedding.model_copy(update={"model": embedder})
    return cfg.model_copy(update=updates) if updates else cfg


def _dataset(data: str, fmt: str) -> Dataset:
    from ragtriage.data import load_dataset, load_demo

    return load_demo() if data == "demo" else load_dataset(data, fmt)


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f}%"


def _num(x: float | None) -> str:
    return "—" if x is None else f"{x:.2f}"


def _matrix_table(title: str, m: ConfusionMatrix) -> Table:
    """Rows with cases and columns with predictions only (16 x 18 is mostly empty)."""
    used = [j for j, _ in enumerate(m.columns) if any(row[j] for row in m.counts)]
    table = Table(title=title)
    table.add_column("true\\pred", style="bold")
    for j in used:
        name = {"undetermined": "undet.", "not_flagged": "not flagged"}.get(
            m.columns[j], m.columns[j]
        )
        table.add_column(name, justify="right")
    for label, row in zip(m.labels, m.counts, strict=True):
        if not any(row):
            continue
        cells = []
        for j in used:
            n = row[j]
            text = str(n) if n else "·"
            cells.append(f"[green]{text}[/]" if m.columns[j] == label and n else text)
        table.add_row(label, *cells)
    return table


def _summary_table(reports: list[SettingReport]) -> Table:
    table = Table(title="calibration on injected faults")
    for col in (
        "judge/strategy",
        "cases",
        "stage acc",
        "type acc",
        "top-2 type",
        "macro F1",
        "undetermined",
        "not flagged",
        "ECE",
        "ECE mode freq.",
    ):
        table.add_column(col, justify="left" if col == "judge/strategy" else "right")
    for r in reports:
        table.add_row(
            r.key,
            str(r.cases),
            _pct(r.stage_accuracy),
            _pct(r.type_accuracy),
            _pct(r.top2_type_accuracy),
            _num(r.type_macro_f1),
            str(r.outcomes.get("undetermined", 0) + r.type_undetermined),
            str(r.outcomes.get("not_flagged", 0)),
            _num(r.reliability.ece),
            _num(r.mode_reliability.ece),
        )
    return table


def _f1_table(reports: list[SettingReport]) -> Table:
    table = Table(title="per-type F1 (precision / recall)")
    table.add_column("type")
    table.add_column("cases", justify="right")
    for r in reports:
        table.add_column(r.key, justify="right")
    for i, score in enumerate(reports[0].type_scores):
        if score.support == 0 and not any(r.type_scores[i].predicted for r in reports):
            continue
        cells = []
        for r in reports:
            s = r.type_scores[i]
            cells.append(f"{_num(s.f1)} ({_num(s.precision)}/{_num(s.recall)})")
        table.add_row(score.label, str(score.support), *cells)
    return table


def _injector_table(result: CalibrationResult) -> Table:
    table = Table(title="injectors")
    for col in ("injector", "applied", "not applicable", "still correct", "main reason"):
        table.add_column(col, justify="left" if col in ("injector", "main reason") else "right")
    for name, c in result.counts.items():
        reason = c.reasons.most_common(1)[0][0] if c.reasons else ""
        table.add_row(
            name, str(c.applied), str(c.not_applicable), str(c.dropped_still_correct), reason
        )
    return table


def print_result(console: Console, result: CalibrationResult) -> None:
    from ragtriage.report.terminal import render_reliability

    b = result.base_summary
    console.print(
        f"bases: {b.answerable_bases} answerable + {b.unanswerable_bases} unanswerable of "
        f"{b.examples} examples (answer mode: {b.answer_mode}); injected cases: "
        f"{len(result.cases)}",
        highlight=False,
    )
    console.print(_injector_table(result))
    if not result.reports:
        return
    for r in result.reports:
        console.print(_matrix_table(f"stage confusion — {r.key}", r.stage_confusion))
        console.print(_matrix_table(f"type confusion — {r.key}", r.type_confusion))
    console.print(_f1_table(result.reports))
    for r in result.reports:
        render_reliability(r.reliability, f"reliability: confidence vs right — {r.key}", console)
        render_reliability(
            r.mode_reliability, f"reliability: mode frequency vs type right — {r.key}", console
        )
    console.print(_summary_table(result.reports))


def register(app: typer.Typer) -> None:
    @app.command("calibrate")
    def calibrate(
        data: str = typer.Option(
            "demo", "--data", "-d", help="'demo' (bundled corpus) or a dataset directory/file."
        ),
        fmt: str = typer.Option(
            "auto", "--format", help="auto | generic | folder | dragonball | clapnq"
        ),
        config: Path | None = typer.Option(
            None, "--config", "-c", help="Pipeline YAML/TOML (default: the demo pipeline)."
        ),
        judge: str = typer.Option("rules", "--judge", help="rules | llm | both"),
        strategy: str = typer.Option(
            "all", "--strategy", help="ragec | single-step | stage-sequential | all"
        ),
        seed: int = typer.Option(0, "--seed", help="Seed of the injectors' random choices."),
        limit: int | None = typer.Option(None, "--limit", min=1, help="First N examples."),
        out: Path = typer.Option(Path("calibration"), "--out", "-o", help="Output directory."),
        embedder: str | None = typer.Option(
            None, "--embedder", help="Override embedding.model (e.g. 'hash' for speed)."
        ),
        generator: str = typer.Option(
            "extractive",
            "--generator",
            help="Generator for re-generated answers: extractive (default, offline), "
            "openai, llama_cpp, or 'config' to keep the config's.",
        ),
        answer_mode: str = typer.Option(
            "oracle",
            "--answer-mode",
            help="oracle: healthy bases answer with the ground truth (calibrates the "
            "diagnoser, not the generator); generated: keep bases whose real answer is "
            "judged correct.",
        ),
        llm_rewrite: bool = typer.Option(
            False, "--llm-rewrite", help="Also ask the LLM to make each generation mistake."
        ),
        concurrency: int = typer.Option(8, "--concurrency", min=1, help="LLM judge requests."),
        progress: bool = typer.Option(True, "--progress/--no-progress"),
        executor: str = typer.Option(
            "local",
            "--executor",
            help="local | ray | ray:ADDRESS: where the diagnoses run (extra .[ray]); the LLM "
            "judge's through one cache actor over the driver's cache file.",
        ),
    ) -> None:
        """Inject known faults into healthy traces and measure how often the diagnoser
        finds the right stage and error type."""
        import asyncio

        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TaskID,
            TextColumn,
            TimeElapsedColumn,
        )

        from ragtriage.calibrate._parts import PipelineParts
        from ragtriage.calibrate._run import run_calibration, write_calibration
        from ragtriage.calibrate.inject import (
            ANSWER_MODES,
            INJECTORS,
            LLM_INJECTORS,
            AnswerMode,
            LLMRewriter,
        )
        from ragtriage.diagnosis.engine import Judge
        from ragtriage.diagnosis.strategies import STRATEGIES, Strategy
        from ragtriage.llm import LLMRunner

        if judge not in _JUDGES:
            raise InputError(f"unknown judge {judge!r}; use rules, llm or both", field="--judge")
        if strategy not in _STRATEGIES:
            raise InputError(
                f"unknown strategy {strategy!r}; use {', '.join(_STRATEGIES)}", field="--strategy"
            )
        if answer_mode not in ANSWER_MODES:
            raise InputError(
                f"unknown answer mode {answer_mode!r}; use oracle or generated",
                field="--answer-mode",
            )
        mode: AnswerMode = answer_mode
        from ragtriage.executors import parse_executor

        ex = parse_executor(executor)
        cfg = calibration_config(config, embedder=embedder, generator=generator)
        judges = cast(list[Judge], ["rules", "llm"] if judge == "both" else [judge])
        strategies = cast(list[Strategy], list(STRATEGIES) if strategy == "all" else [strategy])
        need_llm = "llm" in judges or llm_rewrite
        if need_llm and not cfg.llm.with_env().configured:
            raise ConfigError(
                "--judge llm and --llm-rewrite need an OpenAI-compatible endpoint: set "
                "RAGTRIAGE_LLM_BASE_URL and RAGTRIAGE_LLM_MODEL (or llm.base_url / llm.model "
                "in --config)",
                field="llm.base_url",
            )
        dataset = _dataset(data, fmt)
        examples = list(dataset.examples)[:limit] if limit else list(dataset.examples)
        # a pipe gets 80 columns by default: too narrow for the confusion matrices
        console = Console() if sys.stdout.isatty() else Console(width=160)

        async def go() -> CalibrationResult:
            parts = PipelineParts.build(cfg, dataset)
            runner = LLMRunner.from_config(cfg.llm) if need_llm else None
            try:
                rewriter = (
                    LLMRewriter(runner, model=cfg.llm.with_env().model or "", seed=seed)
                    if llm_rewrite and runner is not None
                    else None
                )
                injectors = (*INJECTORS, *LLM_INJECTORS) if rewriter is not None else INJECTORS
                columns = (
                    TextColumn("{task.description}"),
                    BarColumn(),
                    MofNCompleteColumn(),
                    TimeElapsedColumn(),
                )
                with Progress(
                    *columns, console=Console(stderr=True), disable=not progress, transient=True
                ) as bar:
                    tasks: dict[str, TaskID] = {}

                    def on_step(phase: str, done: int, total: int) -> None:
                        if phase not in tasks:
                            tasks[phase] = bar.add_task(phase, total=total)
                        bar.update(tasks[phase], completed=done)

                    return await run_calibration(
                        parts,
                        examples,
                        judges=judges,
                        strategies=strategies,
                        seed=seed,
                        answer_mode=mode,
                        judge_llm=runner,
                        rewriter=rewriter,
                        injectors=injectors,
                        concurrency=concurrency,
                        on_step=on_step,
                        executor=ex,
                        llm_config=cfg.llm if need_llm else None,
                    )
            finally:
                if runner is not None:
                    await runner.aclose()
                await parts.aclose()

        result = asyncio.run(go())
        paths = write_calibration(result, out)
        print_result(console, result)
        for name, path in paths.items():
            console.print(f"{name}: {path}", highlight=False)
