"""``ragtriage critic-bench FILE`` — score a critic on RAG-Error-bench samples (seed 004 §3.4)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from ragtriage.cli._batch import (
    BATCH_IN,
    BATCH_OUT,
    BATCH_RETRY_FAILED,
    BATCH_SUBMIT,
    batch_rounds,
    open_batch,
    run_closing,
)
from ragtriage.errors import InputError

__all__ = ["register"]


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}"


def register(app: typer.Typer) -> None:
    @app.command("critic-bench")
    @batch_rounds
    def critic_bench(
        file: Path = typer.Argument(..., help="Bench JSONL (see docs/critic.md)."),
        fmt: str = typer.Option(
            "bench", "--format", help="bench | rag-critic (the authors' critic_*.jsonl samples)"
        ),
        critic_name: str = typer.Option(
            "given",
            "--critic",
            help="given (score each line's 'critic' field) | rules | llm (run our critic)",
        ),
        error_tags: Path | None = typer.Option(
            None,
            "--error-tags",
            help="rag-critic format: the authors' error_type_*.jsonl; their open-set tags "
            "that are tier-3 tags of the error system give the Error samples tier labels.",
        ),
        reference: bool = typer.Option(
            False, "--reference/--reference-free", help="Give our critic the golden answers."
        ),
        json_out: Path | None = typer.Option(None, "--json", help="Also write the scores here."),
        model: str | None = typer.Option(None, "--model", help="LLM model name (llm critic)."),
        base_url: str | None = typer.Option(None, "--base-url", help="OpenAI-compatible endpoint."),
        config: Path | None = typer.Option(
            None, "--config", help="Pipeline YAML/TOML (llm section)."
        ),
        cache: Path | None = typer.Option(None, "--cache", help="LLM cache file."),
        llm_batch_out: Path | None = BATCH_OUT,
        llm_batch_in: list[Path] | None = BATCH_IN,
        llm_batch_submit: bool = BATCH_SUBMIT,
        llm_batch_retry_failed: bool = BATCH_RETRY_FAILED,
    ) -> None:
        """Error-identification accuracy (correct / error / average) and tier-1/2 F1."""
        from ragtriage.critic import (
            BenchPrediction,
            CriticVerdict,
            LLMCritic,
            ReferenceFreeCritic,
            RulesCritic,
            read_bench,
            read_published_critic_samples,
            score_bench,
        )
        from ragtriage.jsonl import atomic_write_text
        from ragtriage.llm import run_sync

        if not file.is_file():
            raise InputError("no such file", path=str(file))
        if fmt not in ("bench", "rag-critic"):
            raise InputError("expected bench or rag-critic", field="--format")
        if error_tags is not None and (fmt != "rag-critic" or not error_tags.is_file()):
            raise InputError(
                "needs --format rag-critic and an existing error_type_*.jsonl file",
                path=str(error_tags),
                field="--error-tags",
            )
        samples = (
            read_bench(file)
            if fmt == "bench"
            else read_published_critic_samples(file, error_tags=error_tags)
        )
        if critic_name != "llm":
            from ragtriage.config import LLMConfig

            # the --llm-batch-* options name an LLM step: an error without one
            open_batch(
                LLMConfig(),
                out=llm_batch_out,
                inputs=llm_batch_in,
                submit=llm_batch_submit,
                retry_failed=llm_batch_retry_failed,
                uses_llm=False,
            )
        preds: list[BenchPrediction | CriticVerdict]
        if critic_name == "given":
            missing = [s.id for s in samples if s.critic is None]
            if missing:
                raise InputError(
                    f"{len(missing)} sample(s) have no 'critic' prediction (first {missing[0]!r});"
                    " pass --critic rules|llm to run one",
                    path=str(file),
                    field="critic",
                )
            preds = [s.critic for s in samples if s.critic is not None]
        elif critic_name in ("rules", "llm"):
            inputs = [s.critic_input(reference=reference) for s in samples]
            if critic_name == "llm":
                from ragtriage.cli.diagnose import _config, _runner

                cfg = _config(config, base_url, model, None)
                batch = open_batch(
                    cfg.llm,
                    out=llm_batch_out,
                    inputs=llm_batch_in,
                    submit=llm_batch_submit,
                    retry_failed=llm_batch_retry_failed,
                    cache=cache,
                    no_cache=False,
                    dry_run=False,
                    uses_llm=True,
                )
                runner = (
                    batch.runner()
                    if batch is not None
                    else _runner(cfg, dry_run=False, no_cache=False, cache=cache)
                )
                critic = LLMCritic(runner, model=cfg.llm.with_env().model or "")
                preds = list(run_closing(runner, lambda: critic.judge(inputs)))
                if batch is not None and batch.finish():
                    return
            else:
                offline = RulesCritic() if reference else ReferenceFreeCritic()
                preds = list(run_sync(offline.judge(inputs)))
        else:
            raise InputError("expected given, rules or llm", field="--critic")
        score = score_bench(samples, preds)
        console = Console()
        console.print(
            f"{score.n} samples ({score.n_correct} correct, {score.n_error} error); "
            f"{score.undetermined} undetermined predictions (counted wrong)",
            highlight=False,
        )
        console.print(
            f"error identification accuracy: correct {_pct(score.accuracy_correct)} %, "
            f"error {_pct(score.accuracy_error)} %, average {_pct(score.accuracy_average)} %",
            highlight=False,
        )
        for tier, rows, macro in (
            ("tier-1", score.tier1, score.tier1_macro_f1),
            ("tier-2", score.tier2, score.tier2_macro_f1),
        ):
            table = Table(
                title=f"{tier} F1 (macro {_pct(macro)}; {score.tagged_errors} tagged errors)"
            )
            for col in ("label", "support", "P", "R", "F1"):
                table.add_column(col)
            for r in rows:
                table.add_row(
                    r.label, str(r.support), _pct(r.precision), _pct(r.recall), _pct(r.f1)
                )
            if rows:
                console.print(table)
        if score.invalid_predicted_tags:
            console.print(
                f"{score.invalid_predicted_tags} predicted tag(s) not in the error system dropped",
                highlight=False,
            )
        if json_out is not None:
            atomic_write_text(json_out, score.model_dump_json(indent=1) + "\n")
            console.print(f"wrote {json_out}", highlight=False)
