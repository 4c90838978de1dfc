"""The engine: statement kinds, MySQL semantics, and the row changes TiCDC would capture."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pytest

from ticdc_sim.errors import SQLError
from ticdc_sim.generator.capture import captured
from ticdc_sim.generator.sql.engine import Engine, EngineConfig
from ticdc_sim.generator.sql.script import parse_one, parse_statements
from ticdc_sim.golang.sort import go_sort
from ticdc_sim.model.events import DDLEvent, RowChangedEvent


def run(
    sql: str, old_value: bool = True, output_raw_change_event: bool = False, **config: Any
) -> tuple[Engine, list[RowChangedEvent]]:
    """The script's row events as a changefeed of these capture settings gets them."""
    engine = Engine(EngineConfig(**config))
    upstream = engine.run(parse_statements("USE test;\n" + sql, "t.sql"))
    events = captured(upstream, old_value, output_raw_change_event)
    return engine, [e for e in events if isinstance(e, RowChangedEvent)]


def changes(events: list[RowChangedEvent]) -> list[tuple[str, Any, Any]]:
    return [(e.kind, e.pre_columns, e.columns) for e in events]


def table_rows(engine: Engine, name: str) -> list[tuple[Any, ...]]:
    info = engine.catalog.table("test", name)
    return sorted(engine.upstream.tables[info.id].rows.values(), key=repr)


def answer(engine: Engine, sql: str) -> list[tuple[Any, ...]]:
    """The rows a SELECT answers."""
    return [tuple(row) for row in engine.query(parse_one(sql), sql).rows]


# -- transactions and folding ------------------------------------------------------------------


def test_one_commit_ts_per_transaction_and_start_below_commit() -> None:
    _, events = run(
        "CREATE TABLE a (id INT PRIMARY KEY); CREATE TABLE b (id INT PRIMARY KEY);"
        "BEGIN; INSERT INTO b VALUES (1); INSERT INTO a VALUES (1); COMMIT;"
        "INSERT INTO a VALUES (2);"
    )
    first, second, third = events
    assert first.commit_ts == second.commit_ts < third.commit_ts
    assert all(e.start_ts < e.commit_ts for e in events)
    # rows of one commit ts leave per physical table, in table id order
    assert [e.table.name for e in events] == ["a", "b", "a"]


def test_folding_inside_a_transaction() -> None:
    _, events = run(
        "CREATE TABLE t (id INT PRIMARY KEY, v INT);"
        "INSERT INTO t VALUES (1, 1), (2, 2), (3, 3);"
        "BEGIN;"
        "INSERT INTO t VALUES (4, 4); UPDATE t SET v = 40 WHERE id = 4;"  # -> insert of final
        "INSERT INTO t VALUES (5, 5); DELETE FROM t WHERE id = 5;"  # -> nothing
        "UPDATE t SET v = 10 WHERE id = 1; UPDATE t SET v = 11 WHERE id = 1;"  # -> one update
        "DELETE FROM t WHERE id = 2; INSERT INTO t VALUES (2, 22);"  # -> update
        "COMMIT;"
    )
    txn = events[3:]
    assert changes(txn) == [
        ("update", (1, 1), (1, 11)),
        ("update", (2, 2), (2, 22)),
        ("insert", None, (4, 40)),
    ]


def test_sorter_order_delete_update_insert_then_key() -> None:
    _, events = run(
        "CREATE TABLE t (id INT PRIMARY KEY, v INT);"
        "INSERT INTO t VALUES (-5, 0), (7, 0), (3, 0);"
        "BEGIN; INSERT INTO t VALUES (1, 1); UPDATE t SET v = 9 WHERE id = 7;"
        "DELETE FROM t WHERE id = 3; INSERT INTO t VALUES (-9, 1); UPDATE t SET v = 9 WHERE id = -5;"
        "COMMIT;"
    )
    assert [e.row_id for e in events[:3]] == [-5, 3, 7]  # signed key order
    assert [(e.kind, e.row_id) for e in events[3:]] == [
        ("delete", 3),
        ("update", -5),
        ("update", 7),
        ("insert", -9),
        ("insert", 1),
    ]


def test_rollback_and_failed_statements_emit_nothing() -> None:
    engine, events = run(
        "CREATE TABLE t (id INT PRIMARY KEY, v INT NOT NULL);"
        "BEGIN; INSERT INTO t VALUES (1, 1); ROLLBACK;"
        "BEGIN; INSERT INTO t VALUES (2, 2);",  # left open: rolled back at the end
    )
    assert events == []
    assert table_rows(engine, "t") == []
    with pytest.raises(SQLError) as info:
        run(
            "CREATE TABLE t (id INT PRIMARY KEY, v INT NOT NULL);"
            "INSERT INTO t VALUES (1, 1), (2, NULL);"
        )
    assert info.value.code == 1048
    assert str(info.value).startswith("t.sql:2:")


def test_failed_statement_is_undone_alone_with_continue_on_error() -> None:
    engine, events = run(
        "CREATE TABLE t (id INT PRIMARY KEY);"
        "BEGIN; INSERT INTO t VALUES (1); INSERT INTO t VALUES (2), (1); INSERT INTO t VALUES (3);"
        "COMMIT;",
        continue_on_error=True,
    )
    assert [e.columns for e in events] == [(1,), (3,)]
    assert len(engine.errors) == 1 and "ERROR 1062" in engine.errors[0]
    assert "Duplicate entry '1' for key 't.PRIMARY'" in engine.errors[0]


def test_savepoints() -> None:
    _, events = run(
        "CREATE TABLE t (id INT PRIMARY KEY);"
        "BEGIN; INSERT INTO t VALUES (1); SAVEPOINT s1; INSERT INTO t VALUES (2);"
        "SAVEPOINT s2; INSERT INTO t VALUES (3); ROLLBACK TO SAVEPOINT s1;"
        "INSERT INTO t VALUES (4); COMMIT;"
    )
    assert [e.columns for e in events] == [(1,), (4,)]
    with pytest.raises(SQLError, match="SAVEPOINT s2 does not exist"):
        run(
            "CREATE TABLE t (id INT PRIMARY KEY); BEGIN; SAVEPOINT s1; SAVEPOINT s2;"
            "ROLLBACK TO s1; ROLLBACK TO s2;"
        )


def test_ddl_commits_the_open_transaction_and_gets_its_own_ts() -> None:
    engine = Engine()
    events = list(
        engine.run(
            parse_statements(
                "USE test; CREATE TABLE t (id INT PRIMARY KEY); BEGIN; INSERT INTO t VALUES (1);"
                "CREATE TABLE u (id INT); INSERT INTO t VALUES (2);"
            )
        )
    )
    kinds = [type(e).__name__ for e in events]
    assert kinds == ["DDLEvent", "RowChangedEvent", "DDLEvent", "RowChangedEvent"]
    assert events[1].commit_ts < events[2].commit_ts < events[3].commit_ts


def test_rows_committed_by_a_failing_ddl_are_still_emitted() -> None:
    engine = Engine()
    statements = parse_statements(
        "USE test; CREATE TABLE t (id INT PRIMARY KEY); BEGIN; INSERT INTO t VALUES (1);"
        "CREATE TABLE t (id INT);"  # commits the transaction, then fails: the table exists
    )
    events: list[Any] = []
    with pytest.raises(SQLError, match="1050"):
        for event in engine.run(statements):
            events.append(event)
    assert [type(e).__name__ for e in events] == ["DDLEvent", "RowChangedEvent"]
    assert events[1].columns == (1,)


def test_autocommit_off_needs_commit() -> None:
    _, events = run(
        "CREATE TABLE t (id INT PRIMARY KEY); SET autocommit = 0;"
        "INSERT INTO t VALUES (1); INSERT INTO t VALUES (2); COMMIT; INSERT INTO t VALUES (3);"
    )
    assert [e.columns for e in events] == [(1,), (2,)]
    assert events[0].commit_ts == events[1].commit_ts


# -- key changes -------------------------------------------------------------------------------


def test_update_of_a_key_column_is_split_unless_raw() -> None:
    sql = (
        "CREATE TABLE t (id INT PRIMARY KEY, u INT UNIQUE, v INT);"
        "INSERT INTO t VALUES (1, 1, 1);"
        "UPDATE t SET u = 2 WHERE id = 1;"
        "UPDATE t SET v = 2 WHERE id = 1;"
    )
    _, events = run(sql)
    assert changes(events[1:]) == [
        ("delete", (1, 1, 1), None),
        ("insert", None, (1, 2, 1)),
        ("update", (1, 2, 1), (1, 2, 2)),
    ]
    _, raw = run(sql, output_raw_change_event=True)
    assert changes(raw[1:]) == [("update", (1, 1, 1), (1, 2, 1)), ("update", (1, 2, 1), (1, 2, 2))]


