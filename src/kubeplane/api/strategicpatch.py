"""Strategic merge patch (``application/strategic-merge-patch+json``): apply, and create two- and three-way.

Upstream is ``staging/src/k8s.io/apimachinery/pkg/util/strategicpatch/patch.go`` (v1.36); the patch metadata
(which lists merge and by which key) lives in :mod:`kubeplane.api.strategicpatch_meta`.

Semantics (as upstream)
    * Objects merge key by key; ``null`` deletes a key; a value of another JSON type replaces. A value added
      where the original had nothing is copied with its ``null`` members and ``$patch`` objects dropped.
    * Lists without a ``merge`` strategy are replaced whole. Lists of objects with ``merge`` merge by the merge
      key: matching elements merge recursively, new ones are appended; ``{"$patch": "delete", <key>: v}`` removes
      *every* element with that key; ``{"$patch": "replace"}`` makes the list exactly the other patch elements.
      Lists of primitives with ``merge`` are unioned without duplicates; ``$deleteFromPrimitiveList/<list>``
      removes values.
    * Order: ``$setElementOrder/<list>`` (kubectl always sends one) orders the listed elements, the original's
      others keep their places. Without it patch elements keep the patch's order, the original's others keep
      theirs, and the two interleave by the original's order, a patch element new to the list coming first
      (``mergeSortedSlice``). Go slice aliasing that makes deleted slots hold appended elements is reproduced.
    * ``$patch: replace`` in an object replaces it with the rest of the patch object, ``$patch: delete``
      empties it; ``$retainKeys: [...]`` clears the original's keys not listed (fields tagged ``retainKeys``).

Invariants
    Inputs are never mutated and the result shares no container with them (except an original the caller
    hands over with ``consume=True``, or shares with ``share=True``). For documents without ``null`` members,
    duplicate merge keys or ``$``-prefixed keys,
    ``strategic_merge_patch(a, create_two_way_merge_patch(a, b, kind=k), kind=k) == b``.

Errors (:class:`~kubeplane.api.patch.PatchError`)
    400, as kube-apiserver's ``interpretStrategicMergePatchError``, for a body that is not an object and for
    malformed ``$deleteFromPrimitiveList``, ``$retainKeys`` and ``$setElementOrder`` directives; 422 for lists
    of lists and for every other patch that does not apply (missing merge key, unknown ``$patch`` value, mixed
    element types, an order list that contradicts the patch). Upstream answers those last ones with 500; a
    user's bad patch is not a server error here. Messages are upstream's.

Deliberate deviations: untagged/unknown fields never fail (upstream's struct lookup refuses an unknown field
whose maps differ); the three-way patch has no conflict check (kubectl apply overwrites by default);
Go's random map order is replaced by the patch's key order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Final

from kubeplane.api.patch import PatchError
from kubeplane.api.strategicpatch_meta import (
    BUILTIN_SCHEMA,
    DELETE_PREFIX,
    DIRECTIVE,
    ORDER_PREFIX,
    RETAIN_KEYS,
    Field,
    KeyIndex,
    Schema,
    bad_arg_type,
    copy,
    dedup,
    deep_equal,
    diff_scalars,
    discard_nulls,
    element_kind,
    go_str,
    go_type,
    ident,
    key_equal,
    no_merge_key,
    normalize_element_order,
    normalize_slice_order,
    partition,
    remove_directives,
    same,
    sort_scalars,
    split_strategy,
    validate_order,
)

__all__ = [
    "create_three_way_merge_patch",
    "create_two_way_merge_patch",
    "reachable_copy",
    "strategic_merge_patch",
]

_BAD_PRIMITIVE_LIST: Final = "invalid patch format of primitive list"
_BAD_RETAIN_KEYS: Final = "invalid patch format of retainKeys"
_BAD_ORDER_LIST: Final = "invalid patch format of setElementOrder list"


def _bad_request(message: str) -> PatchError:
    return PatchError(message, code=400)


def _object(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _bad_request(f"invalid JSON document: the {what} must be a JSON object")
    return value


def _guard(run: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    try:
        return run()
    except RecursionError:
        raise PatchError("the document or patch is nested too deeply", code=400) from None


# --- public API ----------------------------------------------------------------------------------------------


def strategic_merge_patch(
    original: dict[str, Any],
    patch: dict[str, Any],
    *,
    kind: tuple[str, str],
    schema: Schema = BUILTIN_SCHEMA,
    consume: bool = False,
    share: bool = False,
) -> dict[str, Any]:
    """Apply a strategic merge patch as kube-apiserver does (``StrategicMergeMapPatch``: parallel lists are
    merged, unmatched ``null`` members dropped). ``kind`` is (API group, kind), e.g. ``("apps", "Deployment")``;
    a kind without patch metadata merges like a JSON merge patch with directives. Returns a new document.

    ``consume``: ``original`` is the caller's private copy, which the merge may change and the result may share
    (the API server's update path copies the stored object for the patch anyway: no second copy of the whole
    object). ``share`` (copy-on-write): ``original`` is not changed, and the result shares with it every
    container the patch cannot reach (:func:`reachable_copy`), so a status patch copies the status it merges
    into, not the pod's spec and metadata; whoever holds the result must then not change those shared parts.
    The patch is always copied (a retried update applies it again)."""
    root = schema.root(kind)
    if share:
        source = reachable_copy(_object(original, "original"), _object(patch, "patch"), root, schema=schema)
    else:
        source = _object(original, "original") if consume else copy(_object(original, "original"))
    changes = copy(_object(patch, "patch"))
    return _guard(lambda: _merge_map(source, changes, root, schema=schema, server=True))


def reachable_copy(
    original: dict[str, Any], patch: dict[str, Any], t: str | None = None, *, schema: Schema | None = None
) -> dict[str, Any]:
    """``original`` with every container the merge of ``patch`` may change copied, the rest shared by identity.

    The merge changes only the maps it is handed and what it reaches through them by the patch's keys: a map
    named by a patch key that is a map too is merged key by key (so it is copied shallowly, recursively); any
    other container a patch key names -- a list (merged elements are changed in place), a map the patch
    replaces or the list a ``$setElementOrder/<list>`` or ``$deleteFromPrimitiveList/<list>`` directive names --
    is copied whole, except, given the ``schema`` (and ``t``, the type of ``original``), a list without the
    ``merge`` strategy that a plain key names: the merge puts the patch's value in its place without reading
    it. ``$retainKeys`` and ``$patch`` change only the map they are in (a copy). So the merge over this copy
    leaves ``original`` as it was, and the result is equal to the merge over a deep copy."""
    out = dict(original)
    if DIRECTIVE in patch:  # replace/delete: the map is rebuilt from the patch
        return out
    for name, value in patch.items():
        directive = name.startswith((DELETE_PREFIX, ORDER_PREFIX))
        key = name.partition("/")[2] if directive else name
        old = original.get(key)
        if isinstance(old, dict):
            if isinstance(value, dict):
                found = schema.field(t, key).type if schema is not None else None
                out[key] = reachable_copy(old, value, found, schema=schema)
            else:
                out[key] = copy(old)
        elif isinstance(old, list) and (directive or schema is None or _merges(schema.field(t, key))):
            out[key] = copy(old)
    return out


def _merges(found: Field) -> bool:
    """Whether the merge may read (and change) the original list of a field: a ``merge`` strategy, or a tag
    that does not parse (the merge then fails; copying costs nothing then)."""
    try:
        return split_strategy(found)[1] == "merge"
    except PatchError:
        return True


def create_two_way_merge_patch(
    original: dict[str, Any], modified: dict[str, Any], *, kind: tuple[str, str], schema: Schema = BUILTIN_SCHEMA
) -> dict[str, Any]:
    """The patch taking ``original`` to ``modified`` (``CreateTwoWayMergePatch``, what ``kubectl edit``,
    ``label`` and ``annotate`` send): additions and changes, ``null`` for removed keys, ``$patch: delete``
    elements, ``$deleteFromPrimitiveList``/``$setElementOrder`` lists and ``$retainKeys``; ``{}`` if equal."""
    options = _Diff(schema=schema, set_element_order=True)
    root = schema.root(kind)
    a, b = _object(original, "original"), _object(modified, "modified")
    patch: dict[str, Any] = copy(_guard(lambda: _diff_maps(a, b, root, options)))
    return patch


def create_three_way_merge_patch(
    original: dict[str, Any],
    modified: dict[str, Any],
    current: dict[str, Any],
    *,
    kind: tuple[str, str],
    schema: Schema = BUILTIN_SCHEMA,
) -> dict[str, Any]:
    """What ``kubectl apply`` sends (``CreateThreeWayMergePatch`` with overwrite): the changes and additions
    from ``current`` (the live object) to ``modified`` (the new configuration), plus the deletions from
    ``original`` (the last-applied configuration) to ``modified`` -- so fields set by others survive."""
    root = schema.root(kind)
    a, b, c = _object(original, "original"), _object(modified, "modified"), _object(current, "current")

    def run() -> dict[str, Any]:
        delta = _diff_maps(c, b, root, _Diff(schema=schema, set_element_order=True, ignore_deletions=True))
        deletions = _diff_maps(a, b, root, _Diff(schema=schema, set_element_order=True, ignore_changes=True))
        return _merge_map(copy(deletions), copy(delta), root, schema=schema, server=False)

    patch: dict[str, Any] = copy(_guard(run))
    return patch


# --- diff (CreateTwoWayMergePatch / CreateThreeWayMergePatch) ----------------------------------------------


@dataclass(frozen=True, slots=True)
class _Diff:
    """``DiffOptions`` plus the schema. ``ignore_changes`` drops additions and changes (the deletions half of
    a three-way patch), ``ignore_deletions`` drops deletions (the delta half)."""

    schema: Schema
    set_element_order: bool = False
    ignore_changes: bool = False
    ignore_deletions: bool = False
    retain_keys: bool = False


def _diff_maps(original: dict[str, Any], modified: dict[str, Any], t: str | None, opts: _Diff) -> dict[str, Any]:
    patch: dict[str, Any] = {}
    retained: list[str] = []
    for key, new in modified.items():
        if opts.retain_keys and new is not None:
            retained.append(key)
        if key not in original:
            if not opts.ignore_changes:
                patch[key] = new
            continue
        old = original[key]
        if key == DIRECTIVE:
            if not isinstance(old, str) or not isinstance(new, str):
                raise PatchError(f"invalid value for special key: {DIRECTIVE}")
            if old != new:
                patch[key] = new
            continue
        if go_type(old) != go_type(new):
            if not opts.ignore_changes:
                patch[key] = new
            continue
        if isinstance(old, dict):
            _diff_map_field(key, old, new, patch, t, opts)
        elif isinstance(old, list):
            _diff_list_field(key, old, new, patch, t, opts)
        elif not opts.ignore_changes and not same(old, new):
            patch[key] = new
    if not opts.ignore_deletions:
        patch.update((key, None) for key in original if key not in modified)
    extra = any(v is not None and k not in modified for k, v in original.items())
    if retained and (patch or extra):
        patch[RETAIN_KEYS] = sort_scalars(retained)
    return patch


def _diff_map_field(key: str, old: Any, new: Any, patch: dict[str, Any], t: str | None, opts: _Diff) -> None:
    found = opts.schema.field(t, key)
    retain, how = split_strategy(found)
    if how == "replace":
        if not opts.ignore_changes:
            patch[key] = new  # upstream sends a replace-strategy map even when unchanged
        return
    nested = _diff_maps(old, new, found.type, replace(opts, retain_keys=retain))
    if nested:
        patch[key] = nested


def _diff_list_field(key: str, old: Any, new: Any, patch: dict[str, Any], t: str | None, opts: _Diff) -> None:
    found = opts.schema.field(t, key)
    retain, how = split_strategy(found)
    if how != "merge":
        if not opts.ignore_changes and not deep_equal(old, new):
            patch[key] = new
        return
    additions, deletions, order = _diff_lists(old, new, found, replace(opts, retain_keys=retain))
    if additions:
        patch[key] = additions
    if deletions:
        patch[f"{DELETE_PREFIX}/{key}"] = deletions
    if order:
        patch[f"{ORDER_PREFIX}/{key}"] = order


def _diff_lists(
    original: list[Any], modified: list[Any], found: Field, opts: _Diff
) -> tuple[list[Any], list[Any], list[Any]]:
    """(patch list, primitive deletion list, ``$setElementOrder`` list) for a merging list."""
    if not original:
        return ([], [], []) if not modified or opts.ignore_changes else (modified, [], [])
    kind, merge_key = element_kind(original, modified), found.merge_key
    if kind == "map":
        patch, deletions = _diff_lists_of_maps(original, modified, found, opts)
        patch = normalize_slice_order(patch, modified, merge_key, kind)
        same_order = len(original) == len(modified) and all(
            key_equal(a, b, merge_key) for a, b in zip(original, modified, strict=True)
        )
        patch += deletions
        changed = (not opts.ignore_changes and (patch or not same_order)) or (not opts.ignore_deletions and patch)
        order = [{merge_key: item[merge_key]} for item in modified] if opts.set_element_order and changed else []
        return patch, [], order
    additions, removals = diff_scalars(
        original, modified, additions_too=not opts.ignore_changes, deletions_too=not opts.ignore_deletions
    )
    additions = normalize_slice_order(additions, modified, merge_key, kind)
    changed = (not opts.ignore_deletions and removals) or (
        not opts.ignore_changes and not deep_equal(original, modified)
    )
    return additions, removals, (modified if opts.set_element_order and changed else [])


def _diff_lists_of_maps(
    original: list[Any], modified: list[Any], found: Field, opts: _Diff
) -> tuple[list[Any], list[Any]]:
    merge_key = found.merge_key

    def keyed(items: list[Any]) -> list[tuple[str, dict[str, Any]]]:
        for item in items:
            if not isinstance(item, dict):
                raise bad_arg_type("map[string]interface {}", item)
        ordered = sorted(items, key=lambda item: go_str(item.get(merge_key)))
        for item in ordered:
            if merge_key not in item:
                raise no_merge_key(item, merge_key)
        return [(go_str(item[merge_key]), item) for item in ordered]

    old, new = keyed(original), keyed(modified)
    patch: list[Any] = []
    deletions: list[Any] = []
    i = j = 0
    while i < len(old) or j < len(new):
        if i < len(old) and j < len(new) and old[i][0] == new[j][0]:
            nested = _diff_maps(old[i][1], new[j][1], found.type, opts)
            if nested:
                nested[merge_key] = new[j][1][merge_key]
                patch.append(nested)
            i, j = i + 1, j + 1
        elif i >= len(old) or (j < len(new) and old[i][0] > new[j][0]):
            if not opts.ignore_changes:
                patch.append(new[j][1])
            j += 1
        else:
            if not opts.ignore_deletions:
                deletions.append({merge_key: old[i][1][merge_key], DIRECTIVE: "delete"})
            i += 1
    return patch, deletions


# --- apply (StrategicMergeMapPatch; also merges the two halves of a three-way patch) -------------------------


@dataclass(frozen=True, slots=True)
class _Merge:
    """``MergeOptions`` plus the schema. ``server`` stands for upstream's ``MergeParallelList`` and
    ``IgnoreUnmatchedNulls`` together: True when a patch is applied; False when the three-way patch merges its
    delta into its deletions, where directive lists are carried over instead of applied and nulls are kept."""

    schema: Schema
    server: bool


def _merge_map(
    original: dict[str, Any], patch: dict[str, Any], t: str | None, *, schema: Schema, server: bool
) -> dict[str, Any]:
    """Merge ``patch`` into ``original``; both are the caller's private copies and are consumed."""
    return _merge_object(original, patch, t, _Merge(schema, server))


