"""The reference-free critic's checks (seed 004 §3.2, offline, no gold answer).

What can be told from the question, the top-k passages and the answer alone — not only
whether the answer's words are in the passages, but whether it answers *this* question:

=====================  ========================================================================
check                  rule
=====================  ========================================================================
empty                  nothing left after cleaning → error
asks                   the question is cut into its asks (several questions, ", and what …",
                       "；…？"), each typed: person (who/whom/whose, 谁/哪位), name (which +
                       noun, 哪家), date (when, what year/date, "release date", 何时/哪一年),
                       duration (how long, how many days/years, 多久/几天), count / quantity
                       (how many / how much / how big, 多少/几), amount (money words: cost, paid,
                       revenue … 金额/费用 …), percent (share, rate, margin, fraction … 比例/
                       占比), place (where, which city/country, 哪里/何处), yes/no (is/did …,
                       是否/吗), choice ("before or after", 还是), other
answer type            every typed ask needs a span of its type in the answer that the question
                       does not already state (a date for "when", a time-unit quantity or two
                       dates for "how long", a currency amount for money words, a name outside
                       the question for "who" unless the answer restates the question's
                       predicate around it, …) → else *answer type mismatch*
parts                  a question about two entities (question_parts) that asks for a value,
                       date or description of each: the answer names both → else *incomplete*
off-topic              a sentence-long answer sharing none of the question's focus words (its
                       content words that are not names), or adding at most one word to the
                       question → *does not address the question*
declines               a decline (or a hedge: "not explicitly stated …, however …") is an error
                       when a passage about the question (half its content words) holds a span
                       of the asked type in a sentence with a focus word (*unnecessary
                       abstention*), and when no passage is about the question (*retrieval
                       missed the question's subject*: whether the corpus holds the answer is
                       unknown, the system did not answer); it is warranted when passages
                       about the question hold nothing of the asked type
contradiction          a claim of the answer that the passages contradict (the claim
                       entailment core over the judge's facts layer: numbers, dates, names in
                       their slots, negation, opposite terms, swapped roles)
mixed entities         a claim that gives one name a number or date which the passages give,
                       in every sentence holding it, to another name only
other qualifier        the answer is supported for another event, relation or role of the
                       question's subject: its sentences name the subject without two or more of
                       the question's qualifiers ("semi-final" for "national championship"),
                       while the sentence that has them gives another value of the asked kind
grounding              under half of the answer's content words in the passages, or a number,
                       date or name of the answer absent from passages and question →
                       *unsupported*; a typed ask answered although no passage holds anything
                       of that type → *unsupported answer*
=====================  ========================================================================

Each finding maps to a published tier-3 tag of the RAG-Critic error system and the tier-2
(and tier-1) type that lists it (:data:`FINDING_TAGS`), and to the RAGEC types that describe
the same failure (used by the correction planner). Pure functions; no LLM.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Final, Literal

from ragtriage.diagnosis.facts import (
    DateMention,
    Quantity,
    content_support,
    dates_match,
    extract_dates,
    extract_entities,
    extract_quantities,
    key_terms,
    normalize,
    quantities_match,
)
from ragtriage.text import STOPWORDS_EN, has_cjk, split_sentences

__all__ = [
    "FINDING_TAGS",
    "Ask",
    "AskKind",
    "Finding",
    "FindingKind",
    "answer_has_kind",
    "focus_terms",
    "question_asks",
    "reference_free_findings",
]

AskKind = Literal[
    "person",
    "name",
    "date",
    "duration",
    "count",
    "quantity",
    "amount",
    "percent",
    "place",
    "yesno",
    "choice",
    "reason",
    "org",
    "other",
]

FindingKind = Literal[
    "empty",
    "type_mismatch",
    "part_missing",
    "off_topic",
    "decline_answerable",
    "hedged",
    "decline_unretrieved",
    "contradiction",
    "entity_mix",
    "unsupported",
    "unsupported_answer",
    "no_reason",
    "truncated",
    "irrelevant_fields",
    "other_qualifier",
]

#: finding → (published tier-3 tag, the tier-2 type that lists it, RAGEC types). The tier-3
#: tag is chosen for what the finding says; its tier-2 and tier-1 are the error system's
#: own grouping of that tag (tests/test_critic.py checks each tag is listed under its
#: tier-2 in the bundled error system).
FINDING_TAGS: Final[dict[str, tuple[str, str, tuple[str, ...]]]] = {
    "empty": ("Lack of Direct Answer", "Incorrect and Incomplete Answers", ("E12",)),
    "type_mismatch": ("Answer Type Mismatch", "Specificity and Precision Errors", ("E13",)),
    "part_missing": ("Partial Answer", "Content and Context Misalignment", ("E12",)),
    "off_topic": (
        "Misinterpretation of Question",
        "Off-Topic and Redundant Responses",
        ("E14",),
    ),
    "decline_answerable": (
        "Failure to Extract Relevant Information",
        "Contextual Understanding Errors",
        ("E9",),
    ),
    "hedged": ("Lack of Definitive Answer", "Incorrect and Incomplete Answers", ("E9",)),
    "decline_unretrieved": (
        "Insufficient Information Retrieval",
        "Data Insufficiency in Retrieval",
        ("E4",),
    ),
    "contradiction": (
        "Contradiction with Source",
        "Partial Coverage and Temporal Issues",
        ("E10",),
    ),
    "entity_mix": ("Entity Misattribution", "Off-Topic and Redundant Responses", ("E13",)),
    "unsupported": ("Unsupported Claim", "Erroneous Information Retrieval", ("E10",)),
    "unsupported_answer": ("Unsupported Answer", "Erroneous Information Retrieval", ("E11",)),
    "no_reason": ("Lack of Causal Explanation", "Incorrect and Incomplete Answers", ("E12",)),
    "truncated": ("Partial Response", "Content and Context Misalignment", ("E1", "E12")),
    "irrelevant_fields": ("Focus on Irrelevant Details", "Lack of Specificity", ("E14",)),
    "other_qualifier": (
        "Context-Question Mismatch",
        "Specificity and Precision Errors",
        ("E13", "E14"),
    ),
}


@dataclass(frozen=True, slots=True)
class Ask:
    """One thing the question asks for: its clause, the answer type, and for a choice
    the options ("before", "after")."""

    text: str
    kind: AskKind
    options: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Finding:
    """One reason the answer is wrong, with the words the analysis shows."""

    kind: FindingKind
    detail: str


# -- the question's asks -----------------------------------------------------------------

_EN_SPLIT: Final = re.compile(
    r"\?+\s*|;\s*|,?\s+and\s+(?=(?:(?:in|on|at|from|for|by|to|since)\s+)?"
    r"(?:what|who|whom|whose|when|where|which|why|how)\b)",
    re.IGNORECASE,
)
_ZH_SPLIT: Final = re.compile(r"[？?；;]+")
_ZH_WH: Final = re.compile(r"什么|何时|哪|谁|多少|几|多久|多长|为何|为什么|如何|怎样|是否|吗")

_TIME_UNITS: Final = frozenset(
    {"year", "month", "week", "day", "hour", "minute", "second", "decade", "century"}
)
_TIME_NOUNS_EN: Final = (
    r"years?|months?|weeks?|days?|hours?|minutes?|seconds?|decades?|centur(?:y|ies)|nights?"
)
_MONEY_EN: Final = re.compile(
    r"\b(?:costs?|cost(?:ing)?|price[sd]?|revenues?|income|profits?|loss(?:es)?|sales|turnover|"
    r"fines?|fined|fees?|salar(?:y|ies)|budget|worth|paid|pay|payments?|spen[dt]|raised?|"
    r"earn(?:ed|ings)?|dividends?|compensation|damages|penalt(?:y|ies)|capital|debt|money|"
    r"dollars?|euros?|pounds|funding|valued|valuation|price\s+tag|proceeds|wages?|owed?|"
    r"penali[sz]ed|damage|insurance|refund(?:ed|s)?|deduct(?:ed)?|settle(?:d|ment)?)\b",
    re.IGNORECASE,
)
_PERCENT_EN: Final = re.compile(
    r"\b(?:percent(?:age)?|per\s+cent|share\s+of|proportion|fraction|rate|margin|ratio|"
    r"stake|returns?|in\s+percent)\b",
    re.IGNORECASE,
)
_MEASURE_EN: Final = re.compile(
    r"\b(?:number|amount|total|size|capacity|population|age|height|length|weight|"
    r"temperature|pressure|level|dose|dosage|score|count|distance|headcount|speed|"
    r"volume|area|concentration|reading)\b",
    re.IGNORECASE,
)
_DATE_EN: Final = re.compile(
    r"\bwhen\b|\b(?:what|which)\s+(?:year|date|day|month|time)\b|"
    r"\b(?:release|birth|founding|launch|start|end|opening|completion)\s+date\b|"
    r"\bdate\s+of\b|\bin\s+what\s+year\b",
    re.IGNORECASE,
)
_PLACE_NOUNS: Final = (
    r"city|country|town|state|place|location|region|province|county|village|continent|"
    r"venue|address|island|nation|site|port|district"
)
_PLACE_EN: Final = re.compile(
    rf"\bwhere\b|\b(?:what|which)\s+(?:{_PLACE_NOUNS})\b",
    re.IGNORECASE,
)
_PERSON_NOUNS: Final = (
    r"person|man|woman|people|colleague|doctor|judge|lawyer|player|actor|actress|author|"
    r"writer|singer|director|officer|executive|manager|founder|chairman|chairwoman|chair|"
    r"president|leader|member|employee|witness|surgeon|nurse|patient|defendant|claimant|"
    r"prosecutor|investor|buyer|seller|owner|partner|successor|predecessor|spouse|wife|"
    r"husband|son|daughter|child|teacher|student|coach|captain"
)
_PERSON_EN: Final = re.compile(
    rf"\b(?:who|whom|whose)\b|\bname\s+of\s+the\s+(?:{_PERSON_NOUNS})\b|"
    rf"\bwhich\s+(?:\w+\s+)?(?:{_PERSON_NOUNS})\b",
    re.IGNORECASE,
)
_POLAR_EN: Final = re.compile(
    r"^\s*(?:is|are|was|were|do|does|did|has|have|had|can|could|will|would|should|may|might|"
    r"must|shall)\b",
    re.IGNORECASE,
)
_HOW_MANY: Final = re.compile(r"\bhow\s+many\s+(\w+)", re.IGNORECASE)
_HOW_LONG: Final = re.compile(r"\bhow\s+long\b", re.IGNORECASE)
_HOW_MUCH: Final = re.compile(
    r"\b(?:how|by\s+how)\s+(?:much|big|large|tall|high|far|old|deep|heavy|fast|wide|often|"
    r"small|low|short)\b",
    re.IGNORECASE,
)
_WHICH_WHAT: Final = re.compile(r"\b(which|what)\s+(.*)", re.IGNORECASE)
_AUX: Final = frozenset(
    "is are was were did does do has had have can could will would should happened "
    "happens happen kind kinds type types sort".split()
)
_OR: Final = re.compile(r"\s+or\s+", re.IGNORECASE)
_OPTION_END: Final = re.compile(r"[,:;?]")

_ZH_PERSON: Final = re.compile(r"谁|哪位|什么人|何人|哪个人|哪名")
_ZH_DATE: Final = re.compile(
    r"何时|什么时候|哪一年|哪年|哪一天|哪天|几月|几号|什么时间|哪个月|日期|哪一日|何日|何年"
)
_ZH_DURATION: Final = re.compile(
    r"多久|多长时间|多少天|多少年|多少个月|几年|几个月|几天|多少小时|多长"
)
_ZH_MONEY: Final = re.compile(
    r"多少钱|多少元|金额|价格|费用|收入|利润|营收|成本|罚款|赔偿|损失|赔付|工程款|货款|"
    r"价款|款项|资金|花了|支付|付了|薪|收益"
)
_ZH_PERCENT: Final = re.compile(r"比例|百分比|占比|比率|增长率|利率|毛利率|净利率|几成|百分之")
_ZH_PLACE: Final = re.compile(
    r"哪里|哪儿|何处|什么地方|哪个城市|哪个国家|哪座|哪个省|在哪|哪个地区"
)
_ZH_NAME: Final = re.compile(r"哪家|哪个公司|哪一家|哪个企业|哪所|哪个机构|哪个单位|哪一个")
_ZH_POLAR: Final = re.compile(r"是否|是不是|有没有|吗\s*$|么\s*$")
_ZH_QTY: Final = re.compile(r"多少|几")


_WHY_EN: Final = re.compile(
    r"^\s*(?:why|for\s+what\s+reason|what\s+(?:was|were|is)\s+the\s+"
    r"reasons?)\b",
    re.IGNORECASE,
)
_BARE_HOW_MUCH: Final = re.compile(r"^\s*(?:by\s+)?how\s+much\s*$", re.IGNORECASE)


def _classify_en(clause: str, question: str = "") -> Ask:
    c = clause.strip()
    if _BARE_HOW_MUCH.match(c) and question:
        # "…penalised by the regulator, and by how much?": the measure is the question's
        ctx = question
        if _PERCENT_EN.search(ctx) and "dollar" not in ctx.lower():
            return Ask(c, "percent")
        return Ask(c, "amount" if _MONEY_EN.search(ctx) else "quantity")
    if _WHY_EN.match(c):
        return Ask(c, "reason")
    if m := _HOW_MANY.search(c):
        noun = m.group(1).lower()
        if re.fullmatch(_TIME_NOUNS_EN, noun):
            return Ask(c, "duration")
        return Ask(c, "amount" if _MONEY_EN.search(noun) else "count")
    if _HOW_LONG.search(c):
        return Ask(c, "duration")
    if _HOW_MUCH.search(c):
        if _PERCENT_EN.search(c) and "dollar" not in c.lower():
            return Ask(c, "percent")
        if _MONEY_EN.search(c):
            return Ask(c, "amount")
        return Ask(c, "quantity")
    if _DATE_EN.search(c):
        return Ask(c, "date")
    if _PLACE_EN.search(c):
        return Ask(c, "place")
    options = _options(c)
    if _POLAR_EN.match(c):
        return Ask(c, "choice", options) if options else Ask(c, "yesno")
    if _PERSON_EN.search(c):
        return Ask(c, "person", options)
    if m := _WHICH_WHAT.search(c):
        wh, rest = m.group(1).lower(), m.group(2)
        words = re.findall(r"[\w'-]+", rest.lower())
        head: list[str] = []
        for w in words[:5]:
            if w in _AUX:
                break
            head.append(w)
        head_text = " ".join(head)
        scan = head_text if head else rest
        if _PERCENT_EN.search(scan):
            return Ask(c, "percent")
        if _MONEY_EN.search(scan):
            return Ask(c, "amount")
        if _MEASURE_EN.search(scan):
            return Ask(c, "quantity")
        if wh == "which" and head:
            return Ask(c, "choice" if options else "name", options)
        if options:
            return Ask(c, "choice", options)
    return Ask(c, "other")


def _options(clause: str) -> tuple[str, ...]:
    """The two sides of "A or B" (a few words each side, up to punctuation)."""
    parts = _OR.split(clause, maxsplit=1)
    if len(parts) != 2:
        return ()
    left = _OPTION_END.split(parts[0])[-1].split()[-4:]
    right = _OPTION_END.split(parts[1])[0].split()[:6]
    if not left or not right:
        return ()
    return (" ".join(left), " ".join(right))


def _classify_zh(clause: str) -> Ask:
    c = clause.strip()
    if re.search(r"为什么|为何|什么原因|原因是", c):
        return Ask(c, "reason")
    if _ZH_PERSON.search(c):
        return Ask(c, "person")
    if _ZH_DURATION.search(c):
        return Ask(c, "duration")
    if _ZH_DATE.search(c):
        return Ask(c, "date")
    if _ZH_PLACE.search(c):
        return Ask(c, "place")
    if _ZH_NAME.search(c):
        return Ask(c, "org" if re.search(r"哪家|公司|企业|机构|单位", c) else "name")
    if _ZH_PERCENT.search(c):
        return Ask(c, "percent")
    if _ZH_QTY.search(c):
        return Ask(c, "amount" if _ZH_MONEY.search(c) else "quantity")
    if "还是" in c:
        left, _, right = c.partition("还是")
        return Ask(c, "choice", (left[-6:], right[:6]))
    if _ZH_POLAR.search(c):
        return Ask(c, "yesno")
    return Ask(c, "other")


@lru_cache(maxsize=2048)
def question_asks(question: str) -> tuple[Ask, ...]:
    """The asks of a question, in order (one ``other`` ask for a question with no typed
    part)."""
    q = question.strip()
    if not q:
        return ()
    if has_cjk(q):
        pieces = [p.strip() for p in _ZH_SPLIT.split(q) if p.strip()]
        out: list[Ask] = []
        for p in pieces:
            subs = [s.strip() for s in re.split(r"[，,]", p) if s.strip()]
            wh_clauses = [s for s in subs if _ZH_WH.search(s)]
            if len(wh_clauses) >= 2:
                out.extend(_classify_zh(s) for s in wh_clauses)
            else:
                out.append(_classify_zh(p))
        return tuple(out) or (Ask(q, "other"),)
    pieces = [p.strip(" ,") for p in _EN_SPLIT.split(q) if p and p.strip(" ,")]
    asks = [_classify_en(p, q) for p in pieces if re.search(r"\w", p)]
    typed = [a for a in asks if a.kind != "other"]
    if typed and len(asks) > 1:
        # a lead-in sentence ("Greenleaf and Corvane both reported profits.") asks nothing
        asks = [a for a in asks if a.kind != "other" or _looks_asked(a.text)]
    return tuple(asks) or (Ask(q, "other"),)


_ASKING_EN: Final = re.compile(
    r"^\s*(?:what|who|whom|whose|when|where|which|why|how|describe|summari[sz]e|give|list|"
    r"explain|compare|name|tell)\b",
    re.IGNORECASE,
)


def _looks_asked(text: str) -> bool:
    return bool(_ASKING_EN.match(text) or _POLAR_EN.match(text))


# -- spans of a type in a text ---------------------------------------------------------

_TIME_OF_DAY: Final = re.compile(
    r"\b\d{1,2}[:.]\d{2}\s*(?:am|pm|a\.m\.|p\.m\.)?|\b\d{1,2}\s*(?:am|pm)\b"
)
_TEMPORAL_EN: Final = re.compile(
    r"\b(?:during|after|before|until|upon|following|at\s+the\s+(?:end|start|beginning|"
    r"close|time)|ago|later|earlier|while|whenever|in\s+the\s+(?:morning|afternoon|evening|"
    r"night)|tonight|today|yesterday|tomorrow|season|episode|credits)\b",
    re.IGNORECASE,
)
_TEMPORAL_ZH: Final = re.compile(
    r"期间|之后|以后|之前|以前|当天|次日|当晚|凌晨|上午|下午|晚上|时候|结束时|开始时"
)
_FRACTION: Final = re.compile(
    r"\b(?:half|third|thirds|quarter|quarters|fifth|fifths|tenth|tenths|double|twice|"
    r"triple|times)\b|一半|分之|成|倍",
    re.IGNORECASE,
)
_SCALE_WORD: Final = re.compile(r"million|billion|thousand|trillion|万|亿|千", re.IGNORECASE)
_YES_NO: Final = re.compile(
    r"\b(?:yes|no|not|never|neither|both|same|different|true|false|indeed|nobody|none)\b|"
    r"n't\b|是|否|不|没|无|相同|不同|均|都",
    re.IGNORECASE,
)
_PLACE_PREP: Final = re.compile(
    r"(?:\b(?:in|at|near|from|across|throughout|to)\s+(?:the\s+)?)$", re.I
)
_ZH_PLACE_SUFFIX: Final = re.compile(r"[\u4e00-\u9fff]{1,8}(?:省|市|县|区|镇|村|州|国|路|街|岛|港)")


_CAUSAL: Final = re.compile(
    r"\b(?:because|due\s+to|owing\s+to|as\s+a\s+result|since|as|after|following|for|"
    r"caused|so\s+that|in\s+order\s+to|thanks\s+to|led\s+to|resulted|reason)\b|"
    r"因为|由于|因|所以|导致|原因|造成|以致|为了",
    re.IGNORECASE,
)
_ZH_ORG: Final = re.compile(
    r"(?:公司|集团|企业|银行|科技|股份|医院|大学|学院|研究院|基金|协会|工厂|厂)$"
)
_ZH_ORG_NAME: Final = re.compile(
    r"[\u4e00-\u9fff]{2,12}(?:有限公司|股份公司|公司|集团|企业|银行|科技|医院|大学|研究院|基金)"
)


def _is_year_only(q: Quantity, dates: Sequence[DateMention]) -> bool:
    return any(d.start <= q.start < d.end or q.start <= d.start < q.end for d in dates)


def _quantities_outside(text: str, question: str) -> list[Quantity]:
    """The quantities of ``text`` that are not dates and not stated by the question."""
    dates = extract_dates(text)
    asked = extract_quantities(question)
    return [
        q
        for q in extract_quantities(text)
        if not _is_year_only(q, dates) and not any(quantities_match(q, a) for a in asked)
    ]


def _dates_outside(text: str, question: str) -> list[DateMention]:
    asked = extract_dates(question)
    return [d for d in extract_dates(text) if not any(dates_match(d, a) for a in asked)]


def _in_question(name: str, question_norm: str) -> bool:
    low = normalize(name)
    if not low:
        return True
    if f" {low} " in question_norm or (has_cjk(low) and low in question_norm):
        return True
    words = low.split()
    return len(words) >= 2 and all(f" {w} " in question_norm for w in words)


_CAP_RUN: Final = re.compile(r"[A-Z][\w'’-]*(?:\s+(?:of\s+|the\s+|de\s+)?[A-Z][\w'’-]*)*")
_SHORT_ANSWER_WORDS: Final = 8


_ZH_PERSON_NAME: Final = re.compile(
    r"(?:^|(?<=[由是为：:，,、和与被及向让请据]))([\u4e00-\u9fff]{2,3}?)"
    r"(?=[创担任出领负主签辞被于在的先女男，,。、和与及]|$)"
)


def _zh_person_names(text: str) -> list[str]:
    """Chinese personal names the facts layer misses ("由李安创办"): two or three
    characters after a boundary word, starting with a common surname."""
    from ragtriage.diagnosis.facts import _ZH_SURNAMES

    return [
        m.group(1)
        for m in _ZH_PERSON_NAME.finditer(text)
        if m.group(1)[0] in _ZH_SURNAMES or m.group(1)[:2] in _ZH_SURNAMES
    ]


def _candidate_names(text: str) -> list[str]:
    """Names of ``text``; a short answer ("Seaside, Florida") also counts its capitalised
    word runs, first word included (a whole answer that is a name starts with it)."""
    names = list(extract_entities(text))
    if has_cjk(text):
        names += [n for n in _zh_person_names(text) if not any(n in x for x in names)]
    if len(text.split()) <= _SHORT_ANSWER_WORDS:
        for m in _CAP_RUN.finditer(text):
            run = m.group()
            if run.lower() in STOPWORDS_EN or any(run in n or n in run for n in names):
                continue
            names.append(run)
    return names


def _names(text: str, question: str, *, persons_only: bool) -> list[str]:
    """Names of ``text`` the question does not hold; with ``persons_only`` names right
    after a place preposition ("in Bergen, Norway") are left out."""
    qn = f" {normalize(question)} "
    out: list[str] = []
    focus = focus_terms(question)
    for name in _candidate_names(text):
        if _in_question(name, qn):
            continue
        at = text.find(name)
        after = re.match(r"\s+([a-z][\w-]*)", text[at + len(name) :]) if at >= 0 else None
        if (
            after is not None
            and len(name.split()) == 1
            and not re.search(r"(?:ed|ing)$", after.group(1))
            and key_terms(after.group(1)) & focus
        ):
            continue  # "a major European airframe manufacturer": a modifier, not a name
        if persons_only and not has_cjk(name):
            at = text.find(name)
            before = text[max(0, at - 24) : at] if at >= 0 else ""
            if _PLACE_PREP.search(before) or re.search(r"[A-Z][a-z]+,\s*$", before):
                continue
        out.append(name)
    return out


def answer_has_kind(ask: Ask, text: str, question: str) -> bool:
    """Whether ``text`` holds a span of ``ask``'s type that ``question`` does not state."""
    kind = ask.kind
    if kind in ("other",):
        return True
    if kind == "date":
        return bool(
            _dates_outside(text, question)
            or _TIME_OF_DAY.search(text)
            or _TEMPORAL_EN.search(text)
            or _TEMPORAL_ZH.search(text)
        )
    qs = _quantities_outside(text, question)
    if kind == "duration":
        if any(q.unit in _TIME_UNITS for q in qs):
            return True
        # "from 2 April to 30 November 2021": two dates in one sentence
        return any(
            len({(d.year, d.month, d.day) for d in extract_dates(st.text)}) >= 2
            for st in split_sentences(text)
        )
    if kind in ("count", "quantity"):
        return bool(qs) or bool(_FRACTION.search(text))
    if kind == "amount":
        return any(
            (q.unit and q.unit not in _TIME_UNITS and q.unit not in ("%", "x"))
            or _SCALE_WORD.search(q.raw)
            for q in qs
        )
    if kind == "percent":
        return any(q.unit in ("%", "x") for q in qs) or bool(_FRACTION.search(text))
    if kind == "yesno":
        return bool(_YES_NO.search(text))
    if kind == "choice":
        if _option_chosen(ask.options, text):
            return True
        return not _POLAR_EN.match(ask.text) and bool(_names(text, question, persons_only=False))
    if kind == "place":
        return bool(_names(text, question, persons_only=False) or _ZH_PLACE_SUFFIX.search(text))
    if kind == "reason":
        return bool(_CAUSAL.search(text))
    if kind == "org":
        return any(_ZH_ORG.search(n) for n in _names(text, question, persons_only=False)) or bool(
            _ZH_ORG_NAME.search(text.replace(question, ""))
        )
    # person / name
    return bool(_names(text, question, persons_only=kind == "person"))


