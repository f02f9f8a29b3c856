"""A PostgreSQL + pgvector table behind the :class:`~ragtriage.retrieval.Retriever`
protocol: dense, lexical and both hybrids computed in SQL.

One table per corpus/config hash (``rt_chunks_<16 hex>`` of the dataset name, the
chunking config and the embedder), listed in ``ragtriage_indexes``. Columns: chunk id
(primary key), position (``ord``, the in-process row: ties go to the lower one, as in
:func:`ragtriage.index.top_k_indices`), doc id, content hash, metadata (jsonb), token
count ``dl`` and ``embedding`` (vector, L2-normalised); a postings table
``<table>_post`` (lexeme, chunk id, tf, BM25 weight ``w``).

* **Upserts**: a build reads ``(chunk_id, content_hash)`` and embeds and writes only
  new or changed chunks (``INSERT ... ON CONFLICT (chunk_id) DO UPDATE``); chunks gone
  from the corpus are deleted.
* **Dense**: ``ORDER BY embedding <=> q`` (cosine distance; score = 1 - distance):
  exact (sequential scan) below ``index.ann_min_rows`` chunks or with ``index.ann:
  exact``, through an HNSW index (``vector_cosine_ops``, ``hnsw.ef_search`` and
  iterative scans for filtered queries) above it.
* **Lexical**: BM25 in SQL over the same language-aware terms as the in-process index
  (:func:`ragtriage.index.bm25_tokens`: English stems, Chinese character bigrams) with
  its formula (bm25s 'lucene', k1 = 1.5, b = 0.75), so rankings match it. PostgreSQL
  has no BM25; its ``tsvector`` + ``ts_rank_cd`` (cover density) was tried first and
  shared only ~50 % of the in-process BM25 top-10 ids on the demo corpus.
* **Hybrid**: RRF (``1 / (rrf_k + rank)`` over the top ``RRF_DEPTH`` of each list,
  a ``FULL JOIN``) and weighted min-max fusion over every filtered row, both in SQL.
* **Filters** become WHERE clauses: ``doc_id`` / ``chunk_id`` by equality or ``= ANY``,
  any other key as ``metadata -> key @> value`` (a list-valued field matches any of
  its elements).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from ragtriage.config import IndexConfig, RetrievalConfig
from ragtriage.embedding import Embedder, embed_documents, embed_queries
from ragtriage.errors import ConfigError
from ragtriage.index.bm25 import bm25_tokens
from ragtriage.pgindex._server import PgServer
from ragtriage.records import Chunk, Hit
from ragtriage.retrieval import RRF_DEPTH, BatchRetriever, merge_filters

__all__ = ["PgVectorRetriever", "table_name"]

_REGISTRY: Final = "ragtriage_indexes"
#: Table layout version: part of the table name, so a new layout gets a new table.
_SCHEMA: Final = 2
#: BM25 parameters of the in-process index (:class:`ragtriage.index.BM25Index`).
_K1: Final = 1.5
_B: Final = 0.75


def table_name(corpus: str, key: Mapping[str, Any]) -> str:
    """``rt_chunks_<16 hex>`` for a corpus and the config that shapes its rows."""
    blob = json.dumps(
        {"corpus": corpus, "schema": _SCHEMA, **key}, sort_keys=True, ensure_ascii=False
    )
    return "rt_chunks_" + hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


def _content_hash(c: Chunk) -> str:
    blob = json.dumps(
        [c.doc_id, c.text, c.metadata], sort_keys=True, ensure_ascii=False, default=str
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _where(filters: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """A WHERE fragment (``TRUE`` when empty) and its named parameters."""
    from psycopg.types.json import Jsonb

    parts: list[str] = []
    params: dict[str, Any] = {}

    def param(value: Any) -> str:
        name = f"f{len(params)}"
        params[name] = value
        return f"%({name})s"

    for key, want in filters.items():
        wanted = list(want) if isinstance(want, list | tuple | set | frozenset) else [want]
        if key in ("doc_id", "chunk_id"):
            parts.append(f"c.{key} = ANY({param([w for w in wanted if isinstance(w, str)])})")
            continue
        ors = [f"(c.metadata -> {param(str(key))}) @> {param(Jsonb(w))}" for w in wanted]
        parts.append("(" + (" OR ".join(ors) if ors else "FALSE") + ")")
    return (" AND ".join(parts) if parts else "TRUE"), params


class PgVectorRetriever(BatchRetriever):
    """Chunks in a pgvector table; :meth:`retrieve` / :meth:`retrieve_many` like
    :class:`~ragtriage.retrieval.IndexedRetriever`. :meth:`close` releases the
    connection and stops an embedded server that this object started."""

    def __init__(
        self,
        cfg: RetrievalConfig,
        index: IndexConfig,
        embedder: Embedder | None,
        *,
        table: str,
        server: PgServer,
        conn: Any,
        dim: int,
        rows: int,
        use_hnsw: bool,
    ) -> None:
        self.cfg, self.index, self.embedder = cfg, index, embedder
        self.table, self.server, self._conn = table, server, conn
        self.dim, self.rows, self.use_hnsw = dim, rows, use_hnsw
        self.changed = 0  # rows written by the last sync

    # ------------------------------------------------------------------ building
    @classmethod
    def build(
        cls,
        cfg: RetrievalConfig,
        index: IndexConfig,
        chunks: Sequence[Chunk],
        embedder: Embedder | None,
        *,
        corpus: str,
        table_key: Mapping[str, Any],
        vectors: npt.ArrayLike | None = None,
        on_progress: Callable[[int, int], None] | None = None,
    ) -> PgVectorRetriever:
        """Connect (or start the embedded server), create/update the table for this
        corpus and config, and return a retriever over it."""
        if cfg.mode != "bm25" and embedder is None:
            raise ConfigError(
                f"retrieval mode {cfg.mode!r} needs an embedder", field="retrieval.mode"
            )
        dim = embedder.dim if embedder is not None else 1
        name = table_name(corpus, {**table_key, "dim": dim})
        server = PgServer(index.dsn, index.data_dir)
        try:
            conn = server.connect()
            use_hnsw = index.ann == "hnsw" or (
                index.ann == "auto" and len(chunks) >= index.ann_min_rows
            )
            out = cls(
                cfg,
                index,
                embedder,
                table=name,
                server=server,
                conn=conn,
                dim=dim,
                rows=len(chunks),
                use_hnsw=use_hnsw and cfg.mode != "bm25",
            )
            out._sync(chunks, corpus, table_key, vectors, on_progress)
        except BaseException:
            server.close()
            raise
        return out

    def _sync(
        self,
        chunks: Sequence[Chunk],
        corpus: str,
        table_key: Mapping[str, Any],
        vectors: npt.ArrayLike | None,
        on_progress: Callable[[int, int], None] | None,
    ) -> None:
        t, conn = self.table, self._conn
        conn.execute(
            f"CREATE TABLE IF NOT EXISTS {_REGISTRY} (table_name text PRIMARY KEY, "
            "corpus text NOT NULL, config jsonb NOT NULL, "
            "created timestamptz NOT NULL DEFAULT now())"
        )
        from psycopg.types.json import Jsonb

        conn.execute(
            f"INSERT INTO {_REGISTRY} (table_name, corpus, config) VALUES (%s, %s, %s) "
            "ON CONFLICT (table_name) DO NOTHING",
            (t, corpus, Jsonb(dict(table_key))),
        )
        conn.execute(
            f"CREATE TABLE IF NOT EXISTS {t} (chunk_id text PRIMARY KEY, ord integer NOT NULL, "
            "doc_id text NOT NULL, content_hash text NOT NULL, metadata jsonb NOT NULL, "
            f"dl integer NOT NULL, embedding vector({self.dim}))"
        )
        conn.execute(
            f"CREATE TABLE IF NOT EXISTS {t}_post (lexeme text NOT NULL, chunk_id text NOT NULL "
            f"REFERENCES {t} ON DELETE CASCADE, tf integer NOT NULL, "
            "w double precision NOT NULL DEFAULT 0, "
            "PRIMARY KEY (lexeme, chunk_id))"
        )
        have = dict(conn.execute(f"SELECT chunk_id, content_hash FROM {t}").fetchall())
        hashes = [_content_hash(c) for c in chunks]
        todo = [i for i, c in enumerate(chunks) if have.get(c.chunk_id) != hashes[i]]
        mat: npt.NDArray[np.float32] | None = None
        if todo and self.cfg.mode != "bm25":
            assert self.embedder is not None
            if vectors is not None:
                mat = np.asarray(vectors, dtype=np.float32)[todo]
            else:
                mat = embed_documents(
                    self.embedder, [chunks[i].text for i in todo], on_progress=on_progress
                )
            norms = np.linalg.norm(mat, axis=1, keepdims=True)
            mat = (mat / np.where(norms > 0, norms, 1.0)).astype(np.float32)
        from psycopg.types.json import Jsonb

        ids = [c.chunk_id for c in chunks]
        with conn.transaction():
            conn.execute(
                "CREATE TEMP TABLE rt_stage (chunk_id text, ord integer, doc_id text, "
                f"content_hash text, metadata jsonb, dl integer, embedding vector({self.dim})) "
                "ON COMMIT DROP"
            )
            conn.execute(
                "CREATE TEMP TABLE rt_stage_post (lexeme text, chunk_id text, tf integer) "
                "ON COMMIT DROP"
            )
            cur = conn.cursor()
            terms: dict[int, Counter[str]] = {}
            with cur.copy(
                "COPY rt_stage (chunk_id, ord, doc_id, content_hash, metadata, dl, embedding) "
                "FROM STDIN (FORMAT BINARY)"
            ) as copy:
                copy.set_types(["text", "int4", "text", "text", "jsonb", "int4", "vector"])
                for j, i in enumerate(todo):
                    c = chunks[i]
                    toks = bm25_tokens(c.text)
                    terms[i] = Counter(toks)
                    vec = None if mat is None else mat[j]
                    copy.write_row(
                        (c.chunk_id, i, c.doc_id, hashes[i], Jsonb(c.metadata), len(toks), vec)
                    )
            with cur.copy("COPY rt_stage_post (lexeme, chunk_id, tf) FROM STDIN") as copy:
                for i, counts in terms.items():
                    for lexeme, tf in counts.items():
                        copy.write_row((lexeme, chunks[i].chunk_id, tf))
            conn.execute(
                f"INSERT INTO {t} SELECT * FROM rt_stage ON CONFLICT (chunk_id) DO UPDATE SET "
                "ord = EXCLUDED.ord, doc_id = EXCLUDED.doc_id, "
                "content_hash = EXCLUDED.content_hash, metadata = EXCLUDED.metadata, "
                "dl = EXCLUDED.dl, embedding = EXCLUDED.embedding"
            )
            conn.execute(f"DELETE FROM {t}_post p USING rt_stage s WHERE p.chunk_id = s.chunk_id")
            conn.execute(f"INSERT INTO {t}_post (lexeme, chunk_id, tf) SELECT * FROM rt_stage_post")
            gone = conn.execute(f"DELETE FROM {t} WHERE NOT (chunk_id = ANY(%s))", (ids,))
            if todo or gone.rowcount:
                # every posting's BM25 weight: idf and avgdl depend on the whole table
                conn.execute(
                    f"WITH st AS (SELECT count(*)::float8 AS n, avg(dl)::float8 AS a FROM {t}), "
                    f"df AS (SELECT lexeme, count(*)::float8 AS c FROM {t}_post GROUP BY lexeme) "
                    f"UPDATE {t}_post p SET w = ln(1 + (st.n - df.c + 0.5) / (df.c + 0.5)) "
                    f"* p.tf / (p.tf + {_K1} * (1 - {_B} + {_B} * c.dl / st.a)) "
                    f"FROM st, df, {t} c WHERE df.lexeme = p.lexeme AND c.chunk_id = p.chunk_id"
                )
            conn.execute(
                f"UPDATE {t} SET ord = o.ord FROM unnest(%s::text[], %s::int[]) AS o(id, ord) "
                f"WHERE {t}.chunk_id = o.id AND {t}.ord <> o.ord",
                (ids, list(range(len(ids)))),
            )
        self.changed = len(todo)
        conn.execute(f"CREATE INDEX IF NOT EXISTS {t}_doc ON {t} (doc_id)")
        conn.execute(f"CREATE INDEX IF NOT EXISTS {t}_post_chunk ON {t}_post (chunk_id)")
        if self.use_hnsw:
            # pgvector builds far faster when the graph fits in maintenance_work_mem
            # (default 64 MB; 100k x 384-d needs ~200 MB); this session only
            conn.execute("SET maintenance_work_mem = '512MB'")
            conn.execute(
                f"CREATE INDEX IF NOT EXISTS {t}_hnsw ON {t} USING hnsw "
                f"(embedding vector_cosine_ops) WITH (m = {int(self.index.hnsw_m)}, "
                f"ef_construction = {int(self.index.hnsw_ef_construction)})"
            )
            self._query_settings()
        else:
            conn.execute(f"DROP INDEX IF EXISTS {t}_hnsw")  # exact: sequential scan
        conn.execute(f"ANALYZE {t}")
        conn.execute(f"ANALYZE {t}_post")
        self.rows = int(conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0])

    def _query_settings(self) -> None:
        """This session's HNSW search settings (a session that queries the graph)."""
        if self.use_hnsw and self._conn is not None:
            self._conn.execute(f"SET hnsw.ef_search = {int(self.index.hnsw_ef_search)}")
            self._conn.execute("SET hnsw.iterative_scan = strict_order")

    # ------------------------------------------------------- other processes (Ray)
    def handle(self) -> dict[str, Any]:
        """What another process needs to query this table (:meth:`attach`), the DSN
        without its password (each process reads its own from libpq's environment:
        ``PGPASSWORD`` or ``~/.pgpass``)."""
        from psycopg.conninfo import conninfo_to_dict, make_conninfo

        params = conninfo_to_dict(self.server.dsn)
        params.pop("password", None)
        return {
            "dsn": make_conninfo("", **params),
            "table": self.table,
            "dim": self.dim,
            "rows": self.rows,
            "use_hnsw": self.use_hnsw,
        }

    @classmethod
    def attach(
        cls,
        cfg: RetrievalConfig,
        index: IndexConfig,
        embedder: Embedder | None,
        handle: Mapping[str, Any],
    ) -> PgVectorRetriever:
        """A retriever over a table that another process built and keeps up to date
        (its :meth:`handle`): its own connection, no sync; :meth:`close` closes the
        connection and never stops a server."""
        server = PgServer(str(handle["dsn"]))
        out = cls(
            cfg,
            index,
            embedder,
            table=str(handle["table"]),
            server=server,
            conn=server.connect(),
            dim=int(handle["dim"]),
            rows=int(handle["rows"]),
            use_hnsw=bool(handle["use_hnsw"]),
        )
        out._query_settings()
        return out

    # ------------------------------------------------------------------ querying
    def _lexical(self, where: str) -> str:
        """BM25 (bm25s's 'lucene' variant: idf ``ln(1 + (N - df + .5) / (df + .5))``
        times ``tf / (tf + k1 (1 - b + b dl / avgdl))``, stored per posting at sync
        time; a query term counts as often as it occurs) of every filtered chunk
        sharing a term with the query."""
        t = self.table
        return (
            "SELECT c.chunk_id, c.doc_id, c.ord, x.s FROM (SELECT p.chunk_id, "
            "sum(q.n * p.w) AS s FROM (SELECT lexeme, count(*) AS n "
            "FROM unnest(%(terms)s::text[]) AS lexeme GROUP BY lexeme) q "
            f"JOIN {t}_post p ON p.lexeme = q.lexeme GROUP BY p.chunk_id) x "
            f"JOIN {t} c ON c.chunk_id = x.chunk_id WHERE {where}"
        )

    def _sql(self, where: str) -> str:
        t, mode = self.table, self.cfg.mode
        # an HNSW index scan serves ORDER BY distance alone; exact search breaks ties
        # by position inside too (the outer sort does it for the graph's candidates)
        tie = "" if self.use_hnsw else ", c.ord"
        dense = (
            f"SELECT * FROM (SELECT c.chunk_id, c.doc_id, c.ord, "
            f"1 - (c.embedding <=> %(q)s) AS s FROM {t} c WHERE {where} "
            f"ORDER BY c.embedding <=> %(q)s{tie} LIMIT %(n)s) z ORDER BY s DESC, ord"
        )
        lexical = (
            f"SELECT * FROM ({self._lexical(where)}) x WHERE s > 0 ORDER BY s DESC, ord LIMIT %(n)s"
        )
        if mode == "dense":
            return dense
        if mode == "bm25":
            return lexical
        if mode == "hybrid_rrf":
            return (
                f"WITH d AS (SELECT *, row_number() OVER (ORDER BY s DESC, ord) AS r "
                f"FROM ({dense}) x), "
                f"l AS (SELECT *, row_number() OVER (ORDER BY s DESC, ord) AS r "
                f"FROM ({lexical}) y) "
                "SELECT coalesce(d.chunk_id, l.chunk_id), coalesce(d.doc_id, l.doc_id), "
                "coalesce(d.ord, l.ord) AS o, "
                "coalesce(1.0 / (%(k)s + d.r), 0) + coalesce(1.0 / (%(k)s + l.r), 0) AS f "
                "FROM d FULL JOIN l ON d.chunk_id = l.chunk_id "
                "ORDER BY f DESC, o LIMIT %(top)s"
            )
        # hybrid_weighted: min-max of each signal over every filtered row
        return (
            f"WITH l AS ({self._lexical(where)}), "
            "s AS (SELECT c.chunk_id, c.doc_id, c.ord, 1 - (c.embedding <=> %(q)s) AS ds, "
            f"coalesce(l.s, 0) AS ls FROM {t} c LEFT JOIN l ON l.chunk_id = c.chunk_id "
            f"WHERE {where}), "
            "m AS (SELECT min(ds) AS d0, max(ds) AS d1, min(ls) AS l0, max(ls) AS l1 FROM s) "
            "SELECT chunk_id, doc_id, ord, "
            "(1 - %(w)s) * CASE WHEN d1 > d0 THEN (ds - d0) / (d1 - d0) ELSE 0 END "
            "+ %(w)s * CASE WHEN l1 > l0 THEN (ls - l0) / (l1 - l0) ELSE 0 END AS f "
            "FROM s, m ORDER BY f DESC, ord LIMIT %(top)s"
        )

    def retrieve_many(
        self, queries: Sequence[str], top_k: int, filters: Mapping[str, Any] | None = None
    ) -> list[list[Hit]]:
        """:meth:`retrieve` for many queries, embedding them in one batch."""
        if self._conn is None:
            raise RuntimeError("retriever is closed")
        where, fparams = _where(merge_filters(self.cfg.filters, filters))
        qvecs = None
        if self.cfg.mode != "bm25" and queries:
            assert self.embedder is not None
            qvecs = np.asarray(embed_queries(self.embedder, list(queries)), dtype=np.float32)
        sql = self._sql(where)
        out: list[list[Hit]] = []
        for qi, text in enumerate(queries):
            if top_k <= 0 or self.rows == 0:
                out.append([])
                continue
            terms = bm25_tokens(text)
            if self.cfg.mode == "bm25" and not terms:
                out.append([])
                continue
            params: dict[str, Any] = {
                "n": max(top_k, RRF_DEPTH) if self.cfg.mode == "hybrid_rrf" else top_k,
                "top": top_k,
                "k": self.cfg.rrf_k,
                "w": self.cfg.text_weight,
                "terms": terms,
                **fparams,
            }
            if qvecs is not None:
                params["q"] = qvecs[qi]
            rows = self._conn.execute(sql, params).fetchall()
            out.append(
                [
                    Hit(chunk_id=r[0], doc_id=r[1], score=float(r[3]), rank=n)
                    for n, r in enumerate(rows, start=1)
                ]
            )
        return out

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        self.server.close()
