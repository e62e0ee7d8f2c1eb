"""scheduling.k8s.io Workload and PodGroup at v1beta1 and v1alpha3 over one storage.

Upstream: kube-apiserver serves a resource at each enabled version and stores it in one (v1.37: v1alpha3 for
workloads and podgroups, ``emulatedStorageVersion``); every read, list and watch answers in the requested
version's ``apiVersion`` and every write at either version changes the same object (the registry's generic
``Store`` with the scheme's conversions, pkg/apis/scheduling/{v1alpha3,v1beta1}). Each test fails on the old
table, which served these kinds at v1alpha3 only (404 at v1beta1).
"""

from __future__ import annotations

import json
from typing import Any

from .conftest import Server

NS = "default"
A3 = "/apis/scheduling.k8s.io/v1alpha3/namespaces/default"
B1 = "/apis/scheduling.k8s.io/v1beta1/namespaces/default"


def _pod_group(name: str, version: str, min_count: int = 2) -> dict[str, Any]:
    return {
        "apiVersion": f"scheduling.k8s.io/{version}",
        "kind": "PodGroup",
        "metadata": {"name": name},
        "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}},
    }


def _json(server: Server, method: str, path: str, body: Any = None) -> tuple[int, dict[str, Any]]:
    status, raw = server.send(method, path, body)
    return status, json.loads(raw)


def _patch(server: Server, path: str, body: Any, content_type: str) -> tuple[int, dict[str, Any]]:
    conn = server.connection()
    headers = {"Authorization": f"Bearer {server.token}", "Content-Type": content_type}
    conn.request("PATCH", path, body=json.dumps(body) if not isinstance(body, str) else body, headers=headers)
    response = conn.getresponse()
    raw = response.read()
    conn.close()
    return response.status, json.loads(raw)


def _watch(server: Server, path: str) -> list[dict[str, Any]]:
    """The events of a watch the server ends after one second (a bounded wait, nothing is timed)."""
    status, raw = server.send("GET", path)
    assert status == 200, raw
    return [json.loads(line) for line in raw.decode().splitlines() if line.strip()]


def test_created_at_v1alpha3_reads_lists_and_watches_at_v1beta1_and_back(server: Server) -> None:
    status, created = _json(server, "POST", f"{A3}/podgroups", _pod_group("conv-a", "v1alpha3"))
    assert status == 201, created
    assert created["apiVersion"] == "scheduling.k8s.io/v1alpha3"
    rv = created["metadata"]["resourceVersion"]

    status, beta = _json(server, "GET", f"{B1}/podgroups/conv-a")
    assert status == 200, beta
    assert beta["apiVersion"] == "scheduling.k8s.io/v1beta1"
    assert beta["kind"] == "PodGroup"
    assert beta["metadata"]["uid"] == created["metadata"]["uid"]
    assert beta["metadata"]["resourceVersion"] == rv
    assert beta["spec"] == created["spec"]

    status, listed = _json(server, "GET", f"{B1}/podgroups")
    assert listed["apiVersion"] == "scheduling.k8s.io/v1beta1"
    assert listed["kind"] == "PodGroupList"
    mine = [i for i in listed["items"] if i["metadata"]["name"] == "conv-a"]
    assert [i["apiVersion"] for i in mine] == ["scheduling.k8s.io/v1beta1"]

    # written at v1beta1, read at v1alpha3: one object
    beta["metadata"]["labels"] = {"written": "v1beta1"}
    status, updated = _json(server, "PUT", f"{B1}/podgroups/conv-a", beta)
    assert status == 200, updated
    assert updated["apiVersion"] == "scheduling.k8s.io/v1beta1"
    status, alpha = _json(server, "GET", f"{A3}/podgroups/conv-a")
    assert alpha["apiVersion"] == "scheduling.k8s.io/v1alpha3"
    assert alpha["metadata"]["labels"] == {"written": "v1beta1"}
    assert alpha["metadata"]["resourceVersion"] == updated["metadata"]["resourceVersion"]

    # watches from the create's resourceVersion see the update in their own version, with bookmarks allowed
    query = (
        f"?watch=1&resourceVersion={rv}&allowWatchBookmarks=true&timeoutSeconds=1&fieldSelector=metadata.name%3Dconv-a"
    )
    for base, version in ((B1, "v1beta1"), (A3, "v1alpha3")):
        events = [e for e in _watch(server, f"{base}/podgroups{query}") if e["type"] != "BOOKMARK"]
        assert [e["type"] for e in events] == ["MODIFIED"], events
        obj = events[0]["object"]
        assert obj["apiVersion"] == f"scheduling.k8s.io/{version}"
        assert obj["metadata"]["labels"] == {"written": "v1beta1"}
        assert obj["metadata"]["resourceVersion"] == updated["metadata"]["resourceVersion"]


