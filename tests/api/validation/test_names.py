"""Pins apimachinery util/validation: which values pass, and upstream's exact error strings.

Valid/invalid cases are taken from upstream's validation_test.go (TestIsDNS1123Label, TestIsDNS1123Subdomain,
TestIsDNS1035Label, TestIsQualifiedName, TestIsValidLabelValue, TestIsValidPortNum, TestIsValidPortName,
TestIsValidIP, TestIsValidCIDR ...).
"""

from __future__ import annotations

import pytest

from kubeplane.api.validation import names
from kubeplane.api.validation.field import new_path

LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
    "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
DNS1035_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
    "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
    "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
QNAME_NAME_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used "
    "for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)

DNS1123_LABEL_GOOD = [
    "a",
    "ab",
    "abc",
    "a1",
    "a-1",
    "a--1--2--b",
    "0",
    "01",
    "012",
    "1a",
    "1-a",
    "1--a--b--2",
]
DNS1123_LABEL_BAD = ["", "A", "ABC", "aBc", "A1", "A-1", "1-A", "-", "a-", "-a", "1-", "-1", "_", "a_", "_a"]
DNS1123_LABEL_BAD += ["a_b", "1_", "_1", "1_2", " ", "a ", " a", "a b", "1 ", " 1", "1 2", "a\n", "é"]


@pytest.mark.parametrize("value", [*DNS1123_LABEL_GOOD, "a" * 63], ids=lambda v: f"label-ok:{v[:8]}")
def test_dns1123_label_accepts_upstream_success_cases(value: str) -> None:
    assert names.is_dns1123_label(value) == []


@pytest.mark.parametrize("value", DNS1123_LABEL_BAD, ids=lambda v: f"label-bad:{v!r}")
def test_dns1123_label_rejects_upstream_error_cases_with_regex_message(value: str) -> None:
    assert names.is_dns1123_label(value) == [LABEL_MSG]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param("a.b", ["must not contain dots"], id="valid-subdomain-but-label-says-no-dots"),
        pytest.param("1.2", ["must not contain dots"], id="numeric-subdomain-no-dots"),
        pytest.param("a" * 64, ["must be no more than 63 bytes"], id="64-chars-length-only"),
        pytest.param(
            "A" * 64,
            ["must be no more than 63 bytes", LABEL_MSG],
            id="too-long-and-bad-format-both-reported",
        ),
        pytest.param("é" * 32, ["must be no more than 63 bytes", LABEL_MSG], id="length-counted-in-utf8-bytes"),
    ],
)
def test_dns1123_label_messages(value: str, expected: list[str]) -> None:
    assert names.is_dns1123_label(value) == expected


SUBDOMAIN_GOOD = [
    "a", "ab", "abc", "a1", "a-1", "a--1--2--b", "0", "01", "012", "1a", "1-a", "1--a--b--2",
    "a.a", "ab.a", "abc.a", "a1.a", "a-1.a", "a--1--2--b.a", "a.1", "ab.1", "abc.1", "a1.1", "a-1.1",
    "0.a", "01.a", "012.a", "1a.a", "1-a.a", "1--a--b--2", "0.1", "01.1", "012.1", "1a.1", "1-a.1",
    "a.b.c.d.e", "aa.bb.cc.dd.ee", "1.2.3.4.5", "11.22.33.44.55", "a" * 253,
]  # fmt: skip
SUBDOMAIN_BAD = [
    "", "A", "ABC", "aBc", "A1", "A-1", "1-A", "-", "a-", "-a", "1-", "-1", "_", "a_", "_a", "a_b", "1_",
    "_1", "1_2", ".", "a.", ".a", "a..b", "1.", ".1", "1..2", " ", "a ", " a", "a b", "1 ", " 1", "1 2",
    "A.a", "aB.a", "ab.A", "A1.a", "a1.A", "A.1", "aB.1", "A1.1", "1A.1", "0.A", "01.A", "012.A", "1A.a",
    "1a.A", "A.B.C.D.E", "AA.BB.CC.DD.EE", "a.B.c.d.e", "aa.bB.cc.dd.ee", "a@b", "a,b", "a_b", "a;b", "a:b",
    "a%b", "a?b", "a$b",
]  # fmt: skip


