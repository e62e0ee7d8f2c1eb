"""Rule coverage (upstream ``pkg/registry/rbac/validation/policy_comparator.go`` v1.37: ``Covers``,
``BreakdownRule``, ``ruleCovers``).

``covers(owner, servant)`` breaks every servant rule into single (group, resource, verb[, name]) and (URL, verb)
subrules and answers which of those no owner rule grants. Reconciliation appends exactly those subrules, which is
why upstream's reconciled roles show one-verb rules after an upgrade.
"""

from __future__ import annotations

from typing import Any

Rule = dict[str, Any]


def _list(rule: Rule, key: str) -> list[str]:
    value = rule.get(key)
    return [str(v) for v in value] if isinstance(value, list) else []


def breakdown_rule(rule: Rule) -> list[Rule]:
    """``BreakdownRule``: one subrule per group x resource x verb (x resource name), then per URL x verb."""
    out: list[Rule] = []
    names = _list(rule, "resourceNames")
    verbs = _list(rule, "verbs")
    for group in _list(rule, "apiGroups"):
        for resource in _list(rule, "resources"):
            for verb in verbs:
                if names:
                    for name in names:
                        out.append(
                            {"apiGroups": [group], "resources": [resource], "verbs": [verb], "resourceNames": [name]}
                        )
                else:
                    out.append({"apiGroups": [group], "resources": [resource], "verbs": [verb]})
    for url in _list(rule, "nonResourceURLs"):
        for verb in verbs:
            out.append({"nonResourceURLs": [url], "verbs": [verb]})
    return out


def _has_all(owner: list[str], servant: list[str]) -> bool:
    return set(servant) <= set(owner)


def _resource_covers_all(owner: list[str], servant: list[str]) -> bool:
    if _has_all(owner, servant) or "*" in owner:
        return True
    for resource in servant:  # a subresource wildcard "*/scale" covers "deployments/scale"
        if "/" not in resource:
            return False
        sub = resource[resource.index("/") + 1 :]
        if f"*/{sub}" not in owner:
            return False
    return True


def _url_covers(owner: str, sub: str) -> bool:
    return owner == sub or (owner.endswith("*") and sub.startswith(owner.rstrip("*")))


def rule_covers(owner: Rule, sub: Rule) -> bool:
    """``ruleCovers``: does ``owner`` grant everything the (broken down) ``sub`` grants."""
    owner_verbs, owner_groups = _list(owner, "verbs"), _list(owner, "apiGroups")
    owner_names, sub_names = _list(owner, "resourceNames"), _list(sub, "resourceNames")
    verbs = "*" in owner_verbs or _has_all(owner_verbs, _list(sub, "verbs"))
    groups = "*" in owner_groups or _has_all(owner_groups, _list(sub, "apiGroups"))
    resources = _resource_covers_all(_list(owner, "resources"), _list(sub, "resources"))
    owner_urls = _list(owner, "nonResourceURLs")
    urls = all(any(_url_covers(o, s) for o in owner_urls) for s in _list(sub, "nonResourceURLs"))
    names = not owner_names if not sub_names else (not owner_names or _has_all(owner_names, sub_names))
    return verbs and groups and resources and names and urls


def covers(owner_rules: list[Rule], servant_rules: list[Rule]) -> tuple[bool, list[Rule]]:
    """``Covers``: (all covered, the uncovered subrules in servant order)."""
    uncovered = [
        sub
        for servant in servant_rules
        for sub in breakdown_rule(servant)
        if not any(rule_covers(owner, sub) for owner in owner_rules)
    ]
    return not uncovered, uncovered
