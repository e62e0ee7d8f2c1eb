"""Generate ``src/kubeplane/api/gotypes.json``: the Go types kube-apiserver decodes request bodies into.

Why: kube-apiserver decodes every body into the Go structs of k8s.io/api with sigs.k8s.io/json, so a field of the
wrong JSON type is a 400 whose message names the Go struct, the field path and the Go type (``json: cannot
unmarshal number into Go struct field PodSpec.spec.schedulerName of type string``). Those names are not in the
OpenAPI schemas the official client is generated from (they lose ``int32`` vs ``int64``, named string types such
as ``v1.RestartPolicy``, named maps such as ``v1.ResourceList``), so this tool reads the Go source itself.
:mod:`kubeplane.api.typed` walks bodies against the result. Run by hand after an upstream bump; the output is
committed, and kubeplane never reads Go source at runtime.

Input: two git repositories (``fetch`` snapshots are bare repositories, read with ``git show``): k8s.io/api and
k8s.io/apimachinery, at a commit (default ``HEAD``: the snapshots of 2026-07 hold v1.37's fields, including those
added after the v0.37.0-beta.0 tag that the official client 37 has); the output records both commits.

Output (sorted, one type per line)::

    {"tag": "<tag>",
     "roots": {"<group>/<version>/<Kind>": "<type id>", ...},
     "types": {"<type id>": ["struct", "<Go name>", {"<json key>": "<type expr>", ...}, ["<always encoded key>"]]
                          | ["named", "<pkg>.<Name>", "<underlying type expr>"]
                          | ["special", "<pkg>.<Name>", "<decoder>"], ...}}

A ``<type id>`` is ``<import path>.<Name>``. A ``<type expr>`` is a Go builtin (``string``, ``int32``, ``bool``,
``float64``, ``uint8`` ...), ``[]<expr>``, ``map[<expr>]<expr>``, ``any`` (``interface{}``) or a type id;
pointers are dropped, as Go's decoder indirects them before it reports a type. Embedded structs with ``json:",inline"``
(or no tag) contribute their fields to the parent, as encoding/json flattens them. A struct's always-encoded keys are
its fields with neither ``omitempty`` nor a pointer type: Go writes their zero value when they are unset. ``special``
types implement ``UnmarshalJSON`` (:data:`SPECIAL`); the decoder names how :mod:`kubeplane.api.typed` reads them.

Usage: ``.venv/bin/python tools/gen_gotypes.py --api /work/.mirror/kubernetes+api/repo
--apimachinery /work/.mirror/kubernetes+apimachinery/repo [--tag T] [--check]``.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from kubeplane.api.typed import split_map

OUT = Path(__file__).resolve().parent.parent / "src" / "kubeplane" / "api" / "gotypes.json"
API = "k8s.io/api"
MACHINERY = "k8s.io/apimachinery"

# Packages whose kinds are roots: the API groups kube-apiserver serves (kubeplane's and the ones open issues add).
API_PACKAGES = (
    "core/v1",
    "apps/v1",
    "autoscaling/v1",
    "batch/v1",
    "policy/v1",
    "scheduling/v1",
    "scheduling/v1alpha3",
    "scheduling/v1beta1",
    "storage/v1",
    "rbac/v1",
    "coordination/v1",
    "events/v1",
    "networking/v1",
    "discovery/v1",
    "resource/v1",
    "authentication/v1",
    "authorization/v1",
)
# Kinds of a rooted package that kube-apiserver no longer serves: not roots (so nothing decodes or documents
# them). scheduling.k8s.io/v1beta1 PriorityClass was removed in 1.22 (its zz_generated.prerelease-lifecycle.go);
# the package is rooted for v1.37's v1beta1 Workload and PodGroup.
REMOVED_KINDS: dict[str, tuple[str, ...]] = {"scheduling/v1beta1": ("PriorityClass", "PriorityClassList")}
# Packages the rooted ones refer to, whose own kinds are not served.
REFERENCED_PACKAGES: tuple[str, ...] = ()
MACHINERY_PACKAGES = ("pkg/apis/meta/v1", "pkg/api/resource", "pkg/util/intstr", "pkg/runtime", "pkg/types")

# Types with their own UnmarshalJSON (apimachinery), by type id -> the decoder kubeplane.api.typed applies.
SPECIAL = {
    f"{MACHINERY}/pkg/api/resource.Quantity": ("resource.Quantity", "quantity"),
    f"{MACHINERY}/pkg/util/intstr.IntOrString": ("intstr.IntOrString", "int-or-string"),
    f"{MACHINERY}/pkg/apis/meta/v1.Time": ("v1.Time", "time"),
    f"{MACHINERY}/pkg/apis/meta/v1.MicroTime": ("v1.MicroTime", "microtime"),
    f"{MACHINERY}/pkg/apis/meta/v1.Duration": ("v1.Duration", "duration"),
    f"{MACHINERY}/pkg/apis/meta/v1.FieldsV1": ("v1.FieldsV1", "any"),
    f"{MACHINERY}/pkg/runtime.RawExtension": ("runtime.RawExtension", "any"),
}
# meta/v1 kinds every group version serves (DeleteOptions bodies, Status).
META_ROOTS = ("DeleteOptions", "Status")

BUILTINS = frozenset(
    {
        "string",
        "bool",
        "int",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "float32",
        "float64",
        "byte",
    }
)


@dataclass
class Package:
    path: str  # import path
    name: str  # package clause (what reflect prints: v1, resource, intstr ...)
    group: str | None  # API group (None: not an API group package)
    version: str
    raw_structs: dict[str, tuple[str, dict[str, str], str]] = field(default_factory=dict)  # body, imports, file
    named: dict[str, str] = field(default_factory=dict)  # name -> underlying expr
    kinds: list[str] = field(default_factory=list)  # structs that embed TypeMeta


def git_show(repo: Path, tag: str, path: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "show", f"{tag}:{path}"], check=True, capture_output=True, text=True
    ).stdout


def _commit(repo: Path, tag: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "rev-parse", f"{tag}^{{commit}}"], check=True, capture_output=True, text=True
    ).stdout.strip()


def git_ls(repo: Path, tag: str, directory: str) -> list[str]:
    out = subprocess.run(
        ["git", "-C", str(repo), "ls-tree", "--name-only", f"{tag}:{directory}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return [
        f"{directory}/{name}"
        for name in out.split()
        if name.endswith(".go")
        and not name.endswith("_test.go")
        and not name.startswith("zz_generated")
        and not name.startswith("generated")
        and "swagger_doc" not in name
    ]


_BLOCK_COMMENT = re.compile(r"/\*.*?\*/", re.S)
_LINE_COMMENT = re.compile(r"//[^\n]*")
_PACKAGE = re.compile(r"^package\s+(\w+)", re.M)
_IMPORT_BLOCK = re.compile(r"^import\s*\((.*?)^\)", re.M | re.S)
_IMPORT_ONE = re.compile(r'^import\s+(\w+\s+)?"([^"]+)"', re.M)
_IMPORT_LINE = re.compile(r'^\s*(\w+\s+)?"([^"]+)"', re.M)
_STRUCT = re.compile(r"^type\s+(\w+)\s+struct\s*\{(.*?)^\}", re.M | re.S)
_NAMED = re.compile(r"^type\s+(\w+)\s+([^\s{=][^\n]*)$", re.M)
_GROUP = re.compile(r'^const\s+GroupName\s*=\s*"([^"]*)"', re.M)
_JSON_TAG = re.compile(r'json:"([^"]*)"')


def _imports(src: str) -> dict[str, str]:
    """alias -> import path for one file (the alias defaults to the path's last element)."""
    out: dict[str, str] = {}
    specs = [m.groups() for m in _IMPORT_ONE.finditer(src)]
    for block in _IMPORT_BLOCK.findall(src):
        specs.extend(m.groups() for m in _IMPORT_LINE.finditer(block))
    for alias, path in specs:
        out[(alias or "").strip() or path.rsplit("/", 1)[-1]] = path
    return out


def resolve(expr: str, pkg_path: str, imports: dict[str, str]) -> str:
    expr = expr.strip().lstrip("*")
    if expr.startswith("[]"):
        return "[]" + resolve(expr[2:], pkg_path, imports)
    if expr.startswith("map["):
        key, value = split_map(expr)
        return f"map[{resolve(key, pkg_path, imports)}]{resolve(value, pkg_path, imports)}"
    if expr in ("interface{}", "any"):
        return "any"
    if expr == "byte":
        return "uint8"
    if expr in BUILTINS:
        return expr
    if "." in expr:
        alias, name = expr.split(".", 1)
        return f"{imports[alias]}.{name}"
    return f"{pkg_path}.{expr}"


def struct_fields(pkg: Package, name: str) -> list[tuple[str | None, str, bool]]:
    """(json key, type expr, always encoded) per field of a struct; key None for an embedded struct flattened into
    it. "Always encoded": neither ``omitempty`` nor a pointer, so Go writes the field's zero value when unset."""
    body, imports, path = pkg.raw_structs[name]
    fields: list[tuple[str | None, str, bool]] = []
    for raw_line in body.splitlines():
        line = raw_line.strip()
        if not line:
            continue
        decl, _, rest = line.partition("`")
        tag_match = _JSON_TAG.search(rest)
        words = decl.split()
        if len(words) == 1:  # embedded
            go_name, type_expr = words[0].lstrip("*").rsplit(".", 1)[-1], words[0]
        elif len(words) == 2:
            go_name, type_expr = words
        else:
            raise SystemExit(f"{path}: cannot parse struct {name} field line: {line!r}")
        if not go_name[:1].isupper():
            continue  # unexported: encoding/json ignores it
        key, _, opts = (tag_match.group(1) if tag_match else "").partition(",")
        if key == "-":
            continue
        resolved = resolve(type_expr, pkg.path, imports)
        always = "omitempty" not in opts.split(",") and not type_expr.startswith("*")
        fields.append((None if len(words) == 1 and not key else key or go_name, resolved, always))
    return fields


def parse_package(repo: Path, tag: str, prefix: str, directory: str) -> Package:
    files = git_ls(repo, tag, directory)
    pkg_path = f"{prefix}/{directory}"
    pkg = Package(path=pkg_path, name="", group=None, version=directory.rsplit("/", 1)[-1])
    for path in files:
        raw = git_show(repo, tag, path)
        src = _BLOCK_COMMENT.sub("", raw)
        src = _LINE_COMMENT.sub("", src).replace("struct{}", "struct {\n}")
        pkg.name = _PACKAGE.search(src).group(1)  # type: ignore[union-attr]
        group = _GROUP.search(src)
        if group:
            pkg.group = group.group(1)
        imports = _imports(src)
        for name, body in _STRUCT.findall(src):
            if name[:1].isupper():  # API types never refer to unexported ones
                pkg.raw_structs[name] = (body, imports, path)
                if re.search(r"^\s*metav1\.TypeMeta\s", body, re.M):
                    pkg.kinds.append(name)
        for name, raw_underlying in _NAMED.findall(src):
            underlying = raw_underlying.strip()
            if underlying.startswith(("struct", "interface", "func")) or "=" in underlying:
                continue
            pkg.named[name] = resolve(underlying, pkg_path, imports)
    return pkg


def build(api: Path, machinery: Path, tag: str) -> dict[str, object]:
    packages = [parse_package(api, tag, API, d) for d in API_PACKAGES]
    referenced = [parse_package(api, tag, API, d) for d in REFERENCED_PACKAGES]
    packages += [parse_package(machinery, tag, MACHINERY, d) for d in MACHINERY_PACKAGES]
    by_path = {p.path: p for p in [*packages, *referenced]}
    types: dict[str, list[object]] = {}
    roots: dict[str, str] = {}

    def flat_fields(type_id: str) -> tuple[dict[str, str], list[str]]:
        pkg_path, name = type_id.rsplit(".", 1)
        out: dict[str, str] = {}
        always: list[str] = []
        for key, expr, encoded in struct_fields(by_path[pkg_path], name):
            if key is None:
                inner, inner_always = flat_fields(expr)
                out.update(inner)
                always.extend(inner_always)
            else:
                out[key] = expr
                if encoded and key not in ("kind", "apiVersion"):
                    always.append(key)
        return out, always

    def visit(expr: str) -> None:
        if expr.startswith("[]"):
            visit(expr[2:])
            return
        if expr.startswith("map["):
            key, value = split_map(expr)
            visit(key)
            visit(value)
            return
        if expr in BUILTINS or expr == "any" or expr in types:
            return
        if expr in SPECIAL:
            types[expr] = ["special", *SPECIAL[expr]]
            return
        pkg_path, name = expr.rsplit(".", 1)
        pkg = by_path.get(pkg_path)
        if pkg is None:
            raise SystemExit(f"type {expr}: package {pkg_path} is not parsed (add it to the tool's package lists)")
        if name in pkg.raw_structs:
            fields, always = flat_fields(expr)
            types[expr] = ["struct", name, fields, always]
            for child in fields.values():
                visit(child)
        elif name in pkg.named:
            types[expr] = ["named", f"{pkg.name}.{name}", pkg.named[name]]
            visit(pkg.named[name])
        else:
            raise SystemExit(f"type {expr} not found in {pkg_path}")

    for pkg in packages:
        if pkg.group is None or pkg.path.endswith("/meta/v1"):
            continue
        removed = next((kinds for p, kinds in REMOVED_KINDS.items() if pkg.path.endswith("/" + p)), ())
        for kind in pkg.kinds:
            if kind in removed:
                continue
            type_id = f"{pkg.path}.{kind}"
            roots[f"{pkg.group}/{pkg.version}/{kind}"] = type_id
            visit(type_id)
    meta = f"{MACHINERY}/pkg/apis/meta/v1"
    for kind in META_ROOTS:
        roots[f"meta.k8s.io/v1/{kind}"] = f"{meta}.{kind}"
        visit(f"{meta}.{kind}")
    commits = [_commit(repo, tag) for repo in (api, machinery)]
    return {
        "tag": f"k8s.io/api@{commits[0]} k8s.io/apimachinery@{commits[1]}",
        "roots": dict(sorted(roots.items())),
        "types": dict(sorted(types.items())),
    }


def render(doc: dict[str, object]) -> str:
    """Deterministic, one entry per line (diffs stay readable)."""
    lines = ["{", f'  "tag": {json.dumps(doc["tag"])},', '  "roots": {']
    roots = doc["roots"]
    types = doc["types"]
    assert isinstance(roots, dict)
    assert isinstance(types, dict)
    lines.append(",\n".join(f"    {json.dumps(k)}: {json.dumps(v)}" for k, v in roots.items()))
    lines.append("  },")
    lines.append('  "types": {')
    lines.append(",\n".join(f"    {json.dumps(k)}: {json.dumps(v, separators=(',', ':'))}" for k, v in types.items()))
    lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n"


def generator_main(description: str, out: Path, generate: Callable[[Path, Path, str], str], tool: str) -> int:
    """The command line every generator over the k8s.io/api and apimachinery sources shares: ``--api``,
    ``--apimachinery``, ``--tag``, and ``--check`` (exit 1 when the committed ``out`` differs)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--api", type=Path, required=True, help="git repository of k8s.io/api")
    parser.add_argument("--apimachinery", type=Path, required=True, help="git repository of k8s.io/apimachinery")
    parser.add_argument("--tag", default="HEAD", help="commit or tag of both repositories (default: HEAD)")
    parser.add_argument("--check", action="store_true", help="fail if the committed file differs")
    args = parser.parse_args()
    text = generate(args.api, args.apimachinery, args.tag)
    if args.check:
        if out.read_text() != text:
            print(f"{out} is out of date: run {tool}", file=sys.stderr)
            return 1
        return 0
    out.write_text(text)
    print(f"wrote {out}")
    return 0


def main() -> int:
    return generator_main(
        __doc__.split("\n", 1)[0], OUT, lambda api, mach, tag: render(build(api, mach, tag)), "tools/gen_gotypes.py"
    )


if __name__ == "__main__":
    sys.exit(main())
