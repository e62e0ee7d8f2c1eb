"""``GET .../pods/NAME/log``: the pod's container log, read from its node's kubelet (upstream's ``LogREST``).

Upstream (pkg/registry/core/pod/rest/log.go ``LogREST.Get``, pkg/registry/core/pod/strategy.go ``LogLocation``,
apiserver's ``LocationStreamer`` and ``GenericHttpResponseChecker``), in this order:

1. the query decodes into ``PodLogOptions`` with the parameter codec (a value that does not convert is a 400 with
   strconv's or time.Parse's message);
2. ``ValidatePodLogOptions``: ``tailLines`` >= 0 (``must be greater than or equal to 0``), ``limitBytes`` and
   ``sinceSeconds`` > 0 (``must be greater than 0``), not both ``sinceSeconds`` and ``sinceTime`` (``: Forbidden:
   at most one of `sinceTime` or `sinceSeconds` may be specified``): a 422 ``PodLogOptions "NAME" is invalid``;
3. the pod (404), then the container: none named and the pod has one -- that one; none named and several -- 400
   ``a container name must be specified for pod NAME, choose one of: [init app sidecar]`` (every container: init,
   regular, ephemeral); a name the pod lacks -- 400 ``container c is not valid for pod NAME``;
4. a pod without a node: no location, an empty 204 (``StreamObject`` with a nil stream);
5. the node's kubelet (:mod:`.kubelet_client`): ``/containerLogs/NS/NAME/CONTAINER`` with ``follow``,
   ``previous``, ``timestamps``, ``sinceSeconds``, ``sinceTime`` (RFC3339), ``tailLines``, ``limitBytes``;
   ``insecureSkipTLSVerifyBackend`` is accepted and changes nothing (no TLS to the simulated kubelet); ``stream``
   is ignored, as upstream with its ``PodLogsQuerySplitStreams`` gate off (alpha, off by default);
6. the kubelet's answer: 200 streams as ``text/plain`` (flushed as it comes with ``follow``) until the kubelet
   ends it or the client leaves; otherwise ``GenericHttpResponseChecker``: 400 -- BadRequest with the kubelet's
   text (``container "app" in pod "web" is waiting to start: ContainerCreating``), 500 -- ``Internal error
   occurred: TEXT``, others -- ``NewGenericServerResponse`` (404: ``the server could not find the requested
   resource ( pods/log NAME)``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC
from typing import Any

import aiohttp

from kubeplane.api import gotime
from kubeplane.api.meta import parse_time
from kubeplane.api.validation import field

from . import errors, params
from .kubelet_client import KubeletClient
from .registry import Registry

MAX_ERROR_BODY = 10 * 1024  # upstream's maxReadLength for a refused kubelet answer is 50 KiB; messages are short


@dataclass(frozen=True, slots=True)
class PodLogOptions:
    container: str = ""
    follow: bool = False
    previous: bool = False
    timestamps: bool = False
    since_seconds: int | None = None
    since_time: str | None = None
    tail_lines: int | None = None
    limit_bytes: int | None = None

    @classmethod
    def decode(cls, query: Mapping[str, str]) -> PodLogOptions:
        """The parameter codec's conversion (step 1 of the module)."""
        since_time = query.get("sinceTime")
        if since_time is not None:
            try:
                gotime.check_time(since_time)
            except gotime.GoTimeError as exc:
                raise errors.bad_request(str(exc)) from None
            since_time = parse_time(since_time).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        if "insecureSkipTLSVerifyBackend" in query:
            params.go_bool(query["insecureSkipTLSVerifyBackend"])
        return cls(
            container=query.get("container", ""),
            follow="follow" in query and params.go_bool(query["follow"]),
            previous="previous" in query and params.go_bool(query["previous"]),
            timestamps="timestamps" in query and params.go_bool(query["timestamps"]),
            since_seconds=_int(query, "sinceSeconds"),
            since_time=since_time,
            tail_lines=_int(query, "tailLines"),
            limit_bytes=_int(query, "limitBytes"),
        )

    def validate(self, name: str) -> None:
        """``ValidatePodLogOptions`` (step 2)."""
        errs: list[field.Error] = []
        if self.tail_lines is not None and self.tail_lines < 0:
            errs.append(
                field.invalid(field.Path("tailLines"), self.tail_lines, detail="must be greater than or equal to 0")
            )
        if self.limit_bytes is not None and self.limit_bytes < 1:
            errs.append(field.invalid(field.Path("limitBytes"), self.limit_bytes, detail="must be greater than 0"))
        if self.since_seconds is not None and self.since_time is not None:
            errs.append(
                field.forbidden(field.Path(""), "at most one of `sinceTime` or `sinceSeconds` may be specified")
            )
        elif self.since_seconds is not None and self.since_seconds < 1:
            errs.append(field.invalid(field.Path("sinceSeconds"), self.since_seconds, detail="must be greater than 0"))
        if errs:
            raise errors.invalid("", "PodLogOptions", name, errs)

    def kubelet_query(self) -> dict[str, str]:
        """``LogLocation``'s parameters, in its order."""
        out: dict[str, str] = {}
        if self.follow:
            out["follow"] = "true"
        if self.previous:
            out["previous"] = "true"
        if self.timestamps:
            out["timestamps"] = "true"
        if self.since_seconds is not None:
            out["sinceSeconds"] = str(self.since_seconds)
        if self.since_time is not None:
            out["sinceTime"] = self.since_time
        if self.tail_lines is not None:
            out["tailLines"] = str(self.tail_lines)
        if self.limit_bytes is not None:
            out["limitBytes"] = str(self.limit_bytes)
        return out