@pytest.mark.parametrize("value", SUBDOMAIN_GOOD, ids=lambda v: f"subdomain-ok:{v[:12]}")
def test_dns1123_subdomain_accepts_upstream_success_cases(value: str) -> None:
    assert names.is_dns1123_subdomain(value) == []


@pytest.mark.parametrize("value", SUBDOMAIN_BAD, ids=lambda v: f"subdomain-bad:{v!r}")
def test_dns1123_subdomain_rejects_upstream_error_cases(value: str) -> None:
    assert names.is_dns1123_subdomain(value) == [SUBDOMAIN_MSG]


def test_dns1123_subdomain_254_chars_is_length_error_only() -> None:
    assert names.is_dns1123_subdomain("a" * 254) == ["must be no more than 253 bytes"]


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("a", True), ("ab", True), ("a1", True), ("a-1", True), ("a--1--2--b", True), ("a" * 63, True),
        ("0", False), ("01", False), ("1a", False), ("1-a", False), ("A", False), ("a-", False),
        ("-a", False), ("a.b", False), ("a_b", False), ("", False),
    ],
    ids=repr,
)  # fmt: skip
def test_dns1035_label_must_start_with_a_letter(value: str, ok: bool) -> None:
    assert names.is_dns1035_label(value) == ([] if ok else [DNS1035_MSG])


def test_dns1035_label_too_long() -> None:
    assert names.is_dns1035_label("a" * 64) == ["must be no more than 63 bytes"]


QNAME_GOOD = [
    "simple", "now-with-dashes", "1-starts-with-num", "1234", "simple/simple", "now-with-dashes/simple",
    "now-with-dashes/now-with-dashes", "now.with.dots/simple", "now-with.dashes-and.dots/simple",
    "1-num.2-num/3-num", "1234/5678", "1.2.3.4/5678", "Uppercase_Is_OK_123",
    "example.com/Uppercase_Is_OK_123", "requests.storage-foo", "a" * 63, "a" * 253 + "/" + "b" * 63,
]  # fmt: skip


@pytest.mark.parametrize("value", QNAME_GOOD, ids=lambda v: f"qname-ok:{v[:20]}")
def test_qualified_name_accepts_upstream_success_cases(value: str) -> None:
    assert names.is_qualified_name(value) == []


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param("nospecialchars%^=@", [QNAME_NAME_MSG], id="special-chars"),
        pytest.param("cantendwithadash-", [QNAME_NAME_MSG], id="trailing-dash"),
        pytest.param("-cantstartwithadash-", [QNAME_NAME_MSG], id="leading-dash"),
        pytest.param(
            "only/one/slash",
            [
                "a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start "
                "and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
                "used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS "
                "subdomain prefix and '/' (e.g. 'example.com/MyName')"
            ],
            id="two-slashes-single-message",
        ),
        pytest.param("Example.com/abc", ["prefix part " + SUBDOMAIN_MSG], id="uppercase-prefix"),
        pytest.param("example_com/abc", ["prefix part " + SUBDOMAIN_MSG], id="underscore-prefix"),
        pytest.param("example.com/", ["name part must be non-empty", QNAME_NAME_MSG], id="empty-name"),
        pytest.param("/simple", ["prefix part must be non-empty"], id="empty-prefix"),
        pytest.param("a" * 64, ["name part must be no more than 63 bytes"], id="name-64"),
        pytest.param("a" * 254 + "/abc", ["prefix part must be no more than 253 bytes"], id="prefix-254"),
    ],
)
def test_qualified_name_error_messages(value: str, expected: list[str]) -> None:
    assert names.is_qualified_name(value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param("example.com/key", [], id="prefixed"),
        pytest.param("key", ["must include a prefix (e.g. 'example.com/key')"], id="unprefixed"),
        pytest.param("/key", ["prefix part must be non-empty"], id="label-key-errors-first"),
    ],
)
def test_prefixed_label_key(value: str, expected: list[str]) -> None:
    assert names.is_prefixed_label_key(value) == expected


@pytest.mark.parametrize(
    "value", ["simple", "now-with-dashes", "1-starts-with-num", "end-with-num-1", "1234", "a" * 63, ""]
)
def test_label_value_accepts_upstream_success_cases(value: str) -> None:
    assert names.is_valid_label_value(value) == []


