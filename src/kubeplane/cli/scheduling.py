"""``kubeplane scheduler`` and ``kubeplane explain``: the scheduler as a process, and the "why" of a placement."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import typer
import yaml

from kubeplane.api import yamlio
from kubeplane.api.views import name_of, namespace_of
from kubeplane.cli import explain_parts
from kubeplane.cli.component import (
    CLIError,
    LeaderElectionFlags,
    apply_leader_election_flags,
    configure_logging,
    run_component,
)
from kubeplane.client.errors import ClientError
from kubeplane.client.interface import Client
from kubeplane.client.pod_root import pod_path

__all__ = ["load_objects", "run_explain", "run_scheduler"]


_OTHER_KINDS = (
    ("namespaces", "Namespace"),
    ("services", "Service"),
    ("replicasets", "ReplicaSet"),
    ("statefulsets", "StatefulSet"),
    ("replicationcontrollers", "ReplicationController"),
    ("poddisruptionbudgets", "PodDisruptionBudget"),
    ("priorityclasses", "PriorityClass"),
    ("podgroups", "PodGroup"),
    ("persistentvolumes", "PersistentVolume"),
    ("persistentvolumeclaims", "PersistentVolumeClaim"),
    ("storageclasses", "StorageClass"),
    ("csinodes", "CSINode"),
    ("csidrivers", "CSIDriver"),
    ("csistoragecapacities", "CSIStorageCapacity"),
    ("volumeattachments", "VolumeAttachment"),
    ("resourceclaims", "ResourceClaim"),
    ("resourceslices", "ResourceSlice"),
    ("deviceclasses", "DeviceClass"),
)


def load_objects(path: Path) -> list[dict[str, Any]]:
    """Objects from a JSON/YAML file: a v1 List, a multi-document YAML stream, or a single object."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise CLIError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        docs = [d for d in yamlio.load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        raise CLIError(f"{path} is not valid YAML or JSON: {str(exc).splitlines()[0]}") from None
    out: list[dict[str, Any]] = []
    for doc in docs:
        if not isinstance(doc, dict):
            raise CLIError(f"{path}: expected Kubernetes objects, found {type(doc).__name__}")
        if doc.get("kind") == "List" or (str(doc.get("kind", "")).endswith("List") and "items" in doc):
            out.extend(i for i in doc.get("items") or [] if isinstance(i, dict))
        else:
            out.append(doc)
    return out


def _feature_gates(value: str | None) -> Any:
    """kube-scheduler's ``--feature-gates`` value parsed, or a one-line :class:`CLIError` in pflag's words."""
    from kubeplane.scheduler.config import FeatureGateError, parse_feature_gates

    try:
        return parse_feature_gates(value)
    except FeatureGateError as exc:
        raise CLIError(f'invalid argument "{value}" for "--feature-gates" flag: {exc}') from None


def _load_config(config: Path | None, feature_gates: str | None = None) -> Any:
    """The configuration of ``--config`` (default: none) defaulted under ``--feature-gates`` (default: v1.37's)."""
    from kubeplane.scheduler.config import ConfigError, default_config, load_config

    gates = _feature_gates(feature_gates)
    if config is None:
        return default_config(feature_gates=gates)
    try:
        return load_config(pod_path(config), feature_gates=gates)  # in a kubeplane-started pod: its root
    except ConfigError as exc:
        raise CLIError(f"invalid scheduler configuration {config}:\n" + "\n".join(exc.errors)) from None


