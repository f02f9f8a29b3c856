"""Critic-guided correction (seed 004, §3.3, Tables 11–12, Algorithm 1), closed-loop.

For every failing trace: a **planner** writes a small program over the five action
functions (Prompt F names), the sandboxed executor (:func:`run_program`) runs it over
ragtriage's own pipeline, the corrected answer is **re-diagnosed**, and it is kept only
when the judge says it is better (correct > possible_correct > incorrect; ties keep the
original). Up to ``iterations`` rounds (Table 6), each planning from the last kept state.

The five action functions and their 15 sub-actions (Table 12)::

    Retrieval(query, topk)                 supplementary: docs + Retrieval(q, k)
                                           replacement:   Retrieval(q, k)
                                           same query q, or a RewriteQuery(...) result
    RewriteQuery(query, instruction)       expand | refine | summarize | clarify
    DecomposeQuery(query)                  sub-questions
    RefineDoc(query, doc, instruction)     explain | refine | correct | delete |
                                           exemplify | summarize
    GenerateAnswer(query, docs, additional_instruction="")

Offline, the query and document actions are extractive (documented per action in
:class:`PipelineActions`); with an LLM generator ``GenerateAnswer`` passes the additional
instruction on. The offline planner is Table 11 as fixed programs (:data:`TIER1_PROGRAMS`,
reached from tier-1 types or RAGEC types via :data:`~ragtriage.critic.RAGEC_TO_TIERS`);
the LLM planner asks for a program with Prompt F-style instructions.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ragtriage.config import DiagnosisConfig
from ragtriage.critic._executor import run_program
from ragtriage.critic._system import tiers_of_ragec
from ragtriage.errors import ProgramRejected
from ragtriage.llm import ChatRequest, LLMFailure, LLMRunner
from ragtriage.records import AnswerLabel, Chunk, Diagnosis, ErrorType, Trace
from ragtriage.text import content_tokens, detect_language, split_sentences

__all__ = [
    "ACTION_NAMES",
    "TIER1_ACTIONS",
    "TIER1_PROGRAMS",
    "CorrectionOutcome",
    "LLMPlanner",
    "OfflinePlanner",
    "PipelineActions",
    "answer_rank",
    "correct_traces",
    "corrected_run",
    "planner_prompt",
    "programs_for",
    "programs_for_ragec",
]

T = TypeVar("T")

ACTION_NAMES = ("Retrieval", "RewriteQuery", "DecomposeQuery", "RefineDoc", "GenerateAnswer")
REWRITE_INSTRUCTIONS = ("expand", "refine", "summarize", "clarify")
REFINE_INSTRUCTIONS = ("explain", "refine", "correct", "delete", "exemplify", "summarize")

#: Table 11 (seed 004): tier-1 error type → its two actions, in words.
TIER1_ACTIONS: dict[str, tuple[str, str]] = {
    "Incomplete Information": (
        "Re-retrieval: rewrite the query for supplementary retrieval.",
        "Rewriting the input: refine the retrieved knowledge.",
    ),
    "Irrelevant Information": (
        "Re-retrieval: perform replacement retrieval using the same query.",
        "Rewriting the input: correct the retrieved knowledge.",
    ),
    "Erroneous Information": (
        "Rewriting the input: correct the retrieved knowledge.",
        "Rewriting the reasoning answer: correct the reasoning part.",
    ),
    "Incomplete Response": (
        "Re-retrieval: perform supplementary retrieval using the same query.",
        "Rewriting the input: provide examples for the retrieved knowledge.",
    ),
    "Inaccurate Response": (
        "Rewriting the reasoning answer: refine the reasoning part.",
        "Rewriting the input: explain the retrieved knowledge.",
    ),
    "Off-Topic Response": (
        "Re-retrieval: rewrite the query for replacement retrieval.",
        "Rewriting the query: break down the query into sub-questions.",
    ),
    "Overly Verbose Response": (
        "Rewriting the input: refine the retrieved knowledge.",
        "Rewriting the reasoning answer: do not rely on the original reasoning part.",
    ),
}

#: Table 11 as fixed programs over the action functions (the offline planner).
TIER1_PROGRAMS: dict[str, str] = {
    "Incomplete Information": (
        "queries = RewriteQuery(query, 'expand')\n"
        "new_docs = Retrieval(queries[0], 5)\n"
        "all_docs = docs + [d for d in new_docs if d not in docs]\n"
        "refined = [RefineDoc(query, d, 'refine') for d in all_docs]\n"
        "answer = GenerateAnswer(query, refined)\n"
    ),
    "Irrelevant Information": (
        "deeper = Retrieval(query, 10)\n"
        "new_docs = [d for d in deeper if d not in docs]\n"
        "corrected = [RefineDoc(query, d, 'correct') for d in new_docs]\n"
        "answer = GenerateAnswer(query, corrected)\n"
    ),
    "Erroneous Information": (
        "corrected = [RefineDoc(query, d, 'correct') for d in docs]\n"
        "answer = GenerateAnswer(query, corrected, 'The previous answer reasoned wrongly: '"
        " + prediction)\n"
    ),
    "Incomplete Response": (
        "new_docs = Retrieval(query, 10)\n"
        "all_docs = docs + [d for d in new_docs if d not in docs]\n"
        "examples = [RefineDoc(query, d, 'exemplify') for d in all_docs]\n"
        "answer = GenerateAnswer(query, examples, 'Cover every part of the question.')\n"
    ),
    "Inaccurate Response": (
        "explained = [RefineDoc(query, d, 'explain') for d in docs]\n"
        "answer = GenerateAnswer(query, explained, 'Refine the reasoning; be precise.')\n"
    ),
    "Off-Topic Response": (
        "subs = DecomposeQuery(query)\n"
        "queries = RewriteQuery(query, 'refine')\n"
        "found = [Retrieval(q, 3) for q in queries[:1] + subs]\n"
        "new_docs = [d for ds in found for d in ds]\n"
        "answer = GenerateAnswer(query, new_docs)\n"
    ),
    "Overly Verbose Response": (
        "refined = [RefineDoc(query, d, 'refine') for d in docs]\n"
        "answer = GenerateAnswer(query, refined, 'Answer concisely; do not rely on the "
        "previous answer.')\n"
    ),
}


def programs_for(tier1: Sequence[str]) -> list[tuple[str, str]]:
    """``(tier-1, program)`` of Table 11 for tier-1 types, in order, de-duplicated."""
    return [(t, TIER1_PROGRAMS[t]) for t in dict.fromkeys(tier1) if t in TIER1_PROGRAMS]


def programs_for_ragec(error_type: ErrorType | str) -> list[tuple[str, str]]:
    """Table 11 reached from a RAGEC type: the programs of its tier-1 types."""
    return programs_for(tiers_of_ragec(error_type)[0])


def _tier1_of(d: Diagnosis) -> list[str]:
    if d.tier1:
        return list(d.tier1)
    out: list[str] = []
    for t in (d.error_type, d.second_type):
        if t is not None:
            out += [x for x in tiers_of_ragec(t)[0] if x not in out]
    return out


# -- actions ---------------------------------------------------------------------------------


def _sync(loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, T], timeout: float) -> T:
    """Run ``coro`` on ``loop`` from the executor's worker thread."""
    return asyncio.run_coroutine_threadsafe(coro, loop).result(timeout)


