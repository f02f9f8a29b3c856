"""Offline test-set generation: statements extracted from sentences, rewritten as
questions by structural patterns (EN + ZH, see :mod:`ragtriage.know._statements`).

LOWER QUALITY than the LLM pipeline, and marked so in every example's metadata
(``generator: offline-template``). Single-fact questions exist only where a sentence's
structure fits a pattern (subject + verb + a date / year / count / amount / person
slot): the asked slot becomes a question word, the rest of the sentence is dropped and
the subject is resolved to the document's entity; a sentence that fits no pattern gives
no question. Summaries ask about the topic a section's heading names, of the document's
entity, as a user would ("How would you summarise Samuel Okoro's auxiliary examinations?"), never about
the section itself (a user never saw the document), and are answered with the whole
section; a heading that names no topic ("Basic Information") gives no summary; reasoning questions ask for the days between two dated events of a
document (the answer is derived) or compare a value two documents of a family state;
an unanswerable question asks about an entity for an attribute that most documents of
its family give (generic to the kind) but whose own document does not state.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import date

from ragtriage.know._statements import (
    DocSubject,
    Fact,
    facts_en,
    facts_zh,
    field_facts,
    subject_of,
)
from ragtriage.records import Chunk, Document
from ragtriage.text import content_tokens, detect_language, split_sentences

__all__ = ["Draft", "OfflineGenerator", "as_user_asks", "corpus_entities", "entity_of", "user_name"]


@dataclass(frozen=True, slots=True)
class Draft:
    """One generated (question, answer) before critiques: its intended label, the
    verbatim evidence sentences and the chunks they come from."""

    question: str
    answer: str
    label: str
    references: tuple[str, ...]
    chunk_ids: tuple[str, ...]
    doc_id: str
    language: str
    generator: str
    context: str
    extra: dict[str, str] = field(default_factory=dict)
    #: other documents the references come from (a comparison across two entities)
    other_doc_ids: tuple[str, ...] = ()


_MONTHS = (
    "January February March April May June July August September October November December"
).split()
_MONTH_RE = "|".join(_MONTHS)
_DATE_EN = re.compile(rf"\b(\d{{1,2}}) ({_MONTH_RE}) (\d{{4}})\b")
_DATE_ZH = re.compile(r"(\d{4})年(\d{1,2})月(\d{1,2})日")
_SPANS_EN: tuple[tuple[re.Pattern[str], str], ...] = (
    (_DATE_EN, "what date"),
    (
        re.compile(
            r"\b(?:USD|EUR|GBP|NOK|AUD|CAD|CHF|SEK|DKK|JPY)\s?\d[\d,.]*(?: (?:million|billion|thousand))?"
        ),
        "what amount",
    ),
    (
        re.compile(r"\b\d[\d,.]*(?: (?:million|billion|thousand))? (?:dollars|euros|pounds)\b"),
        "what amount",
    ),
    (re.compile(r"\b\d+(?:\.\d+)?(?: ?%| per ?cent| percent)"), "what percentage"),
    (re.compile(rf"\b(?:in|since) (\d{{4}})\b(?! ({_MONTH_RE}))"), "in what year"),
    (
        re.compile(
            r"\b\d[\d,]*(?:\.\d+)? (?!(?:was|is|has|as|this|its|his|us|plus|less|across|thus|always|perhaps|whereas)\b)(?=[a-z][a-z-]+s\b)"
        ),
        "how many ",
    ),
)
_SPANS_ZH: tuple[tuple[re.Pattern[str], str], ...] = (
    (_DATE_ZH, "何时"),
    (re.compile(r"(?:人民币|美元)?[\d,.]+(?:万|亿)?元"), "多少钱"),
    (re.compile(r"\d+(?:\.\d+)?%"), "多少百分比"),
    (re.compile(r"[\d,]+(?=(?:人|艘|家|个|名|次|天|项|台|吨|座|条|辆))"), "多少"),
    (re.compile(r"\d{4}年"), "哪一年"),
)
# attributes of an entity that a corpus is unlikely to state; checked against it
_UNANSWERABLE_EN = (
    ("email", "What is the email address of {e}'s head office?"),
    ("logo", "Who designed the logo of {e}?"),
    ("mascot", "What is the name of {e}'s mascot?"),
    ("anthem", "Which song does {e} use as its official anthem?"),
)
_UNANSWERABLE_ZH = (
    ("邮箱", "{e}总部的电子邮箱地址是什么？"),
    ("标志", "{e}的标志是谁设计的？"),
    ("吉祥物", "{e}的吉祥物叫什么名字？"),
    ("司歌", "{e}的司歌是哪首歌？"),
)


def entity_of(doc: Document) -> str:
    """The document's main entity: its title up to a dash or colon (or first words)."""
    title = doc.title or doc.text.strip().splitlines()[0] if doc.text.strip() else doc.doc_id
    title = title.lstrip("# ").strip()
    for sep in (" — ", " - ", "—", "：", ": ", "（", "("):
        if sep in title:
            title = title.split(sep)[0].strip()
    return title or doc.doc_id


