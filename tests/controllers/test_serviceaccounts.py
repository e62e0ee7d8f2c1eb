"""The ServiceAccounts controller and the root CA publisher over the in-process API server.

Pins upstream v1.37 ``pkg/controller/serviceaccount/serviceaccounts_controller.go`` (``syncNamespace``: a
``default`` account in every Active namespace, recreated when deleted, none in a terminating namespace) and
``pkg/controller/certificates/rootcacertpublisher/publisher.go`` (``syncNamespace``: ``kube-root-ca.crt`` with
``ca.crt`` and the description annotation, created, restored after an edit, recreated after a delete).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from kubeplane.client.errors import NotFoundError
from kubeplane.controllers.manager import available_controllers
from kubeplane.controllers.rootcacertpublisher import (
    CONFIGMAP_NAME,
    DESCRIPTION,
    DESCRIPTION_ANNOTATION,
    RootCACertPublisher,
)
from kubeplane.controllers.serviceaccounts import ServiceAccountsController
from tests.controllers import harness

CA = "-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n"
BOOTSTRAP = ("default", "kube-system", "kube-public", "kube-node-lease")


def test_both_controllers_are_registered_under_upstreams_names() -> None:
    controllers = available_controllers()
    assert controllers["serviceaccount"] is ServiceAccountsController
    assert controllers["root-ca-cert-publisher"] is RootCACertPublisher


async def _get(env: harness.Env[Any], plural: str, namespace: str, name: str) -> Any:
    try:
        return await env.client.get(env.res(plural), name, namespace=namespace)
    except NotFoundError:
        return None


def _getter(env: harness.Env[Any], plural: str, namespace: str, name: str) -> Callable[[], Awaitable[Any]]:
    return lambda: _get(env, plural, namespace, name)


async def test_default_service_account_in_every_namespace_and_recreated() -> None:
    async with harness.running(ServiceAccountsController) as env:
        for ns in BOOTSTRAP:
            await harness.eventually(_getter(env, "serviceaccounts", ns, "default"), f"default SA in {ns}")
        await env.client.create(env.res("namespaces"), {"metadata": {"name": "team-a"}})
        first = await harness.eventually(lambda: _get(env, "serviceaccounts", "team-a", "default"), "SA in team-a")
        assert first["metadata"]["name"] == "default"
        assert "automountServiceAccountToken" not in first  # upstream creates the bare account
        await env.client.delete(env.res("serviceaccounts"), "default", namespace="team-a")

        async def recreated() -> Any:
            sa = await _get(env, "serviceaccounts", "team-a", "default")
            return sa if sa is not None and sa["metadata"]["uid"] != first["metadata"]["uid"] else None

        await harness.eventually(recreated, "default SA recreated after deletion")


async def test_no_service_account_in_a_terminating_namespace() -> None:
    """syncNamespace returns early unless the namespace is Active; a finalizer keeps it Terminating."""

    async def setup(env: harness.Env[Any]) -> None:
        await env.client.create(
            env.res("namespaces"), {"metadata": {"name": "going"}, "spec": {"finalizers": ["example.com/hold"]}}
        )
        await env.client.delete(env.res("namespaces"), "going")

    async with harness.running(ServiceAccountsController, setup=setup) as env:
        ns = await env.client.get(env.res("namespaces"), "going")
        assert ns["status"]["phase"] == "Terminating"
        await harness.eventually(lambda: _get(env, "serviceaccounts", "default", "default"), "default SA")
        await harness.settle()
        assert await _get(env, "serviceaccounts", "going", "default") is None


async def test_root_ca_configmap_published_restored_and_recreated() -> None:
    options = {"root-ca-cert-publisher": {"rootCA": CA}}
    async with harness.running(RootCACertPublisher, options=options) as env:
        for ns in BOOTSTRAP:
            await harness.eventually(_getter(env, "configmaps", ns, CONFIGMAP_NAME), f"CA map in {ns}")
        await env.client.create(env.res("namespaces"), {"metadata": {"name": "team-b"}})
        cm = await harness.eventually(lambda: _get(env, "configmaps", "team-b", CONFIGMAP_NAME), "CA map in team-b")
        assert cm["data"] == {"ca.crt": CA}
        assert cm["metadata"]["annotations"] == {DESCRIPTION_ANNOTATION: DESCRIPTION}

        edited = {**cm, "data": {"ca.crt": "tampered"}}
        edited["metadata"] = {**cm["metadata"], "annotations": {}}
        await env.client.update(env.res("configmaps"), edited, namespace="team-b")

        async def restored() -> bool:
            now = await _get(env, "configmaps", "team-b", CONFIGMAP_NAME)
            return bool(
                now is not None
                and now["data"] == {"ca.crt": CA}
                and now["metadata"].get("annotations", {}).get(DESCRIPTION_ANNOTATION) == DESCRIPTION
            )

        await harness.eventually(restored, "CA map restored after an edit")
        await env.client.delete(env.res("configmaps"), CONFIGMAP_NAME, namespace="team-b")

        async def recreated() -> Any:
            now = await _get(env, "configmaps", "team-b", CONFIGMAP_NAME)
            return now if now is not None and now["metadata"]["uid"] != cm["metadata"]["uid"] else None

        assert (await harness.eventually(recreated, "CA map recreated"))["data"] == {"ca.crt": CA}


async def test_root_ca_falls_back_to_the_clients_ca_data() -> None:
    """Upstream uses the client config's CAData without --root-ca-file; the in-process client has none: empty."""
    async with harness.running(RootCACertPublisher) as env:
        cm = await harness.eventually(lambda: _get(env, "configmaps", "default", CONFIGMAP_NAME), "CA map")
        assert cm["data"] == {"ca.crt": ""}
