"""Issue 28's unauthenticated and unauthorised pass: over every served resource (the registry's table, with
each subresource) and every verb, plus generated paths, names, selectors and ``Impersonate-*`` headers, no
request succeeds where kube-apiserver would refuse it, and a refused request changes nothing in the store.

* without credentials (system:anonymous): only system:public-info-viewer's paths (``/healthz``, ``/livez``,
  ``/readyz``, ``/version``) answer 2xx; everything else is 403 (a bad token: 401);
* as a ServiceAccount without bindings: only what system:basic-user and system:discovery grant every
  authenticated user (create selfsubjectaccessreviews/selfsubjectrulesreviews/selfsubjectreviews; GET of
  discovery paths) succeeds.

The authorizer is the server's (``auth.modes.build_authorizer`` after ``auth.bootstrap.reconcile``). Requests go
straight into the ASGI app.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry

from kubeplane.apiserver.auth import bootstrap
from kubeplane.apiserver.auth.modes import build_authorizer
from kubeplane.apiserver.http.app import APIServerApp
from kubeplane.apiserver.registry import Registry
from kubeplane.client.local import LocalClient
from kubeplane.store.memory import MemoryStore
from tests.apiserver.auth.fakes import call

ADMIN = "admin-token"
PUBLIC = frozenset({"/healthz", "/livez", "/readyz", "/version"})
DISCOVERY = frozenset({"/api", "/api/v1", "/apis", "/apis/apps/v1", "/openapi/v2", "/openapi/v3"})
SELF_REVIEWS = frozenset({"selfsubjectaccessreviews", "selfsubjectrulesreviews", "selfsubjectreviews"})
METHODS = {
    "get": "GET",
    "list": "GET",
    "watch": "GET",
    "create": "POST",
    "update": "PUT",
    "patch": "PATCH",
    "delete": "DELETE",
    "deletecollection": "DELETE",
}


class Served:
    def __init__(self, app: APIServerApp, registry: Registry, sa_token: str) -> None:
        self.app, self.registry, self.sa_token = app, registry, sa_token


async def _start() -> Served:
    registry = Registry(store=MemoryStore())
    await registry.start()
    await bootstrap.reconcile(registry)
    registry.authorizer = build_authorizer(registry)
    app = APIServerApp(registry, tokens={ADMIN: "admin"}, metrics_registry=CollectorRegistry())
    admin = LocalClient(registry)
    await admin.create(admin.resource("serviceaccounts"), {"metadata": {"name": "nobody"}}, namespace="default")
    status, body = await call(
        app, "POST", "/api/v1/namespaces/default/serviceaccounts/nobody/token", token=ADMIN, body={"spec": {}}
    )
    assert status == 201, body
    return Served(app, registry, body["status"]["token"])


async def _stop(served: Served) -> None:
    served.app.close_watches()
    await served.registry.stop()


@pytest.fixture
async def served() -> AsyncIterator[Served]:
    started = await _start()
    yield started
    await _stop(started)


def _requests(registry: Registry) -> list[tuple[str, str, str]]:
    """(method, path, what) for every resource, subresource and verb, namespaced and across namespaces."""
    out: list[tuple[str, str, str]] = []
    for r in registry.table:
        namespaces = ("default", None) if r.namespaced else (None,)
        for ns in namespaces:
            for verb in ("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"):
                named = verb in ("get", "update", "patch", "delete")
                if ns is None and r.namespaced and named:
                    continue
                query = "?watch=true&timeoutSeconds=1" if verb == "watch" else ""
                out.append((METHODS[verb], r.rest_path(ns, "x" if named else "") + query, f"{verb} {r.plural}"))
            for sub in r.subresources:
                for verb in sub.verbs:
                    if ns is None and r.namespaced:
                        continue
                    method = METHODS.get(verb, "POST" if verb == "create" else "GET")
                    out.append((method, r.rest_path(ns, "x", sub.name), f"{verb} {r.plural}/{sub.name}"))
    out += [("GET", p, p) for p in sorted(DISCOVERY)]
    out += [("GET", p, p) for p in PUBLIC] + [("GET", "/metrics", "/metrics"), ("POST", "/healthz", "post")]
    return out


def _allowed_for_sa(method: str, path: str) -> bool:
    """system:basic-user + system:discovery + system:public-info-viewer, as upstream's bootstrap policy: the
    self reviews' creates and GETs of the discovery and public-info paths requested here."""
    bare = path.split("?", 1)[0]
    if method == "POST":
        return bare.rsplit("/", 1)[-1] in SELF_REVIEWS
    return method == "GET" and (bare in DISCOVERY or bare in PUBLIC)