@pytest.mark.parametrize(
    "value",
    [
        "nospecialchars%^=@",
        "Tama-nui-te-rā.is.Māori.sun",
        "\\backslashes\\are\\bad",
        "-starts-with-dash",
        "ends-with-dash-",
        ".starts.with.dot",
        "ends.with.dot.",
    ],
)
def test_label_value_rejects_upstream_error_cases(value: str) -> None:
    assert names.is_valid_label_value(value) == [LABEL_VALUE_MSG]


def test_label_value_64_chars() -> None:
    assert names.is_valid_label_value("a" * 64) == ["must be no more than 63 bytes"]


@pytest.mark.parametrize(
    ("port", "ok"),
    [(1, True), (1000, True), (65535, True), (0, False), (-1, False), (65536, False)],
    ids=str,
)
def test_port_num_range(port: int, ok: bool) -> None:
    assert names.is_valid_port_num(port) == ([] if ok else ["must be between 1 and 65535, inclusive"])


@pytest.mark.parametrize(
    ("port", "expected"),
    [
        pytest.param("telnet", [], id="ok-telnet"),
        pytest.param("re-mail-ck", [], id="ok-inner-hyphens"),
        pytest.param("pop3", [], id="ok-digits"),
        pytest.param("a", [], id="ok-one-letter"),
        pytest.param("a-1", [], id="ok-a-1"),
        pytest.param("1-a", [], id="ok-1-a"),
        pytest.param("a-1-b-2-c-3-d-4", [], id="ok-15-chars"),
        pytest.param("", [
            "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
            "must contain at least one letter (a-z)",
        ], id="empty"),
        pytest.param("1234", ["must contain at least one letter (a-z)"], id="no-letter"),
        pytest.param("telnet-", ["must not begin or end with a hyphen"], id="trailing-hyphen"),
        pytest.param("re--mail", ["must not contain consecutive hyphens"], id="double-hyphen"),
        pytest.param("Telnet", [
            "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
        ], id="uppercase"),
        pytest.param("a-1-b-2-c-3-d-4-", [
            "must be no more than 15 bytes", "must not begin or end with a hyphen",
        ], id="16-chars"),
    ],
)  # fmt: skip
def test_port_name_messages(port: str, expected: list[str]) -> None:
    assert names.is_valid_port_name(port) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param("A_1", [], id="c-identifier-ok"),
        pytest.param(
            "1a",
            [
                "a valid C identifier must start with alphabetic character or '_', followed by a string of "
                "alphanumeric characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName', regex used for "
                "validation is '[A-Za-z_][A-Za-z0-9_]*')"
            ],
            id="c-identifier-leading-digit",
        ),
    ],
)
def test_c_identifier(value: str, expected: list[str]) -> None:
    assert names.is_c_identifier(value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param("key.name", [], id="ok"),
        pytest.param("..a", ["must not start with '..'"], id="dotdot-prefix"),
        pytest.param(".", ["must not be '.'"], id="dot"),
        pytest.param(
            "a b",
            [
                "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. "
                "'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"
            ],
            id="space",
        ),
    ],
)
def test_config_map_key(value: str, expected: list[str]) -> None:
    assert names.is_config_map_key(value) == expected


