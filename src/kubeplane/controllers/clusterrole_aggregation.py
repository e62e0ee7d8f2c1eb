"""The ClusterRole aggregation controller (upstream ``pkg/controller/clusterroleaggregation``, v1.37; controller
``clusterrole-aggregation``, upstream's kube-controller-manager name ``clusterrole-aggregation-controller``).

A ClusterRole with an ``aggregationRule`` holds exactly the union of the rules of the ClusterRoles its selectors
match: selector by selector, matched roles sorted by name, itself skipped, each rule kept at its first occurrence
(duplicates, as ``equality.Semantic.DeepEqual`` sees them, dropped). The rules are replaced whole, so a rule
whose source role loses the label or is deleted disappears at the next sync; a role whose rules already equal the
union is not written. Any ClusterRole event queues every aggregated role (upstream: the set is small and the
dependency graph unknown, so everything is re-checked). Writes use upstream's Update path (``updateClusterRoles``,
its fallback when server-side apply is unavailable: kubeplane's client has no apply patch type).
"""

from __future__ import annotations

import logging
from typing import Any, ClassVar

from kubeplane.api.labels import label_selector_as_selector
from kubeplane.api.views import labels_of, meta_of
from kubeplane.client.interface import Obj

from .base import Controller, ControllerContext, split_key

__all__ = ["ClusterRoleAggregationController", "aggregated_rules"]

log = logging.getLogger("kubeplane.controllers.clusterrole_aggregation")

_RULE_FIELDS = ("verbs", "apiGroups", "resources", "resourceNames", "nonResourceURLs")


def _semantic(rule: Any) -> tuple[tuple[str, tuple[Any, ...]], ...]:
    """A rule as ``equality.Semantic`` compares it: nil and empty lists alike, field order irrelevant."""
    if not isinstance(rule, dict):
        return ()
    return tuple((k, tuple(rule.get(k) or ())) for k in _RULE_FIELDS)


def aggregated_rules(role: Obj, all_roles: list[Obj]) -> list[Any]:
    """``syncClusterRole``'s union for ``role`` over ``all_roles`` (the lister's view)."""
    name = meta_of(role).get("name")
    out: list[Any] = []
    seen: set[tuple[tuple[str, tuple[Any, ...]], ...]] = set()
    for selector in (role.get("aggregationRule") or {}).get("clusterRoleSelectors") or []:
        matcher = label_selector_as_selector(selector)
        matched = sorted(
            (r for r in all_roles if matcher.matches(labels_of(r))), key=lambda r: str(meta_of(r).get("name"))
        )
        for other in matched:
            if meta_of(other).get("name") == name:
                continue
            for rule in other.get("rules") or []:
                key = _semantic(rule)
                if key not in seen:
                    seen.add(key)
                    out.append(rule)
    return out


class ClusterRoleAggregationController(Controller):
    name: ClassVar[str] = "clusterrole-aggregation"
    workers: ClassVar[int] = 5  # upstream's startClusterRoleAggregationController: Run(ctx, 5)

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.cluster_roles = ctx.client.resource("clusterroles.rbac.authorization.k8s.io")
        informer = ctx.informers.informer_for(self.cluster_roles)
        self.lister = informer.lister()
        informer.add_event_handler(
            on_add=lambda _obj: self._enqueue_all(),
            on_update=lambda _old, _new: self._enqueue_all(),
            on_delete=lambda _obj: self._enqueue_all(),
        )

    def _enqueue_all(self) -> None:
        """``enqueue``: every ClusterRole that aggregates."""
        for role in self.lister.list():
            if role.get("aggregationRule") is not None:
                self.enqueue(role)

    async def sync(self, key: str) -> None:
        """``syncClusterRole``."""
        _, name = split_key(key)
        role = self.lister.get(None, name)
        if role is None or role.get("aggregationRule") is None:
            return
        rules = aggregated_rules(role, self.lister.list())
        if [_semantic(r) for r in rules] == [_semantic(r) for r in role.get("rules") or []]:
            return
        updated: dict[str, Any] = {**role, "metadata": dict(meta_of(role)), "rules": rules}
        await self.client.update(self.cluster_roles, updated)
        log.debug("aggregated %d rules into ClusterRole %s", len(rules), name)
