"""``kubeplane ui`` on its own, in a real headless Chromium (issue 24: "it also works against the API of a real
cluster when ``kubeplane ui --kubeconfig K`` serves it on its own", and ``kubeplane ui --runs DIR``).

The module's ``kubeplane up`` (the seeds' cluster) is the "real cluster": ``kubeplane ui --kubeconfig`` its
kubeconfig ``--port 0`` runs as a separate process and every page, list, watch, explain and write goes through
its proxy to that API server with the logged-in token. Upstream behaviours pinned: NodeAffinity's
"node(s) didn't match Pod's node affinity/selector" in the pod view (explain through the proxy), kubectl label's
merge patch (the node view's Label), a watch event delivered without a reload (client-go's reflector over a
chunked watch), the API server's 401 for an unknown token (the login refuses it).
"""

from __future__ import annotations

import contextlib
import http.client
import os
import re
import signal
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.cli.test_up_seeds import Cluster, seed
from tests.ui.conftest import login, new_page

KUBEPLANE = [sys.executable, "-m", "kubeplane.cli.main"]
NODE_AFFINITY = "node(s) didn't match Pod's node affinity/selector"


class UI:
    """A running ``kubeplane ui`` subprocess: its base address (``https://127.0.0.1:PORT``) and stderr lines."""

    def __init__(self, process: subprocess.Popen[bytes], log: Path, base: str) -> None:
        self.process, self.log, self.base = process, log, base

    def text(self) -> str:
        return self.log.read_text(errors="replace")


@contextlib.contextmanager
def running_ui(tmp: Path, *args: str) -> Iterator[UI]:
    """``kubeplane ui ARGS --port 0``, yielded once it printed its URL; stopped by PID with SIGTERM (must exit 0)."""
    log = tmp / "ui.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [*KUBEPLANE, "ui", *args, "--port", "0", "--data-dir", str(tmp / "ui-state")], stdout=out, stderr=out
        )
    try:
        deadline = time.monotonic() + 60
        while not (found := re.search(r"^web UI: (https://127\.0\.0\.1:\d+)/ui/$", log.read_text(), re.M)):
            if process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"kubeplane ui did not start:\n{log.read_text(errors='replace')}")
            time.sleep(0.05)
        yield UI(process, log, found.group(1))
    finally:
        if process.poll() is None:
            os.kill(process.pid, signal.SIGTERM)
        try:
            code = process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.kill(process.pid, signal.SIGKILL)
            process.wait()
            raise AssertionError(f"kubeplane ui ignored SIGTERM:\n{log.read_text(errors='replace')}") from None
    assert code == 0, log.read_text(errors="replace")


