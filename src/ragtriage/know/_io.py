"""Shared plumbing of the know-your-data commands: loading a dataset, opening the LLM
runner (cache, dry run) and summarising what the LLM cost."""

from __future__ import annotations

from pathlib import Path

from ragtriage.config import LLMConfig
from ragtriage.data import Dataset
from ragtriage.errors import ConfigError
from ragtriage.llm import LedgerSummary, LLMRunner

__all__ = ["ledger_line", "load_data", "open_runner"]


def load_data(data: str, fmt: str = "auto", *, language: str | None = None) -> Dataset:
    """``demo`` (the bundled corpus) or a path any loader reads."""
    from ragtriage.data import load_dataset, load_demo

    if data == "demo":
        return load_demo()
    return load_dataset(data, fmt, language=language)


def open_runner(
    cfg: LLMConfig,
    *,
    dry_run: bool = False,
    no_cache: bool = False,
    cache: Path | None = None,
    what: str = "the LLM labeller",
) -> LLMRunner:
    """The runner over the configured endpoint; a clear error when none is configured."""
    cfg = cfg.with_env()
    if not cfg.configured:
        raise ConfigError(
            f"{what} needs an OpenAI-compatible endpoint: set RAGTRIAGE_LLM_BASE_URL and "
            "RAGTRIAGE_LLM_MODEL, or llm.base_url / llm.model in --config",
            field="llm.base_url",
        )
    return LLMRunner.from_config(cfg, cache_path=cache, use_cache=not no_cache, dry_run=dry_run)


def ledger_line(ledger: LedgerSummary, *, estimate: bool) -> str:
    """One line: the dry-run estimate, or what this session's LLM calls cost."""
    t = ledger.total
    if estimate:
        return (
            f"dry run: about {t.estimated_calls} LLM calls, {t.estimated_prompt_tokens} prompt "
            f"+ <= {t.estimated_completion_tokens} completion tokens; {t.cache_hits} "
            "sample(s) already cached; nothing called or written"
        )
    return (
        f"LLM: {t.calls} calls, {t.cache_hits} cached samples, {t.prompt_tokens} prompt + "
        f"{t.completion_tokens} completion tokens, {t.failures} failed request(s)"
    )
