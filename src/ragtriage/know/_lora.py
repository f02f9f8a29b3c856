"""LoRA fine-tuning of a seq2seq test-set generator (seed 001 §6.1, App. H): FLAN-T5-large
class models in practice, a tiny randomly initialised T5 built in code for tests.

Needs the ``train`` extra (torch, transformers, peft); nothing here is imported by the
core package. Inputs are ``<<label>> context``, targets ``question <a> answer``; the
``<a>`` separator is added to the tokenizer when missing (App. H).
"""

from __future__ import annotations

import importlib
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragtriage.errors import ModelUnavailableError
from ragtriage.know._training import ANSWER_SEP

__all__ = ["LoraResult", "tiny_t5", "train_lora"]


def _train_modules() -> tuple[Any, Any, Any]:
    """torch, transformers and peft (the ``train`` extra), untyped on purpose: the core
    type check must pass without them installed."""
    try:
        return tuple(importlib.import_module(m) for m in ("torch", "transformers", "peft"))  # type: ignore[return-value]
    except ImportError as exc:
        raise ModelUnavailableError(
            "LoRA training needs `pip install 'ragtriage[train]'` (torch, transformers, peft)"
        ) from exc


@dataclass(frozen=True)
class LoraResult:
    losses: tuple[float, ...]
    trainable: int
    total: int
    saved_to: str | None


def tiny_t5(texts: Sequence[str], *, d_model: int = 32, seed: int = 0) -> tuple[Any, Any]:
    """A randomly initialised 2-layer T5 and a word-level tokenizer trained on ``texts``
    (no download)."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    torch, tf, _ = _train_modules()
    torch.manual_seed(seed)
    raw = Tokenizer(models.WordLevel(unk_token="<unk>"))
    raw.pre_tokenizer = pre_tokenizers.Whitespace()
    specials = ["<pad>", "</s>", "<unk>", ANSWER_SEP]
    raw.train_from_iterator(texts, trainers.WordLevelTrainer(special_tokens=specials))
    tokenizer = tf.PreTrainedTokenizerFast(
        tokenizer_object=raw, pad_token="<pad>", eos_token="</s>", unk_token="<unk>"
    )
    tokenizer.add_special_tokens({"additional_special_tokens": [ANSWER_SEP]})
    config = tf.T5Config(
        vocab_size=len(tokenizer),
        d_model=d_model,
        d_ff=2 * d_model,
        d_kv=d_model // 2,
        num_layers=2,
        num_decoder_layers=2,
        num_heads=2,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        decoder_start_token_id=tokenizer.pad_token_id,
    )
    return tf.T5ForConditionalGeneration(config), tokenizer


def train_lora(
    pairs: Sequence[Mapping[str, str]],
    model: Any,
    tokenizer: Any,
    *,
    steps: int = 100,
    batch_size: int = 8,
    lr: float = 1e-3,
    rank: int = 8,
    alpha: int = 16,
    target_modules: Sequence[str] = ("q", "v"),
    max_length: int = 512,
    seed: int = 0,
    threads: int | None = None,
    out: str | Path | None = None,
) -> LoraResult:
    """Fine-tune ``model`` with LoRA on ``pairs`` ({"input", "target"}) for ``steps``
    optimizer steps; the merged model and tokenizer are saved to ``out`` (a directory
    ``--generator seq2seq:PATH`` can load)."""
    torch, _, peft = _train_modules()
    if not pairs:
        raise ValueError("no training pairs")
    if threads is not None:  # on a busy machine torch's default threads oversubscribe
        torch.set_num_threads(threads)
    if ANSWER_SEP not in tokenizer.get_vocab():
        tokenizer.add_special_tokens({"additional_special_tokens": [ANSWER_SEP]})
        model.resize_token_embeddings(len(tokenizer))
    torch.manual_seed(seed)
    rng = random.Random(seed)
    peft_model = peft.get_peft_model(
        model,
        peft.LoraConfig(
            task_type=peft.TaskType.SEQ_2_SEQ_LM,
            r=rank,
            lora_alpha=alpha,
            lora_dropout=0.0,
            target_modules=list(target_modules),
        ),
    )
    trainable = sum(p.numel() for p in peft_model.parameters() if p.requires_grad)
    total = sum(p.numel() for p in peft_model.parameters())
    optimizer = torch.optim.AdamW([p for p in peft_model.parameters() if p.requires_grad], lr=lr)
    peft_model.train()
    losses: list[float] = []
    order = list(range(len(pairs)))
    for _ in range(steps):
        batch = [pairs[i] for i in rng.sample(order, min(batch_size, len(order)))]
        enc = tokenizer(
            [p["input"] for p in batch],
            padding=True,
            truncation=True,
            max_length=max_length,
            return_tensors="pt",
        )
        labels = tokenizer(
            [p["target"] for p in batch],
            padding=True,
            truncation=True,
            max_length=max_length,
            return_tensors="pt",
        ).input_ids
        labels[labels == tokenizer.pad_token_id] = -100
        loss = peft_model(**enc, labels=labels).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(float(loss.detach()))
    saved = None
    if out is not None:
        merged = peft_model.merge_and_unload()
        merged.save_pretrained(str(out))
        tokenizer.save_pretrained(str(out))
        saved = str(out)
    return LoraResult(tuple(losses), trainable, total, saved)
