"""The clusterrole-aggregation controller (upstream ``pkg/controller/clusterroleaggregation``, v1.37): pins
``TestSyncClusterRole`` (union over every selector, matched roles by name, self skipped, duplicates dropped,
no write when equal) and, end to end over the bootstrap policy, how admin/edit/view get their rules."""

from __future__ import annotations

from typing import Any

from kubeplane.apiserver.auth import bootstrap
from kubeplane.controllers.clusterrole_aggregation import ClusterRoleAggregationController, aggregated_rules
from kubeplane.controllers.manager import available_controllers
from tests.controllers import harness
from tests.controllers.harness import eventually

Env = harness.Env[ClusterRoleAggregationController]
ROLES = "clusterroles.rbac.authorization.k8s.io"
VIEW_LABEL = "rbac.authorization.k8s.io/aggregate-to-view"


def _role(name: str, rules: list[Any], labels: dict[str, str] | None = None, selectors: Any = None) -> Any:
    role: dict[str, Any] = {"metadata": {"name": name, "labels": labels or {}}, "rules": rules}
    if selectors is not None:
        role["aggregationRule"] = {"clusterRoleSelectors": selectors}
    return role


def _r(verb: str, resource: str) -> dict[str, Any]:
    return {"apiGroups": [""], "resources": [resource], "verbs": [verb]}


def _union(*rule_lists: list[Any]) -> list[Any]:
    out: list[Any] = []
    for rules in rule_lists:
        out += [r for r in rules if r not in out]
    return out


def test_union_is_by_selector_then_name_without_self_or_duplicates() -> None:
    """TestSyncClusterRole: selectors in order, matches sorted by name, the aggregating role skipped, a rule
    kept at its first occurrence."""
    target = _role("target", [_r("get", "old")], {"a": "1"}, [{"matchLabels": {"b": "1"}}, {"matchLabels": {"a": "1"}}])
    roles = [
        target,
        _role("z-a", [_r("get", "pods"), _r("list", "pods")], {"a": "1"}),
        _role("y-b", [_r("get", "nodes")], {"b": "1"}),
        _role("m-a", [_r("list", "pods"), _r("watch", "pods")], {"a": "1"}),
        _role("unlabelled", [_r("delete", "pods")]),
    ]
    assert aggregated_rules(target, roles) == [
        _r("get", "nodes"),
        _r("list", "pods"),
        _r("watch", "pods"),
        _r("get", "pods"),
    ]
    assert aggregated_rules(_role("plain", [_r("get", "x")]), roles) == []


def test_registered_with_the_controller_manager() -> None:
    assert available_controllers()["clusterrole-aggregation"] is ClusterRoleAggregationController


async def _bootstrap(env: Env) -> None:
    await bootstrap.reconcile(env.client.registry)


async def _rules(env: Env, name: str) -> list[Any]:
    return list((await env.client.get(env.res(ROLES), name)).get("rules") or [])


async def test_admin_edit_view_aggregate_the_bootstrap_roles() -> None:
    """view = system:aggregate-to-view; edit = aggregate-to-edit + view (view is labelled aggregate-to-edit);
    admin = edit + aggregate-to-admin: upstream's default admin/edit/view after the controller ran."""
    by_name = {r["metadata"]["name"]: r["rules"] for r in bootstrap.cluster_roles()}
    view = _union(by_name["system:aggregate-to-view"])
    edit = _union(by_name["system:aggregate-to-edit"], view)
    admin = _union(edit, by_name["system:aggregate-to-admin"])
    async with harness.running(ClusterRoleAggregationController, setup=_bootstrap) as env:

        async def converged() -> bool:
            return (
                await _rules(env, "view") == view
                and await _rules(env, "edit") == edit
                and await _rules(env, "admin") == admin
            )

        await eventually(converged, "admin/edit/view aggregated")


async def test_labelled_role_joins_view_and_leaves_on_delete() -> None:
    """A new ClusterRole labelled aggregate-to-view adds its rules to view (and through view to edit and admin);
    deleting it removes them again."""
    widget = {"apiGroups": ["example.com"], "resources": ["widgets"], "verbs": ["get", "list", "watch"]}
    async with harness.running(ClusterRoleAggregationController, setup=_bootstrap) as env:
        roles = env.res(ROLES)
        await eventually(lambda: _rules(env, "admin"), "admin aggregated")
        await env.client.create(roles, _role("widget-viewer", [widget], {VIEW_LABEL: "true"}))

        async def everywhere() -> bool:
            return all([widget in await _rules(env, n) for n in ("view", "edit", "admin")])

        await eventually(everywhere, "widget rule aggregated into view, edit and admin")
        assert (await _rules(env, "view"))[-1] == widget  # "widget-viewer" sorts after "system:aggregate-to-view"
        await env.client.delete(roles, "widget-viewer")

        async def gone() -> bool:
            return not any([widget in await _rules(env, n) for n in ("view", "edit", "admin")])

        await eventually(gone, "widget rule gone from view, edit and admin")


async def test_label_removed_removes_rules_and_equal_union_is_not_written() -> None:
    """Taking the label off drops the rules; once converged, a resync writes nothing (resourceVersion kept)."""
    extra = _r("get", "gadgets")
    async with harness.running(ClusterRoleAggregationController, setup=_bootstrap) as env:
        roles = env.res(ROLES)
        created = await env.client.create(roles, _role("gadgets", [extra], {VIEW_LABEL: "true"}))

        async def has() -> bool:
            return extra in await _rules(env, "view")

        await eventually(has, "gadget rule in view")
        created = await env.client.get(roles, "gadgets")
        created["metadata"]["labels"] = {}
        await env.client.update(roles, created)

        async def lacks() -> bool:
            return extra not in await _rules(env, "view")

        await eventually(lacks, "gadget rule out of view")
        view = await env.client.get(roles, "view")
        env.controller.enqueue(view)
        await harness.settle()
        assert (await env.client.get(roles, "view"))["metadata"]["resourceVersion"] == view["metadata"][
            "resourceVersion"
        ]
