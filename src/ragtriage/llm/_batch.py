"""Batch mode: export the LLM requests a command needs, import the replies later.

Instead of calling the endpoint, a batch-mode :class:`~ragtriage.llm.LLMRunner` adds each
sample missing from the response cache to a :class:`BatchCollector`; the command then
writes them with :func:`write_requests` to ``DIR/requests.jsonl`` in the OpenAI Batch API
input format (what vLLM's ``run_batch`` reads too)::

    {"custom_id": <cache key of the sample>, "method": "POST",
     "url": "/v1/chat/completions", "body": <the chat-completion request>}

One line per sample: a request for K samples gives K lines, sample ``i`` with the seed the
runner gives it (``seed + i``), exactly the body the live client would post for it.
:func:`import_outputs` reads Batch API output files (vLLM writes the same shape)::

    {"id": ..., "custom_id": ..., "response": {"status_code": 200, "request_id": ...,
     "body": <chat.completion>}, "error": null}

into the cache under ``custom_id`` (usage and model optional: a minimal line
``{"custom_id": ..., "response": {"status_code": 200, "body": {"choices": [{"message":
{"content": "..."}}]}}}`` is enough). A line with an ``error``, a non-200 status or no
text is a *failure*: it is recorded in the cache's ``batch_failures`` table, and a later
batch-mode run reports the step as undetermined with that message instead of exporting
the request again (``retry_failed`` exports it again). A live run ignores the table.

:class:`BatchSession` ties it together for one command run; with ``submit`` it also
uploads the requests, creates the batch, polls it and imports the output
(:mod:`ragtriage.llm._batch_submit`, the only place the openai SDK is imported).
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragtriage.config import LLMConfig
from ragtriage.errors import ConfigError, InputError, LLMError
from ragtriage.jsonl import file_lock, iter_json_lines, stream_write_lines
from ragtriage.llm._base import ChatRequest, Completion, Usage
from ragtriage.llm._cache import DEFAULT_CACHE_PATH, BatchFailureRecord, CachedSample, ResponseCache
from ragtriage.llm._errors import BatchNextRound
from ragtriage.llm._ledger import Ledger
from ragtriage.llm._payload import SchemaMode, chat_payload
from ragtriage.llm._runner import LLMRunner, _sample_seed
from ragtriage.llm._tokens import estimate_tokens

__all__ = [
    "BATCH_ENDPOINT",
    "REQUESTS_FILE",
    "BatchCollector",
    "BatchNextRound",
    "BatchOnlyClient",
    "BatchReply",
    "BatchSession",
    "ExportResult",
    "ImportStats",
    "import_outputs",
    "read_output_file",
    "write_requests",
]

REQUESTS_FILE = "requests.jsonl"
#: the batch --llm-batch-submit has in flight (ragtriage.llm._batch_submit)
STATE_FILE = "batch.json"
BATCH_ENDPOINT = "/v1/chat/completions"
_LOCK_FILE = ".requests.lock"
_MESSAGE_OVERHEAD = 4  # as ragtriage.llm._tokens (prompt estimate of an exported body)
_REQUEST_OVERHEAD = 3


class BatchOnlyClient:
    """The client of a batch-exporting runner: it names the model (the cache keys
    include it) and is never called -- the runner exports instead."""

    def __init__(self, model: str) -> None:
        self.model_name = model

    async def complete(self, request: ChatRequest) -> Completion:
        raise LLMError("batch mode makes no LLM calls (the request goes to the batch)")


class BatchCollector:
    """The samples a batch-mode runner could not answer from the cache, as Batch API
    request lines (one per sample, keyed by its cache key).

    ``model`` fills requests that name none (as the live client does); ``schema_mode``
    is how a JSON schema is sent (``response_format``, or ``prompt`` for endpoints
    configured with ``supports_json_schema: false``). ``retry_failed``: samples a
    batch answered with an error are exported again instead of failing.
    """

    def __init__(
        self, *, model: str, schema_mode: SchemaMode = "response_format", retry_failed: bool = False
    ) -> None:
        self._model = model
        self._schema_mode = schema_mode
        self.retry_failed = retry_failed
        self._lines: dict[str, dict[str, Any]] = {}
        self._purposes: dict[str, str] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._lines)

    def add(self, request: ChatRequest, samples: Sequence[tuple[int, str]], purpose: str) -> None:
        """Add samples ``(index, cache key)`` of ``request`` (a key already added is kept)."""
        for index, key in samples:
            if key in self._lines:
                continue
            body = chat_payload(
                request,
                model=self._model,
                n=1,
                seed=_sample_seed(request.seed, index),
                schema_mode=self._schema_mode,
            )
            line = {"custom_id": key, "method": "POST", "url": BATCH_ENDPOINT, "body": body}
            with self._lock:
                self._lines.setdefault(key, line)
                self._purposes.setdefault(key, purpose)

    def failures(
        self, keys: Sequence[str], cache: ResponseCache | None
    ) -> dict[str, BatchFailureRecord]:
        """The recorded batch failures among ``keys`` (none with ``retry_failed``)."""
        if self.retry_failed or cache is None:
            return {}
        return cache.batch_failures(keys)

    def lines(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._lines.values())

    def purposes(self) -> dict[str, str]:
        with self._lock:
            return dict(self._purposes)

    def clear(self) -> None:
        with self._lock:
            self._lines.clear()
            self._purposes.clear()


# -- export -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ExportResult:
    """What :func:`write_requests` wrote: ``new`` lines added, ``total`` lines in the file,
    ``dropped`` lines of an earlier export that are answered (or failed) by now."""

    path: Path
    new: int
    total: int
    dropped: int


def _existing_lines(path: Path) -> list[tuple[int, dict[str, Any]]]:
    if not path.exists():
        return []
    out: list[tuple[int, dict[str, Any]]] = []
    for lineno, obj in iter_json_lines(path):
        cid = obj.get("custom_id")
        if not isinstance(cid, str) or not cid:
            raise InputError(
                "expected a Batch API request line with a custom_id (this file is "
                "rewritten by batch export: move it away or delete it)",
                path=str(path),
                line=lineno,
                field="custom_id",
            )
        out.append((lineno, obj))
    return out


def write_requests(out_dir: Path, collector: BatchCollector, cache: ResponseCache) -> ExportResult:
    """Merge the collector's requests into ``out_dir/requests.jsonl`` (atomic rewrite,
    under a lock): lines already there stay (in their order) unless their sample is in
    the cache or failed by now; new samples are appended; no custom_id twice. The
    exported samples' purposes and bodies are remembered in the cache file."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / REQUESTS_FILE
    new_lines = collector.lines()
    purposes = collector.purposes()
    with file_lock(out_dir / _LOCK_FILE):
        existing = _existing_lines(path)
        old_ids = [str(obj["custom_id"]) for _, obj in existing]
        settled = set(cache.get_many(old_ids))
        if not collector.retry_failed:
            settled |= set(cache.batch_failures(old_ids))
        kept: dict[str, dict[str, Any]] = {}
        for _, obj in existing:
            cid = str(obj["custom_id"])
            if cid not in settled:
                kept.setdefault(cid, obj)
        dropped = len(existing) - len(kept)
        added = 0
        for line in new_lines:
            cid = str(line["custom_id"])
            if cid not in kept:
                kept[cid] = line
                added += 1
        stream_write_lines(path, (json.dumps(obj, ensure_ascii=False) for obj in kept.values()))
        if collector.retry_failed:
            cache.delete_batch_failures([str(line["custom_id"]) for line in new_lines])
        cache.put_batch_requests(
            (
                str(line["custom_id"]),
                purposes.get(str(line["custom_id"]), ""),
                json.dumps(line["body"], ensure_ascii=False, sort_keys=True),
            )
            for line in new_lines
        )
    return ExportResult(path=path, new=added, total=len(kept), dropped=dropped)


