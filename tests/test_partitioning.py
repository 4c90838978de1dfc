"""Partition and topic dispatch against TiCDC's own test vectors (tests/vectors/dispatch.json)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ticdc_sim.errors import ConfigError
from ticdc_sim.generator.sql.engine import Engine
from ticdc_sim.generator.sql.script import parse_statements
from ticdc_sim.model.events import RowChangedEvent
from ticdc_sim.partitioning.filter import TableFilter
from ticdc_sim.partitioning.hash import position_inertia
from ticdc_sim.partitioning.router import DispatchRule, EventRouter
from ticdc_sim.partitioning.topic import TopicDispatcher, substitute

VECTORS = json.loads((Path(__file__).parent / "vectors" / "dispatch.json").read_text())


def row_events(sql: str, schema: str = "test") -> dict[str, list[RowChangedEvent]]:
    engine = Engine()
    script = f"CREATE DATABASE IF NOT EXISTS `{schema}`; USE `{schema}`; {sql}"
    out: dict[str, list[RowChangedEvent]] = {}
    for event in engine.run(parse_statements(script)):
        if isinstance(event, RowChangedEvent):
            out.setdefault(event.table.name, []).append(event)
    return out


def router_for(rule: dict[str, Any], **kwargs: Any) -> EventRouter:
    return EventRouter([_rule({"matcher": ["*.*"], **rule})], default_topic="t", **kwargs)


def _rule(spec: dict[str, Any]) -> DispatchRule:
    return DispatchRule(
        matcher=tuple(spec["matcher"]),
        partition=spec.get("partition", "default"),
        index=spec.get("index", ""),
        columns=tuple(spec.get("columns", ())),
        topic=spec.get("topic", ""),
    )


@pytest.mark.parametrize("case", VECTORS["hash"], ids=lambda c: c["sum32"])
def test_position_inertia(case: dict[str, Any]) -> None:
    writes = [[part.encode() for part in parts] for parts in case["writes"]]
    assert position_inertia(writes) == int(case["sum32"], 16)
    assert position_inertia(reversed(writes)) == int(case["sum32"], 16)  # write order is free


@pytest.mark.parametrize("case", VECTORS["rows"], ids=lambda c: c["id"])
def test_row_partitions(case: dict[str, Any]) -> None:
    router = router_for(case["rule"])
    if "rows" in case:
        for table, values, partition, key in case["rows"]:
            (event,) = row_events(f"{case['ddl']}; INSERT INTO `{table}` VALUES {values};")[table]
            got, got_key = router.partition(event, case["partitions"])
            assert got == partition, (table, values)
            if key is not None:
                assert got_key == key
        return
    for table, values, sum32 in case["rows_by_n"]:
        (event,) = row_events(f"{case['ddl']}; INSERT INTO `{table}` VALUES {values};")[table]
        expected = VECTORS["partitions_by_n_expected"][sum32]
        got = [router.partition(event, n) for n in VECTORS["partitions_by_n"]]
        assert [p for p, _ in got] == expected, (table, values)
        assert {k for _, k in got} == {sum32}


def test_ts_dispatcher_uses_the_commit_ts() -> None:
    case = VECTORS["ts"]
    tables = row_events(
        "CREATE TABLE t1 (a INT PRIMARY KEY); CREATE TABLE t2 (a INT PRIMARY KEY);"
        " INSERT INTO t1 VALUES (1); INSERT INTO t2 VALUES (1);"
    )
    router = router_for({"partition": "ts"})
    for table, ts, partition in case["rows"]:
        (event,) = tables[table]
        got = router.partition(event._replace(start_ts=0, commit_ts=ts), case["partitions"])
        assert got == (partition, str(ts))


def test_new_architecture_skips_null_values_in_index_value() -> None:
    (event,) = row_events(
        "CREATE TABLE t1 (id INT, UNIQUE KEY u (id)); INSERT INTO t1 VALUES (NULL);"
    )["t1"]
    classic = router_for({"partition": "index-value", "index": "u"}).partition(event, 16)
    new_arch = router_for({"partition": "index-value", "index": "u"}, profile="new-arch")
    table_only = router_for({"partition": "table"}).partition(event, 16)
    assert classic[1] == "3059247248"
    assert new_arch.partition(event, 16)[0] == table_only[0]  # only (schema, table) hashed


def test_dispatcher_errors_name_the_table_and_the_problem() -> None:
    (event,) = row_events(
        "CREATE TABLE t1 (a INT PRIMARY KEY, v INT AS (a + 1)); INSERT INTO t1 (a) VALUES (1);"
    )["t1"]
    with pytest.raises(ConfigError, match="has no index 'nope'"):
        router_for({"partition": "index-value", "index": "nope"}).partition(event, 4)
    with pytest.raises(ConfigError, match="columns not found in test.t1: missing"):
        router_for({"partition": "columns", "columns": ["a", "missing"]}).partition(event, 4)
    with pytest.raises(ConfigError, match="virtual generated columns in test.t1: v"):
        router_for({"partition": "columns", "columns": ["v"]}).partition(event, 4)
    with pytest.raises(ConfigError, match="needs `columns"):
        router_for({"partition": "columns"})


def test_unknown_partition_dispatcher_falls_back_to_table_with_a_warning() -> None:
    router = router_for({"partition": "nonsense"})
    assert "nonsense" in router.warnings.messages()[0]


@pytest.mark.parametrize("case", VECTORS["topics"]["cases"], ids=lambda c: c[0] + "|" + c[1])
def test_topic_expressions(case: list[str]) -> None:
    expression, schema, table, topic = case
    assert TopicDispatcher(expression, "default").topic(schema, table) == topic
    assert substitute(expression, schema, table) == topic


@pytest.mark.parametrize("expression", VECTORS["topics"]["invalid"])
def test_invalid_topic_expressions_are_rejected(expression: str) -> None:
    with pytest.raises(ConfigError, match="invalid topic expression"):
        TopicDispatcher(expression, "default")


def event_router() -> EventRouter:
    spec = VECTORS["router"]
    return EventRouter([_rule(r) for r in spec["rules"]], default_topic=spec["default_topic"])


def test_router_topics_and_active_topics() -> None:
    router = event_router()
    spec = VECTORS["router"]
    for schema, table, topic in spec["row_topics"]:
        assert router.topic(schema, table) == topic, (schema, table)
    active = spec["active_topics"]
    assert router.active_topics(map(tuple, active["tables"])) == active["topics"]


@pytest.mark.parametrize("case", VECTORS["router"]["partitions"], ids=lambda c: c["schema"])
def test_router_partitions(case: dict[str, Any]) -> None:
    (event,) = row_events(
        f"{case['ddl']}; INSERT INTO `table` VALUES {case['row']};", case["schema"]
    )["table"]
    if "commit_ts" in case:
        event = event._replace(start_ts=0, commit_ts=case["commit_ts"])
    assert event_router().partition(event, case["partitions"])[0] == case["partition"]


def test_ddl_topics() -> None:
    from ticdc_sim.generator.sql.ddl import Catalog

    router = EventRouter(
        [
            _rule({"matcher": ["test.*"], "partition": "rowid", "topic": "hello_{schema}"}),
            _rule({"matcher": ["*.*", "!*.test"], "partition": "ts", "topic": "{schema}_{table}"}),
        ],
        default_topic="test",
    )
    catalog = Catalog()
    topics = []
    for sql in [
        "CREATE DATABASE test2",
        "CREATE TABLE test.tb1 (a INT)",
        "DROP TABLE test.tb1",
        "CREATE DATABASE test1",
        "CREATE TABLE test1.tb1 (a INT)",
        "ALTER TABLE test1.tb1 ADD COLUMN b INT",
        "RENAME TABLE test1.tb1 TO test1.tb2",
        "DROP DATABASE test2",
    ]:
        (stmt,) = parse_statements(sql)
        topics += [router.ddl_topic(e) for e in catalog.apply(stmt.expression, sql)]
    assert topics == [
        "test",
        "hello_test",
        "hello_test",
        "test",
        "test1_tb1",
        "test1_tb1",
        "test1_tb1",
        "test",
    ]


@pytest.mark.parametrize(
    ("rules", "schema", "table", "matched"),
    [
        (["*.*"], "Db", "T", True),
        (["db.t?"], "DB", "T1", True),  # case-insensitive by default
        (["db.t?"], "db", "t12", False),
        (["*.*", "!*.test"], "sbs", "test", False),  # the last matching rule decides
        (["!db.*", "db.keep"], "db", "keep", True),
        (["db.t[0-9]"], "db", "t5", True),
        (["db.t[!0-9]"], "db", "t5", False),
        (["`db.x`.t"], "db.x", "t", True),
        (["db./^t_\\d+$/"], "db", "t_12", True),
        (["db.t\\*"], "db", "t*", True),
        (["db.t\\*"], "db", "tx", False),
    ],
)
def test_table_filter(rules: list[str], schema: str, table: str, matched: bool) -> None:
    assert TableFilter(rules).match(schema, table) is matched


def test_table_filter_case_sensitive_and_errors() -> None:
    assert not TableFilter(["db.T"], case_sensitive=True).match("db", "t")
    for bad in ["db", "db.t[a", "`db.t", "db.t t"]:
        with pytest.raises(ConfigError, match="table filter"):
            TableFilter([bad])
