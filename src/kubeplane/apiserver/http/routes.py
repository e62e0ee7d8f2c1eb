"""From a request path and method to what it asks for (upstream ``RequestInfoFactory``).

Resource paths are ``/api/v1/...`` (core) and ``/apis/<group>/<version>/...``, then either
``namespaces/<ns>/<resource>[/<name>[/<subresource>]]`` or ``<resource>[/<name>[/<subresource>]]``.
``namespaces/<name>/status`` and ``namespaces/<name>/finalize`` are subresources of the namespace itself, not
resources inside it (upstream's namespaceSubresources). Names are single path segments: a name containing
``/`` cannot be expressed, and ``.``/``..`` segments are refused, so no request can address a key outside its
collection.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import unquote

_NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})


@dataclass(frozen=True, slots=True)
class RequestInfo:
    is_resource: bool
    path: str
    verb: str = ""
    api_prefix: str = ""  # "api" or "apis"
    group: str = ""
    version: str = ""
    namespace: str | None = None
    resource: str = ""
    name: str = ""
    subresource: str = ""
    parts: tuple[str, ...] = ()


class BadPath(ValueError):
    pass


def _verb(method: str, *, has_name: bool, watch: bool) -> str:
    if method in ("GET", "HEAD"):
        if watch:
            return "watch"
        return "get" if has_name else "list"
    if method == "POST":
        return "create"
    if method == "PUT":
        return "update"
    if method == "PATCH":
        return "patch"
    if method == "DELETE":
        return "delete" if has_name else "deletecollection"
    return method.lower()


def parse_request(method: str, raw_path: str, *, watch: bool = False) -> RequestInfo:
    path = raw_path.split("?", 1)[0]
    parts = tuple(unquote(p) for p in path.strip("/").split("/") if p != "")
    if any(p in (".", "..") or "/" in p for p in parts):
        raise BadPath(f"invalid path segment in {raw_path!r}")
    if not parts or parts[0] not in ("api", "apis"):
        return RequestInfo(is_resource=False, path=path, parts=parts)
    if parts[0] == "api":
        if len(parts) < 3:
            return RequestInfo(is_resource=False, path=path, parts=parts)
        prefix, group, version, rest = "api", "", parts[1], list(parts[2:])
    else:
        if len(parts) < 4:
            return RequestInfo(is_resource=False, path=path, parts=parts)
        prefix, group, version, rest = "apis", parts[1], parts[2], list(parts[3:])
    namespace: str | None = None
    if rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in _NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
        else:  # the namespace object itself (or its status/finalize)
            namespace = None
    if len(rest) > 3:
        raise BadPath(f"too many path segments in {raw_path!r}")
    resource = rest[0]
    name = rest[1] if len(rest) > 1 else ""
    subresource = rest[2] if len(rest) > 2 else ""
    return RequestInfo(
        is_resource=True,
        path=path,
        verb=_verb(method, has_name=bool(name), watch=watch and not name),
        api_prefix=prefix,
        group=group,
        version=version,
        namespace=namespace,
        resource=resource,
        name=name,
        subresource=subresource,
        parts=parts,
    )
