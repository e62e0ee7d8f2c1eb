"""Accessibility of every view (issue 24: "Accessible (keyboard, contrast, labels)") in headless Chromium against
``kubeplane up``: ``tests/ui/a11y.py``'s audit finds nothing on the login page, the cluster view, a node view, a pod
view, the Objects view and the scheduler view (its Try result too; the Runs views are audited in test_runs_view.py),
and the keyboard alone reaches the navigation, the filters, the node tiles and a pod, and opens them with Enter.

What is pinned is WCAG 2.2 AA's criteria the audit implements (1.1.1 non-text content, 1.3.1 info and
relationships, 1.4.3 contrast minimum 4.5:1, 2.1.1 keyboard, 2.4.3 focus order, 2.4.7 focus visible, 4.1.2 name,
role, value), with Chromium's own accessible-name computation.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.cli.test_up_seeds import Cluster
from tests.ui.a11y import audit, focus_walk
from tests.ui.conftest import login, new_page

POD = """
apiVersion: v1
kind: Pod
metadata: {name: a11y-pending}
spec:
  nodeSelector: {kgc: none}
  containers: [{name: c, image: soscscs/myapp:v1}]
"""


@pytest.fixture(scope="module")
def pending(up: tuple[Cluster, str, str]) -> str:
    cluster = up[0]
    cluster.kubectl("apply", "-f", "-", stdin=POD)
    cluster.kubectl("run", "a11y-running", "--image=soscscs/myapp:v1", "--overrides", '{"spec":{"nodeName":"node01"}}')
    return "default/a11y-pending"


def test_login_page_passes_the_audit(browser: Any, up: tuple[Cluster, str, str]) -> None:
    _, address, _ = up
    page = new_page(browser)
    try:
        page.goto(f"{address}/ui/login")
        page.wait_for_selector("#token")
        assert audit(page) == []
        page.fill("#token", "wrong")
        page.click("button[type=submit]")
        page.wait_for_selector("#login-error")
        assert audit(page) == []  # the error message too
    finally:
        page.context.close()


@pytest.mark.parametrize(
    ("view", "ready"),
    [
        ("#/cluster", "#pending-pods li[data-pod='default/a11y-pending']"),
        ("#/node/node01", "#node-pods li"),
        ("#/pod/default/a11y-pending", "#cycle-table"),
        ("#/objects?path=/api/v1/namespaces/default/pods/a11y-pending", "#object-message.ok"),
        ("#/scheduler", "section.profile"),
    ],
    ids=["cluster", "node", "pod", "objects", "scheduler"],
)
def test_every_view_passes_the_audit(
    browser: Any, up: tuple[Cluster, str, str], pending: str, view: str, ready: str
) -> None:
    _, address, token = up
    page = login(browser, address, token)
    try:
        page.goto(f"{address}/ui/{view}")
        page.wait_for_selector(ready, timeout=60_000)
        assert audit(page) == []
        assert page.console_errors == []
    finally:
        page.context.close()


def test_error_states_pass_the_audit(browser: Any, up: tuple[Cluster, str, str], pending: str) -> None:
    """The editor's error box, the confirmation dialog and the drain output are audited too."""
    _, address, token = up
    page = login(browser, address, token)
    try:
        page.goto(f"{address}/ui/#/objects")
        page.fill("#yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: Bad_Name\n")
        page.click("#apply")
        page.wait_for_selector("#object-message .error-box")
        assert audit(page) == []
        page.fill("#yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: a11y-pending, namespace: default}\n")
        page.click("#delete")
        page.wait_for_selector("dialog#confirm[open]")
        assert audit(page, max_tabs=4) == []
        page.click("#confirm-no")
        page.goto(f"{address}/ui/#/node/node02")
        page.click("#drain")
        page.wait_for_selector("#drain-output li:text-is('node/node02 drained')", timeout=60_000)
        assert audit(page) == []
    finally:
        up[0].kubectl("uncordon", "node02")
        page.context.close()


def test_the_scheduler_views_try_result_passes_the_audit(
    browser: Any, up: tuple[Cluster, str, str], pending: str
) -> None:
    """Try's side-by-side table (and its "changed"/unschedulable marks) is audited as it is shown."""
    _, address, token = up
    page = login(browser, address, token)
    try:
        page.goto(f"{address}/ui/#/scheduler")
        page.wait_for_selector("section.profile")
        page.click("#try")
        page.wait_for_selector("tr[data-pod='default/a11y-pending'] td.tried", timeout=60_000)
        assert audit(page) == []
        assert page.console_errors == []
    finally:
        page.context.close()


def test_the_keyboard_reaches_nav_filters_tiles_and_a_pod_and_enter_opens_them(
    browser: Any, up: tuple[Cluster, str, str], pending: str
) -> None:
    _, address, token = up
    page = login(browser, address, token)
    try:
        page.wait_for_selector("#pending-pods li[data-pod='default/a11y-pending']")
        page.wait_for_function("() => document.querySelectorAll('#node-grid .tile').length === 3")
        order, problems = focus_walk(page, max_tabs=40)
        assert problems == []
        stops: tuple[str, ...] = ('a#nav-cluster "Cluster"', 'a#nav-objects "Objects"', "input#scope-namespace")
        stops += ("select#filter-namespace", "input#filter-label", "input#filter-node", "div#node-grid")
        for stop in stops:
            assert any(o.startswith(stop) for o in order), (stop, order)
        assert any(o.startswith('a "node01') for o in order), order  # a tile
        assert any(o.startswith('a "default/a11y-pending"') for o in order), order  # a pending pod's row
        position = {
            stop: next(i for i, o in enumerate(order) if o.startswith(stop))
            for stop in ("input#filter-label", "div#node-grid")
        }
        assert position["input#filter-label"] < position["div#node-grid"]  # document order
        # Enter on a focused tile opens the node view; on a pending pod's link, its pod view
        page.focus("#node-grid .tile[data-node='node01']")
        page.keyboard.press("Enter")
        page.wait_for_selector("h1:text-is('Node node01')")
        page.go_back()
        page.wait_for_selector("#pending-pods li[data-pod='default/a11y-pending'] a")
        page.focus("#pending-pods li[data-pod='default/a11y-pending'] a")
        page.keyboard.press("Enter")
        page.wait_for_selector("#cycle-table")
        # the pod view's sortable headers are buttons: Enter sorts
        page.focus("#cycle-table button.sort[data-col='node']")
        page.keyboard.press("Enter")
        assert page.get_attribute("#cycle-table th:has(button[data-col='node'])", "aria-sort") == "descending"
        # the nav from anywhere
        page.focus("#nav-objects")
        page.keyboard.press("Enter")
        page.wait_for_selector("#yaml")
        assert page.console_errors == []
    finally:
        page.context.close()