def _option_chosen(options: Sequence[str], text: str) -> bool:
    if not options:
        return False
    terms = [key_terms(o) for o in options]
    have = key_terms(text)
    own = [t - terms[1 - i] if len(terms) == 2 else t for i, t in enumerate(terms)]
    return any(t and t & have for t in own)


# -- focus words ---------------------------------------------------------------------------

_GENERIC_WORDS: Final = (
    "name person people thing things long many much year years time date day days happen "
    "happened happens did does do get got give given kind type way part amount number total "
    "first last one two overview summary summarise summarize describe explain compare tell "
    "list roughly approximately about exactly main"
)


@lru_cache(maxsize=1)
def _generic_terms() -> frozenset[str]:
    return key_terms(_GENERIC_WORDS)


@lru_cache(maxsize=2048)
def focus_terms(question: str) -> frozenset[str]:
    """The question's content terms that are not names, numbers or question scaffolding:
    what it asks *about* ("punishment", "cost", "founded")."""
    terms = set(question_terms(question))
    for name in extract_entities(question):
        terms -= key_terms(name)
    terms -= _generic_terms()
    return frozenset(t for t in terms if not t[:1].isdigit())


# -- passages --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Passages:
    texts: tuple[str, ...]
    coverage: tuple[float, ...]  # share of the question's key terms in each passage


