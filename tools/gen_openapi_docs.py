"""Generate ``src/kubeplane/api/openapi_docs.json.gz``: descriptions, formats, defaults and enums of the API types.

Why: ``kubectl explain`` prints the ``description`` of each schema and property of the ``/openapi/v3`` documents.
Upstream's documents come from kube-openapi's ``openapi-gen``, which turns the Go doc comments of k8s.io/api and
k8s.io/apimachinery into descriptions. This tool applies the same rules (kube-openapi
``pkg/generators/openapi.go`` and ``enum.go``, at the version kube-apiserver v1.37 vendors) to the same Go source:

* a doc comment is the ``//`` lines right above a declaration, as go/ast's ``CommentGroup.Text()`` returns them
  (the marker and one space removed, directives such as ``//go:`` dropped, blank edge lines dropped);
* ``generateDescription``: lines after a ``---`` line are dropped, ``+marker`` and one-line ``TODO`` lines are
  skipped, an empty line starts a paragraph (``\\n\\n``), an indented line keeps its own line, the other lines are
  joined with one space; the result is trimmed;
* a property whose Go type is a string type marked ``+enum`` gets ``"Possible enum values:"`` and one sorted
  `` - `"Value"` comment`` line per constant of the type (the comment's first word, the constant's name, dropped),
  and the property's ``enum`` lists the sorted values;
* ``format``: kube-openapi ``common.OpenAPITypeFormat`` of the field's Go type after aliases and pointers
  (``int32``/``int64``/``byte``/``double``, ``[]byte`` as string ``byte``);
* ``default``: a ``+default=<json>`` marker (``ref(Const)`` resolves to the constant's value), else
  ``mustEnforceDefault``: a non-pointer struct is ``{}``, a non-pointer builtin without ``omitempty`` its zero value;
  types with their own ``UnmarshalJSON`` (Time, Quantity, IntOrString ...) and slices/maps/pointers get none. Slice
  and map elements are enforced as if not ``omitempty`` (``items.default``).

The set of types and their flattened JSON fields is :func:`gen_gotypes.build`'s (imported, not copied), so the two
generated files describe the same types. Output (gzip of sorted JSON, ~0.5 MB)::

    {"tag": "...", "roots": {"<group>/<version>/<Kind>": "<type id>"},
     "types": {"<type id>": {"description": "...",
                             "fields": {"<json key>": {"description", "format", "default", "items_default",
                                                        "enum", "ref"}}}}}

``ref`` names the struct a field (or its items/values) refers to, so :mod:`kubeplane.api.openapi_docs` can walk the
kubeplane schema names in step with the Go type ids. Usage: ``.venv/bin/python tools/gen_openapi_docs.py
--api /work/.mirror/kubernetes+api/repo --apimachinery /work/.mirror/kubernetes+apimachinery/repo [--check]``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gen_gotypes  # tools/ is not a package: found through the path entry above
from kubeplane.api.typed import split_map

OUT = Path(__file__).resolve().parent.parent / "src" / "kubeplane" / "api" / "openapi_docs.json.gz"

# kube-openapi pkg/common/common.go schemaTypeFormatMap (builtins after alias resolution).
TYPE_FORMAT = {
    "uint": ("integer", "int32"),
    "uint8": ("integer", "byte"),
    "uint16": ("integer", "int32"),
    "uint32": ("integer", "int64"),
    "uint64": ("integer", "int64"),
    "int": ("integer", "int32"),
    "int8": ("integer", "byte"),
    "int16": ("integer", "int32"),
    "int32": ("integer", "int32"),
    "int64": ("integer", "int64"),
    "byte": ("integer", "byte"),
    "float64": ("number", "double"),
    "float32": ("number", "float"),
    "bool": ("boolean", ""),
    "string": ("string", ""),
    "[]uint8": ("string", "byte"),
}
ZERO = {"integer": 0, "number": 0.0, "boolean": False, "string": ""}

_DIRECTIVE = re.compile(r"^//(line |extern |export |[a-z0-9]+:[a-z0-9])")
_TYPE_STRUCT = re.compile(r"^type\s+(\w+)\s+struct\s*\{\s*(\}?)\s*$")
_TYPE_NAMED = re.compile(r"^type\s+(\w+)\s+([^\s{=][^\n]*?)\s*$")
_CONST_SPEC = re.compile(r'^(?:const\s+)?(\w+)\s+(\w+)\s*=\s*("(?:[^"\\]|\\.)*"|[\w.]+)\s*(?://.*)?$')
_JSON_TAG = re.compile(r'json:"([^"]*)"')


@dataclass
class Member:
    key: str | None  # None: inlined (embedded) struct
    expr: str  # resolved type expression, pointer dropped
    pointer: bool
    omitempty: bool
    doc: list[str]


@dataclass
class Parsed:
    type_docs: dict[str, list[str]] = field(default_factory=dict)  # type id -> doc lines
    members: dict[str, list[Member]] = field(default_factory=dict)  # struct type id -> members
    named: dict[str, str] = field(default_factory=dict)  # type id -> underlying expr
    consts: dict[str, tuple[str, str, list[str]]] = field(default_factory=dict)  # const id -> (type id, value, doc)


def comment_text(raw: list[str]) -> list[str]:
    """go/ast ``CommentGroup.Text()`` split into lines, as gengo's ``CommentLines``."""
    lines: list[str] = []
    for line in raw:
        if _DIRECTIVE.match(line):
            continue
        text = line[2:]
        if text.startswith(" "):
            text = text[1:]
        lines.append(text.rstrip())
    out: list[str] = []
    for line in lines:  # collapse runs of empty lines, drop leading ones
        if not line and (not out or not out[-1]):
            continue
        out.append(line)
    while out and not out[-1]:
        out.pop()
    return out


