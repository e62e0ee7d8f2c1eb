"""Issue 28's authorization acceptance with the real kubectl against ``kubeplane up``: a ServiceAccount without
bindings is refused with upstream's Forbidden text; a RoleBinding to ``view`` in its namespace allows it there
and nowhere else; ``kubectl auth can-i`` (SelfSubjectAccessReview, sent as protobuf), ``--as``
(Impersonate-User) and ``kubectl auth whoami`` (SelfSubjectReview) agree with what the requests themselves get.
Upstream behaviour pinned: filters/authorization.go + responsewriters.Forbidden, filters/impersonation.go, the
anonymous authenticator, and the bootstrap ``view``, ``system:basic-user``, ``system:discovery`` and
``system:public-info-viewer`` ClusterRoles."""

from __future__ import annotations

import base64
import json
import ssl
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli.up_cluster import KUBECTL, Cluster, running_up

NODES = "nodes:\n- {name: node01}\n- {name: node02}\n"
SA = "system:serviceaccount:default:nobody"


def forbidden(verb: str, resource: str, namespace: str, user: str = SA) -> str:
    return (
        f'Error from server (Forbidden): {resource} is forbidden: User "{user}" cannot {verb} resource "{resource}" '
        f'in API group "" in the namespace "{namespace}"'
    )


def run(cluster: Cluster, *args: str, kubeconfig: Path | None = None) -> tuple[int, str, str]:
    """kubectl with this test's kubeconfig and cache dir; the exit code, stdout and stderr (no raise)."""
    config = kubeconfig or cluster.kubeconfig
    base = [str(KUBECTL), "--kubeconfig", str(config), "--cache-dir", str(cluster.tmp / "cache")]
    done = subprocess.run([*base, *args], capture_output=True, text=True, timeout=60, check=False)
    return done.returncode, done.stdout.strip(), done.stderr.strip()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    tmp: Path = tmp_path_factory.mktemp("auth")
    with running_up(tmp, NODES, ready_nodes=2) as up:
        up.kubectl("create", "serviceaccount", "nobody", "-n", "default")
        yield up


@pytest.fixture(scope="module")
def token(cluster: Cluster) -> str:
    return cluster.kubectl("create", "token", "nobody", "-n", "default").strip()


def test_service_account_without_bindings_is_refused(cluster: Cluster, token: str) -> None:
    code, _, err = run(cluster, "--token", token, "get", "pods", "-n", "default")
    assert (code, err) == (1, forbidden("list", "pods", "default"))
    code, _, err = run(cluster, "--as", SA, "get", "pods", "-n", "default")  # the admin impersonating it
    assert (code, err) == (1, forbidden("list", "pods", "default"))
    code, _, err = run(cluster, "--token", token, "create", "configmap", "c", "-n", "default")
    assert err == (
        f'error: failed to create configmap: configmaps is forbidden: User "{SA}" cannot create resource '
        '"configmaps" in API group "" in the namespace "default"'
    )


def test_admin_can_i_and_whoami(cluster: Cluster) -> None:
    """SelfSubjectAccessReview and SelfSubjectRulesReview arrive as protobuf from kubectl's typed client."""
    assert run(cluster, "auth", "can-i", "delete", "nodes")[:2] == (0, "yes")
    assert run(cluster, "auth", "can-i", "get", "/healthz")[:2] == (0, "yes")
    assert run(cluster, "auth", "can-i", "--list", "-n", "default")[0] == 0
    out = run(cluster, "auth", "whoami", "-o", "json")[1]
    assert json.loads(out)["status"]["userInfo"] == {
        "username": "admin",
        "groups": ["system:masters", "system:authenticated"],
    }


def test_impersonation_needs_the_impersonate_verb(cluster: Cluster, token: str) -> None:
    code, _, err = run(cluster, "--token", token, "--as", "alice", "get", "pods")
    assert code == 1
    assert err == (
        f'Error from server (Forbidden): users "alice" is forbidden: User "{SA}" cannot impersonate resource '
        '"users" in API group "" at the cluster scope'
    )


def _anonymous(cluster: Cluster, path: str) -> tuple[int, str]:
    """A request without credentials to this cluster (kubectl would prompt for a password: raw HTTPS)."""
    config = json.loads(cluster.kubectl("config", "view", "--raw", "-o", "json"))["clusters"][0]["cluster"]
    context = ssl.create_default_context(cadata=base64.b64decode(config["certificate-authority-data"]).decode())
    try:
        with urllib.request.urlopen(config["server"] + path, context=context, timeout=30) as reply:
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, json.loads(exc.read())["message"]


def test_anonymous_is_refused_resources(cluster: Cluster) -> None:
    assert _anonymous(cluster, "/api/v1/namespaces/default/pods") == (
        403,
        'pods is forbidden: User "system:anonymous" cannot list resource "pods" in API group "" in the namespace '
        '"default"',
    )
    assert _anonymous(cluster, "/apis") == (403, 'forbidden: User "system:anonymous" cannot get path "/apis"')


def test_anonymous_reaches_public_info(cluster: Cluster) -> None:
    """system:public-info-viewer: /healthz and /version for everyone."""
    assert _anonymous(cluster, "/healthz") == (200, "ok")
    assert _anonymous(cluster, "/version")[0] == 200


