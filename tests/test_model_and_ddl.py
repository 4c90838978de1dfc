"""Handle-key choice, TiCDC column flags (research ticdc-open-craft-dispatch.md §4), TSOs,
DDL kinds and located errors."""

import pytest

from ticdc_sim.errors import SQLError
from ticdc_sim.generator.sql.ddl import Catalog
from ticdc_sim.generator.sql.script import parse_statements
from ticdc_sim.model import ActionType, TSOClock, compose_ts
from ticdc_sim.model.tso import logical, physical_ms


def run(sql: str, catalog: Catalog | None = None) -> tuple[Catalog, list]:
    catalog = catalog or Catalog(current_schema="test")
    events = []
    for stmt in parse_statements(sql):
        events += catalog.apply(stmt.expression, stmt.text)
    return catalog, events


@pytest.mark.parametrize(
    ("ddl", "flags", "handle"),
    [
        # research §4.2 worked examples (classic >= v8.0)
        (
            "CREATE TABLE t(id INT PRIMARY KEY, a VARCHAR(10) UNIQUE, b INT NOT NULL, c INT, KEY(c))",
            [11, 80, 1, 97],
            ("id",),
        ),
        (
            "CREATE TABLE t(a VARCHAR(10) PRIMARY KEY /*T![clustered_index] CLUSTERED */, b VARCHAR(10))",
            [10, 64],
            ("a",),
        ),
        (
            "CREATE TABLE t(a BIT(3), y YEAR, u BIGINT UNSIGNED, bl BLOB, tx TEXT)",
            [193, 193, 193, 65, 64],
            (),
        ),
        # composite clustered PK: PK|HK|MK (+Binary for numeric)
        ("CREATE TABLE t(a INT, b VARCHAR(5), PRIMARY KEY (a, b) CLUSTERED)", [43, 42], ("a", "b")),
        # no PK: the NOT NULL unique index with the fewest columns wins (§4.1)
        (
            "CREATE TABLE t(a INT NOT NULL, b INT NOT NULL, c INT, UNIQUE KEY u2(a,b), UNIQUE KEY u1(b))",
            [49, 51, 65],
            ("b",),
        ),
        # a nullable unique key is no handle
        ("CREATE TABLE t(a INT, UNIQUE KEY u(a))", [81], ()),
        # nonclustered int PK: the PK index is the handle index
        ("CREATE TABLE t(id INT PRIMARY KEY NONCLUSTERED, v INT)", [11, 65], ("id",)),
    ],
)
def test_ticdc_flags_and_handle_key(ddl: str, flags: list[int], handle: tuple[str, ...]) -> None:
    catalog, (event,) = run(ddl)
    info = event.table_info
    assert [int(f) for f in info.ticdc_flags()] == flags
    assert info.handle_key_columns == handle


def test_clustered_int_pk_is_the_row_handle() -> None:
    _, (event,) = run("CREATE TABLE t(id BIGINT PRIMARY KEY, v INT)")
    assert event.table_info.pk_is_handle and event.table_info.handle_index_id == -1
    _, (event,) = run("CREATE TABLE t(id BIGINT PRIMARY KEY NONCLUSTERED, v INT)")
    assert not event.table_info.pk_is_handle and event.table_info.handle_index_id == 1


def test_tso_clock_is_deterministic_and_increasing() -> None:
    assert compose_ts(1618639193103, 1) == 424316552636792833
    assert (physical_ms(449000000000000000), logical(449000000000000000)) == (1712799072265, 163840)
    a, b = TSOClock(), TSOClock()
    seq = [a.next() for _ in range(5)]
    assert seq == [b.next() for _ in range(5)]
    assert seq == sorted(set(seq))
    clock = TSOClock.starting_at(449000000000000000)
    assert clock.next() > 449000000000000000


