"""Offline claim verdicts against the hand-written claim set (issue 28).

Run: .venv/bin/python benchmarks/faithfulness_claims.py [--set FILE] [--embedder minilm|hash|none]
     [--show-misses]

Reads ``benchmarks/data/claims/faithfulness_claims.jsonl`` (context, claim, expected
``supported | contradicted | unsupported``) and judges every claim against its context
with the offline entailment core (:mod:`ragtriage.metrics._entail`, the one the offline
``faithfulness`` and ``answer_correctness`` use). Prints, overall and per language:

* contradiction detection -- precision and recall of ``contradicted``;
* unsupported detection -- precision and recall of "not supported" (``contradicted``
  or ``neutral`` predicted, against ``contradicted`` or ``unsupported`` expected);
* the confusion table and, per claim kind (negation, antonym, number, ...), how many
  were right. ``undetermined`` verdicts count as wrong and are listed.

With ``--llm`` (an endpoint from ``--config``/``--base-url``/``--model``, or batch mode:
``--llm-batch-out DIR`` exports the requests, ``--llm-batch-in FILE`` imports a capable
model's replies) the same table for the two LLM paths of ``ragtriage evaluate --judge
llm``, each claim given as the answer over its context as the one retrieved chunk:

* ``llm faithfulness`` -- the metrics judge's claim verdicts (:class:`LLMTraceJudge`
  answer request): contradicted when a claim it extracted is contradicted, else
  unsupported when one is not supported, else supported;
* ``g-eval faithfulness`` -- the G-Eval 1-5 faithfulness grade (``g_eval_llm`` with the
  default rubric). A grade does not say contradicted or merely unsupported, so only "not
  supported" is scored: a grade below 4 flags the claim (contradiction P/R count none).

Targets (issue 28): >= 0.9 for each precision and recall. No assertions.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _llm_batch import add_batch_arguments, open_llm  # noqa: E402
from ragtriage.metrics._entail import Premise, check_claims  # noqa: E402

DEFAULT_SET = ROOT / "benchmarks" / "data" / "claims" / "faithfulness_claims.jsonl"
_PRED = {"entailed": "supported", "contradicted": "contradicted", "neutral": "unsupported"}


def _pr(pairs: list[tuple[bool, bool]]) -> tuple[float | None, float | None, int, int]:
    """(precision, recall, predicted positives, actual positives) of (expected, predicted)."""
    tp = sum(e and p for e, p in pairs)
    pp = sum(p for _, p in pairs)
    ap = sum(e for e, _ in pairs)
    return (tp / pp if pp else None), (tp / ap if ap else None), pp, ap


def _fmt(x: float | None) -> str:
    return "  n/a" if x is None else f"{x:.3f}"


def _report(name: str, rows: list[dict[str, Any]]) -> None:
    contra = [(r["expected"] == "contradicted", r["predicted"] == "contradicted") for r in rows]
    unsup = [
        (r["expected"] != "supported", r["predicted"] in ("contradicted", "unsupported"))
        for r in rows
    ]
    cp, cr, cpp, cap = _pr(contra)
    up, ur, upp, uap = _pr(unsup)
    right = sum(r["expected"] == r["predicted"] for r in rows)
    print(
        f"{name:<8} n={len(rows):<3} exact {right}/{len(rows)}  "
        f"contradiction P {_fmt(cp)} R {_fmt(cr)} ({cpp} flagged / {cap} true)  "
        f"unsupported P {_fmt(up)} R {_fmt(ur)} ({upp} flagged / {uap} true)"
    )


def _claim_traces(rows: list[dict[str, Any]]) -> list[Any]:
    """One trace per claim: the claim as the answer, its context as the one chunk."""
    from ragtriage.records import Chunk, Example, Trace

    out = []
    for r in rows:
        chunk = Chunk(
            chunk_id=f"{r['context_id']}#0",
            doc_id=str(r["context_id"]),
            text=r["context"],
            start=0,
            end=len(r["context"]),
            index=0,
        )
        ex = Example(example_id=str(r["id"]), query="What does the context say?", answerable=False)
        out.append(
            Trace(
                trace_id=str(r["id"]),
                example=ex,
                answer=r["claim"],
                chunks=[chunk],
                context=[chunk.chunk_id],
            )
        )
    return out


def llm_rows(
    rows: list[dict[str, Any]], runner: Any
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(LLM faithfulness rows, G-Eval rows): each row of ``rows`` with ``predicted``."""
    import asyncio

    from ragtriage.llm import run_sync
    from ragtriage.metrics import DEFAULT_RUBRICS, g_eval_llm
    from ragtriage.metrics._llm_judge import LLMTraceJudge, _answer_fields

    traces = _claim_traces(rows)
    judge = LLMTraceJudge(runner)

    async def answers() -> list[Any]:
        return list(
            await asyncio.gather(
                *(
                    runner.try_complete(judge.answer_request(t), purpose="metrics_answer")
                    for t in traces
                )
            )
        )

    outs = run_sync(answers())
    faith_rule = [r for r in DEFAULT_RUBRICS if r.name == "faithfulness"]
    grades = g_eval_llm(traces, faith_rule, runner)
    faith, geval = [], []
    for r, out, g in zip(rows, outs, grades, strict=True):
        claims = _answer_fields(out).get("claims")
        verdicts = {c.verdict for c in claims} if claims else set()
        pred = (
            "undetermined"
            if not verdicts
            else "contradicted"
            if "contradicted" in verdicts
            else "unsupported"
            if "not_supported" in verdicts
            else "supported"
        )
        faith.append({**r, "predicted": pred, "reason": "llm claims"})
        score = g["g_eval.faithfulness"].value
        gpred = "undetermined" if score is None else "supported" if score >= 4 else "unsupported"
        geval.append({**r, "predicted": gpred, "reason": f"g-eval {score}"})
    return faith, geval


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--set", type=Path, default=DEFAULT_SET)
    ap.add_argument("--embedder", default="minilm", help="minilm | hash | none")
    ap.add_argument("--show-misses", action="store_true")
    ap.add_argument("--llm", action="store_true", help="also LLM faithfulness and G-Eval")
    ap.add_argument("--config", type=Path, default=None, help="llm section (--llm)")
    ap.add_argument("--base-url", default=None)
    ap.add_argument("--model", default=None)
    ap.add_argument("--cache", type=Path, default=None, help="LLM cache file")
    add_batch_arguments(ap, "--llm")
    args = ap.parse_args()
    rows = [
        json.loads(line)
        for line in args.set.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    emb: Any = None
    if args.embedder != "none":
        from ragtriage.config import EmbeddingConfig
        from ragtriage.embedding import make_embedder

        emb = make_embedder(EmbeddingConfig(model=args.embedder), cache=False)
    premises: dict[str, Premise] = {}
    items = []
    for r in rows:
        p = premises.get(r["context"])
        if p is None:
            p = premises[r["context"]] = Premise.of(r["context"])
        items.append((r["claim"], p))
    started = time.perf_counter()
    checks = check_claims(items, emb)
    wall = time.perf_counter() - started
    for r, c in zip(rows, checks, strict=True):
        r["predicted"] = _PRED.get(c.verdict, "undetermined")
        r["reason"] = c.reason
    print(f"{len(rows)} claims from {args.set.name}; embedder {args.embedder}; {wall:.2f} s")
    _report("all", rows)
    for lang in sorted({r["language"] for r in rows}):
        _report(lang, [r for r in rows if r["language"] == lang])
    conf = Counter((r["expected"], r["predicted"]) for r in rows)
    labels = ("supported", "contradicted", "unsupported", "undetermined")
    print("\nexpected \\ predicted  " + "  ".join(f"{lab[:12]:>12}" for lab in labels))
    for e in labels[:3]:
        print(f"{e:<20} " + "  ".join(f"{conf[(e, p)]:>12}" for p in labels))
    kinds = Counter(r["kind"] for r in rows)
    ok = Counter(r["kind"] for r in rows if r["expected"] == r["predicted"])
    print("\nby kind: " + ", ".join(f"{k} {ok[k]}/{n}" for k, n in sorted(kinds.items())))
    und = [r for r in rows if r["predicted"] == "undetermined"]
    for r in und:
        print(f"undetermined {r['id']}: {r['claim']} ({r['reason']})")
    if args.show_misses:
        _misses(rows)
    if args.llm:
        _llm_main(args, rows)


def _misses(rows: list[dict[str, Any]]) -> None:
    print()
    for r in rows:
        if r["expected"] != r["predicted"]:
            print(
                f"{r['id']} [{r['kind']}] expected {r['expected']}, got {r['predicted']}: "
                f"{r['claim']}  -- {r['reason']}"
            )


def _llm_main(args: argparse.Namespace, rows: list[dict[str, Any]]) -> None:
    from ragtriage.cli.diagnose import _config

    cfg = _config(args.config, args.base_url, args.model, None)
    cfg = cfg.model_copy(update={"llm": cfg.llm.with_env()})
    runner, batch = open_llm(cfg, args)
    try:
        base = [{k: v for k, v in r.items() if k not in ("predicted", "reason")} for r in rows]
        faith, geval = llm_rows(base, runner)
    finally:
        runner.close()
    if batch is not None and batch.finish():
        print("LLM requests exported; the LLM rows are not measured yet", file=sys.stderr)
        return
    for name, got in (("llm faithfulness", faith), ("g-eval faithfulness", geval)):
        print(f"\n{name}:")
        _report("all", got)
        for lang in sorted({r["language"] for r in got}):
            _report(lang, [r for r in got if r["language"] == lang])
        if args.show_misses:
            _misses(got)


if __name__ == "__main__":
    main()