def test_go_sort_matches_insertion_sort_for_short_and_sorts_long() -> None:
    items = [(k % 3, i) for i, k in enumerate([2, 0, 1, 2, 0, 1, 0, 2, 1, 1, 0, 2])]
    short = list(items)
    go_sort(short, lambda a, b: a[0] < b[0])
    assert short == sorted(items, key=lambda x: x[0])  # <= 12: insertion sort, stable
    many = [((i * 7) % 3, i) for i in range(200)]
    go_sort(many, lambda a, b: a[0] < b[0])
    assert [k for k, _ in many] == sorted(k for k, _ in many)
    assert sorted(many) == sorted(((i * 7) % 3, i) for i in range(200))


# -- INSERT forms --------------------------------------------------------------------------------


def test_insert_forms_defaults_and_auto_increment() -> None:
    engine, events = run(
        "CREATE TABLE t (id BIGINT AUTO_INCREMENT PRIMARY KEY, name VARCHAR(10) DEFAULT 'x',"
        " n INT NOT NULL DEFAULT 7, c CHAR(4));"
        "INSERT INTO t (name) VALUES ('a');"
        "INSERT INTO t SET name = 'b', n = DEFAULT;"
        "INSERT INTO t VALUES (10, DEFAULT, 1, 'ab  ');"
        "INSERT INTO t (id) VALUES (NULL), (0);"
        "INSERT INTO t (name, n) SELECT name, n + 100 FROM t WHERE id = 10;"
    )
    assert table_rows(engine, "t") == [
        (1, "a", 7, None),
        (10, "x", 1, "ab"),
        (11, "x", 7, None),
        (12, "x", 7, None),
        (13, "x", 101, None),
        (2, "b", 7, None),
    ]
    assert events[-1].columns == (13, "x", 101, None)


def test_on_duplicate_key_update_replace_and_ignore() -> None:
    engine, events = run(
        "CREATE TABLE t (id INT PRIMARY KEY, u VARCHAR(5) UNIQUE, hits INT DEFAULT 0);"
        "INSERT INTO t VALUES (1, 'a', 0), (2, 'b', 0);"
        "INSERT INTO t VALUES (1, 'z', 5) ON DUPLICATE KEY UPDATE hits = hits + VALUES(hits);"
        "INSERT IGNORE INTO t VALUES (3, 'a', 9), (4, 'd', 0);"
        "REPLACE INTO t VALUES (5, 'b', 1);"
    )
    assert table_rows(engine, "t") == [(1, "a", 5), (4, "d", 0), (5, "b", 1)]
    assert changes(events[2:]) == [
        ("update", (1, "a", 0), (1, "a", 5)),
        ("insert", None, (4, "d", 0)),
        ("delete", (2, "b", 0), None),
        ("insert", None, (5, "b", 1)),
    ]


def test_insert_ignore_clips_the_values_of_its_duplicate_key_update() -> None:
    # found by the differential test: MariaDB (and TiDB, whose statement context turns
    # overflow into warnings for the whole INSERT IGNORE) store the nearest bound
    engine, _ = run(
        "CREATE TABLE t (id TINYINT UNSIGNED PRIMARY KEY, v INT);"
        "INSERT INTO t VALUES (254, 1);"
        "INSERT IGNORE INTO t VALUES (254, 2) ON DUPLICATE KEY UPDATE id = id + 2, v = 1e20;"
    )
    assert table_rows(engine, "t") == [(255, 2147483647)]
    with pytest.raises(SQLError, match="ERROR 1264 .*Out of range value for column 'id'"):
        run(
            "CREATE TABLE t (id TINYINT UNSIGNED PRIMARY KEY);"
            "INSERT INTO t VALUES (255);"
            "INSERT INTO t VALUES (255) ON DUPLICATE KEY UPDATE id = id + 1;"
        )


def test_sum_and_avg_keep_every_digit_of_wide_decimals() -> None:
    # found by the differential test: the default 28-digit context raised InvalidOperation
    engine, _ = run(
        "CREATE TABLE t (id DECIMAL(40,1) PRIMARY KEY);"
        "INSERT INTO t VALUES ('1000000000000000000000000000.00'), (0.1), (-5);"
    )
    rows = answer(engine, "SELECT SUM(id), AVG(id) FROM t")
    assert rows == [
        (Decimal("999999999999999999999999995.1"), Decimal("333333333333333333333333331.70000"))
    ]


def test_update_and_delete_with_order_and_limit() -> None:
    engine, _ = run(
        "CREATE TABLE t (id INT PRIMARY KEY, v INT);"
        "INSERT INTO t VALUES (1, 5), (2, 3), (3, 9), (4, 1);"
        "UPDATE t SET v = v * 10 ORDER BY v DESC LIMIT 2;"
        "DELETE FROM t WHERE v < 50 ORDER BY id LIMIT 1;"
    )
    assert table_rows(engine, "t") == [(1, 50), (3, 90), (4, 1)]


def test_assignments_apply_left_to_right() -> None:
    engine, _ = run(
        "CREATE TABLE t (id INT PRIMARY KEY, a INT, b INT); INSERT INTO t VALUES (1, 1, 0);"
        "UPDATE t SET a = a + 1, b = a * 10;"
    )
    assert table_rows(engine, "t") == [(1, 2, 20)]


def test_unchanged_update_writes_nothing() -> None:
    _, events = run(
        "CREATE TABLE t (id INT PRIMARY KEY, v INT); INSERT INTO t VALUES (1, 1);"
        "UPDATE t SET v = 1;"
    )
    assert len(events) == 1


# -- MySQL strict-mode values --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("column", "value", "code"),
    [
        ("TINYINT", "300", 1264),
        ("INT UNSIGNED", "-1", 1264),
        ("VARCHAR(3)", "'abcd'", 1406),
        ("INT", "'12abc'", 1366),
        ("DATE", "'2023-02-30'", 1292),
        ("DECIMAL(4,2)", "100", 1264),
        ("ENUM('a','b')", "'c'", 1265),
        ("INT NOT NULL", "NULL", 1048),
        ("TIMESTAMP", "'1960-01-01 00:00:00'", 1292),
        ("BIT(2)", "8", 1406),
        ("JSON", "'{bad'", 3140),
    ],
)
def test_strict_mode_rejects(column: str, value: str, code: int) -> None:
    with pytest.raises(SQLError) as info:
        run(f"CREATE TABLE t (c {column}); INSERT INTO t VALUES ({value});")
    assert info.value.code == code
    assert "at row 1" in info.value.message or code in (3140,)


def test_value_conversions() -> None:
    engine, events = run(
        "CREATE TABLE t (id INT PRIMARY KEY, d DECIMAL(6,2), f FLOAT, dt DATETIME(3),"
        " ts TIMESTAMP(0) NULL, y YEAR, e ENUM('x','y'), s SET('a','b','c'), b BIT(8),"
        " j JSON, bin BINARY(3), tm TIME, i INT);"
        "SET time_zone = '+08:00';"
        "INSERT INTO t VALUES (1, 1.005, 0.1, '2024-02-29 23:59:59.9996', '2024-01-01 08:00:00',"
        " 24, 2, 'c,a,a', b'101', '{\"b\": [1, 2], \"a\": null}', 'ab', '-1:2:3', 2.5);"
    )
    (event,) = events
    assert event.columns == (
        1,
        Decimal("1.01"),
        0.10000000149011612,
        "2024-03-01 00:00:00.000",
        "2024-01-01 00:00:00",  # stored and emitted in UTC (TiCDC tz), written in +08:00
        2024,
        "y",
        "a,c",
        5,
        '{"a": null, "b": [1, 2]}',
        b"ab\x00",
        "-01:02:03",
        3,
    )


def test_decimal_65_30_keeps_every_digit_through_literals_strings_and_arithmetic() -> None:
    wide = "12345678901234567890123456789012.123456789012345678901234567891"
    _, events = run(
        "CREATE TABLE w (id INT PRIMARY KEY, v DECIMAL(65,30));"
        f"INSERT INTO w VALUES (1, {wide});"
        f"INSERT INTO w VALUES (2, '{wide}');"
        f"INSERT INTO w VALUES (3, {wide}), (4, -{wide});"  # the multi-row batch path
        "UPDATE w SET v = v * 2 - 0.5 + 0 WHERE id = 1;"
        "UPDATE w SET v = v / 4 WHERE id = 3;"  # scale 30 + 4, stored rounded half up
        "UPDATE w SET v = ROUND(v, 29) WHERE id = 2;"
    )
    expected = Decimal(wide)
    assert [e.columns[1] for e in events[:4]] == [
        expected,
        expected,
        expected,
        expected.copy_negate(),
    ]
    assert [e.columns[1] for e in events[4:]] == [
        Decimal("24691357802469135780246913578023.746913578024691357802469135782"),
        Decimal("3086419725308641972530864197253.030864197253086419725308641973"),
        Decimal("12345678901234567890123456789012.123456789012345678901234567890"),
    ]


def test_timestamps_render_in_the_changefeed_time_zone() -> None:
    _, events = run(
        "CREATE TABLE t (id INT PRIMARY KEY, ts TIMESTAMP);"
        "INSERT INTO t VALUES (1, '2024-01-01 00:00:00');",
        time_zone="Asia/Shanghai",
    )
    assert events[0].columns == (1, "2024-01-01 00:00:00")