_ZH_ASKING_CHARS: Final = frozenset("哪谁什么多少几吗呢是的了何怎")


_ZH_ASKING_PHRASE: Final = re.compile(
    r"(?:是)?(?:哪一?[年天月个家位种所座名项条]|哪里|哪儿|何时|何处|什么时候|什么[地方人]?|"
    r"多少[名个家元钱人次天年项条]?|几[个名家位年天月次项条]?|多久|多长时间?|是否|是不是|"
    r"有没有|为什么|为何|谁)"
)


@lru_cache(maxsize=2048)
def question_terms(question: str) -> frozenset[str]:
    """The question's content terms without its asking words (Chinese: the asking phrase
    "哪一年", "多少名" … removed first, then bigrams holding 哪/谁/多少/是/的 …)."""
    if has_cjk(question):
        question = _ZH_ASKING_PHRASE.sub("，", question)
    return frozenset(
        t for t in key_terms(question) if not (has_cjk(t) and set(t) & _ZH_ASKING_CHARS)
    )


def _passages(question: str, passages: Sequence[str]) -> _Passages:
    q = question_terms(question)
    cov = tuple((len(q & key_terms(p)) / len(q)) if q else 0.0 for p in passages)
    return _Passages(tuple(passages), cov)


#: share of the question's content terms a passage holds to be "about the question"
ABOUT: Final = 0.5


