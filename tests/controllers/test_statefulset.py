"""The StatefulSet controller end to end over the in-process API server on a fake clock, the test playing the
kubelet (pods, bound to ``node01`` by their template so deletions are graceful, become Running and Ready and
finish terminating only when it says so). Each test names the upstream behaviour or test of
``stateful_set_control_test.go`` / ``stateful_set_test.go`` it pins."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from kubeplane.client.errors import NotFoundError
from kubeplane.controllers.statefulset import StatefulSetController
from kubeplane.controllers.statefulset_utils import REVISION_LABEL
from tests.controllers import harness
from tests.controllers.harness import Env, ready_status, settle

NS = "default"


def _sts(replicas: int = 3, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "web", "namespace": NS},
        "spec": {
            "replicas": replicas,
            "serviceName": "web",
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"nodeName": "node01", "containers": [{"name": "nginx", "image": "nginx:1"}]},
            },
            **spec,
        },
    }


async def _pods(env: Env[Any]) -> dict[str, dict[str, Any]]:
    items = (await env.client.list(env.res("pods"), namespace=NS))["items"]
    return {p["metadata"]["name"]: p for p in items}


async def _quiet(env: Env[Any], rounds: int = 8) -> None:
    """Let the controller react: informer events, syncs and their writes."""
    for _ in range(rounds):
        await settle()
        await asyncio.sleep(0.01)


async def _make_ready(env: Env[Any], name: str) -> None:
    pod = await env.client.get(env.res("pods"), name, namespace=NS)
    pod["status"] = {**pod.get("status", {}), **ready_status(pod["metadata"]["creationTimestamp"])}
    await env.client.update(env.res("pods"), pod, namespace=NS, subresource="status")


async def _finish_deletions(env: Env[Any]) -> None:
    """The kubelet's part of a graceful delete: pods being deleted go at once."""
    for name, pod in (await _pods(env)).items():
        if pod["metadata"].get("deletionTimestamp"):
            with contextlib.suppress(NotFoundError):
                await env.client.delete(env.res("pods"), name, namespace=NS, grace_period_seconds=0)


async def _status(env: Env[Any]) -> dict[str, Any]:
    status: dict[str, Any] = (await env.client.get(env.res("statefulsets"), "web", namespace=NS)).get("status", {})
    return status


async def _bring_up(env: Env[Any], replicas: int) -> None:
    for ordinal in range(replicas):
        await _quiet(env)
        await _make_ready(env, f"web-{ordinal}")
    await _quiet(env)


async def test_ordered_ready_creates_in_order_and_scales_in_from_the_highest_ordinal() -> None:
    """TestStatefulSetControl CreatesPods / ScalesDown (OrderedReady): web-(n+1) is created only after web-n
    is Running and Ready; scale-in deletes the highest ordinal first, one at a time; events as upstream's
    recordPodEvent."""
    async with harness.running(StatefulSetController) as env:
        await env.client.create(env.res("statefulsets"), _sts(3), namespace=NS)
        await _quiet(env)
        assert list(await _pods(env)) == ["web-0"]
        await _quiet(env)
        assert list(await _pods(env)) == ["web-0"], "web-1 must wait for web-0 to be Ready"
        await _make_ready(env, "web-0")
        await _quiet(env)
        assert sorted(await _pods(env)) == ["web-0", "web-1"]
        await _make_ready(env, "web-1")
        await _quiet(env)
        await _make_ready(env, "web-2")
        await _quiet(env)
        pods = await _pods(env)
        assert sorted(pods) == ["web-0", "web-1", "web-2"]
        web1 = pods["web-1"]
        assert web1["spec"]["hostname"] == "web-1"
        assert web1["spec"]["subdomain"] == "web"
        assert web1["metadata"]["labels"]["statefulset.kubernetes.io/pod-name"] == "web-1"
        assert web1["metadata"]["labels"]["apps.kubernetes.io/pod-index"] == "1"
        status = await _status(env)
        assert (status["replicas"], status["readyReplicas"], status["availableReplicas"]) == (3, 3, 3)
        assert status["currentRevision"] == status["updateRevision"] == web1["metadata"]["labels"][REVISION_LABEL]
        events = (await env.client.list(env.res("events"), namespace=NS))["items"]
        messages = {(e["reason"], e["message"]) for e in events}
        assert ("SuccessfulCreate", "create Pod web-0 in StatefulSet web successful") in messages

        sts = await env.client.get(env.res("statefulsets"), "web", namespace=NS)
        sts["spec"]["replicas"] = 1
        await env.client.update(env.res("statefulsets"), sts, namespace=NS)
        await _quiet(env)
        pods = await _pods(env)
        assert pods["web-2"]["metadata"].get("deletionTimestamp"), "web-2 goes first"
        assert not pods["web-1"]["metadata"].get("deletionTimestamp"), "one at a time"
        await _finish_deletions(env)
        await _quiet(env)
        assert (await _pods(env))["web-1"]["metadata"].get("deletionTimestamp")
        await _finish_deletions(env)
        await _quiet(env)
        assert list(await _pods(env)) == ["web-0"]
        events = (await env.client.list(env.res("events"), namespace=NS))["items"]
        assert ("SuccessfulDelete", "delete Pod web-2 in StatefulSet web successful") in {
            (e["reason"], e["message"]) for e in events
        }


