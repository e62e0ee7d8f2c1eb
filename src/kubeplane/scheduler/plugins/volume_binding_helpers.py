"""The storage helpers only VolumeBinding needs: requests and capacities in whole bytes (upstream's scorer and
``hasEnoughCapacity`` compare ``Quantity.Value()``) and ``v1helper.MatchTopologySelectorTerms``.

The ``k8s.io/component-helpers/storage/volume`` and ``.../ephemeral`` helpers the plugin shares with the PV
controller (``FindMatchingVolume``, ``GetBindVolumeToClaim``, classes, ``VolumeIsForPod``, the node affinity cache)
are in :mod:`kubeplane.api.volumes`. Nothing here mutates its arguments.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kubeplane.api.views import EMPTY, spec_of
from kubeplane.api.volumes import quantity_of, volume_capacity

__all__ = ["claim_storage_request", "match_topology_selector_terms", "pv_capacity"]


def claim_storage_request(claim: Mapping[str, Any]) -> int | None:
    """``spec.resources.requests.storage`` in bytes (rounded up as ``Quantity.Value``), None when absent (upstream
    ``hasEnoughCapacity`` then has no capacity to check)."""
    raw = ((spec_of(claim).get("resources") or EMPTY).get("requests") or EMPTY).get("storage")
    return None if raw is None else quantity_of(raw).value()


def pv_capacity(volume: Mapping[str, Any]) -> int:
    """``spec.capacity.storage`` in bytes (0 when absent, as a Go zero Quantity)."""
    return volume_capacity(volume).value()


def match_topology_selector_terms(terms: Sequence[Mapping[str, Any]] | None, node_labels: Mapping[str, str]) -> bool:
    """Upstream ``v1helper.MatchTopologySelectorTerms``: no terms match everything; a term matches when every
    ``matchLabelExpressions`` key is a node label whose value is listed (an empty term matches nothing)."""
    if not terms:
        return True
    for term in terms:
        expressions = term.get("matchLabelExpressions") or ()
        if not expressions:
            continue
        if all(
            (e.get("values") or ()) and e.get("key") in node_labels and node_labels[e["key"]] in (e.get("values") or ())
            for e in expressions
        ):
            return True
    return False
