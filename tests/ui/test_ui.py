"""Issue 24's acceptance in a real headless Chromium: login, the session boundary, the cluster view (live), the
pod view's scheduling cycle, node actions and the YAML editor, on the seeds' cluster (docs/seeds.md).

Upstream behaviours pinned: NodeAffinity's ErrReasonPod "node(s) didn't match Pod's node affinity/selector"
(pkg/scheduler/framework/plugins/nodeaffinity), TaintToleration's "node(s) had untolerated taint(s)" with the
control-plane taint, kubectl label's merge patch, and the API server's strict field validation message
(``strict decoding error: unknown field ...``, apimachinery's strict decoding).
"""

from __future__ import annotations

import http.client
import ssl
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from tests.cli.test_up_seeds import Cluster, seed
from tests.ui.conftest import login, new_page

NODE_AFFINITY = "node(s) didn't match Pod's node affinity/selector"


def _raw(address: str, method: str, path: str, *, headers: dict[str, str] | None = None, body: str = "") -> Any:
    parts = urlsplit(address)
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    conn = http.client.HTTPSConnection(parts.hostname or "127.0.0.1", parts.port, context=context, timeout=30)
    conn.request(method, path, body=body or None, headers=headers or {})
    response = conn.getresponse()
    response.read()
    conn.close()
    return response


def test_login_refuses_a_wrong_token_and_admits_the_right_one(browser: Any, up: tuple[Cluster, str, str]) -> None:
    _, address, token = up
    page = new_page(browser)
    page.goto(f"{address}/ui/")
    page.wait_for_url("**/ui/login")
    page.fill("#token", token + "x")
    page.click("button[type=submit]")
    assert page.inner_text("#login-error") == "Invalid token."
    assert not [c for c in page.context.cookies() if c["name"] == "kubeplane-ui-session"]
    assert page.console_errors == ["Failed to load resource: the server responded with a status of 401 (Unauthorized)"]
    page.console_errors.clear()
    page.fill("#token", token)
    page.click("button[type=submit]")
    page.wait_for_url("**/ui/")
    page.wait_for_function("() => document.querySelectorAll('#node-grid .tile').length === 3")
    assert sorted(page.eval_on_selector_all("#node-grid .tile", "ts => ts.map(t => t.dataset.node)")) == [
        "master",
        "node01",
        "node02",
    ]
    (cookie,) = [c for c in page.context.cookies() if c["name"] == "kubeplane-ui-session"]
    assert cookie["httpOnly"]
    assert cookie["secure"]
    assert cookie["sameSite"] == "Strict"
    assert token not in cookie["value"]
    assert page.outside_requests == []
    assert page.console_errors == []
    page.context.close()


POD_WITH_REQUESTS = """
apiVersion: v1
kind: Pod
metadata: {name: ui-requests}
spec:
  nodeSelector: {kubernetes.io/hostname: node02}
  containers:
  - name: c
    image: soscscs/myapp:v1
    resources: {requests: {cpu: "1", memory: 2Gi}}
"""


def test_a_tile_shows_the_requests_of_its_pods_live(browser: Any, up: tuple[Cluster, str, str]) -> None:
    """Allocation = requests of the pods bound to the node against its allocatable (NodeResourcesFit's view)."""
    cluster, address, token = up
    page = login(browser, address, token)
    try:
        cluster.kubectl("apply", "-f", "-", stdin=POD_WITH_REQUESTS)
        cpu = "#node-grid .tile[data-node='node02'] .bar[aria-label='cpu requested']"
        page.wait_for_selector(f"{cpu}[aria-valuenow='1000']")
        allocatable = int(page.get_attribute(cpu, "aria-valuemax") or 0)
        width = page.eval_on_selector(f"{cpu} .bar-fill", "e => e.style.width")
        assert allocatable == 4000  # the seeds' nodes: 4 CPUs
        assert width == "25%"
        memory = "#node-grid .tile[data-node='node02'] .bar[aria-label='memory requested']"
        assert page.get_attribute(memory, "aria-valuenow") == str(2 * 1024**3)
        assert (
            page.get_attribute("#node-grid .tile[data-node='node01'] .bar[aria-label='cpu requested']", "aria-valuenow")
            == "0"
        )
        assert page.console_errors == []
    finally:
        cluster.kubectl("delete", "pod", "ui-requests", "--wait=false")
        page.context.close()


