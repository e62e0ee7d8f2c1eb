"""Issue 24's object actions in a real headless Chromium against ``kubeplane up`` (the seeds' cluster): pods shown
on their node's tile, ``kubectl drain`` from the node view, delete with a confirmation dialog (Objects view and pod
view), and the YAML editor's errors that carry no field path.

Upstream behaviours pinned: kubectl drain's filters and messages (staging/src/k8s.io/kubectl/pkg/drain/filters.go:
daemonSetFatal, localStorageFatal, unmanagedWarning, the PodDeleteList.errors()/Warnings() grouping; drain.go's
"error when evicting pods/%q -n %q (will retry after 5s)" retry on a 429 from a PodDisruptionBudget), the
eviction API's 429 "Cannot evict pod as it would violate the pod's disruption budget." (registry/core/pod/storage/
eviction.go), kubectl delete's ``pod "NAME" deleted`` line (kubectl/pkg/cmd/delete PrintObj), the API's 409
Conflict on a stale resourceVersion (``the object has been modified; please apply your changes to the latest
version and try again``) and 422 Invalid with its causes.
"""

from __future__ import annotations

from typing import Any

from tests.cli.test_up_seeds import Cluster, eventually
from tests.ui.conftest import login

WORKLOAD = """
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: drain-ds}
spec:
  selector: {matchLabels: {app: drain-ds}}
  template:
    metadata: {labels: {app: drain-ds}}
    spec:
      nodeSelector: {kubernetes.io/hostname: node02}
      containers: [{name: c, image: soscscs/myapp:v1}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: drain-web}
spec:
  replicas: 1
  selector: {matchLabels: {app: drain-web}}
  template:
    metadata: {labels: {app: drain-web}}
    spec:
      nodeSelector: {kubernetes.io/hostname: node02}
      containers: [{name: c, image: soscscs/myapp:v1}]
---
apiVersion: v1
kind: Pod
metadata: {name: drain-bare}
spec:
  nodeName: node02
  volumes: [{name: scratch, emptyDir: {}}]
  containers: [{name: c, image: soscscs/myapp:v1, volumeMounts: [{name: scratch, mountPath: /scratch}]}]
"""

PDB = """
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: drain-web}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: drain-web}}
"""


