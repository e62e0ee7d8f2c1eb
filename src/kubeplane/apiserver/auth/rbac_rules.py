"""Policy rules: matching a request (``rbac.RuleAllows`` and ``rbacv1helpers`` ``*Matches``) and covering other
rules (``pkg/registry/rbac/validation``: ``Covers``, ``BreakdownRule``, ``CompactRules``, ``CompactString``),
upstream v1.37.

A rule is kept as a :class:`Rule` of tuples, built once per role version from its wire form; matching is exact
string comparison with upstream's wildcards: ``*`` verb, group, resource and resource-less URL; ``*/scale`` for a
subresource of any resource; a non-resource URL ending in ``*`` matches its prefix.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubeplane.api.validation.field import go_quote

from .authorizer import Attributes

ALL = "*"


def _strings(value: object) -> tuple[str, ...]:
    return tuple(str(v) for v in value) if isinstance(value, list) else ()


@dataclass(frozen=True, slots=True)
class Rule:
    """``rbacv1.PolicyRule``."""

    verbs: tuple[str, ...] = ()
    api_groups: tuple[str, ...] = ()
    resources: tuple[str, ...] = ()
    resource_names: tuple[str, ...] = ()
    non_resource_urls: tuple[str, ...] = ()

    @classmethod
    def of(cls, wire: Mapping[str, Any]) -> Rule:
        return cls(
            _strings(wire.get("verbs")),
            _strings(wire.get("apiGroups")),
            _strings(wire.get("resources")),
            _strings(wire.get("resourceNames")),
            _strings(wire.get("nonResourceURLs")),
        )

    def wire(self) -> dict[str, object]:
        """The rule as the API writes it (empty lists left out, ``omitempty``)."""
        out: dict[str, object] = {"verbs": list(self.verbs)}
        for key, values in (
            ("apiGroups", self.api_groups),
            ("resources", self.resources),
            ("resourceNames", self.resource_names),
            ("nonResourceURLs", self.non_resource_urls),
        ):
            if values:
                out[key] = list(values)
        return out

    def allows(self, attrs: Attributes) -> bool:
        """``RuleAllows``."""
        if not (ALL in self.verbs or attrs.verb in self.verbs):
            return False
        if not attrs.resource_request:
            return any(_url_matches(rule_url, attrs.path) for rule_url in self.non_resource_urls)
        if not (ALL in self.api_groups or attrs.api_group in self.api_groups):
            return False
        sub = attrs.subresource
        combined = f"{attrs.resource}/{sub}" if sub else attrs.resource
        if not _resource_matches(self.resources, combined, sub):
            return False
        return not self.resource_names or attrs.name in self.resource_names


def _resource_matches(resources: Sequence[str], combined: str, subresource: str) -> bool:
    """``rbacv1helpers.ResourceMatches``."""
    for resource in resources:
        if resource in (ALL, combined):
            return True
        if (
            subresource
            and len(resource) == len(subresource) + 2
            and resource.startswith("*/")
            and resource.endswith(subresource)
        ):
            return True
    return False


def _url_matches(rule_url: str, path: str) -> bool:
    """``rbacv1helpers.NonResourceURLMatches``."""
    if rule_url in (ALL, path):
        return True
    return rule_url.endswith("*") and path.startswith(rule_url.rstrip("*"))


# -- covering (escalation checks) ----------------------------------------------------------------------------------


def breakdown(rule: Rule) -> list[Rule]:
    """``BreakdownRule``: one rule per (group, resource, verb[, name]) and per (URL, verb)."""
    out: list[Rule] = []
    for group in rule.api_groups:
        for resource in rule.resources:
            for verb in rule.verbs:
                if rule.resource_names:
                    out.extend(Rule((verb,), (group,), (resource,), (name,)) for name in rule.resource_names)
                else:
                    out.append(Rule((verb,), (group,), (resource,)))
    for url in rule.non_resource_urls:
        out.extend(Rule((verb,), non_resource_urls=(url,)) for verb in rule.verbs)
    return out


def _has_all(owner: Sequence[str], wanted: Sequence[str]) -> bool:
    return all(w in owner for w in wanted)


def _resources_cover(owner: Sequence[str], wanted: Sequence[str]) -> bool:
    """``resourceCoversAll``: ``*``, exact, or ``*/sub`` for a subresource."""
    if ALL in owner or _has_all(owner, wanted):
        return True
    for path in wanted:
        if path in owner:
            continue
        if "/" not in path:
            return False
        if "*/" + path.split("/", 1)[1] not in owner:
            return False
    return True


def _urls_cover(owner: Sequence[str], wanted: Sequence[str]) -> bool:
    """``nonResourceURLsCoversAll``."""
    return all(any(o == w or (o.endswith("*") and w.startswith(o.rstrip("*"))) for o in owner) for w in wanted)


def rule_covers(owner: Rule, sub: Rule) -> bool:
    """``ruleCovers``."""
    verbs = ALL in owner.verbs or _has_all(owner.verbs, sub.verbs)
    groups = ALL in owner.api_groups or _has_all(owner.api_groups, sub.api_groups)
    if not sub.resource_names:
        names = not owner.resource_names
    else:
        names = not owner.resource_names or _has_all(owner.resource_names, sub.resource_names)
    return (
        verbs
        and groups
        and _resources_cover(owner.resources, sub.resources)
        and names
        and _urls_cover(owner.non_resource_urls, sub.non_resource_urls)
    )


def covers(owner: Sequence[Rule], servant: Iterable[Rule]) -> tuple[bool, list[Rule]]:
    """``Covers``: whether ``owner`` holds every subrule of ``servant``, and the subrules it lacks."""
    missing = [sub for rule in servant for sub in breakdown(rule) if not any(rule_covers(o, sub) for o in owner)]
    return not missing, missing


def compact(rules: Sequence[Rule]) -> list[Rule]:
    """``CompactRules``: rules of one group, one resource and at most one name merge their verbs. (Upstream
    appends the merged rules in map order; the caller sorts their descriptions, so order does not show.)"""
    compacted: list[Rule] = []
    simple: dict[tuple[str, str, str | None], list[str]] = {}
    for rule in rules:
        if (
            len(rule.resource_names) <= 1
            and not rule.non_resource_urls
            and len(rule.api_groups) == 1
            and len(rule.resources) == 1
        ):
            name = rule.resource_names[0] if rule.resource_names else None
            simple.setdefault((rule.api_groups[0], rule.resources[0], name), []).extend(rule.verbs)
        else:
            compacted.append(rule)
    for (group, resource, name), verbs in simple.items():
        compacted.append(Rule(tuple(verbs), (group,), (resource,), (name,) if name is not None else ()))
    return compacted


def go_quote_list(values: Sequence[str]) -> str:
    """Go's ``%q`` of a ``[]string``: ``["a" "b"]``."""
    return "[" + " ".join(go_quote(v) for v in values) + "]"


def compact_string(rule: Rule) -> str:
    """``rbacv1helpers.CompactString``: ``{APIGroups:[""], Resources:["pods"], Verbs:["get"]}``."""
    parts: list[str] = []
    for label, values in (
        ("APIGroups", rule.api_groups),
        ("Resources", rule.resources),
        ("NonResourceURLs", rule.non_resource_urls),
        ("ResourceNames", rule.resource_names),
        ("Verbs", rule.verbs),
    ):
        if values:
            parts.append(f"{label}:{go_quote_list(values)}")
    return "{" + ", ".join(parts) + "}"
