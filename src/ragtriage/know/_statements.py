"""Offline statement → question rewriting (EN + ZH), seed 001 App. G done by rules.

A sentence becomes a question only where a pattern fits its structure: a subject, a
verb and one slot of a known type (a date, a year, a count, an amount, a percentage, a
person). The question moves the asked slot to a question word (who / when / how many /
how much / what), keeps only the clause that holds the slot (the rest of the sentence
is dropped), and resolves a pronoun or generic subject ("It", "The company", "The
patient", "The defendant") to the document's entity. Anything that does not fit is
rejected rather than emitted as a fragment.

Every :class:`Fact` also carries its *attribute*: the question with the entity replaced
by ``{e}``, so that an unanswerable question can ask the same thing about another
entity of the same kind whose document does not state it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date

from ragtriage.records import Document

__all__ = ["DocSubject", "Fact", "facts_en", "facts_zh", "subject_of"]


@dataclass(frozen=True, slots=True)
class DocSubject:
    """Who or what a document is about, and how to mention it."""

    name: str
    #: "org", "case", "person" (a record of a person) or "zh"
    kind: str
    #: the document's kind with the entity and digits removed (groups similar documents)
    family: str
    #: what generic subjects refer to: "the defendant" → a name, "the claimant" → …
    parties: tuple[tuple[str, str], ...] = ()

    def party(self, role: str) -> str | None:
        return dict(self.parties).get(role)

    def names(self) -> tuple[str, ...]:
        return (self.name, *(v for _, v in self.parties))


@dataclass(frozen=True, slots=True)
class Fact:
    question: str
    answer: str
    slot: str
    sentence: str
    #: the question with the entity's name replaced by "{e}" ("" when it does not name it)
    attribute: str = ""
    #: an event clause ("Elena Broch resigned") and its date, for reasoning questions
    event: str = ""
    when: date | None = None


_MONTHS = (
    "January February March April May June July August September October November December"
).split()
_M = "|".join(_MONTHS)
DATE_EN = rf"(?:\d{{1,2}} (?:{_M}) \d{{4}})"
_DATE_EN_RE = re.compile(rf"(\d{{1,2}}) ({_M}) (\d{{4}})")
_NUM = r"\d[\d,]*(?:\.\d+)?"
_AMOUNT = (
    rf"(?:(?:USD|EUR|GBP|NOK|AUD|CAD|CHF|SEK|DKK|JPY) {_NUM}(?: (?:million|billion|thousand))?"
    rf"|{_NUM}(?: (?:million|billion|thousand))? (?:dollars|euros|pounds))"
)
_PCT = rf"{_NUM} ?%"

_IRREGULAR = {
    "took": "take",
    "began": "begin",
    "became": "become",
    "grew": "grow",
    "rose": "rise",
    "fell": "fall",
    "led": "lead",
    "won": "win",
    "paid": "pay",
    "made": "make",
    "sold": "sell",
    "bought": "buy",
    "held": "hold",
    "left": "leave",
    "gave": "give",
    "went": "go",
    "brought": "bring",
    "told": "tell",
    "found": "find",
    "broke": "break",
    "ran": "run",
    "spent": "spend",
    "underwent": "undergo",
    "wrote": "write",
    "sent": "send",
    "lost": "lose",
    "met": "meet",
    "struck": "strike",
    "saw": "see",
    "got": "get",
    "chose": "choose",
    "drove": "drive",
    "kept": "keep",
    "built": "build",
    "set": "set",
    "cut": "cut",
    "put": "put",
    "hit": "hit",
    "stood": "stand",
    "fled": "flee",
    "sought": "seek",
    "taught": "teach",
    "caught": "catch",
    "felt": "feel",
    "rode": "ride",
    "stole": "steal",
    "froze": "freeze",
    "hid": "hide",
    "bore": "bear",
    "swore": "swear",
}
_PARTICIPLE_TO_PAST = {
    "taken": "took",
    "given": "gave",
    "written": "wrote",
    "chosen": "chose",
    "held": "held",
    "made": "made",
    "won": "won",
    "sold": "sold",
    "bought": "bought",
    "led": "led",
    "built": "built",
    "paid": "paid",
    "brought": "brought",
    "found": "found",
    "sent": "sent",
    "set": "set",
    "seen": "saw",
    "begun": "began",
    "driven": "drove",
    "kept": "kept",
}
_NOT_VERBS = {
    "need",
    "speed",
    "feed",
    "seed",
    "bed",
    "red",
    "shed",
    "deed",
    "hundred",
    "breed",
    "based",
    "related",
    "limited",
    "listed",
    "united",
    "aged",
    "advanced",
    "detailed",
    "interested",
    "used",
    "named",
    "called",
    "ed",
    "proceed",
    "exceed",
    "succeed",
}
_E_LEXICON = {
    "complet",
    "compet",
    "delet",
    "deplet",
    "unit",
    "cit",
    "invit",
    "ignit",
    "excit",
    "recit",
    "explor",
    "restor",
    "ignor",
    "scor",
    "stor",
    "declar",
    "compar",
    "prepar",
    "shar",
    "car",
    "dar",
    "stat",
    "creat",
    "not",
    "vot",
    "quot",
    "promot",
    "devot",
    "wast",
    "tast",
    "past",
    "hous",
}
_LL_KEEP = {
    "call",
    "fill",
    "kill",
    "sell",
    "tell",
    "roll",
    "poll",
    "pull",
    "fall",
    "spill",
    "drill",
    "stall",
    "spell",
    "recall",
    "install",
    "enroll",
    "fulfill",
    "distill",
    "bill",
    "till",
}
_C = "[^aeiouy]"
_ADD_E = re.compile(
    rf"(?:[vc]|[^z]z|[^e]at|ut|{_C}[aiou]d|{_C}(?:ib|ik|ak|ok|uk|ap|ip|ag|am|um|im|in|on|ul|il)"
    rf"|{_C}l|ang|[rd]g|[aeio]s|aus|uir|{_C}[aiu]r)$"
)


def base_form(past: str) -> str | None:
    """The bare infinitive of a simple-past verb, or ``None`` when unsure."""
    w = past.lower()
    if w in _IRREGULAR:
        return _IRREGULAR[w]
    if not w.endswith("ed") or w in _NOT_VERBS or len(w) < 5 or not w.isalpha():
        return None
    if w.endswith("eed"):
        return w[:-1]  # agreed -> agree
    stem = w[:-2]
    if stem in _E_LEXICON or (stem.endswith(tuple(_E_LEXICON)) and len(stem) <= 7):
        return stem + "e"
    if stem.endswith(("ue", "ie", "ee", "ye", "oe")):
        return None
    if stem.endswith(_C[:0] + "i") and len(stem) > 2 and stem[-2] not in "aeiou":
        return stem[:-1] + "y"  # carried -> carry
    if stem.endswith("ll"):
        return stem if stem in _LL_KEEP or stem.endswith(tuple(_LL_KEEP)) else stem[:-1]
    if len(stem) >= 3 and stem[-1] == stem[-2] and stem[-1] not in "lsfz":
        return stem[:-1]  # admitted -> admit, stopped -> stop
    if stem.endswith(("eat", "oat", "ain", "ean", "oin", "eal", "oil", "ail", "eel", "oon")):
        return stem
    if _ADD_E.search(stem):
        return stem + "e"
    return stem


def is_past(word: str) -> bool:
    w = word.lower()
    return w in _IRREGULAR or (w.endswith("ed") and w not in _NOT_VERBS and len(w) > 4)


def _past_of_participle(part: str) -> str:
    return _PARTICIPLE_TO_PAST.get(part.lower(), part)


def parse_date_en(text: str) -> date | None:
    m = _DATE_EN_RE.search(text)
    if m is None:
        return None
    try:
        return date(int(m.group(3)), _MONTHS.index(m.group(2)) + 1, int(m.group(1)))
    except ValueError:
        return None


# ---------------------------------------------------------------- document subject
def subject_of(doc: Document) -> DocSubject:
    """The entity a document is about: the person of a record ("…Record: NAME"), the
    case name of a judgment, or the organisation of a report (its title up to a dash)."""
    title = doc.title or (doc.text.strip().splitlines()[0] if doc.text.strip() else doc.doc_id)
    title = title.lstrip("# ").strip()
    if re.search(r"[\u4e00-\u9fff]", title):
        m = re.search(r"^(.+?(?:公司|法院|医院))", title)
        name = m.group(1) if m else re.split(r"[（(0-9]", title)[0]
        kind = re.search(r"(报告|刑事判决书|民事判决书|判决书|病历|合同|公告)", title)
        return DocSubject(name, "zh", "zh " + (kind.group(1) if kind else ""))
    head = re.split(r" — | - |—", title, maxsplit=1)[0]
    parts = re.split(r" — | - |—", title, maxsplit=1)
    tail = parts[1] if len(parts) > 1 else ""
    rec = re.search(r"(?:Record|Patient|File)\s*:\s*(.+)$", title)
    if rec:
        family = re.sub(r"\d+", "#", re.sub(r":\s*.+$", "", tail or head))
        return DocSubject(rec.group(1).strip(), "person", "record " + family.strip())
    if re.search(r"\bv\.? ", head):
        court = re.sub(r",.*$", "", tail)
        first, _, second = head.partition(" v. ")
        parties: tuple[tuple[str, str], ...]
        if first in ("State", "People", "Crown", "Republic", "Commonwealth"):
            parties = (("the defendant", second), ("the accused", second))
        else:
            parties = (
                ("the claimant", first),
                ("the plaintiff", first),
                ("the defendant", second),
                ("the respondent", second),
            )
        return DocSubject(
            head.strip(), "case", "case " + re.sub(r"\d+", "#", court).strip(), parties
        )
    return DocSubject(head.strip(), "org", "org " + re.sub(r"\d+", "#", tail).strip())


# ---------------------------------------------------------------- EN rewriting
_GENERIC_SUBJECTS = {
    "org": ("it", "the company", "the group", "the firm", "the bank", "the utility"),
    "person": ("he", "she", "the patient"),
}
_ADVERBS = {"first", "later", "then", "also", "subsequently", "eventually", "finally", "again"}
_PREPOSITIONS = {
    "during",
    "from",
    "after",
    "before",
    "in",
    "on",
    "at",
    "by",
    "with",
    "under",
    "over",
    "for",
    "since",
    "until",
    "when",
    "while",
    "if",
    "although",
    "as",
    "that",
    "this",
    "these",
    "those",
    "there",
    "then",
    "however",
    "also",
    "both",
    "each",
    "all",
    "some",
    "such",
    "of",
    "to",
}
_PERSON = r"(?:(?:Dr|Mr|Ms|Mrs|Prof)\. )?[A-Z][a-z]+(?:[ -][A-Z][a-z]+){1,2}"
_LEAD = re.compile(rf"^(?:(On|At|In|By|Since) ({DATE_EN}|(?:{_M}) \d{{4}}|\d{{4}}),? )(.+)$")
_CLAUSE_CUT = re.compile(
    r",? (?:while|because|after which|which|who|whereas|although|though|but|so that|"
    r"stating that|after|before|when|as|to (?!\d)|followed by)\b.*$|[,;:] .*$"
)
_DATE_SLOT = re.compile(rf" (?:on|by) ({DATE_EN})\b")
_YEAR_SLOT = re.compile(r" in ((?:19|20)\d{2})\b(?! (?:and|to))")
_BY_AGENT = re.compile(rf" by ({_PERSON})\b")
_SUBJ_OK = re.compile(r"^(?:[A-Z][\w.'&-]*|the|a|an|its|his|her)( [\w.'&-]+){0,7}$")
_BAD_SUBJ_WORD = re.compile(
    r"\b(?:is|are|was|were|has|have|had|been|be|and|or|which|that|who|it|this|these|those)\b", re.I
)


def _strip_apposition(s: str) -> str:
    """ "Tomas Reiersen, previously head of treasury, took over" → "Tomas Reiersen took over"."""
    m = re.match(r"^((?:[A-Z][\w.'-]*\s?){1,5}), [^,]{3,60}, (.+)$", s)
    return f"{m.group(1).strip()} {m.group(2)}" if m else s


def _resolve(subject: str, who: DocSubject) -> str | None:
    """The subject as a stand-alone noun phrase, or ``None`` when it cannot be resolved."""
    low = subject.lower()
    if low.split()[0] in _PREPOSITIONS:
        return None
    words = subject.split()
    if len(words) > 1 and words[-1].lower() in _ADVERBS:
        head = _resolve(" ".join(words[:-1]), who)
        return None if head is None else f"{head} {words[-1]}"
    if who.kind == "org" and low == who.name.split()[0].lower():
        return who.name  # "Tallis" → "Tallis Retail Group Ltd"
    role = who.party(low)
    if role is not None:
        return role
    if low.startswith(("the defendant", "the claimant", "the respondent", "the accused")):
        return None
    for kind, generic in _GENERIC_SUBJECTS.items():
        if low in generic:
            return who.name if who.kind == kind else None
    if low in ("he", "she", "it", "they", "this", "that", "these", "those", "there"):
        return None
    if low.startswith(("his ", "her ", "its ", "their ")):
        owner = who.name if low.startswith("its ") == (who.kind != "person") else None
        return f"{owner}'s {subject.split(' ', 1)[1]}" if owner else None
    if low.startswith("the patient's ") and who.kind == "person":
        return f"{who.name}'s {subject.split(' ', 2)[2]}"
    if low.startswith("the ") and who.kind == "org" and len(low.split()) >= 2:
        return f"{who.name}'s {subject.split(' ', 1)[1]}"
    return subject


def _mentions(question: str, who: DocSubject) -> bool:
    return any(n in question for n in who.names())


def _scoped(question_body: str, who: DocSubject) -> str:
    """Append where the fact belongs when the question does not name the entity."""
    for generic in (" the company", " the group"):
        if who.kind == "org" and question_body.endswith(generic):
            return question_body[: -len(generic)] + " " + who.name
    if _mentions(question_body, who):
        return question_body
    if who.kind == "org":
        if re.search(r" (?:resign|retire|step down|leave|withdraw)$", question_body):
            return f"{question_body} from {who.name}"
        if question_body.endswith(" join"):
            return f"{question_body} {who.name}"
        return f"{question_body} at {who.name}"
    if who.kind == "case":
        return f"{question_body} in {who.name}"
    return f"{question_body} in {who.name}'s case"


def _lower_first(s: str, text: str) -> str:
    """Lower-case the subject's first word when it is a common word (it is never
    capitalised inside a sentence of the document)."""
    first = s.split()[0]
    if first in ("A", "An", "The"):
        return s[:1].lower() + s[1:]
    if not first[:1].isupper() or first.isupper() or re.match(rf"^{_PERSON}", s):
        return s
    if re.search(rf"[a-z,] {re.escape(first)}\b", text):
        return s  # a name: capitalised mid-sentence too
    return s[:1].lower() + s[1:]


_COMMON_LEADS = {
    "revenue",
    "net",
    "operating",
    "total",
    "sales",
    "profit",
    "earnings",
    "volumes",
    "capital",
    "debt",
    "cash",
    "gross",
    "turnover",
    "headcount",
    "income",
    "equity",
    "the",
    "a",
    "an",
    "its",
    "his",
    "her",
    "their",
    "production",
    "output",
    "exports",
    "dividend",
    "dividends",
    "costs",
    "expenses",
    "margin",
    "fees",
    "orders",
    "deliveries",
}


def _fact(q: str, answer: str, slot: str, sentence: str, who: DocSubject, **kw: object) -> Fact:
    attribute = q.replace(who.name, "{e}") if who.name in q else ""
    return Fact(q, answer, slot, sentence, attribute, **kw)  # type: ignore[arg-type]


def _clause_facts(
    clause: str, lead: str, sentence: str, who: DocSubject, text: str = "", lead_date: str = ""
) -> list[Fact]:
    """Questions from one clause (subject + verb + rest) and an optional leading
    adverbial ("on 8 August 2021")."""
    out: list[Fact] = []
    words = clause.split()
    # find the verb: "was/were PARTICIPLE" (passive) or a simple-past verb
    verb_at = None
    passive = False
    for i, w in enumerate(words[1:9], start=1):
        if (
            w in ("was", "were")
            and i + 1 < len(words)
            and is_past(words[i + 1]) | (words[i + 1] in _PARTICIPLE_TO_PAST)
        ):
            verb_at, passive = i, True
            break
        if is_past(w) and words[i - 1] not in ("was", "were", "had", "has", "have", "been"):
            verb_at = i
            break
        if w in ("was", "were", "is", "are", "has", "had", "have"):
            break
    if verb_at is None:
        return out
    raw_subject = " ".join(words[:verb_at])
    if not _SUBJ_OK.match(raw_subject) or _BAD_SUBJ_WORD.search(
        raw_subject.split(" ", 1)[-1] if " " in raw_subject else ""
    ):
        return out
    subject = _resolve(raw_subject, who)
    if subject is None:
        return out
    subject = _lower_first(subject, text or sentence)
    if passive:
        part = words[verb_at + 1]
        rest = " ".join(words[verb_at + 2 :])
        aux = words[verb_at]
    else:
        verb = words[verb_at]
        base = base_form(verb)
        rest = " ".join(words[verb_at + 1 :])
        if base is None:
            return out
    rest = " " + rest if rest else ""
    # a full date in the clause, or the leading adverbial's
    dm = _DATE_SLOT.search(rest)
    date_text = dm.group(1) if dm else lead_date
    if date_text:
        before = rest[: dm.start()] if dm else _CLAUSE_CUT.sub("", rest).rstrip(" ,")
        needs_more = not dm and re.match(r"^ (?:to|that)\b", rest[len(before) :] or "")
        if _fits(before, 8) and not needs_more:
            if passive:
                q = f"When {aux} {subject} {part}{before}"
                event = f"{subject} {aux} {part}{before}"
            else:
                q = f"When did {subject} {base}{before}"
                event = f"{subject} {verb}{before}"
            q = _scoped(q, who) + "?"
            out.append(
                _fact(
                    q, date_text, "date", sentence, who, event=event, when=parse_date_en(date_text)
                )
            )
    ym = _YEAR_SLOT.search(rest)
    if ym and not date_text:
        before = rest[: ym.start()]
        if _fits(before, 6):
            if passive:
                q = f"In what year {aux} {subject} {part}{before}"
            else:
                q = f"In what year did {subject} {base}{before}"
            out.append(_fact(_scoped(q, who) + "?", ym.group(1), "year", sentence, who))
    if passive:
        am = _BY_AGENT.search(rest)
        if am:
            before = rest[: am.start()]
            after_agent = rest[am.end() :]
            if _fits(before, 6) and not re.match(r"^ (?:of|and)\b", after_agent):
                q = f"Who {_past_of_participle(part)} {subject}{before}"
                out.append(_fact(_scoped(q, who) + "?", am.group(1), "person", sentence, who))
    else:
        # "operated a fleet of 34 vessels" → how many vessels
        nm = re.match(
            rf"^ (?:a (?:fleet|total|staff|workforce|network|portfolio) of |about |some |roughly |"
            rf"around |nearly |almost |more than |over )?({_NUM}) ((?:[a-z-]+ ){{0,2}}[a-z-]+s)\b",
            rest,
        )
        if (
            nm
            and "." not in nm.group(1)
            and base not in ("be", "have")
            and nm.group(2).split()[-1] not in _NOT_COUNTED
            and (nm.group(2).split()[-1] not in _TIME_UNITS or base in ("take", "last"))
            and not _COUNT_GOES_ON.match(rest[nm.end() :])
        ):
            when = f" {lead[0].lower()}{lead[1:]}" if lead else ""
            q = f"How many {nm.group(2)} did {subject} {base}{when}"
            out.append(_fact(_scoped(q, who) + "?", nm.group(1), "number", sentence, who))
        pm = re.match(rf"^ (?:by )?({_PCT}|{_AMOUNT})\b", rest)
        if pm and base in (
            "rise",
            "fall",
            "grow",
            "increase",
            "decrease",
            "decline",
            "drop",
            "climb",
            "shrink",
            "jump",
            "gain",
        ):
            unit = "By what percentage" if "%" in pm.group(1) else "By how much"
            q = f"{unit} did {subject} {base}"
            q += f" {lead[0].lower()}{lead[1:]}" if lead else ""
            out.append(_fact(_scoped(q, who) + "?", pm.group(1), "amount", sentence, who))
    return out


_NOT_COUNTED = {
    "as",
    "is",
    "was",
    "has",
    "this",
    "its",
    "his",
    "us",
    "plus",
    "less",
    "across",
    "thus",
    "dollars",
    "euros",
    "pounds",
    "yes",
    "cents",
    "pence",
    "whereas",
    "always",
    "perhaps",
}
#: after "N nouns": the counted noun is a measure of something else ("1,400 pieces of
#: furniture", "61,700 metres of the fabric"), the number goes on ("2 hours and 5
#: minutes") or it is a rate ("30 cigarettes a day"): "How many pieces …?" would ask a
#: fragment, and the number alone would not be the whole answer
_COUNT_GOES_ON = re.compile(r"^ (?:of|and \d|a (?:day|week|month|year)|an hour|per|each)\b")
_TIME_UNITS = {"seconds", "minutes", "hours", "days", "weeks", "months", "years"}
_ENDS_BADLY = re.compile(
    r"\b(?:under|of|to|with|for|from|by|at|in|on|and|or|the|a|an|its|their|his|her)$"
)


def _fits(before: str, max_words: int) -> bool:
    """Whether the words between the verb and the slot can stay in the question: short,
    one clause (no punctuation or subordinate clause in them), no number, and not
    ending on a word that needs a complement."""
    text = before.strip()
    return (
        len(text.split()) <= max_words
        and not re.search(r"[\d,;:()]", text)
        and not _CLAUSE_CUT.search(" " + text)
        and not _ENDS_BADLY.search(text)
        and not re.search(r"\b(?:that|which|who|whether)\b", text)
    )


_COPULA_VALUE = re.compile(
    rf"^(?P<subj>(?:[A-Z][a-z]+|The [a-z]+|the [a-z]+)(?: [a-z-]+){{0,4}}(?: (?:for|in) \d{{4}})?) "
    rf"(?:was|stood at|reached|totalled|totaled|amounted to|came to)(?: a record| about| roughly)? "
    rf"(?P<val>{_AMOUNT}|{_PCT})(?P<rest>.*)$"
)


def _value_facts(clause: str, lead: str, sentence: str, who: DocSubject) -> list[Fact]:
    """ "Net profit was USD 61.3 million" → "What was X's net profit?"."""
    m = _COPULA_VALUE.match(clause)
    if m is None:
        return []
    subj = m.group("subj")
    first = subj.split()[0].lower()
    if first not in _COMMON_LEADS or first in ("a", "an"):
        return []
    if first == "the":
        subj = subj.split(" ", 1)[1]
    subj = subj[0].lower() + subj[1:]
    noun = f"{who.name}'s {subj}" if who.kind == "org" else None
    if noun is None:
        return []
    when = f" {lead[0].lower()}{lead[1:]}" if lead else ""
    q = f"What was {noun}{when}?"
    return [_fact(q, m.group("val"), "amount", sentence, who)]


_FIELD = re.compile(
    r"(?:^|(?<=\. )|(?<=\n))(?P<key>[A-Z][a-z]+(?: [a-z]+){0,2}): "
    r"(?P<val>(?:(?:Dr|Mr|Ms|Mrs|St)\. )?[^.\n]+?)\.(?=\s|$)"
)
_SKIP_KEYS = {"patient", "sex", "address", "case number", "court", "ward", "defendant"}
_PERSON_KEYS = re.compile(
    r"(?:judge|prosecutor|counsel|physician|doctor|surgeon|obstetrician|nurse|chair|president|"
    r"solicitor|barrister|attorney|lawyer)$"
)


def field_facts(text: str, who: DocSubject) -> list[Fact]:
    """ "Key: value." fields of a record: "Admitted: 4 January 2022" → "When was NAME
    admitted?"; "Attending physician: Dr. Sarah Quinn" → "Who was NAME's attending
    physician?"; "Age: 67" → "How old was NAME?"."""
    out: list[Fact] = []
    for m in _FIELD.finditer(text):
        key, val = m.group("key"), m.group("val").strip()
        k = key.lower()
        if k in _SKIP_KEYS or len(val) > 60:
            continue
        sentence = m.group().strip()
        dm = re.match(DATE_EN, val)
        if who.kind == "person":
            if dm and k.endswith("ed"):
                q = f"When was {who.name} {k}?"
                out.append(_fact(q, dm.group(), "date", sentence, who, when=parse_date_en(val)))
            elif re.fullmatch(_PERSON, val) and _PERSON_KEYS.search(k):
                out.append(_fact(f"Who was {who.name}'s {k}?", val, "person", sentence, who))
            elif k == "age" and re.fullmatch(r"\d{1,3}", val):
                out.append(_fact(f"How old was {who.name}?", val, "number", sentence, who))
            elif k == "occupation":
                out.append(_fact(f"What was {who.name}'s occupation?", val, "other", sentence, who))
        elif who.kind == "case" and re.fullmatch(_PERSON, val) and _PERSON_KEYS.search(k):
            out.append(_fact(f"Who was the {k} in {who.name}?", val, "person", sentence, who))
    return out


