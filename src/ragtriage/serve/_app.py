"""The Starlette app behind ``ragtriage serve``: server-rendered pages over run directories.

Pages (see docs/serve.md): runs, run (summary tables, filters, sorting, pagination),
trace, compare, annotate (keyboard-first, blind mode), agreement. Every string from a
trace goes through Jinja2's autoescape; the only script is ``/static/app.js``.
"""

from __future__ import annotations

import math
import secrets
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from jinja2 import Environment
from markupsafe import Markup
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ragtriage.annotate import (
    BUILTIN_TAXONOMIES,
    STRATEGIES,
    AgreementPanel,
    Annotation,
    AnnotationStore,
    LabelSet,
    agreement_panel,
    check_annotator,
    label_set,
    sample_order,
)
from ragtriage.calibrate.agreement import KappaResult
from ragtriage.critic import CriticVerdict
from ragtriage.errors import InputError
from ragtriage.records import ERROR_TYPE_NAMES, AnswerLabel, Diagnosis, ErrorType, Stage
from ragtriage.report import svg
from ragtriage.report._fmt import fmt_delta, fmt_pct
from ragtriage.report.aggregate import Summary
from ragtriage.report.compare import AdviceOutcome, compare_summaries
from ragtriage.report.html import _environment as report_environment
from ragtriage.runview import (
    Discovery,
    RunEntry,
    RunView,
    TraceFilter,
    discover,
    resolve_key,
)
from ragtriage.runview._discover import SEP
from ragtriage.serve._compare import DEFAULT_GATES, compare_runs, parse_gates
from ragtriage.serve._security import SecurityConfig, SecurityMiddleware
from ragtriage.serve._traceview import build_trace_view, diagnosis_view

__all__ = ["DEFAULT_PAGE_SIZE", "STRATEGIES", "create_app"]

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 500
#: files whose change makes a cached RunView stale
_ENTRIES_TTL_S = 3.0
_WATCHED = ("traces.jsonl", "diagnoses.jsonl", "scores.jsonl", "labels.jsonl", "manifest.json")


def _environment() -> Environment:
    """The report's Jinja2 setup (autoescape everywhere, strict undefined) on this
    package's templates, plus the app's filters."""
    env = report_environment("ragtriage.serve")
    env.filters["delta"] = fmt_delta
    env.filters["tid"] = lambda s: quote(str(s), safe="")
    env.globals["url"] = _url
    return env


def _url(path: str, params: Mapping[str, Any] | None = None, **more: Any) -> str:
    """``path?k=v`` with the non-empty params (``None`` and ``""`` dropped)."""
    merged = {**(params or {}), **more}
    items = [(k, str(v)) for k, v in merged.items() if v is not None and v != ""]
    return path + ("?" + urlencode(items) if items else "")


class _State:
    """Everything the handlers share: roots, security, caches."""

    def __init__(
        self,
        roots: Sequence[Path],
        security: SecurityConfig,
        page_size: int,
    ) -> None:
        self.roots = tuple(roots)
        self.security = security
        self.page_size = page_size
        self.env = _environment()
        self._lock = threading.Lock()
        self.save_lock = threading.Lock()
        self._orders: dict[tuple[Path, str], tuple[RunView, list[str]]] = {}
        self._entries: tuple[float, Discovery] | None = None

    # -- runs
    def run_dir(self, key: str) -> Path:
        try:
            return resolve_key(self.roots, key)
        except KeyError:
            why = self._skip_reason(key)
            raise HTTPException(
                404, f"no run {key!r} under the served directories" + (f": {why}" if why else "")
            ) from None

    def _skip_reason(self, key: str) -> str | None:
        """Why the folder a key names was passed over, when it was (not for bad keys)."""
        parts = key.partition("@")[0].split(SEP)
        if any(p in ("", ".", "..") or "/" in p or "\\" in p for p in parts):
            return None
        for skipped in self.discovery().skipped:
            for root in self.roots:
                try:
                    rel = skipped.path.relative_to(root)
                except ValueError:
                    continue
                if list(rel.parts) == parts or (not rel.parts and [root.name] == parts):
                    return skipped.reason
        return None

    def view(self, key: str) -> RunView:
        """The run's view (``RunView.open`` reuses an open one while its index is
        current: a few ``stat`` calls)."""
        run_dir = self.run_dir(key)
        try:
            return RunView.open(run_dir)
        except InputError as exc:
            raise HTTPException(422, str(exc)) from None

    def discovery(self) -> Discovery:
        """The runs under the roots and the folders passed over; rediscovered when older
        than a few seconds (each discovery opens every run's index)."""
        now = time.monotonic()
        with self._lock:
            if self._entries is not None and now - self._entries[0] < _ENTRIES_TTL_S:
                return self._entries[1]
        found = discover(self.roots)
        with self._lock:
            self._entries = (now, found)
        return found

    def entries(self) -> list[RunEntry]:
        return self.discovery().runs

    def order(self, view: RunView, strategy: str) -> list[str]:
        """The annotation order, computed once per view (a rebuilt index is a new view)."""
        k = (view.path, strategy)
        with self._lock:
            got = self._orders.get(k)
        if got is not None and got[0] is view:
            return got[1]
        order = sample_order(view, strategy)
        with self._lock:
            self._orders[k] = (view, order)
        return order

    def render(
        self, request: Request, name: str, context: Mapping[str, Any], status: int = 200
    ) -> HTMLResponse:
        template = self.env.get_template(name)
        html = template.render(
            csrf=self.security.csrf,
            read_only=self.security.read_only,
            **context,
        )
        return HTMLResponse(html, status_code=status)


