"""Start-up time of the CLI: the wall and CPU time of short offline commands, and which
heavy modules each one imports.

Run: .venv/bin/python benchmarks/startup.py [--runs 7] [--zh] [--importtime]
         [--baseline OTHER/src] [--no-bytecode-cache]

Times (median of ``--runs`` fresh processes, after one warm-up run that also writes the
bytecode caches) of

* ``ragtriage --help``                                   (target <= 0.5 s wall, 2 cores)
* ``ragtriage validate TRACES``                          (one trace)
* ``ragtriage diagnose TRACES --judge rules --overwrite`` (one trace, offline; target
  <= 1 s wall, 2 cores)
* ``ragtriage report RUN``                               (that one diagnosed trace)

The trace is one real-style trace of ``benchmarks/diagnose_rules.py`` (a ~300-word
reasoning answer with a wrong number; ``--zh``: the Chinese one). Wall time depends on
what else the machine runs, so the load average is printed and CPU time (user + system
of the child) is given next to it: on a busy machine the CPU column is the steadier one.
The children write and read bytecode caches as on a user's machine (also where
PYTHONDONTWRITEBYTECODE is set; ``--no-bytecode-cache`` keeps it). Then each command runs
once more in a probe interpreter that lists the heavy modules it imported (an LLM SDK on
any of these paths is a defect; tests/test_startup.py checks it). ``--importtime`` adds the ten slowest imports of the diagnose command by their own
time (``python -X importtime``). ``--baseline DIR`` times the ragtriage package under DIR
(the ``src`` of another checkout, e.g. a ``git worktree`` of an older commit) too, its
runs alternating with this checkout's, so that both meet the same load.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from diagnose_rules import real_trace  # noqa: E402

#: Modules worth knowing about: an LLM SDK and its HTTP stack, and heavy libraries.
WATCH = (
    "openai",
    "aiohttp",
    "httpx",
    "tiktoken",
    "json_repair",
    "numpy",
    "sklearn",
    "scipy",
    "onnxruntime",
    "bm25s",
    "tokenizers",
    "pandas",
    "jinja2",
    "pydantic",
    "yaml",
    "rapidfuzz",
    "asyncio",
    "multiprocessing",
    "rich",
)

TARGETS = {"--help": 0.5, "diagnose": 1.0}

_PROBE = """
import contextlib, io, json, sys
from ragtriage.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        main(sys.argv[1:])
    except SystemExit:
        pass
