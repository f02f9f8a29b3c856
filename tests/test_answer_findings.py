"""The LLM judge's answer findings feed the stage cascade as the rules judge's rule does
(issue #26, item 4). The LLM is ScriptedLLM behind a real LLMRunner."""

from __future__ import annotations

import json
from typing import Any

import pytest

from diag_helpers import doc_chunks, hits, judge_reply, make_trace
from ragtriage.config import DiagnosisConfig
from ragtriage.diagnosis import Diagnoser
from ragtriage.diagnosis.cascade import classify_stage
from ragtriage.diagnosis.findings import (
    AnswerFindings,
    DeclinedPart,
    FindingsError,
    MisorderedEvents,
    WrongValue,
    findings_from_object,
)
from ragtriage.llm import ChatRequest, LLMRunner, ScriptedLLM
from ragtriage.records import AnswerLabel, Example, Stage, Trace

DOCS = (
    "Acme Corp annual report 2021.",
    "In March 2021 Acme opened a plant in Oslo.",
    "In June 2021 Acme hired 300 staff.",
    "In October 2021 Acme acquired Beta Ltd for USD 40 million.",
)
ACQUISITION = DOCS[3]
HIRING = DOCS[2]
#: declines the acquisition, whose chunk (a_3) was never retrieved while the other two
#: GT chunks reached the generator (share 2/3 > 0.5: the share test says generation)
DECLINING = (
    "Acme opened a plant in Oslo in March 2021 and hired 300 staff in June 2021. The "
    "documents do not say whether Acme acquired any company in 2021."
)


def timeline_trace(answer: str = DECLINING) -> Trace:
    chunks = doc_chunks("a", DOCS)
    doc_of = {c.chunk_id: c.doc_id for c in chunks}
    ex = Example(
        example_id="q",
        query="What did Acme do in 2021?",
        answer=" ".join(DOCS[1:]),
        doc_ids=["a"],
        references=list(DOCS[1:]),
    )
    return Trace(
        trace_id="t",
        run_id="r",
        example=ex,
        gt_doc_chunks=chunks,
        retrieved=hits(["a_1", "a_2", "a_0"], doc_of),
        reranked=hits(["a_1", "a_2"], doc_of),
        context=["a_1", "a_2"],
        answer=answer,
    )


def verdict(label: str = "incorrect", **findings: Any) -> str:
    """An answer-evaluation reply; ``findings`` (a key ``none`` leaves them out)."""
    body: dict[str, Any] = {"label": label, "reasoning": "scripted"}
    if "none" not in findings:
        body["findings"] = {
            "declined": [],
            "wrong_values": [],
            "misordered": [],
            "unsupported": [],
            **findings,
        }
    return json.dumps(body)


def scripted(answer_eval: str, **kw: Any) -> tuple[LLMRunner, ScriptedLLM]:
    """A scripted judge answering the answer-evaluation prompt with ``answer_eval`` and
    every other RAGEC prompt as :func:`diag_helpers.judge_reply` does."""
    rest = judge_reply(**kw)

    def reply(request: ChatRequest, sample: int) -> str:
        if "<proposed_answer>" in request.messages[-1].content:
            return answer_eval
        return rest(request, sample)  # type: ignore[operator,no-any-return]

    llm = ScriptedLLM(reply)
    return LLMRunner(llm), llm


# -- parsing ------------------------------------------------------------------------------


def test_findings_are_parsed_into_the_dataclasses() -> None:
    found = findings_from_object(
        {
            "declined": [{"part": "Beta  Ltd", "ground_truth": ACQUISITION}],
            "wrong_values": [
                {"about": "price", "answer": "USD 25 million", "correct": "USD 40 million"}
            ],
            "misordered": [{"events": ["hiring", "plant"], "ground_truth": "March, June"}],
            "unsupported": ["Acme opened a second plant"],
        }
    )
    assert found.source == "llm"
    assert found.declined == (DeclinedPart("Beta Ltd", ACQUISITION),)
    assert found.wrong_values == (WrongValue("price", "USD 25 million", "USD 40 million", ""),)
    assert found.misordered == (MisorderedEvents(("hiring", "plant"), "March, June"),)
    assert found.unsupported == ("Acme opened a second plant",)
    assert found.unseen_fact and found.wrong_statement and found.picks_option
    assert found.missing_facts == (ACQUISITION,)
    # nothing found: no flag
    empty = findings_from_object({"declined": [], "unsupported": []})
    assert not (empty.unseen_fact or empty.wrong_statement or empty.missing_facts)


@pytest.mark.parametrize(
    ("obj", "field"),
    [
        ("declined Beta", "findings: expected an object"),
        ({"declined": [], "notes": []}, "unknown key(s) 'notes'"),
        ({"declined": "Beta Ltd"}, "findings.declined: expected a list"),
        ({"declined": [{"ground_truth": "x"}]}, "findings.declined[0]: missing 'part'"),
        ({"declined": [{"part": " "}]}, "findings.declined[0].part: empty"),
        ({"declined": [{"part": "x", "why": "y"}]}, "unknown field(s) 'why'"),
        ({"wrong_values": [{"about": "price", "answer": 25, "correct": "40"}]}, ".answer:"),
        ({"misordered": [{"events": ["only one"]}]}, "at least two events"),
        ({"unsupported": [{"claim": "x"}]}, "findings.unsupported[0]"),
    ],
)
def test_malformed_findings_are_refused_naming_the_field(obj: object, field: str) -> None:
    with pytest.raises(FindingsError, match=None) as err:
        findings_from_object(obj)
    assert field in str(err.value)


