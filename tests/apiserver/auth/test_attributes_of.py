"""Authorization attributes and the authorization filter (auth/attributes_of.py, the HTTP app and the local
client): upstream ``endpoints/request/requestinfo_test.go`` (verbs from the method, the name and ``watch``; a
list or watch addressing one name by ``metadata.name``; the namespace object in its own namespace; selectors on
list/watch/deletecollection only) and ``filters/authorization.go`` (every request authorized, before 404s,
answered with ``responsewriters.Forbidden``)."""

from __future__ import annotations

import pytest

from kubeplane.apiserver.auth.attributes_of import non_resource_attributes, resource_attributes
from kubeplane.apiserver.auth.authorizer import Selector
from kubeplane.apiserver.tokens import UserInfo
from kubeplane.client.errors import APIStatusError
from kubeplane.client.local import LocalClient

from .conftest import ADMIN, Served
from .fakes import Grant, call

U = UserInfo("u", groups=("system:authenticated",))


@pytest.mark.parametrize(
    ("path", "verb", "name", "namespace"),
    [
        ("/api/v1/namespaces/default/pods", "list", "", "default"),
        ("/api/v1/namespaces/default/pods?watch=true", "watch", "", "default"),
        ("/api/v1/namespaces/default/pods?watch=1", "watch", "", "default"),
        ("/api/v1/namespaces/default/pods?fieldSelector=metadata.name%3Dweb", "list", "web", "default"),
        ("/api/v1/namespaces/default/pods?watch=true&fieldSelector=metadata.name%3D%3Dweb", "watch", "web", "default"),
        ("/api/v1/namespaces/default/pods/web", "get", "web", "default"),
        ("/api/v1/namespaces/other", "get", "other", "other"),
        ("/api/v1/namespaces/other/status", "get", "other", "other"),
        ("/api/v1/namespaces", "list", "", ""),
        ("/api/v1/nodes", "list", "", ""),
    ],
)
async def test_request_info_attributes(served: Served, path: str, verb: str, name: str, namespace: str) -> None:
    """What the authorizer is asked for a GET (requestinfo_test.go TestGetAPIRequestInfo)."""
    served.grants.asked.clear()
    await call(served.app, "GET", path, headers={"Authorization": "Bearer alice-token"})
    attrs = served.grants.asked[0]
    assert (attrs.verb, attrs.name, attrs.namespace, attrs.user.name) == (verb, name, namespace, "alice")


async def test_deletecollection_and_selectors(served: Served) -> None:
    served.grants.asked.clear()
    await call(
        served.app,
        "DELETE",
        "/api/v1/namespaces/ns/pods?labelSelector=app%3Dweb,tier+in+(a,b)&fieldSelector=spec.nodeName%3Dn1",
        token="alice-token",
    )
    attrs = served.grants.asked[0]
    assert attrs.verb == "deletecollection"
    assert attrs.field_selector == (Selector("spec.nodeName", "=", ("n1",)),)
    assert attrs.label_selector == (Selector("app", "=", ("web",)), Selector("tier", "in", ("a", "b")))


def test_selectors_only_on_list_watch_deletecollection() -> None:
    """requestinfo.go: verbsWithSelectors = list, watch, deletecollection."""
    kw = {"group": "", "version": "v1", "resource": "pods", "namespace": "ns"}
    got = resource_attributes(U, verb="get", name="p", field_selector="spec.nodeName=n1", **kw)
    assert got.field_selector == ()
    listed = resource_attributes(U, verb="list", field_selector="spec.nodeName=n1,metadata.name!=x", **kw)
    # fields.ParseSelector sorts the terms
    assert listed.field_selector == (Selector("metadata.name", "!=", ("x",)), Selector("spec.nodeName", "=", ("n1",)))
    assert listed.name == ""  # only an exact metadata.name names the request
    broken = resource_attributes(U, verb="list", label_selector="a in (", **kw)
    assert broken.label_selector == ()  # a selector that does not parse is no selector


def test_non_resource_attributes() -> None:
    attrs = non_resource_attributes(U, "HEAD", "/healthz")
    assert (attrs.verb, attrs.path, attrs.resource_request) == ("head", "/healthz", False)


async def test_forbidden_before_not_found(served: Served) -> None:
    """The authorization filter runs before the handler: an unauthorized request for an unknown resource is a
    403, the same request of an administrator a 404."""
    status, body = await call(served.app, "GET", "/apis/example.com/v1/widgets", token="alice-token")
    assert status == 403
    assert body["message"] == (
        'widgets.example.com is forbidden: User "alice" cannot list resource "widgets" in API group '
        '"example.com" at the cluster scope'
    )
    assert body["details"] == {"group": "example.com", "kind": "widgets"}
    status, body = await call(served.app, "GET", "/apis/example.com/v1/widgets", token=ADMIN)
    assert status == 404


