"""``ragtriage tune-retrieval DATA`` — the hybrid text-weight scan per question label
(seed 001 §5), and the best config for the user's expected label mix."""

from __future__ import annotations

from pathlib import Path

import typer

from ragtriage.errors import InputError

__all__ = ["register"]


def _weights(text: str) -> tuple[float, ...]:
    try:
        values = tuple(float(v) for v in text.split(",") if v.strip())
    except ValueError as exc:
        raise InputError(f"not a list of numbers: {text!r}", field="--weights") from exc
    if not values or any(not 0.0 <= v <= 1.0 for v in values):
        raise InputError("text weights must lie in [0, 1]", field="--weights")
    return tuple(sorted(set(values)))


def register(app: typer.Typer) -> None:
    @app.command("tune-retrieval")
    def tune_retrieval(
        data: str = typer.Argument(..., help="Dataset (file or directory), or 'demo'."),
        config: Path | None = typer.Option(
            None, "--config", help="Pipeline YAML/TOML (chunking, embedding, rerank)."
        ),
        labels: Path | None = typer.Option(
            None,
            "--labels",
            help="`ragtriage label` output (labels.jsonl); default: the dataset's labels, "
            "else the offline rules labeller.",
        ),
        mix: str | None = typer.Option(
            None, "--mix", help="Expected label mix, e.g. fact_single:0.6,summary:0.3,reasoning:0.1"
        ),
        weights: str = typer.Option("0,0.05,0.1,0.2,0.5,1", "--weights", help="Text weights."),
        rerank: bool = typer.Option(
            True, "--rerank/--no-rerank", help="Also scan with the reranker."
        ),
        k: int = typer.Option(5, "-k", min=1, help="Cut-off of Recall@k and nDCG@k."),
        fmt: str = typer.Option("auto", "--format", help="Dataset format (see `run`)."),
        out: Path = typer.Option(
            Path("runs/tune-retrieval"), "--out", help="Writes scan.csv and best.yaml here."
        ),
    ) -> None:
        """Recall@k and nDCG@k per label and inclusive over a dense↔lexical text-weight
        scan, with and without the reranker; writes the best config as YAML for `run`."""
        import yaml
        from rich.table import Table

        from ragtriage.config import load_config, strip_secrets
        from ragtriage.embedding import make_embedder
        from ragtriage.jsonl import atomic_write_text
        from ragtriage.know import (
            INCLUSIVE,
            RulesLabeller,
            best_config,
            items_of,
            load_data,
            parse_mix,
            read_label_column,
            scan_csv,
            scan_retrieval,
            scan_rows,
        )
        from ragtriage.llm import run_sync
        from ragtriage.report.terminal import make_console

        console = make_console()
        scan_weights = _weights(weights)
        expected = parse_mix(mix) if mix else None
        cfg = load_config(config)
        if data == "demo" and config is None:
            from ragtriage.cli.run import demo_config_path

            cfg = load_config(demo_config_path())
        dataset = load_data(data, fmt)
        if labels is not None:
            by_who = read_label_column(labels / "labels.jsonl" if labels.is_dir() else labels)
            label_map = next(iter(by_who.values()))
            source = str(labels)
        elif dataset.examples and all(e.label for e in dataset.examples):
            label_map = {e.example_id: e.label or "" for e in dataset.examples}
            source = "the dataset's label field"
        else:
            decisions = run_sync(RulesLabeller().label_many(items_of(dataset)))
            label_map = {d.example_id: d.label for d in decisions}
            source = "the offline rules labeller (run `ragtriage label` for LLM labels)"
        console.print(f"labels from {source}", highlight=False)
        embedder = make_embedder(cfg.embedding)
        result = scan_retrieval(
            dataset, cfg, label_map, embedder=embedder, weights=scan_weights, k=k, rerank=rerank
        )
        if not result.counts.get(INCLUSIVE):
            raise InputError(
                "no example has ground-truth chunks (references or gt_chunk_ids): nothing to "
                "measure",
                path=data,
            )
        if result.skipped:
            console.print(
                f"{result.skipped} example(s) without ground-truth chunks (unanswerable or "
                "no references) are left out: recall is undefined for them",
                highlight=False,
            )
        for mode in (False, True) if rerank else (False,):
            name = f"reranker {cfg.rerank.method}" if mode else "no reranker"
            table = Table(title=f"Recall@{k} per label, text-weight scan ({name})")
            for col in (
                "Label",
                "n",
                "Dense",
                "Lexical",
                "Best recall",
                "Best strategy",
                f"nDCG@{k}",
            ):
                table.add_column(col, justify="left" if col == "Label" else "right")
            for row in scan_rows(result, mode):
                table.add_row(*row.values())
            console.print(table)
        console.print(
            "Best strategy = the text weight with the highest recall (0 = dense, 1 = lexical); "
            "(−x) = what the inclusive optimum's weight loses on that label.",
            highlight=False,
        )
        if expected is not None:
            pick = result.best_for_mix(expected)
            goal = ", ".join(f"{lab} {s:.0%}" for lab, s in expected.items())
        else:
            best = result.best(INCLUSIVE, True) if rerank else None
            plain = result.best(INCLUSIVE, False)
            assert plain is not None
            choice = best if best is not None and best.recall > plain.recall else plain
            pick = (choice.weight, choice.rerank, choice.recall)
            goal = "inclusive (no --mix given)"
        if pick is None:
            raise InputError("no label of --mix has examples with ground truth", field="--mix")
        weight, use_rerank, recall = pick
        console.print(
            f"best for {goal}: text weight {weight:g}, "
            f"{'with' if use_rerank else 'without'} the reranker, expected Recall@{k} {recall:.3f}",
            highlight=False,
        )
        runner = result.close_runner_up(weight, use_rerank) if expected is None else None
        if runner is not None:
            n = result.counts[INCLUSIVE]
            console.print(
                f"note: text weight {runner.weight:g} "
                f"{'with' if runner.rerank else 'without'} the reranker comes within one "
                f"question of it (Recall@{k} {runner.recall:.3f}, n={n}): on a set this small "
                "the pick is not reliable -- label or generate more questions",
                highlight=False,
            )
        out.mkdir(parents=True, exist_ok=True)
        atomic_write_text(out / "scan.csv", scan_csv(result))
        chosen = best_config(cfg, weight, use_rerank)
        dumped = chosen.model_dump(mode="json")
        strip_secrets(dumped)
        header = (
            f"# written by `ragtriage tune-retrieval` (seed 001 §5): best text weight for {goal}\n"
        )
        atomic_write_text(out / "best.yaml", header + yaml.safe_dump(dumped, sort_keys=False))
        typer.echo(f"wrote {out / 'scan.csv'}")
        typer.echo(f"wrote {out / 'best.yaml'}  (ragtriage run --config {out / 'best.yaml'})")
