"""Critic-guided correction (seed 004, §3.3, Tables 11–12, Algorithm 1), closed-loop.

For every trace the **reference-free critic** judges an error (no gold answer is read: in
production there is none): a **planner** writes a small program over the five action
functions (Prompt F names) from the critic's tiers and analysis, the sandboxed executor
(:func:`run_program`) runs it over ragtriage's own pipeline, the critic judges the
candidate, and it is kept only when the critic ranks it higher (correct > undetermined >
error; with an LLM critic configured as well, no critic may rank it lower and one must
rank it higher). Up to ``iterations`` rounds (Table 6), each planning from the last kept
state. The gold-answer (rules) judge only **evaluates** the result afterwards: each kept
correction is better, worse or no different by the gold answer
(:func:`correction_summary`).

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
reached from the critic's tier-1 types, or RAGEC types via
:data:`~ragtriage.critic.RAGEC_TO_TIERS`); the LLM planner asks for a program with Prompt
F-style instructions and, when the LLM gives none (a failed call, an empty reply), runs the
table's program for that attempt.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import re
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ragtriage.config import DiagnosisConfig
from ragtriage.critic._critic import CriticInput, CriticVerdict, LLMCritic, ReferenceFreeCritic
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
    "CorrectionSummary",
    "LLMPlanner",
    "OfflinePlanner",
    "PipelineActions",
    "answer_rank",
    "correct_traces",
    "corrected_run",
    "correction_summary",
    "critic_rank",
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


def _tier1_of(v: CriticVerdict | Diagnosis) -> list[str]:
    """Tier-1 types of a critic verdict (or of a diagnosis: its tiers, else its RAGEC
    types')."""
    if v.tier1:
        return list(v.tier1)
    types = (
        v.ragec_types
        if isinstance(v, CriticVerdict)
        else [t for t in (v.error_type, v.second_type) if t is not None]
    )
    out: list[str] = []
    for t in types:
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
    """Table 11 → fixed programs: attempt ``i`` runs the ``i``-th program of the critic's
    tier-1 types (closest first), then, with ``fallback``, the other rows of the table in
    order (the closed loop keeps only what the critic ranks better)."""

    name = "table"

    def __init__(self, *, fallback: bool = True) -> None:
        self.fallback = fallback

    def options(self, verdict: CriticVerdict | Diagnosis) -> list[tuple[str, str]]:
        tier1 = _tier1_of(verdict)
        if self.fallback or not tier1:
            tier1 = [*tier1, *TIER1_PROGRAMS]
        return programs_for(tier1)

    async def plan(
        self, trace: Trace, verdict: CriticVerdict | Diagnosis, attempt: int
    ) -> str | None:
        options = self.options(verdict)
        return options[attempt][1] if attempt < len(options) else None


# Adapted from seed 004 (RAG-Critic), App. B, Prompt F (executor-based planning): the
# function list, the variables given, and the Table 11 actions for the critic's types.
def planner_prompt(trace: Trace, verdict: CriticVerdict | Diagnosis, docs: Sequence[str]) -> str:
    tier1 = _tier1_of(verdict)
    tier2 = list(verdict.tier2) if isinstance(verdict, CriticVerdict) else []
    analysis = (
        verdict.analysis
        if isinstance(verdict, CriticVerdict)
        else f"{verdict.answer_reason} {verdict.stage_reason}"
    )
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
        + (f"Error subtypes: {', '.join(tier2)}\n" if tier2 else "")
        + f"Error analysis: {analysis}\n"
        f"Suggested actions (error-action table):\n{actions or '- retrieve more evidence'}\n\n"
        "Reply with the program only, in a ```python block."
    )


_CODE = re.compile(r"```(?:python|py)?\s*\n(.*?)```", re.DOTALL)


