"""LLM judge for the evaluation metrics, cost first (seed 003: RAGAS metrics, batched).

Two requests per trace instead of RAGAS's nine chat + two embedding calls:

* ``answer`` — claims extracted from the answer *and* each verified against the context,
  plus one reverse-generated question and a non-committal flag, in one structured reply
  (faithfulness and answer relevancy share it);
* ``context`` — a relevance verdict for every context chunk (context precision) and an
  attribution verdict for every ground-truth sentence (context recall), in one reply.

Requests carry a JSON schema (sent as ``response_format`` where the endpoint accepts it;
the client falls back to an instruction in the prompt when it answers 400), temperature 0,
and go through :class:`~ragtriage.llm.LLMRunner` (cache by content hash, concurrency
limit, dry-run estimate). A reply that cannot be parsed leaves that part undetermined.
Prompts adapted from the RAGAS descriptions in seed 003.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Final

from ragtriage.metrics._context import context_texts, reference_sentences
from ragtriage.metrics._judgements import ClaimVerdict, TraceJudgements
from ragtriage.records import Trace

if TYPE_CHECKING:  # the LLM layer (openai, aiohttp) is imported when a call is made
    from ragtriage.llm import ChatRequest, Completion, LLMFailure, LLMRunner

__all__ = ["ANSWER_SCHEMA", "CONTEXT_SCHEMA", "LLMTraceJudge", "llm_judge_name"]

_VERDICTS: Final = ("supported", "not_supported", "contradicted")

ANSWER_SCHEMA: Final[dict[str, Any]] = {
    "title": "answer_judgement",
    "type": "object",
    "properties": {
        "claims": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "claim": {"type": "string"},
                    "verdict": {"type": "string", "enum": list(_VERDICTS)},
                },
                "required": ["claim", "verdict"],
            },
        },
        "question": {"type": "string"},
        "noncommittal": {"type": "boolean"},
    },
    "required": ["claims", "question", "noncommittal"],
}

CONTEXT_SCHEMA: Final[dict[str, Any]] = {
    "title": "context_judgement",
    "type": "object",
    "properties": {
        "chunks": {"type": "array", "items": {"type": "boolean"}},
        "reference": {"type": "array", "items": {"type": "boolean"}},
    },
    "required": ["chunks", "reference"],
}

_ANSWER_SYSTEM: Final = (
    "You evaluate an answer of a retrieval-augmented system. Split the answer into short "
    "standalone factual claims, and judge each claim against the context only: supported "
    "(the context states it), contradicted (the context states otherwise) or not_supported. "
    "Also write the one question the answer answers, in the answer's language, and say "
    "whether the answer is non-committal (evasive, 'I don't know'). Reply with JSON only."
)
_CONTEXT_SYSTEM: Final = (
    "You judge retrieved context chunks. For each numbered chunk say whether it is useful "
    "to arrive at the reference answer of the question (true/false). For each numbered "
    "reference sentence say whether the context supports it (true/false). Reply with JSON "
    'only: {"chunks": [...], "reference": [...]} with one boolean per item, in order.'
)


def llm_judge_name(runner: LLMRunner) -> str:
    """``llm:MODEL`` — the judge named in every score an LLM produced."""
    model = getattr(runner.client, "model_name", "")
    return f"llm:{model}" if isinstance(model, str) and model else "llm"


def _numbered(items: list[str]) -> str:
    return "\n".join(f"[{i}] {t}" for i, t in enumerate(items, start=1)) or "(none)"


class LLMTraceJudge:
    """LLM implementation of :class:`~ragtriage.metrics.TraceJudge` (two calls a trace)."""

    #: waits on an endpoint: ``evaluate_answers`` embeds meanwhile
    io_bound = True

    def __init__(self, runner: LLMRunner, *, max_tokens: int = 768) -> None:
        self.runner = runner
        self.max_tokens = max_tokens
        self.name = llm_judge_name(runner)

    def requests(self, trace: Trace) -> tuple[ChatRequest | None, ChatRequest | None]:
        return self.answer_request(trace), self.context_request(trace)

    def answer_request(self, trace: Trace) -> ChatRequest | None:
        """Claims, verdicts, reverse question and non-committal flag (``None``: no answer)."""
        from ragtriage.llm import ChatRequest

        answer = trace.answer.strip()
        if not answer:
            return None
        ctx = context_texts(trace)
        return ChatRequest.of(
            _ANSWER_SYSTEM,
            f"Question: {trace.example.query}\n\nContext:\n{_numbered(ctx)}\n\nAnswer: {answer}",
            json_schema=ANSWER_SCHEMA,
            max_tokens=self.max_tokens,
        )

    def context_request(self, trace: Trace) -> ChatRequest | None:
        """Chunk relevance and reference attribution (``None``: no context)."""
        from ragtriage.llm import ChatRequest

        ctx = context_texts(trace)
        if not ctx:
            return None
        ref = reference_sentences(trace)
        return ChatRequest.of(
            _CONTEXT_SYSTEM,
            f"Question: {trace.example.query}\n\nReference answer sentences:\n{_numbered(ref)}"
            f"\n\nChunks:\n{_numbered(ctx)}",
            json_schema=CONTEXT_SCHEMA,
            max_tokens=self.max_tokens,
        )

    async def ajudge_many(self, traces: list[Trace]) -> list[TraceJudgements]:
        async def one(trace: Trace, which: int) -> Completion | LLMFailure | None:
            # built in the task: the first request is sent before the last is built
            r = self.answer_request(trace) if which == 0 else self.context_request(trace)
            purpose = ("metrics_answer", "metrics_context")[which]
            return None if r is None else await self.runner.try_complete(r, purpose=purpose)

        # every request of every trace in flight at once (the runner bounds concurrency)
        outs = await asyncio.gather(*(one(t, 0) for t in traces), *(one(t, 1) for t in traces))
        answers, contexts = outs[: len(traces)], outs[len(traces) :]
        return [
            self._judgements(t, a, c) for t, a, c in zip(traces, answers, contexts, strict=True)
        ]

    def judge_many(self, traces: list[Trace]) -> list[TraceJudgements]:
        from ragtriage.llm import run_sync

        return run_sync(self.ajudge_many(traces))

    def _judgements(
        self, trace: Trace, a: Completion | LLMFailure | None, c: Completion | LLMFailure | None
    ) -> TraceJudgements:
        fields: dict[str, Any] = {"judge": self.name}
        fields.update(_answer_fields(a))
        fields.update(
            _context_fields(c, len(context_texts(trace)), len(reference_sentences(trace)))
        )
        return TraceJudgements(**fields)


def _reply(out: Completion | LLMFailure | None, empty: str) -> tuple[dict[str, Any] | None, str]:
    from ragtriage.llm import LLMFailure, parse_json_object

    if out is None:
        return None, empty
    if isinstance(out, LLMFailure):
        return None, f"LLM call failed: {out.reason}"
    data = parse_json_object(out.text)
    if data is None:
        return None, "unparseable LLM reply"
    return data, ""


def _answer_fields(out: Completion | LLMFailure | None) -> dict[str, Any]:
    data, why = _reply(out, "empty answer")
    bad = {"claims_reason": why, "questions_reason": why}
    if data is None:
        return bad
    raw = data.get("claims")
    claims: list[ClaimVerdict] | None = None
    if isinstance(raw, list):
        claims = []
        for item in raw:
            if not isinstance(item, dict):
                claims = None
                break
            claim, verdict = item.get("claim"), str(item.get("verdict", "")).strip().lower()
            verdict = verdict.replace(" ", "_").replace("-", "_")
            if not isinstance(claim, str) or verdict not in _VERDICTS:
                claims = None
                break
            claims.append(ClaimVerdict(claim=claim, verdict=verdict))  # type: ignore[arg-type]
    out_fields: dict[str, Any] = {}
    if claims is None:
        out_fields["claims_reason"] = "LLM reply without valid claims/verdicts"
    else:
        out_fields["claims"] = tuple(claims)
    question, nc = data.get("question"), data.get("noncommittal")
    if isinstance(question, str) and isinstance(nc, bool):
        out_fields["questions"] = (question,)
        out_fields["noncommittal"] = nc
    else:
        out_fields["questions_reason"] = "LLM reply without question/noncommittal"
    return out_fields


def _bools(value: object, n: int) -> tuple[bool, ...] | None:
    if isinstance(value, list) and len(value) == n and all(isinstance(v, bool) for v in value):
        return tuple(value)
    return None


def _context_fields(
    out: Completion | LLMFailure | None, n_chunks: int, n_ref: int
) -> dict[str, Any]:
    data, why = _reply(out, "no context chunks")
    if data is None:
        return {"chunks_reason": why, "gt_reason": why}
    fields: dict[str, Any] = {}
    chunks = _bools(data.get("chunks"), n_chunks)
    if chunks is None:
        fields["chunks_reason"] = f"LLM reply without {n_chunks} chunk verdicts"
    else:
        fields["chunk_relevant"] = chunks
    if n_ref == 0:
        fields["gt_reason"] = "no ground-truth answer"
    else:
        ref = _bools(data.get("reference"), n_ref)
        if ref is None:
            fields["gt_reason"] = f"LLM reply without {n_ref} reference verdicts"
        else:
            fields["gt_attributed"] = ref
    return fields
