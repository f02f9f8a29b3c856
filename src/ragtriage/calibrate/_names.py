"""Names in English and Chinese text, anaphors that replace them, invented names.

Used by the fault injectors only (never by the diagnoser): finding the entity a query
names inside a chunk, choosing the pronoun-like phrase a careless chunk would carry
instead ("the company", "该公司"), and inventing a name that occurs nowhere in a trace.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ragtriage.diagnosis.facts import extract_entities
from ragtriage.text import is_cjk

__all__ = [
    "Name",
    "anaphor_for",
    "core_of",
    "find_mentions",
    "invent_name",
    "kind_in_document",
    "name_kind",
    "names_in",
    "query_entities",
]

_POSSESSIVE = re.compile(r"(?:'s|’s|'|’)$")
_EN_ORG = re.compile(
    r"\b(?:Inc|Ltd|LLC|plc|PLC|ASA|AS|AB|AG|SA|NV|BV|GmbH|Co|Corp|Corporation|Company|"
    r"Group|Holdings?|Partners|Bank|Industries|Logistics|Technologies|Systems|Capital|"
    r"Energy|Pharma|Foods|Airlines?|Motors|Media|Labs?|Ventures)\b\.?"
)
_EN_COURT = re.compile(r"\bCourt\b|\bTribunal\b")
_EN_HOSPITAL = re.compile(r"\b(?:Hospital|Clinic|Medical Cent(?:er|re)|Infirmary)\b")
_ROLE_WORDS = (
    r"(?:(Dr|Mr|Mrs|Ms|Prof)\.?|(Doctor|Judge|Justice|Professor|Defendant|defendant|"
    r"Plaintiff|plaintiff|Patient|patient|prosecutor|Prosecutor|nurse|Nurse))"
)
_EN_ROLE_BEFORE = re.compile(r"\b" + _ROLE_WORDS + r"[ \t]+$")
_EN_ROLE_LEAD = re.compile(_ROLE_WORDS + r"[ \t]")
_EN_ROLE_ANAPHOR = {
    "dr": "the doctor",
    "doctor": "the doctor",
    "judge": "the judge",
    "justice": "the judge",
    "prof": "the professor",
    "professor": "the professor",
    "defendant": "the defendant",
    "plaintiff": "the plaintiff",
    "patient": "the patient",
    "prosecutor": "the prosecutor",
    "nurse": "the nurse",
}
_ZH_ORG = re.compile(r"[\u4e00-\u9fff]{2,16}?(?:股份有限公司|有限责任公司|有限公司|集团|公司|银行)")
_ZH_COURT = re.compile(r"[\u4e00-\u9fff]{2,16}?(?:人民法院|法院)")
_ZH_HOSPITAL = re.compile(r"[\u4e00-\u9fff]{2,16}?(?:医院|卫生院)")
_ZH_ROLE_PERSON = re.compile(
    r"(患者|被告人|被告|原告|法官|审判长|医生|医师|董事长|总经理|证人|检察官)"
    r"([\u4e00-\u9fff]{1}(?:某某|某|[\u4e00-\u9fff]{1,2}))"
)
_ZH_ROLE_ANAPHOR = {
    "患者": "该患者",
    "被告人": "该被告人",
    "被告": "该被告",
    "原告": "该原告",
    "法官": "该法官",
    "审判长": "该审判长",
    "医生": "该医生",
    "医师": "该医师",
    "董事长": "该董事长",
    "总经理": "该总经理",
    "证人": "该证人",
    "检察官": "该检察官",
}
_ACRONYM = re.compile(r"^[A-Z0-9&.]{1,5}$")
#: capitalised words that form titles and headings, not names ("Chief Financial Officer")
_TITLE_WORDS = frozenset(
    """chief financial executive operating technology officer director president vice
    deputy manager head board chair chairman chairwoman chairperson secretary treasurer
    general counsel annual report company overview outlook summary financial performance
    major events management changes section chapter table figure the of and""".split()
)


@dataclass(frozen=True, slots=True)
class Name:
    """A name found in a text: its surface form, span and kind
    (``org``, ``person``, ``court``, ``hospital`` or ``other``)."""

    text: str
    start: int
    end: int
    kind: str


def _clean(name: str) -> str:
    return _POSSESSIVE.sub("", name.strip()).strip()


def name_kind(name: str, before: str = "") -> str:
    """The kind of a name, from its own words and the word right before it."""
    if any(is_cjk(ch) for ch in name):
        if _ZH_COURT.fullmatch(name):
            return "court"
        if _ZH_HOSPITAL.fullmatch(name):
            return "hospital"
        if _ZH_ORG.fullmatch(name):
            return "org"
        role = next((r for r in _ZH_ROLE_ANAPHOR if before.endswith(r)), None)
        return "person" if role or len(name) <= 4 else "other"
    if _EN_COURT.search(name):
        return "court"
    if _EN_HOSPITAL.search(name):
        return "hospital"
    if _EN_ORG.search(name):
        return "org"
    if _EN_ROLE_BEFORE.search(before):
        return "person"
    words = name.split()
    if 2 <= len(words) <= 4 and all(w[:1].isupper() for w in words):
        return "person"
    return "other"


_PERSONAL = re.compile(r"\b(?:he|she|his|her|him|himself|herself)\b", re.I)
_NEUTER = re.compile(r"\b(?:it|its|itself)\b", re.I)


def kind_in_document(name: str, text: str, spans: Sequence[tuple[int, int]]) -> str:
    """The kind of ``name`` given how ``text`` talks about it: a guessed "person"
    (two capitalised words, no role word) becomes "other" when the text right after
    its mentions uses "it/its" rather than "he/she" (a vessel, a product, a place)."""
    longest = max(spans, key=lambda sp: sp[1] - sp[0]) if spans else None
    before = text[max(0, longest[0] - 16) : longest[0]] if longest else ""
    kind = name_kind(name, before)
    if kind != "person" or any(is_cjk(ch) for ch in name) or _EN_ROLE_BEFORE.search(before):
        return kind
    personal = neuter = 0
    for _, e in spans:
        window = text[e : e + 160]
        personal += len(_PERSONAL.findall(window))
        neuter += len(_NEUTER.findall(window))
    return "person" if personal >= neuter else "other"


def names_in(text: str) -> list[Name]:
    """Names in ``text`` (English capitalised runs, Chinese organisations, courts,
    hospitals and role-tagged persons), without acronyms, in order, each span once."""
    found: list[Name] = []
    # Markdown header lines are section titles, not names ("## Financial Performance")
    taken: list[tuple[int, int]] = [
        (m.start(), m.end()) for m in re.finditer(r"(?m)^[ \t]*#{1,6}[ \t].*$", text)
    ]

    def add(surface: str, start: int) -> None:
        end = start + len(surface)
        if any(s < end and start < e for s, e in taken):
            return
        taken.append((start, end))
        found.append(
            Name(surface, start, end, name_kind(surface, text[max(0, start - 12) : start]))
        )

    for m in _ZH_ROLE_PERSON.finditer(text):
        add(m.group(2), m.start(2))
    for pattern in (_ZH_COURT, _ZH_HOSPITAL, _ZH_ORG):
        for m in pattern.finditer(text):
            add(_trim_zh_org(m.group(0)), m.end() - len(_trim_zh_org(m.group(0))))
    for raw in extract_entities(text):
        name = _clean(raw)
        if not name or _ACRONYM.fullmatch(name) or any(is_cjk(ch) for ch in name):
            continue
        words = name.split()
        while words and words[0].lower().rstrip(".") in _TITLE_WORDS:
            words.pop(0)  # "Chief Executive Officer Priya Raman" -> "Priya Raman"
        if not words:
            continue
        name = " ".join(words)
        for m in re.finditer(re.escape(name), text):
            add(name, m.start())
    return sorted(found, key=lambda n: n.start)


_ZH_LEAD = re.compile(
    r"^.*(?:完成对|完成|收购|控股|持有|所在的|对|与|和|及|向|由|在|于|为|是|被|将|把|根据|据)[了的其]?"
)


def _trim_zh_org(org: str) -> str:
    """Drop a leading verb/preposition run from a greedy Chinese organisation match."""
    trimmed = _ZH_LEAD.sub("", org)
    return trimmed if len(trimmed) >= 4 else org


_ZH_ORG_SUFFIX = re.compile(r"(?:股份有限公司|有限责任公司|有限公司|集团|公司|银行)$")


def core_of(name: str) -> str:
    """A name without its company suffix ("华锦新材料股份有限公司" → "华锦新材料",
    "Acme Robotics Ltd" → "Acme Robotics")."""
    if any(is_cjk(ch) for ch in name):
        core = _ZH_ORG_SUFFIX.sub("", name)
        return core if len(core) >= 2 else name
    words = name.split()
    while len(words) > 1 and _EN_ORG.fullmatch(words[-1]):
        words.pop()
    return " ".join(words)


def query_entities(query: str, document_head: str = "") -> list[str]:
    """Names the query mentions: its extracted entities (acronyms dropped) plus, for
    Chinese, runs of 3+ CJK characters shared with the document's head (its title and
    first lines usually name the document's subject)."""
    out: list[str] = []
    for raw in extract_entities(query):
        name = _clean(raw)
        if name and not _ACRONYM.fullmatch(name) and name not in out:
            out.append(name)
    if document_head and any(is_cjk(ch) for ch in query):
        for run in re.findall(r"[\u4e00-\u9fff]{3,}", query):
            best = _longest_shared(run, document_head)
            if len(best) >= 3 and best not in out and not any(best in o for o in out):
                out.append(best)
    return out


