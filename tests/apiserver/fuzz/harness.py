"""Run request plans against a real ``kubeplane apiserver`` over raw HTTP and check the invariants after each.

After every fuzz request (issue 22's acceptance, kube-apiserver's contract for bad input):

* no 5xx: bad input is a 4xx Status (upstream: ``k8s.io/apiserver/pkg/endpoints/handlers`` turn decode,
  validation and admission failures into 400/404/409/415/422; only server faults are 500);
* the server still answers: ``/healthz`` within :data:`HEALTH_TIMEOUT` and the process alive (else: crash/stall);
* a rejected request (4xx, or a refused connection) changed nothing: the store's revision (a ``limit=1`` list's
  ``resourceVersion`` is the store's current revision) and the target's stored bytes (for an eviction the
  namespace's PodDisruptionBudgets, for a binding the pod) are as before. The harness is the server's only client,
  so any revision change is the request's;
* an accepted dry run (any ``dryRun`` parameter) changed nothing either;
* an accepted write stored an object that GET returns and the official client's typed models read
  (:mod:`.typed`); so do the objects a GET or list returns, and every object in the periodic sweep over all kinds.

Failures are recorded with a reproducer (curl form) and deduplicated by class (:func:`signature`); the run goes on.
"""

from __future__ import annotations

import collections
import http.client
import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

import orjson
from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import seed as hypothesis_seed

from kubeplane.api.resources import ResourceInfo

from . import seeds, typed
from .generate import BOUNDED, Limits, Plan, plans
from .mutate import Request, Target, build

NAMESPACE: Final = "fuzz"
HEALTH_TIMEOUT: Final = 10.0
REQUEST_TIMEOUT: Final = 60.0
SWEEP_EVERY: Final = 500
_WRITES: Final = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_ALLOCATING: Final = frozenset({"/services"})
"""Kinds whose rejected writes may move the revision: kube-apiserver's generic ``Store.Create``/``Update`` run the
Service REST's ``beginCreate``/``beginUpdate`` (ClusterIP and NodePort allocation: an IPAddress object created)
before ``rest.BeforeCreate`` validates, and release on failure (the IPAddress deleted): two revisions per allocated
address, nothing left behind. The target's stored bytes must still be unchanged."""


@dataclass
class Failure:
    kind: str  # 5xx, crash, stall, changed-by-rejected, dry-run-wrote, unreadable, not-rereadable
    signature: str
    detail: str
    request: str
    status: int
    response: str


@dataclass
class Stats:
    requests: int = 0
    by_status: collections.Counter[int] = field(default_factory=collections.Counter)
    by_action: collections.Counter[str] = field(default_factory=collections.Counter)
    covered: set[tuple[str, str, int]] = field(default_factory=set)  # (resource, action, status class)
    failures: list[Failure] = field(default_factory=list)
    classes: dict[str, list[Failure]] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "by_status": {str(k): v for k, v in sorted(self.by_status.items())},
            "by_action": dict(sorted(self.by_action.items())),
            "resource_action_pairs": len({(r, a) for r, a, _ in self.covered}),
            "failures": len(self.failures),
            "failure_classes": len(self.classes),
            "failure_causes": len({cause(f) for f in self.failures}),
        }

    def report(self, limit: int = 60) -> str:
        """Failures grouped by cause (:func:`cause`): count, actions, and the reproducer of the earliest request
        that caused it (a write's, when a read or the sweep only saw the result)."""
        causes: dict[str, list[Failure]] = {}
        for failure in self.failures:
            causes.setdefault(cause(failure), []).append(failure)
        lines = []
        for why, found in sorted(causes.items(), key=lambda kv: -len(kv[1]))[:limit]:
            writes = [f for f in found if " stored:" in f.detail and " sweep" not in f.signature] or found
            first = writes[0]  # the earliest: later writes to an object already broken fail the same way
            actions = sorted({f.signature.split(" ", 2)[1].rstrip(":") for f in found})
            lines.append(
                f"[{len(found)}x] {why}\n    actions: {', '.join(actions)}\n    detail: {first.detail[:300]}\n"
                f"    status: {first.status} {first.response[:200]}\n    repro: {first.request}"
            )
        return "\n".join(lines)


def cause(failure: Failure) -> str:
    """A failure's cause across actions: its signature without the action and without how the object was seen."""
    kind, _, rest = failure.signature.partition(" ")
    message = rest.partition(": ")[2]
    return f"{kind}: " + re.sub(r"^(\w+) (listed|returned|stored): ", r"\1: ", message)