def test_nothing_but_the_login_page_is_served_without_a_session(up: tuple[Cluster, str, str]) -> None:
    _, address, token = up
    assert _raw(address, "GET", "/ui/login").status == 200
    assert _raw(address, "GET", "/ui/static/login.js").status == 200
    assert _raw(address, "GET", "/ui/static/style.css").status == 200
    page = _raw(address, "GET", "/ui/")
    assert page.status == 303
    assert page.getheader("location") == "/ui/login"
    for path in ("/ui/static/app.js", "/ui/static/cluster.js", "/ui/static/pod.js", "/ui/static/index.html"):
        assert _raw(address, "GET", path).status in (303, 401), path
    assert _raw(address, "GET", "/ui/static/app.js").status == 401
    assert _raw(address, "GET", "/ui/api/api/v1/nodes", headers={"X-Kubeplane-UI": "1"}).status == 401
    assert _raw(address, "GET", "/ui/explain?namespace=default&name=x", headers={"X-Kubeplane-UI": "1"}).status == 401
    # a bearer token is not a session: the UI's paths take the cookie only
    auth = {"Authorization": f"Bearer {token}", "X-Kubeplane-UI": "1"}
    assert _raw(address, "GET", "/ui/api/api/v1/nodes", headers=auth).status == 401
    forged = {"Cookie": "kubeplane-ui-session=forged", "X-Kubeplane-UI": "1"}
    assert _raw(address, "GET", "/ui/api/api/v1/nodes", headers=forged).status == 401


def test_a_session_without_the_ui_header_cannot_call_the_api(browser: Any, up: tuple[Cluster, str, str]) -> None:
    """A same-site page on another port gets the SameSite=Strict cookie sent; the custom header stops it."""
    _, address, token = up
    page = login(browser, address, token)
    status = page.evaluate("fetch('/ui/api/api/v1/nodes').then(r => r.status)")
    assert status == 403
    ok = page.evaluate("fetch('/ui/api/api/v1/nodes', {headers: {'X-Kubeplane-UI': '1'}}).then(r => r.status)")
    assert ok == 200
    page.context.close()


def test_pending_pod_explained_then_running_after_labelling_from_the_ui(
    browser: Any, up: tuple[Cluster, str, str]
) -> None:
    cluster, address, token = up
    page = login(browser, address, token)
    cluster.kubectl("apply", "-f", seed("myapp1.yaml"))
    try:
        page.wait_for_selector("#pending-pods li[data-pod^='default/myapp1-']")
        pod_key = page.get_attribute("#pending-pods li[data-pod^='default/myapp1-']", "data-pod")
        assert pod_key is not None
        item = f"#pending-pods li[data-pod='{pod_key}']"
        page.wait_for_function(
            "sel => (document.querySelector(sel)?.textContent || '').includes('FailedScheduling') ||"
            " (document.querySelector(sel + ' .reason')?.textContent || '').includes('0/3 nodes are available')",
            arg=item,
        )
        page.click(f"{item} a")
        page.wait_for_selector("#cycle-table")
        for node in ("node01", "node02"):
            cell = page.inner_text(f"#cycle-table tr[data-node='{node}'] td[data-plugin='NodeAffinity']")
            assert NODE_AFFINITY in cell
        master = page.inner_text("#cycle-table tr[data-node='master'] td[data-plugin='TaintToleration']")
        assert "untolerated taint" in master
        assert "node-role.kubernetes.io/control-plane" in master
        assert "Fits nowhere" in page.inner_text("#verdict")
        # cut the table to the nodes TaintToleration rejected (master), then to the feasible ones (none)
        page.select_option("#node-cut", "rejected:TaintToleration")
        rows = page.eval_on_selector_all("#cycle-table tbody tr", "rs => rs.map(r => r.dataset.node)")
        assert rows == ["master"]
        page.select_option("#node-cut", "feasible")
        assert page.eval_on_selector_all("#cycle-table tbody tr", "rs => rs.length") == 0
        page.select_option("#node-cut", "all")
        # the scheduler's events.k8s.io Event read through core/v1: no source, its reportingComponent
        assert "Warning FailedScheduling" in page.inner_text("#pod-events")
        assert "from default-scheduler" in page.inner_text("#pod-events")
        # label node01 kgc=a from the UI (kubectl label's merge patch); the pod view follows without a reload
        page.evaluate("() => { window.__marker = 'same page'; }")
        page.goto(f"{address}/ui/#/node/node01")
        page.fill("#label-args", "kgc=a")
        page.click("#label-form button[type=submit]")
        page.wait_for_selector("#node-labels li:has-text('kgc=a')")
        namespace, name = pod_key.split("/")
        page.goto(f"{address}/ui/#/pod/{namespace}/{name}")
        page.wait_for_function("() => document.querySelector('#pod-phase')?.textContent === 'Running'", timeout=45_000)
        assert page.inner_text("#pod-node") == "node01"
        assert page.evaluate("() => window.__marker") == "same page"  # hash navigation only: no reload
        pod = cluster.pod(name)
        assert pod is not None
        assert pod["spec"]["nodeName"] == "node01"
        assert page.outside_requests == []
        assert page.console_errors == []
    finally:
        cluster.kubectl("delete", "deployment", "myapp1", "--wait=false")
        cluster.kubectl("label", "nodes", "--all", "kgc-")
        page.context.close()


