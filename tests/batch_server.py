"""A local OpenAI-compatible Batch API on 127.0.0.1 for tests (a real HTTP protocol
implementation, sibling of :mod:`llm_server`).

On top of the chat and embeddings routes of :class:`llm_server.LocalLLMServer` it serves

* ``POST /v1/files`` (multipart: ``file``, ``purpose``), ``GET /v1/files/{id}``,
  ``GET /v1/files/{id}/content``;
* ``POST /v1/batches``, ``GET /v1/batches/{id}``, ``GET /v1/batches`` (newest first).

A batch moves ``validating`` → ``in_progress`` → ``completed`` one step per status
poll (``GET /v1/batches/{id}``); ``hold`` keeps it ``in_progress`` until cleared. On
completion every request line is answered with ``behaviour.reply(body, i)`` (the same
hook as the chat route), except those ``fail_when(body)`` picks, which go to the error
file as Batch API error lines.

:func:`answer_lines` answers a ``requests.jsonl`` offline the same way (the shape of a
Batch API / vLLM ``run_batch`` output file).
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from llm_server import Behaviour, LocalLLMServer

__all__ = ["LocalBatchServer", "answer_lines", "chat_completion"]

Body = dict[str, Any]
_WORD = re.compile(r"[\w]+|[\u3400-\u4dbf\u4e00-\u9fff]", re.UNICODE)


def _tokens(text: str) -> int:
    return len(_WORD.findall(text))


def chat_completion(body: Body, reply: Callable[[Body, int], str], *, ident: str) -> Body:
    """The chat.completion a live endpoint would return for ``body`` (``n`` choices)."""
    n = int(body.get("n") or 1)
    texts = [reply(body, i) for i in range(n)]
    prompt = sum(_tokens(str(m.get("content", ""))) for m in body.get("messages", []))
    completion = sum(_tokens(t) for t in texts)
    return {
        "id": ident,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model") or "local-test-model",
        "choices": [
            {"index": i, "message": {"role": "assistant", "content": t}, "finish_reason": "stop"}
            for i, t in enumerate(texts)
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


def answer_lines(
    requests: list[Body],
    reply: Callable[[Body, int], str],
    *,
    fail_when: Callable[[Body], bool] | None = None,
) -> tuple[list[Body], list[Body]]:
    """``(output lines, error lines)`` for Batch API request lines, as a provider writes
    them: a 200 response with the completion, or (``fail_when``) an error line."""
    out: list[Body] = []
    errors: list[Body] = []
    for i, line in enumerate(requests):
        body = line["body"]
        if fail_when is not None and fail_when(body):
            errors.append(
                {
                    "id": f"batch_req_{i}",
                    "custom_id": line["custom_id"],
                    "response": {
                        "status_code": 500,
                        "request_id": f"req_{i}",
                        "body": {"error": {"message": "scripted failure", "type": "server"}},
                    },
                    "error": None,
                }
            )
            continue
        out.append(
            {
                "id": f"batch_req_{i}",
                "custom_id": line["custom_id"],
                "response": {
                    "status_code": 200,
                    "request_id": f"req_{i}",
                    "body": chat_completion(body, reply, ident=f"chatcmpl-b{i}"),
                },
                "error": None,
            }
        )
    return out, errors


@dataclass
class _File:
    id: str
    filename: str
    purpose: str
    data: bytes
    created_at: int


@dataclass
class _Batch:
    id: str
    input_file_id: str
    endpoint: str
    completion_window: str
    metadata: dict[str, str] | None
    created_at: int
    status: str = "validating"
    output_file_id: str | None = None
    error_file_id: str | None = None
    total: int = 0
    completed: int = 0
    failed: int = 0
    polls: int = 0

    def as_json(self) -> Body:
        return {
            "id": self.id,
            "object": "batch",
            "endpoint": self.endpoint,
            "input_file_id": self.input_file_id,
            "completion_window": self.completion_window,
            "status": self.status,
            "output_file_id": self.output_file_id,
            "error_file_id": self.error_file_id,
            "created_at": self.created_at,
            "errors": None,
            "metadata": self.metadata,
            "request_counts": {
                "total": self.total,
                "completed": self.completed,
                "failed": self.failed,
            },
        }


@dataclass
class _BatchState:
    files: dict[str, _File] = field(default_factory=dict)
    batches: dict[str, _Batch] = field(default_factory=dict)
    uploads: int = 0
    created: int = 0
    polls: int = 0
    downloads: int = 0


class LocalBatchServer(LocalLLMServer):
    """:class:`LocalLLMServer` plus the Files and Batches routes (see module doc)."""

    def __init__(self, behaviour: Behaviour | None = None) -> None:
        super().__init__(behaviour)
        self.hold = False
        self.fail_when: Callable[[Body], bool] | None = None
        self._batch_lock = threading.Lock()
        self._state = _BatchState()

    # -- inspection -----------------------------------------------------------------

    @property
    def batches_created(self) -> int:
        with self._batch_lock:
            return self._state.created

    @property
    def uploads(self) -> int:
        with self._batch_lock:
            return self._state.uploads

    def batch_ids(self) -> list[str]:
        with self._batch_lock:
            return list(self._state.batches)

    def batch_status(self, batch_id: str) -> str:
        with self._batch_lock:
            return self._state.batches[batch_id].status

    # -- routes ---------------------------------------------------------------------

    def _app(self) -> web.Application:
        app = super()._app()
        app.router.add_post("/v1/files", self._create_file)
        app.router.add_get("/v1/files/{id}", self._get_file)
        app.router.add_get("/v1/files/{id}/content", self._file_content)
        app.router.add_post("/v1/batches", self._create_batch)
        app.router.add_get("/v1/batches", self._list_batches)
        app.router.add_get("/v1/batches/{id}", self._get_batch)
        return app

    @staticmethod
    def _file_json(f: _File) -> Body:
        return {
            "id": f.id,
            "object": "file",
            "bytes": len(f.data),
            "created_at": f.created_at,
            "filename": f.filename,
            "purpose": f.purpose,
            "status": "processed",
        }

    @staticmethod
    def _not_found(what: str) -> web.Response:
        return web.json_response(
            {"error": {"message": f"no such {what}", "type": "invalid_request_error"}},
            status=404,
        )

    async def _create_file(self, request: web.Request) -> web.StreamResponse:
        form = await request.post()
        upload = form.get("file")
        purpose = form.get("purpose")
        if not isinstance(upload, web.FileField) or purpose != "batch":
            return web.json_response(
                {"error": {"message": "expected a file and purpose=batch"}}, status=400
            )
        data = upload.file.read()
        with self._batch_lock:
            self._state.uploads += 1
            f = _File(
                id=f"file-{self._state.uploads}",
                filename=upload.filename,
                purpose="batch",
                data=data,
                created_at=int(time.time()),
            )
            self._state.files[f.id] = f
        return web.json_response(self._file_json(f))

    async def _get_file(self, request: web.Request) -> web.StreamResponse:
        with self._batch_lock:
            f = self._state.files.get(request.match_info["id"])
        return self._not_found("file") if f is None else web.json_response(self._file_json(f))

    async def _file_content(self, request: web.Request) -> web.StreamResponse:
        with self._batch_lock:
            f = self._state.files.get(request.match_info["id"])
            if f is not None:
                self._state.downloads += 1
        if f is None:
            return self._not_found("file")
        return web.Response(body=f.data, content_type="application/octet-stream")

    async def _create_batch(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        if body.get("endpoint") != "/v1/chat/completions" or body.get("completion_window") != "24h":
            return web.json_response({"error": {"message": "bad endpoint or window"}}, status=400)
        with self._batch_lock:
            if body.get("input_file_id") not in self._state.files:
                return self._not_found("input file")
            self._state.created += 1
            batch = _Batch(
                id=f"batch_{self._state.created}",
                input_file_id=body["input_file_id"],
                endpoint=body["endpoint"],
                completion_window=body["completion_window"],
                metadata=body.get("metadata"),
                created_at=int(time.time()),
            )
            self._state.batches[batch.id] = batch
        return web.json_response(batch.as_json())

    async def _list_batches(self, request: web.Request) -> web.StreamResponse:
        with self._batch_lock:
            data = [b.as_json() for b in reversed(list(self._state.batches.values()))]
        return web.json_response(
            {
                "object": "list",
                "data": data,
                "first_id": data[0]["id"] if data else None,
                "last_id": data[-1]["id"] if data else None,
                "has_more": False,
            }
        )

    async def _get_batch(self, request: web.Request) -> web.StreamResponse:
        with self._batch_lock:
            batch = self._state.batches.get(request.match_info["id"])
            if batch is None:
                return self._not_found("batch")
            self._state.polls += 1
            batch.polls += 1
            if batch.status == "validating":
                lines = [
                    json.loads(x)
                    for x in self._state.files[batch.input_file_id].data.splitlines()
                    if x.strip()
                ]
                batch.total = len(lines)
                batch.status = "in_progress"
            elif batch.status == "in_progress" and not self.hold:
                self._complete(batch)
            return web.json_response(batch.as_json())

    def _complete(self, batch: _Batch) -> None:
        """Answer every line of the input file (called with the lock held)."""
        data = self._state.files[batch.input_file_id].data
        lines = [json.loads(x) for x in data.splitlines() if x.strip()]
        out, errors = answer_lines(lines, self.behaviour.reply, fail_when=self.fail_when)
        for kind, rows in (("output", out), ("errors", errors)):
            if not rows:
                continue
            self._state.uploads += 1
            f = _File(
                id=f"file-{self._state.uploads}",
                filename=f"{batch.id}_{kind}.jsonl",
                purpose="batch_output",
                data="".join(json.dumps(r) + "\n" for r in rows).encode("utf-8"),
                created_at=int(time.time()),
            )
            self._state.files[f.id] = f
            if kind == "output":
                batch.output_file_id = f.id
            else:
                batch.error_file_id = f.id
        batch.completed = len(out)
        batch.failed = len(errors)
        batch.status = "completed"