def _best_sentences(query: str, text: str, keep: int) -> str:
    wanted = set(content_tokens(query))
    sentences = [s.text for s in split_sentences(text)]
    if not sentences or not wanted:
        return text
    scored = sorted(
        range(len(sentences)),
        key=lambda i: (-len(wanted & set(content_tokens(sentences[i]))), i),
    )
    chosen = sorted(scored[:keep])
    return " ".join(sentences[i] for i in chosen)


_SPLIT = re.compile(r"\s*(?:,|;|\band\b|\bor\b|以及|和|与|及|、|，|；)\s*", re.IGNORECASE)


@dataclass
class PipelineActions:
    """The five action functions over a built :class:`~ragtriage.pipeline.Pipeline`.

    Offline behaviour of the query/document actions (no LLM): ``RewriteQuery`` expand →
    the query plus the three most frequent new content words of the current documents;
    refine → the query's content words; summarize → its first six content words;
    clarify → the query plus its question parts. ``DecomposeQuery`` → the question's
    parts (:func:`ragtriage.diagnosis.question_parts`), else its coordinated pieces.
    ``RefineDoc`` refine/correct → the two sentences sharing most words with the query;
    summarize → the best one; delete → ``""``; explain/exemplify → the document
    unchanged (nothing to add without a model).
    """

    pipeline: Any
    loop: asyncio.AbstractEventLoop
    language: str = "en"
    current_docs: list[str] = field(default_factory=list)
    made: dict[str, Chunk] = field(default_factory=dict)
    call_timeout_s: float = 60.0
    log: list[str] = field(default_factory=list)
    last_context: list[str] = field(default_factory=list)

    def functions(self) -> dict[str, Callable[..., Any]]:
        return {
            "Retrieval": self.retrieval,
            "RewriteQuery": self.rewrite_query,
            "DecomposeQuery": self.decompose_query,
            "RefineDoc": self.refine_doc,
            "GenerateAnswer": self.generate_answer,
        }

    def retrieval(self, query: str, topk: int = 5) -> list[str]:
        k = max(1, min(int(topk), 20))
        chunks = _sync(self.loop, self.pipeline.retrieve_chunks(str(query), k), self.call_timeout_s)
        self.log.append(f"Retrieval({k})")
        for c in chunks:
            self.made.setdefault(c.text, c)
        return [c.text for c in chunks]

    def rewrite_query(self, query: str, instruction: str = "expand") -> list[str]:
        how = str(instruction).strip().lower()
        if how not in REWRITE_INSTRUCTIONS:
            raise ValueError(f"instruction must be one of {', '.join(REWRITE_INSTRUCTIONS)}")
        self.log.append(f"RewriteQuery({how})")
        q = str(query)
        words = content_tokens(q)
        if how == "refine":
            return [" ".join(words) or q]
        if how == "summarize":
            return [" ".join(words[:6]) or q]
        if how == "clarify":
            parts = self.decompose_query(q)
            return [q + " " + " ".join(p for p in parts if p not in q)] if parts else [q]
        have = set(words)
        counts: dict[str, int] = {}
        for d in self.current_docs:
            for t in content_tokens(d):
                if t not in have and len(t) > 1:
                    counts[t] = counts.get(t, 0) + 1
        extra = sorted(counts, key=lambda t: (-counts[t], t))[:3]
        return [" ".join([q, *extra])]

    def decompose_query(self, query: str) -> list[str]:
        from ragtriage.diagnosis.question_parts import question_parts

        q = str(query)
        parts = [p.text for p in question_parts(q)]
        if not parts:
            parts = [p for p in _SPLIT.split(q) if len(content_tokens(p)) >= 2]
        self.log.append("DecomposeQuery")
        return parts[:5] if len(parts) > 1 else [q]

    def refine_doc(self, query: str, doc: str, instruction: str = "refine") -> str:
        how = str(instruction).strip().lower()
        if how not in REFINE_INSTRUCTIONS:
            raise ValueError(f"instruction must be one of {', '.join(REFINE_INSTRUCTIONS)}")
        self.log.append(f"RefineDoc({how})")
        text = str(doc)
        if how == "delete":
            return ""
        if how in ("refine", "correct"):
            return _best_sentences(str(query), text, 2)
        if how == "summarize":
            return _best_sentences(str(query), text, 1)
        return text

    def _chunk(self, text: str, i: int) -> Chunk:
        known = self.made.get(text)
        if known is not None:
            return known
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]
        chunk = Chunk(
            chunk_id=f"corr-{digest}",
            doc_id="corrected",
            text=text,
            start=0,
            end=len(text),
            index=i,
        )
        self.made[text] = chunk
        return chunk

    def generate_answer(self, query: str, docs: list[str], additional_instruction: str = "") -> str:
        texts = [str(d) for d in docs if str(d).strip()]
        chunks = [self._chunk(t, i) for i, t in enumerate(dict.fromkeys(texts))]
        q = str(query)
        backend = getattr(getattr(self.pipeline, "config", None), "generation", None)
        if additional_instruction and getattr(backend, "backend", "") == "openai":
            q = f"{q}\n\n({additional_instruction})"
        gen = _sync(
            self.loop,
            self.pipeline.generate_answer(q, chunks, language=self.language),
            self.call_timeout_s,
        )
        self.log.append("GenerateAnswer")
        self.last_context = [c.chunk_id for c in chunks if c.chunk_id in gen.context_ids]
        return str(gen.answer)


