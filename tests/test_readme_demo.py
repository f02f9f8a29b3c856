"""The README says what the product does: its demo block is the demo's real output, and
every ``ragtriage COMMAND --option`` it shows exists."""

from __future__ import annotations

import functools
import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from typer.main import get_command

from ragtriage.cli import COMMANDS, build_app

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


@functools.cache
def _readme_demo() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "readme_demo", ROOT / "scripts" / "readme_demo.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["readme_demo"] = module  # its dataclass looks its module up
    spec.loader.exec_module(module)
    return module


def test_the_readme_demo_block_quotes_the_gate_and_four_story_lines() -> None:
    lines = _readme_demo().readme_block()
    assert [line.split(":")[0] for line in lines] == [
        lines[0].split(":")[0],
        "what broke",
        "what changed",
        "what improved",
        "what got worse",
    ]
    assert lines[0].startswith("gate accuracy>=+0.02 passed")


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_the_readme_demo_block_is_what_the_demo_prints(tmp_path: Path) -> None:
    """Runs the loop of ``make demo`` (scripts/readme_demo.py) on the bundled corpus and
    compares the gate and story lines with the README's, figure for figure."""
    demo = _readme_demo()
    run = demo.run_demo(str(tmp_path / "demo"))
    stale = "the README's demo block is stale; `python scripts/readme_demo.py write` gives:"
    assert run.quoted == demo.readme_block(), "\n".join([stale, *run.quoted])


def _options(command: Any) -> set[str]:
    return {opt for p in command.params for opt in (*p.opts, *p.secondary_opts)}


def test_every_command_and_option_the_readme_shows_exists() -> None:
    """``ragtriage X ... --flag`` in the README: X is a command (``runs``/``testset``
    with their subcommands) and each ``--flag`` of that invocation is one of its options."""
    cli = get_command(build_app())
    commands: dict[str, Any] = cli.commands  # type: ignore[attr-defined]
    invocation = re.compile(r"ragtriage ([a-z][a-z-]*)((?: [a-z][a-z-]*)?)([^`|\n]*)")
    checked = 0
    for lineno, line in enumerate(README.read_text(encoding="utf-8").splitlines(), 1):
        for m in invocation.finditer(line):
            name = m.group(1)
            if name not in COMMANDS:
                continue  # prose ("ragtriage moves onto ...")
            command = commands[name]
            if hasattr(command, "commands"):  # a group: runs add, testset export-training
                sub = m.group(2).strip()
                if sub not in command.commands:
                    continue  # "`runs trend`" written without its options
                command = command.commands[sub]
            invoked = re.split(r"[;#]|&&|\s\|\s", m.group(3))[0]
            for flag in re.findall(r"(?<![\w-])(--?[a-zA-Z][\w-]*)", invoked):
                assert flag == "--help" or flag in _options(command), (
                    f"README.md:{lineno}: ragtriage {name} has no option {flag}"
                )
                checked += 1
    assert checked > 40  # the check reads the README's many examples
