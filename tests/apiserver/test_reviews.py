"""TokenReview and SelfSubjectReview through HTTP, the official client and kubectl.

Pinned upstream behaviour: pkg/registry/authentication/tokenreview/storage.go ``REST.Create`` (400 ``token is
required for TokenReview in authentication``; ``status.authenticated``/``user``/``audiences``; a token that does
not authenticate is a 201 whose status carries apiserver's bearertoken default error ``invalid bearer token``;
``namespace is not allowed on this type``), pkg/registry/authentication/selfsubjectreview/rest.go (the requester's
``status.userInfo``), the JWT authenticator's audience check (pkg/serviceaccount/jwt.go) and
``WrapAudienceAgnosticToken`` for the token file; both kinds are create-only (no GET/LIST: 405).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from .conftest import Server, start_server
from .test_kubectl import KUBECTL

PATH = "/apis/authentication.k8s.io/v1/tokenreviews"
ISSUER = "https://kubernetes.default.svc.cluster.local"


def request(server: Server, method: str, path: str, body: Any = None, token: str | None = None) -> tuple[int, Any]:
    status, raw = server.send(method, path, body, token=token or "", accept="application/json")
    return status, json.loads(raw) if raw else None


def review(server: Server, spec: dict[str, Any]) -> tuple[int, Any]:
    return request(
        server, "POST", PATH, {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": spec}
    )


def _sa_token(server: Server, name: str, audiences: list[str] | None = None) -> tuple[str, str]:
    status, sa = request(server, "POST", "/api/v1/namespaces/default/serviceaccounts", {"metadata": {"name": name}})
    assert status == 201
    body: dict[str, Any] = {"spec": {"audiences": audiences}} if audiences else {"spec": {}}
    status, tr = request(server, "POST", f"/api/v1/namespaces/default/serviceaccounts/{name}/token", body)
    assert status == 201, tr
    return tr["status"]["token"], sa["metadata"]["uid"]


def test_admin_token_review(server: Server) -> None:
    status, body = review(server, {"token": server.token})
    assert status == 201
    assert body["kind"] == "TokenReview"
    assert body["metadata"] == {"creationTimestamp": None}
    assert body["status"] == {
        "authenticated": True,
        "user": {"username": "admin", "groups": ["system:masters", "system:authenticated"]},
        "audiences": [ISSUER],
    }


def test_service_account_token_review(server: Server) -> None:
    token, uid = _sa_token(server, "reviewed")
    status, body = review(server, {"token": token})
    assert status == 201
    user = body["status"]["user"]
    assert body["status"]["authenticated"] is True
    assert body["status"]["audiences"] == [ISSUER]
    assert user["username"] == "system:serviceaccount:default:reviewed"
    assert user["uid"] == uid
    assert user["groups"] == ["system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"]
    assert list(user["extra"]) == ["authentication.kubernetes.io/credential-id"]


def test_audiences_are_checked(server: Server) -> None:
    token, _ = _sa_token(server, "aud", audiences=["vault", "other"])
    status, body = review(server, {"token": token, "audiences": ["vault"]})
    assert status == 201
    assert body["status"]["authenticated"] is True
    assert body["status"]["audiences"] == ["vault"]
    status, body = review(server, {"token": token})  # not for the API audience
    assert body["status"] == {"user": {}, "error": "invalid bearer token"}
    status, body = review(server, {"token": server.token, "audiences": ["vault"]})  # the token file is not for vault
    assert body["status"] == {"user": {}, "error": "invalid bearer token"}


def test_unknown_token_is_not_authenticated(server: Server) -> None:
    status, body = review(server, {"token": "not-a-token"})
    assert status == 201
    assert body["status"] == {"user": {}, "error": "invalid bearer token"}


def test_empty_token_is_a_400(server: Server) -> None:
    status, body = review(server, {})
    assert status == 400
    assert body["reason"] == "BadRequest"
    assert body["message"] == "token is required for TokenReview in authentication"


def test_reviews_are_create_only(server: Server) -> None:
    assert request(server, "GET", PATH)[0] == 405
    assert request(server, "GET", "/apis/authentication.k8s.io/v1/selfsubjectreviews")[0] == 405
    assert request(server, "DELETE", f"{PATH}/x")[0] == 405


def test_self_subject_review_of_a_service_account(server: Server) -> None:
    token, uid = _sa_token(server, "whoami")
    status, body = request(
        server, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", {"kind": "SelfSubjectReview"}, token
    )
    assert status == 201
    info = body["status"]["userInfo"]
    assert info["username"] == "system:serviceaccount:default:whoami"
    assert info["uid"] == uid


def test_official_client_token_review(server: Server, api_client: Any) -> None:
    from kubernetes import client

    api = client.AuthenticationV1Api(api_client)
    result = api.create_token_review(client.V1TokenReview(spec=client.V1TokenReviewSpec(token=server.token)))
    assert result.status.authenticated is True
    assert result.status.user.username == "admin"
    me = api.create_self_subject_review(client.V1SelfSubjectReview())
    assert me.status.user_info.groups == ["system:masters", "system:authenticated"]


def test_kubectl_auth_whoami(tmp_path: Path) -> None:
    """kubectl sends the SelfSubjectReview as protobuf (its typed clientset), and tokens only over TLS."""
    server = start_server(tmp_path / "data", tls=True)
    try:
        result = _whoami(server, tmp_path / "cache")
    finally:
        server.stop()
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[1].split() == ["Username", "admin"]


def _whoami(server: Server, cache: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(KUBECTL), "--kubeconfig", str(server.kubeconfig), "--cache-dir", str(cache), "auth", "whoami"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
