"""``Impersonate-*`` headers (auth/impersonation.py): upstream ``endpoints/filters/impersonation_test.go``
(TestImpersonationFilter's cases: who may impersonate what, the groups the impersonated user ends up with, SA
usernames checked as serviceaccounts in their namespace, extras and uid authorized as userextras/uids) and the
Forbidden messages of ``responsewriters.Forbidden`` for the impersonation attributes."""

from __future__ import annotations

from typing import Any

import pytest

from kubeplane.apiserver.auth.impersonation import requests_of, split_service_account
from kubeplane.apiserver.errors import APIError

from .conftest import ADMIN, Served
from .fakes import Grant, call

WHOAMI = "/apis/authentication.k8s.io/v1/selfsubjectreviews"


async def _whoami(served: Served, token: str, headers: list[tuple[str, str]]) -> tuple[int, Any]:
    return await call(served.app, "POST", WHOAMI, token=token, headers=headers, body={})


def test_service_account_usernames() -> None:
    """serviceaccount.SplitUsername: a DNS-label namespace and a DNS-subdomain name, exactly two parts."""
    assert split_service_account("system:serviceaccount:default:builder") == ("default", "builder")
    assert split_service_account("system:serviceaccount:default:a.b") == ("default", "a.b")
    assert split_service_account("system:serviceaccount:Default:builder") is None
    assert split_service_account("system:serviceaccount:default:builder:x") is None
    assert split_service_account("system:serviceaccount:default") is None
    assert split_service_account("alice") is None


def test_groups_without_a_user_are_refused_with_upstreams_text() -> None:
    """buildImpersonationRequests' error, the ObjectReferences printed as Go's %v (kubeplane answers 400)."""
    with pytest.raises(APIError) as err:
        requests_of([("impersonate-group", "devs"), ("impersonate-extra-scopes", "view"), ("impersonate-uid", "u1")])
    assert err.value.code == 400
    assert err.value.status["message"] == (
        "requested [{Group  devs    } {UserExtra  view  authentication.k8s.io/v1  scopes} "
        "{UID  u1  authentication.k8s.io/v1  }] without impersonating a user"
    )


async def test_groups_without_user_over_http_is_400(served: Served) -> None:
    status, body = await _whoami(served, ADMIN, [("Impersonate-Group", "devs")])
    assert status == 400
    assert body["message"] == "requested [{Group  devs    }] without impersonating a user"


async def test_admin_impersonates_a_user_with_groups_extras_and_uid(served: Served) -> None:
    """system:masters may impersonate anything; given groups are the authority, system:authenticated added;
    extra keys are lower-cased and %-unescaped."""
    status, body = await _whoami(
        served,
        ADMIN,
        [
            ("Impersonate-User", "bob"),
            ("Impersonate-Group", "g1"),
            ("Impersonate-Group", "g2"),
            ("Impersonate-Uid", "uid-7"),
            ("Impersonate-Extra-Example.com%2fScopes", "a"),
            ("Impersonate-Extra-Example.com%2fScopes", "b"),
        ],
    )
    assert status == 201, body
    assert body["status"]["userInfo"] == {
        "username": "bob",
        "uid": "uid-7",
        "groups": ["g1", "g2", "system:authenticated"],
        "extra": {"example.com/scopes": ["a", "b"]},
    }


async def test_service_account_gets_its_groups(served: Served) -> None:
    status, body = await _whoami(served, ADMIN, [("Impersonate-User", "system:serviceaccount:ns:builder")])
    assert status == 201
    assert body["status"]["userInfo"] == {
        "username": "system:serviceaccount:ns:builder",
        "groups": ["system:serviceaccounts", "system:serviceaccounts:ns", "system:authenticated"],
    }


async def test_impersonating_anonymous_adds_unauthenticated(served: Served) -> None:
    served.grants.add(Grant("system:unauthenticated", ("create",), resources=("selfsubjectreviews",)))
    status, body = await _whoami(served, ADMIN, [("Impersonate-User", "system:anonymous")])
    assert status == 201
    assert body["status"]["userInfo"] == {"username": "system:anonymous", "groups": ["system:unauthenticated"]}
    status, body = await _whoami(
        served, ADMIN, [("Impersonate-User", "carol"), ("Impersonate-Group", "system:unauthenticated")]
    )
    assert body["status"]["userInfo"]["groups"] == ["system:unauthenticated"]


async def test_user_without_impersonate_is_forbidden_with_upstreams_message(served: Served) -> None:
    status, body = await _whoami(served, "alice-token", [("Impersonate-User", "x")])
    assert status == 403
    assert body["message"] == (
        'users "x" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope'
    )
    assert body["details"] == {"name": "x", "kind": "users"}


async def test_service_account_impersonation_is_checked_in_its_namespace(served: Served) -> None:
    status, body = await _whoami(served, "alice-token", [("Impersonate-User", "system:serviceaccount:ns:builder")])
    assert status == 403
    assert body["message"] == (
        'serviceaccounts "builder" is forbidden: User "alice" cannot impersonate resource "serviceaccounts" in API '
        'group "" in the namespace "ns"'
    )
    served.grants.add(Grant("alice", ("impersonate",), resources=("serviceaccounts",), groups=("",), namespace="ns"))
    status, body = await _whoami(served, "alice-token", [("Impersonate-User", "system:serviceaccount:ns:builder")])
    assert status == 201, body
    status, body = await _whoami(served, "alice-token", [("Impersonate-User", "system:serviceaccount:other:builder")])
    assert status == 403


async def test_each_part_is_authorized(served: Served) -> None:
    """A grant on users alone does not cover groups, uids or extras (one attribute check per header value)."""
    served.grants.add(Grant("alice", ("impersonate",), resources=("users",), groups=("",)))
    assert (await _whoami(served, "alice-token", [("Impersonate-User", "x")]))[0] == 201
    status, body = await _whoami(served, "alice-token", [("Impersonate-User", "x"), ("Impersonate-Group", "admins")])
    assert status == 403
    assert body["message"] == (
        'groups "admins" is forbidden: User "alice" cannot impersonate resource "groups" in API group "" at the '
        "cluster scope"
    )
    status, body = await _whoami(served, "alice-token", [("Impersonate-User", "x"), ("Impersonate-Uid", "u1")])
    assert body["message"] == (
        'uids.authentication.k8s.io "u1" is forbidden: User "alice" cannot impersonate resource "uids" in API group '
        '"authentication.k8s.io" at the cluster scope'
    )
    status, body = await _whoami(served, "alice-token", [("Impersonate-User", "x"), ("Impersonate-Extra-Scopes", "s")])
    assert body["message"] == (
        'userextras.authentication.k8s.io "s" is forbidden: User "alice" cannot impersonate resource '
        '"userextras/scopes" in API group "authentication.k8s.io" at the cluster scope'
    )


async def test_impersonated_user_is_the_one_authorized(served: Served) -> None:
    """The request runs as the impersonated user: alice may not list pods, the admin impersonating alice may not
    either (the request as a ServiceAccount is no longer run as admin)."""
    status, body = await call(
        served.app, "GET", "/api/v1/namespaces/default/pods", token=ADMIN, headers={"Impersonate-User": "alice"}
    )
    assert status == 403
    assert body["message"] == (
        'pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "default"'
    )
