"""What an answer declines, and whether the generator was ever shown it (issue #9).

A partial abstention ("… for the charity's treasurer the context does not state how much
she took") is a generation failure only if the evidence for the declined part was in the
generator's context. When every chunk that holds a missing fact of the ground truth stayed
outside the context -- retrieved and then dropped, or never retrieved -- the generator
declined what it never saw: the failure is upstream, however many *other* ground-truth
chunks reached it (the paper's share test, B.2.2, counts chunks, not the facts the answer
lacks). This is the question-part extension (``stage_from_parts``) for parts that carry no
name: events of a timeline, a described company ("the Norwegian shipping group"), one
figure of several.

| step | rule |
|---|---|
| when | the answer evaluation's rule is ``partial_abstention``, or a wrong value in a ground-truth fact's place (``value_conflict``, ``impossible_date``, ``entity_value``, ``slot_conflict``, ``keypoint_replaced``), and more than ``generator_gt_share`` of the GT chunks reached the generator (below it the cascade already looks upstream) |
| missing facts | the ground truth's keypoints the answer does not state, else its statements it does not make |
| holders | the GT-document chunks that hold a missing fact (all its numbers, half its words) |
| decision | a missing fact held in the context: generation (``None``); else reranking when a holder was retrieved, retrieval when none was; facts no chunk holds are skipped |
"""

from __future__ import annotations

from ragtriage.config import DiagnosisConfig
from ragtriage.diagnosis.answer_eval import gt_coverage, missing_facts, states_keypoint
from ragtriage.diagnosis.rules import UNSEEN_FACT
from ragtriage.diagnosis.stage import GTFlow, StageCall
from ragtriage.records import Stage, Trace

__all__ = ["stage_from_declined"]


#: answer-evaluation rules for an answer that lacks a ground-truth fact: it declines it
#: (partial abstention) or puts another value in its place -- either way, a generator that
#: never saw the fact's evidence could not have stated it (``AnswerRule.unseen_fact``, see
#: diagnosis/rules.py)
_UNSEEN_RULES = UNSEEN_FACT


def _holds(fact: str, text: str, *, keypoint: bool) -> bool:
    if keypoint:
        return states_keypoint(fact, text)
    return all(gt_coverage(fact, text).covered)


def stage_from_declined(
    trace: Trace, flow: GTFlow, config: DiagnosisConfig, answer_rule: str | None
) -> StageCall | None:
    """Reranking or retrieval when the facts a partially abstaining answer leaves out
    were held only by chunks that never reached the generator; ``None`` otherwise (see
    the module table)."""
    if answer_rule not in _UNSEEN_RULES or not config.entity_extension or not flow.gt_ids:
        return None
    if len(flow.in_context) / len(flow.gt_ids) <= config.generator_gt_share:
        return None
    ex = trace.example
    missing = missing_facts(ex, trace.answer)
    if not missing:
        return None
    keypoint = bool(ex.keypoints)
    context = set(trace.context)
    rank = {h.chunk_id: h.rank for h in trace.retrieved}
    outside: list[tuple[str, str]] = []
    for fact in missing:
        holders = [
            c.chunk_id for c in trace.gt_doc_chunks if _holds(fact, c.text, keypoint=keypoint)
        ]
        if not holders:
            continue  # not located: says nothing about where it went
        if any(h in context for h in holders):
            return None  # the generator had it and declined or dropped it
        outside.append((fact, holders[0]))
    if not outside:
        return None
    fact, chunk = outside[0]
    dropped = [(f, c) for f, c in outside if c in rank]
    if dropped:
        fact, chunk = dropped[0]
        return StageCall(
            Stage.RERANKING,
            f"the answer lacks {fact!r}: its evidence {chunk} was retrieved (rank {rank[chunk]}) "
            f"but not forwarded to the generator ({len(flow.in_context)}/{len(flow.gt_ids)} "
            "ground-truth chunks reached it, none holding that fact)",
        )
    return StageCall(
        Stage.RETRIEVAL,
        f"the answer lacks {fact!r}: its evidence {chunk} was never retrieved "
        f"({len(flow.in_context)}/{len(flow.gt_ids)} ground-truth chunks reached the "
        "generator, none holding that fact)",
    )
