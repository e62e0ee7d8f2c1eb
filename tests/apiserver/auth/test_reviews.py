"""authorization.k8s.io reviews (auth/reviews.py): upstream ``pkg/registry/authorization/*/rest.go`` and
``rest_test.go`` (SAR allowed/denied/reason, SSAR for the requester, LSAR's namespace rules, SSRR's rules and
``no namespace on request``), ``pkg/apis/authorization/validation`` messages and ``util/helpers.go``
(``matchAllVersionIfEmpty``, selectors, ``BuildEvaluationError``)."""

from __future__ import annotations

from typing import Any

from kubeplane.apiserver.auth.authorizer import Attributes, Decision, Selector
from kubeplane.apiserver.auth.reviews import attributes_from
from kubeplane.apiserver.tokens import UserInfo

from .conftest import ADMIN, Served
from .fakes import Grant, call

AUTHZ = "/apis/authorization.k8s.io/v1"


async def _review(served: Served, path: str, body: dict[str, Any], token: str = ADMIN) -> tuple[int, Any]:
    return await call(served.app, "POST", AUTHZ + path, token=token, body=body)


async def test_subject_access_review_answers_for_the_spec_user(served: Served) -> None:
    served.grants.add(Grant("devs", ("get",), resources=("pods",), groups=("",), namespace="team"))
    spec = {
        "user": "bob",
        "groups": ["devs"],
        "resourceAttributes": {"verb": "get", "resource": "pods", "namespace": "team"},
    }
    status, body = await _review(served, "/subjectaccessreviews", {"kind": "SubjectAccessReview", "spec": spec})
    assert status == 201, body
    assert body["status"] == {"allowed": True, "reason": "allowed by grant to devs"}
    assert body["metadata"] == {"creationTimestamp": None}
    asked = served.grants.asked[-1]
    assert (asked.user.name, asked.user.groups, asked.api_version) == ("bob", ("devs",), "*")
    spec["resourceAttributes"]["namespace"] = "other"  # type: ignore[index]
    status, body = await _review(served, "/subjectaccessreviews", {"kind": "SubjectAccessReview", "spec": spec})
    assert body["status"] == {"allowed": False}


async def test_subject_access_review_validation(served: Served) -> None:
    status, body = await _review(served, "/subjectaccessreviews", {"kind": "SubjectAccessReview", "spec": {}})
    assert status == 422
    assert body["message"] == (
        'SubjectAccessReview.authorization.k8s.io "" is invalid: [spec.resourceAttributes: Invalid value: null: '
        "exactly one of nonResourceAttributes or resourceAttributes must be specified, spec.user: Invalid value: "
        '"": at least one of user or group must be specified]'
    )
    both = {"user": "u", "resourceAttributes": {"verb": "get"}, "nonResourceAttributes": {"verb": "get", "path": "/x"}}
    status, body = await _review(
        served, "/subjectaccessreviews", {"kind": "SubjectAccessReview", "metadata": {"name": "n"}, "spec": both}
    )
    assert status == 422
    assert [c["field"] for c in body["details"]["causes"]] == ["spec.nonResourceAttributes", "metadata"]
    assert body["details"]["causes"][1]["message"].endswith("must be empty")


async def test_self_subject_access_review_is_the_requesters(served: Served) -> None:
    """kubectl auth can-i: SSAR needs only system:basic-user's grant and answers for the requester."""
    ssar = {
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {"verb": "list", "resource": "pods", "namespace": "default"}},
    }
    status, body = await _review(served, "/selfsubjectaccessreviews", ssar, token="alice-token")
    assert status == 201, body
    assert body["status"] == {"allowed": False}
    assert served.grants.asked[-1].user.name == "alice"
    nonres = {"kind": "SelfSubjectAccessReview", "spec": {"nonResourceAttributes": {"verb": "get", "path": "/healthz"}}}
    status, body = await _review(served, "/selfsubjectaccessreviews", nonres, token="alice-token")
    assert body["status"]["allowed"] is True
    status, body = await _review(
        served, "/selfsubjectaccessreviews", {"kind": "SelfSubjectAccessReview", "spec": {}}, token="alice-token"
    )
    assert status == 422


async def test_denied_is_reported(served: Served) -> None:
    class Deny:
        def authorize(self, attrs: Attributes) -> tuple[Decision, str]:
            return Decision.DENY, "denied by policy"

    served.registry.authorizer = Deny()
    spec = {"user": "u", "nonResourceAttributes": {"verb": "get", "path": "/x"}}
    status, body = await call(served.app, "POST", AUTHZ + "/subjectaccessreviews", body={"spec": spec})
    assert status == 403  # the request itself is denied: the filter runs first
    assert body["message"].endswith(": denied by policy")


