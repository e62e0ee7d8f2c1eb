"""ControllerRevision validation, as kube-apiserver's ``pkg/apis/apps/validation``
``ValidateControllerRevisionCreate`` and ``ValidateControllerRevisionUpdate``.

Metadata is validated generically by the API server; here ``data`` is required (``data is mandatory``) and
``revision`` must not be negative on create and update, and ``data`` never changes on update (a revision's data
is what its name hashes; only ``revision`` moves, when a controller rolls back to it). Paths are rooted at the
object. The API server loads this module by name (``strategies._VALIDATION_MODULES``) and reads its tables.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kubeplane.api.validation import field
from kubeplane.api.validation.common import IMMUTABLE_MSG, CreateValidator, UpdateValidator, read_nonnegative
from kubeplane.api.validation.field import ErrorList
from kubeplane.api.validation.reader import NAMED_GROUPS

__all__ = [
    "CREATE_VALIDATORS",
    "UPDATE_VALIDATORS",
    "validate_controller_revision",
    "validate_controller_revision_update",
]


def validate_controller_revision(obj: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidateControllerRevisionCreate`` (after metadata): ``data`` required, ``revision`` >= 0."""
    errs: ErrorList = []
    root = NAMED_GROUPS.root(obj, errs)
    if not root.has("data"):
        errs.append(field.required(root.at("data"), "data is mandatory"))
    read_nonnegative(root, "revision", bits=64)
    return errs


def validate_controller_revision_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidateControllerRevisionUpdate``: the create rules, then ``data`` is immutable."""
    errs = validate_controller_revision(new)
    if new.get("data") != old.get("data"):
        errs.append(field.invalid(field.new_path("data"), new.get("data"), detail=IMMUTABLE_MSG))
    return errs


CREATE_VALIDATORS: Final[dict[tuple[str, str], CreateValidator]] = {
    ("apps", "ControllerRevision"): validate_controller_revision
}
UPDATE_VALIDATORS: Final[dict[tuple[str, str], UpdateValidator]] = {
    ("apps", "ControllerRevision"): validate_controller_revision_update
}
