"""From a :class:`~.generate.Plan` and the target's current state to one concrete HTTP request.

Pure functions: the harness resolves the target (its name and current object) and hands them in. Mutations pick
their path by index modulo the candidate paths of the body being built, so the same plan breaks the same field of
the same kind of body whatever the server holds. Every request carries what the checks need (resource, action,
namespace and name of the object it touches, whether it is a dry run) and prints as a reproducer.
"""

from __future__ import annotations

import contextlib
import copy
import json
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import quote, urlencode

import orjson

from kubeplane.api.resources import ResourceInfo
from kubeplane.api.schema import load_schemas, root_type

from . import seeds
from .generate import SUBRESOURCE_OF, Mutation, PatchOp, Plan

Path = tuple[str | int, ...]
MAX_PATHS: Final = 4000
_DEFAULT_CT: Final = {
    "patch-merge": "application/merge-patch+json",
    "patch-strategic": "application/strategic-merge-patch+json",
    "patch-json": "application/json-patch+json",
    "patch-apply": "application/apply-patch+yaml",
    "status-patch": "application/merge-patch+json",
    "scale-patch": "application/merge-patch+json",
}
_METHOD: Final = {
    "create": "POST",
    "update": "PUT",
    "delete": "DELETE",
    "deletecollection": "DELETE",
    "get": "GET",
    "list": "GET",
    "watch": "GET",
    "status-get": "GET",
    "status-update": "PUT",
    "scale-get": "GET",
    "scale-update": "PUT",
    "binding": "POST",
    "binding-legacy": "POST",
    "eviction": "POST",
    "finalize": "PUT",
}


@dataclass
class Request:
    method: str
    path: str
    query: list[tuple[str, str]]
    headers: dict[str, str]
    body: bytes | None
    info: ResourceInfo
    action: str
    namespace: str | None
    name: str
    dry_run: bool = False
    notes: list[str] = field(default_factory=list)

    @property
    def target(self) -> str:
        return self.path + ("?" + urlencode(self.query) if self.query else "")

    def reproducer(self, limit: int = 600) -> str:
        """The request as a curl command line (the body cut at ``limit`` bytes, its full length noted)."""
        parts = [f"curl -X {self.method} '$SERVER{self.target}'"]
        parts += [f"-H '{k}: {v}'" for k, v in self.headers.items() if k.lower() != "authorization"]
        if self.body is not None:
            shown = self.body[:limit].decode("utf-8", "replace")
            more = f" ...[{len(self.body)} bytes]" if len(self.body) > limit else ""
            parts.append(f"--data-binary {json.dumps(shown)}{more}")
        return " ".join(parts)


# -- paths of a JSON document --------------------------------------------------------------------------------------


def paths(doc: Any) -> list[Path]:
    """Every node below the root, breadth first, at most :data:`MAX_PATHS`."""
    out: list[Path] = []
    queue: list[tuple[Path, Any]] = [((), doc)]
    while queue and len(out) < MAX_PATHS:
        at, node = queue.pop(0)
        children: list[tuple[str | int, Any]] = []
        if isinstance(node, dict):
            children = list(node.items())
        elif isinstance(node, list):
            children = list(enumerate(node))
        for key, child in children:
            out.append((*at, key))
            queue.append(((*at, key), child))
    return out


def typed_paths(doc: Any, ref: str) -> list[tuple[Path, str]]:
    """Paths of ``doc`` with their schema refs (``quantity``, ``integer``, a type name ...), breadth first."""
    types = load_schemas().types
    out: list[tuple[Path, str]] = []
    queue: list[tuple[Path, Any, str]] = [((), doc, ref)]
    while queue and len(out) < MAX_PATHS:
        at, node, r = queue.pop(0)
        if r.startswith("[]") and isinstance(node, list):
            items: list[tuple[str | int, Any, str]] = [(i, v, r[2:]) for i, v in enumerate(node)]
        elif r.startswith("{}") and isinstance(node, dict):
            items = [(k, v, r[2:]) for k, v in node.items()]
        elif isinstance(node, dict) and r in types:
            items = [(k, v, types[r][k]) for k, v in node.items() if k in types[r]]
        else:
            items = []
        for key, child, child_ref in items:
            out.append(((*at, key), child_ref))
            queue.append(((*at, key), child, child_ref))
    return out


