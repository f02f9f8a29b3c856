"""Wall time of ``ragtriage evaluate`` (offline judge) on 560 long answers.

Run: .venv/bin/python benchmarks/evaluate_long.py [--answers 560] [--embedder minilm]
     [--cores 2] [--keep DIR] [--phases] [--compare OLD/scores.jsonl]

The set: 280 questions (half English, half Chinese) with a ground truth of four to six
sentences and five context chunks, each answered twice (two pipelines, as in a pairwise
comparison) by a long answer -- ten to fourteen sentences, about 200 English words or
450 Chinese characters -- that restates, rewords, negates or changes the numbers, dates
and names of the context and adds sentences of its own. Built from a fixed seed, so every
run scores the same traces.

Prints the wall time of the whole command (a fresh process: imports, reading, every
metric -- faithfulness, answer relevancy, context precision/recall, answer correctness,
the lexical scores, semantic similarity --, writing), the load average before and after,
and the CPUs the process may use (``--cores N`` pins it to the first N with
``sched_setaffinity``, to measure "2 cores" on a larger machine). ``--phases`` also times
the library phases in this process. ``--compare`` checks the per-answer scores against an
earlier run's ``scores.jsonl`` (``--keep``): the largest absolute difference of each metric
and the answers whose claim verdicts differ (a speed change should leave them equal). Target (issue 28): under 60 s for 560 answers on 2
cores. No assertions.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from ragtriage.records import Chunk, Example, Hit, Trace  # noqa: E402

_FIRST = ("Ann", "Marcus", "Elena", "Tomas", "Ingrid", "Peter", "Priya", "Omar", "Lena", "Sofia")
_LAST = ("Lee", "Lindqvist", "Broch", "Reiersen", "Halvorsen", "Okafor", "Novak", "Weir")
_ORGS = ("Nordvik Shipping", "Halden Energy", "Brightwater Foods", "Acme Corp", "Globex")
_CITIES = ("Springfield", "Riverton", "Lakeside", "Fairview", "Bayside", "Dunmore")
_MONTHS = ("January", "March", "May", "July", "September", "November")
_ZH_NAMES = ("张伟", "李娜", "王芳", "刘洋", "陈静", "杨磊", "赵敏", "黄强")
_ZH_ORGS = ("远航医药", "北峡航运", "绿野农业", "华信科技", "东方物流")
_ZH_CITIES = ("河源", "临江", "南湖", "青山", "白沙", "新桥")
_FILLER_EN = (
    "This reflects a broader trend in the industry over the past decade.",
    "Analysts considered the decision an important step for the company.",
    "The documents do not describe every detail of the process.",
    "Overall, the available information gives a consistent picture.",
    "Several factors contributed to this outcome, according to the reports.",
)
_FILLER_ZH = (
    "这反映了行业在过去十年中的整体趋势。",
    "分析人士认为这一决定对公司具有重要意义。",
    "现有资料并未说明该过程的全部细节。",
    "总体来看，相关信息给出了较为一致的情况。",
)


def _en_facts(rng: random.Random) -> list[str]:
    org, city = rng.choice(_ORGS), rng.choice(_CITIES)
    first, last = rng.sample(_FIRST, 2), rng.sample(_LAST, 2)
    person, other = f"{first[0]} {last[0]}", f"{first[1]} {last[1]}"
    y = rng.randint(1995, 2020)
    return [
        f"{org} opened its {city} plant in {rng.choice(_MONTHS)} {y} and hired "
        f"{rng.randint(100, 900)} workers.",
        f"{person} took over as chief executive in {y + 2}, replacing {other}.",
        f"Revenue rose {rng.randint(2, 30)}% in {y + 3} to ${rng.randint(20, 900)} million.",
        f"Operating costs fell {rng.randint(1, 15)}% in the same year.",
        f"In {y + 5} the company sold the {city} plant for ${rng.randint(5, 99)} million.",
        f"The board approved a dividend of ${rng.randint(1, 9)}.{rng.randint(10, 99)} per share.",
    ]


def _zh_facts(rng: random.Random) -> list[str]:
    org, city = rng.choice(_ZH_ORGS), rng.choice(_ZH_CITIES)
    person, other = rng.sample(_ZH_NAMES, 2)
    y = rng.randint(1995, 2020)
    return [
        f"{org}于{y}年{rng.randint(1, 12)}月在{city}开设工厂，雇佣{rng.randint(100, 900)}名员工。",
        f"{y + 2}年，{person}接替{other}出任首席执行官。",
        f"{y + 3}年公司营业收入增长{rng.randint(2, 30)}%，达到{rng.randint(2, 90)}亿元。",
        f"同年公司营业成本下降{rng.randint(1, 15)}%。",
        f"{y + 5}年公司以{rng.randint(1, 9)}亿元出售了{city}工厂。",
        f"董事会批准每股派发股息{rng.randint(1, 9)}元。",
    ]


def _changed(sentence: str, rng: random.Random, zh: bool) -> str:
    """The sentence kept, negated, or with one number changed."""
    roll = rng.random()
    if roll < 0.5:
        return sentence
    if roll < 0.65:
        if zh:
            return sentence.replace("增长", "下降", 1) if "增长" in sentence else "并非" + sentence
        return sentence.replace(" took over", " never took over", 1).replace(" rose", " fell", 1)
    digits = [i for i, c in enumerate(sentence) if c.isdigit()]
    if not digits:
        return sentence
    i = rng.choice(digits)
    return sentence[:i] + str((int(sentence[i]) + 3) % 10) + sentence[i + 1 :]


def _answer(facts: list[str], rng: random.Random, zh: bool) -> str:
    fill = _FILLER_ZH if zh else _FILLER_EN
    parts = [_changed(s, rng, zh) for s in facts]
    parts += [rng.choice(fill) for _ in range(rng.randint(6, 10))]
    rng.shuffle(parts)
    lead = "根据资料，" if zh else "Based on the provided documents, here is what happened. "
    return lead + ("" if zh else " ").join(parts)


def build_traces(n_answers: int, seed: int = 0) -> list[Trace]:
    """``n_answers`` traces (two answers per question), EN and ZH alternating."""
    rng = random.Random(seed)
    traces: list[Trace] = []
    for q in range((n_answers + 1) // 2):
        zh = q % 2 == 1
        facts = _zh_facts(rng) if zh else _en_facts(rng)
        others = _zh_facts(rng) if zh else _en_facts(rng)
        texts = [
            ("" if zh else " ").join(facts[:3]),
            ("" if zh else " ").join(facts[3:]),
            ("" if zh else " ").join(others[:3]),
            ("" if zh else " ").join(others[3:]),
            ("" if zh else " ").join(others[1:4]),
        ]
        chunks, pos = [], 0
        for i, t in enumerate(texts):
            doc = "gd" if i < 2 else "od"
            chunks.append(
                Chunk(
                    chunk_id=f"c{q}_{i}",
                    doc_id=f"{doc}{q}",
                    text=t,
                    start=pos,
                    end=pos + len(t),
                    index=i,
                )
            )
            pos += len(t) + 1
        question = (
            f"{facts[0][:4]}的工厂和管理层发生了什么变化？"
            if zh
            else f"What happened to {facts[0].split(' opened')[0]}'s plant and leadership?"
        )
        gt = ("" if zh else " ").join(facts[: rng.randint(4, 6)])
        example = Example(example_id=f"q{q}", query=question, answer=gt, doc_ids=[f"gd{q}"])
        hits = [
            Hit(chunk_id=c.chunk_id, doc_id=c.doc_id, score=1 - i / 10, rank=i + 1)
            for i, c in enumerate(chunks)
        ]
        for side in ("a", "b"):
            if len(traces) == n_answers:
                break
            traces.append(
                Trace(
                    trace_id=f"q{q}{side}",
                    run_id=side,
                    # one command scores both pipelines' answers: one example id each
                    example=example.model_copy(update={"example_id": f"q{q}{side}"}),
                    chunks=chunks,
                    retrieved=hits,
                    context=[c.chunk_id for c in chunks],
                    answer=_answer(facts, rng, zh),
                )
            )
    return traces


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--answers", type=int, default=560)
    ap.add_argument("--embedder", default="minilm")
    ap.add_argument("--cores", type=int, default=0, help="pin to the first N CPUs (0: all)")
    ap.add_argument("--keep", type=Path, default=None, help="write the traces and scores here")
    ap.add_argument("--phases", action="store_true", help="also time the library phases")
    ap.add_argument("--compare", type=Path, default=None, help="an earlier scores.jsonl")
    args = ap.parse_args()
    if args.cores:
        os.sched_setaffinity(0, set(sorted(os.sched_getaffinity(0))[: args.cores]))
    traces = build_traces(args.answers)
    en = [t for t in traces if int(t.example.example_id[1:-1]) % 2 == 0]
    words = sum(len(t.answer.split()) for t in en) // max(1, len(en))
    zh_chars = sum(len(t.answer) for t in traces if t not in en) // max(1, len(traces) - len(en))
    chars = sum(len(t.answer) for t in traces)
    with tempfile.TemporaryDirectory(prefix="ragtriage-evlong-") as tmp:
        out = args.keep or Path(tmp)
        out.mkdir(parents=True, exist_ok=True)
        src = out / "traces.jsonl"
        src.write_text("".join(t.model_dump_json() + "\n" for t in traces), encoding="utf-8")
        env = {**os.environ, "RAGTRIAGE_LLM_BASE_URL": "", "RAGTRIAGE_LLM_MODEL": ""}
        cfg = Path(tmp) / "cfg.yaml"  # a fresh embedding cache: every text embedded
        cfg.write_text(f"embedding: {{cache_dir: '{Path(tmp) / 'emb'}'}}\n", encoding="utf-8")
        cmd = [sys.executable, "-m", "ragtriage", "evaluate", str(src), "--out", str(out)]
        cmd += ["--judge", "offline", "--embedder", args.embedder, "--config", str(cfg)]
        load0 = os.getloadavg()
        cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - t0
        cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
        load1 = os.getloadavg()
        if proc.returncode != 0:
            print(proc.stdout[-3000:], proc.stderr[-3000:])
            raise SystemExit(proc.returncode)
        metrics = json.loads((out / "metrics.json").read_text(encoding="utf-8"))["metrics"]
        if args.compare is not None:
            _compare(args.compare, out / "scores.jsonl")
    cpus = len(os.sched_getaffinity(0))
    print(
        f"{len(traces)} answers ({chars:,} characters: ~{words} words an English answer, "
        f"~{zh_chars} characters a Chinese one), embedder {args.embedder}, {cpus} CPUs usable"
    )
    print(
        f"evaluate wall: {wall:.1f} s ({1000 * wall / len(traces):.0f} ms an answer, "
        f"{len(traces) / wall:.1f} answers/s); CPU {cpu:.1f} s (user + system, all threads; "
        f"{len(traces) / cpu:.1f} answers per CPU second)"
    )
    print(f"load average before {load0[0]:.2f}, after {load1[0]:.2f}")
    for name in ("faithfulness", "answer_correctness.f1", "f1", "semantic_similarity"):
        cell = metrics.get(name, {})
        print(f"  {name}: mean {cell.get('mean')} (n={cell.get('n')})")
    if args.phases:
        _phases(traces, args.embedder)


def _rows(path: Path) -> dict[str, dict[str, object]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return {r["trace_id"]: r for r in map(json.loads, filter(None, lines))}


def _compare(old_path: Path, new_path: Path) -> None:
    """Per-answer scores of this run against an earlier one: max |difference| a metric."""
    old, new = _rows(old_path), _rows(new_path)
    if old.keys() != new.keys():
        print(f"compare: different answers ({len(old)} before, {len(new)} now)")
        return
    diff: dict[str, float] = {}
    kinds: dict[str, int] = {}
    for tid, row in new.items():
        before = old[tid]
        if row.get("claims") != before.get("claims"):
            kinds["claim verdicts"] = kinds.get("claim verdicts", 0) + 1
        was, now = before["scores"], row["scores"]
        assert isinstance(was, dict) and isinstance(now, dict)
        for name in sorted(set(was) | set(now)):
            a, b = was.get(name, {}).get("value"), now.get(name, {}).get("value")
            if isinstance(a, float | int) and isinstance(b, float | int):
                diff[name] = max(diff.get(name, 0.0), abs(float(a) - float(b)))
            elif a != b:
                kinds[name] = kinds.get(name, 0) + 1
    changed = {n: d for n, d in diff.items() if d > 1e-6}
    worst = max(diff.items(), key=lambda kv: kv[1], default=("-", 0.0))
    print(
        f"compare with {old_path}: {len(new)} answers, {len(diff)} metrics; "
        f"max |difference| {worst[1]:.2g} ({worst[0]}); "
        f"over 1e-6: {changed or 'none'}; other changes (answers): {kinds or 'none'}"
    )


def _phases(traces: list[Trace], embedder: str) -> None:
    from ragtriage.config import EmbeddingConfig
    from ragtriage.embedding import make_embedder
    from ragtriage.metrics import OfflineCorrectness, OfflineJudge, correctness_input, score_rows

    emb = make_embedder(EmbeddingConfig(model=embedder), cache=False)
    clock = [(time.perf_counter(), time.process_time())]
    OfflineJudge(emb).judge_many(traces)
    clock.append((time.perf_counter(), time.process_time()))
    OfflineCorrectness(emb).score_many([correctness_input(t) for t in traces])
    clock.append((time.perf_counter(), time.process_time()))
    score_rows(traces, OfflineJudge(emb), emb)
    clock.append((time.perf_counter(), time.process_time()))
    names = ("offline judge (claims)", "answer correctness", "score_rows (judge + embeddings)")
    print(
        "phases (wall / CPU s): "
        + "; ".join(
            f"{n} {b[0] - a[0]:.1f} / {b[1] - a[1]:.1f}"
            for n, a, b in zip(names, clock, clock[1:], strict=True)
        )
    )


if __name__ == "__main__":
    main()