def _sentences(chunk: Chunk) -> list[str]:
    out = []
    for s in split_sentences(chunk.text):
        text = s.text.strip()
        if text.startswith("#") or len(content_tokens(text)) < 5:
            continue
        out.append(text)
    return out


def _date_of(match: re.Match[str], zh: bool) -> date | None:
    try:
        if zh:
            return date(int(match.group(1)), int(match.group(2)), int(match.group(3)))
        return date(int(match.group(3)), _MONTHS.index(match.group(2)) + 1, int(match.group(1)))
    except ValueError:
        return None


def _clause(sentence: str, span: str, zh: bool, words: int = 12) -> str:
    """The sentence without its date, shortened, as an event description."""
    text = re.sub(
        rf"\b(?:[Aa]t|[Oo]n|[Ii]n|[Bb]y|[Ss]ince|[Uu]ntil|[Ff]rom)\s+{re.escape(span)}",
        "",
        sentence,
    )
    text = text.replace(span, "").strip(" ,.，。；;")
    text = re.sub(r"\s{2,}", " ", text)
    if zh:
        return text[:30]
    parts = text.split()
    return " ".join(parts[:words]) + ("…" if len(parts) > words else "")


def corpus_entities(documents: Sequence[Document]) -> list[str]:
    """The entities the documents are about (organisations, case parties, patients; ZH
    persons of records too): what a stand-alone question names."""
    names: set[str] = set()
    for d in documents:
        who = subject_of(d)
        found = [n for n in who.names() if n]
        found += re.findall(r"(?:患者|被告人|原告|被告)：([^，,。；\n]{2,30})", d.text)
        names.update(found)
        # and as a question names them (:func:`user_name`)
        names.update(user_name(n, who.kind if n == who.name else "org") for n in found)
    return sorted(names)


