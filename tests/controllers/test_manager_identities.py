"""The controller manager's identities: upstream's ``--use-service-account-credentials``.

Pins ``cmd/kube-controller-manager``: each controller's client comes from ``ClientBuilder.ClientOrDie(<name>)``
(the names of ``controller_policy.go``'s ``system:controller:<name>`` roles, e.g. ``deployment-controller``,
``replicaset-controller``; node-lifecycle and taint-eviction share ``node-controller``), the accounts are got or
created in ``kube-system`` (``SAControllerClientBuilder``), the shared informers read with the root client
(``system:kube-controller-manager``), and over HTTP each account's token comes from a TokenRequest refreshed when
less than 20% of its hour is left (``clientbuilder.DynamicControllerClientBuilder``).
"""

from __future__ import annotations

import asyncio
from typing import Any

from kubeplane.api.meta import format_time
from kubeplane.api.resources import default_table
from kubeplane.apiserver.tokens import UserInfo, service_account_user
from kubeplane.client.clock import FakeClock
from kubeplane.client.interface import Client, Obj
from kubeplane.client.local import LocalClient
from kubeplane.client.resolve import resolve_resource
from kubeplane.controllers.credentials import (
    CONTROLLER_SERVICE_ACCOUNTS,
    MANAGER_USER,
    TokenClientBuilder,
    local_client_for,
    service_account_of,
)
from kubeplane.controllers.manager import ControllerManager, available_controllers
from tests.controllers.harness import eventually
from tests.kubelet.identity_recording import record_requesters


def test_every_controller_has_its_upstream_account_or_the_root_identity() -> None:
    assert set(CONTROLLER_SERVICE_ACCOUNTS) <= set(available_controllers()) | {"clusterrole-aggregation"}
    assert service_account_of("deployment") == "deployment-controller"
    assert service_account_of("daemonset") == "daemon-set-controller"
    assert service_account_of("garbagecollector") == "generic-garbage-collector"
    assert service_account_of("persistentvolume-binder") == "persistent-volume-binder"
    assert service_account_of("node-lifecycle") == service_account_of("taint-eviction-controller") == "node-controller"
    assert service_account_of("not-upstream") is None


async def test_client_for_gives_each_controller_its_client_and_the_informers_stay_shared() -> None:
    base = await LocalClient.in_memory()
    asked: list[str] = []
    own: dict[str, Client] = {}

    def client_for(name: str) -> Client:
        asked.append(name)
        own[name] = base.as_user(UserInfo(f"user-{name}"))
        return own[name]

    manager = ControllerManager(base, controllers=["replicaset", "deployment"], client_for=client_for)
    assert asked == ["replicaset", "deployment"]
    for name, controller in manager.controllers.items():
        assert controller.client is own[name]
        assert controller.ctx.informers is manager.informers  # one watch per resource for the whole manager
    assert manager.ctx.client is base  # the informers' client: the manager's own
    await manager.stop()
    await base.close()


async def test_in_process_controllers_write_as_their_service_accounts() -> None:
    base = await LocalClient.in_memory()
    arrived = record_requesters(base.registry)
    manager_client = base.as_user(UserInfo(MANAGER_USER, groups=("system:authenticated",)))
    names = ["deployment", "replicaset"]
    client_for = await local_client_for(manager_client, names, user_of=service_account_user)
    accounts = (await base.list(base.resource("serviceaccounts"), namespace="kube-system"))["items"]
    by_name = {a["metadata"]["name"]: a for a in accounts}
    assert {"deployment-controller", "replicaset-controller"} <= set(by_name)
    rs_client: Any = client_for("replicaset")
    assert rs_client.user == UserInfo(
        "system:serviceaccount:kube-system:replicaset-controller",
        uid=by_name["replicaset-controller"]["metadata"]["uid"],
        groups=("system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"),
    )
    assert client_for("not-upstream") is manager_client
    again = await local_client_for(manager_client, names, user_of=service_account_user)  # get-or-create
    assert again("replicaset").user == rs_client.user  # type: ignore[attr-defined]

    manager = ControllerManager(manager_client, controllers=names, client_for=client_for)
    await manager.start()
    run = asyncio.create_task(manager.run())
    try:
        deployment: Obj = {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "c", "image": "nginx"}]},
                },
            },
        }
        await base.create(base.resource("deployments"), deployment, namespace="default")

        async def pod_created() -> bool:
            return any(p == "pods" and s == "" for p, s, _u in arrived)

        await eventually(pod_created, "the ReplicaSet's pod", timeout=20, interval=0.02)
    finally:
        run.cancel()
        await asyncio.gather(run, return_exceptions=True)
        await manager.stop()
    created = {(p, u) for p, s, u in arrived if s == ""}
    assert ("replicasets", "system:serviceaccount:kube-system:deployment-controller") in created
    assert ("pods", "system:serviceaccount:kube-system:replicaset-controller") in created
    assert ("serviceaccounts", MANAGER_USER) in created  # the accounts: the manager's own identity
    await base.close()