def _merge_object(original: dict[str, Any], patch: dict[str, Any], t: str | None, opts: _Merge) -> dict[str, Any]:
    if opts.server and _merge_flat(original, patch):
        return original
    if DIRECTIVE in patch:
        return _map_directive(patch[DIRECTIVE], patch)
    _apply_retain_keys(original, patch, opts)
    _merge_ordered_lists(original, patch, t, opts)
    for name, value in patch.items():
        key, delete_list = name, name.startswith(DELETE_PREFIX)
        if delete_list:
            if not opts.server:
                original[key] = value
                continue
            key = _extract_key(key, DELETE_PREFIX)
        if value is None:
            original.pop(key, None)
            if opts.server:
                continue
        if key not in original or (type(original[key]) is not type(value) and go_type(original[key]) != go_type(value)):
            if not delete_list:
                _set_new(original, key, value, opts)
            continue
        old, found = original[key], opts.schema.field(t, key)
        _, how = split_strategy(found)
        if isinstance(old, dict):
            original[key] = value if how == "replace" else _merge_object(old, value, found.type, opts)
        elif isinstance(old, list):
            merged = _merge_list_field(old, value, found, how, delete_list=delete_list, opts=opts)[0]
            # a list replaced as a whole (no merge key) keeps no nulls either: the typed decode drops them
            original[key] = discard_nulls(merged) if opts.server and how == "replace" else merged
        else:
            original[key] = value
    return original


