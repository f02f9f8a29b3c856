"""LLM layer: client protocol, OpenAI-compatible and scripted clients, cache, runner."""

from ragtriage.llm._base import ChatRequest, Completion, LLMClient, Message, Usage
from ragtriage.llm._cache import DEFAULT_CACHE_PATH, CachedSample, ResponseCache
from ragtriage.llm._errors import (
    LLMBadResponseError,
    LLMConnectionError,
    LLMDryRunError,
    LLMStatusError,
    is_retryable,
    parse_retry_after,
    retry_after_of,
)
from ragtriage.llm._ledger import Ledger, LedgerSummary, PurposeStats
from ragtriage.llm._openai import OpenAICompatible, client_from_config, translate_openai_error
from ragtriage.llm._parsing import (
    ParseOutcome,
    ParseStats,
    extract_label,
    parse_json_object,
    parse_model,
)
from ragtriage.llm._runner import FailureKind, LLMFailure, LLMRunner, run_sync
from ragtriage.llm._scripted import Script, ScriptedLLM, ScriptFn, ScriptItem
from ragtriage.llm._tokens import estimate_prompt_tokens, estimate_tokens

__all__ = [
    "DEFAULT_CACHE_PATH",
    "CachedSample",
    "ChatRequest",
    "Completion",
    "FailureKind",
    "LLMBadResponseError",
    "LLMClient",
    "LLMConnectionError",
    "LLMDryRunError",
    "LLMFailure",
    "LLMRunner",
    "LLMStatusError",
    "Ledger",
    "LedgerSummary",
    "Message",
    "OpenAICompatible",
    "ParseOutcome",
    "ParseStats",
    "PurposeStats",
    "ResponseCache",
    "Script",
    "ScriptFn",
    "ScriptItem",
    "ScriptedLLM",
    "Usage",
    "client_from_config",
    "estimate_prompt_tokens",
    "estimate_tokens",
    "extract_label",
    "is_retryable",
    "parse_json_object",
    "parse_model",
    "parse_retry_after",
    "retry_after_of",
    "run_sync",
    "translate_openai_error",
]