class FakeTokenAPI:
    """The manager's HTTP client as the builder uses it: create (accounts, TokenRequests), get, views."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.calls: list[tuple[str, str, str]] = []
        self.views: list[Any] = []

    def resource(self, name: str) -> Any:
        return resolve_resource(default_table(), name)

    async def create(self, resource: Any, obj: Obj, **kw: Any) -> Obj:
        self.calls.append(("create", resource.plural, kw.get("subresource") or ""))
        if kw.get("subresource") == "token":
            n = sum(1 for c in self.calls if c[2] == "token")
            expiry = format_time(self.clock.now() + obj["spec"]["expirationSeconds"])
            return {"status": {"token": f"token-{kw['name']}-{n}", "expirationTimestamp": expiry}}
        return obj

    def with_token_source(self, source: Any) -> Any:
        self.views.append(source)
        return TokenView(self, source)


class TokenView:
    """A view of the fake API sending ``source``'s token (what the controllers are built with)."""

    def __init__(self, api: FakeTokenAPI, source: Any) -> None:
        self.api, self.source = api, source

    def resource(self, name: str) -> Any:
        return self.api.resource(name)


async def test_tokens_are_requested_per_account_and_refreshed_before_expiry() -> None:
    clock = FakeClock()
    api = FakeTokenAPI(clock)
    builder = TokenClientBuilder(api, clock=clock)
    manager_own: Any = builder.client_for("not-upstream")
    assert manager_own is api  # no upstream account: the manager's own identity
    view = builder.client_for("deployment")
    assert builder.client_for("deployment") is view
    assert builder.client_for("node-lifecycle") is not builder.client_for("taint-eviction-controller")
    source = builder.token_source("deployment-controller")
    assert api.calls == []  # nothing until the controller's first call
    assert await source() == "token-deployment-controller-1"
    assert api.calls == [("create", "serviceaccounts", ""), ("create", "serviceaccounts", "token")]
    await clock.advance(3600 * 0.8 - 1)
    assert await source() == "token-deployment-controller-1"  # still more than 20% of its hour left
    await clock.advance(2)
    assert await source() == "token-deployment-controller-2"  # refreshed 720 s before expiry
    assert [c[2] for c in api.calls].count("") == 1  # the account is created once


async def test_prepare_gets_every_account_and_token_before_the_controllers_start() -> None:
    """Upstream's ``ClientOrDie`` gets the account and waits for its token before the controller is started."""
    clock = FakeClock()
    api = FakeTokenAPI(clock)
    builder = TokenClientBuilder(api, clock=clock)
    base = await LocalClient.in_memory()
    seen: list[list[str]] = []

    async def prepare(names: Any) -> None:
        seen.append(list(names))
        await builder.prepare(names)

    manager = ControllerManager(
        base,
        controllers=["replicaset", "pod-garbage-collector", "node-lifecycle"],
        client_for=builder.client_for,
        prepare=prepare,
    )
    assert api.calls == []
    await manager.start()
    assert seen == [list(manager.controllers)]
    tokens = sorted(c for c in api.calls if c[2] == "token")
    assert len(tokens) == 3  # replicaset-controller, pod-garbage-collector, node-controller: one token each
    await manager.start()  # idempotent: nothing asked again
    assert len([c for c in api.calls if c[2] == "token"]) == 3
    await manager.stop()
    await base.close()
