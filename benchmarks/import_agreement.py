"""Stage attribution of imported traces vs the native traces of the same run.

Runs the demo pipeline (demo chunking and reranking; the ``hash`` embedder and the
extractive generator unless ``--config`` names another pipeline), diagnoses its native
traces, writes what a RAGAS user would have (``user_input``, ``retrieved_contexts`` =
the passages given to the generator, ``response``, ``reference``,
``reference_contexts``) and, for the ``columns`` import, the retriever's list too; imports
both with ``--documents`` = the demo corpus, diagnoses them and prints, over the
examples both diagnoses call failing, how often the stage agrees (and the answer label
agreement over all examples); the same RAGAS file imported without the documents
(minimal traces) is measured too, on generation vs an earlier stage.

    .venv/bin/python benchmarks/import_agreement.py [--limit N] [--config PIPELINE] [--perturb]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import sys
import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ragtriage.cli.run import demo_config_path
from ragtriage.config import load_config
from ragtriage.data import load_demo
from ragtriage.diagnosis import Diagnoser
from ragtriage.integrations import column_map, import_traces
from ragtriage.jsonl import read_records
from ragtriage.pipeline import Pipeline, run_dataset
from ragtriage.records import Diagnosis, Stage, Trace


def native_run(out: Path, limit: int | None, config: Path | None) -> list[Trace]:
    ds = load_demo()
    cfg = load_config(config or demo_config_path())
    if config is None:
        cfg = cfg.model_copy(
            update={
                "embedding": cfg.embedding.model_copy(update={"model": "hash"}),
                "generation": cfg.generation.model_copy(update={"backend": "extractive"}),
            }
        )
    pipe = Pipeline.from_config(cfg, ds, use_llm_cache=False)
    examples = list(ds.examples)[:limit] if limit else list(ds.examples)
    asyncio.run(run_dataset(pipe, examples, out, progress=False))
    return list(read_records(out / "traces.jsonl", Trace))


def perturb(text: str) -> str:
    """The passage as a tool may have stored it, deterministically by its text: a third
    unchanged, a third lower-cased with doubled spaces (found after normalisation), a
    third with its last 12 characters cut and two letters changed (found fuzzily)."""
    kind = int(hashlib.sha1(text.encode("utf-8")).hexdigest(), 16) % 3
    if kind == 0:
        return text
    if kind == 1:
        return text.lower().replace(" ", "  ")
    cut = text[:-12] if len(text) > 60 else text
    mid = len(cut) // 2
    return cut[: mid - 20] + "#" + cut[mid - 19 : mid] + "#" + cut[mid + 1 :]


def export_rows(traces: Sequence[Trace], *, perturbed: bool = False) -> list[dict[str, Any]]:
    """What an evaluation tool keeps of each native trace (``perturbed``: passages as
    :func:`perturb` changes them)."""
    rows = []
    for t in traces:
        cm0 = t.chunk_map()
        cm = (
            {k: c.model_copy(update={"text": perturb(c.text)}) for k, c in cm0.items()}
            if perturbed
            else cm0
        )
        rows.append(
            {
                "id": t.trace_id,
                "user_input": t.example.query,
                "retrieved_contexts": [cm[c].text for c in t.context],
                "retriever_list": [cm[h.chunk_id].text for h in t.retrieved],
                "response": t.answer,
                "reference": t.example.answer if t.example.answerable else "Unable to answer.",
                "reference_contexts": list(t.example.references),
            }
        )
    return rows


def diagnose(traces: Sequence[Trace]) -> dict[str, Diagnosis]:
    ds = asyncio.run(Diagnoser("rules").diagnose_many(list(traces)))
    return {d.example_id: d for d in ds}


def agreement(native: dict[str, Diagnosis], imported: dict[str, Diagnosis]) -> dict[str, Any]:
    both = [k for k in native if k in imported]
    label_same = sum(1 for k in both if native[k].answer_label == imported[k].answer_label)
    failing = [k for k in both if native[k].needs_diagnosis and imported[k].needs_diagnosis]
    same = [k for k in failing if native[k].stage == imported[k].stage]
    gen = Stage.GENERATION
    coarse = [k for k in failing if (native[k].stage is gen) == (imported[k].stage is gen)]
    pairs = Counter(
        (str(native[k].stage), str(imported[k].stage)) for k in failing if k not in same
    )
    return {
        "examples": len(both),
        "answer_label_agreement": label_same / len(both) if both else None,
        "failing_in_both": len(failing),
        "stage_agreement": len(same) / len(failing) if failing else None,
        "stage_agree_count": len(same),
        # generation vs an earlier stage: all a minimal trace (no documents) can tell
        "generation_vs_upstream_agreement": len(coarse) / len(failing) if failing else None,
        "native_stages": dict(Counter(str(native[k].stage) for k in failing)),
        "disagreements_native_to_imported": {f"{a}->{b}": n for (a, b), n in pairs.items()},
    }


def measure(
    limit: int | None, *, config: Path | None = None, perturbed: bool = False
) -> dict[str, Any]:
    """Agreement of three imports of the same run with its native diagnoses: RAGAS
    columns with the documents, the columns format with the retriever's list too, and
    RAGAS columns without the documents (minimal traces), and RAGAS columns without
    ``reference_contexts``. ``perturbed``: the exported
    passages are changed by :func:`perturb`, to measure the locator."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        native_traces = native_run(root / "native", limit, config)
        native = diagnose(native_traces)
        src = root / "ragas.jsonl"
        src.write_text(
            "".join(
                json.dumps(r, ensure_ascii=False) + "\n"
                for r in export_rows(native_traces, perturbed=perturbed)
            ),
            encoding="utf-8",
        )
        docs = Path(load_demo.__code__.co_filename).parent / "demo" / "documents.jsonl"
        out: dict[str, Any] = {}
        ragas = import_traces("ragas", src, root / "ragas", documents=docs)
        out["ragas"] = agreement(native, diagnose(ragas.traces))
        out["ragas"]["passages_located"] = dict(ragas.stats.passages)
        out["ragas"]["gold_docs_from"] = dict(ragas.stats.gold_docs_from)
        cmap = column_map(
            "user_input",
            "retrieved_contexts",
            "response",
            "reference",
            reference_contexts="reference_contexts",
            retrieved="retriever_list",
            row_id="id",
        )
        cols = import_traces("columns", src, root / "columns", documents=docs, columns=cmap)
        out["columns_with_retriever_list"] = agreement(native, diagnose(cols.traces))
        minimal = import_traces("ragas", src, root / "minimal")
        out["ragas_minimal"] = agreement(native, diagnose(minimal.traces))
        # a RAGAS file without reference_contexts: the gold documents come from the
        # answer's words and the GT chunks from ragtriage's lexical fallback; compared
        # with the native traces, and with the native traces stripped of their
        # references (what the diagnosis itself can do without evidence strings)
        bare = root / "bare.jsonl"
        bare.write_text(
            "".join(
                json.dumps({k: v for k, v in r.items() if k != "reference_contexts"}) + "\n"
                for r in export_rows(native_traces, perturbed=perturbed)
            ),
            encoding="utf-8",
        )
        no_refs = diagnose(import_traces("ragas", bare, root / "bare", documents=docs).traces)
        native_no_refs = diagnose(
            [
                t.model_copy(update={"example": t.example.model_copy(update={"references": []})})
                for t in native_traces
            ]
        )
        out["ragas_without_reference_contexts"] = agreement(native, no_refs)
        out["ragas_without_reference_contexts_vs_native_without_references"] = agreement(
            native_no_refs, no_refs
        )
        out["native_without_references"] = agreement(native, native_no_refs)
        bare_minimal = diagnose(import_traces("ragas", bare, root / "bare_minimal").traces)
        out["ragas_minimal_without_reference_contexts"] = agreement(native, bare_minimal)
        return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--limit", type=int, default=None, help="first N demo examples")
    ap.add_argument("--config", type=Path, default=None, help="pipeline config")
    ap.add_argument(
        "--perturb", action="store_true", help="store passages changed (normalised / fuzzy)"
    )
    args = ap.parse_args(argv)
    res = measure(args.limit, config=args.config, perturbed=args.perturb)
    json.dump(res, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