def test_ddl_kinds_ids_and_versions() -> None:
    catalog = Catalog(current_schema="test")
    _, events = run(
        "CREATE DATABASE IF NOT EXISTS d1;"
        "CREATE TABLE d1.t (id INT PRIMARY KEY, v VARCHAR(10), KEY k(v));"
        "ALTER TABLE d1.t ADD COLUMN c INT NOT NULL DEFAULT 5 FIRST;"
        "ALTER TABLE d1.t MODIFY COLUMN v VARCHAR(20);"
        "ALTER TABLE d1.t CHANGE COLUMN c c2 BIGINT;"
        "ALTER TABLE d1.t RENAME COLUMN c2 TO c3;"
        "ALTER TABLE d1.t ALTER COLUMN c3 SET DEFAULT 7;"
        "ALTER TABLE d1.t RENAME INDEX k TO k2;"
        "ALTER TABLE d1.t DROP INDEX k2;"
        "CREATE UNIQUE INDEX u ON d1.t (c3);"
        "DROP INDEX u ON d1.t;"
        "ALTER TABLE d1.t DROP COLUMN c3;"
        "ALTER TABLE d1.t COMMENT = 'x';"
        "TRUNCATE TABLE d1.t;"
        "RENAME TABLE d1.t TO d1.t2;"
        "CREATE TABLE d1.p (id INT) PARTITION BY HASH(id) PARTITIONS 4;"
        "ALTER TABLE d1.p TRUNCATE PARTITION p1;"
        "CREATE VIEW d1.v AS SELECT 1;"
        "DROP VIEW d1.v;"
        "DROP TABLE d1.t2, d1.p;"
        "DROP DATABASE d1;",
        catalog,
    )
    assert [e.action for e in events] == [
        ActionType.CREATE_SCHEMA,
        ActionType.CREATE_TABLE,
        ActionType.ADD_COLUMN,
        ActionType.MODIFY_COLUMN,
        ActionType.MODIFY_COLUMN,
        ActionType.MODIFY_COLUMN,
        ActionType.SET_DEFAULT_VALUE,
        ActionType.RENAME_INDEX,
        ActionType.DROP_INDEX,
        ActionType.ADD_INDEX,
        ActionType.DROP_INDEX,
        ActionType.DROP_COLUMN,
        ActionType.MODIFY_TABLE_COMMENT,
        ActionType.TRUNCATE_TABLE,
        ActionType.RENAME_TABLE,
        ActionType.CREATE_TABLE,
        ActionType.TRUNCATE_TABLE_PARTITION,
        ActionType.CREATE_VIEW,
        ActionType.DROP_VIEW,
        ActionType.DROP_TABLE,
        ActionType.DROP_TABLE,
        ActionType.DROP_SCHEMA,
    ]
    versions = [e.schema_version for e in events]
    assert versions == list(range(1, len(events) + 1))
    commit = [e.commit_ts for e in events]
    assert commit == sorted(set(commit))
    add_col = events[2].table_info
    assert [c.name for c in add_col.columns] == ["c", "id", "v"]
    truncate = events[13]
    assert truncate.table_info.id != truncate.pre_table_info.id
    part = events[16]
    assert part.table_info.physical_ids[1] != part.pre_table_info.physical_ids[1]
    assert part.table_info.physical_ids[0] == part.pre_table_info.physical_ids[0]
    assert events[19].query == "DROP TABLE `d1`.`t2`"


