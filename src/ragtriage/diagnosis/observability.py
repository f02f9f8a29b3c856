"""Stages a trace cannot show, and the honest stage call for *minimal* traces.

An imported trace (``ragtriage import``) may not record everything the RAGEC cascade
reads. ``trace.metadata["observable_stages"]`` lists the stages it does record (absent:
all four) and ``trace.metadata["not_observable"]`` says why each other one is missing:

* **chunking** not observable: the chunks of the gold documents are unknown (no
  documents were given). Ground-truth chunks cannot be followed through the pipeline,
  so :func:`stage_from_passages` decides between **generation** (the gold answer's facts
  -- or its gold evidence -- are in the passages given to the generator) and
  **retrieval** (they are not); **reranking** when the facts were in the retriever's
  list but not in the passages given to the generator (only when that list is recorded).
  Chunking is never blamed: it is reported as not observable in the evidence.
* **reranking** not observable: only the passages given to the generator are recorded,
  so a gold passage the retriever found and a reranker dropped looks like a retrieval
  miss. The cascade runs as usual and the evidence says so.

"Facts" are compared offline, each by the cascade's "more than half" (B.2.2): more
than half of the gold evidence strings located in the passages
(:func:`ragtriage.groundtruth.locate_reference`); without evidence strings, more than
half of the gold answer's (and keypoints') content words and more than half of its
numbers and dates (compared by value) found in them (:mod:`ragtriage.diagnosis.facts`;
a number the answer derives, such as a difference, is not in any passage, hence a
majority rather than all). Works for English and Chinese text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ragtriage.diagnosis.facts import (
    QuantityPool,
    content_support,
    dates_match,
    extract_dates,
    extract_quantities,
)
from ragtriage.diagnosis.stage import StageCall
from ragtriage.groundtruth import locate_reference
from ragtriage.records import Stage, Trace

__all__ = [
    "CHUNK_ROLE_KEY",
    "FACTS_FOUND_SHARE",
    "INFERRED_CHUNK",
    "FactsFound",
    "facts_in",
    "inferred_chunks_note",
    "is_minimal",
    "not_observable",
    "observable_stages",
    "stage_from_passages",
]

#: chunk metadata key saying what an imported chunk is: a passage the source recorded
#: (``"retrieved"``) or a piece of document text around them (:data:`INFERRED_CHUNK`),
#: whose boundaries are a guess at the pipeline's chunking
CHUNK_ROLE_KEY = "import_role"
INFERRED_CHUNK = "inferred"
#: more than this share of the gold answer's content units must be in the passages
#: ("more than half", as the cascade's generator_gt_share for GT chunks, B.2.2)
FACTS_FOUND_SHARE = 0.5
#: more than this share of the gold answer's numbers and dates must be in the passages
_VALUES_SHARE = 0.5
#: more than this share of the gold evidence strings must be located in the passages
#: (the cascade's ``generator_gt_share`` for GT chunks, B.2.2)
_EVIDENCE_SHARE = 0.5


def observable_stages(trace: Trace) -> frozenset[Stage]:
    """Stages the trace records (all four unless its metadata says otherwise)."""
    raw = trace.metadata.get("observable_stages")
    if not isinstance(raw, list):
        return frozenset(Stage)
    seen = frozenset(Stage(s) for s in raw if isinstance(s, str) and s in Stage._value2member_map_)
    if Stage.CHUNKING not in seen and _no_passages(trace):
        # an imported row that records no passage at all: what the retriever found (and
        # the reranker kept) cannot be told from a retrieval that found nothing
        seen -= {Stage.RETRIEVAL, Stage.RERANKING}
    return seen


def _no_passages(trace: Trace) -> bool:
    return not trace.context and not trace.retrieved and not trace.reranked


def not_observable(trace: Trace, stage: Stage) -> str:
    """Why ``stage`` is not observable in this trace, in words."""
    why = trace.metadata.get("not_observable")
    reason = why.get(stage.value) if isinstance(why, dict) else None
    if not (isinstance(reason, str) and reason) and _no_passages(trace):
        reason = "the source records no passages, neither retrieved nor given to the generator"
    text = reason if isinstance(reason, str) and reason else "the trace does not record it"
    return f"{stage.value}: not observable ({text})"


def is_minimal(trace: Trace) -> bool:
    """A trace without the chunks of its gold documents (chunking not observable)."""
    return Stage.CHUNKING not in observable_stages(trace)


def inferred_chunks_note(trace: Trace, gt_ids: Sequence[str]) -> str | None:
    """A caveat for a chunking verdict resting on imported chunks whose boundaries were
    inferred (no recorded passage came from that text); ``None`` otherwise."""
    cm = trace.chunk_map()
    inferred = [
        g for g in gt_ids if g in cm and cm[g].metadata.get(CHUNK_ROLE_KEY) == INFERRED_CHUNK
    ]
    if not inferred:
        return None
    return (
        f"chunking: {len(inferred)}/{len(gt_ids)} ground-truth chunk(s) are document text no "
        "recorded passage came from; their boundaries were inferred at import, not seen"
    )


@dataclass(frozen=True, slots=True)
class FactsFound:
    """Whether the gold facts are in some passages; ``found is None`` when the gold
    answer has nothing to look for (no evidence, content words, numbers or dates)."""

    found: bool | None
    note: str


def facts_in(trace: Trace, passages: Sequence[str]) -> FactsFound:
    """Are the gold answer's facts in ``passages``? See the module docstring."""
    ex = trace.example
    joined = "\n".join(passages)
    refs = [r for r in ex.references if r.strip()]
    if refs:
        located = sum(1 for r in refs if locate_reference(joined, r) is not None)
        share = located / len(refs)
        return FactsFound(
            share > _EVIDENCE_SHARE,
            f"{located}/{len(refs)} gold evidence passage(s) found in them",
        )
    target = " ".join([ex.answer, *ex.keypoints])
    support = content_support(target, passages)
    numbers = extract_quantities(target)
    pool = QuantityPool(extract_quantities(joined)) if numbers else None
    missing_numbers = [q.raw for q in numbers if pool is not None and not pool.matches(q)]
    dates = extract_dates(target)
    source_dates = extract_dates(joined) if dates else []
    missing_dates = [d.raw for d in dates if not any(dates_match(d, s) for s in source_dates)]
    checks = support.total + len(numbers) + len(dates)
    if checks == 0:
        return FactsFound(None, "the gold answer has no words, numbers or dates to look for")
    words_ok = support.total == 0 or 1 - support.unsupported_share > FACTS_FOUND_SHARE
    values = len(numbers) + len(dates)
    values_found = values - len(missing_numbers) - len(missing_dates)
    values_ok = values == 0 or values_found / values > _VALUES_SHARE
    found = words_ok and values_ok
    parts = []
    if support.total:
        parts.append(
            f"{support.total - support.unsupported}/{support.total} content words of the "
            "gold answer"
        )
    if numbers:
        parts.append(f"{len(numbers) - len(missing_numbers)}/{len(numbers)} numbers")
    if dates:
        parts.append(f"{len(dates) - len(missing_dates)}/{len(dates)} dates")
    missing = [*missing_numbers, *missing_dates, *support.examples][:4]
    note = "; ".join(parts) + " found in them"
    if missing:
        note += f" (missing: {', '.join(missing)})"
    return FactsFound(found, note)