def _typed_evidence(asks: Sequence[Ask], question: str, ps: _Passages) -> str | None:
    """A sentence of a passage about the question that holds a span of an asked type
    with, in it and the sentence before, two of the question's focus words (one when it
    has one); for an untyped ask, half of the focus words and at least two."""
    focus = focus_terms(question)
    need = min(2, len(focus))
    for text, cov in zip(ps.texts, ps.coverage, strict=True):
        if cov < ABOUT:
            continue
        sentences = [s.text for s in split_sentences(text)]
        for i, sentence in enumerate(sentences):
            window = " ".join(sentences[max(0, i - 1) : i + 1])
            shared = key_terms(window) & focus
            if len(shared) < max(need, 1):
                continue
            for ask in asks:
                if ask.kind == "other":
                    if len(shared) / len(focus) >= 0.5:
                        return sentence
                elif ask.kind not in ("yesno", "choice") and answer_has_kind(
                    ask, sentence, question
                ):
                    return sentence
    return None


_SUMMARY: Final = re.compile(
    r"^\s*(?:summari[sz]e|give\s+an?\s+(?:overview|summary|account)|describe|outline|"
    r"what\s+(?:happened|went)|tell\s+me\s+about)\b|概括|总结|概述|简述|介绍|描述",
    re.IGNORECASE,
)