# -- planners --------------------------------------------------------------------------------


class OfflinePlanner:
    """Table 11 → fixed programs: attempt ``i`` runs the ``i``-th program of the
    diagnosis's tier-1 types (closest first), then, with ``fallback``, the other rows of
    the table in order (the closed loop keeps only what the judge proves better)."""

    name = "table"

    def __init__(self, *, fallback: bool = True) -> None:
        self.fallback = fallback

    def options(self, diagnosis: Diagnosis) -> list[tuple[str, str]]:
        tier1 = _tier1_of(diagnosis)
        if self.fallback or not tier1:
            tier1 = [*tier1, *TIER1_PROGRAMS]
        return programs_for(tier1)

    async def plan(self, trace: Trace, diagnosis: Diagnosis, attempt: int) -> str | None:
        options = self.options(diagnosis)
        return options[attempt][1] if attempt < len(options) else None


# Adapted from seed 004 (RAG-Critic), App. B, Prompt F (executor-based planning): the
# function list, the variables given, and the Table 11 actions for the critic's types.
def planner_prompt(trace: Trace, diagnosis: Diagnosis, docs: Sequence[str]) -> str:
    tier1 = _tier1_of(diagnosis)
    actions = "\n".join(f"- {t}: {' '.join(TIER1_ACTIONS[t])}" for t in tier1 if t in TIER1_ACTIONS)
    listing = "\n".join(f"[{i}] {d[:500]}" for i, d in enumerate(docs))
    return (
        "You are an agent tasked with optimizing a Retrieval-Augmented Generation process. "
        "The goal is to improve the model's prediction by addressing the issues flagged in "
        "the error type. Write a short program that calls only these functions:\n"
        "Retrieval(query: str, topk: int) -> list[str]\n"
        "RewriteQuery(query: str, instruction: str) -> list[str]  # expand|refine|summarize|clarify\n"
        "DecomposeQuery(query: str) -> list[str]\n"
        "RefineDoc(query: str, doc: str, instruction: str) -> str  "
        "# explain|refine|correct|delete|exemplify|summarize\n"
        "GenerateAnswer(query: str, docs: list[str], additional_instruction: str = '') -> str\n"
        "Use only assignments, function calls, lists, dicts and list comprehensions (no "
        "imports, loops, attributes or other functions). The variables query, docs and "
        "prediction are given. The last line must assign the final answer to `answer`.\n\n"
        f"Query: {trace.example.query}\nDocs:\n{listing}\nPrediction: {trace.answer}\n"
        f"Error types: {', '.join(tier1) or 'unknown'}\n"
        f"Error analysis: {diagnosis.answer_reason} {diagnosis.stage_reason}\n"
        f"Suggested actions (error-action table):\n{actions or '- retrieve more evidence'}\n\n"
        "Reply with the program only, in a ```python block."
    )