def _merge_flat(original: dict[str, Any], patch: dict[str, Any]) -> bool:
    """Apply a patch of scalars and ``null`` s (no container, no ``$`` key: a condition, a container port) the
    way the general loop below does when applying, and say so; False, nothing done, for any other patch.

    Exact: with no directive the general loop only visits the patch's keys in order; a ``null`` removes the key,
    and a scalar is set whatever the original holds -- merged over a scalar, or put in place of a missing key or
    a value of another type by ``_set_new``, which keeps a scalar as it is."""
    for name, value in patch.items():
        if isinstance(value, _CONTAINERS) or name[:1] == "$":
            return False
    for name, value in patch.items():
        if value is None:
            original.pop(name, None)
        else:
            original[name] = value
    return True


_CONTAINERS: Final = (dict, list)


def _map_directive(directive: Any, patch: dict[str, Any]) -> dict[str, Any]:
    if directive == "replace":
        return {key: value for key, value in patch.items() if key != DIRECTIVE}
    if directive == "delete":
        return {}
    raise PatchError(f"unknown patch type: {go_str(directive)} in map: {go_str(patch)}")


def _set_new(original: dict[str, Any], key: str, value: Any, opts: _Merge) -> None:
    """A value with nothing to merge into: copied without ``null`` members (when applying) or ``$patch``
    objects (``discardNullValuesFromPatch`` + ``removeDirectives``, kubernetes#123304)."""
    keep, value = remove_directives(discard_nulls(value) if opts.server else value)
    if keep:
        original[key] = value
    else:
        original.pop(key, None)


