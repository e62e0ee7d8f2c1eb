"""Server-side Table rows for core/v1 Endpoints and discovery.k8s.io/v1 EndpointSlice, as upstream's
``printEndpoints`` and ``printEndpointSlice`` (``pkg/printers/internalversion/printers.go``).

``kubectl get endpoints`` shows NAME, ENDPOINTS, AGE; ENDPOINTS lists ``ip:port`` for each ready address and
port (just the IP for a subset without ports), the first three then `` + N more...``, and ``<none>`` for an
object without subsets (a subset with only not-ready addresses prints as an empty cell). ``kubectl get
endpointslices`` shows NAME, ADDRESSTYPE, PORTS, ENDPOINTS, AGE; PORTS and ENDPOINTS list the first three port
numbers (a port without a number shows its name, else ``*``) and addresses, with the same `` + N more...``
suffix and ``<unset>`` when the list is empty.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kubeplane.api.views import mappings, name_of
from kubeplane.apiserver.printers_workloads import AGE_COLUMN, NAME_COLUMN, Column, Obj, Printer, age

__all__ = ["ENDPOINTS_PRINTERS", "format_endpoint_slice_ports", "format_endpoints", "list_with_more"]

_MAX: Final = 3

ENDPOINTS_COLUMNS: Final = (
    NAME_COLUMN,
    Column("Endpoints", "string", "The set of all endpoints is the union of all subsets."),
    AGE_COLUMN,
)
ENDPOINT_SLICE_COLUMNS: Final = (
    NAME_COLUMN,
    Column("AddressType", "string", "addressType specifies the type of address carried by this EndpointSlice."),
    Column("Ports", "string", "ports specifies the list of network ports exposed by each endpoint in this slice."),
    Column("Endpoints", "string", "endpoints is a list of unique endpoints in this slice."),
    AGE_COLUMN,
)


def _join_host_port(ip: str, port: int) -> str:
    """Go's ``net.JoinHostPort``: IPv6 hosts in brackets."""
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"


def format_endpoints(endpoints: Obj) -> str:
    """Upstream ``formatEndpoints`` with every port name accepted."""
    subsets = mappings(endpoints, "subsets")
    if not subsets:
        return "<none>"
    shown: list[str] = []
    more = False
    count = 0
    for subset in subsets:
        addresses = [str(a.get("ip") or "") for a in mappings(subset, "addresses")]
        ports = mappings(subset, "ports")
        groups: list[int | None] = [None] if not ports else [_port_number(p) for p in ports]
        for port in groups:
            count += len(addresses)
            for ip in addresses:
                if len(shown) == _MAX:
                    more = True
                    break
                shown.append(ip if port is None else _join_host_port(ip, port))
            if more:
                break
        if more and not ports:
            break
    out = ",".join(shown)
    return f"{out} + {count - _MAX} more..." if more else out


def _port_number(port: Mapping[str, Any]) -> int:
    value = port.get("port")
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def list_with_more(shown: list[str], more: bool, count: int) -> str:
    """Upstream ``listWithMoreString``."""
    out = ",".join(shown)
    if more:
        return f"{out} + {count - _MAX} more..."
    return out or "<unset>"


def format_endpoint_slice_ports(ports: list[Obj]) -> str:
    """Upstream ``formatDiscoveryPorts``: the number, else the name, else ``*``."""
    shown: list[str] = []
    for port in ports:
        if len(shown) < _MAX:
            number = port.get("port")
            if isinstance(number, int) and not isinstance(number, bool):
                shown.append(str(number))
            elif port.get("name") is not None:
                shown.append(str(port.get("name")))
            else:
                shown.append("*")
    return list_with_more(shown, len(ports) > _MAX, len(ports))


def format_endpoint_slice_endpoints(endpoints: list[Obj]) -> str:
    """Upstream ``formatDiscoveryEndpoints``: every address of every endpoint, ready or not."""
    addresses = [str(a) for e in endpoints for a in (e.get("addresses") or []) if isinstance(a, str)]
    return list_with_more(addresses[:_MAX], len(addresses) > _MAX, len(addresses))


def endpoints_row(obj: Obj, now: float) -> list[Any]:
    return [name_of(obj), format_endpoints(obj), age(obj, now)]


def endpoint_slice_row(obj: Obj, now: float) -> list[Any]:
    return [
        name_of(obj),
        str(obj.get("addressType") or ""),
        format_endpoint_slice_ports(mappings(obj, "ports")),
        format_endpoint_slice_endpoints(mappings(obj, "endpoints")),
        age(obj, now),
    ]


ENDPOINTS_PRINTERS: Final[Mapping[tuple[str, str], Printer]] = {
    ("", "Endpoints"): Printer(ENDPOINTS_COLUMNS, endpoints_row),
    ("discovery.k8s.io", "EndpointSlice"): Printer(ENDPOINT_SLICE_COLUMNS, endpoint_slice_row),
}
