"""Generate ``src/kubeplane/api/smd_types.json``: the server-side apply type markers of the Go API types.

Why: server-side apply merges lists and maps by their declared topology (structured-merge-diff's schema, which
kube-apiserver builds from the OpenAPI extensions ``x-kubernetes-list-type``, ``-list-map-keys``, ``-map-type``,
``-patch-strategy`` and ``-patch-merge-key``; those come from the Go comment markers ``+listType``, ``+listMapKey``,
``+mapType``, ``+structType`` and the struct tags ``patchStrategy``/``patchMergeKey``). ``gotypes.json`` drops
comments, so this tool reads the same Go source again, keeping them. It reuses ``gen_gotypes``'s package lists
and parsing helpers and keys its output by the same type ids, with embedded structs flattened the same way, so
:mod:`kubeplane.api.smd.schema` can pair both files.

Output::

    {"tag": "<same as gotypes.json>",
     "atomic_structs": ["<type id>", ...],                  # +structType=atomic (or +mapType=atomic on a struct)
     "fields": {"<type id>": {"<json key>": ["list", "<atomic|set|map>", ["<key>", ...]]
                                           | ["map", "<atomic|granular>"], ...}, ...}}

A field appears only when it carries a marker or a patch strategy; the list relationship follows kube-openapi's
``schemaconv.getListElementRelationship``: ``+listType`` wins; else ``patchStrategy`` ``merge`` (or
``merge,retainKeys``) is a map keyed by ``patchMergeKey``, or a set without one; ``retainKeys`` alone or nothing
is atomic (left out: atomic is the default).

Usage: ``.venv/bin/python tools/gen_smd_types.py --api /work/.mirror/kubernetes+api/repo
--apimachinery /work/.mirror/kubernetes+apimachinery/repo [--tag T] [--check]``.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen_gotypes import (
    API,
    API_PACKAGES,
    MACHINERY,
    MACHINERY_PACKAGES,
    REFERENCED_PACKAGES,
    _commit,
    _imports,
    generator_main,
    git_ls,
    git_show,
    resolve,
)

OUT = Path(__file__).resolve().parent.parent / "src" / "kubeplane" / "api" / "smd_types.json"
_STRUCT = re.compile(r"((?:^//[^\n]*\n)*)^type\s+(\w+)\s+struct\s*\{(.*?)^\}", re.M | re.S)
_TAG = re.compile(r'(\w+):"([^"]*)"')
_MARKER = re.compile(r"^\s*//\s*\+(listType|listMapKey|mapType|structType)=(\S+)")

FieldMarks = dict[str, list[object]]


def _relationship(markers: dict[str, list[str]], tags: dict[str, str], type_expr: str) -> list[object] | None:
    if type_expr.lstrip("*").startswith("[]"):
        if "listType" in markers:
            kind = markers["listType"][0]
            return ["list", kind, markers.get("listMapKey", []) if kind == "map" else []]
        strategy = tags.get("patchStrategy", "")
        if strategy in ("merge", "merge,retainKeys"):
            key = tags.get("patchMergeKey")
            return ["list", "map", [key]] if key else ["list", "set", []]
        return None
    if "mapType" in markers:
        return ["map", markers["mapType"][0]]
    if "structType" in markers:
        return ["map", markers["structType"][0]]
    return None


def parse(
    repo: Path, tag: str, prefix: str, directory: str
) -> tuple[dict[str, tuple[FieldMarks, list[str]]], set[str]]:
    """Per struct of one package: (json key -> relationship, embedded type ids), and the atomic structs."""
    pkg_path = f"{prefix}/{directory}"
    structs: dict[str, tuple[FieldMarks, list[str]]] = {}
    atomic: set[str] = set()
    for path in git_ls(repo, tag, directory):
        src = re.sub(r"/\*.*?\*/", "", git_show(repo, tag, path), flags=re.S).replace("struct{}", "struct {\n}")
        imports = _imports(re.sub(r"//[^\n]*", "", src))
        for doc, name, body in _STRUCT.findall(src):
            if not name[:1].isupper():
                continue
            if re.search(r"^//\s*\+(structType|mapType)=atomic", doc, re.M):
                atomic.add(f"{pkg_path}.{name}")
            fields: FieldMarks = {}
            embedded: list[str] = []
            markers: dict[str, list[str]] = {}
            for raw in body.splitlines():
                line = raw.strip()
                marker = _MARKER.match(line)
                if marker:
                    markers.setdefault(marker.group(1), []).append(marker.group(2))
                    continue
                if not line or line.startswith("//"):
                    continue
                decl, _, rest = line.partition("`")
                words = decl.split()
                tags = dict(_TAG.findall(rest))
                key = tags.get("json", "").split(",", 1)[0]
                if len(words) == 1 and not key:
                    embedded.append(resolve(words[0], pkg_path, imports))
                elif len(words) == 2 and words[0][:1].isupper() and key != "-":
                    rel = _relationship(markers, tags, words[1])
                    if rel is not None:
                        fields[key or words[0]] = rel
                markers = {}
            structs[f"{pkg_path}.{name}"] = (fields, embedded)
    return structs, atomic


def build(api: Path, machinery: Path, tag: str) -> dict[str, object]:
    structs: dict[str, tuple[FieldMarks, list[str]]] = {}
    atomic: set[str] = set()
    for repo, prefix, dirs in (
        (api, API, (*API_PACKAGES, *REFERENCED_PACKAGES)),
        (machinery, MACHINERY, MACHINERY_PACKAGES),
    ):
        for directory in dirs:
            found, atomic_found = parse(repo, tag, prefix, directory)
            structs.update(found)
            atomic |= atomic_found

    def flat(type_id: str) -> FieldMarks:
        own, embedded = structs[type_id]
        out: FieldMarks = {}
        for inner in embedded:
            if inner in structs:
                out.update(flat(inner))
        out.update(own)
        return out

    fields = {tid: flat(tid) for tid in sorted(structs)}
    commits = [_commit(repo, tag) for repo in (api, machinery)]
    return {
        "tag": f"k8s.io/api@{commits[0]} k8s.io/apimachinery@{commits[1]}",
        "atomic_structs": sorted(atomic),
        "fields": {tid: dict(sorted(f.items())) for tid, f in fields.items() if f},
    }


def render(doc: dict[str, object]) -> str:
    fields = doc["fields"]
    assert isinstance(fields, dict)
    body = ",\n".join(f"    {json.dumps(k)}: {json.dumps(v, separators=(',', ':'))}" for k, v in fields.items())
    return (
        "{\n"
        f'  "tag": {json.dumps(doc["tag"])},\n'
        f'  "atomic_structs": {json.dumps(doc["atomic_structs"], indent=4)},\n'
        '  "fields": {\n' + body + "\n  }\n}\n"
    )


def main() -> int:
    return generator_main(
        __doc__.split("\n", 1)[0], OUT, lambda api, mach, tag: render(build(api, mach, tag)), "tools/gen_smd_types.py"
    )


if __name__ == "__main__":
    raise SystemExit(main())
