"""Shared by the know-your-data tests: run the CLI, keep the LLM environment unset."""

from __future__ import annotations

import pytest

from ragtriage.cli import main


@pytest.fixture(autouse=True)
def no_llm_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No endpoint from the developer's environment leaks into a test."""
    for var in ("RAGTRIAGE_LLM_BASE_URL", "RAGTRIAGE_LLM_MODEL", "RAGTRIAGE_LLM_API_KEY"):
        monkeypatch.delenv(var, raising=False)


def cli(*args: str) -> int:
    """``ragtriage ARGS`` in-process; the exit code."""
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    code = exc.value.code
    return 0 if code is None else int(code)
