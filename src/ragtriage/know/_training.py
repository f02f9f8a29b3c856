"""Fine-tuning data for a small seq2seq test-set generator (seed 001 §6.1, App. H):
input ``<<label>> context``, target ``question <a> answer``; and the generator that
uses such a fine-tuned model (``--generator seq2seq:PATH``, the ``train`` extra)."""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ragtriage.errors import InputError
from ragtriage.jsonl import read_records, write_jsonl
from ragtriage.know._offline_gen import Draft
from ragtriage.know._taxonomy import ANSWERABLE_LABELS
from ragtriage.records import Chunk, Document, Example

__all__ = [
    "ANSWER_SEP",
    "SOURCE_CHUNKS",
    "Seq2SeqGenerator",
    "export_training",
    "parse_generation",
    "training_pair",
]

ANSWER_SEP = "<a>"
#: the chunks a generated test set was drafted from (not chunks.jsonl: that name makes a
#: dataset directory pre-chunked for `ragtriage run`)
SOURCE_CHUNKS = "source_chunks.jsonl"


def training_pair(label: str, context: str, question: str, answer: str) -> dict[str, str]:
    return {
        "input": f"<<{label}>> {context}",
        "target": f"{question} {ANSWER_SEP} {answer}",
        "label": label,
    }


def parse_generation(text: str) -> tuple[str, str] | None:
    """``(question, answer)`` from ``question <a> answer``, else ``None``."""
    question, sep, answer = text.partition(ANSWER_SEP)
    if not sep or not question.strip() or not answer.strip():
        return None
    return question.strip(), answer.strip()


def export_training(source: Path, out: Path) -> int:
    """Training pairs from a generated test set (its examples.jsonl and documents.jsonl):
    the context is the text of the example's source chunks (their references when the
    chunk text is not recorded); unanswerable examples are skipped (App. H trains the
    three answerable types)."""
    path = source / "examples.jsonl" if source.is_dir() else source
    if not path.exists():
        raise InputError("no examples.jsonl here", path=str(path))
    chunks_path = path.parent / SOURCE_CHUNKS
    chunk_text: dict[str, str] = {}
    if chunks_path.exists():
        chunk_text = {c.chunk_id: c.text for c in read_records(chunks_path, Chunk)}
    rows = []
    for example in read_records(path, Example):
        label = example.label or ""
        if label not in ANSWERABLE_LABELS or not example.answerable:
            continue
        ids = example.metadata.get("source_chunk_ids")
        parts = (
            [chunk_text[i] for i in ids if isinstance(i, str) and i in chunk_text]
            if isinstance(ids, list)
            else []
        )
        context = "\n\n".join(parts) or "\n".join(example.references)
        if not context.strip():
            continue
        rows.append(training_pair(label, context, example.query, example.answer))
    out.parent.mkdir(parents=True, exist_ok=True)
    return write_jsonl(out, rows)


class Seq2SeqGenerator:
    """Drafts from a fine-tuned seq2seq model directory (transformers; ``train`` extra).

    Model output is data: it is parsed as ``question <a> answer``, never executed."""

    name = "seq2seq"

    def __init__(
        self, path: str, documents: Sequence[Document], *, max_new_tokens: int = 96
    ) -> None:
        try:
            transformers: Any = importlib.import_module("transformers")
        except ImportError as exc:  # pragma: no cover - depends on the extra
            raise InputError(
                "--generator seq2seq needs `pip install 'ragtriage[train]'`", field="--generator"
            ) from exc
        if not Path(path).is_dir():
            raise InputError(
                "expected a fine-tuned model directory", path=path, field="--generator"
            )
        # a local directory only: never a hub download  # offline-ok
        self.tokenizer: Any = transformers.AutoTokenizer.from_pretrained(  # offline-ok
            path, local_files_only=True
        )
        self.model: Any = transformers.AutoModelForSeq2SeqLM.from_pretrained(  # offline-ok
            path, local_files_only=True
        )
        self.max_new_tokens = max_new_tokens
        from ragtriage.know._offline_gen import OfflineGenerator

        self.offline = OfflineGenerator(documents, [])

    async def draft_list(self, chunk: Chunk, label: str) -> list[Draft]:
        from ragtriage.know._llm_gen import best_sentences
        from ragtriage.text import detect_language

        if label == "unanswerable":
            return list(self.offline.unanswerable(chunk))[:1]
        enc = self.tokenizer(
            f"<<{label}>> {chunk.text}", return_tensors="pt", truncation=True, max_length=512
        )
        ids = self.model.generate(**enc, max_new_tokens=self.max_new_tokens)
        text = self.tokenizer.decode(ids[0], skip_special_tokens=True)
        parsed = parse_generation(text)
        if parsed is None:
            return []
        question, answer = parsed
        return [
            Draft(
                question=question,
                answer=answer,
                label=label,
                references=best_sentences(chunk.text, answer, 1 if label == "fact_single" else 2),
                chunk_ids=(chunk.chunk_id,),
                doc_id=chunk.doc_id,
                language="zh" if detect_language(chunk.text[:2000]) == "zh" else "en",
                generator=self.name,
                context=chunk.text,
            )
        ]
