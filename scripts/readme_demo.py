"""The demo loop of ``make demo``, and the README block that reports what it printed.

The loop (weak pipeline -> diagnose -> the top advice as a config change -> re-run ->
compare) is defined here once: ``make demo`` runs it through this script, and
``tests/test_readme_demo.py`` runs it again and checks the README block against what it
prints, so the figures in the README are the demo's real output.

    python scripts/readme_demo.py run [--out runs/demo] [--judge rules]   # what make demo runs
    python scripts/readme_demo.py write [--fresh-clone]   # run it, rewrite the README block
    python scripts/readme_demo.py check                   # run it, compare with the README

``write`` times the loop with the package installed, twice in an empty folder: with an
empty embedding cache (``.ragtriage/``), then with it filled (both runs must print the
same figures); ``--fresh-clone`` also clones HEAD into a temporary folder and times
``make demo`` there twice: from nothing (virtual environment, ``pip install``, the
corpus embedded) and again with the environment built (without it, the last such
figures stay, with the commit they were measured at). Timings are
stated with the date, the machine and its load average; the gate and story lines must
match a new run exactly.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import re
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
BEGIN = "<!-- demo:begin -->"
END = "<!-- demo:end -->"
#: The lines of the demo's output the README quotes (they must match a new run).
QUOTED = re.compile(r"^(gate .*|what (broke|changed|improved|got worse):.*)$", re.MULTILINE)


@dataclass(frozen=True)
class DemoRun:
    output: str  # everything the loop printed (stdout)
    seconds: float

    @property
    def quoted(self) -> list[str]:
        """The gate and story lines, in the order printed."""
        return [m.group(0).rstrip() for m in QUOTED.finditer(self.output)]


def _ragtriage() -> list[str]:
    """The console script next to this interpreter (what a user runs), else ``-m``."""
    script = Path(sys.executable).parent / "ragtriage"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "ragtriage"]


def demo_steps(out: str, weak: str, judge: str, gate: str) -> list[tuple[list[str], bool]]:
    """The loop's commands (arguments after ``ragtriage``), each with whether its output
    is shown."""
    return [
        (["run", "--demo", "--config", weak, "--out", f"{out}/before", "--overwrite"], True),
        (["diagnose", f"{out}/before", "--judge", judge], True),
        (["advise", f"{out}/before", "--top", "3", "--write-config", f"{out}/fixed.yaml"], True),
        (
            [
                "run",
                "--demo",
                "--config",
                f"{out}/fixed.yaml",
                "--out",
                f"{out}/after",
                "--overwrite",
            ],
            True,
        ),
        (["diagnose", f"{out}/after", "--judge", judge], False),
        (["report", f"{out}/after"], True),
        (["compare", f"{out}/before", f"{out}/after", "--gate", gate, "--story"], True),
    ]


def run_demo(
    out: str,
    *,
    weak: str = "configs/demo-weak.yaml",
    judge: str = "rules",
    gate: str = "accuracy>=+0.02",
    echo: bool = False,
    cwd: Path = ROOT,
) -> DemoRun:
    """Run the loop; ``echo`` prints each command and its output as ``make`` would. Exits
    with the failing command's status when one fails (the gate's included)."""
    printed: list[str] = []
    # this checkout's code, also when the interpreter's package is installed from another
    # (a worktree of the repository run with the main checkout's virtual environment)
    paths = [str(ROOT / "src"), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    t0 = time.perf_counter()
    for args, shown in demo_steps(out, weak, judge, gate):
        if echo:
            print("ragtriage " + shlex.join(args), flush=True)
        done = subprocess.run(
            [*_ragtriage(), *args],
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            text=True,
            check=False,
        )
        if shown:
            printed.append(done.stdout)
            if echo:
                print(done.stdout, end="", flush=True)
        if done.returncode != 0:
            raise SystemExit(done.returncode)
    return DemoRun("".join(printed), time.perf_counter() - t0)


def readme_block(text: str = "") -> list[str]:
    """The quoted lines of the README's demo block (inside its code fence)."""
    text = text or README.read_text(encoding="utf-8")
    start, end = text.index(BEGIN), text.index(END)
    block = text[start:end]
    fence = block.split("```")
    if len(fence) < 3:
        raise SystemExit(f"{README}: no code fence between {BEGIN} and {END}")
    return [line.rstrip() for line in fence[1].splitlines()[1:] if line.strip()]


