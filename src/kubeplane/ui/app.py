"""The UI's ASGI application: login, sessions, static files, the API proxy and the pod view's explain.

Routes (everything else under ``/ui`` is 404):

* ``GET /ui/login`` and the login page's assets (:data:`PUBLIC`): served to anyone.
* ``POST /ui/login`` (form field ``token``): the token is checked by asking the API server itself
  (``GET /api`` with it as bearer token: the API's own authenticator decides); success opens a session
  (:mod:`.sessions`) and sets its HttpOnly, Secure, SameSite=Strict cookie; failure is 401 and the login page.
* ``GET /ui/`` and every other asset: the session is required; without it a page redirects to the login page
  (303) and an asset or API call is 401.
* ``/ui/api/<path>``: the Kubernetes API at ``/<path>``, same method, query, body and streaming (watches), sent
  in-process with the session's bearer token. The API server authenticates it as it would kubectl.
* ``GET /ui/explain?namespace=&name=``: the pod view's scheduling cycle (:mod:`.explaining`).
* ``POST /ui/yaml/parse`` and ``/ui/yaml/dump``: the editor's YAML <-> JSON (:mod:`.yamltext`).
* ``GET /ui/scheduler/config`` and ``POST /ui/scheduler/try``: the scheduler view (:mod:`.trying`).
* ``GET /ui/runs`` and ``GET /ui/runs/run?id=``: the ``kubeplane sim`` outputs under ``runs_dir`` (:mod:`.runs`);
  404 when the UI has no ``runs_dir``.

Every request but the login page's needs the session; every state-changing or data request also needs the
``X-Kubeplane-UI: 1`` header, which a cross-origin form cannot send and a cross-origin script cannot send
without a CORS preflight this server never grants (SameSite=Strict does not stop a same-site page on another
port of the same host). Pages are sent with a Content-Security-Policy allowing only this origin.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import orjson

from kubeplane.scheduler.backend.podinfo_memo import PodInfoMemo
from kubeplane.scheduler.config import KubeSchedulerConfiguration, default_config

from . import explaining, loopback, runs, runsonly, trying, yamltext
from .asgi import read_body, status_doc
from .sessions import Sessions, clear_cookie_header, cookie_header, session_id

log = logging.getLogger("kubeplane.ui")

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

PREFIX = "/ui"
PUBLIC = frozenset({"/ui/login", "/ui/static/login.js", "/ui/static/style.css"})
"""What is served without a session: the login page and its assets, nothing else."""
CSRF_HEADER = b"x-kubeplane-ui"
MAX_FORM = 64 * 1024
MAX_YAML = 3 * 1024 * 1024
TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
}
CSP = (
    b"default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    b"frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
)
_STATIC = resources.files("kubeplane.ui") / "static"


def static_bytes(name: str) -> bytes | None:
    """A file of ``static/`` (package data), None if there is none; names with a path separator never match."""
    if not name or "/" in name or "\\" in name or name.startswith("."):
        return None
    entry = _STATIC / name
    return entry.read_bytes() if entry.is_file() else None


class UIApp:
    """Mounted by the API server at ``/ui`` (see ``APIServerApp.ui``); ``api`` is the API server's ASGI app, or
    another server's (:class:`.remote.RemoteAPI`, ``kubeplane ui --kubeconfig``), or :class:`.runsonly.NoAPI`
    when there is no cluster (``kubeplane ui --runs DIR`` alone: it authenticates only the printed token, and
    ``/ui/whoami`` says ``api: false`` so the browser shows only what needs no API)."""

    def __init__(
        self,
        api: loopback.ASGIApp,
        *,
        scheduler_config: KubeSchedulerConfiguration | None = None,
        runs_dir: Path | None = None,
        explain_parts: Sequence[explaining.ExplainPart] = (),
    ) -> None:
        self.api = api
        self.scheduler_config = scheduler_config
        self.explain_parts = tuple(explain_parts)
        """Parts other components add to the pod view's answer (composed by the CLI)."""
        self.runs_dir = runs_dir
        self.sessions = Sessions()
        self.pod_infos = PodInfoMemo()
        """The pod view's and Try's snapshots are built from the same pods request after request: their PodInfos
        are derived once per stored version (kubeplane.scheduler.backend.podinfo_memo)."""

    @property
    def has_api(self) -> bool:
        return not isinstance(self.api, runsonly.NoAPI)

    @staticmethod
    def handles(path: str) -> bool:
        return path == PREFIX or path.startswith(PREFIX + "/")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path: str = scope["path"]
        method: str = scope["method"]
        if path == PREFIX:
            await _redirect(send, "/ui/")
            return
        if path in PUBLIC and method in ("GET", "HEAD"):
            name = "login.html" if path == "/ui/login" else path.rsplit("/", 1)[1]
            await self._file(send, name)
            return
        if path == "/ui/login" and method == "POST":
            await self._login(scope, receive, send)
            return
        sid = session_id(_header(scope, b"cookie"))
        session = self.sessions.get(sid)
        if session is None:
            if method == "GET" and (path == "/ui/" or path.endswith(".html")):
                await _redirect(send, "/ui/login")
            else:
                await _json(send, 401, status_doc(401, "Unauthorized", "Unauthorized: log in at /ui/login"))
            return
        if path == "/ui/logout" and method == "POST":
            self.sessions.close(sid)
            await _redirect(send, "/ui/login", [(b"set-cookie", clear_cookie_header())])
            return
        if path == "/ui/" and method in ("GET", "HEAD"):
            await self._file(send, "index.html")
            return
        if path.startswith("/ui/static/") and method in ("GET", "HEAD"):
            await self._file(send, path[len("/ui/static/") :])
            return
        if _header(scope, CSRF_HEADER) != "1":
            await _json(send, 403, status_doc(403, "Forbidden", "the UI's requests carry X-Kubeplane-UI: 1"))
            return
        if path.startswith("/ui/api/"):
            await self._proxy(scope, receive, send, session.token)
            return
        if path == "/ui/explain" and method == "GET":
            await self._explain(scope, send, session.token)
            return
        if path == "/ui/yaml/parse" and method == "POST":
            await self._yaml_parse(receive, send)
            return
        if path == "/ui/yaml/dump" and method == "POST":
            body = await _read(receive, MAX_YAML)
            await _send(send, 200, yamltext.to_yaml(orjson.loads(body)).encode(), "text/yaml; charset=utf-8")
            return
        if path == "/ui/scheduler/config" and method == "GET":
            await self._scheduler_config(send)
            return
        if path == "/ui/scheduler/try" and method == "POST":
            await self._try(receive, send, session.token)
            return
        if (path == "/ui/runs" or path.startswith("/ui/runs/")) and method == "GET":
            await self._runs(scope, send)
            return
        if path == "/ui/whoami" and method == "GET":
            await _json(send, 200, {"user": session.user, "api": self.has_api, "runs": self.runs_dir is not None})
            return
        await _json(send, 404, status_doc(404, "NotFound", "the server could not find the requested resource"))

    async def _file(self, send: Send, name: str) -> None:
        data = static_bytes(name)
        suffix = "." + name.rsplit(".", 1)[-1] if "." in name else ""
        if data is None or suffix not in TYPES:
            await _json(send, 404, status_doc(404, "NotFound", "the server could not find the requested resource"))
            return
        headers = [(b"content-security-policy", CSP), (b"cache-control", b"no-store")]
        await _send(send, 200, data, TYPES[suffix], headers)

    async def _login(self, scope: Scope, receive: Receive, send: Send) -> None:
        origin = _header(scope, b"origin")
        host = _header(scope, b"host")
        if origin and host and origin.split("://", 1)[-1] != host:
            await _json(send, 403, status_doc(403, "Forbidden", "cross-origin login refused"))
            return
        form = dict(parse_qsl((await _read(receive, MAX_FORM)).decode("utf-8", "replace")))
        token = form.get("token", "").strip()
        user = await self.authenticate(token) if token else None
        if user is None:
            page = (static_bytes("login.html") or b"").replace(
                b"<!--error-->", b'<p class="error" role="alert" id="login-error">Invalid token.</p>'
            )
            await _send(send, 401, page, TYPES[".html"], [(b"content-security-policy", CSP)])
            return
        sid = self.sessions.open(token, user)
        log.info("UI session opened for %s", user)
        await _redirect(send, "/ui/", [(b"set-cookie", cookie_header(sid))])

    async def authenticate(self, token: str) -> str | None:
        """The user the API server takes ``token`` for (its SelfSubjectReview's answer), None if it refuses it."""
        body = orjson.dumps({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
        review = await loopback.call(
            self.api, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", token=token, body=body
        )
        if review.status == 401:
            return None
        if review.status in (200, 201):
            user = review.json().get("status", {}).get("userInfo", {}).get("username")
            return str(user or "unknown")
        probe = await loopback.call(self.api, "GET", "/api", token=token)  # no SelfSubjectReview: any 2xx is in
        return "unknown" if probe.status == 200 else None

    async def _proxy(self, scope: Scope, receive: Receive, send: Send, token: str) -> None:
        path = scope["path"][len("/ui/api") :]
        raw = scope.get("raw_path") or scope["path"].encode()
        headers = [(k, v) for k, v in scope["headers"] if k.lower() not in (b"authorization", b"cookie", CSRF_HEADER)]
        inner = {
            **scope,
            "path": path,
            "raw_path": raw[len(b"/ui/api") :],
            "headers": [*headers, loopback.bearer(token)],
        }
        await self.api(inner, receive, send)

    async def _explain(self, scope: Scope, send: Send, token: str) -> None:
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        namespace, name = query.get("namespace", "default"), query.get("name", "")
        if not name:
            await _json(send, 400, {"message": "name is required"})
            return
        try:
            result = await explaining.explain_pod(
                self.api,
                token,
                namespace,
                name,
                config=self.scheduler_config,
                with_what_if=query.get("whatIf") != "0",
                memo=self.pod_infos,
                parts=self.explain_parts,
            )
        except explaining.ExplainFailed as exc:
            await _json(send, exc.status, exc.body)
            return
        await _json(send, 200, result)

    def _running(self) -> tuple[KubeSchedulerConfiguration, str]:
        """The configuration the pod view and "try" compare against, and where it comes from."""
        if self.scheduler_config is not None:
            return self.scheduler_config, "running"
        return default_config(), "default"

    async def _scheduler_config(self, send: Send) -> None:
        config, source = self._running()
        await _json(send, 200, await asyncio.to_thread(trying.describe, config, source=source))

    async def _try(self, receive: Receive, send: Send, token: str) -> None:
        try:
            body = orjson.loads(await _read(receive, MAX_YAML) or b"null")
        except orjson.JSONDecodeError:
            body = None
        if not isinstance(body, dict) or not isinstance(body.get("yaml"), str):
            await _json(send, 400, {"message": 'the body is {"yaml": "<KubeSchedulerConfiguration>", "pods": [...]}'})
            return
        pods = [p for p in body.get("pods") or () if isinstance(p, str)]
        try:
            result = await trying.try_config(
                self.api, token, body["yaml"], current=self._running()[0], pods=pods, memo=self.pod_infos
            )
        except trying.TryFailed as exc:
            await _json(send, exc.status, exc.body)
            return
        except explaining.ExplainFailed as exc:
            await _json(send, exc.status, exc.body)
            return
        await _json(send, 200, result)

    async def _runs(self, scope: Scope, send: Send) -> None:
        """The Runs view's data (:mod:`.runs`); the directory walk and CSV parsing run in a worker thread."""
        path = scope["path"]
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        if self.runs_dir is None or path not in ("/ui/runs", "/ui/runs/run"):
            await _json(send, 404, status_doc(404, "NotFound", "the server could not find the requested resource"))
            return
        root = self.runs_dir
        try:
            if path == "/ui/runs":
                doc = await asyncio.to_thread(runs.listing, root)
            else:
                doc = await asyncio.to_thread(runs.load, root, query.get("id", "."))
        except runs.RunsError as exc:
            await _json(send, exc.code, status_doc(exc.code, exc.reason, exc.message))
            return
        await _json(send, 200, doc)

    async def _yaml_parse(self, receive: Receive, send: Send) -> None:
        text = (await _read(receive, MAX_YAML)).decode("utf-8", "replace")
        try:
            await _json(send, 200, {"objects": yamltext.to_json(text)})
        except yamltext.YAMLTextError as exc:
            await _json(send, 400, {"message": str(exc), "line": exc.line})


def _header(scope: Scope, name: bytes) -> str:
    for key, value in scope["headers"]:
        if key.lower() == name:
            return str(value.decode("latin-1"))
    return ""


async def _send(
    send: Send, status: int, body: bytes, content_type: str, headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", content_type.encode()),
                (b"content-length", str(len(body)).encode()),
                (b"x-content-type-options", b"nosniff"),
                *(headers or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def _json(send: Send, status: int, doc: Any) -> None:
    await _send(send, status, orjson.dumps(doc), "application/json", [(b"cache-control", b"no-store")])


async def _redirect(send: Send, location: str, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    await _send(send, 303, b"", "text/plain", [(b"location", location.encode()), *(headers or [])])


def mount(
    scheduler_config: KubeSchedulerConfiguration | None = None,
    runs_dir: Path | None = None,
    explain_parts: Sequence[explaining.ExplainPart] = (),
) -> Callable[[Any], UIApp]:
    """What ``ServerConfig.ui`` takes: builds the UI over the API server's app. ``scheduler_config`` is the
    configuration the pod view explains with (the running scheduler's, when ``kubeplane up`` knows it);
    ``runs_dir`` the root of the ``kubeplane sim`` outputs the Runs view browses (None: no Runs view)."""

    def build(api: Any) -> UIApp:
        return UIApp(api, scheduler_config=scheduler_config, runs_dir=runs_dir, explain_parts=explain_parts)

    return build


async def _read(receive: Receive, limit: int) -> bytes:
    """The body, or empty when it is over ``limit`` (the UI's own endpoints treat both as no input)."""
    return await read_body(receive, limit) or b""
