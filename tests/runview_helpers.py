"""A random but valid run directory (traces, diagnoses, labels, scores) for the
runview and annotate tests, with English and Chinese questions."""

from __future__ import annotations

import json
import random
from pathlib import Path

from _reportdata import make_diag, make_trace, votes_of
from ragtriage.critic import tiers_of_ragec
from ragtriage.jsonl import write_jsonl
from ragtriage.records import ERROR_TYPE_STAGE, AnswerLabel, Diagnosis, ErrorType, Trace

QUESTIONS = [
    "When was the company founded?",
    "Who is the CEO of Northwind Energy?",
    "How much revenue did Acme report in 2021?",
    "公司是哪一年成立的？",
    "北风能源的首席执行官是谁？",
    "What does the ＡＢＣ index measure?",
    "<script>alert(1)</script> what is this?",
]
QTYPES = ["fact_single", "summary", "reasoning", "unanswerable"]


def random_run(
    root: Path, n: int = 80, *, seed: int = 0, with_extras: bool = True
) -> tuple[Path, list[Trace], list[Diagnosis]]:
    """Write ``root/manifest.json``, ``traces.jsonl``, ``diagnoses.jsonl`` (most traces
    have one; some undetermined, some not failing), and with extras
    ``label/labels.jsonl``, ``eval/scores.jsonl`` and ``critic.jsonl``."""
    rng = random.Random(seed)
    traces: list[Trace] = []
    diags: list[Diagnosis] = []
    types = list(ErrorType)
    for i in range(n):
        eid = f"ex{i:04d}"
        q = f"{rng.choice(QUESTIONS)} #{i}"
        t = make_trace(eid, query=q, label=rng.choice(QTYPES) if rng.random() < 0.3 else None)
        traces.append(t)
        r = rng.random()
        if r < 0.08:
            continue  # no diagnosis
        if r < 0.15:
            d = make_diag(eid, answer_label=None, undetermined_reason="answer_evaluation: x")
        elif r < 0.4:
            d = make_diag(
                eid, answer_label=rng.choice([AnswerLabel.CORRECT, AnswerLabel.POSSIBLE_CORRECT])
            )
        else:
            mode = rng.choice(types)
            second = rng.choice([x for x in types if x is not mode])
            d = make_diag(
                eid,
                stage=ERROR_TYPE_STAGE[mode],
                mode=mode,
                second=second,
                votes=votes_of(mode, rng.randint(4, 10), second),
                advice=[f"advice for {mode.value}"],
            )
            t1, t2 = tiers_of_ragec(mode)
            d = d.model_copy(update={"tier1": t1, "tier2": t2})
        if d.answer_label is not None:
            conf = round(rng.random(), 3) if rng.random() < 0.9 else None
            d = d.model_copy(
                update={"confidence": conf, "low_confidence": conf is not None and conf < 0.5}
            )
        diags.append(d)
    root.mkdir(parents=True, exist_ok=True)
    (root / "manifest.json").write_text(
        json.dumps(
            {
                "run_id": root.name,
                "created_at": "2026-01-01T00:00:00+00:00",
                "config_hash": f"h-{seed}",
            }
        ),
        encoding="utf-8",
    )
    write_jsonl(root / "traces.jsonl", traces)
    write_jsonl(root / "diagnoses.jsonl", diags)
    if with_extras:
        labels = [
            {
                "example_id": t.example.example_id,
                "label": rng.choice(QTYPES),
                "reason": "",
                "labeller": "rules",
                "votes": [],
                "mode_frequency": None,
                "given_label": None,
            }
            for t in traces
            if rng.random() < 0.7
        ]
        write_jsonl(root / "label" / "labels.jsonl", labels)
        scores = []
        for t in traces:
            if rng.random() < 0.1:
                continue
            faith = {"value": round(rng.random(), 4), "judge": "offline"}
            if rng.random() < 0.1:
                faith = {"value": "undetermined", "judge": "offline", "reason": "no claims"}
            scores.append(
                {
                    "trace_id": t.trace_id,
                    "example_id": t.example.example_id,
                    "scores": {
                        "faithfulness": faith,
                        "f1": {"value": round(rng.random(), 4), "judge": "lexical"},
                    },
                }
            )
        write_jsonl(root / "eval" / "scores.jsonl", scores)
        # `ragtriage critic` verdicts (tier tags) for some traces, keyed by trace id
        verdicts = []
        for t in traces:
            if rng.random() < 0.3:
                t1, t2 = tiers_of_ragec(rng.choice(types))
                verdicts.append(
                    {
                        "example_id": t.example.example_id,
                        "trace_id": t.trace_id,
                        "critic": "rules",
                        "reference": True,
                        "judgement": "error",
                        "tier1": t1,
                        "tier2": t2,
                        "tier3": ["Numerical Error 数字错误"],
                    }
                )
        write_jsonl(root / "critic.jsonl", verdicts)
    return root, traces, diags
