"""Throughput of the rules judge: synthetic traces diagnosed per second.

Run: .venv/bin/python benchmarks/diagnose_rules.py [--real] [--traces 4000] [--workers 2]
     [--strategy ragec] [--profile] [--save diagnoses.jsonl] [--baseline OTHER/src [--rounds 3]]

Builds N synthetic traces (English and Chinese company reports chunked into
paragraphs; every failure kind: wrong number at generation, GT chunk dropped by the
reranker, GT chunk never retrieved, GT chunk missing the question's entity, plus
correct answers and abstentions), diagnoses them with ``Diagnoser("rules")`` and prints
traces/s in one process and with ``--workers`` processes (target: >= 2,000/s), and checks
that both give identical diagnoses. ``--profile`` prints the top functions by cumulative and
by own time; ``--save`` writes the one-process diagnoses, to compare two versions.

``--baseline OTHER/src``: one-process traces per CPU-second of this checkout and of another
one (e.g. a ``git worktree`` of an older commit), each measured ``--rounds`` times in a fresh
child process, alternating (this, other, other, this, ...) so both see the same load; prints
every round, the medians and the ratio. The same traces are built in both (this script's
generator, with the measured checkout's ``ragtriage.records``).

``--real``: long real-style traces instead (see :func:`real_trace`): ~300-word
chain-of-thought answers with markdown lists, "(Doc 2)" citations and a conclusion,
verbose abstentions, partial abstentions on two-company questions, wrong numbers and
impossible years, 5 context chunks, full GT documents, EN and ZH, failing and not
(target: >= 1,000/s with 2 workers; issue #9).

:func:`synthetic_traces` is also used by ``benchmarks/judge_cost.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import os
import pstats
import random
import re
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# ``--src DIR`` (used by ``--baseline`` for its children): measure the package under DIR
_SRC = sys.argv[sys.argv.index("--src") + 1] if "--src" in sys.argv[:-1] else str(ROOT / "src")
sys.path.insert(0, _SRC)

from ragtriage.config import DiagnosisConfig  # noqa: E402
from ragtriage.diagnosis import Diagnoser  # noqa: E402
from ragtriage.diagnosis._context import CaseContext  # noqa: E402
from ragtriage.diagnosis.answer_eval import evaluate_rules  # noqa: E402
from ragtriage.diagnosis.concepts import rules_concept_coverage  # noqa: E402
from ragtriage.diagnosis.engine import _clear_text_caches  # noqa: E402
from ragtriage.diagnosis.gt_chunks import gt_from_references  # noqa: E402
from ragtriage.diagnosis.types_rules import rule_type_votes  # noqa: E402
from ragtriage.records import AnswerLabel, Chunk, Diagnosis, Example, Hit, Trace  # noqa: E402

KINDS = ("generation", "reranking", "retrieval", "chunking", "correct", "abstain")

_EN_COMPANIES = (
    "Acme Corp",
    "Globex Holdings",
    "Initech Systems",
    "Umbrella Pharma",
    "Stark Industries",
    "Wayne Logistics",
    "Hooli Media",
    "Vandelay Imports",
    "Cyberdyne Robotics",
    "Soylent Foods",
)
_EN_CITIES = ("Springfield", "Riverton", "Lakeside", "Fairview", "Greenville", "Bayside")
_ZH_COMPANIES = ("绿野农业", "捷翼航空", "华信科技", "东方物流", "远航医药", "星河传媒")
_ZH_CITIES = ("河源", "临江", "南湖", "青山", "白沙", "新桥")
_EN_FILLER = (
    "The board reviewed the annual budget and approved new risk controls.",
    "Management expects demand to remain stable across its main markets.",
    "The company continued to invest in staff training and safety programmes.",
    "Several suppliers renewed their contracts under similar terms.",
    "The audit committee met four times during the reporting period.",
    "Customer satisfaction surveys showed modest improvements.",
)
_ZH_FILLER = (
    "董事会审议了年度预算并批准了新的风险控制措施。",
    "管理层预计主要市场的需求将保持稳定。",
    "公司继续投资于员工培训和安全项目。",
    "多家供应商以类似条款续签了合同。",
    "审计委员会在报告期内召开了四次会议。",
)


@dataclass(frozen=True)
class _Fact:
    question: str
    answer: str
    wrong: str
    abstain: str
    sentence: str  # the evidence sentence, copied verbatim into the document
    lead: str  # the sentence naming the company (kept apart for chunking errors)


def _en_fact(rng: random.Random, company: str) -> _Fact:
    city = rng.choice(_EN_CITIES)
    year = rng.randint(1995, 2022)
    staff = rng.randint(120, 9000)
    if rng.random() < 0.5:
        return _Fact(
            question=f"In which year did {company} open its plant in {city}?",
            answer=f"{company} opened its plant in {city} in {year}.",
            wrong=f"{company} opened its plant in {city} in {year + rng.randint(1, 6)}.",
            abstain="The provided documents do not mention when the plant was opened.",
            sentence=f"In {year}, the company opened a plant in {city} with {staff} employees.",
            lead=f"{company} is a manufacturer with operations in several regions.",
        )
    amount = rng.randint(2, 90)
    return _Fact(
        question=f"How much did {company} raise through debt financing in {year}?",
        answer=f"{company} raised ${amount} million through debt financing in {year}.",
        wrong=f"{company} raised ${amount + rng.randint(3, 40)} million in {year}.",
        abstain="I don't know; the context does not say how much was raised.",
        sentence=f"In {year}, the group raised ${amount} million through debt financing.",
        lead=f"{company} reported its financing activities for the year below.",
    )


def _zh_fact(rng: random.Random, company: str) -> _Fact:
    city = rng.choice(_ZH_CITIES)
    year = rng.randint(1995, 2022)
    staff = rng.randint(120, 9000)
    return _Fact(
        question=f"{company}公司在哪一年于{city}开设了工厂？",
        answer=f"{company}公司于{year}年在{city}开设了工厂。",
        wrong=f"{company}公司于{year + rng.randint(1, 6)}年在{city}开设了工厂。",
        abstain="文档中没有提供相关信息，无法回答该问题。",
        sentence=f"{year}年，该公司在{city}开设了一家工厂，雇佣了{staff}名员工。",
        lead=f"{company}公司是一家在多个地区经营的制造企业。",
    )


def _paragraphs(rng: random.Random, filler: tuple[str, ...], n: int, k: int = 3) -> list[str]:
    sep = "" if filler is _ZH_FILLER else " "
    return [sep.join(rng.sample(filler, k)) for _ in range(n)]


def _chunks(doc_id: str, paragraphs: list[str]) -> list[Chunk]:
    out, pos = [], 0
    for i, text in enumerate(paragraphs):
        out.append(
            Chunk(
                chunk_id=f"{doc_id}_{i}",
                doc_id=doc_id,
                text=text,
                start=pos,
                end=pos + len(text),
                index=i,
            )
        )
        pos += len(text) + 2
    return out


def _hits(chunks: list[Chunk]) -> list[Hit]:
    return [
        Hit(chunk_id=c.chunk_id, doc_id=c.doc_id, score=1.0 - i / 50, rank=i + 1)
        for i, c in enumerate(chunks)
    ]


def synthetic_trace(i: int, kind: str, *, zh: bool = False, seed: int = 0) -> Trace:
    """One synthetic trace of failure ``kind`` (see :data:`KINDS`)."""
    rng = random.Random(seed * 1_000_003 + i)
    companies = _ZH_COMPANIES if zh else _EN_COMPANIES
    company = rng.choice(companies)
    fact = _zh_fact(rng, company) if zh else _en_fact(rng, company)
    filler = _ZH_FILLER if zh else _EN_FILLER
    sep = "" if zh else " "
    paras = _paragraphs(rng, filler, 10)
    at = rng.randint(1, 8)
    if kind == "chunking":
        # the company is named in the previous chunk only: the GT chunk alone is ambiguous
        paras[at - 1] = paras[at - 1] + sep + fact.lead
        paras[at] = fact.sentence + sep + paras[at]
    else:
        paras[at] = fact.lead + sep + fact.sentence + sep + paras[at]
    doc_id = f"doc{i}"
    gt_doc = _chunks(doc_id, paras)
    gt_chunk = gt_doc[at]
    others = [c for j in range(3) for c in _chunks(f"noise{i}_{j}", _paragraphs(rng, filler, 6))]
    pool = [c for c in gt_doc if c is not gt_chunk] + others
    rng.shuffle(pool)
    retrieved = pool[:20]
    if kind in ("generation", "correct", "abstain"):
        retrieved = [gt_chunk, *pool[:19]]
    elif kind == "reranking":
        retrieved = [*pool[:7], gt_chunk, *pool[7:19]]
    reranked = [c for c in retrieved if c is not gt_chunk][:5]
    if kind in ("generation", "correct", "abstain"):
        reranked = [gt_chunk, *reranked[:4]]
    context = [c.chunk_id for c in reranked]
    answer = {"correct": fact.answer, "abstain": fact.abstain}.get(kind, fact.wrong)
    example = Example(
        example_id=f"ex{i}",
        query=fact.question,
        answer=fact.answer,
        doc_ids=[doc_id],
        references=[fact.sentence],
        label=kind,
        language="zh" if zh else "en",
    )
    return Trace(
        trace_id=f"t{i}",
        run_id="synthetic",
        example=example,
        gt_doc_chunks=gt_doc,
        chunks=others,
        retrieved=_hits(retrieved),
        reranked=_hits(reranked),
        context=context,
        answer=answer,
    )


def synthetic_traces(n: int, *, kinds: tuple[str, ...] = KINDS, seed: int = 0) -> list[Trace]:
    """``n`` traces cycling through ``kinds``; every third one in Chinese."""
    return [synthetic_trace(i, kinds[i % len(kinds)], zh=i % 3 == 2, seed=seed) for i in range(n)]


# -- real-style traces (--real) ---------------------------------------------------------
#
# Long traces as real pipelines and GPT-4-class models produce them: company reports of
# about 320 words (ZH: 600 characters) chunked by paragraph, the full GT documents in
# ``gt_doc_chunks``, 20 retrieved hits, 5 context chunks, and answers of about 300 words
# that review each document in a markdown list with "(Doc 2)" citations and then conclude
# ("Thus, the answer is: …" / "综上所述，…"). Every trace draws its own numbers, so no
# cache keyed on a text carries over from one trace to the next.

#: real-style kind -> the stage a correct diagnosis names (None: not a failure)
REAL_KINDS: dict[str, str | None] = {
    "correct": None,  # evidence in the context, right conclusion
    "wrong_number": "generation",  # evidence in the context, a wrong number or impossible year
    "retrieval": "retrieval",  # evidence never retrieved; verbose abstention
    "reranking": "reranking",  # evidence retrieved at rank 6-15, not in the context; abstains
    "unanswerable": None,  # the documents do not tell; verbose abstention
    "partial": "retrieval",  # two companies, one company's chunks retrieved: one declined
    "both": None,  # two companies, both in the context, both answered
}

_MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
_EN_PEOPLE = ("Jane Davis", "Robert Chen", "Maria Lopez", "David Okafor", "Emily Novak")
_EN_TARGETS = ("Green Energy Power", "Northwind Storage", "Blue Harbor Freight", "Summit Data")
_EN_INDUSTRIES = ("logistics", "renewable energy", "consumer electronics", "pharmaceutical")
_ZH_PEOPLE = ("王伟", "李娜", "张敏", "刘洋", "陈静")
_ZH_TARGETS = ("青禾能源", "北辰仓储", "蓝湾货运", "远景数据")
_ZH_INDUSTRIES = ("物流", "新能源", "消费电子", "医药")


@dataclass(frozen=True)
class _Event:
    """One event of a company report and how questions and answers talk about it."""

    sentence: str  # the evidence sentence in the report
    question: str  # asked about one company
    question2: str  # asked about two companies ({c2})
    claim: str  # what an answer states
    decline: str  # what a verbose abstention says about it
    slot: str  # the value a wrong answer changes ("fy": a year, impossible in half of them)


_EN_EVENTS = {
    "financing": _Event(
        "In {m2} {y}, the company raised ${b} million through debt financing to fund the "
        "expansion of its {ind} business.",
        "How much did {c} raise through debt financing in {y}?",
        "How much did {c} and {c2} raise through debt financing in {y}, respectively?",
        "{c} raised ${b} million through debt financing in {y}",
        "none of the documents provide the amount {c} raised through debt financing in {y}",
        "b",
    ),
    "acquisition": _Event(
        "In {m1} {y}, {c} acquired {t} for ${a} million through a share purchase agreement, "
        "which positioned it as a key player in the sector.",
        "Which company did {c} acquire in {y}, and at what price?",
        "Which companies did {c} and {c2} acquire in {y}?",
        "{c} acquired {t} for ${a} million in {m1} {y}",
        "there is no information available regarding an acquisition by {c} in {y}",
        "a",
    ),
    "income": _Event(
        "The operating income of {c} reached ${inc} billion in {y}, an increase of {p}% "
        "driven by new revenue streams.",
        "What was the operating income of {c} in {y}?",
        "What were the operating incomes of {c} and {c2} in {y}?",
        "the operating income of {c} was ${inc} billion in {y}",
        "the documents do not mention the operating income of {c} for {y}",
        "inc",
    ),
    "founding": _Event(
        "{c}, established on {fm} {fd}, {fy}, is a {ind} company headquartered in {city} "
        "with {n} employees.",
        "When was {c} established?",
        "When were {c} and {c2} established?",
        "{c} was established on {fm} {fd}, {fy}",
        "the founding date of {c} is not mentioned in the provided documents",
        "fy",
    ),
}
_ZH_EVENTS = {
    "financing": _Event(
        "{y}年{m2}月，{c}公司通过债务融资筹集了{b}亿元，用于扩大{ind}业务的生产规模。",
        "{c}公司在{y}年通过债务融资筹集了多少资金？",
        "{c}公司和{c2}公司在{y}年分别通过债务融资筹集了多少资金？",
        "{c}公司在{y}年通过债务融资筹集了{b}亿元",
        "文档中没有提供{c}公司在{y}年债务融资金额的相关信息",
        "b",
    ),
    "acquisition": _Event(
        "{y}年{m1}月，{c}公司以{a}亿元收购了{t}，并签署了股权转让协议。",
        "{c}公司在{y}年收购了哪家公司？收购金额是多少？",
        "{c}公司和{c2}公司在{y}年分别收购了哪家公司？",
        "{c}公司于{y}年{m1}月以{a}亿元收购了{t}",
        "文档中未提及{c}公司在{y}年的收购事项",
        "a",
    ),
    "income": _Event(
        "{y}年，{c}公司的营业收入达到{inc}亿元，同比增长{p}%，主要得益于新业务的收入贡献。",
        "{c}公司在{y}年的营业收入是多少？",
        "{c}公司和{c2}公司在{y}年的营业收入分别是多少？",
        "{c}公司{y}年的营业收入为{inc}亿元",
        "文档中没有关于{c}公司{y}年营业收入的信息",
        "inc",
    ),
    "founding": _Event(
        "{c}公司成立于{fy}年{fm}月{fd}日，是一家总部位于{city}的{ind}企业，拥有员工{n}名。",
        "{c}公司成立于哪一年？",
        "{c}公司和{c2}公司分别成立于哪一年？",
        "{c}公司成立于{fy}年{fm}月{fd}日",
        "文档中没有提供{c}公司成立时间的信息",
        "fy",
    ),
}
# the unanswerable question and its abstention
_EN_UNANSWERABLE = (
    "On which stock exchange is {c} listed, and what is its ticker symbol?",
    "the documents do not specify the stock exchange on which {c} is listed or its ticker "
    "symbol, so this cannot be determined",
)
_ZH_UNANSWERABLE = (
    "{c}公司在哪个证券交易所上市？股票代码是什么？",
    "文档中没有提供{c}公司上市的证券交易所及股票代码的信息，因此无法确定",
)
# report sentences no question asks about
_EN_EXTRA = (
    "In {m3} {y}, {who} was appointed as the new Chief Financial Officer of {c}.",
    "In {m4}, the board of {c} distributed ${d} million of dividends to shareholders.",
    "In {m5} {y}, {c} opened a plant in {city} employing {n2} people.",
)
_ZH_EXTRA = (
    "{y}年{m3}月，{who}被任命为{c}公司新任首席财务官。",
    "{y}年{m4}月，{c}公司董事会向股东派发了{d}亿元的现金股利。",
    "{y}年{m5}月，{c}公司在{city}开设了一家工厂，雇佣了{n2}名员工。",
)


def _company_slots(rng: random.Random, company: str, year: int, *, zh: bool) -> dict[str, str]:
    """The values one company's report states (amounts, months, people, places)."""
    months = rng.sample(range(1, 13), 5)
    slots = {
        "c": company,
        "y": str(year),
        "b": str(rng.randint(12, 980)),
        "a": str(rng.randint(15, 900)),
        "inc": f"{rng.randint(1, 9)}.{rng.randint(1, 9)}",
        "p": str(rng.randint(3, 40)),
        "fy": str(rng.randint(1950, year - 5)),
        "fd": str(rng.randint(1, 28)),
        "n": str(rng.randint(300, 20000)),
        "n2": str(rng.randint(100, 3000)),
        "d": str(rng.randint(5, 400)),
    }
    month = (lambda m: str(m)) if zh else (lambda m: _MONTHS[m - 1])
    slots |= {f"m{i}": month(m) for i, m in enumerate(months, 1)}
    slots["fm"] = month(rng.randint(1, 12))
    slots["t"] = rng.choice(_ZH_TARGETS if zh else _EN_TARGETS)
    slots["city"] = rng.choice(_ZH_CITIES if zh else _EN_CITIES)
    slots["ind"] = rng.choice(_ZH_INDUSTRIES if zh else _EN_INDUSTRIES)
    slots["who"] = rng.choice(_ZH_PEOPLE if zh else _EN_PEOPLE)
    return slots


