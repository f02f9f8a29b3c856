"""The RAGEC diagnosis engine: trace in, :class:`~ragtriage.records.Diagnosis` out.

::

    diagnoser = Diagnoser("rules")                       # offline, deterministic
    diagnoser = Diagnoser("llm", llm=LLMRunner(client, cfg.llm, cache=...))
    diagnosis = await diagnoser.diagnose(trace)
    diagnoses = await diagnoser.diagnose_many(traces, concurrency=8)
    diagnoser = Diagnoser("rules", judges=lambda calls: replace(rules_judges(cfg), types=mine))

Steps (seed 000, §5): answer evaluation (B.1) → only failures go on → stage and
error-type votes by the chosen strategy (B.2-B.4) → mode / second mode / frequency →
advice for the modal types. Each judging step is one protocol of
:mod:`ragtriage.diagnosis.judges`; the diagnoser builds one bundle per trace. Every
step that cannot decide leaves the diagnosis ``undetermined`` with a
``"step: cause"`` reason; nothing is dropped.
"""

from __future__ import annotations

import asyncio
import gc
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Literal, cast

from ragtriage._regex import compile_all
from ragtriage.config import DiagnosisConfig
from ragtriage.diagnosis._calls import LLMCalls, RequestOptions
from ragtriage.diagnosis.advice import advice_for
from ragtriage.diagnosis.answer_eval import needs_diagnosis
from ragtriage.diagnosis.confidence import with_confidence
from ragtriage.diagnosis.judges import (
    Judges,
    JudgesFactory,
    answer_with_findings,
    llm_judges,
    rules_judges,
)
from ragtriage.diagnosis.strategies import (
    STRATEGIES,
    Attribution,
    CostOptions,
    Strategy,
    StrategyEnv,
    attribute,
)
from ragtriage.diagnosis.votes import summarize_votes
from ragtriage.errors import ConfigError, InputError
from ragtriage.llm import LLMRunner
from ragtriage.records import AnswerCorrectness, Diagnosis, ErrorType, Judgement, LLMUsage, Trace

__all__ = ["JUDGES", "Diagnoser", "Judge", "advice_texts"]

Judge = Literal["rules", "llm"]
JUDGES: tuple[Judge, ...] = ("rules", "llm")


def advice_texts(mode: ErrorType | None, second: ErrorType | None) -> list[str]:
    """The actions advised for the modal type, then for the second mode (deduplicated)."""
    out: list[str] = []
    for t in (mode, second):
        if t is not None:
            out.extend(advice_for(t).actions)
    return list(dict.fromkeys(a for a in out if a.strip()))


