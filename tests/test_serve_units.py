"""Pure parts of ``ragtriage serve``: the trace page's view, the compare page's content,
and the security middleware on a minimal ASGI app (Starlette's test client)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("starlette")

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route
from starlette.testclient import TestClient

from _reportdata import dated_runs, make_diag, make_trace, votes_of
from ragtriage.records import ErrorType, Stage, Trace
from ragtriage.runview import RunView
from ragtriage.serve._compare import compare_runs, parse_gates
from ragtriage.serve._security import (
    CSP,
    TOKEN_COOKIE,
    SecurityConfig,
    SecurityMiddleware,
    allowed_hosts_for,
    is_loopback,
)
from ragtriage.serve._traceview import build_trace_view, chunk_place

# ----------------------------------------------------------------------- trace view


def test_trace_view_marks_gold_chunks_rerank_moves_and_places() -> None:
    t = make_trace("q1")
    d = make_diag(
        "q1",
        stage=Stage.RERANKING,
        mode=ErrorType.E7,
        second=ErrorType.E8,
        votes=votes_of(ErrorType.E7, 7, ErrorType.E8),
    )
    tv = build_trace_view(t, d)
    # retrieved: c1, x0, c0 (gold), x1; the reranker kept c1 and x0
    assert [r.chunk_id for r in tv.retrieved] == ["q1-c1", "q1-x0", "q1-c0", "q1-x1"]
    gold = tv.retrieved[2]
    assert gold.is_gt and gold.flags == ("dropped by reranker",)
    assert gold.place == "chunk 1 of 3 in doc q1-doc, chars 0–25"
    assert tv.retrieved[0].flags == ("reranked #1",)
    assert tv.reranked[1].flags == ("was #2", "dropped by budget")
    # a chunk of a document the trace does not hold whole: no "of N"
    assert tv.retrieved[1].place == "chunk 1 in doc other, chars 0–12"
    assert [c.chunk_id for c in tv.context] == ["q1-c1"] and tv.context[0].in_context
    (doc,) = tv.gt_docs
    assert [c.chunk_id for c in doc.chunks] == ["q1-c0", "q1-c1", "q1-c2"]
    assert doc.chunks[0].is_gt and doc.chunks[0].flags == ("retrieved #3",)
    assert doc.chunks[1].flags == ("retrieved #1", "reranked #1") and doc.chunks[1].in_context
    assert tv.diagnosis is not None
    assert tv.diagnosis.agree == "7/10"
    assert tv.diagnosis.votes[0] == ("E7", 7, "Low Recall")
    # no prompt variant in the metadata: said, not invented
    assert tv.prompt == "" and "does not store" in tv.prompt_source
    assert tv.claims is None


def test_trace_view_rebuilds_prompt_and_shades_claims_when_faithfulness_exists() -> None:
    base = make_trace(
        "q2", answer="Acme was founded in 1999. Acme was founded in 2005. It has moons."
    )
    data = base.to_dict()
    data["metadata"] = {"generation": {"prompt_variant": "default"}}
    data["context"] = ["q2-c0"]
    data["dropped_context"] = []
    t = Trace.model_validate(data)
    metrics = {"scores": {"faithfulness": {"judge": "offline", "value": 0.5}}}
    tv = build_trace_view(t, None, metrics)
    assert "Question: When was the company founded?" in tv.prompt
    assert "Acme was founded in 1999." in tv.prompt
    assert "rebuilt" in tv.prompt_source
    assert tv.claims is not None
    assert [(c.text, c.verdict) for c in tv.claims] == [
        ("Acme was founded in 1999.", "supported"),
        ("Acme was founded in 2005.", "contradicted"),
        ("It has moons.", "not_supported"),
    ]
    assert ("faithfulness", "0.500", "") in tv.metrics
    # an LLM judge's claims are not stored: said so, no shading invented
    tv2 = build_trace_view(t, None, {"scores": {"faithfulness": {"judge": "llm", "value": 1}}})
    assert tv2.claims is None and "not stored" in tv2.claims_note


def test_chunk_place_chinese_doc() -> None:
    t = make_trace("z1", doc_text=("公司成立于1999年。", "它销售小部件。"))
    c = t.gt_doc_chunks[1]
    assert (
        chunk_place(c, {"z1-doc": 2}) == "chunk 2 of 2 in doc z1-doc, chars 12–19"
    )  # 11 characters + a separator


# -------------------------------------------------------------------------- compare


def test_compare_runs_transitions_metric_note_and_gates(tmp_path: Path) -> None:
    b, a = (RunView.open(p) for p in dated_runs(tmp_path))
    res = compare_runs(a, b, name_a="a", name_b="b", gates=["accuracy>=+0.2", "failing<=-3"])
    kinds = {t.example_id: t.kind for t in res.transitions}
    # a: q0..q3 all failing (retrieval); b: q0, q1 failing, q2, q3 correct
    assert kinds == {"q0": "still_failing", "q1": "still_failing", "q2": "fixed", "q3": "fixed"}
    assert res.counts["fixed"] == 2 and res.counts["broken"] == 0
    assert res.comparison.accuracy_delta == pytest.approx(0.5)
    assert [g.passed for g in res.gates] == [True, False]
    assert not res.passed
    assert "no scores.jsonl" in res.metrics_note
    # the reverse direction breaks them
    rev = compare_runs(b, a, name_a="b", name_b="a")
    assert rev.counts["broken"] == 2 and not rev.passed  # default gate accuracy>=0


def test_parse_gates_rejects_bad_syntax() -> None:
    from ragtriage.errors import InputError

    assert parse_gates(["accuracy>=0", " ", "faithfulness>=-0.01"]) == [
        "accuracy>=0",
        "faithfulness>=-0.01",
    ]
    with pytest.raises(InputError, match="bad gate"):
        parse_gates(["accuracy >> 1"])


# ------------------------------------------------------------------------- security


async def _echo(request: Request) -> Response:
    if request.method == "POST":
        return JSONResponse(await request.json())
    return PlainTextResponse("ok")


def _client(**cfg: object) -> TestClient:
    conf = SecurityConfig(
        token=cfg.get("token"),  # type: ignore[arg-type]
        csrf="csrf-secret",
        read_only=bool(cfg.get("read_only", False)),
        allowed_hosts=cfg.get("allowed_hosts"),  # type: ignore[arg-type]
    )
    app = Starlette(routes=[Route("/x", _echo, methods=["GET", "POST"])])
    return TestClient(SecurityMiddleware(app, conf), follow_redirects=False)


def test_headers_forbid_inline_script_and_framing() -> None:
    r = _client().get("/x")
    assert r.status_code == 200
    assert r.headers["content-security-policy"] == CSP
    assert "script-src 'self'" in CSP and "unsafe-inline" not in CSP
    assert r.headers["x-frame-options"] == "DENY"
    assert r.headers["x-content-type-options"] == "nosniff"


def test_token_once_in_url_then_cookie_or_bearer() -> None:
    c = _client(token="t0ken-0123456789")
    r = c.get("/x")
    assert r.status_code == 401 and "access token" in r.text
    assert r.headers["content-security-policy"] == CSP
    assert c.get("/x?token=wrong").status_code == 401
    r = c.get("/x?token=t0ken-0123456789&a=1")
    assert r.status_code == 303 and r.headers["location"] == "/x?a=1"
    cookie = r.headers["set-cookie"]
    assert TOKEN_COOKIE in cookie and "HttpOnly" in cookie and "SameSite=strict" in cookie
    assert c.get("/x").status_code == 200  # the client kept the cookie
    # another local server (another port) does not take this one's cookie
    assert c.get("http://testserver:8766/x").status_code == 401
    fresh = _client(token="t0ken-0123456789")
    assert fresh.get("/x", headers={"Authorization": "Bearer t0ken-0123456789"}).status_code == 200
    assert fresh.get("/x", headers={"Authorization": "Bearer nope"}).status_code == 401


def test_posts_need_csrf_json_and_same_origin() -> None:
    c = _client()
    ok = {"X-CSRF-Token": "csrf-secret"}
    assert c.post("/x", json={"a": 1}).status_code == 403
    assert c.post("/x", json={"a": 1}, headers={"X-CSRF-Token": "other"}).status_code == 403
    r = c.post("/x", json={"a": 1}, headers=ok)
    assert r.status_code == 200 and r.json() == {"a": 1}
    form = c.post("/x", data={"a": "1"}, headers=ok)
    assert form.status_code == 415
    evil = c.post("/x", json={}, headers={**ok, "Origin": "http://evil.example"})
    assert evil.status_code == 403
    same = c.post("/x", json={}, headers={**ok, "Origin": "http://testserver"})
    assert same.status_code == 200


def test_read_only_refuses_posts() -> None:
    c = _client(read_only=True)
    r = c.post("/x", json={}, headers={"X-CSRF-Token": "csrf-secret"})
    assert r.status_code == 403 and "read-only" in r.text
    assert c.get("/x").status_code == 200


def test_host_check_against_dns_rebinding() -> None:
    c = _client(allowed_hosts=("127.0.0.1", "localhost", "::1"))
    assert c.get("/x").status_code == 400  # Host: testserver
    assert c.get("/x", headers={"Host": "127.0.0.1:8765"}).status_code == 200
    assert c.get("/x", headers={"Host": "localhost"}).status_code == 200
    assert c.get("/x", headers={"Host": "[::1]:8765"}).status_code == 200
    assert c.get("/x", headers={"Host": "attacker.example:8765"}).status_code == 400


def test_loopback_and_allowed_hosts() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("localhost") and is_loopback("::1")
    assert is_loopback("127.0.0.2") and is_loopback("[::1]")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.5")
    assert not is_loopback("example.com")
    assert allowed_hosts_for("127.0.0.1", None) == ("127.0.0.1", "localhost", "::1")
    assert allowed_hosts_for("127.0.0.1", "tok") is None
    assert allowed_hosts_for("0.0.0.0", "tok") is None