def _extract_key(key: str, prefix: str) -> str:
    head, _, name = key.partition("/")
    if head != prefix or "/" not in key:
        raise _bad_request(_BAD_PRIMITIVE_LIST if prefix == DELETE_PREFIX else _BAD_ORDER_LIST)
    return name


def _apply_retain_keys(original: dict[str, Any], patch: dict[str, Any], opts: _Merge) -> None:
    """Clear the original's keys missing from ``$retainKeys``; every non-null patch key must be listed."""
    if RETAIN_KEYS not in patch:
        return
    keys = patch.pop(RETAIN_KEYS)
    if not opts.server:
        if RETAIN_KEYS not in original:
            original[RETAIN_KEYS] = keys
        elif not deep_equal(original[RETAIN_KEYS], keys):
            raise PatchError(
                f"{go_str(original[RETAIN_KEYS])} and {go_str(keys)} are not deep equal: "
                "this may happen when calculating the 3-way diff patch"
            )
        return
    if not isinstance(keys, list):
        raise _bad_request(_BAD_RETAIN_KEYS)
    allowed = {ident(key) for key in keys}
    for key, value in patch.items():
        if value is None or key.startswith((DELETE_PREFIX, ORDER_PREFIX)):
            continue
        if ident(key) not in allowed:
            raise _bad_request(_BAD_RETAIN_KEYS)
    for key in [key for key in original if ident(key) not in allowed]:
        del original[key]


