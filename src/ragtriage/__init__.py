"""ragtriage: find out why a RAG answer is wrong."""

__version__ = "0.1.0"

__all__ = ["__version__"]
