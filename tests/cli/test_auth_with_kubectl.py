"""Issue 28's authorization acceptance with the real kubectl against ``kubeplane up``: a ServiceAccount without
bindings is refused with upstream's Forbidden text; a RoleBinding to ``view`` in its namespace allows it there
and nowhere else; ``kubectl auth can-i`` (SelfSubjectAccessReview), ``--as`` (Impersonate-User) and ``kubectl
auth whoami`` (SelfSubjectReview) agree with what the requests themselves get. Upstream behaviour pinned:
filters/authorization.go + responsewriters.Forbidden, filters/impersonation.go, the bootstrap ``view`` and
``system:basic-user`` ClusterRoles (RBAC)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.up_cluster import KUBECTL, Cluster, running_up

pytest.importorskip("kubeplane.apiserver.auth.rbac", reason="needs the RBAC authorizer (h-rbac)")

NODES = "nodes:\n- {name: node01}\n"
SA = "system:serviceaccount:default:nobody"


def forbidden(verb: str, resource: str, namespace: str) -> str:
    return (
        f'Error from server (Forbidden): {resource} is forbidden: User "{SA}" cannot {verb} resource "{resource}" '
        f'in API group "" in the namespace "{namespace}"'
    )


def run(cluster: Cluster, *args: str) -> tuple[int, str, str]:
    """kubectl with this test's kubeconfig and cache dir; the exit code, stdout and stderr (no raise)."""
    base = [str(KUBECTL), "--kubeconfig", str(cluster.kubeconfig), "--cache-dir", str(cluster.tmp / "cache")]
    done = subprocess.run([*base, *args], capture_output=True, text=True, timeout=60, check=False)
    return done.returncode, done.stdout.strip(), done.stderr.strip()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    tmp: Path = tmp_path_factory.mktemp("auth")
    with running_up(tmp, NODES, ready_nodes=1) as up:
        yield up


def test_service_account_is_held_to_its_bindings(cluster: Cluster) -> None:
    cluster.kubectl("create", "serviceaccount", "nobody", "-n", "default")
    token = cluster.kubectl("create", "token", "nobody", "-n", "default").strip()

    # whoami: the token is the ServiceAccount (system:basic-user lets every authenticated user ask)
    code, out, err = run(cluster, "--token", token, "auth", "whoami", "-o", "json")
    assert code == 0, err
    info = json.loads(out)["status"]["userInfo"]
    assert info["username"] == SA
    assert info["groups"] == ["system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"]

    # no bindings: list pods is refused, and can-i (as the token, or --as by the admin) says no
    code, out, err = run(cluster, "--token", token, "get", "pods", "-n", "default")
    assert code == 1
    assert err == forbidden("list", "pods", "default")
    assert run(cluster, "--token", token, "auth", "can-i", "list", "pods", "-n", "default")[1] == "no"
    assert run(cluster, "--as", SA, "auth", "can-i", "list", "pods", "-n", "default")[1] == "no"
    code, _, err = run(cluster, "--as", SA, "get", "pods", "-n", "default")
    assert err == forbidden("list", "pods", "default")

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
    assert code == 1
    assert err == forbidden("list", "pods", "kube-system")
    assert run(cluster, "--token", token, "auth", "can-i", "list", "pods", "-n", "kube-system")[1] == "no"
    assert run(cluster, "--as", SA, "get", "pods", "-n", "kube-system")[2] == forbidden("list", "pods", "kube-system")
    # view reads, it does not write
    code, _, err = run(cluster, "--token", token, "create", "configmap", "c", "-n", "default")
    assert err == (
        f'error: failed to create configmap: configmaps is forbidden: User "{SA}" cannot create resource '
        '"configmaps" in API group "" in the namespace "default"'
    )
    assert run(cluster, "--token", token, "auth", "can-i", "create", "configmaps", "-n", "default")[1] == "no"


def test_impersonation_needs_the_impersonate_verb(cluster: Cluster) -> None:
    token = cluster.kubectl("create", "token", "nobody", "-n", "default").strip()
    code, _, err = run(cluster, "--token", token, "--as", "alice", "get", "pods")
    assert code == 1
    assert err == (
        f'Error from server (Forbidden): users "alice" is forbidden: User "{SA}" cannot impersonate resource '
        '"users" in API group "" at the cluster scope'
    )


def test_anonymous_reaches_public_info_only(cluster: Cluster) -> None:
    """system:public-info-viewer: /healthz and /version for everyone; nothing else for system:anonymous (a
    kubeconfig of this cluster without credentials)."""
    config = json.loads(cluster.kubectl("config", "view", "--raw", "-o", "json"))
    anonymous = cluster.tmp / "anonymous.kubeconfig"
    config["users"] = [{"name": "anonymous", "user": {}}]
    config["contexts"][0]["context"]["user"] = "anonymous"
    anonymous.write_text(json.dumps(config))
    base = [str(KUBECTL), "--kubeconfig", str(anonymous), "--cache-dir", str(cluster.tmp / "anon-cache")]

    def kubectl(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*base, *args], capture_output=True, text=True, timeout=60, check=False)

    done = kubectl("get", "--raw", "/healthz")
    assert (done.returncode, done.stdout) == (0, "ok")
    done = kubectl("get", "pods", "-n", "default")
    assert done.returncode == 1
    # (kubectl logs its refused discovery first: system:discovery is for authenticated users only)
    assert done.stderr.strip().splitlines()[-1] == (
        'Error from server (Forbidden): pods is forbidden: User "system:anonymous" cannot list resource "pods" in '
        'API group "" in the namespace "default"'
    )
