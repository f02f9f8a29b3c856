"""Concept coverage of the GT chunks (seed 000, App. B.2.4): offline rules, and the LLM
path with ONE batched containment call (or one call per concept, the paper's way)."""

from __future__ import annotations

from diag_helpers import make_trace
from ragtriage.diagnosis._calls import LLMCalls, RequestOptions
from ragtriage.diagnosis.concepts import (
    coverage_of,
    llm_concept_coverage,
    rules_concept_coverage,
)
from ragtriage.judge.parsing import (
    parse_concept_list,
    parse_containment,
    parse_containment_batched,
)
from ragtriage.llm import LLMRunner, ScriptedLLM
from ragtriage.records import Trace

QUERY = "When did Acme Corp open its Springfield plant?"
GT_TEXTS = (
    "Acme Corp opened a new plant.",
    "The plant is in Springfield and employs 300 people.",
    "Unrelated text about widgets.",
)


def _trace() -> Trace:
    return make_trace(query=QUERY, gt_texts=GT_TEXTS, gt_answer="In 2010.", answer="In 2012.")


def test_coverage_of() -> None:
    assert coverage_of([], {}) is None
    assert coverage_of(["a", "b", "c", "d"], {"a": ("x",), "b": (), "c": ("y",)}) == 0.5


def test_rules_coverage_counts_concepts_found_in_any_gt_chunk() -> None:
    trace = make_trace(query=QUERY, gt_texts=GT_TEXTS)
    cov = rules_concept_coverage(trace, ["gd_0"])
    assert cov.method == "rules" and cov.concepts
    assert "Acme Corp" in cov.concepts and cov.hits["Acme Corp"] == ("gd_0",)
    assert cov.coverage is not None and cov.coverage < 1.0  # Springfield is not in gd_0
    both = rules_concept_coverage(trace, ["gd_0", "gd_1"])
    assert both.coverage is not None and both.coverage > cov.coverage


def test_rules_coverage_without_gt_text_is_unmeasurable() -> None:
    trace = make_trace(query=QUERY, gt_texts=GT_TEXTS)
    cov = rules_concept_coverage(trace, ["no_such_chunk"])
    assert cov.coverage is None and cov.missing_text == ("no_such_chunk",)
    assert "no GT chunk text" in cov.note


def test_rules_coverage_chinese() -> None:
    trace = make_trace(
        query="河源市人民法院判处被告张某多长时间的有期徒刑？",
        gt_texts=("河源市人民法院判决被告张某犯盗窃罪。", "判处有期徒刑五年。"),
        gt_answer="五年",
        answer="三年",
    )
    first = rules_concept_coverage(trace, ["gd_0"])
    both = rules_concept_coverage(trace, ["gd_0", "gd_1"])
    assert first.coverage is not None and both.coverage is not None
    assert both.coverage > first.coverage


async def test_llm_coverage_makes_one_extraction_and_one_batched_call() -> None:
    llm = ScriptedLLM(
        {
            r"Concept List:\s*$": "1. Acme Corp\n2. Springfield plant\n3. Opening date",
            r"^Concepts:": "K1: C1\nK2: C2\nK3: NONE",
        }
    )
    calls = LLMCalls(LLMRunner(llm), RequestOptions())
    cov = await llm_concept_coverage(_trace(), ["gd_0", "gd_1"], calls)
    assert cov.concepts == ("Acme Corp", "Springfield plant", "Opening date")
    assert cov.hits == {
        "Acme Corp": ("gd_0",),
        "Springfield plant": ("gd_1",),
        "Opening date": (),
    }
    # "Opening date" is in no GT chunk and the GT document never states it: no positive
    # evidence of a chunking fault, so it is not scored (as for the rules)
    assert cov.absent_from_docs == ("Opening date",) and cov.n_scored == 2
    assert cov.coverage == 1.0 and "not scored: 'Opening date'" in cov.note
    assert cov.method == "llm"
    assert len(llm.requests) == 2
    batched = llm.requests[1].messages[-1].content
    assert "K3. Opening date" in batched and "[C2] The plant is in Springfield" in batched
    assert calls.usage().calls == 2


async def test_llm_coverage_paper_protocol_one_call_per_concept() -> None:
    def reply(request: object, _i: int) -> str:
        text = request.messages[-1].content  # type: ignore[attr-defined]
        if "Concept List:" in text:
            return "Acme Corp\nSpringfield"
        if "**Concept**: Acme Corp" in text:
            return "[C1] True\n[C2] False"
        return "[C1] False\n[C2] True"

    llm = ScriptedLLM(reply)
    calls = LLMCalls(LLMRunner(llm), RequestOptions())
    cov = await llm_concept_coverage(_trace(), ["gd_0", "gd_1"], calls, batched=False)
    assert cov.hits == {"Acme Corp": ("gd_0",), "Springfield": ("gd_1",)}
    assert cov.coverage == 1.0
    assert len(llm.requests) == 3  # 1 extraction + 2 containment calls