# -- import -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BatchReply:
    """One line of a Batch API output file: the text, or the failure (``error``)."""

    custom_id: str
    source: str
    text: str | None = None
    model: str = ""
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    error: str | None = None
    status: int | None = None


def _error_message(error: object) -> str:
    if isinstance(error, dict):
        message = error.get("message")
        code = error.get("code") or error.get("type")
        if isinstance(message, str) and message:
            return f"{code}: {message}" if isinstance(code, str) and code else message
    if isinstance(error, str) and error:
        return error
    return json.dumps(error, ensure_ascii=False, sort_keys=True)[:300]


def _body_text(body: dict[str, Any]) -> tuple[str | None, str]:
    """The first choice's text, or ``(None, why)``."""
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices:
        return None, "the reply body has no choices"

    def position(choice: dict[str, Any]) -> int:
        index = choice.get("index")
        return index if isinstance(index, int) else 0

    ordered = sorted((c for c in choices if isinstance(c, dict)), key=position)
    if not ordered:
        return None, "the reply's choices are not objects"
    message = ordered[0].get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, str):
        reason = ordered[0].get("finish_reason")
        refusal = message.get("refusal") if isinstance(message, dict) else None
        why = "the reply has no text content"
        if isinstance(refusal, str) and refusal:
            why += f" (refusal: {refusal[:200]})"
        elif isinstance(reason, str):
            why += f" (finish_reason {reason})"
        return None, why
    return content, ""