def test_service_account_is_held_to_its_bindings(cluster: Cluster, token: str) -> None:
    # whoami: the token is the ServiceAccount (system:basic-user lets every authenticated user ask)
    code, out, err = run(cluster, "--token", token, "auth", "whoami", "-o", "json")
    assert code == 0, err
    info = json.loads(out)["status"]["userInfo"]
    assert info["username"] == SA
    assert info["groups"] == ["system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"]
    # no bindings: can-i (as the token, or --as by the admin) says no, as the request itself is refused
    assert run(cluster, "--token", token, "auth", "can-i", "list", "pods", "-n", "default")[1] == "no"
    assert run(cluster, "--as", SA, "auth", "can-i", "list", "pods", "-n", "default")[1] == "no"

    # a RoleBinding to view in its namespace: allowed there, still forbidden elsewhere
    cluster.kubectl(
        "create", "rolebinding", "nobody-view", "--clusterrole=view", "--serviceaccount=default:nobody", "-n", "default"
    )
    code, out, err = run(cluster, "--token", token, "get", "pods", "-n", "default")
    assert code == 0, err
    assert run(cluster, "--token", token, "auth", "can-i", "list", "pods", "-n", "default")[1] == "yes"
    assert run(cluster, "--as", SA, "auth", "can-i", "list", "pods", "-n", "default")[1] == "yes"
    assert run(cluster, "--as", SA, "get", "pods", "-n", "default")[0] == 0
    code, _, err = run(cluster, "--token", token, "get", "pods", "-n", "kube-system")
    assert (code, err) == (1, forbidden("list", "pods", "kube-system"))
    assert run(cluster, "--token", token, "auth", "can-i", "list", "pods", "-n", "kube-system")[1] == "no"
    assert run(cluster, "--as", SA, "get", "pods", "-n", "kube-system")[2] == forbidden("list", "pods", "kube-system")
    # view reads, it does not write
    assert run(cluster, "--token", token, "auth", "can-i", "create", "configmaps", "-n", "default")[1] == "no"
    assert run(cluster, "--token", token, "create", "configmap", "c", "-n", "default")[0] == 1


AS_NODE01 = ("--as", "system:node:node01", "--as-group", "system:nodes")
POD_ON_NODE02 = """
apiVersion: v1
kind: Pod
metadata: {name: on-node02}
spec:
  nodeName: node02
  containers: [{name: c, image: soscscs/myapp:v1}]
"""


def test_a_kubelet_identity_is_held_to_its_own_node(cluster: Cluster) -> None:
    """The Node authorizer and NodeRestriction (plugin/pkg/auth/authorizer/node, plugin/pkg/admission/
    noderestriction): node01's kubelet may label its own Node but neither read nor change node02, nor delete a pod
    bound to node02; nothing it was refused changed."""
    code, _, err = run(cluster, *AS_NODE01, "label", "node", "node01", "example.com/own=yes")
    assert code == 0, err
    code, _, err = run(cluster, *AS_NODE01, "label", "node", "node02", "example.com/own=yes")
    assert code == 1
    assert err.startswith('Error from server (Forbidden): nodes "node02" is forbidden: ')
    assert "node01" in err
    assert "example.com/own" not in cluster.get("node", "node02")["metadata"].get("labels", {})
    cluster.kubectl("apply", "-f", "-", stdin=POD_ON_NODE02)
    code, _, err = run(cluster, *AS_NODE01, "delete", "pod", "on-node02", "--wait=false")
    assert code == 1
    assert err.startswith('Error from server (Forbidden): pods "on-node02" is forbidden: ')
    assert cluster.get("pod", "on-node02")["metadata"]["name"] == "on-node02"
    cluster.kubectl("delete", "pod", "on-node02", "--wait=false")


def _client_certificate(data: Path, subject: list[tuple[Any, str]], tmp: Path) -> Path:
    """A kubeconfig with a client certificate signed by the cluster's CA (``DATA_DIR/ca.key``) and no token."""
    import datetime

    import yaml
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID

    ca_key = serialization.load_pem_private_key((data / "ca.key").read_bytes(), password=None)
    ca = x509.load_pem_x509_certificate((data / "ca.crt").read_bytes())
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(oid, value) for oid, value in subject]))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())  # type: ignore[arg-type]
    )
    config = yaml.safe_load((data / "kubeconfig").read_text())
    config["users"][0]["user"] = {
        "client-certificate-data": base64.b64encode(cert.public_bytes(serialization.Encoding.PEM)).decode(),
        "client-key-data": base64.b64encode(
            key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
        ).decode(),
    }
    path = tmp / "cert.kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return path


def test_client_certificates_signed_by_the_cluster_ca_authenticate(cluster: Cluster) -> None:
    """x509 authentication (staging/src/k8s.io/apiserver/pkg/authentication/request/x509:
    CommonNameUserConversion): CN is the user, each O a group; RBAC then decides for that user."""
    from cryptography.x509.oid import NameOID

    subject = [(NameOID.COMMON_NAME, "jane"), (NameOID.ORGANIZATION_NAME, "devs"), (NameOID.ORGANIZATION_NAME, "ops")]
    config = _client_certificate(cluster.tmp / "data", subject, cluster.tmp)
    code, out, err = run(cluster, "auth", "whoami", "-o", "json", kubeconfig=config)
    assert code == 0, err
    info = json.loads(out)["status"]["userInfo"]
    assert info["username"] == "jane"
    assert info["groups"] == ["devs", "ops", "system:authenticated"]
    code, _, err = run(cluster, "get", "pods", kubeconfig=config)
    assert code == 1
    assert err == forbidden("list", "pods", "default", user="jane")
