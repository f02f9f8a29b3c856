"""Training data for a critic model (seed 004, §3.2) in the formats TRL expects.

* **SFT** (``SFTTrainer``, conversational format): ``{"messages": [system, user,
  assistant]}`` — the user turn is the Prompt D input (reference-free, as the critic is
  used), the assistant turn the critic JSON of the label; balanced by downsampling the
  larger of correct/error (seeded).
* **DPO** (``DPOTrainer``, conversational preference format): ``{"prompt": [system,
  user], "chosen": [assistant], "rejected": [assistant]}``, coarse-to-fine: a *coarse*
  pair per sample (the right judgement vs the opposite one) and, for errors, a *fine*
  pair (the right tier-1/2 tags vs tags of another tier-1 type).
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from typing import Any

from ragtriage.critic._critic import _SYSTEM, CriticInput, CriticVerdict, critic_prompt
from ragtriage.critic._system import error_system

__all__ = ["dpo_records", "sft_records"]


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
    inputs: Sequence[CriticInput], verdicts: Sequence[CriticVerdict], *, seed: int = 0
) -> list[dict[str, Any]]:
    """Coarse (judgement) and fine (tags) preference pairs."""
    rng = random.Random(seed)
    rows: list[dict[str, Any]] = []
    for inp, v in _pairs(inputs, verdicts):
        prompt = [_msg("system", _SYSTEM), _msg("user", critic_prompt(inp))]
        chosen = v.critic_json()
        if v.judgement == "correct":
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
                "level": "coarse",
            }
        )
        if v.judgement == "error" and v.tier2:
            rows.append(
                {
                    "prompt": prompt,
                    "chosen": [_msg("assistant", _dump(chosen))],
                    "rejected": [_msg("assistant", _dump(_wrong_tags(v, rng)))],
                    "level": "fine",
                }
            )
    return rows