def _report(rng: random.Random, doc_id: str, slots: dict[str, str], *, zh: bool) -> list[Chunk]:
    """A company report chunked by paragraph: the founding sentence opens it, every other
    event opens one paragraph of filler sentences, in random order."""
    events = _ZH_EVENTS if zh else _EN_EVENTS
    rest = [e.sentence for k, e in events.items() if k != "founding"]
    rest += _ZH_EXTRA if zh else _EN_EXTRA
    rng.shuffle(rest)
    facts = [events["founding"].sentence, *rest]
    filler = _ZH_FILLER if zh else _EN_FILLER
    paras = _paragraphs(rng, filler, len(facts), k=3)
    sep = "" if zh else " "
    return _chunks(doc_id, [f.format(**slots) + sep + p for f, p in zip(facts, paras, strict=True)])


def _review(context: list[Chunk], *, zh: bool) -> str:
    """The reasoning part of the answer: one markdown list item per document, quoting it
    with a citation."""
    if zh:
        return "\n".join(f"{i}. **文档{i}**：{c.text}（文档{i}）" for i, c in enumerate(context, 1))
    # "In May …" / "The operating income …" -> "states that in May …"; names keep their case
    return "\n".join(
        f"{i}. **Document {i}** states that "
        f"{re.sub(r'^(In|The) ', lambda m: m.group(0).lower(), c.text)} (Doc {i})"
        for i, c in enumerate(context, 1)
    )


