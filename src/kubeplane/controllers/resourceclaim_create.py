"""The ResourceClaim the resourceclaim controller creates for one pod claim from its template (upstream
``handleClaim`` in ``pkg/controller/resourceclaim/controller.go``, v1.37).

Invariants: the claim's spec is the template's ``spec.spec`` (a copy: the template stays untouched); its
``generateName`` is ``<pod>-<pod claim>-`` and never longer than 57 characters, so with the API server's 5 random
characters the name fits 63 -- when too long, *both* parts are cut in proportion to their length (the API server
would cut only the end and lose the pod claim's name); the pod is its controller with ``blockOwnerDeletion`` so
the garbage collector removes it with the pod.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Final

from kubeplane.api.views import meta_of, spec_of
from kubeplane.client.interface import Obj

__all__ = ["MAX_BASE_LEN", "claim_from_template", "generate_name", "needs_admin_access"]

MAX_BASE_LEN: Final = 57
"""Room for the API server's 5 random characters in a 63-character name (and one hyphen of slack)."""


def generate_name(pod_name: str, claim_name: str) -> str:
    """``<pod>-<claim>-``, or both parts shortened proportionally when that exceeds :data:`MAX_BASE_LEN`."""
    name = f"{pod_name}-{claim_name}-"
    if len(name) > MAX_BASE_LEN:
        total = len(name)
        name = (
            pod_name[: len(pod_name) * MAX_BASE_LEN // total]
            + "-"
            + claim_name[: len(claim_name) * MAX_BASE_LEN // total]
        )
    return name


def claim_from_template(
    pod: Mapping[str, Any], pod_claim: Mapping[str, Any], template: Mapping[str, Any], annotation: str
) -> Obj:
    """The claim to create: the template's metadata labels/annotations plus ``annotation: <pod claim name>``."""
    pm = meta_of(pod)
    template_spec = spec_of(template)
    template_meta = template_spec.get("metadata") if isinstance(template_spec.get("metadata"), Mapping) else {}
    assert isinstance(template_meta, Mapping)
    annotations = dict(template_meta.get("annotations") or {})
    annotations[annotation] = str(pod_claim.get("name") or "")
    meta: Obj = {
        "generateName": generate_name(str(pm.get("name") or ""), str(pod_claim.get("name") or "")),
        "namespace": pm.get("namespace"),
        "ownerReferences": [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": pm.get("name"),
                "uid": pm.get("uid"),
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
        "annotations": annotations,
    }
    if template_meta.get("labels"):
        meta["labels"] = dict(template_meta["labels"])
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": meta,
        "spec": copy.deepcopy(dict(template_spec.get("spec") or {})),
    }


def needs_admin_access(template: Mapping[str, Any]) -> bool:
    """``needsAdminAccess``: some request of the template asks for admin access (exactly or in a subrequest)."""
    devices = (spec_of(template).get("spec") or {}).get("devices") or {}
    for request in devices.get("requests") or ():
        exactly = request.get("exactly") if isinstance(request, Mapping) else None
        if isinstance(exactly, Mapping) and exactly.get("adminAccess") is True:
            return True
        for sub in (request.get("firstAvailable") if isinstance(request, Mapping) else None) or ():
            if isinstance(sub, Mapping) and sub.get("adminAccess") is True:
                return True
    return False
