"""kubeplane's own images, and the command line and environment a container of one gets (pure).

Images (documented in docs/kubelet.md, built by ``deploy/custom-scheduler/Dockerfile``):

* ``kubeplane/kubeplane:<tag>`` -- entrypoint ``kubeplane``;
* ``kubeplane/kubeplane-scheduler:<tag>`` -- entrypoint ``kubeplane scheduler``.

Any tag or digest; the repository must be exactly that on Docker Hub (``kubeplane/kubeplane-scheduler:v1``,
``docker.io/kubeplane/kubeplane-scheduler:v1``), so no other image ever runs a process. With the fleet's
``real_processes`` option, a regular container of such an image runs for real
(:mod:`~kubeplane.kubelet.process_runtime`); every other container stays simulated.

The command line follows Kubernetes (``pkg/kubelet/kuberuntime/kuberuntime_container.go`` with the image's
config): ``command`` replaces the entrypoint, ``args`` replace the image's CMD (these images have none);
``$(VAR)`` references in both are expanded from the container's environment as upstream's
``third_party/forked/golang/expansion`` does (``$$`` escapes, an unknown reference stays as written). The
executable must be ``kubeplane`` (the images hold nothing else): it becomes the kubelet's own interpreter,
``sys.executable -m kubeplane.cli.main``. Any other executable cannot start (upstream's ``StartError``, exit code
128, ``executable file not found in $PATH``).

Safety departures (documented): ``kubeplane scheduler`` and ``kubeplane controller-manager`` serve their
/healthz and /metrics on ``--bind-address=127.0.0.1`` and ``--metrics-port=0`` (a free port) whatever the pod
says, since every replica shares the host's network.

Environment (upstream ``makeEnvironmentVariables``, ``pkg/kubelet/kubelet_pods.go``): ``envFrom`` first, then
``env`` in order (each value expanded against what precedes it), then the ``kubernetes`` service's variables for
any name still unset. The service variables point at the API server's real endpoint (``127.0.0.1`` and its port)
rather than the service's ClusterIP: no service proxy routes ClusterIPs here. The kubelet adds ``HOSTNAME`` (the
pod's name), ``KUBEPLANE_POD_ROOT`` (:mod:`kubeplane.client.pod_root`) and what the interpreter needs to run
(``PATH``, ``PYTHONPATH``, ``PYTHONUNBUFFERED``); nothing else of the kubelet's own environment leaks in.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

from .runtime import normalize_image

IMAGES: dict[str, tuple[str, ...]] = {
    "docker.io/kubeplane/kubeplane": (),
    "docker.io/kubeplane/kubeplane-scheduler": ("scheduler",),
}
"""Repository -> the entrypoint's arguments after ``kubeplane``."""
EXECUTABLE = "kubeplane"
LOOPBACK_COMMANDS = frozenset({"scheduler", "controller-manager"})
FORCED_FLAGS = ("--bind-address", "--metrics-port")
START_ERROR_EXIT_CODE = 128


def repository(image: str) -> str:
    """``kubeplane/kubeplane-scheduler:v1`` -> ``docker.io/kubeplane/kubeplane-scheduler`` (tag/digest dropped)."""
    name = normalize_image(image).split("@", 1)[0]
    last = name.rsplit("/", 1)
    if ":" in last[-1]:
        name = name.rsplit(":", 1)[0]
    return name


def entrypoint(image: str) -> tuple[str, ...] | None:
    """The arguments after ``kubeplane`` of ``image``'s entrypoint, or None when it is not kubeplane's image."""
    return IMAGES.get(repository(image))


def is_kubeplane_image(image: str) -> bool:
    return entrypoint(image) is not None


def expand(text: str, env: Mapping[str, str]) -> str:
    """upstream ``expansion.Expand``: ``$(NAME)`` -> its value when defined, ``$$`` -> ``$``, anything else as
    written (an unknown or unterminated reference too)."""
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch != "$" or i + 1 >= len(text):
            out.append(ch)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "$":
            out.append("$")
            i += 2
        elif nxt == "(":
            end = text.find(")", i + 2)
            if end < 0:
                out.append(text[i:])
                break
            name = text[i + 2 : end]
            out.append(env[name] if name in env else text[i : end + 1])
            i = end + 1
        else:
            out.append(ch)
            i += 1
    return "".join(out)


