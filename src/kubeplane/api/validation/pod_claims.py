"""A pod's ``spec.resourceClaims``: upstream ``validatePodResourceClaims`` / ``validatePodResourceClaim``
(pkg/apis/core/validation/validation.go, v1.37), called by ``ValidatePodSpec`` between the volumes and the
containers.

Each claim: a ``name`` that is a DNS-1123 label, unique in the pod; exactly one of ``resourceClaimName`` (a DNS
subdomain) and ``resourceClaimTemplateName`` (a DNS subdomain). The bad value of the exactly-one errors is the
claim as sent (upstream prints its internal Go struct). Not checked: the ``final ResourceClaim name:`` check of
``<pod name>-<claim name>``, which needs the pod's metadata the spec check does not see.
"""

from __future__ import annotations

from kubeplane.api.validation import field, names
from kubeplane.api.validation.common import invalid_each
from kubeplane.api.validation.reader import Reader

__all__ = ["validate_pod_resource_claims"]


def validate_pod_resource_claims(spec: Reader) -> None:
    errs = spec.errs
    seen: set[str] = set()
    for claim in spec.items("resourceClaims"):
        name = claim.string("name")
        if not name:
            errs.append(field.required(claim.at("name")))
        elif name in seen:
            errs.append(field.duplicate(claim.at("name"), name))
        else:
            errs.extend(invalid_each(claim.at("name"), name, names.is_dns1123_label(name)))
            seen.add(name)
        by_name, by_template = claim.opt_string("resourceClaimName"), claim.opt_string("resourceClaimTemplateName")
        if by_name is not None and by_template is not None:
            detail = "at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified"
            errs.append(field.invalid(claim.path, dict(claim.data), detail=detail))
        if by_name is None and by_template is None:
            detail = "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`"
            errs.append(field.invalid(claim.path, dict(claim.data), detail=detail))
        for key, value in (("resourceClaimName", by_name), ("resourceClaimTemplateName", by_template)):
            if value is not None:
                errs.extend(invalid_each(claim.at(key), value, names.is_dns1123_subdomain(value)))