class OfflineGenerator:
    """Pattern questions from the chunks of a corpus (see the module docstring)."""

    name = "offline-template"

    def __init__(self, documents: Sequence[Document], chunks: Sequence[Chunk]) -> None:
        self.documents = {d.doc_id: d for d in documents}
        self.chunks = list(chunks)
        self._subjects = {d.doc_id: subject_of(d) for d in documents}
        self._facts: dict[str, list[tuple[Chunk, Fact]]] = {}
        self._raw: dict[str, list[Fact]] = {}
        self._attr_docs: dict[str, dict[str, set[str]]] | None = None
        self._attributes: dict[str, list[tuple[str, str, str]]] | None = None
        self._definite: dict[tuple[str, str], int] = {}

    def _context(self, chunk: Chunk) -> str:
        """What a critic sees: the document's title, then the chunk."""
        doc = self.documents[chunk.doc_id]
        return f"{doc.title}\n\n{chunk.text}" if doc.title else chunk.text

    def _lang(self, doc_id: str) -> str:
        doc = self.documents[doc_id]
        return "zh" if detect_language(doc.text[:2000]) == "zh" else "en"

    def _names(self, doc_id: str) -> list[str]:
        """Names that stand for the document's entity in its questions."""
        who = self._subjects[doc_id]
        names = list(who.names())
        if self._lang(doc_id) == "zh":
            text = self.documents[doc_id].text
            names += [f"{p}案" for p in re.findall(r"被告人：([\u4e00-\u9fff]{2,3})[，,]", text)]
            names += re.findall(r"(?:患者|被告人)：([\u4e00-\u9fff]{2,3})[，,]", text)
        return sorted(set(names), key=len, reverse=True)

    def _raw_facts(self, chunk: Chunk) -> list[Fact]:
        """Every question the chunk's sentences fit a pattern for (cached)."""
        if chunk.chunk_id in self._raw:
            return self._raw[chunk.chunk_id]
        who = self._subjects[chunk.doc_id]
        text = self.documents[chunk.doc_id].text
        zh = self._lang(chunk.doc_id) == "zh"
        found: list[Fact] = []
        if not zh:
            found.extend(field_facts(chunk.text, who))
        seen = {f.question for f in found}
        for s in split_sentences(chunk.text):
            if s.text.lstrip().startswith("#"):
                continue
            for f in facts_zh(s.text, who, text) if zh else facts_en(s.text, who, text):
                if f.question not in seen and f.sentence in chunk.text:
                    seen.add(f.question)
                    found.append(f)
        named = [
            g
            for g in (_name_roles(f, who) for f in found)
            if g is not None and self._definite_ok(g, who)
        ]
        self._raw[chunk.chunk_id] = named
        return named

    def _definite_ok(self, fact: Fact, who: DocSubject) -> bool:
        """A fact whose event subject is an unnamed definite noun ("the claim was
        filed", "the inspectorate visited the warehouse") is stand-alone only when the
        noun is part of every such document, not one document's own actor or thing:
        at least :data:`_UNANSWERABLE_MIN_SOURCES` documents of the kind use it ("the
        claim" of a civil case), else the question is rejected."""
        found = [
            m.group(1)
            for m in (
                _DEFINITE_SUBJECT.match(fact.event) if fact.event else None,
                _DEFINITE_QUESTION.match(fact.question),
            )
            if m is not None
        ]
        for noun in found:
            key = (who.kind, noun)
            if key not in self._definite:
                pattern = re.compile(rf"\b[Tt]he {re.escape(noun)}\b")
                self._definite[key] = sum(
                    1
                    for d, s in self._subjects.items()
                    if s.kind == who.kind and pattern.search(self.documents[d].text)
                )
            if self._definite[key] < _UNANSWERABLE_MIN_SOURCES:
                return False
        return True

    def _family_attributes(self) -> dict[str, dict[str, set[str]]]:
        """family → attribute question ("What was {e}'s gross margin?") → the documents
        whose sentences give it."""
        if self._attr_docs is None:
            index: dict[str, dict[str, set[str]]] = {}
            for c in self.chunks:
                family = self._subjects[c.doc_id].family
                for f in self._raw_facts(c):
                    if f.attribute:
                        index.setdefault(family, {}).setdefault(f.attribute, set()).add(c.doc_id)
            self._attr_docs = index
        return self._attr_docs

    def _anaphoric(self, doc_id: str, fact: Fact) -> bool:
        """A value asked of the entity whose sentence names it with a definite article
        ("The purchase price was USD 210 million" → "What was X's purchase price?"): the
        article may point back to something else (the price of an acquisition), so it is
        the entity's own attribute only when other documents of the kind state it too
        ("The gross margin was 38.9%" in two annual reports)."""
        m = _VALUE_ATTRIBUTE.match(fact.attribute)
        if fact.slot != "amount" or m is None:
            return False
        if not re.search(rf"(?:^|; |, and )[Tt]he {re.escape(m.group(1))}\b", fact.sentence):
            return False
        family = self._subjects[doc_id].family
        return len(self._family_attributes().get(family, {}).get(fact.attribute, ())) < 2

    def chunk_facts(self, chunk: Chunk) -> list[Fact]:
        """Every question the chunk's sentences support (cached): the pattern questions
        less those whose definite subject may refer back (:meth:`_anaphoric`)."""
        if chunk.chunk_id in self._facts:
            return [f for _, f in self._facts[chunk.chunk_id]]
        found = [f for f in self._raw_facts(chunk) if not self._anaphoric(chunk.doc_id, f)]
        self._facts[chunk.chunk_id] = [(chunk, f) for f in found]
        return found

    def _draft(
        self,
        chunk: Chunk,
        q: str,
        a: str,
        label: str,
        refs: tuple[str, ...],
        *,
        chunk_ids: tuple[str, ...] | None = None,
        context: str | None = None,
        other_doc_ids: tuple[str, ...] = (),
    ) -> Draft:
        names = [self._subjects[d] for d in (chunk.doc_id, *other_doc_ids)]
        return Draft(
            question=as_user_asks(q, names),
            answer=a,
            label=label,
            references=refs,
            chunk_ids=chunk_ids or (chunk.chunk_id,),
            doc_id=chunk.doc_id,
            language=self._lang(chunk.doc_id),
            generator=self.name,
            context=self._context(chunk) if context is None else context,
            other_doc_ids=other_doc_ids,
        )

    def fact_single(self, chunk: Chunk) -> Iterator[Draft]:
        for f in self.chunk_facts(chunk):
            yield self._draft(chunk, f.question, f.answer, "fact_single", (f.sentence,))

    def _section_chunks(self, chunk: Chunk) -> list[Chunk]:
        """The chunks of the document section ``chunk`` belongs to, in order."""
        section = chunk.metadata.get("section")
        return [
            c
            for c in self.chunks
            if c.doc_id == chunk.doc_id and c.metadata.get("section") == section
        ]

    def summary(self, chunk: Chunk) -> Iterator[Draft]:
        """The topic of a section (:func:`_topic_question`): asked once per section (from its first chunk)
        and answered with everything the section says, so that the answer covers the
        whole scope the question names (a section whose chunk starts mid-way, or whose
        later paragraphs the answer would leave out, is the judged cause of incomplete
        answers). A section too short to summarise or too long to list gives none."""
        section = str(chunk.metadata.get("section") or "").strip()
        if not section:
            return
        parts = self._section_chunks(chunk)
        if not parts or parts[0].chunk_id != chunk.chunk_id:
            return
        zh = self._lang(chunk.doc_id) == "zh"
        body = [
            line.strip()
            for c in parts
            for line in c.text.splitlines()
            if line.strip() and not line.lstrip().startswith("#")
        ]
        sentences = tuple(
            s.text.strip() for line in body for s in split_sentences(line) if s.text.strip()
        )
        content = [s for c in parts for s in _sentences(c)]
        if len(content) < 3 or len(sentences) > _SUMMARY_MAX_SENTENCES:
            return
        who = self._subjects[chunk.doc_id]
        name = self._names(chunk.doc_id)[-1] if zh else who.name
        if zh and name.endswith("法院"):
            # a civil judgment: the case is "原告诉被告案", never the court alone
            doc_text = self.documents[chunk.doc_id].text
            sides = [re.search(rf"{r}：([^，,。；\n]{{2,30}})", doc_text) for r in ("原告", "被告")]
            if sides[0] is None or sides[1] is None:
                return
            name = f"{sides[0].group(1)}诉{sides[1].group(1)}案"
        q = _topic_question(section, name, who.kind, zh)
        if q is None:
            return
        context = "\n\n".join([self._context(parts[0]), *(c.text for c in parts[1:])])
        yield self._draft(
            chunk,
            q,
            ("" if zh else " ").join(body),
            "summary",
            sentences,
            chunk_ids=tuple(c.chunk_id for c in parts),
            context=context,
        )

    def _doc_facts(self, doc_id: str) -> list[tuple[Chunk, Fact]]:
        out: list[tuple[Chunk, Fact]] = []
        for c in self.chunks:
            if c.doc_id == doc_id:
                self.chunk_facts(c)
                out.extend(self._facts[c.chunk_id])
        return out

    def reasoning(self, chunk: Chunk) -> Iterator[Draft]:
        """How many days between two dated events of the document (one in this chunk):
        the answer is derived from two stated dates."""
        zh = self._lang(chunk.doc_id) == "zh"
        who = self._subjects[chunk.doc_id]
        own = [f for f in self.chunk_facts(chunk) if f.when and f.event]
        others = [(c, f) for c, f in self._doc_facts(chunk.doc_id) if f.when and f.event]
        for f1 in own:
            pairs = [(c2, f2) for c2, f2 in others if f2.when != f1.when and f2.event != f1.event]
            pairs.sort(key=lambda cf: abs(((cf[1].when or f1.when) - f1.when).days))  # type: ignore[operator]
            for c2, f2 in pairs[:1]:
                assert f1.when is not None and f2.when is not None
                (ea, da, ta), (eb, db, tb) = sorted(
                    [(f1.event, f1.when, f1.answer), (f2.event, f2.when, f2.answer)],
                    key=lambda p: p[1],
                )
                days = (db - da).days
                if zh:
                    q = f"从{ea}到{eb}，相隔多少天？"
                    a = f"{days}天：{ta}{ea}，{tb}{eb}。"
                else:
                    body = f"How many days passed between the day {ea} and the day {eb}"
                    # an event whose subject is an unnamed "the claim" needs the case named
                    definite = any(_DEFINITE_SUBJECT.match(e) for e in (ea, eb))
                    q = (
                        body
                        if (who.name in body if definite else any(n in body for n in who.names()))
                        else f"{body}, at {who.name}"
                        if who.kind == "org"
                        else f"{body}, in {who.name}"
                    ) + "?"
                    a = f"{days} days: {ea} on {ta}, and {eb} on {tb}."
                ids = tuple(dict.fromkeys((chunk.chunk_id, c2.chunk_id)))
                ctx = (
                    self._context(chunk) if c2 is chunk else f"{self._context(chunk)}\n\n{c2.text}"
                )
                yield self._draft(
                    chunk,
                    q,
                    a,
                    "reasoning",
                    (f1.sentence, f2.sentence),
                    chunk_ids=ids,
                    context=ctx,
                )
        yield from self.comparisons(chunk)

    def comparisons(self, chunk: Chunk) -> Iterator[Draft]:
        """Which of two entities of the same family has the larger value of an attribute
        both documents state ("What was {e}'s net profit?", "How old was {e}?"): the
        answer compares two stated values (seed 001: reasoning across passages)."""
        zh = self._lang(chunk.doc_id) == "zh"
        who = self._subjects[chunk.doc_id]
        for f in self.chunk_facts(chunk):
            attr = _attribute(f.question, [who.name])
            m = (_COMPARABLE_ZH if zh else _COMPARABLE).match(attr)
            value = _magnitude(f.answer)
            if m is None or value is None:
                continue
            # the documents after this one first (cyclically), so that the comparisons of
            # a family do not all name the same first document
            ids = sorted(self.documents)
            at = ids.index(chunk.doc_id)
            for other in ids[at + 1 :] + ids[:at]:
                o_who = self._subjects[other]
                if other == chunk.doc_id or o_who.family != who.family:
                    continue
                match = [
                    (c2, f2)
                    for c2, f2 in self._doc_facts(other)
                    if _attribute(f2.question, [o_who.name]) == attr
                ]
                if not match:
                    continue
                c2, f2 = match[0]
                v2 = _magnitude(f2.answer)
                if v2 is None or v2[1] != value[1] or v2[0] == value[0]:
                    continue
                noun = m.group("noun")
                first = value[0] > v2[0]
                top, top_f, low, low_f = (who, f, o_who, f2) if first else (o_who, f2, who, f)
                if zh:
                    q = f"{who.name}和{o_who.name}，哪家的{noun}更高？"
                    a = f"{top.name}（{top_f.answer}，{low.name}为{low_f.answer}）。"
                elif noun is None:
                    q = f"Who was older, {who.name} or {o_who.name}?"
                else:
                    q = f"Which reported the higher {noun}, {who.name} or {o_who.name}?"
                if not zh:
                    a = f"{top.name} ({top_f.answer}, against {low_f.answer} for {low.name})."
                ctx = f"{self._context(chunk)}\n\n{self._context(c2)}"
                yield self._draft(
                    chunk,
                    q,
                    a,
                    "reasoning",
                    (f.sentence, f2.sentence),
                    chunk_ids=(chunk.chunk_id, c2.chunk_id),
                    context=ctx,
                    other_doc_ids=(other,),
                )
                break

    def _attribute_index(self) -> dict[str, list[tuple[str, str, str]]]:
        """family → [(attribute question with "{e}", doc it was asked of, the role of
        the name it replaced: "" for the entity itself, else a party such as "the
        defendant")]."""
        if self._attributes is None:
            index: dict[str, list[tuple[str, str, str]]] = {}
            for c in self.chunks:
                who = self._subjects[c.doc_id]
                for f in self.chunk_facts(c):
                    attr = _attribute(f.question, self._names(c.doc_id))
                    if attr:
                        role = next((r for r, n in who.parties if n in f.question), "")
                        if who.name in f.question:
                            role = ""
                        if re.search(r"[\u4e00-\u9fff]{2,3}案的", f.question):
                            role = "案"
                        index.setdefault(who.family, []).append((attr, c.doc_id, role))
            self._attributes = index
        return self._attributes

    def unanswerable(self, chunk: Chunk) -> Iterator[Draft]:
        """Attributes the corpus gives for similar entities but not for this one.

        Only an attribute generic to the document kind is borrowed: one that most (more
        than half, and at least :data:`_UNANSWERABLE_MIN_SOURCES`) of the documents of the
        family state. Two or three similar documents sharing a slot is not enough (a
        symptom of an appendicitis record asked of a pneumonia patient, a building's
        completion asked of a trademark case in the same court): fewer but plausible
        unanswerable questions rather than implausible ones."""
        who = self._subjects[chunk.doc_id]
        names = self._names(chunk.doc_id)
        name = names[-1] if self._lang(chunk.doc_id) == "zh" else who.name
        doc_text = self.documents[chunk.doc_id].text
        index = self._attribute_index().get(who.family, [])
        sources: dict[tuple[str, str], set[str]] = {}
        for attr, other, role in index:
            if other != chunk.doc_id:
                sources.setdefault((attr, role), set()).add(other)
        family = sum(s.family == who.family for s in self._subjects.values())
        need = _UNANSWERABLE_MIN_SOURCES
        seen: set[str] = set()
        for attr, other, role in index:
            if other == chunk.doc_id or attr in seen:
                continue
            seen.add(attr)
            if len(sources[(attr, role)]) < need:
                continue
            target = who.party(role) if role and role != "案" else name
            if role == "案" and target is not None:
                target = next((n for n in names if n.endswith("案")), None)
            if target is None or _states(doc_text, attr):
                continue
            # stated by most documents of the kind: question or mention (_states)
            stating = {o for o, s in self._subjects.items() if s.family == who.family} & (
                sources[(attr, role)]
                | {
                    o
                    for o, s in self._subjects.items()
                    if s.family == who.family and _states(self.documents[o].text, attr)
                }
            )
            if len(stating) * 2 <= family:
                continue
            yield self._draft(chunk, attr.replace("{e}", target), "", "unanswerable", ())
        yield from self._earlier_period(chunk)

    def _earlier_period(self, chunk: Chunk) -> Iterator[Draft]:
        """A figure the document reports for its own period ("What was X's net profit?"
        in an annual report for 2021), asked for a period it does not cover (four years
        earlier, a year the document never mentions): the attribute is the entity's
        own, so the question is plausible, and no document of the corpus answers it."""
        doc = self.documents[chunk.doc_id]
        year = re.search(r"(?:19|20)\d{2}", doc.title or "")
        if year is None:
            return
        earlier = str(int(year.group(0)) - _EARLIER_BY)
        if earlier in doc.text:
            return
        zh = self._lang(chunk.doc_id) == "zh"
        # any chunk of the document asks it (the figure is the document's, not the chunk's)
        for _, f in self._doc_facts(chunk.doc_id):
            if f.slot not in ("amount", "percentage", "") or not f.attribute:
                continue
            # worded apart from the document's own question ("What was X's net profit?"),
            # which a near-duplicate filter would otherwise take it for
            e = self._subjects[chunk.doc_id].name
            if zh:
                m = re.fullmatch(r"\{e\}实现([\u4e00-\u9fff]{2,8})多少钱？", f.attribute)
                if m:
                    q = f"{e}在{earlier}年的{m.group(1)}是多少？"
                    yield self._draft(chunk, q, "", "unanswerable", ())
            elif (m := _VALUE_ATTRIBUTE.match(f.attribute)) and f.attribute.endswith(
                f"{m.group(1)}?"
            ):
                q = f"What {m.group(1)} did {e} report for {earlier}?"
                yield self._draft(chunk, q, "", "unanswerable", ())

    def drafts(self, chunk: Chunk, label: str) -> Iterator[Draft]:
        return {
            "fact_single": self.fact_single,
            "summary": self.summary,
            "reasoning": self.reasoning,
            "unanswerable": self.unanswerable,
        }[label](chunk)

    async def draft_list(self, chunk: Chunk, label: str) -> list[Draft]:
        """:meth:`drafts` as a list (the generator protocol is asynchronous)."""
        return list(self.drafts(chunk, label))