def test_rules_findings_are_the_rules_flags() -> None:
    assert AnswerFindings.of_rule("partial_abstention").unseen_fact
    assert AnswerFindings.of_rule("value_conflict").wrong_statement
    assert AnswerFindings.of_rule("order").picks_option
    assert not AnswerFindings.of_rule("overlap").unseen_fact
    assert not AnswerFindings.of_rule(None).unseen_fact


# -- the cascade reads the LLM's findings ----------------------------------------------------


async def test_llm_declined_part_is_staged_by_the_chunks_holding_its_evidence() -> None:
    trace = timeline_trace()
    rules = await Diagnoser("rules").diagnose(trace)
    assert rules.answer_rule == "partial_abstention", rules
    assert rules.stage is Stage.RETRIEVAL and "a_3 was never retrieved" in rules.stage_reason

    reply = verdict(declined=[{"part": "the acquisition", "ground_truth": ACQUISITION}])
    runner, llm = scripted(reply, retrieval_votes=["Missed Retrieval"] * 10)
    d = await Diagnoser("llm", llm=runner).diagnose(trace)
    assert d.answer_label is AnswerLabel.INCORRECT and d.answer_rule is None
    # same stage as the rules judge, from the chunk holding the declined fact
    assert d.stage is Stage.RETRIEVAL, d.stage_reason
    assert f"the answer lacks {ACQUISITION!r}: its evidence a_3 was never retrieved" in (
        d.stage_reason
    )
    assert "as the answer judge quoted it" in d.stage_reason
    assert "answer findings (llm): declined 'the acquisition'" in d.evidence
    # the declined-facts step decided before the concepts: no concept calls
    assert d.concepts == [] and len(llm.requests) == 2
    # classify_stage reads the same findings
    found = findings_from_object(json.loads(reply)["findings"])
    call = classify_stage(trace, d.gt_chunk_ids, None, 0, DiagnosisConfig(), findings=found)
    assert (call.stage, call.reason) == (d.stage, d.stage_reason)


async def test_llm_findings_decide_not_the_rules_reading() -> None:
    trace = timeline_trace()
    # the LLM finds the hiring missing, whose evidence (a_2) the generator saw:
    # generation, although by the rules' reading the lacking fact was never retrieved
    runner, _ = scripted(verdict(declined=[{"part": "hiring", "ground_truth": HIRING}]))
    d = await Diagnoser("llm", llm=runner).diagnose(trace)
    assert d.stage is Stage.GENERATION, d.stage_reason
    # an LLM that found nothing declined or wrongly valued: the step is silent
    runner, _ = scripted(verdict())
    d = await Diagnoser("llm", llm=runner).diagnose(trace)
    assert d.stage is Stage.GENERATION, d.stage_reason
    assert "answer findings (llm): none" in d.evidence


async def test_a_quote_no_chunk_holds_falls_back_to_the_rules_reading() -> None:
    reply = verdict(declined=[{"part": "Beta", "ground_truth": "a merger with Gamma in 1990"}])
    runner, _ = scripted(reply, retrieval_votes=["Missed Retrieval"] * 10)
    d = await Diagnoser("llm", llm=runner).diagnose(timeline_trace())
    assert d.stage is Stage.RETRIEVAL
    assert "no chunk holds the facts the answer judge quoted" in d.stage_reason


@pytest.mark.parametrize(
    ("reply", "why"),
    [
        (verdict(none=True), "the LLM reply carries no findings"),
        ("The answer is incorrect.", "no JSON object"),
        (verdict(declined="the acquisition"), "findings.declined: expected a list"),
    ],
)
async def test_a_reply_without_readable_findings_uses_the_offline_findings(
    reply: str, why: str
) -> None:
    runner, _ = scripted(reply, retrieval_votes=["Missed Retrieval"] * 10)
    d = await Diagnoser("llm", llm=runner).diagnose(timeline_trace())
    assert d.answer_label is AnswerLabel.INCORRECT
    # the rules judge's findings for the trace (partial_abstention) stand in, and say so
    assert d.stage is Stage.RETRIEVAL, d.stage_reason
    line = next(e for e in d.evidence if e.startswith("answer findings (offline"))
    assert "rule partial_abstention" in line and why in line, line


async def test_a_garbage_answer_reply_is_undetermined_and_goes_no_further() -> None:
    runner, llm = scripted("I cannot evaluate this.")
    d = await Diagnoser("llm", llm=runner).diagnose(timeline_trace())
    assert d.answer_label is None and d.undetermined and d.stage is None
    assert d.undetermined_reason is not None
    assert d.undetermined_reason.startswith("answer_evaluation: unreadable LLM reply")
    assert len(llm.requests) == 1