def _longest_shared(a: str, b: str) -> str:
    best = ""
    for i in range(len(a)):
        for j in range(len(a), i + len(best), -1):
            if a[i:j] in b:
                best = a[i:j]
                break
    return best


def find_mentions(text: str, entity: str) -> list[tuple[int, int]]:
    """Spans of ``entity`` in ``text``, widened to a trailing company suffix
    ("Halvorsen Maritime Logistics" → "... ASA") and a leading role word ("Dr. ", "患者").

    English names also match by their last word when it is distinctive (``Halvorsen``
    for ``Halvorsen Maritime Logistics``); matches never cut a word.
    """
    if not entity:
        return []
    cjk = any(is_cjk(ch) for ch in entity)
    patterns = [re.escape(entity)]
    if not cjk:
        words = entity.split()
        if len(words) > 1:
            for w in (words[0], words[-1]):
                if len(w) >= 5 and w[:1].isupper() and not _EN_ORG.fullmatch(w):
                    patterns.append(re.escape(w))
    spans: list[tuple[int, int]] = []
    for pat in patterns:
        core = pat if cjk else rf"(?<![\w-]){pat}(?![\w-])"
        for m in re.finditer(core, text):
            s, e = m.start(), m.end()
            if any(s < e2 and s2 < e for s2, e2 in spans):
                continue
            s, e = _widen(text, s, e, cjk)
            spans.append((s, e))
    return sorted(spans)