def signature(kind: str, action: str, message: str) -> str:
    """A failure's class: its kind, the action and the message without values, indices and counts."""
    msg = re.sub(r"input_value=.*?(, input_type=\w+)?\]", "]", message)
    msg = msg.split(" For further information")[0]
    msg = re.sub(r"\[\d+\]|\.\d+\b", "[N]", msg)
    msg = re.sub(r"'[^']*'|\"[^\"]*\"", "'V'", msg)
    msg = re.sub(r"\b\d+\b", "N", msg)
    return f"{kind} {action}: {msg[:220]}"


class Connection:
    """One keep-alive HTTP/1.1 connection, reopened after any error or a streamed (watch) response."""

    def __init__(self, host: str, port: int, token: str) -> None:
        self.host, self.port, self.token = host, port, token
        self.conn: http.client.HTTPConnection | None = None

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def send(
        self,
        method: str,
        target: str,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
        *,
        timeout: float = REQUEST_TIMEOUT,
        stream: bool = False,
    ) -> tuple[int, bytes]:
        """Status and body (a streamed response: status only, connection closed). Raises OSError/HTTPException."""
        if self.conn is None:
            self.conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        self.conn.timeout = timeout
        if self.conn.sock is not None:
            self.conn.sock.settimeout(timeout)
        all_headers = {"Authorization": f"Bearer {self.token}", **(headers or {})}
        try:
            self.conn.request(method, target, body=body, headers=all_headers)
            response = self.conn.getresponse()
            if stream and response.status == 200:
                self.close()
                return response.status, b""
            data = response.read() if method != "HEAD" else b""
            if response.will_close:
                self.close()
            return response.status, data
        except BaseException:
            self.close()
            raise