def test_generated_columns_and_on_update_now() -> None:
    engine, events = run(
        "CREATE TABLE t (id INT PRIMARY KEY, a INT, v INT AS (a * 2) VIRTUAL,"
        " s INT AS (a + 1) STORED, up DATETIME DEFAULT CURRENT_TIMESTAMP"
        " ON UPDATE CURRENT_TIMESTAMP);"
        "INSERT INTO t (id, a) VALUES (1, 5);"
        "UPDATE t SET a = 6;",
        start_ts=449000000000000000,
    )
    first, second = events
    assert first.columns is not None and first.columns[:4] == (1, 5, 10, 6)
    assert second.columns is not None and second.columns[:4] == (1, 6, 12, 7)
    assert first.columns[4] == "2024-04-11 01:31:12"
    with pytest.raises(SQLError) as info:
        run("CREATE TABLE t (a INT, v INT AS (a) VIRTUAL); INSERT INTO t VALUES (1, 2);")
    assert info.value.code == 3105


def test_expressions_follow_mysql() -> None:
    engine, _ = run(
        "CREATE TABLE t (id INT PRIMARY KEY, a VARCHAR(40), b DECIMAL(10,4), c INT);"
        "INSERT INTO t VALUES"
        " (1, CONCAT('x', 1, NULL), 7 / 2, 7 DIV 2),"
        " (2, CONCAT_WS('-', 'a', NULL, 'b'), 1 / 3, -7 % 3),"
        " (3, IF(NULL, 'y', 'n'), COALESCE(NULL, 2.5), CASE 2 WHEN 1 THEN 10 WHEN 2 THEN 20 END),"
        " (4, UPPER(SUBSTRING('hello', 2, 3)), ROUND(2.345, 2), '3' + 4),"
        " (5, DATE_ADD('2024-01-31', INTERVAL 1 MONTH), 0x10, 'abc' = 'ABC '),"
        " (6, LPAD('7', 3, '0'), ABS(-1.5), NULL IS NULL AND (1 IN (NULL, 1)))"
    )
    assert table_rows(engine, "t") == [
        (1, None, Decimal("3.5000"), 3),
        (2, "a-b", Decimal("0.3333"), -1),
        (3, "n", Decimal("2.5000"), 20),
        (4, "ELL", Decimal("2.3500"), 7),
        (5, "2024-02-29", Decimal("16.0000"), 0),
        (6, "007", Decimal("1.5000"), 1),
    ]


def test_ci_collation_compares_case_insensitively() -> None:
    engine, _ = run(
        "CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(10) COLLATE utf8mb4_general_ci);"
        "INSERT INTO t VALUES (1, 'Alice'), (2, 'bob');"
        "DELETE FROM t WHERE name = 'ALICE';"
    )
    assert table_rows(engine, "t") == [(2, "bob")]
    with pytest.raises(SQLError) as info:
        run(
            "CREATE TABLE t (name VARCHAR(10) COLLATE utf8mb4_general_ci UNIQUE);"
            "INSERT INTO t VALUES ('a'), ('A ');"
        )
    assert info.value.code == 1062


# -- tables without int handles, partitions, DDL on data ----------------------------------------


def test_row_ids_and_common_handles() -> None:
    _, events = run(
        "CREATE TABLE n (v INT); INSERT INTO n VALUES (5), (6);"
        "CREATE TABLE c (a VARCHAR(5), b INT, PRIMARY KEY (a, b) CLUSTERED);"
        "INSERT INTO c VALUES ('y', 1), ('x', 2);"
    )
    assert [e.row_id for e in events[:2]] == [1, 2]
    assert [e.columns for e in events[2:]] == [("x", 2), ("y", 1)]  # common handle key order
    assert all(e.row_id == 0 for e in events[2:])


def test_partition_routing_and_moves() -> None:
    engine, events = run(
        "CREATE TABLE p (id INT PRIMARY KEY) PARTITION BY RANGE (id)"
        " (PARTITION p0 VALUES LESS THAN (10), PARTITION p1 VALUES LESS THAN (MAXVALUE));"
        "INSERT INTO p VALUES (1), (20); UPDATE p SET id = 30 WHERE id = 1;"
        "CREATE TABLE h (id INT) PARTITION BY HASH (id) PARTITIONS 3; INSERT INTO h VALUES (7);"
        "CREATE TABLE l (id INT) PARTITION BY LIST (id) (PARTITION a VALUES IN (1, 2));"
    )
    info = engine.catalog.table("test", "p")
    p0, p1 = info.physical_ids
    assert [(e.kind, e.physical_table_id) for e in events[:4]] == [
        ("insert", p0),
        ("insert", p1),
        ("delete", p0),
        ("insert", p1),
    ]
    hashed = engine.catalog.table("test", "h")
    assert events[4].physical_table_id == hashed.physical_ids[7 % 3]
    with pytest.raises(SQLError) as error:
        run(
            "CREATE TABLE l (id INT) PARTITION BY LIST (id) (PARTITION a VALUES IN (1, 2));"
            "INSERT INTO l VALUES (3);"
        )
    assert error.value.code == 1526


def test_ddl_reshapes_and_clears_rows() -> None:
    engine, events = run(
        "CREATE TABLE t (id INT PRIMARY KEY, a INT); INSERT INTO t VALUES (1, 1);"
        "ALTER TABLE t ADD COLUMN b VARCHAR(5) NOT NULL DEFAULT 'z' FIRST;"
        "UPDATE t SET a = 2;"
        "ALTER TABLE t DROP COLUMN b; INSERT INTO t VALUES (2, 2);"
        "TRUNCATE TABLE t; INSERT INTO t VALUES (3, 3);"
    )
    assert changes(events) == [
        ("insert", None, (1, 1)),
        ("update", ("z", 1, 1), ("z", 1, 2)),
        ("insert", None, (2, 2)),
        ("insert", None, (3, 3)),
    ]
    assert table_rows(engine, "t") == [(3, 3)]


def test_deterministic_under_seed() -> None:
    sql = (
        "CREATE TABLE t (id BIGINT AUTO_RANDOM PRIMARY KEY, r DOUBLE, u VARCHAR(36));"
        "INSERT INTO t (r, u) VALUES (RAND(), UUID()), (RAND(), UUID());"
    )
    a = [e.columns for e in run(sql, seed=7)[1]]
    b = [e.columns for e in run(sql, seed=7)[1]]
    c = [e.columns for e in run(sql, seed=8)[1]]
    assert a == b != c


def test_unknown_statements_and_variables() -> None:
    engine, _ = run("SET tidb_foo = 1; SELECT 1; SET @x = 2; SELECT 2; SET tidb_foo = 2;")
    assert [str(w) for w in engine.warnings] == [
        "t.sql:2:1: variable tidb_foo is accepted and has no effect (2 times)",
        "t.sql:2:19: SELECT has no effect on data here; accepted and skipped (2 times)",
    ]
    with pytest.raises(SQLError) as info:
        run("CREATE TABLE t (id INT); INSERT INTO t VALUES (NOSUCHFN(1));")
    assert info.value.code == 1305
    for temporary in ("TEMPORARY", "GLOBAL TEMPORARY"):  # was an internal error
        with pytest.raises(SQLError, match="temporary tables are not simulated") as info:
            run(f"CREATE {temporary} TABLE tt (id INT PRIMARY KEY) ON COMMIT DELETE ROWS;")
        assert info.value.code == 1105


def test_ddl_events_pass_through() -> None:
    engine = Engine()
    events = list(engine.run(parse_statements("CREATE DATABASE d; USE d; CREATE TABLE t (a INT);")))
    assert [type(e) for e in events] == [DDLEvent, DDLEvent]


def _mixed_script(n: int) -> str:
    import random

    rng = random.Random(3)
    lines = ["CREATE TABLE m (id INT PRIMARY KEY, s VARCHAR(20), d DECIMAL(8,2), u INT UNIQUE);"]
    for i in range(n):
        k = rng.randrange(4)
        if k == 0:
            rows = ", ".join(
                f"({i * 10 + j}, 'r{j}''s', {rng.randint(-999, 999) / 10}, NULL)" for j in range(3)
            )
            lines.append(f"INSERT IGNORE INTO m VALUES {rows};")
        elif k == 1:
            lines.append(
                f"UPDATE m SET d = d + 1.5, s = 'x\\ty' WHERE id = {rng.randrange(i * 10 + 1)};"
            )
        elif k == 2:
            lines.append(f"DELETE FROM m WHERE id = {rng.randrange(i * 10 + 1)};")
        else:
            lines.append(
                f'REPLACE INTO m (id, s, u) VALUES ({rng.randrange(i * 10 + 1)}, "q", {i});'
            )
    return "\n".join(lines)