def _conclusion(
    kind: str, event: _Event, slots: list[dict[str, str]], rng: random.Random, *, zh: bool
) -> str:
    first, second = slots[0], slots[1]
    if kind == "wrong_number":
        wrong = dict(first)
        value = first[event.slot]
        if event.slot == "fy" and rng.random() < 0.5:
            wrong["fy"] = str(int(value) + rng.randint(1800, 3000))  # an impossible year
        elif "." in value:
            wrong[event.slot] = f"{float(value) + rng.randint(1, 5):.1f}"
        else:
            wrong[event.slot] = str(int(value) + rng.randint(3, 90))
        return event.claim.format(**wrong)
    if kind in ("retrieval", "reranking"):
        return event.decline.format(**first)
    if kind == "unanswerable":
        return (_ZH_UNANSWERABLE if zh else _EN_UNANSWERABLE)[1].format(**first)
    if kind == "partial":
        return (
            event.claim.format(**first)
            + ("；而" if zh else "; however, ")
            + event.decline.format(**second)
        )
    if kind == "both":
        return (
            event.claim.format(**first) + ("；" if zh else ", and ") + event.claim.format(**second)
        )
    return event.claim.format(**first)


def real_trace(i: int, kind: str, *, zh: bool = False, seed: int = 0) -> Trace:
    """One real-style trace of ``kind`` (see :data:`REAL_KINDS`)."""
    rng = random.Random(seed * 1_000_003 + i)
    events = _ZH_EVENTS if zh else _EN_EVENTS
    year = rng.randint(2016, 2022)
    names = rng.sample(_ZH_COMPANIES if zh else _EN_COMPANIES, 5)
    slots = [_company_slots(rng, c, year, zh=zh) for c in names]
    docs = [_report(rng, f"rep{i}_{j}", s, zh=zh) for j, s in enumerate(slots)]
    event = events[rng.choice(sorted(events))]
    n_gt = 2 if kind in ("partial", "both") else 1
    evidence = [
        next(c for c in doc if event.sentence.format(**s) in c.text)
        for doc, s in zip(docs, slots, strict=True)
    ]
    # what a retriever finds: the evidence, the first company's other paragraphs, other
    # companies' paragraphs about the same event, then anything
    same = [c for c in docs[0] if c is not evidence[0]]
    rng.shuffle(same)
    others = [c for d in docs[n_gt:] for c in d if c not in evidence]
    rng.shuffle(others)
    ranked = [*same, *evidence[n_gt:], *others]
    if kind == "retrieval":
        retrieved = ranked[:20]
    elif kind == "partial":
        retrieved = [evidence[0], *ranked[:19]]
    elif kind == "reranking":
        at = rng.randint(5, 14)
        retrieved = [*ranked[:at], evidence[0], *ranked[at:19]]
    else:
        retrieved = [*evidence[:n_gt], *ranked[: 20 - n_gt]]
    context = [c for c in retrieved if kind != "reranking" or c is not evidence[0]][:5]
    rng.shuffle(context)
    conclusion = _conclusion(kind, event, slots, rng, zh=zh)
    review = _review(context, zh=zh)
    if zh:
        answer = (
            f"为了回答这个问题，我们需要逐一查看提供的文档，找出与问题相关的信息：\n\n{review}\n\n"
            "从以上文档可以看出，只有部分文档与问题直接相关，其余文档介绍的是公司的日常经营情况。"
            f"\n\n综上所述，{conclusion}。"
        )
    else:
        answer = (
            "To answer this question, let's go through the provided documents one by one and "
            f"look for the relevant information:\n\n{review}\n\nFrom the documents above, only "
            "some of the passages relate directly to the question; the others describe the "
            f"companies' routine operations.\n\nThus, the answer is: {conclusion}."
        )
    if kind == "unanswerable":
        unanswerable = _ZH_UNANSWERABLE if zh else _EN_UNANSWERABLE
        query, gold, refs = unanswerable[0].format(**slots[0]), "", []
    elif n_gt == 2:
        query = event.question2.format(**slots[0], c2=names[1])
        gold = ("；" if zh else "; ").join(event.claim.format(**s) for s in slots[:2])
        refs = [event.sentence.format(**s) for s in slots[:2]]
    else:
        query, gold = event.question.format(**slots[0]), event.claim.format(**slots[0])
        refs = [event.sentence.format(**slots[0])]
    gt_doc = [c for d in docs[:n_gt] for c in d]
    example = Example(
        example_id=f"rs{i}",
        query=query,
        answer=gold,
        answerable=kind != "unanswerable",
        doc_ids=[d[0].doc_id for d in docs[:n_gt]],
        references=refs,
        label=kind,
        language="zh" if zh else "en",
    )
    hits = _hits(context)
    return Trace(
        trace_id=f"rt{i}",
        run_id="realstyle-synthetic",
        example=example,
        gt_doc_chunks=gt_doc,
        chunks=[c for c in retrieved if c.doc_id not in example.doc_ids],
        retrieved=_hits(retrieved),
        reranked=hits,
        context=[c.chunk_id for c in context],
        answer=answer,
    )


