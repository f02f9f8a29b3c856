"""Names and defaults the library and the CLI's option help share.

Kept in a module that imports nothing but :mod:`pathlib`: the CLI builds every command's
signature (defaults, help text) at start-up, so a constant it shows must not pull in the
records, the report or the run store (``ragtriage --help`` stays fast;
``benchmarks/startup.py``).
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["DEFAULT_MAX_EXAMPLES", "DEFAULT_STORE_PATH", "SERVE_EXPORT_DIR", "STORE_DSN_ENV"]

#: The SQLite run store used when no ``--store`` is given.
DEFAULT_STORE_PATH = Path(".ragtriage") / "runs.sqlite"
#: A PostgreSQL DSN here replaces the default SQLite file.
STORE_DSN_ENV = "RAGTRIAGE_STORE_DSN"
#: Where ``ragtriage serve STORE`` writes the store's runs as run directories.
SERVE_EXPORT_DIR = Path(".ragtriage") / "serve-store"
#: Failing examples the HTML report gives a drill-down (``ragtriage report --max-examples``).
DEFAULT_MAX_EXAMPLES = 300