def test_shape_templates_give_the_same_events_as_parsing() -> None:
    from pathlib import Path

    from ticdc_sim.generator.sql.script import split_script

    scripts = [
        p.read_text() for p in sorted((Path(__file__).parent / "oracle_scripts").glob("*.sql"))
    ]
    for text in [_mixed_script(300), *scripts]:
        parsed = list(Engine().run(parse_statements(text)))
        engine = Engine()
        templated = list(engine.run(split_script(text.splitlines(keepends=True))))
        assert templated == parsed
    assert any(plan is not None for plan in engine.plans.values())


def test_without_old_value_updates_are_insert_shaped_and_deletes_carry_the_key() -> None:
    _, events = run(
        "CREATE TABLE t (id INT PRIMARY KEY, v INT); INSERT INTO t VALUES (1, 1), (2, 2);"
        "BEGIN; UPDATE t SET v = 10 WHERE id = 2; INSERT INTO t VALUES (0, 0);"
        "DELETE FROM t WHERE id = 1; COMMIT;",
        old_value=False,
    )
    # sorter order without old values: deletes, then every put by key
    assert changes(events[2:]) == [
        ("delete", (1, None), None),
        ("insert", None, (0, 0)),
        ("insert", None, (2, 10)),
    ]


def test_bulk_multi_row_insert_matches_the_general_path() -> None:
    from ticdc_sim.generator.sql.script import split_script

    text = (
        "CREATE TABLE b (id INT AUTO_INCREMENT PRIMARY KEY, s VARCHAR(8) NOT NULL,"
        " d DECIMAL(5,2), u INT UNIQUE, ts TIMESTAMP NULL, n INT NOT NULL DEFAULT 4);\n"
        "SET time_zone = '+02:00';\n"
        "INSERT INTO b (s, d, u, ts) VALUES ('a', 1.005, 1, '2024-01-01 10:00:00'),"
        " ('it''s', -2, 2, '2024-01-01 11:00:00'), ('c\\\\n', 3e0, 3, '2024-01-01 12:00:00');\n"
        "INSERT IGNORE INTO b (id, s, d, u) VALUES (10, 'x', 0, 1), (11, 'y', 0, 11), (1, 'z', 0, 12);\n"
        "INSERT INTO b (s, u) VALUES ('p', 20), ('q', 21);\n"
    )
    parsed = list(Engine().run(parse_statements(text)))
    engine = Engine()
    fast = list(engine.run(split_script(text.splitlines(keepends=True))))
    assert fast == parsed
    rows = [e.columns for e in fast if isinstance(e, RowChangedEvent)]
    assert rows[0] == (1, "a", Decimal("1.01"), 1, "2024-01-01 08:00:00", 4)
    assert [r[0] for r in rows] == [1, 2, 3, 11, 12, 13]  # IGNORE skipped ids 10 (u=1) and 1
    with pytest.raises(SQLError) as info:
        list(
            Engine().run(
                split_script(
                    ["CREATE TABLE e (a TINYINT);\n", "INSERT INTO e VALUES (1), (2), (300);\n"]
                )
            )
        )
    assert info.value.code == 1264 and "at row 3" in info.value.message


def test_exchange_partition_swaps_rows_and_key_partitions_route_by_crc32() -> None:
    import zlib

    engine, events = run(
        "CREATE TABLE p (a INT PRIMARY KEY) PARTITION BY RANGE (a)"
        " (PARTITION p0 VALUES LESS THAN (10), PARTITION p1 VALUES LESS THAN (20));"
        "CREATE TABLE o (a INT PRIMARY KEY);"
        "INSERT INTO p VALUES (1), (15); INSERT INTO o VALUES (5);"
        "ALTER TABLE p EXCHANGE PARTITION p0 WITH TABLE o;"
        "INSERT INTO p VALUES (1); INSERT INTO o VALUES (5);"
        "CREATE TABLE k (a INT PRIMARY KEY) PARTITION BY KEY (a) PARTITIONS 4;"
        "INSERT INTO k VALUES (5);"
    )
    assert table_rows(engine, "p") == [(1,), (15,), (5,)]
    assert table_rows(engine, "o") == [(1,), (5,)]
    k = engine.catalog.table("test", "k")
    # TiDB ForKeyPruning.LocateKeyPartition: crc32(IEEE) of the datum's string form
    assert events[-1].physical_table_id == k.physical_ids[zlib.crc32(b"5") % 4]


def test_zero_in_date_values_in_permissive_sql_mode() -> None:
    engine, _ = run(
        "SET sql_mode = '';"
        "CREATE TABLE z (d DATE, dt DATETIME(3), t TIME);"
        "INSERT INTO z VALUES ('1000-00-00', '0000-00-00 01:00:00.5', '0000-00-00 01:00:00');"
    )
    assert table_rows(engine, "z") == [("1000-00-00", "0000-00-00 01:00:00.500", "01:00:00")]
    with pytest.raises(SQLError) as info:
        run("CREATE TABLE z (d DATE); INSERT INTO z VALUES ('1000-00-00');")
    assert info.value.code == 1292


def test_a_multi_row_insert_converts_under_the_utf8_check_in_force() -> None:
    # the batch converters of a multi-row INSERT's shape were cached by the sql_mode's names
    # only: after SET tidb_skip_utf8_check = 0 a byte that is not UTF-8 still went in
    from ticdc_sim.generator.sql.script import split_script

    bad = b"\xff".decode("utf-8", "surrogateescape")
    script = (
        "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(8)); SET sql_mode = '';\n"
        f"SET tidb_skip_utf8_check = 1; INSERT INTO t VALUES (1, '{bad}'), (2, 'a');\n"
        f"SET tidb_skip_utf8_check = 0; INSERT INTO t VALUES (3, '{bad}'), (4, 'b');\n"
    )
    engine = Engine()
    events = list(engine.run(split_script(script.splitlines(keepends=True), "t.sql")))
    rows = [e.columns for e in events if isinstance(e, RowChangedEvent)]
    assert rows == [(1, bad), (2, "a"), (3, "?"), (4, "b")]  # non-strict: replaced by '?'


def test_sequences_hand_out_values_per_row_and_per_select() -> None:
    engine, events = run(
        "CREATE SEQUENCE s START WITH 5 INCREMENT BY 2 MAXVALUE 11 NOCACHE CYCLE;"
        "SELECT NEXT VALUE FOR s;"  # takes 5, as in TiDB
        "CREATE TABLE t (id INT PRIMARY KEY, v INT DEFAULT NEXT VALUE FOR s);"
        "INSERT INTO t (id) VALUES (1), (2), (3);"
        "INSERT INTO t VALUES (4, NEXTVAL(s)), (5, LASTVAL(s));"
    )
    assert [e.columns for e in events] == [(1, 7), (2, 9), (3, 11), (4, 1), (5, 1)]
    with pytest.raises(SQLError) as info:
        run("CREATE SEQUENCE s MAXVALUE 2 NOCACHE; SELECT NEXTVAL(s), NEXTVAL(s), NEXTVAL(s);")
    assert info.value.code == 4135


@pytest.mark.parametrize(
    "rows",
    [
        "(1, 'a', 1.5), (2, 'b', -2), (3, 'c', 0)",  # column by column
        "(1, 'a', 1.5), (2, 'it''s', -2), (3, 'c\\\\n', 0)",  # escapes: value by value
        "(3, 'a', 1.5), (2, 'b', -2), (-1, 'c  ', 0.004)",  # unordered and negative keys
    ],
)
def test_column_wise_insert_matches_the_general_path(rows: str) -> None:
    from ticdc_sim.generator.sql.script import split_script

    text = f"CREATE TABLE c (id INT PRIMARY KEY, s CHAR(4), d DECIMAL(4,2));\nINSERT INTO c VALUES {rows};\n"
    parsed = list(Engine().run(parse_statements(text)))
    fast = list(Engine().run(split_script(text.splitlines(keepends=True))))
    assert fast == parsed


@pytest.mark.parametrize(
    ("rows", "code", "where"),
    [
        ("(1, 'a'), (2, 'b'), (1, 'c')", 1062, "Duplicate entry '1'"),
        ("(1, 'a'), (2, 'toolong')", 1406, "at row 2"),
        ("(1, 'a'), (99999999999, 'b')", 1264, "at row 2"),
    ],
)
def test_column_wise_insert_errors_name_the_row(rows: str, code: int, where: str) -> None:
    from ticdc_sim.generator.sql.script import split_script

    text = f"CREATE TABLE c (id INT PRIMARY KEY, s VARCHAR(4));\nINSERT INTO c VALUES {rows};\n"
    engine = Engine()
    with pytest.raises(SQLError) as info:
        list(engine.run(split_script(text.splitlines(keepends=True))))
    assert info.value.code == code and where in str(info.value)
    assert (
        engine.upstream.tables[engine.catalog.table("test", "c").id].rows == {}
    )  # nothing half-written


