"""How real LLM answers are written, and what an answer evaluation should read in them.

Real answers are rarely one sentence. A GPT-4-class model writes a chain of thought over the
documents, markdown lists, citations such as "(Doc 2)" or "[1]", and a conclusion ("Thus, the
answer is …", "综上所述，…"); it declines inside its reasoning ("none of these documents
provide the specific stock exchange…") or for one part of a question only. This module turns
an answer into an :class:`AnswerView` that the rules judge reads:

| what | how | failure it addresses (issue #9) |
|---|---|---|
| ``text`` | markdown markers and citations removed, one space between words | "**Revenue:** 3.2 million (Doc 2)" read as noise |
| ``final`` | the text from the last conclusion marker on; else the last paragraph of a multi-paragraph answer; else everything | a reasoning answer judged on its review of the documents, not on what it concludes |
| ``declines`` | sentences that decline (abstention cues, EN and ZH) anywhere in the answer | abstentions stated inside long reasoning counted as answers (E9 on unanswerable questions) |
| ``final_declines`` | the conclusion declines | a verbose abstention read as an answer |
| ``last_declines`` | the answer's last sentence declines | a one-paragraph abstention that first reviews the documents ("The passage describes … It does not give …, so I can't answer that") read as a wrong answer |
| ``guesses`` | the answer guesses after declining ("…but it is likely …", "可能是") | a hedged guess on an unanswerable question read as an abstention |

Pure and deterministic; linear in the answer length.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from ragtriage._regex import lazy_compile
from ragtriage.text import FoldedPattern, Sentence, has_cjk, split_sentences

__all__ = [
    "AnswerView",
    "answer_view",
    "clean_answer",
    "declining_sentence",
]

# -- cleaning -------------------------------------------------------------------------

# "[ \t]*[\[【(（]" written to open with one character class (a blank or a bracket,
# then more blanks and a bracket only after a blank), so the regex engine skips ahead
CITATIONS = _CITATIONS = lazy_compile(
    r"[ \t\[【(（](?:(?<=[\[【(（])|(?<=[ \t])[ \t]*[\[【(（])"
    r"\s*(?:(?:docs?|documents?|sources?|passages?|chunks?|refs?|references?|"
    r"contexts?|文档|文件|资料|来源|段落|参考)\s*[:：#]?\s*)?"
    r"(?:\d{1,3}|[A-Z])(?:\s*(?:[,，;；、]|-|–|and|&|和)\s*(?:(?:docs?|documents?|文档)\s*)?"
    r"(?:\d{1,3}|[A-Z]))*\s*[\]】)）]",
    re.IGNORECASE,
)
# "Document 2 says …", "文档3显示…": a label's number is no value of the answer
DOC_LABEL = _DOC_LABEL = lazy_compile(
    r"\b((?:[Dd]oc(?:ument)?|DOC|[Pp]assage|[Ss]ource|[Cc]hunk|[Ee]xcerpt)s?)[ \t]*#?[ \t]*\d{1,3}\b|"
    r"(文档|文件|资料|段落|片段|来源)[ \t]*\d{1,3}(?!\d)"
)


# the same, with a lookahead for the labels' first characters (the engine then skips
# most positions without trying each alternative; tests/test_fast_paths.py)
_DOC_LABEL_FAST = lazy_compile(r"(?=[DdPpSsCcEe文资段片来])(?:" + _DOC_LABEL.pattern + ")")


_LABEL_WORDS = ("doc", "passage", "source", "chunk", "excerpt")
_ZH_LABEL_WORDS = ("文档", "文件", "资料", "段落", "片段", "来源")
_DIGIT = lazy_compile(r"\d")


def _may_hold_label(line: str) -> bool:
    """What every _DOC_LABEL match needs: a digit and a label word (its letters lower
    case in the lower-cased line)."""
    if _DIGIT.search(line) is None:
        return False
    low = line.lower()
    return any(w in low for w in _LABEL_WORDS) or (
        not line.isascii() and any(w in line for w in _ZH_LABEL_WORDS)
    )


def _label_only(m: re.Match[str]) -> str:
    return m.group(1) or m.group(2) or ""


_MD_LINE = lazy_compile(
    r"^[ \t]*(?:#{1,6}[ \t]+|>[ \t]*|(?:[-*+•·]|\d{1,2}[.)、]|[（(]\d{1,2}[)）])[ \t]+)"
)
# (?=[*_`]): every alternative starts so; tried first, it spares the others' lookbehinds
_MD_EMPH = lazy_compile(r"(?=[*_`])(?:\*\*|__|(?<!\w)\*(?!\s)|(?<!\s)\*(?!\w)|`+)")
_TABLE_RULE = lazy_compile(r"^[ \t]*\|?[ \t:|-]{3,}\|?[ \t]*$")
_SPACES = lazy_compile(r"[ \t]+")


@lru_cache(maxsize=2048)
def clean_answer(answer: str) -> str:
    """The answer without markdown markers (headers, bullets, emphasis, table rules) and
    citations ("[1]", "[2, 3]", "【1】", "(Doc 2)", "[Document 1]", "（文档2）"), lines
    kept, runs of spaces folded. Text is never reordered, so a conclusion stays last."""
    lines = []
    for line in answer.replace("\r\n", "\n").split("\n"):
        if _TABLE_RULE.match(line):
            continue
        line = _MD_LINE.sub("", line)
        # each pattern needs one of these characters: most lines are spared its scan
        if "_" in line or "`" in line:
            line = _MD_EMPH.sub("", line)
        elif "*" in line:
            # asterisks in even runs only: the pattern takes them two by two
            paired = line.count("**")
            line = (
                line.replace("**", "") if 2 * paired == line.count("*") else _MD_EMPH.sub("", line)
            )
        if "|" in line:
            line = line.strip().strip("|").replace("|", ",")
        if "(" in line or "[" in line or "（" in line or "【" in line:
            line = _CITATIONS.sub("", line)
        if _may_hold_label(line):
            line = _DOC_LABEL_FAST.sub(_label_only, line)
        if "  " in line or "\t" in line:  # else every run is one space already
            line = _SPACES.sub(" ", line)
        lines.append(line.strip())
    return "\n".join(lines).strip()


# -- declining --------------------------------------------------------------------------

_EN_DECLINE = lazy_compile(
    r"\b(?:"
    r"i\s+(?:do\s*n[o']?t|don't|cannot|can't)\s+(?:know|say|tell|find|answer|determine)"
    r"|i\s*(?:'m|am)\s+(?:not\s+sure|unable|sorry)"
    r"|(?:not|insufficient|no)\s+(?:enough\s+)?(?:sufficient\s+)?(?:relevant\s+)?"
    r"(?:context|info)"
    r"|(?:no|not\s+(?:any|enough)|insufficient|lack\s+of|without)\s+(?:sufficient\s+|specific\s+|"
    r"relevant\s+|explicit\s+|further\s+|direct\s+|detailed\s+|such\s+|[a-z]+-[a-z]+\s+)*"
    r"(?:information|info|data|details|evidence|mention|indication|record|figures?)"
    r"|(?:is|are|was|were|has\s+been|have\s+been)\s+not\s+(?:explicitly\s+|directly\s+|clearly\s+|"
    r"specifically\s+)?(?:mentioned|stated|specified|provided|given|available|found|included|"
    r"addressed|disclosed|described|reported|covered|listed|detailed|known|clear|indicated|"
    r"contained|present)"
    r"|(?:does|do|did)\s*(?:n't|\s+not)\s+(?:explicitly\s+|directly\s+|specifically\s+|clearly\s+)?"
    r"(?:provide|mention|specify|contain|include|state|say|give|indicate|disclose|address|"
    r"describe|offer|cover|report|discuss|list|detail|reference)"
    r"|(?:none|neither)\s+of\s+(?:the\s+|these\s+|those\s+)?(?:provided\s+|given\s+|retrieved\s+)?"
    r"(?:documents?|passages?|sources?|contexts?|texts?|excerpts?|chunks?|docs?)"
    r"|(?:cannot|can't|can\s+not|could\s+not|couldn't|unable\s+to|impossible\s+to|"
    r"not\s+possible\s+to)\s+(?:be\s+)?(?:(?:reliably|accurately|definitively|fully|"
    r"directly)\s+)?(?:answer|determin|find|infer|conclud|identif|say|tell|know|provid|"
    r"verif|confirm|establish|ascertain|compar|state|specif|give|quote|complet|calculat|"
    r"comput)\w*"
    r"|unanswerable|no\s+answer|unknown(?!\s+to\b)|not\s+known(?!\s+to\b)"
    r"|(?:is|are|was|were|remains?)\s+silent\s+(?:on|about|as\s+to|regarding)"
    # a bare "Not specified." / "N/A" ending the answer or sentence
    r"|(?:not\s+(?:specified|mentioned|stated|given|provided|available|found)|n/a)"
    r"(?=\s*[.!]?\s*$)"
    r"|there\s+(?:is|are)\s+no\s+(?:specific\s+|explicit\s+|relevant\s+|available\s+)?"
    r"(?:information|mention|data|record|evidence|details?|indication)"
    r")\b",
    re.IGNORECASE,
)
_ZH_DECLINE = lazy_compile(
    r"(?:无法|不能|难以)(?:[^，。；！？,.;]{0,12}?)(?:回答|确定|得知|判断|知道|提供|找到|获取|获得|得出|"
    r"给出|确认|比较|断定|获知|知晓|作答)|无法从|无从|不知道|不清楚|不确定|"
    r"(?:没有|未|并未|并没有|未能|均未|都未|均没有|都没有)(?:直接|明确|具体)?"
    r"(?:提供|提到|提及|说明|明确|给出|找到|涉及|披露|记载|包含|显示|列出|描述|记录)|"
    r"(?:没有|缺乏|缺少|无)(?:相关|足够|具体|明确|关于)?(?:的)?(?:信息|资料|数据|内容|记录|说明|描述)|"
    r"(?:没有|缺乏|缺少|无|未见)(?:关于|有关|涉及)[^，。；！？,.;]{1,30}?的?(?:信息|资料|数据|内容|记录|说明|描述)|"
    r"信息(?:不足|不够|有限)|找不到|未知|不得而知|不详"
)
# a guess after declining: the answer commits to a candidate it says it cannot support
_GUESS = lazy_compile(
    r"\b(?:likely|probably|presumably|possibly|may\s+have\s+been|might\s+(?:have\s+)?be(?:en)?|"
    r"it\s+is\s+(?:reasonable|plausible)\s+to\s+(?:assume|infer)|my\s+best\s+guess|"
    r"based\s+on\s+(?:general|my|common)\s+knowledge|roughly|an\s+estimated?|estimated\s+at|"
    r"(?:based\s+on|judging\s+by|compared\s+with)\s+(?:similar|comparable|typical|peer)|"
    r"industry\s+averages?)\b|可能是|大概是|推测|估计是|据常识|参照|大约|估算|推算|同等规模|同类企业",
    re.IGNORECASE,
)
# conclusion markers at the start of a sentence or line (EN, ZH)
_CONCLUSION = lazy_compile(
    r"(?:^|(?<=[\n.!?。！？：:]))\s*(?:"
    r"(?:thus|therefore|hence|so|consequently|accordingly|overall|in\s+(?:conclusion|summary|short|sum)|"
    r"to\s+(?:summarize|summarise|sum\s+up|conclude|answer\s+(?:the|your)\s+question)|"
    r"in\s+short|all\s+in\s+all|final\s+answer|(?:the\s+)?(?:short\s+|final\s+|direct\s+)?answer)"
    r"\b[\s,:：]*"
    r"|综上所述|综上|因此|所以|总之|总的来说|总而言之|总结(?:一下|来说)?|结论|答案(?:是|为)|最终答案"
    r")",
    re.IGNORECASE,
)
# clause boundaries inside a sentence: a decline often covers one clause only
_CLAUSES = lazy_compile(
    r"[;；，,]|\s+(?:but|while|whereas|however|although)\s+|而|但是|然而|不过", re.IGNORECASE
)
_PARAGRAPH = lazy_compile(r"\n[ \t]*\n")
_MD_LIST_ITEM = lazy_compile(r"^[ \t]*(?:[-*+•·]|\d{1,2}[.)、]|[（(]\d{1,2}[)）])[ \t]+")
#: a last paragraph this long is part of the reasoning, not its conclusion
_MAX_FINAL_SENTENCES = 3
#: a last paragraph that opens so adds to the answer; it does not conclude it
_ADDENDUM = lazy_compile(
    r"\s*(?:additionally|in\s+addition|also|moreover|furthermore|besides|note\s+that|"
    r"(?:it\s+is\s+)?worth\s+noting|as\s+a\s+side\s+note|by\s+the\s+way)\b"
    r"|\s*(?:此外|另外|另需|同时|而且|并且|值得(?:注意|一提)的是|补充(?:说明|一下)?|顺便)",
    re.IGNORECASE,
)


@lru_cache(maxsize=4096)
def declining_sentence(sentence: str) -> bool:
    """True when the sentence declines (says the material does not tell), EN or ZH.
    Cached: the answer evaluation asks it of one answer text several times."""
    # every Chinese cue starts with a CJK character (tests/test_fast_paths.py)
    return bool(
        _EN_DECLINE_FAST.search(sentence)
        or (has_cjk(sentence) and _ZH_DECLINE_FAST.search(sentence))
    )


# The same patterns, searched faster: a lookahead for the first characters of the cues
# lets the regex engine skip most positions without trying every alternative (each
# alternative starts with one of these; tests/test_fast_paths.py compares both forms).
_EN_DECLINE_FAST = FoldedPattern(
    lazy_compile(r"\b(?=[inlwahdcutr])" + _EN_DECLINE.pattern[2:], _EN_DECLINE.flags)
)
_ZH_DECLINE_FAST = lazy_compile(r"(?=[无不难找没未并均都缺信])(?:" + _ZH_DECLINE.pattern + ")")
_WORD = lazy_compile(r"\w")


def _declining(text: str, sentences: list[Sentence]) -> tuple[str, ...]:
    """The sentences of ``text`` that decline (:func:`declining_sentence` of each), found
    by searching ``text`` forward once per declining sentence instead of once per
    sentence. A match that starts inside a sentence and ends in it is the sentence's (the
    cue patterns look at no character outside their match but for ``\\b``, which sees the
    same non-word character at a sentence's edge in both); a sentence with no match
    starting inside it has none; anything else (a sentence that is no plain slice of
    ``text``, a word character at its edge, a match running past its end) is searched
    alone."""
    low = _EN_DECLINE_FAST.lowered(text)
    cjk = has_cjk(text)
    searches: list[tuple[Callable[[str, int], re.Match[str] | None], str]] = []
    if low is not None:
        searches.append((_EN_DECLINE_FAST.search_lowered, low))
    else:
        searches.append((_EN_DECLINE_FAST.search, text))
    if cjk:
        searches.append((_ZH_DECLINE_FAST.search, text))
    # per search: the first match at or after the last sentence start, or None (no more)
    ahead: list[re.Match[str] | bool | None] = [True] * len(searches)
    out: list[str] = []
    n = len(text)
    for sent in sentences:
        a, b = sent.start, sent.end
        plain = (
            text[a:b] == sent.text
            and (a == 0 or _WORD.match(text, a - 1) is None)
            and (b == n or _WORD.match(text, b) is None)
        )
        if not plain:
            if declining_sentence(sent.text):
                out.append(sent.text)
            continue
        hit = False
        for i, (search, where) in enumerate(searches):
            m = ahead[i]
            if m is True or (isinstance(m, re.Match) and m.start() < a):
                m = ahead[i] = search(where, a)
            if not isinstance(m, re.Match) or m.start() >= b:
                continue
            if m.end() <= b or declining_sentence(sent.text):
                hit = True
                break
        if hit:
            out.append(sent.text)
    return tuple(out)


@dataclass(frozen=True, slots=True)
class AnswerView:
    """One answer as the rules judge reads it (see the module table)."""

    #: the cleaned answer
    text: str
    #: the committed final answer (a suffix of ``text``)
    final: str
    #: how ``final`` was found: a conclusion marker's words, "last paragraph", or "whole answer"
    final_from: str
    #: sentences of ``text`` that decline, in order
    declines: tuple[str, ...]
    #: clauses of ``declines`` that carry the declining words ("…, while B's is unknown")
    declining_clauses: tuple[str, ...]
    #: the final answer declines
    final_declines: bool
    #: the last sentence declines
    last_declines: bool
    #: the answer guesses after declining
    guesses: bool
    #: number of sentences in ``text``
    n_sentences: int

    @property
    def verbose(self) -> bool:
        """A reasoning-style answer: a conclusion marker, or three sentences or more."""
        return self.final_from != "whole answer" or self.n_sentences >= 3

    @property
    def declines_somewhere(self) -> bool:
        return bool(self.declines)


# _CONCLUSION without its anchor, and the places it may match: after a sentence mark,
# blanks and the first character of a marker (the scan for these skips ahead; the
# regex engine would try the anchor at every position)
_CONCLUSION_TAIL = lazy_compile(_CONCLUSION.pattern[len(r"(?:^|(?<=[\n.!?。！？：:]))") :], re.I)
_CONCLUSION_AT = lazy_compile(r"[\n.!?。！？：:](?=\s*[thscaoifd综因所总结答最])", re.I)


def _last_conclusion(text: str) -> re.Match[str] | None:
    """The last match of ``_CONCLUSION.finditer(text)``: the anchor holds at 0 and after
    each sentence mark only, so the tail is tried there, skipping the places an earlier
    match covers, as finditer does."""
    last = _CONCLUSION_TAIL.match(text) if text else None
    covered = last.end() if last is not None else 0
    for at in _CONCLUSION_AT.finditer(text):
        p = at.start() + 1
        if p < covered:
            continue
        m = _CONCLUSION_TAIL.match(text, p)
        if m is not None:
            last, covered = m, m.end()
    return last


def _final(text: str, raw: str) -> tuple[str, str]:
    last = _last_conclusion(text)
    if last is not None:
        rest = text[last.start() :].strip()
        # "So, the answer is …" with nothing after it is no conclusion
        if len(rest) > len(last.group(0).strip()) + 1:
            return rest, " ".join(last.group(0).split()).rstrip(",:：").lower() or "marker"
    # no marker: the last paragraph of a reasoning answer, when it is prose (the last
    # item of a markdown list is no conclusion) and short
    paragraphs = [p for p in _PARAGRAPH.split(raw) if p.strip()]
    if len(paragraphs) >= 2:
        last_raw = paragraphs[-1]
        listed = any(_MD_LIST_ITEM.match(line) for line in last_raw.splitlines())
        closing = clean_answer(last_raw)
        if (
            not listed
            and closing
            and len(split_sentences(closing)) <= _MAX_FINAL_SENTENCES
            and not _ADDENDUM.match(closing)
        ):
            return closing, "last paragraph"
    return text, "whole answer"


@lru_cache(maxsize=2048)
def answer_view(answer: str) -> AnswerView:
    """Read ``answer`` (see :class:`AnswerView`)."""
    text = clean_answer(answer)
    final, final_from = _final(text, answer)
    sentences = split_sentences(text) if text else []
    # a sentence declines only if the whole answer holds a declining cue: most answers
    # hold none, and one search of the answer spares one per sentence
    any_decline = bool(text) and declining_sentence(text)
    declines = _declining(text, sentences) if any_decline else ()
    clauses = tuple(
        c.strip()
        for d in declines
        for c in _CLAUSES.split(d)
        if c.strip() and declining_sentence(c)
    )
    final_declines = any_decline and declining_sentence(final)
    guesses = False
    if declines:
        # a guess counts only after the first declining sentence
        first = text.find(declines[0])
        guesses = bool(_GUESS.search(text, max(first, 0)))
    return AnswerView(
        text=text,
        final=final,
        final_from=final_from,
        declines=declines,
        declining_clauses=clauses,
        final_declines=final_declines,
        last_declines=bool(declines) and declines[-1] == sentences[-1].text,
        guesses=guesses,
        n_sentences=len(sentences),
    )
