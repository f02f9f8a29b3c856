"""What the CLI imports (behaviour, not timing; the timings are benchmarks/startup.py).

Each check runs the real command in a fresh interpreter, then lists the modules it
loaded: the offline paths (``--help``, ``validate``, ``diagnose --judge rules``,
``report``) must not import an LLM SDK or its HTTP stack, and ``--help`` loads no
library module at all.
"""

from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import typer

from diag_helpers import make_trace
from ragtriage.cli import COMMAND_MODULES, COMMANDS, build_app

#: An LLM SDK or what only it brings (the HTTP clients, the tokenizer).
LLM_STACK = ("openai", "aiohttp", "httpx", "tiktoken", "anthropic", "json_repair")
#: Heavy libraries none of the offline paths below needs.
HEAVY = ("numpy", "sklearn", "scipy", "onnxruntime", "bm25s", "tokenizers", "pandas")

_PROBE = """
import contextlib, io, json, sys
from ragtriage.cli import main
out = io.StringIO()
try:
    with contextlib.redirect_stdout(out):
        main(sys.argv[1:])
    code = 0
except SystemExit as exc:
    code = exc.code
print(json.dumps({"code": code, "modules": sorted(sys.modules), "out": out.getvalue()}))
"""


def _loaded(*args: str, cwd: Path) -> tuple[set[str], str]:
    """The modules a fresh interpreter holds after ``ragtriage ARGS`` (exit 0 checked)."""
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["code"] in (0, None), (args, result["out"], done.stderr)
    return set(result["modules"]), result["out"]


def _run_dir(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    traces = [
        make_trace(example_id="q1"),  # a wrong year: a diagnosis to make
        make_trace(example_id="q2", answer="Acme Corp was founded in 1999."),
    ]
    (run / "traces.jsonl").write_text(
        "".join(t.model_dump_json() + "\n" for t in traces), encoding="utf-8"
    )
    return run


def test_commands_names_the_commands_each_module_registers() -> None:
    for module in COMMAND_MODULES:
        app = build_app((module,))
        names = {c.name for c in app.registered_commands}
        names |= {g.name for g in app.registered_groups}
        assert names == {n for n, m in COMMANDS.items() if m == module}, module


def test_running_one_command_builds_only_that_command() -> None:
    app = build_app((COMMANDS["diagnose"],))
    assert [c.name for c in app.registered_commands] == ["diagnose"]
    # every command is still there for the help, --version and tests
    full = build_app()
    assert isinstance(full, typer.Typer)
    assert len(full.registered_commands) + len(full.registered_groups) == len(COMMANDS)


def test_help_loads_no_library_module(tmp_path: Path) -> None:
    modules, out = _loaded("--help", cwd=tmp_path)
    assert "diagnose" in out and "validate" in out
    ours = {m for m in modules if m.startswith("ragtriage.") and not m.startswith("ragtriage.cli")}
    assert ours <= {"ragtriage.errors", "ragtriage.constants"}, sorted(ours)
    for name in ("pydantic", "yaml", "asyncio", *LLM_STACK, *HEAVY, "jinja2"):
        assert name not in modules, name


def test_offline_commands_import_no_llm_sdk(tmp_path: Path) -> None:
    run = _run_dir(tmp_path)
    validate, out = _loaded("validate", str(run), cwd=tmp_path)
    assert "ok (2 traces)" in out
    diagnose, out = _loaded("diagnose", str(run), "--judge", "rules", cwd=tmp_path)
    assert (run / "diagnoses.jsonl").is_file(), out
    report, out = _loaded("report", str(run), cwd=tmp_path)
    assert (run / "report.html").is_file(), out
    for name in LLM_STACK:
        assert name not in validate, f"validate imports {name}"
        assert name not in diagnose, f"diagnose --judge rules imports {name}"
        assert name not in report, f"report imports {name}"
    for name in HEAVY:
        assert name not in validate, f"validate imports {name}"
        assert name not in diagnose, f"diagnose --judge rules imports {name}"
    # the HTML report is the one of these that renders templates
    assert "jinja2" in report
    assert "jinja2" not in diagnose and "jinja2" not in validate


@pytest.mark.parametrize(
    "package", ["ragtriage.critic", "ragtriage.report", "ragtriage.llm", "ragtriage.metrics"]
)
def test_a_lazy_package_gives_every_public_name_from_its_submodule(package: str) -> None:
    """These packages load their submodules on first use of a name (the diagnoser needs
    only the error system and the summary): every name of ``__all__`` resolves to its
    submodule's object."""
    pkg = importlib.import_module(package)
    exports: dict[str, str] = pkg._EXPORTS
    assert set(pkg.__all__) == set(exports)
    for name, module in exports.items():
        defined = getattr(importlib.import_module(f"{package}.{module}"), name)
        assert getattr(pkg, name) is defined, name
    assert set(pkg.__all__) <= set(dir(pkg))


def test_a_lazy_pattern_compiles_on_first_use_and_matches_as_re_does() -> None:
    from ragtriage._regex import compile_all, lazy_compile

    source, flags = r"(?P<n>\d+)\s*(?:km|miles)\b", re.IGNORECASE
    lazy, plain = lazy_compile(source, flags), re.compile(source, flags)
    assert lazy.pattern == plain.pattern
    assert "search" not in vars(lazy)  # nothing compiled yet
    text = "12 KM, then 7 miles and 3kms"
    assert lazy.findall(text) == plain.findall(text)
    assert "search" in vars(lazy)  # compiled once, its methods are now the pattern's own
    assert [m.span() for m in lazy.finditer(text)] == [m.span() for m in plain.finditer(text)]
    assert lazy.sub("<\\g<n>>", text) == plain.sub("<\\g<n>>", text)
    assert lazy.split(text) == plain.split(text)
    assert (lazy.flags, lazy.groups, lazy.groupindex) == (
        plain.flags,
        plain.groups,
        plain.groupindex,
    )
    other = lazy_compile(r"[\u4e00-\u9fff]+")
    compile_all()  # what the engine does before forking workers
    assert "search" in vars(other)
    assert other.findall("ab 中文 cd") == ["中文"]