def _any_of_kind(ask: Ask, question: str, passages: Sequence[str]) -> bool:
    return any(answer_has_kind(ask, p, question) for p in passages)


# -- the checks ------------------------------------------------------------------------------

_SHORT: Final = 5


def _short(text: str) -> str:
    t = " ".join(text.split())
    return t if len(t) <= 90 else t[:87] + "..."


def _unsupported_facts(
    answer: str, question: str, passages: Sequence[str]
) -> tuple[list[str], int]:
    """The numbers, dates and names of ``answer`` that neither the passages nor the
    question hold, and how many facts the answer states."""
    pool = "\n".join([*passages, question])
    pq = extract_quantities(pool)
    pd = extract_dates(pool)
    pool_norm = f" {normalize(pool)} "
    out: list[str] = []
    n = 0
    answer_dates = extract_dates(answer)
    for q in extract_quantities(answer):
        if _is_year_only(q, answer_dates):
            continue
        n += 1
        if not any(quantities_match(q, p) for p in pq):
            out.append(q.raw)
    for d in answer_dates:
        n += 1
        if not any(dates_match(d, p) for p in pd):
            out.append(d.raw)
    for name in extract_entities(answer):
        low = normalize(name)
        if not low:
            continue
        n += 1
        if f" {low} " in pool_norm or (has_cjk(low) and low in pool_norm):
            continue
        words = [w for w in low.split() if len(w) > 2]
        if words and any(f" {w} " in pool_norm for w in words):
            continue  # a shortened or lengthened form ("Zatch" for "Zatch Bell")
        out.append(name)
    return out, n


_MONTH_WORDS: Final = frozenset(
    "january february march april may june july august september october november december "
    "monday tuesday wednesday thursday friday saturday sunday".split()
)


def _sentence_names(sentence: str) -> list[str]:
    """Names of a sentence, a capitalised first word included ("Globex reported …")."""
    names = list(extract_entities(sentence))
    first = re.match(r"\s*([A-Z][\w'’-]+(?:\s+[A-Z][\w'’-]+)*)", sentence)
    if first is not None:
        run = first.group(1)
        low = run.lower()
        if (
            low not in STOPWORDS_EN
            and low not in _MONTH_WORDS
            and not any(run in n or n in run for n in names)
        ):
            names.append(run)
    return names


_PRONOUN: Final = re.compile(
    r"\b(?:it|its|he|his|she|her|they|their|them|him|this|these|the\s+company|the\s+group)\b"
    r"|其|该公司|该|他|她|它",
    re.IGNORECASE,
)


def _fact_positions(sentence: str, qs: Sequence[Quantity], ds: Sequence[DateMention]) -> list[int]:
    out = [x.start for x in extract_quantities(sentence) if any(quantities_match(q, x) for q in qs)]
    out += [x.start for x in extract_dates(sentence) if any(dates_match(d, x) for d in ds)]
    return out


def _entity_mix(answer: str, question: str, passages: Sequence[str]) -> str | None:
    """A claim naming one entity with a number or date that every passage sentence
    holding it gives to another named entity: a sentence that names that other entity
    before the fact, with no pronoun in between that could stand for the claim's one
    ("Globex Inc was founded in 2005" for "Acme Corp was founded in 2005")."""
    sentences = [s.text for p in passages for s in split_sentences(p)]
    asked = extract_dates(question)
    asked_q = extract_quantities(question)
    for claim in split_sentences(answer):
        names = [n for n in extract_entities(claim.text) if normalize(n)]
        if len(names) != 1:
            continue
        name = names[0]
        low = normalize(name)
        facts_q = [
            q
            for q in extract_quantities(claim.text)
            if q.unit and not any(quantities_match(q, a) for a in asked_q)
        ]
        facts_d = [
            d for d in extract_dates(claim.text) if not any(dates_match(d, a) for a in asked)
        ]
        holders = [(s, pos) for s in sentences if (pos := _fact_positions(s, facts_q, facts_d))]
        if not holders:
            continue
        other: str | None = None
        for s, pos in holders:
            if f" {low} " in f" {normalize(s)} ":
                other = None
                break
            head = s[: min(pos)]
            before = [
                n
                for n in _sentence_names(head)
                if normalize(n) and normalize(n) != low and not _in_question(n, f" {low} ")
            ]
            if not before or _PRONOUN.search(head[head.find(before[-1]) :]):
                other = None
                break
            other = other or before[-1]
        if other is not None:
            return f"the passages give it to {other!r}, not {name!r}: {_short(holders[0][0])!r}"
    return None


_SELECTING: Final = frozenset({"person", "name", "org", "place", "choice"})


def _subject_drift(answer: str, question: str, asks: Sequence[Ask]) -> str | None:
    """A sentence-long answer to a question about named entities that names none of
    them but other entities ("Globex Inc was founded in 2005" for "When was Acme Corp
    founded?"). Not for questions that ask for a name: the new name is the answer."""
    if any(a.kind in _SELECTING for a in asks) or len(answer.split()) <= _SHORT:
        return None  # a bare value ("In 1999.") names nothing to drift to
    subjects = [n for n in extract_entities(question) if normalize(n)]
    if not subjects:
        return None
    from ragtriage.diagnosis.question_parts import QuestionPart, mentions_part

    if any(mentions_part(QuestionPart(n, "entity"), answer) for n in subjects):
        return None
    norm = f" {normalize(answer)} "
    if any(f" {w} " in norm for n in subjects for w in normalize(n).split() if len(w) > 3):
        return None  # "Halvorsen" for "Halvorsen Maritime Logistics"
    others = [n for n in _names(answer, question, persons_only=False) if not has_cjk(n)]
    if not others:
        return None
    return f"the question asks about {', '.join(subjects)}; it names {', '.join(others[:3])}"


def _contradictions(answer: str, question: str, passages: Sequence[str]) -> str | None:
    from ragtriage.metrics._entail import Premise, check_claims, split_claims

    claims = split_claims(answer)
    if not claims or not passages:
        return None
    premise = Premise.of("\n\n".join(passages), background=question)
    for check in check_claims([(c, premise) for c in claims]):
        if check.verdict == "contradicted":
            return f"{_short(check.claim)!r} ({check.reason})"
    return None


_DANGLING: Final = frozenset(
    "a an the to of for with and or but by from in on at as that which who whose her his "
    "its their our your my was were is are be been has have had will would can could "
    "between into than".split()
)
_CITATION: Final = re.compile(r"\s*(?:\[\d+(?:[,\s]+\d+)*\]\s*)+$")


_CUT_NUMBER: Final = re.compile(r"\b(?:on|at|in|of|by|to|from|until|since)\s+\d{1,2}$", re.I)
_CUT_UNIT: Final = re.compile(
    r"\b(?:USD|EUR|GBP|CAD|AUD|CNY|RMB|HKD|JPY|CHF|SGD|INR|US\$|\$|€|£)$|人民币$|约$"
)