class Diagnoser:
    """Diagnoses traces with the rules or the LLM judge and one of three strategies.

    ``options`` picks the LLM judge's cost savers (default: all on; see
    :class:`~ragtriage.diagnosis.strategies.CostOptions`). The runner's own cache,
    ledger and dry-run mode apply to every call.

    ``judges`` replaces the bundle of step judges: called once per trace with that
    trace's metered LLM access (``None`` unless ``judge="llm"`` with a runner), it
    returns a :class:`~ragtriage.diagnosis.judges.Judges`. ``judge`` still names the
    diagnoses and picks how :meth:`diagnose_many` schedules the work.
    """

    def __init__(
        self,
        judge: Judge = "rules",
        strategy: Strategy = "ragec",
        config: DiagnosisConfig | None = None,
        llm: LLMRunner | None = None,
        *,
        options: CostOptions | None = None,
        vote_temperature: float = 1.0,
        judges: JudgesFactory | None = None,
    ) -> None:
        if judge not in JUDGES:
            raise InputError(f"unknown judge {judge!r}; expected one of {JUDGES}", field="judge")
        if strategy not in STRATEGIES:
            raise InputError(
                f"unknown strategy {strategy!r}; expected one of {STRATEGIES}", field="strategy"
            )
        if judge == "llm" and llm is None and judges is None:
            raise ConfigError(
                "the LLM judge needs an OpenAI-compatible endpoint: set RAGTRIAGE_LLM_BASE_URL "
                "and RAGTRIAGE_LLM_MODEL (or llm.base_url / llm.model in the config)",
                field="llm.base_url",
            )
        self._judge: Judge = judge
        self._strategy: Strategy = strategy
        self._config = config if config is not None else DiagnosisConfig()
        self._llm = llm
        self._options = options if options is not None else CostOptions()
        self._request_options = RequestOptions(
            n_sampling=self._options.n_sampling,
            vote_temperature=vote_temperature,
            seed=self._config.seed,
        )
        self._custom_judges = judges is not None
        self._judges: JudgesFactory = judges if judges is not None else self._default_judges
        self._rules_judges = rules_judges(self._config)

    def _default_judges(self, calls: LLMCalls | None) -> Judges:
        if calls is None:
            return self._rules_judges
        return llm_judges(self._config, calls, self._options)

    @property
    def judges_replaced(self) -> bool:
        """Whether a ``judges`` factory replaced the default bundle."""
        return self._custom_judges

    @property
    def judge(self) -> Judge:
        return self._judge

    @property
    def strategy(self) -> Strategy:
        return self._strategy

    @property
    def config(self) -> DiagnosisConfig:
        return self._config

    async def diagnose(self, trace: Trace) -> Diagnosis:
        """Diagnose one trace (never raises for LLM failures: those become
        undetermined steps)."""
        calls = (
            LLMCalls(self._llm, self._request_options)
            if self._judge == "llm" and self._llm is not None
            else None
        )
        ex = trace.example
        judges = self._judges(calls)
        judgement, findings = await answer_with_findings(judges.answer, trace)
        if judgement.label is None:
            return self._record(trace, judgement, calls, needs=False)
        if not needs_diagnosis(ex, judgement.label):
            return self._record(trace, judgement, calls, needs=False)
        env = StrategyEnv(self._config, judges, judgement.rule, findings)
        attribution = await attribute(self._strategy, env, trace, judgement.label)
        return self._record(trace, judgement, calls, needs=True, attribution=attribution)

    async def diagnose_many(
        self,
        traces: Sequence[Trace],
        concurrency: int = 8,
        on_result: Callable[[Diagnosis], None] | None = None,
        *,
        workers: int = 1,
    ) -> list[Diagnosis]:
        """Diagnose many traces, at most ``concurrency`` at a time; results in input
        order. ``on_result`` is called as each diagnosis completes (for progress bars
        and resumable appends). The rules judge is CPU-bound: ``workers > 1`` spreads
        it over that many processes (the LLM judge ignores it: it waits on I/O)."""
        if concurrency < 1:
            raise InputError("concurrency must be >= 1", field="concurrency")
        if workers < 1:
            raise InputError("workers must be >= 1", field="workers")
        results: list[Diagnosis | None] = [None] * len(traces)
        if self._judge == "rules" and workers > 1 and len(traces) >= 2 * _MIN_BATCH:
            import multiprocessing  # only for a pool (a one-trace run starts faster)

            # spawned workers rebuild a default rules diagnoser: custom judges need fork
            if not self._custom_judges or "fork" in multiprocessing.get_all_start_methods():
                return await self._diagnose_in_processes(traces, workers, on_result)
        if self._judge == "rules":
            # nothing to wait for: avoid the task overhead
            with _no_collections():
                for i, trace in enumerate(traces):
                    results[i] = d = await self.diagnose(trace)
                    if on_result is not None:
                        on_result(d)
            return [d for d in results if d is not None]
        gate = asyncio.Semaphore(concurrency)

        async def one(i: int, trace: Trace) -> None:
            async with gate:
                d = await self.diagnose(trace)
            results[i] = d
            if on_result is not None:
                on_result(d)

        await asyncio.gather(*(one(i, t) for i, t in enumerate(traces)))
        return [d for d in results if d is not None]

    async def _diagnose_in_processes(
        self,
        traces: Sequence[Trace],
        workers: int,
        on_result: Callable[[Diagnosis], None] | None,
    ) -> list[Diagnosis]:
        """Split the traces into batches for a process pool. With ``fork`` the workers
        inherit the traces and the diagnoser, so only index ranges go out and the
        diagnoses come back pickled (pickling whole traces would cost more than
        diagnosing them; re-validating JSON in this process would cost a tenth of a
        diagnosis, taken from the workers' cores)."""
        global _FORKED
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        ranges = _batches(len(traces), workers)
        use_fork = "fork" in multiprocessing.get_all_start_methods()
        ctx = multiprocessing.get_context("fork" if use_fork else "spawn")
        loop = asyncio.get_running_loop()
        job = (self._strategy, self._config.model_dump(mode="json"))
        out: list[list[Diagnosis]] = [[] for _ in ranges]
        _FORKED = (self, traces) if use_fork else None
        if use_fork:
            # a forked worker evicting an inherited cache entry writes to the parent's
            # pages (reference counts), copying them: start the workers with empty caches
            _clear_text_caches()
            # what every diagnosis imports on first use, imported once here, not per worker
            import ragtriage.critic._system  # noqa: F401

            # and the rules' regular expressions (compiled on first use), compiled once here
            compile_all()

            # the workers inherit every object of this process (the traces above all):
            # frozen, their collections neither walk those nor copy their pages (see
            # gc.freeze); unfrozen, two workers diagnose no faster than one process
            gc.freeze()
        try:
            # a worker runs nothing but the rules judge, which makes no reference cycles
            # (see _no_collections): its collector is off for good. Re-enabled after each
            # batch, it walked everything the batch left alive (the per-text caches, the
            # results) on the next allocation -- about 7 % of a worker's time
            with ProcessPoolExecutor(
                max_workers=workers, mp_context=ctx, initializer=gc.disable
            ) as pool:
                futures = {
                    (
                        loop.run_in_executor(pool, _diagnose_range, lo, hi)
                        if use_fork
                        else loop.run_in_executor(pool, _diagnose_batch, job, list(traces[lo:hi]))
                    ): i
                    for i, (lo, hi) in enumerate(ranges)
                }
                pending = set(futures)
                while pending:
                    done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                    for fut in done:
                        out[futures[fut]] = batch = fut.result()
                        if on_result is not None:
                            for d in batch:
                                on_result(d)
        finally:
            _FORKED = None
            if use_fork:
                gc.unfreeze()
        return [d for batch in out for d in batch]

    def _record(
        self,
        trace: Trace,
        judgement: Judgement,
        calls: LLMCalls | None,
        *,
        needs: bool,
        attribution: Attribution | None = None,
    ) -> Diagnosis:
        """The finished diagnosis, with its confidence (``diagnosis/confidence.py``)."""
        d = self._diagnosis(trace, judgement, calls, needs=needs, attribution=attribution)
        return with_confidence(d, trace, self._config)

    def _diagnosis(
        self,
        trace: Trace,
        judgement: Judgement,
        calls: LLMCalls | None,
        *,
        needs: bool,
        attribution: Attribution | None = None,
    ) -> Diagnosis:
        ex = trace.example
        usage = calls.usage() if calls is not None else LLMUsage()
        correctness = answer_correctness(trace)
        if attribution is None:
            return Diagnosis(
                example_id=ex.example_id,
                trace_id=trace.trace_id,
                run_id=trace.run_id,
                judge=self._judge,
                strategy=self._strategy,
                answer_label=judgement.label,
                answer_reason=judgement.reason,
                answer_rule=judgement.rule,
                needs_diagnosis=needs,
                undetermined=judgement.label is None,
                undetermined_reason=judgement.undetermined_reason,
                usage=usage,
                label=ex.label,
                answer_correctness=correctness,
            )
        a = attribution
        summary = summarize_votes(a.votes)
        evidence = list(a.evidence)
        if a.votes:
            evidence.append(summary.describe())
        reason: str | None = None
        if a.stage is None:
            reason = a.stage_reason
        elif summary.mode is None:
            why = "no votes" if not a.votes else f"all {summary.k} votes undetermined"
            reason = f"type_classification: {why}"
        from ragtriage.critic._system import tiers_of_ragec  # RAG-Critic tiers (seed 004)

        tier1, tier2 = tiers_of_ragec(summary.mode) if summary.mode is not None else ([], [])
        return Diagnosis(
            example_id=ex.example_id,
            trace_id=trace.trace_id,
            run_id=trace.run_id,
            judge=self._judge,
            strategy=self._strategy,
            answer_label=judgement.label,
            answer_reason=judgement.reason,
            answer_rule=judgement.rule,
            needs_diagnosis=True,
            tier1=tier1,
            tier2=tier2,
            stage=a.stage,
            stage_reason=a.stage_reason,
            gt_chunk_ids=list(a.gt.ids) if a.gt is not None else [],
            gt_chunk_source=a.gt.source if a.gt is not None else None,
            concept_coverage=a.coverage.coverage if a.coverage is not None else None,
            concepts=list(a.coverage.concepts) if a.coverage is not None else [],
            error_type=summary.mode,
            second_type=summary.second,
            mode_frequency=summary.mode_frequency,
            votes=list(summary.votes),
            evidence=evidence,
            advice=advice_texts(summary.mode, summary.second),
            undetermined=reason is not None,
            undetermined_reason=reason,
            usage=usage,
            label=ex.label,
            answer_correctness=correctness,
        )


