"""``metrics.k8s.io/v1beta1`` NodeMetrics and PodMetrics, served by the API server from the kubelets' resource
metrics: what metrics-server provides upstream, and what ``kubectl top`` reads.

Upstream, metrics-server (kubernetes-sigs/metrics-server) scrapes every kubelet's ``/metrics/resource`` every
``--metric-resolution`` (15 s), keeps the last two points per node and container, turns the cumulative cpu
counters into a rate over the time between them (``window``) and serves the result through the aggregation
layer (an APIService). kubeplane serves the group from the API server itself, scraping on demand: there is no
aggregation layer to proxy through yet, and a scraper that runs only when asked costs nothing when nobody asks
(a background scraper would cost a request per node every 15 s on a thousand-node fleet). The kubelets are
reached exactly as for ``pods/log`` (:mod:`.kubelet_client`).

* **Scrapes**: a node's kubelet is scraped when a request needs it and its last scrape is older than
  :data:`MIN_SCRAPE_INTERVAL`; the last two scrapes per node are kept, as metrics-server keeps two points.
* **Rates** (metrics-server's ``storage``): a container's cpu is the counter's increase between its two points
  over their distance, which is the ``window``; a container with one point (it started after the previous
  scrape) is measured from its start (``container_start_time_seconds``) with zero usage, as metrics-server does
  for a container that started between scrapes. A node's cpu is likewise its counter's rate between two scrapes;
  on a node's first scrape (metrics-server would report nothing yet) it is the sum of its containers' rates with
  the shortest of their windows, so ``kubectl top`` answers at once.
* **Objects** as metrics-server writes them: ``metadata`` (name, namespace, the node's or pod's labels,
  ``creationTimestamp`` now), ``timestamp`` (the scrape's), ``window``, ``usage`` {cpu in nanocores, memory in
  bytes, canonical quantities}; PodMetrics ``containers`` [{name, usage}] sorted by name.
* **Errors**: a missing node or pod is the lister's 404 (``node "x" not found``, ``pod "x" not found``); one
  without metrics (not running, kubelet unreachable) is ``nodemetrics.metrics.k8s.io "x" not found`` /
  ``podmetrics.metrics.k8s.io "ns/x" not found``; lists leave such items out. Label and field selectors are the
  lists' (400 for a bad one).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubeplane.api.durations import format_duration
from kubeplane.api.meta import format_time, parse_time
from kubeplane.api.quantity import Format, Quantity
from kubeplane.api.resources import ResourceInfo

from . import errors
from .kubelet_client import KubeletClient
from .listing import ListOptions, list_objects
from .registry import Registry

log = logging.getLogger("kubeplane.apiserver")

GROUP, VERSION = "metrics.k8s.io", "v1beta1"
RESOURCES = (
    ResourceInfo(GROUP, VERSION, "NodeMetrics", "nodes", namespaced=False, storage_prefix="", verbs=("get", "list")),
    ResourceInfo(GROUP, VERSION, "PodMetrics", "pods", namespaced=True, storage_prefix="", verbs=("get", "list")),
)
"""The resources discovery lists (metrics-server's ``nodes`` and ``pods`` in ``metrics.k8s.io/v1beta1``)."""
MIN_SCRAPE_INTERVAL = 1.0
"""Seconds a node's scrape is reused for (bounds the load many ``kubectl top`` calls put on the kubelets)."""
Key = tuple[str, str, str]  # namespace, pod, container


@dataclass(slots=True)
class Scrape:
    """One parsed ``/metrics/resource``: sample time (unix s), node counters, per-container points."""

    at: float
    node_cpu: float | None = None
    node_memory: int | None = None
    cpu: dict[Key, float] = field(default_factory=dict)
    memory: dict[Key, int] = field(default_factory=dict)
    start: dict[Key, float] = field(default_factory=dict)


def _labels(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in text.split('",'):
        name, _, value = part.partition('="')
        out[name.strip()] = value.rstrip('"').replace('\\"', '"').replace("\\\\", "\\")
    return out


def parse_resource_metrics(body: str) -> Scrape:
    """The samples of a kubelet's ``/metrics/resource`` that metrics-server reads (names as upstream)."""
    scrape = Scrape(at=0.0)
    for line in body.splitlines():
        if not line or line.startswith("#"):
            continue
        name, brace, rest = line.partition("{")
        if brace:
            labels_text, _, rest = rest.partition("} ")
            labels = _labels(labels_text)
        else:
            name, _, rest = line.partition(" ")
            labels = {}
        fields = rest.split()
        if not fields:
            continue
        value = float(fields[0])
        if len(fields) > 1:
            scrape.at = max(scrape.at, int(fields[1]) / 1000)
        key = (labels.get("namespace", ""), labels.get("pod", ""), labels.get("container", ""))
        if name == "node_cpu_usage_seconds_total":
            scrape.node_cpu = value
        elif name == "node_memory_working_set_bytes":
            scrape.node_memory = int(value)
        elif name == "container_cpu_usage_seconds_total":
            scrape.cpu[key] = value
        elif name == "container_memory_working_set_bytes":
            scrape.memory[key] = int(value)
        elif name == "container_start_time_seconds":
            scrape.start[key] = value
    return scrape


def _started_bound(pod: Mapping[str, Any]) -> float:
    """A second after the latest start of the pod's containers (``startedAt`` has whole seconds): a scrape from
    before then may not show them."""
    latest = 0.0
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        started = ((status.get("state") or {}).get("running") or {}).get("startedAt")
        if started:
            with contextlib.suppress(ValueError):
                latest = max(latest, parse_time(started).timestamp() + 1.0)
    return latest


@dataclass(frozen=True, slots=True)
class Usage:
    cpu_cores: float
    memory: int
    at: float
    window: float


def _usage_doc(usage: Usage) -> dict[str, str]:
    return {
        "cpu": str(Quantity(round(usage.cpu_cores * 1e9))),
        "memory": str(Quantity.from_int(usage.memory, Format.BINARY_SI)),
    }


def _window(seconds: float) -> str:
    return format_duration(round(seconds * 1000) * 1_000_000)


class NodeSeries:
    """The last two scrapes of one node and the rates they give (module docstring)."""

    __slots__ = ("last", "monotonic", "previous")

    def __init__(self) -> None:
        self.previous: Scrape | None = None
        self.last: Scrape | None = None
        self.monotonic = float("-inf")

    def add(self, scrape: Scrape, monotonic: float) -> None:
        if self.last is not None and scrape.at <= self.last.at:
            return
        self.previous, self.last, self.monotonic = self.last, scrape, monotonic

    def containers(self, namespace: str, pod: str) -> dict[str, Usage]:
        last = self.last
        if last is None:
            return {}
        out: dict[str, Usage] = {}
        for key, cpu in last.cpu.items():
            if key[0] != namespace or key[1] != pod:
                continue
            usage = self._container(key, cpu, last)
            if usage is not None:
                out[key[2]] = usage
        return out

    def _container(self, key: Key, cpu: float, last: Scrape) -> Usage | None:
        memory = last.memory.get(key, 0)
        start = last.start.get(key)
        prev = self.previous
        if prev is not None and key in prev.cpu and prev.start.get(key) == start and prev.at < last.at:
            window = last.at - prev.at
            return Usage(max(cpu - prev.cpu[key], 0.0) / window, memory, last.at, window)
        if start is None or last.at <= start:
            return None
        window = last.at - start
        return Usage(cpu / window, memory, last.at, window)

    def node(self) -> Usage | None:
        last, prev = self.last, self.previous
        if last is None or last.node_cpu is None:
            return None
        memory = last.node_memory or 0
        if prev is not None and prev.node_cpu is not None and prev.at < last.at:
            window = last.at - prev.at
            return Usage(max(last.node_cpu - prev.node_cpu, 0.0) / window, memory, last.at, window)
        usages = [u for key, cpu in last.cpu.items() if (u := self._container(key, cpu, last)) is not None]
        if not usages:
            return Usage(0.0, memory, last.at, 0.0)
        return Usage(sum(u.cpu_cores for u in usages), memory, last.at, min(u.window for u in usages))


class MetricsAPI:
    """Serves NodeMetrics and PodMetrics (module docstring)."""

    def __init__(self, registry: Registry, kubelets: KubeletClient, *, clock: Callable[[], float] = time.monotonic):
        self._registry, self._kubelets, self._clock = registry, kubelets, clock
        self._series: dict[str, NodeSeries] = {}
        self._inflight: dict[str, asyncio.Future[None]] = {}

    async def _scrape(self, node: str, fresh_after: float = 0.0) -> NodeSeries | None:
        """The node's series, scraped again unless its last scrape is recent and not older than ``fresh_after``
        (unix s: a container the request is about started then, so an older scrape cannot show it)."""
        series = self._series.get(node)
        recent = series is not None and self._clock() - series.monotonic < MIN_SCRAPE_INTERVAL
        if series is not None and recent and series.last is not None and series.last.at >= fresh_after:
            return series
        pending = self._inflight.get(node)
        if pending is None:  # one scrape per node at a time; concurrent requests share it
            pending = self._inflight[node] = asyncio.ensure_future(self._fetch(node))
            pending.add_done_callback(lambda _f: self._inflight.pop(node, None))
        await asyncio.shield(pending)
        return self._series.get(node)

    async def _fetch(self, node: str) -> None:
        try:
            conn = await self._kubelets.connection(node)
            response = await self._kubelets.get(conn, "/metrics/resource")
            try:
                if response.status != 200:
                    log.info("scraping kubelet %s: status %d", node, response.status)
                    return
                body = await response.text()
            finally:
                response.close()
            scrape = parse_resource_metrics(body)
        except (errors.APIError, ValueError) as exc:  # metrics-server logs and leaves the node out
            log.info("scraping kubelet %s: %s", node, exc)
            return
        self._series.setdefault(node, NodeSeries()).add(scrape, self._clock())

    async def _scrape_all(self, nodes: set[str]) -> None:
        await asyncio.gather(*(self._scrape(n) for n in sorted(nodes)))

    # --- NodeMetrics ---------------------------------------------------------------------------------------------

    def _node_doc(self, node: Mapping[str, Any]) -> dict[str, Any] | None:
        meta = node.get("metadata") or {}
        series = self._series.get(str(meta.get("name", "")))
        usage = series.node() if series is not None else None
        if usage is None:
            return None
        metadata: dict[str, Any] = {"name": meta.get("name"), "creationTimestamp": format_time(self._registry.now())}
        if meta.get("labels"):
            metadata["labels"] = dict(meta["labels"])
        return {
            "kind": "NodeMetrics",
            "apiVersion": f"{GROUP}/{VERSION}",
            "metadata": metadata,
            "timestamp": format_time(usage.at),
            "window": _window(usage.window),
            "usage": _usage_doc(usage),
        }

    async def get_node(self, name: str) -> dict[str, Any]:
        nodes = self._registry.resource("", "nodes")
        node = self._registry.get_cached(nodes, None, name)
        if node is None:
            raise errors.not_found("", "node", name)
        await self._scrape(name)
        doc = self._node_doc(node)
        if doc is None:
            raise errors.not_found(GROUP, "nodemetrics", name)
        return doc

    async def list_nodes(self, options: ListOptions) -> dict[str, Any]:
        nodes = await list_objects(self._registry, self._registry.resource("", "nodes"), None, options)
        await self._scrape_all({str(n["metadata"]["name"]) for n in nodes["items"]})
        items = [doc for n in nodes["items"] if (doc := self._node_doc(n)) is not None]
        return {"kind": "NodeMetricsList", "apiVersion": f"{GROUP}/{VERSION}", "metadata": {}, "items": items}

    # --- PodMetrics ----------------------------------------------------------------------------------------------

    def _pod_doc(self, pod: Mapping[str, Any]) -> dict[str, Any] | None:
        meta = pod.get("metadata") or {}
        series = self._series.get(str((pod.get("spec") or {}).get("nodeName") or ""))
        if series is None:
            return None
        containers = series.containers(str(meta.get("namespace", "")), str(meta.get("name", "")))
        if not containers:
            return None
        metadata: dict[str, Any] = {
            "name": meta.get("name"),
            "namespace": meta.get("namespace"),
            "creationTimestamp": format_time(self._registry.now()),
        }
        if meta.get("labels"):
            metadata["labels"] = dict(meta["labels"])
        usages = sorted(containers.items())
        first = max(usages, key=lambda item: item[1].at)[1]
        return {
            "kind": "PodMetrics",
            "apiVersion": f"{GROUP}/{VERSION}",
            "metadata": metadata,
            "timestamp": format_time(first.at),
            "window": _window(min(u.window for _, u in usages)),
            "containers": [{"name": name, "usage": _usage_doc(u)} for name, u in usages],
        }

    async def get_pod(self, namespace: str, name: str) -> dict[str, Any]:
        pods = self._registry.resource("", "pods")
        pod = self._registry.get_cached(pods, namespace, name)
        if pod is None:
            raise errors.not_found("", "pod", name)
        node = (pod.get("spec") or {}).get("nodeName")
        if node:
            await self._scrape(str(node), _started_bound(pod))
        doc = self._pod_doc(pod)
        if doc is None:
            raise errors.not_found(GROUP, "podmetrics", f"{namespace}/{name}")
        return doc

    async def list_pods(self, namespace: str | None, options: ListOptions) -> dict[str, Any]:
        pods = await list_objects(self._registry, self._registry.resource("", "pods"), namespace, options)
        bounds: dict[str, float] = {}
        for p in pods["items"]:
            if node := (p.get("spec") or {}).get("nodeName"):
                bounds[str(node)] = max(bounds.get(str(node), 0.0), _started_bound(p))
        await asyncio.gather(*(self._scrape(n, bound) for n, bound in sorted(bounds.items())))
        items = [doc for p in pods["items"] if (doc := self._pod_doc(p)) is not None]
        return {"kind": "PodMetricsList", "apiVersion": f"{GROUP}/{VERSION}", "metadata": {}, "items": items}

    async def handle(self, resource: str, namespace: str | None, name: str, query: Mapping[str, str]) -> Any:
        """A GET on ``/apis/metrics.k8s.io/v1beta1/...``: ``resource`` is ``nodes`` or ``pods``."""
        options = ListOptions(
            label_selector=query.get("labelSelector", ""), field_selector=query.get("fieldSelector", "")
        )
        if resource == "nodes":
            return await (self.get_node(name) if name else self.list_nodes(options))
        if name:
            assert namespace is not None
            return await self.get_pod(namespace, name)
        return await self.list_pods(namespace, options)
