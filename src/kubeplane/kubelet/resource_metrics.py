"""The kubelet's resource metrics (``/metrics/resource``) from the simulated usage: what metrics-server scrapes.

Upstream (``pkg/kubelet/metrics/collectors/resource_metrics.go``) exposes, in the Prometheus text format with a
millisecond timestamp on each sample, ``node_cpu_usage_seconds_total``, ``node_memory_working_set_bytes``,
``pod_cpu_usage_seconds_total``, ``pod_memory_working_set_bytes``, ``container_cpu_usage_seconds_total``,
``container_memory_working_set_bytes``, ``container_start_time_seconds`` and ``resource_scrape_error``;
metrics-server turns two scrapes' cumulative cpu counters into a rate.

The usage model is the eviction manager's (:mod:`~kubeplane.kubelet.eviction`): a running pod uses its
``sim.kubeplane.io/usage-cpu`` / ``usage-memory`` annotation, else its requests, capped at its limits; the pod's
usage is shared among its running containers in proportion to their requests (all to the first when none
requests any). So a container's cumulative cpu is its rate times the time since it started, exactly linear;
the node's is integrated scrape after scrape (:class:`NodeCpu`), and its memory is the sum of its pods'.

Invariant: every counter is monotonic for one container run and for the node (a scrape never lowers it).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from kubeplane.api.quantity import Quantity, QuantityError
from kubeplane.api.views import section

from . import eviction
from .runtime import PodRuntime


def go_float(value: float) -> str:
    """Go's ``strconv.FormatFloat(v, 'g', -1, 64)`` as the Prometheus text encoder writes samples:
    shortest digits, in exponent form (``1.048576e+07``) when the decimal exponent is below -4 or at least 6
    (strconv decides with precision 6 for the shortest form), so ``123456`` but ``1e+06``."""
    if math.isnan(value):
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    dec = Decimal(repr(abs(value))).normalize()
    digits = "".join(str(d) for d in dec.as_tuple().digits)
    exp = dec.adjusted()
    if exp < -4 or exp >= 6:
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{mantissa}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if exp >= len(digits) - 1:
        return sign + digits + "0" * (exp - len(digits) + 1)
    if exp >= 0:
        return f"{sign}{digits[: exp + 1]}.{digits[exp + 1 :]}"
    return f"{sign}0.{'0' * (-exp - 1)}{digits}"


def _request(container: Any, resource: str) -> int:
    requests = section(container, "resources", "requests")
    if resource not in requests:
        return 0
    try:
        q = Quantity.parse(requests[resource])
    except QuantityError:
        return 0
    return q.milli_value() if resource == "cpu" else q.value()


def _split(total: int, weights: list[int]) -> list[int]:
    """``total`` shared in proportion to ``weights`` by cumulative rounding (the shares sum to ``total``)."""
    if not weights:
        return []
    whole = sum(weights)
    if whole <= 0:
        return [total if i == 0 else 0 for i in range(len(weights))]
    out, cumulative, given = [], 0, 0
    for weight in weights:
        cumulative += weight
        upto = total * cumulative // whole
        out.append(upto - given)
        given = upto
    return out


@dataclass(frozen=True, slots=True)
class ContainerUsage:
    name: str
    cpu_millis: int
    memory_bytes: int
    started_at: float


def container_usage(rt: PodRuntime) -> list[ContainerUsage]:
    """The running containers of ``rt`` (regular ones and sidecars) with their share of the pod's usage."""
    if rt.terminal or rt.rejected:
        return []
    pod = rt.pod
    spec = section(pod, "spec")
    specs = {c.get("name"): c for c in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]}
    running = [c for c in rt.all_containers() if c.running]
    if not running:
        return []
    cpu = _split(eviction.pod_cpu_usage(pod), [_request(specs.get(c.name), "cpu") for c in running])
    memory = _split(
        rt.memory_usage if rt.memory_usage is not None else eviction.pod_memory_usage(pod),
        [_request(specs.get(c.name), "memory") for c in running],
    )
    return [ContainerUsage(c.name, cpu[i], memory[i], c.started_at) for i, c in enumerate(running)]