class LLMPlanner:
    """Prompt F-style planning through the runner; the program only ever runs through
    :func:`run_program`. When the LLM gives no program (a failed call, an empty reply)
    the ``fallback`` planner (the fixed table) plans that attempt, unless the request is
    pending in a batch. ``last_source`` says who wrote the last program."""

    name = "llm"

    def __init__(
        self,
        runner: LLMRunner,
        *,
        model: str = "",
        max_tokens: int = 400,
        fallback: OfflinePlanner | None = None,
    ) -> None:
        self._runner = runner
        self._model = model
        self._max_tokens = max_tokens
        self.fallback = fallback if fallback is not None else OfflinePlanner()
        self.failures: list[str] = []
        #: the last plan was not answered yet (batch mode): later attempts would build on
        #: an attempt that has not run, so the loop stops for this trace
        self.pending = False
        self.last_source = "llm"

    async def plan(
        self,
        trace: Trace,
        verdict: CriticVerdict | Diagnosis,
        attempt: int,
        docs: Sequence[str] = (),
    ) -> str | None:
        self.last_source = "llm"
        request = ChatRequest.of(
            None,
            planner_prompt(trace, verdict, docs),
            model=self._model,
            temperature=0.0 if attempt == 0 else 0.7,
            seed=attempt,
            max_tokens=self._max_tokens,
        )
        outcome = await self._runner.try_complete(request, purpose="correction_plan")
        self.pending = isinstance(outcome, LLMFailure) and outcome.kind == "batch_pending"
        if self.pending:
            return None
        if isinstance(outcome, LLMFailure):
            self.failures.append(outcome.reason)
            return await self._fallback(trace, verdict, attempt, outcome.reason)
        text = outcome.text
        m = _CODE.search(text)
        program = (m.group(1) if m else text).strip()
        if not program:
            return await self._fallback(trace, verdict, attempt, "empty reply")
        return program

    async def _fallback(
        self, trace: Trace, verdict: CriticVerdict | Diagnosis, attempt: int, why: str
    ) -> str | None:
        program = await self.fallback.plan(trace, verdict, attempt)
        if program is not None:
            self.last_source = f"table (LLM planner: {why})"
        return program


# -- the loop --------------------------------------------------------------------------------


def answer_rank(d: Diagnosis) -> int:
    """Gold-answer rank (evaluation only): correct (or a warranted abstention) 3 >
    possible_correct 2 > incorrect 1 > undetermined 0."""
    if d.answer_label is None:
        return 0
    if not d.needs_diagnosis:
        return 3 if d.answer_label is not AnswerLabel.POSSIBLE_CORRECT else 2
    return 2 if d.answer_label is AnswerLabel.POSSIBLE_CORRECT else 1


def critic_rank(v: CriticVerdict) -> int:
    """Critic rank (selection): correct 2 > undetermined 1 > error 0."""
    if v.judgement == "correct":
        return 2
    return 0 if v.judgement == "error" else 1


@dataclass(frozen=True)
class CorrectionOutcome:
    """One trace after the loop. ``verdicts`` are the critics' verdicts of the kept
    answer (the offline critic first); ``gold_before`` and ``diagnosis`` the gold-answer
    judge's diagnoses of the original and of the kept answer (evaluation only)."""

    trace: Trace
    diagnosis: Diagnosis
    touched: bool
    improved: bool
    attempts: tuple[dict[str, Any], ...]
    verdicts: tuple[CriticVerdict, ...] = ()
    gold_before: Diagnosis | None = None

    @property
    def gold_change(self) -> int | None:
        """+1 better, -1 worse, 0 no different by the gold answer; ``None`` when nothing
        was kept, nothing was evaluated, or the gold judge could not decide."""
        if not self.improved or self.gold_before is None:
            return None
        before, after = answer_rank(self.gold_before), answer_rank(self.diagnosis)
        if before == 0 or after == 0:
            return None
        return (after > before) - (after < before)


@dataclass(frozen=True)
class CorrectionSummary:
    """What the loop did, and how the gold answer judges it (``judged`` = 0: nothing
    was evaluated)."""

    traces: int
    flagged: int
    kept: int
    better: int
    worse: int
    same: int
    undecided: int
    correct_before: int
    correct_after: int
    judged: int

    def line(self) -> str:
        head = f"critic flagged {self.flagged} of {self.traces} answer(s); kept {self.kept}"
        if not self.judged:
            return head + " (no gold answers: not evaluated)"
        return (
            f"{head}: {self.better} better by the gold answer, {self.worse} worse, "
            f"{self.same} no different, {self.undecided} undecided; gold-judged correct "
            f"{self.correct_before} → {self.correct_after} of {self.judged}"
        )


def correction_summary(outcomes: Sequence[CorrectionOutcome]) -> CorrectionSummary:
    """Counts of :class:`CorrectionOutcome`; "correct" is :func:`answer_rank` 3."""
    changes = [o.gold_change for o in outcomes if o.improved]
    judged = [
        (o.gold_before, o.diagnosis)
        for o in outcomes
        if o.gold_before is not None and answer_rank(o.gold_before) > 0
    ]
    return CorrectionSummary(
        traces=len(outcomes),
        flagged=sum(1 for o in outcomes if o.touched),
        kept=sum(1 for o in outcomes if o.improved),
        better=changes.count(1),
        worse=changes.count(-1),
        same=changes.count(0),
        undecided=changes.count(None),
        correct_before=sum(1 for b, _ in judged if answer_rank(b) == 3),
        correct_after=sum(1 for _, a in judged if answer_rank(a) == 3),
        judged=len(judged),
    )


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