def _merge_ordered_lists(original: dict[str, Any], patch: dict[str, Any], t: str | None, opts: _Merge) -> None:
    """``mergePatchIntoOriginal``: merge each list named by a ``$setElementOrder/<list>`` directive and order
    it -- ``$setElementOrder`` first, then the patch's order, then the original's. Consumes both keys."""
    for key in [key for key in patch if key.startswith(ORDER_PREFIX)]:
        order = patch.pop(key)
        if not opts.server:
            if key not in original:
                original[key] = order
            elif not deep_equal(original[key], order):
                raise _bad_request(_BAD_ORDER_LIST)
        if not isinstance(order, list):
            raise bad_arg_type("[]interface {}", order)
        name = _extract_key(key, ORDER_PREFIX)
        has_old, has_new = name in original, name in patch
        for present, value in ((has_old, original.get(name)), (has_new, patch.get(name))):
            if present and not isinstance(value, list):
                raise bad_arg_type("[]interface {}", value)
        old: list[Any] = original[name] if has_old else []
        new: list[Any] = patch[name] if has_new else []
        found = opts.schema.field(t, name)
        _, how = split_strategy(found)
        validate_order(new, order, found.merge_key)
        if not has_new:
            if not has_old:
                continue
            merged, server = old, old
        elif not has_old:
            merged, server = remove_directives(new)[1], old
        else:
            merged, server = _merge_list_field(old, new, found, how, delete_list=False, opts=opts)
        inside, outside = partition(merged, order, found.merge_key)
        kind = element_kind(old, new)
        original[name] = normalize_element_order(
            inside, outside, patch_order=order, server_order=server, merge_key=found.merge_key, kind=kind
        )
        patch.pop(name, None)