def get_at(doc: Any, at: Path) -> Any:
    for key in at:
        doc = doc[key]
    return doc


def set_at(doc: Any, at: Path, value: Any) -> None:
    parent = get_at(doc, at[:-1])
    parent[at[-1]] = value


def remove_at(doc: Any, at: Path) -> None:
    parent = get_at(doc, at[:-1])
    del parent[at[-1]]


def _other_type(original: Any, value: Any) -> Any:
    """``value`` unless it has ``original``'s JSON type; then a value of the next type in the cycle."""
    cycle: list[Any] = ["x", 1, True, [], {}, None]
    if type(value) is not type(original):
        return value
    for candidate in cycle:
        if type(candidate) is not type(original):
            return candidate
    return None


NEST_MARK: Final = "@@fuzz-nest@@"


def nested(depth: int, shape: str) -> str:
    """A placeholder that :func:`encode` replaces with ``depth`` levels of lists or objects: no encoder (orjson
    stops at 255 levels, :mod:`json` at the recursion limit) has to walk them."""
    return f"{NEST_MARK}{shape}:{depth}"


def _expand_nesting(raw: bytes) -> bytes:
    mark = b'"' + NEST_MARK.encode()
    while (start := raw.find(mark)) >= 0:
        end = raw.index(b'"', start + 1)
        shape, depth = raw[start + len(mark) : end].decode().split(":")
        n = int(depth)
        deep = b'{"a":' * n + b'"x"' + b"}" * n if shape == "object" else b"[" * n + b'"x"' + b"]" * n
        raw = raw[:start] + deep + raw[end + 1 :]
    return raw


def _grow(original: Any, size: int, shape: str) -> Any:
    if shape == "string":
        return "x" * size
    if shape == "list":
        item = original[0] if isinstance(original, list) and original else (original if original is not None else "x")
        return [copy.deepcopy(item) for _ in range(size)]
    return {f"k{i}": "v" for i in range(size)}


def apply_mutation(doc: Any, mutation: Mutation, ref: str | None) -> list[Path]:
    """Apply one mutation to ``doc`` in place; the paths it changed (for merge patches)."""
    all_paths = paths(doc)
    if not all_paths:
        return []
    at = all_paths[mutation.where % len(all_paths)]
    op, value = mutation.op, mutation.value
    if op == "name":
        doc.setdefault("metadata", {}) if isinstance(doc, dict) else None
        if isinstance(doc, dict) and isinstance(doc["metadata"], dict):
            doc["metadata"]["name"] = value
            return [("metadata", "name")]
        return []
    if op == "namespace":
        if isinstance(doc, dict) and isinstance(doc.get("metadata"), dict):
            doc["metadata"]["namespace"] = value
            return [("metadata", "namespace")]
        return []
    if op in ("quantity", "number") and ref is not None:
        wanted = ("quantity",) if op == "quantity" else ("integer", "number")
        typed = [p for p, r in typed_paths(doc, ref) if r in wanted]
        if typed:
            at = typed[mutation.where % len(typed)]
    if op == "retype":
        set_at(doc, at, _other_type(get_at(doc, at), value))
    elif op == "remove":
        remove_at(doc, at)
    elif op in ("quantity", "number", "string"):
        set_at(doc, at, value)
    elif op == "nest":
        set_at(doc, at, nested(int(value), mutation.shape))
    elif op == "grow":
        set_at(doc, at, _grow(get_at(doc, at), int(value), mutation.shape))
    elif op == "unknown":
        parent = get_at(doc, at[:-1])
        if isinstance(parent, dict):
            parent["fuzzUnknownField"] = value
            at = (*at[:-1], "fuzzUnknownField")
        else:
            set_at(doc, at, {"fuzzUnknownField": value})
    return [at]


def project(doc: Any, changed: list[Path]) -> Any:
    """A merge patch carrying ``changed`` paths of ``doc`` (lists go whole, as merge patches replace them)."""
    patch: dict[str, Any] = {}
    for at in changed:
        node: Any = doc
        out: dict[str, Any] = patch
        for i, key in enumerate(at):
            try:
                child = node[key]
            except (KeyError, IndexError, TypeError):
                child = None  # removed: null deletes it
            if isinstance(key, int):
                break  # the list itself was set by the previous step
            if i == len(at) - 1 or not isinstance(child, dict | list):
                out[key] = copy.deepcopy(child)
                break
            if isinstance(child, list):
                out[key] = copy.deepcopy(child)
                break
            existing = out.get(key)
            if not isinstance(existing, dict):
                existing = out[key] = {}
            out, node = existing, child
    return patch