class StartError(Exception):
    """The container cannot start (upstream's ``StartError``); the message is the runtime's."""


def command_line(container: Mapping[str, Any], env: Mapping[str, str]) -> list[str]:
    """The argv of ``container`` (module docstring): the interpreter, ``-m kubeplane.cli.main``, the
    subcommand and its arguments, with the loopback overrides. Raises :class:`StartError`."""
    base = entrypoint(str(container.get("image") or ""))
    if base is None:
        raise StartError(f"{container.get('image')!r} is not a kubeplane image")
    command = [expand(str(a), env) for a in container.get("command") or []]
    args = [expand(str(a), env) for a in container.get("args") or []]
    words = [*command, *args] if command else [EXECUTABLE, *base, *args]
    if words[0] not in (EXECUTABLE, f"/usr/local/bin/{EXECUTABLE}"):
        raise StartError(
            "failed to create containerd task: failed to create shim task: OCI runtime create failed: "
            f'exec: "{words[0]}": executable file not found in $PATH: unknown'
        )
    rest = words[1:]
    if rest and rest[0] in LOOPBACK_COMMANDS:
        rest = _force_loopback(rest)
    return [sys.executable, "-m", "kubeplane.cli.main", *rest]


def _force_loopback(words: Sequence[str]) -> list[str]:
    """Drop every ``--bind-address``/``--metrics-port`` (``=value`` or separate value) and add the loopback ones."""
    out: list[str] = []
    skip = False
    for word in words:
        if skip:
            skip = False
            continue
        flag = word.split("=", 1)[0]
        if flag in FORCED_FLAGS:
            skip = "=" not in word
            continue
        out.append(word)
    return [*out, "--bind-address=127.0.0.1", "--metrics-port=0"]


def field_value(pod: Mapping[str, Any], path: str) -> str | None:
    """A downward API ``fieldRef`` of ``pod`` (upstream ``podFieldSelectorRuntimeValue`` and
    ``ExtractFieldPathAsString``), None for a path it does not support."""
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    simple = {
        "metadata.name": meta.get("name"),
        "metadata.namespace": meta.get("namespace"),
        "metadata.uid": meta.get("uid"),
        "spec.nodeName": spec.get("nodeName"),
        "spec.serviceAccountName": spec.get("serviceAccountName"),
        "status.hostIP": status.get("hostIP"),
        "status.podIP": status.get("podIP"),
        "status.hostIPs": ",".join(str(a.get("ip")) for a in status.get("hostIPs") or []),
        "status.podIPs": ",".join(str(a.get("ip")) for a in status.get("podIPs") or []),
    }
    if path in simple:
        value = simple[path]
        return "" if value is None else str(value)
    for prefix, section in (("metadata.labels", "labels"), ("metadata.annotations", "annotations")):
        values = meta.get(section) or {}
        if path == prefix:
            return "\n".join(f'{k}="{v}"' for k, v in sorted(values.items()))
        if path.startswith(prefix + "['") and path.endswith("']"):
            return str(values.get(path[len(prefix) + 2 : -2], ""))
    return None


def service_env(host: str, port: int) -> dict[str, str]:
    """The ``kubernetes`` service's variables (upstream ``envvars.FromServices``) pointing at ``host:port``."""
    url = f"tcp://{host}:{port}"
    return {
        "KUBERNETES_SERVICE_HOST": host,
        "KUBERNETES_SERVICE_PORT": str(port),
        "KUBERNETES_SERVICE_PORT_HTTPS": str(port),
        "KUBERNETES_PORT": url,
        f"KUBERNETES_PORT_{port}_TCP": url,
        f"KUBERNETES_PORT_{port}_TCP_PROTO": "tcp",
        f"KUBERNETES_PORT_{port}_TCP_PORT": str(port),
        f"KUBERNETES_PORT_{port}_TCP_ADDR": host,
    }
