"""authorization.k8s.io/v1 reviews: create-only kinds answered by the server's authorizer, never stored.

Upstream: ``pkg/registry/authorization/{subjectaccessreview,selfsubjectaccessreview,localsubjectaccessreview,
selfsubjectrulesreview}/rest.go``, ``pkg/registry/authorization/util/helpers.go`` and
``pkg/apis/authorization/validation`` (v1.37).

* **SubjectAccessReview** (cluster-scoped): may the spec's user (``user``, ``groups``, ``uid``, ``extra``) do
  ``resourceAttributes`` or ``nonResourceAttributes``? Exactly one of the two, and a user or a group, else 422;
  metadata must be empty.
* **LocalSubjectAccessReview** (namespaced): as a SAR, but ``spec.resourceAttributes.namespace`` must match
  ``metadata.namespace`` (which the request's namespace fills in) and non-resource attributes are refused.
* **SelfSubjectAccessReview**: the same question for the requester (``kubectl auth can-i``).
* **SelfSubjectRulesReview**: what the requester may do in ``spec.namespace`` (400 ``no namespace on request``
  without one), from the authorizers' rule resolvers (RBAC's): ``resourceRules``, ``nonResourceRules``,
  ``incomplete`` and ``evaluationError``.

An empty ``resourceAttributes.version`` is authorized as ``*`` (``matchAllVersionIfEmpty``); selectors are
carried as upstream's ``ResourceAttributesFrom`` parses them (raw or requirements), and one that does not parse is
ignored and reported in ``evaluationError``. The status is ``allowed`` (always present), ``denied``, ``reason``
and ``evaluationError`` (omitted when empty). The reply is the request's object with ``metadata
.creationTimestamp: null``; 201, nothing written.
"""

from __future__ import annotations

from typing import Any

from kubeplane.api import fields as apifields
from kubeplane.api import labels as apilabels
from kubeplane.api.resources import ResourceInfo
from kubeplane.api.validation.field import Error as FieldError
from kubeplane.api.validation.field import aggregate_text, invalid, new_path
from kubeplane.apiserver import errors
from kubeplane.apiserver.registry import Registry
from kubeplane.apiserver.tokens import UserInfo

from .attributes_of import field_requirements, label_requirements
from .authorizer import Attributes, Decision, Selector
from .modes import rule_resolvers

GROUP = "authorization.k8s.io"
_KINDS = frozenset(
    {"SubjectAccessReview", "SelfSubjectAccessReview", "LocalSubjectAccessReview", "SelfSubjectRulesReview"}
)
_LABEL_OPS = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}


def handles(resource: ResourceInfo) -> bool:
    """Whether a create of ``resource`` is an authorization review answered here."""
    return resource.group == GROUP and resource.kind in _KINDS


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _strings(value: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in value) if isinstance(value, list) else ()


def _label_selector(spec: dict[str, Any]) -> tuple[tuple[Selector, ...], bool]:
    """The requirements of a ``LabelSelectorAttributes`` and whether any part failed to parse."""
    raw, requirements = spec.get("rawSelector") or "", spec.get("requirements") or []
    found: tuple[Selector, ...] = ()
    failed = False
    if raw:
        try:
            apilabels.parse(str(raw))
            found = label_requirements(str(raw))
        except apilabels.SelectorError:
            failed = True
    if isinstance(requirements, list) and requirements:
        found, failed = (), False
        out: list[Selector] = []
        for item in requirements:
            expr = _dict(item)
            op = _LABEL_OPS.get(str(expr.get("operator", "")))
            if op is None:
                failed = True
                continue
            values = _strings(expr.get("values"))
            try:
                apilabels.new_requirement(str(expr.get("key", "")), op, list(values) or None)
            except apilabels.SelectorError:
                failed = True
                continue
            out.append(Selector(str(expr.get("key", "")), op, values))
        found = tuple(out)
    return found, failed