async def _live_objects(
    kubeconfig: str | None, pod_ref: str
) -> tuple[dict[str, Any] | None, list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    from kubeplane.client.http import HTTPClient

    client = HTTPClient.from_kubeconfig(kubeconfig)
    try:
        nodes = (await client.list(client.resource("nodes")))["items"]
        pods = (await client.list(client.resource("pods")))["items"]
        others: list[dict[str, Any]] = []
        for resource, kind in _OTHER_KINDS:
            others += [{**o, "kind": kind} for o in (await client.list(client.resource(resource)))["items"]]
        pod = None
        if not Path(pod_ref).exists():
            if "/" not in pod_ref:
                ns, name = "default", pod_ref
            else:
                ns, name = pod_ref.split("/", 1)
            pod = await client.get(client.resource("pods"), name, namespace=ns)
            others += await explain_parts.autoscaler_objects(client, ns)
        return pod, nodes, pods, others
    finally:
        await client.close()


def run_explain(
    *,
    pod_ref: str,
    cluster: Path | None,
    config: Path | None,
    output: str,
    kubeconfig: str | None,
    seed: int,
    what_if: bool = False,
    feature_gates: str | None = None,
) -> None:
    from kubeplane.scheduler.config import ConfigError
    from kubeplane.scheduler.explain import ExplainError, explain, render_table

    if output not in ("table", "json"):
        raise CLIError(f"-o must be table or json, not {output!r}")
    cfg = _load_config(config, feature_gates)
    pod: dict[str, Any] | None = None
    if cluster is not None:
        objects = load_objects(cluster)
        nodes = [o for o in objects if o.get("kind") == "Node"]
        pods = [o for o in objects if o.get("kind") == "Pod"]
        others = [o for o in objects if o.get("kind") not in ("Node", "Pod")]
    else:
        try:
            pod, nodes, pods, others = asyncio.run(_live_objects(kubeconfig, pod_ref))
        except ClientError as exc:
            raise CLIError(str(exc)) from None
    if pod is None:
        if not Path(pod_ref).exists():
            raise CLIError(
                f"--pod {pod_ref}: no such file" + ("" if cluster is None else " (with --cluster, --pod is a file)")
            )
        found = [o for o in load_objects(Path(pod_ref)) if o.get("kind", "Pod") == "Pod"]
        if len(found) != 1:
            raise CLIError(f"--pod {pod_ref}: expected exactly one Pod, found {len(found)}")
        pod = found[0]
    key = (namespace_of(pod) or "default", name_of(pod))
    placed = [p for p in pods if (namespace_of(p) or "default", name_of(p)) != key]
    try:
        if what_if:
            from kubeplane.scheduler import whatif

            result = whatif.what_if(pod, nodes=nodes, pods=placed, objects=others, config=cfg, seed=seed)
            printed: Any = whatif.changes_json(result)
        else:
            result = explain(pod, nodes=nodes, pods=placed, objects=others, config=cfg, seed=seed)
            explain_parts.add_autoscaler_part(result, pod, nodes=nodes, pods=placed, objects=others, config=cfg)
            printed = result
    except (ExplainError, ConfigError) as exc:
        raise CLIError(str(exc)) from None
    if output == "json":
        typer.echo(json.dumps(printed, indent=2))
    else:
        from rich.console import Console

        console = Console()
        if not console.is_terminal:  # piped: do not wrap the reasons at 80 columns
            console = Console(width=320)
        console.print(whatif.render_table(result) if what_if else render_table(result))
        if not what_if and "autoscaler" in result:
            console.print("\n".join(explain_parts.render_autoscaler_part(result["autoscaler"])), markup=False)


def run_scheduler(
    *,
    kubeconfig: str | None,
    config: Path | None,
    verbosity: int,
    leader_election: LeaderElectionFlags | None = None,
    metrics_port: int = 10259,
    bind_address: str = "127.0.0.1",
    feature_gates: str | None = None,
) -> None:
    """``kubeplane scheduler``: the configured profiles against the cluster of ``kubeconfig`` (else the file's
    clientConnection.kubeconfig, else the usual lookup, else in-cluster), under leader election by default (see
    :mod:`kubeplane.cli.component`)."""
    from kubeplane.scheduler.config import ConfigError
    from kubeplane.scheduler.scheduler import Scheduler

    configure_logging(verbosity)
    cfg = _load_config(config, feature_gates)
    le = apply_leader_election_flags(cfg.leader_election, leader_election or LeaderElectionFlags())

    def build(client: Client) -> tuple[Scheduler, str]:
        try:
            scheduler = Scheduler(client, config=cfg)
        except ConfigError as exc:
            raise CLIError("\n".join(exc.errors)) from None
        return scheduler, f"with profiles {', '.join(scheduler.profiles)}"

    file_kubeconfig = cfg.client_connection.kubeconfig or None
    if file_kubeconfig:  # in a kubeplane-started pod, under its root (kubeplane.client.pod_root)
        file_kubeconfig = str(pod_path(file_kubeconfig))
    run_component(
        component="scheduler",
        kubeconfig=kubeconfig or file_kubeconfig,
        le=le,
        metrics_port=metrics_port,
        bind_address=bind_address,
        build=build,
        qps=cfg.client_connection.qps,
        burst=cfg.client_connection.burst,
    )
