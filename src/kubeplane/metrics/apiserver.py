"""kube-apiserver's request metrics (upstream ``apiserver/pkg/endpoints/metrics``): names, help, buckets, labels.

Verbs as upstream's ``MonitorRequest`` reports them: the HTTP method, with GET split into GET (one object) and
LIST (a collection) by scope, WATCH for ``?watch=true``, APPLY for a server-side-apply PATCH; so a create is
``POST``, an update ``PUT``, a delete or deletecollection ``DELETE``.
"""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge

from ._per_registry import PerRegistry
from .histogram import FastHistogram

__all__ = ["REQUEST_DURATION_BUCKETS", "APIServerMetrics", "clean_scope", "reported_verb"]

REQUEST_DURATION_BUCKETS = (
    0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 45, 60,
)  # fmt: skip
VALID_VERBS = frozenset(
    {"APPLY", "CONNECT", "CREATE", "DELETE", "DELETECOLLECTION", "GET", "LIST", "PATCH", "POST", "PROXY", "PUT",
     "UPDATE", "WATCH", "WATCHLIST"}
)  # fmt: skip
APPLY_PATCH = "application/apply-patch+yaml"


def clean_scope(*, is_resource: bool, verb: str, namespace: str | None, name: str) -> str:
    """Upstream ``CleanScope``: resource (one object, or a create), namespace, cluster, or "" (non-resource)."""
    if name or verb == "create":
        return "resource"
    if namespace:
        return "namespace"
    if is_resource:
        return "cluster"
    return ""


def reported_verb(method: str, scope: str, *, watch: bool, content_type: str = "") -> str:
    """Upstream ``CanonicalVerb`` + ``cleanVerb``: the label an HTTP request is counted under."""
    verb = method.upper()
    if verb in ("GET", "HEAD"):
        verb = "LIST" if scope not in ("resource", "") else "GET"
    if watch:
        verb = "WATCH"
    elif verb == "PATCH" and content_type == APPLY_PATCH:
        verb = "APPLY"
    return verb if verb in VALID_VERBS else "other"


class APIServerMetrics:
    """The API server's metrics on one registry. Use :meth:`for_registry` (metrics register once per registry)."""

    def __init__(self, registry: CollectorRegistry, *, component: str = "apiserver") -> None:
        self.registry = registry
        self.component = component
        self.request_total = Counter(
            "apiserver_request",  # prometheus-client appends _total
            "Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, "
            "scope, component, and HTTP response code.",
            ["verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component", "code"],
            registry=registry,
        )
        self.request_duration = FastHistogram(
            "apiserver_request_duration_seconds",
            "Response latency distribution in seconds for each verb, dry run value, group, version, resource, "
            "subresource, scope and component.",
            ["verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component"],
            buckets=REQUEST_DURATION_BUCKETS,
            registry=registry,
        )
        self.registered_watchers = Gauge(
            "apiserver_registered_watchers",
            "Number of currently registered watchers for a given resources",
            ["group", "version", "kind"],
            registry=registry,
        )
        self.terminated_watchers = Counter(
            "apiserver_terminated_watchers",  # prometheus-client appends _total
            "Counter of watchers closed due to unresponsiveness broken by resource type.",
            ["group", "resource"],
            registry=registry,
        )
        self._children: dict[tuple[str, ...], tuple[Any, Any]] = {}

    @classmethod
    def for_registry(cls, registry: CollectorRegistry | None = None) -> APIServerMetrics:
        """The API server metrics of ``registry`` (default: the process-wide ``prometheus_client.REGISTRY``)."""
        return _SETS.get(registry)

    def request(
        self,
        *,
        verb: str,
        dry_run: str,
        group: str,
        version: str,
        resource: str,
        subresource: str,
        scope: str,
        code: int,
        seconds: float,
    ) -> None:
        """Count one finished request and observe its latency."""
        key = (verb, dry_run, group, version, resource, subresource, scope, str(code))
        children = self._children.get(key)
        if children is None:
            labels = (verb, dry_run, group, version, resource, subresource, scope, self.component)
            children = (self.request_total.labels(*labels, str(code)), self.request_duration.labels(*labels))
            self._children[key] = children
        children[0].inc()
        children[1].observe(seconds)

    def watcher_added(self, group: str, version: str, kind: str) -> None:
        self.registered_watchers.labels(group, version, kind).inc()

    def watcher_removed(self, group: str, version: str, kind: str) -> None:
        self.registered_watchers.labels(group, version, kind).dec()

    def watcher_terminated(self, group: str, resource: str) -> None:
        """A watcher closed for not keeping up (upstream's cacher ``TerminatedWatchersCounter``)."""
        self.terminated_watchers.labels(group, resource).inc()


_SETS: PerRegistry[APIServerMetrics] = PerRegistry(APIServerMetrics)