async def test_parallel_creates_all_at_once_with_ordinals_start() -> None:
    """TestStatefulSetControl with ParallelPodManagement and spec.ordinals.start (StatefulSetStartOrdinal):
    every pod is created without waiting, named from the start ordinal."""
    async with harness.running(StatefulSetController) as env:
        body = _sts(3, podManagementPolicy="Parallel", ordinals={"start": 5})
        await env.client.create(env.res("statefulsets"), body, namespace=NS)
        await _quiet(env)
        assert sorted(await _pods(env)) == ["web-5", "web-6", "web-7"]


async def test_rolling_update_with_partition_leaves_lower_ordinals_on_the_old_revision() -> None:
    """TestStatefulSetControlRollingUpdateWithPartition: ordinals >= partition move to the update revision
    from the highest down, one unavailable at a time; web-0 (below partition 1) keeps the current revision;
    status.currentRevision stays the old one while the partition holds pods back."""
    async with harness.running(StatefulSetController) as env:
        await env.client.create(env.res("statefulsets"), _sts(3), namespace=NS)
        await _bring_up(env, 3)
        old_rev = (await _status(env))["currentRevision"]
        sts = await env.client.get(env.res("statefulsets"), "web", namespace=NS)
        sts["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:2"
        sts["spec"]["updateStrategy"] = {"type": "RollingUpdate", "rollingUpdate": {"partition": 1}}
        await env.client.update(env.res("statefulsets"), sts, namespace=NS)
        await _quiet(env)
        pods = await _pods(env)
        assert pods["web-2"]["metadata"].get("deletionTimestamp")
        assert not pods["web-1"]["metadata"].get("deletionTimestamp")
        for ordinal in (2, 1):
            await _finish_deletions(env)
            await _quiet(env)
            await _make_ready(env, f"web-{ordinal}")
            await _quiet(env)
        pods = await _pods(env)
        status = await _status(env)
        new_rev = status["updateRevision"]
        assert new_rev != old_rev
        assert pods["web-0"]["metadata"]["labels"][REVISION_LABEL] == old_rev
        assert pods["web-0"]["spec"]["containers"][0]["image"] == "nginx:1"
        for name in ("web-1", "web-2"):
            assert pods[name]["metadata"]["labels"][REVISION_LABEL] == new_rev
            assert pods[name]["spec"]["containers"][0]["image"] == "nginx:2"
        assert (status["currentRevision"], status["currentReplicas"], status["updatedReplicas"]) == (old_rev, 1, 2)
        revisions = (await env.client.list(env.res("controllerrevisions"), namespace=NS))["items"]
        assert sorted((r["revision"], r["metadata"]["name"]) for r in revisions) == [(1, old_rev), (2, new_rev)]


async def test_on_delete_waits_for_the_user_and_rollback_reuses_the_revision() -> None:
    """TestStatefulSetControlOnDeleteUpdate and TestStatefulSetControlRollback: OnDelete deletes nothing; a
    pod the user deletes comes back at the update revision; going back to the first template moves that
    revision to number 3 instead of creating a new one (getStatefulSetRevisions)."""
    async with harness.running(StatefulSetController) as env:
        await env.client.create(env.res("statefulsets"), _sts(2, updateStrategy={"type": "OnDelete"}), namespace=NS)
        await _bring_up(env, 2)
        first = (await _status(env))["currentRevision"]
        sts = await env.client.get(env.res("statefulsets"), "web", namespace=NS)
        sts["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:2"
        await env.client.update(env.res("statefulsets"), sts, namespace=NS)
        await _quiet(env)
        pods = await _pods(env)
        assert not any(p["metadata"].get("deletionTimestamp") for p in pods.values())
        second = (await _status(env))["updateRevision"]
        await env.client.delete(env.res("pods"), "web-1", namespace=NS, grace_period_seconds=0)
        await _quiet(env)
        assert (await _pods(env))["web-1"]["metadata"]["labels"][REVISION_LABEL] == second
        sts = await env.client.get(env.res("statefulsets"), "web", namespace=NS)
        sts["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:1"
        await env.client.update(env.res("statefulsets"), sts, namespace=NS)
        await _quiet(env)
        revisions = (await env.client.list(env.res("controllerrevisions"), namespace=NS))["items"]
        assert sorted((r["metadata"]["name"], r["revision"]) for r in revisions) == sorted([(first, 3), (second, 2)])
        assert (await _status(env))["updateRevision"] == first


async def test_revision_history_limit_truncates_unused_revisions() -> None:
    """TestStatefulSetControlLimitsHistory: revisions neither current, update, nor used by a pod are deleted
    oldest first down to revisionHistoryLimit."""
    async with harness.running(StatefulSetController) as env:
        await env.client.create(env.res("statefulsets"), _sts(1, revisionHistoryLimit=1), namespace=NS)
        await _bring_up(env, 1)
        for image in ("nginx:2", "nginx:3", "nginx:4"):
            sts = await env.client.get(env.res("statefulsets"), "web", namespace=NS)
            sts["spec"]["template"]["spec"]["containers"][0]["image"] = image
            await env.client.update(env.res("statefulsets"), sts, namespace=NS)
            await _quiet(env)
            await _finish_deletions(env)
            await _quiet(env)
            await _make_ready(env, "web-0")
            await _quiet(env)
        revisions = (await env.client.list(env.res("controllerrevisions"), namespace=NS))["items"]
        assert sorted(r["revision"] for r in revisions) == [3, 4]


async def test_claims_are_created_before_pods_and_follow_the_retention_policy() -> None:
    """createPersistentVolumeClaims / UpdatePodClaimForRetentionPolicy: ``data-web-<n>`` exists before its pod;
    whenDeleted Delete gives each claim the set as controller owner; whenScaled Delete moves a scaled-away
    pod's claim to that pod."""
    async with harness.running(StatefulSetController) as env:
        body = _sts(
            2,
            volumeClaimTemplates=[
                {
                    "metadata": {"name": "data"},
                    "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
                }
            ],
            persistentVolumeClaimRetentionPolicy={"whenDeleted": "Delete", "whenScaled": "Delete"},
        )
        created = await env.client.create(env.res("statefulsets"), body, namespace=NS)
        await _bring_up(env, 2)
        claims = {c["metadata"]["name"]: c for c in (await env.client.list(env.res("pvc"), namespace=NS))["items"]}
        assert sorted(claims) == ["data-web-0", "data-web-1"]
        assert [r["uid"] for r in claims["data-web-1"]["metadata"]["ownerReferences"]] == [created["metadata"]["uid"]]
        pod = (await _pods(env))["web-1"]
        assert {"name": "data", "persistentVolumeClaim": {"claimName": "data-web-1"}} in pod["spec"]["volumes"]
        sts = await env.client.get(env.res("statefulsets"), "web", namespace=NS)
        sts["spec"]["replicas"] = 1
        await env.client.update(env.res("statefulsets"), sts, namespace=NS)
        await _quiet(env)
        claim = await env.client.get(env.res("pvc"), "data-web-1", namespace=NS)
        assert [(r["kind"], r["uid"]) for r in claim["metadata"]["ownerReferences"]] == [
            ("Pod", pod["metadata"]["uid"])
        ]


async def test_failed_pod_is_replaced() -> None:
    """TestStatefulSetControl RecreatesFailedPod: a Failed pod is deleted and created again."""
    async with harness.running(StatefulSetController) as env:
        await env.client.create(env.res("statefulsets"), _sts(1), namespace=NS)
        await _bring_up(env, 1)
        before = (await _pods(env))["web-0"]
        before["status"] = {**before["status"], "phase": "Failed"}
        await env.client.update(env.res("pods"), before, namespace=NS, subresource="status")
        await _quiet(env)
        await _finish_deletions(env)
        await _quiet(env)
        after = (await _pods(env))["web-0"]
        assert after["metadata"]["uid"] != before["metadata"]["uid"]


async def test_rolling_update_with_max_unavailable_deletes_that_many_at_once() -> None:
    """TestStatefulSetControlRollingUpdateWithMaxUnavailable (updateStatefulSetAfterInvariantEstablished):
    with maxUnavailable 2 (Parallel, so both come back at once) the two highest ordinals go together; the next
    two wait until those are Ready again."""
    async with harness.running(StatefulSetController) as env:
        strategy = {"type": "RollingUpdate", "rollingUpdate": {"partition": 0, "maxUnavailable": 2}}
        body = _sts(4, updateStrategy=strategy, podManagementPolicy="Parallel")
        await env.client.create(env.res("statefulsets"), body, namespace=NS)
        await _bring_up(env, 4)
        sts = await env.client.get(env.res("statefulsets"), "web", namespace=NS)
        sts["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:2"
        await env.client.update(env.res("statefulsets"), sts, namespace=NS)
        await _quiet(env)
        deleting = sorted(n for n, p in (await _pods(env)).items() if p["metadata"].get("deletionTimestamp"))
        assert deleting == ["web-2", "web-3"]
        await _finish_deletions(env)
        await _quiet(env)
        pods = await _pods(env)
        assert not any(p["metadata"].get("deletionTimestamp") for p in pods.values()), "web-2/3 not Ready yet"
        for name in ("web-2", "web-3"):
            await _make_ready(env, name)
        await _quiet(env)
        deleting = sorted(n for n, p in (await _pods(env)).items() if p["metadata"].get("deletionTimestamp"))
        assert deleting == ["web-0", "web-1"]


async def test_min_ready_seconds_counts_available_replicas_on_the_clock() -> None:
    """computeReplicaStatus with minReadySeconds: a Ready pod is available only after minReadySeconds on the
    injected clock; the set is requeued after that long (syncStatefulSet)."""
    async with harness.running(StatefulSetController) as env:
        await env.client.create(env.res("statefulsets"), _sts(1, minReadySeconds=30), namespace=NS)
        await _quiet(env)
        await _make_ready(env, "web-0")
        await _quiet(env)
        status = await _status(env)
        assert (status["readyReplicas"], status.get("availableReplicas", 0)) == (1, 0)

        async def available() -> bool:
            return int((await _status(env)).get("availableReplicas") or 0) == 1

        await env.advance_until(available, "availableReplicas 1 after minReadySeconds", step=5.0, tries=40)
