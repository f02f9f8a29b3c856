"""One calibration run: bases → injected faults → diagnoses per judge x strategy →
metrics, and the files it writes (``calibration.json``, ``injected_traces.jsonl``,
``diagnoses.jsonl``, ``base_traces.jsonl``)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from pydantic import JsonValue

from ragtriage.calibrate._parts import PipelineParts
from ragtriage.calibrate.calibration import Prediction, SettingReport, score_setting
from ragtriage.calibrate.inject import (
    INJECTORS,
    AnswerMode,
    Base,
    BaseSummary,
    InjectedCase,
    Injector,
    InjectorCounts,
    LLMRewriter,
    build_bases,
    inject,
    strip_label,
)
from ragtriage.config import DiagnosisConfig, LLMConfig, config_hash
from ragtriage.diagnosis.engine import Diagnoser, Judge
from ragtriage.diagnosis.strategies import Strategy
from ragtriage.errors import ConfigError
from ragtriage.executors import Executor, diagnose_llm_on_ray, diagnose_on_ray, ray_session
from ragtriage.jsonl import atomic_write_text, write_jsonl
from ragtriage.llm import LLMRunner
from ragtriage.records import Diagnosis, Example

__all__ = [
    "BASES_FILE",
    "CALIBRATION_FILE",
    "DIAGNOSES_FILE",
    "INJECTED_FILE",
    "CalibrationResult",
    "run_calibration",
    "write_calibration",
]

CALIBRATION_FILE: Final = "calibration.json"
INJECTED_FILE: Final = "injected_traces.jsonl"
DIAGNOSES_FILE: Final = "diagnoses.jsonl"
BASES_FILE: Final = "base_traces.jsonl"


@dataclass(frozen=True)
class CalibrationResult:
    """Everything a calibration run produced."""

    bases: list[Base]
    base_summary: BaseSummary
    cases: list[InjectedCase]
    counts: dict[str, InjectorCounts]
    diagnoses: dict[str, list[Diagnosis]]
    reports: list[SettingReport]
    seed: int
    config_hash: str

    def to_dict(self) -> dict[str, JsonValue]:
        """The content of ``calibration.json``."""
        by_type: dict[str, JsonValue] = {}
        for c in self.cases:
            n = by_type.get(c.error_type.value, 0)
            by_type[c.error_type.value] = (n if isinstance(n, int) else 0) + 1
        return {
            "seed": self.seed,
            "config_hash": self.config_hash,
            "bases": self.base_summary.to_dict(),
            "cases": len(self.cases),
            "cases_by_type": by_type,
            "injectors": {name: c.to_dict() for name, c in self.counts.items()},
            "settings": {r.key: r.to_dict() for r in self.reports},
        }


async def run_calibration(
    parts: PipelineParts,
    examples: Sequence[Example],
    *,
    judges: Sequence[Judge] = ("rules",),
    strategies: Sequence[Strategy] = ("ragec",),
    seed: int = 0,
    answer_mode: AnswerMode = "oracle",
    diagnosis_config: DiagnosisConfig | None = None,
    judge_llm: LLMRunner | None = None,
    rewriter: LLMRewriter | None = None,
    injectors: Sequence[Injector] = INJECTORS,
    concurrency: int = 8,
    on_step: Callable[[str, int, int], None] | None = None,
    executor: Executor | None = None,
    llm_config: LLMConfig | None = None,
) -> CalibrationResult:
    """Build bases, inject faults, diagnose each case in every judge x strategy setting
    (the diagnoser sees label-free copies) and score them. ``on_step(phase, done,
    total)`` reports progress. A Ray ``executor`` diagnoses every setting on the
    cluster; the LLM judge's (``llm_config``: the endpoint ``judge_llm`` calls, which the
    workers read their key and address for from their environment) through one cache
    actor over ``judge_llm``'s cache file (:func:`ragtriage.executors.diagnose_llm_on_ray`)."""
    dcfg = diagnosis_config if diagnosis_config is not None else parts.config.diagnosis
    on_ray = executor is not None and executor.is_ray
    if on_ray and "llm" in judges and (judge_llm is None or llm_config is None):
        raise ConfigError(
            "the LLM judge on Ray needs its runner and its endpoint's config", field="--executor"
        )

    def tick(phase: str, total: int) -> Callable[[], None]:
        done = 0

        def step() -> None:
            nonlocal done
            done += 1
            if on_step is not None:
                on_step(phase, done, total)

        return step

    bases, summary = await build_bases(
        parts,
        examples,
        answer_mode=answer_mode,
        config=dcfg,
        on_example=tick("bases", len(examples)),
    )
    cases, counts = await inject(
        bases,
        parts,
        seed=seed,
        injectors=injectors,
        config=dcfg,
        rewriter=rewriter,
        on_case=tick("inject", len(bases) * len(injectors)),
    )
    visible = [strip_label(c.trace) for c in cases]
    diagnoses: dict[str, list[Diagnosis]] = {}
    reports: list[SettingReport] = []
    with contextlib.ExitStack() as stack:
        if on_ray:  # one cluster for every setting (joined, or started once and stopped)
            assert executor is not None
            stack.enter_context(ray_session(executor))
        for judge in judges:
            for strategy in strategies:
                diagnoser = Diagnoser(
                    judge, strategy, config=dcfg, llm=judge_llm if judge == "llm" else None
                )
                step = tick(f"{judge}/{strategy}", len(visible))

                def on_result(_d: Diagnosis, step: Callable[[], None] = step) -> None:
                    step()

                if on_ray:
                    assert executor is not None

                    def on_batch(batch: list[Diagnosis], step: Callable[[], None] = step) -> None:
                        for _ in batch:
                            step()

                    if judge == "llm":
                        assert judge_llm is not None
                        cache = judge_llm.cache
                        found = await asyncio.to_thread(
                            diagnose_llm_on_ray,
                            visible,
                            strategy=strategy,
                            config=dcfg,
                            llm=llm_config,
                            cache_path=cache.path if cache is not None else None,
                            concurrency=concurrency,
                            executor=executor,
                            on_batch=on_batch,
                        )
                    else:
                        found = await asyncio.to_thread(
                            diagnose_on_ray,
                            visible,
                            strategy=strategy,
                            config=dcfg,
                            executor=executor,
                            on_batch=on_batch,
                        )
                else:
                    found = await diagnoser.diagnose_many(visible, concurrency, on_result=on_result)
                diagnoses[f"{judge}/{strategy}"] = found
                reports.append(
                    score_setting(
                        judge,
                        strategy,
                        [c.error_type for c in cases],
                        [Prediction.from_diagnosis(d) for d in found],
                        [c.injector for c in cases],
                    )
                )
    return CalibrationResult(
        bases=bases,
        base_summary=summary,
        cases=cases,
        counts=counts,
        diagnoses=diagnoses,
        reports=reports,
        seed=seed,
        config_hash=config_hash(parts.config),
    )


def write_calibration(result: CalibrationResult, out_dir: str | Path) -> dict[str, Path]:
    """Write the run's files atomically into ``out_dir``; returns their paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {
        "calibration": out / CALIBRATION_FILE,
        "injected": out / INJECTED_FILE,
        "diagnoses": out / DIAGNOSES_FILE,
        "bases": out / BASES_FILE,
    }
    write_jsonl(paths["bases"], [b.trace for b in result.bases])
    write_jsonl(paths["injected"], [c.trace for c in result.cases])
    write_jsonl(paths["diagnoses"], [d for ds in result.diagnoses.values() for d in ds])
    atomic_write_text(
        paths["calibration"], json.dumps(result.to_dict(), indent=2, ensure_ascii=False) + "\n"
    )
    return paths
