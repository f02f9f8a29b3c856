"""``ragtriage testset``: pick the generator and critic, generate, write the test set,
re-label it and report intended vs measured composition."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path

from rich.console import Console

from ragtriage.data import Dataset
from ragtriage.errors import InputError
from ragtriage.know._compose import Composition, composition, write_label_outputs
from ragtriage.know._critique import LLMCritic, RulesCritic
from ragtriage.know._io import ledger_line, load_data, open_runner
from ragtriage.know._llm import LLMLabeller
from ragtriage.know._llm_gen import SimplePromptGenerator, StatementGenerator
from ragtriage.know._offline_gen import OfflineGenerator, corpus_entities
from ragtriage.know._rules import RulesLabeller
from ragtriage.know._taxonomy import LabelDecision, items_of, parse_mix
from ragtriage.know._testset import DraftGenerator, TestsetResult, corpus_chunks, generate_testset
from ragtriage.know._training import SOURCE_CHUNKS, Seq2SeqGenerator
from ragtriage.llm import BatchSession, LLMRunner

__all__ = ["located_references", "run_testset_command"]


def located_references(
    result: TestsetResult, chunks_by_id: Mapping[str, object]
) -> tuple[int, int]:
    """``(located, total)``: references found in their example's source chunks."""
    from ragtriage.groundtruth import gt_chunks_from_references
    from ragtriage.records import Chunk

    found = total = 0
    for e in result.examples:
        ids = e.metadata.get("source_chunk_ids")
        pool = (
            [c for i in ids if isinstance(c := chunks_by_id.get(str(i)), Chunk)]
            if isinstance(ids, list)
            else []
        )
        for ref in e.references:
            total += 1
            single = e.model_copy(update={"references": [ref]})
            hit, missing = gt_chunks_from_references(single, pool)
            found += bool(hit) and not missing
    return found, total


def run_testset_command(
    *,
    docs: str | None,
    demo: bool,
    out: Path,
    mix: str,
    limit: int,
    generator: str,
    critic: str,
    thresholds: Mapping[str, float],
    dedup: float,
    seed: int,
    config: Path | None,
    keep_mix: bool = True,
    dry_run: bool,
    no_cache: bool,
    cache: Path | None,
    progress: bool,
    console: Console | None = None,
    batch: BatchSession | None = None,
) -> TestsetResult | None:
    """Generate, critique, re-label and write the test set. ``batch`` (batch mode):
    the LLM requests not answered yet are exported and nothing is written (``None``
    is returned) until every one is answered."""
    from ragtriage.config import load_config
    from ragtriage.jsonl import atomic_write_text, write_jsonl
    from ragtriage.llm import run_sync
    from ragtriage.report.terminal import make_console

    console = console or make_console()
    if demo == bool(docs):
        raise InputError("give DOCS or --demo (one of them)", field="DOCS")
    wanted = parse_mix(mix)
    cfg = load_config(config)
    source = load_data("demo" if demo else str(docs))
    documents = list(source.documents)
    chunks = corpus_chunks(documents)
    if not chunks:
        raise InputError("the documents are empty: nothing to generate from", path=docs)
    configured = cfg.llm.with_env().configured or batch is not None
    if generator == "auto":
        generator = "llm" if configured else "offline"
    if critic == "auto":
        critic = "llm" if configured and generator != "offline" else "rules"
    runner: LLMRunner | None = None
    if generator in ("llm", "llm-simple") or critic == "llm":
        runner = (
            batch.runner()
            if batch is not None
            else open_runner(
                cfg.llm, dry_run=dry_run, no_cache=no_cache, cache=cache, what="the LLM generator"
            )
        )
    gen: DraftGenerator
    if generator == "offline":
        gen = OfflineGenerator(documents, chunks)
        console.print(
            "offline mode (no LLM): extractive statements and template questions — "
            "lower quality than the LLM pipeline; set RAGTRIAGE_LLM_BASE_URL for that",
            highlight=False,
        )
    elif generator == "llm":
        assert runner is not None
        gen = StatementGenerator(runner, documents, chunks)
    elif generator == "llm-simple":
        assert runner is not None
        gen = SimplePromptGenerator(runner, documents, chunks)
    elif generator.startswith("seq2seq:"):
        gen = Seq2SeqGenerator(generator.removeprefix("seq2seq:"), documents)
    else:
        raise InputError(
            "expected auto, offline, llm, llm-simple or seq2seq:PATH", field="--generator"
        )
    judge = (
        LLMCritic(runner)
        if critic == "llm" and runner is not None
        else RulesCritic([d.text for d in documents], corpus_entities(documents))
    )
    if critic not in ("llm", "rules"):
        raise InputError("expected auto, rules or llm", field="--critic")

    async def go() -> TestsetResult:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        with Progress(
            TextColumn("generating"),
            BarColumn(),
            MofNCompleteColumn(),
            console=Console(stderr=True),
            disable=not progress,
            transient=True,
        ) as bar:
            task = bar.add_task("gen", total=limit)
            return await generate_testset(
                documents,
                gen,
                judge,
                mix=wanted,
                limit=limit,
                thresholds=thresholds,
                dedup_threshold=dedup,
                seed=seed,
                chunks=chunks,
                keep_mix=keep_mix,
                on_progress=lambda done, total: bar.update(task, completed=done),
            )

    try:
        result = run_sync(go())
        # in batch mode the re-labelling waits for the final questions
        if batch is not None and batch.pending and batch.finish():
            return None
        if dry_run:
            assert runner is not None
            console.print(ledger_line(runner.ledger.summary(), estimate=True), highlight=False)
            return None
        generated = Dataset(
            name=f"{source.name}-testset",
            documents=tuple(documents),
            examples=tuple(result.examples),
        )
        labeller = (
            LLMLabeller(runner)
            if runner is not None and generator != "offline"
            else RulesLabeller()
        )
        items = items_of(generated)
        if labeller.name == "rules":
            # the rules label the (context, question) pair alone: the generator's answer
            # would let the rules re-read what the generator wrote
            items = [dataclasses.replace(i, answer="") for i in items]
        decisions = run_sync(labeller.label_many(items))
        if batch is not None and batch.finish():
            return None
    finally:
        if runner is not None:
            runner.close()
    comp = composition(decisions, f"{generated.name} ({labeller.name} re-labels)", intended=wanted)
    intended_only = composition(
        [
            d.__class__(d.example_id, d.given_label or "", "intended", "generator")
            for d in decisions
        ],
        f"{generated.name} (intended)",
        intended=wanted,
    )
    _print(console, comp, result, generator, critic)
    _print_confusion(console, decisions)
    out.mkdir(parents=True, exist_ok=True)
    write_jsonl(out / "examples.jsonl", result.examples)
    write_jsonl(out / "documents.jsonl", documents)
    write_jsonl(out / SOURCE_CHUNKS, chunks)
    write_jsonl(out / "rejected.jsonl", result.rejected)
    write_label_outputs(out, decisions, [intended_only, comp])
    found, total = located_references(result, {c.chunk_id: c for c in chunks})
    console.print(f"references located in their source chunks: {found}/{total}", highlight=False)
    atomic_write_text(out / "README.txt", _readme(generator, critic, comp))
    if runner is not None:
        console.print(ledger_line(runner.ledger.summary(), estimate=False), highlight=False)
    for name in (
        "examples.jsonl",
        "documents.jsonl",
        "rejected.jsonl",
        "labels.jsonl",
        "composition.html",
    ):
        console.print(f"wrote {out / name}", highlight=False)
    return result