def _reply_of(obj: dict[str, Any], path: str, lineno: int) -> BatchReply:
    source = f"{path}:{lineno}"
    cid = obj.get("custom_id")
    if not isinstance(cid, str) or not cid:
        raise InputError(
            "expected a Batch API output line with a custom_id (read as JSON Lines)",
            path=path,
            line=lineno,
            field="custom_id",
        )
    error = obj.get("error")
    response = obj.get("response")
    if error is not None:
        status = response.get("status_code") if isinstance(response, dict) else None
        return BatchReply(
            cid,
            source,
            error=_error_message(error),
            status=status if isinstance(status, int) else None,
        )
    if not isinstance(response, dict):
        raise InputError(
            "expected a 'response' object (or an 'error') in a Batch API output line",
            path=path,
            line=lineno,
            field="response",
        )
    status = response.get("status_code", 200)
    if not isinstance(status, int) or isinstance(status, bool):
        raise InputError(
            f"expected an integer HTTP status, got {status!r}",
            path=path,
            line=lineno,
            field="response.status_code",
        )
    body = response.get("body")
    if isinstance(body, str):  # some writers store the body as a JSON string
        with contextlib.suppress(ValueError):
            body = json.loads(body)
    if status != 200:
        detail = body.get("error") if isinstance(body, dict) else body
        return BatchReply(
            cid, source, error=f"HTTP {status}: {_error_message(detail)}", status=status
        )
    if not isinstance(body, dict):
        return BatchReply(cid, source, error="the reply body is not a JSON object", status=status)
    text, why = _body_text(body)
    if text is None:
        return BatchReply(cid, source, error=why, status=status)
    usage = body.get("usage")
    prompt = usage.get("prompt_tokens") if isinstance(usage, dict) else None
    completion = usage.get("completion_tokens") if isinstance(usage, dict) else None
    model = body.get("model")
    return BatchReply(
        cid,
        source,
        text=text,
        model=model if isinstance(model, str) else "",
        prompt_tokens=prompt if isinstance(prompt, int) and prompt >= 0 else None,
        completion_tokens=completion if isinstance(completion, int) and completion >= 0 else None,
    )


def read_output_file(path: str | Path) -> list[BatchReply]:
    """Every line of a Batch API (or vLLM ``run_batch``) output or error file. A line
    that is not one (not JSON, no custom_id, neither response nor error) is an
    :class:`InputError` naming the file, line and field."""
    name = str(path)
    return [_reply_of(obj, name, lineno) for lineno, obj in iter_json_lines(path)]


