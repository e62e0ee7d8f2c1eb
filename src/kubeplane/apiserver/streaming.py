"""The pods' connect subresources (``exec``, ``attach``, ``portforward``) for containers that are simulated.

Upstream (pkg/registry/core/pod/rest/subresources.go ``ExecREST.Connect`` and friends) finds where the
kubelet serves the stream (pkg/registry/core/pod/strategy.go ``streamLocation`` / ``PortForwardLocation``:
404 for a missing pod, 400 for a container that cannot be chosen or a pod without a node) and hands the
connection to an upgrade-aware proxy that refuses a request without an ``Upgrade`` header with 400 "Upgrade
request required" (apimachinery pkg/util/proxy/upgradeaware.go, ``UpgradeRequired`` is set for these three).

kubeplane follows that order exactly. Where upstream would then proxy the upgrade to a kubelet, there is no
process to attach to: every container is simulated. The answer is a 400 Status saying so, never a 5xx, so
kubectl prints one clear line ("error: unable to upgrade connection: ...") over WebSocket and SPDY alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NoReturn

from kubeplane.api.resources import ResourceInfo

from . import errors
from .registry import Registry

CONNECT_SUBRESOURCES = frozenset({"exec", "attach", "portforward"})
"""The pod subresources upstream serves through a Connecter with ``UpgradeRequired``."""
UPGRADE_REQUIRED = "Upgrade request required"


def is_connect(info: ResourceInfo, subresource: str) -> bool:
    return info.group == "" and info.kind == "Pod" and subresource in CONNECT_SUBRESOURCES


def _names(containers: Any) -> str:
    """Go's ``%s`` of a ``[]string`` inside brackets the caller adds: names joined by spaces."""
    return " ".join(str(c.get("name", "")) for c in containers or [] if isinstance(c, dict))


def _check_container(pod: Mapping[str, Any], name: str, container: str) -> None:
    """``streamLocation``'s choice of container: the only one when none is named, else one the pod has."""
    spec = pod.get("spec") or {}
    containers = spec.get("containers") or []
    if not container:
        if len(containers) == 1:
            return
        if not containers:
            raise errors.bad_request(f"a container name must be specified for pod {name}")
        message = f"a container name must be specified for pod {name}, choose one of: [{_names(containers)}]"
        if spec.get("initContainers"):
            message += f" or one of the init containers: [{_names(spec['initContainers'])}]"
        raise errors.bad_request(message)
    every = [*containers, *(spec.get("initContainers") or []), *(spec.get("ephemeralContainers") or [])]
    if not any(isinstance(c, dict) and c.get("name") == container for c in every):
        raise errors.bad_request(f"container {container} is not valid for pod {name}")


async def connect(
    registry: Registry,
    info: ResourceInfo,
    namespace: str | None,
    name: str,
    subresource: str,
    query: Mapping[str, str],
    *,
    upgrade: bool,
) -> NoReturn:
    """Answer a connect request: always an :class:`~kubeplane.apiserver.errors.APIError` (see the module)."""
    pod = await registry.get(info, namespace, name)
    if subresource != "portforward":
        _check_container(pod, name, query.get("container", ""))
    if not (pod.get("spec") or {}).get("nodeName"):
        raise errors.bad_request(f"pod {name} does not have a host assigned")
    if not upgrade:
        raise errors.bad_request(UPGRADE_REQUIRED)
    raise errors.bad_request(
        f"{subresource} is not available for pod {name}: its containers are simulated by kubeplane and run no process"
    )
