"""ragtriage: find out why a RAG answer is wrong."""

from typing import Any

__version__ = "0.1.0"

__all__ = ["__version__", "from_frame", "to_frame"]


def __getattr__(name: str) -> Any:
    # pandas frames of records (ragtriage.integrations): imported on first use, so
    # ``import ragtriage`` stays light
    if name in ("to_frame", "from_frame"):
        from ragtriage import integrations

        return getattr(integrations, name)
    raise AttributeError(f"module 'ragtriage' has no attribute {name!r}")
