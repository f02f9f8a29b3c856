"""``--llm-batch-submit``: send ``requests.jsonl`` to an OpenAI-compatible Batch API.

Upload the file (``POST /files``, purpose ``batch``), create the batch (``POST
/batches``, endpoint ``/v1/chat/completions``, window 24h), poll it (``GET
/batches/{id}``) until it is completed, failed, expired or cancelled, and download its
output and error files (``GET /files/{id}/content``) next to the requests.

Resumable: every step is recorded in ``DIR/batch.json`` before the next one starts, so
a run killed while waiting polls the *same* batch when it is started again instead of
paying for a second one. A run killed between creating the batch and recording its id
finds it again by its input file (``GET /batches``). Once the output is imported the
state moves to ``DIR/batches.jsonl`` (the history) and ``batch.json`` is removed.

This is the only module that imports the openai SDK for batch mode; it is imported
only on this code path.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import openai

from ragtriage.config import LLMConfig
from ragtriage.errors import ConfigError, LLMError, StoreError
from ragtriage.jsonl import append_jsonl, atomic_write_text
from ragtriage.llm._batch import BATCH_ENDPOINT, REQUESTS_FILE, STATE_FILE
from ragtriage.llm._openai import translate_openai_error

__all__ = ["HISTORY_FILE", "STATE_FILE", "BatchSubmitter"]

HISTORY_FILE = "batches.jsonl"
_TERMINAL = frozenset({"completed", "failed", "expired", "cancelled"})
# sent when no key is configured, as the live client does: it keeps the SDK from
# sending OPENAI_API_KEY to an endpoint the user did not name
_PLACEHOLDER_KEY = "ragtriage-no-key"


class BatchSubmitter:
    """Submits and follows one batch at a time for the batch directory ``out_dir``."""

    def __init__(
        self,
        out_dir: Path,
        config: LLMConfig,
        *,
        log: Callable[[str], None] = print,
        sleep: Callable[[float], None] | None = None,
    ) -> None:
        if not config.base_url:
            raise ConfigError(
                "--llm-batch-submit needs the endpoint's base URL (its Batch API): set "
                "llm.base_url, RAGTRIAGE_LLM_BASE_URL or --base-url, e.g. "
                "https://api.openai.com/v1",
                field="llm.base_url",
            )
        self._dir = out_dir
        self._config = config
        self._log = log
        self._sleep = sleep if sleep is not None else time.sleep
        self._sdk: openai.OpenAI | None = None

    # -- state --------------------------------------------------------------------------

    @property
    def state_path(self) -> Path:
        return self._dir / STATE_FILE

    def state(self) -> dict[str, Any] | None:
        """The batch in flight (``batch.json``), if any."""
        path = self.state_path
        if not path.exists():
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise StoreError(
                f"{path}: unreadable batch state ({exc}); if no batch is in flight, delete it"
            ) from exc
        if not isinstance(data, dict):
            raise StoreError(f"{path}: expected a JSON object (the batch in flight)")
        return data

    def _save(self, state: dict[str, Any]) -> None:
        state["updated_at"] = time.time()
        atomic_write_text(self.state_path, json.dumps(state, indent=1, sort_keys=True) + "\n")

    def _client(self) -> openai.OpenAI:
        if self._sdk is None:
            cfg = self._config
            self._sdk = openai.OpenAI(
                base_url=cfg.base_url,
                api_key=cfg.api_key or _PLACEHOLDER_KEY,
                max_retries=cfg.max_retries,
                timeout=cfg.timeout_s,
            )
        return self._sdk

    # -- steps --------------------------------------------------------------------------

    def resume(self) -> list[Path]:
        """The output files of a batch an earlier run left in flight (polled to its end),
        or ``[]`` when there is none."""
        state = self.state()
        if state is None:
            return []
        self._log(
            f"resuming the batch recorded in {self.state_path} "
            f"({state.get('batch_id') or 'not created yet'})"
        )
        return self._follow(state)

    def submit(self) -> list[Path]:
        """Upload ``requests.jsonl``, create the batch, wait for it, download its output
        (a batch already in flight is followed instead of a new one)."""
        state = self.state()
        if state is not None:
            return self._follow(state)
        requests = self._dir / REQUESTS_FILE
        data = requests.read_bytes()
        state = {
            "requests_file": str(requests),
            "requests_sha256": hashlib.sha256(data).hexdigest(),
            "requests": data.count(b"\n"),
            "endpoint": BATCH_ENDPOINT,
            "base_url": self._config.base_url,
            "status": "uploading",
            "created_at": time.time(),
        }
        self._save(state)
        return self._follow(state)

    def mark_imported(self) -> None:
        """The output is in the cache: move the state to the history."""
        state = self.state()
        if state is None:
            return
        state["imported"] = True
        state["imported_at"] = time.time()
        append_jsonl(self._dir / HISTORY_FILE, state)
        self.state_path.unlink(missing_ok=True)

    def _call(self, what: str, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except openai.OpenAIError as exc:
            error = translate_openai_error(exc)
            raise LLMError(f"batch API: {what} failed: {error}") from exc

    def _upload(self, state: dict[str, Any]) -> None:
        requests = self._dir / REQUESTS_FILE
        data = requests.read_bytes()
        client = self._client()
        created = self._call(
            f"uploading {requests}",
            lambda: client.files.create(
                file=(REQUESTS_FILE, data, "application/jsonl"), purpose="batch"
            ),
        )
        state["input_file_id"] = created.id
        state["requests_sha256"] = hashlib.sha256(data).hexdigest()
        state["status"] = "uploaded"
        self._save(state)
        self._log(f"uploaded {requests} as file {created.id}")

    def _find_batch(self, input_file_id: str) -> Any | None:
        """A batch already created over ``input_file_id`` (a run killed before it could
        record the batch id), newest first."""
        client = self._client()
        page = self._call("listing batches", lambda: client.batches.list(limit=100))
        for batch in page.data:
            if getattr(batch, "input_file_id", None) == input_file_id:
                return batch
        return None

    def _create(self, state: dict[str, Any]) -> None:
        input_file_id = str(state["input_file_id"])
        batch = self._find_batch(input_file_id)
        if batch is None:
            client = self._client().with_options(max_retries=0)  # never two batches
            try:
                batch = client.batches.create(
                    input_file_id=input_file_id,
                    endpoint="/v1/chat/completions",
                    completion_window="24h",
                    metadata={"ragtriage_requests_sha256": str(state.get("requests_sha256"))},
                )
            except openai.OpenAIError as exc:
                # the batch may exist although the answer was lost: look before failing
                with contextlib.suppress(LLMError):
                    batch = self._find_batch(input_file_id)
                if batch is None:
                    raise LLMError(
                        f"batch API: creating the batch failed: {translate_openai_error(exc)}"
                    ) from exc
        state["batch_id"] = batch.id
        state["status"] = batch.status
        self._save(state)
        self._log(f"created batch {batch.id} ({state.get('requests')} requests)")

    def _poll(self, state: dict[str, Any]) -> Any:
        client = self._client()
        batch_id = str(state["batch_id"])
        last = None
        while True:
            batch = self._call(
                f"polling batch {batch_id}", lambda: client.batches.retrieve(batch_id)
            )
            counts = getattr(batch, "request_counts", None)
            progress = (
                f" ({counts.completed} of {counts.total} done, {counts.failed} failed)"
                if counts is not None
                else ""
            )
            if batch.status != last:
                self._log(f"batch {batch_id}: {batch.status}{progress}")
                last = batch.status
                state["status"] = batch.status
                self._save(state)
            if batch.status in _TERMINAL:
                return batch
            self._sleep(self._config.batch_poll_s)

    def _download(self, state: dict[str, Any], batch: Any) -> list[Path]:
        client = self._client()
        batch_id = str(state["batch_id"])
        if batch.status == "failed":
            errors = getattr(getattr(batch, "errors", None), "data", None) or []
            detail = "; ".join(
                f"{getattr(e, 'code', '')}: {getattr(e, 'message', '')}"
                + (f" (line {e.line})" if getattr(e, "line", None) else "")
                for e in errors[:5]
            )
            self.mark_imported()  # nothing to import: the next run submits afresh
            raise LLMError(f"batch {batch_id} failed{': ' + detail if detail else ''}")
        files: list[Path] = []
        for kind, file_id in (("output", batch.output_file_id), ("errors", batch.error_file_id)):
            if not file_id:
                continue
            content = self._call(
                f"downloading {kind} file {file_id}",
                functools.partial(client.files.content, file_id),
            )
            path = self._dir / f"{kind}-{batch_id}.jsonl"
            atomic_write_text(path, content.content.decode("utf-8"))
            files.append(path)
            self._log(f"downloaded {path}")
        if batch.status != "completed":
            self._log(
                f"batch {batch_id} ended {batch.status}: the requests it did not answer "
                "are exported again next round"
            )
        state["output_files"] = [str(p) for p in files]
        state["status"] = f"{batch.status}, downloaded"
        self._save(state)
        return files

    def _follow(self, state: dict[str, Any]) -> list[Path]:
        if not state.get("batch_id"):
            if not state.get("input_file_id"):
                self._upload(state)
            self._create(state)
        batch = self._poll(state)
        return self._download(state, batch)