def test_more_ddl_kinds() -> None:
    catalog, events = run(
        "CREATE TABLE IF NOT EXISTS t (id INT NOT NULL, v INT DEFAULT 1, s CHAR(2)) CHARSET=latin1;"
        "CREATE TABLE IF NOT EXISTS t (x INT);"  # exists: no event, as in TiDB
        "CREATE TABLE t_like LIKE t;"
        "ALTER TABLE t ADD PRIMARY KEY (id);"
        "ALTER TABLE t ALTER COLUMN v DROP DEFAULT;"
        "ALTER TABLE t DROP PRIMARY KEY;"
        "ALTER TABLE t ADD UNIQUE KEY uv (v);"
        "ALTER TABLE t CONVERT TO CHARACTER SET utf8mb4;"
        "CREATE TABLE r (id INT) PARTITION BY RANGE (id) (PARTITION p0 VALUES LESS THAN (10));"
        "ALTER TABLE r ADD PARTITION (PARTITION p1 VALUES LESS THAN (20));"
        "ALTER TABLE r DROP PARTITION p0;"
        "DROP DATABASE IF EXISTS nowhere;"  # absent: no event
        "DROP TABLE IF EXISTS nothing;"
    )
    assert [e.action for e in events] == [
        ActionType.CREATE_TABLE,
        ActionType.CREATE_TABLE,
        ActionType.ADD_PRIMARY_KEY,
        ActionType.SET_DEFAULT_VALUE,
        ActionType.DROP_PRIMARY_KEY,
        ActionType.ADD_INDEX,
        ActionType.MODIFY_TABLE_CHARSET_AND_COLLATE,
        ActionType.CREATE_TABLE,
        ActionType.ADD_TABLE_PARTITION,
        ActionType.DROP_TABLE_PARTITION,
    ]
    t = catalog.table("test", "t")
    like = catalog.table("test", "t_like")
    assert like.id != events[0].table_info.id
    assert [c.name for c in like.columns] == ["id", "v", "s"]
    assert (like.columns[1].charset, like.columns[2].charset) == ("binary", "latin1")
    assert t.columns[1].default is None
    assert (t.charset, t.columns[2].charset, t.columns[2].collation) == (
        "utf8mb4",
        "utf8mb4",
        "utf8mb4_bin",
    )
    assert t.columns[1].charset == "binary"
    assert events[2].query == "ALTER TABLE `t` ADD PRIMARY KEY(`id`)"
    assert not events[2].table_info.pk_is_handle  # a PK added later is nonclustered
    assert events[3].query == "ALTER TABLE `t` ALTER COLUMN `v` DROP DEFAULT"
    assert events[6].query == "ALTER TABLE `t` CONVERT TO CHARACTER SET UTF8MB4"
    assert [i.name for i in t.indices] == ["uv"]
    added, dropped = events[8].table_info.partition, events[9].table_info.partition
    assert [p.name for p in added.definitions] == ["p0", "p1"]
    assert [p.name for p in dropped.definitions] == ["p1"]
    assert dropped.definitions[0].id == added.definitions[1].id


def test_column_attributes() -> None:
    _, (event,) = run(
        "CREATE TABLE t ("
        " i INT UNSIGNED ZEROFILL AUTO_INCREMENT PRIMARY KEY,"
        " d DECIMAL, f FLOAT, dt DATETIME(3) DEFAULT CURRENT_TIMESTAMP(3)"
        "   ON UPDATE CURRENT_TIMESTAMP(3),"
        " e ENUM('a', 'b') DEFAULT 'b' COMMENT 'pick one',"
        " s SET('x', 'y'), vb VARBINARY(8), bi BIT,"
        " g INT AS (i + 1) VIRTUAL, gs INT GENERATED ALWAYS AS (i * 2) STORED,"
        " c CHAR"
        ")"
    )
    cols = {c.name: c for c in event.table_info.columns}
    i = cols["i"]
    assert (i.tp, i.flen, i.unsigned, i.auto_increment, i.not_null) == (3, 10, True, True, True)
    assert (cols["d"].tp, cols["d"].flen, cols["d"].decimal) == (246, 10, 0)
    assert (cols["f"].tp, cols["f"].flen, cols["f"].decimal) == (4, 12, -1)
    dt = cols["dt"]
    assert (dt.tp, dt.decimal, dt.on_update_now) == (12, 3, True)
    assert dt.default is not None and dt.default.kind == "now"
    e = cols["e"]
    assert (e.tp, e.elems, e.comment, e.charset) == (247, ("a", "b"), "pick one", "utf8mb4")
    assert e.default is not None and e.default.value == "b"
    assert (cols["s"].tp, cols["s"].elems) == (248, ("x", "y"))
    assert (cols["vb"].tp, cols["vb"].charset, cols["vb"].collation) == (15, "binary", "binary")
    assert (cols["bi"].tp, cols["bi"].flen, cols["bi"].unsigned) == (16, 1, True)
    assert (cols["g"].generated_expr, cols["g"].generated_stored) == ("`i`+1", False)
    assert (cols["gs"].generated_expr, cols["gs"].generated_stored) == ("`i`*2", True)
    assert (cols["c"].tp, cols["c"].flen, cols["c"].collation) == (254, 1, "utf8mb4_bin")
    assert i.charset == "binary"


def test_multi_rename_is_one_event_per_table() -> None:
    _, events = run(
        "CREATE TABLE a (i INT); CREATE TABLE b (i INT); RENAME TABLE a TO a2, b TO b2;"
    )
    assert [(e.action, e.query) for e in events[2:]] == [
        (ActionType.RENAME_TABLE, "RENAME TABLE `test`.`a` TO `test`.`a2`"),
        (ActionType.RENAME_TABLE, "RENAME TABLE `test`.`b` TO `test`.`b2`"),
    ]