def _field_selector(spec: dict[str, Any]) -> tuple[tuple[Selector, ...], bool]:
    """``fieldSelectorAsSelector``: In/NotIn with exactly one value, read as ``=``/``!=``."""
    raw, requirements = spec.get("rawSelector") or "", spec.get("requirements") or []
    found: tuple[Selector, ...] = ()
    failed = False
    if raw:
        try:
            apifields.parse_selector(str(raw))
            found = field_requirements(str(raw))
        except apifields.FieldSelectorError:
            failed = True
    if isinstance(requirements, list) and requirements:
        failed = False
        out: list[Selector] = []
        for item in requirements:
            expr = _dict(item)
            values = _strings(expr.get("values"))
            op = {"In": "=", "NotIn": "!="}.get(str(expr.get("operator", "")))
            if op is None or len(values) != 1:
                failed = True
                continue
            out.append(Selector(str(expr.get("key", "")), op, values))
        found = tuple(out)
    return found, failed


def attributes_from(user: UserInfo, spec: dict[str, Any]) -> tuple[Attributes, str]:
    """``ResourceAttributesFrom`` / ``NonResourceAttributesFrom`` and the selectors' part of
    ``BuildEvaluationError``."""
    resource = spec.get("resourceAttributes")
    if not isinstance(resource, dict):
        non = _dict(spec.get("nonResourceAttributes"))
        attrs = Attributes(
            user=user, verb=str(non.get("verb", "")), path=str(non.get("path", "")), resource_request=False
        )
        return attrs, ""
    fields_found, fields_failed = _field_selector(_dict(resource.get("fieldSelector")))
    labels_found, labels_failed = _label_selector(_dict(resource.get("labelSelector")))
    notes = []
    for what, found, failed in (
        ("fieldSelector", fields_found, fields_failed),
        ("labelSelector", labels_found, labels_failed),
    ):
        if failed:
            how = "partially ignored" if found else "ignored"
            notes.append(f"spec.resourceAttributes.{what} {how} due to parse error")
    attrs = Attributes(
        user=user,
        verb=str(resource.get("verb", "")),
        namespace=str(resource.get("namespace", "")),
        api_group=str(resource.get("group", "")),
        api_version=str(resource.get("version", "")) or "*",
        resource=str(resource.get("resource", "")),
        subresource=str(resource.get("subresource", "")),
        name=str(resource.get("name", "")),
        field_selector=fields_found,
        label_selector=labels_found,
    )
    return attrs, "; ".join(notes)


def _go_non_resource(value: Any) -> Any:
    """NonResourceAttributes as Go prints the struct in a field error: its fields in declaration order."""
    if not isinstance(value, dict):
        return value
    return {k: value[k] for k in ("path", "verb") if value.get(k)}


def _spec_errors(spec: dict[str, Any], *, self_review: bool) -> list[FieldError]:
    """``ValidateSubjectAccessReviewSpec`` / ``ValidateSelfSubjectAccessReviewSpec``."""
    path = new_path("spec")
    resource, non = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    errs: list[FieldError] = []
    if resource is not None and non is not None:
        errs.append(
            invalid(
                path.child("nonResourceAttributes"),
                _go_non_resource(non),
                detail="cannot be specified in combination with resourceAttributes",
            )
        )
    if resource is None and non is None:
        errs.append(
            invalid(
                path.child("resourceAttributes"),
                None,
                detail="exactly one of nonResourceAttributes or resourceAttributes must be specified",
            )
        )
    if not self_review and not spec.get("user") and not spec.get("groups"):
        errs.append(
            invalid(
                path.child("user"), spec.get("user") or "", detail="at least one of user or group must be specified"
            )
        )
    return errs


def _meta_errors(metadata: dict[str, Any], *, namespaced: bool) -> list[FieldError]:
    """Metadata must be empty (except the namespace of a LocalSubjectAccessReview; managedFields ignored)."""
    ignored = {"managedFields", "namespace"} if namespaced else {"managedFields"}
    if any(v not in (None, "", {}, []) for k, v in metadata.items() if k not in ignored):
        detail = "must be empty except for namespace" if namespaced else "must be empty"
        return [invalid(new_path("metadata"), metadata, detail=detail)]
    return []


def _status(decision: Decision, reason: str, evaluation_error: str) -> dict[str, Any]:
    status: dict[str, Any] = {"allowed": decision is Decision.ALLOW}
    if decision is Decision.DENY:
        status["denied"] = True
    if reason:
        status["reason"] = reason
    if evaluation_error:
        status["evaluationError"] = evaluation_error
    return status


