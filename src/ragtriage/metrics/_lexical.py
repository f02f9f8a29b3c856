"""End-to-end answer metrics against the ground-truth answer: exact match, token F1
(words for English, characters for Chinese) and ROUGE-L (LCS F-measure)."""

from __future__ import annotations

from collections import Counter

from ragtriage.text import normalize, word_tokens

__all__ = ["exact_match", "has_tokens", "rouge_l", "token_f1"]

_PUNCT = frozenset(".,;:!?\"'()[]{}。，；：！？、“”‘’（）《》【】-—")


def _tokens(text: str) -> list[str]:
    return [t for t in word_tokens(text) if t not in _PUNCT and t.strip()]


def has_tokens(text: str) -> bool:
    """Whether ``text`` has a token the overlap scores compare (punctuation is none)."""
    return bool(_tokens(text))


def exact_match(prediction: str, reference: str) -> float:
    """1.0 when the normalised token sequences are equal, else 0.0."""
    return 1.0 if _tokens(normalize(prediction)) == _tokens(normalize(reference)) else 0.0


def token_f1(prediction: str, reference: str) -> float | None:
    """Bag-of-tokens F1 (SQuAD style); 0 when only the reference has tokens (an empty
    answer overlaps nothing); ``None`` when the reference has none."""
    p, r = Counter(_tokens(prediction)), Counter(_tokens(reference))
    if not r:
        return None
    if not p:
        return 0.0
    common = sum((p & r).values())
    if common == 0:
        return 0.0
    prec, rec = common / sum(p.values()), common / sum(r.values())
    return 2 * prec * rec / (prec + rec)


def _lcs(a: list[str], b: list[str]) -> int:
    """Length of the longest common subsequence, bit-parallel (Allison-Dix / Hyyrö):
    bit ``j`` of ``v`` stands for ``b[j]``; one big-int step per token of ``a`` instead
    of a row of ``len(b)`` Python steps. Exact: the same integer as the dynamic programme."""
    if not a or not b:
        return 0
    masks: dict[str, int] = {}
    for j, y in enumerate(b):
        masks[y] = masks.get(y, 0) | (1 << j)
    full = (1 << len(b)) - 1
    v = full
    for x in a:
        m = masks.get(x)
        if m is None:
            continue
        u = v & m
        v = ((v + u) | (v - u)) & full
    return len(b) - v.bit_count()


def rouge_l(prediction: str, reference: str) -> float | None:
    """ROUGE-L F1 over tokens; 0 for an answer without tokens, ``None`` when the reference
    has none."""
    p, r = _tokens(prediction), _tokens(reference)
    if not r:
        return None
    if not p:
        return 0.0
    lcs = _lcs(p, r)
    if lcs == 0:
        return 0.0
    prec, rec = lcs / len(p), lcs / len(r)
    return 2 * prec * rec / (prec + rec)