async def test_named_request_forbidden_names_the_object(served: Served) -> None:
    status, body = await call(
        served.app, "DELETE", "/api/v1/namespaces/ns/pods/web/ephemeralcontainers", token="alice-token"
    )
    assert status == 403
    assert body["message"] == (
        'pods "web" is forbidden: User "alice" cannot delete resource "pods/ephemeralcontainers" in API group "" '
        'in the namespace "ns"'
    )


async def test_grant_allows_in_its_namespace_only(served: Served) -> None:
    served.grants.add(Grant("alice", ("get", "list", "watch"), resources=("pods",), groups=("",), namespace="team"))
    assert (await call(served.app, "GET", "/api/v1/namespaces/team/pods", token="alice-token"))[0] == 200
    status, _ = await call(served.app, "GET", "/api/v1/namespaces/other/pods", token="alice-token")
    assert status == 403
    status, _ = await call(served.app, "GET", "/api/v1/pods", token="alice-token")  # all namespaces: cluster scope
    assert status == 403


async def test_discovery_needs_authorization(served: Served) -> None:
    """/api, /apis and /openapi are non-resource paths (system:discovery for authenticated users only)."""
    assert (await call(served.app, "GET", "/api", token="alice-token"))[0] == 200
    status, body = await call(served.app, "GET", "/apis")
    assert status == 403
    assert body["message"] == 'forbidden: User "system:anonymous" cannot get path "/apis"'


async def test_local_client_authorizes_as_http(served: Served) -> None:
    """LocalClient(user=...) asks the authorizer the same attributes and gives the same 403."""
    alice = UserInfo("alice", uid="a1", groups=("devs", "system:authenticated"))
    client = LocalClient(served.registry).as_user(alice)
    pods = client.resource("pods")
    served.grants.asked.clear()
    with pytest.raises(APIStatusError) as err:
        await client.list(pods, namespace="default", field_selector="metadata.name=web")
    assert err.value.status["code"] == 403
    assert err.value.status["message"] == (
        'pods "web" is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "default"'
    )
    http_status, http_body = await call(
        served.app, "GET", "/api/v1/namespaces/default/pods?fieldSelector=metadata.name%3Dweb", token="alice-token"
    )
    assert (http_status, http_body["message"]) == (403, err.value.status["message"])
    local_attrs, http_attrs = served.grants.asked[0], served.grants.asked[-1]
    assert local_attrs.user == alice
    assert (local_attrs.verb, local_attrs.name, local_attrs.field_selector) == (
        http_attrs.verb,
        http_attrs.name,
        http_attrs.field_selector,
    )
    with pytest.raises(APIStatusError):
        await client.watch(pods, namespace="default")
    served.grants.add(Grant("devs", ("list", "watch", "create"), resources=("pods", "configmaps"), groups=("",)))
    assert (await client.list(pods, namespace="default"))["items"] == []
    watch = await client.watch(pods, namespace="default")
    await watch.close()
    trusted = LocalClient(served.registry)  # no user: the server's own caller, nothing asked
    served.grants.asked.clear()
    await trusted.list(client.resource("secrets"), namespace="default")
    assert served.grants.asked == []
    await client.close()  # shares, does not own, the registry
    assert (await trusted.list(pods, namespace="default"))["items"] == []


async def test_local_client_runs_as_its_user(served: Served) -> None:
    """Inside the call the requester (auth.context) is the client's user: a SelfSubjectReview answers it."""
    alice = UserInfo("alice", groups=("system:authenticated",))
    client = LocalClient(served.registry, user=alice)
    review = await client.create(client.resource("selfsubjectreviews"), {"kind": "SelfSubjectReview"})
    assert review["status"]["userInfo"] == {"username": "alice", "groups": ["system:authenticated"]}


async def test_pod_exec_over_websocket_needs_create(served: Served) -> None:
    """AuthorizePodWebsocketUpgradeCreatePermission (v1.35+, pod REST's ensureAuthorizedForVerb): a GET of
    pods/exec allowed as ``get`` is still refused without ``create``, as NewForbidden(pods, name, reason)."""
    served.grants.add(Grant("alice", ("get",), resources=("pods/exec",), groups=("",)))
    status, body = await call(served.app, "GET", "/api/v1/namespaces/ns/pods/web/exec?command=ls", token="alice-token")
    assert status == 403
    assert body["message"] == 'pods "web" is forbidden: '
    served.grants.add(Grant("alice", ("create",), resources=("pods/exec",), groups=("",)))
    status, body = await call(served.app, "GET", "/api/v1/namespaces/ns/pods/web/exec?command=ls", token="alice-token")
    assert status == 404  # authorized: the pod's absence answers