async def test_llm_coverage_missing_lines_are_decided_by_rules_and_noted() -> None:
    llm = ScriptedLLM({r"Concept List:\s*$": "Acme Corp\nSpringfield", r"^Concepts:": "K1: C1"})
    calls = LLMCalls(LLMRunner(llm), RequestOptions())
    cov = await llm_concept_coverage(_trace(), ["gd_0", "gd_1"], calls)
    assert cov.hits["Acme Corp"] == ("gd_0",)
    assert cov.hits["Springfield"] == ("gd_1",)  # rules: the word is in gd_1
    assert cov.method == "llm+rules" and "1/2 concept(s) checked by rules" in cov.note


async def test_llm_extraction_failure_falls_back_to_rules() -> None:
    llm = ScriptedLLM({r"Concept List:\s*$": "", r"^Concepts:": "K1: C1\nK2: C2"})
    calls = LLMCalls(LLMRunner(llm), RequestOptions())
    cov = await llm_concept_coverage(_trace(), ["gd_0", "gd_1"], calls)
    assert cov.concepts  # from the rules
    assert "LLM listed no concepts; rules used" in cov.note


def test_parse_concept_list_strips_numbering_and_headers() -> None:
    text = "Concept List:\n1. Debt restructuring\n2) Company A\n- 2018\n* Company B\n\n2018"
    assert parse_concept_list(text) == ["Debt restructuring", "Company A", "2018", "Company B"]
    assert parse_concept_list("河源市人民法院\n被告张某\n刑期") == [
        "河源市人民法院",
        "被告张某",
        "刑期",
    ]


def test_parse_containment_formats() -> None:
    assert parse_containment("[C1] True\n[C2] False\n[C3] maybe", ["C1", "C2", "C3"]) == {
        "C1": True,
        "C2": False,
    }
    aliases = ["C1", "C2", "C3"]
    assert parse_containment_batched("K1: C1, C3\nK2: NONE\n", 3, aliases) == {
        0: frozenset({"C1", "C3"}),
        1: frozenset(),
    }
    as_json = parse_containment_batched('```json\n{"K1": ["C2"], "K2": []}\n```', 2, aliases)
    assert as_json == {0: frozenset({"C2"}), 1: frozenset()}
    # out-of-range concepts and unknown chunk labels are ignored
    assert parse_containment_batched("K9: C1\nK1: C7", 2, aliases) == {}


def test_rules_coverage_ignores_concepts_the_documents_never_state() -> None:
    """A paraphrased concept is absent from the whole GT document, so chunking cannot
    have separated it from the answer: it is left out of the coverage."""
    query = "What year-over-year revenue growth did Acme Corp report?"
    trace = make_trace(query=query, gt_texts=GT_TEXTS)
    cov = rules_concept_coverage(trace, ["gd_0", "gd_1"])
    assert any("revenue growth" in c for c in cov.absent_from_docs)
    assert "not scored" in cov.note
    assert cov.n_scored == len(cov.concepts) - len(cov.absent_from_docs)
    assert cov.coverage == 1.0  # everything the documents do state is in the GT chunks


def test_rules_coverage_still_blames_chunking_for_separated_concepts() -> None:
    """Springfield is in the document but not in the GT chunk: that is a chunking loss."""
    trace = make_trace(query=QUERY, gt_texts=GT_TEXTS)
    cov = rules_concept_coverage(trace, ["gd_0"])
    assert "Springfield" not in " ".join(cov.absent_from_docs)
    assert cov.coverage is not None and cov.coverage < 1.0


def test_gt_doc_texts_matches_reconstruct_text_with_overlaps_and_gaps() -> None:
    from ragtriage.diagnosis.concepts import gt_doc_texts
    from ragtriage.groundtruth import reconstruct_text
    from ragtriage.records import Chunk

    text = "Der Stausee fasst 40 Mio. m3. 水库于2011年建成。 It feeds three towns."
    pieces = [(0, 20), (15, 38), (45, len(text))]  # overlap, then a gap
    chunks = [
        Chunk(chunk_id=f"r#{i}", doc_id="r", text=text[s:e], start=s, end=e, index=i)
        for i, (s, e) in enumerate(pieces)
    ]
    trace = make_trace().model_copy(update={"gt_doc_chunks": chunks})
    assert gt_doc_texts(trace) == {"r": reconstruct_text(chunks)}
