"""The pod view of a Pending pod on a ``kubeplane up --node-groups`` cluster shows explain's autoscaler part
(issue 30): each node group's template verdict, the TriggeredScaleUp group and the upcoming node's expected Ready
time; for a pod no group can take, upstream's NotTriggerScaleUp message. In headless chromium (never skipped)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from kubeplane.client.kubeconfig import load_kubeconfig
from tests.cli.test_explain_autoscaler import scaled_up_cluster
from tests.ui.conftest import login

KUBEPLANE = [sys.executable, "-m", "kubeplane.cli.main"]


def test_pod_view_shows_the_autoscaler_part(browser: Any, tmp_path: Path) -> None:
    with scaled_up_cluster(tmp_path) as cluster:
        config = load_kubeconfig(cluster.kubeconfig)
        assert config.token is not None
        cli = subprocess.run(
            [*KUBEPLANE, "explain", "--kubeconfig", str(cluster.kubeconfig), "--pod", f"default/{cluster.pending}",
             "-o", "json"],
            capture_output=True, text=True, check=True, timeout=60,
        )  # fmt: skip
        [upcoming] = json.loads(cli.stdout)["autoscaler"]["upcoming"]
        page = login(browser, config.server, config.token)
        page.goto(f"{config.server}/ui/#/pod/default/{cluster.pending}")
        page.wait_for_selector("#autoscaler-groups")
        small = page.locator('#autoscaler-groups tr[data-group="small"]').inner_text()
        assert "✓ fits" in small
        assert "yes" in small
        tainted = page.locator('#autoscaler-groups tr[data-group="tainted"]').inner_text()
        assert "node(s) had untolerated taint(s)" in tainted
        assert (
            page.locator("#autoscaler-triggered")
            .inner_text()
            .startswith("pod triggered scale-up: [{small 1->2 (max: 3)}] at ")
        )
        # the same answer as the CLI's
        assert page.locator("#autoscaler-upcoming").inner_text() == (
            f"upcoming node {upcoming['node']} (small): expected Ready at {upcoming['expectedReady']}"
        )
        page.screenshot(path=str(tmp_path / "pod-autoscaler.png"), full_page=True)
        page.goto(f"{config.server}/ui/#/pod/default/too-big")
        page.wait_for_selector("#autoscaler-not-triggered")
        assert (
            page.locator("#autoscaler-not-triggered")
            .inner_text()
            .startswith("pod didn't trigger scale-up: 1 Insufficient cpu, 1 node(s) had untolerated taint(s) at ")
        )
        page.screenshot(path=str(tmp_path / "pod-autoscaler-not-triggered.png"), full_page=True)
        assert page.console_errors == []
        assert page.outside_requests == []
