"""Trace builders for the diagnosis-engine tests (answer eval, stage, engine, CLI)."""

from __future__ import annotations

from collections.abc import Sequence

from ragtriage.records import Chunk, Example, Hit, Trace


def doc_chunks(doc_id: str, texts: Sequence[str]) -> list[Chunk]:
    """Consecutive chunks of one document (joined by one space), ids ``{doc_id}_{i}``."""
    out: list[Chunk] = []
    pos = 0
    for i, t in enumerate(texts):
        out.append(
            Chunk(
                chunk_id=f"{doc_id}_{i}",
                doc_id=doc_id,
                text=t,
                start=pos,
                end=pos + len(t),
                index=i,
            )
        )
        pos += len(t) + 1
    return out


def hits(ids: Sequence[str], doc_of: dict[str, str]) -> list[Hit]:
    return [
        Hit(chunk_id=c, doc_id=doc_of[c], score=1.0 - i / 100, rank=i + 1)
        for i, c in enumerate(ids)
    ]


def make_trace(
    *,
    example_id: str = "q1",
    query: str = "When was Acme Corp founded?",
    gt_answer: str = "Acme Corp was founded in 1999.",
    answer: str = "Acme Corp was founded in 2005.",
    gt_texts: Sequence[str] = (
        "Acme Corp was founded in 1999 in Springfield.",
        "It sells widgets and gadgets to retailers.",
        "Its chief executive is Ann Lee.",
    ),
    other_texts: Sequence[str] = (
        "Globex Inc was founded in 2005 in Shelbyville.",
        "Initech makes software for banks.",
    ),
    retrieved: Sequence[str] | None = None,
    reranked: Sequence[str] | None = None,
    context: Sequence[str] | None = None,
    references: Sequence[str] = (),
    gt_chunk_ids: Sequence[str] = (),
    keypoints: Sequence[str] = (),
    answerable: bool = True,
    label: str | None = "fact_single",
    language: str | None = None,
    run_id: str | None = "run1",
) -> Trace:
    """A trace over a GT document ``gd`` (chunks ``gd_0..``) and distractors ``od_0..``.

    Defaults: retrieved = od_0, od_1, gd_1; reranked = od_0, gd_1; context = od_0
    (so the GT chunk gd_0, when it is the GT, was never retrieved).
    """
    gt = doc_chunks("gd", gt_texts)
    others = doc_chunks("od", other_texts)
    doc_of = {c.chunk_id: c.doc_id for c in [*gt, *others]}
    r = list(retrieved) if retrieved is not None else ["od_0", "od_1", "gd_1"]
    rr = list(reranked) if reranked is not None else ["od_0", "gd_1"]
    ctx = list(context) if context is not None else ["od_0"]
    example = Example(
        example_id=example_id,
        query=query,
        answer=gt_answer,
        answerable=answerable,
        doc_ids=["gd"],
        references=list(references),
        keypoints=list(keypoints),
        gt_chunk_ids=list(gt_chunk_ids),
        label=label,
        language=language,
    )
    return Trace(
        trace_id=f"t-{example_id}",
        run_id=run_id,
        example=example,
        gt_doc_chunks=gt,
        chunks=others,
        retrieved=hits(r, doc_of),
        reranked=hits(rr, doc_of),
        context=ctx,
        answer=answer,
    )


def judge_reply(
    *,
    label: str = "incorrect",
    correct_if: str | None = None,
    chunks: str = "C1",
    concepts: Sequence[str] = ("Acme Corp", "founded"),
    containment: str = "K1: C1\nK2: C1",
    type_votes: Sequence[str] = ("Misinterpretation",) * 7 + ("Fabricated Content",) * 3,
    retrieval_votes: Sequence[str] = ("Missed Retrieval",) * 8 + ("Low Relevance",) * 2,
    chunking_votes: Sequence[str] = ("Context Mismatch",) * 10,
    reranking_votes: Sequence[str] = ("Low Recall",) * 10,
    single_step_votes: Sequence[str] = ("Missed Retrieval",) * 6 + ("Misinterpretation",) * 4,
    stage_checks: dict[str, Sequence[str]] | None = None,
) -> object:
    """A consistent scripted judge: a ``(request, sample_index) -> reply`` function that
    answers each RAGEC prompt by recognising it (for ScriptedLLM)."""
    checks = stage_checks or {}

    def reply(request: object, sample: int) -> str:
        # the sample's position among the K votes: n sampling gives sample indices
        # 0..K-1 on one request, one-request-per-vote gives seeds 0..K-1
        i = sample + (request.seed or 0)  # type: ignore[attr-defined]
        msgs = request.messages  # type: ignore[attr-defined]
        user = msgs[-1].content
        system = msgs[0].content if len(msgs) > 1 else ""
        if "<proposed_answer>" in user:
            proposed = user.split("<proposed_answer>")[1].split("</proposed_answer>")[0]
            verdict = "correct" if correct_if is not None and correct_if in proposed else label
            return f'{{"label": "{verdict}", "reasoning": "scripted"}}'
        if "Relevant Chunks" in system:
            return f"Relevant Chunks: [{chunks}]"
        if user.rstrip().endswith("Concept List:"):
            return "\n".join(concepts)
        if user.startswith("Concepts:"):
            return containment
        if "**Concept**:" in user:
            return "\n".join(f"[C{j}] True" for j in range(1, 30) if f"[C{j}]" in user)
        if "Look only at the" in system:
            for stage, votes in checks.items():
                if f"Look only at the {stage} step" in system:
                    return votes[i % len(votes)]
            return "No Error"
        if "Overchunking" in system and "Numerical Error" in system:
            return single_step_votes[i % len(single_step_votes)]
        if "Overchunking" in system:
            return chunking_votes[i % len(chunking_votes)]
        if "Missed Retrieval" in system:
            return retrieval_votes[i % len(retrieval_votes)]
        if "Low Recall" in system:
            return reranking_votes[i % len(reranking_votes)]
        if "Misinterpretation" in system:
            return type_votes[i % len(type_votes)]
        return "unrecognised prompt"

    return reply


def server_reply(script: object) -> object:
    """Adapt a ScriptedLLM-style ``(request, sample) -> str`` judge to the local HTTP
    server's ``(body, choice_index) -> str`` reply hook."""
    from ragtriage.llm import ChatRequest, Message

    def reply(body: dict[str, object], index: int) -> str:
        messages = tuple(
            Message(role=m["role"], content=m["content"])  # type: ignore[index]
            for m in body["messages"]  # type: ignore[attr-defined]
        )
        seed = body.get("seed")
        request = ChatRequest(messages=messages, seed=seed if isinstance(seed, int) else None)
        return script(request, index)  # type: ignore[operator,no-any-return]

    return reply