@dataclass
class ImportStats:
    """What :func:`import_outputs` did. ``answered``: samples newly cached; ``known``:
    replies whose sample was cached already; ``failed``: failures newly recorded;
    ``unknown``: replies to requests this cache never exported; ``estimated_usage``:
    replies without usage (tokens estimated)."""

    files: int = 0
    lines: int = 0
    answered: int = 0
    known: int = 0
    failed: int = 0
    unknown: int = 0
    estimated_usage: int = 0
    failures: list[str] = field(default_factory=list)

    def describe(self) -> str:
        parts = [
            f"imported {self.answered} new repl{'y' if self.answered == 1 else 'ies'} from "
            f"{self.files} batch output file{'s' if self.files != 1 else ''} "
            f"({self.lines} line{'s' if self.lines != 1 else ''}"
        ]
        if self.known:
            parts.append(f", {self.known} already cached")
        if self.failed:
            parts.append(f", {self.failed} failed")
        if self.unknown:
            parts.append(f", {self.unknown} not exported from this cache")
        if self.estimated_usage:
            parts.append(f", {self.estimated_usage} without usage: tokens estimated")
        return "".join(parts) + ")"


def _prompt_estimate(body_json: str | None) -> int:
    if not body_json:
        return 0
    try:
        body = json.loads(body_json)
    except ValueError:
        return 0
    messages = body.get("messages") if isinstance(body, dict) else None
    if not isinstance(messages, list):
        return 0
    return _REQUEST_OVERHEAD + sum(
        _MESSAGE_OVERHEAD + estimate_tokens(str(m.get("content", "")))
        for m in messages
        if isinstance(m, dict)
    )


def import_outputs(
    paths: Iterable[str | Path], cache: ResponseCache, ledger: Ledger | None = None
) -> ImportStats:
    """Load Batch API output files into ``cache`` under each line's custom_id. Every
    file is read (and checked) before anything is stored. A success clears a failure
    recorded for its sample; a failure is recorded only for a sample not cached. New
    replies are counted in ``ledger`` as batch calls under their exported purpose."""
    stats = ImportStats()
    replies: list[BatchReply] = []
    for p in paths:
        stats.files += 1
        these = read_output_file(p)
        stats.lines += len(these)
        replies.extend(these)
    ids = [r.custom_id for r in replies]
    cached = set(cache.get_many(ids))
    exported = cache.batch_requests(ids)
    fresh: dict[str, tuple[CachedSample, str]] = {}
    failures: dict[str, BatchFailureRecord] = {}
    for r in replies:
        if r.custom_id not in exported:
            stats.unknown += 1
        if r.custom_id in cached or r.custom_id in fresh:
            stats.known += 1
            continue
        purpose, body = exported.get(r.custom_id, ("batch", ""))
        if r.text is None:
            failures.setdefault(
                r.custom_id,
                BatchFailureRecord(message=r.error or "failed", status=r.status, source=r.source),
            )
            continue
        prompt = r.prompt_tokens
        completion = r.completion_tokens
        if prompt is None or completion is None:
            stats.estimated_usage += 1
            prompt = _prompt_estimate(body) if prompt is None else prompt
            completion = estimate_tokens(r.text) if completion is None else completion
        sample = CachedSample(
            text=r.text,
            model=r.model or _body_model(body),
            prompt_tokens=prompt,
            completion_tokens=completion,
        )
        fresh[r.custom_id] = (sample, purpose or "batch")
        failures.pop(r.custom_id, None)  # one success among the files wins
    cache.put_many((key, sample) for key, (sample, _) in fresh.items())
    cache.delete_batch_failures(list(fresh))
    cache.put_batch_failures(failures.items())
    stats.answered = len(fresh)
    stats.failed = len(failures)
    stats.failures = [f"{f.source}: {f.message}" for f in failures.values()]
    if ledger is not None:
        for sample, purpose in fresh.values():
            ledger.record_batch_reply(
                purpose,
                Usage(
                    prompt_tokens=sample.prompt_tokens, completion_tokens=sample.completion_tokens
                ),
            )
    return stats


def _body_model(body_json: str) -> str:
    try:
        body = json.loads(body_json) if body_json else None
    except ValueError:
        return ""
    model = body.get("model") if isinstance(body, dict) else None
    return model if isinstance(model, str) else ""


