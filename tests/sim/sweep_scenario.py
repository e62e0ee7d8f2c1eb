"""A tiny sweepable scenario and helpers shared by the sweep tests (process pool and Ray).

Three 4-CPU workers and twelve 1-CPU pods arriving at seeded exponential intervals, each running a seeded 20–70 s:
the seed changes the event log, and LeastAllocated (spreading) and MostAllocated (packing) place the pods
differently, so a grid of 2 configurations × 3 seeds has six different cells.
"""

from __future__ import annotations

from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "sim"

TINY = """\
name: tiny
seed: 1
duration: 2m
sampleInterval: 10s
cluster: {preset: uniform, workers: 3}
workload:
- generator:
    count: 12
    rate: 0.5
    namePrefix: p-
    duration: {min: 20s, max: 70s}
    template:
      spec:
        containers:
        - name: c
          image: busybox:1.36
          resources: {requests: {cpu: "1", memory: 1Gi}}
"""


def write_tiny(directory: Path) -> Path:
    path = directory / "tiny.yaml"
    path.write_text(TINY)
    return path


def sweep_args(scenario: Path, out: Path) -> list[str]:
    """``kubeplane sim sweep`` of the tiny scenario: 2 configurations × 3 seeds."""
    return [
        "sim", "sweep", "--scenario", str(scenario),
        "--config", f"least={EXAMPLES / 'least-allocated.yaml'}",
        "--config", f"most={EXAMPLES / 'most-allocated.yaml'}",
        "--seeds", "1..3", "--out", str(out),
    ]  # fmt: skip


def files(directory: Path) -> dict[str, bytes]:
    """Every file under ``directory`` by relative path, except timing.json (the wall-clock figures)."""
    return {
        str(p.relative_to(directory)): p.read_bytes()
        for p in sorted(directory.rglob("*"))
        if p.is_file() and p.name != "timing.json"
    }
