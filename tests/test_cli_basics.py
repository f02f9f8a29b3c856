from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from ragtriage import __version__


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ragtriage", *args], capture_output=True, text=True
    )


def test_version() -> None:
    proc = _run("--version")
    assert proc.returncode == 0
    assert proc.stdout.strip() == f"ragtriage {__version__}"


def test_schema_command_prints_a_json_schema() -> None:
    proc = _run("schema", "examples")
    assert proc.returncode == 0, proc.stderr
    schema = json.loads(proc.stdout)
    assert "example_id" in schema["properties"]
    assert schema["additionalProperties"] is False


def test_unknown_schema_kind_exits_2() -> None:
    proc = _run("schema", "bananas")
    assert proc.returncode == 2
    assert "unknown kind" in proc.stderr


def test_the_cli_imports_heavy_libraries_only_for_the_commands_that_use_them() -> None:
    """`ragtriage validate`, `--help` and friends start in a fraction of a second: the
    SDK, ONNX runtime, bm25s and scikit-learn are imported by the commands that need
    them (a test of what is imported, not a timing)."""
    code = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from ragtriage.cli import app\n"
        "assert CliRunner().invoke(app, ['--help']).exit_code == 0\n"
        "heavy = ('openai', 'onnxruntime', 'bm25s', 'sklearn', 'aiohttp', 'tokenizers')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "[]", out.stdout


def test_an_unusable_output_path_is_a_clear_error_not_a_traceback(tmp_path: Path) -> None:
    afile = tmp_path / "afile"
    afile.write_text("x", encoding="utf-8")
    for out in (afile, afile / "sub"):
        done = subprocess.run(
            [sys.executable, "-m", "ragtriage", "schema", "all", "--out", str(out)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 2, done.stderr
        assert done.stderr.startswith(f"error: {out}: "), done.stderr
        assert "Traceback" not in done.stderr