def real_traces(n: int, *, seed: int = 0) -> list[Trace]:
    """``n`` real-style traces cycling through :data:`REAL_KINDS`; every third one in
    Chinese."""
    kinds = list(REAL_KINDS)
    return [real_trace(i, kinds[i % len(kinds)], zh=i % 3 == 2, seed=seed) for i in range(n)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--real",
        action="store_true",
        help="long real-style traces (~300-word reasoning answers, full GT documents)",
    )
    parser.add_argument("--traces", type=int, help="default: 4000 (--real: 2000)")
    parser.add_argument("--strategy", default="ragec")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument(
        "--workers", type=int, default=0, help="processes for the parallel run (0 = CPU count)"
    )
    parser.add_argument(
        "--save", type=Path, help="write the one-process diagnoses here (JSONL), to compare runs"
    )
    parser.add_argument(
        "--baseline",
        type=Path,
        help="another checkout's src: compare one-process traces/CPU-s (alternating children)",
    )
    parser.add_argument("--rounds", type=int, default=3, help="--baseline: runs per checkout")
    parser.add_argument("--src", help=argparse.SUPPRESS)  # read before the imports (see _SRC)
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.baseline is not None:
        _compare(args)
        return
    build: Callable[..., list[Trace]] = real_traces if args.real else synthetic_traces
    expected: dict[str, str | None] = (
        REAL_KINDS if args.real else {k: k if k in _STAGES else None for k in KINDS}
    )
    target = 1000 if args.real else 2000
    n = args.traces or (2000 if args.real else 4000)

    t0 = time.perf_counter()
    traces = build(n)
    built = time.perf_counter() - t0
    diagnoser = Diagnoser("rules", args.strategy)
    asyncio.run(diagnoser.diagnose_many(traces[:50]))  # warm caches and imports
    try:  # the rules' patterns compile on first use; not a cost per trace
        from ragtriage._regex import compile_all
    except ImportError:  # an older checkout (--baseline) compiles them at import
        pass
    else:
        compile_all()
    profiler = cProfile.Profile() if args.profile else None
    if profiler is not None:
        profiler.enable()
    t0, c0 = time.perf_counter(), time.process_time()
    diagnoses = asyncio.run(diagnoser.diagnose_many(traces))
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
    if profiler is not None:
        profiler.disable()
    if args.save is not None:
        args.save.write_text("".join(d.to_json() + "\n" for d in diagnoses), encoding="utf-8")
    if args.measure:
        print("MEASURE " + json.dumps({"n": len(traces), "wall": elapsed, "cpu": cpu}))
        return
    rate = len(traces) / elapsed
    stages = Counter(d.stage.value if d.stage else "-" for d in diagnoses if d.needs_diagnosis)
    labels = Counter(d.answer_label.value if d.answer_label else "undetermined" for d in diagnoses)
    failing = [d for d in diagnoses if expected.get(d.label or "") is not None]
    agree = sum(
        1 for d in failing if d.stage is not None and d.stage.value == expected[d.label or ""]
    )
    print(f"built {len(traces)} traces in {built:.2f}s")
    if args.real:
        print(_describe_real(traces))
    print(f"answer labels: {dict(labels)}")
    print(f"stages: {dict(stages)}; stage == injected failure kind: {agree}/{len(failing)}")
    cpu_rate = len(traces) / cpu
    print(
        f"diagnosed {len(traces)} traces in {elapsed:.2f}s wall, {cpu:.2f}s CPU: "
        f"{rate:,.0f} traces/s wall in one process, {cpu_rate:,.0f} traces per CPU-second"
    )
    workers = args.workers or (os.cpu_count() or 1)
    if workers > 1 and profiler is None:
        # fresh traces (another seed), so the forked workers' inherited caches from the
        # single-process run give them no head start
        fresh = build(n, seed=1)
        # and empty caches, as in a fresh `ragtriage diagnose` (the pool would otherwise
        # spend its first tenth of a second emptying the one-process run's caches, which
        # its forked workers must not inherit; see Diagnoser._diagnose_in_processes)
        _clear_text_caches()
        t0 = time.perf_counter()
        parallel = asyncio.run(diagnoser.diagnose_many(fresh, workers=workers))
        p_elapsed = time.perf_counter() - t0
        p_rate = len(fresh) / p_elapsed
        check = asyncio.run(diagnoser.diagnose_many(fresh))
        same = [d.to_json() for d in parallel] == [d.to_json() for d in check]
        print(
            f"with {workers} worker processes (what `ragtriage diagnose` uses by default): "
            f"{len(fresh)} traces in {p_elapsed:.2f}s wall: {p_rate:,.0f} traces/s "
            f"(target >= {target:,}/s: {'OK' if p_rate >= target else 'BELOW'}; "
            f"identical to one process for all {len(fresh)}: {same})"
        )
    _breakdown(traces, diagnoses)
    if profiler is not None:
        stats = pstats.Stats(profiler)
        stats.sort_stats("cumulative").print_stats(25)
        stats.sort_stats("tottime").print_stats(25)


