"""Authentication of HTTP requests (auth/authentication.py): upstream's token file
(``pkg/authentication/token/tokenfile`` NewCSV and its tests), ``group.AuthenticatedGroupAdder``, the bearer
token authenticator's reading of the header, and ``union.NewFailOnError(chain, anonymous)``: no credentials is
system:anonymous, a bad token is 401."""

from __future__ import annotations

import pytest

from kubeplane.apiserver.auth.authentication import (
    ANONYMOUS,
    TokenFileError,
    bearer_token,
    parse_token_file,
    with_authenticated_group,
)
from kubeplane.apiserver.tokens import UserInfo

from .conftest import ADMIN, ALICE, Served
from .fakes import Grant, call


def test_token_file_records_as_upstream_newcsv() -> None:
    """tokenfile_test.go TestTokenFile: groups split on commas, uid kept, empty token skipped, later duplicate
    wins; the authenticated group is not part of the file's users."""
    users = parse_token_file(
        'token1,user1,uid1\ntoken2,user2,uid2,"group1,group2"\n,nouser,uid0\ntoken1,user1b,uid1b\n\ntoken3,user3,uid3,group3\n'
    )
    assert users == {
        "token1": UserInfo("user1b", uid="uid1b"),
        "token2": UserInfo("user2", uid="uid2", groups=("group1", "group2")),
        "token3": UserInfo("user3", uid="uid3", groups=("group3",)),
    }


def test_token_file_with_two_columns_is_refused_with_upstreams_message() -> None:
    with pytest.raises(TokenFileError) as err:
        parse_token_file("token1,user1\n", "/etc/tokens.csv")
    assert str(err.value) == (
        "token file '/etc/tokens.csv' must have at least 3 columns (token, user name, user uid), found 2"
    )


@pytest.mark.parametrize(
    ("header", "token"),
    [
        ("Bearer abc", "abc"),
        ("bearer abc", "abc"),
        ("Bearer abc extra", "abc"),
        ("Basic dXNlcjpwdw==", None),  # another scheme: no bearer credentials, not an error
        ("Bearer", None),
        ("Bearer ", None),
    ],
)
def test_bearer_header_reading(header: str, token: str | None) -> None:
    """bearertoken.Authenticator: ``Bearer <token>``, the scheme case-insensitive; anything else is no token."""
    assert bearer_token([(b"authorization", header.encode())]) == token


def test_authenticated_group_adder() -> None:
    """group.AuthenticatedGroupAdder: added once; never to system:anonymous or a user in system:unauthenticated."""
    assert with_authenticated_group(UserInfo("u", groups=("g",))).groups == ("g", "system:authenticated")
    assert with_authenticated_group(UserInfo("u", groups=("system:authenticated",))).groups == ("system:authenticated",)
    assert with_authenticated_group(ANONYMOUS) == ANONYMOUS


async def test_no_credentials_is_anonymous_and_a_bad_token_is_401(served: Served) -> None:
    """Anonymous requests are authorized (as system:anonymous), a bad bearer token is never anonymous. Upstream's
    basic-user role is bound to system:authenticated only, so anonymous whoami is refused until granted."""
    review = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
    status, body = await call(served.app, "POST", review, body={})
    assert status == 403
    assert body["message"] == (
        'selfsubjectreviews.authentication.k8s.io is forbidden: User "system:anonymous" cannot create resource '
        '"selfsubjectreviews" in API group "authentication.k8s.io" at the cluster scope'
    )
    served.grants.add(Grant("system:unauthenticated", ("create",), resources=("selfsubjectreviews",)))
    status, body = await call(served.app, "POST", review, body={})
    assert status == 201, body
    assert body["status"]["userInfo"] == {"username": "system:anonymous", "groups": ["system:unauthenticated"]}
    status, body = await call(served.app, "GET", "/api/v1/pods", token="not-a-token")
    assert status == 401
    assert body["message"] == "Unauthorized"


async def test_anonymous_reaches_public_info_only(served: Served) -> None:
    """system:public-info-viewer lets the anonymous user read /healthz and /version, nothing else."""
    assert (await call(served.app, "GET", "/healthz"))[0] == 200
    assert (await call(served.app, "GET", "/version"))[0] == 200
    status, body = await call(served.app, "GET", "/api/v1/namespaces/default/pods")
    assert status == 403
    assert body["message"] == (
        'pods is forbidden: User "system:anonymous" cannot list resource "pods" in API group "" in the namespace '
        '"default"'
    )
    status, body = await call(served.app, "GET", "/metrics")
    assert status == 403
    assert body["message"] == 'forbidden: User "system:anonymous" cannot get path "/metrics"'


async def test_token_file_user_has_its_groups_and_system_authenticated(served: Served) -> None:
    status, body = await call(
        served.app, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", token=ALICE, body={}
    )
    assert status == 201, body
    assert body["status"]["userInfo"] == {
        "username": "alice",
        "uid": "a1",
        "groups": ["devs", "system:authenticated"],
    }
    status, body = await call(
        served.app, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", token=ADMIN, body={}
    )
    assert body["status"]["userInfo"]["groups"] == ["system:masters", "system:authenticated"]