def test_bulk_inserts_roll_back_to_savepoints_and_fold_with_earlier_writes() -> None:
    from ticdc_sim.generator.sql.script import split_script

    text = (
        "CREATE TABLE c (id INT PRIMARY KEY, s VARCHAR(4));\n"
        "BEGIN;\n"
        "INSERT INTO c VALUES (1, 'a'), (2, 'b');\n"
        "DELETE FROM c WHERE id = 2;\n"
        "SAVEPOINT s;\n"
        "INSERT INTO c VALUES (2, 'x'), (3, 'c');\n"  # key 2 was written before, 3 was not
        "ROLLBACK TO s;\n"
        "INSERT INTO c VALUES (3, 'd'), (4, 'e');\n"
        "COMMIT;\n"
    )
    parsed = list(Engine().run(parse_statements(text)))
    fast = list(Engine().run(split_script(text.splitlines(keepends=True))))
    assert fast == parsed
    assert changes([e for e in fast if isinstance(e, RowChangedEvent)]) == [
        ("insert", None, (1, "a")),
        ("insert", None, (3, "d")),
        ("insert", None, (4, "e")),
    ]


def test_long_statements_pause_the_collector_and_always_restore_it() -> None:
    import gc

    from ticdc_sim.generator.sql.script import split_script

    rows = ", ".join(f"({i}, 'v{i}')" for i in range(8000))  # beyond 64 KiB of text
    create = "CREATE TABLE c (id INT PRIMARY KEY, s VARCHAR(8));\n"
    events = list(Engine().run(split_script([create, f"INSERT INTO c VALUES {rows};\n"])))
    assert len(events) == 8001 and gc.isenabled()
    engine = Engine()
    with pytest.raises(SQLError, match="Duplicate entry '0'"):
        list(engine.run(split_script([create, f"INSERT INTO c VALUES {rows}, (0, 'a');\n"])))
    assert gc.isenabled()
    assert engine.upstream.tables[engine.catalog.table("test", "c").id].rows == {}


def test_last_insert_id_is_the_first_id_of_the_last_insert() -> None:
    engine, events = run(
        "CREATE TABLE a (id INT AUTO_INCREMENT PRIMARY KEY, v INT);"
        "INSERT INTO a (v) VALUES (1), (2), (3);"
        "CREATE TABLE log (id INT PRIMARY KEY, last INT);"
        "INSERT INTO log VALUES (1, LAST_INSERT_ID());"
    )
    assert events[-1].columns == (1, 1)


def test_division_by_zero_fails_only_when_storing_in_strict_mode() -> None:
    engine, _ = run(
        "CREATE TABLE t (id INT PRIMARY KEY, v INT);"
        "INSERT INTO t VALUES (1, 1), (2, 0);"
        "DELETE FROM t WHERE 1 / v IS NULL;"  # WHERE: NULL, no error
    )
    assert table_rows(engine, "t") == [(1, 1)]
    with pytest.raises(SQLError) as info:
        run("CREATE TABLE t (v INT); INSERT INTO t VALUES (1 DIV 0);")
    assert info.value.code == 1365
    engine, _ = run("SET sql_mode = ''; CREATE TABLE t (v INT); INSERT INTO t VALUES (1 / 0);")
    assert table_rows(engine, "t") == [(None,)]


def test_json_objects_keep_keys_in_byte_order() -> None:
    _, (event,) = run(
        "CREATE TABLE j (id INT PRIMARY KEY, d JSON);"
        """INSERT INTO j VALUES (1, '{"bb": 1, "a": [true, null], "c": {"z": 1.5, "y": "x"}}');"""
    )
    assert event.columns == (1, '{"a": [true, null], "bb": 1, "c": {"y": "x", "z": 1.5}}')


def test_values_items_read_columns_set_before_them() -> None:
    engine, _ = run(
        "CREATE TABLE t (a INT, b INT, c INT DEFAULT 7);"
        "INSERT INTO t (a, b) VALUES (1, a + 1), (5, a * c);"
    )
    assert table_rows(engine, "t") == [(1, 2, 7), (5, 35, 7)]


def test_set_names_gbk_rereads_the_script_bytes() -> None:
    from ticdc_sim.generator.sql.script import decode_script, split_script

    script = (
        "SET NAMES gbk;\nCREATE TABLE g (id INT PRIMARY KEY, s VARCHAR(4) CHARACTER SET gbk);\n"
    )
    data = script.encode() + "INSERT INTO g VALUES (1, '中文');\n".encode("gbk")
    text = decode_script(data)  # as a script file is read: UTF-8 with surrogate escapes
    events = list(Engine().run(split_script(text.splitlines(keepends=True))))
    assert events[-1].columns == (1, "中文")


def test_set_accepts_bare_words_and_skips_global_variables() -> None:
    engine, _ = run(
        "SET @@global.tidb_enable_exchange_partition = on; SET character_set_client = utf8;"
        "SET autocommit = OFF; SET autocommit = ON;"
    )
    assert engine.session.autocommit and engine.warnings.messages() == [
        "SET GLOBAL tidb_enable_exchange_partition changes no session of this script;"
        " accepted and skipped"
    ]


def test_set_default_restores_the_servers_value_and_at_at_reads_every_session_variable() -> None:
    # issue 25: `= DEFAULT` was parsed as the value 'DEFAULT' (1231), and
    # @@tidb_skip_utf8_check was unknown (1193)
    engine, _ = run(
        "SET sql_mode = '', autocommit = 0, tidb_skip_utf8_check = 1, time_zone = '+08:00',"
        " tidb_enable_clustered_index = INT_ONLY, character_set_client = gbk;"
    )
    read = (
        "SELECT @@sql_mode, @@autocommit, @@tidb_skip_utf8_check, @@time_zone,"
        " @@tidb_enable_clustered_index, @@character_set_client"
    )
    assert answer(engine, read) == [("", 0, 1, "+08:00", "INT_ONLY", "gbk")]
    for stmt in parse_statements(
        "SET sql_mode = DEFAULT, @@session.autocommit = DEFAULT, tidb_skip_utf8_check = DEFAULT;"
        "SET SESSION time_zone = default, tidb_enable_clustered_index = DEFAULT;"
        "SET character_set_client = DEFAULT;"
    ):
        engine.execute(stmt.expression, stmt.text)
    assert answer(engine, read) == [
        (
            "ERROR_FOR_DIVISION_BY_ZERO,NO_AUTO_CREATE_USER,NO_ENGINE_SUBSTITUTION,NO_ZERO_DATE,"
            "NO_ZERO_IN_DATE,ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES",
            1,
            0,
            "UTC",
            "ON",
            "utf8mb4",
        )
    ]
    # a word that is no value of the variable is still refused
    with pytest.raises(SQLError) as info:
        run("SET autocommit = DEFAULTS;")
    assert (info.value.code, info.value.message) == (
        1231,
        "Variable 'autocommit' can't be set to the value of 'DEFAULTS'",
    )


def test_show_variables_shows_the_session_values() -> None:
    from ticdc_sim.generator.sql import show

    engine, _ = run("SET tidb_skip_utf8_check = ON, autocommit = OFF;")
    text = "SHOW VARIABLES WHERE Variable_name IN ('autocommit', 'tidb_skip_utf8_check')"
    result = show.answer(engine, text, [])
    assert result is not None
    assert result.rows == [("autocommit", "OFF"), ("tidb_skip_utf8_check", "ON")]


def test_variables_without_effect_answer_what_the_session_set() -> None:
    """What a mysqldump file saves and restores (`SET @OLD_UNIQUE_CHECKS=@@UNIQUE_CHECKS,
    UNIQUE_CHECKS=0`): reading unique_checks, foreign_key_checks or sql_notes was 1193, and
    what was set did not read back."""
    engine, _ = run(
        "SET @saved = @@UNIQUE_CHECKS, UNIQUE_CHECKS = 0, foreign_key_checks = OFF;"
        "SET sql_notes = 0, transaction_isolation = 'READ-COMMITTED';"
    )
    assert [engine.variable(n) for n in ("unique_checks", "foreign_key_checks", "sql_notes")] == [
        0,
        0,
        0,
    ]
    assert engine.user_variable("saved") == 1
    assert engine.variable("transaction_isolation") == "READ-COMMITTED"
    assert Engine().variable("foreign_key_checks") == 1  # another session: the defaults
    with pytest.raises(SQLError) as found:
        run("SET unique_checks = 'maybe'")
    assert (found.value.code, found.value.message) == (
        1231,
        "Variable 'unique_checks' can't be set to the value of 'maybe'",
    )


def test_table_locks_and_key_switches_are_accepted_without_effect() -> None:
    """mysqldump's LOCK TABLES, UNLOCK TABLES and ALTER TABLE ... DISABLE/ENABLE KEYS, which
    TiDB takes as no-ops (they were 1105 'statement not supported by the TiDB dialect')."""
    engine, events = run(
        "CREATE TABLE t (id INT PRIMARY KEY);"
        "LOCK TABLES `t` WRITE; /*!40000 ALTER TABLE `t` DISABLE KEYS */;"
        "INSERT INTO t VALUES (1); /*!40000 ALTER TABLE `t` ENABLE KEYS */; UNLOCK TABLES;"
    )
    assert [e.columns for e in events] == [(1,)]
    assert engine.warnings.messages() == [
        f"{kind} has no effect on data here; accepted and skipped"
        for kind in (
            "LOCK TABLES",
            "ALTER TABLE ... DISABLE KEYS",
            "ALTER TABLE ... ENABLE KEYS",
            "UNLOCK TABLES",
        )
    ]


