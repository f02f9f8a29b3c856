"""``ragtriage advise RUN --write-config FIXED.yaml`` — the top advice as a config change."""

from __future__ import annotations

from pathlib import Path

import typer

from ragtriage.errors import ConfigError, InputError

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    @app.command("advise")
    def advise(
        run_dir: Path = typer.Argument(..., help="Run directory with manifest and diagnoses."),
        write_config: Path | None = typer.Option(
            None, "--write-config", "-w", help="Write the changed pipeline config (YAML) here."
        ),
        config: Path | None = typer.Option(
            None, "--config", "-c", help="Pipeline config to change (default: the run's own)."
        ),
        top: int = typer.Option(
            1, "--top", min=1, help="Apply this many of the highest-ranked pieces of advice."
        ),
        name: str | None = typer.Option(None, "--name", help="Name of the new config."),
    ) -> None:
        """Map the highest-ranked advice of a diagnosed run to pipeline settings.

        One setting per piece of advice (e.g. E3 -> chunking.strategy=sentence, E7 ->
        rerank.top_k doubled); advice no setting can act on offline is listed as skipped.
        """
        import yaml
        from pydantic import ValidationError

        from ragtriage.config import PipelineConfig, load_config, strip_secrets
        from ragtriage.jsonl import atomic_write_text
        from ragtriage.store import load_run_dir
        from ragtriage.tuning import apply_advice

        run = load_run_dir(run_dir)
        if config is not None:
            cfg = load_config(config)
        else:
            try:
                cfg = PipelineConfig.model_validate(run.config)
            except ValidationError as exc:
                raise InputError(
                    f"the run's manifest has no usable pipeline config ({exc.errors()[0]['msg']});"
                    " pass --config",
                    path=str(run_dir / "manifest.json"),
                    field="config",
                ) from exc
        applied = apply_advice(cfg, run.diagnoses, top=top, name=name)
        last = None
        for c in applied.changes:
            if c.error_type is not last:
                typer.echo(f"{c.error_type.value} ({c.addressed} failing): {c.title}")
                last = c.error_type
            typer.echo(f"  change {c.describe()}")
        for etype, why in applied.skipped:
            typer.echo(f"{etype.value}: no config change ({why})")
        if not applied.changes:
            raise ConfigError("no advice maps to a config change for this run", field="--top")
        if write_config is not None:
            data = applied.config.model_dump(mode="json", exclude_defaults=True)
            data["name"] = applied.config.name
            strip_secrets(data)
            lines = [
                f"# {c.error_type.value}: {c.title} -> {c.describe()}" for c in applied.changes
            ]
            header = f"# ragtriage advise {run_dir}\n" + "\n".join(lines) + "\n"
            body = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
            atomic_write_text(write_config, header + body)
            typer.echo(f"wrote {write_config}")
