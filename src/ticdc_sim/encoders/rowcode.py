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

from ticdc_sim.golang import format_f, shortest32

Row = tuple[Any, ...]

# `{v}` stands for the value; a template must give None for None unless it says otherwise
INTEGER = "None if {v} is None else str({v})"
DECIMAL = "None if {v} is None else _decimal({v})"
LATIN1 = "None if {v} is None else {v}.decode('latin-1')"
AS_IS = "{v}"


def _decimal(value: Decimal) -> str:
    # str is three times faster than format 'f' and agrees unless it picks an exponent
    text = str(value)
    return text if "E" not in text else format(value, "f")


def _f64(value: float | None) -> str | None:
    if value is None:
        return None
    text = repr(value)  # Go's shortest digits; the same layout unless there is an exponent
    if "e" in text or "n" in text:
        return format_f(value, 64)
    return text[:-2] if text.endswith(".0") else text


def _f32(value: float | None) -> str | None:
    return None if value is None else _f64(shortest32(value))


BASE_ENV: dict[str, Any] = {"_decimal": _decimal, "_f64": _f64, "_f32": _f32}


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