def test_generated_not_null_primary_key() -> None:
    _, events = run(
        "CREATE TABLE t8 (a INT, b VARCHAR(255) AS (CONCAT(a, 'test')) STORED, PRIMARY KEY (b));"
        "INSERT INTO t8 (a) VALUES (2020); UPDATE t8 SET a = 2021;"
    )
    assert changes(events) == [
        ("insert", None, (2020, "2020test")),
        ("delete", (2020, "2020test"), None),
        ("insert", None, (2021, "2021test")),
    ]


def test_expression_indexes_use_hidden_columns_and_create_unique_index_is_unique() -> None:
    engine, events = run(
        "CREATE TABLE t4 (col1 INT, col2 INT, PRIMARY KEY (col1));"
        "CREATE INDEX idx1 ON t4 ((col1 + col2));"
        "CREATE UNIQUE INDEX idx2 ON t4 ((col1 - col2), col1);"
        "INSERT INTO t4 VALUES (1, 2), (3, 4);"
    )
    info = engine.catalog.table("test", "t4")
    assert [c.name for c in info.columns if c.hidden] == ["_V$_idx1_0", "_V$_idx2_0"]
    assert [c.name for c in info.visible_columns] == ["col1", "col2"]
    assert events[0].columns is not None and events[0].columns[:2] == (1, 2)
    with pytest.raises(SQLError) as info_error:
        run(
            "CREATE TABLE u (a INT, b INT); CREATE UNIQUE INDEX ub ON u (b);"
            "INSERT INTO u VALUES (1, 5), (2, 5);"
        )
    assert info_error.value.code == 1062


def test_vector_values_in_tidb_text_form() -> None:
    _, events = run(
        "CREATE TABLE v (id INT PRIMARY KEY, data VECTOR(3));"
        "INSERT INTO v VALUES (1, '[1, 0.1, 1e-7]'), (2, \"[100,-2.5,123456789]\");"
    )
    assert [e.columns for e in events] == [
        (1, "[1,0.1,0.0000001]"),  # TiDB VectorFloat32.String: float32, 'f' format
        (2, "[100,-2.5,123456790]"),
    ]
    with pytest.raises(SQLError, match="does not fit VECTOR"):
        run("CREATE TABLE v (data VECTOR(2)); INSERT INTO v VALUES ('[1,2,3]');")


def test_recover_table_brings_back_its_id_and_rows() -> None:
    engine = Engine()
    events = list(
        engine.run(
            parse_statements(
                "USE test; CREATE TABLE r (id INT PRIMARY KEY); INSERT INTO r VALUES (1);"
                "DROP TABLE r; RECOVER TABLE r; INSERT INTO r VALUES (2);"
            )
        )
    )
    recover = [e for e in events if isinstance(e, DDLEvent)][-1]
    assert recover.action.name == "RECOVER_TABLE" and recover.query == "RECOVER TABLE `test`.`r`"
    assert recover.table_info is not None and recover.table_info.id == events[0].table_info.id
    assert table_rows(engine, "r") == [(1,), (2,)]
    with pytest.raises(SQLError):
        run("RECOVER TABLE nothing;")


def test_flashback_table_brings_a_truncated_table_back_under_a_new_name() -> None:
    # tiflow's ddl_attributes test: TRUNCATE, then FLASHBACK TABLE t TO t_back
    engine = Engine()
    events = list(
        engine.run(
            parse_statements(
                "USE test; CREATE TABLE f (id INT PRIMARY KEY); INSERT INTO f VALUES (1);"
                "TRUNCATE TABLE f; INSERT INTO f VALUES (5);"
                "FLASHBACK TABLE f TO f_back; UPDATE f_back SET id = 2;"
            )
        )
    )
    ddls = [e for e in events if isinstance(e, DDLEvent)]
    flashback = ddls[-1]
    assert flashback.action.name == "RECOVER_TABLE"
    assert flashback.query == "FLASHBACK TABLE `test`.`f` TO `f_back`"
    assert flashback.table_info is not None and flashback.table_info.id == ddls[0].table_info.id
    assert table_rows(engine, "f_back") == [(2,)] and table_rows(engine, "f") == [(5,)]
    update = events[-1]
    assert isinstance(update, RowChangedEvent) and update.table.name == "f_back"
    with pytest.raises(SQLError, match="already exists"):
        run(
            "CREATE TABLE g (id INT PRIMARY KEY); DROP TABLE g; CREATE TABLE g (id INT);"
            "FLASHBACK TABLE g;"
        )


def test_year_from_a_string_is_tidbs_two_digit_year() -> None:
    # TiDB types.AdjustYear after StrToInt: '0018' is 2018 (MySQL and MariaDB refuse it);
    # tiflow's debezium year_test.sql depends on it
    _, events = run(
        "CREATE TABLE y (id INT PRIMARY KEY, y YEAR);"
        "INSERT INTO y VALUES (1, '0018'), (2, '18'), (3, '0'), (4, '0000'), (5, 0), (6, '2155');"
    )
    assert [e.columns[1] for e in events] == [2018, 2018, 2000, 0, 0, 2155]


def test_user_variables_in_set_select_into_and_expressions() -> None:
    engine, events = run(
        "CREATE TABLE u (id INT PRIMARY KEY, v VARCHAR(10), n INT);"
        "SET @x = 10, @Name := 'ab'; SET @x := @x + 1;"
        "INSERT INTO u VALUES (@x, @name, @never);"
        "SELECT id * 2, v INTO @twice, @v FROM u WHERE id = 11;"
        "INSERT INTO u VALUES (@twice, CONCAT(@v, '!'), NULL);"
        "SELECT @n := 5; DO @n := @n + 1;"
        "UPDATE u SET n = @n WHERE id = @x;"
    )
    assert changes(events) == [
        ("insert", None, (11, "ab", None)),
        ("insert", None, (22, "ab!", None)),
        ("update", (11, "ab", None), (11, "ab", 6)),
    ]
    assert engine.session.user_variables == {"x": 11, "name": "ab", "twice": 22, "v": "ab", "n": 6}
    assert engine.warnings.messages() == []
    with pytest.raises(SQLError, match="more than one row") as info:
        run(
            "CREATE TABLE w (id INT PRIMARY KEY); INSERT INTO w VALUES (1), (2);"
            "SELECT id INTO @w FROM w;"
        )
    assert info.value.code == 1172


def test_sequences_advance_through_do_set_and_select() -> None:
    engine, events = run(
        "CREATE SEQUENCE s; CREATE TABLE q (id INT PRIMARY KEY);"
        "DO NEXTVAL(s); SET @v = NEXTVAL(s); SELECT NEXTVAL(s) INTO @w;"
        "INSERT INTO q VALUES (NEXTVAL(s)), (@v), (@w);"
    )
    assert [e.columns for e in events] == [(2,), (3,), (4,)]
    assert engine.warnings.messages() == []


def test_statements_without_effect_warn_once_per_kind() -> None:
    engine, _ = run(
        "ANALYZE TABLE t; ANALYZE TABLE u; SHOW TABLES; DO 1 + 1; SET GLOBAL x = 1;"
        "SET GLOBAL x = 2; SET GLOBAL y = 1; SELECT 1 FROM DUAL;"
    )
    assert [(w.kind, w.count) for w in engine.warnings] == [
        ("ANALYZE", 2),
        ("SHOW", 1),
        ("DO", 1),
        ("SET GLOBAL x", 2),
        ("SET GLOBAL y", 1),
        ("SELECT", 1),
    ]


def test_bulk_insert_events_equal_events_built_by_name() -> None:
    # the column-wise commit builds RowChangedEvent by position (commit.BULK_EVENT_FIELDS)
    from ticdc_sim.generator.sql.commit import BULK_EVENT_FIELDS

    assert RowChangedEvent._fields == BULK_EVENT_FIELDS
    _, events = run(
        "CREATE TABLE b (id INT PRIMARY KEY, v INT); INSERT INTO b VALUES (1, 2), (3, 4);"
    )
    for event in events:
        by_name = RowChangedEvent(
            start_ts=event.start_ts,
            commit_ts=event.commit_ts,
            table=event.table,
            physical_table_id=event.table.id,
            columns=event.columns,
            pre_columns=None,
            row_id=event.columns[0],
        )
        assert event == by_name and event.kind == "insert"