def _spec_user(spec: dict[str, Any]) -> UserInfo:
    # an ExtraValue is a list in JSON, {"items": [...]} as the protobuf decoder gives the message
    extra = {
        str(k): _strings(v.get("items") if isinstance(v, dict) else v) for k, v in _dict(spec.get("extra")).items()
    }
    return UserInfo(
        str(spec.get("user") or ""), uid=str(spec.get("uid") or ""), groups=_strings(spec.get("groups")), extra=extra
    )


def create_review(
    registry: Registry, resource: ResourceInfo, body: Any, *, namespace: str | None, user: UserInfo | None
) -> dict[str, Any]:
    """The reply to a create of one of the four review kinds (see the module docstring)."""
    kind = resource.kind
    if not isinstance(body, dict):
        raise errors.bad_request(f"not a {kind}")
    metadata = dict(_dict(body.get("metadata")))
    spec = _dict(body.get("spec"))
    if kind == "LocalSubjectAccessReview":
        given = metadata.get("namespace") or ""
        if given and namespace and given != namespace:
            raise errors.bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        metadata["namespace"] = given or namespace or ""
    elif namespace:
        raise errors.bad_request(f"namespace is not allowed on this type: {namespace}")
    reply: dict[str, Any] = {
        "kind": kind,
        "apiVersion": f"{GROUP}/v1",
        "metadata": {**metadata, "creationTimestamp": metadata.get("creationTimestamp")},
    }
    if kind == "SelfSubjectRulesReview":
        return _rules_review(registry, reply, spec, user)
    errs = _spec_errors(spec, self_review=kind == "SelfSubjectAccessReview")
    errs += _meta_errors(
        {k: v for k, v in metadata.items() if k != "creationTimestamp"}, namespaced=kind == "LocalSubjectAccessReview"
    )
    if kind == "LocalSubjectAccessReview":
        res = spec.get("resourceAttributes")
        if isinstance(res, dict) and (res.get("namespace") or "") != metadata["namespace"]:
            errs.append(
                invalid(
                    new_path("spec.resourceAttributes.namespace"),
                    res.get("namespace") or "",
                    detail="must match metadata.namespace",
                )
            )
        if spec.get("nonResourceAttributes") is not None:
            errs.append(
                invalid(
                    new_path("spec.nonResourceAttributes"),
                    _go_non_resource(spec["nonResourceAttributes"]),
                    detail="disallowed on this kind of request",
                )
            )
    if errs:
        raise errors.invalid(GROUP, kind, "", errs)
    if kind == "LocalSubjectAccessReview" and not metadata["namespace"]:
        raise errors.bad_request("namespace is required on this type: ")
    if kind == "SelfSubjectAccessReview":
        if user is None:
            raise errors.bad_request("no user present on request")
        subject = user
    else:
        subject = _spec_user(spec)
    attrs, selector_errors = attributes_from(subject, spec)
    decision, reason = registry.authorizer.authorize(attrs)
    reply["spec"] = spec
    reply["status"] = _status(decision, reason, selector_errors)
    return reply


def _rules_review(
    registry: Registry, reply: dict[str, Any], spec: dict[str, Any], user: UserInfo | None
) -> dict[str, Any]:
    """SelfSubjectRulesReview's REST.Create: the union of the rule resolvers' answers for the requester."""
    if user is None:
        raise errors.bad_request("no user present on request")
    namespace = spec.get("namespace") or ""
    if not namespace:
        raise errors.bad_request("no namespace on request")
    resource_rules: list[dict[str, object]] = []
    non_resource_rules: list[dict[str, object]] = []
    incomplete = False
    failures: list[str] = []
    for resolver in rule_resolvers(registry.authorizer):
        found, non_found, partial, error = resolver.rules_for(user, str(namespace))
        resource_rules += found
        non_resource_rules += non_found
        incomplete = incomplete or partial
        if error:
            failures.append(error)
    status: dict[str, Any] = {
        "resourceRules": resource_rules,
        "nonResourceRules": non_resource_rules,
        "incomplete": incomplete,
    }
    if failures:  # utilerrors.NewAggregate
        status["evaluationError"] = aggregate_text(failures)
    reply["spec"] = {}
    reply["status"] = status
    return reply
