"""The UI's server-side sessions and packaged assets (no browser needed)."""

from __future__ import annotations

from kubeplane.ui import sessions
from kubeplane.ui.app import PUBLIC, static_bytes
from kubeplane.ui.sessions import Sessions


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_session_ends_after_its_idle_time_and_its_lifetime() -> None:
    clock = Clock()
    store = Sessions(idle=10, lifetime=25, clock=clock)
    sid = store.open("tok", "admin")
    assert "tok" not in sid
    assert len(sid) >= 43  # 256 random bits, base64url
    clock.now = 9
    assert store.get(sid) is not None  # use restarts the idle timer
    clock.now = 18
    assert store.get(sid) is not None
    clock.now = 26  # within idle of the last use, past the lifetime
    assert store.get(sid) is None
    other = store.open("tok", "admin")
    clock.now = 37
    assert store.get(other) is None  # idle for 11 s
    assert store.get("forged") is None


def test_sessions_are_bounded_oldest_first() -> None:
    store = Sessions(capacity=2)
    first, second, third = (store.open(f"t{i}", "u") for i in range(3))
    assert len(store) == 2
    assert store.get(first) is None
    assert store.get(second) is not None
    assert store.get(third) is not None


def test_the_cookie_is_httponly_secure_samesite_strict() -> None:
    header = sessions.cookie_header("abc").decode()
    assert header.startswith("kubeplane-ui-session=abc; Path=/ui;")
    assert {"HttpOnly", "Secure", "SameSite=Strict"} <= {p.strip() for p in header.split(";")}
    assert sessions.session_id("a=b; kubeplane-ui-session=abc") == "abc"
    assert sessions.session_id("a=b") is None


def test_the_assets_ship_as_package_data() -> None:
    """Read through importlib.resources, as an installed wheel serves them (hatch ships every file of the package)."""
    for name in (
        "login.html",
        "index.html",
        "style.css",
        "login.js",
        "app.js",
        "api.js",
        "cluster.js",
        "node.js",
        "pod.js",
        "objects.js",
        "resources.js",
    ):
        data = static_bytes(name)
        assert data, name
        assert b"http://" not in data.replace(b"http://127.0.0.1", b"")  # no external requests
        assert b"https://" not in data
    assert static_bytes("../app.py") is None
    assert static_bytes("") is None
    assert {"/ui/login", "/ui/static/login.js", "/ui/static/style.css"} == PUBLIC
