"""Upstream's plugin test tables (tests/scheduler/conformance, in the repository) replayed through ``kubeplane
explain``, which runs the scheduler's own SchedulingCycle with its recorder on: every case for the plugins kubeplane
implements must pass (run.py's threshold 1.0 here, stricter than its documented 0.99). The data is part of the
repository: a missing file fails, never skips.

Each case is one test, run in-process through the same ``explain`` command (typer's runner: the CLI's file loading,
configuration and output, without a process per case); run.py itself, which starts a process per case, is checked
on one case file end to end.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kubeplane.cli.main import app
from tests.scheduler.conformance import run

CONFORMANCE = Path(__file__).resolve().parent / "conformance"
PLUGINS = frozenset(
    {
        "NodeResourcesFit",
        "NodeResourcesBalancedAllocation",
        "NodePorts",
        "NodeName",
        "NodeUnschedulable",
        "TaintToleration",
        "NodeAffinity",
        "ImageLocality",
        "InterPodAffinity",
        "PodTopologySpread",
        "VolumeRestrictions",
        "VolumeZone",
        "NodeVolumeLimits",
        "VolumeBinding",
        "DynamicResources",
    }
)
CASE_FILES = (
    "dynamic_resources.json",
    "interpod_affinity.json",
    "node_volume_limits.json",
    "resources.json",
    "taints_affinity.json",
    "topology_images.json",
    "volume_binding.json",
    "volume_restrictions.json",
    "volume_zone.json",
)


KNOWN_GAPS: dict[str, str] = {}
"""Cases of implemented plugins that fail for a named, documented gap: strict xfail, so fixing the gap fails the
test until the entry is removed."""


def _cases() -> list[Any]:
    out = []
    for name in CASE_FILES:
        for case in json.loads((CONFORMANCE / "upstream" / name).read_text())["cases"]:
            if case["plugin"] in PLUGINS:
                gap = KNOWN_GAPS.get(case["id"])
                marks = [pytest.mark.xfail(strict=True, reason=gap)] if gap else []
                out.append(pytest.param(case, id=f"{case['plugin']}/{case['kind']}/{case['id']}", marks=marks))
    return out


CASES = _cases()


def test_the_upstream_cases_and_the_runner_are_in_the_repository() -> None:
    """The nine case files, the runner and its documents; without them the suite below would prove nothing."""
    assert sorted(p.name for p in (CONFORMANCE / "upstream").glob("*.json")) == list(CASE_FILES)
    for name in ("run.py", "FORMAT.md", "README.md"):
        assert (CONFORMANCE / name).is_file(), f"{CONFORMANCE / name} is missing"
    # + VolumeRestrictions, VolumeZone, NodeVolumeLimits, VolumeBinding, DynamicResources
    assert len(CASES) == 156 + 11 + 12 + 17 + 14 + 33


@pytest.mark.parametrize("case", CASES)
def test_upstream_case(case: dict[str, Any], tmp_path: Path) -> None:
    result = CliRunner().invoke(app, run.explain_args(case, str(tmp_path)))
    assert result.exit_code == 0, result.output
    ok, why = run.check(case, json.loads(result.output))
    assert ok, f"{case['upstream_name']}: {why}"


def test_the_runner_script_replays_a_case_file_through_kubeplane_processes() -> None:
    kubeplane = Path(sys.executable).parent / "kubeplane"
    cases = str(CONFORMANCE / "upstream" / "taints_affinity.json")
    result = subprocess.run(
        [sys.executable, str(CONFORMANCE / "run.py"), str(kubeplane), "1.0", "TaintToleration", cases],
        capture_output=True,
        text=True,
        timeout=280,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "upstream conformance" in result.stdout, result.stdout
    assert "= 100.0%" in result.stdout, result.stdout
