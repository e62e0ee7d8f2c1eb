"""PodInfoMemo (:mod:`kubeplane.scheduler.backend.podinfo_memo`): a PodInfo is reused only for the same stored
version of the same pod (uid, resourceVersion, nodeName, priority), objects without a version are never memoised,
what two rotations did not use is forgotten, and a snapshot built with the memo is the snapshot built without."""

from __future__ import annotations

from typing import Any

from kubeplane.scheduler.backend.podinfo_memo import PodInfoMemo
from kubeplane.scheduler.backend.snapshot import Snapshot


def _pod(name: str, rv: str = "1", *, node: str = "n1", cpu: str = "100m", uid: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default", "uid": uid or f"uid-{name}"}
    if rv:
        meta["resourceVersion"] = rv
    spec = {"nodeName": node, "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
    return {"metadata": meta, "spec": spec}


def _node(name: str) -> dict[str, Any]:
    alloc = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    return {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}}, "status": {"allocatable": alloc}}


def test_the_same_stored_version_reuses_its_pod_info_and_another_version_does_not() -> None:
    memo = PodInfoMemo()
    first = memo.pod_info(_pod("a"))
    assert memo.pod_info(_pod("a")) is first  # a new object of the same version (a new list's decoding)
    assert memo.pod_info(_pod("a", rv="2", cpu="2")) is not first
    assert memo.pod_info(_pod("a", rv="2", cpu="2")).requests.milli_cpu == 2000
    assert memo.pod_info(_pod("a", node="n2")) is not first  # explain clears/sets nodeName on copies
    assert memo.built == 3


def test_objects_without_a_uid_or_resource_version_are_never_memoised() -> None:
    memo = PodInfoMemo()
    a, b = memo.pod_info(_pod("a", rv="")), memo.pod_info(_pod("a", rv=""))
    assert a is not b
    assert len(memo) == 0


def test_what_two_rotations_did_not_use_is_forgotten() -> None:
    memo = PodInfoMemo()
    kept, dropped = memo.pod_info(_pod("kept")), memo.pod_info(_pod("dropped"))
    memo.rotate()
    assert memo.pod_info(_pod("kept")) is kept  # used in this generation: carried over
    memo.rotate()
    assert len(memo) == 1
    assert memo.pod_info(_pod("dropped")) is not dropped


def _summary(snapshot: Snapshot) -> list[tuple[str, int, int, list[str]]]:
    return [
        (ni.name, ni.requested.milli_cpu, ni.non_zero_requested.memory, [p.key for p in ni.pods])
        for ni in snapshot.list()
    ]


def test_a_snapshot_built_with_the_memo_equals_one_built_without() -> None:
    nodes = [_node("n1"), _node("n2")]
    pods = [_pod(f"p{i}", cpu=f"{100 * (i + 1)}m", node=f"n{1 + i % 2}") for i in range(6)]
    memo = PodInfoMemo()
    plain = Snapshot.from_objects(nodes, pods)
    assert _summary(Snapshot.from_objects(nodes, pods, memo=memo)) == _summary(plain)
    again = Snapshot.from_objects(nodes, [dict(p) for p in pods], memo=memo)
    assert _summary(again) == _summary(plain)
    assert memo.built == 6  # the second snapshot derived nothing again
