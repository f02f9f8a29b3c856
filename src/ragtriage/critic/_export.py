"""Training data for a critic model (seed 004, §3.2) in the formats TRL expects.

* **SFT** (``SFTTrainer``, conversational format): ``{"messages": [system, user,
  assistant]}`` — the user turn is the Prompt D input (reference-free, as the critic is
  used), the assistant turn the critic JSON of the label; balanced by downsampling the
  larger of correct/error (seeded).
* **DPO** (``DPOTrainer``, conversational preference format): ``{"prompt": [system,
  user], "chosen": [assistant], "rejected": [assistant], "level"}``: one pair per sample
  whose chosen and rejected differ in the judgement. ``level`` ``critic-mistake``: the
  rejected is the reference-free critic's own wrong verdict on the same prompt (a real
  hard negative); ``coarse``: the opposite judgement (for a correct answer an Error with
  the tags of a random tier-2 type). Pairs that differed only in tags (the paper's fine
  level) are not written: with one analysis for both sides they taught nothing about the
  judgement (issue 29).

The labels come from the gold-answer rules diagnosis, but the prompt has no gold answer,
so the analysis the model is trained to write must be one it can write from the prompt
(:func:`grounded_verdicts`): the reference-free critic's analysis when it finds the error
too (written from question, passages and prediction only); else the diagnosis's clauses
that name nothing the prompt lacks (no chunk id, no gold / ground-truth / reference /
keypoint wording, no number, quoted value or word that only the gold answer holds); else a
sentence from the judgement and the tier-3 tags.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ragtriage.critic._critic import _SYSTEM, CriticInput, CriticVerdict, critic_prompt
from ragtriage.critic._system import error_system
from ragtriage.text import STOPWORDS_EN, STOPWORDS_ZH, word_tokens

if TYPE_CHECKING:
    from ragtriage.config import DiagnosisConfig
    from ragtriage.records import Diagnosis, Trace

__all__ = ["dpo_records", "grounded_verdicts", "prompt_analysis", "prompt_leaks", "sft_records"]

#: Words that point at the gold answer or the gold evidence, which the prompt never shows.
_GOLD_WORDS = re.compile(
    r"ground[- ]truth|\bGT\b|\bgold(en)?\b|\breferences?\b|\bkeypoints?\b|\bexpected answer",
    re.IGNORECASE,
)
_CHUNK_ID = re.compile(r"[\w.-]*#\d+")
_QUOTED = re.compile(r"(?<!\w)'([^'\n]{1,400})'(?!\w)|\{([^{}\n]{0,400})\}")
_PAREN = re.compile(r"\s*\([^()]*\)")
_STOP = STOPWORDS_EN | STOPWORDS_ZH
_CLAUSE = re.compile(r"(?<=[;.])\s+")


def prompt_leaks(
    text: str, inp: CriticInput, gold: Sequence[str], *, numbers: bool = True
) -> list[str]:
    """What ``text`` says that the reference-free prompt of ``inp`` does not show: chunk
    ids, gold-answer wording, quoted values, words found only in ``gold`` and (with
    ``numbers``) numbers the prompt does not hold -- in a diagnosis a number it does not
    hold is a comparison with the gold answer (token F1, keypoints covered); the
    reference-free critic's own statistics ("holds 43% of its content words") are not."""
    shown = " ".join([inp.question, *inp.passages, inp.prediction])
    shown_tokens = set(word_tokens(shown))
    gold_only = {t for g in gold for t in word_tokens(g)} - shown_tokens - _STOP
    out: list[str] = []
    if _CHUNK_ID.search(text):
        out.append(f"chunk id {_CHUNK_ID.search(text).group(0)!r}")  # type: ignore[union-attr]
    if _GOLD_WORDS.search(text):
        out.append(f"gold wording {_GOLD_WORDS.search(text).group(0)!r}")  # type: ignore[union-attr]
    for m in _QUOTED.finditer(text):
        value = (m.group(1) or m.group(2) or "").strip()
        if value and not set(word_tokens(value)) <= shown_tokens:
            out.append(f"quoted value {value[:40]!r} not in the prompt")
    tokens = word_tokens(text)
    if numbers:
        unseen = {t for t in tokens if any(ch.isdigit() for ch in t)} - shown_tokens
        out += [f"number {n!r} not in the prompt" for n in sorted(unseen)]
    hidden = sorted({t for t in tokens if t in gold_only})
    out += [f"gold-answer word {t!r}" for t in hidden]
    return out


def _clauses(text: str) -> list[str]:
    return [c.strip(" ;") for c in _CLAUSE.split(text) if c.strip(" ;")]


def prompt_analysis(
    inp: CriticInput,
    verdict: CriticVerdict,
    *,
    diagnosis: Diagnosis | None = None,
    reference_free: CriticVerdict | None = None,
    gold: Sequence[str] = (),
) -> str:
    """An analysis of an Error ``verdict`` written only from what ``inp`` shows (see the
    module docstring for the order of the sources)."""
    if reference_free is not None and reference_free.judgement == "error":
        text = reference_free.analysis.strip()
        if text and not prompt_leaks(text, inp, gold, numbers=False):
            return text
    parts = (
        [verdict.analysis]
        if diagnosis is None
        else [diagnosis.answer_reason, diagnosis.stage_reason]
    )
    kept: list[str] = []
    for part in parts:
        for clause in _clauses(part or ""):
            # a parenthesis that names hidden things goes; the clause may stay
            clause = _PAREN.sub(
                lambda m: "" if prompt_leaks(m.group(0), inp, gold) else m.group(0), clause
            ).strip()
            if clause and not prompt_leaks(clause, inp, gold) and clause not in kept:
                kept.append(clause)
    if kept:
        return "; ".join(kept) + "."
    declines = (
        diagnosis is not None
        and diagnosis.answer_label is not None
        and (diagnosis.answer_label.value == "abstain")
    )
    what = "declines to answer" if declines else "does not answer the question correctly"
    tags = ", ".join(verdict.tier3 or verdict.tier2) or "an error"
    return f"Judged from the question and the passages shown, the prediction {what}: {tags}."


