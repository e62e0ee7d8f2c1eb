"""Server-side Tables of custom resources (apiextensions-apiserver registry/customresource/tableconvertor):
``Name``, then each ``additionalPrinterColumns`` entry evaluated by JSONPath (``Age`` from
``.metadata.creationTimestamp`` when the version declares none). Cells: strings print as client-go's JSONPath
printer does (a string as is, other values as JSON), integer, number and boolean columns take the value only if
it has that type, ``date`` columns show the age (``<invalid>`` for an unparsable time); a missing value is null.
"""

from __future__ import annotations

from typing import Any

import orjson

from kubeplane.api.crd import jsonpath
from kubeplane.api.crd.resource import CustomResourceInfo, PrinterColumn
from kubeplane.apiserver.printers_workloads import CREATED_DOC, NAME_COLUMN, Column, Obj, Printer, epoch, since

__all__ = ["printer_for"]

_AGE = PrinterColumn("Age", "date", ".metadata.creationTimestamp", description=CREATED_DOC)


def printer_for(info: CustomResourceInfo) -> Printer:
    columns = info.columns or (_AGE,)
    definitions = [NAME_COLUMN]
    for col in columns:
        desc = col.description or f"Custom resource definition column (in JSONPath format): {col.json_path}"
        definitions.append(Column(col.name, col.type, desc, priority=col.priority, format=col.format))

    def row(obj: Obj, now: float) -> list[Any]:
        cells: list[Any] = [str((obj.get("metadata") or {}).get("name", ""))]
        for col in columns:
            found = jsonpath.find(obj, col.json_path)
            cells.append(None if not found else _cell(col.type, found[0], now))
        return cells

    return Printer(tuple(definitions), row)


def _cell(column_type: str, value: Any, now: float) -> Any:
    if value is None:
        return None
    if column_type == "string":
        return value if isinstance(value, str) else orjson.dumps(value).decode()
    if column_type == "integer":
        if isinstance(value, bool):
            return None
        return int(value) if isinstance(value, int | float) else None
    if column_type == "number":
        return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
    if column_type == "boolean":
        return value if isinstance(value, bool) else None
    if column_type == "date" and isinstance(value, str):
        if not value:
            return "<unknown>"
        when = epoch(value)
        return "<invalid>" if when is None and value != "0001-01-01T00:00:00Z" else since(when, now)
    return None
