"""Parts ``kubeplane explain`` adds to the scheduler's answer from other components (the scheduler's explain
must not import them: tests/test_layering.py).

* ``autoscaler`` (docs/autoscaler.md, "Explain"): when the cluster has kubeplane's autoscaler, i.e. its node
  groups ConfigMap (:data:`kubeplane.autoscaler.explaining.GROUPS_CONFIGMAP`, kube-system) is among the objects,
  :func:`kubeplane.autoscaler.explaining.autoscaler_part` of the pod, from the pod's events among the objects.
  Live, :func:`autoscaler_objects` lists both; offline (``--cluster``) the file may hold them. A pod already
  bound gets no part (the autoscaler helps Pending pods only). A malformed ConfigMap is a one-line error.
  The web UI's pod view gets the same part through :func:`ui_parts` (``kubeplane up`` and ``kubeplane ui``
  give them to the UI).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kubeplane.cli.component import CLIError
from kubeplane.client.errors import NotFoundError
from kubeplane.client.interface import Client

__all__ = ["add_autoscaler_part", "autoscaler_objects", "render_autoscaler_part", "ui_parts"]

AUTOSCALER_NAMESPACE = "kube-system"


async def autoscaler_objects(client: Client, namespace: str) -> list[dict[str, Any]]:
    """The node groups ConfigMap (when the autoscaler published one) and the events of ``namespace``, each with
    its ``kind``, to add to explain's objects."""
    from kubeplane.autoscaler.explaining import GROUPS_CONFIGMAP

    try:
        cm = await client.get(client.resource("configmaps"), GROUPS_CONFIGMAP, namespace=AUTOSCALER_NAMESPACE)
    except NotFoundError:
        return []
    events = (await client.list(client.resource("events"), namespace=namespace))["items"]
    return [{**cm, "kind": "ConfigMap"}, *({**e, "kind": "Event"} for e in events)]


def add_autoscaler_part(
    result: dict[str, Any],
    pod: Mapping[str, Any],
    *,
    nodes: Sequence[Mapping[str, Any]],
    pods: Sequence[Mapping[str, Any]],
    objects: Sequence[Mapping[str, Any]],
    config: Any = None,
) -> None:
    """Set ``result["autoscaler"]`` for an unbound pod when ``objects`` hold the node groups ConfigMap."""
    try:
        part = _autoscaler_part(result, pod, nodes=nodes, pods=pods, objects=objects, config=config)
    except ValueError as exc:
        raise CLIError(str(exc)) from None
    if part is not None:
        result["autoscaler"] = part


def ui_parts(config: Any = None) -> list[Any]:
    """The pod view's parts (:class:`kubeplane.ui.explaining.ExplainPart`): the autoscaler's, read with the
    session's token; a malformed ConfigMap gives ``{"error": ...}`` as the part."""
    from kubeplane.autoscaler.explaining import GROUPS_CONFIGMAP
    from kubeplane.ui.explaining import ExplainPart

    def paths(namespace: str) -> list[tuple[str, str]]:
        return [
            (f"/api/v1/namespaces/{AUTOSCALER_NAMESPACE}/configmaps/{GROUPS_CONFIGMAP}", "ConfigMap"),
            (f"/api/v1/namespaces/{namespace}/events", "Event"),
        ]

    def compute(
        pod: Mapping[str, Any],
        result: Mapping[str, Any],
        nodes: Sequence[Mapping[str, Any]],
        pods: Sequence[Mapping[str, Any]],
        objects: Sequence[Mapping[str, Any]],
    ) -> dict[str, Any] | None:
        try:
            return _autoscaler_part(result, pod, nodes=nodes, pods=pods, objects=objects, config=config)
        except ValueError as exc:
            return {"error": str(exc)}

    return [ExplainPart("autoscaler", paths, compute)]


def _autoscaler_part(
    result: Mapping[str, Any],
    pod: Mapping[str, Any],
    *,
    nodes: Sequence[Mapping[str, Any]],
    pods: Sequence[Mapping[str, Any]],
    objects: Sequence[Mapping[str, Any]],
    config: Any,
) -> dict[str, Any] | None:
    from kubeplane.autoscaler.explaining import GROUPS_CONFIGMAP, autoscaler_part, published_groups

    if result.get("boundTo") or (pod.get("spec") or {}).get("nodeName"):
        return None
    cm = next(
        (
            o
            for o in objects
            if o.get("kind") == "ConfigMap"
            and (o.get("metadata") or {}).get("name") == GROUPS_CONFIGMAP
            and (o.get("metadata") or {}).get("namespace", AUTOSCALER_NAMESPACE) == AUTOSCALER_NAMESPACE
        ),
        None,
    )
    if cm is None:
        return None
    groups = published_groups(cm)
    events = [o for o in objects if o.get("kind") == "Event"]
    plugin_objects = [o for o in objects if o.get("kind") not in ("Event", "ConfigMap")]
    return autoscaler_part(
        pod, groups=groups, nodes=nodes, pods=pods, objects=plugin_objects, events=events, config=config
    )


def render_autoscaler_part(part: Mapping[str, Any]) -> list[str]:
    from kubeplane.autoscaler.explaining import render_part

    return render_part(part)
