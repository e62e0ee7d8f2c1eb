"""What a request asks for beyond its verb: body encodings, field validation, Table output, OpenAPI documents.

* Bodies: JSON, or Kubernetes protobuf (``application/vnd.kubernetes.protobuf``, which kubectl's typed clients
  send for built-in kinds), decoded to the same wire-format dict; nested at most
  :data:`kubeplane.api.jsondepth.MAX_DEPTH` deep (400 with upstream's "exceeded max depth" message otherwise).
* ``fieldValidation`` (Strict / Warn / Ignore; default Warn, as upstream): unknown and duplicate fields are a 400
  with upstream's strict-decoding message, a ``Warning`` header each, or nothing. Whatever the mode, unknown
  fields are never stored (upstream drops them when decoding into Go types).
* Table output (``Accept: application/json;as=Table;v=v1;g=meta.k8s.io``) for get, list and watch, through
  :mod:`kubeplane.apiserver.printers`; ``includeObject`` as upstream.
* ``/openapi/v3`` and its group-version documents, serialised once per server.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from kubeplane.api import jsondepth
from kubeplane.api import openapi as apiopenapi
from kubeplane.api import protobuf as apiprotobuf
from kubeplane.api import schema as apischema
from kubeplane.api import typed as apityped
from kubeplane.api.crd import prune as crdprune
from kubeplane.api.crd.resource import CustomResourceInfo
from kubeplane.api.gofmt import sprint_v
from kubeplane.api.resources import ResourceInfo, ResourceTable
from kubeplane.api.validation import field as fielderr
from kubeplane.api.views import meta_of
from kubeplane.apiserver import crd_tables, errors, printers
from kubeplane.apiserver.printers_workloads import Printer
from kubeplane.apiserver.subresources import JSON_PATCH, MERGE_PATCH, STRATEGIC_PATCH

PROTOBUF = "application/vnd.kubernetes.protobuf"
TABLE_CONTENT_TYPE = "application/json;as=Table;v=v1;g=meta.k8s.io"
FIELD_VALIDATION_MODES = ("Ignore", "Warn", "Strict")


def decode_body(raw: bytes, content_type: str, *, into: str, field_validation: str = "Warn") -> Any:
    """Decode a request body (JSON, Kubernetes protobuf, or a patch of media type ``content_type``) and refuse,
    with 400, one nested deeper than :data:`kubeplane.api.jsondepth.MAX_DEPTH`, before anything else reads it.

    ``into`` is the kind the body is decoded into (upstream's ``objGVK``: the resource's kind, or a
    subresource's: Binding, Eviction, Scale), named in the message as upstream does; ``field_validation`` picks
    the patch decoder whose message upstream answers with. Past this point every value of the body nests at
    most ``MAX_DEPTH`` deep (see :mod:`kubeplane.api.jsondepth`)."""
    if content_type == PROTOBUF:
        try:
            obj = apiprotobuf.decode_object(raw)
        except apiprotobuf.NestingError as exc:
            raise _protobuf_too_deep(exc.kind, exc.api_version, into, exc.bracket) from None
        except apiprotobuf.ProtobufError as exc:
            raise errors.bad_request(f"the request body is not valid Kubernetes protobuf: {exc}") from None
        bracket = jsondepth.too_deep(obj)
        if bracket is not None:
            raise _protobuf_too_deep(obj["kind"], obj["apiVersion"], into, bracket)
        return obj
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        found = jsondepth.raw_too_deep(raw)  # orjson stops at 1024 levels; Go would say "exceeded max depth"
        if found is not None and found[0] < exc.pos:
            raise _json_too_deep(raw, content_type, into, field_validation, found[1]) from None
        raise errors.bad_request(f"the request body is not valid JSON: {exc}") from None
    bracket = jsondepth.too_deep(body)
    if bracket is not None:
        raise _json_too_deep(raw, content_type, into, field_validation, bracket)
    return body


def decode_delete_options(raw: bytes) -> Any:
    """Decode a delete or deletecollection body (DeleteOptions, JSON), refusing one nested deeper than
    ``jsondepth.MAX_DEPTH`` as :func:`decode_body` does (the options' messages quote their values: a deep one
    overflowed Python's stack).

    Upstream's ``delete.go`` hands the JSON serializer's error to ``scope.err`` as is: a 500 with the message
    ``couldn't get version/kind; json parse error: invalid character '{' exceeded max depth``. Here the same
    message is a 400, as bad input never gets a 5xx."""
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        found = jsondepth.raw_too_deep(raw)
        if found is not None and found[0] < exc.pos:
            raise _options_too_deep(found[1]) from None
        raise errors.bad_request(f"the request body is not valid JSON: {exc}") from None
    bracket = jsondepth.too_deep(body)
    if bracket is not None:
        raise _options_too_deep(bracket)
    return body


def _options_too_deep(bracket: str) -> errors.APIError:
    return errors.bad_request(f"couldn't get version/kind; json parse error: {jsondepth.syntax_error(bracket)}")


def _json_too_deep(raw: bytes, content_type: str, into: str, field_validation: str, bracket: str) -> errors.APIError:
    """Upstream's 400 for a JSON body its scanner refuses as too deep, by what decodes it (see decode_body).

    * an object (create.go/update.go ``transformDecodeError``): the JSON serializer's ``SimpleMetaFactory.
      Interpret`` fails first, so no kind is known and the body is summarized (``summarizeData``);
    * a strategic merge patch (patch.go ``strategicPatchObject``): ``kjson.UnmarshalStrict`` or
      ``UnmarshalCaseSensitivePreserveInts``, the error as is;
    * a JSON or merge patch (patch.go ``applyJSPatch``): ``kjson.UnmarshalStrict`` under Warn and Strict
      ("error decoding patch: ..."); under Ignore evanphx's ``DecodePatch`` (the error as is) or
      ``MergePatch`` (its ``ErrBadJSONPatch``, "Invalid JSON Patch")."""
    syntax = jsondepth.syntax_error(bracket)
    if content_type == STRATEGIC_PATCH:
        return errors.bad_request(syntax)
    if content_type in (JSON_PATCH, MERGE_PATCH):
        if field_validation != "Ignore":
            return errors.bad_request(f"error decoding patch: {syntax}")
        return errors.bad_request(syntax if content_type == JSON_PATCH else "Invalid JSON Patch")
    return errors.bad_request(
        f"the object provided is unrecognized (must be of type {into}): "
        f"couldn't get version/kind; json parse error: {syntax} ({jsondepth.summarize(raw)})"
    )


def _protobuf_too_deep(kind: str, api_version: str, into: str, bracket: str) -> errors.APIError:
    """``transformDecodeError`` once the protobuf envelope named the kind: ``K in version "v" cannot be handled
    as a K: ...``. (Upstream keeps free-form JSON inside protobuf, FieldsV1 and RawExtension, as raw bytes and
    never parses it; kubeplane parses it, so it answers as if the JSON scanner had.)"""
    version = api_version.rsplit("/", 1)[-1]
    return errors.bad_request(
        f'{kind} in version "{version}" cannot be handled as a {into}: {jsondepth.syntax_error(bracket)}'
    )


def typed_body(body: Any, *, group: str, version: str, kind: str) -> Any:
    """A create or update body as kube-apiserver's decoder keeps it (:mod:`kubeplane.api.typed`); a field of the
    wrong type is a 400 in the create and update handlers' form (handlers/rest.go ``transformDecodeError``):
    ``Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal ...``."""
    return _typed_body(body, group=group, version=version, kind=kind)[0]


def _typed_body(body: Any, *, group: str, version: str, kind: str) -> tuple[Any, bool]:
    if not isinstance(body, dict):
        return body, False
    try:
        return apityped.decode_with_unknown(body, group=group, version=version, kind=kind)
    except apityped.TypedDecodeError as exc:
        raise errors.bad_request(f'{kind} in version "{version}" cannot be handled as a {kind}: {exc}') from None


def typed_patched(
    obj: dict[str, Any], *, group: str, version: str, kind: str, patch_type: str, patch: Any
) -> dict[str, Any]:
    """A patched object decoded as kube-apiserver's patch handler does (handlers/patch.go): JSON and merge patches
    decode the patched JSON, a strategic merge patch converts the patched map (``FromUnstructured``). A failure is
    a 422 on the field ``patch`` whose bad value is the patched object's JSON, or for a strategic merge patch the
    patch itself as Go's ``%+v`` prints it, with an empty kind and name, as upstream's ``NewInvalid(GroupKind{},
    "", ...)``."""
    strategic = patch_type == STRATEGIC_PATCH
    try:
        return apityped.decode(obj, group=group, version=version, kind=kind, unstructured=strategic)
    except apityped.TypedDecodeError as exc:
        value = sprint_v(patch) if strategic else orjson.dumps(obj).decode()
        cause = fielderr.invalid(fielderr.new_path("patch"), value, detail=str(exc))
        raise errors.invalid("", "", "", [cause]) from None


@dataclass
class FieldValidation:
    """One request's field validation: the mode, and the warnings to send back."""

    mode: str = "Warn"
    warnings: list[str] = field(default_factory=list)

    @classmethod
    def from_query(cls, query: dict[str, str]) -> FieldValidation:
        mode = query.get("fieldValidation", "") or "Warn"
        if mode not in FIELD_VALIDATION_MODES:
            raise errors.bad_request(
                f'fieldValidation parameter unsupported: "{mode}" (supported: "Ignore", "Warn", "Strict")'
            )
        return cls(mode)

    def _report(self, problems: list[str], info: ResourceInfo) -> None:
        if not problems or self.mode == "Ignore":
            return
        if self.mode == "Strict":
            raise errors.bad_request(
                f'{info.kind} in version "{info.version}" cannot be handled as a {info.kind}: '
                f"{apischema.strict_decoding_error(problems)}"
            )
        self.warnings.extend(problems)

    def check_body(self, info: ResourceInfo, raw: bytes, body: Any, content_type: str) -> Any:
        """Decode a create/update body into its kind's Go types (a wrong type is a 400 before anything else, as
        upstream's decoding errors trump strict ones), report unknown and duplicate fields, and return it as
        decoding keeps it: without unknown fields."""
        if not isinstance(body, dict):
            return body
        if isinstance(info, CustomResourceInfo):
            return self._custom(info, body, raw=raw, duplicates=content_type != PROTOBUF and self.mode != "Ignore")
        decoded, unknown = _typed_body(body, group=info.group, version=info.version, kind=info.kind)
        # protobuf cannot carry unknown or duplicate fields; a body with no unknown key that orjson writes back
        # byte for byte (compact JSON, as client-go sends) cannot hold a duplicate either: skip the slow walk
        checked = content_type == PROTOBUF or self.mode == "Ignore" or (not unknown and orjson.dumps(body) == raw)
        if not checked:
            self._report(
                apischema.strict_field_errors(raw, group=info.group, version=info.version, kind=info.kind), info
            )
        if apityped.has_go_type(group=info.group, version=info.version, kind=info.kind):
            return decoded
        return apischema.prune_unknown(body, group=info.group, version=info.version, kind=info.kind)

    def _custom(self, info: CustomResourceInfo, body: dict[str, Any], *, raw: bytes | None, duplicates: bool) -> Any:
        """A custom resource as upstream's unstructured decoder keeps it: duplicate fields, then the fields its
        schema prunes, reported as ``unknown field "spec.foo"`` (customresource_handler.go ``unstructuredDecoder``
        with ``structuralpruning.PruneWithOptions(ReturnPruned)``); pruned."""
        pruned, unknown = crdprune.prune(body, info.schema)
        problems: list[str] = []
        if duplicates and raw is not None and orjson.dumps(body) != raw:
            problems.extend(apischema.duplicate_fields(raw))
        meta = body.get("metadata")
        if isinstance(meta, dict):  # ObjectMeta is a Go struct there too: its unknown fields go (any kind has it)
            problems.extend(apischema.unknown_fields({"metadata": meta}, group="", version="v1", kind="ConfigMap"))
            pruned["metadata"] = apischema.prune_unknown({"metadata": meta}, group="", version="v1", kind="ConfigMap")[
                "metadata"
            ]
        problems.extend(f'unknown field "{path}"' for path in unknown)
        self._report(problems, info)
        return pruned

    def check_patch_body(self, info: ResourceInfo, raw: bytes) -> None:
        self._report(apischema.duplicate_fields(raw), info)

    def check_patched(self, info: ResourceInfo, obj: dict[str, Any], *, patch_type: str, patch: Any) -> dict[str, Any]:
        """Decode a patched object (:func:`typed_patched`), report unknown fields the patch introduced, return it
        as decoding keeps it."""
        if isinstance(info, CustomResourceInfo):
            return self._custom(info, obj, raw=None, duplicates=False)  # type: ignore[no-any-return]
        decoded = typed_patched(
            obj, group=info.group, version=info.version, kind=info.kind, patch_type=patch_type, patch=patch
        )
        self._report(apischema.unknown_fields(obj, group=info.group, version=info.version, kind=info.kind), info)
        if apityped.has_go_type(group=info.group, version=info.version, kind=info.kind):
            return decoded
        return apischema.prune_unknown(obj, group=info.group, version=info.version, kind=info.kind)

    def headers(self) -> list[tuple[bytes, bytes]]:
        """RFC 7234 ``Warning: 299 - "<text>"`` headers, one per problem: :func:`warning_headers`."""
        return warning_headers(self.warnings)


WARNING_TOTAL_RUNES = 4 * 1024  # filters/warning.go truncateAtTotalRunes
WARNING_ITEM_RUNES = 256  # filters/warning.go truncateItemRunes
MAX_WARNING_HEADERS = 64
"""kubeplane's own cap: Python's http.client (under the official client's urllib3) refuses a response with more
than 100 headers, and upstream's 4 KiB budget still lets ~140 short warnings through."""


def warning_headers(warnings: list[str]) -> list[tuple[bytes, bytes]]:
    """Upstream's warning recorder (apiserver pkg/endpoints/filters/warning.go): empty texts skipped, duplicates
    sent once; while the texts fit in :data:`WARNING_TOTAL_RUNES` they go whole, otherwise every text is cut to
    :data:`WARNING_ITEM_RUNES` runes and texts are added until that budget is spent. At most
    :data:`MAX_WARNING_HEADERS` headers."""
    texts = list(dict.fromkeys(t for t in warnings if t))
    if sum(len(t) for t in texts) > WARNING_TOTAL_RUNES:
        cut, written = [], 0
        for text in texts:
            if written >= WARNING_TOTAL_RUNES:
                break
            short = text[:WARNING_ITEM_RUNES]
            written += len(short)
            cut.append(short)
        texts = cut
    out = []
    for text in texts[:MAX_WARNING_HEADERS]:
        quoted = text.replace("\\", "\\\\").replace('"', '\\"')
        out.append((b"warning", f'299 - "{quoted}"'.encode()))
    return out


def wants_table(accept: str) -> bool:
    for part in accept.split(","):
        params = {p.strip() for p in part.split(";")}
        if "as=Table" in params and "g=meta.k8s.io" in params and ("v=v1" in params or "v=v1beta1" in params):
            return True
    return False


def _kind(info: ResourceInfo) -> tuple[str, str]:
    return info.group, info.kind


def _printer(info: ResourceInfo) -> Printer | None:
    return crd_tables.printer_for(info) if isinstance(info, CustomResourceInfo) else None


def table(
    info: ResourceInfo, objects: list[dict[str, Any]], *, list_meta: dict[str, Any], query: dict[str, str], now: float
) -> dict[str, Any]:
    try:
        return printers.to_table(
            _kind(info),
            objects,
            list_meta=list_meta,
            include_object=query.get("includeObject", "Metadata"),
            now=now,
            printer=_printer(info),
        )
    except ValueError as exc:
        raise errors.bad_request(str(exc)) from None


def table_event(
    info: ResourceInfo, event_type: str, obj: dict[str, Any], *, query: dict[str, str], now: float, headers: bool
) -> dict[str, Any]:
    """One watch event whose object is a Table of one row (column headers only on the first event)."""
    if event_type in ("BOOKMARK", "ERROR"):
        return {"type": event_type, "object": obj}
    meta = {"resourceVersion": meta_of(obj).get("resourceVersion", "")}
    try:
        converted = printers.to_table(
            _kind(info),
            [obj],
            list_meta=meta,
            include_object=query.get("includeObject", "Metadata"),
            now=now,
            no_headers=not headers,
            printer=_printer(info),
        )
    except ValueError as exc:
        raise errors.bad_request(str(exc)) from None
    return {"type": event_type, "object": converted}


class OpenAPIDocuments:
    """The /openapi/v3 root and per-group-version documents, built on first use and kept as bytes."""

    def __init__(self, table: ResourceTable) -> None:
        self._table = table
        self._docs: dict[str, bytes] = {}

    def get(self, parts: tuple[str, ...]) -> bytes | None:
        key = "/".join(parts[2:])
        if key in self._docs:
            return self._docs[key]
        if not key:
            doc: dict[str, Any] = apiopenapi.openapi_root(self._table)
        elif parts[2] == "api" and len(parts) == 4:
            doc = self._group_version("", parts[3]) or {}
        elif parts[2] == "apis" and len(parts) == 5:
            doc = self._group_version(parts[3], parts[4]) or {}
        else:
            return None
        if not doc:
            return None
        data = apiopenapi.document_bytes(doc)
        self._docs[key] = data
        return data

    def _group_version(self, group: str, version: str) -> dict[str, Any] | None:
        try:
            return apiopenapi.openapi_group_version(self._table, group, version)
        except LookupError:
            return None
