"""JSON response bodies byte for byte as kube-apiserver's serializer writes them.

kube-apiserver encodes every JSON response with Go's ``json.NewEncoder(w).Encode(obj)``
(apimachinery pkg/runtime/serializer/json/json.go ``doEncode``; lists through collections.go, which ends them the
same way). Two things set that apart from a plain ``orjson.dumps``:

- ``Encoder.Encode`` writes a newline after the value;
- the encoder escapes HTML by default: ``<``, ``>`` and ``&`` become ``\\u003c``, ``\\u003e``, ``\\u0026``, and
  U+2028/U+2029 become ``\\u2028``/``\\u2029`` (encoding/json ``appendString``).

Control characters already agree (orjson, like Go since 1.22, writes ``\\b \\f \\n \\r \\t`` and ``\\u00XX`` in
lower-case hex). The escaped characters can only occur inside JSON strings, so replacing their bytes in the
encoded output is exact; each replacement runs only when the character is present.
"""

from __future__ import annotations

from typing import Any

import orjson

_HTML_ESCAPES = ((b"<", b"\\u003c"), (b">", b"\\u003e"), (b"&", b"\\u0026"))
_LINE_SEPARATORS = (("\u2028".encode(), b"\\u2028"), ("\u2029".encode(), b"\\u2029"))
_LEAD = b"\xe2"  # the first byte of U+2028/U+2029 in UTF-8: a one-byte scan rules both out (a 3-byte one is slow)


def escape_html(data: bytes) -> bytes:
    """Go's HTML-safe escaping applied to already encoded JSON."""
    for raw, escaped in _HTML_ESCAPES:
        if raw in data:
            data = data.replace(raw, escaped)
    if _LEAD in data:
        for raw, escaped in _LINE_SEPARATORS:
            if raw in data:
                data = data.replace(raw, escaped)
    return data


def encode(doc: Any) -> bytes:
    """``doc`` as Go's ``json.Encoder.Encode`` writes it: HTML-escaped, then a newline. Key order is the dict's:
    callers build objects in the Go types' field order (see :func:`kubeplane.apiserver.errors.status_object`)."""
    return escape_html(orjson.dumps(doc, option=orjson.OPT_APPEND_NEWLINE))
