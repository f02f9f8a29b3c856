"""LLM layer: client protocol, OpenAI-compatible and scripted clients, cache, runner."""

from ragtriage.llm._base import ChatRequest, Completion, LLMClient, Message, Usage

__all__ = ["ChatRequest", "Completion", "LLMClient", "Message", "Usage"]