# -- one command run ------------------------------------------------------------------------


class BatchSession:
    """Batch mode for one command run.

    ``out_dir``: export the requests missing from the cache there (``None``: only import
    ``inputs`` and let the command call the endpoint as usual). ``inputs``: Batch API
    output files to import first. ``submit``: send ``requests.jsonl`` to the endpoint's
    Batch API, wait for it, import the output and ask for another round
    (:class:`BatchNextRound`). ``log`` receives one line per event.
    """

    def __init__(
        self,
        config: LLMConfig,
        *,
        out_dir: Path | None,
        inputs: Sequence[Path] = (),
        submit: bool = False,
        retry_failed: bool = False,
        cache_path: str | Path | None = None,
        log: Callable[[str], None] = print,
        sleep: Callable[[float], None] | None = None,
    ) -> None:
        cfg = config.with_env()
        if submit and out_dir is None:
            raise ConfigError(
                "--llm-batch-submit needs --llm-batch-out DIR (where requests.jsonl, "
                "batch.json and the outputs live)",
                field="--llm-batch-submit",
            )
        if retry_failed and out_dir is None:
            raise ConfigError(
                "--llm-batch-retry-failed needs --llm-batch-out DIR",
                field="--llm-batch-retry-failed",
            )
        if out_dir is not None and not cfg.model:
            raise ConfigError(
                "batch mode needs the model name (it is part of every request and cache "
                "key): pass --model, set RAGTRIAGE_LLM_MODEL or llm.model",
                field="llm.model",
            )
        path = str(cache_path or cfg.cache_path or DEFAULT_CACHE_PATH)
        if path == ":memory:":
            raise ConfigError(
                "batch mode needs a cache file (replies are imported into it)", field="--cache"
            )
        self.config = cfg
        self.out_dir = out_dir
        self.inputs = list(inputs)
        self.submit = submit
        self.cache_path = path
        self._log = log
        self._sleep = sleep
        self.ledger = self._new_ledger()
        self.collector = (
            BatchCollector(
                model=cfg.model or "",
                schema_mode="prompt" if cfg.supports_json_schema is False else "response_format",
                retry_failed=retry_failed,
            )
            if out_dir is not None
            else None
        )
        self.last_import: ImportStats | None = None
        self.last_export: ExportResult | None = None

    def _new_ledger(self) -> Ledger:
        cfg = self.config
        return Ledger(
            cfg.price_per_1k_prompt,
            cfg.price_per_1k_completion,
            batch_price_factor=cfg.batch_price_factor,
            batch_estimates=self.out_dir is not None,
        )

    @property
    def exporting(self) -> bool:
        return self.collector is not None

    @property
    def pending(self) -> int:
        """Samples added to the batch so far (this run)."""
        return 0 if self.collector is None else len(self.collector)

    def _submitter(self) -> Any:
        from ragtriage.llm._batch_submit import BatchSubmitter

        assert self.out_dir is not None
        return BatchSubmitter(self.out_dir, self.config, log=self._log, sleep=self._sleep)

    def start(self) -> ImportStats | None:
        """Import ``inputs`` (and, with ``submit``, the output of a batch an earlier run
        left in flight: it is polled, not submitted again)."""
        files = list(self.inputs)
        if not self.submit and self.out_dir is not None and (self.out_dir / STATE_FILE).exists():
            self._log(
                f"warning: a submitted batch is in flight ({self.out_dir / STATE_FILE}): "
                "run with --llm-batch-submit to follow it rather than answering its "
                "requests a second time"
            )
        submitter = self._submitter() if self.submit else None
        if submitter is not None:
            files += submitter.resume()
        if not files:
            return None
        stats = self._import(files)
        if submitter is not None:
            submitter.mark_imported()
        return stats

    def _import(self, files: Sequence[Path]) -> ImportStats:
        with ResponseCache(self.cache_path) as cache:
            stats = import_outputs(files, cache, self.ledger)
        self._log(stats.describe())
        if stats.answered:
            total = self.ledger.summary().total
            self._log(
                f"  {total.batch_calls} batch repl{'y' if total.batch_calls == 1 else 'ies'} "
                f"imported by this run: {total.batch_prompt_tokens} prompt + "
                f"{total.batch_completion_tokens} completion tokens, cost {total.cost:.4f} at "
                f"the batch price ({self.ledger.batch_price_factor:g} of the listed)"
            )
        for line in stats.failures[:5]:
            self._log(f"  failed: {line}")
        if len(stats.failures) > 5:
            self._log(f"  ... and {len(stats.failures) - 5} more failures")
        self.last_import = stats
        return stats

    def runner(
        self, client: Callable[[BatchOnlyClient], Any] | None = None, *, fresh_ledger: bool = False
    ) -> LLMRunner:
        """A runner exporting what the cache lacks (it owns its cache connection).
        ``client`` wraps the never-called client (a pipeline's usage meter);
        ``fresh_ledger``: count in a ledger of its own (a second pass over the same
        requests), not the session's."""
        if self.collector is None:
            raise ConfigError(
                "no --llm-batch-out: this run calls the endpoint", field="--llm-batch-out"
            )
        inner = BatchOnlyClient(self.config.model or "")
        runner = LLMRunner(
            client(inner) if client is not None else inner,
            self.config,
            cache=ResponseCache(self.cache_path),
            ledger=self._new_ledger() if fresh_ledger else self.ledger,
            batch=self.collector,
        )
        runner._owns_cache = True
        return runner

    def _prune(self) -> None:
        """Nothing pending: drop the answered (or failed) lines of an earlier export from
        ``requests.jsonl`` -- sent again they would be paid twice -- and remove the file
        when none is left (lines other commands exported stay)."""
        assert self.out_dir is not None and self.collector is not None
        if not (self.out_dir / REQUESTS_FILE).exists():
            return
        with ResponseCache(self.cache_path) as cache:
            result = write_requests(self.out_dir, self.collector, cache)
        if result.total == 0:
            result.path.unlink(missing_ok=True)
            self._log(f"batch mode: every request is answered; removed {result.path}")
        elif result.dropped:
            self._log(
                f"batch mode: nothing pending for this command; {result.total} request(s) "
                f"of other runs left in {result.path}"
            )

    def finish(self) -> bool:
        """After the command's computation: ``False`` when nothing is pending (the
        command writes its outputs); otherwise write ``requests.jsonl`` and return
        ``True`` (the command stops, writing nothing) -- or, with ``submit``, submit it,
        wait, import the output and raise :class:`BatchNextRound`."""
        if self.collector is None:
            return False
        assert self.out_dir is not None
        if not len(self.collector):
            self._prune()
            return False
        with ResponseCache(self.cache_path) as cache:
            result = write_requests(self.out_dir, self.collector, cache)
        self.last_export = result
        total = self.ledger.summary().total
        factor = self.ledger.batch_price_factor
        self._log(
            f"batch mode: {len(self.collector)} LLM request(s) still need an answer: wrote "
            f"{result.new} new to {result.path} ({result.total} pending there"
            + (f", {result.dropped} answered since dropped" if result.dropped else "")
            + f"); about {total.estimated_prompt_tokens} prompt + <= "
            f"{total.estimated_completion_tokens} completion tokens, estimated cost "
            f"{total.estimated_cost:.4f} at the batch price ({factor:g} of the listed)"
        )
        if not self.submit:
            self._log(
                "nothing else was written: answer the requests (OpenAI Batch API, vLLM "
                "run_batch; see docs/batch.md), then run this command again with "
                "--llm-batch-in OUTPUT.jsonl (and the same --llm-batch-out) for the next "
                "round, until nothing is pending"
            )
            return True
        submitter = self._submitter()
        files = submitter.submit()
        stats = self._import(files)
        submitter.mark_imported()
        self.collector.clear()
        if not stats.answered and not stats.failed:
            raise LLMError(
                f"the batch answered none of the {result.total} request(s) it was sent "
                f"(its output: {', '.join(str(f) for f in files) or 'none'}); stopping "
                "instead of submitting them again"
            )
        raise BatchNextRound
