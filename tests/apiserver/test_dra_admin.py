"""DRAAdminAccess's namespace rule through the in-process API server.

Pins upstream v1.37 ``pkg/registry/resource/utils.go`` as the ResourceClaim and ResourceClaimTemplate strategies
call it: ``AuthorizedForAdmin`` on create (the first ``exactly.adminAccess: true`` request, path
``spec.devices.requests[i].adminAccess`` for both kinds, the namespace label ``resource.kubernetes.io/admin-access:
"true"``, the Forbidden message, its errors before the kind's validation errors), none on a main-resource update
(the spec is immutable), and ``AuthorizedForAdminStatus`` on a claim's ``/status`` (an allocation result with
``adminAccess`` needs the label unless the stored status already had one).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from kubeplane.client.clock import FakeClock
from kubeplane.client.errors import InvalidError
from kubeplane.client.local import LocalClient

Obj = dict[str, Any]
T0 = 1_800_000_000.0
LABEL = "resource.kubernetes.io/admin-access"
FORBIDDEN = (
    "Forbidden: admin access to devices requires the `resource.kubernetes.io/admin-access: true` label on the "
    "containing namespace"
)


@pytest.fixture
async def client() -> AsyncIterator[LocalClient]:
    clock = FakeClock(T0)
    c = await LocalClient.in_memory(clock=clock, now=clock.now)
    namespaces = c.resource("namespaces")
    await c.create(namespaces, {"metadata": {"name": "admin", "labels": {LABEL: "true"}}})
    await c.create(namespaces, {"metadata": {"name": "other", "labels": {LABEL: "yes"}}})
    yield c
    await c.close()


def requests(*admin: bool | None) -> list[Obj]:
    out: list[Obj] = []
    for i, flag in enumerate(admin):
        exactly: Obj = {"deviceClassName": "gpu.example.com"}
        if flag is not None:
            exactly["adminAccess"] = flag
        out.append({"name": f"r{i}", "exactly": exactly})
    return out


def claim(namespace: str, *admin: bool | None, name: str = "c") -> Obj:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"devices": {"requests": requests(*admin)}},
    }


def template(namespace: str, *admin: bool | None) -> Obj:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "t", "namespace": namespace},
        "spec": {"spec": {"devices": {"requests": requests(*admin)}}},
    }


def causes(err: InvalidError) -> list[tuple[str, str, str]]:
    details = err.status["details"]
    return [(c["reason"], c["field"], c["message"]) for c in details["causes"]]


@pytest.mark.parametrize(
    ("namespace", "admin", "index"),
    [
        ("default", (True,), 0),
        ("other", (True,), 0),  # the label's value must be exactly "true"
        ("default", (False, True, True), 1),  # the first request asking for it names the path
    ],
    ids=["AuthorizedForAdmin-unlabelled", "AuthorizedForAdmin-label-not-true", "AuthorizedForAdmin-first-request"],
)
@pytest.mark.parametrize("kind", ["resourceclaims", "resourceclaimtemplates"])
async def test_admin_access_outside_an_admin_namespace_is_forbidden(
    client: LocalClient, kind: str, namespace: str, admin: tuple[bool, ...], index: int
) -> None:
    res = client.resource(kind)
    obj = claim(namespace, *admin) if kind == "resourceclaims" else template(namespace, *admin)
    with pytest.raises(InvalidError) as info:
        await client.create(res, obj, namespace=namespace)
    kind_name = "ResourceClaim" if kind == "resourceclaims" else "ResourceClaimTemplate"
    path = f"spec.devices.requests[{index}].adminAccess"  # the template's too: upstream passes its inner requests
    assert (
        info.value.message == f'{kind_name}.resource.k8s.io "{obj["metadata"]["name"]}" is invalid: {path}: {FORBIDDEN}'
    )
    assert causes(info.value) == [("FieldValueForbidden", path, FORBIDDEN)]
    assert (await client.list(res, namespace=namespace))["items"] == []


@pytest.mark.parametrize("kind", ["resourceclaims", "resourceclaimtemplates"])
async def test_admin_access_in_an_admin_namespace_is_admitted(client: LocalClient, kind: str) -> None:
    res = client.resource(kind)
    obj = claim("admin", True) if kind == "resourceclaims" else template("admin", True)
    created = await client.create(res, obj, namespace="admin")
    assert created["metadata"]["namespace"] == "admin"


@pytest.mark.parametrize("admin", [(None,), (False,)], ids=["AuthorizedForAdmin-unset", "AuthorizedForAdmin-false"])
async def test_no_admin_access_needs_no_label(client: LocalClient, admin: tuple[bool | None, ...]) -> None:
    await client.create(client.resource("resourceclaims"), claim("default", *admin), namespace="default")


async def test_admin_errors_come_before_the_validation_errors(client: LocalClient) -> None:
    bad = template("default", True)
    bad["spec"]["spec"]["devices"]["requests"][0]["name"] = "Bad_Name"
    with pytest.raises(InvalidError) as info:
        await client.create(client.resource("resourceclaimtemplates"), bad, namespace="default")
    found = causes(info.value)
    assert found[0] == ("FieldValueForbidden", "spec.devices.requests[0].adminAccess", FORBIDDEN)
    assert found[1][1] == "spec.spec.devices.requests[0].name"


async def test_update_does_not_recheck_the_namespace(client: LocalClient) -> None:
    """``AuthorizedForAdmin isn't needed here because the spec is immutable``: a claim made while the namespace
    had the label can still be updated (labels, annotations) after the label went."""
    namespaces, claims = client.resource("namespaces"), client.resource("resourceclaims")
    created = await client.create(claims, claim("admin", True), namespace="admin")
    ns = await client.get(namespaces, "admin")
    ns["metadata"]["labels"] = {}
    await client.update(namespaces, ns)
    created["metadata"]["labels"] = {"touched": "yes"}
    updated = await client.update(claims, created, namespace="admin")
    assert updated["metadata"]["labels"] == {"touched": "yes"}


def allocation(admin: bool | None) -> Obj:
    result: Obj = {"request": "r0", "driver": "gpu.example.com", "pool": "node01", "device": "gpu-0"}
    if admin is not None:
        result["adminAccess"] = admin
    return {"devices": {"results": [result]}}


async def test_status_granting_admin_access_needs_the_label(client: LocalClient) -> None:
    """``AuthorizedForAdminStatus``: a status with an admin-access result is refused once the namespace lost the
    label, unless the stored status already had one (an allocation is immutable once set)."""
    namespaces, claims = client.resource("namespaces"), client.resource("resourceclaims")
    created = await client.create(claims, claim("admin", True), namespace="admin")
    await client.update(namespaces, await _with_labels(client, "admin", {LABEL: "false"}))
    created["status"] = {"allocation": allocation(True)}
    with pytest.raises(InvalidError) as info:
        await client.update(claims, created, namespace="admin", subresource="status")
    path = "status.allocation.devices.results[0].adminAccess"
    assert causes(info.value) == [("FieldValueForbidden", path, FORBIDDEN)]
    created["status"] = {"allocation": allocation(None)}  # no admin access: no label needed
    await client.update(claims, created, namespace="admin", subresource="status")

    await client.update(namespaces, await _with_labels(client, "admin", {LABEL: "true"}))
    second = await client.create(claims, claim("admin", True, name="granted"), namespace="admin")
    second["status"] = {"allocation": allocation(True)}
    granted = await client.update(claims, second, namespace="admin", subresource="status")
    await client.update(namespaces, await _with_labels(client, "admin", {}))
    granted["status"]["reservedFor"] = [{"resource": "pods", "name": "p", "uid": "u"}]
    kept = await client.update(claims, granted, namespace="admin", subresource="status")  # granted before: fine
    assert kept["status"]["allocation"]["devices"]["results"][0]["adminAccess"] is True


async def _with_labels(client: LocalClient, name: str, labels: dict[str, str]) -> Obj:
    ns = await client.get(client.resource("namespaces"), name)
    ns["metadata"]["labels"] = labels
    return ns
