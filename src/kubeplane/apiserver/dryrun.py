"""``dryRun``, validated as upstream does before a write runs (apimachinery ``ValidateDryRun``, called from
``ValidateCreateOptions``, ``ValidateUpdateOptions``, ``ValidatePatchOptions`` and ``ValidateDeleteOptions``).

Why it matters: a request that asks for a dry run and is not recognised as one would write for real. Only the
exact value ``All`` is a dry run; any other value (``all``, ``Bogus``, an empty value) or more than one value is a
422 naming the options kind, and nothing runs. A request without ``dryRun`` writes.
"""

from __future__ import annotations

from collections.abc import Sequence

from kubeplane.api.validation.field import ErrorList, invalid, new_path, not_supported

from . import errors

__all__ = ["OPTIONS_KIND", "dry_run"]

OPTIONS_KIND = {
    "create": "CreateOptions",
    "update": "UpdateOptions",
    "patch": "PatchOptions",
    "delete": "DeleteOptions",
    "deletecollection": "DeleteOptions",
}
"""The options kind of each writing verb: what upstream's 422 names (``CreateOptions.meta.k8s.io "" is invalid``)."""


def dry_run(values: Sequence[object], *, verb: str) -> bool:
    """Whether the request is a dry run; raises a 422 for values upstream refuses. ``values`` are every
    ``dryRun`` the request gave (each repetition of the query parameter, or the options body's list)."""
    if not values:
        return False
    found: ErrorList = []
    path = new_path("dryRun")
    if any(v != "All" for v in values):
        found.append(not_supported(path, list(values), supported=["All"]))
    if len(values) > 1:
        found.append(invalid(path, list(values), detail="multiple dryRun values are not supported"))
    if found:
        raise errors.invalid("meta.k8s.io", OPTIONS_KIND.get(verb, "CreateOptions"), "", found)
    return True
