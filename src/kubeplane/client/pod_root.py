"""Where a kubeplane process run as a pod's container finds the pod's files: ``$KUBEPLANE_POD_ROOT``.

A container of kubeplane's own image (``kubeplane/kubeplane``, ``kubeplane/kubeplane-scheduler``) started by the
simulated kubelet is a real process on the host (:mod:`kubeplane.kubelet.process_runtime`), not in a mount
namespace: it cannot see the pod's volumes at ``/``. The kubelet gives it one directory, the container's root,
holding every volume at its ``mountPath`` (the ServiceAccount token, ``ca.crt`` and ``namespace`` at
``var/run/secrets/kubernetes.io/serviceaccount/``, ConfigMaps at theirs), and names it in the environment
variable :data:`POD_ROOT_ENV`. :func:`pod_path` is the one mechanism every absolute path a kubeplane command reads
goes through (the in-cluster config, ``kubeplane scheduler --config``, the configuration's
``clientConnection.kubeconfig``): under the variable, ``/etc/x`` means ``$KUBEPLANE_POD_ROOT/etc/x``; without it
(outside a pod, the normal case) paths are unchanged. Relative paths are unchanged either way: the container's
working directory is its root. Likewise :func:`hostname` is the pod's name there, as a container's hostname is.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

POD_ROOT_ENV = "KUBEPLANE_POD_ROOT"


def pod_root() -> Path | None:
    """The container's root directory when running in a kubeplane-started pod, else None."""
    value = os.environ.get(POD_ROOT_ENV)
    return Path(value) if value else None


def pod_path(path: str | os.PathLike[str]) -> Path:
    """``path`` as the container sees it: an absolute path re-rooted under :func:`pod_root` when set."""
    result = Path(path)
    root = pod_root()
    if root is None or not result.is_absolute():
        return result
    return root / result.relative_to(result.anchor)


def hostname() -> str:
    """What Go's ``os.Hostname()`` returns in the container: the pod's name (``$HOSTNAME``, set by the kubelet)
    under a pod root, else the host's name. Leader-election identities start with it, as upstream's do."""
    if pod_root() is not None and os.environ.get("HOSTNAME"):
        return os.environ["HOSTNAME"]
    return socket.gethostname()