def answer_correctness(trace: Trace) -> AnswerCorrectness:
    """The graded score every diagnosis carries: offline claim-level precision, recall
    and F1 of the answer against the ground truth (:mod:`ragtriage.metrics._correctness`,
    no embedder: the rules judge stays model-free), rounded to 6 decimals."""
    from ragtriage.metrics._correctness import correctness_input, correctness_offline

    r = correctness_offline([correctness_input(trace)])[0]

    def rounded(x: float | None) -> float | None:
        return None if x is None else round(x, 6)

    undetermined = None in (r.precision, r.recall, r.f1)
    return AnswerCorrectness(
        precision=rounded(r.precision),
        recall=rounded(r.recall),
        f1=rounded(r.f1),
        undetermined_reason=r.reason if undetermined else None,
    )


_MIN_BATCH = 32
_MAX_BATCH = 512


def _batches(n: int, workers: int) -> list[tuple[int, int]]:
    """Index ranges covering ``range(n)`` for a pool of ``workers``: each a quarter of
    the traces left per worker (at most ``_MAX_BATCH``, at least ``_MIN_BATCH``), so the
    batches shrink towards the end -- the last one, which leaves the other workers idle
    for its length, is short -- while the first ones are long (each batch costs a
    round trip)."""
    ranges: list[tuple[int, int]] = []
    lo = 0
    while lo < n:
        size = max(_MIN_BATCH, min(_MAX_BATCH, (n - lo) // (workers * 4)))
        ranges.append((lo, min(n, lo + size)))
        lo += size
    return ranges


#: (diagnoser, traces) inherited by forked workers; set only while a pool runs
_FORKED: tuple[Diagnoser, Sequence[Trace]] | None = None


#: modules whose functools caches hold the rules judge's per-text work
_CACHED_MODULES = ("ragtriage.diagnosis.", "ragtriage.text", "ragtriage.groundtruth")


def _clear_text_caches() -> None:
    """Empty the rules judge's per-text caches (``functools.lru_cache`` functions of
    :data:`_CACHED_MODULES`); only speed depends on them."""
    for name, module in list(sys.modules.items()):
        if module is None or not name.startswith(_CACHED_MODULES):
            continue
        for value in list(vars(module).values()):
            clear = getattr(value, "cache_clear", None)
            if clear is not None and hasattr(value, "cache_info"):
                clear()


@contextmanager
def _no_collections() -> Iterator[None]:
    """The cyclic garbage collector paused while the rules judge runs, restored on exit.

    The judge allocates many short-lived objects (matches, tuples, records) and makes no
    reference cycles (``tests/test_engine.py`` checks that a collection after
    diagnosing finds none), so reference counting frees everything; the collector would
    only walk the long-lived objects -- the traces, the per-text caches -- over and over
    (about 9 % of the judge's time at a youngest-generation threshold of 100,000, more at
    the default 700). Memory stays bounded by what the caller and the caches keep."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _diagnose_range(lo: int, hi: int) -> list[Diagnosis]:
    """Forked-worker entry: diagnose ``traces[lo:hi]`` inherited from the parent."""
    if _FORKED is None:  # pragma: no cover - only reachable through a broken pool
        raise RuntimeError("worker started without inherited traces")
    diagnoser, traces = _FORKED
    return asyncio.run(diagnoser.diagnose_many(traces[lo:hi]))


def _diagnose_batch(job: tuple[str, dict[str, object]], traces: list[Trace]) -> list[Diagnosis]:
    """Spawned-worker entry: diagnose one pickled batch with the rules judge."""
    strategy, config = job
    diagnoser = Diagnoser("rules", cast(Strategy, strategy), DiagnosisConfig.model_validate(config))
    return asyncio.run(diagnoser.diagnose_many(traces))