def generate_description(lines: list[str]) -> str:
    """kube-openapi ``generateDescription``."""
    buf: list[str] = []

    def del_prev() -> None:
        if buf:
            buf[-1] = buf[-1][:-1]

    for raw in lines:
        if raw == "---":
            break
        line = raw.rstrip(" ")
        leading = line.lstrip(" ")
        if not line:
            del_prev()
            buf.append("\n\n")
        elif leading.startswith(("TODO", "+")):
            continue
        elif line.startswith((" ", "\t")):
            del_prev()
            buf.append("\n" + line + "\n")
        else:
            buf.append(line + " ")
    return "".join(buf).strip()


def parse_source(text: str, pkg_path: str, out: Parsed) -> None:
    """Doc comments of the types, struct members and constants of one Go file (line-oriented, gofmt'd source)."""
    imports = gen_gotypes._imports(text)
    doc: list[str] = []
    lines = text.splitlines()
    i = 0
    in_const = False
    in_block_comment = False
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        i += 1
        if in_block_comment:
            in_block_comment = "*/" not in stripped
            continue
        if stripped.startswith("/*"):
            in_block_comment = "*/" not in stripped
            doc = []
            continue
        if stripped.startswith("//"):
            doc.append(stripped)
            continue
        if not stripped:
            doc = []
            continue
        if in_const:
            if stripped == ")":
                in_const = False
            else:
                _const(stripped, pkg_path, doc, out)
            doc = []
            continue
        if stripped == "const (":
            in_const = True
            doc = []
            continue
        if line.startswith("const "):
            _const(stripped, pkg_path, doc, out)
            doc = []
            continue
        m = _TYPE_STRUCT.match(line)
        if m:
            name = m.group(1)
            type_id = f"{pkg_path}.{name}"
            out.type_docs[type_id] = comment_text(doc)
            members: list[Member] = []
            body_doc: list[str] = []
            while not m.group(2) and i < len(lines) and lines[i] != "}":
                member_line = lines[i].strip()
                i += 1
                if member_line.startswith("//"):
                    body_doc.append(member_line)
                    continue
                if not member_line:
                    body_doc = []
                    continue
                member = _member(member_line, pkg_path, imports, comment_text(body_doc))
                if member is not None:
                    members.append(member)
                body_doc = []
            i += 1
            out.members[type_id] = members
            doc = []
            continue
        m = _TYPE_NAMED.match(line)
        if m and not m.group(2).startswith(("struct", "interface", "func", "(")):
            type_id = f"{pkg_path}.{m.group(1)}"
            out.type_docs[type_id] = comment_text(doc)
            out.named[type_id] = gen_gotypes.resolve(m.group(2), pkg_path, imports)
        doc = []


def _const(spec: str, pkg_path: str, doc: list[str], out: Parsed) -> None:
    m = _CONST_SPEC.match(spec)
    if m is None:
        return
    name, type_name, value = m.groups()
    if "." in type_name or not value.startswith('"'):
        return
    out.consts[f"{pkg_path}.{name}"] = (f"{pkg_path}.{type_name}", json.loads(value), comment_text(doc))