#: a party named by its role in the proceedings ("the claimant")
_ROLE_NOUN = re.compile(
    r"\b[Tt]he (claimant|plaintiff|defendant|respondent|accused|applicant|appellant|"
    r"complainant|petitioner)(s?)\b('s)?"
)
#: an event whose subject is an unnamed definite noun ("the claim was filed")
_DEFINITE_SUBJECT = re.compile(r"^[Tt]he ([a-z][a-z-]*) (?!of [A-Z])")
_DEFINITE_QUESTION = re.compile(
    r"^(?:When|In what year|How many [a-z]+) (?:did|was|were|had) the ([a-z][a-z-]*) (?!of [A-Z])"
)


def _name_roles(fact: Fact, who: DocSubject) -> Fact | None:
    """The fact with every party role noun ("dismiss the claimant") replaced by the
    party's name; ``None`` when the document names no such party (a role noun with
    "the" that the question does not name is not stand-alone)."""
    changed = False

    def sub(text: str) -> str | None:
        nonlocal changed
        out = text
        for m in reversed(list(_ROLE_NOUN.finditer(text))):
            name = who.party(f"the {m.group(1)}")
            if name is None or m.group(2):
                return None
            changed = True
            out = out[: m.start()] + name + (m.group(3) or "") + out[m.end() :]
        return out

    question = sub(fact.question)
    event = sub(fact.event) if fact.event else ""
    if question is None or event is None:
        return None
    if not changed:
        return fact
    attribute = question.replace(who.name, "{e}") if who.name in question else ""
    return replace(fact, question=question, event=event, attribute=attribute)


