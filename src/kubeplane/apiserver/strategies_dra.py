"""Registry strategies of resource.k8s.io/v1, as upstream's ``pkg/registry/resource/{deviceclass,resourceclaim,
resourceclaimtemplate,resourceslice}/strategy.go`` (v1.37).

* **DeviceClass**, **ResourceSlice**: ``metadata.generation`` is 1 on create and moves when the spec changes
  (no status).
* **ResourceClaim**: create resets the status; an update of the main resource keeps the stored status; a
  ``/status`` write keeps the stored spec (the status subresource split). No generation.
* **ResourceClaimTemplate**: the default (no status, no generation).
"""

from __future__ import annotations

from typing import Final

from .strategies import Strategy
from .strategies_storage import CSIDriverStrategy, StatusSplitStrategy

__all__ = ["DRA_STRATEGIES"]

GROUP: Final = "resource.k8s.io"

DRA_STRATEGIES: Final[dict[tuple[str, str], type[Strategy]]] = {
    (GROUP, "DeviceClass"): CSIDriverStrategy,  # the same generation rule as csiDriverStrategy
    (GROUP, "ResourceSlice"): CSIDriverStrategy,
    (GROUP, "ResourceClaim"): StatusSplitStrategy,
}
