"""``ragtriage diagnose --executor ray`` on a local Ray cluster (num_cpus=2) started once
for this module: same diagnoses as the local executor, in input order, and a run
killed mid-way resumes without losing or duplicating anything."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")

from typer.testing import CliRunner  # noqa: E402

from diag_helpers import make_trace  # noqa: E402
from ragtriage.cli import app, main  # noqa: E402
from ragtriage.executors import parse_executor  # noqa: E402
from ragtriage.jsonl import write_jsonl  # noqa: E402
from ragtriage.records import Trace  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

ANSWERS = [
    "Acme Corp was founded in 2005.",  # wrong number
    "Acme Corp was founded in 1999.",  # correct
    "I don't know.",  # abstains
    "Acme Corp was founded in 1999 by Ann Lee in Shelbyville.",  # partly wrong
    "公司成立于2005年。",  # ZH, wrong
]


def _traces(n: int) -> list[Trace]:
    out = []
    for i in range(n):
        out.append(
            make_trace(
                example_id=f"q{i:05d}",
                answer=ANSWERS[i % len(ANSWERS)],
                retrieved=["od_0", "od_1", "gd_1"] if i % 3 else ["gd_0", "od_0", "gd_1"],
                context=["od_0"] if i % 2 else ["gd_0", "od_0"],
                language="zh" if i % len(ANSWERS) == 4 else None,
            )
        )
    return out


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        yield str(ray.get_runtime_context().gcs_address)
    finally:
        ray.shutdown()


def _diagnose(src: Path, out: Path, *extra: str) -> str:
    res = CliRunner().invoke(
        app, ["diagnose", str(src), "--out", str(out), "--no-progress", *extra]
    )
    assert res.exit_code == 0, res.output
    return (out / "diagnoses.jsonl").read_text(encoding="utf-8")


def test_executor_spec_parsing() -> None:
    assert not parse_executor("local").is_ray
    e = parse_executor("ray:127.0.0.1:6379")
    assert e.is_ray and e.address == "127.0.0.1:6379"
    assert parse_executor("ray").address is None
    from ragtriage.errors import ConfigError

    with pytest.raises(ConfigError, match="unknown executor"):
        parse_executor("dask")


def test_ray_results_identical_to_local_in_input_order(cluster: str, tmp_path: Path) -> None:
    src = tmp_path / "traces.jsonl"
    write_jsonl(src, _traces(300))
    local = _diagnose(src, tmp_path / "local", "--workers", "1")
    on_ray = _diagnose(src, tmp_path / "ray", "--executor", "ray", "--batch-size", "37")
    assert on_ray == local
    ids = [json.loads(line)["example_id"] for line in on_ray.splitlines()]
    assert ids == [f"q{i:05d}" for i in range(300)]
    # at least one diagnosed failure and one correct answer: not a trivial comparison
    labels = {json.loads(line)["answer_label"] for line in on_ray.splitlines()}
    assert {"correct", "incorrect"} <= labels


def test_llm_judge_is_refused_on_ray(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "traces.jsonl"
    write_jsonl(src, _traces(3))
    with pytest.raises(SystemExit) as exc:
        main(["diagnose", str(src), "--judge", "llm", "--executor", "ray", "--no-progress"])
    assert exc.value.code == 2
    assert "local executor" in capsys.readouterr().err


def test_killed_run_resumes_without_loss_or_duplicates(cluster: str, tmp_path: Path) -> None:
    n = 3000
    src = tmp_path / "traces.jsonl"
    write_jsonl(src, _traces(n))
    out = tmp_path / "ray"
    target = out / "diagnoses.jsonl"
    cmd = [
        sys.executable,
        "-m",
        "ragtriage",
        "diagnose",
        str(src),
        "--out",
        str(out),
        "--no-progress",
        "--executor",
        f"ray:{cluster}",
        "--batch-size",
        "25",
    ]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT / "tests")])}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            if target.exists() and target.stat().st_size > 0:
                break
            time.sleep(0.02)
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    written = target.read_text(encoding="utf-8").splitlines()
    assert 0 < len(written) < n  # killed mid-run
    resumed = _diagnose(src, out, "--executor", "ray", "--batch-size", "25")
    ids = [json.loads(line)["example_id"] for line in resumed.splitlines()]
    assert len(ids) == len(set(ids)) == n
    assert ids == [f"q{i:05d}" for i in range(n)]
    reference = _diagnose(src, tmp_path / "local", "--workers", "1")
    assert resumed == reference


def _calibrate(data: Path, cfg: Path, out: Path, *extra: str) -> dict[str, object]:
    from test_calibration import calibrate_cli

    calibrate_cli(data, cfg, out, *extra)
    report: dict[str, object] = json.loads((out / "calibration.json").read_text(encoding="utf-8"))
    return report


def test_calibrate_on_ray_equals_local(cluster: str, tmp_path: Path) -> None:
    from test_calibration import tiny_calibration_inputs

    data, cfg = tiny_calibration_inputs(tmp_path)
    local = _calibrate(data, cfg, tmp_path / "local")
    on_ray = _calibrate(data, cfg, tmp_path / "ray", "--executor", "ray")
    assert on_ray == local
    assert set(local["settings"]) == {"rules/ragec", "rules/single-step", "rules/stage-sequential"}  # type: ignore[arg-type]
    assert (tmp_path / "ray" / "diagnoses.jsonl").read_bytes() == (
        tmp_path / "local" / "diagnoses.jsonl"
    ).read_bytes()
