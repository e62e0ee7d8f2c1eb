"""ServiceAccounts end to end: a TLS ``kubeplane apiserver`` (ServiceAccount admission on) with a
``kubeplane controller-manager`` running the ``serviceaccount`` and ``root-ca-cert-publisher`` controllers, driven
by real kubectl v1.37 (its own kubeconfig and cache dir) and raw HTTPS requests.

Upstream behaviour pinned, v1.37:

* ``pkg/controller/serviceaccount``: ``kubectl get sa default`` works in a new namespace;
  ``pkg/controller/certificates/rootcacertpublisher``: ``kube-root-ca.crt`` holds the server's CA (the controller
  manager's kubeconfig CA, upstream's fallback without ``--root-ca-file``).
* ``pkg/registry/core/serviceaccount/storage/token.go`` (``TokenREST.Create``) and
  ``pkg/apis/authentication/validation`` (``ValidateTokenRequest``): ``kubectl create token`` defaults, 10-minute
  minimum, 404 for a missing account, pod binding.
* ``pkg/serviceaccount/claims.go`` / ``jwt.go``: RS256, ``kid`` from the public key, the claim set; a token
  authenticates until it expires (go-jose's one-minute leeway), is tampered with, or its account or pod is gone.
* ``plugin/pkg/admission/serviceaccount/admission.go``: pods get ``serviceAccountName: default`` and the
  ``kube-api-access-*`` projected volume mounted in every container, not with ``automountServiceAccountToken:
  false``; a pod naming a missing account is 403 and not stored.
"""

from __future__ import annotations

import base64
import hashlib
import http.client
import json
import re
import ssl
import subprocess
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar
from urllib.parse import urlsplit

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from .conftest import KUBEPLANE, Server, start_server, stop_process
from .test_kubectl import KUBECTL, Kubectl

T = TypeVar("T")
ISSUER = "https://kubernetes.default.svc.cluster.local"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubectl]:
    assert KUBECTL.is_file(), f"the project's kubectl is missing at {KUBECTL}"
    root = tmp_path_factory.mktemp("sa")
    server = start_server(root / "data", tls=True, service_accounts=True)
    log = (root / "cm.log").open("wb")
    manager = subprocess.Popen(
        [
            *KUBEPLANE,
            "controller-manager",
            "--kubeconfig",
            str(server.kubeconfig),
            "--controllers",
            "serviceaccount,root-ca-cert-publisher",
            "--leader-elect=false",
            "--metrics-port=0",
        ],
        stdout=log,
        stderr=log,
    )
    try:
        yield Kubectl(server, root / "cache")
    finally:
        stop_process(manager)
        log.close()
        server.stop()


def eventually(check: Callable[[], T | None], what: str, timeout: float = 30) -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def request(server: Server, path: str, token: str, *, method: str = "GET", body: Any = None) -> tuple[int, Any]:
    ctx = ssl.create_default_context(cafile=str(server.data_dir / "ca.crt"))
    url = urlsplit(server.address)
    conn = http.client.HTTPSConnection(url.hostname or "127.0.0.1", url.port, context=ctx, timeout=30)
    try:
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        conn.request(method, path, body=None if body is None else json.dumps(body), headers=headers)
        response = conn.getresponse()
        return response.status, json.loads(response.read() or b"null")
    finally:
        conn.close()


def b64decode(part: str) -> bytes:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


def b64encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def decode(token: str) -> tuple[dict[str, Any], dict[str, Any]]:
    header, payload, _ = token.split(".")
    return json.loads(b64decode(header)), json.loads(b64decode(payload))


def sa_uid(kubectl: Kubectl, namespace: str, name: str = "default") -> str:
    uid: str = kubectl.json("get", "sa", name, "-n", namespace)["metadata"]["uid"]
    return uid


def ensure_default_sa(kubectl: Kubectl, namespace: str) -> None:
    eventually(
        lambda: kubectl("get", "sa", "default", "-n", namespace, check=False).returncode == 0,
        f"default SA in {namespace}",
    )


def test_default_service_account_and_root_ca_in_a_new_namespace(cluster: Kubectl) -> None:
    cluster("create", "namespace", "fresh")
    ensure_default_sa(cluster, "fresh")
    out = cluster("get", "sa", "default", "-n", "fresh").stdout
    assert re.match(r"NAME\s+AGE\n", out) or re.match(r"NAME\s+SECRETS\s+AGE\n", out), out
    ca = (cluster.server.data_dir / "ca.crt").read_text()

    def published() -> Any:
        result = cluster("get", "configmap", "kube-root-ca.crt", "-n", "fresh", "-o", "json", check=False)
        return json.loads(result.stdout) if result.returncode == 0 else None

    cm = eventually(published, "kube-root-ca.crt in fresh")
    assert cm["data"] == {"ca.crt": ca}


