"""``kubeplane.ui.runsonly.NoAPI``: the UI's API when ``kubeplane ui --runs DIR`` has no cluster.

It answers the login's SelfSubjectReview (authentication.k8s.io/v1, as upstream's ``selfsubjectreviews``
endpoint: 201 with ``status.userInfo``) for the printed token only and refuses every other token with upstream's
401 Status (``Unauthorized``); :class:`UIApp` over it logs in with that token, reports ``api: false`` and answers
every API path with a 404 Status.
"""

from __future__ import annotations

from typing import Any

import orjson

from kubeplane.ui import UIApp
from kubeplane.ui.loopback import call
from kubeplane.ui.runsonly import NO_API, USER, NoAPI, new_token
from kubeplane.ui.sessions import COOKIE

REVIEW = b'{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}'


async def test_only_the_printed_token_is_a_user() -> None:
    token = new_token()
    api = NoAPI(token)
    review = await call(api, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", token=token, body=REVIEW)
    assert review.status == 201
    assert review.json()["status"]["userInfo"]["username"] == USER
    for wrong in (token + "x", token[:-1], new_token(), ""):
        refused = await call(api, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", token=wrong)
        assert refused.status == 401
        assert refused.json()["reason"] == "Unauthorized"
    nodes = await call(api, "GET", "/api/v1/nodes", token=token)
    assert nodes.status == 404
    assert nodes.json() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": NO_API,
        "reason": "NotFound",
        "code": 404,
    }
    assert len(new_token()) >= 43  # 256 bits


async def _ui(
    app: UIApp, method: str, path: str, *, body: bytes = b"", headers: Any = ()
) -> tuple[int, dict[str, str], bytes]:
    scope = {
        "type": "http",
        "method": method,
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "headers": [(b"host", b"127.0.0.1:1"), *headers],
    }
    done = False

    async def receive() -> dict[str, Any]:
        nonlocal done
        if done:
            return {"type": "http.disconnect"}
        done = True
        return {"type": "http.request", "body": body, "more_body": False}

    out: dict[str, Any] = {"headers": {}, "body": b""}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            out["status"] = message["status"]
            out["headers"] = {k.decode(): v.decode() for k, v in message["headers"]}
        else:
            out["body"] += message.get("body", b"")

    await app(scope, receive, send)
    return out["status"], out["headers"], out["body"]


async def test_the_ui_over_no_api_logs_in_with_the_token_and_says_there_is_no_api(tmp_path: Any) -> None:
    token = new_token()
    app = UIApp(NoAPI(token), runs_dir=tmp_path)
    assert not app.has_api
    status, _, _ = await _ui(app, "POST", "/ui/login", body=b"token=wrong")
    assert status == 401
    status, headers, _ = await _ui(app, "POST", "/ui/login", body=f"token={token}".encode())
    assert status == 303
    assert headers["location"] == "/ui/"
    cookie = headers["set-cookie"].split(";")[0]
    assert cookie.startswith(f"{COOKIE}=")
    session = [(b"cookie", cookie.encode()), (b"x-kubeplane-ui", b"1")]
    status, _, body = await _ui(app, "GET", "/ui/whoami", headers=session)
    assert (status, orjson.loads(body)) == (200, {"user": USER, "api": False, "runs": True})
    status, _, body = await _ui(app, "GET", "/ui/api/api/v1/nodes", headers=session)
    assert status == 404
    assert orjson.loads(body)["message"] == NO_API
    status, _, _ = await _ui(app, "GET", "/ui/", headers=session)
    assert status == 200


async def test_the_ui_over_an_api_says_it_has_one() -> None:
    async def api(scope: Any, receive: Any, send: Any) -> None:
        body = b'{"status":{"userInfo":{"username":"admin"}}}'
        await send({"type": "http.response.start", "status": 201, "headers": []})
        await send({"type": "http.response.body", "body": body})

    app = UIApp(api)
    assert app.has_api
    status, headers, _ = await _ui(app, "POST", "/ui/login", body=b"token=t")
    cookie = headers["set-cookie"].split(";")[0]
    status, _, body = await _ui(
        app, "GET", "/ui/whoami", headers=[(b"cookie", cookie.encode()), (b"x-kubeplane-ui", b"1")]
    )
    assert (status, orjson.loads(body)) == (200, {"user": "admin", "api": True, "runs": False})
