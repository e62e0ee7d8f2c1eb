"""Kubeconfig lookup order and parsing; in-cluster configuration."""

from __future__ import annotations

import base64
import socket
from pathlib import Path

import pytest

from kubeplane.client.errors import ClientError
from kubeplane.client.kubeconfig import find_kubeconfig, in_cluster_config, load_kubeconfig
from kubeplane.client.pod_root import POD_ROOT_ENV, hostname, pod_path

KUBECONFIG = """
apiVersion: v1
kind: Config
current-context: b
clusters:
- name: one
  cluster: {server: "https://127.0.0.1:6443/", certificate-authority-data: %(ca)s}
- name: two
  cluster: {server: "http://127.0.0.1:8080", insecure-skip-tls-verify: true}
contexts:
- name: a
  context: {cluster: one, user: alice}
- name: b
  context: {cluster: two, user: bob, namespace: team}
users:
- name: alice
  user: {token: alice-token, client-certificate: cert.pem, client-key-data: %(key)s}
- name: bob
  user: {tokenFile: bob.token}
"""


def _write(tmp_path: Path) -> Path:
    (tmp_path / "cert.pem").write_bytes(b"CERT")
    (tmp_path / "bob.token").write_text("bob-token\n")
    path = tmp_path / "config"
    path.write_text(KUBECONFIG % {"ca": base64.b64encode(b"CA").decode(), "key": base64.b64encode(b"KEY").decode()})
    return path


def test_current_context_and_an_explicit_one(tmp_path: Path) -> None:
    path = _write(tmp_path)
    current = load_kubeconfig(path)
    assert (current.server, current.token, current.insecure, current.namespace) == (
        "http://127.0.0.1:8080",
        "bob-token",
        True,
        "team",
    )
    alice = load_kubeconfig(path, context="a")
    assert (alice.server, alice.token, alice.namespace) == ("https://127.0.0.1:6443", "alice-token", "default")
    assert (alice.ca_data, alice.client_cert_data, alice.client_key_data) == (b"CA", b"CERT", b"KEY")
    with pytest.raises(ClientError, match="no context named 'zzz'"):
        load_kubeconfig(path, context="zzz")


def test_lookup_order_never_falls_back_to_the_home_kubeconfig(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--kubeconfig, then $KUBECONFIG, then ./.kubeplane/kubeconfig; ~/.kube/config only when named."""
    home = tmp_path / "home"
    (home / ".kube").mkdir(parents=True)
    (home / ".kube" / "config").write_text("not ours")
    monkeypatch.setenv("HOME", str(home))
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.delenv("KUBECONFIG", raising=False)
    with pytest.raises(ClientError, match="no kubeconfig found"):
        find_kubeconfig(cwd=work)
    (work / ".kubeplane").mkdir()
    (work / ".kubeplane" / "kubeconfig").write_text("x")
    assert find_kubeconfig(cwd=work) == work / ".kubeplane" / "kubeconfig"
    env = tmp_path / "env-config"
    env.write_text("x")
    monkeypatch.setenv("KUBECONFIG", f"{tmp_path / 'missing'}:{env}")
    assert find_kubeconfig(cwd=work) == env
    explicit = tmp_path / "explicit"
    explicit.write_text("x")
    assert find_kubeconfig(explicit, cwd=work) == explicit
    with pytest.raises(ClientError, match="does not exist"):
        find_kubeconfig(tmp_path / "nope", cwd=work)


def test_in_cluster_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(ClientError, match="not running in a cluster"):
        in_cluster_config(tmp_path)
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    (tmp_path / "token").write_text("sa-token\n")
    (tmp_path / "ca.crt").write_bytes(b"CA")
    (tmp_path / "namespace").write_text("kube-system")
    config = in_cluster_config(tmp_path)
    assert (config.server, config.token, config.ca_data, config.namespace) == (
        "https://10.0.0.1:443",
        "sa-token",
        b"CA",
        "kube-system",
    )


def test_in_cluster_config_under_a_kubeplane_pod_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A kubeplane process run as a pod's container (kubelet/process_runtime.py) finds the ServiceAccount files at
    the usual path under ``$KUBEPLANE_POD_ROOT`` (client-go's rest.InClusterConfig reads them at ``/``)."""
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "6443")
    sa = tmp_path / "var/run/secrets/kubernetes.io/serviceaccount"
    sa.mkdir(parents=True)
    (sa / "token").write_text("pod-token")
    (sa / "ca.crt").write_bytes(b"CA")
    (sa / "namespace").write_text("kube-system")
    monkeypatch.setenv(POD_ROOT_ENV, str(tmp_path))
    config = in_cluster_config()
    assert (config.server, config.token, config.namespace) == ("https://127.0.0.1:6443", "pod-token", "kube-system")
    assert pod_path("/etc/kubeplane/config.yaml") == tmp_path / "etc/kubeplane/config.yaml"
    assert pod_path("relative.yaml") == Path("relative.yaml")
    monkeypatch.setenv("HOSTNAME", "custom-scheduler-7d9c-abcde")
    assert hostname() == "custom-scheduler-7d9c-abcde"  # the container's hostname is its pod's name
    monkeypatch.delenv(POD_ROOT_ENV)
    assert pod_path("/etc/kubeplane/config.yaml") == Path("/etc/kubeplane/config.yaml")
    assert hostname() == socket.gethostname()
