"""Offline question-type labeller: deterministic rules over context, question and answer
(EN + ZH), each decision with the rule that made it.

The rules follow the definitions of seed 001, Table 1 / App. D, and label the
(context, question) pair: the gold answer is optional and the dataset's answerable flag
is not read.

1. the context does not answer the question → ``unanswerable``: most of the question's
   content words are absent from the context (seed 001's "Is tomato a fruit or a
   vegetable?" over a coffee patent), or the question expects an answer of a type (a
   date for "when", a number for "how many / how much", a year, a person for "who")
   and no sentence of the context about the question's terms holds a span of that type;
2. the answer holds a number that the context does not (a difference, a duration, a
   product), or the question asks for a comparison, an order, an elapsed time or a
   yes/no verdict → ``reasoning``;
3. the answer's content words are (almost all) in the context → stated: one unit →
   ``fact_single``; several units (clauses, list items, a question asking for several
   things, "summarise", "which ... and ...") → ``summary``;
4. part of the answer's words are in the context → ``reasoning`` (inferred from it);
5. hardly any → ``unanswerable``.

It is a heuristic, and its accuracy is measured, not assumed: see
``benchmarks/know_labels.py`` (hand labels of demo questions).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ragtriage.know._taxonomy import LabelDecision, LabelItem
from ragtriage.text import content_tokens, split_sentences

__all__ = ["RulesLabeller", "rules_label"]

#: share of the answer's content words found in the context above which it is "stated"
STATED = 0.75
#: the same when the question asks for several things
SUMMARY_STATED = 0.5
#: below this share the context does not support the answer at all
UNSUPPORTED = 0.3

_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_REASONING_EN = re.compile(
    r"\b(how (much|long) (time |later |earlier )?(passed|elapsed|after|before|between|did .* take)"
    r"|how (many|much) (\w+ )?(passed|elapsed|after|before|between|more|less|longer|fewer)"
    r"|how many (days|weeks|months|years|hours|minutes) (after|before|passed|between|elapsed)"
    r"|how long after|how long before|before or after|compare[ds]?|comparison|difference"
    r"|(more|less|higher|lower|faster|slower|earlier|later|larger|smaller) than|\b(older|younger)\b"
    r"|which .{0,60}\b(more|less|higher|lower|faster|slower|earlier|later|larger|smaller|first|last)\b"
    r"|why would|what would|would .* have|could .* have|if the\b|had .* been"
    r"|in what order|chronolog|net (increase|decrease|change)|on average|in total|altogether"
    r"|same (judge|court|person|company|doctor|hospital|day|year|\w+)|both)",
    re.IGNORECASE,
)
_YES_NO_EN = re.compile(
    r"^\s*(is|are|was|were|did|does|do|has|have|had|can|could|will|would|should)\b", re.I
)
_REASONING_ZH = re.compile(
    r"(相隔|间隔|相差|多久|多长时间|先后|顺序|谁的.{0,12}更|哪.{0,8}更|比较|相比|对比|是否|吗[？?]?$"
    r"|为什么会|如果|共计|合计|总共|一共|同一|之前还是之后|净增|增加了多少|减少了多少)"
)
_SUMMARY_EN = re.compile(
    r"\b(summari[sz]e|summary|main points|list|outline|describe|explain how|steps?|procedure|process"
    r"|what (\w+ ){0,3}(setbacks|complications|measures|reasons|factors|events|changes|risks"
    r"|symptoms|treatments|findings|terms|conditions|steps|actions|charges|products)"
    r"|which (\w+ ){0,3}(and|,)|, and (how|what|which|when|where|who|from|by)|and (how|what|which|when|where|who) )",
    re.IGNORECASE,
)
_SUMMARY_ZH = re.compile(
    r"(概括|总结|简述|列出|列举|哪些|有哪些|步骤|流程|分别|以及|及其|经过|过程|情况)"
)
_UNIT_SPLIT = re.compile(r"[;；:：]|(?<=[,，、])\s*|\band\b")


def _numbers(text: str) -> set[str]:
    return {m.group().replace(",", "") for m in _NUMBER.finditer(text)}


def _coverage(answer: str, context: str, question: str) -> tuple[float, int]:
    """Share of the answer's content tokens (those not already in the question) found in
    the context, and how many such tokens there were."""
    ctx = set(content_tokens(context))
    qtok = set(content_tokens(question))
    toks = [t for t in content_tokens(answer) if t not in qtok] or content_tokens(answer)
    if not toks:
        return 0.0, 0
    return sum(1 for t in toks if t in ctx) / len(toks), len(toks)


def _units(answer: str) -> int:
    """How many pieces of information the answer lists: sentences, clauses and list
    items with their own content words (at least three of them)."""
    pieces: list[str] = []
    for sentence in split_sentences(answer) or []:
        pieces.extend(p for p in _UNIT_SPLIT.split(sentence.text) if p)
    return sum(1 for p in pieces if len(content_tokens(p)) >= 3)


_Q_WORDS = {
    "what",
    "when",
    "who",
    "whom",
    "whose",
    "where",
    "why",
    "how",
    "which",
    "many",
    "much",
    "name",
    "year",
    "day",
    "date",
    "did",
    "does",
    "do",
    "was",
    "were",
    "is",
    "are",
}
_MONTHS = "january|february|march|april|may|june|july|august|september|october|november|december"
_TYPE_SPANS: dict[str, re.Pattern[str]] = {
    "date": re.compile(
        rf"\b\d{{1,2}} (?:{_MONTHS})\b|\b(?:{_MONTHS}) \d{{1,2}}\b|\b(?:{_MONTHS}) \d{{4}}\b"
        r"|\d{4}-\d{2}-\d{2}|\d{1,2}月\d{1,2}日|\d{4}年",
        re.IGNORECASE,
    ),
    "year": re.compile(r"\b(?:1[89]|20)\d{2}\b|\d{4}年"),
    "number": re.compile(
        r"\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|dozen)\b|[一二三四五六七八九十百千万亿]"
    ),
    "person": re.compile(
        r"\b(?:Dr|Mr|Ms|Mrs|Prof)\.? [A-Z]|\b[A-Z][a-z]+ [A-Z][a-z]+\b|(?:医师|法官|审判长|董事长|总经理|总监)[：:]?[\u4e00-\u9fff]{2,3}"
    ),
}
_EXPECTS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^\s*(?:in )?what year\b|哪一年|哪年", re.I), "year"),
    (
        re.compile(
            r"^\s*(?:when|on what (?:date|day)|what date)\b|何时|什么时候|哪一天|哪天|日期", re.I
        ),
        "date",
    ),
    (
        re.compile(
            r"\bhow (?:many|much|old|long|far)\b|\bwhat (?:percentage|share|amount)\b"
            r"|多少|几",
            re.I,
        ),
        "number",
    ),
    (
        re.compile(r"^\s*(?:who|whom)\b|\bname of the (?:person|doctor|judge|chair)|谁", re.I),
        "person",
    ),
)


def expected_type(question: str) -> str | None:
    """The type of answer a question asks for (date, year, number, person), if any."""
    for pattern, kind in _EXPECTS:
        if pattern.search(question):
            return kind
    return None


def _key_tokens(question: str) -> list[str]:
    return [t for t in content_tokens(question) if t not in _Q_WORDS]


def _stem(token: str) -> str:
    """A crude stem: the first five characters of a Latin word, CJK tokens as they are."""
    return token[:5] if token.isascii() else token


def _stems(text: str) -> set[str]:
    """Stems of the content words; Chinese text by characters (paraphrases keep them)."""
    out: set[str] = set()
    for t in content_tokens(text):
        if t.isascii():
            out.add(_stem(t))
        else:
            out.update(c for c in t if c not in _ZH_FUNCTION_CHARS and not c.isascii())
    return out


_ZH_FUNCTION_CHARS = set(
    "的是了在和与及或还也就都而之其于为被把对从到由向以所这那哪谁什么多少几个年月日吗呢？，。、"
)


_NO_SPAN_TYPE = re.compile(
    r"\bhow long\b|\bhow much (?:time|more|less|longer)\b| or |\bmore\b|\blonger\b|\bfaster\b"
    r"|\bbetween\b|\bafter\b|\bbefore\b|还是|谁的|更|相隔|之间",
    re.IGNORECASE,
)


def context_answers(question: str, context: str) -> tuple[bool, str]:
    """Whether the context can answer the question, judged from the two alone, and why.

    Most of the question's content words (stems) must be in the context, and when the
    question expects a date / year / number / person, a sentence of the context that
    shares the question's specific words (those not in most of its sentences, such as
    the entity's name) must hold a span of that type."""
    # a year the question asks about that the context never mentions cannot be answered
    # from it ("What was X's net profit in 2017?" of a report on 2021)
    for year in re.findall(r"(?<!\d)(?:19|20)\d{2}(?!\d)", question):
        if year not in context:
            return False, f"the question asks about {year}, which the context never mentions"
    keys = _stems(question) - _stems(" ".join(_Q_WORDS))
    if not keys:
        return True, "no content words to look up"
    ctx_stems = _stems(context)
    found = keys & ctx_stems
    share = len(found) / len(keys)
    if share < (0.4 if not question.isascii() else 0.3):
        return False, f"only {share:.0%} of the question's content words are in the context"
    kind = expected_type(question)
    if _NO_SPAN_TYPE.search(question):
        kind = None  # a comparison or an interval: the answer is derived, not a span
    if kind is None:
        return True, f"{share:.0%} of the question's content words are in the context"
    sentences = [s.text for s in split_sentences(context) if s.text.strip()]
    stems_of = [_stems(s) for s in sentences]
    # the sentence is picked by the question's common words ("employment judge"), not by
    # its names (the context may call the entity "the defendant")
    plain = _stems(" ".join(w for w in re.findall(r"\b[a-z][\w'-]*", question))) & found
    common = {k for k in found if sum(k in st for st in stems_of) > max(2, 0.3 * len(sentences))}
    specific = (plain - common) or plain or (found - common) or found
    need = max(1, round(0.5 * len(specific)))
    q_numbers = set(_NUMBER.findall(question))
    for s, stems in zip(sentences, stems_of, strict=True):
        if len(specific & stems) < need:
            continue
        body = s
        # the question's own names and numbers are not the answer
        for n in q_numbers | set(re.findall(r"\b[A-Z][\w'-]+", question)):
            body = body.replace(n, " ")
        if _TYPE_SPANS[kind].search(body):
            return True, f"a sentence about the question's terms holds a {kind}"
    return False, (
        f"the question asks for a {kind} and no sentence of the context about its terms holds one"
    )