@pytest.mark.parametrize(
    ("sql", "code"),
    [
        ("CREATE TABLE t (a INT); CREATE TABLE t (b INT)", 1050),
        ("CREATE TABLE t (a INT, a INT)", 1060),
        ("DROP TABLE nope", 1051),
        ("CREATE TABLE t (a INT); ALTER TABLE t DROP COLUMN zz", 1091),
        ("CREATE TABLE t (a INT, KEY (zz))", 1072),
        ("CREATE TABLE t (id INT AUTO_RANDOM PRIMARY KEY)", 8216),
        ("CREATE TABLE t (a DECIMAL(70, 2))", 1426),
    ],
)
def test_bad_ddl_errors_and_leaves_catalog_unchanged(sql: str, code: int) -> None:
    catalog = Catalog(current_schema="test")
    *good, bad = list(parse_statements(sql))
    for stmt in good:
        catalog.apply(stmt.expression, stmt.text)
    before = {k: dict(v.tables) for k, v in catalog.schemas.items()}
    with pytest.raises(SQLError) as info:
        catalog.apply(bad.expression, bad.text)
    assert info.value.code == code
    assert {k: dict(v.tables) for k, v in catalog.schemas.items()} == before


@pytest.mark.parametrize(
    ("action", "code", "message"),
    [
        ("RENAME INDEX nope TO k3", 1176, "Key 'nope' doesn't exist in table 't'"),
        ("RENAME INDEX k TO k2", 1061, "Duplicate key name 'k2'"),
        ("RENAME COLUMN nope TO c", 1054, "Unknown column 'nope' in 't'"),
        ("RENAME COLUMN a TO b", 1060, "Duplicate column name 'b'"),
        (
            "DROP PRIMARY KEY",
            8200,
            "Unsupported drop primary key when the table is using clustered index",
        ),
    ],
)
def test_alter_errors_name_what_is_missing_or_taken(action: str, code: int, message: str) -> None:
    catalog, _ = run("CREATE TABLE t (id INT PRIMARY KEY, a INT, b INT, KEY k (a), KEY k2 (b))")
    before = catalog.table("test", "t")
    with pytest.raises(SQLError) as caught:
        run(f"ALTER TABLE t {action}", catalog)
    assert (caught.value.code, caught.value.message) == (code, message)
    assert catalog.table("test", "t") is before
    # letter case alone is no clash: the renamed object keeps its place
    run("ALTER TABLE t RENAME INDEX k TO K; ALTER TABLE t RENAME COLUMN a TO A", catalog)
    table = catalog.table("test", "t")
    assert [ix.name for ix in table.indices] == ["K", "k2"]
    assert [c.name for c in table.columns] == ["id", "A", "b"]


def test_syntax_error_is_located() -> None:
    with pytest.raises(SQLError) as info:
        list(parse_statements("CREATE TABLE ok (a INT);\nCREATE TABLE bad (a INT,,);", "x.sql"))
    assert str(info.value).startswith("x.sql:2:")
    assert "CREATE TABLE bad" in str(info.value)


def test_index_visibility_and_foreign_keys() -> None:
    catalog, events = run(
        "CREATE TABLE p (a INT PRIMARY KEY);"
        "CREATE TABLE t (a INT, KEY i (a), CONSTRAINT fk FOREIGN KEY (a) REFERENCES p (a));"
        "ALTER TABLE t ALTER INDEX i INVISIBLE;"
        "ALTER TABLE t DROP FOREIGN KEY fk;"
    )
    assert [e.action for e in events[2:]] == [
        ActionType.ALTER_INDEX_VISIBILITY,
        ActionType.DROP_FOREIGN_KEY,
    ]
    assert events[2].query == "ALTER TABLE `t` ALTER INDEX `i` INVISIBLE"
    table = catalog.table("test", "t")
    assert table.index("i").invisible
    assert table.foreign_keys == ()  # dropped; the index `i` it used stays
    with pytest.raises(SQLError) as caught:
        run("CREATE TABLE t (a INT); ALTER TABLE t DROP FOREIGN KEY fk;")
    assert (caught.value.code, caught.value.message) == (
        1091,
        "Can't DROP 'fk'; check that column/key exists",
    )