async def _send(served: Served, method: str, path: str, **kw: Any) -> int:
    before = served.registry.store.revision
    body: Any = {} if method in ("POST", "PUT", "PATCH") else None
    given = kw.pop("headers", [])
    headers = list(given.items()) if isinstance(given, dict) else list(given)
    if method == "PATCH":
        headers.append(("Content-Type", "application/merge-patch+json"))
    status, answer = await asyncio.wait_for(call(served.app, method, path, body=body, headers=headers, **kw), 30)
    if status >= 400:
        assert served.registry.store.revision == before, f"{method} {path} was refused ({status}) but wrote"
    assert status < 500, f"{method} {path}: {status} {answer}"
    return status


async def test_unauthenticated_reaches_public_info_only(served: Served) -> None:
    for method, path, what in _requests(served.registry):
        status = await _send(served, method, path)
        bare = path.split("?", 1)[0]
        if method == "GET" and bare in PUBLIC:
            assert status == 200, what
        else:
            assert status == 403, f"{what}: anonymous got {status}"
        assert await _send(served, method, path, token="not-a-token") == 401, what


async def test_service_account_without_bindings(served: Served) -> None:
    passed = 0
    for method, path, what in _requests(served.registry):
        status = await _send(served, method, path, token=served.sa_token)
        if _allowed_for_sa(method, path):  # past authorization: the handler's answer (2xx, or bad input)
            assert status != 403, f"{what}: the ServiceAccount was refused what every user may do"
            passed += status < 400
        else:
            assert status == 403, f"{what}: the ServiceAccount got {status}"
    # empty bodies: a SelfSubjectReview is answered, a SSAR is a 422 and a SSRR a 400 (no namespace)
    assert passed == len(DISCOVERY) + len(PUBLIC) + 1


NAMES = st.text(st.characters(min_codepoint=33, max_codepoint=126, exclude_characters="/?#%"), min_size=1, max_size=12)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(
    data=st.data(),
    name=NAMES,
    namespace=NAMES,
    selector=st.sampled_from(["", "?fieldSelector=metadata.name%3Dx", "?labelSelector=a%20in%20(", "?watch=1"]),
    impersonate=st.lists(
        st.tuples(
            st.sampled_from(["Impersonate-User", "Impersonate-Group", "Impersonate-Uid", "Impersonate-Extra-Scopes"]),
            st.sampled_from(["system:admin", "system:serviceaccount:kube-system:default", "system:masters", "x"]),
        ),
        max_size=3,
    ),
)
def test_generated_requests_as_the_service_account(
    served_sync: tuple[Served, asyncio.AbstractEventLoop],
    data: st.DataObject,
    name: str,
    namespace: str,
    selector: str,
    impersonate: list[tuple[str, str]],
) -> None:
    """Random names, namespaces, selectors and impersonation headers: the ServiceAccount never gets past
    authorization with a write, nor may it impersonate anyone (no impersonate grant)."""
    served, loop = served_sync
    r = data.draw(st.sampled_from(list(served.registry.table)))
    method = data.draw(st.sampled_from(["GET", "POST", "PUT", "PATCH", "DELETE"]))
    path = r.rest_path(namespace if r.namespaced else None, name if method != "POST" else "") + selector
    status = loop.run_until_complete(_send(served, method, path, token=served.sa_token, headers=impersonate))
    if impersonate:
        assert status in (400, 403), (method, path, impersonate, status)
    elif not (method == "POST" and r.plural in SELF_REVIEWS):
        assert status in (400, 403), (method, path, status)


@pytest.fixture(scope="module")
def served_sync() -> Iterator[tuple[Served, asyncio.AbstractEventLoop]]:
    """One server for every generated example (hypothesis drives a sync test: the loop is this fixture's)."""
    loop = asyncio.new_event_loop()
    started = loop.run_until_complete(_start())
    yield started, loop
    loop.run_until_complete(_stop(started))
    loop.close()