def _merge_list_field(
    old: list[Any], new: list[Any], found: Field, how: str, *, delete_list: bool, opts: _Merge
) -> tuple[list[Any], list[Any]]:
    """Merge a list field; returns (merged list, Go's view of the original's backing array).

    Upstream's ``deleteMatchingEntries`` compacts the original in place and new elements are appended into
    the slots that frees, so the caller's original slice -- which ``$setElementOrder`` then uses as the
    server order -- reads "kept elements, then appended ones". The second value reproduces that view."""
    if how != "merge" and not delete_list:
        return new, old  # atomic list: the patch's value, verbatim
    if not old and not new:
        return old, old
    kind, merge_key = element_kind(old, new), found.merge_key
    backing = old
    if kind != "map":
        if opts.server and delete_list:
            gone = {ident(item) for item in new}
            return [item for item in old if ident(item) not in gone], old
        merged = dedup(old + new)
    else:
        if not merge_key:
            raise PatchError(f"cannot merge lists without merge key for {found.type or 'this field'}")
        at = _in_place(old, new, merge_key) if opts.server else None
        if at is not None:
            merged = list(old)
            for i, item in zip(at, new, strict=True):
                merged[i] = _merge_object(merged[i], item, found.type, opts)
            return merged, list(old)
        old, new, backing = _apply_list_directives(old, new, merge_key)
        merged = _merge_by_key(old, new, found.type, merge_key, opts, backing)
    inside, outside = partition(merged, new, merge_key)
    ordered = normalize_element_order(
        inside, outside, patch_order=new, server_order=old, merge_key=merge_key, kind=kind
    )
    return ordered, backing


