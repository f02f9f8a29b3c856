"""LLM-as-a-judge prompts of the RAGEC method, adapted from seed 000 (App. B).

Every builder returns a :class:`Prompt` (system + user message). Texts are adapted,
not copied: the structure, inputs and output formats follow the listing named in each
builder's comment (seed file ``000_ec226a643b0310db.txt``). Adaptations common to all:

* chunks are shown with short aliases (``C1``, ``C2`` ...) instead of raw chunk ids,
  so that ids containing brackets or commas cannot break the parser; the parser maps
  aliases back to chunk ids;
* unanswerable questions get the ground truth "Unable to answer" (DragonBall style);
* Chinese text is passed as is; the instructions ask for the English label names so
  one parser serves every language.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ragtriage.llm import ChatRequest
from ragtriage.records import ERROR_TYPE_NAMES, ErrorType, Stage, types_of_stage

__all__ = [
    "NO_ERROR",
    "TYPE_DESCRIPTIONS",
    "ChunkView",
    "Prompt",
    "alias",
    "answer_eval_prompt",
    "concept_containment_batched_prompt",
    "concept_containment_prompt",
    "concept_extraction_prompt",
    "ground_truth_text",
    "gt_chunks_prompt",
    "single_step_prompt",
    "stage_check_prompt",
    "type_prompt",
]

#: Label a stage-sequential judge answers when it sees no error at its stage.
NO_ERROR = "No Error"

_PIPELINE = (
    "A RAG system answered a question in four steps:\n"
    "- Chunking: every document was split into smaller chunks.\n"
    "- Retrieval: the chunks closest to the query were retrieved.\n"
    "- Reranking: the retrieved chunks were re-scored for relevance and only the top "
    "ones were kept.\n"
    "- Generation: the query and the kept chunks were given to an LLM that wrote the "
    "answer."
)

#: One-line definitions of the 16 error types (seed 000, §4 and Listings 7-10).
TYPE_DESCRIPTIONS: dict[ErrorType, str] = {
    ErrorType.E1: "the document is split into chunks so small that needed context is "
    "lost; single chunks look incomplete or ambiguous",
    ErrorType.E2: "chunks are so large that they mix several topics; the needed "
    "information is diluted among unrelated content",
    ErrorType.E3: "chunks are cut at arbitrary boundaries, separating key information "
    "from the context it belongs to",
    ErrorType.E4: "the retrieved chunks do not contain the information from the "
    "ground-truth documents needed to answer",
    ErrorType.E5: "the retrieved chunks are only loosely related to the query",
    ErrorType.E6: "the retrieved chunks match keywords of the query but not its intent",
    ErrorType.E7: "the necessary chunks were retrieved but ranked too low and not "
    "passed to the generator",
    ErrorType.E8: "irrelevant chunks were ranked highly and passed to the generator, "
    "ahead of the relevant ones",
    ErrorType.E9: "the model should have abstained (answer not available or question "
    "ambiguous) but answered",
    ErrorType.E10: "the answer contains information that is neither in the chunks nor verifiable",
    ErrorType.E11: "the answer relies on the model's own knowledge instead of the chunks",
    ErrorType.E12: "the answer is correct as far as it goes but misses critical details",
    ErrorType.E13: "the answer misuses or misrepresents what the chunks say",
    ErrorType.E14: "the answer is factual and related but does not address the query",
    ErrorType.E15: "the answer puts events in the wrong temporal order or confuses timelines",
    ErrorType.E16: "the answer has wrong calculations or quantities, or misstates the "
    "numbers in the chunks",
}


@dataclass(frozen=True, slots=True)
class ChunkView:
    """A chunk as shown to the judge: its alias (``C3``), real id and text."""

    alias: str
    chunk_id: str
    text: str
    doc_id: str = ""


def alias(index: int) -> str:
    """The display alias of the ``index``-th chunk (0-based): ``C1``, ``C2`` ..."""
    return f"C{index + 1}"


@dataclass(frozen=True, slots=True)
class Prompt:
    """A system + user message pair; :meth:`request` turns it into a ChatRequest."""

    system: str
    user: str

    def request(self, **kw: Any) -> ChatRequest:
        return ChatRequest.of(self.system, self.user, **kw)


def ground_truth_text(answer: str, answerable: bool, keypoints: Sequence[str] = ()) -> str:
    """The ground truth as shown to a judge (keypoints appended when given)."""
    if not answerable:
        base = "Unable to answer (the corpus does not contain the answer)."
        if answer.strip():
            base += f" Dataset note: {answer.strip()}"
        return base
    text = answer.strip()
    points = [p.strip() for p in keypoints if p.strip()]
    if points:
        text += "\nKey points:\n" + "\n".join(f"- {p}" for p in points)
    return text


def _chunks_block(chunks: Sequence[ChunkView], *, with_doc: bool = False) -> str:
    if not chunks:
        return "(none)"
    lines = []
    for c in chunks:
        head = f"[{c.alias}]" + (f" (document {c.doc_id})" if with_doc and c.doc_id else "")
        lines.append(f"{head} {' '.join(c.text.split())}")
    return "\n".join(lines)


def _choices(labels: Sequence[str]) -> str:
    return ", ".join(labels)


# -- B.1 answer evaluation ------------------------------------------------------------


def answer_eval_prompt(
    query: str,
    ground_truth: str,
    proposed_answer: str,
    citations: Sequence[str] = (),
    conclusion: str = "",
) -> Prompt:
    """Is the proposed answer right? Adapted from seed 000, Listing 3 (B.1), with the
    handling of real answer styles of issue #9: reasoning before a conclusion, markdown
    and citations, abstentions inside long answers, partial abstentions, numbers of any
    magnitude, long-form ground truths. ``conclusion`` is the final answer the rules
    found in a reasoning answer, shown as a hint. The reply's ``findings`` (declined
    parts, wrong values, misordered events, unsupported claims) are our addition (issue
    #26): the stage cascade reads them as it reads the rules judge's deciding rule
    (:mod:`ragtriage.diagnosis.findings`)."""
    system = (
        "You are an expert evaluator. Decide whether a proposed answer to a question "
        "matches the ground-truth answer.\n"
        "Labels:\n"
        "- abstain: the proposed answer declines to answer (e.g. 'I don't know', "
        "'there is not enough information to answer').\n"
        "- correct: it contains the same key information as the ground truth, covers "
        "its important points and has no factual error against it.\n"
        "- possible_correct: it is mostly right but vague, partial or hedged.\n"
        "- incorrect: it misses the key information or contradicts the ground truth.\n"
        "If the ground truth says the question cannot be answered, an answer that "
        "abstains is 'abstain' and any other answer is 'incorrect'.\n"
        "Real answers often review the documents before concluding: judge the final "
        "answer (its conclusion, e.g. 'Thus, the answer is ...', '综上所述...'), not the "
        "review; ignore markdown and citation markers such as (Doc 2) or [1]. An answer "
        "that declines in its conclusion, even after a long review, abstains. If the "
        "question asks about several parts (two companies, two people, two dates) and "
        "the answer answers one part but declines or misses another that the ground "
        "truth answers, it is 'incorrect': name the missing part in the reasoning. A "
        "number, date or year that differs from the ground truth's value for the same "
        "thing is a contradiction, however large or implausible. When the ground truth "
        "makes several statements, an answer that makes only one of them is "
        "'possible_correct' or 'incorrect' by how much of the ground truth it covers.\n"
        "Texts may be in any language; always use the English label names.\n"
        # the findings are ours (issue #26): what the stage cascade reads from either judge
        "Also report what you found, so that a later step can trace where the answer "
        "went wrong: each part of the question the answer declines or misses although "
        "the ground truth answers it (name the entity or fact asked), each value of the "
        "answer (number, date, name) put in the place of the ground truth's, events the "
        "answer puts in another order, and claims that neither the ground truth nor the "
        "citations support. Copy 'ground_truth' word for word from the ground truth. "
        "Use empty lists when there is nothing to report.\n"
        'Reply with one JSON object: {"label": "correct" | "possible_correct" | '
        '"incorrect" | "abstain", "reasoning": "<one short sentence>", "findings": '
        '{"declined": [{"part": "<entity or fact asked>", "ground_truth": "<the ground '
        'truth\'s words for it>"}], "wrong_values": [{"about": "<what the value is of>", '
        '"answer": "<the answer\'s value>", "correct": "<the ground truth\'s value>", '
        '"ground_truth": "<the ground truth\'s words for it>"}], "misordered": '
        '[{"events": ["<event the answer puts first>", "<the next one>"], '
        '"ground_truth": "<the ground truth\'s words for them>"}], "unsupported": '
        '["<claim of the answer>"]}}'
    )
    cited = ""
    if citations:
        cited = (
            "\n<ground_truth_citations>\n"
            + "\n".join(" ".join(c.split()) for c in citations)
            + "\n</ground_truth_citations>"
        )
    hint = ""
    if conclusion and conclusion.strip() != proposed_answer.strip():
        hint = f"\n<final_answer_found>\n{conclusion}\n</final_answer_found>"
    user = (
        f"<question>\n{query}\n</question>\n"
        f"<ground_truth>\n{ground_truth}\n</ground_truth>\n"
        f"<proposed_answer>\n{proposed_answer}\n</proposed_answer>{hint}{cited}\n"
        "Your evaluation:"
    )
    return Prompt(system, user)


# -- B.2.1 ground-truth chunks --------------------------------------------------------


def gt_chunks_prompt(query: str, ground_truth: str, chunks: Sequence[ChunkView]) -> Prompt:
    """Which chunks are needed to answer? Adapted from seed 000, Listing 4 (B.2.1)."""
    system = (
        "You are an expert evaluator of Retrieval Augmented Generation (RAG) systems. "
        "You are shown a query, its ground-truth answer and every chunk of the "
        "ground-truth document(s). Identify ALL chunks that contain information needed "
        "to answer the query, directly or indirectly, such that together they are "
        "sufficient to produce the ground-truth answer.\n"
        "Reply with exactly one line in this format, using the bracketed chunk labels:\n"
        "Relevant Chunks: [C1, C4, C10]\n"
        "Reply 'Relevant Chunks: []' if no chunk is relevant."
    )
    user = (
        f"**Query**: {query}\n"
        f"**Ground Truth Answer**: {ground_truth}\n"
        f"**Available Chunks from the Ground Truth Document(s)**:\n{_chunks_block(chunks)}"
    )
    return Prompt(system, user)


# -- B.2.4 concepts -------------------------------------------------------------------

_CONCEPT_EXAMPLES = (
    (
        "Compare the debt restructuring efforts of Company A in 2018 and Company B in "
        "2021. Which company reduced more liabilities through debt restructuring?",
        [
            "Debt restructuring efforts",
            "Company A",
            "2018",
            "Company B",
            "2021",
            "Reducing liabilities through debt restructuring",
        ],
    ),
    (
        "When did the city council of Riverton approve the new budget?",
        ["City council", "Riverton", "Approval of the new budget", "Date of approval"],
    ),
    (
        "根据河源市人民法院的判决，被告张某被判处了多长时间的有期徒刑？",
        ["河源市人民法院", "判决", "被告张某", "有期徒刑", "刑期长短"],
    ),
)


def concept_extraction_prompt(query: str) -> Prompt:
    """List the query's concepts. Adapted from seed 000, Listing 5 (B.2.4), which
    follows Matton et al. (2025); examples 2 and 3 are ours (one in Chinese)."""
    system = (
        "List the distinct concepts — high-level pieces of information — in a question "
        "that could influence someone's answer to it. Each concept should appear word "
        "for word in the question, or as a very minor rewording, in the question's "
        "language. Output one concept per line, without numbers, dashes or a header."
    )
    shots = []
    for i, (question, concepts) in enumerate(_CONCEPT_EXAMPLES, start=1):
        shots.append(f"Example {i}\nQuestion: {question}\nConcept List:\n" + "\n".join(concepts))
    n = len(_CONCEPT_EXAMPLES) + 1
    user = "\n\n".join(shots) + f"\n\nExample {n}\nQuestion: {query}\nConcept List:"
    return Prompt(system, user)


def concept_containment_prompt(concept: str, chunks: Sequence[ChunkView]) -> Prompt:
    """Is one concept in each excerpt? Adapted from seed 000, Listing 6 (B.2.4): one
    call per concept (the paper's protocol)."""
    system = (
        "You are given a concept and a list of excerpts. For every excerpt decide "
        "whether the concept is contained in it. Output one line per excerpt: its "
        "bracketed label and True or False.\n"
        "Example:\n**Concept**: Peter\n**Excerpts**:\n[C1] John is running\n"
        "[C2] Peter is walking\n**Answer**:\n[C1] False\n[C2] True"
    )
    user = f"**Concept**: {concept}\n**Excerpts**:\n{_chunks_block(chunks)}\n**Answer**:"
    return Prompt(system, user)


def concept_containment_batched_prompt(
    concepts: Sequence[str], chunks: Sequence[ChunkView]
) -> Prompt:
    """All concepts x all excerpts in one call. Our batched variant of seed 000,
    Listing 6: the same judgement, one request per example instead of per concept."""
    system = (
        "You are given numbered concepts and labelled excerpts. For every concept list "
        "the excerpts that contain it (the concept, or a very minor rewording of it, is "
        "present in the excerpt).\n"
        "Output one line per concept, in order: the concept number, a colon, then the "
        "labels of the excerpts containing it separated by commas, or NONE.\n"
        "Example:\nConcepts:\nK1. Peter\nK2. running\nExcerpts:\n[C1] John is running\n"
        "[C2] Peter is walking\nAnswer:\nK1: C2\nK2: C1"
    )
    concept_lines = "\n".join(f"K{i + 1}. {c}" for i, c in enumerate(concepts))
    user = f"Concepts:\n{concept_lines}\nExcerpts:\n{_chunks_block(chunks)}\nAnswer:"
    return Prompt(system, user)


# -- B.3 error types ------------------------------------------------------------------


def _type_menu(types: Sequence[ErrorType]) -> str:
    return "\n".join(f"- {ERROR_TYPE_NAMES[t]}: {TYPE_DESCRIPTIONS[t]}" for t in types)


def _type_names(types: Sequence[ErrorType]) -> list[str]:
    return [ERROR_TYPE_NAMES[t] for t in types]


def type_prompt(
    stage: Stage,
    *,
    query: str,
    ground_truth: str,
    answer: str = "",
    gt_doc_chunks: Sequence[ChunkView] = (),
    gt_doc_ids: Sequence[str] = (),
    retrieved: Sequence[ChunkView] = (),
    reranked: Sequence[ChunkView] = (),
    kept: int = 0,
    entity_note: str = "",
) -> Prompt:
    """The error type within the attributed stage; only that stage's context is shown.
    ``entity_note`` (issue #9) says, for a question about several entities, which of them
    the chunks shown mention.

    chunking — Listing 7 (query, ground truth, all chunks of the GT documents);
    retrieval — Listing 8 (query, ground truth, GT document ids, retrieved chunks);
    reranking — Listing 9 (query, ground truth, GT document ids, reranked chunks);
    generation — Listing 10 (query, ground truth, the wrong answer, the chunks the
    generator saw). All from seed 000, App. B.3.
    """
    types = types_of_stage(stage)
    names = _type_names(types)
    head = f"You are an expert evaluator of Retrieval Augmented Generation (RAG) systems.\n{_PIPELINE}\n"
    ids = ", ".join(gt_doc_ids) or "(unknown)"
    if stage is Stage.CHUNKING:  # Listing 7
        task = (
            "You see the query, the ground-truth answer and all chunks of the document "
            "holding the answer; the RAG system sees each chunk as an independent block. "
            "Given that the error happened at the chunking step, pick the description "
            "that fits best:"
        )
        context = f"**Document Chunks**:\n{_chunks_block(gt_doc_chunks)}"
    elif stage is Stage.RETRIEVAL:  # Listing 8
        task = (
            "You see the query, the ground-truth answer, the ids of the documents "
            "holding the answer and the retrieved chunks. Given that the error happened "
            "at the retrieval step, pick the description that fits best:"
        )
        context = (
            f"**Ground Truth Document ID**: {ids}\n"
            f"**Retrieved Chunks**:\n{_chunks_block(retrieved, with_doc=True)}"
        )
    elif stage is Stage.RERANKING:  # Listing 9
        task = (
            "You see the query, the ground-truth answer and the retrieved chunks after "
            f"reranking; only the top {kept or 'few'} were passed on to the generator. "
            "Given that the error happened at the reranking step, pick the description "
            "that fits best:"
        )
        context = (
            f"**Ground Truth Document ID**: {ids}\n"
            f"**Reranked Chunks** (in reranked order{f'; first {kept} kept' if kept else ''}):\n"
            f"{_chunks_block(reranked, with_doc=True)}"
        )
    else:  # Listing 10
        task = (
            "You see the query, the ground-truth answer, the incorrect answer the RAG "
            f"system produced and the {len(reranked)} chunks it was given. Pick the "
            "reason why the model produced the incorrect answer:"
        )
        context = (
            f"**Incorrect Answer**: {answer}\n"
            f"**Chunks given to the generator**:\n{_chunks_block(reranked)}"
        )
    system = f"{head}\n{task}\n{_type_menu(types)}\n\nAnswer with exactly one of: {_choices(names)}"
    if entity_note and stage is not Stage.CHUNKING:
        context += f"\n**Entities asked about**: {entity_note}"
    user = (
        f"**Query**: {query}\n**Ground Truth**: {ground_truth}\n{context}\n"
        f"**Output format**: only one of {_choices(names)}"
    )
    return Prompt(system, user)


def single_step_prompt(
    *,
    query: str,
    ground_truth: str,
    answer: str,
    retrieved: Sequence[ChunkView],
    reranked: Sequence[ChunkView],
) -> Prompt:
    """One prompt over all 16 types with all context (seed 000, App. B.4.1)."""
    names = _type_names(list(ErrorType))
    system = (
        f"You are an expert evaluator of Retrieval Augmented Generation (RAG) systems.\n"
        f"{_PIPELINE}\n\nThe answer below is incorrect. Pick the description of the "
        f"error that fits best:\n{_type_menu(list(ErrorType))}\n\n"
        f"Answer with exactly one of: {_choices(names)}"
    )
    user = (
        f"**Query**: {query}\n**Ground Truth**: {ground_truth}\n"
        f"**Incorrect Answer**: {answer}\n"
        f"**Retrieved Chunks**:\n{_chunks_block(retrieved, with_doc=True)}\n"
        f"**Chunks given to the generator**:\n{_chunks_block(reranked)}\n"
        f"**Output format**: only one of {_choices(names)}"
    )
    return Prompt(system, user)


def stage_check_prompt(
    stage: Stage,
    *,
    query: str,
    ground_truth: str,
    gt_doc_chunks: Sequence[ChunkView] = (),
    gt_doc_ids: Sequence[str] = (),
    retrieved: Sequence[ChunkView] = (),
    reranked: Sequence[ChunkView] = (),
) -> Prompt:
    """Stage-sequential: "did this stage err, and how?" (seed 000, App. B.4.2).

    Only what exists at that stage is shown: chunking sees the GT document chunks,
    retrieval the retrieved chunks, reranking the reranked chunks. Generation is
    reached by elimination and uses :func:`type_prompt`.
    """
    if stage is Stage.GENERATION:
        raise ValueError("the generation stage is reached by elimination; use type_prompt")
    types = types_of_stage(stage)
    names = [*_type_names(types), NO_ERROR]
    ids = ", ".join(gt_doc_ids) or "(unknown)"
    if stage is Stage.CHUNKING:
        context = f"**Document Chunks**:\n{_chunks_block(gt_doc_chunks)}"
    elif stage is Stage.RETRIEVAL:
        context = (
            f"**Ground Truth Document ID**: {ids}\n"
            f"**Retrieved Chunks**:\n{_chunks_block(retrieved, with_doc=True)}"
        )
    else:
        context = (
            f"**Ground Truth Document ID**: {ids}\n"
            f"**Reranked Chunks**:\n{_chunks_block(reranked, with_doc=True)}"
        )
    system = (
        f"You are an expert evaluator of Retrieval Augmented Generation (RAG) systems.\n"
        f"{_PIPELINE}\n\nThe system answered the query incorrectly. Look only at the "
        f"{stage.value} step. If it made an error, pick the description that fits "
        f"best; if the {stage.value} step did its job, answer '{NO_ERROR}'.\n"
        f"{_type_menu(types)}\n- {NO_ERROR}: the {stage.value} step is not at fault\n\n"
        f"Answer with exactly one of: {_choices(names)}"
    )
    user = (
        f"**Query**: {query}\n**Ground Truth**: {ground_truth}\n{context}\n"
        f"**Output format**: only one of {_choices(names)}"
    )
    return Prompt(system, user)
