"""How a client of an API server trusts it: the server half of client-go's TLS config (``rest.TLSClientConfig``'s
``CAData`` and ``Insecure``), for kubeplane's HTTP client and the web UI's proxy to another cluster.

Invariants:

* ``http://`` servers get no TLS (``False``, aiohttp's "plain"); an ``https://`` server is verified against the
  kubeconfig's CA (``certificate-authority(-data)``) or, without one, the system's CAs, hostname included; with
  ``insecure-skip-tls-verify`` nothing is verified.
* No client certificate here: the HTTP client adds the kubeconfig's own (:mod:`kubeplane.client.http`), the UI's
  proxy must never present one (:mod:`kubeplane.ui.remote`). So this module depends on the standard library alone,
  which is why the UI, which may not import the client package, may import it (tests/test_layering.py).
"""

from __future__ import annotations

import ssl

__all__ = ["server_ssl_context"]


def server_ssl_context(server: str, *, ca_data: bytes | None = None, insecure: bool = False) -> ssl.SSLContext | bool:
    """What aiohttp verifies ``server`` with (see the module's invariants); ``ca_data`` is PEM."""
    if not server.startswith("https"):
        return False
    if insecure:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        return ctx
    return ssl.create_default_context(cadata=ca_data.decode() if ca_data else None)