_CODE = re.compile(r"```(?:python|py)?\s*\n(.*?)```", re.DOTALL)


class LLMPlanner:
    """Prompt F-style planning through the runner; the program only ever runs through
    :func:`run_program`. A failed call or an empty reply plans nothing."""

    name = "llm"

    def __init__(self, runner: LLMRunner, *, model: str = "", max_tokens: int = 400) -> None:
        self._runner = runner
        self._model = model
        self._max_tokens = max_tokens
        self.failures: list[str] = []
        #: the last plan was not answered yet (batch mode): later attempts would build on
        #: an attempt that has not run, so the loop stops for this trace
        self.pending = False

    async def plan(
        self, trace: Trace, diagnosis: Diagnosis, attempt: int, docs: Sequence[str] = ()
    ) -> str | None:
        request = ChatRequest.of(
            None,
            planner_prompt(trace, diagnosis, docs),
            model=self._model,
            temperature=0.0 if attempt == 0 else 0.7,
            seed=attempt,
            max_tokens=self._max_tokens,
        )
        outcome = await self._runner.try_complete(request, purpose="correction_plan")
        self.pending = isinstance(outcome, LLMFailure) and outcome.kind == "batch_pending"
        if isinstance(outcome, LLMFailure):
            self.failures.append(outcome.reason)
            return None
        text = outcome.text
        m = _CODE.search(text)
        program = (m.group(1) if m else text).strip()
        return program or None


# -- the loop --------------------------------------------------------------------------------


def answer_rank(d: Diagnosis) -> int:
    """correct (or a warranted abstention) 3 > possible_correct 2 > incorrect 1 >
    undetermined 0."""
    if d.answer_label is None:
        return 0
    if not d.needs_diagnosis:
        return 3 if d.answer_label is not AnswerLabel.POSSIBLE_CORRECT else 2
    return 2 if d.answer_label is AnswerLabel.POSSIBLE_CORRECT else 1


@dataclass(frozen=True)
class CorrectionOutcome:
    trace: Trace
    diagnosis: Diagnosis
    touched: bool
    improved: bool
    attempts: tuple[dict[str, Any], ...]


def _docs_of(trace: Trace) -> list[str]:
    texts = {c.chunk_id: c.text for c in [*trace.gt_doc_chunks, *trace.chunks]}
    return [texts[i] for i in trace.context if i in texts]


def _candidate(trace: Trace, answer: str, context: list[str], made: dict[str, Chunk]) -> Trace:
    known = {c.chunk_id for c in [*trace.gt_doc_chunks, *trace.chunks]}
    extra = [c for c in made.values() if c.chunk_id in context and c.chunk_id not in known]
    return trace.model_copy(
        update={
            "answer": answer,
            "context": context,
            "chunks": [*trace.chunks, *extra],
            "citations": [],
        }
    )


