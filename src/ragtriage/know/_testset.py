"""Balanced synthetic test sets (seed 001 §6): drafts from a generator (offline
templates, the App. E simple prompt, the App. G statement pipeline or a fine-tuned
seq2seq model), the eight App. I critiques with thresholds, near-duplicate removal and
per-label quotas from ``--mix``; the kept drafts become a valid ``examples.jsonl``
whose references locate in their source chunks.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from rapidfuzz import fuzz

from ragtriage.config import ChunkingConfig
from ragtriage.know._critique import (
    DEFAULT_THRESHOLDS,
    CritiqueInput,
    RulesCritic,
    failed_critiques,
)
from ragtriage.know._offline_gen import Draft
from ragtriage.know._taxonomy import LABELS
from ragtriage.records import Chunk, Document, Example

__all__ = [
    "DEFAULT_MIX",
    "TESTSET_CHUNKING",
    "Critic",
    "DraftGenerator",
    "TestsetResult",
    "corpus_chunks",
    "generate_testset",
    "quotas",
]

DEFAULT_MIX: Mapping[str, float] = {
    "fact_single": 0.4,
    "summary": 0.25,
    "reasoning": 0.25,
    "unanswerable": 0.1,
}
#: sections of Markdown documents make natural contexts for statements and summaries
TESTSET_CHUNKING = ChunkingConfig(strategy="structure", size=160)


class DraftGenerator(Protocol):
    name: str

    async def draft_list(self, chunk: Chunk, label: str) -> list[Draft]: ...


class Critic(Protocol):
    name: str

    async def critique_many(
        self, items: Sequence[CritiqueInput]
    ) -> list[dict[str, float | None]]: ...


@dataclass
class TestsetResult:
    examples: list[Example]
    rejected: list[dict[str, object]]
    quotas: dict[str, int]
    drafted: int = 0
    notes: list[str] = field(default_factory=list)


def quotas(limit: int, mix: Mapping[str, float]) -> dict[str, int]:
    """``limit`` split by ``mix`` (largest remainder, ties in taxonomy order)."""
    total = sum(mix.values())
    raw = {lab: limit * mix.get(lab, 0.0) / total for lab in LABELS}
    seats = {lab: int(v) for lab, v in raw.items()}
    left = limit - sum(seats.values())
    for lab in sorted(LABELS, key=lambda lab: (-(raw[lab] - seats[lab]), LABELS.index(lab)))[:left]:
        seats[lab] += 1
    return {lab: n for lab, n in seats.items() if n > 0}


def corpus_chunks(
    documents: Sequence[Document], cfg: ChunkingConfig = TESTSET_CHUNKING
) -> list[Chunk]:
    from ragtriage.chunking import make_chunker

    chunker = make_chunker(cfg)
    return [c for d in documents for c in chunker.chunk(d)]


def _is_duplicate(question: str, kept: Sequence[str], threshold: float) -> str | None:
    for other in kept:
        if fuzz.token_set_ratio(question, other) >= threshold:
            return other
    return None


async def generate_testset(
    documents: Sequence[Document],
    generator: DraftGenerator,
    critic: Critic,
    *,
    mix: Mapping[str, float] = DEFAULT_MIX,
    limit: int = 40,
    thresholds: Mapping[str, float] = DEFAULT_THRESHOLDS,
    dedup_threshold: float = 90.0,
    seed: int = 0,
    chunks: Sequence[Chunk] | None = None,
    max_chunks_per_example: int = 20,
    passes: int = 3,
    keep_mix: bool = True,
    on_progress: Callable[[int, int], None] | None = None,
) -> TestsetResult:
    """Draft, critique, de-duplicate and select ``limit`` examples in ``mix``.

    Each chunk gives one draft per label and pass (a random one of its statements, seed
    001 §6 step 3); a small corpus gets up to ``passes`` passes. When a label cannot
    fill its quota and ``keep_mix`` is set, the other labels are trimmed so that the
    kept set still has the requested proportions (fewer questions, same balance)."""
    chunk_list = list(chunks) if chunks is not None else corpus_chunks(documents)
    want = quotas(limit, mix)
    rng = random.Random(seed)
    order = list(chunk_list)
    rng.shuffle(order)
    kept: dict[str, list[tuple[Draft, dict[str, float | None]]]] = {lab: [] for lab in want}
    questions: list[str] = []
    rejected: list[dict[str, object]] = []
    drafted = 0
    done = 0
    batch = 8
    visits = [(chunk, p) for p in range(passes) for chunk in order]
    for label, quota in want.items():
        cursor = 0
        # unanswerable questions are about entities: one per document and pass
        used_docs: set[tuple[str, int]] = set()
        # a generator that keeps failing on this corpus is not asked about every chunk
        budget = min(len(visits), max_chunks_per_example * quota + batch)
        found_of: dict[str, list[Draft]] = {}
        while len(kept[label]) < quota and cursor < budget:
            pending: list[Draft] = []
            while len(pending) < batch and cursor < budget:
                chunk, pass_no = visits[cursor]
                cursor += 1
                if label == "unanswerable" and (chunk.doc_id, pass_no) in used_docs:
                    continue
                if chunk.chunk_id not in found_of:
                    drafts = list(await generator.draft_list(chunk, label))
                    rng.shuffle(drafts)  # seed 001: a random statement
                    found_of[chunk.chunk_id] = drafts
                found = found_of[chunk.chunk_id]
                if pass_no < len(found):
                    pending.append(found[pass_no])
                    used_docs.add((chunk.doc_id, pass_no))
            drafted += len(pending)
            scores = await critic.critique_many(
                [
                    CritiqueInput(
                        d.context, d.question, d.answer, answerable=d.label != "unanswerable"
                    )
                    for d in pending
                ]
            )
            for draft, score in zip(pending, scores, strict=True):
                failed = failed_critiques(score, thresholds, draft.label != "unanswerable")
                if draft.label != "unanswerable" and not draft.references:
                    failed.append("no verbatim evidence for the answer in the chunk")
                dup = None if failed else _is_duplicate(draft.question, questions, dedup_threshold)
                if failed or dup is not None or len(kept[label]) >= quota:
                    reason = (
                        "critiques: " + "; ".join(failed)
                        if failed
                        else f"near-duplicate of {dup!r}"
                        if dup is not None
                        else "quota full"
                    )
                    rejected.append(_rejected_row(draft, score, reason))
                    continue
                kept[label].append((draft, score))
                questions.append(draft.question)
                done += 1
                if on_progress is not None:
                    on_progress(done, limit)
    notes = [
        f"{lab}: {len(kept[lab])} of {n} kept (the corpus gave no more that passed the critiques)"
        for lab, n in want.items()
        if len(kept[lab]) < n
    ]
    if keep_mix and notes:
        scale = min(len(kept[lab]) / n for lab, n in want.items())
        trimmed = quotas(max(1, round(limit * scale)), mix) if scale > 0 else {}
        for lab in want:
            keep_n = min(len(kept[lab]), trimmed.get(lab, 0))
            for draft, score in kept[lab][keep_n:]:
                rejected.append(_rejected_row(draft, score, "trimmed to keep the requested mix"))
            kept[lab] = kept[lab][:keep_n]
        notes.append(
            f"kept {sum(len(v) for v in kept.values())} of {limit} so that the labels keep the "
            "requested proportions (keep_mix)"
        )
    examples = [
        _example(i, draft, score)
        for i, (draft, score) in enumerate((pair for lab in want for pair in kept[lab]), start=1)
    ]
    return TestsetResult(examples, rejected, want, drafted, notes)


def _rejected_row(
    draft: Draft, scores: Mapping[str, float | None], reason: str
) -> dict[str, object]:
    return {
        "question": draft.question,
        "answer": draft.answer,
        "intended_label": draft.label,
        "doc_id": draft.doc_id,
        "source_chunk_ids": list(draft.chunk_ids),
        "generator": draft.generator,
        "critiques": {k: ("undetermined" if v is None else v) for k, v in scores.items()},
        "rejected": reason,
    }


def _example(index: int, draft: Draft, scores: Mapping[str, float | None]) -> Example:
    metadata: dict[str, object] = {
        "intended_label": draft.label,
        "generator": draft.generator,
        "source_chunk_ids": list(draft.chunk_ids),
        "critiques": {k: ("undetermined" if v is None else v) for k, v in scores.items()},
        **draft.extra,
    }
    if draft.generator == "offline-template":
        metadata["quality"] = "offline template (lower quality than the LLM pipeline)"
    return Example.model_validate(
        {
            "example_id": f"gen-{index:04d}",
            "query": draft.question,
            "answer": draft.answer,
            "answerable": draft.label != "unanswerable",
            "doc_ids": list(dict.fromkeys((draft.doc_id, *draft.other_doc_ids))),
            "references": list(draft.references),
            "label": draft.label,
            "language": draft.language,
            "metadata": metadata,
        }
    )


def rules_critic(documents: Sequence[Document]) -> RulesCritic:
    from ragtriage.know._offline_gen import corpus_entities

    return RulesCritic([d.text for d in documents], corpus_entities(documents))