print(json.dumps(sorted(sys.modules)))
"""


def _command() -> list[str]:
    """The console script next to this interpreter (what a user runs), else ``-m``."""
    script = Path(sys.executable).parent / "ragtriage"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "ragtriage"]


#: Whether the children may write bytecode caches (``--no-bytecode-cache`` turns it off).
_BYTECODE = {"write": True}


def _env(src: Path) -> dict[str, str]:
    """The environment that makes ``src``'s ragtriage the one imported. Bytecode caches
    are written (by the warm-up run) and read, as on a user's machine, even where
    PYTHONDONTWRITEBYTECODE is set: without them every run compiles ragtriage's sources
    (about 0.4 s of a diagnose on 2 cores)."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    if _BYTECODE["write"]:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    else:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def _time(args: list[str], cwd: Path, src: Path) -> tuple[float, float]:
    """(wall s, CPU s) of one run of ``ragtriage ARGS``; a failure stops the benchmark."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(
        [*_command(), *args], cwd=cwd, env=_env(src), capture_output=True, text=True
    )
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"ragtriage {' '.join(args)} ({src}) failed:\n{done.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def _imported(args: list[str], cwd: Path, src: Path) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *args],
        cwd=cwd,
        env=_env(src),
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise SystemExit(f"probe of {' '.join(args)} failed:\n{done.stderr}")
    modules = set(json.loads(done.stdout.splitlines()[-1]))
    return [m for m in WATCH if m in modules]


def _slowest_imports(args: list[str], cwd: Path, n: int = 10) -> list[tuple[int, str]]:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "ragtriage", *args],
        cwd=cwd,
        env=_env(ROOT / "src"),
        capture_output=True,
        text=True,
    )
    rows = []
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        own, _cumulative, name = line.removeprefix("import time:").split("|")
        if own.strip().isdigit():
            rows.append((int(own), name.strip()))
    return sorted(rows, reverse=True)[:n]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7, help="timed runs per command")
    parser.add_argument("--zh", action="store_true", help="a Chinese trace")
    parser.add_argument("--importtime", action="store_true", help="slowest imports of diagnose")
    parser.add_argument(
        "--baseline", type=Path, help="another checkout's src to time as well (alternating)"
    )
    parser.add_argument(
        "--no-bytecode-cache",
        action="store_true",
        help="children write no .pyc (an existing one is still read: clear __pycache__ to time "
        "a first run)",
    )
    args = parser.parse_args()
    _BYTECODE["write"] = not args.no_bytecode_cache
    sources = {"this": ROOT / "src"}
    if args.baseline is not None:
        if not (args.baseline / "ragtriage" / "__init__.py").is_file():
            raise SystemExit(f"{args.baseline}: no ragtriage package here (give a src folder)")
        sources["baseline"] = args.baseline.resolve()

    work = Path(tempfile.mkdtemp(prefix="ragtriage-startup-"))
    try:
        run = work / "run"
        run.mkdir()
        traces = run / "traces.jsonl"
        trace = real_trace(0, "wrong_number", zh=args.zh)
        traces.write_text(trace.model_dump_json() + "\n", encoding="utf-8")
        # a run directory as `ragtriage run` leaves one (report reads the manifest)
        manifest = {"run_id": trace.run_id or "startup", "name": "startup"}
        (run / "manifest.json").write_text(json.dumps(manifest) + "\n", encoding="utf-8")
        commands = {
            "--help": ["--help"],
            "validate": ["validate", str(traces)],
            "diagnose": ["diagnose", str(traces), "--judge", "rules", "--overwrite"],
            "report": ["report", str(run)],
        }
        print(
            f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start; "
            f"median of {args.runs} runs (one warm-up run first); bytecode caches "
            f"{'written and read' if _BYTECODE['write'] else 'not written'}"
        )
        header = "".join(f" {name + ' wall':>14s} {name + ' cpu':>13s}" for name in sources)
        print(f"{'command':10s}{header}  target (wall, this)")
        for name, cmd in commands.items():
            samples: dict[str, list[tuple[float, float]]] = {k: [] for k in sources}
            for src in sources.values():
                _time(cmd, work, src)  # warm-up: bytecode caches, page cache; diagnoses
            for _ in range(args.runs):
                for label, src in sources.items():  # alternating: the same load for both
                    samples[label].append(_time(cmd, work, src))
            cells = []
            for label in sources:
                walls, cpus = zip(*samples[label], strict=True)
                cells.append(f" {statistics.median(walls):14.3f} {statistics.median(cpus):13.3f}")
            wall = statistics.median(w for w, _ in samples["this"])
            target = TARGETS.get(name)
            verdict = (
                ""
                if target is None
                else f"<= {target:.1f} s: {'met' if wall <= target else 'NOT met'}"
            )
            print(f"{name:10s}{''.join(cells)}  {verdict}")
        print(f"load average {os.getloadavg()[0]:.2f} at end")
        for label, src in sources.items():
            print(f"heavy modules imported ({label}: {src}):")
            for name, cmd in commands.items():
                found = _imported(cmd, work, src)
                print(f"  {name:10s} {', '.join(found) if found else '(none of them)'}")
        if args.importtime:
            print("slowest imports of diagnose (own time, python -X importtime):")
            for us, module in _slowest_imports(commands["diagnose"], work):
                print(f"  {us / 1000:7.1f} ms  {module}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