#: "What was {e}'s NOUN[ for 2021]?" (an amount asked of the entity)
_VALUE_ATTRIBUTE = re.compile(r"^What was \{e\}'s ([a-z][a-z -]*?)(?: (?:for|in|at) .+)?\?$")
#: the fewest documents of a family that must state an attribute before it is asked of
#: a document that does not (besides more than half of the family: generic to the kind)
_UNANSWERABLE_MIN_SOURCES = 2
#: how many years before a report's own the earlier-period unanswerable question asks
_EARLIER_BY = 4
#: a section with more sentences than this is not summarised by listing it
_SUMMARY_MAX_SENTENCES = 10
_COMPARABLE = re.compile(r"^(?:What was \{e\}'s (?P<noun>[a-z -]+)\?|How old was \{e\}\?)$")
_COMPARABLE_ZH = re.compile(r"^\{e\}(?:实现|的)?(?P<noun>[\u4e00-\u9fff]{2,12}?)(?:为)?多少钱？$")
_SCALE = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "万": 1e4, "亿": 1e8}


def _magnitude(answer: str) -> tuple[float, str] | None:
    """``(value, unit)`` of an amount, a percentage or a plain number."""
    m = re.fullmatch(
        r"(?:(?P<cur>[A-Z]{3}) )?(?P<n>\d[\d,]*(?:\.\d+)?)(?: (?P<sc>thousand|million|billion))?"
        r"(?P<pct> ?%)?",
        answer.strip(),
    )
    if m is None:
        m = re.fullmatch(
            r"(?P<cur>人民币|美元)?(?P<n>\d[\d,]*(?:\.\d+)?)(?P<sc>万|亿)?元(?P<pct>)", answer
        )
    if m is None:
        return None
    value = float(m.group("n").replace(",", "")) * _SCALE.get(m.group("sc") or "", 1.0)
    unit = "%" if m.group("pct") else (m.group("cur") or "")
    return value, unit