def test_a_v1beta1_object_is_the_v1alpha3_one_and_a_wrong_body_version_is_refused(server: Server) -> None:
    status, created = _json(server, "POST", f"{B1}/podgroups", _pod_group("conv-b", "v1beta1"))
    assert status == 201, created
    assert created["apiVersion"] == "scheduling.k8s.io/v1beta1"
    status, again = _json(server, "POST", f"{A3}/podgroups", _pod_group("conv-b", "v1alpha3"))
    assert status == 409, again  # the same name in the same storage
    # upstream's message for a body of another version than the URL's (the registry's checkBody)
    status, wrong = _json(server, "POST", f"{B1}/podgroups", _pod_group("conv-c", "v1alpha3"))
    assert status == 400
    assert wrong["message"] == (
        "the API version in the data (scheduling.k8s.io/v1alpha3) does not match the expected API version "
        "(scheduling.k8s.io/v1beta1)"
    )
    status, _ = _json(server, "GET", f"{A3}/podgroups/conv-c")
    assert status == 404


def test_patches_of_each_type_at_both_versions(server: Server) -> None:
    status, _ = _json(server, "POST", f"{A3}/podgroups", _pod_group("conv-p", "v1alpha3"))
    assert status == 201
    patches = [
        (B1, "application/merge-patch+json", {"metadata": {"labels": {"merge": "b1"}}}),
        (A3, "application/strategic-merge-patch+json", {"metadata": {"labels": {"smp": "a3"}}}),
        (B1, "application/json-patch+json", [{"op": "add", "path": "/metadata/labels/json", "value": "b1"}]),
        (A3, "application/merge-patch+json", {"metadata": {"labels": {"merge2": "a3"}}}),
    ]
    for base, content_type, body in patches:
        status, patched = _patch(server, f"{base}/podgroups/conv-p", body, content_type)
        assert status == 200, patched
        assert patched["apiVersion"] == f"scheduling.k8s.io/{base.split('/')[3]}"
    status, final = _json(server, "GET", f"{B1}/podgroups/conv-p")
    assert final["metadata"]["labels"] == {"merge": "b1", "smp": "a3", "json": "b1", "merge2": "a3"}


def test_server_side_apply_at_both_versions_shares_the_managers_fields(server: Server) -> None:
    """SSA (upstream fieldmanager): one applier at v1beta1 then at v1alpha3 keeps one Apply entry (an Apply
    entry is identified without its apiVersion), now recording v1alpha3; another manager conflicts at either."""
    config = _pod_group("conv-ssa", "v1beta1", 3)
    apply = "application/apply-patch+yaml"
    status, obj = _patch(server, f"{B1}/podgroups/conv-ssa?fieldManager=alice", config, apply)
    assert status == 201, obj
    assert obj["apiVersion"] == "scheduling.k8s.io/v1beta1"
    entries = obj["metadata"]["managedFields"]
    assert [(e["manager"], e["operation"], e["apiVersion"]) for e in entries] == [
        ("alice", "Apply", "scheduling.k8s.io/v1beta1")
    ]
    config_a3 = {**_pod_group("conv-ssa", "v1alpha3", 3), "metadata": {"name": "conv-ssa", "labels": {"k": "v"}}}
    status, obj = _patch(server, f"{A3}/podgroups/conv-ssa?fieldManager=alice", config_a3, apply)
    assert status == 200, obj
    assert obj["apiVersion"] == "scheduling.k8s.io/v1alpha3"
    assert obj["metadata"]["labels"] == {"k": "v"}
    entries = obj["metadata"]["managedFields"]
    assert [(e["manager"], e["operation"], e["apiVersion"]) for e in entries] == [
        ("alice", "Apply", "scheduling.k8s.io/v1alpha3")
    ]
    assert "f:labels" in entries[0]["fieldsV1"]["f:metadata"]
    status, conflict = _patch(
        server, f"{B1}/podgroups/conv-ssa?fieldManager=bob", _pod_group("conv-ssa", "v1beta1", 5), apply
    )
    assert status == 409, conflict
    assert conflict["reason"] == "Conflict"
    assert ".spec.schedulingPolicy.gang.minCount" in conflict["message"]


