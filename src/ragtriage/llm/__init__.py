"""LLM layer: client protocol, OpenAI-compatible and scripted clients, cache, runner."""

# The submodules load on first use of one of their names: the rules judge needs the
# request types and the runner, not the OpenAI-compatible client, the scripted client or
# batch mode (benchmarks/startup.py). A name added to __all__ goes into _EXPORTS too
# (tests/test_startup.py checks).
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ragtriage import _lazy

if TYPE_CHECKING:
    from ragtriage.llm._base import ChatRequest, Completion, LLMClient, Message, Usage
    from ragtriage.llm._batch import (
        BatchCollector,
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
        BatchNextRound,
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

#: Public name -> the submodule that defines it (loaded on first use of the name).
_EXPORTS: dict[str, str] = {
    "ChatRequest": "_base",
    "Completion": "_base",
    "LLMClient": "_base",
    "Message": "_base",
    "Usage": "_base",
    "BatchCollector": "_batch",
    "BatchNextRound": "_errors",
    "BatchSession": "_batch",
    "ImportStats": "_batch",
    "import_outputs": "_batch",
    "read_output_file": "_batch",
    "write_requests": "_batch",
    "DEFAULT_CACHE_PATH": "_cache",
    "BatchFailureRecord": "_cache",
    "CachedSample": "_cache",
    "ResponseCache": "_cache",
    "LLMBadResponseError": "_errors",
    "LLMBatchFailedError": "_errors",
    "LLMBatchPendingError": "_errors",
    "LLMConnectionError": "_errors",
    "LLMDryRunError": "_errors",
    "LLMStatusError": "_errors",
    "is_retryable": "_errors",
    "parse_retry_after": "_errors",
    "retry_after_of": "_errors",
    "BATCH_PRICE_FACTOR": "_ledger",
    "Ledger": "_ledger",
    "LedgerSummary": "_ledger",
    "PurposeStats": "_ledger",
    "OpenAICompatible": "_openai",
    "client_from_config": "_openai",
    "translate_openai_error": "_openai",
    "ParseOutcome": "_parsing",
    "ParseStats": "_parsing",
    "extract_label": "_parsing",
    "parse_json_object": "_parsing",
    "parse_model": "_parsing",
    "FailureKind": "_runner",
    "LLMFailure": "_runner",
    "LLMRunner": "_runner",
    "run_sync": "_runner",
    "Script": "_scripted",
    "ScriptedLLM": "_scripted",
    "ScriptFn": "_scripted",
    "ScriptItem": "_scripted",
    "estimate_prompt_tokens": "_tokens",
    "estimate_tokens": "_tokens",
}


def __getattr__(name: str) -> Any:
    return _lazy.load(__name__, _EXPORTS, globals(), name)


def __dir__() -> list[str]:
    return _lazy.names(_EXPORTS, globals())


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
