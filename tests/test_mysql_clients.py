"""Real clients against the MySQL port: the `mariadb` command-line client (a subprocess),
and the SHOW forms they send, answered as TiDB answers them (pkg/executor/show.go)."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterator

import pytest

from support_service import Server
from ticdc_sim.cluster import Cluster
from ticdc_sim.errors import SQLError
from ticdc_sim.generator.sql.script import split_script

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-1[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}")


def _rows(c: Cluster, sql: str) -> list[tuple[object, ...]]:
    session = c.session()
    outcome = None
    for stmt in split_script([sql], "test.sql"):
        outcome, _ = c.run(session, stmt)
        assert outcome.error is None, outcome.error
    assert outcome is not None
    return list(outcome.rows or [])


def test_show_status_answers_tidbs_status_variables() -> None:
    """TiDB's registered status variables (statusvar.go, server/stat.go, ddl/stat.go), sorted;
    Uptime counts the cluster's simulated seconds, ddl_schema_version its schema version."""
    c = Cluster("t", 7, lock_wait_s=1.0, max_txn_rows=10_000)
    before = _rows(c, "SHOW STATUS")
    assert [name for name, _ in before] == [
        "Ssl_cipher", "Ssl_cipher_list", "Ssl_server_not_after", "Ssl_server_not_before",
        "Ssl_verify_mode", "Ssl_version", "Uptime", "ddl_schema_version", "server_id",
    ]  # fmt: skip
    values = dict(before)
    assert values["Ssl_verify_mode"] == "0" and values["Ssl_cipher"] == ""
    assert values["Uptime"] == "0" and values["ddl_schema_version"] == "0"
    assert UUID.fullmatch(str(values["server_id"]))
    c.engine.catalog.clock.advance(5_000)
    _rows(c, "CREATE TABLE t (a INT PRIMARY KEY)")
    after = dict(_rows(c, "SHOW GLOBAL STATUS"))
    assert after["Uptime"] == "5"
    assert after["ddl_schema_version"] == "1"
    assert after["server_id"] == values["server_id"]  # one server, one id
    assert _rows(c, "SHOW SESSION STATUS LIKE 'ssl_c%'") == [
        ("Ssl_cipher", ""),
        ("Ssl_cipher_list", ""),
    ]
    assert _rows(c, "SHOW STATUS WHERE Variable_name = 'ddl_schema_version'") == [
        ("ddl_schema_version", "1")
    ]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    found = Server.start(tmp_path_factory.mktemp("clients"))
    yield found
    log = found.stop()
    assert "Traceback" not in log and "internal error" not in log, log