def _pointer(at: Path) -> str:
    return "".join("/" + str(k).replace("~", "~0").replace("/", "~1") for k in at)


def json_patch(doc: Any, ops: tuple[PatchOp, ...]) -> list[Any]:
    """RFC 6902 operations over ``doc``'s paths, some of them broken as the plan says."""
    all_paths = paths(doc) or [("metadata",)]
    out: list[Any] = []
    for op in ops:
        if op.pointer == "copy-bomb":
            if op.source == 0:
                out.append({"op": "add", "path": "/metadata/annotations", "value": {"a": "x" * 1000}})
            out.append({"op": "copy", "from": "/metadata/annotations", "path": f"/metadata/annotations/k{op.source}"})
            continue
        at = all_paths[op.where % len(all_paths)]
        source = all_paths[op.source % len(all_paths)]
        pointer = _pointer(at)
        if op.pointer == "append":
            pointer = _pointer(at[:-1]) + "/-"
        elif op.pointer == "missing":
            pointer = _pointer(at) + "/fuzzMissing/deeper"
        elif op.pointer == "bad-escape":
            pointer = pointer + "/a~2b"
        elif op.pointer == "no-slash":
            pointer = pointer.lstrip("/")
        elif op.pointer == "out-of-range":
            pointer = _pointer(at[:-1]) + "/99999"
        entry: dict[str, Any] = {"op": op.op, "path": pointer}
        if op.op in ("add", "replace", "test"):
            entry["value"] = op.value if op.where % 2 else copy.deepcopy(get_at(doc, at))
        if op.op in ("move", "copy"):
            entry["from"] = _pointer(source)
        out.append(entry)
    return out


# -- encodings -----------------------------------------------------------------------------------------------------


def dumps(doc: Any) -> bytes:
    """JSON bytes; integers beyond 64 bits (which orjson refuses) through :mod:`json`."""
    try:
        return orjson.dumps(doc)
    except TypeError:
        return json.dumps(doc, separators=(",", ":")).encode()