class Harness:
    """Owns the fuzzing session against one server: its pools of existing objects, the checks, the stats."""

    def __init__(self, host: str, port: int, token: str, *, alive: Callable[[], bool] = lambda: True) -> None:
        self.http = Connection(host, port, token)
        self.probe = Connection(host, port, token)
        self.alive = alive
        self.resources = [r for r in seeds.served() if seeds.has_seed(r)]
        self.pools: dict[str, list[str]] = {}
        self.counter = 0
        self.stats = Stats()
        self.dead = False

    def close(self) -> None:
        self.http.close()
        self.probe.close()

    # -- setup and state ------------------------------------------------------------------------------------------

    def setup(self) -> None:
        self._ok(
            self.probe.send(
                "POST",
                "/api/v1/namespaces",
                orjson.dumps({"metadata": {"name": NAMESPACE}}),
                {"Content-Type": "application/json"},
            ),
            (201, 409),
        )
        for info in self.resources:
            for _ in range(2):
                self._create_seed(info)

    def _ok(self, answer: tuple[int, bytes], codes: tuple[int, ...]) -> bytes:
        status, body = answer
        assert status in codes, f"setup request failed: {status} {body[:300]!r}"
        return body

    def _key(self, info: ResourceInfo) -> str:
        return f"{info.group}/{info.plural}"

    def fresh_name(self) -> str:
        self.counter += 1
        return f"fz{self.counter}"

    def _create_seed(self, info: ResourceInfo) -> str:
        name = self.fresh_name()
        obj = seeds.make(info, name, NAMESPACE)
        status, _ = self.probe.send(
            "POST",
            info.rest_path(NAMESPACE if info.namespaced else None),
            orjson.dumps(obj),
            {"Content-Type": "application/json"},
        )
        if status == 201:
            self.pools.setdefault(self._key(info), []).append(name)
        return name

    def _object_path(self, info: ResourceInfo, name: str) -> str:
        return info.rest_path(NAMESPACE if info.namespaced else None, name)

    def _read(self, path: str) -> tuple[int, bytes]:
        return self.probe.send("GET", path, timeout=REQUEST_TIMEOUT)

    def revision(self) -> str:
        status, body = self._read("/api/v1/namespaces?limit=1")
        return str(orjson.loads(body)["metadata"]["resourceVersion"]) if status == 200 else f"status {status}"

    def _target(self, plan: Plan, info: ResourceInfo) -> Target:
        pool = self.pools.setdefault(self._key(info), [])
        if not pool or (plan.fresh and plan.action in ("binding", "binding-legacy", "eviction", "delete")):
            self._create_seed(info)
        if not pool:
            return Target(NAMESPACE, "fz-missing", None)
        name = pool[plan.target % len(pool)]
        status, body = self._read(self._object_path(info, name))
        if status != 200:
            pool.remove(name)
            return Target(NAMESPACE, name, None)
        current = loads(body)
        return Target(NAMESPACE, name, current if isinstance(current, dict) else None)

    # -- one request ------------------------------------------------------------------------------------------------

    def execute(self, plan: Plan) -> None:
        if self.dead:
            return
        info = self.resources[plan.resource % len(self.resources)]
        target = self._target(plan, info)
        request = build(plan, info, target, self.fresh_name())
        watched = self._object_path(info, target.name) if target.current is not None else None
        before_rev = self.revision()
        before_obj = self._read(watched) if watched else None
        before_pdbs = self._pdbs() if plan.action == "eviction" else None
        status = self._send(request)
        self.stats.requests += 1
        self.stats.by_status[status] += 1
        self.stats.by_action[plan.action] += 1
        self.stats.covered.add((self._key(info), plan.action, status // 100))
        if not self._healthy(request, status):
            return
        if status >= 500:
            message = _message(self._last_body)
            self._fail("5xx", plan.action, message, request, status)
        rejected = status == 0 or 400 <= status < 500
        if rejected or (request.dry_run and 200 <= status < 300 and request.method in _WRITES):
            kind = "dry-run-wrote" if not rejected else "changed-by-rejected"
            after_rev = self.revision()
            if after_rev != before_rev and not _allocator_churn(self._key(info), before_rev, after_rev):
                self._fail(kind, plan.action, f"store revision {before_rev} -> {after_rev}", request, status)
            elif watched and before_obj is not None and self._read(watched) != before_obj:
                self._fail(kind, plan.action, f"{watched} changed", request, status)
            elif before_pdbs is not None and self._pdbs() != before_pdbs:
                self._fail(kind, plan.action, "the namespace's PodDisruptionBudgets changed", request, status)
        elif 200 <= status < 300:
            self._check_accepted(plan, info, request, target)

    _last_body: bytes = b""

    def _send(self, request: Request) -> int:
        try:
            status, body = self.http.send(
                request.method,
                request.target,
                request.body,
                request.headers,
                stream=request.action == "watch" or "watch" in dict(request.query),
            )
        except TimeoutError:
            self._fail("stall", request.action, f"no answer within {REQUEST_TIMEOUT} s", request, 0)
            return 0
        except (OSError, http.client.HTTPException) as exc:
            self._last_body = b""
            if isinstance(exc, http.client.HTTPException) and "more than" in str(exc):
                # an answer no HTTP client takes (http.client: 100 headers at most; upstream's warning filter,
                # k8s.io/apiserver/pkg/endpoints/filters/warning.go, caps Warning headers at 4 KiB in all)
                self._fail("bad-response", request.action, f"unreadable response: {exc}", request, -1)
                return -1
            return 0  # the server (or its HTTP parser) closed the connection: judged by the checks that follow
        finally:
            self.http.close()  # one connection per fuzz request: no request meets a connection the last one broke
        self._last_body = body
        return status

    def _healthy(self, request: Request, status: int) -> bool:
        started = time.monotonic()
        try:
            code, _ = self.probe.send("GET", "/healthz", timeout=HEALTH_TIMEOUT)
            if code == 200:
                return True
            detail = f"/healthz answered {code}"
        except (OSError, http.client.HTTPException) as exc:
            detail = f"/healthz failed after {time.monotonic() - started:.1f} s: {exc!r}"
        kind = "crash" if not self.alive() else "stall"
        self._fail(kind, request.action, detail, request, status)
        self.dead = True
        return False

    def _pdbs(self) -> tuple[int, bytes]:
        status, body = self._read(f"/apis/policy/v1/namespaces/{NAMESPACE}/poddisruptionbudgets")
        if status != 200:
            return status, body
        doc = orjson.loads(body)
        return status, orjson.dumps(doc["items"])

    def _check_accepted(self, plan: Plan, info: ResourceInfo, request: Request, target: Target) -> None:
        body = self._last_body
        doc: Any = loads(body) if body[:1] == b"{" else None
        if request.method == "GET" and isinstance(doc, dict):
            self._check_read(plan, info, request, doc)
            return
        if request.method not in _WRITES:
            return
        pool = self.pools.setdefault(self._key(info), [])
        if plan.action == "deletecollection":
            self.pools[self._key(info)] = []
            return
        name = target.name
        if plan.action == "create" and isinstance(doc, dict):
            meta = doc.get("metadata")
            name = meta.get("name", "") if isinstance(meta, dict) else ""
            if isinstance(name, str) and name and not request.dry_run:
                pool.append(name)
        if not name or not isinstance(name, str) or plan.action == "odd-method":
            return
        status, stored = self._read(self._object_path(info, name))
        deleting = _deleting(target.current) or plan.action in ("delete", "eviction")
        if status == 404 and deleting:  # a delete, or the write that removed a deleting object's last finalizer
            if name in pool:
                pool.remove(name)
            return
        if status != 200:
            self._fail(
                "not-rereadable",
                plan.action,
                f"GET after the accepted write: {status} {_message(stored)}",
                request,
                status,
            )
            return
        self._typed(plan.action, info, loads(stored), request, "stored")

    def _check_read(self, plan: Plan, info: ResourceInfo, request: Request, doc: dict[str, Any]) -> None:
        if doc.get("kind") == info.kind:
            self._typed(plan.action, info, doc, request, "returned")
        elif doc.get("kind") == info.list_kind:
            for item in doc.get("items", [])[:50]:
                self._typed(plan.action, info, item, request, "listed")

    def _typed(self, action: str, info: ResourceInfo, obj: Any, request: Request, how: str) -> None:
        found = typed.problems(obj, group=info.group, version=info.version, kind=info.kind)
        if found:
            self._fail("unreadable", action, f"{info.kind} {how}: " + "; ".join(found), request, 200)

    def _fail(
        self, kind: str, action: str, message: str, request: Request, status: int, *, response: bytes | None = None
    ) -> None:
        sig = signature(kind, action, message)
        shown = self._last_body if response is None else response
        failure = Failure(kind, sig, message, request.reproducer(), status, shown[:300].decode("utf-8", "replace"))
        self.stats.failures.append(failure)
        self.stats.classes.setdefault(sig, []).append(failure)

    # -- the sweep --------------------------------------------------------------------------------------------------

    def sweep(self) -> None:
        """Every stored object of every kind, listed across namespaces, must be readable by the typed models."""
        if self.dead:
            return
        for info in self.resources:
            status, body = self._read(info.rest_path(None))
            if status != 200:
                continue
            listed = loads(body)
            for item in listed.get("items", []) if isinstance(listed, dict) else []:
                found = typed.problems(item, group=info.group, version=info.version, kind=info.kind)
                if found:
                    meta = item.get("metadata") if isinstance(item, dict) else None
                    name = meta.get("name") if isinstance(meta, dict) else "?"
                    request = Request("GET", info.rest_path(None), [], {}, None, info, "sweep", None, str(name))
                    self._fail(
                        "unreadable", "sweep", f"{info.kind} stored: " + "; ".join(found), request, 200, response=b""
                    )


def loads(body: bytes) -> Any:
    """The JSON document (None if it is not one): orjson, and :mod:`json` where orjson stops (1,024 levels)."""
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        pass
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        return None


def _deleting(obj: dict[str, Any] | None) -> bool:
    meta = obj.get("metadata") if obj is not None else None
    return isinstance(meta, dict) and bool(meta.get("deletionTimestamp"))


def _message(body: bytes) -> str:
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError:
        return body[:200].decode("utf-8", "replace")
    return str(doc.get("message", ""))[:300] if isinstance(doc, dict) else str(doc)[:200]


def run(harness: Harness, count: int, *, seed: int, limits: Limits = BOUNDED) -> Stats:
    """``count`` plans drawn by hypothesis under a fixed ``seed`` (generate phase only: the run records every
    failure and goes on, it does not stop at the first), with a sweep every :data:`SWEEP_EVERY` requests and one
    at the end."""
    strategy = plans(harness.resources, limits)

    @settings(
        max_examples=count,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @hypothesis_seed(seed)
    @given(strategy)
    def drive(plan: Plan) -> None:
        harness.execute(plan)
        if harness.stats.requests % SWEEP_EVERY == 0:
            harness.sweep()

    drive()
    harness.sweep()
    return harness.stats


class _Found(Exception):
    def __init__(self, plan: Plan, failure: Failure) -> None:
        super().__init__(failure.signature)
        self.plan, self.failure = plan, failure


def shrink(harness: Harness, target: str, count: int, *, seed: int, limits: Limits = BOUNDED) -> str | None:
    """Replay the run's plans (same ``seed``) until one fails with signature ``target``, let hypothesis shrink it,
    and return the minimal plan with its request (None if no plan failed that way again: state-dependent)."""
    strategy = plans(harness.resources, limits)

    @settings(
        max_examples=count,
        database=None,
        deadline=None,
        phases=[Phase.generate, Phase.shrink],
        suppress_health_check=list(HealthCheck),
        report_multiple_bugs=False,
        print_blob=False,
        verbosity=Verbosity.quiet,
    )
    @hypothesis_seed(seed)
    @given(strategy)
    def drive(plan: Plan) -> None:
        before = len(harness.stats.failures)
        harness.execute(plan)
        for failure in harness.stats.failures[before:]:
            if failure.signature == target:
                raise _Found(plan, failure)

    try:
        drive()
    except _Found as found:
        return f"{found.plan!r}\n    request: {found.failure.request}"
    except Exception as exc:  # hypothesis's Flaky: the failure depended on the server's state
        return f"(did not shrink: {type(exc).__name__})"
    return None


def _allocator_churn(key: str, before: str, after: str) -> bool:
    """A rejected write of an allocating kind moved the revision by allocate-and-release pairs (:data:`_ALLOCATING`)."""
    if key not in _ALLOCATING or not (before.isdigit() and after.isdigit()):
        return False
    moved = int(after) - int(before)
    return moved > 0 and moved % 2 == 0