def _state(request: Request) -> _State:
    st: _State = request.app.state.serve
    return st


def _params(request: Request) -> dict[str, str]:
    return dict(request.query_params.items())


def _int_param(params: Mapping[str, str], name: str, default: int, lo: int, hi: int) -> int:
    raw = params.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = int(raw)
    except ValueError:
        raise HTTPException(400, f"{name}: expected an integer, got {raw!r}") from None
    if not lo <= value <= hi:
        raise HTTPException(400, f"{name}: expected {lo}..{hi}, got {value}")
    return value


def _filter(params: Mapping[str, str]) -> TraceFilter:
    try:
        return TraceFilter.from_query(params)
    except ValueError as exc:
        raise HTTPException(400, str(exc)) from None


def _state_query(flt: TraceFilter, sort: str) -> dict[str, str]:
    """The query params that keep a filter and sort across pages."""
    q = dict(flt.to_query())
    if sort and sort != "position":
        q["sort"] = sort
    return q


# ------------------------------------------------------------------------------- pages


def runs_page(request: Request) -> Response:
    st = _state(request)
    found = st.discovery()
    entries = found.runs
    dated = sorted(entries, key=lambda e: (e.created or "", e.key))
    bars = [
        svg.Bar(
            label=e.key if len(e.key) <= 28 else e.key[:27] + "…",
            value=e.accuracy or 0.0,
            text=fmt_pct(e.accuracy),
        )
        for e in dated
    ]
    chart = svg.bar_chart(bars, title="Accuracy by run (oldest first)", vmax=1.0) if bars else None
    stages = [s.value for s in Stage]
    return st.render(
        request,
        "runs.html.j2",
        {
            "title": "Runs",
            "entries": dated,
            "chart": chart,
            "stages": stages,
            "stage_shares": {e.key: _stage_shares(e, stages) for e in dated},
            "roots": [str(r) for r in st.roots],
            "skipped": found.skipped,
        },
    )


def _stage_shares(e: RunEntry, stages: Sequence[str]) -> dict[str, str]:
    total = sum(e.stages.get(s, 0) for s in stages)
    return {s: fmt_pct(e.stages.get(s, 0) / total if total else None, 0) for s in stages}


def _sort_options(metric_names: Sequence[str]) -> list[tuple[str, str]]:
    opts = [
        ("position", "run order"),
        ("confidence", "confidence ↑ (most uncertain first)"),
        ("-confidence", "confidence ↓"),
    ]
    for m in metric_names:
        opts += [(f"metric:{m}", f"{m} ↑"), (f"-metric:{m}", f"{m} ↓")]
    return opts