def test_kubectl_create_token_authenticates(cluster: Kubectl) -> None:
    ensure_default_sa(cluster, "default")
    token = cluster("create", "token", "default").stdout.strip()
    header, claims = decode(token)
    # kid: unpadded base64url SHA-256 of the public key's PKIX DER (jwt.go keyIDFromPublicKey)
    key = serialization.load_pem_private_key((cluster.server.data_dir / "sa.key").read_bytes(), password=None)
    der = key.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    assert header == {"alg": "RS256", "kid": b64encode(hashlib.sha256(der).digest())}
    assert list(claims) == sorted(claims)  # go-jose marshals the merged claims as a map
    assert claims["iss"] == ISSUER
    assert claims["aud"] == [ISSUER]
    assert claims["sub"] == "system:serviceaccount:default:default"
    assert claims["exp"] - claims["iat"] == 3600
    assert claims["nbf"] == claims["iat"]
    assert re.fullmatch(r"[0-9a-f-]{36}", claims["jti"])
    assert claims["kubernetes.io"] == {
        "namespace": "default",
        "serviceaccount": {"name": "default", "uid": sa_uid(cluster, "default")},
    }
    assert (cluster.server.data_dir / "sa.key").stat().st_mode & 0o777 == 0o600
    status, body = request(cluster.server, "/api/v1/namespaces/default/pods", token)
    assert status == 403  # authenticated as the ServiceAccount, which has no binding (authorization enforced)
    assert body["message"] == (
        'pods is forbidden: User "system:serviceaccount:default:default" cannot list resource "pods" in API group '
        '"" in the namespace "default"'
    )
    # tampered: another subject under the same signature
    forged = dict(claims, sub="system:serviceaccount:kube-system:default")
    parts = token.split(".")
    tampered = f"{parts[0]}.{b64encode(json.dumps(forged).encode())}.{parts[2]}"
    assert request(cluster.server, "/api/v1/namespaces", tampered) == (
        401,
        {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": "Unauthorized",
         "reason": "Unauthorized", "code": 401},
    )  # fmt: skip
    assert request(cluster.server, "/api/v1/namespaces", "not-a-token")[0] == 401


def _sign(server: Server, claims: dict[str, Any], kid: str) -> str:
    key = serialization.load_pem_private_key((server.data_dir / "sa.key").read_bytes(), password=None)
    assert isinstance(key, rsa.RSAPrivateKey)
    signing = (
        b64encode(json.dumps({"alg": "RS256", "kid": kid}).encode()) + "." + b64encode(json.dumps(claims).encode())
    )
    signature = key.sign(signing.encode(), padding.PKCS1v15(), hashes.SHA256())
    return f"{signing}.{b64encode(signature)}"


def test_expired_token_is_refused_after_the_leeway(cluster: Kubectl) -> None:
    ensure_default_sa(cluster, "default")
    token = cluster("create", "token", "default").stdout.strip()
    header, claims = decode(token)
    now = int(time.time())
    still = dict(claims, iat=now - 4000, nbf=now - 4000, exp=now - 30)  # within go-jose's one-minute leeway
    gone = dict(claims, iat=now - 4000, nbf=now - 4000, exp=now - 120)
    assert request(cluster.server, "/api/v1/namespaces", _sign(cluster.server, still, header["kid"]))[0] == 403
    assert request(cluster.server, "/api/v1/namespaces", _sign(cluster.server, gone, header["kid"]))[0] == 401


def test_token_dies_with_its_service_account(cluster: Kubectl) -> None:
    cluster("create", "namespace", "doomed")
    cluster("create", "serviceaccount", "robot", "-n", "doomed")
    token = cluster("create", "token", "robot", "-n", "doomed", "--duration", "20m").stdout.strip()
    assert decode(token)[1]["exp"] - decode(token)[1]["iat"] == 1200
    assert request(cluster.server, "/api/v1/namespaces/doomed/pods", token)[0] == 403  # authenticated, no binding
    cluster("delete", "serviceaccount", "robot", "-n", "doomed")
    cluster("create", "serviceaccount", "robot", "-n", "doomed")  # same name, new uid
    assert request(cluster.server, "/api/v1/namespaces/doomed/pods", token)[0] == 401


