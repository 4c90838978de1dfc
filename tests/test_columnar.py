"""Column-wise writing (encoders/columnar.py) against the per-value writers it stands in for,
and batches against rows encoded one at a time. Float columns are checked in test_golang.py
against the brute-force reference of Go's float rule."""

from __future__ import annotations

import random
from decimal import Decimal
from typing import Any

import pytest

from ticdc_sim.encoders import CodecConfig, columnar
from ticdc_sim.encoders.canal_json import Encoder as CanalEncoder
from ticdc_sim.encoders.open_protocol import Encoder as OpenEncoder
from ticdc_sim.generator.sql.engine import Engine
from ticdc_sim.generator.sql.script import parse_statements
from ticdc_sim.golang import json as gj
from ticdc_sim.model.events import RowChangedEvent

FLAVORS = {"encoding/json": gj.ENCODING_JSON, "easyjson": gj.EASYJSON, "jsoniter": gj.JSONITER}
SPECIAL_STRINGS = [
    "",
    "plain ascii 123",
    "é ü 中文 😀",
    'a "quote" and a back\\slash',
    "<a href='x'>&amp;</a>",
    "line\nbreak",
    "tab\tand\rreturn",
    "\x00\x01\x1f",
    "\b\f",
    "\u2028 and \u2029",
    "bad byte \udcff",
    "\x7f",
    "%s %d %% percent",
]


def texts(field: columnar.Field, count: int) -> list[bytes]:
    return [columnar.text(field, i) for i in range(count)]


@pytest.mark.parametrize("flavor", FLAVORS.values(), ids=FLAVORS.keys())
def test_string_columns_escape_as_the_go_library(flavor: gj.Flavor) -> None:
    write = columnar.strings(flavor)
    for special in SPECIAL_STRINGS:  # alone, then among plain values (each path of the writer)
        for column in ([special], ["x", special, "y"], [special, "<b>", 'q"']):
            got = texts(write(column), len(column))
            assert got == [gj.dumps(v, flavor) for v in column], column
    rng = random.Random(7)
    alphabet = 'ab <>&"\\\n\t\x01é中\u2028\udcff%'
    for _ in range(300):
        column = [
            "".join(rng.choice(alphabet) for _ in range(rng.randrange(6)))
            for _ in range(rng.randrange(1, 8))
        ]
        assert texts(write(column), len(column)) == [gj.dumps(v, flavor) for v in column]


def test_decimal_columns_never_use_an_exponent() -> None:
    values = [
        Decimal("0.00"),
        Decimal("-1.50"),
        Decimal("1E-10"),
        Decimal("0E-10"),
        Decimal("-0.0000001"),
        Decimal("1E+2"),
        Decimal("123456789012345678901234567890.123"),
    ]
    got = texts(columnar.decimals(values), len(values))
    assert got == [b'"%s"' % format(v, "f").encode() for v in values]
    assert got[2] == b'"0.0000000001"'


def test_nulls_in_any_column_are_null() -> None:
    cases: list[tuple[columnar.Writer, list[Any]]] = [
        (columnar.quoted_ints, [None, 1, None, -2]),
        (columnar.ints, [3, None]),
        (columnar.decimals, [None, Decimal("1.5")]),
        (columnar.floats(64, quoted=True), [None, 0.5, None]),
        (columnar.strings(gj.EASYJSON), ["<", None]),
        (columnar.quoted_ints, [None, None]),
        (columnar.floats(32, quoted=False), [1.5, None, float("nan")]),
        (columnar.floats(64, quoted=False), [None, 1e-7, None]),
        (columnar.mapped(str.upper, columnar.strings(gj.EASYJSON)), ["a", None]),
        (columnar.decimals, [Decimal("1E-10"), None]),
    ]
    for write, values in cases:
        got = texts(columnar.nullable(write)(values), len(values))
        whole = texts(write([v for v in values if v is not None]), len(values) - values.count(None))
        assert [t for t, v in zip(got, values, strict=True) if v is None] == [
            b"null"
        ] * values.count(None)
        assert [t for t, v in zip(got, values, strict=True) if v is not None] == whole


def test_a_wrong_value_that_is_not_null_still_fails() -> None:
    # writers refuse None with TypeError and nullable takes that as the sign of NULLs; any
    # other value a writer refuses must not be mistaken for one
    for write, values in [
        (columnar.ints, [1, "2"]),
        (columnar.strings(gj.EASYJSON), ["a", 2]),
    ]:
        with pytest.raises(TypeError):
            columnar.nullable(write)(values)


def test_layouts_keep_percent_signs_and_constant_slots() -> None:
    layout = columnar.Layout([b'{"t%d":', "a", b',"again":', "a", b',"k":', "k", b"}"])
    fields = {"a": columnar.ints([1, 22]), "k": columnar.Field(b'"100%%"')}
    assert layout.fill(fields, 2) == [
        b'{"t%d":1,"again":1,"k":"100%"}',
        b'{"t%d":22,"again":22,"k":"100%"}',
    ]
    constant = columnar.Layout([b"{", "k", b"}"])
    assert constant.fill({"k": columnar.Field(b"%%")}, 2) == [b"{%}", b"{%}"]


