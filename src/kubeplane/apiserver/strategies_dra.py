"""Registry strategies of resource.k8s.io/v1, as upstream's ``pkg/registry/resource/{deviceclass,resourceclaim,
resourceclaimtemplate,resourceslice}/strategy.go`` (v1.37).

* **DeviceClass**, **ResourceSlice**: ``metadata.generation`` is 1 on create and moves when the spec changes
  (no status).
* **ResourceClaim**: create resets the status; an update of the main resource keeps the stored status; a
  ``/status`` write keeps the stored spec (the status subresource split). No generation.
* **ResourceClaimTemplate**: the default (no status, no generation).

ResourceClaims and ResourceClaimTemplates asking for ``adminAccess`` are admitted on create only in an admin
namespace (:mod:`.dra_admin`): ``begin_create`` runs the check (it needs the namespace, which the pure validators
cannot read) and, when it fails, answers upstream's one 422 of the admin errors followed by the kind's validation
errors.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from . import dra_admin, errors
from .strategies import Finish, Obj, Strategy
from .strategies_storage import CSIDriverStrategy, StatusSplitStrategy

if TYPE_CHECKING:
    from .registry import Registry

__all__ = ["DRA_STRATEGIES"]

GROUP: Final = "resource.k8s.io"


async def _admit_admin_access(strategy: Strategy, registry: Registry, obj: Obj, *, template: bool) -> None:
    namespace = str(obj["metadata"].get("namespace") or "")
    errs = await dra_admin.admin_errors(registry, dra_admin.requests_of(obj, template=template), namespace)
    if errs:
        name = str(obj["metadata"].get("name") or "")
        raise errors.invalid(GROUP, strategy.info.kind, name, errs + strategy.validate(obj))


class ResourceClaimStrategy(StatusSplitStrategy):
    """``resourceclaimStrategy``: the status split, and the admin-access namespace rule on create."""

    async def begin_create(self, registry: Registry, obj: Obj, *, dry_run: bool) -> Finish | None:
        await _admit_admin_access(self, registry, obj, template=False)
        return None


class ResourceClaimTemplateStrategy(Strategy):
    """``resourceClaimTemplateStrategy``: the admin-access namespace rule on create."""

    async def begin_create(self, registry: Registry, obj: Obj, *, dry_run: bool) -> Finish | None:
        await _admit_admin_access(self, registry, obj, template=True)
        return None


DRA_STRATEGIES: Final[dict[tuple[str, str], type[Strategy]]] = {
    (GROUP, "DeviceClass"): CSIDriverStrategy,  # the same generation rule as csiDriverStrategy
    (GROUP, "ResourceSlice"): CSIDriverStrategy,
    (GROUP, "ResourceClaim"): ResourceClaimStrategy,
    (GROUP, "ResourceClaimTemplate"): ResourceClaimTemplateStrategy,
}