def test_status_subresource_at_both_versions(server: Server) -> None:
    status, created = _json(server, "POST", f"{B1}/podgroups", _pod_group("conv-s", "v1beta1"))
    assert status == 201, created
    condition = {
        "type": "PodGroupScheduled",
        "status": "True",
        "reason": "Scheduled",
        "message": "",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    created["status"] = {"conditions": [condition]}
    created["spec"]["schedulingPolicy"]["gang"]["minCount"] = 9  # ignored by the status subresource
    status, updated = _json(server, "PUT", f"{B1}/podgroups/conv-s/status", created)
    assert status == 200, updated
    assert updated["apiVersion"] == "scheduling.k8s.io/v1beta1"
    assert updated["status"]["conditions"][0]["type"] == "PodGroupScheduled"
    assert updated["spec"]["schedulingPolicy"]["gang"]["minCount"] == 2
    status, alpha = _json(server, "GET", f"{A3}/podgroups/conv-s/status")
    assert status == 200
    assert alpha["apiVersion"] == "scheduling.k8s.io/v1alpha3"
    assert alpha["status"] == updated["status"]
    status, patched = _patch(
        server, f"{A3}/podgroups/conv-s/status", {"status": {"conditions": []}}, "application/merge-patch+json"
    )
    assert status == 200, patched
    assert patched["apiVersion"] == "scheduling.k8s.io/v1alpha3"
    status, beta = _json(server, "GET", f"{B1}/podgroups/conv-s")
    assert beta["status"].get("conditions", []) == []


def test_workloads_at_both_versions_and_composite_pod_groups_at_v1alpha3_only(server: Server) -> None:
    workload = {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {"name": "conv-w"},
        "spec": {"podGroupTemplates": [{"name": "workers", "schedulingPolicy": {"gang": {"minCount": 2}}}]},
    }
    status, created = _json(server, "POST", f"{B1}/workloads", workload)
    assert status == 201, created
    status, alpha = _json(server, "GET", f"{A3}/workloads/conv-w")
    assert alpha["apiVersion"] == "scheduling.k8s.io/v1alpha3"
    assert alpha["spec"] == created["spec"]
    status, _ = _json(server, "GET", f"{B1}/compositepodgroups")
    assert status == 404
    status, listed = _json(server, "GET", f"{A3}/compositepodgroups")
    assert status == 200, listed


def test_discovery_lists_both_versions_in_upstreams_priority(server: Server) -> None:
    status, group = _json(server, "GET", "/apis/scheduling.k8s.io")
    assert status == 200
    assert [v["version"] for v in group["versions"]] == ["v1", "v1beta1", "v1alpha3"]
    assert group["preferredVersion"]["version"] == "v1"
    status, beta = _json(server, "GET", "/apis/scheduling.k8s.io/v1beta1")
    names = sorted(r["name"] for r in beta["resources"])
    assert names == ["podgroups", "podgroups/status", "workloads"]
    status, raw = server.send(
        "GET", "/apis", accept="application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    )
    doc = json.loads(raw)
    item = next(i for i in doc["items"] if i["metadata"]["name"] == "scheduling.k8s.io")
    versions = {v["version"]: sorted(r["resource"] for r in v["resources"]) for v in item["versions"]}
    assert list(versions) == ["v1", "v1beta1", "v1alpha3"]
    assert versions["v1beta1"] == ["podgroups", "workloads"]
    assert versions["v1alpha3"] == ["compositepodgroups", "podgroups", "workloads"]


def test_watch_list_at_the_other_version_sends_its_objects_and_bookmark(server: Server) -> None:
    """WatchList (sendInitialEvents): the initial ADDED events and the initial-events-end BOOKMARK carry the
    requested version's apiVersion (upstream's cacher converts every event for the watcher's version)."""
    status, created = _json(server, "POST", f"{A3}/podgroups", _pod_group("conv-wl", "v1alpha3"))
    assert status == 201, created
    query = (
        "?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"
        "&timeoutSeconds=1&fieldSelector=metadata.name%3Dconv-wl"
    )
    events = _watch(server, f"{B1}/podgroups{query}")
    assert [e["type"] for e in events[:2]] == ["ADDED", "BOOKMARK"], events
    assert [e["object"]["apiVersion"] for e in events[:2]] == ["scheduling.k8s.io/v1beta1"] * 2
    assert events[0]["object"]["metadata"]["uid"] == created["metadata"]["uid"]
    assert events[1]["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
