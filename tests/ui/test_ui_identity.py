"""Issue 28's UI part in a real headless Chromium: the UI logs in with a ServiceAccount token and shows only what
that identity may see. The UI adds no rules of its own: every list and watch goes to the API with the session's
token, so RBAC decides, and a refused list is shown in the API's own words instead of an empty grid.

Upstream behaviours pinned: the bootstrap ``view`` ClusterRole (plugin/pkg/auth/authorizer/rbac/bootstrappolicy)
reads pods in the RoleBinding's namespace only; the Forbidden text of
staging/src/k8s.io/apiserver/pkg/endpoints/handlers/responsewriters/errors.go (``forbiddenMessage``).
"""

from __future__ import annotations

from typing import Any

from tests.cli.test_up_seeds import Cluster
from tests.ui.conftest import login

SETUP = """
apiVersion: v1
kind: Namespace
metadata: {name: team}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: viewer, namespace: team}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: viewer-view, namespace: team}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
subjects:
- {kind: ServiceAccount, name: viewer, namespace: team}
---
apiVersion: v1
kind: Pod
metadata: {name: team-pod, namespace: team}
spec:
  nodeSelector: {nowhere: "true"}
  containers: [{name: c, image: soscscs/myapp:v1}]
---
apiVersion: v1
kind: Pod
metadata: {name: other-pod, namespace: default}
spec:
  nodeSelector: {nowhere: "true"}
  containers: [{name: c, image: soscscs/myapp:v1}]
"""

USER = "system:serviceaccount:team:viewer"
NODES_FORBIDDEN = f'nodes is forbidden: User "{USER}" cannot list resource "nodes" in API group "" at the cluster scope'
PODS_FORBIDDEN = f'pods is forbidden: User "{USER}" cannot list resource "pods" in API group "" at the cluster scope'


def test_a_service_account_sees_its_namespace_and_is_told_what_it_may_not_list(
    browser: Any, up: tuple[Cluster, str, str], tmp_path: Any
) -> None:
    cluster, address, _ = up
    cluster.kubectl("apply", "-f", "-", stdin=SETUP)
    token = cluster.kubectl("create", "token", "viewer", "-n", "team").strip()
    page = login(browser, address, token)
    try:
        # an SA starts in its own namespace, where its RoleBinding lets it read pods
        assert page.input_value("#scope-namespace") == "team"
        page.wait_for_selector("#pending-pods li[data-pod='team/team-pod']")
        assert page.query_selector("#pending-pods li[data-pod='default/other-pod']") is None
        page.wait_for_function("() => document.querySelector('#access-notice').textContent.includes('nodes is')")
        assert page.inner_text("#access-notice").strip() == NODES_FORBIDDEN
        assert page.query_selector_all("#node-grid .tile") == []
        page.screenshot(path=str(tmp_path / "sa-team.png"))
        # all namespaces: the API refuses the cluster-wide list; the UI says so and shows no other pods
        page.fill("#scope-namespace", "")
        page.press("#scope-namespace", "Enter")
        page.wait_for_function("() => document.querySelector('#access-notice').textContent.includes('pods is')")
        assert PODS_FORBIDDEN in page.inner_text("#access-notice")
        assert page.query_selector("#pending-pods li[data-pod='team/team-pod']") is None
        assert page.query_selector("#pending-pods li[data-pod='default/other-pod']") is None
        assert page.outside_requests == []
        assert all("403 (Forbidden)" in e for e in page.console_errors), page.console_errors
    finally:
        page.context.close()
        cluster.kubectl("delete", "namespace", "team", "--wait=false")
        cluster.kubectl("delete", "pod", "other-pod", "--wait=false")


def test_the_admin_still_sees_every_namespace(browser: Any, up: tuple[Cluster, str, str]) -> None:
    _, address, token = up
    page = login(browser, address, token)
    try:
        assert page.input_value("#scope-namespace") == ""
        page.wait_for_function("() => document.querySelectorAll('#node-grid .tile').length === 3")
        assert page.is_hidden("#access-notice")
        assert page.console_errors == []
    finally:
        page.context.close()
