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
| decision | a missing fact held in the context: generation (``None``); else chunking when the fact's reference sentence is held whole by no chunk (a boundary cut it), reranking when a holder was retrieved, retrieval when none was; facts no chunk holds are skipped |

Both judges (issue #26): the step reads the answer judgement's
:class:`~ragtriage.diagnosis.findings.AnswerFindings` -- the rules judge's through its
rule's ``unseen_fact`` flag, the LLM judge's through the declined parts and wrong values
of its reply. The facts the LLM judge quotes from the ground truth are located first; when
no chunk holds any of them, the missing facts by the rules' reading stand in (the reason
says which).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from ragtriage.config import DiagnosisConfig
from ragtriage.diagnosis.answer_eval import gt_coverage, missing_facts, states_keypoint
from ragtriage.diagnosis.concepts import gt_doc_texts
from ragtriage.diagnosis.findings import AnswerFindings
from ragtriage.diagnosis.stage import GTFlow, StageCall, chunks_by_doc, reference_span
from ragtriage.records import Stage, Trace

__all__ = ["MissingEvidence", "missing_evidence", "stage_from_declined", "stage_from_missing"]


def _holds(fact: str, text: str, *, keypoint: bool) -> bool:
    if keypoint:
        return states_keypoint(fact, text)
    return all(gt_coverage(fact, text).covered)


@dataclass(frozen=True, slots=True)
class MissingEvidence:
    """Where the evidence of the ground-truth facts an answer lacks went: for each located
    fact (``(fact, chunk)``: the fact and the holder that got furthest), whether a chunk
    holding it reached the generator, was retrieved and dropped, or was never retrieved."""

    in_context: tuple[tuple[str, str], ...]
    dropped: tuple[tuple[str, str], ...]
    unretrieved: tuple[tuple[str, str], ...]
    #: the facts located through a reference sentence that states them
    by_reference: frozenset[str] = frozenset()
    #: the facts a ground-truth chunk holds (the rest: by their words in another chunk of
    #: the document)
    in_gt_chunk: frozenset[str] = frozenset()
    #: the facts are the answer judge's quotes of the ground truth (``facts`` of
    #: :func:`missing_evidence`), not the rules' reading of what the answer lacks
    quoted: bool = False
    #: the facts whose reference sentence no chunk holds whole: a chunk boundary cut it
    cut: frozenset[str] = frozenset()

    @property
    def located(self) -> bool:
        return bool(self.in_context or self.dropped or self.unretrieved)


def missing_evidence(
    trace: Trace, gt_ids: Sequence[str] = (), facts: Sequence[str] = ()
) -> MissingEvidence | None:
    """The fate of the chunks that hold what the answer lacks (the ground truth's keypoints
    it does not state, else its statements it does not make); ``None`` for an unanswerable
    question or an answer that lacks nothing. A fact held by several chunks goes as far as
    the furthest of them; of the ground-truth chunks ``gt_ids`` when one of them holds it;
    facts no chunk holds are left out (they say nothing). ``facts``: what the answer judge
    quoted from the ground truth as lacking, located first; when no chunk holds any of
    them, the rules' reading of what the answer lacks."""
    ex = trace.example
    if not ex.answerable:
        return None
    if facts:
        quoted = _locate(trace, gt_ids, facts, keypoint=None)
        if quoted.located:
            return quoted
    missing = missing_facts(ex, trace.answer)
    if not missing:
        return None
    return _locate(trace, gt_ids, missing, keypoint=bool(ex.keypoints))


def _locate(
    trace: Trace, gt_ids: Sequence[str], missing: Sequence[str], *, keypoint: bool | None
) -> MissingEvidence:
    """Where the chunks holding each of ``missing`` went; ``keypoint`` ``None``: each fact
    is read as a keypoint when it is one of the example's, else as statements."""
    keypoints = frozenset(trace.example.keypoints)
    context = set(trace.context)
    retrieved = {h.chunk_id for h in trace.retrieved}
    seen: list[tuple[str, str]] = []
    dropped: list[tuple[str, str]] = []
    lost: list[tuple[str, str]] = []
    located = _reference_chunks(trace)
    spans = [(ref, whole) for ref, whole, _ in located if whole]
    cut_refs = [(ref, pieces) for ref, whole, pieces in located if not whole]
    gt = set(gt_ids)
    by_reference: set[str] = set()
    in_gt_chunk: set[str] = set()
    cut: set[str] = set()
    for fact in missing:
        kp = fact in keypoints if keypoint is None else keypoint
        # the reference sentences that state the fact, and the chunks that hold them (a
        # loose word match of the fact alone may find it in another chunk of the document)
        holders = [c for ref, chunks in spans if _holds(fact, ref, keypoint=kp) for c in chunks]
        if holders:
            by_reference.add(fact)
        else:
            holders = [c.chunk_id for c in trace.gt_doc_chunks if _holds(fact, c.text, keypoint=kp)]
            pieces = [c for ref, cs in cut_refs if _holds(fact, ref, keypoint=kp) for c in cs]
            if pieces:
                # stated by a reference a chunk boundary cuts (and by none held whole):
                # its pieces hold it, when no chunk holds it by its words alone
                cut.add(fact)
                holders = holders or pieces
        if not holders:
            continue
        if gt & set(holders):
            holders = [h for h in holders if h in gt]
            in_gt_chunk.add(fact)
        if any(h in context for h in holders):
            seen.append((fact, next(h for h in holders if h in context)))
        elif any(h in retrieved for h in holders):
            dropped.append((fact, next(h for h in holders if h in retrieved)))
        else:
            lost.append((fact, holders[0]))
    return MissingEvidence(
        tuple(seen),
        tuple(dropped),
        tuple(lost),
        frozenset(by_reference),
        frozenset(in_gt_chunk),
        quoted=keypoint is None,
        cut=frozenset(cut),
    )


