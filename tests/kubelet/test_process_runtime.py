"""Containers of kubeplane's own image run as real kubeplane processes (kubelet/process_runtime.py).

Pinned upstream behaviour (``pkg/kubelet``):

* ``kuberuntime_container.go`` ``startContainer``/``killContainer``: the container's command is the image's
  entrypoint unless ``command`` replaces it, ``args`` follow; a missing executable is ``StartError`` with exit code
  128; deletion sends SIGTERM and, after the grace period, SIGKILL; a process's exit is the container's
  ``terminated`` state with its exit code;
* ``kubelet_pods.go`` ``makeEnvironmentVariables``: literal values, ``$(VAR)`` expansion, ``valueFrom``
  (``fieldRef``, ``configMapKeyRef``, ``secretKeyRef``), ``envFrom``, the ``kubernetes`` service's variables for
  names the pod leaves unset; ``third_party/forked/golang/expansion`` for ``$$`` and unknown references;
* the projected ServiceAccount volume (``kube-api-access-*``): a TokenRequest bound to the pod, ``ca.crt`` from
  ``kube-root-ca.crt``, the namespace from the downward API; ConfigMap volumes as files at their mountPath;
  ``pkg/kubelet/token``: renewal at 80 % of the token's life;
* ``kuberuntime_manager.go`` restart with ``restartPolicy`` and the container back-off (immediately, then 10 s).

The processes are real: the waits below are bounded by wall-clock deadlines, never asserted on.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import random
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from kubeplane.apiserver.tls import ensure_serving_certs
from kubeplane.client.errors import ConflictError
from kubeplane.client.pod_root import POD_ROOT_ENV
from kubeplane.kubelet import process_image
from kubeplane.kubelet.config import parse_node_config
from kubeplane.kubelet.fleet import Fleet, FleetOptions
from kubeplane.kubelet.process_runtime import exit_code
from tests.kubelet.harness import Env, running_fleet

IMAGE = "kubeplane/kubeplane:v1"
SCHEDULER_IMAGE = "kubeplane/kubeplane-scheduler:v1"
SA_MOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"
SCHEDULER_CONFIG = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
profiles:
- schedulerName: in-a-pod
"""


@pytest.fixture(scope="module")
def ca(tmp_path_factory: pytest.TempPathFactory) -> str:
    return ensure_serving_certs(tmp_path_factory.mktemp("certs")).ca.read_text()


@pytest.fixture
async def env(tmp_path: Path, ca: str) -> AsyncIterator[Env]:
    options = FleetOptions(
        pull_delay=0.0, status_workers=2, kubelet_api=True, real_processes=True, run_dir=tmp_path / "run"
    )
    async with running_fleet([{"name": "n1"}], options) as started:
        client = started.client
        for resource, body in (
            ("serviceaccounts", {"metadata": {"name": "default"}}),
            ("configmaps", {"metadata": {"name": "kube-root-ca.crt"}, "data": {"ca.crt": ca}}),
            ("configmaps", {"metadata": {"name": "sched"}, "data": {"config.yaml": SCHEDULER_CONFIG, "level": "4"}}),
            ("secrets", {"metadata": {"name": "s"}, "data": {"password": base64.b64encode(b"hunter2").decode()}}),
            # the API server's endpoint: a closed port, so an in-cluster client only fails to connect
            ("endpoints", {"metadata": {"name": "kubernetes"},
                           "subsets": [{"addresses": [{"ip": "127.0.0.1"}], "ports": [{"name": "https", "port": 9}]}]}),
        ):  # fmt: skip
            with contextlib.suppress(ConflictError):
                await client.create(client.resource(resource), body, namespace="default")
        yield started


async def until(env: Env, what: str, check: Callable[[], Awaitable[Any]], timeout: float = 40.0) -> Any:
    """Poll ``check`` until it is truthy (wall-clock bound: real processes start in real time)."""
    deadline = time.monotonic() + timeout
    while True:
        value = await check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


def status_of(pod: dict[str, Any], container: str = "c") -> dict[str, Any]:
    for s in pod.get("status", {}).get("containerStatuses") or []:
        if s["name"] == container:
            return dict(s)
    return {}