async def test_local_subject_access_review_namespaces(served: Served) -> None:
    lsar = "/namespaces/team/localsubjectaccessreviews"
    attrs = {"verb": "get", "resource": "pods", "namespace": "team"}
    status, body = await _review(
        served, lsar, {"kind": "LocalSubjectAccessReview", "spec": {"user": "u", "resourceAttributes": attrs}}
    )
    assert status == 201, body
    assert body["metadata"] == {"namespace": "team", "creationTimestamp": None}
    assert body["status"] == {"allowed": False}
    wrong = {"verb": "get", "resource": "pods", "namespace": "other"}
    status, body = await _review(
        served, lsar, {"kind": "LocalSubjectAccessReview", "spec": {"user": "u", "resourceAttributes": wrong}}
    )
    assert status == 422
    assert body["message"] == (
        'LocalSubjectAccessReview.authorization.k8s.io "" is invalid: spec.resourceAttributes.namespace: Invalid '
        'value: "other": must match metadata.namespace'
    )
    nonres = {"user": "u", "nonResourceAttributes": {"verb": "get", "path": "/x"}}
    status, body = await _review(served, lsar, {"kind": "LocalSubjectAccessReview", "spec": nonres})
    assert status == 422
    assert body["message"] == (
        'LocalSubjectAccessReview.authorization.k8s.io "" is invalid: spec.nonResourceAttributes: Invalid value: '
        '{"path":"/x","verb":"get"}: disallowed on this kind of request'
    )
    status, body = await _review(
        served,
        lsar,
        {
            "kind": "LocalSubjectAccessReview",
            "metadata": {"namespace": "other"},
            "spec": {"user": "u", "resourceAttributes": attrs},
        },
    )
    assert status == 400
    assert body["message"] == "the namespace of the provided object does not match the namespace sent on the request"


async def test_self_subject_rules_review(served: Served) -> None:
    served.grants.add(Grant("alice", ("get", "list"), resources=("pods",), groups=("",), namespace="team"))
    ssrr = "/selfsubjectrulesreviews"
    status, body = await _review(served, ssrr, {"kind": "SelfSubjectRulesReview", "spec": {}}, token="alice-token")
    assert status == 400
    assert body["message"] == "no namespace on request"
    status, body = await _review(
        served, ssrr, {"kind": "SelfSubjectRulesReview", "spec": {"namespace": "team"}}, token="alice-token"
    )
    assert status == 201, body
    assert body["spec"] == {}
    assert {"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]} in body["status"]["resourceRules"]
    assert body["status"]["incomplete"] is False
    assert "evaluationError" not in body["status"]
    status, body = await _review(
        served, ssrr, {"kind": "SelfSubjectRulesReview", "spec": {"namespace": "other"}}, token="alice-token"
    )
    assert {"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]} not in body["status"]["resourceRules"]


def test_selectors_of_a_review() -> None:
    """ResourceAttributesFrom: requirements win over the raw selector; fieldSelector In/NotIn with one value are
    = and !=; what does not parse is reported in evaluationError (BuildEvaluationError)."""
    user = UserInfo("u")
    attrs, notes = attributes_from(
        user,
        {
            "resourceAttributes": {
                "verb": "list",
                "resource": "pods",
                "fieldSelector": {"requirements": [{"key": "spec.nodeName", "operator": "In", "values": ["n1"]}]},
                "labelSelector": {"rawSelector": "app=web"},
            }
        },
    )
    assert attrs.field_selector == (Selector("spec.nodeName", "=", ("n1",)),)
    assert attrs.label_selector == (Selector("app", "=", ("web",)),)
    assert notes == ""
    _, notes = attributes_from(
        user,
        {
            "resourceAttributes": {
                "verb": "list",
                "fieldSelector": {
                    "requirements": [
                        {"key": "spec.nodeName", "operator": "In", "values": ["n1"]},
                        {"key": "x", "operator": "Exists"},
                    ]
                },
                "labelSelector": {"rawSelector": "a in ("},
            }
        },
    )
    assert notes == (
        "spec.resourceAttributes.fieldSelector partially ignored due to parse error; "
        "spec.resourceAttributes.labelSelector ignored due to parse error"
    )
