"""Row renderers compiled once per table version.

An encoder turns a row tuple into the object its protocol writes: one entry per column, each
a small conversion of the column's value (an int to its decimal string, bytes to latin-1 ...).
Calling one Python function per column costs more than orjson spends writing the whole row,
so each protocol describes its columns as expression templates and gets back one generated
function whose body is a single dict display. Only our own templates and `repr`-quoted column
names go into the generated source.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

from ticdc_sim.golang import format_f

Row = tuple[Any, ...]

# `{v}` stands for the value; a template must give None for None unless it says otherwise
INTEGER = "None if {v} is None else str({v})"
DECIMAL = "None if {v} is None else _decimal({v})"
FLOAT = "None if {v} is None else _format_f({v}, 32)"  # Go's FormatFloat(v, 'f', -1, 32)
DOUBLE = "None if {v} is None else _format_f({v}, 64)"
LATIN1 = "None if {v} is None else {v}.decode('latin-1')"
AS_IS = "{v}"


def _decimal(value: Decimal) -> str:
    # str is three times faster than format 'f' and agrees unless it picks an exponent
    text = str(value)
    return text if "E" not in text else format(value, "f")


BASE_ENV: dict[str, Any] = {"_decimal": _decimal, "_format_f": format_f}


def compile_row(
    name: str,
    fields: list[tuple[str, int, str]],
    env: Mapping[str, Any] | None = None,
) -> Callable[[Row], dict[str, Any]]:
    """`f(row) -> {key: template(row[offset])}` for fields `(key, offset, template)`.

    Templates may call what `env` (and BASE_ENV) names; `{v}` is replaced by `r[offset]`."""
    items = ", ".join(
        f"{key!r}: ({template.replace('{v}', f'r[{offset}]')})" for key, offset, template in fields
    )
    source = f"def {name}(r):\n    return {{{items}}}\n"
    namespace: dict[str, Any] = {**BASE_ENV, **(env or {})}
    exec(compile(source, f"<{name}>", "exec"), namespace)  # noqa: S102 - our templates only
    function: Callable[[Row], dict[str, Any]] = namespace[name]
    return function
