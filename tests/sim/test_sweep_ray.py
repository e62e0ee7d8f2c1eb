"""``kubeplane sim sweep --ray-address``: the same grid on a Ray cluster writes the same report as on the process pool.

Issue 29's acceptance: "a sweep of 2 configs × 3 seeds gives identical results on the process pool and on Ray". The
test starts a one-node Ray head on loopback (``ray start --head --block``, in a session of its own, two CPUs, no
dashboard, no usage stats), runs the sweep twice through the CLI — ``--workers 2`` and ``--ray-address`` — and
compares the two output directories file by file (every file but timing.json, which holds the wall-clock figures).
It stops the head and everything it started by their PIDs (the members of the session it created).

Ray is the ``ray`` extra, which ``make venv`` / ``make test`` install: this test never skips — without Ray it fails
saying so.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import kubeplane
from kubeplane.sim.executors import RAY_LOOPBACK_ENV

from .sweep_scenario import files, sweep_args, write_tiny

SRC = Path(kubeplane.__file__).resolve().parents[1]
START_TIMEOUT = 120.0
STOP_TIMEOUT = 15.0
SWEEP_TIMEOUT = 400.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _env() -> dict[str, str]:
    path = os.pathsep.join(p for p in (str(SRC), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, RAY_LOOPBACK_ENV: "0", "RAY_USAGE_STATS_ENABLED": "0"}


def _session_members(session: int) -> list[int]:
    """Live (non-zombie) processes of ``session``: the head started it, so they are the head and its children."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rpartition(")")[2].split()  # state ppid pgrp session ...
        if int(fields[3]) == session and fields[0] != "Z":
            members.append(int(entry.name))
    return members


def _signal(pids: list[int], sig: signal.Signals) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):  # gone already
            os.kill(pid, sig)


def _stop(head: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the head's session members by PID, SIGKILL to those still alive after a bounded wait."""
    _signal(_session_members(head.pid), signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT
    while _session_members(head.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    _signal(_session_members(head.pid), signal.SIGKILL)
    head.wait(timeout=STOP_TIMEOUT)


@pytest.fixture(scope="module")
def ray_head(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if importlib.util.find_spec("ray") is None:
        pytest.fail(
            "Ray is not installed: `make venv` installs the ray extra (pyproject's [ray]); this test never skips"
        )
    port = _free_port()
    temp = tempfile.mkdtemp(prefix="rsw", dir="/tmp")  # short: Ray's unix socket paths live under it
    log_path = tmp_path_factory.mktemp("ray") / "head.log"
    command = [
        str(Path(sys.executable).parent / "ray"), "start", "--head", "--block", f"--port={port}",
        "--node-ip-address=127.0.0.1", "--include-dashboard=false", "--num-cpus=2", "--disable-usage-stats",
        f"--temp-dir={temp}",
    ]  # fmt: skip
    with log_path.open("wb") as log:
        head = subprocess.Popen(command, env=_env(), stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while b"Ray runtime started" not in log_path.read_bytes():
            if head.poll() is not None or time.monotonic() > deadline:
                pytest.fail("the Ray head did not start:\n" + log_path.read_text(errors="replace")[-3000:])
            time.sleep(0.5)
        yield f"127.0.0.1:{port}"
    finally:
        _stop(head)
        shutil.rmtree(temp, ignore_errors=True)


def _sweep(args: list[str]) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "kubeplane.cli.main", *args]
    return subprocess.run(command, env=_env(), capture_output=True, text=True, timeout=SWEEP_TIMEOUT, check=False)


def test_a_sweep_of_2_configs_x_3_seeds_is_identical_on_the_process_pool_and_on_ray(
    ray_head: str, tmp_path: Path
) -> None:
    scenario = write_tiny(tmp_path)
    pool = _sweep([*sweep_args(scenario, tmp_path / "pool"), "--workers", "2"])
    assert pool.returncode == 0, pool.stderr
    ray = _sweep([*sweep_args(scenario, tmp_path / "ray"), "--ray-address", ray_head])
    assert ray.returncode == 0, ray.stderr
    assert "6 cell(s) in" in ray.stdout
    assert "on ray" in ray.stdout
    pool_files, ray_files = files(tmp_path / "pool"), files(tmp_path / "ray")
    assert sorted(pool_files) == sorted(ray_files)
    different = [name for name in pool_files if pool_files[name] != ray_files[name]]
    assert different == []
    doc = json.loads(ray_files["sweep.json"])
    assert [(c["config"], c["seed"]) for c in doc["cells"]] == [(c, s) for c in ("least", "most") for s in (1, 2, 3)]
    assert len({c["summary"]["event_log_hash"] for c in doc["cells"]}) == 6  # six different simulations
    assert json.loads((tmp_path / "ray" / "timing.json").read_text())["executor"] == "ray"
    assert json.loads((tmp_path / "pool" / "timing.json").read_text())["executor"] == "process-pool"
