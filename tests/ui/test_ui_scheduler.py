"""Issue 24's scheduler view in a real headless Chromium: the running profiles, and "try" — an edited
KubeSchedulerConfiguration against today's for the Pending pods, side by side, binding nothing.

Upstream behaviours pinned: NodeResourcesFit's scoring strategies (pkg/scheduler/framework/plugins/noderesources:
LeastAllocated, the v1 default, prefers the emptier node; MostAllocated the fuller one), the v1 default plugin
set expanded per extension point as NewFramework does (multiPoint), a pod with schedulingGates stays Pending
(SchedulingGates' PreEnqueue) and is still a candidate, and kube-scheduler's strict decoding of its
configuration (``strict decoding error: unknown field "..."``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.cli.test_up_seeds import Cluster, eventually
from tests.ui.conftest import login

FILLER = """
apiVersion: v1
kind: Pod
metadata: {name: sched-filler}
spec:
  nodeName: node01
  containers:
  - name: c
    image: soscscs/myapp:v1
    resources: {requests: {cpu: "1", memory: 1Gi}}
"""
HELD = """
apiVersion: v1
kind: Pod
metadata: {name: sched-held}
spec:
  schedulingGates: [{name: example.com/hold}]
  containers:
  - name: c
    image: soscscs/myapp:v1
    resources: {requests: {cpu: 100m, memory: 128Mi}}
"""
MOST_ALLOCATED = (Path(__file__).resolve().parents[2] / "examples" / "sim" / "most-allocated.yaml").read_text(
    encoding="utf-8"
)
"""The bin-packing example's configuration (NodeResourcesFit MostAllocated)."""
UNKNOWN_FIELD = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategyy:
        type: MostAllocated
"""


def _open(browser: Any, address: str, token: str) -> Any:
    page = login(browser, address, token)
    page.click("#nav-scheduler")
    page.wait_for_selector("section.profile")
    return page


def test_the_view_shows_the_running_profiles_plugins_per_point(browser: Any, up: tuple[Cluster, str, str]) -> None:
    _, address, token = up
    page = _open(browser, address, token)
    assert "runs" in page.inner_text("#config-source")
    profile = page.locator("section.profile", has_text="Profile default-scheduler")
    score_row = profile.locator('tr[data-point="score"]')
    text = score_row.inner_text()
    assert "NodeResourcesFit ×1" in text
    assert "TaintToleration ×3" in text
    assert "kind: KubeSchedulerConfiguration" in page.input_value("#sched-yaml")
    assert page.outside_requests == []
    assert page.console_errors == []
    page.context.close()


def test_try_shows_another_node_under_most_allocated_and_binds_nothing(
    browser: Any, up: tuple[Cluster, str, str]
) -> None:
    cluster, address, token = up
    cluster.kubectl("apply", "-f", "-", stdin=FILLER)
    cluster.kubectl("apply", "-f", "-", stdin=HELD)
    try:
        page = _open(browser, address, token)
        page.fill("#try-pods", "default/sched-held")
        page.click("#try")  # today's configuration against itself: the same node
        row = page.locator('tr[data-pod="default/sched-held"]')
        row.wait_for()
        assert "node02" in row.locator("td.today").inner_text()  # LeastAllocated: the emptier node
        assert row.locator("td.tried").inner_text() == row.locator("td.today").inner_text()
        page.fill("#sched-yaml", MOST_ALLOCATED)
        page.click("#try")
        page.wait_for_function(
            "() => (document.querySelector('tr[data-pod=\"default/sched-held\"] td.tried') || {}).innerText"
            "?.includes('node01')"
        )
        assert "node02" in row.locator("td.today").inner_text()
        assert row.get_attribute("class") == "changed"
        assert "1 would go elsewhere. Nothing was bound." in page.inner_text("#try-message")
        held = json.loads(cluster.kubectl("get", "pod", "sched-held", "-o", "json"))
        assert not held["spec"].get("nodeName")
        assert held["status"].get("phase") == "Pending"
        page.screenshot(path=str(cluster.data_dir.parent / "scheduler.png"), full_page=True)
        assert page.console_errors == []
        page.context.close()
    finally:
        cluster.kubectl("delete", "pod", "sched-held", "sched-filler", "--wait=false")


def test_a_configuration_kube_scheduler_refuses_is_shown_at_its_line(
    browser: Any, up: tuple[Cluster, str, str]
) -> None:
    _, address, token = up
    page = _open(browser, address, token)
    page.fill("#sched-yaml", UNKNOWN_FIELD)
    page.click("#try")
    eventually(lambda: "strict decoding error" in page.inner_text("#try-message") or None)
    message = page.inner_text("#try-message")
    assert 'unknown field "profiles[0].pluginConfig[0].args.scoringStrategyy"' in message
    assert "(line 8)" in message
    assert page.evaluate("() => document.getElementById('sched-yaml').selectionStart") > 0
    page.context.close()