@pytest.fixture(scope="module")
def remote_ui(up: tuple[Cluster, str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[UI]:
    cluster, _, _ = up
    with running_ui(tmp_path_factory.mktemp("standalone"), "--kubeconfig", str(cluster.kubeconfig)) as ui:
        yield ui


def _raw(base: str, method: str, path: str, headers: dict[str, str] | None = None) -> http.client.HTTPResponse:
    parts = urlsplit(base)
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    conn = http.client.HTTPSConnection(parts.hostname or "127.0.0.1", parts.port, context=context, timeout=30)
    conn.request(method, path, headers=headers or {})
    response = conn.getresponse()
    response.read()
    conn.close()
    return response


def test_it_prints_its_url_and_serves_only_the_ui(up: tuple[Cluster, str, str], remote_ui: UI) -> None:
    _, address, _ = up
    assert f"API: {address} (log in with a bearer token of that cluster" in remote_ui.text()
    assert remote_ui.base != address  # its own listener, not the API server's
    assert _raw(remote_ui.base, "GET", "/").getheader("location") == "/ui/"
    assert _raw(remote_ui.base, "GET", "/ui/").getheader("location") == "/ui/login"
    assert _raw(remote_ui.base, "GET", "/api/v1/nodes").status == 404  # it is not an open proxy to the API
    # the proxy is behind the session as in the built-in UI: a bearer token alone is not one
    _, _, token = up
    auth = {"Authorization": f"Bearer {token}", "X-Kubeplane-UI": "1"}
    assert _raw(remote_ui.base, "GET", "/ui/api/api/v1/nodes", auth).status == 401


def test_login_is_checked_by_the_clusters_api(browser: Any, up: tuple[Cluster, str, str], remote_ui: UI) -> None:
    _, _, token = up
    page = new_page(browser)
    try:
        page.goto(f"{remote_ui.base}/ui/")
        page.wait_for_url("**/ui/login")
        page.fill("#token", token + "x")
        page.click("button[type=submit]")
        assert page.inner_text("#login-error") == "Invalid token."
        page.fill("#token", token)
        page.click("button[type=submit]")
        page.wait_for_function("() => document.querySelectorAll('#node-grid .tile').length === 3")
        nodes = page.eval_on_selector_all("#node-grid .tile", "ts => ts.map(t => t.dataset.node)")
        assert sorted(nodes) == ["master", "node01", "node02"]
        assert page.outside_requests == []
    finally:
        page.context.close()


def test_watch_explain_and_label_through_the_proxy(
    browser: Any, up: tuple[Cluster, str, str], remote_ui: UI, tmp_path: Path
) -> None:
    cluster, _, token = up
    page = login(browser, remote_ui.base, token)
    try:
        page.wait_for_function("() => document.querySelectorAll('#node-grid .tile').length === 3")
        page.evaluate("() => { window.__marker = 'same page'; }")
        # a watch streams through the proxy: the pod kubectl creates appears without a reload
        cluster.kubectl("apply", "-f", seed("myapp1.yaml"))
        item = "#pending-pods li[data-pod^='default/myapp1-']"
        page.wait_for_selector(item)
        pod_key = page.get_attribute(item, "data-pod")
        assert pod_key is not None
        assert page.evaluate("() => window.__marker") == "same page"
        # the pod view's explain lists the cluster through the proxy with the session's token
        page.click(f"{item} a")
        page.wait_for_selector("#cycle-table")
        for node in ("node01", "node02"):
            assert NODE_AFFINITY in page.inner_text(
                f"#cycle-table tr[data-node='{node}'] td[data-plugin='NodeAffinity']"
            )
        page.screenshot(path=str(tmp_path / "standalone-pod.png"), full_page=True)
        # a write through the proxy: label node01 kgc=a (kubectl label's merge patch); the pod then runs there
        page.goto(f"{remote_ui.base}/ui/#/node/node01")
        page.fill("#label-args", "kgc=a")
        page.click("#label-form button[type=submit]")
        page.wait_for_selector("#node-labels li:has-text('kgc=a')")
        assert cluster.json("get", "node", "node01")["metadata"]["labels"]["kgc"] == "a"
        namespace, name = pod_key.split("/")
        page.goto(f"{remote_ui.base}/ui/#/pod/{namespace}/{name}")
        page.wait_for_function("() => document.querySelector('#pod-phase')?.textContent === 'Running'", timeout=45_000)
        assert page.inner_text("#pod-node") == "node01"
        assert page.evaluate("() => window.__marker") == "same page"
        assert page.outside_requests == []
        assert page.console_errors == []
    finally:
        cluster.kubectl("delete", "deployment", "myapp1", "--wait=false")
        cluster.kubectl("label", "nodes", "--all", "kgc-")
        page.context.close()


def test_runs_only_mode_logs_in_with_its_printed_token(browser: Any, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    with running_ui(tmp_path, "--runs", str(runs)) as ui:
        found = re.search(r"^log in with the token: (\S+)$", ui.text(), re.M)
        assert found, ui.text()
        token = found.group(1)
        page = new_page(browser)
        try:
            page.goto(f"{ui.base}/ui/")
            page.wait_for_url("**/ui/login")
            page.fill("#token", token[:-1])
            page.click("button[type=submit]")
            assert page.inner_text("#login-error") == "Invalid token."
            page.fill("#token", token)
            page.click("button[type=submit]")
            page.wait_for_url("**/ui/")
            page.goto(f"{ui.base}/ui/#/cluster")  # a view that needs the API: the note instead
            page.wait_for_selector("#noapi-message")
            assert "without a Kubernetes API" in page.inner_text("#noapi-message")
            assert page.is_hidden("#nav-cluster")  # the views that need an API are not offered
            assert page.is_hidden("#nav-objects")
            status = page.evaluate(
                "fetch('/ui/api/api/v1/nodes', {headers: {'X-Kubeplane-UI': '1'}}).then(r => r.status)"
            )
            assert status == 404
            assert page.outside_requests == []
            page.screenshot(path=str(tmp_path / "runs-only.png"))
        finally:
            page.context.close()
        # no informer was started: nothing asked the (absent) API for nodes, pods or events
        assert "Traceback" not in ui.text(), ui.text()[-3000:]


def _client_cert_kubeconfig(cluster: Cluster, path: Path) -> None:
    """A kubeconfig of the same server whose user is a client certificate (CN=admin, O=system:masters) signed by
    the cluster's CA, and no token: the shape of kubeadm's admin.conf or kind's kubeconfig."""
    import base64
    import datetime

    import yaml
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    ca_key = serialization.load_pem_private_key((cluster.data_dir / "ca.key").read_bytes(), None)
    ca_cert = x509.load_pem_x509_certificate((cluster.data_dir / "ca.crt").read_bytes())
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    subject = x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "system:masters"),
            x509.NameAttribute(NameOID.COMMON_NAME, "admin"),
        ]
    )
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())  # type: ignore[arg-type]
    )
    doc = yaml.safe_load(cluster.kubeconfig.read_text())
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    doc["users"][0]["user"] = {
        "client-certificate-data": base64.b64encode(cert.public_bytes(serialization.Encoding.PEM)).decode(),
        "client-key-data": base64.b64encode(pem).decode(),
    }
    path.write_text(yaml.safe_dump(doc))


