"""Offline test-set generation: extractive statements, template questions (EN + ZH).

LOWER QUALITY than the LLM pipeline, and marked so in every example's metadata
(``generator: offline-template``): questions are the source sentence with the answer
span turned into a question phrase, summaries are consecutive sentences of a section,
reasoning questions ask which of two dated events came first (the answer states the
derived interval), unanswerable ones ask about an attribute of a corpus entity that no
document mentions. It exists so that tests and `make demo`-style runs work with no
endpoint.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import date

from ragtriage.records import Chunk, Document
from ragtriage.text import content_tokens, detect_language, split_sentences

__all__ = ["Draft", "OfflineGenerator", "entity_of"]


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


class OfflineGenerator:
    """Template questions from the chunks of a corpus (see the module docstring)."""

    name = "offline-template"

    def __init__(self, documents: Sequence[Document], chunks: Sequence[Chunk]) -> None:
        self.documents = {d.doc_id: d for d in documents}
        self.chunks = list(chunks)
        self._corpus_low = "\n".join(d.text for d in documents).lower()

    def _context(self, chunk: Chunk) -> str:
        """What a critic sees: the document's title, then the chunk."""
        doc = self.documents[chunk.doc_id]
        return f"{doc.title}\n\n{chunk.text}" if doc.title else chunk.text

    def _lang(self, doc_id: str) -> str:
        doc = self.documents[doc_id]
        return "zh" if detect_language(doc.text[:2000]) == "zh" else "en"

    def fact_single(self, chunk: Chunk) -> Iterator[Draft]:
        zh = self._lang(chunk.doc_id) == "zh"
        title = entity_of(self.documents[chunk.doc_id])
        for sentence in _sentences(chunk):
            if len(sentence) > (80 if zh else 220):
                continue  # a long sentence makes an unreadable template question
            for pattern, wh in _SPANS_ZH if zh else _SPANS_EN:
                m = pattern.search(sentence)
                if m is None:
                    continue
                span = m.group()
                body = sentence.rstrip("。.！!；; ")
                if zh:
                    q = body.replace(span, wh, 1) + "？"
                    if title not in q:
                        q = f"{title}：{q}"
                else:
                    asked = wh
                    if wh == "in what year":
                        span = m.group(1)
                        asked = "what year"
                    q_body = body.replace(span, asked, 1)
                    q = f"According to {title}, {q_body[0].lower()}{q_body[1:]}?"
                yield Draft(
                    question=q,
                    answer=span,
                    label="fact_single",
                    references=(sentence,),
                    chunk_ids=(chunk.chunk_id,),
                    doc_id=chunk.doc_id,
                    language="zh" if zh else "en",
                    generator=self.name,
                    context=self._context(chunk),
                )
                break

    def summary(self, chunk: Chunk) -> Iterator[Draft]:
        sentences = _sentences(chunk)
        if len(sentences) < 3:
            return
        zh = self._lang(chunk.doc_id) == "zh"
        title = entity_of(self.documents[chunk.doc_id])
        section = str(chunk.metadata.get("section") or "").strip()
        if zh:
            q = f"概括{title}" + (f"“{section}”部分" if section else "这部分内容") + "的主要信息。"
        else:
            q = f"Summarise what {title} reports" + (f" under '{section}'." if section else ".")
        picked = tuple(sentences[:3])
        yield Draft(
            question=q,
            answer=("" if zh else " ").join(picked),
            label="summary",
            references=picked,
            chunk_ids=(chunk.chunk_id,),
            doc_id=chunk.doc_id,
            language="zh" if zh else "en",
            generator=self.name,
            context=self._context(chunk),
        )

    def reasoning(self, chunk: Chunk) -> Iterator[Draft]:
        """Which of two dated events came first: this chunk's dated sentence against the
        next dated sentence of the same document."""
        zh = self._lang(chunk.doc_id) == "zh"
        pattern = _DATE_ZH if zh else _DATE_EN
        title = entity_of(self.documents[chunk.doc_id])
        own = [(s, m) for s in _sentences(chunk) if (m := pattern.search(s))]
        others = [
            (c, s, m)
            for c in self.chunks
            if c.doc_id == chunk.doc_id and c.chunk_id != chunk.chunk_id
            for s in _sentences(c)
            if (m := pattern.search(s))
        ]
        for s1, m1 in own:
            d1 = _date_of(m1, zh)
            for c2, s2, m2 in [(chunk, s, m) for s, m in own if s != s1] + others:
                d2 = _date_of(m2, zh)
                if d1 is None or d2 is None or d1 == d2:
                    continue
                e1, e2 = _clause(s1, m1.group(), zh), _clause(s2, m2.group(), zh)
                if not e1 or not e2:
                    continue
                (fa, da), (la, db) = sorted([(e1, d1), (e2, d2)], key=lambda p: p[1])
                days = (db - da).days
                if zh:
                    q = f"{title}：“{e1}”和“{e2}”，哪件事先发生？相隔多久？"
                    a = f"“{fa}”先发生（{da.isoformat()}），比“{la}”（{db.isoformat()}）早{days}天。"
                else:
                    q = f"For {title}, which came first and by how many days: {e1}, or {e2}?"
                    a = f"{fa} came first ({da.isoformat()}), {days} days before {la} ({db.isoformat()})."
                yield Draft(
                    question=q,
                    answer=a,
                    label="reasoning",
                    references=(s1, s2),
                    chunk_ids=tuple(dict.fromkeys((chunk.chunk_id, c2.chunk_id))),
                    doc_id=chunk.doc_id,
                    language="zh" if zh else "en",
                    generator=self.name,
                    context=self._context(chunk)
                    if c2 is chunk
                    else f"{self._context(chunk)}\n\n{c2.text}",
                )
                break

    def unanswerable(self, chunk: Chunk) -> Iterator[Draft]:
        zh = self._lang(chunk.doc_id) == "zh"
        entity = entity_of(self.documents[chunk.doc_id])
        for key, template in _UNANSWERABLE_ZH if zh else _UNANSWERABLE_EN:
            if key in self._corpus_low:
                continue  # the corpus may state it after all
            yield Draft(
                question=template.format(e=entity),
                answer="",
                label="unanswerable",
                references=(),
                chunk_ids=(chunk.chunk_id,),
                doc_id=chunk.doc_id,
                language="zh" if zh else "en",
                generator=self.name,
                context=self._context(chunk),
            )

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