def _question_cue(question: str, patterns: Sequence[re.Pattern[str]]) -> str | None:
    for pattern in patterns:
        m = pattern.search(question)
        if m is not None:
            return m.group().strip()
    return None


def rules_label(item: LabelItem) -> LabelDecision:
    """Label one pair; the reason names the rule and the evidence it used."""

    def decide(label: str, reason: str) -> LabelDecision:
        return LabelDecision(
            example_id=item.example_id,
            label=label,
            reason=reason,
            labeller="rules",
            votes=(label,),
            mode_frequency=1.0,
            given_label=item.given_label,
        )

    q = item.question
    answer = item.answer.strip()
    source = f"{item.context}\n{item.documents}"
    if not item.context.strip():
        return decide("unanswerable", "no ground-truth context to answer from")
    answers, why = context_answers(q, source)
    if not answers:
        return decide("unanswerable", f"from the context alone: {why}")
    reasoning_cue = _question_cue(q, (_REASONING_EN, _REASONING_ZH))
    if reasoning_cue is None and _YES_NO_EN.search(q):
        reasoning_cue = "a yes/no question"
    summary_cue = _question_cue(q, (_SUMMARY_EN, _SUMMARY_ZH))
    if not answer:
        if reasoning_cue:
            return decide("reasoning", f"no answer given; the question asks {reasoning_cue!r}")
        if summary_cue:
            return decide("summary", f"no answer given; the question asks {summary_cue!r}")
        return decide("fact_single", "no answer given; a plain question about the context")
    derived = sorted(_numbers(answer) - _numbers(source) - _numbers(q))
    if derived:
        return decide(
            "reasoning",
            f"the answer's value(s) {', '.join(derived[:3])} are not in the context: derived from it",
        )
    if reasoning_cue:
        return decide("reasoning", f"the question asks {reasoning_cue!r}: inferred, not stated")
    cov, n = _coverage(answer, source, q)
    if cov >= (SUMMARY_STATED if summary_cue else STATED):
        units = _units(answer)
        if summary_cue:
            return decide(
                "summary",
                f"stated in the context ({cov:.0%} of the answer's words); the question asks {summary_cue!r}",
            )
        if units >= 3 or (units >= 2 and n >= 12):
            return decide(
                "summary",
                f"stated in the context ({cov:.0%} of the answer's words) in {units} parts",
            )
        return decide(
            "fact_single", f"stated in the context ({cov:.0%} of the answer's words), one unit"
        )
    if cov >= UNSUPPORTED:
        return decide(
            "reasoning",
            f"only {cov:.0%} of the answer's words are in the context: inferred, not stated",
        )
    return decide("unanswerable", f"only {cov:.0%} of the answer's words are in the context")


class RulesLabeller:
    """The offline labeller (see the module docstring)."""

    name = "rules"

    async def label_many(self, items: Sequence[LabelItem]) -> list[LabelDecision]:
        return [rules_label(i) for i in items]
