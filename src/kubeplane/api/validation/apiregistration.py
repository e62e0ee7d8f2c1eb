"""APIService validation and defaulting (kube-aggregator pkg/apis/apiregistration/validation/validation.go
``ValidateAPIService`` / ``ValidateAPIServiceUpdate``, v1 defaults.go): the name must be ``version.group``, the
group a DNS subdomain (empty only for ``v1``), the version a DNS-1035 label, ``groupPriorityMinimum`` in
(0, 20000] and ``versionPriority`` in (0, 1000]; a local APIService (no ``service``) may have neither a
``caBundle`` nor ``insecureSkipTLSVerify``; a service reference needs a namespace, a name and a valid port
(defaulted to 443)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubeplane.api.validation import names as vnames
from kubeplane.api.validation.field import ErrorList, invalid, new_path, required

__all__ = ["default_apiservice", "validate_apiservice", "validate_apiservice_update"]


def default_apiservice(obj: dict[str, Any]) -> None:
    spec = obj.get("spec")
    if isinstance(spec, dict) and isinstance(spec.get("service"), dict):
        spec["service"].setdefault("port", 443)


def validate_apiservice(obj: Mapping[str, Any]) -> ErrorList:
    spec = obj.get("spec") if isinstance(obj.get("spec"), Mapping) else {}
    assert isinstance(spec, Mapping)
    errs: ErrorList = []
    group, version = str(spec.get("group") or ""), str(spec.get("version") or "")
    wanted = f"{version}.{group}"
    name = str((obj.get("metadata") or {}).get("name") or "")
    if name and name != wanted:
        errs.append(
            invalid(new_path("metadata", "name"), name, detail=f'must be `spec.version+"."+spec.group`: "{wanted}"')
        )
    if not group and version != "v1":
        errs.append(required(new_path("spec", "group"), "only v1 may have an empty group and it better be legacy kube"))
    if group:
        for problem in vnames.is_dns1123_subdomain(group):
            errs.append(invalid(new_path("spec", "group"), group, detail=problem))
    for problem in vnames.is_dns1035_label(version):
        errs.append(invalid(new_path("spec", "version"), version, detail=problem))
    gpm = spec.get("groupPriorityMinimum") or 0
    if not isinstance(gpm, int) or gpm <= 0 or gpm > 20000:
        detail = "must be positive and less than 20000"
        errs.append(invalid(new_path("spec", "groupPriorityMinimum"), gpm, detail=detail))
    vp = spec.get("versionPriority") or 0
    if not isinstance(vp, int) or vp <= 0 or vp > 1000:
        errs.append(invalid(new_path("spec", "versionPriority"), vp, detail="must be positive and less than 1000"))
    service = spec.get("service")
    ca_bundle = str(spec.get("caBundle") or "")
    insecure = bool(spec.get("insecureSkipTLSVerify"))
    if not isinstance(service, Mapping):
        if ca_bundle:
            size = len(ca_bundle) * 3 // 4 - ca_bundle.count("=")
            detail = "local APIServices may not have a caBundle"
            errs.append(invalid(new_path("spec", "caBundle"), f"{size} bytes", detail=detail))
        if insecure:
            detail = "local APIServices may not have insecureSkipTLSVerify"
            errs.append(invalid(new_path("spec", "insecureSkipTLSVerify"), insecure, detail=detail))
        return errs
    if not service.get("namespace"):
        errs.append(required(new_path("spec", "service", "namespace")))
    if not service.get("name"):
        errs.append(required(new_path("spec", "service", "name")))
    port = service.get("port", 443)
    if problems := vnames.is_valid_port_num(int(port) if isinstance(port, int) else 0):
        detail = "port is not valid: " + ", ".join(problems)
        errs.append(invalid(new_path("spec", "service", "port"), port, detail=detail))
    if insecure and ca_bundle:
        detail = "may not be true if caBundle is present"
        errs.append(invalid(new_path("spec", "insecureSkipTLSVerify"), insecure, detail=detail))
    return errs


def validate_apiservice_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    return validate_apiservice(new)