def test_a_kubeconfigs_client_certificate_never_stands_in_for_the_login(
    up: tuple[Cluster, str, str], tmp_path: Path
) -> None:
    """Upstream authenticates a verified client certificate before any bearer token (the union authenticator,
    x509 first), so presenting the kubeconfig's would make every token typed at the login page the cluster's
    admin: the UI does not present it, and a wrong token stays refused."""
    cluster, _, token = up
    kubeconfig = tmp_path / "cert-kubeconfig"
    _client_cert_kubeconfig(cluster, kubeconfig)
    assert cluster.run("--kubeconfig", str(kubeconfig), "auth", "whoami", "-o", "name").returncode == 0  # it works
    with running_ui(tmp_path, "--kubeconfig", str(kubeconfig)) as ui:
        assert "note: the kubeconfig's client certificate is not used" in ui.text()
        parts = urlsplit(ui.base)
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        for typed, expected in (("wrong-token", 401), (token, 303)):
            conn = http.client.HTTPSConnection(parts.hostname or "", parts.port, context=context, timeout=30)
            form = {"Content-Type": "application/x-www-form-urlencoded"}
            conn.request("POST", "/ui/login", body=f"token={typed}", headers=form)
            response = conn.getresponse()
            response.read()
            conn.close()
            assert response.status == expected, typed


def test_sigterm_with_open_watches_exits_0(browser: Any, up: tuple[Cluster, str, str], tmp_path: Path) -> None:
    """The browser's watches never end by themselves: on SIGTERM the proxy ends them (end_streams) so the
    graceful shutdown completes and the process exits 0 (running_ui's exit check, bounded at 30 s)."""
    cluster, _, token = up
    with running_ui(tmp_path, "--kubeconfig", str(cluster.kubeconfig)) as ui:
        page = login(browser, ui.base, token)
        page.wait_for_function("() => document.querySelectorAll('#node-grid .tile').length === 3")
        # the page keeps its three watches (nodes, pods, events) open while the process is stopped
    page.context.close()
    assert "Traceback" not in ui.text(), ui.text()[-3000:]
    assert "ASGI callable returned without completing response" not in ui.text()
    # uvicorn may still wait out its graceful timeout for idle keep-alive connections of the browser; what must
    # not happen is a request task cancelled mid-response
    assert "Cancel 0 running task(s)" in ui.text() or "graceful shutdown exceeded" not in ui.text()