def _print(
    console: Console, comp: Composition, result: TestsetResult, generator: str, critic: str
) -> None:
    from rich.table import Table

    table = Table(
        title=f"{len(result.examples)} questions kept of {result.drafted} drafted ({generator} generator, {critic} critiques)"
    )
    for col in ("label", "quota", "intended", "measured", "count"):
        table.add_column(col, justify="left" if col == "label" else "right")
    intended = comp.intended or {}
    for lab, count in comp.counts.items():
        table.add_row(
            lab,
            str(result.quotas.get(lab, 0)),
            f"{intended.get(lab, 0.0):.0%}",
            f"{(comp.share(lab) or 0.0):.1%}",
            str(count),
        )
    console.print(table)
    gap = comp.max_gap()
    if gap is not None:
        console.print(
            f"largest gap between intended and measured share: {gap:.1%} (points)", highlight=False
        )
    for note in [*result.notes, *comp.warnings()]:
        console.print(f"[yellow]note:[/] {note}", highlight=False)
    console.print(
        f"{len(result.rejected)} rejected candidates (critique scores and reasons in rejected.jsonl)",
        highlight=False,
    )


def _print_confusion(console: Console, decisions: Sequence[LabelDecision]) -> None:
    """Seed 001 Fig. 2: the measured labels of each requested label."""
    from rich.table import Table

    from ragtriage.know._agree import label_agreement

    intended = {d.example_id: d.given_label or "" for d in decisions if d.given_label}
    report = label_agreement({"intended": intended}, {d.example_id: d.label for d in decisions})
    table = Table(title="requested label (rows) vs re-labelled (columns), seed 001 Fig. 2")
    table.add_column("requested")
    for col in (*report.labels, "undetermined"):
        table.add_column(col, justify="right")
    for name, row in zip(report.labels, report.matrix, strict=True):
        if sum(row):
            table.add_row(name, *(str(v) for v in row))
    console.print(table)


def _readme(generator: str, critic: str, comp: Composition) -> str:
    lines = [
        "Generated by `ragtriage testset` (seed 001 §6).",
        f"generator: {generator}; critiques: {critic}",
    ]
    if generator == "offline":
        lines.append(
            "OFFLINE MODE: template questions from extracted sentences; lower quality than the "
            "LLM statement-extraction pipeline (grammar, naturalness, question variety)."
        )
    gap = comp.max_gap()
    if gap is not None:
        lines.append(f"largest |intended - measured| label share: {gap:.1%}")
    return "\n".join(lines) + "\n"
