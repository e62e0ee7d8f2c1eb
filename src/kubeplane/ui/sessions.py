"""Server-side UI sessions: a random id (the cookie) mapped to the bearer token it was opened with.

Invariants: an id is 256 random bits from :mod:`secrets` and never derived from the token; a session ends at
``idle`` seconds without use or ``lifetime`` seconds after login, whichever comes first; at most ``capacity``
sessions are kept (the oldest goes first), so logins cannot grow memory without bound. The token is kept only
here (never sent back to the browser): the browser holds the id, in an HttpOnly cookie.
"""

from __future__ import annotations

import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

COOKIE = "kubeplane-ui-session"
IDLE = 8 * 3600.0
LIFETIME = 24 * 3600.0
CAPACITY = 10_000


@dataclass
class Session:
    token: str
    user: str
    created: float
    used: float


class Sessions:
    def __init__(
        self,
        *,
        idle: float = IDLE,
        lifetime: float = LIFETIME,
        capacity: int = CAPACITY,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.idle, self.lifetime, self.capacity, self.clock = idle, lifetime, capacity, clock
        self._sessions: OrderedDict[str, Session] = OrderedDict()

    def __len__(self) -> int:
        return len(self._sessions)

    def open(self, token: str, user: str) -> str:
        """A new session for ``token``; its id (the cookie's value)."""
        now = self.clock()
        self._expire(now)
        while len(self._sessions) >= self.capacity:
            self._sessions.popitem(last=False)
        sid = secrets.token_urlsafe(32)
        self._sessions[sid] = Session(token, user, now, now)
        return sid

    def get(self, sid: str | None) -> Session | None:
        """The live session of ``sid`` (its idle timer restarted), else None (an expired one is dropped)."""
        if not sid:
            return None
        session = self._sessions.get(sid)
        if session is None:
            return None
        now = self.clock()
        if now - session.used > self.idle or now - session.created > self.lifetime:
            del self._sessions[sid]
            return None
        session.used = now
        return session

    def close(self, sid: str | None) -> None:
        if sid:
            self._sessions.pop(sid, None)

    def _expire(self, now: float) -> None:
        for sid, s in list(self._sessions.items()):
            if now - s.used > self.idle or now - s.created > self.lifetime:
                del self._sessions[sid]


def cookie_header(sid: str, *, max_age: int = int(LIFETIME)) -> bytes:
    """The Set-Cookie value: HttpOnly (no script reads it), Secure, SameSite=Strict, scoped to /ui."""
    return f"{COOKIE}={sid}; Path=/ui; Max-Age={max_age}; HttpOnly; Secure; SameSite=Strict".encode()


def clear_cookie_header() -> bytes:
    return f"{COOKIE}=; Path=/ui; Max-Age=0; HttpOnly; Secure; SameSite=Strict".encode()


def session_id(cookie_header_value: str) -> str | None:
    """This UI's session id from a Cookie header (None if absent)."""
    for part in cookie_header_value.split(";"):
        name, _, value = part.strip().partition("=")
        if name == COOKIE and value:
            return value
    return None
