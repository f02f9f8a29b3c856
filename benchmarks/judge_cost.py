"""LLM cost of the RAGEC judge per diagnosed error: the paper's protocol vs ours.

Run: .venv/bin/python benchmarks/judge_cost.py [--traces 32] [--k 10]

The same failing traces (synthetic English and Chinese company reports, every stage's
failure, see ``benchmarks/diagnose_rules.py``) are diagnosed three times by the LLM
judge, over a ScriptedLLM that answers every RAGEC prompt consistently (concepts and
containment from the offline rules, GT chunks by answer overlap, type votes from a
hash of the query and the sample index):

(a) the paper's protocol (seed 000, App. B): 1 answer evaluation + 10 GT-chunk votes
    + 1 concept extraction + 1 containment call per concept + K type votes, one call
    each, no cache;
(b) our default: ``n`` sampling (one request for K votes), GT chunks from the
    references, ONE batched containment call, response cache;
(c) (b) again over the same cache: every sample must come from the cache.

It asserts that (a) and (b) give identical labels (answer label, stage, mode, second
mode, votes) and prints calls and tokens per diagnosed error and the ratio b/a
(target <= 1/3).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT.parent / "src"))

from diagnose_rules import synthetic_traces  # noqa: E402
from ragtriage.config import DiagnosisConfig  # noqa: E402
from ragtriage.diagnosis import PAPER_PROTOCOL, CostOptions, Diagnoser  # noqa: E402
from ragtriage.diagnosis.facts import concept_in_text, extract_concepts  # noqa: E402
from ragtriage.llm import ChatRequest, LLMRunner, ResponseCache, ScriptedLLM  # noqa: E402
from ragtriage.records import ERROR_TYPE_NAMES, Diagnosis, ErrorType, Trace  # noqa: E402
from ragtriage.text import content_tokens  # noqa: E402

_CHUNK_LINE = re.compile(r"^\[(C\d+)\](?: \(document [^)]*\))? (.*)$", re.M)
_TYPE_ORDER = sorted(ErrorType, key=lambda t: -len(ERROR_TYPE_NAMES[t]))


def _chunks(prompt: str) -> list[tuple[str, str]]:
    return _CHUNK_LINE.findall(prompt)


def _field(prompt: str, name: str) -> str:
    m = re.search(rf"\*\*{re.escape(name)}\*\*:\s*(.*)", prompt)
    return m.group(1).strip() if m else ""


def scripted_judge(request: ChatRequest, sample: int) -> str:
    """Consistent replies to every RAGEC prompt; the same prompt and vote index always
    get the same reply, whether votes come from ``n`` sampling or separate seeds."""
    index = sample + (request.seed or 0)
    system = request.messages[0].content if len(request.messages) > 1 else ""
    user = request.messages[-1].content
    if "<proposed_answer>" in user:
        return '{"label": "incorrect", "reasoning": "the key value differs"}'
    if "Relevant Chunks" in system:
        answer = set(content_tokens(_field(user, "Ground Truth Answer")))
        scored = [(len(answer & set(content_tokens(text))), alias) for alias, text in _chunks(user)]
        best = max(s for s, _ in scored)
        return f"Relevant Chunks: [{', '.join(a for s, a in scored if s == best and s > 0)}]"
    if user.rstrip().endswith("Concept List:"):
        question = user.rsplit("Question:", 1)[1].rsplit("Concept List:", 1)[0]
        return "\n".join(extract_concepts(question.strip()))
    if user.startswith("Concepts:"):
        concepts = re.findall(r"^K(\d+)\. (.*)$", user, re.M)
        chunks = _chunks(user)
        lines = []
        for k, concept in concepts:
            hits = [alias for alias, text in chunks if concept_in_text(concept, text)]
            lines.append(f"K{k}: {', '.join(hits) if hits else 'NONE'}")
        return "\n".join(lines)
    if "**Concept**:" in user:
        concept = _field(user, "Concept")
        return "\n".join(
            f"[{alias}] {concept_in_text(concept, text)}" for alias, text in _chunks(user)
        )
    # type votes: the stage's types are the ones the system prompt lists
    listed = [t for t in ErrorType if f"- {ERROR_TYPE_NAMES[t]}:" in system]
    if not listed:
        return "unrecognised prompt"
    h = int(hashlib.sha256(_field(user, "Query").encode()).hexdigest(), 16)
    mode = listed[h % len(listed)]
    second = listed[(h + 1) % len(listed)]
    third = listed[(h + 2) % len(listed)]
    pick = mode if index < 6 else second if index < 9 else third
    return ERROR_TYPE_NAMES[pick]


async def _diagnose(
    traces: list[Trace], options: CostOptions, k: int, cache: ResponseCache | None
) -> tuple[list[Diagnosis], int, int, int]:
    llm = ScriptedLLM(scripted_judge)
    runner = LLMRunner(llm, cache=cache)
    diagnoser = Diagnoser("llm", llm=runner, config=DiagnosisConfig(k=k), options=options)
    diagnoses = await diagnoser.diagnose_many(traces, concurrency=8)
    total = runner.ledger.summary().total
    return (
        diagnoses,
        len(llm.requests),
        total.prompt_tokens + total.completion_tokens,
        (total.cache_hits),
    )


def _labels(d: Diagnosis) -> tuple[object, ...]:
    return (d.answer_label, d.stage, d.error_type, d.second_type, tuple(d.votes))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=int, default=32)
    parser.add_argument("--k", type=int, default=10)
    args = parser.parse_args()

    kinds = ("generation", "reranking", "retrieval", "chunking")
    traces = synthetic_traces(args.traces, kinds=kinds)
    paper, calls_a, tokens_a, _ = asyncio.run(_diagnose(traces, PAPER_PROTOCOL, args.k, None))
    with tempfile.TemporaryDirectory() as tmp:
        cache_path = Path(tmp) / "cache.sqlite"
        with ResponseCache(cache_path) as cache:
            ours, calls_b, tokens_b, _ = asyncio.run(
                _diagnose(traces, CostOptions(), args.k, cache)
            )
        with ResponseCache(cache_path) as cache:
            again, calls_c, tokens_c, hits_c = asyncio.run(
                _diagnose(traces, CostOptions(), args.k, cache)
            )

    errors = sum(1 for d in ours if d.needs_diagnosis)
    differ = [a.example_id for a, b in zip(paper, ours, strict=True) if _labels(a) != _labels(b)]
    stages: dict[str, int] = {}
    for d in ours:
        key = d.stage.value if d.stage else "undetermined"
        stages[key] = stages.get(key, 0) + 1
    print(f"{len(traces)} traces, {errors} diagnosed errors, stages {stages}, K={args.k}")
    print(f"{'':28}{'calls/error':>12}{'tokens/error':>14}")
    print(f"{'(a) paper protocol':28}{calls_a / errors:>12.1f}{tokens_a / errors:>14.0f}")
    print(f"{'(b) ragtriage default':28}{calls_b / errors:>12.1f}{tokens_b / errors:>14.0f}")
    print(f"{'(c) (b) again, same cache':28}{calls_c / errors:>12.1f}{tokens_c / errors:>14.0f}")
    call_ratio, token_ratio = calls_b / calls_a, tokens_b / tokens_a
    print(
        f"ratio b/a: calls {call_ratio:.3f}, tokens {token_ratio:.3f} "
        f"(target <= 0.333: {'OK' if max(call_ratio, token_ratio) <= 1 / 3 else 'MISSED'})"
    )
    print(f"labels identical (a) vs (b): {not differ} ({len(differ)} differ)")
    print(f"second run: {calls_c} calls, {hits_c} cached samples, {tokens_c} tokens")
    assert not differ, f"labels differ for {differ[:5]}"
    assert [_labels(d) for d in again] == [_labels(d) for d in ours]
    assert calls_c == 0 and tokens_c == 0, "the second run must be served from the cache"


if __name__ == "__main__":
    main()