async def correct_traces(
    traces: Sequence[Trace],
    diagnoses: Sequence[Diagnosis],
    pipeline: Any,
    *,
    planner: OfflinePlanner | LLMPlanner,
    iterations: int = 2,
    max_steps: int = 2000,
    timeout_s: float = 60.0,
    config: DiagnosisConfig | None = None,
) -> list[CorrectionOutcome]:
    """Algorithm 1 with the closed loop: failing traces are corrected, re-diagnosed with
    the rules judge, and a correction is kept only when it ranks higher."""
    from ragtriage.diagnosis.engine import Diagnoser

    judge = Diagnoser("rules", "ragec", config if config is not None else DiagnosisConfig(), None)
    by_id = {d.example_id: d for d in diagnoses}
    loop = asyncio.get_running_loop()
    out: list[CorrectionOutcome] = []
    for trace in traces:
        first = by_id.get(trace.example.example_id)
        if first is None:
            first = (await judge.diagnose_many([trace], 1))[0]
        best_trace, best_diag = trace, first
        attempts: list[dict[str, Any]] = []
        if first.needs_diagnosis and first.answer_label is not None:
            for attempt in range(iterations):
                if answer_rank(best_diag) >= 3:
                    break
                docs = _docs_of(best_trace)
                if isinstance(planner, LLMPlanner):
                    program = await planner.plan(best_trace, best_diag, attempt, docs)
                else:
                    program = await planner.plan(best_trace, best_diag, attempt)
                if program is None:
                    attempts.append({"attempt": attempt, "planned": False})
                    if isinstance(planner, LLMPlanner) and planner.pending:
                        break
                    continue
                lang = best_trace.example.language or detect_language(best_trace.example.query)
                actions = PipelineActions(pipeline, loop, language=lang, current_docs=docs)
                variables = {
                    "query": best_trace.example.query,
                    "docs": docs,
                    "prediction": best_trace.answer,
                }
                record: dict[str, Any] = {"attempt": attempt, "program": program}
                try:
                    result = await asyncio.to_thread(
                        run_program,
                        program,
                        actions.functions(),
                        max_steps=max_steps,
                        timeout_s=timeout_s,
                        variables=variables,
                    )
                except ProgramRejected as exc:
                    attempts.append({**record, "rejected": str(exc)})
                    continue
                if not isinstance(result, str):
                    attempts.append({**record, "rejected": "the program's result is no answer"})
                    continue
                cand = _candidate(best_trace, result, actions.last_context, actions.made)
                cand_diag = (await judge.diagnose_many([cand], 1))[0]
                better = answer_rank(cand_diag) > answer_rank(best_diag)
                attempts.append(
                    {
                        **record,
                        "actions": actions.log,
                        "label": cand_diag.answer_label.value if cand_diag.answer_label else None,
                        "kept": better,
                    }
                )
                if better:
                    best_trace, best_diag = cand, cand_diag
        out.append(
            CorrectionOutcome(
                trace=best_trace,
                diagnosis=best_diag,
                touched=bool(attempts),
                improved=best_trace is not trace,
                attempts=tuple(attempts),
            )
        )
    return out


def corrected_run(
    outcomes: Sequence[CorrectionOutcome], manifest: dict[str, Any], *, planner: str
) -> tuple[dict[str, Any], list[Trace], list[Diagnosis]]:
    """The corrected run: a new manifest (new run id, ``corrected_from``), the traces
    (corrected ones carry ``metadata["correction"]``) and their diagnoses, all under the
    new run id so ``ragtriage compare`` reads it like any other run."""
    import datetime as _dt

    old_id = str(manifest.get("run_id") or "run")
    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    new_id = f"{old_id}-corrected-{stamp}"
    new_manifest = {
        **manifest,
        "run_id": new_id,
        "name": f"{manifest.get('name') or old_id}-corrected",
        "created_at": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "corrected_from": old_id,
        "correction": {
            "planner": planner,
            "touched": sum(1 for o in outcomes if o.touched),
            "improved": sum(1 for o in outcomes if o.improved),
        },
    }
    traces: list[Trace] = []
    diagnoses: list[Diagnosis] = []
    for o in outcomes:
        meta = dict(o.trace.metadata)
        if o.touched:
            meta["correction"] = {"kept": o.improved, "attempts": list(o.attempts)}
        traces.append(o.trace.model_copy(update={"run_id": new_id, "metadata": meta}))
        diagnoses.append(o.diagnosis.model_copy(update={"run_id": new_id}))
    return new_manifest, traces, diagnoses
