"""Shared pytest fixtures. Other test modules may add fixtures here (small additive edits)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from llm_server import Behaviour, LocalLLMServer


@pytest.fixture
def llm_server() -> Iterator[LocalLLMServer]:
    """A real OpenAI-compatible HTTP server on 127.0.0.1 (random free port).

    Change ``llm_server.behaviour`` fields to make it slow, fail, hang, ignore ``n``...;
    ``llm_server.base_url`` is the ``/v1`` base URL, ``llm_server.chat_requests`` counts.
    """
    with LocalLLMServer(Behaviour()) as server:
        yield server
