"""``ragtriage testset DOCS|--demo --out DIR`` — a balanced synthetic test set (seed 001
§6), and ``ragtriage testset export-training TESTSET --out FILE`` — fine-tuning data for
a small seq2seq generator (seed 001 §6.1, App. H)."""

from __future__ import annotations

from pathlib import Path

import typer

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


def _thresholds(items: list[str]) -> dict[str, float]:
    from ragtriage.know import CRITIQUES, DEFAULT_THRESHOLDS, RULES_ONLY

    names = (*CRITIQUES, *RULES_ONLY)
    out = dict(DEFAULT_THRESHOLDS)
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or name not in names:
            raise InputError(
                f"expected NAME=RATING with NAME one of {', '.join(names)}, got {item!r}",
                field="--threshold",
            )
        try:
            out[name] = float(value)
        except ValueError as exc:
            raise InputError(f"not a number: {value!r}", field="--threshold") from exc
    return out


def register(app: typer.Typer) -> None:
    @app.command("testset")
    @batch_rounds
    def testset(
        docs: str | None = typer.Argument(
            None,
            help="Documents (documents.jsonl, a folder of .txt/.md, any dataset), or "
            "'export-training' followed by a generated test set directory.",
        ),
        source: Path | None = typer.Argument(
            None, help="With export-training: the test set directory (or examples.jsonl)."
        ),
        demo: bool = typer.Option(False, "--demo", help="Use the bundled demo corpus."),
        out: Path = typer.Option(..., "--out", help="Output directory (or file for export)."),
        mix: str = typer.Option(
            "fact_single:0.4,summary:0.25,reasoning:0.25,unanswerable:0.1",
            "--mix",
            help="Label shares to generate.",
        ),
        limit: int = typer.Option(40, "--limit", min=1, help="Questions to keep."),
        generator: str = typer.Option(
            "auto",
            "--generator",
            help="auto | offline | llm (App. G statements) | llm-simple (App. E) | "
            "seq2seq:PATH (a fine-tuned model directory, needs the 'train' extra).",
        ),
        critic: str = typer.Option(
            "auto", "--critic", help="auto | rules | llm (the App. I critique prompts)."
        ),
        threshold: list[str] = typer.Option(
            [], "--threshold", help="Critique minimum, e.g. --threshold stand_alone=4."
        ),
        dedup: float = typer.Option(
            90.0, "--dedup", min=0, max=100, help="rapidfuzz token_set_ratio for near-duplicates."
        ),
        seed: int = typer.Option(0, "--seed", help="Random seed (chunk order, statements)."),
        keep_mix: bool = typer.Option(
            True,
            "--keep-mix/--fill",
            help="When a label cannot fill its quota, trim the others to keep the mix "
            "(default), or keep every question that passed (--fill).",
        ),
        config: Path | None = typer.Option(None, "--config", help="YAML/TOML (llm section)."),
        dry_run: bool = typer.Option(
            False, "--dry-run", help="Estimate LLM calls and tokens; call and write nothing."
        ),
        no_cache: bool = typer.Option(False, "--no-cache", help="Do not use the LLM cache."),
        cache: Path | None = typer.Option(None, "--cache", help="LLM cache file."),
        progress: bool = typer.Option(True, "--progress/--no-progress", help="Progress bar."),
        llm_batch_out: Path | None = BATCH_OUT,
        llm_batch_in: list[Path] | None = BATCH_IN,
        llm_batch_submit: bool = BATCH_SUBMIT,
        llm_batch_retry_failed: bool = BATCH_RETRY_FAILED,
    ) -> None:
        """Generate a balanced Q&A test set from documents (offline templates when no LLM
        endpoint is configured), critique and de-duplicate it, re-label it and report
        intended vs measured label composition."""
        if docs == "export-training":
            if source is None:
                raise InputError("export-training needs the test set directory", field="SOURCE")
            from ragtriage.know import export_training

            n = export_training(source, out)
            typer.echo(f"wrote {n} training pairs to {out}")
            return
        from ragtriage.config import load_config
        from ragtriage.know import run_testset_command

        batch = open_batch(
            load_config(config).llm,
            out=llm_batch_out,
            inputs=llm_batch_in,
            submit=llm_batch_submit,
            retry_failed=llm_batch_retry_failed,
            cache=cache,
            no_cache=no_cache,
            dry_run=dry_run,
            uses_llm=generator != "offline" or critic == "llm",
        )
        run_testset_command(
            docs=docs,
            demo=demo,
            out=out,
            mix=mix,
            limit=limit,
            generator=generator,
            critic=critic,
            thresholds=_thresholds(threshold),
            dedup=dedup,
            seed=seed,
            keep_mix=keep_mix,
            config=config,
            dry_run=dry_run,
            no_cache=no_cache,
            cache=cache,
            progress=progress,
            batch=batch,
        )