def _reference_chunks(trace: Trace) -> list[tuple[str, list[str], list[str]]]:
    """Each located reference sentence with the GT-document chunks that hold it whole
    (several where chunks overlap; none where a chunk boundary cuts it) and the chunks
    that hold a piece of it."""
    refs = [r.strip() for r in trace.example.references if r.strip()]
    if not refs or not trace.gt_doc_chunks:
        return []
    texts = gt_doc_texts(trace)
    groups = chunks_by_doc(trace.gt_doc_chunks)
    out: list[tuple[str, list[str], list[str]]] = []
    for ref in refs:
        for doc_id, (text, offset) in texts.items():
            span = reference_span(text, ref)
            if span is None:
                continue
            s, e = span[0] + offset, span[1] + offset
            whole = [c.chunk_id for c in groups[doc_id] if c.start <= s and c.end >= e]
            pieces = [c.chunk_id for c in groups[doc_id] if c.start < e and c.end > s]
            out.append((ref, whole, pieces))
            break
    return out


def stage_from_missing(
    trace: Trace,
    flow: GTFlow,
    *,
    located: Literal["any", "evidence", "reference"] = "any",
    facts: Sequence[str] = (),
) -> StageCall | None:
    """The earliest stage at which the evidence of what the answer lacks was lost, when
    none of it reached the generator: retrieval when a chunk holding a missing fact was
    never retrieved (however many other ground-truth chunks were retrieved and dropped),
    reranking when every such chunk was retrieved and then dropped; ``None`` when some
    missing fact was in the generator's context, or none is located. ``located``: a
    retrieval call only for a fact whose reference sentence a never-retrieved chunk holds
    whole ("reference"), or that or a never-retrieved ground-truth chunk holding it
    ("evidence"), not for one found only in another chunk of the document ("any").
    ``facts``: the answer judge's quotes of what the answer lacks (see
    :func:`missing_evidence`)."""
    ev = missing_evidence(trace, flow.gt_ids, facts)
    if ev is None or ev.in_context or not ev.located:
        return None
    lost = [
        (f, c)
        for f, c in ev.unretrieved
        if located == "any"
        or f in ev.by_reference
        or (located == "evidence" and f in ev.in_gt_chunk)
    ]
    reached = f"{len(flow.in_context)}/{len(flow.gt_ids)} ground-truth chunks reached the generator"
    said = ""
    if facts:
        said = (
            "; the fact as the answer judge quoted it"
            if ev.quoted
            else "; no chunk holds the facts the answer judge quoted, so the rules' reading "
            "of what the answer lacks"
        )
    lost_facts = [f for f, _ in (*lost, *(ev.dropped if not ev.unretrieved else ()))]
    cut_fact = next((f for f in lost_facts if f in ev.cut), None)
    if cut_fact is not None:
        # the evidence was cut by a chunk boundary before anything was retrieved: the
        # earliest stage that lost it
        return StageCall(
            Stage.CHUNKING,
            f"the answer lacks {cut_fact!r}: its reference sentence is held whole by no chunk "
            f"(a chunk boundary cuts it), and no piece of it reached the generator ({reached}"
            f"{said})",
        )
    if lost:
        fact, chunk = lost[0]
        return StageCall(
            Stage.RETRIEVAL,
            f"the answer lacks {fact!r}: its evidence {chunk} was never retrieved ({reached}, "
            f"none holding that fact{said})",
        )
    if ev.unretrieved or not ev.dropped:
        return None
    rank = {h.chunk_id: h.rank for h in trace.retrieved}
    fact, chunk = ev.dropped[0]
    return StageCall(
        Stage.RERANKING,
        f"the answer lacks {fact!r}: its evidence {chunk} was retrieved (rank {rank[chunk]}) "
        f"but not forwarded to the generator ({reached}, none holding that fact{said})",
    )


def stage_from_declined(
    trace: Trace,
    flow: GTFlow,
    config: DiagnosisConfig,
    findings: AnswerFindings | str | None,
) -> StageCall | None:
    """Reranking or retrieval when the facts a partially abstaining (or wrongly valued)
    answer leaves out were held only by chunks that never reached the generator; ``None``
    otherwise (see the module table). ``findings``: the answer judgement's findings, or
    the rules judge's deciding rule (its findings)."""
    found = findings if isinstance(findings, AnswerFindings) else AnswerFindings.of_rule(findings)
    if not found.unseen_fact or not config.entity_extension or not flow.gt_ids:
        return None
    if len(flow.in_context) / len(flow.gt_ids) <= config.generator_gt_share:
        return None
    return stage_from_missing(trace, flow, facts=found.missing_facts)