def _member(line: str, pkg_path: str, imports: dict[str, str], doc: list[str]) -> Member | None:
    decl, _, rest = line.partition("`")
    words = decl.split()
    tag = _JSON_TAG.search(rest)
    key, _, opts = (tag.group(1) if tag else "").partition(",")
    if len(words) == 1:
        go_name, type_expr = words[0].lstrip("*").rsplit(".", 1)[-1], words[0]
    elif len(words) == 2:
        go_name, type_expr = words
    else:
        return None
    if not go_name[:1].isupper() or key == "-":
        return None
    inline = len(words) == 1 and not key
    return Member(
        key=None if inline else key or go_name,
        expr=gen_gotypes.resolve(type_expr, pkg_path, imports),
        pointer=type_expr.startswith("*"),
        omitempty="omitempty" in opts.split(","),
        doc=doc,
    )


def parse_all(api: Path, machinery: Path, tag: str) -> Parsed:
    out = Parsed()
    sources = [(api, gen_gotypes.API, d) for d in (*gen_gotypes.API_PACKAGES, *gen_gotypes.REFERENCED_PACKAGES)]
    sources += [(machinery, gen_gotypes.MACHINERY, d) for d in gen_gotypes.MACHINERY_PACKAGES]
    for repo, prefix, directory in sources:
        for path in gen_gotypes.git_ls(repo, tag, directory):
            parse_source(gen_gotypes.git_show(repo, tag, path), f"{prefix}/{directory}", out)
    return out


class Describer:
    """Applies openapi-gen's property rules to the parsed members (enum, format, default, description)."""

    def __init__(self, parsed: Parsed) -> None:
        self.parsed = parsed
        self.enums: dict[str, list[tuple[str, list[str]]]] = {}
        for type_id, lines in parsed.type_docs.items():
            if type_id in parsed.named and parsed.named[type_id] == "string" and _has_marker(lines, "enum"):
                self.enums[type_id] = []
        for const_type, value, doc in parsed.consts.values():
            if const_type in self.enums:
                values = self.enums[const_type]
                if all(v != value for v, _ in values):
                    values.append((value, doc))

    def alias_base(self, expr: str) -> str:
        while expr in self.parsed.named:
            expr = self.parsed.named[expr]
        return expr

    def type_format(self, expr: str) -> tuple[str, str] | None:
        base = self.alias_base(expr)
        if base.startswith("[]") and self.alias_base(base[2:]) == "uint8":
            return TYPE_FORMAT["[]uint8"]
        return TYPE_FORMAT.get(base)

    def enforced_default(self, expr: str, *, pointer: bool, omitempty: bool) -> Any:
        """kube-openapi ``mustEnforceDefault`` (None: no default)."""
        if pointer or expr in gen_gotypes.SPECIAL:
            return None
        base = self.alias_base(expr)
        if base in gen_gotypes.SPECIAL or base.startswith(("[]", "map[")) or base == "any":
            return None
        members = self.parsed.members.get(base)
        if members is not None:
            if len(members) == 1 and members[0].key is None:
                return self.enforced_default(members[0].expr, pointer=members[0].pointer, omitempty=omitempty)
            return {}
        fmt = TYPE_FORMAT.get(base)
        if fmt is not None and not omitempty:
            return ZERO[fmt[0]]
        return None

    def marker_default(self, doc: list[str], expr: str) -> Any:
        """``+default=`` on the member, else on its (alias) type, as ``defaultFromComments``."""
        value = _marker(doc, "default")
        owner = expr.rsplit(".", 1)[0] if "." in expr else ""
        while value is None and expr in self.parsed.named:
            value = _marker(self.parsed.type_docs.get(expr, []), "default")
            owner = expr.rsplit(".", 1)[0]
            expr = self.parsed.named[expr]
        if value is None:
            return None
        ref = re.fullmatch(r"ref\(([^\"]+)\)", value)
        if ref:
            name = ref.group(1)
            const_id = name if "/" in name else f"{owner}.{name}"
            return self.parsed.consts[const_id][1]
        return json.loads(value)

    def enum_lines(self, expr: str) -> list[str]:
        values = self.enums.get(expr)
        if values is None:
            return []
        lines = []
        for value, doc in values:
            comment = " ".join(doc).strip()
            parts = comment.split(" ", 1)
            if len(parts) == 2:
                comment = parts[1]
            comment = re.sub(r"\s+", " ", comment.strip())
            lines.append(f" - `{json.dumps(value)}` {comment}")
        return ["", "Possible enum values:", *sorted(lines)]

    def struct_ref(self, expr: str) -> str | None:
        """The struct a field's type (or its items/values) refers to."""
        base = self.alias_base(expr)
        while True:
            if base.startswith("[]"):
                base = self.alias_base(base[2:])
            elif base.startswith("map["):
                base = self.alias_base(split_map(base)[1])
            else:
                break
        return base if base in self.parsed.members else None

    def property(self, member: Member) -> dict[str, Any]:
        prop: dict[str, Any] = {}
        enum_values = self.enums.get(member.expr)
        description = generate_description(member.doc + (self.enum_lines(member.expr) if enum_values else []))
        if description:
            prop["description"] = description
        default = self.marker_default(member.doc, member.expr)
        if default is None:
            default = self.enforced_default(member.expr, pointer=member.pointer, omitempty=member.omitempty)
        if default is not None:
            prop["default"] = default
        fmt = self.type_format(member.expr)
        base = self.alias_base(member.expr)
        elem = base[2:] if base.startswith("[]") else split_map(base)[1] if base.startswith("map[") else None
        if fmt is None and elem is not None:
            fmt = self.type_format(elem)
            elem_pointer = elem.startswith("*")
            items_default = self.marker_default(self.parsed.type_docs.get(elem, []), elem)
            if items_default is None:
                items_default = self.enforced_default(elem, pointer=elem_pointer, omitempty=False)
            if items_default is not None:
                prop["items_default"] = items_default
            enum_elem = self.enums.get(elem)
            if enum_elem:
                prop["enum"] = sorted(v for v, _ in enum_elem)
        elif enum_values:
            prop["enum"] = sorted(v for v, _ in enum_values)
        if fmt is not None and fmt[1]:
            prop["format"] = fmt[1]
        ref = self.struct_ref(member.expr)
        if ref is not None:
            prop["ref"] = ref
        return prop

    def flat_members(self, type_id: str) -> list[Member]:
        out: list[Member] = []
        for member in self.parsed.members.get(type_id, []):
            if member.key is None:
                out.extend(self.flat_members(member.expr))
            else:
                out.append(member)
        return out