class NodeCpu:
    """A node's cumulative cpu seconds, integrated at each scrape from the rate its pods use then."""

    __slots__ = ("at", "seconds")

    def __init__(self) -> None:
        self.seconds = 0.0
        self.at: float | None = None

    def advance(self, now: float, rate_cores: float) -> float:
        if self.at is not None and now > self.at:
            self.seconds += rate_cores * (now - self.at)
        self.at = now if self.at is None else max(self.at, now)
        return self.seconds


_HELP = {
    "container_cpu_usage_seconds_total": ("counter", "Cumulative cpu time consumed by the container in core-seconds"),
    "container_memory_working_set_bytes": ("gauge", "Current working set of the container in bytes"),
    "container_start_time_seconds": ("gauge", "Start time of the container since unix epoch in seconds"),
    "node_cpu_usage_seconds_total": ("counter", "Cumulative cpu time consumed by the node in core-seconds"),
    "node_memory_working_set_bytes": ("gauge", "Current working set of the node in bytes"),
    "pod_cpu_usage_seconds_total": ("counter", "Cumulative cpu time consumed by the pod in core-seconds"),
    "pod_memory_working_set_bytes": ("gauge", "Current working set of the pod in bytes"),
    "resource_scrape_error": ("gauge", "1 if there was an error while getting container metrics, 0 otherwise"),
}


def render(pods: Iterable[PodRuntime], node_cpu: NodeCpu, now: float) -> bytes:
    """``/metrics/resource`` of one node at ``now`` (module docstring), families in upstream's (sorted) order."""
    millis = int(now * 1000)
    now, stamp = millis / 1000, str(millis)  # the samples are computed at the instant their timestamp says
    samples: dict[str, list[str]] = {name: [] for name in _HELP}
    node_rate = 0.0
    node_memory = 0
    for rt in sorted(pods, key=lambda r: (r.namespace, r.name)):
        usage = container_usage(rt)
        if not usage:
            continue
        pod_labels = f'namespace="{rt.namespace}",pod="{rt.name}"'
        pod_cpu = 0.0
        pod_memory = 0
        for c in sorted(usage, key=lambda u: u.name):
            labels = f'container="{c.name}",{pod_labels}'
            cpu_seconds = c.cpu_millis / 1000 * max(now - c.started_at, 0.0)
            pod_cpu += cpu_seconds
            pod_memory += c.memory_bytes
            node_rate += c.cpu_millis / 1000
            samples["container_cpu_usage_seconds_total"].append(f"{{{labels}}} {go_float(cpu_seconds)} {stamp}")
            samples["container_memory_working_set_bytes"].append(f"{{{labels}}} {go_float(c.memory_bytes)} {stamp}")
            samples["container_start_time_seconds"].append(f"{{{labels}}} {go_float(c.started_at)} {stamp}")
        node_memory += pod_memory
        samples["pod_cpu_usage_seconds_total"].append(f"{{{pod_labels}}} {go_float(pod_cpu)} {stamp}")
        samples["pod_memory_working_set_bytes"].append(f"{{{pod_labels}}} {go_float(pod_memory)} {stamp}")
    samples["node_cpu_usage_seconds_total"].append(f" {go_float(node_cpu.advance(now, node_rate))} {stamp}")
    samples["node_memory_working_set_bytes"].append(f" {go_float(node_memory)} {stamp}")
    samples["resource_scrape_error"].append(" 0")
    out: list[str] = []
    for name, (kind, text) in _HELP.items():
        out.append(f"# HELP {name} [STABLE] {text}")
        out.append(f"# TYPE {name} {kind}")
        out.extend(name + sample for sample in samples[name])
    return ("\n".join(out) + "\n").encode()