async def grounded_verdicts(
    traces: Sequence[Trace],
    *,
    diagnoses: Sequence[Diagnosis] | None = None,
    config: DiagnosisConfig | None = None,
) -> tuple[list[CriticInput], list[CriticVerdict], list[CriticVerdict]]:
    """``(inputs, labels, reference_free)`` for training: reference-free critic inputs;
    the gold-answer rules verdicts with their analyses rewritten by
    :func:`prompt_analysis`; and the reference-free critic's verdicts on the same inputs
    (the hard negatives of :func:`dpo_records`)."""
    from ragtriage.critic._critic import (
        ReferenceFreeCritic,
        rules_diagnoses,
        verdict_of_diagnosis,
    )

    by_id = await rules_diagnoses(traces, diagnoses, config)
    inputs = [CriticInput.from_trace(t, reference=False) for t in traces]
    free = await ReferenceFreeCritic().judge(inputs)
    labels: list[CriticVerdict] = []
    for trace, inp, rf in zip(traces, inputs, free, strict=True):
        d = by_id[trace.example.example_id]
        v = verdict_of_diagnosis(d)
        if v.judgement == "error":
            ex = trace.example
            gold = [ex.answer, *ex.keypoints]
            text = prompt_analysis(inp, v, diagnosis=d, reference_free=rf, gold=gold)
            v = v.model_copy(update={"analysis": text})
        elif v.judgement == "correct":
            v = v.model_copy(update={"analysis": ""})
        labels.append(v)
    return inputs, labels, free


def _msg(role: str, content: str) -> dict[str, str]:
    return {"role": role, "content": content}


def _pairs(
    inputs: Sequence[CriticInput], verdicts: Sequence[CriticVerdict]
) -> list[tuple[CriticInput, CriticVerdict]]:
    by_id = {v.example_id: v for v in verdicts if not v.undetermined and v.judgement}
    out = []
    for inp in inputs:
        v = by_id.get(inp.example_id)
        if v is not None:
            out.append((inp.model_copy(update={"references": []}), v))
    return out


def _dump(obj: dict[str, Any]) -> str:
    return json.dumps(obj, ensure_ascii=False)


def sft_records(
    inputs: Sequence[CriticInput],
    verdicts: Sequence[CriticVerdict],
    *,
    balance: bool = True,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """SFT rows; undetermined verdicts are left out."""
    pairs = _pairs(inputs, verdicts)
    if balance:
        correct = [p for p in pairs if p[1].judgement == "correct"]
        error = [p for p in pairs if p[1].judgement == "error"]
        n = min(len(correct), len(error))
        rng = random.Random(seed)
        pairs = sorted(rng.sample(correct, n) + rng.sample(error, n), key=lambda p: p[0].example_id)
    return [
        {
            "messages": [
                _msg("system", _SYSTEM),
                _msg("user", critic_prompt(inp)),
                _msg("assistant", _dump(v.critic_json())),
            ]
        }
        for inp, v in pairs
    ]


def _wrong_tags(v: CriticVerdict, rng: random.Random) -> dict[str, Any]:
    system = error_system()
    others = [t for t in system.tier2 if t.tier1 not in v.tier1]
    pick = rng.choice(others)
    return {
        "Judgement": "Error",
        "Error analysis": v.analysis,
        "tag1": [pick.tier1],
        "tag2": [pick.name],
        "tag3": [],
    }


def dpo_records(
    inputs: Sequence[CriticInput],
    verdicts: Sequence[CriticVerdict],
    *,
    critic_verdicts: Sequence[CriticVerdict] = (),
    seed: int = 0,
) -> list[dict[str, Any]]:
    """One pair per decided sample, chosen and rejected differing in the judgement: the
    rejected is the ``critic_verdicts``' own verdict where it got the judgement wrong
    (``critic-mistake``), else the opposite judgement (``coarse``)."""
    rng = random.Random(seed)
    mistaken = {v.example_id: v for v in critic_verdicts if v.judgement is not None}
    rows: list[dict[str, Any]] = []
    for inp, v in _pairs(inputs, verdicts):
        prompt = [_msg("system", _SYSTEM), _msg("user", critic_prompt(inp))]
        chosen = v.critic_json()
        other = mistaken.get(inp.example_id)
        level = "coarse"
        if other is not None and other.judgement != v.judgement:
            rejected, level = other.critic_json(), "critic-mistake"
        elif v.judgement == "correct":
            rejected = _wrong_tags(
                v.model_copy(update={"analysis": "The prediction is incorrect."}), rng
            )
        else:
            rejected = {"Judgement": "Correct"}
        rows.append(
            {
                "prompt": prompt,
                "chosen": [_msg("assistant", _dump(chosen))],
                "rejected": [_msg("assistant", _dump(rejected))],
                "level": level,
            }
        )
    return rows
