"""The History API against the in-process API server (upstream ``history/controller_history_test.go``
TestRealHistory_CreateControllerRevision, TestRealHistory_UpdateControllerRevision,
TestRealHistory_AdoptControllerRevision, TestRealHistory_ReleaseControllerRevision)."""

from __future__ import annotations

from typing import Any

import pytest

from kubeplane.api import labels as apilabels
from kubeplane.client.local import LocalClient
from kubeplane.controllers.history import (
    History,
    controller_revision_name,
    hash_controller_revision,
    new_controller_revision,
)

NS = "default"


class _Lister:
    """A lister over the API (what the informer's lister returns, read fresh)."""

    def __init__(self, client: LocalClient) -> None:
        self.client = client
        self.items: list[dict[str, Any]] = []

    def list(self, namespace: str) -> list[dict[str, Any]]:
        return [i for i in self.items if i["metadata"]["namespace"] == namespace]

    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        return next((i for i in self.list(namespace) if i["metadata"]["name"] == name), None)


async def _setup() -> tuple[LocalClient, History, _Lister, dict[str, Any]]:
    client = await LocalClient.in_memory()
    lister = _Lister(client)
    parent = await client.create(
        client.resource("statefulsets"),
        {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": {"name": "foo"},
            "spec": {
                "serviceName": "foo",
                "selector": {"matchLabels": {"app": "foo"}},
                "template": {
                    "metadata": {"labels": {"app": "foo"}},
                    "spec": {"containers": [{"name": "c", "image": "i"}]},
                },
            },
        },
        namespace=NS,
    )
    return client, History(client, lister), lister, parent


def _revision(parent: dict[str, Any], data: dict[str, Any], number: int, count: int) -> dict[str, Any]:
    return new_controller_revision(
        parent,
        api_version="apps/v1",
        kind="StatefulSet",
        template_labels={"app": "foo"},
        data=data,
        revision=number,
        collision_count=count,
    )


async def test_create_controller_revision_handles_collisions() -> None:
    """CreateControllerRevision: a new name is created; the same data under the name returns the existing
    revision; different data under the name bumps the collision count and takes the next name."""
    client, history, _lister, parent = await _setup()
    try:
        first, count = await history.create_controller_revision(parent, _revision(parent, {"a": 1}, 1, 0), 0)
        assert count == 0
        assert first["metadata"]["name"] == controller_revision_name("foo", hash_controller_revision(first, 0))
        again, count = await history.create_controller_revision(parent, _revision(parent, {"a": 1}, 1, 0), 0)
        assert (again["metadata"]["uid"], count) == (first["metadata"]["uid"], 0)
        # Squat the name the next revision wants, with other data.
        wanted = _revision(parent, {"a": 2}, 2, 0)
        squatter = {**_revision(parent, {"other": True}, 9, 0), "metadata": {"name": wanted["metadata"]["name"]}}
        await client.create(client.resource("controllerrevisions"), squatter, namespace=NS)
        created, count = await history.create_controller_revision(parent, wanted, 0)
        assert count == 1
        assert created["metadata"]["name"] == controller_revision_name("foo", hash_controller_revision(wanted, 1))
        assert created["data"] == {"a": 2}
    finally:
        await client.close()


async def test_update_adopt_release_and_list() -> None:
    """UpdateControllerRevision moves the number; ListControllerRevisions keeps ours and orphans;
    Adopt refuses an owned revision; Release drops our reference (and tolerates a vanished revision)."""
    client, history, lister, parent = await _setup()
    try:
        owned, _ = await history.create_controller_revision(parent, _revision(parent, {"a": 1}, 1, 0), 0)
        moved = await history.update_controller_revision(owned, 4)
        assert moved["revision"] == 4
        orphan_body = _revision(parent, {"b": 1}, 2, 0)
        orphan_body["metadata"]["ownerReferences"] = []
        orphan = await client.create(client.resource("controllerrevisions"), orphan_body, namespace=NS)
        foreign_body = _revision({"metadata": {"name": "bar", "uid": "other"}}, {"c": 1}, 1, 0)
        foreign = await client.create(client.resource("controllerrevisions"), foreign_body, namespace=NS)
        lister.items = [moved, orphan, foreign]
        listed = history.list_controller_revisions(
            parent, apilabels.label_selector_as_selector({"matchLabels": {"app": "foo"}})
        )
        assert sorted(r["metadata"]["name"] for r in listed) == sorted(
            [moved["metadata"]["name"], orphan["metadata"]["name"]]
        )
        with pytest.raises(RuntimeError, match="attempt to adopt revision owned by"):
            await history.adopt_controller_revision(parent, moved, api_version="apps/v1", kind="StatefulSet")
        adopted = await history.adopt_controller_revision(parent, orphan, api_version="apps/v1", kind="StatefulSet")
        assert [r["uid"] for r in adopted["metadata"]["ownerReferences"]] == [parent["metadata"]["uid"]]
        released = await history.release_controller_revision(parent, adopted)
        assert released is not None
        assert not released["metadata"].get("ownerReferences")
        await history.delete_controller_revision(released)
        assert await history.release_controller_revision(parent, released) is None
    finally:
        await client.close()