def run_page(request: Request) -> Response:
    st = _state(request)
    key = request.path_params["key"]
    view = st.view(key)
    params = _params(request)
    flt = _filter(params)
    sort = params.get("sort") or "position"
    page_size = _int_param(params, "page_size", st.page_size, 1, MAX_PAGE_SIZE)
    page_no = _int_param(params, "page", 1, 1, 10**9)
    try:
        page = view.query(flt, sort=sort, page=page_no, page_size=page_size)
    except ValueError as exc:
        raise HTTPException(400, str(exc)) from None
    summary = view.summary()
    keep = _state_query(flt, sort)
    if page_size != st.page_size:
        keep["page_size"] = str(page_size)
    pages = max(1, math.ceil(page.total / page_size))
    metric_names = [m.name for m in summary.metrics]
    # "Impr." against a later run: how the advice's error types moved there
    vs = params.get("vs") or ""
    vs_summary = None
    vs_types: dict[str, int] = {}
    vs_advice: dict[str, AdviceOutcome] = {}
    if vs and summary.report is not None:
        other = st.view(vs).summary().report
        if other is not None:
            vs_summary = compare_summaries(summary.report, other, name_a=key, name_b=vs)
            vs_types = {t.error_type.value: t.delta for t in vs_summary.types}
            vs_advice = {o.text: o for o in vs_summary.advice}
    others = [e.key for e in st.entries() if e.key != key]
    return st.render(
        request,
        "run.html.j2",
        {
            "title": f"Run {key}",
            "key": key,
            "view": view,
            "s": summary,
            "charts": _run_charts(summary.report),
            "page": page,
            "pages": pages,
            "flt": flt,
            "keep": keep,
            "sort": sort,
            "sort_options": _sort_options(metric_names),
            "metric_names": metric_names,
            "stages": [s.value for s in Stage],
            "error_types": [(t.value, ERROR_TYPE_NAMES[t]) for t in ErrorType],
            "answer_labels": [a.value for a in AnswerLabel],
            "vs": vs,
            "vs_summary": vs_summary,
            "vs_types": vs_types,
            "vs_advice": vs_advice,
            "others": others,
        },
    )


def _run_charts(report: Summary | None) -> dict[str, Markup]:
    if report is None:
        return {}
    from ragtriage.report.html import _charts

    return _charts(report)


def trace_page(request: Request) -> Response:
    st = _state(request)
    key = request.path_params["key"]
    trace_id = request.path_params["trace_id"]
    view = st.view(key)
    params = _params(request)
    flt = _filter(params)
    sort = params.get("sort") or "position"
    try:
        trace = view.trace(trace_id)
    except KeyError:
        raise HTTPException(404, f"no trace {trace_id!r} in run {key!r}") from None
    diagnosis = view.diagnosis(trace_id)
    tv = build_trace_view(trace, diagnosis, view.trace_metrics(trace_id))
    try:
        prev_id, next_id = view.neighbours(trace_id, flt, sort)
    except ValueError as exc:
        raise HTTPException(400, str(exc)) from None
    critic, critic_error = _critic(view, trace_id)
    store = AnnotationStore(view.path)
    labels = []
    for name in store.annotators():
        a = store.load(name).get(trace_id)
        if a is not None:
            labels.append(a)
    return st.render(
        request,
        "trace.html.j2",
        {
            "title": f"Trace {trace_id}",
            "key": key,
            "tv": tv,
            "t": trace,
            "question_type": view.label(trace_id) or trace.example.label,
            "prev_id": prev_id,
            "next_id": next_id,
            "keep": _state_query(flt, sort),
            "flt": flt,
            "labels": labels,
            "critic": critic,
            "critic_error": critic_error,
        },
    )


def _critic(view: RunView, trace_id: str) -> tuple[CriticVerdict | None, str | None]:
    """The trace's ``ragtriage critic`` verdict, or why its line cannot be shown."""
    raw = view.critic_verdict(trace_id)
    if raw is None:
        return None, None
    try:
        return CriticVerdict.model_validate(raw), None
    except ValidationError as exc:
        return (
            None,
            f"critic.jsonl line of this trace is not a critic verdict: {exc.errors()[0]['msg']}",
        )


