"""Static pods: pods a kubelet runs from manifest files, shown in the API as mirror pods (upstream
``pkg/kubelet/config/file.go``, ``config/common.go`` and ``pkg/kubelet/pod/mirror_client.go``).

A manifest directory holds one pod per file (YAML or JSON; hidden files are skipped, as upstream). For node
``N`` a manifest named ``etcd`` becomes pod ``etcd-N`` in its namespace (``default`` if unset) with
``spec.nodeName: N``, a toleration of every NoExecute taint, and the annotations ``kubernetes.io/config.hash``
(a hash of the defaulted pod), ``kubernetes.io/config.source: file`` and ``kubernetes.io/config.seen``. The
mirror pod the kubelet creates adds ``kubernetes.io/config.mirror`` (the same hash) and a controller
ownerReference to the Node, so the garbage collector removes it with the Node and drain leaves it alone.

Invariant: the hash depends only on the manifest and the node name, so a restarted kubelet recognises the
mirror pods it created before and a changed manifest replaces its mirror pod.
"""

from __future__ import annotations

import copy
import hashlib
import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from kubeplane.api import yamlio
from kubeplane.api.meta import format_micro_time
from kubeplane.api.views import annotations_of, section

log = logging.getLogger(__name__)

Obj = dict[str, Any]

CONFIG_HASH = "kubernetes.io/config.hash"
CONFIG_MIRROR = "kubernetes.io/config.mirror"
CONFIG_SOURCE = "kubernetes.io/config.source"
CONFIG_SEEN = "kubernetes.io/config.seen"


def is_mirror_pod(pod: Mapping[str, Any]) -> bool:
    """The API server's copy of a static pod: it carries the config-mirror annotation (upstream ``IsMirrorPod``)."""
    return CONFIG_MIRROR in annotations_of(pod)


def mirror_hash(pod: Obj) -> str:
    return str(annotations_of(pod).get(CONFIG_MIRROR, ""))


def static_pod(manifest: Obj, node_name: str) -> Obj:
    """The static pod a manifest describes on ``node_name`` (upstream ``applyDefaults``)."""
    pod = copy.deepcopy(manifest)
    meta = pod.setdefault("metadata", {})
    spec = pod.setdefault("spec", {})
    meta["name"] = f"{meta.get('name', '')}-{node_name}"
    meta["namespace"] = meta.get("namespace") or "default"
    meta.pop("uid", None)
    meta.pop("resourceVersion", None)
    spec["nodeName"] = node_name
    tolerations = spec.setdefault("tolerations", [])
    if {"operator": "Exists", "effect": "NoExecute"} not in tolerations:
        tolerations.append({"operator": "Exists", "effect": "NoExecute"})
    digest = hashlib.md5(json.dumps(pod, sort_keys=True).encode(), usedforsecurity=False).hexdigest()
    annotations = meta.setdefault("annotations", {})
    annotations[CONFIG_HASH] = digest
    annotations[CONFIG_SOURCE] = "file"
    return pod


def mirror_pod(static: Obj, node_name: str, node_uid: str, now: float) -> Obj:
    """The mirror pod to create for a static pod (upstream ``mirrorClient.CreateMirrorPod``)."""
    pod = copy.deepcopy(static)
    meta = pod["metadata"]
    meta["annotations"][CONFIG_MIRROR] = meta["annotations"][CONFIG_HASH]
    meta["annotations"][CONFIG_SEEN] = format_micro_time(now)
    if node_uid:
        meta["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "Node", "name": node_name, "uid": node_uid, "controller": True}
        ]
    pod.setdefault("apiVersion", "v1")
    pod.setdefault("kind", "Pod")
    pod.pop("status", None)
    return pod


def load_static_pods(directory: str | Path, node_name: str) -> dict[str, Obj]:
    """Config hash -> static pod for every manifest in ``directory``; unreadable or invalid files are logged
    and skipped (upstream logs and ignores them too), a missing directory gives no pods."""
    path = Path(directory)
    if not path.is_dir():
        return {}
    pods: dict[str, Obj] = {}
    for file in sorted(path.iterdir()):
        if file.name.startswith(".") or not file.is_file():
            continue
        try:
            manifest = yamlio.load(file.read_text())
        except (OSError, yaml.YAMLError) as exc:
            log.warning("static pod manifest %s: cannot read: %s", file, exc)
            continue
        if not isinstance(manifest, dict) or manifest.get("kind", "Pod") != "Pod":
            log.warning("static pod manifest %s: not a Pod", file)
            continue
        if not section(manifest, "metadata").get("name") or not section(manifest, "spec").get("containers"):
            log.warning("static pod manifest %s: a pod needs metadata.name and spec.containers", file)
            continue
        pod = static_pod(manifest, node_name)
        pods[pod["metadata"]["annotations"][CONFIG_HASH]] = pod
    return pods