def encode(doc: Any, encoding: str) -> bytes:
    raw = _expand_nesting(dumps(doc) if encoding != "nan" else json.dumps(doc).encode())
    if encoding == "json":
        return raw
    if encoding == "invalid-json":
        return raw[: max(1, len(raw) // 2)]
    if encoding == "yaml":
        return b"apiVersion: v1\nkind: Pod\nmetadata:\n  name: fz-yaml\n" + b"x: [" + raw[:50]
    if encoding == "protobuf-junk":
        return b"k8s\x00\x0a\x09\x0a\x02v1\x12\x03Pod\x12\xff\xff\xff\xff\x0f" + raw[:64]
    if encoding == "empty":
        return b""
    if encoding == "non-object":
        return b'["not", "an", "object"]'
    if encoding == "duplicate-key":
        return b'{"metadata": 5, "spec": "x", ' + raw[1:] if raw.startswith(b"{") and len(raw) > 2 else raw
    if encoding == "bom":
        return b"\xef\xbb\xbf" + raw
    if encoding == "utf16":
        return raw.decode().encode("utf-16")
    if encoding == "nan":
        return raw.replace(b"}", b', "fuzzNaN": NaN}', 1)
    if encoding == "huge-number":
        return raw.replace(b"{", b'{"fuzzBig": 1' + b"0" * 400 + b", ", 1)
    if encoding == "trailing-garbage":
        return raw + b"}{garbage"
    if encoding == "deep-array":
        return b"[" * 100_000 + b"]" * 100_000
    raise ValueError(encoding)


# -- the request ---------------------------------------------------------------------------------------------------


@dataclass
class Target:
    """What the harness resolved: the object's namespace and name, its current body (None: absent)."""

    namespace: str | None
    name: str
    current: dict[str, Any] | None
    node: str = "fuzz-node"


def _url(info: ResourceInfo, namespace: str | None, name: str, sub: str, plan: Plan) -> str:
    ns = plan.url_namespace if plan.url_namespace is not None else namespace
    nm = plan.url_name if plan.url_name is not None and name else name
    parts = [f"/api/{info.version}" if not info.group else f"/apis/{info.group}/{info.version}"]
    if info.namespaced and ns is not None:
        parts.append(f"namespaces/{quote(ns, safe='%/.')}")
    parts.append(info.plural)
    if nm or (plan.url_name is not None and name):
        parts.append(quote(nm, safe="%/."))
    if sub:
        parts.append(sub)
    return "/".join(parts)


def build(plan: Plan, info: ResourceInfo, target: Target, fresh_name: str) -> Request:
    """The concrete request for ``plan`` on ``target`` (``fresh_name``: the name a create uses)."""
    action = plan.action
    sub = SUBRESOURCE_OF.get(action, plan.subresource)
    ns = target.namespace if info.namespaced else None
    name = "" if action in ("create", "list", "watch", "deletecollection") else target.name
    ref = root_type(group=info.group, version=info.version, kind=info.kind)
    body: Any = None
    method = plan.method or _METHOD.get(action, "PATCH")
    current = copy.deepcopy(target.current) if target.current is not None else seeds.make(info, target.name, ns)
    if action == "create":
        body = seeds.make(info, fresh_name, ns)
    elif action in (
        "update",
        "status-update",
        "finalize",
        "patch-merge",
        "patch-strategic",
        "status-patch",
        "patch-json",
    ):
        body = current
    elif action in ("scale-update", "scale-patch"):
        body = seeds.scale(target.name, ns or "", 3) if action == "scale-update" else {"spec": {"replicas": 3}}
        ref = "V1Scale"
    elif action in ("binding", "binding-legacy"):
        body = seeds.binding(target.name, ns or "", target.node)
        ref = "V1Binding"
    elif action == "eviction":
        body = seeds.eviction(target.name, ns or "")
        ref = "V1Eviction"
    elif action in ("delete", "deletecollection"):
        body = seeds.delete_options() if plan.fresh else None
        ref = "V1DeleteOptions"
    elif action in ("other-subresource", "odd-method") and method in ("POST", "PUT", "PATCH"):
        body = current
    changed: list[Path] = []
    for mutation in plan.mutations:
        if body is None:
            break
        with contextlib.suppress(KeyError, IndexError, TypeError):  # an earlier mutation replaced the parent
            changed += apply_mutation(body, mutation, ref)
    if action in ("patch-merge", "patch-strategic", "status-patch"):
        body = project(body, changed or [("metadata", "labels")])
        if plan.directive is not None and isinstance(body, dict):
            key, value = plan.directive
            spec = body.get("spec")
            (spec if isinstance(spec, dict) else body)[key] = value
    elif action == "patch-json":
        body = json_patch(target.current or body, plan.patch_ops) if plan.patch_ops or not changed else None
        if body is None:
            body = [{"op": "replace", "path": _pointer(at), "value": _value(current, at)} for at in changed]
    query: list[tuple[str, str]] = []
    if action == "watch":
        query = [("watch", "1"), ("timeoutSeconds", "1")]
    if action == "binding-legacy":
        url = _url(seeds.served()[2], ns, "", "", plan).replace("/pods", "/bindings")
    elif action == "odd-method":
        url = _url(info, ns, name if plan.target % 2 else "", "", plan)
    else:
        url = _url(info, ns, name, sub, plan)
    query += list(plan.query)
    headers = {
        "Content-Type": plan.content_type
        if plan.content_type is not None
        else _DEFAULT_CT.get(action, "application/json")
    }
    if plan.accept is not None:
        headers["Accept"] = plan.accept
    raw = encode(body, plan.encoding) if body is not None else None
    if raw is None and plan.encoding != "json" and method in ("POST", "PUT", "PATCH", "DELETE"):
        raw = encode({}, plan.encoding)
    if raw is None:
        del headers["Content-Type"]
    dry_run = any(k == "dryRun" for k, _ in query)
    return Request(method, url, query, headers, raw, info, action, ns, name or _body_name(body, fresh_name), dry_run)


def _value(doc: Any, at: Path) -> Any:
    try:
        return get_at(doc, at)
    except (KeyError, IndexError, TypeError):
        return None


def _body_name(body: Any, default: str) -> str:
    meta = body.get("metadata") if isinstance(body, dict) else None
    name = meta.get("name") if isinstance(meta, dict) else None
    return name if isinstance(name, str) else default
