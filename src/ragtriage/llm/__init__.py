"""LLM layer: client protocol, OpenAI-compatible and scripted clients, cache, runner."""

from ragtriage.llm._base import ChatRequest, Completion, LLMClient, Message, Usage
from ragtriage.llm._batch import (
    BatchCollector,
    BatchNextRound,
    BatchSession,
    ImportStats,
    import_outputs,
    read_output_file,
    write_requests,
)
from ragtriage.llm._cache import (
    DEFAULT_CACHE_PATH,
    BatchFailureRecord,
    CachedSample,
    ResponseCache,
)
from ragtriage.llm._errors import (
    LLMBadResponseError,
    LLMBatchFailedError,
    LLMBatchPendingError,
    LLMConnectionError,
    LLMDryRunError,
    LLMStatusError,
    is_retryable,
    parse_retry_after,
    retry_after_of,
)
from ragtriage.llm._ledger import BATCH_PRICE_FACTOR, Ledger, LedgerSummary, PurposeStats
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
    "BATCH_PRICE_FACTOR",
    "DEFAULT_CACHE_PATH",
    "BatchCollector",
    "BatchFailureRecord",
    "BatchNextRound",
    "BatchSession",
    "CachedSample",
    "ChatRequest",
    "Completion",
    "FailureKind",
    "ImportStats",
    "LLMBadResponseError",
    "LLMBatchFailedError",
    "LLMBatchPendingError",
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
    "import_outputs",
    "is_retryable",
    "parse_json_object",
    "parse_model",
    "parse_retry_after",
    "read_output_file",
    "retry_after_of",
    "run_sync",
    "translate_openai_error",
    "write_requests",
]
