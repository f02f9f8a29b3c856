"""Fit the rules judge's weights and thresholds leave one labelled part out (issue 27).

Run: .venv/bin/python benchmarks/fit_weights.py [--injected DIR] [--part NAME ...]
     [--json FILE] [--write]

The labelled parts: every real-style part (``benchmarks/data/realstyle/*/``), the
natural parts (``benchmarks/data/natural/nat*/``) and, with ``--injected DIR``, the
output of ``ragtriage calibrate --out DIR`` as one part ``injected`` (its injected
traces failing at their injected stage and type, its healthy bases not failing).

1. Every trace is diagnosed once with the shipped (hand-set) weights
   (``src/ragtriage/diagnosis/weights.json``).
2. Each parameter is varied alone over a grid around its hand-set value (one
   coordinate at a time; the others stay hand-set) and only the traces it can change
   are diagnosed again: a rule's type vote changes the type of the traces that rule
   failed; an answer threshold changes the verdict of traces whose evaluation reaches
   the step that reads it (their verdict is recomputed, and the diagnosis redone where
   the label or the deciding rule changes); a stage threshold changes failing traces.
3. For each held-out part, each parameter takes the grid value with the best score on
   the *other* parts (score, per trace: failing/not-failing agreement + stage agreement
   + type top-1 − 2 × false failure; precision first). Ties keep the hand-set value.
4. A parameter is **kept** (``--write`` writes it to the weights file) only when, on the
   held-out parts, the fitted values beat the hand-set one on average (mean per-part
   score gain > 0), gain at least 3 traces net over all parts (not one miss), and make
   no part's false failures worse; the value written is the fit on all parts.
5. Each part is diagnosed again with all its leave-one-out values at once and
   printed against the hand-set diagnosis: type top-1, stage, failing agreement, false
   failures.
6. Per answer rule: its hits (verdicts whose failing / not-failing call a human shares)
   and false hits per part; for each contradiction-step rule, what retiring it
   (``retired_rules``) would change. A rule is retired only when that gains at least 3
   traces net and makes no part's false failures worse.

Parts were used to develop the rules (fresh18-fresh55 were first diagnosed blind, then
the rules were changed on some of their misses): leave-one-part-out measures how the
*weights* generalise, not the rules' first contact.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from ragtriage.calibrate.agreement import HumanLabel, agreement  # noqa: E402
from ragtriage.calibrate.inject import injected_label, strip_label  # noqa: E402
from ragtriage.config import DiagnosisConfig  # noqa: E402
from ragtriage.diagnosis.answer_eval import evaluate_rules  # noqa: E402
from ragtriage.diagnosis.engine import Diagnoser  # noqa: E402
from ragtriage.diagnosis.rules import RULES, RULES_BY_NAME  # noqa: E402
from ragtriage.diagnosis.weights import (  # noqa: E402
    WEIGHTS_FILE,
    Weights,
    shipped_weights,
    using_weights,
)
from ragtriage.jsonl import atomic_write_text  # noqa: E402
from ragtriage.llm import run_sync  # noqa: E402
from ragtriage.records import AnswerLabel, Diagnosis, Trace  # noqa: E402
from realstyle import Part, load_parts  # noqa: E402

WEIGHTS_PATH = ROOT / "src" / "ragtriage" / "diagnosis" / WEIGHTS_FILE
#: a kept parameter or a retired rule must gain at least this many traces net
MIN_NET_GAIN = 3
FALSE_FAILURE_COST = 2


# -- scoring ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """Traces' agreement with their labels (0/1 counts per trace, sums over several;
    ``*_n`` = compared, ``n`` = traces)."""

    fail_n: int = 0
    fail_ok: int = 0
    false_fail: int = 0
    not_failing: int = 0
    stage_n: int = 0
    stage_ok: int = 0
    type_n: int = 0
    type_ok: int = 0
    n: int = 1

    @property
    def score(self) -> int:
        return self.fail_ok + self.stage_ok + self.type_ok - FALSE_FAILURE_COST * self.false_fail

    def __add__(self, other: Outcome) -> Outcome:
        return Outcome(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(self)))


#: the sum of no traces
NONE = Outcome(n=0)


def outcome(d: Diagnosis, labs: Sequence[HumanLabel]) -> Outcome:
    r = agreement([d], labs)
    return Outcome(
        r.failing_compared,
        int(r.failing_compared > 0 and r.failing_agreement == 1.0),
        r.false_failures,
        r.human_not_failing,
        r.stage_compared,
        int(r.stage_compared > 0 and r.stage_agreement == 1.0),
        r.type_compared,
        int(r.type_compared > 0 and r.type_accuracy == 1.0),
    )


def _pct(k: int, n: int) -> str:
    return f"{100 * k / n:5.1f}%" if n else "    -"


# -- the labelled parts -----------------------------------------------------------------


def injected_part(folder: Path) -> Part:
    """``ragtriage calibrate --out`` output as a part: injected traces failing at their
    injected stage and type, healthy bases (oracle answers) correct. Each trace gets
    its trace id as example id (an injected trace shares its base's example)."""
    traces: list[Trace] = []
    labels: list[HumanLabel] = []
    for name, injected in (("injected_traces.jsonl", True), ("base_traces.jsonl", False)):
        path = folder / name
        # several injected traces share their base's example: read line by line
        lines = path.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                t = Trace.model_validate_json(line)
            except ValueError as exc:
                raise SystemExit(f"{path}:{i}: not a trace ({exc})") from exc
            found = injected_label(t) if injected else None
            if injected and found is None:
                continue
            eid = f"inj-{t.trace_id}"
            t = strip_label(t)
            traces.append(
                t.model_copy(update={"example": t.example.model_copy(update={"example_id": eid})})
            )
            labels.append(
                HumanLabel(
                    example_id=eid,
                    stage=found[0].stage if found is not None else None,
                    types=(found[0],) if found is not None else (),
                    annotator="injector",
                    line=i,
                    answer_label=None if found is not None else AnswerLabel.CORRECT,
                )
            )
    return Part("injected", traces, labels)


@dataclass
class Case:
    part: str
    trace: Trace
    labels: list[HumanLabel]
    base: Diagnosis
    base_out: Outcome
    #: (label, rule) of the hand-set answer evaluation
    verdict: tuple[str | None, str | None]


def diagnose(traces: Sequence[Trace], weights: Weights, config: DiagnosisConfig) -> list[Diagnosis]:
    diagnoser = Diagnoser("rules", config=config)
    with using_weights(weights):
        return run_sync(diagnoser.diagnose_many(traces, workers=1))


def verdict_of(
    trace: Trace, weights: Weights, config: DiagnosisConfig
) -> tuple[str | None, str | None]:
    with using_weights(weights):
        j = evaluate_rules(trace.example, trace.answer, config)
    return (j.label.value if j.label is not None else None, j.rule)


def config_for(w: Weights) -> DiagnosisConfig:
    return DiagnosisConfig(
        generator_gt_share=w.stage["generator_gt_share"],
        concept_coverage=w.stage["concept_coverage"],
        oversized_chunk_ratio=w.stage["oversized_chunk_ratio"],
        correct_f1=w.answer["correct_f1"],
        possible_f1=w.answer["possible_f1"],
    )


# -- parameters -------------------------------------------------------------------------


@dataclass(frozen=True)
class Param:
    name: str
    kind: str  # "type_vote" | "answer" | "stage"
    hand: float
    grid: tuple[float, ...]
    #: the traces the parameter can change
    affects: Callable[[Case], bool]
    #: the weights with the parameter at a value
    set: Callable[[Weights, float], Weights]
    #: the verdict must be recomputed (answer thresholds)
    reevaluate: bool = False


def _step(c: Case) -> str | None:
    rule = c.verdict[1]
    return RULES_BY_NAME[rule].step if rule in RULES_BY_NAME else None


def _grid(hand: float, values: Sequence[float]) -> tuple[float, ...]:
    return tuple(sorted({round(v, 4) for v in (*values, hand)}))


def parameters(w: Weights) -> list[Param]:
    out: list[Param] = []
    for r in RULES:
        for t, hand in w.type_votes[r.name]:

            def set_vote(ws: Weights, v: float, rule: str = r.name, t: str = t) -> Weights:
                # a zero score is no vote: the entry goes
                votes = tuple(
                    (tt, v if tt == t else s)
                    for tt, s in ws.type_votes[rule]
                    if not (tt == t and v == 0)
                )
                return ws.with_values(type_votes={rule: votes})

            out.append(
                Param(
                    f"type_votes.{r.name}.{t}",
                    "type_vote",
                    hand,
                    _grid(hand, (0.0, 0.3, 0.45, 0.55, 0.6, 0.65, 0.7, 0.75, 0.85, 0.95)),
                    lambda c, rule=r.name: c.verdict[1] == rule and c.base.needs_diagnosis,
                    set_vote,
                )
            )
    answer_grids = {
        "full_coverage": (0.6, 0.67, 0.75, 0.8, 0.9),
        "partial_coverage": (0.25, 0.3, 0.34, 0.4, 0.5),
        "correct_f1": (0.5, 0.55, 0.6, 0.65, 0.7),
        "possible_f1": (0.25, 0.3, 0.35, 0.4, 0.45),
        "f1_min_recall": (0.4, 0.45, 0.5, 0.55, 0.6),
        "correct_recall": (0.7, 0.75, 0.8, 0.85, 0.9),
        "possible_recall": (0.4, 0.45, 0.5, 0.55, 0.6),
        "keypoints_correct": (0.67, 0.75, 0.8, 0.85, 0.9),
        "keypoints_partial": (0.34, 0.4, 0.5, 0.6, 0.67),
    }
    for name, values in answer_grids.items():
        steps = {"decline", "contradiction", "grade"} if name == "full_coverage" else {"grade"}

        def set_answer(ws: Weights, v: float, name: str = name) -> Weights:
            return ws.with_values(answer={name: v})

        out.append(
            Param(
                f"answer_thresholds.{name}",
                "answer",
                w.answer[name],
                _grid(w.answer[name], values),
                lambda c, steps=frozenset(steps): _step(c) in steps,
                set_answer,
                reevaluate=True,
            )
        )
    stage_grids = {
        "generator_gt_share": (0.3, 0.4, 0.5, 0.6, 0.7),
        "concept_coverage": (0.05, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9),
        "oversized_chunk_ratio": (2.0, 2.5, 3.0, 4.0, 5.0),
    }
    for name, values in stage_grids.items():

        def set_stage(ws: Weights, v: float, name: str = name) -> Weights:
            return ws.with_values(stage={name: v})

        out.append(
            Param(
                f"stage_thresholds.{name}",
                "stage",
                w.stage[name],
                _grid(w.stage[name], values),
                lambda c: c.base.needs_diagnosis,
                set_stage,
            )
        )
    return out


def changed_outcomes(
    cases: Sequence[Case], weights: Weights, reevaluate: bool
) -> dict[int, Outcome]:
    """Outcomes of ``cases`` (by index) under ``weights`` that differ from the hand-set
    diagnosis; a case missing from the result is unchanged."""
    cfg = config_for(weights)
    todo = [
        i
        for i, c in enumerate(cases)
        if not reevaluate or verdict_of(c.trace, weights, cfg) != c.verdict
    ]
    if not todo:
        return {}
    found = diagnose([cases[i].trace for i in todo], weights, cfg)
    out: dict[int, Outcome] = {}
    for i, d in zip(todo, found, strict=True):
        o = outcome(d, cases[i].labels)
        if o != cases[i].base_out:
            out[i] = o
    return out


@dataclass
class ParamFit:
    param: Param
    #: value -> part -> score difference from hand-set (traces) and false failures
    delta: dict[float, dict[str, int]] = field(default_factory=dict)
    false_fail: dict[float, dict[str, int]] = field(default_factory=dict)
    lopo: dict[str, float] = field(default_factory=dict)
    all_parts: float = 0.0
    kept: bool = False
    why: str = ""


def fit_param(
    p: Param,
    cases: Sequence[Case],
    parts: Sequence[str],
    base_ff: Mapping[str, int],
    sizes: Mapping[str, int],
) -> ParamFit:
    idx = [i for i, c in enumerate(cases) if p.affects(c)]
    sub = [cases[i] for i in idx]
    fit = ParamFit(p)
    hand_w = shipped_weights()
    for v in p.grid:
        delta = dict.fromkeys(parts, 0)
        ff = dict(base_ff)
        if v != p.hand and sub:
            for j, o in changed_outcomes(sub, p.set(hand_w, v), p.reevaluate).items():
                c = sub[j]
                delta[c.part] += o.score - c.base_out.score
                ff[c.part] += o.false_fail - c.base_out.false_fail
        fit.delta[v], fit.false_fail[v] = delta, ff

    def best(train: Sequence[str]) -> float:
        return max(
            p.grid,
            key=lambda v: (
                sum(fit.delta[v][q] for q in train),
                v == p.hand,
                -abs(v - p.hand),
            ),
        )

    for q in parts:
        fit.lopo[q] = best([o for o in parts if o != q])
    fit.all_parts = best(parts)
    held = {q: fit.delta[fit.lopo[q]][q] for q in parts}
    net = sum(held.values())
    mean = sum(held[q] / sizes[q] for q in parts) / len(parts)
    worse = [q for q in parts if fit.false_fail[fit.lopo[q]][q] > base_ff[q]]
    if fit.all_parts == p.hand:
        fit.why = "the fit on all parts is the hand-set value"
    elif mean <= 0:
        fit.why = f"held-out mean gain {mean:+.4f} per trace"
    elif net < MIN_NET_GAIN:
        fit.why = f"held-out net gain {net:+d} traces < {MIN_NET_GAIN}"
    elif worse:
        fit.why = f"more false failures on {', '.join(worse)}"
    else:
        fit.kept = True
        fit.why = f"held-out net gain {net:+d} traces, mean {mean:+.4f} per trace"
    return fit


# -- the run ----------------------------------------------------------------------------


def load_all(injected: Path | None, names: Sequence[str]) -> list[Part]:
    parts = load_parts(ROOT / "benchmarks" / "data" / "realstyle")
    parts += load_parts(ROOT / "benchmarks" / "data" / "natural")
    if injected is not None:
        parts.append(injected_part(injected))
    if names:
        parts = [p for p in parts if p.name in names]
    return parts


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--injected", type=Path, help="a `ragtriage calibrate --out` folder")
    ap.add_argument("--part", nargs="*", default=[], help="only these parts")
    ap.add_argument("--json", type=Path, help="write the figures here")
    ap.add_argument("--write", action="store_true", help="write kept values to the weights file")
    ap.add_argument(
        "--param", nargs="*", default=[], help="fit only these parameters (default: all)"
    )
    ap.add_argument(
        "--no-rules", action="store_true", help="skip the per-rule hits and retirement tables"
    )
    args = ap.parse_args(argv)

    t0 = time.process_time()
    parts = load_all(args.injected, args.part)
    names = [p.name for p in parts]
    hand = shipped_weights()
    hand_cfg = config_for(hand)
    cases: list[Case] = []
    for part in parts:
        by_ex: dict[str, list[HumanLabel]] = defaultdict(list)
        for lab in part.labels:
            by_ex[lab.example_id].append(lab)
        for t, d in zip(part.traces, diagnose(part.traces, hand, hand_cfg), strict=True):
            labs = by_ex[t.example.example_id]
            cases.append(
                Case(part.name, t, labs, d, outcome(d, labs), verdict_of(t, hand, hand_cfg))
            )
    sizes = {q: sum(1 for c in cases if c.part == q) for q in names}
    base_ff = {q: sum(c.base_out.false_fail for c in cases if c.part == q) for q in names}
    print(
        f"{len(cases)} traces in {len(parts)} parts diagnosed hand-set "
        f"({time.process_time() - t0:.0f} CPU-s)",
        flush=True,
    )

    # -- parameters, one coordinate at a time
    fits: list[ParamFit] = []
    for p in parameters(hand):
        if args.param and p.name not in args.param and p.name.split(".")[-1] not in args.param:
            continue
        fits.append(fit_param(p, cases, names, base_ff, sizes))
        f = fits[-1]
        print(
            f"  {p.name}: hand {p.hand:g}, all parts {f.all_parts:g}, "
            f"{'KEPT' if f.kept else 'hand-set'} ({f.why}) "
            f"[{time.process_time() - t0:.0f} CPU-s]",
            flush=True,
        )

    # -- per rule: hits and false hits per part, and retiring it
    hits: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    for c in cases:
        rule = c.verdict[1] or "(none)"
        if c.base_out.fail_n:
            hits[rule][c.part][0 if c.base_out.fail_ok else 1] += 1
    retire: dict[str, dict[str, Any]] = {}
    for r in RULES:
        if args.no_rules or r.step != "contradiction":
            continue
        sub = [c for c in cases if c.verdict[1] == r.name]
        w = hand.with_values(retired=frozenset({r.name}))
        delta = dict.fromkeys(names, 0)
        ff = dict.fromkeys(names, 0)
        for j, o in changed_outcomes(sub, w, True).items():
            delta[sub[j].part] += o.score - sub[j].base_out.score
            ff[sub[j].part] += o.false_fail - sub[j].base_out.false_fail
        net = sum(delta.values())
        worse = [q for q in names if ff[q] > 0]
        retired = net >= MIN_NET_GAIN and not worse
        retire[r.name] = {
            "net_gain": net,
            "parts_better": sum(1 for v in delta.values() if v > 0),
            "parts_worse": sum(1 for v in delta.values() if v < 0),
            "false_failures_up": worse,
            "retire": retired,
        }

    # -- each part with all its leave-one-out values at once
    kept = [f for f in fits if f.kept]
    rows: list[tuple[str, Outcome, Outcome]] = []
    for part in parts:
        w = hand
        for f in fits:
            w = f.param.set(w, f.lopo[part.name])
        w_cfg = config_for(w)
        labs_by = {c.trace.example.example_id: c.labels for c in cases if c.part == part.name}
        handset = sum((c.base_out for c in cases if c.part == part.name), NONE)
        fitted = sum(
            (
                outcome(d, labs_by[t.example.example_id])
                for t, d in zip(part.traces, diagnose(part.traces, w, w_cfg), strict=True)
            ),
            NONE,
        )
        rows.append((part.name, handset, fitted))

    print(
        f"\nleave-one-part-out: hand-set vs fitted (every parameter at its fit on the other "
        f"parts); {time.process_time() - t0:.0f} CPU-s"
    )
    head = (
        f"{'part':10} {'n':>4} | {'type top-1':>15} | {'stage':>15} | "
        f"{'failing agree':>15} | {'false failures':>15}"
    )
    print(head)
    print("-" * len(head))

    def line(name: str, h: Outcome, f: Outcome) -> str:
        return (
            f"{name:10} {h.n:4d} | {_pct(h.type_ok, h.type_n)} {_pct(f.type_ok, f.type_n)}"
            f" | {_pct(h.stage_ok, h.stage_n)} {_pct(f.stage_ok, f.stage_n)}"
            f" | {_pct(h.fail_ok, h.fail_n)} {_pct(f.fail_ok, f.fail_n)}"
            f" | {h.false_fail:5d}/{h.not_failing:<4d} {f.false_fail:4d}"
        )

    for name, h, f in rows:
        print(line(name, h, f))
    wins = sum(f.score > h.score for _, h, f in rows)
    losses = sum(f.score < h.score for _, h, f in rows)
    print("-" * len(head))
    print(
        line(
            "overall",
            sum((h for _, h, _ in rows), NONE),
            sum((f for _, _, f in rows), NONE),
        )
    )
    print(f"parts where the fitted weights score better / worse: {wins} / {losses}")

    print("\nparameters (hand-set -> fit on all parts; kept only when it helps unseen parts):")
    for f in fits:
        spread = sorted({f.lopo[q] for q in names})
        gains = " ".join(
            f"{v:g}:{sum(f.delta[v].values()):+d}/{sum(f.false_fail[v].values()):d}"
            for v in f.param.grid
        )
        print(
            f"  {f.param.name:45} {f.param.hand:6g} -> {f.all_parts:6g}  "
            f"{'KEPT ' if f.kept else 'hand '} {f.why}; LOPO values {spread}"
        )
        print(f"      all parts, value:score gain/false failures: {gains}")

    print(
        "\nanswer rules: hits / false hits (failing call vs human) per part; "
        "retiring a contradiction rule:"
    )
    for r in RULES:
        per = hits.get(r.name, {})
        tot = [sum(v[0] for v in per.values()), sum(v[1] for v in per.values())]
        bad = ", ".join(f"{q} {v[0]}/{v[1]}" for q, v in sorted(per.items()) if v[1])
        ret = retire.get(r.name)
        note = (
            ""
            if ret is None
            else f"; retire: net {ret['net_gain']:+d} (better {ret['parts_better']}, worse "
            f"{ret['parts_worse']} parts){' RETIRE' if ret['retire'] else ''}"
        )
        print(f"  {r.name:24} {tot[0]:5d} / {tot[1]:3d}{note}")
        if bad:
            print(f"      false hits in: {bad}")

    if args.json is not None:
        data = {
            "parts": [
                {
                    "part": name,
                    "hand": {**vars(h), "score": h.score},
                    "fitted": {**vars(f), "score": f.score},
                }
                for name, h, f in rows
            ],
            "parameters": [
                {
                    "name": f.param.name,
                    "hand": f.param.hand,
                    "all_parts": f.all_parts,
                    "lopo": f.lopo,
                    "kept": f.kept,
                    "gain_all_parts": {str(v): sum(f.delta[v].values()) for v in f.param.grid},
                    "false_failures_all_parts": {
                        str(v): sum(f.false_fail[v].values()) for v in f.param.grid
                    },
                    "why": f.why,
                }
                for f in fits
            ],
            "rules": {
                r.name: {
                    "hits": {q: v for q, v in hits.get(r.name, {}).items()},
                    "retire": retire.get(r.name),
                }
                for r in RULES
            },
        }
        atomic_write_text(args.json, json.dumps(data, indent=1) + "\n")
        print(f"wrote {args.json}")
    retired = frozenset(n for n, v in retire.items() if v["retire"])
    if args.write:
        if not kept and not retired:
            print("nothing kept: the weights file stays hand-set")
            return 0
        w = hand
        for f in kept:
            w = f.param.set(w, f.all_parts)
        w = w.with_values(
            retired=hand.retired | retired,
            source=f"{hand.source}; fitted leave-one-part-out by benchmarks/fit_weights.py on "
            f"{len(cases)} traces of {len(parts)} parts: " + ", ".join(f.param.name for f in kept),
        )
        atomic_write_text(
            WEIGHTS_PATH, json.dumps(w.to_dict(), indent=2, ensure_ascii=False) + "\n"
        )
        print(f"wrote {WEIGHTS_PATH} ({len(kept)} parameters kept, {len(retired)} rules retired)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