def compare_page(request: Request) -> Response:
    st = _state(request)
    entries = st.entries()
    a, b = request.query_params.get("a"), request.query_params.get("b")
    gate_texts = [g for g in request.query_params.getlist("gate") if g.strip()]
    ctx: dict[str, Any] = {
        "title": "Compare runs",
        "entries": entries,
        "a": a or "",
        "b": b or "",
        "gates_text": gate_texts or list(DEFAULT_GATES),
        "result": None,
        "error": None,
    }
    if a and b:
        view_a, view_b = st.view(a), st.view(b)
        try:
            gates = parse_gates(gate_texts or list(DEFAULT_GATES))
            ctx["result"] = compare_runs(view_a, view_b, name_a=a, name_b=b, gates=gates)
        except InputError as exc:
            ctx["error"] = str(exc)
            return st.render(request, "compare.html.j2", ctx, status=400)
    return st.render(request, "compare.html.j2", ctx)


# -------------------------------------------------------------------------- annotation


def _taxonomy(st: _State, name: str) -> LabelSet:
    """A built-in label set, or a mined taxonomy file inside the served directories."""
    if name not in BUILTIN_TAXONOMIES:
        # a path relative to the server's working directory or absolute; either way it
        # must lie inside a served directory once symlinks and '..' are resolved
        resolved = Path(name).resolve()
        if not any(resolved.is_relative_to(r) for r in st.roots):
            raise HTTPException(
                400,
                "taxonomy: use 'ragec', 'critic' or the path of a mined taxonomy file "
                "inside a served directory",
            )
        name = str(resolved)
    try:
        return label_set(name)
    except (ValueError, InputError, OSError) as exc:
        raise HTTPException(400, f"taxonomy: {exc}") from None


def _check_annotator(name: str) -> str:
    try:
        return check_annotator(name)
    except ValueError as exc:
        raise HTTPException(400, str(exc)) from None


def _verdict(d: Diagnosis | None) -> dict[str, Any] | None:
    if d is None:
        return None
    return {
        "answer_label": d.answer_label.value if d.answer_label else None,
        "stage": d.stage.value if d.stage else None,
        "types": [t.value for t in (d.error_type, d.second_type) if t is not None],
        "tier1": list(d.tier1),
        "confidence": d.confidence,
        "answer_reason": d.answer_reason,
    }


def annotate_page(request: Request) -> Response:
    st = _state(request)
    key = request.path_params["key"]
    view = st.view(key)
    params = _params(request)
    annotator = params.get("annotator", "").strip()
    strategy = params.get("strategy") or "sequential"
    taxonomy = params.get("taxonomy") or "ragec"
    blind = params.get("blind", "") in ("1", "true", "on", "yes")
    if strategy not in STRATEGIES:
        raise HTTPException(400, f"strategy: use one of {', '.join(STRATEGIES)}")
    if not annotator:
        return st.render(
            request,
            "annotate_start.html.j2",
            {
                "title": f"Annotate {key}",
                "key": key,
                "strategies": STRATEGIES,
                "annotators": AnnotationStore(view.path).annotators(),
            },
        )
    _check_annotator(annotator)
    labels = _taxonomy(st, taxonomy)
    order = st.order(view, strategy)
    store = AnnotationStore(view.path)
    done = store.load(annotator)
    if not order:
        raise HTTPException(404, f"run {key!r} has no traces to annotate")
    if "i" in params:
        i = _int_param(params, "i", 0, 0, len(order) - 1)
    else:
        i = next((n for n, tid in enumerate(order) if tid not in done), len(order) - 1)
    trace_id = order[i]
    trace = view.trace(trace_id)
    diagnosis = view.diagnosis(trace_id)
    existing = done.get(trace_id)
    show_verdict = not blind or existing is not None
    tv = build_trace_view(trace, diagnosis if show_verdict else None, None)
    base = {"annotator": annotator, "strategy": strategy, "taxonomy": taxonomy}
    if blind:
        base["blind"] = "1"
    panel, _ = _safe_panel(view.path, labels.name)
    n_done = _n_labelled(order, done)
    return st.render(
        request,
        "annotate.html.j2",
        {
            "title": f"Annotate {key}",
            "key": key,
            "tv": tv,
            "t": trace,
            "ls": labels,
            "stage_keys": stage_keys(labels.stages),
            "annotator": annotator,
            "strategy": strategy,
            "taxonomy": taxonomy,
            "blind": blind,
            "show_verdict": show_verdict,
            "verdict": _verdict(diagnosis) if show_verdict else None,
            "dv": diagnosis_view(diagnosis) if show_verdict and diagnosis else None,
            "existing": existing,
            "i": i,
            "n": len(order),
            "n_done": n_done,
            "prev_url": _url(f"/runs/{key}/annotate", base, i=i - 1) if i > 0 else "",
            "next_url": _url(f"/runs/{key}/annotate", base, i=i + 1) if i + 1 < len(order) else "",
            "resume_url": _url(f"/runs/{key}/annotate", base),
            "kappa": _annotator_kappa(panel, annotator),
            "question_type": view.label(trace_id) or trace.example.label,
        },
    )


