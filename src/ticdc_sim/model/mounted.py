"""Row values as TiCDC's mounter hands them to dispatchers and encoders.

Mirrors tiflow `cdc/entry/mounter.go` `formatColVal` on top of our canonical values
(`generator/sql/values.py`): ENUM becomes its 1-based index, SET its bitmask, everything else
keeps its form (BIT and YEAR are already integers, TIMESTAMP already in TiCDC's time zone).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ticdc_sim.model.mysql import MySQLType
from ticdc_sim.model.table import ColumnInfo

Mounter = Callable[[Any], Any]


def mounter(col: ColumnInfo) -> Mounter | None:
    """The mounted form of a column's values, or None when it is the canonical value itself."""
    if col.tp == MySQLType.ENUM:
        index = {member: i for i, member in enumerate(col.elems, start=1)}
        return lambda v: None if v is None else index.get(v, 0)
    if col.tp == MySQLType.SET:
        bits = {member: 1 << i for i, member in enumerate(col.elems)}
        return lambda v: None if v is None else sum(bits[m] for m in v.split(",") if m in bits)
    if col.tp in (MySQLType.FLOAT, MySQLType.DOUBLE):
        return lambda v: 0.0 if v is not None and not math.isfinite(v) else v
    return None


def mount_row(mounters: list[Mounter | None], row: tuple[Any, ...]) -> list[Any]:
    return [v if m is None else m(v) for m, v in zip(mounters, row, strict=True)]