_STAGES = ("generation", "reranking", "retrieval", "chunking")


def _compare(args: argparse.Namespace) -> None:
    """``--baseline``: this checkout and another one, alternating, in fresh children."""
    other = args.baseline.resolve()
    if not (other / "ragtriage" / "__init__.py").is_file():
        raise SystemExit(f"{other}: no ragtriage package here (give a src folder)")
    sources = {"this": Path(_SRC).resolve(), "baseline": other}
    child = [sys.executable, str(Path(__file__).resolve()), "--measure", "--workers", "1"]
    child += ["--strategy", args.strategy]
    if args.real:
        child.append("--real")
    if args.traces:
        child += ["--traces", str(args.traces)]
    env = dict(os.environ, PYTHONHASHSEED=os.environ.get("PYTHONHASHSEED", "0"))
    env.pop("PYTHONPATH", None)
    print(
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start; "
        f"{args.rounds} rounds, alternating; one process, traces per CPU-second"
    )
    for label, src in sources.items():
        print(f"  {label}: {src}")
    rates: dict[str, list[float]] = {k: [] for k in sources}
    for r in range(args.rounds):
        order = list(sources) if r % 2 == 0 else list(reversed(sources))
        for label in order:
            done = subprocess.run(
                [*child, "--src", str(sources[label])],
                env=env,
                capture_output=True,
                text=True,
                check=False,
            )
            line = next((x for x in done.stdout.splitlines() if x.startswith("MEASURE ")), None)
            if done.returncode != 0 or line is None:
                raise SystemExit(f"{label} ({sources[label]}) failed:\n{done.stderr[-3000:]}")
            m = json.loads(line.removeprefix("MEASURE "))
            rates[label].append(m["n"] / m["cpu"])
            print(
                f"round {r + 1} {label:8s}: {m['n']} traces, {m['cpu']:.2f}s CPU, "
                f"{m['wall']:.2f}s wall: {m['n'] / m['cpu']:,.1f} traces/CPU-s"
            )
    med = {k: statistics.median(v) for k, v in rates.items()}
    print(f"load average {os.getloadavg()[0]:.2f} at end")
    print(
        f"median traces/CPU-s: this {med['this']:,.1f}, baseline {med['baseline']:,.1f}; "
        f"this/baseline = {med['this'] / med['baseline']:.2f} "
        f"({'OK' if med['this'] >= med['baseline'] else 'BELOW'}: this >= baseline)"
    )


