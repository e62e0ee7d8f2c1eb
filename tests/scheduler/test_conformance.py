"""Upstream's plugin test tables (../shared/conformance) replayed through ``kubeplane explain``: every case for
the plugins kubeplane implements must pass (run.py's threshold 1.0 here, stricter than its documented 0.99)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CONFORMANCE = ROOT.parent / "shared" / "conformance"
PLUGINS = (
    "NodeResourcesFit,NodeResourcesBalancedAllocation,NodePorts,NodeName,NodeUnschedulable,"
    "TaintToleration,NodeAffinity,ImageLocality,InterPodAffinity,PodTopologySpread"
)


@pytest.mark.skipif(not (CONFORMANCE / "run.py").exists(), reason="../shared/conformance is not beside the project")
def test_upstream_conformance_for_core_plugins() -> None:
    kubeplane = Path(sys.executable).parent / "kubeplane"
    cases = sorted(str(p) for p in (CONFORMANCE / "upstream").glob("*.json"))
    result = subprocess.run(
        [sys.executable, str(CONFORMANCE / "run.py"), str(kubeplane), "1.0", PLUGINS, *cases],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "upstream conformance 156/156" in result.stdout, result.stdout