def _widen(text: str, s: int, e: int, cjk: bool) -> tuple[int, int]:
    if cjk:
        m = re.match(r"(?:股份有限公司|有限责任公司|有限公司|集团|公司)", text[e:])
        if m:
            e += m.end()
        role = next((r for r in _ZH_ROLE_ANAPHOR if text[:s].endswith(r)), None)
        if role is not None:
            s -= len(role)
        return s, e
    # extend right over capitalised words of the name and company suffixes
    while True:
        m = re.match(r"[ \t]+([A-Z][\w&-]*\.?)", text[e:])
        if not m:
            break
        word = m.group(1)
        if _EN_ORG.fullmatch(word) or (
            word[:1].isupper()
            and word.rstrip(".").isalpha()
            and _is_name_continuation(text, e + m.start(1))
        ):
            e += m.end()
        else:
            break
    m = re.search(r"(?:'s|’s)(?!\w)", text[e : e + 3])
    if m and m.start() == 0:
        e += m.end()
    b = _EN_ROLE_BEFORE.search(text[max(0, s - 16) : s])
    if b:
        s = max(0, s - 16) + b.start()
    return s, e


def _is_name_continuation(text: str, at: int) -> bool:
    """A capitalised word right after a name continues it unless it starts a sentence."""
    before = text[:at].rstrip()
    return not before.endswith((".", "!", "?", ":", ";"))