_SYNONYMS = (
    {"founded", "established", "incorporated", "chartered", "formed", "成立"},
    {"physician", "surgeon", "obstetrician", "doctor", "医师", "医生"},
)
_Q_WORDS = {
    "what",
    "when",
    "who",
    "how",
    "many",
    "much",
    "year",
    "was",
    "did",
    "in",
    "the",
    "of",
    "at",
    "old",
    "is",
    "are",
    "were",
    "which",
}


def _attribute(question: str, names: Sequence[str]) -> str:
    """The question with the entity replaced by "{e}", when it asks a generic attribute
    (no other proper name, no date or number in it)."""
    for n in names:
        if n and n in question:
            attr = question.replace(n, "{e}")
            break
    else:
        return ""
    if any(n and n in attr for n in names):
        return ""  # names another party of the same document
    rest = attr.replace("{e}", "")
    if re.search(r"\d", rest):
        return ""
    if re.search(r"[\u4e00-\u9fff]", rest):
        return attr if len(rest) <= 16 else ""
    words = rest.split()
    if any(w[:1].isupper() for w in words[1:]) or {"his", "her", "its", "their"} & set(words):
        return ""
    return attr


def _states(doc_text: str, attr: str) -> bool:
    """Whether a document (probably) states the attribute: every content word of the
    attribute question (or a synonym) occurs in it."""
    low = doc_text.lower()
    toks = [t for t in content_tokens(attr.replace("{e}", "")) if t not in _Q_WORDS]
    if re.search(r"[\u4e00-\u9fff]", attr):
        key = re.sub(
            r"(多少钱|的|是谁|是哪一天|哪一年|于|多少|什么|何时|？|\{e\})", " ", attr
        ).split()
        return all(k in doc_text for k in key) if key else True
    if not toks:
        return True
    missing = 0
    for t in toks:
        group = next((g for g in _SYNONYMS if t in g), {t})
        stem = t[:-1] if t.endswith("s") and len(t) > 4 else t
        if not any(g in low for g in group) and stem not in low:
            missing += 1
    # most of what the question asks about is absent from the document
    return missing * 2 <= len(toks)


