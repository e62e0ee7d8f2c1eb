"""PATCH ``application/apply-patch+yaml``: server-side apply (upstream ``handlers/patch.go``'s ``applyPatcher``).

* ``PatchOptions`` first (``ValidatePatchOptions``): an apply needs ``fieldManager`` (422 ``PatchOptions.meta.k8s.io
  "" is invalid: fieldManager: Required value: is required for apply patch``); ``force`` is only for apply
  (422 ``force: Forbidden: may not be specified for non-apply patch``).
* The body is YAML (JSON is YAML): anything else is 400 ``error decoding YAML: ...``.
* The object exists: :func:`kubeplane.apiserver.fieldmanager.apply` merges the configuration into it inside one
  guaranteed update (so races retry, validation runs, a dry run writes nothing). It does not: the configuration
  is applied to an empty object and created (the apply patcher's ``createNewObject`` with ``forceAllowCreate``),
  answered 201; a subresource is never created (404, as upstream's status and scale storage).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import yaml

from kubeplane.api import jsondepth, yamlio
from kubeplane.api.validation.field import forbidden, new_path, required

from . import errors, fieldmanager

if TYPE_CHECKING:
    from .dispatch import Call
    from .registry import Registry

APPLY_PATCH = "application/apply-patch+yaml"
YAML_MAX_DEPTH = 10000
"""go-yaml's ``max_flow_level``/``max_indents``: deeper YAML is ``yaml: exceeded max depth of 10000``."""
Obj = dict[str, Any]


def check_patch_options(call: Call) -> None:
    """``ValidatePatchOptions`` for every patch type."""
    if call.patch_type == APPLY_PATCH:
        if not call.field_manager_given:
            raise errors.invalid(
                "meta.k8s.io", "PatchOptions", "", [required(new_path("fieldManager"), "is required for apply patch")]
            )
    elif call.force:
        raise errors.invalid(
            "meta.k8s.io",
            "PatchOptions",
            "",
            [forbidden(new_path("force"), "may not be specified for non-apply patch")],
        )


def decode_yaml(raw: bytes) -> Any:
    """The apply body as upstream's ``yaml.Unmarshal`` into an unstructured object."""
    try:
        doc = yamlio.load(raw)
    except yaml.YAMLError as exc:
        raise errors.bad_request(f"error decoding YAML: {exc}") from None
    except RecursionError:  # PyYAML's composer recurses per level; go-yaml stops at its flow-level limit
        raise errors.bad_request(f"error decoding YAML: yaml: exceeded max depth of {YAML_MAX_DEPTH}") from None
    bracket = jsondepth.too_deep(doc)
    if bracket is not None:  # what sigs.k8s.io/yaml's JSON step refuses (same invariant as JSON bodies)
        raise errors.bad_request(f"error decoding YAML: {jsondepth.syntax_error(bracket)}")
    if not isinstance(doc, dict):
        raise errors.bad_request(
            "error decoding YAML: error unmarshaling JSON: while decoding JSON: "
            "Object 'Kind' is missing in '" + str(doc) + "'"
        )
    return doc


async def apply_patch(registry: Registry, call: Call) -> Obj:
    check_patch_options(call)
    config = call.body
    if not isinstance(config, dict):
        raise errors.bad_request("the apply patch is not an object")
    info, manager = call.resource, str(call.manager or "")
    subresource = call.subresource
    meta = config.get("metadata")
    if meta is not None and not isinstance(meta, dict):
        raise errors.bad_request("metadata: expected an object")
    given = (meta or {}).get("name")
    if given not in (None, "") and given != call.name:
        raise errors.bad_request(f"the name of the object ({given}) does not match the name on the URL ({call.name})")

    def transform(old: Obj) -> Obj:
        new = fieldmanager.apply(
            info, old, config, manager, force=call.force, subresource=subresource, now=registry.now()
        )
        if call.checks is not None:
            new = call.checks.check_patched(info, new)
        return new

    try:
        return await registry.guaranteed_update(
            info,
            call.namespace,
            call.name,
            transform,
            subresource=subresource or None,
            dry_run=call.dry_run,
        )
    except errors.APIError as exc:
        if exc.code != 404 or subresource or registry.get_cached(info, call.namespace, call.name) is not None:
            raise
    empty: Obj = {"apiVersion": info.api_version, "kind": info.kind, "metadata": {"name": call.name}}
    if call.namespace is not None:
        empty["metadata"]["namespace"] = call.namespace
    obj = fieldmanager.apply(info, empty, config, manager, force=call.force, now=registry.now())
    if call.checks is not None:
        obj = call.checks.check_patched(info, obj)
    obj.setdefault("metadata", {})["name"] = call.name
    created = await registry.create(info, call.namespace, obj, dry_run=call.dry_run)
    call.created = True
    return created
