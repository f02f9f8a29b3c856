"""The in-memory dataset: documents, examples and, for pre-chunked corpora, chunks."""

from __future__ import annotations

from dataclasses import dataclass

from ragtriage.records import Chunk, Document, Example

__all__ = ["Dataset"]


@dataclass(frozen=True)
class Dataset:
    """A loaded corpus with its questions.

    ``prechunked`` is ``None`` unless the source comes already chunked (CLAPnq
    passages, a generic ``chunks.jsonl``); then every chunk's text equals
    ``document.text[start:end]`` and ``Example.gt_chunk_ids`` refer to these chunks.
    ``format`` names the loader that produced it: ``generic``, ``folder``,
    ``dragonball`` or ``clapnq``.
    """

    name: str
    documents: tuple[Document, ...]
    examples: tuple[Example, ...]
    prechunked: tuple[Chunk, ...] | None = None
    format: str = "generic"

    def document_map(self) -> dict[str, Document]:
        """Documents by id."""
        return {d.doc_id: d for d in self.documents}

    def example_map(self) -> dict[str, Example]:
        """Examples by id."""
        return {e.example_id: e for e in self.examples}

    def chunks_of(self, doc_id: str) -> list[Chunk]:
        """Pre-chunked chunks of one document (empty when not pre-chunked)."""
        return [c for c in self.prechunked or () if c.doc_id == doc_id]
