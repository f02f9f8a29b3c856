"""The eight critiques of seed 001, App. I (adapted from the Hugging Face RAG evaluation
cookbook): each rates a generated (context, question, answer) on 1–5.

Two implementations of one protocol: :class:`RulesCritic` (offline heuristics, lower
quality, clearly so) and :class:`LLMCritic` (the App. I prompts through the runner).
A rating that cannot be decided is ``None`` (undetermined) and never rejects a
candidate by itself.
"""

from __future__ import annotations

import asyncio
import itertools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ragtriage.llm import ChatRequest, LLMFailure, LLMRunner, parse_json_object
from ragtriage.text import content_tokens, split_sentences

__all__ = [
    "CRITIQUES",
    "DEFAULT_THRESHOLDS",
    "RULES_ONLY",
    "CritiqueInput",
    "LLMCritic",
    "RulesCritic",
    "critique_prompt",
    "failed_critiques",
    "fluency",
    "parse_rating",
    "stand_alone",
]

CRITIQUES: tuple[str, ...] = (
    "q_to_c_groundedness",
    "a_to_c_groundedness",
    "q_feasibility",
    "stand_alone",
    "q_usefulness",
    "c_usefulness",
    "c_clarity",
    "qa_tautology",
)
#: offline-only critique: grammar heuristics (question word or auxiliary first, a verb,
#: a question mark, no doubled or empty slots, length bounds; ZH: a question word)
RULES_ONLY: tuple[str, ...] = ("fluency",)
#: minimum rating (1–5) a candidate needs on each critique to be kept
DEFAULT_THRESHOLDS: Mapping[str, float] = {
    "fluency": 4,
    "q_to_c_groundedness": 3,
    "a_to_c_groundedness": 3,
    "q_feasibility": 3,
    "stand_alone": 3,
    "q_usefulness": 2,
    "c_usefulness": 2,
    "c_clarity": 2,
    "qa_tautology": 3,
}


@dataclass(frozen=True, slots=True)
class CritiqueInput:
    context: str
    question: str
    answer: str
    #: unanswerable candidates are not expected to be grounded in their context
    answerable: bool = True


def failed_critiques(
    scores: Mapping[str, float | None], thresholds: Mapping[str, float], answerable: bool = True
) -> list[str]:
    """The critiques whose determined rating is under its threshold."""
    grounded = ("q_to_c_groundedness", "a_to_c_groundedness", "qa_tautology")
    return [
        f"{name} {score:g} < {thresholds[name]:g}"
        for name, score in scores.items()
        if score is not None
        and name in thresholds
        and score < thresholds[name]
        and (answerable or name not in grounded)
    ]


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text.lower().replace("，", ",")).strip(" .。")


def _scale(share: float) -> float:
    """A share in [0, 1] → a rating in [1, 5]."""
    return round(1 + 4 * max(0.0, min(1.0, share)), 1)


_CONTEXT_WORDS = re.compile(
    r"\b(the (context|passage|document|text|paragraph|article|excerpt|report|record|section)"
    r"|this (document|passage|text|report|record|section|article)|(above|below|following) "
    r"(text|passage|section)|according to the)\b"
    r"|(上文|文中|本文|该文|这段|材料中|文章中|上述|该报告|本报告|此文)",
    re.IGNORECASE,
)
_DANGLING_EN = re.compile(
    r"^(?:\w+ ){0,3}?(?:he|she|it|they|him|her|them|his|its|their|this|that|these|those)\b"
    r"(?! (?:of|which|who)\b)",
    re.IGNORECASE,
)
_DANGLING_START_EN = re.compile(
    r"^(?:what|when|who|where|why|how|which|did|does|do|is|was|were|are|has|have|had)"
    r"(?: \w+){0,3}? (?:he|she|it|they|this|these|those|the company|the patient|the defendant|"
    r"the court|the claimant|the group)\b",
    re.IGNORECASE,
)
_DANGLING_ZH = re.compile(r"^(?:他|她|它|他们|该|此|这|那|公司|患者|被告人|本院)")
_QWORD_EN = re.compile(
    r"^(?:what|when|who|whom|whose|where|why|how|which|is|are|was|were|do|does|did|has|have|had|"
    r"can|could|will|would|should|in what|on what|at what|by (?:what|how)|for (?:how|what)|from "
    r"(?:what|which)|to (?:what|whom|which))\b",
    re.IGNORECASE,
)
_VERB_EN = re.compile(
    r"\b(?:is|are|was|were|do|does|did|has|have|had|be|been|can|could|will|would|should|"
    r"\w+(?:ed|es|s))\b",
    re.IGNORECASE,
)
_QWORD_ZH = re.compile(r"谁|什么|哪|多少|何时|何地|为何|怎么|如何|是否|吗|几|多久|多长")
_RESIDUE = re.compile(r" ,| \.|  |,,|\?\?|\(\s*\)|\{|\}|…|\.\.\.|:\?|，，|。。|？？|“”|（）")