def _cli(server: Server, *args: str) -> str:
    client = shutil.which("mariadb") or shutil.which("mysql")
    if client is None:
        pytest.skip("no mariadb/mysql command-line client installed")
    command = [client, "-h127.0.0.1", f"-P{server.mysql_port}", "-uroot", "--skip-ssl", *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_mysql_cli_batch_show_forms(server: Server) -> None:
    """`mariadb --batch -e`: the tab-separated text of each SHOW form it prints."""
    setup = (
        "CREATE TABLE test.cli (a INT PRIMARY KEY, b VARCHAR(10) UNIQUE COMMENT 'bee');"
        "INSERT INTO test.cli VALUES (1, 'x')"
    )
    _cli(server, "--batch", "-e", setup)
    out = _cli(
        server, "--batch", "test", "-e",
        "SHOW FULL TABLES; SHOW CREATE TABLE cli; DESCRIBE cli; SHOW INDEX FROM cli;"
        "SHOW STATUS LIKE 'Ssl_c%'; SHOW VARIABLES LIKE 'auto%'",
    )  # fmt: skip
    assert out == (
        "Tables_in_test\tTable_type\ncli\tBASE TABLE\n"
        "Table\tCreate Table\n"
        "cli\tCREATE TABLE `cli` (\\n  `a` int(11) NOT NULL,\\n"
        "  `b` varchar(10) DEFAULT NULL COMMENT 'bee',\\n"
        "  PRIMARY KEY (`a`) /*T![clustered_index] CLUSTERED */,\\n  UNIQUE KEY `b` (`b`)\\n"
        ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin\n"
        "Field\tType\tNull\tKey\tDefault\tExtra\n"
        "a\tint(11)\tNO\tPRI\tNULL\t\nb\tvarchar(10)\tYES\tUNI\tNULL\t\n"
        "Table\tNon_unique\tKey_name\tSeq_in_index\tColumn_name\tCollation\tCardinality\t"
        "Sub_part\tPacked\tNull\tIndex_type\tComment\tIndex_comment\tVisible\tExpression\t"
        "Clustered\tGlobal\n"
        "cli\t0\tPRIMARY\t1\ta\tA\t0\tNULL\tNULL\t\tBTREE\t\t\tYES\tNULL\tYES\tNO\n"
        "cli\t0\tb\t1\tb\tA\t0\tNULL\tNULL\tYES\tBTREE\t\t\tYES\tNULL\tNO\tNO\n"
        "Variable_name\tValue\nSsl_cipher\t\nSsl_cipher_list\t\n"
        "Variable_name\tValue\nauto_increment_increment\t1\nauto_increment_offset\t1\n"
        "autocommit\tON\n"
    )


@pytest.mark.parametrize("driver", ["pymysql", "mysqlconnector"])
def test_sqlalchemy_reflection(server: Server, driver: str) -> None:
    """SQLAlchemy's MySQL dialect reads the catalog from SHOW CREATE TABLE (TiDB's text, with
    its clustered-index comments) and SHOW FULL TABLES: columns, keys, indexes, comments."""
    sa = pytest.importorskip("sqlalchemy")
    engine = sa.create_engine(f"mysql+{driver}://root@127.0.0.1:{server.mysql_port}/test")
    parent, child = f"parent_{driver}", f"child_{driver}"
    try:
        with engine.begin() as conn:
            conn.exec_driver_sql(
                f"CREATE TABLE {parent} (id BIGINT AUTO_INCREMENT, code VARCHAR(20) NOT NULL"
                " DEFAULT 'x' COMMENT 'the code', note TEXT, PRIMARY KEY (id) NONCLUSTERED,"
                " UNIQUE KEY uq_code (code), KEY ix_note (note(10))) COMMENT 'parents'"
            )
            conn.exec_driver_sql(
                f"CREATE TABLE {child} (id INT PRIMARY KEY, a INT, b INT,"
                " s INT AS (a + b) VIRTUAL, KEY ix_ab (a, b))"
            )
        inspector = sa.inspect(engine)
        assert {parent, child} <= set(inspector.get_table_names())
        columns = [
            (c["name"], str(c["type"]), c["nullable"], c["default"], c.get("comment"))
            for c in inspector.get_columns(parent)
        ]
        assert columns == [
            ("id", "BIGINT", False, None, None),
            ("code", "VARCHAR(20)", False, "'x'", "the code"),
            ("note", "TEXT", True, None, None),
        ]
        assert inspector.get_columns(parent)[0]["autoincrement"] is True
        assert inspector.get_columns(child)[3]["computed"] == {
            "sqltext": "(`a`+`b`)",
            "persisted": False,
        }
        assert inspector.get_pk_constraint(parent) == {"constrained_columns": ["id"], "name": None}
        assert inspector.get_indexes(parent) == [
            {
                "name": "ix_note",
                "column_names": ["note"],
                "unique": False,
                "dialect_options": {"mysql_length": {"note": 10}},
            },
            {"name": "uq_code", "column_names": ["code"], "unique": True},
        ]
        assert inspector.get_indexes(child) == [
            {"name": "ix_ab", "column_names": ["a", "b"], "unique": False}
        ]
        assert inspector.get_unique_constraints(parent) == [
            {"name": "uq_code", "column_names": ["code"], "duplicates_index": "uq_code"}
        ]
        assert inspector.get_table_comment(parent) == {"text": "parents"}
        assert inspector.get_table_comment(child) == {"text": None}
        assert inspector.has_table(parent) and not inspector.has_table("no_such_table")
    finally:
        engine.dispose()


def test_variables_clients_set_answer_back_and_isolation_is_validated() -> None:
    """What drivers SET on connect reads back (SELECT @@ and SHOW VARIABLES); the isolation
    level takes TiDB's enum (any case, or its index), 1231 for another value, 8048 for the
    levels TiDB refuses."""
    c = Cluster("t", 7, lock_wait_s=1.0, max_txn_rows=10_000)
    s = c.session()

    def run(sql: str) -> list[tuple[object, ...]]:
        (stmt,) = split_script([sql], "test.sql")
        outcome, _ = c.run(s, stmt)
        if outcome.error is not None:
            raise outcome.error
        return list(outcome.rows or [])

    assert run("SELECT @@max_execution_time, @@net_write_timeout, @@sql_select_limit") == [
        (0, 60, 18446744073709551615)
    ]
    run("SET net_write_timeout = 600")
    run("SET max_execution_time = 1000")
    run("SET SESSION transaction_isolation = 'read-committed'")
    assert run("SELECT @@max_execution_time, @@net_write_timeout, @@transaction_isolation") == [
        (1000, 600, "READ-COMMITTED")
    ]
    assert run("SHOW VARIABLES LIKE 'net_write%'") == [("net_write_timeout", "600")]
    run("SET tx_isolation = 2")
    assert run("SELECT @@tx_isolation") == [("REPEATABLE-READ",)]
    for sql, code, message in [
        (
            "SET transaction_isolation = 'bogus'",
            1231,
            "Variable 'transaction_isolation' can't be set to the value of 'bogus'",
        ),
        (
            "SET tx_isolation = 'serializable'",
            8048,
            "The isolation level 'SERIALIZABLE' is not supported. "
            "Set tidb_skip_isolation_level_check=1 to skip this error",
        ),
    ]:
        with pytest.raises(SQLError) as caught:
            run(sql)
        assert (caught.value.code, caught.value.message) == (code, message)
    # tx_isolation is transaction_isolation's other name: the refused SETs changed neither
    assert run("SELECT @@transaction_isolation, @@tx_isolation") == [
        ("REPEATABLE-READ", "REPEATABLE-READ")
    ]
    run("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED")
    assert run("SELECT @@tx_isolation") == [("READ-COMMITTED",)]
    run("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
    assert run("SELECT @@transaction_isolation, @@tx_isolation") == [
        ("REPEATABLE-READ", "REPEATABLE-READ")
    ]
    with pytest.raises(SQLError) as caught:
        run("SET TRANSACTION ISOLATION LEVEL SERIALIZABLE")
    assert caught.value.code == 8048
    assert caught.value.message.startswith("The isolation level 'SERIALIZABLE' is not")
