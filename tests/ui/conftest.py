"""The web UI's acceptance tests (issue 24) in a real browser: Debian's ``chromium`` driven by Playwright for
Python through ``executable_path`` (no browser download; ``make chromium`` installs the package). A missing
browser or a missing Playwright fails the test loudly: these tests never skip.

One ``kubeplane up`` (the seeds' cluster: master, node01, node02; TLS, its own data dir and token, port 0 on
127.0.0.1) serves the module; it is stopped by its PID with SIGTERM and must exit 0.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

from kubeplane.client.kubeconfig import load_kubeconfig
from tests.cli.test_up_seeds import Cluster, _start, _stop, _wait_for_kubeconfig

CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "chromium", "chromium-browser")


def chromium_path() -> str:
    """The system chromium (``$KUBEPLANE_CHROMIUM`` first); a test fails here when there is none."""
    for name in (os.environ.get("KUBEPLANE_CHROMIUM", ""), *CHROMIUM_CANDIDATES):
        found = shutil.which(name) if name else None
        if found:
            return found
    pytest.fail("headless chromium is missing: `make chromium` installs Debian's package (the UI tests never skip)")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("playwright is missing: `make venv` installs the pinned test dependencies")
    path = chromium_path()
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=path, headless=True, args=["--no-sandbox", "--disable-gpu"])
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def up(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Cluster, str, str]]:
    """The seeds' cluster; (cluster, its address, the admin token)."""
    data_dir = tmp_path_factory.mktemp("ui") / "data"
    process, log = _start(data_dir)
    try:
        _wait_for_kubeconfig(process, data_dir, log)
        cluster = Cluster(data_dir, process, log)
        config = load_kubeconfig(cluster.kubeconfig)
        assert config.token is not None
        assert config.server.startswith("https://127.0.0.1:")
        yield cluster, config.server, config.token
    finally:
        code = _stop(process, log)
    assert code == 0, log.read_text(errors="replace")[-3000:]


def new_page(browser: Any) -> Any:
    """A fresh browser context (no cookies) that accepts the cluster's self-signed serving certificate and
    refuses any request that leaves 127.0.0.1 (the UI makes none)."""
    context = browser.new_context(ignore_https_errors=True, viewport={"width": 1400, "height": 900})
    outside: list[str] = []

    def route(r: Any) -> None:
        url = r.request.url
        if url.startswith(("https://127.0.0.1:", "http://127.0.0.1:", "data:")):
            r.continue_()
        else:
            outside.append(url)
            r.abort()

    context.route("**/*", route)
    page = context.new_page()
    page.outside_requests = outside
    page.console_errors = errors = []  # CSP violations and script errors show here
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.set_default_timeout(30_000)
    return page


def login(browser: Any, address: str, token: str) -> Any:
    page = new_page(browser)
    page.goto(f"{address}/ui/")
    page.wait_for_url("**/ui/login")
    page.fill("#token", token)
    page.click("button[type=submit]")
    page.wait_for_selector("#cluster-summary")
    return page
