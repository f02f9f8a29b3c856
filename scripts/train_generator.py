"""LoRA fine-tuning of a small seq2seq Q&A generator (seed 001 §6.1, App. H).

    pip install 'ragtriage[train]'
    ragtriage testset DOCS --out gen/ --limit 2000          # (LLM mode for good targets)
    ragtriage testset export-training gen/ --out train.jsonl
    python scripts/train_generator.py train.jsonl --base /path/to/flan-t5-large --out model/
    ragtriage testset DOCS --out set2/ --generator seq2seq:model/

``--base tiny`` trains a randomly initialised 2-layer T5 built in code (no download): a
smoke test of the whole path on CPU in seconds. A real base model is a local directory
(or a Hugging Face name, which transformers downloads: your choice, never a default).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ragtriage.know._lora import tiny_t5, train_lora


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("train", type=Path, help="export-training JSONL ({input, target, label})")
    ap.add_argument("--base", default="tiny", help="model directory, or 'tiny'")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--rank", type=int, default=16)
    ap.add_argument("--alpha", type=int, default=32)
    ap.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    ap.add_argument("--targets", default="q,k,v,o,wi,wo", help="LoRA target modules")
    args = ap.parse_args()
    pairs = [
        json.loads(line) for line in args.train.read_text(encoding="utf-8").splitlines() if line
    ]
    if args.base == "tiny":
        model, tokenizer = tiny_t5([p["input"] for p in pairs] + [p["target"] for p in pairs])
    else:
        from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

        model = AutoModelForSeq2SeqLM.from_pretrained(args.base)
        tokenizer = AutoTokenizer.from_pretrained(args.base)
    result = train_lora(
        pairs,
        model,
        tokenizer,
        steps=args.steps,
        batch_size=args.batch_size,
        lr=args.lr,
        rank=args.rank,
        alpha=args.alpha,
        target_modules=args.targets.split(","),
        out=args.out,
    )
    first, last = result.losses[:10], result.losses[-10:]
    print(
        f"trained {result.trainable:,} of {result.total:,} parameters for {len(result.losses)} steps; "
        f"loss {sum(first) / len(first):.3f} -> {sum(last) / len(last):.3f}; saved to {result.saved_to}"
    )


if __name__ == "__main__":
    main()