#: headings that name a part of the document's form, not a topic a user would ask about
_FORM_HEADING = re.compile(
    r"\b(?:information|overview|introduction|letter|statement|parties|details|general|"
    r"background|contents|notes?|appendix|profile)\b|(?:信息|概况|简介|概述|说明|附录)",
    re.I,
)
_SMALL = {"of", "the", "and", "by", "in", "for", "from", "to", "a", "an"}


def _topic_question(heading: str, name: str, kind: str, zh: bool) -> str | None:
    """A summary question about the topic a section heading names, of the entity, as a
    user would ask it ("Discharge Summary" → "How would you summarise Samuel Okoro's discharge?",
    "Major Events" → "What were the major events at X?", "Facts Found by the Court" →
    "How would you summarise the facts found by the court in X?"); ``None`` for a heading that names
    a part of the document rather than a topic (it is never quoted as a heading)."""
    heading = heading.strip().strip("：:")
    if not heading or _FORM_HEADING.search(heading):
        return None
    if zh:
        if not re.fullmatch(r"[\u4e00-\u9fff]{2,8}", heading):
            return None
        if heading.endswith("查明"):
            case = name if name.endswith("案") else f"{name}案"
            return f"{case}经审理查明了哪些事实？"
        return f"{name}的{heading}有哪些要点？"
    words = heading.split()
    if (
        not re.fullmatch(r"[A-Z][A-Za-z]*(?: [A-Za-z]+){0,5}", heading)
        or words[0].lower() in _SMALL
    ):
        return None
    topic = " ".join(w if w.isupper() and len(w) > 1 else w.lower() for w in words)
    topic = re.sub(r" summary$", "", topic)  # "discharge summary" → "discharge"
    head = topic.split()[-1] if " of " not in topic and " by " not in topic else topic.split()[0]
    plural = head.endswith("s") and not head.endswith(("ss", "is", "us"))
    # a summary question asks for a summary ("summarise", "What were the major events"),
    # not for one value ("What was the judgment in X?" reads as a single fact)
    if kind == "case":
        return f"How would you summarise the {topic} in {name}?"
    if kind == "org" and plural and re.search(r"(?:events|changes|risks|measures)$", topic):
        return f"What were the {topic} at {name}?"
    return f"How would you summarise {name}'s {topic}?"


