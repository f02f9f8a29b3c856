"""Refit the per-diagnosis confidence table on the real-style set's ``dev`` split.

Run: .venv/bin/python benchmarks/fit_confidence.py [--judge rules|llm] [--strategy ragec]
     [--c 1.0] [--out FILE | --write] [--root benchmarks/data/realstyle] [--part NAME]

Diagnoses the ``dev`` and ``test`` labels of every part (as ``benchmarks/realstyle.py``
does), takes each dev diagnosis's features (:func:`ragtriage.diagnosis.confidence.
confidence_features`) and whether it was right by the human labels
(:func:`ragtriage.calibrate.agreement.diagnosis_correct`), and fits one L2-regularised
logistic regression per group (``failing`` / ``not_failing``; scikit-learn, ``--c`` is
the inverse regularisation strength). A group whose dev cases are all right or all
wrong keeps the current table's parameters. Prints the ECE and Brier score on dev and
on test before (current table) and after (fitted table); ``--write`` replaces the
table shipped in the package, ``--out`` writes it elsewhere.

``--blind --natural benchmarks/data/natural`` adds the natural-answer parts' current
diagnoses to the fit and prints their reliability part by part, each part scored by a
table fitted without it (issue 27: the natural answers were scored by a table that never
saw one).

``--blind`` also fits on the *first-contact* diagnoses: the ones each blind part got from
the code of its day, before anyone read its misses (``<part>/blind_diagnoses.jsonl``, see
the set's README), next to the current diagnoses of every label (all splits) of the
parts given. Diagnoses of development text are right more often than those of text the
rules never saw, so a table fitted on them alone is overconfident on new text; the
first-contact diagnoses are the one sample of the judge meeting unseen text (and the
current judge, better than the judge of each part's day, falls between the two). It
prints the leave-one-part-out reliability over the blind parts (each scored by a table
fitted without that part: the estimate for unseen text) and the reliability of the
current diagnoses under the current and the fitted table.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import cast

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent / "src"))
sys.path.insert(0, str(BENCH))

from sklearn.feature_extraction import DictVectorizer  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402

from ragtriage.calibrate.agreement import HumanLabel, diagnosis_correct  # noqa: E402
from ragtriage.config import DiagnosisConfig, load_config  # noqa: E402
from ragtriage.diagnosis.confidence import (  # noqa: E402
    GROUPS,
    TABLE_FILE,
    ConfidenceTable,
    GroupModel,
    confidence_features,
    default_table,
    with_confidence,
)
from ragtriage.diagnosis.engine import JUDGES, Diagnoser, Judge  # noqa: E402
from ragtriage.diagnosis.strategies import STRATEGIES, Strategy  # noqa: E402
from ragtriage.errors import RagtriageError  # noqa: E402
from ragtriage.jsonl import read_records  # noqa: E402
from ragtriage.metrics.calibration import Reliability, reliability  # noqa: E402
from ragtriage.records import Diagnosis, Trace  # noqa: E402
from realstyle import DEFAULT_ROOT, Part, diagnose_parts, load_parts  # noqa: E402

PACKAGE_TABLE = BENCH.parent / "src" / "ragtriage" / "diagnosis" / TABLE_FILE

Case = tuple[Diagnosis, Trace, list[HumanLabel]]


def cases_of(parts: Sequence[Part], diagnoses: Sequence[Sequence[Diagnosis]]) -> list[Case]:
    out: list[Case] = []
    for part, found in zip(parts, diagnoses, strict=True):
        traces = {t.example.example_id: t for t in part.traces}
        labels: dict[str, list[HumanLabel]] = {}
        for lab in part.labels:
            labels.setdefault(lab.example_id, []).append(lab)
        out.extend((d, traces[d.example_id], labels[d.example_id]) for d in found)
    return out


def fit_table(
    cases: Sequence[Case], config: DiagnosisConfig, base: ConfidenceTable, *, c: float = 1.0
) -> tuple[ConfidenceTable, list[str]]:
    """A table fitted on ``cases`` (and notes on groups that kept ``base``)."""
    rows: dict[str, tuple[list[dict[str, float]], list[int]]] = {g: ([], []) for g in GROUPS}
    for d, trace, labs in cases:
        found = confidence_features(d, trace, config)
        ok = diagnosis_correct(d, labs)
        if found is None or ok is None:
            continue
        xs, ys = rows[found[0]]
        xs.append(found[1])
        ys.append(int(ok))
    groups: dict[str, GroupModel] = {}
    notes: list[str] = []
    for g in GROUPS:
        xs, ys = rows[g]
        if len(set(ys)) < 2:
            groups[g] = base.groups[g]
            notes.append(f"{g}: {len(ys)} dev cases, {sum(ys)} right: kept the current model")
            continue
        vec = DictVectorizer(sparse=False)
        x = vec.fit_transform(xs)
        model = LogisticRegression(C=c, max_iter=1000).fit(x, ys)
        weights = {
            f: float(w) for f, w in zip(vec.get_feature_names_out(), model.coef_[0], strict=True)
        }
        groups[g] = GroupModel(float(model.intercept_[0]), weights)
        notes.append(f"{g}: fitted on {len(ys)} dev cases ({sum(ys)} right)")
    n = sum(len(rows[g][1]) for g in GROUPS)
    return ConfidenceTable(groups, source=f"fit on {n} real-style dev cases"), notes


def scored(cases: Sequence[Case], config: DiagnosisConfig, table: ConfidenceTable) -> Reliability:
    confs: list[float | None] = []
    right: list[bool] = []
    for d, trace, labs in cases:
        ok = diagnosis_correct(d, labs)
        if ok is None:
            continue
        confs.append(with_confidence(d, trace, config, table).confidence)
        right.append(ok)
    return reliability(confs, right)


BLIND_FILE = "blind_diagnoses.jsonl"


def blind_cases(root: Path, names: Sequence[str]) -> dict[str, list[Case]]:
    """Each blind part's first-contact diagnoses (``BLIND_FILE``) with its traces and
    labels, by part."""
    out: dict[str, list[Case]] = {}
    for part in load_parts(root, names):
        path = root / part.name / BLIND_FILE
        if not path.is_file():
            continue
        found = list(read_records(path, Diagnosis))
        out[part.name] = cases_of([part], [found])
    return out


def leave_one_part_out(
    by_part: dict[str, list[Case]],
    config: DiagnosisConfig,
    base: ConfidenceTable,
    c: float,
    also: dict[str, list[Case]] | None = None,
) -> Reliability:
    """Each part of ``by_part`` scored by a table fitted on the other parts (and on the
    cases of ``also``, that part's own left out)."""
    confs: list[float | None] = []
    right: list[bool] = []
    extra = also or {}
    for held in by_part:
        train = [
            x
            for group in (by_part, extra)
            for name, cases in group.items()
            if name != held
            for x in cases
        ]
        table, _ = fit_table(train, config, base, c=c)
        for d, trace, labs in by_part[held]:
            ok = diagnosis_correct(d, labs)
            if ok is not None:
                confs.append(with_confidence(d, trace, config, table).confidence)
                right.append(ok)
    return reliability(confs, right)


def _fmt(r: Reliability) -> str:
    if r.ece is None:
        return f"ECE n/a ({r.reason})"
    return (
        f"ECE {r.ece:.3f}  Brier {r.brier:.3f}  accuracy {r.accuracy:.3f}  "
        f"mean conf. {r.mean_confidence:.3f}  (n={r.n})"
    )


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--root", type=Path, default=DEFAULT_ROOT)
    ap.add_argument("--part", action="append", default=[])
    ap.add_argument("--judge", default="rules", choices=JUDGES)
    ap.add_argument("--strategy", default="ragec", choices=STRATEGIES)
    ap.add_argument("--config", type=Path, default=None)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--c", type=float, default=1.0, help="Inverse L2 strength.")
    ap.add_argument("--out", type=Path, default=None, help="Write the fitted table here.")
    ap.add_argument("--write", action="store_true", help=f"Replace the shipped {TABLE_FILE}.")
    ap.add_argument(
        "--blind", action="store_true", help=f"Fit on the blind parts' {BLIND_FILE} (see above)."
    )
    ap.add_argument(
        "--natural",
        type=Path,
        default=None,
        help="With --blind: also fit on the natural-answer parts under this folder "
        "(benchmarks/data/natural) and print their leave-one-part-out reliability.",
    )
    args = ap.parse_args(argv)
    if args.blind:
        return _fit_blind(args)
    runner = None
    try:
        dev = load_parts(args.root, args.part, "dev")
        test = load_parts(args.root, args.part, "test")
        cfg = load_config(args.config)
        if args.judge == "llm":
            from ragtriage.cli.diagnose import _runner

            runner = _runner(cfg, dry_run=False, no_cache=False, cache=None)
    except RagtriageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        diagnoser = Diagnoser(
            cast(Judge, args.judge), cast(Strategy, args.strategy), cfg.diagnosis, runner
        )
        dev_cases = cases_of(dev, diagnose_parts(dev, diagnoser, workers=args.workers))
        test_cases = cases_of(test, diagnose_parts(test, diagnoser, workers=args.workers))
    finally:
        if runner is not None:
            runner.close()
    current = default_table()
    fitted, notes = fit_table(dev_cases, cfg.diagnosis, current, c=args.c)
    for note in notes:
        print(note)
    for name, table in (("before", current), ("after ", fitted)):
        print(f"{name} dev:  {_fmt(scored(dev_cases, cfg.diagnosis, table))}")
        print(f"{name} test: {_fmt(scored(test_cases, cfg.diagnosis, table))}")
    _save(args, fitted)
    return 0


def _save(args: argparse.Namespace, table: ConfidenceTable) -> None:
    """Write ``table`` where ``--write`` / ``--out`` say (nowhere without them)."""
    target = PACKAGE_TABLE if args.write else args.out
    if target is not None:
        target.write_text(json.dumps(table.to_dict(), indent=2) + "\n", encoding="utf-8")
        print(f"wrote {target}")


def _fit_blind(args: argparse.Namespace) -> int:
    try:
        cfg = load_config(args.config)
        by_part = blind_cases(args.root, args.part)
        if len(by_part) < 2:
            print(f"error: need two parts with {BLIND_FILE} under {args.root}", file=sys.stderr)
            return 2
        dev = load_parts(args.root, args.part)
    except RagtriageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    diagnoser = Diagnoser("rules", cast(Strategy, args.strategy), cfg.diagnosis)
    found = diagnose_parts(dev, diagnoser, workers=args.workers)
    by_dev = {part.name: cases_of([part], [f]) for part, f in zip(dev, found, strict=True)}
    by_nat: dict[str, list[Case]] = {}
    if args.natural is not None:
        # the natural-answer parts (current diagnoses, every label): natural answers are
        # scored by the same table, so they are fitted on too and measured part by part
        nat = load_parts(args.natural, [])
        nat_found = diagnose_parts(nat, diagnoser, workers=args.workers)
        by_nat = {
            f"{args.natural.name}/{part.name}": cases_of([part], [f])
            for part, f in zip(nat, nat_found, strict=True)
        }
    dev_cases = [x for cases in by_dev.values() for x in cases]
    nat_cases = [x for cases in by_nat.values() for x in cases]
    current = default_table()
    blind = [x for cases in by_part.values() for x in cases]
    fitted, _ = fit_table(blind + dev_cases + nat_cases, cfg.diagnosis, current, c=args.c)
    natural = f" and {len(nat_cases)} of {len(by_nat)} natural parts" if by_nat else ""
    fitted = ConfidenceTable(
        fitted.groups,
        source=f"fit on {len(blind)} first-contact diagnoses of {len(by_part)} blind parts "
        f"and {len(dev_cases)} current diagnoses of {len(by_dev)} parts{natural} "
        f"(C={args.c:g})",
    )
    print(f"blind parts: {', '.join(f'{n} ({len(c)})' for n, c in by_part.items())}")
    print(f"current table, blind:         {_fmt(scored(blind, cfg.diagnosis, current))}")
    lopo = leave_one_part_out(by_part, cfg.diagnosis, current, args.c, also={**by_dev, **by_nat})
    print(f"leave-one-part-out, blind:    {_fmt(lopo)}")
    print(f"current table, development:   {_fmt(scored(dev_cases, cfg.diagnosis, current))}")
    print(f"fitted table, development:    {_fmt(scored(dev_cases, cfg.diagnosis, fitted))}")
    if by_nat:
        blind_named = {f"blind:{n}": c for n, c in by_part.items()}
        print(f"current table, natural:       {_fmt(scored(nat_cases, cfg.diagnosis, current))}")
        nat_lopo = leave_one_part_out(
            by_nat, cfg.diagnosis, current, args.c, also={**by_dev, **blind_named}
        )
        print(f"leave-one-part-out, natural:  {_fmt(nat_lopo)}")
        for name, cases in by_nat.items():
            held = leave_one_part_out(
                {name: cases},
                cfg.diagnosis,
                current,
                args.c,
                also={**by_dev, **blind_named, **{k: v for k, v in by_nat.items() if k != name}},
            )
            print(f"  {name:<22} current {_fmt(scored(cases, cfg.diagnosis, current))}")
            print(f"  {'':<22} held out {_fmt(held)}")
    _save(args, fitted)
    return 0


if __name__ == "__main__":
    sys.exit(main())
