"""Hypothesis strategies for abstract request plans: what to send, independent of the server's state.

A :class:`Plan` names a resource (an index into the served table), an action (a verb, or a verb on a subresource),
which existing object to target (an index into the harness's pool, taken modulo its size), and what to break:
mutations of the body at paths chosen by index (modulo the number of paths of the body the harness builds), query
parameters, Content-Type and Accept, the body's encoding, names in the URL. :mod:`.mutate` turns a plan into one
concrete request against the server's current state. Plans hold only what hypothesis drew, so a failing plan
shrinks (fewer mutations, smaller indices, simpler values) and replays under a fixed seed.

Sizes are bounded by :class:`Limits` (the bounded run stays small; the soak run goes up to the 3 MiB body limit).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

from hypothesis import strategies as st

from kubeplane.api.resources import ResourceInfo

ACTIONS: Final = (
    "create",
    "update",
    "patch-merge",
    "patch-strategic",
    "patch-json",
    "patch-apply",
    "delete",
    "deletecollection",
    "get",
    "list",
    "watch",
    "status-get",
    "status-update",
    "status-patch",
    "scale-get",
    "scale-update",
    "scale-patch",
    "binding",
    "binding-legacy",
    "eviction",
    "finalize",
    "other-subresource",
    "odd-method",
)
SUBRESOURCE_OF: Final = {
    "status-get": "status",
    "status-update": "status",
    "status-patch": "status",
    "scale-get": "scale",
    "scale-update": "scale",
    "scale-patch": "scale",
    "binding": "binding",
    "binding-legacy": "binding",
    "eviction": "eviction",
    "finalize": "finalize",
}
MUTATIONS: Final = ("retype", "remove", "quantity", "string", "nest", "grow", "unknown", "number")
ENCODINGS: Final = (
    "invalid-json",
    "yaml",
    "protobuf-junk",
    "empty",
    "non-object",
    "duplicate-key",
    "bom",
    "utf16",
    "nan",
    "huge-number",
    "trailing-garbage",
    "deep-array",
)
QUERY_PARAMS: Final = (
    "dryRun",
    "fieldValidation",
    "watch",
    "limit",
    "continue",
    "resourceVersion",
    "resourceVersionMatch",
    "timeoutSeconds",
    "gracePeriodSeconds",
    "propagationPolicy",
    "orphanDependents",
    "labelSelector",
    "fieldSelector",
    "allowWatchBookmarks",
    "sendInitialEvents",
    "pretty",
    "fieldManager",
    "force",
)
PARAM_VALUES: Final[dict[str, tuple[str, ...]]] = {
    "dryRun": ("All", "all", "Bogus", "", "All,All", "None"),
    "fieldValidation": ("Strict", "Warn", "Ignore", "strict", "Bogus", ""),
    "watch": ("1", "true", "false", "0", "yes", "True", ""),
    "limit": ("1", "0", "-1", "abc", "99999999999999999999", "1.5", ""),
    "continue": ("abc", "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MSwic3RhcnQiOiIifQ", "eyJ2Ijo1fQ", "%%%", "e30"),
    "resourceVersion": ("0", "1", "-1", "abc", "99999999999999999999", "1e3", ""),
    "resourceVersionMatch": ("NotOlderThan", "Exact", "Bogus", ""),
    "timeoutSeconds": ("1", "0", "-1", "abc", "99999999999999999999", "1.5"),
    "gracePeriodSeconds": ("0", "-1", "30", "abc", "99999999999999999999", "9223372036854775808", "1.5"),
    "propagationPolicy": ("Foreground", "Background", "Orphan", "Bogus", ""),
    "orphanDependents": ("true", "false", "bogus"),
    "labelSelector": ("app=fuzz", "a in b", "a=", "=b", "!", "a,", "a in (b", "a==b==c", "x" * 300, "a notin ()"),
    "fieldSelector": ("metadata.name=s1", "spec.nodeName=", "bogus.field=x", "metadata.name", "a==b==c", "=x"),
    "allowWatchBookmarks": ("true", "false", "bogus"),
    "sendInitialEvents": ("true", "false", "bogus"),
    "pretty": ("true", "false", "bogus"),
    "fieldManager": ("fuzz", "", "x" * 200, "\u00fc"),
    "force": ("true", "bogus"),
}
CONTENT_TYPES: Final = (
    "application/json",
    "application/json; charset=utf-8",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/json-patch+json",
    "application/apply-patch+yaml",
    "text/plain",
    "text/html",
    "multipart/form-data; boundary=x",
    "application/x-www-form-urlencoded",
    "",
    "application/json; charset=utf-16",
    ";;;",
)
ACCEPTS: Final = (
    "application/json",
    "application/json;as=Table;v=v1;g=meta.k8s.io",
    "application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json",
    "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io",
    "application/vnd.kubernetes.protobuf",
    "application/yaml",
    "text/html",
    "*/*",
    "garbage",
    "application/json;q=0",
    "",
)
BAD_NAMES: Final = (
    "",
    "A",
    "-a",
    "a-",
    "a_b",
    "a.b",
    "a" * 64,
    "a" * 254,
    "..",
    ".",
    "%",
    "%2F",
    "a%2Fb",
    "a/b",
    "\u00fc",
    " a",
    "a b",
    "a\tb",
    "default",
    "kube-system",
    "*",
    "a:b",
    "a?b",
    "a#b",
    "%00",
    "%ZZ",
)
BAD_QUANTITIES: Final[tuple[Any, ...]] = (
    "abc",
    "",
    "1.2.3",
    "-1",
    "1Qi",
    "1e1000",
    "9" * 100,
    "1ki",
    " 1",
    "+-1",
    "\u221e",
    "1e",
    ".",
    "NaN",
    "9999999999999999999Ei",
    "0.0000000000001",
    5,
    -1,
    1.5,
    True,
    None,
    [],
    {},
)
INTERESTING_STRINGS: Final = (*BAD_NAMES, "../X", "\u0000", "\ud7ff", "$(VAR)", "{}", "[]", "null", "true", "1")
NEST_DEPTHS: Final = (10, 100, 250, 260, 500, 1000, 3000, 10001)
DIRECTIVES: Final = (
    None,
    ("$patch", "replace"),
    ("$patch", "delete"),
    ("$patch", "bogus"),
    ("$retainKeys", ["spec"]),
    ("$retainKeys", "x"),
    ("$setElementOrder/containers", [{"name": "c"}]),
    ("$setElementOrder/containers", 5),
    ("$deleteFromPrimitiveList/finalizers", ["x"]),
    ("$deleteFromPrimitiveList/finalizers", "x"),
)
JSON_PATCH_OPS: Final = ("add", "remove", "replace", "move", "copy", "test", "bogus", "")
POINTERS: Final = ("existing", "existing", "existing", "append", "missing", "bad-escape", "no-slash", "out-of-range")
UNSERVED_SUBRESOURCES: Final = (
    "attach",
    "exec",
    "log",
    "portforward",
    "proxy",
    "ephemeralcontainers",
    "resize",
    "token",
    "nonsense",
)
METHODS: Final = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "TRACE", "CONNECT", "FOO")


@dataclass(frozen=True)
class Limits:
    """Upper bounds on what a plan may ask for: body bytes, list/map elements, nesting depth, JSON-patch copies."""

    max_bytes: int = 200_000
    max_elements: int = 300
    max_depth: int = 1000
    max_copies: int = 6


BOUNDED: Final = Limits()
SOAK: Final = Limits(max_bytes=3_300_000, max_elements=3000, max_depth=10001, max_copies=24)


@dataclass(frozen=True)
class Mutation:
    """``op`` at the ``where``-th candidate path (modulo) of the body; ``value``: the JSON value, size or depth."""

    op: str
    where: int
    value: Any = None
    shape: str = ""


@dataclass(frozen=True)
class PatchOp:
    op: str
    where: int
    pointer: str
    source: int
    value: Any


@dataclass(frozen=True)
class Plan:
    resource: int
    action: str
    target: int = 0
    mutations: tuple[Mutation, ...] = ()
    query: tuple[tuple[str, str], ...] = ()
    content_type: str | None = None
    accept: str | None = None
    encoding: str = "json"
    url_name: str | None = None
    url_namespace: str | None = None
    patch_ops: tuple[PatchOp, ...] = ()
    directive: Any = None
    fresh: bool = False
    method: str = ""
    subresource: str = ""
    notes: tuple[str, ...] = field(default=())


def json_scalars() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**31), max_value=2**31),
        st.sampled_from([2**31, 2**32, 2**53 + 1, 2**63, 2**64, -(2**63) - 1, 10**30]),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=12),
        st.sampled_from(INTERESTING_STRINGS),
    )


def json_values() -> st.SearchStrategy[Any]:
    return st.recursive(
        json_scalars(),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
        max_leaves=6,
    )


def mutations(limits: Limits) -> st.SearchStrategy[Mutation]:
    where = st.integers(min_value=0, max_value=10_000)
    sizes = st.sampled_from([s for s in (10, 1_000, 100_000, 1_000_000, 3_200_000) if s <= limits.max_bytes])
    elements = st.sampled_from([n for n in (2, 10, 100, 300, 1000, 3000) if n <= limits.max_elements])
    depths = st.sampled_from([d for d in NEST_DEPTHS if d <= limits.max_depth])
    return st.one_of(
        st.builds(Mutation, st.just("retype"), where, json_values()),
        st.builds(Mutation, st.just("remove"), where),
        st.builds(Mutation, st.just("quantity"), where, st.sampled_from(BAD_QUANTITIES)),
        st.builds(Mutation, st.just("string"), where, st.sampled_from(INTERESTING_STRINGS) | st.text(max_size=20)),
        st.builds(Mutation, st.just("nest"), where, depths, st.sampled_from(["list", "object"])),
        st.builds(Mutation, st.just("grow"), where, sizes, st.just("string")),
        st.builds(Mutation, st.just("grow"), where, elements, st.sampled_from(["list", "map"])),
        st.builds(Mutation, st.just("unknown"), where, json_values()),
        st.builds(
            Mutation,
            st.just("number"),
            where,
            st.sampled_from([-1, 0, 2**31, 2**63, 2**64, -(2**63) - 1, 1.5, 1e308, -0.0, 10**30]),
        ),
        st.builds(Mutation, st.just("name"), where, st.sampled_from(BAD_NAMES) | st.text(max_size=10)),
        st.builds(Mutation, st.just("namespace"), where, st.sampled_from(BAD_NAMES) | st.just("nope")),
    )


def patch_ops(limits: Limits) -> st.SearchStrategy[tuple[PatchOp, ...]]:
    one = st.builds(
        PatchOp,
        st.sampled_from(JSON_PATCH_OPS),
        st.integers(min_value=0, max_value=10_000),
        st.sampled_from(POINTERS),
        st.integers(min_value=0, max_value=10_000),
        json_values(),
    )
    copies = st.integers(min_value=2, max_value=limits.max_copies).map(
        lambda n: tuple(PatchOp("copy", 0, "copy-bomb", i, None) for i in range(n))
    )
    return st.lists(one, min_size=0, max_size=6).map(tuple) | copies


def queries() -> st.SearchStrategy[tuple[tuple[str, str], ...]]:
    pair = st.sampled_from(QUERY_PARAMS).flatmap(
        lambda k: st.tuples(st.just(k), st.sampled_from(PARAM_VALUES[k]) | st.text(max_size=8))
    )
    return st.lists(pair, max_size=4).map(tuple)


def _applicable(resources: list[ResourceInfo], action: str) -> list[int]:
    sub = SUBRESOURCE_OF.get(action)
    if sub is None:
        return list(range(len(resources)))
    found = [i for i, r in enumerate(resources) if r.subresource(sub) is not None]
    return found or list(range(len(resources)))


def plans(resources: list[ResourceInfo], limits: Limits = BOUNDED) -> st.SearchStrategy[Plan]:
    """One request plan: an action, a resource that has it (one in ten: any resource), and what to break.

    The sub-strategies are built once here: hypothesis pays for building a strategy on every draw otherwise."""
    by_action = {action: st.sampled_from(_applicable(resources, action)) for action in ACTIONS}
    any_resource = st.integers(0, len(resources) - 1)
    body_mutations = st.lists(mutations(limits), min_size=1, max_size=3).map(tuple)
    query = queries()
    ops = patch_ops(limits)
    namespaces = st.sampled_from((*BAD_NAMES, "nope"))

    @st.composite
    def plan(draw: st.DrawFn) -> Plan:
        action = draw(st.sampled_from(ACTIONS))
        resource = draw(any_resource if draw(st.integers(0, 9)) == 0 else by_action[action])
        broken = draw(st.integers(0, 9))  # 0-1: nothing broken, 2-5: body mutations, 6-9: one of the other axes
        muts: tuple[Mutation, ...] = ()
        if 2 <= broken <= 5 or draw(st.integers(0, 4)) == 0:
            muts = draw(body_mutations)
        return Plan(
            resource=resource,
            action=action,
            target=draw(st.integers(min_value=0, max_value=50)),
            mutations=muts,
            query=draw(query) if broken in (6, 7) or draw(st.integers(0, 5)) == 0 else (),
            content_type=draw(st.sampled_from(CONTENT_TYPES)) if broken == 8 and draw(st.booleans()) else None,
            accept=draw(st.sampled_from(ACCEPTS)) if broken == 8 or draw(st.integers(0, 9)) == 0 else None,
            encoding=draw(st.sampled_from(ENCODINGS)) if broken == 9 else "json",
            url_name=draw(st.sampled_from(BAD_NAMES)) if draw(st.integers(0, 14)) == 0 else None,
            url_namespace=draw(namespaces) if draw(st.integers(0, 19)) == 0 else None,
            patch_ops=draw(ops) if action == "patch-json" else (),
            directive=draw(st.sampled_from(DIRECTIVES)) if action == "patch-strategic" else None,
            fresh=draw(st.booleans()),
            method=draw(st.sampled_from(METHODS)) if action in ("other-subresource", "odd-method") else "",
            subresource=draw(st.sampled_from(UNSERVED_SUBRESOURCES)) if action == "other-subresource" else "",
        )

    return plan()
