"""The stand-in for the Kubernetes API when there is none: ``kubeplane ui --runs DIR`` without ``--kubeconfig``.

:class:`UIApp` authenticates a login by asking its ``api`` for a SelfSubjectReview with the typed token
(:meth:`UIApp.authenticate`). With no cluster to ask, :class:`NoAPI` is that ``api``: it knows exactly one token,
generated at random when the command starts and printed with the URL (as Jupyter prints its token), and answers
the review for it as the user :data:`USER`; any other token is a 401, as a real API server refuses it. So the UI
is never anonymous, and its session code is the same in both modes. Every other request is a 404 Status: there
is nothing to list, watch or explain, and the browser's shell (``/ui/whoami``'s ``api: false``) shows only the
views that need no API (the simulation runs).

Invariants: the token is compared in constant time (:func:`secrets.compare_digest`); it lives only in this
process (a restart prints a new one); nothing here reads or writes any state.
"""

from __future__ import annotations

import secrets
from typing import Any

import orjson

from .asgi import status_doc
from .loopback import Receive, Send

USER = "kubeplane-ui"
SELF_SUBJECT_REVIEW = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
NO_API = "no Kubernetes API: kubeplane ui was started without --kubeconfig (only the simulation runs are served)"


def new_token() -> str:
    """256 random bits, URL-safe (what the command prints)."""
    return secrets.token_urlsafe(32)


class NoAPI:
    """An ASGI app that authenticates ``token`` (and nothing else) and has no resources."""

    def __init__(self, token: str) -> None:
        if not token:
            raise ValueError("NoAPI needs a non-empty token")
        self._token = token.encode()

    def _authenticated(self, scope: dict[str, Any]) -> bool:
        for key, value in scope["headers"]:
            if key.lower() == b"authorization":
                scheme, _, given = bytes(value).partition(b" ")
                return scheme.lower() == b"bearer" and secrets.compare_digest(given.strip(), self._token)
        return False

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        if not self._authenticated(scope):
            await _answer(send, 401, status_doc(401, "Unauthorized", "Unauthorized"))
        elif scope["path"] == SELF_SUBJECT_REVIEW and scope["method"] == "POST":
            review = {
                "kind": "SelfSubjectReview",
                "apiVersion": "authentication.k8s.io/v1",
                "metadata": {"creationTimestamp": None},
                "status": {"userInfo": {"username": USER, "groups": ["system:authenticated"]}},
            }
            await _answer(send, 201, review)
        else:
            await _answer(send, 404, status_doc(404, "NotFound", NO_API))


async def _answer(send: Send, code: int, doc: Any) -> None:
    body = orjson.dumps(doc)
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": code, "headers": headers})
    await send({"type": "http.response.body", "body": body})
