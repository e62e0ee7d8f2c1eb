"""How a client trusts an API server (kubeplane.client.tls), as client-go's ``rest.TLSClientConfig`` does with
a kubeconfig's ``certificate-authority-data`` and ``insecure-skip-tls-verify``; shared by the HTTP client and the
web UI's proxy (tests/ui/test_remote.py drives the proxy through it against a live TLS server)."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from kubeplane.apiserver.tls import ensure_serving_certs
from kubeplane.client.http import _ssl_context
from kubeplane.client.kubeconfig import ClientConfig
from kubeplane.client.tls import server_ssl_context


def _trusted(ctx: ssl.SSLContext) -> list[str]:
    """The common names of the CAs ``ctx`` trusts."""
    return [str(rdn[0][1]) for cert in ctx.get_ca_certs() for rdn in cert["subject"] if rdn[0][0] == "commonName"]


@pytest.mark.parametrize("server", ["http://127.0.0.1:8080", "http://localhost"], ids=["ip", "name"])
def test_a_plain_http_server_gets_no_tls(server: str) -> None:
    assert server_ssl_context(server, ca_data=b"ignored", insecure=True) is False


def test_the_kubeconfigs_ca_is_the_trust_and_the_hostname_is_checked(tmp_path: Path) -> None:
    ca = ensure_serving_certs(tmp_path).ca.read_bytes()
    ctx = server_ssl_context("https://127.0.0.1:6443", ca_data=ca)
    assert isinstance(ctx, ssl.SSLContext)
    assert (ctx.verify_mode, ctx.check_hostname) == (ssl.CERT_REQUIRED, True)
    assert _trusted(ctx) == ["kubeplane-ca"]


def test_without_a_ca_the_server_is_verified_all_the_same() -> None:
    """No ``certificate-authority``: the system's roots, still verified (client-go: nil RootCAs)."""
    ctx = server_ssl_context("https://example.invalid")
    assert isinstance(ctx, ssl.SSLContext)
    assert (ctx.verify_mode, ctx.check_hostname) == (ssl.CERT_REQUIRED, True)


def test_insecure_skip_tls_verify_verifies_nothing(tmp_path: Path) -> None:
    ca = ensure_serving_certs(tmp_path).ca.read_bytes()
    ctx = server_ssl_context("https://127.0.0.1:6443", ca_data=ca, insecure=True)
    assert isinstance(ctx, ssl.SSLContext)
    assert (ctx.verify_mode, ctx.check_hostname) == (ssl.CERT_NONE, False)


def test_the_http_client_adds_the_kubeconfigs_certificate_to_the_same_trust(tmp_path: Path) -> None:
    """The client's context is the shared trust plus its client certificate (the UI's proxy never has one)."""
    certs = ensure_serving_certs(tmp_path)
    config = ClientConfig(
        server="https://127.0.0.1:6443",
        ca_data=certs.ca.read_bytes(),
        client_cert_data=certs.cert.read_bytes(),
        client_key_data=certs.key.read_bytes(),
    )
    ctx = _ssl_context(config)
    assert isinstance(ctx, ssl.SSLContext)
    assert (ctx.verify_mode, ctx.check_hostname) == (ssl.CERT_REQUIRED, True)
    assert _trusted(ctx) == ["kubeplane-ca"]
    assert _ssl_context(ClientConfig(server="http://127.0.0.1:8080", client_cert_data=b"x", client_key_data=b"y")) is (
        False
    )