def _in_place(old: list[Any], new: list[Any], merge_key: str) -> list[int] | None:
    """The positions in ``old`` of ``new``'s elements when the patch only merges into elements already there, in
    the original's order (a kubelet's conditions, a pod's IPs: the common shape of a status patch); else None.

    Then the general path's result is the original list with each of those elements merged in place: no element
    is deleted or appended (no directive, every key found once), so the original's backing array is unchanged;
    the patch elements are in the original's order, and ``normalize_element_order`` interleaves them with the
    server-only ones by the original's positions, which reproduces the original's order. The merge keys must be
    strings (a merge of the element cannot then remove or change its key: the patch sets the same string) and
    unique on both sides (Go's first-match lookup and Python's agree); a patch element with a ``$`` key
    (``$patch``, ``$retainKeys``...) takes the general path."""
    if not new or len(new) > len(old):
        return None
    where: dict[str, int] = {}
    for i, item in enumerate(old):
        if type(item) is not dict:
            return None
        key = item.get(merge_key)
        if type(key) is not str or key in where:
            return None
        where[key] = i
    out: list[int] = []
    last = -1
    for item in new:
        if type(item) is not dict:
            return None
        key = item.get(merge_key)
        at = where.get(key) if type(key) is str else None
        if at is None or at <= last:
            return None
        for name in item:
            if name.startswith("$"):
                return None
        out.append(at)
        last = at
    return out


def _apply_list_directives(old: list[Any], new: list[Any], merge_key: str) -> tuple[list[Any], list[Any], list[Any]]:
    """Apply ``$patch: delete`` elements (every match goes) and ``$patch: replace`` (the list becomes the other
    patch elements); returns (original left, patch elements left, the original's backing array)."""
    rest: list[Any] = []
    deleted: list[Any] = []  # the merge keys of the delete elements, in patch order
    replace_all = False
    for item in new:
        if DIRECTIVE not in item:
            rest.append(item)
            continue
        directive = item[DIRECTIVE]
        if directive == "delete":
            if merge_key not in item:
                raise no_merge_key(item, merge_key)
            deleted.append(item[merge_key])
        elif directive == "replace":
            replace_all = True
        elif directive == "merge":
            raise PatchError("merging lists cannot yet be specified in the patch")
        else:
            raise PatchError(f"unknown patch type: {go_str(directive)} in map: {go_str(item)}")
    kept, backing = _delete_matching(old, merge_key, deleted)
    return (rest, [], backing) if replace_all else (kept, rest, backing)


def _delete_matching(old: list[Any], merge_key: str, values: list[Any]) -> tuple[list[Any], list[Any]]:
    """``deleteMatchingEntries`` for each of ``values`` in turn: (the elements kept, Go's backing array).

    Go removes one match at a time with ``append(s[:i], s[i+1:]...)``, which shifts the rest left and leaves the
    slot past the new end holding the list's last element of that moment. So the backing array reads: the kept
    elements, then, from the end backwards, the last live element before each removal. Replayed here in one pass
    over an index of positions (a search and a shift per removal was quadratic)."""
    if not values:
        return old, list(old)
    at: dict[Any, list[int]] = {}
    for i, item in enumerate(old):
        if merge_key in item:
            at.setdefault(ident(item[merge_key]), []).append(i)
    live = [True] * len(old)
    last = len(old) - 1  # the greatest live position
    tails: list[Any] = []
    for value in values:
        for i in at.pop(ident(value), ()):  # a repeated value finds nothing left
            tails.append(old[last])
            live[i] = False
            while last >= 0 and not live[last]:
                last -= 1
    kept = [item for item, alive in zip(old, live, strict=True) if alive]
    return kept, kept + tails[::-1]


def _merge_by_key(
    old: list[Any], new: list[Any], t: str | None, merge_key: str, opts: _Merge, backing: list[Any]
) -> list[Any]:
    merged = list(old)
    index = KeyIndex(merged, merge_key)
    for item in new:
        if merge_key not in item:
            raise no_merge_key(item, merge_key)
        at = index.find(item[merge_key])
        if at >= 0:
            merged[at] = _merge_object(merged[at], item, t, opts)
            index.rekey(at, item[merge_key], merged[at])
        else:
            # a typed decode drops nulls from a new element, as from a new map value
            added = discard_nulls(item) if opts.server else item
            if len(merged) < len(backing):
                backing[len(merged)] = added
            merged.append(added)
            index.add(added)
    return merged