def _describe_real(traces: list[Trace]) -> str:
    en = [len(t.answer.split()) for t in traces if t.example.language == "en"]
    zh = [len(t.answer) for t in traces if t.example.language == "zh"]
    gt = sum(len(t.gt_doc_chunks) for t in traces) / len(traces)
    return (
        f"answers: EN {sum(en) / max(1, len(en)):.0f} words, ZH {sum(zh) / max(1, len(zh)):.0f} "
        f"characters on average; {gt:.1f} GT-document chunks and 5 context chunks per trace"
    )


def _breakdown(traces: list[Trace], diagnoses: list[Diagnosis]) -> None:
    """Milliseconds per trace spent in each step, measured step by step."""
    cfg = DiagnosisConfig()
    failing = [(t, d) for t, d in zip(traces, diagnoses, strict=True) if d.stage is not None]

    def per(fn: Callable[[], object], n: int) -> float:
        t0 = time.perf_counter()
        fn()
        return (time.perf_counter() - t0) * 1e3 / max(1, n)

    ms_eval = per(lambda: [evaluate_rules(t.example, t.answer, cfg) for t in traces], len(traces))
    ms_gt = per(lambda: [gt_from_references(t) for t, _ in failing], len(failing))
    ms_cov = per(
        lambda: [rules_concept_coverage(t, d.gt_chunk_ids) for t, d in failing], len(failing)
    )
    ctxs = [
        CaseContext(
            trace=t,
            stage=d.stage,
            answer_label=AnswerLabel.INCORRECT,
            language=t.example.language or "en",
            gt_chunk_ids=tuple(d.gt_chunk_ids),
        )
        for t, d in failing
        if d.stage is not None
    ]
    ms_types = per(lambda: [rule_type_votes(c, cfg.k) for c in ctxs], len(ctxs))
    print(
        f"per trace: answer evaluation {ms_eval:.3f} ms; per failing trace: GT chunks "
        f"{ms_gt:.3f} ms, concept coverage (when needed) {ms_cov:.3f} ms, "
        f"rule type votes {ms_types:.3f} ms"
    )


if __name__ == "__main__":
    main()