API_ACCESS = {
    "name": "kube-api-access-abcde",
    "projected": {
        "defaultMode": 420,
        "sources": [
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {"downwardAPI": {"items": [{"path": "namespace",
                                        "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
        ],
    },
}  # fmt: skip


def scheduler_pod(**extra: Any) -> dict[str, Any]:
    container = {
        "name": "c",
        "image": SCHEDULER_IMAGE,
        "args": [
            "--config=/etc/sched/config.yaml",
            "--v=$(LEVEL)",
            "--bind-address=0.0.0.0",
            "--metrics-port",
            "10259",
        ],
        "env": [
            {"name": "LEVEL", "valueFrom": {"configMapKeyRef": {"name": "sched", "key": "level"}}},
            {"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "s", "key": "password"}}},
            {"name": "MY_NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
            {"name": "GREETING", "value": "on $(MY_NODE) at $(KUBERNETES_SERVICE_HOST), $$(kept) $(UNKNOWN)"},
        ],
        "volumeMounts": [
            {"name": "config", "mountPath": "/etc/sched"},
            {"name": API_ACCESS["name"], "mountPath": SA_MOUNT, "readOnly": True},
        ],
    }
    return {
        "serviceAccountName": "default",
        "containers": [container],
        "volumes": [{"name": "config", "configMap": {"name": "sched"}}, API_ACCESS],
        **extra,
    }


def environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    return dict(item.split("=", 1) for item in raw.decode().split("\0") if "=" in item)


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


async def logs(env: Env, pod: str, container: str = "c", previous: bool = False) -> str:
    rt = env.fleet.find_pod("n1", "default", pod)
    assert rt is not None
    c = next(c for c in rt.containers if c.name == container)
    run = c.restart_count - 1 if previous else c.restart_count
    instance = c.log.instances.get(run)
    return "" if instance is None else "\n".join(text for _, text in instance.lines)


# --- the image and the command line (pure) -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("image", "entry"),
    [
        ("kubeplane/kubeplane:v1", ()),
        ("docker.io/kubeplane/kubeplane-scheduler:0.9", ("scheduler",)),
        ("kubeplane/kubeplane-scheduler@sha256:" + "a" * 64, ("scheduler",)),
        ("kubeplane/kubeplane", ()),
        ("your-registry/kubeplane-scheduler:v1", None),
        ("ghcr.io/kubeplane/kubeplane:v1", None),
        ("nginx", None),
    ],
)
def test_only_kubeplanes_own_repositories_are_run(image: str, entry: tuple[str, ...] | None) -> None:
    assert process_image.entrypoint(image) == entry


def test_command_replaces_the_entrypoint_args_follow_and_servers_stay_on_loopback() -> None:
    python = [sys.executable, "-m", "kubeplane.cli.main"]
    env = {"PORT": "10259", "X": "x"}
    sched = {"image": SCHEDULER_IMAGE, "args": ["--bind-address", "0.0.0.0", "--metrics-port=$(PORT)", "--v=2"]}
    assert process_image.command_line(sched, env) == [
        *python, "scheduler", "--v=2", "--bind-address=127.0.0.1", "--metrics-port=0"
    ]  # fmt: skip
    own = {"image": IMAGE, "command": ["kubeplane", "--version"], "args": ["$(X)", "$$(X)", "$(Y)"]}
    assert process_image.command_line(own, env) == [*python, "--version", "x", "$(X)", "$(Y)"]
    with pytest.raises(process_image.StartError, match=r'exec: "sh": executable file not found in \$PATH'):
        process_image.command_line({"image": IMAGE, "command": ["sh", "-c", "true"]}, env)


def test_exit_codes_of_signals_are_128_plus_the_signal() -> None:
    assert (exit_code(0), exit_code(3), exit_code(-15), exit_code(-9)) == (0, 3, 143, 137)


# --- running -----------------------------------------------------------------------------------------------------


async def test_a_pod_runs_kubeplane_with_its_environment_files_and_logs_then_stops_on_delete(env: Env, ca: str) -> None:
    await env.create_pod("sched", **scheduler_pod())
    pod = await until(env, "Running", lambda: _running(env, "sched"))
    processes = env.fleet.processes
    assert processes is not None
    handle = processes.process(pod["metadata"]["uid"], "c")
    assert handle is not None
    assert alive(handle.pid)

    variables = environ(handle.pid)
    root = Path(variables[POD_ROOT_ENV])
    assert (variables["KUBERNETES_SERVICE_HOST"], variables["KUBERNETES_SERVICE_PORT"]) == ("127.0.0.1", "9")
    assert variables["KUBERNETES_PORT"] == "tcp://127.0.0.1:9"
    assert (variables["PASSWORD"], variables["MY_NODE"], variables["HOSTNAME"]) == ("hunter2", "n1", "sched")
    assert variables["GREETING"] == "on n1 at 127.0.0.1, $(kept) $(UNKNOWN)"
    assert "KUBECONFIG" not in variables
    assert Path(f"/proc/{handle.pid}/cwd").resolve() == root.resolve()
    sa = root / SA_MOUNT.lstrip("/")
    token = (sa / "token").read_text()
    claims = json.loads(base64.urlsafe_b64decode(token.split(".")[1] + "=="))
    assert claims["kubernetes.io"]["pod"]["name"] == "sched"
    assert claims["kubernetes.io"]["serviceaccount"]["name"] == "default"
    assert (sa / "ca.crt").read_text() == ca
    assert (sa / "namespace").read_text() == "default"
    assert (root / "etc/sched/config.yaml").read_text() == SCHEDULER_CONFIG

    # the scheduler read its --config through the pod root and its in-cluster config: it runs its profile
    # and, at -v 4 (from the ConfigMap), logs its failed connections to the closed port
    await until(env, "the scheduler's start line", lambda: _contains(env, "sched", "with profiles in-a-pod"))

    # the token is renewed at 80 % of its life (pkg/kubelet/token)
    await env.clock.advance(0.8 * 3607 + 1)
    await until(env, "a renewed token", lambda: _changed(sa / "token", token))

    await env.client.delete(env.pods, "sched", namespace="default")
    await until(env, "the pod gone", lambda: _gone(env, "sched"))
    assert not alive(handle.pid)
    assert handle.code == 0  # it handled SIGTERM
    await until(env, "its files removed", lambda: _missing(root))


async def test_exit_restarts_by_policy_with_the_back_off_and_logs_each_run(env: Env) -> None:
    await env.create_pod("v", containers=[{"name": "c", "image": IMAGE, "args": ["--version"]}])
    await until(env, "a restart", lambda: _restarts(env, "v", 1))
    status = await until(env, "back-off", lambda: _waiting(env, "v", "CrashLoopBackOff"))
    terminated = status["lastState"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (0, "Completed")
    assert "back-off 10s restarting failed container=c" in status["state"]["waiting"]["message"]
    assert (await logs(env, "v", previous=True)).startswith("kubeplane ")
    await env.clock.advance(10)
    await until(env, "the second restart", lambda: _restarts(env, "v", 2))

    await env.create_pod(
        "once", containers=[{"name": "c", "image": IMAGE, "args": ["--version"]}], restartPolicy="Never"
    )
    await until(env, "Succeeded", lambda: env.is_phase("once", "Succeeded"))
    assert (await logs(env, "once")).startswith("kubeplane ")

    await env.create_pod("bad", containers=[{"name": "c", "image": IMAGE, "args": ["no-such-command"]}],
                         restartPolicy="Never")  # fmt: skip
    await until(env, "Failed", lambda: env.is_phase("bad", "Failed"))
    state = status_of(await env.pod("bad"))["state"]["terminated"]
    assert (state["exitCode"], state["reason"]) == (2, "Error")
    assert "No such command 'no-such-command'" in await logs(env, "bad")


async def test_a_command_other_than_kubeplane_is_a_start_error(env: Env) -> None:
    await env.create_pod("sh", containers=[{"name": "c", "image": IMAGE, "command": ["sh"]}], restartPolicy="Never")
    await until(env, "Failed", lambda: env.is_phase("sh", "Failed"))
    state = status_of(await env.pod("sh"))["state"]["terminated"]
    assert (state["exitCode"], state["reason"]) == (128, "StartError")
    assert 'exec: "sh": executable file not found in $PATH' in state["message"]
    failed = [e for e in await env.events("sh") if e["reason"] == "Failed"]
    assert failed
    assert failed[0]["message"].startswith("Error: failed to create containerd task")


async def test_a_missing_config_map_waits_with_failed_mount(env: Env) -> None:
    spec = scheduler_pod()
    spec["volumes"][0]["configMap"]["name"] = "later"
    await env.create_pod("waits", **spec)
    event = await until(env, "FailedMount", lambda: _event(env, "waits", "FailedMount"))
    message = event["message"]
    assert message == 'MountVolume.SetUp failed for volume "config" : configmap "later" not found'
    assert status_of(await env.pod("waits")).get("state", {}).get("waiting", {}).get("reason") in (
        None,
        "ContainerCreating",
    )
    configmaps = env.client.resource("configmaps")
    await env.client.create(configmaps, {"metadata": {"name": "later"}, "data": {"config.yaml": SCHEDULER_CONFIG}},
                            namespace="default")  # fmt: skip
    await env.clock.advance(2)
    await until(env, "Running", lambda: _running(env, "waits"))


async def test_the_fleet_stopping_ends_every_process(env: Env) -> None:
    await env.create_pod("a", **scheduler_pod())
    await until(env, "Running", lambda: _running(env, "a"))
    processes = env.fleet.processes
    assert processes is not None
    pids = processes.pids()
    assert len(pids) == 1
    assert alive(pids[0])
    await env.fleet.stop()
    assert not any(alive(p) for p in pids)
    assert not any(processes.run_dir.joinpath("pods").iterdir())


async def test_a_restarted_fleet_starts_the_processes_of_its_running_pods_again(env: Env, tmp_path: Path) -> None:
    """The processes ended with the old fleet: the new one reports each as upstream reports a running container
    the runtime no longer knows (ContainerStatusUnknown, 137) and restarts it (restartPolicy Always)."""
    await env.create_pod("a", **scheduler_pod())
    await until(env, "Running", lambda: _running(env, "a"))
    await env.fleet.stop()
    options = FleetOptions(pull_delay=0.0, status_workers=2, real_processes=True, run_dir=tmp_path / "run2")
    fleet = Fleet(env.client, parse_node_config([{"name": "n1"}]), clock=env.clock, rng=random.Random(2),
                  options=options)  # fmt: skip
    await fleet.start()
    try:
        env.fleet = fleet
        await until(env, "a restart", lambda: _restarts(env, "a", 1))
        status = await until(env, "running again", lambda: _running(env, "a"))
        last = status_of(status)["lastState"]["terminated"]
        assert (last["reason"], last["exitCode"]) == ("ContainerStatusUnknown", 137)
        assert last["message"] == "The container could not be located when the pod was terminated"
        assert fleet.processes is not None
        assert len(fleet.processes.pids()) == 1
    finally:
        await fleet.stop()


# --- helpers ------------------------------------------------------------------------------------------------------


async def _running(env: Env, name: str) -> dict[str, Any] | None:
    pod = await env.pod(name)
    return pod if "running" in status_of(pod).get("state", {}) else None


async def _contains(env: Env, name: str, text: str) -> bool:
    return text in await logs(env, name)


async def _changed(path: Path, old: str) -> bool:
    return path.read_text() != old


async def _gone(env: Env, name: str) -> bool:
    return await env.phase(name) == "<gone>"


async def _missing(path: Path) -> bool:
    return not path.exists()


async def _restarts(env: Env, name: str, count: int) -> bool:
    return int(status_of(await env.pod(name)).get("restartCount") or 0) >= count


async def _waiting(env: Env, name: str, reason: str) -> dict[str, Any] | None:
    status = status_of(await env.pod(name))
    return status if status.get("state", {}).get("waiting", {}).get("reason") == reason else None


async def _event(env: Env, name: str, reason: str) -> dict[str, Any] | None:
    return next((e for e in await env.events(name) if e["reason"] == reason), None)