#: the legal form that ends a registered company name ("Ltd", "ASA", "股份有限公司"):
#: part of the name on the document's title page, not of how anyone asks about it
_LEGAL_FORM = (
    r"(?:,? (?:Ltd\.?|Limited|[Pp]lc|PLC|Inc\.?|Corp\.?|Co\.|LLC|LLP|L\.P\.|ASA|AS|AB|AG|SE|"
    r"GmbH|S\.A\.|SA|S\.p\.A\.|N\.V\.|B\.V\.|Oyj|Pty(?: Ltd)?))"
)
_LEGAL_FORM_END = re.compile(rf"{_LEGAL_FORM}$")
#: a capitalised name followed by its legal form, anywhere in a question
_LEGAL_NAME = re.compile(rf"\b((?:[A-Z][\w&'-]*|&|of|and) )*[A-Z][\w&'-]*{_LEGAL_FORM}(?![\w.])")
_LEGAL_FORM_ZH = re.compile(r"(?<=[\u4e00-\u9fff]{2})(?:股份有限公司|有限责任公司|有限公司)")
#: a job title written before a person's name ("Chief Financial Officer Liam Prendergast")
_TITLE_BEFORE_NAME = re.compile(
    r"\b(?:[A-Z][a-z]+ ){0,3}(?:Officer|Director|Executive|President|Secretary|Chair(?:man|woman)?)"
    r" (?=[A-Z][a-z]+ [A-Z][a-z]+)"
)
_PROSECUTING = {"State", "People", "Crown", "Republic", "Commonwealth"}


def _possessive(name: str) -> str:
    """ "Colin Marsh" → "Colin Marsh's", "Northgate Builders" → "Northgate Builders'"."""
    return f"{name}'" if name.endswith("s") and not name.endswith("ss") else f"{name}'s"


def user_name(name: str, kind: str) -> str:
    """How a user refers to a document's entity or party, who knows it but not the
    document's wording: a company without its legal form ("Tallis Retail Group Ltd" →
    "Tallis Retail Group", "华锦新材料股份有限公司" → "华锦新材料"), a criminal case by its
    defendant ("State v. Colin Marsh" → "Colin Marsh's case"), a civil one by its parties
    ("Dana Whitfield v. Corbin Logistics LLC" → "Dana Whitfield's case against Corbin
    Logistics"); anything else as it is."""
    if kind == "case" and " v. " in name:
        first, _, second = name.partition(" v. ")
        second = user_name(second, "org")
        if first in _PROSECUTING:
            return f"{_possessive(second)} case"
        return f"{_possessive(user_name(first, 'org'))} case against {second}"
    short = _LEGAL_FORM_ZH.sub("", name) if re.search(r"[\u4e00-\u9fff]", name) else name
    short = _LEGAL_FORM_END.sub("", short).strip()
    return short if len(short) >= 2 else name


def as_user_asks(question: str, subjects: Sequence[DocSubject]) -> str:
    """The question worded as a user who knows the entities asks it, not copied from the
    document: the entities and parties by :func:`user_name`, any other company without
    its legal form, and no job title before a person's name ("When did Chief Financial
    Officer Liam Prendergast join …" → "When did Liam Prendergast join …"). The
    question's content is unchanged; only the document's formal wording goes."""
    out = question
    for who in subjects:
        for name in sorted(set(who.names()), key=len, reverse=True):
            if not name or name not in out:
                continue
            kind = who.kind if name == who.name else "org"
            short = user_name(name, kind)
            if kind == "case" and short != name:
                # "in State v. X" → "in X's case"; a case name used as a possessive or
                # after an article stays (it is not a noun phrase to rewrite)
                out = re.sub(rf"(?<=\bin ){re.escape(name)}(?!')", short, out)
                continue
            out = out.replace(f"{name}'s", _possessive(short)).replace(name, short)
    if not re.search(r"[\u4e00-\u9fff]", out):
        out = _LEGAL_NAME.sub(lambda m: _LEGAL_FORM_END.sub("", m.group()), out)
        out = _TITLE_BEFORE_NAME.sub("", out)
    else:
        out = _LEGAL_FORM_ZH.sub("", out)
    return out
