"""Warning headers as upstream's recorder sends them (apiserver pkg/endpoints/filters/warning.go): deduplicated,
whole while they fit in 4 KiB of runes, else cut to 256 runes each until that budget is spent; kubeplane also caps
their number so Python's http.client (100 headers at most) can read the response."""

from __future__ import annotations

from kubeplane.apiserver.http.negotiation import (
    MAX_WARNING_HEADERS,
    WARNING_ITEM_RUNES,
    WARNING_TOTAL_RUNES,
    warning_headers,
)


def test_warnings_are_deduplicated_quoted_and_empty_ones_dropped() -> None:
    out = warning_headers(['unknown field "a"', "", 'unknown field "a"', "b\\c"])
    assert out == [(b"warning", b'299 - "unknown field \\"a\\""'), (b"warning", b'299 - "b\\\\c"')]


def test_long_warnings_are_cut_once_the_budget_is_exceeded() -> None:
    texts = [f"{i}:" + "x" * 1000 for i in range(30)]
    out = warning_headers(texts)
    values = [v.decode()[len('299 - "') : -1] for _, v in out]
    assert all(len(v) == WARNING_ITEM_RUNES for v in values)
    assert sum(map(len, values)) - WARNING_ITEM_RUNES < WARNING_TOTAL_RUNES <= sum(map(len, values))


def test_many_short_warnings_stay_readable() -> None:
    out = warning_headers([f'unknown field "k{i}"' for i in range(1000)])
    assert len(out) == MAX_WARNING_HEADERS