def _minutes(seconds: float) -> str:
    m, s = divmod(round(seconds), 60)
    return f"{m} min {s} s" if m else f"{s} s"


def _machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} CPU cores ({cpu}), Python {platform.python_version()}"


def _fresh_clone_timings() -> tuple[float, float, str]:
    """``make demo`` in a clone of HEAD: from nothing, then with the venv built."""
    with tempfile.TemporaryDirectory(prefix="ragtriage-clone-") as tmp:
        clone = Path(tmp) / "ragtriage"
        subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=clone,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        times = []
        for _ in range(2):
            t0 = time.perf_counter()
            subprocess.run(["make", "demo"], cwd=clone, check=True, stdout=subprocess.DEVNULL)
            times.append(time.perf_counter() - t0)
    return times[0], times[1], head


def write_block(cold: DemoRun, warm: DemoRun, fresh: tuple[float, float, str] | None) -> None:
    text = README.read_text(encoding="utf-8")
    start, end = text.index(BEGIN), text.index(END)
    day = datetime.date.today().isoformat()
    load = os.getloadavg()[0]
    if fresh is not None:
        clone = (
            f"`make demo` from a fresh clone (commit {fresh[2]}) took {_minutes(fresh[0])}, "
            "virtual environment, `pip install` and the embedding of the corpus included, "
            f"and {_minutes(fresh[1])} when run again. "
        )
    else:  # the last measured one stays: it names the commit it was measured at
        old = re.search(r"`make demo` from a fresh clone \(commit \w+\)[^.]*\. ", text)
        clone = old.group(0) if old else ""
    block = (
        f"{BEGIN}\n"
        "```\n" + "\n".join(cold.quoted) + "\n```\n\n"
        f"Measured {day} on {_machine()}, load average {load:.1f} from other jobs. {clone}"
        f"With the package installed, the loop's seven commands took {_minutes(cold.seconds)} "
        f"with an empty embedding cache and {_minutes(warm.seconds)} with the cache in "
        "`.ragtriage/` filled. These lines are written by `scripts/readme_demo.py write` "
        "from runs of the loop; `tests/test_readme_demo.py` runs it again and checks them.\n"
    )
    README.write_text(text[:start] + block + text[end:], encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="action", required=True)
    run_p = sub.add_parser("run", help="run the loop, printing each command (make demo)")
    run_p.add_argument("--out", default="runs/demo")
    run_p.add_argument("--weak", default="configs/demo-weak.yaml")
    run_p.add_argument("--judge", default="rules")
    run_p.add_argument("--gate", default="accuracy>=+0.02")
    write_p = sub.add_parser("write", help="run the loop and rewrite the README block")
    write_p.add_argument("--fresh-clone", action="store_true")
    sub.add_parser("check", help="run the loop and compare with the README block")
    args = parser.parse_args(argv)

    if args.action == "run":
        run_demo(args.out, weak=args.weak, judge=args.judge, gate=args.gate, echo=True)
        return 0
    weak = str(ROOT / "configs" / "demo-weak.yaml")
    with tempfile.TemporaryDirectory(prefix="ragtriage-demo-") as tmp:
        if args.action == "check":
            run = run_demo(f"{tmp}/demo", weak=weak)
        else:  # timed in an empty folder: an empty embedding cache, then a filled one
            run = run_demo(f"{tmp}/demo", weak=weak, cwd=Path(tmp))
            warm = run_demo(f"{tmp}/demo", weak=weak, cwd=Path(tmp))
            if warm.quoted != run.quoted:
                sys.exit(
                    "two runs of the loop printed different figures:\n"
                    + "\n".join(["empty embedding cache:", *run.quoted])
                    + "\n"
                    + "\n".join(["filled embedding cache:", *warm.quoted])
                )
    if args.action == "check":
        expected, got = readme_block(), run.quoted
        if expected != got:
            print("README demo block differs from the demo's output:", file=sys.stderr)
            for line in got:
                print(f"  {line}", file=sys.stderr)
            return 1
        print(f"README demo block matches the demo ({len(got)} lines)")
        return 0
    fresh = _fresh_clone_timings() if args.fresh_clone else None
    write_block(run, warm, fresh)
    print(f"wrote the demo block of {README}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