def test_env_var_name_and_percent_and_header() -> None:
    assert names.is_env_var_name("MY_ENV.NAME") == []
    assert names.is_env_var_name("..x") == ["must not start with '..'"]
    assert names.is_env_var_name("1x")[0].startswith("a valid environment variable name must consist")
    assert names.is_valid_percent("93%") == []
    assert names.is_valid_percent("93") == [
        "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', "
        "regex used for validation is '[0-9]+%')"
    ]
    assert names.is_http_header_name("X-Header-Name") == []
    assert names.is_http_header_name("X_Header") != []


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        pytest.param("*.example.com", True, id="wildcard-ok"),
        pytest.param("*.*.bar.com", False, id="double-wildcard"),
        pytest.param("*bar.com", False, id="no-dot"),
        pytest.param("f*.bar.com", False, id="wildcard-inside-label"),
        pytest.param("*", False, id="bare-star"),
    ],
)
def test_wildcard_subdomain(value: str, ok: bool) -> None:
    assert (names.is_wildcard_dns1123_subdomain(value) == []) is ok


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param("acme.io/foo", [], id="ok"),
        pytest.param("acme.io/foo/bar~baz", [], id="ok-nested-path"),
        pytest.param("", ["p: Required value"], id="empty-required"),
        pytest.param("acme.io", ['p: Invalid value: "acme.io": must be a domain-prefixed path (such as '
                                 '"acme.io/foo")'], id="no-slash"),
        pytest.param("Acme.io/foo", ['p: Invalid value: "Acme.io": ' + SUBDOMAIN_MSG], id="bad-host"),
        pytest.param("acme.io/f o", ['p: Invalid value: "f o": Invalid path (regex used for validation is '
                                     "'[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+')"], id="bad-path-no-examples"),
    ],
)  # fmt: skip
def test_domain_prefixed_path(value: str, expected: list[str]) -> None:
    assert [str(e) for e in names.is_domain_prefixed_path(new_path("p"), value)] == expected


IP_MSG = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"


@pytest.mark.parametrize(
    ("value", "family"),
    [
        pytest.param("127.0.0.1", 4, id="ipv4"),
        pytest.param("10.0.0.1", 4, id="ipv4-private"),
        pytest.param("255.255.255.255", 4, id="ipv4-broadcast"),
        pytest.param("0.0.0.0", 4, id="ipv4-unspecified"),
        pytest.param("010.001.000.099", 4, id="ipv4-leading-zeros-sloppy-accepted"),
        pytest.param("::1", 6, id="ipv6-loopback"),
        pytest.param("2001:db8::ffff", 6, id="ipv6"),
        pytest.param("::", 6, id="ipv6-unspecified"),
        pytest.param("::ffff:1.2.3.4", 4, id="ipv4-mapped-ipv6-counts-as-ipv4"),
        pytest.param("1.2.3", 0, id="three-octets"),
        pytest.param("1.2.3.4.5", 0, id="five-octets"),
        pytest.param("256.0.0.1", 0, id="octet-over-255"),
        pytest.param("1.2.3.-4", 0, id="negative-octet"),
        pytest.param("", 0, id="empty"),
        pytest.param("fe80::1%eth0", 0, id="zone-rejected"),
        pytest.param("2001:db8::ffff::1", 0, id="two-double-colons"),
        pytest.param("1.2.3.4/24", 0, id="cidr-is-not-ip"),
    ],
)
def test_ip_validation(value: str, family: int) -> None:
    p = new_path("ip")
    assert [e.detail for e in names.is_valid_ip(p, value)] == ([] if family else [IP_MSG])
    v4 = [e.detail for e in names.is_valid_ipv4_address(p, value)]
    v6 = [e.detail for e in names.is_valid_ipv6_address(p, value)]
    assert v4 == ([] if family == 4 else ["must be a valid IPv4 address"])
    assert v6 == ([] if family == 6 else ["must be a valid IPv6 address"])


def test_ip_error_carries_upstream_origin() -> None:
    (err,) = names.is_valid_ip(new_path("spec", "clusterIP"), "x")
    assert str(err) == f'spec.clusterIP: Invalid value: "x": {IP_MSG}'
    assert err.origin == "format=ip-sloppy"


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        pytest.param("10.9.8.0/24", True, id="ipv4-cidr"),
        pytest.param("10.9.8.7/24", True, id="host-bits-set-only-warned-upstream"),
        pytest.param("2001:db8::/64", True, id="ipv6-cidr"),
        pytest.param("0.0.0.0/0", True, id="default-route"),
        pytest.param("10.9.8.0/33", False, id="ipv4-prefix-too-long"),
        pytest.param("2001:db8::/129", False, id="ipv6-prefix-too-long"),
        pytest.param("10.9.8.0", False, id="missing-prefix"),
        pytest.param("10.9.8.0/", False, id="empty-prefix"),
        pytest.param("10.9.8.0/-1", False, id="negative-prefix"),
    ],
)
def test_cidr_validation(value: str, ok: bool) -> None:
    errs = [e.detail for e in names.is_valid_cidr(None, value)]
    assert errs == ([] if ok else ["must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"])