_CITED: Final = re.compile(r"\[\d+(?:[,\s]+\d+)*\]")


def _cut_before_citation(prediction: str) -> str | None:
    """A piece an extractive answer took from a passage that stops without a sentence
    mark before its citation marker and is not continued after it: the answer ends there,
    or a new piece starts on the same line with a capital letter or a Chinese character
    ("Severe flooding in February 2020 damaged two treatment works [1]", "…票面利率 [1]
    赵明…"): the passage was cut mid-sentence. A list item may end without a mark; a piece
    of four words or fewer may be a label."""
    start = 0
    for m in _CITED.finditer(prediction):
        piece = prediction[start : m.start()]
        start = m.end()
        rest = prediction[m.end() :]
        nxt = rest.lstrip(" \t")
        if nxt and (nxt[0] == "\n" or not (nxt[0].isupper() or has_cjk(nxt[0]))):
            continue  # "… announced the [1] deal on …": the next passage goes on
        line = piece.rsplit("\n", 1)[-1].strip()
        if not line or _LIST_ITEM.match(line):
            continue
        sentences = split_sentences(line)
        last = sentences[-1].text.strip() if sentences else line
        if last[-1:] in ".!?。！？\"'”)]:;…":
            continue
        if (not has_cjk(last) and len(last.split()) < 4) or (has_cjk(last) and len(last) < 6):
            continue
        return last
    return None


_LIST_ITEM: Final = re.compile(r"^(?:[-*+•·]|\d{1,2}[.)、])\s")


def _unnamed_in_question(answer: str, question: str) -> bool:
    """The answer holds a name the question writes in lower case without naming it
    ("who became the mamodo king in zatch bell" → "Zatch Bell"); a name the question
    itself names ("… warned Victor Lanning …") is a participant, not the answer."""
    named = {normalize(n) for n in extract_entities(question)}
    qn = f" {normalize(question)} "
    return any(
        (low := normalize(n)) not in named and f" {low} " in qn for n in extract_entities(answer)
    )


def _truncated(text: str) -> str | None:
    """A sentence of ``text`` cut off mid-way, with no sentence mark: it ends on a
    function word ("… the CAD 740 million contract to"), on a currency with no amount
    ("Net profit was USD"), on a day number with no month ("performed on 4"), or (Chinese)
    on a comma."""
    for sentence in split_sentences(text):
        t = _CITATION.sub("", sentence.text).rstrip()
        if not t:
            continue
        if t[-1] in "，、," and has_cjk(t):
            return t
        if t[-1] in ".!?。！？\"'”)]:;":
            continue
        last = re.findall(r"[\w'’-]+", t[-24:])
        if last and last[-1].lower() in _DANGLING:
            return t
        if _CUT_NUMBER.search(t) or _CUT_UNIT.search(t):
            return t
    return None


_FIELD: Final = re.compile(r"^\s*((?:[A-Z][a-z]+)(?:\s+[a-z]+){0,2})\s*:\s+\S")


def _unasked_fields(text: str, question: str) -> str | None:
    """Every sentence of ``text`` is a record field ("Patient: …", "Case number: …")
    and one of the labels is not what the question asks about."""
    sentences = [_CITATION.sub("", s.text).strip() for s in split_sentences(text)]
    sentences = [s for s in sentences if s]
    labels = [m.group(1) for s in sentences if (m := _FIELD.match(s))]
    if not sentences or len(labels) != len(sentences):
        return None
    asked = key_terms(question)
    unasked = [lab for lab in labels if not key_terms(lab) <= asked]
    return ", ".join(dict.fromkeys(unasked)) if unasked else None


_RELATIONS: Final = frozenset(
    {
        frozenset({"before", "after"}),
        frozenset({"earlier", "later"}),
        frozenset({"more", "less"}),
        frozenset({"more", "fewer"}),
        frozenset({"higher", "lower"}),
        frozenset({"bigger", "smaller"}),
        frozenset({"larger", "smaller"}),
        frozenset({"longer", "shorter"}),
        frozenset({"faster", "slower"}),
        frozenset({"same", "different"}),
    }
)


def _missing_side(ask: Ask, answer: str) -> str | None:
    """For "did X happen before or after Y": the side (X or Y) the answer does not
    mention (none of its content words that the other side lacks)."""
    if len(ask.options) != 2:
        return None
    words = frozenset(o.split()[-1].lower() for o in ask.options[:1]) | frozenset(
        ask.options[1].split()[:1]
    )
    words = frozenset(w.lower() for w in words)
    if words not in _RELATIONS:
        return None
    m = re.search(r"\b(\w+)\s+or\s+(\w+)\b", ask.text)
    if m is None:
        return None
    left, right = ask.text[: m.start()], ask.text[m.end() :]
    left = _POLAR_EN.sub("", left)
    lt, rt = key_terms(left), key_terms(right)
    have = key_terms(answer)
    for side, own in ((left, lt - rt), (right, rt - lt)):
        if own and not own & have:
            return " ".join(side.split())
    return None


_CITE_BREAK: Final = re.compile(r"[ \t]*\[\d+(?:[,\s]+\d+)*\][ \t]*(?=[A-Z\u4e00-\u9fff])")
_CITE_SPACE: Final = re.compile(r"[ \t]*\[\d+(?:[,\s]+\d+)*\][ \t]*")


