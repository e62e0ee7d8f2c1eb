"""ControllerRevision's kind-specific parts: upstream ``pkg/apis/apps/validation`` ValidateControllerRevisionCreate /
ValidateControllerRevisionUpdate (``TestValidateControllerRevision``, ``TestValidateControllerRevisionUpdate``)
through the API server, and ``printControllerRevision``'s cells."""

from __future__ import annotations

from typing import Any

import pytest

from kubeplane.api.meta import format_time
from kubeplane.apiserver.printers import row_for
from kubeplane.client.errors import InvalidError
from kubeplane.client.local import LocalClient

NOW = 1_700_000_000.0


def _revision(**body: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": {"name": "web-abc"},
        **body,
    }


async def test_create_requires_data_and_a_nonnegative_revision() -> None:
    """TestValidateControllerRevision: missing data ("data is mandatory"), negative revision."""
    client = await LocalClient.in_memory()
    try:
        res = client.resource("controllerrevisions")
        with pytest.raises(InvalidError) as err:
            await client.create(res, _revision(revision=1), namespace="default")
        assert err.value.code == 422
        assert "data: Required value: data is mandatory" in err.value.message
        with pytest.raises(InvalidError) as err:
            await client.create(res, _revision(data={"a": 1}, revision=-1), namespace="default")
        assert "revision: Invalid value: -1: must be greater than or equal to 0" in err.value.message
        assert (await client.list(res, namespace="default"))["items"] == []
        created = await client.create(res, _revision(data={"a": 1}, revision=0), namespace="default")
        assert created["revision"] == 0
    finally:
        await client.close()


async def test_update_keeps_data_immutable_and_may_change_revision() -> None:
    """TestValidateControllerRevisionUpdate: data is immutable; revision (what a rollback bumps) may change."""
    client = await LocalClient.in_memory()
    try:
        res = client.resource("controllerrevisions")
        created = await client.create(res, _revision(data={"a": 1}, revision=1), namespace="default")
        created["revision"] = 3
        bumped = await client.update(res, created, namespace="default")
        assert bumped["revision"] == 3
        bumped["data"] = {"a": 2}
        with pytest.raises(InvalidError) as err:
            await client.update(res, bumped, namespace="default")
        assert "data: Invalid value:" in err.value.message
        assert "field is immutable" in err.value.message
        stored = await client.get(res, "web-abc", namespace="default")
        assert stored["data"] == {"a": 1}
    finally:
        await client.close()


def test_controller_revision_row() -> None:
    """printControllerRevision: the controller as ``<kind>.<group>/<name>`` (lower-cased), else <none>."""
    ref = {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "uid": "u", "controller": True}
    obj: dict[str, Any] = {
        "metadata": {"name": "web-abc", "creationTimestamp": format_time(NOW - 90), "ownerReferences": [ref]},
        "revision": 2,
    }
    assert row_for(("apps", "ControllerRevision"), obj, now=NOW) == ["web-abc", "statefulset.apps/web", 2, "90s"]
    core = {**ref, "apiVersion": "v1", "kind": "Pod"}
    obj["metadata"]["ownerReferences"] = [core]
    assert row_for(("apps", "ControllerRevision"), obj, now=NOW)[1] == "pod/web"
    obj["metadata"]["ownerReferences"] = [{**ref, "controller": False}]
    assert row_for(("apps", "ControllerRevision"), obj, now=NOW)[1] == "<none>"