@pytest.mark.parametrize(
    "statements",
    [
        [
            "UPDATE t1 SET a = -5, b = 'x' WHERE id = 7",
            "UPDATE t1 SET a = -12, b = 'y''z' WHERE id = 8",
        ],
        ["INSERT INTO t VALUES (x'0a', 0x1f, b'101', N'n', _utf8mb4 'u', 1.5e3)"] * 1
        + ["INSERT INTO t VALUES (X'', 0xFF, b'', N'm', _utf8mb4 \"v\", .5)"],
        [
            "DELETE FROM `t1` /* it's */ WHERE `c2` = 3 -- 'x\n",
            "DELETE FROM `t1` /* it's */ WHERE `c2` = 44 -- 'x\n",
        ],
        # `.5` after a word is a number to the tokenizer, `5` to the search: not remembered
        ["SELECT a.5, col_2, 5abc FROM t9", "SELECT a.6, col_2, 5abc FROM t9"],
        ["UPDATE t SET v = v - 1 WHERE id = 2", "UPDATE t SET v = v - 10 WHERE id = 3"],
    ],
)
def test_a_known_skeleton_lexes_as_the_tokenizer_does(statements: list[str]) -> None:
    """`lex` reuses the reading of a statement of the same skeleton (shapes._KNOWN); it must
    give exactly what reading each statement token by token gives."""
    from ticdc_sim.generator.sql import shapes

    shapes._KNOWN.clear()
    for text in statements:
        assert shapes.lex(text) == shapes._tokens(text)
    # one skeleton, remembered when the search and the tokenizer agree on it
    assert len(shapes._KNOWN) == (0 if "a.5" in statements[0] else 1)
    assert shapes.lex(statements[-1]) == shapes._tokens(statements[-1])  # from the cache


def test_insert_ignore_clips_a_wide_decimal_to_its_bounds_with_every_digit() -> None:
    """Found by the differential test: the bound of DECIMAL(40,1) has 40 digits, more than
    Python's default context keeps, so IGNORE's clipped value was rounded out of range."""
    nines = "9" * 39
    engine, _ = run(
        "CREATE TABLE w (id INT PRIMARY KEY, d DECIMAL(40,1));"
        f"INSERT IGNORE INTO w VALUES (1, '{nines}.95'), (2, '-{nines}.95'), (3, 1e50);"
    )
    assert [row[1] for row in table_rows(engine, "w")] == [
        Decimal(f"{nines}.9"),
        Decimal(f"-{nines}.9"),
        Decimal(f"{nines}.9"),
    ]


def test_every_literal_form_converts_column_by_column_as_parsed() -> None:
    """100-row INSERTs take the columnar path for hex literals and introduced strings; the
    events must be those of parsing each statement."""
    from ticdc_sim.generator.sql.script import split_script

    rows = ", ".join(
        f"({i}, {'X' + repr(format(i, '02x')) if i % 2 else '0x' + format(i, 'x')}, "
        f"0x{i:x}, {'X' + repr('') if i % 5 == 0 else 'x' + repr(format(i * 7, '04x'))}, "
        f"{'N' if i % 2 else '_utf8mb4 '}'s{i}', _binary 'c{i % 10}', -{i}, b'{i % 2}')"
        for i in range(1, 101)
    )
    text = (
        "USE test;\n"
        "CREATE TABLE h (id INT PRIMARY KEY, vb VARBINARY(8), bn BINARY(3), bl BLOB,"
        " s VARCHAR(8), c CHAR(4), n INT, bit1 BIT(1));\n"
        f"INSERT INTO h VALUES {rows};\n"
    )
    parsed = list(Engine().run(parse_statements(text)))
    columnar = list(Engine().run(split_script(text.splitlines(keepends=True))))
    assert columnar == parsed
    first = [e for e in parsed if isinstance(e, RowChangedEvent)][0].columns
    assert first == (1, b"\x01", b"\x01\x00\x00", b"\x00\x07", "s1", "c1", -1, 1)


def test_every_corpus_statement_runs_or_gets_a_clear_error() -> None:
    """TiCDC's integration-test SQL (../shared/corpus): whatever the engine refuses, it refuses
    with a located MySQL error of its own, never an internal error (a bug)."""
    from pathlib import Path

    from ticdc_sim.generator.sql.script import read_script, split_script

    corpus = Path(__file__).resolve().parents[2] / "shared" / "corpus"
    if not corpus.is_dir():
        pytest.skip("../shared/corpus is absent")
    internal = []
    for script in sorted(corpus.rglob("*.sql")):
        engine = Engine(EngineConfig(continue_on_error=True))
        lines = read_script(script).splitlines(keepends=True)
        for _ in engine.run(split_script(lines, str(script))):
            pass
        internal += [e for e in engine.errors if "internal error" in e]
    assert not internal, "\n".join(internal)


def test_a_partial_index_is_kept_as_an_index() -> None:
    engine, _ = run(
        "CREATE TABLE p (id INT PRIMARY KEY, col INT, col2 INT, KEY k1 (col) WHERE col2 > 100);"
        "ALTER TABLE p ADD INDEX k2 (col2) WHERE col > 1;"
    )
    info = engine.catalog.table("test", "p")
    assert [ix.name for ix in info.indices if not ix.primary] == ["k1", "k2"]


def test_expressions_without_columns_beside_aggregates() -> None:
    # issue 25: refused with 1140 (expressions without columns are allowed beside aggregates
    # under ONLY_FULL_GROUP_BY), which failed a script's replay
    from ticdc_sim.generator.sql.script import split_script

    engine, _ = run("CREATE TABLE t (id INT PRIMARY KEY, v INT); INSERT INTO t VALUES (1, 10);")
    script = (
        "SELECT 1+1, COUNT(*) FROM t; SELECT 'a' AS x, COUNT(*) FROM t;\n"
        "SELECT NOW(), COUNT(*) FROM t; SELECT COUNT(*), 2 * 3 INTO @n, @six FROM t;\n"
    )
    for stmt in split_script(script.splitlines(keepends=True), "agg.sql"):
        assert engine.step(stmt) is None
    assert (engine.session.user_variables["n"], engine.session.user_variables["six"]) == (1, 6)
    assert answer(engine, "SELECT 1+1, COUNT(*), 'a', SUM(v) FROM t WHERE id > 5") == [
        (2, 0, "a", None)  # no row: still one, the constants' values
    ]


@pytest.mark.parametrize(
    ("query", "rows"),
    [
        # TiDB's ONLY_FULL_GROUP_BY check without GROUP BY (tidb_enable_new_only_full_group_by
        # _check OFF): a column pinned by the WHERE clause, or all of a NOT NULL unique key
        ("SELECT v, COUNT(*) FROM t WHERE v = 20", [(20, 1)]),
        ("SELECT v, COUNT(*) FROM t WHERE -20 = v", [(None, 0)]),
        ("SELECT w, COUNT(*) FROM t WHERE u = 100", [(1, 1)]),
        ("SELECT w, COUNT(*) FROM t WHERE (u = x AND x = 200)", [(2, 1)]),
        ("SELECT ANY_VALUE(v), COUNT(*), MIN(v) FROM t", [(10, 2, 10)]),
        # refused: the first column outside the aggregates, as written, and its field
        ("SELECT COUNT(*), V + 1 FROM t", 2),
        ("SELECT T.v, COUNT(*) FROM t WHERE v > 1", 1),
        ("SELECT *, COUNT(*) FROM t", 1),  # `*` is its columns, the first is named
        ("SELECT w, COUNT(*) FROM t WHERE u = 100 OR u = 200", 1),
        ("SELECT w, COUNT(*) FROM t WHERE n = 1", 1),  # n's key takes NULL: no key
        # an integer primary key is TiDB's handle, not one of its indices: no key either
        ("SELECT w, COUNT(*) FROM t WHERE id = 1", 1),
    ],
)
def test_columns_beside_aggregates_as_tidb_checks_them(query: str, rows: Any) -> None:
    engine, _ = run(
        "CREATE TABLE t (id INT PRIMARY KEY, v INT, w INT, u INT NOT NULL, x INT NOT NULL,"
        " n INT, UNIQUE KEY (u), UNIQUE KEY (n));"
        "INSERT INTO t VALUES (1, 10, 1, 100, 100, 1), (2, 20, 2, 200, 200, 2);"
    )
    if isinstance(rows, list):
        assert answer(engine, query) == rows
        return
    with pytest.raises(SQLError) as info:
        answer(engine, query)
    named = query.split()[rows].rstrip(",").split(".")[-1].removesuffix("*") or "id"
    assert (info.value.code, info.value.sqlstate, info.value.message) == (
        8123,
        "HY000",
        f"In aggregated query without GROUP BY, expression #{rows} of SELECT list contains"
        f" nonaggregated column '{named}'; this is incompatible with sql_mode=only_full_group_by",
    )


def test_without_only_full_group_by_a_column_beside_aggregates_is_its_first_rows() -> None:
    engine, _ = run(
        "SET sql_mode = 'STRICT_TRANS_TABLES'; CREATE TABLE t (id INT PRIMARY KEY, v INT);"
        "INSERT INTO t VALUES (2, 20), (1, NULL), (3, 30);"
    )
    # TiDB's firstrow: the first row in key order, NULL too; no row: NULL
    assert answer(engine, "SELECT v, COUNT(v), v + 1 FROM t") == [(None, 2, None)]
    assert answer(engine, "SELECT v, COUNT(*) FROM t WHERE id > 1") == [(20, 2)]
    assert answer(engine, "SELECT v, COUNT(*) FROM t WHERE id > 5") == [(None, 0)]