def _repeats(tokens: Sequence[str]) -> bool:
    """A word or a name said twice in a row ("the the", "张伟张伟")."""
    return any(a == b and len(a) > 1 for a, b in itertools.pairwise(tokens))


def fluency(question: str) -> tuple[float, list[str]]:
    """A grammar heuristic on a question (EN or ZH): the rating (1–5) and what is wrong.

    EN: starts with a question word or an auxiliary (or "in/on/by what …"), has a verb,
    ends with '?', 4–35 words, no doubled or empty slot (" , ", two spaces, a word twice,
    "…"). ZH: a question word (谁/什么/哪/多少/何时/是否/吗 …), ends with '？', 6–60
    characters, no template residue. Each fault costs a point or more."""
    q = question.strip()
    faults: list[str] = []
    if not q:
        return 1.0, ["empty"]
    zh = re.search(r"[\u4e00-\u9fff]", q) is not None
    if _RESIDUE.search(q):
        faults.append("template residue (doubled or empty slot)")
    if zh:
        if not _QWORD_ZH.search(q):
            faults.append("no question word")
        if not q.endswith(("？", "?")):
            faults.append("does not end with '？'")
        if not 6 <= len(q) <= 60:
            faults.append(f"length {len(q)} characters outside 6–60")
        if re.search(r"([\u4e00-\u9fff]{2,4})\1", q):
            faults.append("a name or word said twice")
    else:
        words = q.rstrip("?").split()
        if not _QWORD_EN.match(q):
            faults.append("does not start with a question word or an auxiliary")
        if not q.endswith("?") or q.count("?") > 1:
            faults.append("does not end with one '?'")
        if not _VERB_EN.search(" ".join(words[1:])) and not _VERB_EN.match(
            words[0] if words else ""
        ):
            faults.append("no verb")
        if not 4 <= len(words) <= 35:
            faults.append(f"{len(words)} words, outside 4–35")
        if _repeats([w.lower() for w in words]):
            faults.append("a word said twice")
        if q[:1].islower():
            faults.append("starts in lower case")
    score = 5.0 - 2.0 * len(faults)
    return max(1.0, score), faults


def stand_alone(question: str, entities: Sequence[str] = ()) -> tuple[float, list[str]]:
    """Whether a question makes sense by itself: no reference to "the context" / "this
    document", no dangling pronoun or generic subject ("the company", 他, 该公司) in place
    of a name, and it names something (a proper noun, or one of ``entities``)."""
    q = question.strip()
    faults: list[str] = []
    if _CONTEXT_WORDS.search(q):
        return 1.0, ["refers to the context or document"]
    zh = re.search(r"[\u4e00-\u9fff]", q) is not None
    if zh:
        if _DANGLING_ZH.search(q):
            faults.append("starts with a pronoun or a generic subject")
        named = (
            any(e and e in q for e in entities)
            if entities
            else bool(
                re.search(r"[\u4e00-\u9fff]{2,}(?:公司|医院|法院|集团|银行|大学)|[A-Z][a-z]+", q)
            )
        )
    else:
        if _DANGLING_START_EN.search(q):
            faults.append("a pronoun or generic subject stands for an entity it does not name")
        proper = [w for w in re.findall(r"\b[A-Z][\w.&'-]+", q)[1:] if w not in ("I",)]
        named = bool(proper) or any(e and e in q for e in entities)
    if not named:
        faults.append("names no entity")
    return (max(1.0, 5.0 - 2.0 * len(faults)), faults)