def anaphor_for(text: str, span: tuple[int, int], kind: str | None = None) -> str:
    """What a chunk would say instead of the name at ``span`` of ``text``: "the company",
    "the court", "the patient", "该公司", "该患者" ... (capitalised at a sentence start,
    possessive kept). ``kind`` overrides the kind guessed from the surface form (a bare
    "Halvorsen" is a company when the full name is)."""
    s, e = span
    surface = text[s:e]
    cjk = any(is_cjk(ch) for ch in surface)
    if cjk:
        role = next((r for r in _ZH_ROLE_ANAPHOR if surface.startswith(r)), None)
        if role is not None:
            return _ZH_ROLE_ANAPHOR[role]
        kind = kind or name_kind(surface, text[max(0, s - 6) : s])
        base = {"org": "该公司", "court": "该院", "hospital": "该院"}.get(kind)
        if base is None:
            base = (
                "该公司" if re.search(re.escape(surface) + r".{0,8}(?:公司|集团)", text) else "其"
            )
        return base
    possessive = bool(re.search(r"(?:'s|’s)$", surface))
    core = _POSSESSIVE.sub("", surface)
    lead = _EN_ROLE_LEAD.match(core)
    if lead:
        role = (lead.group(1) or lead.group(2) or "").lower()
        phrase = _EN_ROLE_ANAPHOR.get(role, "the person")
    else:
        kind = kind or name_kind(core, text[max(0, s - 16) : s])
        phrase = {
            "org": "the company",
            "court": "the court",
            "hospital": "the hospital",
            "person": "the person",
        }.get(kind, "it")
    if possessive:
        phrase = "its" if phrase == "it" else phrase + "'s"
    before = text[:s].rstrip()
    if not before or before.endswith((".", "!", "?", "\n", ":")) or text[:s].endswith("\n"):
        phrase = phrase[:1].upper() + phrase[1:]
    return phrase


_EN_FIRST = ("Aldric", "Mirela", "Tobiah", "Ysolde", "Caspar", "Henrike", "Ossian", "Liesel")
_EN_LAST = ("Vantreight", "Oskarby", "Delacorte", "Brannagh", "Feldmark", "Quenneville")
_EN_ORG_HEAD = ("Norvale", "Quillon", "Brightmere", "Castellane", "Orrin", "Weylund")
_EN_ORG_TAIL = ("Holdings", "Partners", "Group", "Capital", "Industries")
_ZH_SURNAME = ("欧阳", "司马", "钟离", "韦", "邝", "蔺")
_ZH_GIVEN = ("书衡", "若岚", "景澄", "子墨", "砚秋", "霁川")
_ZH_ORG_HEAD = ("恒泰瑞达", "远川澜", "澜亭启", "启衡泽", "沐川汇")
_ZH_ORG_TAIL = ("有限公司", "集团", "科技有限公司")


def invent_name(kind: str, language: str, rng: random.Random, avoid: Iterable[str]) -> str | None:
    """A made-up name of ``kind`` that occurs in none of the ``avoid`` texts."""
    haystack = "\n".join(avoid).lower()
    zh = language.lower().startswith("zh")
    candidates: list[str]
    if zh:
        if kind in ("org", "court", "hospital", "other"):
            candidates = [h + t for h in _ZH_ORG_HEAD for t in _ZH_ORG_TAIL]
        else:
            candidates = [s + g for s in _ZH_SURNAME for g in _ZH_GIVEN]
    elif kind in ("org", "court", "hospital", "other"):
        candidates = [f"{h} {t}" for h in _EN_ORG_HEAD for t in _EN_ORG_TAIL]
    else:
        candidates = [f"{f} {last}" for f in _EN_FIRST for last in _EN_LAST]
    order = list(candidates)
    rng.shuffle(order)
    for cand in order:
        parts: Sequence[str] = [cand] if zh else cand.split()
        if not any(p.lower() in haystack for p in parts):
            return cand
    return None