def test_a_scripts_select_skips_what_the_engine_cannot_answer_but_never_its_own_failure(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # both are code 1105: told apart by class (UnexpectedError), not by message prefix
    from ticdc_sim.generator.sql import engine as engine_module
    from ticdc_sim.generator.sql.script import split_script

    engine, _ = run("CREATE TABLE t (id INT PRIMARY KEY);")
    (unanswerable,) = split_script(["SELECT 1 REGEXP 1 FROM t\n"], "s.sql")
    assert engine.step(unanswerable) is None
    assert (
        engine.warnings.messages()[-1] == "SELECT has no effect on data here; accepted and skipped"
    )

    def broken(*args: Any) -> Any:
        raise KeyError("a bug")

    monkeypatch.setattr(engine_module, "compile_select", broken)
    (stmt,) = split_script(["SELECT id FROM t\n"], "s.sql")
    error = engine.step(stmt)
    assert isinstance(error, engine_module.UnexpectedError)  # kept through with_context
    assert (error.code, error.message) == (
        1105,
        "internal error (KeyError: 'a bug'); please report this statement",
    )


def test_not_like_is_the_negation_of_like() -> None:
    # sqlglot marks NOT LIKE as a LIKE node with `negate`, which was read as LIKE: a DELETE
    # ... WHERE name NOT LIKE deleted the rows it should have kept
    engine, events = run(
        "CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(8));"
        "INSERT INTO t VALUES (1, 'apple'), (2, 'banana'), (3, NULL);"
        "DELETE FROM t WHERE name NOT LIKE 'a%';"
    )
    assert changes(events)[3:] == [("delete", (2, "banana"), None)]
    assert answer(
        engine,
        "SELECT 'abc' NOT LIKE 'a%', 'abc' NOT LIKE 'b%', NULL NOT LIKE 'a',"
        " 'a%' NOT LIKE 'a!%' ESCAPE '!', 'A' NOT LIKE 'a'",
    ) == [(0, 1, None, 0, 1)]  # utf8mb4_bin: case matters


def test_long_flat_chains_neither_recurse_nor_slow_down() -> None:
    # `1+1+...` and ORMs' long ORs are left-deep trees as deep as they are long: 600 terms
    # were a RecursionError, 400 ORs refused as "nested too deeply"
    engine, _ = run("CREATE TABLE t (id INT PRIMARY KEY, v INT);")
    terms = 10_000
    select = (
        f"SELECT {'+'.join(['1'] * terms)}, {' OR '.join(['0'] * terms)},"
        f" {' AND '.join(['1'] * terms)}, 1 {'- 1 ' * terms}, 2 {'* 1 ' * terms}"
    )
    assert answer(engine, select) == [(terms, 0, 1, 1 - terms, 2)]
    assert answer(engine, "SELECT NULL OR 0 OR 1, NULL AND 1 AND 0") == [(1, 0)]
    dates = "SELECT '2024-01-31' + INTERVAL 1 DAY + INTERVAL 2 HOUR - INTERVAL 1 MONTH"
    assert answer(engine, dates) == [("2024-01-01 02:00:00",)]


CHAIN_TERMS = 1_500  # past the interpreter's default recursion limit
# Every binary operator and postfix predicate chained on 1: (what follows `1`, repeated
# CHAIN_TERMS - 1 times, and the chain's value). Each operator's value at three and four
# terms is MariaDB's (test_select_differential.py's test_operator_chains_are_mariadbs).
# BETWEEN is not here: its upper bound is a predicate, so its chains nest to the right.
# Issue 25: comparisons and predicates compiled a level at a time ("nested too deeply" from
# about 150 terms); DIV, MOD, IS NOT NULL and REGEXP were regenerated as SQL for a label.
CHAINS = [
    (" + 1", CHAIN_TERMS),
    (" - 1", 2 - CHAIN_TERMS),
    (" * 1", 1),
    (" / 1", 1),
    (" DIV 1", 1),
    (" % 1", 0),
    (" MOD 1", 0),
    (" & 1", 1),
    (" | 1", 1),
    (" ^ 1", 0),
    (" << 1", 0),
    (" >> 1", 0),
    (" AND 1", 1),
    (" && 1", 1),
    (" OR 1", 1),
    (" || 1", 1),
    (" XOR 1", 0),
    (" = 1", 1),
    (" <> 1", 0),
    (" != 1", 0),
    (" < 1", 0),
    (" <= 1", 1),
    (" > 1", 0),
    (" >= 1", 1),
    (" <=> 1", 1),
    (" LIKE 1", 1),
    (" NOT LIKE 1", 0),
    (" LIKE 1 ESCAPE '!'", 1),
    (" IS NULL", 0),
    (" IS NOT NULL", 1),
    (" IS TRUE", 1),
    (" IS NOT TRUE", 0),
    (" IS FALSE", 0),
    (" IS UNKNOWN", 0),
    (" IS NOT UNKNOWN", 1),
    (" IN (1)", 1),
    (" NOT IN (1)", 0),
]


@pytest.mark.parametrize(("piece", "value"), CHAINS, ids=[p.strip() for p, _ in CHAINS])
def test_every_operator_chains_flat(piece: str, value: int) -> None:
    from ticdc_sim.generator.sql.script import split_script

    chain = "1" + piece * (CHAIN_TERMS - 1)
    engine = Engine()
    script = f"SELECT {chain};\nSELECT {chain} INTO @r;\n"
    for stmt in split_script(script.splitlines(keepends=True), "chain.sql"):
        assert engine.step(stmt) is None  # a script's SELECT is evaluated, then dropped
    assert engine.session.user_variables["r"] == value


def test_errors_in_a_long_chain_quote_it_abridged_not_nested_too_deeply() -> None:
    from ticdc_sim.generator.sql.script import split_script

    chain = "1" + " REGEXP 1" * (CHAIN_TERMS - 1)
    engine = Engine()
    (stmt,) = split_script([f"SELECT {chain};\n"], "chain.sql")
    assert engine.step(stmt) is None  # what the engine cannot answer is skipped
    with pytest.raises(SQLError) as info:
        answer(engine, f"SELECT {chain}")
    assert info.value.code == 1105
    assert info.value.message == "unsupported expression: " + ("REGEXP_LIKE(" * 7)[:80]
    # a value out of range at the top of a long chain quotes it, its far end as `...`
    chain = "0" + " + 0" * CHAIN_TERMS + " + 18446744073709551615 + 1"
    with pytest.raises(SQLError) as info:
        answer(engine, f"SELECT {chain}")
    assert (info.value.code, info.value.message) == (
        1690,
        f"BIGINT UNSIGNED value is out of range in '...{' + 0' * 22} + 18446744073709551615 + 1'",
    )


def test_sleep_moves_the_simulated_clock_on() -> None:
    """SLEEP(n) (DO SLEEP, SELECT SLEEP) waits for nothing: the clock moves on n seconds,
    so a script can pass a changefeed's flush interval or a date boundary at once."""
    from ticdc_sim.model.tso import physical_ms

    engine, rows = run(
        "CREATE TABLE t (id INT PRIMARY KEY, at DATETIME);\n"
        "INSERT INTO t VALUES (1, NOW());\n"
        "DO SLEEP(90);\n"
        "SELECT SLEEP(0.25), SLEEP(0.25);\n"
        "INSERT INTO t VALUES (2, NOW());\n"
    )
    first, second = (physical_ms(e.commit_ts) for e in rows)
    assert 90_500 <= second - first <= 90_520  # the sleeps, and the seeded pause of 1..8 ms
    assert "DO" not in [w.kind for w in engine.warnings]  # DO SLEEP has an effect
    start, later = (dt.datetime.fromisoformat(str(e.columns[1])) for e in rows)  # type: ignore[index]
    assert 90 <= (later - start).total_seconds() <= 91  # NOW() moved on with the clock


@pytest.mark.parametrize(
    ("sql", "mode"),
    [
        ("SELECT SLEEP(-1)", "STRICT_TRANS_TABLES"),
        ("DO SLEEP(NULL)", "STRICT_TRANS_TABLES"),
        ("DO SLEEP(1e30)", ""),
    ],
)
def test_sleep_refuses_what_tidb_refuses(sql: str, mode: str) -> None:
    engine = Engine()
    engine.set_sql_mode(mode)
    with pytest.raises(SQLError) as raised:
        engine.query(parse_one(sql), sql) if sql.startswith("SELECT") else list(
            engine.run(parse_statements(sql, "t.sql"))
        )
    assert (raised.value.code, raised.value.message) == (1210, "Incorrect arguments to sleep")


def test_sleep_of_nothing_is_nothing_outside_strict_mode() -> None:
    engine = Engine()
    engine.set_sql_mode("")
    before = engine.catalog.clock.physical
    assert answer(engine, "SELECT SLEEP(-1), SLEEP(NULL)") == [(0, 0)]
    assert engine.catalog.clock.physical == before
