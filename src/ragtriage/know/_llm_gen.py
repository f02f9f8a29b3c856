"""LLM test-set generators: the simple prompt of seed 001 App. E (baseline) and the
statement-extraction pipeline of App. G (theme → ≤ 5 factual statements → summary
statements and reasoning conclusions → one question per statement).

Every call goes through the runner (cached, so an interrupted run resumes at the cost
of the missing calls only). In a dry run each uncached step is replaced by a
placeholder so that the steps after it are estimated too. References are verbatim
sentences of the source chunk that best match the statement (rapidfuzz), so they
always locate in the chunk.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

from rapidfuzz import fuzz

from ragtriage.know._offline_gen import Draft, OfflineGenerator
from ragtriage.llm import ChatRequest, LLMFailure, LLMRunner, parse_json_object
from ragtriage.records import Chunk, Document
from ragtriage.text import content_tokens, detect_language, split_sentences

__all__ = ["SimplePromptGenerator", "StatementGenerator", "best_sentences", "bullets"]

# Adapted from seed 001 (Know Your RAG), Appendix G "Statement Extraction Prompts".
THEME = "In a few words, extract the main theme behind the following passage: [[{context}]]"
FACTS = """Extract at most five factual statements based on the following passage and its theme. You need to strictly comply with the following guidelines:
- Each statement must contain a single unit of factual information.
- Each statement must be written in the style of an answer to a factual question.
- Each statement must be understandable without the aid of any other source of information.
- Each statement must include contextual information derived from the passage theme.
- Each statement must only contain information that exists in the original passage and theme.
- Each statement must be independent from the other statements.
Generate the statements as a bullet list with the following format:
> Statement
> Statement
Theme: [[{theme}]]
Passage: [[{context}]]"""
SUMMARIES = """Merge the following sentences into three summary statements. Each summary statement must summarise information contained in more than one sentence.
Each summary statement must be independent and non-overlapping.
Each summary statement should be a complete sentence.
Each summary statement can include contextual information contained in the theme below.
Each summary statement must be understandable without the aid of any other source of information.
Generate the statements as a bullet list with the following format:
> Summary statement
> Summary statement
> Summary statement
Theme: [[{theme}]]
Sentences:[[
{statements}
]]"""
CONCLUSIONS = """Generate three reasoning conclusions that can be drawn from the following statements.
A reasoning conclusion is an inferred piece of information obtained from critically analysing a group of multiple statements.
Reasoning conclusions do not contain information directly contained on any statements.
Each conclusion must be independent and non-overlapping.
Each conclusion should be a complete sentence.
Each conclusion must be understandable without the aid of any other source of information.
Each conclusion can include contextual information contained in the theme below.
Generate the conclusions as a bullet list with the following format:
> conclusion
> conclusion
> conclusion
Theme: [[{theme}]]
Statements:[[
{statements}
]]"""
QUESTION = """I have a paragraph with the following theme:
[[{theme}]]
From this paragraph, I extracted the following statement:
[[{statement}]]
Generate one question which is answered only by the statement above.
In order to avoid generic questions, use contextual information from the theme to formulate the question.
The question should be concise and in the style of a user asking questions to a search engine.
Generate the question as a bullet list with the following format:
> Question
Do not output anything else other than the question."""
# Adapted from seed 001, Appendix E (itself from the Hugging Face RAG evaluation cookbook).
SIMPLE = """Your task is to write a factoid question and an answer given a context.
Your factoid question should be answerable with a specific, concise piece of factual information from the context.
Your factoid question should be formulated in the same style as questions users could ask in a search engine.
This means that your factoid question MUST NOT mention something like "according to the passage" or "context".
Provide your answer as a JSON dictionary as follows:
Output::
{{"question": "your factoid question", "answer": "your answer to the factoid question"}}
Now here is the context.
Context:
[[{context}]]
Output::"""
_ZH_NOTE = "\n(The passage is in Chinese: write every statement and question in Chinese.)"
_PLACEHOLDER = "> placeholder statement of a dry run"
_BULLET = re.compile(r"^\s*(?:>|[-*•]|\d+[.)、]|（\d+）)\s*(.+?)\s*$")


def bullets(text: str) -> list[str]:
    """The items of a ``> item`` bullet list (also ``-``, ``*``, ``1.``)."""
    out = []
    for line in text.splitlines():
        m = _BULLET.match(line)
        if m and m.group(1).strip():
            out.append(m.group(1).strip())
    return out


def best_sentences(context: str, statement: str, n: int = 1) -> tuple[str, ...]:
    """The ``n`` sentences of ``context`` most similar to ``statement`` (verbatim)."""
    body = "\n".join(line for line in context.splitlines() if not line.lstrip().startswith("#"))
    sentences = [s.text for s in split_sentences(body) if len(content_tokens(s.text)) >= 3]
    if not sentences:
        return ()
    ranked = sorted(sentences, key=lambda s: -fuzz.token_set_ratio(s, statement))
    return tuple(ranked[:n])


class _LLMBase:
    def __init__(self, runner: LLMRunner, documents: Sequence[Document], chunks: Sequence[Chunk]):
        self.runner = runner
        self.offline = OfflineGenerator(documents, chunks)
        self.documents = {d.doc_id: d for d in documents}

    def _zh(self, chunk: Chunk) -> bool:
        return detect_language(chunk.text[:2000]) == "zh"

    async def _ask(self, prompt: str, purpose: str, max_tokens: int = 400) -> str | None:
        outcome = await self.runner.try_complete(
            ChatRequest.of(None, prompt, max_tokens=max_tokens), purpose=purpose
        )
        if isinstance(outcome, LLMFailure):
            if outcome.kind == "dry_run":  # unique, so that later steps are estimated too
                return f"{_PLACEHOLDER} {hashlib.sha256(prompt.encode()).hexdigest()[:12]}"
            return None
        return outcome.text


class StatementGenerator(_LLMBase):
    """Seed 001 §6 statement extraction (App. G)."""

    name = "llm-statements"

    def __init__(
        self, runner: LLMRunner, documents: Sequence[Document], chunks: Sequence[Chunk]
    ) -> None:
        super().__init__(runner, documents, chunks)
        self._statements: dict[str, tuple[str, dict[str, list[str]]] | None] = {}

    async def _pipeline(self, chunk: Chunk) -> tuple[str, dict[str, list[str]]] | None:
        if chunk.chunk_id in self._statements:
            return self._statements[chunk.chunk_id]
        note = _ZH_NOTE if self._zh(chunk) else ""
        result: tuple[str, dict[str, list[str]]] | None = None
        theme = await self._ask(THEME.format(context=chunk.text) + note, "testset.theme", 60)
        if theme is not None and theme.strip():
            theme = theme.strip().splitlines()[0].strip("> ")
            facts_text = await self._ask(
                FACTS.format(theme=theme, context=chunk.text) + note, "testset.facts"
            )
            facts = bullets(facts_text or "")[:5]
            if facts:
                listed = "\n".join(facts)
                summ = await self._ask(
                    SUMMARIES.format(theme=theme, statements=listed) + note, "testset.summaries"
                )
                concl = await self._ask(
                    CONCLUSIONS.format(theme=theme, statements=listed) + note,
                    "testset.conclusions",
                )
                result = (
                    theme,
                    {
                        "fact_single": facts,
                        "summary": bullets(summ or ""),
                        "reasoning": bullets(concl or ""),
                    },
                )
        self._statements[chunk.chunk_id] = result
        return result

    async def draft_list(self, chunk: Chunk, label: str) -> list[Draft]:
        if label == "unanswerable":
            return list(self.offline.unanswerable(chunk))[:1]
        found = await self._pipeline(chunk)
        if found is None:
            return []
        theme, statements = found
        out: list[Draft] = []
        zh = self._zh(chunk)
        for statement in statements.get(label, []):
            reply = await self._ask(
                QUESTION.format(theme=theme, statement=statement) + (_ZH_NOTE if zh else ""),
                "testset.question",
                80,
            )
            questions = bullets(reply or "") or ([reply.strip()] if reply and reply.strip() else [])
            if not questions:
                continue
            n_refs = 1 if label == "fact_single" else 2
            out.append(
                Draft(
                    question=questions[0],
                    answer=statement,
                    label=label,
                    references=best_sentences(chunk.text, statement, n_refs),
                    chunk_ids=(chunk.chunk_id,),
                    doc_id=chunk.doc_id,
                    language="zh" if zh else "en",
                    generator=self.name,
                    context=chunk.text,
                    extra={"theme": theme},
                )
            )
        return out


class SimplePromptGenerator(_LLMBase):
    """The App. E baseline: one factoid (question, answer) per chunk. Whatever label is
    asked for, it makes a factoid: the point of the baseline (seed 001 §6: 95 % of its
    output is fact_single)."""

    name = "llm-simple"

    async def draft_list(self, chunk: Chunk, label: str) -> list[Draft]:
        if label == "unanswerable":
            return []
        note = _ZH_NOTE if self._zh(chunk) else ""
        reply = await self._ask(SIMPLE.format(context=chunk.text) + note, "testset.simple", 200)
        data = parse_json_object(reply or "")
        if (
            not data
            or not str(data.get("question", "")).strip()
            or not str(data.get("answer", "")).strip()
        ):
            return []
        answer = str(data["answer"]).strip()
        return [
            Draft(
                question=str(data["question"]).strip(),
                answer=answer,
                label="fact_single",
                references=best_sentences(chunk.text, answer, 1),
                chunk_ids=(chunk.chunk_id,),
                doc_id=chunk.doc_id,
                language="zh" if self._zh(chunk) else "en",
                generator=self.name,
                context=chunk.text,
            )
        ]