def reference_free_findings(
    question: str,
    passages: Sequence[str],
    prediction: str,
    *,
    unsupported: float = 0.5,
) -> tuple[list[Finding], list[str]]:
    """The findings of the reference-free checks (empty: nothing wrong was found) and the
    notes of the checks that passed (for the analysis of a Correct verdict)."""
    from ragtriage.diagnosis.answer_styles import answer_view
    from ragtriage.metrics._entail import split_claims

    # a citation marker before a capital letter ends what an extractive answer took from
    # one passage: kept as a line break, the pieces stay apart ("… Cold Storage [1] This
    # is …"); before a lower-case word the next passage goes on with the sentence
    view = answer_view(_CITE_SPACE.sub(" ", _CITE_BREAK.sub("\n", prediction)).strip())
    notes: list[str] = []
    if not view.text.strip():
        return [Finding("empty", "The prediction is empty.")], notes
    asks = question_asks(question)
    ps = _passages(question, passages)
    best = max(ps.coverage, default=0.0)
    final = view.final
    declines = view.final_declines or bool(view.declines)
    substance = split_claims(final) if declines else [final]
    typed = [a for a in asks if a.kind not in ("other",)]
    if declines:
        evidence = _typed_evidence(asks, question, ps)
        if not substance:
            if evidence is not None:
                return [
                    Finding(
                        "decline_answerable",
                        f"The prediction declines, but a passage about the question holds "
                        f"an answer of the kind asked: {_short(evidence)!r}.",
                    )
                ], notes
            if best >= ABOUT and _SUMMARY.search(question):
                return [
                    Finding(
                        "decline_answerable",
                        f"The question asks for a summary and a passage is about its subject "
                        f"({best:.0%} of its content words): there is something to summarise.",
                    )
                ], notes
            if best < ABOUT:
                return [
                    Finding(
                        "decline_unretrieved",
                        f"The prediction declines and no passage is about the question "
                        f"(best passage holds {best:.0%} of its content words): retrieval "
                        "missed the question's subject.",
                    )
                ], notes
            notes.append(
                f"the prediction declines; the passages are about the question ({best:.0%} "
                "of its content words) but hold nothing of the kind asked: abstaining is "
                "warranted"
            )
            return [], notes
        if evidence is not None:
            return [
                Finding(
                    "hedged",
                    "The prediction says the passages do not give the answer and then "
                    f"hedges, but a passage about the question holds one: {_short(evidence)!r}.",
                )
            ], notes
        final = " ".join(substance)
    findings: list[Finding] = []
    # grounding
    support = content_support(final, [*passages, question])
    share = 1.0 - support.unsupported_share if support.total else None
    facts, n_facts = _unsupported_facts(final, question, passages)
    if share is not None and share < unsupported:
        findings.append(
            Finding(
                "unsupported",
                f"Only {share:.0%} of the prediction's content words are in the passages "
                f"(not there: {', '.join(support.examples[:4])}).",
            )
        )
    elif facts and 2 * len(facts) >= n_facts:
        # a peripheral detail the passages lack does not make the answer wrong; most of
        # its facts missing from them does
        findings.append(
            Finding(
                "unsupported",
                f"The prediction states {', '.join(repr(f) for f in facts[:3])}, which no "
                "passage holds.",
            )
        )
    if (c := _contradictions(final, question, passages)) is not None:
        findings.append(Finding("contradiction", f"The passages contradict {c}."))
    # answer types
    q_focus = focus_terms(question)
    a_terms = key_terms(final)
    restates = bool(q_focus) and len(a_terms & q_focus) / len(q_focus) >= 0.5
    for ask in typed:
        if answer_has_kind(ask, final, question):
            continue
        if ask.kind in ("person", "name") and restates and _unnamed_in_question(final, question):
            continue  # "Zatch Bell became the Mamodo King": the question's own name answers
        if ask.kind == "reason":
            findings.append(
                Finding(
                    "no_reason",
                    f"The question asks why ({_short(ask.text)!r}); the prediction gives no "
                    "cause or reason.",
                )
            )
            continue
        findings.append(
            Finding(
                "type_mismatch",
                f"The question asks for {_KIND_WORDS[ask.kind]} ({_short(ask.text)!r}); "
                "the prediction gives none.",
            )
        )
        if not _any_of_kind(ask, question, passages):
            findings.append(
                Finding(
                    "unsupported_answer",
                    f"No passage holds {_KIND_WORDS[ask.kind]} at all: the passages do not "
                    "support an answer to this question.",
                )
            )
        break
    # parts: both entities of a two-entity question that asks about each
    from ragtriage.diagnosis.question_parts import mentions_part, question_parts

    selecting = any(a.kind in ("person", "name", "choice") for a in asks)
    parts = [p for p in question_parts(question) if p.kind == "entity"]
    if len(parts) >= 2 and not selecting:
        missing = [p.text for p in parts if not mentions_part(p, final)]
        if missing:
            findings.append(
                Finding(
                    "part_missing",
                    f"The question asks about {', '.join(p.text for p in parts)}; the "
                    f"prediction leaves out {', '.join(missing)}.",
                )
            )
    # off-topic: a sentence-long answer that shares no focus word, or adds nothing
    new_terms = {t for t in a_terms - key_terms(question) if not t[:1].isdigit()}
    new_facts = len(_quantities_outside(final, question)) + len(_dates_outside(final, question))
    if len(q_focus) >= 2 and len(a_terms) > _SHORT and not a_terms & q_focus:
        findings.append(
            Finding(
                "off_topic",
                f"The prediction shares none of the words the question asks about "
                f"({', '.join(sorted(q_focus)[:5])}): it does not address this question.",
            )
        )
    elif (
        len(a_terms) >= 2
        and len(new_terms) + new_facts <= 1
        and not any(answer_has_kind(a, final, question) for a in typed)
    ):
        findings.append(
            Finding("off_topic", "The prediction only repeats the question's own words.")
        )
    if (cut := _truncated(final) or _cut_before_citation(prediction)) is not None:
        findings.append(
            Finding("truncated", f"The prediction breaks off mid-sentence: {_short(cut)!r}.")
        )
    if (labels := _unasked_fields(final, question)) is not None:
        findings.append(
            Finding(
                "irrelevant_fields",
                f"The prediction only quotes record fields ({labels}) the question does not "
                "ask about.",
            )
        )
    for ask in asks:
        if ask.kind == "choice" and (side := _missing_side(ask, final)) is not None:
            findings.append(
                Finding(
                    "part_missing",
                    f"The question compares two things; the prediction does not address {side!r}.",
                )
            )
    if not findings and (other := _other_qualifier(final, question, passages, typed)):
        findings.append(Finding("other_qualifier", other))
    if (drift := _subject_drift(final, question, asks)) is not None:
        findings.append(Finding("entity_mix", f"The prediction is about another entity: {drift}."))
    elif (mix := _entity_mix(final, question, passages)) is not None:
        findings.append(Finding("entity_mix", f"The prediction mixes up entities: {mix}."))
    if not findings:
        what = ", ".join(_KIND_WORDS[a.kind] for a in typed) or "no particular type"
        notes.append(
            f"answers the question's asks ({what}); "
            + (f"{share:.0%} of its content words" if share is not None else "its facts")
            + " in the passages; nothing contradicted (not checked against a reference)"
        )
    return findings, notes


_KIND_WORDS: Final[dict[str, str]] = {
    "person": "a person or organisation",
    "name": "a name",
    "date": "a date or time",
    "duration": "a duration",
    "count": "a count",
    "quantity": "a quantity",
    "amount": "an amount of money",
    "percent": "a share or percentage",
    "place": "a place",
    "yesno": "a yes or no",
    "choice": "one of the options",
    "reason": "a reason",
    "org": "an organisation",
    "other": "an answer",
}


# -- does the answer's evidence carry the question's qualifiers -----------------------------

_VALUE_KINDS: Final = frozenset(
    {"person", "name", "org", "place", "date", "duration", "count", "quantity", "amount", "percent"}
)


def _values(kind: AskKind, text: str, question: str) -> list[str]:
    """The spans of ``text`` of the asked kind that the question does not state (names,
    dates or quantities), as written."""
    if kind in ("person", "name", "org", "place"):
        return _names(text, question, persons_only=kind == "person")
    if kind == "date":
        return [d.raw for d in _dates_outside(text, question)]
    return [q.raw for q in _quantities_outside(text, question)]


def _mentions(value: str, kind: AskKind, sentence: str) -> bool:
    """Whether ``sentence`` holds ``value``: the same date or quantity; for a name, the
    name, or its first word ("Ohio St." for "Ohio State Buckeyes"), or half its words."""
    if kind == "date":
        ds = extract_dates(value)
        return bool(ds) and any(dates_match(d, x) for d in ds for x in extract_dates(sentence))
    if kind not in ("person", "name", "org", "place"):
        qs = extract_quantities(value)
        return bool(qs) and any(
            quantities_match(q, x) for q in qs for x in extract_quantities(sentence)
        )
    low = normalize(value)
    norm = normalize(sentence)
    if not low:
        return False
    if has_cjk(low):
        return low in norm
    if f" {low} " in f" {norm} ":
        return True
    words = low.split()
    have = set(norm.split())
    if len(words[0]) > 3 and words[0] in have:
        return True
    return 2 * sum(w in have for w in words) >= len(words) > 1


_ORDINALS: Final = re.compile(
    r"\b(?:first|last|second|third|latest|earliest|final|initial|original|current|former)\b",
    re.IGNORECASE,
)
_ZH_FUNCTION_CHARS: Final = frozenset("在了的是和与于对等及从向被把将为由以其该此")