def test_yaml_editor_shows_strict_errors_and_applies_a_valid_edit(browser: Any, up: tuple[Cluster, str, str]) -> None:
    cluster, address, token = up
    cluster.kubectl("create", "configmap", "ui-edit", "--from-literal=a=1")
    page = login(browser, address, token)
    try:
        page.goto(f"{address}/ui/#/objects?path=/api/v1/namespaces/default/configmaps/ui-edit")
        page.wait_for_function("() => document.querySelector('#yaml').value.includes('ui-edit')")
        text = page.input_value("#yaml")
        assert text.splitlines()[0] != "bogus: 1"
        page.fill("#yaml", "bogus: 1\n" + text)
        page.click("#apply")
        page.wait_for_selector("#object-message.error")
        message = page.inner_text("#object-message")
        assert 'strict decoding error: unknown field "bogus"' in message
        assert message.endswith("(line 1)")  # pointed at in the editor
        assert cluster.json("get", "configmap", "ui-edit")["data"] == {"a": "1"}  # nothing written
        page.click("#load-form button[type=submit]")
        page.wait_for_function("() => !document.querySelector('#yaml').value.includes('bogus')")
        page.fill("#yaml", page.input_value("#yaml").replace("a: '1'", "a: '2'"))
        page.click("#apply")
        page.wait_for_selector("#object-message.ok:has-text('replaced')")
        assert "configmaps/ui-edit replaced" in page.inner_text("#object-message")
        assert cluster.json("get", "configmap", "ui-edit")["data"] == {"a": "2"}
    finally:
        cluster.kubectl("delete", "configmap", "ui-edit")
        page.context.close()


def test_kubeplane_up_prints_the_ui_url() -> None:
    from kubeplane.cli import up

    message = up._ready_message("https://127.0.0.1:6443", Path(".kubeplane/kubeconfig"), 3, "one process")
    assert "web UI: https://127.0.0.1:6443/ui/ (log in with the kubeconfig's token)" in message.splitlines()


def test_cordon_and_taint_from_the_node_view(browser: Any, up: tuple[Cluster, str, str]) -> None:
    """kubectl cordon/uncordon (spec.unschedulable) and kubectl taint (spec.taints) as the UI sends them."""
    cluster, address, token = up
    page = login(browser, address, token)
    try:
        page.goto(f"{address}/ui/#/node/node02")
        page.wait_for_selector("#cordon:text-is('Cordon')")
        page.click("#cordon")
        page.wait_for_selector("#cordon:text-is('Uncordon')")
        assert cluster.json("get", "node", "node02")["spec"]["unschedulable"] is True
        page.fill("#taint-args", "dedicated=ui:NoSchedule")
        page.click("#taint-form button[type=submit]")
        page.wait_for_selector("#node-taints li:has-text('dedicated=ui:NoSchedule')")
        taints = cluster.json("get", "node", "node02")["spec"]["taints"]
        assert {"key": "dedicated", "value": "ui", "effect": "NoSchedule"} in taints
        page.fill("#taint-args", "dedicated:NoSchedule-")
        page.click("#taint-form button[type=submit]")
        page.wait_for_selector("#node-taints li:has-text('dedicated')", state="detached")
        page.click("#cordon")
        page.wait_for_selector("#cordon:text-is('Cordon')")
        node = cluster.json("get", "node", "node02")
        assert not node["spec"].get("unschedulable")
        assert not [t for t in node["spec"].get("taints") or [] if t["key"] == "dedicated"]
        assert page.console_errors == []
    finally:
        cluster.kubectl("uncordon", "node02")
        page.context.close()