async def _verdicts(
    trace: Trace, offline: ReferenceFreeCritic, llm: LLMCritic | None
) -> tuple[CriticVerdict, ...]:
    """The critics' verdicts of a trace, never with its gold answer."""
    inp = CriticInput.from_trace(trace, reference=False)
    out = [offline.judge_one(inp)]
    if llm is not None:
        out.append(await llm.judge_one(inp))
    return tuple(out)


def _better(cand: Sequence[CriticVerdict], best: Sequence[CriticVerdict]) -> bool:
    """No critic ranks the candidate lower and one ranks it higher."""
    pairs = [(critic_rank(c), critic_rank(b)) for c, b in zip(cand, best, strict=True)]
    return all(c >= b for c, b in pairs) and any(c > b for c, b in pairs)


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
    critic: ReferenceFreeCritic | None = None,
    llm_critic: LLMCritic | None = None,
    evaluate: bool = True,
) -> list[CorrectionOutcome]:
    """Algorithm 1 with the closed loop, reference-free: the traces a critic judges an
    error are corrected, and a candidate is kept only when no critic ranks it lower and
    one ranks it higher. With ``evaluate`` the gold-answer rules judge diagnoses the
    original (``diagnoses`` when given) and the kept answer afterwards; it never decides
    what is kept."""
    from ragtriage.diagnosis.engine import Diagnoser

    offline = critic if critic is not None else ReferenceFreeCritic()
    judge = Diagnoser("rules", "ragec", config if config is not None else DiagnosisConfig(), None)
    by_id = {d.example_id: d for d in diagnoses}
    loop = asyncio.get_running_loop()
    out: list[CorrectionOutcome] = []
    for trace in traces:
        first = await _verdicts(trace, offline, llm_critic)
        best_trace, best = trace, first
        attempts: list[dict[str, Any]] = []
        flagged = any(v.judgement == "error" for v in first)
        for attempt in range(iterations if flagged else 0):
            if all(critic_rank(v) == 2 for v in best):
                break
            docs = _docs_of(best_trace)
            lead = next((v for v in best if v.judgement == "error"), best[0])
            if isinstance(planner, LLMPlanner):
                program = await planner.plan(best_trace, lead, attempt, docs)
            else:
                program = await planner.plan(best_trace, lead, attempt)
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
            if isinstance(planner, LLMPlanner):
                record["planner"] = planner.last_source
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
            if " ".join(result.split()) == " ".join(best_trace.answer.split()):
                attempts.append({**record, "actions": actions.log, "same_answer": True})
                continue  # the same answer over other passages is no correction
            cand = _candidate(best_trace, result, actions.last_context, actions.made)
            cand_verdicts = await _verdicts(cand, offline, llm_critic)
            better = _better(cand_verdicts, best)
            attempts.append(
                {
                    **record,
                    "actions": actions.log,
                    "critic": [v.judgement for v in cand_verdicts],
                    "kept": better,
                }
            )
            if better:
                best_trace, best = cand, cand_verdicts
        given = by_id.get(trace.example.example_id)
        gold_before: Diagnosis | None = None
        if evaluate:
            gold_before = given if given is not None else (await judge.diagnose_many([trace], 1))[0]
        if best_trace is trace and (given is not None or gold_before is not None):
            diagnosis = given if given is not None else gold_before
        else:
            diagnosis = (await judge.diagnose_many([best_trace], 1))[0]
        assert diagnosis is not None
        out.append(
            CorrectionOutcome(
                trace=best_trace,
                diagnosis=diagnosis,
                touched=flagged,
                improved=best_trace is not trace,
                attempts=tuple(attempts),
                verdicts=best,
                gold_before=gold_before,
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
            "selection": "reference-free critic",
            "touched": sum(1 for o in outcomes if o.touched),
            "improved": sum(1 for o in outcomes if o.improved),
            "gold_evaluation": dataclasses.asdict(correction_summary(outcomes)),
        },
    }
    traces: list[Trace] = []
    diagnoses: list[Diagnosis] = []
    for o in outcomes:
        meta = dict(o.trace.metadata)
        if o.touched:
            meta["correction"] = {
                "kept": o.improved,
                "attempts": list(o.attempts),
                "critic": [v.model_dump(mode="json") for v in o.verdicts],
                "gold_change": o.gold_change,
            }
        traces.append(o.trace.model_copy(update={"run_id": new_id, "metadata": meta}))
        diagnoses.append(o.diagnosis.model_copy(update={"run_id": new_id}))
    return new_manifest, traces, diagnoses
