"""Dataset loaders: ragtriage's own JSONL format, folders of text files, DragonBall
(RAGEval) and CLAPnq, with format sniffing (:func:`load_dataset`) and the bundled demo
corpus (:func:`load_demo`). Every bad input raises :class:`~ragtriage.errors.InputError`
naming file, line and field.
"""

from __future__ import annotations

from ragtriage.data._clapnq import chunk_id_of, load_clapnq, passage_doc_id
from ragtriage.data._dataset import Dataset
from ragtriage.data._dragonball import (
    is_unanswerable_text,
    load_dragonball,
    normalize_query_type,
    read_dragonball_docs,
    read_dragonball_queries,
)
from ragtriage.data._fields import normalize_language
from ragtriage.data._generic import load_demo, load_folder, load_generic, markdown_title
from ragtriage.data._sniff import FORMATS, load_dataset, sniff_directory, sniff_file

__all__ = [
    "FORMATS",
    "Dataset",
    "chunk_id_of",
    "is_unanswerable_text",
    "load_clapnq",
    "load_dataset",
    "load_demo",
    "load_dragonball",
    "load_folder",
    "load_generic",
    "markdown_title",
    "normalize_language",
    "normalize_query_type",
    "passage_doc_id",
    "read_dragonball_docs",
    "read_dragonball_queries",
    "sniff_directory",
    "sniff_file",
]