class RulesCritic:
    """Offline critiques: word overlap, specificity and form heuristics (EN + ZH)."""

    name = "rules"

    def __init__(self, corpus_texts: Sequence[str] = (), entities: Sequence[str] = ()) -> None:
        self.entities = tuple(entities)
        df: dict[str, int] = {}
        for text in corpus_texts:
            for tok in set(content_tokens(text)):
                df[tok] = df.get(tok, 0) + 1
        self._df = df
        self._n = max(1, len(corpus_texts))

    def _rare_share(self, tokens: Sequence[str]) -> float:
        if not tokens or not self._df:
            return 0.5
        rare = sum(1 for t in set(tokens) if self._df.get(t, 0) <= max(1, self._n // 10))
        return rare / len(set(tokens))

    def critique(self, item: CritiqueInput) -> dict[str, float | None]:
        ctx = set(content_tokens(item.context))
        q = content_tokens(item.question)
        a = content_tokens(item.answer)
        q_share = sum(1 for t in q if t in ctx) / len(q) if q else 0.0
        a_share = sum(1 for t in a if t in ctx) / len(a) if a else 0.0
        new_in_answer = sum(1 for t in a if t not in set(q)) / len(a) if a else 0.0
        sentences = [s.text for s in split_sentences(item.context)]
        informative = [s for s in sentences if len(content_tokens(s)) >= 5]
        well_formed = [s for s in sentences if s.rstrip()[-1:] in ".!?。！？;；"]
        answer = item.answer.strip()
        grounded = _scale(q_share)
        tautology = _scale(min(1.0, new_in_answer / 0.2)) if answer else None
        derived = set(re.findall(r"\d+", answer)) - set(re.findall(r"\d+", item.context))
        span_like = len(answer) <= 40 and not re.search(r"[(（:：;；]", answer)
        if answer and item.answerable and span_like and not derived:
            # a short answer is a span: it must be in the context, not in the question
            in_context = _norm(answer) in _norm(item.context)
            grounded = min(grounded, 5.0 if in_context else 1.0)
            if _norm(answer) in _norm(item.question):
                tautology = 1.0
        return {
            "q_to_c_groundedness": grounded,
            "a_to_c_groundedness": _scale(a_share) if item.answer.strip() else None,
            "q_feasibility": _scale(0.3 + self._rare_share(q)),
            "stand_alone": stand_alone(item.question, self.entities)[0],
            "q_usefulness": _scale(min(1.0, len(q) / 8)),
            "c_usefulness": _scale(min(1.0, len(informative) / 4)),
            "c_clarity": _scale(len(well_formed) / len(sentences)) if sentences else 1.0,
            # a fifth of the answer being new information is no tautology
            "qa_tautology": tautology,
            "fluency": fluency(item.question)[0],
        }

    async def critique_many(self, items: Sequence[CritiqueInput]) -> list[dict[str, float | None]]:
        return [self.critique(i) for i in items]


# Adapted from seed 001 (Know Your RAG), Appendix I "Critique Prompts" (itself adapted
# from the Hugging Face RAG evaluation cookbook). {fields} are filled per candidate.
_TAIL = (
    "\n\nProvide your answer as a JSON object as follows:\n"
    '{{"evaluation": "your rationale for the rating, as a brief and concise text", '
    '"rating": "your rating, as a number between 1 and 5"}}\n'
    "You MUST provide values for 'evaluation' and 'rating' in your answer. Provide ONLY the "
    "JSON object as your answer.\n\n"
)
_PROMPTS: Mapping[str, str] = {
    "q_to_c_groundedness": "You will be given a context and a sentence that should be a question.\n"
    "Your task is to provide a 'total rating' scoring how well one can answer the given question "
    "unambiguously with the given context.\nGive your answer on a scale of 1 to 5, where 1 means "
    "that the question is not answerable at all given the context, and 5 means that the question "
    "is clearly and unambiguously answerable with the context.\nIf the sentence provided is not "
    "actually a question, rate it as 1."
    + _TAIL
    + 'Question: "{question}"\nContext: "{context}"\nAnswer:::',
    "a_to_c_groundedness": "You will be given a context, and a passage.\nYour task is to provide a "
    "'total rating' scoring how well the statements in the provided passage can be inferred from "
    "the provided context.\nGive your rating on a scale of 1 to 5, where 1 means that none of the "
    "statements in the passage can be inferred from the provided context, while 5 means that all "
    "of the statements in the passage can be unambiguously and entirely obtained from the context."
    + _TAIL
    + 'Context: "{context}"\nPassage: "{answer}"\nAnswer:::',
    "q_feasibility": "You will be given a context and a question.\nThis context is extracted from a "
    "collection of passages, and the question will be used to find it.\nYour task is to provide a "
    "'total rating' scoring how well this context can be retrieved based on the specificity and "
    "pertinence of the question.\nGive your answer on a scale of 1 to 5, where 1 means that it "
    "will be difficult to find this context from this question due to lack of specificity or "
    "pertinence, and 5 means that the context can clearly be found with information contained "
    "in the question." + _TAIL + 'Question: "{question}"\nContext: "{context}"\nAnswer:::',
    "stand_alone": "You will be given a question.\nYour task is to provide a 'total rating' "
    "representing how context-independent this question is.\nGive your answer on a scale of 1 to "
    "5, where 1 means that the question depends on additional information to be understood, and 5 "
    "means that the question makes sense by itself.\nFor instance, if the question refers to a "
    "particular setting, like 'in the context' or 'in the document', the rating must be 1.\nThe "
    "questions can contain obscure technical nouns or acronyms and still be a 5: it must simply "
    "be clear to an operator with access to documentation what the question is about."
    + _TAIL
    + 'Question: "{question}"\nAnswer:::',
    "q_usefulness": "You will be given a question.\nThis question is to be used to find information "
    "in a collection of documents.\nYour task is to provide a 'total rating' representing how "
    "useful this question can be to a user with domain knowledge on the subject covered by the "
    "document collection.\nGive your answer on a scale of 1 to 5, where 1 means that the question "
    "is not useful at all, and 5 means that the question is extremely useful."
    + _TAIL
    + 'Question: "{question}"\nAnswer:::',
    "c_usefulness": "You will be given a context.\nThis context is a part of a collection of "
    "contexts that users can query.\nYour task is to provide a 'total rating' representing how "
    "useful this context can be to extract statements for a user with domain knowledge on the "
    "subject covered by the context collection.\nGive your answer on a scale of 1 to 5, where 1 "
    "means that the context does not contain any useful statements, and 5 means that the context "
    "contains multiple statements that provide the user with different pieces of information."
    + _TAIL
    + 'Context::: "{context}"\nAnswer:::',
    "c_clarity": "You will be given a context.\nThis context is a part of a collection of contexts "
    "that users can query.\nYour task is to provide a 'total rating' representing the clarity of "
    "the information contained in the context.\nGive your answer on a scale of 1 to 5, where 1 "
    "means that the context contains incomplete, unclear or poorly formatted information, and 5 "
    "means that the context contains only complete, clear and well formatted statements."
    + _TAIL
    + 'Context::: "{context}"\nAnswer:::',
    "qa_tautology": "You will be given a question and a passage, its answer.\nYour task is to judge "
    "whether this question and answer pair form a tautological exchange.\nGive your answer on a "
    "scale of 1 to 5, where 1 means that the question and answer repeat the same information, "
    "and 5 means that the answer is made of entirely new information."
    + _TAIL
    + 'Question::: "{question}"\nAnswer::: "{answer}"\nOutput:::',
}


def critique_prompt(name: str, item: CritiqueInput) -> str:
    return _PROMPTS[name].format(
        context=item.context[:4000], question=item.question, answer=item.answer
    )


_RATING = re.compile(r"\b([1-5])(?:\.\d+)?\b")


def parse_rating(text: str) -> float | None:
    """The 1–5 rating of a critique reply, or ``None``."""
    data = parse_json_object(text)
    if data is not None and "rating" in data:
        raw = data["rating"]
        if isinstance(raw, int | float) and not isinstance(raw, bool):
            value = float(raw)
        else:
            m = _RATING.search(str(raw))
            if m is None:
                return None
            value = float(m.group(1))
        return value if 1.0 <= value <= 5.0 else None
    m = re.search(r"rating\W{0,5}([1-5])\b", text, re.IGNORECASE)
    return float(m.group(1)) if m else None


class LLMCritic:
    """The App. I prompts through the runner (cached); one greedy sample each."""

    name = "llm"

    def __init__(self, runner: LLMRunner, *, critiques: Sequence[str] = CRITIQUES) -> None:
        self.runner = runner
        self.critiques = tuple(critiques)

    async def _one(self, name: str, item: CritiqueInput) -> float | None:
        if name in ("a_to_c_groundedness", "qa_tautology") and not item.answer.strip():
            return None
        request = ChatRequest.of(None, critique_prompt(name, item), max_tokens=200)
        outcome = await self.runner.try_complete(request, purpose=f"critique.{name}")
        if isinstance(outcome, LLMFailure):
            return None
        return parse_rating(outcome.text)

    async def critique_many(self, items: Sequence[CritiqueInput]) -> list[dict[str, float | None]]:
        async def one(item: CritiqueInput) -> dict[str, float | None]:
            scores = await asyncio.gather(*(self._one(n, item) for n in self.critiques))
            return dict(zip(self.critiques, scores, strict=True))

        return list(await asyncio.gather(*(one(i) for i in items)))