def test_token_request_errors_as_upstream(cluster: Kubectl) -> None:
    short = cluster("create", "token", "default", "--duration", "1m", check=False)
    assert short.returncode != 0
    assert (
        'TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 60: may not '
        "specify a duration less than 10 minutes"
    ) in short.stderr
    missing = cluster("create", "token", "nobody", check=False)
    assert 'serviceaccounts "nobody" not found' in missing.stderr
    server = cluster.server
    path = "/api/v1/namespaces/default/serviceaccounts/default/token"
    status, body = request(server, path, server.token, method="POST", body={"metadata": {"name": "other"}})
    assert status == 422
    assert body["message"] == (
        'TokenRequest.authentication.k8s.io "default" is invalid: metadata.name: Invalid value: "other": must '
        "match the service account name if specified"
    )
    bind = {"spec": {"boundObjectRef": {"apiVersion": "v1", "kind": "ConfigMap", "name": "x"}}}
    status, body = request(server, path, server.token, method="POST", body=bind)
    assert (status, body["message"]) == (400, "cannot bind token to object of type /v1, Kind=ConfigMap")
    status, body = request(server, path, server.token, method="POST", body={})
    assert status == 201
    assert body["kind"] == "TokenRequest"
    assert body["spec"]["expirationSeconds"] == 3600
    assert body["spec"]["audiences"] == [ISSUER]
    assert body["metadata"]["name"] == "default"


POD = """
apiVersion: v1
kind: Pod
metadata: {name: NAME, namespace: default}
spec:
  initContainers: [{name: init, image: busybox}]
  containers: [{name: a, image: nginx}, {name: b, image: nginx}]
"""


def test_pods_get_the_service_account_and_its_token_volume(cluster: Kubectl) -> None:
    ensure_default_sa(cluster, "default")
    cluster("apply", "-f", "-", stdin=POD.replace("NAME", "mounted"))
    pod = cluster.json("get", "pod", "mounted")
    spec = pod["spec"]
    assert spec["serviceAccountName"] == spec["serviceAccount"] == "default"  # the deprecated alias too
    (volume,) = [v for v in spec["volumes"] if v["name"].startswith("kube-api-access-")]
    assert re.fullmatch(r"kube-api-access-[bcdfghjklmnpqrstvwxz2456789]{5}", volume["name"])
    assert volume["projected"] == {
        "defaultMode": 420,
        "sources": [
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {"configMap": {"items": [{"key": "ca.crt", "path": "ca.crt"}], "name": "kube-root-ca.crt"}},
            {
                "downwardAPI": {
                    "items": [
                        {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}, "path": "namespace"}
                    ]
                }
            },
        ],
    }
    mount = {"mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "name": volume["name"], "readOnly": True}
    for container in spec["initContainers"] + spec["containers"]:
        assert container["volumeMounts"] == [mount], container["name"]

    # a pod-bound token carries the pod and stops authenticating once the pod is gone
    token = cluster(
        "create", "token", "default", "--bound-object-kind", "Pod", "--bound-object-name", "mounted"
    ).stdout.strip()
    assert decode(token)[1]["kubernetes.io"]["pod"] == {"name": "mounted", "uid": pod["metadata"]["uid"]}
    assert request(cluster.server, "/api/v1/namespaces", token)[0] == 403  # authenticated, no binding
    cluster("delete", "pod", "mounted", "--grace-period=0", "--force")
    assert request(cluster.server, "/api/v1/namespaces", token)[0] == 401


def test_no_token_volume_when_automount_is_off_and_missing_account_refused(cluster: Kubectl) -> None:
    ensure_default_sa(cluster, "default")
    manifest = POD.replace("NAME", "bare").replace("spec:\n", "spec:\n  automountServiceAccountToken: false\n")
    cluster("apply", "-f", "-", stdin=manifest)
    spec = cluster.json("get", "pod", "bare")["spec"]
    assert spec["serviceAccountName"] == "default"
    assert "volumes" not in spec
    assert all("volumeMounts" not in c for c in spec["containers"])

    manifest = POD.replace("NAME", "ghost").replace("spec:\n", "spec:\n  serviceAccountName: ghost\n")
    refused = cluster("apply", "-f", "-", stdin=manifest, check=False)
    assert refused.returncode != 0
    assert (
        'pods "ghost" is forbidden: error looking up service account default/ghost: serviceaccount "ghost" not found'
    ) in refused.stderr
    assert cluster("get", "pod", "ghost", check=False).returncode != 0