def stage_from_passages(trace: Trace) -> tuple[StageCall, list[str]]:
    """Stage of a minimal trace from the passages alone, with its evidence lines."""
    cm = trace.chunk_map()
    context = [cm[c].text for c in trace.context if c in cm]
    evidence: list[str] = []
    if not trace.example.answerable:
        return (
            StageCall(
                Stage.GENERATION, "unanswerable question: the generator should have declined"
            ),
            evidence,
        )
    in_context = facts_in(trace, context)
    evidence.append(f"passages given to the generator: {in_context.note}")
    if in_context.found is None:
        return (
            StageCall(
                None,
                f"stage_attribution: minimal trace and {in_context.note}, so generation "
                "and retrieval cannot be told apart",
            ),
            evidence,
        )
    if in_context.found:
        return (
            StageCall(
                Stage.GENERATION,
                f"the gold answer's facts were in the passages given to the generator "
                f"({in_context.note})",
            ),
            evidence,
        )
    if Stage.RERANKING in observable_stages(trace):
        given = set(trace.context)
        dropped = [
            cm[h.chunk_id].text
            for h in trace.retrieved
            if h.chunk_id not in given and h.chunk_id in cm
        ]
        if dropped:
            in_dropped = facts_in(trace, [*context, *dropped])
            evidence.append(f"with the retrieved passages not forwarded: {in_dropped.note}")
            if in_dropped.found:
                return (
                    StageCall(
                        Stage.RERANKING,
                        "the gold answer's facts were in retrieved passages that were not "
                        f"forwarded to the generator ({in_dropped.note})",
                    ),
                    evidence,
                )
    return (
        StageCall(
            Stage.RETRIEVAL,
            f"the gold answer's facts were not in the passages given to the generator "
            f"({in_context.note})",
        ),
        evidence,
    )