@lru_cache(maxsize=2048)
def qualifier_terms(question: str) -> frozenset[str]:
    """The question's qualifiers: the content terms that say which event, relation or role
    it asks about ("national championship", "CEO", "first", "arrested"), i.e. its terms
    without its names, numbers, dates and asking words (Chinese: bigrams inside the text
    left once names, dates and numbers are cut out, none holding a function character)."""
    text = question
    for span in [*extract_entities(question), *(d.raw for d in extract_dates(question))]:
        text = text.replace(span, "，")
    for q in extract_quantities(question):
        text = text.replace(q.raw, "，")
    terms = set(question_terms(text)) - _generic_terms()
    terms |= key_terms(" ".join(m.group() for m in _ORDINALS.finditer(question)))
    return frozenset(
        t
        for t in terms
        if not t[:1].isdigit() and not (has_cjk(t) and (len(t) != 2 or set(t) & _ZH_FUNCTION_CHARS))
    )


def _same_measure(value: str, other: str) -> bool:
    """Two quantities of the same unit (an amount against an amount, a count against a
    count)."""
    units = {q.unit for q in extract_quantities(value)}
    return any(q.unit in units for q in extract_quantities(other))


_MID_CAPITAL: Final = re.compile(r"(?<=[a-z0-9,;:()] )([A-Z][a-z][\w'’-]*)")


def _name_groups(question: str, passages: Sequence[str]) -> list[frozenset[str]]:
    """The question's names, each as its terms: its own names, and (a question written in
    lower case: "who did alabama play …") each of its words the passages write capitalised
    mid-sentence."""
    q = question_terms(question)
    groups = [key_terms(n) & q for n in extract_entities(question)]
    if not has_cjk(question) and not any(w[:1].isupper() for w in question.split()[1:]):
        written = key_terms(
            " ".join(m.group(1) for p in passages for m in _MID_CAPITAL.finditer(p))
        )
        groups += [frozenset({t}) for t in written & q]
    return [g for g in groups if g and not all(t[:1].isdigit() for t in g)]


_ACRONYM: Final = re.compile(r"\b[A-Z]{2,5}\b")


def _covered(sentence: str, question: str, terms: frozenset[str]) -> set[str]:
    """The ``terms`` a sentence holds; an acronym of the sentence holds the question's
    words whose initials start it ("CEO" holds "chief executive")."""
    have = set(key_terms(sentence) & terms)
    acronyms = set(_ACRONYM.findall(sentence))
    if acronyms and not has_cjk(question):
        words = re.findall(r"[A-Za-z][\w'-]*", question)
        for i in range(len(words)):
            for n in (2, 3, 4):
                run = words[i : i + n]
                initials = "".join(w[0] for w in run).upper()
                if len(run) == n and any(a.startswith(initials) for a in acronyms):
                    have |= key_terms(" ".join(run)) & terms
    return have


def _opens_on_name(sentence: str) -> bool:
    """The sentence starts with a name (after a leading "The")."""
    text = re.sub(r"^\s*(?:The|the)\s+", "", sentence.strip())
    names = [*extract_entities(sentence), *_sentence_names(text)]
    return any(n and text.startswith(n) and normalize(n) not in STOPWORDS_EN for n in names)


def _other_qualifier(
    answer: str, question: str, passages: Sequence[str], asks: Sequence[Ask]
) -> str | None:
    """The answer is supported, but for another event, relation or role of the question's
    subject than the one asked. A passage sentence that names a name of the question
    (:func:`_name_groups`, all its words) gives another value of the asked kind with the
    question's qualifiers (:func:`qualifier_terms`: "national championship", "first CEO");
    a sentence holding the answer's value names that same name, but every such sentence
    lacks two or more of those qualifiers ("… upset Alabama in the semi-final"), and none
    holds the competing sentence's names with all but one of its qualifiers (one may be
    missing: a paraphrase, "official arrest" for "formally arrested"). The competing
    sentence must hold as many of the question's terms as any sentence of the answer.
    Names missing from the answer's sentence ("the company" for "Acme Corp") are not a
    qualifier. Returns the analysis naming both sentences."""
    ask = next((a for a in asks if a.kind in _VALUE_KINDS), None)
    if ask is None:
        return None
    values = _values(ask.kind, answer, question)
    if not values:
        return None
    own_terms = key_terms(answer)
    groups = [g for g in _name_groups(question, passages) if not g & own_terms]
    name_terms = frozenset().union(*groups) if groups else frozenset()
    quals = qualifier_terms(question) - own_terms
    if not groups or len(quals - name_terms) + len(groups) < 3:
        return None
    q_terms = name_terms | quals
    # only the question's own names carry over sentences (in a question written in lower
    # case, the words the passages capitalise may be qualifiers: "National Championship")
    explicit = [g for g in groups if any(g == key_terms(n) & g for n in extract_entities(question))]
    sentences: list[str] = []
    covers: list[frozenset[str]] = []
    for p in passages:
        named_before: set[str] = set()
        for st in split_sentences(p):
            have = _covered(st.text, question, q_terms)
            sentences.append(st.text)
            # a sentence after one that names the subject may say "the company", "it";
            # one that opens on a name of its own ("The Ohio State Buckeyes won …") is
            # about that name
            own_subject = _opens_on_name(st.text)
            covers.append(frozenset(have if own_subject else have | named_before))
            named_before |= {t for g in explicit if g <= have for t in g}
    own = [
        (s, c)
        for s, c in zip(sentences, covers, strict=True)
        if any(_mentions(v, ask.kind, s) for v in values)
    ]
    if not own:
        return None  # unsupported: the grounding checks speak for it
    best = max(len(c) for _, c in own)
    rivals: list[tuple[str, frozenset[str], list[frozenset[str]], list[str]]] = []
    for s, c in zip(sentences, covers, strict=True):
        whole = [g for g in groups if g <= c]
        if not whole or len(c & quals) < 2 or len(c) < best:
            continue
        if any(_mentions(v, ask.kind, s) for v in values):
            continue
        others = [
            o
            for o in _values(ask.kind, s, question)
            if not any(_mentions(v, ask.kind, o) for v in values)
            and (
                ask.kind in ("person", "name", "org", "place", "date")
                or _same_measure(values[0], o)
            )
        ]
        if others:
            rivals.append((s, c, whole, others))
    top = max((len(c) for _, c, _, _ in rivals), default=0)
    for s, c, whole, others in rivals:
        if len(c) < top:
            continue  # only the sentences that match the question best compete
        named = frozenset().union(*whole)
        if any(named <= oc and len(c - named - oc) <= 1 for _, oc in own):
            return None  # an answer sentence carries the names and qualifiers asked
        elsewhere = [
            (t, oc)
            for t, oc in own
            if any(g <= oc for g in whole)
            and len((c - oc) & quals) >= 2
            and len(c & quals) > len(oc & quals)
        ]
        if not elsewhere:
            continue
        where, held = max(elsewhere, key=lambda x: len(x[1]))
        shared = sorted(t for g in whole if g <= held for t in g)
        missing = sorted((c - held) & quals)
        return (
            f"The passages attach {values[0]!r} to {' '.join(shared)!r} only without the "
            f"question's {', '.join(repr(m) for m in missing)} ({_short(where)!r}); the "
            f"sentence that has them gives {others[0]!r}: {_short(s)!r}. The answer is "
            "supported for another event, relation or role than the one asked."
        )
    return None