def _pods(cluster: Cluster, selector: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = cluster.json("get", "pods", "-l", selector)["items"]
    return items


def _running_on_node02(cluster: Cluster, selector: str) -> dict[str, Any]:
    def ready() -> dict[str, Any]:
        pods = [
            p
            for p in _pods(cluster, selector)
            if p["spec"].get("nodeName") == "node02" and p.get("status", {}).get("phase") == "Running"
        ]
        return pods[0] if pods else {}

    found = eventually(ready, timeout=60)
    assert found
    return found


def _script_errors(page: Any) -> list[str]:
    """Console errors but the browser's own "Failed to load resource" lines for the 4xx answers a test provokes."""
    return [e for e in page.console_errors if not e.startswith("Failed to load resource")]


def _output(page: Any) -> list[str]:
    lines: list[str] = page.eval_on_selector_all("#drain-output li", "ls => ls.map(l => l.textContent)")
    return lines


def test_tiles_show_their_pods_by_phase(browser: Any, up: tuple[Cluster, str, str]) -> None:
    """Pods placed on their nodes: a node's tile carries one mark per pod (coloured by phase) and says it."""
    cluster, address, token = up
    cluster.kubectl("run", "tile-a", "--image=soscscs/myapp:v1", "--overrides", '{"spec":{"nodeName":"node01"}}')
    cluster.kubectl("run", "tile-b", "--image=soscscs/myapp:v1", "--overrides", '{"spec":{"nodeName":"node01"}}')
    page = login(browser, address, token)
    try:
        marks = "#node-grid .tile[data-node='node01'] .pod-marks"
        page.wait_for_selector(f"{marks}[aria-label='pods: 2 Running']", timeout=60_000)
        assert page.eval_on_selector_all(f"{marks} .mark.Running", "ms => ms.length") == 2
        assert page.get_attribute("#node-grid .tile[data-node='node02'] .pod-marks", "aria-label") == "pods: no pods"
        cluster.kubectl("delete", "pod", "tile-a", "tile-b", "--wait=false")
        page.wait_for_selector(f"{marks}[aria-label='pods: no pods']", timeout=60_000)
        assert page.console_errors == []
    finally:
        cluster.kubectl("delete", "pod", "tile-a", "tile-b", "--ignore-not-found", "--wait=false")
        page.context.close()


def test_drain_refuses_then_evicts_with_kubectls_flags_and_retries_a_pdb(
    browser: Any, up: tuple[Cluster, str, str]
) -> None:
    cluster, address, token = up
    cluster.kubectl("apply", "-f", "-", stdin=WORKLOAD)
    page = login(browser, address, token)
    try:
        ds_pod = _running_on_node02(cluster, "app=drain-ds")["metadata"]["name"]
        web_pod = _running_on_node02(cluster, "app=drain-web")["metadata"]["name"]
        eventually(lambda: ((cluster.pod("drain-bare") or {}).get("status") or {}).get("phase") == "Running")
        page.goto(f"{address}/ui/#/node/node02")
        # no flags: kubectl's filter errors, grouped per message; nothing is evicted, the node stays cordoned
        page.click("#drain")
        page.wait_for_selector("#drain-output li.error")
        lines = _output(page)
        assert lines[0] == "node/node02 cordoned"
        error = lines[-1]
        assert error.startswith('error: unable to drain node "node02" due to error: ')
        assert f"cannot delete DaemonSet-managed Pods (use --ignore-daemonsets to ignore): default/{ds_pod}" in error
        assert "cannot delete Pods with local storage (use --delete-emptydir-data to override): default/drain-bare" in (
            error
        )
        assert cluster.json("get", "node", "node02")["spec"]["unschedulable"] is True
        assert cluster.pod("drain-bare") is not None
        assert cluster.pod(web_pod) is not None
        # a PodDisruptionBudget that allows no disruption: the eviction's 429 is shown and retried every 5 s
        cluster.kubectl("apply", "-f", "-", stdin=PDB)
        eventually(
            lambda: cluster.json("get", "pdb", "drain-web").get("status", {}).get("currentHealthy") == 1, timeout=30
        )
        page.check("#drain-ignore-daemonsets")
        page.check("#drain-delete-emptydir-data")
        page.check("#drain-force")
        page.click("#drain")
        retry = (
            f'error when evicting pods/"{web_pod}" -n "default" (will retry after 5s): '
            "Cannot evict pod as it would violate the pod's disruption budget."
        )
        page.wait_for_function(
            "line => [...document.querySelectorAll('#drain-output li.error')].some(l => l.textContent === line)",
            arg=retry,
        )
        lines = _output(page)
        assert lines[0] == "node/node02 already cordoned"
        assert f"Warning: ignoring DaemonSet-managed Pods: default/{ds_pod}" in lines
        # kubectl's filters: the unreplicated filter's warning replaces local storage's (filters.go TODO)
        assert "Warning: deleting Pods that declare no controller: default/drain-bare" in lines
        eventually(lambda: cluster.pod("drain-bare") is None, timeout=60)
        assert cluster.pod(web_pod) is not None  # the budget holds it
        cluster.kubectl("delete", "pdb", "drain-web")
        page.wait_for_selector("#drain-output li:text-is('node/node02 drained')", timeout=60_000)
        lines = _output(page)
        assert "pod/drain-bare evicted" in lines
        assert f"pod/{web_pod} evicted" in lines
        assert cluster.pod(web_pod) is None
        assert cluster.pod(ds_pod) is not None  # DaemonSet pods stay, as with --ignore-daemonsets
        assert _script_errors(page) == []  # the 429s are logged by the browser as failed loads, nothing else
    finally:
        cluster.kubectl("delete", "-f", "-", "--ignore-not-found", "--wait=false", stdin=WORKLOAD)
        cluster.kubectl("delete", "pdb", "drain-web", "--ignore-not-found")
        cluster.kubectl("uncordon", "node02")
        page.context.close()


def test_delete_a_pod_from_its_view_after_confirming(browser: Any, up: tuple[Cluster, str, str]) -> None:
    cluster, address, token = up
    cluster.kubectl("run", "ui-doomed", "--image=soscscs/myapp:v1")
    page = login(browser, address, token)
    try:
        page.goto(f"{address}/ui/#/pod/default/ui-doomed")
        page.wait_for_selector("#pod-phase")
        page.click("#delete-pod")
        page.wait_for_selector("dialog#confirm[open]")
        assert page.inner_text("#confirm-question") == 'Delete pod "ui-doomed" in namespace default?'
        assert page.evaluate("() => document.activeElement.id") == "confirm-no"  # the safe choice has focus
        page.click("#confirm-no")  # Cancel: nothing happens
        page.wait_for_selector("dialog#confirm", state="detached")
        assert cluster.pod("ui-doomed") is not None
        page.click("#delete-pod")
        page.click("#confirm-yes")
        page.wait_for_selector("#pod-message.ok")
        assert page.inner_text("#pod-message") == 'pod "ui-doomed" deleted'
        eventually(lambda: cluster.pod("ui-doomed") is None, timeout=60)
        assert page.console_errors == []
    finally:
        cluster.kubectl("delete", "pod", "ui-doomed", "--ignore-not-found", "--wait=false")
        page.context.close()


def test_delete_an_object_from_the_objects_view(browser: Any, up: tuple[Cluster, str, str]) -> None:
    cluster, address, token = up
    cluster.kubectl("create", "configmap", "ui-doomed", "--from-literal=a=1")
    page = login(browser, address, token)
    try:
        page.goto(f"{address}/ui/#/objects?path=/api/v1/namespaces/default/configmaps/ui-doomed")
        page.wait_for_function("() => document.querySelector('#yaml').value.includes('ui-doomed')")
        page.click("#delete")
        page.wait_for_selector("dialog#confirm[open]")
        assert 'ConfigMap "ui-doomed" in namespace default' in page.inner_text("#confirm-question")
        page.keyboard.press("Escape")  # Escape cancels, as a platform dialog does
        page.wait_for_selector("#object-message:text-is('delete cancelled')")
        assert cluster.run("get", "configmap", "ui-doomed").returncode == 0
        page.click("#delete")
        page.click("#confirm-yes")
        # "delete cancelled" is shown as ok too: wait for the answer to the second click, not for the class
        page.wait_for_selector("#object-message.ok:text-is('configmap \"ui-doomed\" deleted')")
        result = cluster.run("get", "configmap", "ui-doomed")
        assert result.returncode != 0
        assert 'configmaps "ui-doomed" not found' in result.stderr
    finally:
        cluster.kubectl("delete", "configmap", "ui-doomed", "--ignore-not-found")
        page.context.close()


def test_editor_shows_errors_without_a_field_path(browser: Any, up: tuple[Cluster, str, str]) -> None:
    """A 409 Conflict (stale resourceVersion), a 422 whose cause names a field, and a YAML syntax error with its
    line: each shown as the server's Status (code, reason, message), nothing written."""
    cluster, address, token = up
    cluster.kubectl("create", "configmap", "ui-errors", "--from-literal=a=1")
    page = login(browser, address, token)
    try:
        page.goto(f"{address}/ui/#/objects?path=/api/v1/namespaces/default/configmaps/ui-errors")
        page.wait_for_function("() => document.querySelector('#yaml').value.includes('ui-errors')")
        stale = page.input_value("#yaml")
        cluster.kubectl("label", "configmap", "ui-errors", "touched=yes")  # a newer resourceVersion
        page.fill("#yaml", stale.replace("a: '1'", "a: '2'"))
        page.click("#apply")
        page.wait_for_selector("#object-message .error-box")
        assert page.inner_text("#object-message .error-box .code") == "Error 409 Conflict"
        assert page.inner_text("#object-message .error-box .msg") == (
            'Operation cannot be fulfilled on configmaps "ui-errors": the object has been modified; '
            "please apply your changes to the latest version and try again"
        )
        assert cluster.json("get", "configmap", "ui-errors")["data"] == {"a": "1"}
        # 422 Invalid: the cause's field, pointed at by line
        page.fill("#yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: UI_Bad\ndata: {a: '1'}\n")
        page.click("#apply")
        page.wait_for_selector("#object-message .error-box .causes")
        assert page.inner_text("#object-message .error-box .code") == "Error 422 Invalid"
        assert 'metadata.name: Invalid value: "UI_Bad"' in page.inner_text("#object-message .error-box .causes")
        assert "(line 4)" in page.inner_text("#object-message .error-box .causes")
        assert page.inner_text("#object-message .error-box .msg").startswith('ConfigMap "UI_Bad" is invalid: ')
        # a YAML syntax error: no Status from the API, the parser's message at its line
        page.fill("#yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [unclosed\n")
        page.click("#apply")
        page.wait_for_selector("#object-message .error-box .msg:has-text('YAML line')")
        assert page.inner_text("#object-message .error-box .code") == "Error"
        assert page.inner_text("#object-message .error-box .msg").startswith("YAML line ")
        assert _script_errors(page) == []
    finally:
        cluster.kubectl("delete", "configmap", "ui-errors", "--ignore-not-found")
        page.context.close()