def _int(query: Mapping[str, str], key: str) -> int | None:
    return params.parse_int64(query[key]) if key in query else None


def _names(spec: Mapping[str, Any]) -> list[str]:
    """``podutil.VisitContainers`` order: init containers, containers, ephemeral containers."""
    every = [
        *(spec.get("initContainers") or []),
        *(spec.get("containers") or []),
        *(spec.get("ephemeralContainers") or []),
    ]
    return [str(c.get("name", "")) for c in every if isinstance(c, dict)]


def choose_container(pod: Mapping[str, Any], name: str, container: str) -> str:
    """``validateContainer`` (step 3)."""
    spec = pod.get("spec") or {}
    if not container:
        containers = spec.get("containers") or []
        if len(containers) == 1:
            return str(containers[0].get("name", ""))
        if not containers:
            raise errors.bad_request(f"a container name must be specified for pod {name}")
        names = " ".join(_names(spec))
        raise errors.bad_request(f"a container name must be specified for pod {name}, choose one of: [{names}]")
    if container not in _names(spec):
        raise errors.bad_request(f"container {container} is not valid for pod {name}")
    return container


def kubelet_refusal(code: int, text: str, name: str) -> errors.APIError:
    """``GenericHttpResponseChecker.Check`` of a kubelet answer outside 200-206 (step 6)."""
    if code == 500:
        return errors.APIError(
            code=500,
            reason="InternalError",
            message=f"Internal error occurred: {text}",
            details={"causes": [{"message": text}]},
        )
    if code == 400:
        return errors.bad_request(text)
    return generic_server_response(code, text, "pods/log", name)


_GENERIC = {
    409: ("Conflict", "the server reported a conflict"),
    404: ("NotFound", "the server could not find the requested resource"),
    400: ("BadRequest", "the server rejected our request for an unknown reason"),
    401: ("Unauthorized", "the server has asked for the client to provide credentials"),
    405: ("MethodNotAllowed", "the server does not allow this method on the requested resource"),
    422: ("Invalid", "the server rejected our request due to an error in our request"),
    504: (
        "Timeout",
        "the server was unable to return a response in the time allotted, but may still be processing the request",
    ),
    429: ("TooManyRequests", "the server has received too many requests and has asked us to try again later"),
}


def generic_server_response(code: int, text: str, resource: str, name: str) -> errors.APIError:
    """apimachinery's ``NewGenericServerResponse(code, "", resource, name, text, 0, false)``."""
    reason, message = _GENERIC.get(
        code, ("", f"the server responded with the status code {code} but did not return more information")
    )
    if code in (403, 406, 415):
        reason, message = {403: "Forbidden", 406: "NotAcceptable", 415: "UnsupportedMediaType"}[code], text
    elif code not in _GENERIC and code >= 500:
        reason, message = (
            "InternalError",
            f"an error on the server ({field.go_quote(text)}) has prevented the request from succeeding",
        )
    message = f"{message} ( {resource} {name})"
    return errors.APIError(code=code, reason=reason, message=message, details={"name": name, "kind": resource})


@dataclass(slots=True)
class LogStream:
    """An open kubelet answer to stream to the client (200, ``text/plain``)."""

    response: aiohttp.ClientResponse
    flush: bool

    async def pump(self, send: Callable[[bytes], Awaitable[None]], stopped: Callable[[], Awaitable[None]]) -> None:
        """Copy the kubelet's bytes to ``send`` until the kubelet ends the answer or ``stopped`` returns (the
        client left, the server shuts down); the kubelet connection is released either way."""
        stop = asyncio.ensure_future(stopped())
        try:
            while True:
                read = asyncio.ensure_future(self.response.content.readany())
                done, _ = await asyncio.wait({read, stop}, return_when=asyncio.FIRST_COMPLETED)
                if read not in done:
                    read.cancel()
                    return
                try:
                    chunk = read.result()
                except (aiohttp.ClientError, OSError):
                    return
                if not chunk:
                    return
                await send(chunk)
        finally:
            stop.cancel()
            self.response.close()
            with contextlib.suppress(asyncio.CancelledError):
                await stop


async def open_log(
    registry: Registry, kubelets: KubeletClient, namespace: str, name: str, query: Mapping[str, str]
) -> LogStream | None:
    """Steps 1 to 6 up to the first byte: the stream to copy, None for a pod without a node (204), or an
    :class:`~kubeplane.apiserver.errors.APIError`."""
    options = PodLogOptions.decode(query)
    options.validate(name)
    pod = await registry.get(registry.resource("", "pods"), namespace, name)
    container = choose_container(pod, name, options.container)
    node_name = (pod.get("spec") or {}).get("nodeName") or ""
    if not node_name:
        return None
    conn = await kubelets.connection(node_name)
    path = f"/containerLogs/{namespace}/{name}/{container}"
    response = await kubelets.get(conn, path, options.kubelet_query())
    if not 200 <= response.status <= 206:
        try:
            text = (await response.content.read(MAX_ERROR_BODY)).decode("utf-8", "replace")
        finally:
            response.close()
        raise kubelet_refusal(response.status, text, name)
    return LogStream(response, flush=options.follow)
