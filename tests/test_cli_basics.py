from __future__ import annotations

import json
import subprocess
import sys

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