# -- the concept list ---------------------------------------------------------------------


async def test_a_garbage_concept_list_is_undetermined_and_not_sent_on() -> None:
    garbage = "I'm sorry, as an AI model I cannot help with that."
    runner, llm = scripted(verdict(), concepts=(garbage,), containment="K1: C1\nK2: C1")
    trace = make_trace(references=["Acme Corp was founded in 1999"])
    d = await Diagnoser("llm", llm=runner).diagnose(trace)
    # the cascade reached the concepts (retrieval by coverage, as with a readable list)
    assert d.stage is Stage.RETRIEVAL, d.stage_reason
    note = next(e for e in d.evidence if "concept extraction undetermined" in e)
    assert "unreadable LLM reply" in note and "rules used" in note
    # the containment prompt got the rules' concepts, never the garbage
    containment = [
        r.messages[-1].content
        for r in llm.requests
        if r.messages[-1].content.startswith("Concepts:")
    ]
    assert len(containment) == 1 and "sorry" not in containment[0]
    assert d.concepts and all("sorry" not in c for c in d.concepts)
    assert "Acme Corp" in containment[0]


async def test_a_readable_concept_list_is_used() -> None:
    runner, llm = scripted(verdict(), concepts=("Acme Corp", "Date of founding"))
    trace = make_trace(references=["Acme Corp was founded in 1999"])
    d = await Diagnoser("llm", llm=runner).diagnose(trace)
    assert d.concepts == ["Acme Corp", "Date of founding"]
    assert not any("concept extraction undetermined" in e for e in d.evidence)
    containment = llm.requests[2].messages[-1].content
    assert "K1. Acme Corp\nK2. Date of founding\n" in containment


# -- entity coverage ----------------------------------------------------------------------


async def test_an_entity_the_llm_finds_declined_counts_as_declined() -> None:
    from test_multi_entity import EN, two_company_trace

    # the answer leaves Harmony out without a declining sentence of its own; Harmony's
    # evidence (b_1) reached the generator without Harmony's name on it
    case = {
        **EN,
        "reply": "In March 2019, Green Fields Agriculture acquired Newbridge Farm for USD 12 "
        "million (Doc 1).",
    }
    trace = two_company_trace(case, retrieved=["a_1", "a_0", "b_1"], context=["a_1", "a_0", "b_1"])
    gt = ["a_1", "b_1"]
    silent = classify_stage(trace, gt, None, 0, DiagnosisConfig(), answer_rule="gt_coverage")
    assert silent.stage is Stage.GENERATION, silent
    reply = verdict(declined=[{"part": "Harmony Health Co.", "ground_truth": ""}])
    found = findings_from_object(json.loads(reply)["findings"])
    call = classify_stage(trace, gt, None, 0, DiagnosisConfig(), findings=found)
    assert call.stage is Stage.CHUNKING and "declines 'Harmony Health Co.'" in call.reason
    runner, _ = scripted(reply)
    d = await Diagnoser("llm", llm=runner).diagnose(trace)
    assert (d.stage, d.stage_reason) == (call.stage, call.reason)


async def test_llm_concepts_the_gt_documents_never_state_are_not_scored() -> None:
    trace = make_trace(
        references=["Acme Corp was founded in 1999"],
        retrieved=["od_0", "od_1", "gd_1", "gd_2"],
    )
    # "stock exchange listing" is in no GT chunk and nowhere in the GT document: no
    # positive evidence that chunking cut it off -- not scored, retrieval (as the rules do)
    runner, _ = scripted(
        verdict(), concepts=("Acme Corp", "stock exchange listing"), containment="K1: C1\nK2: NONE"
    )
    d = await Diagnoser("llm", llm=runner).diagnose(trace)
    assert d.stage is Stage.RETRIEVAL and d.concept_coverage == 1.0, d.stage_reason
    assert any("'stock exchange listing'" in e and "not scored" in e for e in d.evidence)
    # "gadgets" is in the GT document, outside the GT chunk: it counts (chunking in the
    # paper's cascade) ...
    runner, _ = scripted(
        verdict(), concepts=("Acme Corp", "gadgets"), containment="K1: C1\nK2: NONE"
    )
    paper = DiagnosisConfig(chunking_extension=False)
    d = await Diagnoser("llm", config=paper, llm=runner).diagnose(trace)
    assert d.stage is Stage.CHUNKING and d.concept_coverage == 0.5, d.stage_reason
    # ... but the GT chunk names its subject and holds the reference whole: no positive
    # evidence of a cut, so retrieval (issue 27)
    runner, _ = scripted(
        verdict(), concepts=("Acme Corp", "gadgets"), containment="K1: C1\nK2: NONE"
    )
    d = await Diagnoser("llm", llm=runner).diagnose(trace)
    assert d.stage is Stage.RETRIEVAL and d.concept_coverage == 0.5, d.stage_reason
    assert "no sign that chunking parted the evidence" in d.stage_reason
