"""Offline reverse-question generation for answer relevancy (EN and ZH, rule-based).

RAGAS asks an LLM to write the question an answer answers and compares it with the real
question by cosine similarity. Offline, the answer's *main claim* (its first sentence
that does not decline) is turned into questions by rules: the claim's answer slot is
found and replaced by a wh-word of the slot's type —

=========  ===========================  ===================
slot       English                      Chinese
=========  ===========================  ===================
number     how many (counted) / how     多少
           much (amounts, %, money)
date       when                         何时
person     who                          谁
other      what                         什么
=========  ===========================  ===================

English questions front the wh-word and invert the first auxiliary ("Acme was founded
in 1999." → "When was Acme founded?"); Chinese questions keep the wh-word in place
("阿克米公司成立于1999年。" → "阿克米公司成立于何时？"). One question per slot type
found in the main claim (at most three); a claim with no slot gives a "what" question.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, Literal

from ragtriage.diagnosis.answer_styles import declining_sentence
from ragtriage.metrics._context import answer_claims
from ragtriage.text import STOPWORDS_EN, has_cjk, nfkc

__all__ = ["Slot", "find_slots", "main_claim", "reverse_questions"]

SlotType = Literal["number", "date", "person", "other"]
MAX_QUESTIONS: Final = 3

_MONTHS = (
    "January|February|March|April|May|June|July|August|September|October|November|December|"
    "Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec"
)
_EN_DATE = re.compile(
    rf"\b(?:(?:in|on|since|during|by|from|around|until|before|after)\s+)?"
    rf"(?:(?:(?:{_MONTHS})\.?\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}})"
    rf"|(?:\d{{1,2}}(?:st|nd|rd|th)?\s+(?:{_MONTHS})\.?,?\s+\d{{4}})"
    rf"|(?:(?:{_MONTHS})\.?\s+\d{{4}})"
    rf"|(?:\d{{4}}-\d{{2}}-\d{{2}})"
    rf"|(?:(?:1[5-9]|20)\d{{2}}s?))\b"
)
_EN_AMOUNT = re.compile(
    r"(?:[$€£¥]\s?\d[\d,]*(?:\.\d+)?(?:\s*(?:million|billion|thousand|trillion|[mbk]n?))?)"
    r"|(?:\b\d[\d,]*(?:\.\d+)?\s*(?:%|percent\b|per cent\b|(?:million|billion|thousand|"
    r"trillion)?\s*(?:dollars|euros|pounds|yuan|yen|usd|eur|gbp|rmb)\b))",
    re.IGNORECASE,
)
_EN_WORD_NUM = (
    r"one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|forty|"
    r"fifty|hundred|thousand|dozen"
)
_EN_COUNT = re.compile(
    rf"\b(?:\d[\d,]*(?:\.\d+)?|{_EN_WORD_NUM})(?:\s+(?:million|billion|thousand))?"
    r"(?=\s+[a-z])",
    re.IGNORECASE,
)
_EN_NUMBER = re.compile(r"\b\d[\d,]*(?:\.\d+)?\b")
_NAME = (
    r"(?:(?:Mr|Mrs|Ms|Dr|Prof|Sir)\.?\s+)?[A-Z][a-z]+(?:\s+(?:[A-Z]\.|[A-Z][a-z]+|de|van|von)){1,3}"
)
_EN_PERSON = re.compile(
    rf"(?:\b(?:founded|created|established|led|headed|directed|written|invented|"
    rf"discovered|designed|owned|run|chaired|managed|painted|composed)\s+by\s+(?P<by>{_NAME}))"
    rf"|(?:^(?P<subj>(?:Mr|Mrs|Ms|Dr|Prof|Sir)\.?\s+[A-Z][a-z]+(?:\s+[A-Z][a-z]+)*))"
    rf"|(?:\b(?:CEO|founder|president|chairman|chairwoman|author|director|head|leader|"
    rf"inventor|owner|chief executive)\b[^.]*?\b(?:is|was)\s+(?P<role>{_NAME}))"
)
_EN_AUX = frozenset(
    "is are was were has have had will would can could does do did shall should may "
    "might must".split()
)
_EN_COPULA = re.compile(r"\b(is|are|was|were)\b")

_ZH_DIGITS = r"[0-9０-９零〇一二两三四五六七八九十百千万亿点.,]+"
_ZH_DATE = re.compile(
    rf"(?:{_ZH_DIGITS}年(?:{_ZH_DIGITS}月)?(?:{_ZH_DIGITS}[日号])?)|(?:{_ZH_DIGITS}月{_ZH_DIGITS}[日号])"
)
_ZH_NUMBER = re.compile(rf"(?<![0-9０-９]){_ZH_DIGITS}(?=[^年月日号0-9０-９]|$)")
_ZH_SURNAMES = "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋蔡余杜叶程苏魏吕丁任沈姚卢姜崔钟谭陆汪范金石廖贾夏韦傅方白邹孟熊秦邱江尹薛闫段雷侯龙史陶黎贺顾毛郝龚邵万钱严覃武戴莫孔向汤"
_ZH_PERSON = re.compile(
    r"(?:由(?P<by>[\u4e00-\u9fff]{2,4}?)(?:创立|创办|创建|成立|领导|担任|发明|发现|设计|执导|撰写|编写|管理))"
    r"|(?:(?:创始人|创办人|董事长|首席执行官|CEO|总裁|总经理|作者|导演|主席|负责人|发明者|院长|校长)"
    r"(?:是|为)(?P<role>[\u4e00-\u9fff]{2,4}))"
    rf"|(?:^(?P<subj>[{_ZH_SURNAMES}][\u4e00-\u9fff]{{1,2}})(?=(?:先生|女士|博士|教授)?(?:创立|创办|发明|发现|担任|领导|是|于)))"
)
_ZH_COPULA = re.compile(r"(是|为)")
_TRAILING = re.compile(r"[\s。．.！!？?；;，,、:：]+$")


@dataclass(frozen=True, slots=True)
class Slot:
    """A span of the claim that holds an answer of one type."""

    kind: SlotType
    start: int
    end: int


def main_claim(answer: str) -> str | None:
    """The first sentence of ``answer`` that does not decline, or ``None``."""
    for claim in answer_claims(answer):
        if not declining_sentence(claim):
            return claim
    return None


def _first(pattern: re.Pattern[str], text: str, kind: SlotType) -> Slot | None:
    m = pattern.search(text)
    if m is None:
        return None
    groups = [g for g in m.groupdict() if m.group(g)] if m.groupdict() else []
    if groups:
        return Slot(kind, m.start(groups[0]), m.end(groups[0]))
    return Slot(kind, m.start(), m.end())


def find_slots(claim: str) -> list[Slot]:
    """Slots of ``claim`` by type, in the order date, number, person (one each)."""
    zh = has_cjk(claim)
    if zh:
        found = [
            _first(_ZH_DATE, claim, "date"),
            _first(_ZH_NUMBER, claim, "number"),
            _first(_ZH_PERSON, claim, "person"),
        ]
    else:
        date = _first(_EN_DATE, claim, "date")
        masked = claim if date is None else claim[: date.start] + " " * (date.end - date.start)
        masked += claim[len(masked) :]
        number = (
            _first(_EN_AMOUNT, masked, "number")
            or _first(_EN_COUNT, masked, "number")
            or _first(_EN_NUMBER, masked, "number")
        )
        found = [date, number, _first(_EN_PERSON, claim, "person")]
    out: list[Slot] = []
    for s in found:
        if s is not None and not any(s.start < o.end and o.start < s.end for o in out):
            out.append(s)
    return out


def _en_wh(slot: Slot, claim: str) -> str:
    if slot.kind == "date":
        return "When"
    if slot.kind == "person":
        return "Who"
    if slot.kind == "number":
        return "How much" if _EN_AMOUNT.fullmatch(claim[slot.start : slot.end]) else "How many"
    return "What"


def _lower_first(text: str) -> str:
    """Lower-case the first word when it is a function word ("The", "It"), not a name."""
    first = text.split(" ", 1)[0]
    return text[:1].lower() + text[1:] if first.lower() in STOPWORDS_EN else text


def _en_question(claim: str, slot: Slot | None) -> str:
    text = _TRAILING.sub("", claim)
    if slot is None:
        m = _EN_COPULA.search(text)
        if m is not None and m.start() > 0:  # "The capital is Paris" -> "What is the capital?"
            subject = text[: m.start()].strip()
            return f"What {m.group(1)} {_lower_first(subject)}?"
        return f"What about {_lower_first(text)}?"
    wh = _en_wh(slot, claim)
    before, after = text[: slot.start].strip(), text[slot.end :].strip()
    if slot.kind == "number" and wh == "How many":
        # "employs 120 people" -> "How many people ... employ"
        noun, _, after = after.partition(" ")
        wh = f"How many {noun}"
    if slot.kind == "person" and before.endswith(" by"):
        before = before[:-3]
    if not before:  # the slot is the subject: "Dr. Smith founded Acme" -> "Who founded Acme?"
        return f"{wh} {after}?".replace("  ", " ")
    words = before.split()
    for i, w in enumerate(words):
        if i > 0 and w.lower() in _EN_AUX:
            rest = " ".join(words[:i] + words[i + 1 :])
            return f"{wh} {w.lower()} {_lower_first(rest)} {after}".strip() + "?"
    return f"{wh} {_lower_first(before)} {after}".strip() + "?"


def _zh_question(claim: str, slot: Slot | None) -> str:
    text = _TRAILING.sub("", claim)
    if slot is None:
        m = _ZH_COPULA.search(text)
        if m is not None and m.start() > 0:
            return text[: m.end()] + "什么？"
        return text + "是什么？"
    wh = {"date": "何时", "number": "多少", "person": "谁", "other": "什么"}[slot.kind]
    return text[: slot.start] + wh + text[slot.end :] + "？"


def reverse_questions(answer: str) -> tuple[str, ...]:
    """Questions the answer's main claim answers (see the module table); ``()`` when
    the answer has no claim that does not decline."""
    claim = main_claim(answer)
    if claim is None:
        return ()
    claim = nfkc(claim) if not has_cjk(claim) else claim
    slots = find_slots(claim)[:MAX_QUESTIONS]
    make = _zh_question if has_cjk(claim) else _en_question
    if not slots:
        return (make(claim, None),)
    return tuple(dict.fromkeys(make(claim, s) for s in slots))
