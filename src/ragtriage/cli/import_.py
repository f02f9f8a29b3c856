"""``ragtriage import FORMAT SRC --out RUN`` — traces from another tool's data.

Formats: ``ragas``, ``deepeval``, ``ragchecker``, ``openinference``, ``langfuse``,
``columns`` (see :mod:`ragtriage.integrations` and docs/formats.md). A JSON object's
records are found under a usual key or its only list of objects; ``--records-key``
names the list. With ``--documents``, retrieved
passages are located in the documents and the gold documents are chunked around them
(full diagnosis); without, minimal traces (chunking reported as not observable).
"""

from __future__ import annotations

from pathlib import Path

import typer

from ragtriage.errors import InputError

__all__ = ["register"]

# the integrations (and the diagnosis modules they use) load when the command runs,
# so `ragtriage --help` stays light; ragtriage.integrations.IMPORT_FORMATS is the same
_FORMATS = ("ragas", "deepeval", "ragchecker", "openinference", "langfuse", "columns")


def register(app: typer.Typer) -> None:
    @app.command("import")
    def import_(
        fmt: str = typer.Argument(..., metavar="FORMAT", help=" | ".join(_FORMATS)),
        src: Path = typer.Argument(
            ..., help="JSONL / JSON / CSV / Parquet file (or a saved HF dataset directory)."
        ),
        out: Path = typer.Option(..., "--out", help="Run directory to write traces.jsonl to."),
        documents: Path | None = typer.Option(
            None,
            "--documents",
            help="The corpus (documents.jsonl, a folder of .txt/.md, DragonBall, CLAPnq): "
            "locate passages and chunk the gold documents for the full diagnosis.",
        ),
        references: Path | None = typer.Option(
            None,
            "--references",
            help="Gold answers for span exports (openinference, langfuse): id or question "
            "+ reference per row.",
        ),
        run_id: str | None = typer.Option(None, "--run-id", help="Run id of the traces."),
        records_key: str | None = typer.Option(
            None,
            "--records-key",
            help="Key of the list of records inside a JSON document (a dotted path: "
            "data.items); default: a usual key (data, input_data, results ...) or the "
            "object's only list of objects.",
        ),
        question_col: str = typer.Option("question", "--question-col", help="columns format"),
        contexts_col: str = typer.Option(
            "contexts", "--contexts-col", help="columns: passages given to the generator"
        ),
        answer_col: str = typer.Option("answer", "--answer-col", help="columns format"),
        reference_col: str = typer.Option(
            "reference", "--reference-col", help="columns: the gold answer"
        ),
        reference_contexts_col: str | None = typer.Option(
            None, "--reference-contexts-col", help="columns: gold evidence passages"
        ),
        reference_docs_col: str | None = typer.Option(
            None, "--reference-docs-col", help="columns: gold document ids"
        ),
        retrieved_col: str | None = typer.Option(
            None,
            "--retrieved-col",
            help="columns: the retriever's list before reranking (makes reranking observable)",
        ),
        id_col: str | None = typer.Option(None, "--id-col", help="columns: row id"),
        list_sep: str | None = typer.Option(
            None,
            "--list-sep",
            help="Separator of list items written as plain text in one CSV cell "
            "(default: a cell is a JSON list, a list literal or one item).",
        ),
    ) -> None:
        """Import RAGAS / DeepEval / RAGChecker / OpenInference / Langfuse / column data
        as traces."""
        from ragtriage.integrations import IMPORT_FORMATS, column_map, import_traces

        if fmt not in IMPORT_FORMATS:
            raise InputError(
                f"unknown format {fmt!r}; expected one of {', '.join(IMPORT_FORMATS)}",
                field="FORMAT",
            )
        cmap = (
            column_map(
                question_col,
                contexts_col,
                answer_col,
                reference_col,
                reference_contexts=reference_contexts_col,
                reference_doc_ids=reference_docs_col,
                retrieved=retrieved_col,
                row_id=id_col,
                list_sep=list_sep,
            )
            if fmt == "columns"
            else None
        )
        result = import_traces(
            fmt,
            src,
            out,
            documents=documents,
            references=references,
            columns=cmap,
            run_id=run_id,
            list_sep=list_sep,
            records_key=records_key,
        )
        typer.echo(f"{out / 'traces.jsonl'}: wrote {len(result.traces)} trace(s) from {src}")
        for line in result.stats.lines()[1:]:
            typer.echo(f"  {line}")
