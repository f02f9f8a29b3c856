"""Throughput of the rules judge: synthetic traces diagnosed per second.

Run: .venv/bin/python benchmarks/diagnose_rules.py [--traces 4000] [--strategy ragec]
     [--profile]

Builds N synthetic traces (English and Chinese company reports chunked into
paragraphs; every failure kind: wrong number at generation, GT chunk dropped by the
reranker, GT chunk never retrieved, GT chunk missing the question's entity, plus
correct answers and abstentions), diagnoses them with ``Diagnoser("rules")`` and prints
traces/s (target: >= 2,000/s). ``--profile`` prints the top functions by cumulative time.

:func:`synthetic_traces` is also used by ``benchmarks/judge_cost.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import pstats
import random
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from ragtriage.config import DiagnosisConfig  # noqa: E402
from ragtriage.diagnosis import Diagnoser  # noqa: E402
from ragtriage.diagnosis._context import CaseContext  # noqa: E402
from ragtriage.diagnosis.answer_eval import evaluate_rules  # noqa: E402
from ragtriage.diagnosis.concepts import rules_concept_coverage  # noqa: E402
from ragtriage.diagnosis.gt_chunks import gt_from_references  # noqa: E402
from ragtriage.diagnosis.types_rules import rule_type_votes  # noqa: E402
from ragtriage.records import AnswerLabel, Chunk, Diagnosis, Example, Hit, Trace  # noqa: E402

KINDS = ("generation", "reranking", "retrieval", "chunking", "correct", "abstain")

_EN_COMPANIES = (
    "Acme Corp",
    "Globex Holdings",
    "Initech Systems",
    "Umbrella Pharma",
    "Stark Industries",
    "Wayne Logistics",
    "Hooli Media",
    "Vandelay Imports",
    "Cyberdyne Robotics",
    "Soylent Foods",
)
_EN_CITIES = ("Springfield", "Riverton", "Lakeside", "Fairview", "Greenville", "Bayside")
_ZH_COMPANIES = ("绿野农业", "捷翼航空", "华信科技", "东方物流", "远航医药", "星河传媒")
_ZH_CITIES = ("河源", "临江", "南湖", "青山", "白沙", "新桥")
_EN_FILLER = (
    "The board reviewed the annual budget and approved new risk controls.",
    "Management expects demand to remain stable across its main markets.",
    "The company continued to invest in staff training and safety programmes.",
    "Several suppliers renewed their contracts under similar terms.",
    "The audit committee met four times during the reporting period.",
    "Customer satisfaction surveys showed modest improvements.",
)
_ZH_FILLER = (
    "董事会审议了年度预算并批准了新的风险控制措施。",
    "管理层预计主要市场的需求将保持稳定。",
    "公司继续投资于员工培训和安全项目。",
    "多家供应商以类似条款续签了合同。",
    "审计委员会在报告期内召开了四次会议。",
)


@dataclass(frozen=True)
class _Fact:
    question: str
    answer: str
    wrong: str
    abstain: str
    sentence: str  # the evidence sentence, copied verbatim into the document
    lead: str  # the sentence naming the company (kept apart for chunking errors)


def _en_fact(rng: random.Random, company: str) -> _Fact:
    city = rng.choice(_EN_CITIES)
    year = rng.randint(1995, 2022)
    staff = rng.randint(120, 9000)
    if rng.random() < 0.5:
        return _Fact(
            question=f"In which year did {company} open its plant in {city}?",
            answer=f"{company} opened its plant in {city} in {year}.",
            wrong=f"{company} opened its plant in {city} in {year + rng.randint(1, 6)}.",
            abstain="The provided documents do not mention when the plant was opened.",
            sentence=f"In {year}, the company opened a plant in {city} with {staff} employees.",
            lead=f"{company} is a manufacturer with operations in several regions.",
        )
    amount = rng.randint(2, 90)
    return _Fact(
        question=f"How much did {company} raise through debt financing in {year}?",
        answer=f"{company} raised ${amount} million through debt financing in {year}.",
        wrong=f"{company} raised ${amount + rng.randint(3, 40)} million in {year}.",
        abstain="I don't know; the context does not say how much was raised.",
        sentence=f"In {year}, the group raised ${amount} million through debt financing.",
        lead=f"{company} reported its financing activities for the year below.",
    )


def _zh_fact(rng: random.Random, company: str) -> _Fact:
    city = rng.choice(_ZH_CITIES)
    year = rng.randint(1995, 2022)
    staff = rng.randint(120, 9000)
    return _Fact(
        question=f"{company}公司在哪一年于{city}开设了工厂？",
        answer=f"{company}公司于{year}年在{city}开设了工厂。",
        wrong=f"{company}公司于{year + rng.randint(1, 6)}年在{city}开设了工厂。",
        abstain="文档中没有提供相关信息，无法回答该问题。",
        sentence=f"{year}年，该公司在{city}开设了一家工厂，雇佣了{staff}名员工。",
        lead=f"{company}公司是一家在多个地区经营的制造企业。",
    )


def _paragraphs(rng: random.Random, filler: tuple[str, ...], n: int, k: int = 3) -> list[str]:
    sep = "" if filler is _ZH_FILLER else " "
    return [sep.join(rng.sample(filler, k)) for _ in range(n)]


def _chunks(doc_id: str, paragraphs: list[str]) -> list[Chunk]:
    out, pos = [], 0
    for i, text in enumerate(paragraphs):
        out.append(
            Chunk(
                chunk_id=f"{doc_id}_{i}",
                doc_id=doc_id,
                text=text,
                start=pos,
                end=pos + len(text),
                index=i,
            )
        )
        pos += len(text) + 2
    return out


def _hits(chunks: list[Chunk]) -> list[Hit]:
    return [
        Hit(chunk_id=c.chunk_id, doc_id=c.doc_id, score=1.0 - i / 50, rank=i + 1)
        for i, c in enumerate(chunks)
    ]


def synthetic_trace(i: int, kind: str, *, zh: bool = False, seed: int = 0) -> Trace:
    """One synthetic trace of failure ``kind`` (see :data:`KINDS`)."""
    rng = random.Random(seed * 1_000_003 + i)
    companies = _ZH_COMPANIES if zh else _EN_COMPANIES
    company = rng.choice(companies)
    fact = _zh_fact(rng, company) if zh else _en_fact(rng, company)
    filler = _ZH_FILLER if zh else _EN_FILLER
    sep = "" if zh else " "
    paras = _paragraphs(rng, filler, 10)
    at = rng.randint(1, 8)
    if kind == "chunking":
        # the company is named in the previous chunk only: the GT chunk alone is ambiguous
        paras[at - 1] = paras[at - 1] + sep + fact.lead
        paras[at] = fact.sentence + sep + paras[at]
    else:
        paras[at] = fact.lead + sep + fact.sentence + sep + paras[at]
    doc_id = f"doc{i}"
    gt_doc = _chunks(doc_id, paras)
    gt_chunk = gt_doc[at]
    others = [c for j in range(3) for c in _chunks(f"noise{i}_{j}", _paragraphs(rng, filler, 6))]
    pool = [c for c in gt_doc if c is not gt_chunk] + others
    rng.shuffle(pool)
    retrieved = pool[:20]
    if kind in ("generation", "correct", "abstain"):
        retrieved = [gt_chunk, *pool[:19]]
    elif kind == "reranking":
        retrieved = [*pool[:7], gt_chunk, *pool[7:19]]
    reranked = [c for c in retrieved if c is not gt_chunk][:5]
    if kind in ("generation", "correct", "abstain"):
        reranked = [gt_chunk, *reranked[:4]]
    context = [c.chunk_id for c in reranked]
    answer = {"correct": fact.answer, "abstain": fact.abstain}.get(kind, fact.wrong)
    example = Example(
        example_id=f"ex{i}",
        query=fact.question,
        answer=fact.answer,
        doc_ids=[doc_id],
        references=[fact.sentence],
        label=kind,
        language="zh" if zh else "en",
    )
    return Trace(
        trace_id=f"t{i}",
        run_id="synthetic",
        example=example,
        gt_doc_chunks=gt_doc,
        chunks=others,
        retrieved=_hits(retrieved),
        reranked=_hits(reranked),
        context=context,
        answer=answer,
    )


def synthetic_traces(n: int, *, kinds: tuple[str, ...] = KINDS, seed: int = 0) -> list[Trace]:
    """``n`` traces cycling through ``kinds``; every third one in Chinese."""
    return [synthetic_trace(i, kinds[i % len(kinds)], zh=i % 3 == 2, seed=seed) for i in range(n)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=int, default=4000)
    parser.add_argument("--strategy", default="ragec")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument(
        "--workers", type=int, default=0, help="processes for the parallel run (0 = CPU count)"
    )
    args = parser.parse_args()

    t0 = time.perf_counter()
    traces = synthetic_traces(args.traces)
    built = time.perf_counter() - t0
    diagnoser = Diagnoser("rules", args.strategy)
    asyncio.run(diagnoser.diagnose_many(traces[:50]))  # warm caches and imports
    profiler = cProfile.Profile() if args.profile else None
    if profiler is not None:
        profiler.enable()
    t0, c0 = time.perf_counter(), time.process_time()
    diagnoses = asyncio.run(diagnoser.diagnose_many(traces))
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
    if profiler is not None:
        profiler.disable()
    rate = len(traces) / elapsed
    stages = Counter(d.stage.value if d.stage else "-" for d in diagnoses if d.needs_diagnosis)
    labels = Counter(d.answer_label.value if d.answer_label else "undetermined" for d in diagnoses)
    agree = sum(
        1
        for d in diagnoses
        if d.label in ("generation", "reranking", "retrieval", "chunking")
        and d.stage is not None
        and d.stage.value == d.label
    )
    failing = sum(
        1 for d in diagnoses if d.label in ("generation", "reranking", "retrieval", "chunking")
    )
    print(f"built {len(traces)} traces in {built:.2f}s")
    print(f"answer labels: {dict(labels)}")
    print(f"stages: {dict(stages)}; stage == injected failure kind: {agree}/{failing}")
    cpu_rate = len(traces) / cpu
    print(
        f"diagnosed {len(traces)} traces in {elapsed:.2f}s wall, {cpu:.2f}s CPU: "
        f"{rate:,.0f} traces/s wall in one process, {cpu_rate:,.0f} traces per CPU-second"
    )
    workers = args.workers or (os.cpu_count() or 1)
    if workers > 1 and profiler is None:
        # fresh traces (another seed), so the forked workers' inherited caches from the
        # single-process run give them no head start
        fresh = synthetic_traces(args.traces, seed=1)
        t0 = time.perf_counter()
        parallel = asyncio.run(diagnoser.diagnose_many(fresh, workers=workers))
        p_elapsed = time.perf_counter() - t0
        p_rate = len(fresh) / p_elapsed
        check = asyncio.run(diagnoser.diagnose_many(fresh[:300]))
        same = [d.to_json() for d in parallel[:300]] == [d.to_json() for d in check]
        print(
            f"with {workers} worker processes (what `ragtriage diagnose` uses by default): "
            f"{len(traces)} traces in {p_elapsed:.2f}s wall: {p_rate:,.0f} traces/s "
            f"(target >= 2,000/s: {'OK' if p_rate >= 2000 else 'BELOW'}; "
            f"identical diagnoses: {same})"
        )
    _breakdown(traces, diagnoses)
    if profiler is not None:
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)


def _breakdown(traces: list[Trace], diagnoses: list[Diagnosis]) -> None:
    """Milliseconds per trace spent in each step, measured step by step."""
    cfg = DiagnosisConfig()
    failing = [(t, d) for t, d in zip(traces, diagnoses, strict=True) if d.stage is not None]

    def per(fn: Callable[[], object], n: int) -> float:
        t0 = time.perf_counter()
        fn()
        return (time.perf_counter() - t0) * 1e3 / max(1, n)

    ms_eval = per(lambda: [evaluate_rules(t.example, t.answer, cfg) for t in traces], len(traces))
    ms_gt = per(lambda: [gt_from_references(t) for t, _ in failing], len(failing))
    ms_cov = per(
        lambda: [rules_concept_coverage(t, d.gt_chunk_ids) for t, d in failing], len(failing)
    )
    ctxs = [
        CaseContext(
            trace=t,
            stage=d.stage,
            answer_label=AnswerLabel.INCORRECT,
            language=t.example.language or "en",
            gt_chunk_ids=tuple(d.gt_chunk_ids),
        )
        for t, d in failing
        if d.stage is not None
    ]
    ms_types = per(lambda: [rule_type_votes(c, cfg.k) for c in ctxs], len(ctxs))
    print(
        f"per trace: answer evaluation {ms_eval:.3f} ms; per failing trace: GT chunks "
        f"{ms_gt:.3f} ms, concept coverage (when needed) {ms_cov:.3f} ms, "
        f"rule type votes {ms_types:.3f} ms"
    )


if __name__ == "__main__":
    main()