@pytest.mark.parametrize(
    ("mode", "pk", "int_handle", "common_handle"),
    [
        # TiDB's default tidb_enable_clustered_index = ON (vardef DefTiDBEnableClusteredIndex)
        (None, "PRIMARY KEY (a)", True, False),
        (None, "PRIMARY KEY (a, b)", False, True),
        (None, "PRIMARY KEY (b)", False, True),
        (None, "PRIMARY KEY (a, b) NONCLUSTERED", False, False),
        (None, "PRIMARY KEY (a) /*T![clustered_index] NONCLUSTERED */", False, False),
        ("INT_ONLY", "PRIMARY KEY (a)", True, False),
        ("INT_ONLY", "PRIMARY KEY (a, b)", False, False),
        ("INT_ONLY", "PRIMARY KEY (a, b) CLUSTERED", False, True),
        ("OFF", "PRIMARY KEY (a)", False, False),
        ("0", "PRIMARY KEY (b)", False, False),
        ("ON", "PRIMARY KEY (b)", False, True),
    ],
)
def test_clustered_index_default_and_session_variable(
    mode: str | None, pk: str, int_handle: bool, common_handle: bool
) -> None:
    from ticdc_sim.generator.sql.engine import Engine

    engine = Engine()
    setting = f"SET tidb_enable_clustered_index = '{mode}';" if mode else ""
    list(engine.run(parse_statements(f"{setting}CREATE TABLE t (a INT, b VARCHAR(8), {pk});")))
    info = engine.catalog.table("test", "t")
    assert (info.pk_is_handle, info.is_common_handle) == (int_handle, common_handle)


def test_clustered_index_variable_rejects_other_values() -> None:
    from ticdc_sim.generator.sql.engine import Engine

    with pytest.raises(SQLError, match="can't be set to the value of 'maybe'"):
        list(Engine().run(parse_statements("SET tidb_enable_clustered_index = maybe;")))


def test_tso_logical_parts_vary_and_the_ts_dispatcher_spreads_rows() -> None:
    # one session's TSOs skip what other PD clients took; tiflow partition/ts.go: ts % N
    from ticdc_sim.generator.sql.engine import Engine, EngineConfig

    script = "CREATE TABLE t (id INT PRIMARY KEY);" + "".join(
        f"INSERT INTO t VALUES ({i});" for i in range(200)
    )
    events = [e for e in Engine().run(parse_statements(script)) if hasattr(e, "row_id")]
    commits = [e.commit_ts for e in events]
    assert commits == sorted(set(commits))
    assert len({logical(ts) for ts in commits}) > 20
    assert {ts % 4 for ts in commits} == {0, 1, 2, 3}
    gaps = {physical_ms(b) - physical_ms(a) for a, b in zip(commits, commits[1:], strict=False)}
    assert gaps <= set(range(1, 9)) and len(gaps) > 3  # a few simulated ms apart
    again = [e.commit_ts for e in Engine().run(parse_statements(script)) if hasattr(e, "row_id")]
    other = Engine(EngineConfig(seed=1)).run(parse_statements(script))
    assert again == commits != [e.commit_ts for e in other if hasattr(e, "row_id")]


@pytest.mark.parametrize(
    "drop",
    [
        "ALTER TABLE {t} DROP PRIMARY KEY",
        "ALTER TABLE {t} DROP INDEX `PRIMARY`",
        "DROP INDEX `PRIMARY` ON {t}",
    ],
)
@pytest.mark.parametrize("key", ["a INT PRIMARY KEY", "a VARCHAR(8), PRIMARY KEY (a) CLUSTERED"])
def test_a_clustered_primary_key_is_not_dropped(drop: str, key: str) -> None:
    catalog, _ = run(f"CREATE TABLE t ({key})")
    with pytest.raises(SQLError) as info:
        run(drop.format(t="t"), catalog)
    assert (info.value.code, str(info.value)) == (
        8200,
        "ERROR 8200 (HY000): Unsupported drop primary key when the table is using clustered index",
    )
    # TiDB drops a nonclustered primary key (its rows keep their _tidb_rowid handles)
    catalog, _ = run("CREATE TABLE n (a INT, PRIMARY KEY (a) NONCLUSTERED)")
    _, events = run(drop.format(t="n"), catalog)
    assert [e.action for e in events] == [ActionType.DROP_PRIMARY_KEY]
