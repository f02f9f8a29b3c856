"""Generation: token budget, ordering, prompts, citations and the backends."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from ragtriage.config import GenerationConfig, LLMConfig
from ragtriage.errors import ConfigError, ModelUnavailableError
from ragtriage.generation import (
    ABSTAIN_ANSWERS,
    ExtractiveGenerator,
    OpenAIGenerator,
    build_prompt,
    fit_budget,
    make_generator,
    order_context,
    parse_citations,
    prompt_variant_for,
    split_answer,
)
from ragtriage.llm import ChatRequest, LLMRunner, ScriptedLLM
from ragtriage.records import Chunk
from ragtriage.text import count_tokens


def _chunk(cid: str, text: str, doc: str = "d1", index: int = 0) -> Chunk:
    return Chunk(chunk_id=cid, doc_id=doc, text=text, start=0, end=len(text), index=index)


CTX = [
    _chunk("a#0", "Acme Corp was founded in 1999 in Springfield. It makes anvils.", "a"),
    _chunk("b#0", "In 2019 Acme Corp appointed Jane Roe as chief executive officer.", "b"),
    _chunk("c#0", "Springfield is a town with a river and a bridge.", "c"),
]


# ------------------------------------------------------------------ budget, ordering


def test_fit_budget_drops_whole_chunks_from_the_lowest_ranked() -> None:
    sizes = [count_tokens(c.text) + 6 for c in CTX]
    budget = sizes[0] + sizes[1]  # room for exactly two
    kept, dropped = fit_budget(CTX, budget)
    assert [c.chunk_id for c in kept] == ["a#0", "b#0"]
    assert [c.chunk_id for c in dropped] == ["c#0"]
    kept, dropped = fit_budget(CTX, budget - 1)
    assert [c.chunk_id for c in kept] == ["a#0"]
    assert [c.chunk_id for c in dropped] == ["b#0", "c#0"]


def test_fit_budget_drops_a_top_chunk_that_alone_is_too_long() -> None:
    big = _chunk("big", "word " * 400)
    kept, dropped = fit_budget([big], 50)
    assert kept == [] and dropped == [big]


def test_fit_budget_keeps_everything_that_fits() -> None:
    kept, dropped = fit_budget(CTX, 10_000)
    assert kept == CTX and dropped == []


def test_order_context_edges_puts_the_best_at_both_ends() -> None:
    chunks = [_chunk(str(i), f"t{i}") for i in range(1, 6)]
    assert [c.chunk_id for c in order_context(chunks, "edges")] == ["1", "3", "5", "4", "2"]
    assert [c.chunk_id for c in order_context(chunks[:4], "edges")] == ["1", "3", "4", "2"]
    assert [c.chunk_id for c in order_context(chunks, "score")] == ["1", "2", "3", "4", "5"]
    assert order_context([], "edges") == []
    with pytest.raises(ConfigError):
        order_context(chunks, "random")


# ------------------------------------------------------------------ prompts, parsing


def test_prompt_variant_auto_follows_language() -> None:
    assert prompt_variant_for("auto", "en") == "default"
    assert prompt_variant_for("auto", "zh") == "zh_keypoints"
    assert prompt_variant_for("auto", "zh-CN") == "zh_keypoints"
    assert prompt_variant_for("default", "zh") == "default"
    assert prompt_variant_for("zh_keypoints", "en") == "zh_keypoints"


def test_build_prompt_numbers_context_in_prompt_order() -> None:
    parts = build_prompt("default", "Who leads Acme?", CTX)
    assert parts.completion.rstrip().endswith("Answer:")
    assert "Question: Who leads Acme?" in parts.completion
    assert "{document id: 2, content: In 2019 Acme Corp appointed" in parts.completion
    assert [m.role for m in parts.messages] == ["system", "user", "assistant", "user"]
    assert "{document id: 3, content: Springfield is a town" in parts.messages[-1].content
    assert "\n" in parts.stop and "Question:" in parts.stop
    zh = build_prompt("zh_keypoints", "谁是首席执行官？", CTX[:1])
    assert zh.completion.rstrip().endswith("Key Points:")
    assert "问题：谁是首席执行官？" in zh.messages[-1].content
    assert "Key Points" in zh.messages[0].content
    empty = build_prompt("default", "q?", [])
    assert "(no context)" in empty.messages[-1].content


def test_parse_citations_forms() -> None:
    labels = {"1": "a#0", "2": "b#0", "3": "c#0", "a": "a#0", "b#0": "b#0"}
    assert parse_citations("Jane Roe. [2]", labels) == ["b#0"]
    assert parse_citations("Yes [3][1] and again [3]", labels) == ["c#0", "a#0"]
    assert parse_citations("Both [1, 2].", labels) == ["a#0", "b#0"]
    assert parse_citations("是的【2】，还有［1］。", labels) == ["b#0", "a#0"]
    assert parse_citations("See [document id: 3]", labels) == ["c#0"]
    assert parse_citations("See [doc 2] (document id: 1)", labels) == ["b#0", "a#0"]
    assert parse_citations("chunk [b#0]", labels) == ["b#0"]
    assert parse_citations("nothing [7] or [x]", labels) == []
    assert parse_citations("I don't know.", labels) == []


def test_split_answer_keypoints_and_plain() -> None:
    raw = "Key Points:\n1. 收入为12亿元。[1]\nAnswer:\n收入为12亿元。[2]"
    answer, notes = split_answer(raw)
    assert answer == "收入为12亿元。[2]"
    assert notes.startswith("Key Points:")
    assert split_answer("Answer: Paris. [1]") == ("Paris. [1]", "")
    looped = "1. A [1]\nAnswer:\nA is it. [1]\nmore\n2. A\nAnswer:\nA again"
    assert split_answer(looped) == ("A is it. [1]\nmore\n2. A", "1. A [1]")
    assert split_answer(looped, first_line=True) == ("A is it. [1]", "1. A [1]")
    assert split_answer("1. x\n2. y", first_line=True) == ("x", "")
    assert split_answer("  Paris. [1] ") == ("Paris. [1]", "")
    assert (
        split_answer("Key Points:\n1. only points [1]\n2、第二点")[0] == "only points [1]\n第二点"
    )


# ------------------------------------------------------------------------ extractive


async def test_extractive_answers_with_the_best_covering_sentence() -> None:
    gen = ExtractiveGenerator(GenerationConfig(backend="extractive"))
    out = await gen.generate("Who did Acme Corp appoint as chief executive?", CTX, language="en")
    assert out.answer.startswith("In 2019 Acme Corp appointed Jane Roe")
    assert out.answer.endswith("[2]")
    assert out.citations == ("b#0",)
    assert out.context_ids == ("a#0", "b#0", "c#0")
    assert out.dropped_ids == ()
    assert out.prompt_variant == "default"
    assert out.calls == 0


async def test_extractive_abstains_when_the_context_does_not_cover_the_query() -> None:
    gen = ExtractiveGenerator(GenerationConfig(backend="extractive"))
    out = await gen.generate("What is the boiling point of mercury?", CTX, language="en")
    assert out.answer == ABSTAIN_ANSWERS["en"]
    assert out.citations == ()
    none = await gen.generate("Who leads Acme?", [], language="en")
    assert none.answer == ABSTAIN_ANSWERS["en"]


async def test_extractive_matches_inflected_words_and_needs_over_a_quarter() -> None:
    gen = ExtractiveGenerator(GenerationConfig(backend="extractive"))
    ctx = [_chunk("m#0", "Gamma Foods acquired the bakery chain in 2020.", "m")]
    out = await gen.generate("Which group acquires bakeries?", ctx, language="en")
    # acquires/acquired and bakeries/bakery... "bakeri" vs "bakery" differ: 1 of 3 stems
    assert out.citations == ("m#0",)
    weak = await gen.generate(
        "Which orchestra, conductor or bakery won prizes?", ctx, language="en"
    )
    assert weak.answer == ABSTAIN_ANSWERS["en"]  # 1 of 5 content words: not enough
    strict = ExtractiveGenerator(GenerationConfig(backend="extractive"), min_coverage=0.5)
    assert (
        await strict.generate("Which group acquires bakeries?", ctx, language="en")
    ).citations == ()
    with pytest.raises(ConfigError):
        ExtractiveGenerator(GenerationConfig(backend="extractive"), min_coverage=1.0)


async def test_extractive_chinese() -> None:
    ctx = [
        _chunk("z#0", "该公司成立于2005年。2021年，公司实现营业收入12.5亿元。", "z"),
        _chunk("z#1", "公司总部位于上海，员工约三千人。", "z", 1),
    ]
    gen = ExtractiveGenerator(GenerationConfig(backend="extractive"))
    out = await gen.generate("公司2021年的营业收入是多少？", ctx, language="zh")
    assert "12.5亿元" in out.answer and out.citations == ("z#0",)
    assert out.prompt_variant == "zh_keypoints"
    miss = await gen.generate("董事长的爱好是什么？", ctx, language="zh")
    assert miss.answer == ABSTAIN_ANSWERS["zh"]


async def test_extractive_budget_and_edges_ordering_are_recorded() -> None:
    chunks = [_chunk(f"k{i}", f"Sentence number {i} about topic {i}.", "k", i) for i in range(5)]
    per = count_tokens(chunks[0].text) + 6
    cfg = GenerationConfig(backend="extractive", ordering="edges", max_context_tokens=per * 4)
    out = await ExtractiveGenerator(cfg).generate("topic 2", chunks, language="en")
    assert out.dropped_ids == ("k4",)
    assert out.context_ids == ("k0", "k2", "k3", "k1")
    # the citation label is the chunk's position in the prompt, not its rank
    assert out.citations == ("k2",) and out.answer.endswith("[2]")


# --------------------------------------------------------------------------- openai


def _runner(script: object) -> tuple[LLMRunner, ScriptedLLM]:
    llm = ScriptedLLM(script)  # type: ignore[arg-type]
    return LLMRunner(llm, LLMConfig(max_retries=0)), llm


async def test_openai_generator_parses_answer_and_citations() -> None:
    runner, llm = _runner("Answer: Jane Roe. [2]")
    gen = OpenAIGenerator(GenerationConfig(backend="openai", max_tokens=64), runner, model="m")
    out = await gen.generate("Who is the CEO of Acme?", CTX, language="en")
    assert out.answer == "Jane Roe. [2]"
    assert out.citations == ("b#0",)
    assert out.calls == 1 and out.prompt_tokens > 0 and out.completion_tokens > 0
    (request,) = llm.requests
    assert isinstance(request, ChatRequest)
    assert request.temperature == 0.0 and request.max_tokens == 64 and request.model == "m"
    assert request.messages[0].role == "system" and "I don't know" in request.messages[0].content
    assert "Who is the CEO of Acme?" in request.messages[-1].content
    assert "[user]" in out.prompt


async def test_openai_generator_chinese_keypoints() -> None:
    reply = "Key Points:\n1. 营业收入为12.5亿元。[1]\nAnswer:\n2021年营业收入为12.5亿元。"
    runner, llm = _runner(reply)
    gen = OpenAIGenerator(GenerationConfig(backend="openai", max_tokens=64), runner)
    ctx = [_chunk("z#0", "2021年，公司实现营业收入12.5亿元。", "z")]
    out = await gen.generate("公司2021年的营业收入是多少？", ctx, language="zh")
    assert out.prompt_variant == "zh_keypoints"
    assert out.answer == "2021年营业收入为12.5亿元。"
    # no citation in the final answer: the key points' citations are used
    assert out.citations == ("z#0",)
    assert llm.requests[0].max_tokens >= 384  # room for key points + answer


async def test_openai_generator_edges_order_and_budget_reach_the_prompt() -> None:
    runner, llm = _runner("I don't know.")
    per = count_tokens(CTX[0].text) + 6
    cfg = GenerationConfig(backend="openai", ordering="edges", max_context_tokens=per * 2 + 3)
    out = await OpenAIGenerator(cfg, runner).generate("q?", CTX, language="en")
    assert out.dropped_ids == ("c#0",)
    user = llm.requests[0].messages[-1].content
    assert "Springfield is a town" not in user
    assert out.answer == "I don't know." and out.citations == ()


def test_make_generator_backends() -> None:
    assert make_generator(GenerationConfig(backend="extractive")).name == "extractive"
    with pytest.raises(ConfigError, match=r"llm\.base_url"):
        make_generator(GenerationConfig(backend="openai"))
    runner, _ = _runner("x")
    assert make_generator(GenerationConfig(backend="openai"), llm=runner).name == "openai"


_HAS_LLAMA = importlib.util.find_spec("llama_cpp") is not None


@pytest.mark.skipif(_HAS_LLAMA, reason="llama_cpp is installed")
def test_llama_cpp_missing_extra_names_the_install() -> None:
    with pytest.raises(ModelUnavailableError, match=r"ragtriage\[local\]"):
        make_generator(GenerationConfig(backend="llama_cpp"))


_LLAMA_PROBE = """
import asyncio, sys
from pathlib import Path
from ragtriage.config import GenerationConfig
from ragtriage.generation import make_generator
from ragtriage.records import Chunk
text = "In 2019 Acme Corp appointed Jane Roe as chief executive officer."
ctx = [Chunk(chunk_id="c", doc_id="d", text=text, start=0, end=len(text), index=0)]
cfg = GenerationConfig(backend="llama_cpp", max_tokens=8, n_ctx=512)
gen = make_generator(cfg, model_dir=Path(sys.argv[1]))
print(asyncio.run(gen.generate("Who leads Acme?", ctx, language="en")).answer)
"""


@pytest.mark.skipif(not _HAS_LLAMA, reason="llama_cpp (the 'local' extra) is not installed")
async def test_llama_cpp_generates_deterministically(tmp_path: Path) -> None:
    import subprocess
    import sys

    from ragtriage.generation import default_model_dir

    model_dir = default_model_dir() if default_model_dir().exists() else tmp_path
    # first in a child process: a llama.cpp build using instructions this CPU/VM does not
    # allow (e.g. AMX under -march=native) dies with SIGILL, which must fail this test,
    # not kill the whole test session
    probe = subprocess.run(
        [sys.executable, "-c", _LLAMA_PROBE, str(model_dir)],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert probe.returncode == 0, (
        f"llama_cpp generation crashed (exit {probe.returncode}); if it is a signal 4 "
        "(illegal instruction), rebuild llama-cpp-python with CMAKE_ARGS="
        "'-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON'\n" + probe.stderr[-2000:]
    )
    assert probe.stdout.strip()
    cfg = GenerationConfig(backend="llama_cpp", max_tokens=24, n_ctx=1024)
    gen = make_generator(cfg, model_dir=model_dir)
    first = await gen.generate("Who is the chief executive of Acme Corp?", CTX, language="en")
    second = await gen.generate("Who is the chief executive of Acme Corp?", CTX, language="en")
    assert first.answer == second.answer
    assert first.answer.strip()
    assert first.prompt.rstrip().endswith("Answer:")
    assert first.prompt_tokens > 0 and first.calls == 1


async def test_extractive_multi_answers_every_part_of_the_question() -> None:
    gen = make_generator(GenerationConfig(backend="extractive_multi"))
    assert gen.name == "extractive_multi"
    ctx = [
        _chunk("h#0", "# Acme Corp annual report. Acme Corp sells widgets.", "h"),
        _chunk("f#0", "Acme Corp was founded by Ann Lee. Acme Corp is based in Oslo.", "f"),
        _chunk("y#0", "Acme Corp opened its first office in 1999.", "y"),
    ]
    out = await gen.generate("Who founded Acme Corp, and in what year?", ctx, language="en")
    # two sentences: the founder and the (digit-bearing) year; never the Markdown header
    assert "Ann Lee" in out.answer and "1999" in out.answer
    assert "#" not in out.answer and "Oslo" not in out.answer
    assert out.citations == ("f#0", "y#0")
    assert out.model == "extractive_multi"
    miss = await gen.generate("What is the boiling point of mercury?", ctx, language="en")
    assert miss.answer == ABSTAIN_ANSWERS["en"] and miss.citations == ()


async def test_extractive_multi_chinese_quantity_question() -> None:
    gen = make_generator(GenerationConfig(backend="extractive_multi"))
    ctx = [
        _chunk("z#0", "华盛公司总部位于上海。华盛公司二〇二一年营业收入为12亿元。", "z"),
        _chunk("w#0", "华盛公司的董事长是李明。", "w"),
    ]
    out = await gen.generate("华盛公司营业收入是多少？", ctx, language="zh")
    assert "12亿元" in out.answer and out.citations == ("z#0",)
    none = await gen.generate("火星的温度是多少？", ctx, language="zh")
    assert none.answer == ABSTAIN_ANSWERS["zh"]