def _n_labelled(trace_ids: Sequence[str], done: Mapping[str, Any]) -> int:
    """How many of the run's traces the annotator has labelled."""
    return sum(1 for tid in trace_ids if tid in done)


def _safe_panel(run_dir: Path, taxonomy: str) -> tuple[AgreementPanel | None, str | None]:
    """The agreement panel, or the reason it cannot be computed (a bad annotation file)."""
    try:
        return agreement_panel(run_dir, taxonomy), None
    except (ValueError, InputError) as exc:
        return None, str(exc)


def _kappa_text(k: KappaResult) -> str:
    return f"{k.value:.3f}" if k.value is not None else "undefined"


def _annotator_kappa(panel: AgreementPanel | None, annotator: str) -> list[tuple[str, str, int]]:
    """(what, κ, n) rows of one annotator against the judge."""
    rep = panel.vs_judge.get(annotator) if panel is not None else None
    if rep is None:
        return []
    return [
        ("answer κ", _kappa_text(rep.answer_kappa), rep.answer_kappa.n),
        ("failing κ", _kappa_text(rep.failing_kappa), rep.failing_kappa.n),
        ("stage κ", _kappa_text(rep.stage_kappa), rep.stage_kappa.n),
        ("type κ", _kappa_text(rep.type_kappa), rep.type_kappa.n),
    ]


_RESERVED_KEYS = frozenset("jknstyxuah?q")


def stage_keys(stages: Sequence[str]) -> list[tuple[str, str]]:
    """A one-letter key per stage: the first letter of its name not taken (chunking c,
    retrieval r, reranking e, generation g)."""
    taken: set[str] = set(_RESERVED_KEYS)
    out = []
    for st in stages:
        key = next(
            (ch for ch in st.lower() + "bcdefgilmoprvwz" if ch.isalpha() and ch not in taken),
            "",
        )
        taken.add(key)
        out.append((st, key))
    return out


async def save_annotation(request: Request) -> Response:
    st = _state(request)
    key = request.path_params["key"]
    try:
        body = await request.json()
    except ValueError:
        raise HTTPException(400, "body: expected a JSON object") from None
    if not isinstance(body, dict):
        raise HTTPException(400, "body: expected a JSON object")
    from starlette.concurrency import run_in_threadpool

    result = await run_in_threadpool(_save, st, key, body)
    return JSONResponse(result)


def _opt_str(body: Mapping[str, Any], name: str) -> str | None:
    v = body.get(name)
    if v is None or v == "":
        return None
    if not isinstance(v, str):
        raise HTTPException(400, f"{name}: expected a string")
    return v


def _save(st: _State, key: str, body: Mapping[str, Any]) -> dict[str, Any]:
    view = st.view(key)
    trace_id = _opt_str(body, "trace_id")
    if trace_id is None:
        raise HTTPException(400, "trace_id: required")
    annotator = _check_annotator(_opt_str(body, "annotator") or "")
    taxonomy = _opt_str(body, "taxonomy") or "ragec"
    labels = _taxonomy(st, taxonomy)
    try:
        view.trace(trace_id)
    except KeyError:
        raise HTTPException(404, f"no trace {trace_id!r} in run {key!r}") from None
    raw_types = body.get("types") or []
    if not isinstance(raw_types, list) or not all(isinstance(t, str) for t in raw_types):
        raise HTTPException(400, "types: expected a list of strings")
    note = body.get("note") or ""
    if not isinstance(note, str):
        raise HTTPException(400, "note: expected a string")
    ann = Annotation(
        trace_id=trace_id,
        annotator=annotator,
        answer_label=_opt_str(body, "answer_label"),
        stage=_opt_str(body, "stage"),
        types=tuple(dict.fromkeys(raw_types)),
        question_type=_opt_str(body, "question_type"),
        note=note,
        taxonomy=labels.name,
    )
    store = AnnotationStore(view.path)
    try:
        with st.save_lock:
            ann = store.save(ann)
            done = store.load(annotator)
    except ValueError as exc:
        raise HTTPException(400, str(exc)) from None
    saved = asdict(ann)
    saved["types"] = list(ann.types)
    ids = view.trace_ids()
    return {
        "saved": saved,
        # the tool's verdict only now: in blind mode the page asked after saving
        "verdict": _verdict(view.diagnosis(trace_id)),
        # the page's progress line counts this save at once
        "n_labelled": _n_labelled(ids, done),
        "n_traces": len(ids),
    }