def facts_en(sentence: str, who: DocSubject, text: str = "") -> list[Fact]:
    """The questions one EN sentence supports (possibly none); ``text`` is the
    document (to tell names from common words)."""
    s = sentence.strip().rstrip(".")
    if not s or s.startswith("#") or "?" in s or len(s) > 300:
        return []
    lead = lead_date = ""
    m = _LEAD.match(s)
    if m:
        lead, s = f"{m.group(1).lower()} {m.group(2)}", m.group(3)
        if m.group(1) == "On" and re.fullmatch(DATE_EN, m.group(2)):
            lead, lead_date = "", m.group(2)
    s = _strip_apposition(s)
    clauses = [c.strip() for c in re.split(r"; |, and (?=[a-z]+ [a-z]+ (?:was|were|stood))", s)]
    out: list[Fact] = []
    for i, clause in enumerate(clauses):
        if not clause or not clause[0].isalpha():
            continue
        clause = clause[0].upper() + clause[1:] if i else clause
        facts = _clause_facts(
            clause, lead if i == 0 else "", sentence, who, text, lead_date if i == 0 else ""
        )
        if not facts:
            facts = _value_facts(clause, lead if i == 0 else "", sentence, who)
        out.extend(facts)
    return out


# ---------------------------------------------------------------- ZH rewriting
DATE_ZH = r"\d{4}年\d{1,2}月\d{1,2}日"
_DATE_ZH_RE = re.compile(r"(\d{4})年(\d{1,2})月(\d{1,2})日")
_ZH_GENERIC = ("公司", "本公司", "该公司", "患者", "被告人", "本院", "原告", "被告")
_ZH_SLOTS: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (re.compile(rf"(?:于)?{DATE_ZH}(?:凌晨|上午|下午|晚上|早上|晚|早)?"), "何时", "date"),
    (re.compile(r"(?:人民币)?[\d,.]+(?:万|亿)?元"), "多少钱", "amount"),
    (re.compile(r"\d+(?:\.\d+)?%"), "多少", "percent"),
    (re.compile(r"[\d,]+(?=(?:人|艘|家|个|名|次|天|项|台|吨|座|条|辆))"), "多少", "number"),
    (re.compile(r"(?:于)?\d{4}年(?!\d)"), "哪一年", "year"),
)
_ZH_FIELD = re.compile(r"(?P<key>[\u4e00-\u9fff]{2,6})：(?P<val>[^。；\n]+)")
_ZH_PERSON_KEYS = ("医师", "医生", "审判长", "法官", "董事长", "总经理")
_ZH_DATE_KEYS = ("日期", "时间")


