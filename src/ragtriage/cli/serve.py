"""``ragtriage serve [PATH ...]`` — the local web app: browse runs and traces, annotate."""

from __future__ import annotations

from pathlib import Path

import typer

from ragtriage.constants import SERVE_EXPORT_DIR
from ragtriage.errors import InputError

__all__ = ["register"]

TOKEN_ENV = "RAGTRIAGE_SERVE_TOKEN"
MIN_TOKEN = 12


def register(app: typer.Typer) -> None:
    @app.command("serve")
    def serve(
        paths: list[str] = typer.Argument(
            None,
            help="Run directories, directories holding runs, or run stores (a SQLite "
            "store file such as .ragtriage/runs.sqlite, or a postgresql:// DSN; their runs "
            f"are written once as run directories under {SERVE_EXPORT_DIR}) (default: "
            "./runs if it exists, else the current directory). Nothing outside them is "
            "served.",
        ),
        host: str = typer.Option(
            "127.0.0.1",
            "--host",
            help="Address to bind. Any non-loopback address needs --token or --new-token.",
        ),
        port: int = typer.Option(8765, "--port", min=1, max=65535, help="Port."),
        token: str | None = typer.Option(
            None,
            "--token",
            envvar=TOKEN_ENV,
            help=f"Access token every request must carry (?token= once, then a cookie); "
            f"also from {TOKEN_ENV}.",
        ),
        new_token: bool = typer.Option(
            False, "--new-token", help="Generate a random access token and print it once."
        ),
        read_only: bool = typer.Option(
            False, "--read-only", help="Browse only: no annotation can be saved."
        ),
        page_size: int = typer.Option(
            50, "--page-size", min=1, max=500, help="Traces per run page."
        ),
    ) -> None:
        """Serve the web app on http://HOST:PORT/ (runs, run, trace, compare, annotate,
        agreement); Ctrl-C stops it. Exit 2 on a non-loopback --host without a token."""
        try:
            import uvicorn

            from ragtriage.serve import allowed_hosts_for, create_app, is_loopback
            from ragtriage.serve import new_token as make_token
        except ImportError as exc:
            from ragtriage.extras import install_hint

            raise InputError(
                f"ragtriage serve needs the 'serve' extra ({exc.name} is missing): "
                + install_hint("serve")
            ) from exc
        from ragtriage.store import export_store, is_dsn, is_store

        if token is not None and new_token:
            raise InputError("give --token or --new-token, not both", field="--token")
        if token is not None and len(token) < MIN_TOKEN:
            raise InputError(
                f"the access token is too short (at least {MIN_TOKEN} characters)",
                field="--token",
            )
        generated = make_token() if new_token else None
        secret = token or generated
        if not is_loopback(host) and secret is None:
            raise InputError(
                f"refusing to serve on the non-loopback address {host!r} without an access "
                "token: anyone who can reach it could read the traces and write annotations. "
                f"Pass --token T (or set {TOKEN_ENV}) or --new-token, or bind 127.0.0.1",
                field="--host",
            )
        roots: list[Path] = []
        for target in paths or []:
            if is_store(target):
                # a store's runs, streamed once into run directories the app indexes
                roots.append(export_store(target))
                typer.echo(
                    f"run store {target if not is_dsn(target) else 'postgresql'}: {roots[-1]}"
                )
            else:
                roots.append(Path(target))
        if not roots:
            roots = [Path("runs")] if Path("runs").is_dir() else [Path(".")]
        web = create_app(
            roots,
            token=secret,
            read_only=read_only,
            allowed_hosts=allowed_hosts_for(host, secret),
            page_size=page_size,
        )
        shown = f"[{host}]" if ":" in host else host
        base = f"http://{shown}:{port}/"
        typer.echo(f"ragtriage serve: {', '.join(str(r) for r in roots)}")
        from ragtriage.runview import scan_roots

        # folders that look like runs but are not served, and why (the runs page too)
        for skipped in scan_roots(roots):
            typer.echo(f"skipped {skipped.path}: {skipped.reason}", err=True)
        if generated is not None:
            # printed once; the first visit moves it into a cookie and off the address bar
            typer.echo(f"open {base}?token={generated}")
        elif secret is not None:
            typer.echo(f"open {base}?token=<your token>")
        else:
            typer.echo(f"open {base}")
        if read_only:
            typer.echo("read-only: annotations cannot be saved")
        # no access log: a first visit's URL carries the token
        uvicorn.run(web, host=host, port=port, log_level="warning", access_log=False)