def _request_panel(request: Request) -> tuple[str, str, AgreementPanel | None, str | None]:
    """(run key, taxonomy, panel, error) of an agreement request."""
    st = _state(request)
    key = request.path_params["key"]
    view = st.view(key)
    taxonomy = request.query_params.get("taxonomy") or "ragec"
    panel, error = _safe_panel(view.path, _taxonomy(st, taxonomy).name)
    return key, taxonomy, panel, error


def agreement_page(request: Request) -> Response:
    key, taxonomy, panel, error = _request_panel(request)
    return _state(request).render(
        request,
        "agreement.html.j2",
        {
            "title": f"Agreement {key}",
            "key": key,
            "panel": panel,
            "error": error,
            "taxonomy": taxonomy,
        },
    )


def agreement_api(request: Request) -> Response:
    _, _, panel, error = _request_panel(request)
    if panel is None:
        return JSONResponse({"error": error}, status_code=422)
    return JSONResponse(panel.to_json())


# ----------------------------------------------------------------------------- errors


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    accept = request.headers.get("accept", "")
    if request.url.path.startswith("/api/") or request.method != "GET" or "html" not in accept:
        return JSONResponse({"error": exc.detail}, status_code=exc.status_code)
    st = _state(request)
    return st.render(
        request,
        "error.html.j2",
        {"title": f"Error {exc.status_code}", "status": exc.status_code, "detail": exc.detail},
        status=exc.status_code,
    )


def create_app(
    roots: Sequence[Path | str],
    *,
    token: str | None = None,
    read_only: bool = False,
    allowed_hosts: Sequence[str] | None = None,
    csrf_token: str | None = None,
    page_size: int = DEFAULT_PAGE_SIZE,
) -> Starlette:
    """The ASGI app serving the run directories under ``roots``.

    ``token``: every request must carry it (``?token=`` once, then a cookie);
    ``read_only``: no annotation can be saved; ``allowed_hosts``: Host header names
    accepted (``None`` = any; ``ragtriage serve`` passes the loopback names on a
    loopback address without a token); ``csrf_token``: fixed CSRF token (default:
    random per process).
    """
    resolved = []
    for r in roots:
        p = Path(r).resolve()
        if not p.is_dir():
            raise InputError("not a directory", path=str(r))
        resolved.append(p)
    if not resolved:
        raise InputError("give at least one run directory or directory of runs")
    security = SecurityConfig(
        token=token,
        csrf=csrf_token or secrets.token_urlsafe(32),
        read_only=read_only,
        allowed_hosts=tuple(h.lower() for h in allowed_hosts) if allowed_hosts else None,
    )
    routes: list[Route | Mount] = [
        Route("/", runs_page),
        Route("/compare", compare_page),
        Route("/runs/{key}", run_page),
        Route("/runs/{key}/traces/{trace_id:path}", trace_page),
        Route("/runs/{key}/annotate", annotate_page),
        Route("/runs/{key}/annotations", save_annotation, methods=["POST"]),
        Route("/runs/{key}/agreement", agreement_page),
        Route("/api/runs/{key}/agreement", agreement_api),
        Mount("/static", app=StaticFiles(packages=[("ragtriage.serve", "static")]), name="static"),
    ]
    handlers: dict[Any, Callable[..., Any]] = {HTTPException: _http_error}
    app = Starlette(
        routes=routes,
        middleware=[Middleware(SecurityMiddleware, config=security)],
        exception_handlers=handlers,
    )
    app.state.serve = _State(resolved, security, page_size)
    return app