def _zh_person_of(text: str) -> str | None:
    m = re.search(r"(?:患者|被告人)：([\u4e00-\u9fff]{2,3})[，,]", text)
    return m.group(1) if m else None


def _zh_roles(text: str) -> dict[str, str]:
    """ "原告：XX公司" and the like: what a generic subject refers to."""
    roles: dict[str, str] = {}
    for m in re.finditer(r"(患者|被告人|原告|被告)：([^，,。；]{2,30})", text):
        roles.setdefault(m.group(1), m.group(2))
    return roles


_ZH_VERB_START = re.compile(
    r"^(?:完成|发行|实现|成立|收购|签订|召开|发布|获得|启动|开设|推出|支付|募集|上市|拟|共有|总部|"
    r"主要从事|新增|投资|中标|入选|与|向|被|判决|对)"
)


def facts_zh(sentence: str, who: DocSubject, doc_text: str = "") -> list[Fact]:
    """The questions one ZH sentence supports: the slot is replaced in place (Chinese
    asks in situ), only the clause holding it is kept, and a generic subject (公司,
    患者, 被告人) is replaced by the entity's name; a clause without a subject of its
    own gets the entity's name in front."""
    out: list[Fact] = []
    person = _zh_person_of(doc_text)
    s = sentence.strip().rstrip("。！；;")
    if not s or s.startswith("#"):
        return out
    roles = _zh_roles(doc_text)
    for fm in _ZH_FIELD.finditer(s):
        key, val = fm.group("key"), fm.group("val").strip()
        owner = person or who.name
        if person and who.name.endswith("法院"):
            owner = f"{person}案"
        if any(key.endswith(k) for k in _ZH_DATE_KEYS) and re.fullmatch(DATE_ZH, val):
            out.append(
                _fact(f"{owner}的{key}是哪一天？", val, "date", fm.group(), who, when=_zh_date(val))
            )
        elif any(key.endswith(k) for k in _ZH_PERSON_KEYS) and re.fullmatch(
            r"[\u4e00-\u9fff]{2,3}", val
        ):
            out.append(_fact(f"{owner}的{key}是谁？", val, "person", fm.group(), who))
    if out or "：" in s:
        return out
    # the clause: the date lead-in ("2021年4月16日，") joins the next clause
    parts = re.split(r"[，；,]", s)
    lead = ""
    if re.fullmatch(rf"{DATE_ZH}|\d{{4}}年\d{{1,2}}月", parts[0]) and len(parts) > 1:
        lead, parts = parts[0], parts[1:]
    elif re.fullmatch(r"[\u4e00-\u9fff]{2,5}(?:内|末|中|期间)", parts[0]) and len(parts) > 1:
        parts = parts[1:]  # "报告期内，公司实现…": a time frame, not the subject
    head = parts[0]
    if head.startswith(("其中", "此前", "同比", "并", "其余", "但", "且", "因", "而")):
        return out
    clause = head
    subj_named = False
    for g in sorted(_ZH_GENERIC, key=len, reverse=True):
        if clause.startswith(g):
            repl: str | None = roles.get(g) if g in roles else None
            if repl is None and g in ("公司", "本公司", "该公司", "本院"):
                repl = who.name
            if repl is None:
                return out
            clause = repl + clause[len(g) :]
            subj_named = True
            break
    if not subj_named and who.name not in clause and not (person and person in clause):
        if not (_ZH_VERB_START.match(clause) and who.name.endswith("公司")):
            return out
        clause = f"{who.name}{clause}"
    for role, name in sorted(roles.items(), key=lambda rn: -len(rn[0])):
        clause = clause.replace(role + name, name)
        clause = re.sub(rf"{role}(?!人)" if role == "被告" else role, name, clause)
    if re.search(r"(?:原告|被告)", clause):
        return out
    if lead:
        m = _DATE_ZH_RE.fullmatch(lead)
        if m:
            q = _insert_time(clause, "何时")
            if q:
                out.append(
                    _fact(
                        q + "？",
                        lead,
                        "date",
                        sentence,
                        who,
                        when=_zh_date(lead),
                        event=f"{clause}",
                    )
                )
        return out
    for pattern, wh, slot in _ZH_SLOTS:
        sm = pattern.search(clause)
        if sm is None:
            continue
        span = sm.group()
        asked = wh
        if span.startswith("于"):
            asked = "于" + wh
            span = span[1:]
        q = clause.replace(sm.group(), asked, 1)
        if slot == "number":
            pass
        if q == clause or len(q) < 6:
            continue
        event = clause.replace(sm.group(), "", 1) if slot == "date" else ""
        out.append(
            _fact(
                q + "？",
                span,
                slot,
                sentence,
                who,
                when=_zh_date(span) if slot == "date" else None,
                event=event,
            )
        )
        break
    return out


def _insert_time(clause: str, wh: str) -> str | None:
    """ "华锦新材料股份有限公司完成对…的收购" → "华锦新材料股份有限公司何时完成对…的收购"."""
    m = re.match(r"^(.{2,30}?(?:公司|医院|法院|[\u4e00-\u9fff]{2,3}(?=被|因|于|向)))(.+)$", clause)
    if m is None or not _ZH_VERB_START.match(m.group(2)):
        return None
    return f"{m.group(1)}{wh}{m.group(2)}"


def _zh_date(text: str) -> date | None:
    m = _DATE_ZH_RE.search(text)
    if m is None:
        return None
    try:
        return date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    except ValueError:
        return None
