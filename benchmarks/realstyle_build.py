"""Build the traces of one part of the real-style development set (issue #9).

::

    .venv/bin/python benchmarks/realstyle_build.py \\
        --part demo \\
        --dataset benchmarks/data/realstyle/demo/dataset \\
        --config benchmarks/data/realstyle/demo/pipeline.yaml \\
        --answers benchmarks/data/realstyle/demo/answers.jsonl \\
        --out benchmarks/data/realstyle/demo/traces.jsonl

Runs ragtriage's real pipeline (chunk, embed/index, retrieve, rerank, generate; any
backend works, ``extractive`` is enough because the answer is replaced) over the
examples of a dataset directory (any format ``ragtriage run --data`` reads), then
replaces each trace's answer with the hand-written one from ``answers.jsonl``:

    {"example_id": "ex-001", "answer": "...", "style": "cot_conclusion",
     "phenomena": ["two_entity"], "simulated": null,
     "retrieval_query": null, "config": null}

- ``example_id`` is the dataset's id; the trace's ids become ``rs-<part>-<id>`` (kept
  when already prefixed) and ``run_id`` is ``realstyle-<part>``.
- ``style``, ``phenomena`` and ``simulated`` are copied into ``example.metadata``.
- ``retrieval_query`` (optional): the pipeline runs on this text instead of the
  question (a simulated faulty query rewrite, e.g. one that dropped one of two
  companies); the trace keeps the original question and records the text in
  ``metadata.retrieval_query``. Say what it simulates in ``simulated``.
- ``config`` (optional): another pipeline YAML for this case, relative to the
  answers file (e.g. a smaller ``top_k`` that produces a realistic miss).

Only examples listed in ``answers.jsonl`` are built, in the dataset's order. The
output is deterministic (stage timings and the replaced generator output are left
out), so re-running gives identical files; it passes ``ragtriage validate``.
``--preview FILE`` also writes a plain-text view of each case (question, ground
truth, where the ground-truth documents' chunks went, the context) to write answers
and labels from; with ``--all`` it covers every dataset example, answered or not.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path
from typing import Any

from ragtriage.config import load_config
from ragtriage.data import Dataset, load_dataset
from ragtriage.jsonl import iter_json_lines, write_jsonl
from ragtriage.pipeline import Pipeline
from ragtriage.records import Example, Trace

ANSWER_KEYS = {
    "example_id",
    "answer",
    "style",
    "phenomena",
    "simulated",
    "retrieval_query",
    "config",
}


def read_answers(path: Path) -> dict[str, dict[str, Any]]:
    """Hand-written answers by dataset example id; bad lines name file, line, field."""
    out: dict[str, dict[str, Any]] = {}
    for lineno, rec in iter_json_lines(path):
        where = f"{path}:{lineno}"
        unknown = set(rec) - ANSWER_KEYS
        if unknown:
            raise SystemExit(f"{where}: unknown field(s) {sorted(unknown)}")
        for key in ("example_id", "answer", "style"):
            if not isinstance(rec.get(key), str) or not rec[key].strip():
                raise SystemExit(f"{where}: field '{key}' must be a non-empty string")
        if not isinstance(rec.get("phenomena", []), list):
            raise SystemExit(f"{where}: field 'phenomena' must be a list")
        for key in ("simulated", "retrieval_query", "config"):
            if rec.get(key) is not None and not isinstance(rec[key], str):
                raise SystemExit(f"{where}: field '{key}' must be a string or null")
        if rec["example_id"] in out:
            raise SystemExit(f"{where}: field 'example_id' {rec['example_id']!r} repeated")
        out[rec["example_id"]] = rec
    return out


def prefixed(example_id: str, part: str) -> str:
    prefix = f"rs-{part}-"
    return example_id if example_id.startswith(prefix) else prefix + example_id


async def _run(pipeline: Pipeline, example: Example, retrieval_query: str | None) -> Trace:
    probe = (
        example if not retrieval_query else example.model_copy(update={"query": retrieval_query})
    )
    trace = await pipeline.run_example(probe)
    error = trace.metadata.get("error")
    if error is not None:
        raise SystemExit(f"{example.example_id}: pipeline failed: {error}")
    return trace


def build(
    dataset: Dataset,
    config_path: Path,
    answers: dict[str, dict[str, Any]],
    answers_dir: Path,
    part: str,
    include_unanswered: bool = False,
) -> list[Trace]:
    """One trace per example that has an answer (every example with ``include_unanswered``;
    those keep the generator's own answer)."""
    known = {e.example_id for e in dataset.examples}
    missing = sorted(set(answers) - known)
    if missing:
        raise SystemExit(f"answers.jsonl names examples not in the dataset: {missing}")
    pipelines: dict[Path, Pipeline] = {}

    def pipeline_for(path: Path) -> Pipeline:
        if path not in pipelines:
            pipelines[path] = Pipeline.from_config(load_config(path), dataset)
        return pipelines[path]

    traces: list[Trace] = []
    for example in dataset.examples:
        rec = answers.get(example.example_id)
        if rec is None and not include_unanswered:
            continue
        rec = rec or {}
        cfg_path = answers_dir / rec["config"] if rec.get("config") else config_path
        trace = asyncio.run(_run(pipeline_for(cfg_path), example, rec.get("retrieval_query")))
        new_id = prefixed(example.example_id, part)
        meta = dict(example.metadata)
        if rec:
            meta.update(
                style=rec["style"],
                phenomena=list(rec.get("phenomena", [])),
                simulated=rec.get("simulated"),
            )
        trace_meta: dict[str, Any] = {
            "language": trace.metadata.get("language"),
            "answer_source": "hand-written" if rec else "pipeline",
            "pipeline_config": cfg_path.name,
        }
        if rec.get("retrieval_query"):
            trace_meta["retrieval_query"] = rec["retrieval_query"]
        traces.append(
            trace.model_copy(
                update={
                    "trace_id": new_id,
                    "run_id": f"realstyle-{part}",
                    "example": example.model_copy(update={"example_id": new_id, "metadata": meta}),
                    "answer": rec["answer"] if rec else trace.answer,
                    "citations": [],
                    "stages": {},
                    "metadata": trace_meta,
                }
            )
        )
    return traces


def preview(traces: list[Trace]) -> str:
    """Where each case's ground-truth documents went, and the context, as text."""
    out: list[str] = []
    for t in traces:
        ex = t.example
        texts = {c.chunk_id: c.text for c in [*t.gt_doc_chunks, *t.chunks]}
        gt_ids = [c.chunk_id for c in t.gt_doc_chunks]
        ret = [h.chunk_id for h in t.retrieved]
        rer = [h.chunk_id for h in t.reranked]
        out.append(f"=== {ex.example_id} [{ex.label}] answerable={ex.answerable}")
        out.append(f"Q: {ex.query}")
        if t.metadata.get("retrieval_query"):
            out.append(f"RETRIEVAL QUERY: {t.metadata['retrieval_query']}")
        out.append(f"GT: {ex.answer}")
        out.append(f"REFS: {json.dumps(ex.references, ensure_ascii=False)}")
        for cid in gt_ids:
            has = [r for r in ex.references if r and r in texts[cid]]
            where = (
                f"retrieved@{ret.index(cid) + 1}" if cid in ret else "not retrieved",
                f"reranked@{rer.index(cid) + 1}" if cid in rer else "-",
                "IN CONTEXT" if cid in t.context else "-",
            )
            out.append(f"  gt chunk {cid}: {' '.join(where)} refs={len(has)}")
        out.append(f"CONTEXT ({len(t.context)}; dropped {t.dropped_context}):")
        for cid in t.context:
            out.append(f"  [{cid}] {texts[cid]}")
        out.append(f"ANSWER: {t.answer}")
        out.append("")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--part", required=True, help="part name, e.g. demo or public")
    ap.add_argument("--dataset", required=True, type=Path, help="dataset directory")
    ap.add_argument("--config", required=True, type=Path, help="pipeline YAML")
    ap.add_argument("--answers", required=True, type=Path, help="answers.jsonl")
    ap.add_argument("--out", type=Path, help="traces.jsonl to write")
    ap.add_argument("--preview", type=Path, help="also write a text view of each case")
    ap.add_argument("--all", action="store_true", help="preview examples without answers too")
    args = ap.parse_args()
    dataset = load_dataset(args.dataset)
    answers = read_answers(args.answers) if args.answers.exists() else {}
    traces = build(
        dataset, args.config, answers, args.answers.parent, args.part, include_unanswered=args.all
    )
    if args.out:
        write_jsonl(args.out, [t for t in traces if t.metadata["answer_source"] == "hand-written"])
    if args.preview:
        args.preview.write_text(preview(traces), encoding="utf-8")
    print(f"{len(traces)} traces ({len(answers)} answers)")


if __name__ == "__main__":
    main()