# -- batches against single rows -----------------------------------------------------------------

WORKLOAD_TABLES = """
USE test;
CREATE TABLE `t%d` (id BIGINT UNSIGNED PRIMARY KEY, v VARCHAR(20), f FLOAT, d DOUBLE NULL,
  m DECIMAL(12,8), b BLOB, bi VARBINARY(4), e ENUM('a','b'), j JSON);
CREATE TABLE ck (a VARCHAR(8), b INT, note TEXT, PRIMARY KEY (a, b) CLUSTERED);
CREATE TABLE pt (id INT PRIMARY KEY, x INT UNSIGNED, y TINYINT UNSIGNED)
  PARTITION BY HASH (id) PARTITIONS 3;
"""


def workload(statements: int, seed: int = 3) -> list[RowChangedEvent]:
    """Three tables (one named with a percent sign, a clustered composite key, a partitioned
    one), NULLs, strings needing every escape, unsigned values past the signed range, a row
    with handle 0, key-changing updates: enough to split batches into many groups."""
    rng = random.Random(seed)
    strings = ["x", "<&>", 'q"\\', "é\n", "\x01", "\u2028", "%d"]
    lines = [WORKLOAD_TABLES]
    ids: list[int] = []
    for n in range(statements):
        roll = rng.random()
        text = rng.choice(strings)
        if roll < 0.45 or n < 3 or not ids:
            key = [0, 2**64 - 1, 2**63][n] if n < 3 else n + 1  # rid omitted, then negative
            ids.append(key)
            null = rng.random() < 0.3
            lines.append(
                f"INSERT INTO `t%d` VALUES ({key}, {text!r}, {rng.random()}, "
                f"{'NULL' if null else rng.uniform(-1e30, 1e30)}, {rng.randint(0, 10**6) / 10**8}, "
                f"X'{rng.randbytes(3).hex()}', X'ff00', {rng.choice(['NULL', repr('a'), repr('b')])}, "
                f"'{{\"k\": {n}}}');"
            )
        elif roll < 0.6:
            lines.append(f"UPDATE `t%d` SET v = {text!r}, m = m + 1 WHERE id = {rng.choice(ids)};")
        elif roll < 0.7:
            lines.append(f"DELETE FROM `t%d` WHERE id = {ids.pop(rng.randrange(len(ids)))};")
        elif roll < 0.85:
            lines.append(
                f"INSERT INTO ck VALUES ('k{n % 17}', {n % 5}, {text!r}) "
                f"ON DUPLICATE KEY UPDATE note = {text!r}, a = 'z{n}';"
            )
        else:
            lines.append(
                f"REPLACE INTO pt VALUES ({n % 23}, {rng.randint(0, 2**32 - 1)}, {rng.randint(0, 255)});"
            )
    events = Engine().run(parse_statements("\n".join(lines)))
    return [e for e in events if isinstance(e, RowChangedEvent)]


CONFIGS = {
    "default": {},
    "tidb-extension": {"enable_tidb_extension": True},
    "only-updated": {"only_output_updated_columns": True},
    "handle-only-deletes": {"delete_only_output_handle_key_columns": True},
    "content-compatible": {"content_compatible": True},
    "new-arch": {"profile": "new-arch"},
}


@pytest.fixture(scope="module")
def events() -> list[RowChangedEvent]:
    rows = workload(1700)
    assert len(rows) > columnar.CHUNK + 100  # several chunks
    return rows


@pytest.mark.parametrize("options", CONFIGS.values(), ids=CONFIGS.keys())
def test_canal_json_batches_equal_rows_one_at_a_time(
    events: list[RowChangedEvent], options: dict[str, Any]
) -> None:
    config = CodecConfig("canal-json", **options)
    alone = [m for e in events for m in CanalEncoder(config).build_groups([[e]])[0]]
    batched = CanalEncoder(config).build_groups([events[:7], events[7:]])
    assert [len(g) for g in batched] == [7, len(events) - 7]
    assert batched[0] + batched[1] == alone


@pytest.mark.parametrize("options", CONFIGS.values(), ids=CONFIGS.keys())
def test_open_protocol_batches_equal_rows_one_at_a_time(
    events: list[RowChangedEvent], options: dict[str, Any]
) -> None:
    encoder = OpenEncoder(CodecConfig("open-protocol", **options))
    alone = [OpenEncoder(encoder.config).row_key_value(e) for e in events]
    keys, values = encoder.encode_rows(events)
    assert list(zip(keys, values, strict=True)) == alone
    if options.get("profile") != "new-arch":  # classic keys carry Go's int64 of the handle
        assert b'"rid":-1,' in alone[1][0] and b'"rid":-9223372036854775808,' in alone[2][0]
        assert b'"rid"' not in alone[0][0]