def _markers(doc: list[str], name: str) -> list[str]:
    """gengo ``ExtractCommentTags("+", ...)[name]``: values of ``+name=value`` (or ``+name``) lines."""
    out = []
    for raw in doc:
        line = raw.strip()
        if not line.startswith("+"):
            continue
        key, eq, value = line[1:].partition("=")
        if key == name:
            out.append(value if eq else "")
    return out


def _marker(doc: list[str], name: str) -> str | None:
    values = _markers(doc, name)
    return values[0] if values else None


def _has_marker(doc: list[str], name: str) -> bool:
    return bool(_markers(doc, name))


def build(
    api: Path, machinery: Path, tag: str, *, gotypes: Callable[..., dict[str, Any]] | None = None
) -> dict[str, Any]:
    typed: dict[str, Any] = (gotypes or gen_gotypes.build)(api, machinery, tag)
    parsed = parse_all(api, machinery, tag)
    describer = Describer(parsed)
    types: dict[str, Any] = {}
    for type_id, entry in typed["types"].items():
        if entry[0] == "named":
            continue
        entry_doc: dict[str, Any] = {}
        description = generate_description(parsed.type_docs.get(type_id, []))
        if description:
            entry_doc["description"] = description
        if entry[0] == "struct":
            fields = {m.key: describer.property(m) for m in describer.flat_members(type_id) if m.key}
            entry_doc["fields"] = {k: v for k, v in fields.items() if v}
        types[type_id] = entry_doc
    return {"tag": typed["tag"], "roots": typed["roots"], "types": dict(sorted(types.items()))}


def render(doc: dict[str, Any]) -> bytes:
    """Deterministic gzip (no file name, mtime 0) of the sorted JSON."""
    raw = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    return gzip.compress(raw, compresslevel=9, mtime=0)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--api", type=Path, required=True, help="git repository of k8s.io/api")
    parser.add_argument("--apimachinery", type=Path, required=True, help="git repository of k8s.io/apimachinery")
    parser.add_argument("--tag", default="HEAD", help="commit or tag of both repositories (default: HEAD)")
    parser.add_argument("--check", action="store_true", help="fail if the committed file differs")
    args = parser.parse_args()
    data = render(build(args.api, args.apimachinery, args.tag))
    if args.check:
        if gzip.decompress(OUT.read_bytes()) != gzip.decompress(data):
            print(f"{OUT} is out of date: run tools/gen_openapi_docs.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_bytes(data)
    print(f"wrote {OUT} ({len(data)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
