"""Server-side Table output: what kube-apiserver sends when kubectl asks for ``as=Table``.

``kubectl get`` does not format objects itself. It asks for a ``meta.k8s.io/v1`` Table and prints the column
definitions and cells it gets back, hiding priority-1 columns unless ``-o wide``. So kubectl's output for
kubeplane is exactly what this module computes, and upstream's printers (``pkg/printers/internalversion``)
are the spec: the same column names, types and priorities, and the same cells down to ``<none>``,
``<unknown>`` and pod STATUS strings such as ``Init:0/1`` or ``CrashLoopBackOff``.

Kinds are keyed by ``(group, kind)`` with ``""`` for the core group. Printed here: Node, Namespace, Event
(core and events.k8s.io), Service, ConfigMap, Secret, ServiceAccount, Lease, PriorityClass and
PodDisruptionBudget; :mod:`printers_workloads` prints Pod, Deployment, ReplicaSet, DaemonSet and StatefulSet,
:mod:`printers_endpoints` Endpoints and EndpointSlice.
Every other kind gets upstream's default table convertor: NAME and CREATED AT (a date, not an age).

The Table is assembled as upstream's handler does (``handlers/response.go`` ``asTable``): each row carries the
object as ``includeObject`` asks (``Metadata``, the default, sends a ``PartialObjectMetadata``), and a watch
sends column definitions with its first event only (``no_headers`` for the rest). Functions are pure; the
current time is an argument.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from kubeplane.api.meta import format_time
from kubeplane.api.validation.field import go_quote
from kubeplane.api.views import int_field, items, mappings, meta_of, name_of, section
from kubeplane.apiserver.conversion import events_v1_fields_to_core
from kubeplane.apiserver.printers_apiservice import APISERVICE_PRINTER
from kubeplane.apiserver.printers_batch import BATCH_PRINTERS
from kubeplane.apiserver.printers_core_more import CORE_MORE_PRINTERS
from kubeplane.apiserver.printers_dra import DRA_PRINTERS
from kubeplane.apiserver.printers_endpoints import ENDPOINTS_PRINTERS
from kubeplane.apiserver.printers_history import CONTROLLER_REVISION_PRINTERS
from kubeplane.apiserver.printers_more import MORE_PRINTERS
from kubeplane.apiserver.printers_storage import STORAGE_PRINTERS
from kubeplane.apiserver.printers_workloads import (
    AGE_COLUMN,
    CREATED_DOC,
    NAME_COLUMN,
    NAME_DOC,
    WORKLOAD_PRINTERS,
    Column,
    Obj,
    Printer,
    age,
    epoch,
    format_labels,
    human_duration,
    since,
)

__all__ = ["Column", "column_definitions", "human_duration", "row_for", "to_table"]

TABLE_API_VERSIONS: Final = frozenset({"meta.k8s.io/v1", "meta.k8s.io/v1beta1"})
INCLUDE_OBJECT_VALUES: Final = ("None", "Metadata", "Object", "")

# --- nodes ----------------------------------------------------------------------------------------------

NODE_COLUMNS: Final = (
    NAME_COLUMN,
    Column("Status", "string", "The status of the node"),
    Column("Roles", "string", "The roles of the node"),
    AGE_COLUMN,
    Column("Version", "string", "Kubelet Version reported by the node."),
    Column("Internal-IP", "string", "List of addresses reachable to the node.", priority=1),
    Column("External-IP", "string", "List of addresses reachable to the node.", priority=1),
    Column(
        "OS-Image",
        "string",
        "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).",
        priority=1,
    ),
    Column(
        "Kernel-Version",
        "string",
        "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).",
        priority=1,
    ),
    Column(
        "Container-Runtime",
        "string",
        "ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).",
        priority=1,
    ),
)

_NODE_ROLE_PREFIX: Final = "node-role.kubernetes.io/"
_NODE_ROLE_LABEL: Final = "kubernetes.io/role"


def node_roles(node: Obj) -> list[str]:
    """Upstream ``findNodeRoles``: ``node-role.kubernetes.io/<role>`` keys and ``kubernetes.io/role`` values."""
    roles: set[str] = set()
    for key, value in section(node, "metadata", "labels").items():
        if key.startswith(_NODE_ROLE_PREFIX):
            if role := key[len(_NODE_ROLE_PREFIX) :]:
                roles.add(role)
        elif key == _NODE_ROLE_LABEL and value:
            roles.add(str(value))
    return sorted(roles)


def _node_address(status: Mapping[str, Any], kind: str) -> str:
    for address in items(status, "addresses"):
        if isinstance(address, Mapping) and address.get("type") == kind:
            return str(address.get("address") or "")
    return "<none>"


def node_row(node: Obj, now: float) -> list[Any]:
    """Upstream ``printNode``: STATUS from the Ready condition (``Unknown`` without one), then
    ``SchedulingDisabled`` for a cordoned node; empty node-info fields read ``<unknown>``."""
    status = section(node, "status")
    info = section(status, "nodeInfo")
    ready = None
    for condition in items(status, "conditions"):
        if isinstance(condition, Mapping) and condition.get("type") == "Ready":
            ready = condition  # upstream keys conditions by type in a map: the last one wins
    states = ["Unknown"] if ready is None else ["Ready" if ready.get("status") == "True" else "NotReady"]
    if section(node, "spec").get("unschedulable") is True:
        states.append("SchedulingDisabled")
    return [
        name_of(node),
        ",".join(states),
        ",".join(node_roles(node)) or "<none>",
        age(node, now),
        str(info.get("kubeletVersion") or ""),
        _node_address(status, "InternalIP"),
        _node_address(status, "ExternalIP"),
        *(str(info.get(k) or "") or "<unknown>" for k in ("osImage", "kernelVersion", "containerRuntimeVersion")),
    ]


# --- events ---------------------------------------------------------------------------------------------

EVENT_COLUMNS: Final = (
    Column("Last Seen", "string", "The time at which the most recent occurrence of this event was recorded."),
    Column("Type", "string", "Type of this event (Normal, Warning), new types could be added in the future"),
    Column(
        "Reason",
        "string",
        "This should be a short, machine understandable string that gives the reason for the transition into the "
        "object's current status.",
    ),
    Column("Object", "string", "The object that this event is about."),
    Column(
        "Subobject",
        "string",
        "If referring to a piece of an object instead of an entire object, this string should contain a valid "
        "JSON/Go field access statement, such as desiredState.manifest.containers[2].",
        priority=1,
    ),
    Column(
        "Source",
        "string",
        "The component reporting this event. Should be a short machine understandable string.",
        priority=1,
    ),
    Column("Message", "string", "A human-readable description of the status of this operation."),
    Column(
        "First Seen",
        "string",
        "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)",
        priority=1,
    ),
    Column("Count", "string", "The number of times this event has occurred.", priority=1),
    Column("Name", "string", NAME_DOC, priority=1, format="name"),
)


def event_row(event: Obj, now: float) -> list[Any]:
    """Upstream ``printEvent``: LAST SEEN falls back to FIRST SEEN, which falls back to ``eventTime``; a
    series overrides LAST SEEN and COUNT; a singleton new-API event has COUNT 1. OBJECT is
    ``<lowercased kind>/<name>``; SOURCE is ``component, host`` from ``source`` or the reporting fields."""
    first = since(epoch(event.get("firstTimestamp")), now)
    if epoch(event.get("firstTimestamp")) is None:
        first = since(epoch(event.get("eventTime")), now)
    last = first if epoch(event.get("lastTimestamp")) is None else since(epoch(event.get("lastTimestamp")), now)
    count = int_field(event, "count")
    series = event.get("series")
    if isinstance(series, Mapping):
        last = since(epoch(series.get("lastObservedTime")), now)
        count = int_field(series, "count")
    elif count == 0:
        count = 1
    involved = section(event, "involvedObject")
    kind = str(involved.get("kind") or "").lower()
    target = f"{kind}/{involved['name']}" if involved.get("name") else kind
    source = section(event, "source")
    # core/v1 JSON names upstream's ReportingController field "reportingComponent"
    component = str(source.get("component") or "") or str(event.get("reportingComponent") or "")
    host = str(source.get("host") or "") or str(event.get("reportingInstance") or "")
    return [
        last,
        str(event.get("type") or ""),
        str(event.get("reason") or ""),
        target,
        str(involved.get("fieldPath") or ""),
        f"{component}, {host}" if host else component,
        str(event.get("message") or "").strip(),
        first,
        count,
        name_of(event),
    ]


def events_v1_row(event: Obj, now: float) -> list[Any]:
    """An events.k8s.io/v1 Event, renamed to its core/v1 fields and printed as one."""
    return event_row(events_v1_fields_to_core(dict(event)), now)


# --- services -------------------------------------------------------------------------------------------

SERVICE_COLUMNS: Final = (
    NAME_COLUMN,
    Column("Type", "string", "type determines how the Service is exposed. Defaults to ClusterIP."),
    Column("Cluster-IP", "string", "clusterIP is the IP address of the service and is usually assigned randomly."),
    Column(
        "External-IP",
        "string",
        "externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this "
        "service.",
    ),
    Column("Port(s)", "string", "The list of ports that are exposed by this service."),
    AGE_COLUMN,
    Column(
        "Selector",
        "string",
        "Route service traffic to pods with label keys and values matching this selector.",
        priority=1,
    ),
)


def _external_ip(spec: Mapping[str, Any], status: Mapping[str, Any]) -> str:
    """Upstream ``getServiceExternalIP`` with ``wide`` (the server's choice): load-balancer addresses are
    never clipped to 16 characters."""
    external = [str(ip) for ip in items(spec, "externalIPs")]
    kind = spec.get("type")
    if kind in ("ClusterIP", "NodePort"):
        return ",".join(external) or "<none>"
    if kind == "LoadBalancer":
        ingress = [i for i in items(section(status, "loadBalancer"), "ingress") if isinstance(i, Mapping)]
        balancers = sorted({str(i.get("ip") or i.get("hostname")) for i in ingress if i.get("ip") or i.get("hostname")})
        if external:
            return ",".join([*balancers, *external])
        return ",".join(balancers) or "<pending>"
    if kind == "ExternalName":
        return str(spec.get("externalName") or "")
    return "<unknown>"


def _port_string(ports: Sequence[Mapping[str, Any]]) -> str:
    """Upstream ``makePortString``: ``port/protocol``, or ``port:nodePort/protocol``, comma-joined."""
    pieces = []
    for port in ports:
        number, node_port, protocol = int_field(port, "port"), int_field(port, "nodePort"), port.get("protocol") or ""
        pieces.append(f"{number}:{node_port}/{protocol}" if node_port > 0 else f"{number}/{protocol}")
    return ",".join(pieces)


def service_row(service: Obj, now: float) -> list[Any]:
    """Upstream ``printService``: CLUSTER-IP is the first of ``clusterIPs``; no ports read ``<none>``."""
    spec, status = section(service, "spec"), section(service, "status")
    cluster_ips = items(spec, "clusterIPs") or ([spec["clusterIP"]] if spec.get("clusterIP") else [])
    selector = spec.get("selector")
    return [
        name_of(service),
        str(spec.get("type") or ""),
        str(cluster_ips[0]) if cluster_ips else "<none>",
        _external_ip(spec, status),
        _port_string(mappings(spec, "ports")) or "<none>",
        age(service, now),
        format_labels(selector if isinstance(selector, Mapping) else None),
    ]


# --- small kinds ----------------------------------------------------------------------------------------


def _count(value: object) -> int:
    return len(value) if isinstance(value, Mapping | list) else 0


def _int_or_string(value: object) -> str:
    """``intstr.IntOrString.String()``, or upstream's ``N/A`` for an unset PDB bound."""
    return "N/A" if value is None else str(value)


NAMESPACE_COLUMNS: Final = (NAME_COLUMN, Column("Status", "string", "The status of the namespace"), AGE_COLUMN)
CONFIGMAP_COLUMNS: Final = (
    NAME_COLUMN,
    Column("Data", "string", "Data contains the configuration data."),
    AGE_COLUMN,
)
SECRET_COLUMNS: Final = (
    NAME_COLUMN,
    Column("Type", "string", "Used to facilitate programmatic handling of secret data."),
    Column("Data", "string", "Data contains the secret data."),
    AGE_COLUMN,
)
SERVICE_ACCOUNT_COLUMNS: Final = (
    NAME_COLUMN,
    Column("Secrets", "string", "Secrets is a list of the secrets in the same namespace."),
    AGE_COLUMN,
)
LEASE_COLUMNS: Final = (
    NAME_COLUMN,
    Column("Holder", "string", "holderIdentity contains the identity of the holder of a current lease."),
    AGE_COLUMN,
)
PRIORITY_CLASS_COLUMNS: Final = (
    NAME_COLUMN,
    Column("Value", "integer", "value represents the integer value of this priority class."),
    Column(
        "Global-Default",
        "boolean",
        "globalDefault specifies whether this PriorityClass should be considered as the default priority for "
        "pods that do not have any priority class.",
    ),
    AGE_COLUMN,
    # Priority 0 upstream although its printer only fills it for wide output: the server always prints wide,
    # so plain `kubectl get pc` shows PREEMPTIONPOLICY.
    Column("PreemptionPolicy", "string", "preemptionPolicy is the Policy for preempting pods with lower priority."),
)
PDB_COLUMNS: Final = (
    NAME_COLUMN,
    Column("Min Available", "string", "The minimum number of pods that must be available."),
    Column("Max Unavailable", "string", "The maximum number of pods that may be unavailable."),
    Column("Allowed Disruptions", "integer", "Calculated number of pods that may be disrupted at this time."),
    AGE_COLUMN,
)


def namespace_row(obj: Obj, now: float) -> list[Any]:
    return [name_of(obj), str(section(obj, "status").get("phase") or ""), age(obj, now)]


def configmap_row(obj: Obj, now: float) -> list[Any]:
    """DATA counts ``data`` and ``binaryData`` keys."""
    return [name_of(obj), _count(obj.get("data")) + _count(obj.get("binaryData")), age(obj, now)]


def secret_row(obj: Obj, now: float) -> list[Any]:
    """DATA counts keys after upstream's conversion merges write-only ``stringData`` into ``data``."""
    keys = {*(obj.get("data") or {}), *(obj.get("stringData") or {})}
    return [name_of(obj), str(obj.get("type") or ""), len(keys), age(obj, now)]


def service_account_row(obj: Obj, now: float) -> list[Any]:
    return [name_of(obj), _count(obj.get("secrets")), age(obj, now)]


def lease_row(obj: Obj, now: float) -> list[Any]:
    return [name_of(obj), str(section(obj, "spec").get("holderIdentity") or ""), age(obj, now)]


def priority_class_row(obj: Obj, now: float) -> list[Any]:
    return [
        name_of(obj),
        int_field(obj, "value"),
        obj.get("globalDefault") is True,
        age(obj, now),
        str(obj.get("preemptionPolicy") or ""),
    ]


def pdb_row(obj: Obj, now: float) -> list[Any]:
    """MIN AVAILABLE and MAX UNAVAILABLE print as set (``2`` or ``50%``), ``N/A`` when unset."""
    spec = section(obj, "spec")
    return [
        name_of(obj),
        _int_or_string(spec.get("minAvailable")),
        _int_or_string(spec.get("maxUnavailable")),
        int_field(section(obj, "status"), "disruptionsAllowed"),
        age(obj, now),
    ]


# --- the default convertor, the registry and the Table ------------------------------------------------------

DEFAULT_COLUMNS: Final = (NAME_COLUMN, Column("Created At", "date", CREATED_DOC))


def default_row(obj: Obj, now: float) -> list[Any]:
    """Upstream's ``defaultTableConvertor``: the name and the creation time in RFC 3339, UTC (Go's zero time
    when unset), for every kind without a printer."""
    created = epoch(meta_of(obj).get("creationTimestamp"))
    return [name_of(obj), "0001-01-01T00:00:00Z" if created is None else format_time(created)]


DEFAULT_PRINTER: Final = Printer(DEFAULT_COLUMNS, default_row)
PRINTERS: Final[Mapping[tuple[str, str], Printer]] = {
    **WORKLOAD_PRINTERS,
    **BATCH_PRINTERS,
    **ENDPOINTS_PRINTERS,
    **MORE_PRINTERS,
    **STORAGE_PRINTERS,
    **DRA_PRINTERS,
    **CORE_MORE_PRINTERS,
    **CONTROLLER_REVISION_PRINTERS,
    ("", "Node"): Printer(NODE_COLUMNS, node_row),
    ("", "Namespace"): Printer(NAMESPACE_COLUMNS, namespace_row),
    ("", "Event"): Printer(EVENT_COLUMNS, event_row),
    ("events.k8s.io", "Event"): Printer(EVENT_COLUMNS, events_v1_row),
    ("", "Service"): Printer(SERVICE_COLUMNS, service_row),
    ("", "ConfigMap"): Printer(CONFIGMAP_COLUMNS, configmap_row),
    ("", "Secret"): Printer(SECRET_COLUMNS, secret_row),
    ("", "ServiceAccount"): Printer(SERVICE_ACCOUNT_COLUMNS, service_account_row),
    ("coordination.k8s.io", "Lease"): Printer(LEASE_COLUMNS, lease_row),
    ("scheduling.k8s.io", "PriorityClass"): Printer(PRIORITY_CLASS_COLUMNS, priority_class_row),
    ("policy", "PodDisruptionBudget"): Printer(PDB_COLUMNS, pdb_row),
    ("apiregistration.k8s.io", "APIService"): APISERVICE_PRINTER,
}


def column_definitions(kind: tuple[str, str]) -> list[dict[str, Any]]:
    """The column definitions sent for ``(group, kind)``: all of them, wide ones with priority 1."""
    return [column.to_wire() for column in PRINTERS.get(kind, DEFAULT_PRINTER).columns]


def row_for(kind: tuple[str, str], obj: Obj, *, now: float) -> list[Any]:
    """The cells of one object's row, one per column definition (a watch event's Table has one row)."""
    return PRINTERS.get(kind, DEFAULT_PRINTER).row(obj, now)


def to_table(
    kind: tuple[str, str],
    objects: Sequence[Obj],
    *,
    list_meta: Mapping[str, Any],
    include_object: str = "Metadata",
    now: float,
    no_headers: bool = False,
    api_version: str = "meta.k8s.io/v1",
    printer: Printer | None = None,
) -> dict[str, Any]:
    """A ``meta.k8s.io`` Table of ``objects``: a list, or one object for a get or a watch event.

    ``list_meta`` becomes the Table's metadata (``resourceVersion``, ``continue``, ``remainingItemCount``).
    ``include_object`` is the request's ``includeObject``: ``Metadata`` (or empty) embeds a
    ``PartialObjectMetadata`` whose apiVersion is the Table's, ``Object`` the object itself, ``None`` nothing
    (the key is left out; upstream writes ``"object": null``). Any other value raises ValueError with
    upstream's message, for a 400. ``no_headers`` sends no column definitions, as upstream does for every
    watch event after the first. Row objects share structure with ``objects``: serialise, don't mutate.
    """
    if include_object not in INCLUDE_OBJECT_VALUES:
        raise ValueError(f"unrecognized includeObject value: {go_quote(include_object)}")
    if api_version not in TABLE_API_VERSIONS:
        raise ValueError(f"Table is not served as {api_version}; use meta.k8s.io/v1 or meta.k8s.io/v1beta1")
    printer = printer or PRINTERS.get(kind, DEFAULT_PRINTER)  # given: a custom resource's columns
    rows = []
    for obj in objects:
        row: dict[str, Any] = {"cells": printer.row(obj, now)}
        if printer.conditions is not None and (conditions := printer.conditions(obj)):
            row["conditions"] = conditions
        if include_object == "Object":
            row["object"] = obj
        elif include_object != "None":
            row["object"] = {"kind": "PartialObjectMetadata", "apiVersion": api_version, "metadata": dict(meta_of(obj))}
        rows.append(row)
    return {
        "kind": "Table",
        "apiVersion": api_version,
        "metadata": dict(list_meta),
        "columnDefinitions": [] if no_headers else [column.to_wire() for column in printer.columns],
        "rows": rows,
    }
