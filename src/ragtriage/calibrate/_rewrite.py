"""Deterministic answer rewrites that make one generation error (E9-E16), EN and ZH.

Each function takes a :class:`RewriteInput` (the question, its ground truth, the
context the generator saw) and a seeded :class:`random.Random`, and returns either an
:class:`AnswerFault` (the wrong answer, its citations and what was changed) or a string
saying why the rewrite does not apply to this example. Nothing here reads or writes a
label; the caller records which fault it asked for.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ragtriage.calibrate._names import (
    Name,
    core_of,
    find_mentions,
    invent_name,
    names_in,
    query_entities,
)
from ragtriage.diagnosis.facts import (
    DateMention,
    Quantity,
    date_order,
    extract_dates,
    extract_entities,
    extract_quantities,
)
from ragtriage.records import Chunk, ErrorType
from ragtriage.text import content_tokens, is_cjk, normalize, split_sentences

__all__ = [
    "REWRITES",
    "AnswerFault",
    "RewriteFn",
    "RewriteInput",
    "alter_number",
    "answer_unanswerable",
    "fabricate_entity",
    "general_knowledge",
    "other_aspect",
    "partial_answer",
    "shift_date",
    "swap_dates",
    "swap_entities",
    "wrong_entity",
]


@dataclass(frozen=True, slots=True)
class RewriteInput:
    """What an answer rewrite may look at."""

    query: str
    ground_truth: str
    keypoints: tuple[str, ...]
    references: tuple[str, ...]
    language: str
    context: tuple[Chunk, ...]
    #: every text of the trace (all chunks, the query): invented names avoid them
    known_texts: tuple[str, ...]
    citations: tuple[str, ...] = ()

    @property
    def zh(self) -> bool:
        return self.language.lower().startswith("zh")


@dataclass(frozen=True, slots=True)
class AnswerFault:
    """A rewritten answer, the chunk ids it cites and what the rewrite did."""

    answer: str
    citations: tuple[str, ...]
    detail: str


RewriteFn = Callable[[RewriteInput, random.Random], "AnswerFault | str"]


def _mentioned_in(name: str, text: str) -> bool:
    """Whether ``text`` names ``name`` — also as a shorter form ("Acme Robotics" for
    "Acme Robotics Ltd") or a longer one."""
    if find_mentions(text, name) or normalize(name) in normalize(text):
        return True
    core = core_of(name)
    if core != name and (find_mentions(text, core) or normalize(core) in normalize(text)):
        return True
    key = normalize(name)
    return any((k := normalize(e)) and (k in key or key in k) for e in query_entities(text))


_ZH_KIND_SUFFIXES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("court", ("法院",)),
    ("hospital", ("医院", "卫生院")),
    ("org", ("公司", "集团", "银行", "事务所")),
    ("institution", ("检察院", "大学", "学院", "委员会", "研究院", "研究所", "协会", "基金会")),
)
_ZH_QUOTES = frozenset('“"「『《')


def _zh_kind(name: str, quoted: bool) -> str:
    """Kind of a Chinese entity found by :func:`~ragtriage.diagnosis.facts.extract_entities`:
    by its suffix (court, hospital, company, other institution); a short unquoted name
    without a suffix is a person (that extractor only yields those after a role word
    such as 被告/患者 with a surname first, or in the 某 form: 王某, 李某某); anything
    else (quoted titles, products) is "other"."""
    for kind, suffixes in _ZH_KIND_SUFFIXES:
        if name.endswith(suffixes):
            return kind
    if not quoted and 2 <= len(name) <= 4:
        return "person"
    return "other"


def _zh_names(text: str) -> list[Name]:
    """Chinese names in ``text``: organisations, courts and hospitals by their suffix,
    persons after role words or in the 某 form, quoted names -- the diagnoser's own
    entity detection, so fragments such as "变更设" (from "被告变更设计") are not names.
    Every occurrence, in text order, each span once."""
    out: list[Name] = []
    taken: list[tuple[int, int]] = []
    ents = [e for e in extract_entities(text) if any(is_cjk(ch) for ch in e)]
    for e in sorted(ents, key=len, reverse=True):  # longer names claim their span first
        at = text.find(e)
        while at >= 0:
            end = at + len(e)
            if not any(s < end and at < x for s, x in taken):
                taken.append((at, end))
                quoted = at > 0 and text[at - 1] in _ZH_QUOTES
                out.append(Name(e, at, end, _zh_kind(e, quoted)))
            at = text.find(e, end)
    return sorted(out, key=lambda n: n.start)


def _names(text: str) -> list[Name]:
    """Names in ``text``: English names as :func:`names_in` finds them, Chinese ones by
    :func:`_zh_names`."""
    if not any(is_cjk(ch) for ch in text):
        return names_in(text)
    latin = [n for n in names_in(text) if not any(is_cjk(ch) for ch in n.text)]
    return sorted([*latin, *_zh_names(text)], key=lambda n: n.start)


def _answer_names(inp: RewriteInput) -> list[Name]:
    """Names of the ground truth that the query does not already name."""
    out: list[Name] = []
    for n in _names(inp.ground_truth):
        if _mentioned_in(n.text, inp.query):
            continue
        if any(n.text == o.text for o in out):
            continue
        out.append(n)
    return out


def _replace_all(text: str, old: str, new: str) -> str:
    if any(is_cjk(ch) for ch in old):
        return text.replace(old, new)
    return re.sub(rf"(?<![\w-]){re.escape(old)}(?![\w-])", new, text)


# ----------------------------------------------------------------------------- E9


def answer_unanswerable(inp: RewriteInput, rng: random.Random) -> AnswerFault | str:
    """E9: answer an unanswerable question confidently with the context sentence that
    shares the most content words with the question."""
    del rng
    wanted = set(content_tokens(inp.query))
    best: tuple[int, int, str, str] | None = None
    order = 0
    for chunk in inp.context:
        for sent in split_sentences(chunk.text):
            text = " ".join(sent.text.split())
            if text.startswith("#") or len(content_tokens(text)) < 3:
                continue
            score = len(wanted & set(content_tokens(text)))
            order += 1
            if score > 0 and (best is None or (score, -order) > (best[0], best[1])):
                best = (score, -order, text, chunk.chunk_id)
    if best is None:
        return "no context sentence shares a word with the question"
    return AnswerFault(
        best[2], (best[3],), f"answered from a context sentence ({best[0]} shared words)"
    )


# ---------------------------------------------------------------------------- E10


def fabricate_entity(inp: RewriteInput, rng: random.Random) -> AnswerFault | str:
    """E10: replace the names the answer gives (up to two) by invented names that occur
    in no chunk of the trace."""
    targets = _answer_names(inp)[:2]
    if not targets:
        return "the ground truth names no entity beyond the question's"
    answer = inp.ground_truth
    avoid = [*inp.known_texts, inp.query, inp.ground_truth]
    changes: list[str] = []
    for n in targets:
        kind = "org" if n.kind == "institution" else n.kind
        new = invent_name(kind, inp.language, rng, avoid)
        if new is None:
            return "could not invent a name absent from the trace"
        avoid.append(new)
        answer = _replace_all(answer, n.text, new)
        changes.append(f"{n.text!r} -> {new!r}")
    if answer == inp.ground_truth:
        return "replacing the names changed nothing"
    return AnswerFault(answer, inp.citations, "invented names: " + "; ".join(changes))


# ---------------------------------------------------------------------------- E11

_EN_TEMPLATES: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(
            r"\b(how\s+(?:much|many)|what\s+(?:\w+\s+){0,2}(?:rate|percentage|share|"
            r"amount|price|cost|value|number|total|sum|figure)|percent)",
            re.I,
        ),
        "Figures like this are usually in line with the industry average; in general it "
        "would be a moderate, typical amount for an organisation of this size.",
    ),
    (
        re.compile(
            r"\b(when|what\s+(?:year|date|month)|which\s+(?:year|date|month)|how\s+long|"
            r"earlier|first|before|after)\b",
            re.I,
        ),
        "Such things generally happen at the end of the financial year, as is common "
        "practice, so it was most likely in December.",
    ),
    (
        re.compile(r"\b(who|whom|whose)\b", re.I),
        "Generally this responsibility lies with the board of directors or the most "
        "senior officer, as is standard practice.",
    ),
    (
        re.compile(r"\b(why|how)\b", re.I),
        "Generally this is driven by broad market conditions and standard industry "
        "practice rather than anything unusual.",
    ),
)
_EN_DEFAULT = (
    "In general, this follows common practice in the field; typically the usual standard applies."
)
_ZH_TEMPLATES: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(r"多少|几|比例|百分比|金额|数额|总额|数量"),
        "一般来说，这类数字通常与行业平均水平相当，属于常见的中等规模。",
    ),
    (
        re.compile(r"何时|什么时候|哪一年|哪年|哪个月|几月|日期|时间|先后|顺序|更早|最早"),
        "通常这类事项一般在每年年底进行，按惯例应是在十二月。",
    ),
    (re.compile(r"谁|哪位|什么人"), "一般来说，这通常由董事会或最高负责人按惯例负责。"),
    (re.compile(r"为什么|为何|原因|怎样|如何"), "通常这是由于市场环境和行业惯例等普遍因素造成的。"),
)
_ZH_DEFAULT = "一般而言，这取决于行业的通行做法，通常适用常规标准。"


def general_knowledge(inp: RewriteInput, rng: random.Random) -> AnswerFault | str:
    """E11: ignore the context and answer with a generic statement of the kind a model
    gives from its parametric knowledge (no name or number taken from the context)."""
    del rng
    templates, default = (_ZH_TEMPLATES, _ZH_DEFAULT) if inp.zh else (_EN_TEMPLATES, _EN_DEFAULT)
    answer = next((t for pat, t in templates if pat.search(inp.query)), default)
    return AnswerFault(answer, (), "generic answer from general knowledge, context ignored")


# ---------------------------------------------------------------------------- E12

_EN_CLAUSE = re.compile(
    r"\s*(?:;|:|,\s+(?:and|while|whereas|but|then|followed\s+by)\s+|\s+and\s+then\s+|"
    r"\s+(?:while|whereas)\s+)\s*",
    re.I,
)
_EN_ASKS = re.compile(r"\b(?:what|who|whom|whose|when|where|which|why|how)\b", re.I)
_ZH_ASKS = re.compile(r"什么|谁|何时|哪|多少|几|怎么|怎样|为什么|为何|如何")
_LIST_ASK = re.compile(
    r"\b(?:summari[sz]e|overview|list|describe|compare|outline)\b|概括|总结|列出|简述|比较|分别",
    re.I,
)


def _asks(query: str) -> int:
    """How many things a question asks for: its question words and question marks;
    a request to summarise, list or compare asks for several."""
    if _LIST_ASK.search(query):
        return 2
    n = len(_EN_ASKS.findall(query)) + len(_ZH_ASKS.findall(query))
    return max(n, query.count("?") + query.count("？"))


_ZH_CLAUSE = re.compile(r"[；;：:]|，(?:而|随后|然后|最后|并且|以及|同时|其次|再)|，")


def _parts(text: str, zh: bool) -> list[str]:
    sentences = [s.text.strip() for s in split_sentences(text) if s.text.strip()]
    if len(sentences) >= 2:
        return sentences
    pattern = _ZH_CLAUSE if zh else _EN_CLAUSE
    pieces = [p.strip(" ,，.。") for p in pattern.split(text)]
    return [p for p in pieces if len(content_tokens(p)) >= 2]


def _kp_covered(part: str, keypoints: Sequence[str]) -> int:
    have = set(content_tokens(part))
    covered = 0
    for kp in keypoints:
        toks = set(content_tokens(kp))
        if toks and len(toks & have) / len(toks) >= 0.6:
            covered += 1
    return covered


def _as_sentence(part: str, zh: bool) -> str:
    part = part.strip()
    part = re.sub(r"^(?:and|but|then|while|whereas)\s+", "", part, flags=re.I)
    part = re.sub(r"^(?:而|随后|然后|最后|并且|以及|同时|其次|再)", "", part)
    if not part:
        return part
    if zh:
        return part if part.endswith(("。", "！", "？")) else part + "。"
    part = part[:1].upper() + part[1:]
    return part if part.endswith((".", "!", "?")) else part + "."


def partial_answer(inp: RewriteInput, rng: random.Random) -> AnswerFault | str:
    """E12: for a question that asks for several things, keep only one part of the
    multi-part ground truth (the part covering the fewest keypoints), as a model that
    answers one of the asks and stops."""
    del rng
    if _asks(inp.query) < 2:
        return "the question asks for a single thing"
    parts = _parts(inp.ground_truth, inp.zh)
    if len(parts) < 2:
        return "the ground truth has a single part"
    scored = sorted(
        enumerate(parts),
        key=lambda ip: (_kp_covered(ip[1], inp.keypoints), len(content_tokens(ip[1])), ip[0]),
    )
    index, part = scored[0]
    answer = _as_sentence(part, inp.zh)
    if not content_tokens(answer) or normalize(answer) == normalize(inp.ground_truth):
        return "no smaller part of the ground truth"
    return AnswerFault(answer, inp.citations, f"kept part {index + 1} of {len(parts)}")


# ---------------------------------------------------------------------------- E13


def _context_names(inp: RewriteInput) -> list[Name]:
    out: list[Name] = []
    seen: set[str] = set()
    for chunk in inp.context:
        for n in _names(chunk.text):
            key = normalize(n.text)
            if key and key not in seen:
                seen.add(key)
                out.append(n)
    return out


def swap_entities(inp: RewriteInput, rng: random.Random) -> AnswerFault | str:
    """E13 (swap): the answer names two entities of the same kind that both occur in
    the context; swap them, so each fact is attributed to the other one."""
    del rng
    context_text = "\n".join(c.text for c in inp.context)
    names = [n for n in _names(inp.ground_truth) if _mentioned_in(n.text, context_text)]
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            if a.kind != b.kind or normalize(a.text) == normalize(b.text):
                continue
            if a.kind == "other" and inp.zh:
                continue  # quoted titles, products: not one kind of thing
            if normalize(a.text) in normalize(b.text) or normalize(b.text) in normalize(a.text):
                continue
            marker = "\x00"
            answer = _replace_all(inp.ground_truth, a.text, marker)
            answer = _replace_all(answer, b.text, a.text).replace(marker, b.text)
            if answer != inp.ground_truth:
                return AnswerFault(answer, inp.citations, f"swapped {a.text!r} and {b.text!r}")
    return "the ground truth does not name two entities of one kind found in the context"


def wrong_entity(inp: RewriteInput, rng: random.Random) -> AnswerFault | str:
    """E13 (substitute): replace a name the answer gives by another entity of the same
    kind that the context mentions (a fact attributed to the wrong one of two)."""
    targets = _answer_names(inp)
    if not targets:
        return "the ground truth names no entity beyond the question's"
    answer_norm = normalize(inp.ground_truth)
    candidates = [
        n
        for n in _context_names(inp)
        if normalize(n.text) not in answer_norm
        and normalize(core_of(n.text)) not in answer_norm
        and not _mentioned_in(n.text, inp.query)
        and not any(normalize(t.text) in normalize(n.text) for t in targets)
    ]
    for target in targets:
        if target.kind == "other":
            continue  # products, places, events: too mixed to swap for one of a kind
        same = [c for c in candidates if c.kind == target.kind]
        if not same:
            continue
        other = same[rng.randrange(len(same))]
        answer = _replace_all(inp.ground_truth, target.text, other.text)
        if answer != inp.ground_truth:
            return AnswerFault(
                answer, inp.citations, f"{target.text!r} -> {other.text!r} (from the context)"
            )
    return "the context names no other entity of the same kind"


# ---------------------------------------------------------------------------- E14


def other_aspect(inp: RewriteInput, rng: random.Random) -> AnswerFault | str:
    """E14: answer with a true context sentence about the question's subject that is
    about another aspect (shares words with the question, hardly any with the answer,
    and is not a reference sentence)."""
    del rng
    wanted = set(content_tokens(inp.query))
    gt = set(content_tokens(" ".join([inp.ground_truth, *inp.keypoints])))
    refs = [set(content_tokens(r)) for r in inp.references]
    best: tuple[int, int, str, str] | None = None
    order = 0
    for chunk in inp.context:
        for sent in split_sentences(chunk.text):
            text = " ".join(sent.text.split())
            toks = set(content_tokens(text))
            order += 1
            if text.startswith("#") or len(toks) < (6 if inp.zh else 4):
                continue
            if gt and len(toks & gt) / len(gt) >= 0.25:
                continue
            if any(r and len(toks & r) / len(toks) >= 0.5 for r in refs):
                continue
            shared = len(wanted & toks)
            if shared == 0:
                continue
            if best is None or (shared, -order) > (best[0], best[1]):
                best = (shared, -order, text, chunk.chunk_id)
    if best is None:
        return "no context sentence about the subject that leaves the answer out"
    return AnswerFault(best[2], (best[3],), "a true context sentence about another aspect")


# ---------------------------------------------------------------------------- E15

_MONTHS = (
    "January February March April May June July August September October November December"
).split()
_MONTH_RE = re.compile(
    r"\b(" + "|".join(m for m in _MONTHS) + r"|" + "|".join(m[:3] for m in _MONTHS) + r")\b\.?"
)


def _date_key(d: DateMention) -> tuple[int, int, int]:
    return (d.year or 0, d.month or 0, d.day or 0)


def swap_dates(inp: RewriteInput, rng: random.Random) -> AnswerFault | str:
    """E15 (swap): exchange two different dates of the answer, so the events are put
    in the wrong order."""
    del rng
    gt = inp.ground_truth
    dates = [d for d in extract_dates(gt) if d.end > d.start]
    for i, a in enumerate(dates):
        for b in dates[i + 1 :]:
            if _date_key(a) == _date_key(b) or a.raw.strip() == b.raw.strip():
                continue
            answer = gt[: a.start] + b.raw + gt[a.end : b.start] + a.raw + gt[b.end :]
            return AnswerFault(answer, inp.citations, f"swapped dates {a.raw!r} and {b.raw!r}")
    return "the ground truth has fewer than two different dates"


def _shift(raw: str, *, years: int = 0, month_to: int | None = None) -> str | None:
    out = raw
    if years:
        m = re.search(r"(?<!\d)(1[89]\d{2}|20\d{2})(?!\d)", out)
        if not m:
            return None
        out = out[: m.start()] + str(int(m.group(1)) + years) + out[m.end() :]
    if month_to is not None:
        zh = re.search(r"(?<!\d)(\d{1,2})月", out)
        en = _MONTH_RE.search(out)
        if zh:
            out = out[: zh.start(1)] + str(month_to) + out[zh.end(1) :]
        elif en:
            name = _MONTHS[month_to - 1]
            word = en.group(1)
            new = name if len(word) > 3 else name[:3]
            out = out[: en.start(1)] + new + out[en.end(1) :]
        else:
            return None
    return out if out != raw else None


def shift_date(inp: RewriteInput, rng: random.Random) -> AnswerFault | str:
    """E15 (misorder): move the later of two dates of the answer before the earlier one,
    so the chronology is wrong (a lone date moved is a wrong value, E16 to the judge,
    not a wrong order: no fault is made then)."""
    del rng
    gt = inp.ground_truth
    dates = [d for d in extract_dates(gt) if d.end > d.start]
    if len(dates) < 2:
        return "the ground truth has no two dates to put out of order"
    for later in dates:
        for earlier in dates:
            if date_order(later, earlier) != 1:
                continue
            new: str | None = None
            if later.year is not None and earlier.year is not None and later.year != earlier.year:
                new = _shift(later.raw, years=(earlier.year - later.year) - 1)
            elif later.month is not None and earlier.month is not None and earlier.month > 1:
                new = _shift(later.raw, month_to=earlier.month - 1)
            moved = extract_dates(new) if new else []
            if new is None or not moved or date_order(moved[0], earlier) != -1:
                continue
            answer = gt[: later.start] + new + gt[later.end :]
            return AnswerFault(answer, inp.citations, f"date {later.raw!r} -> {new!r}")
    return "could not move a date of the ground truth before another"


# ---------------------------------------------------------------------------- E16

_NUM = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?")
_ASKS_PERCENT = re.compile(r"percent|%|rate|share|proportion|ratio|百分|比例|占比|比率|利率", re.I)
_ASKS_MONEY = re.compile(
    r"how\s+much|cost|price|revenue|profit|loss|income|amount|paid|pay|fine|damages|"
    r"compensation|金额|多少钱|收入|利润|亏损|营收|罚|赔偿|费用|资金",
    re.I,
)
_ASKS_COUNT = re.compile(r"how\s+many|number\s+of|几|多少(?:个|名|家|人|次|天|年)", re.I)


def _quantity_priority(q: Quantity, query: str) -> int:
    if _ASKS_PERCENT.search(query) and q.unit == "%":
        return 0
    if _ASKS_MONEY.search(query) and q.unit not in ("", "%", "x") and len(q.unit) == 3:
        return 0
    if _ASKS_COUNT.search(query) and q.unit in ("",):
        return 0
    return 1


def _format_like(old: str, value: float) -> str:
    decimals = len(old.split(".")[1]) if "." in old else 0
    text = f"{value:,.{decimals}f}" if "," in old else f"{value:.{decimals}f}"
    return text


def alter_number(inp: RewriteInput, rng: random.Random) -> AnswerFault | str:
    """E16: change one number of the answer (the kind the question asks for first: a
    percentage, an amount of money, a count), keeping its format and unit."""
    gt = inp.ground_truth
    query_values = {q.value for q in extract_quantities(inp.query)}
    quantities = [q for q in extract_quantities(gt) if q.value not in query_values]
    if not quantities:
        return "the ground truth states no number"
    quantities.sort(key=lambda q: (_quantity_priority(q, inp.query), q.start))
    for q in quantities:
        m = _NUM.search(q.raw)
        if m is None:
            continue
        old = m.group(0)
        value = float(old.replace(",", ""))
        factor = rng.choice((1.3, 0.7, 1.5, 0.6, 1.25, 0.8))
        new_value = value * factor if value else 3.0
        new = _format_like(old, new_value)
        if new == old or float(new.replace(",", "")) == value:
            step = 10 ** -(len(old.split(".")[1]) if "." in old else 0)
            new = _format_like(old, value + step * rng.choice((1, 2, 3)))
        start = q.start + m.start()
        answer = gt[:start] + new + gt[start + len(old) :]
        return AnswerFault(answer, inp.citations, f"number {old!r} -> {new!r} in {q.raw!r}")
    return "no digits to change in the ground truth's numbers"


#: The deterministic rewrites by error type, with the injector names that use them.
REWRITES: dict[str, tuple[ErrorType, RewriteFn]] = {
    "E9-answer-unanswerable": (ErrorType.E9, answer_unanswerable),
    "E10-invent-entity": (ErrorType.E10, fabricate_entity),
    "E11-general-knowledge": (ErrorType.E11, general_knowledge),
    "E12-partial-answer": (ErrorType.E12, partial_answer),
    "E13-wrong-entity": (ErrorType.E13, wrong_entity),
    "E13-swap-entities": (ErrorType.E13, swap_entities),
    "E14-other-aspect": (ErrorType.E14, other_aspect),
    "E15-shift-date": (ErrorType.E15, shift_date),
    "E15-swap-dates": (ErrorType.E15, swap_dates),
    "E16-alter-number": (ErrorType.E16, alter_number),
}
