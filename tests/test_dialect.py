"""The TiDB dialect: statements TiDB accepts parse into structured nodes and round-trip."""

from pathlib import Path

import pytest
from sqlglot import exp

from ticdc_sim.errors import SQLError
from ticdc_sim.generator.sql.dialect import TiDB
from ticdc_sim.generator.sql.engine import Engine
from ticdc_sim.generator.sql.script import (
    parse_one,
    parse_statements,
    read_script,
    split_script,
    split_tokens,
)

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"

IDENTITY = [
    "CREATE TABLE t (id BIGINT AUTO_RANDOM(5) PRIMARY KEY)",
    "CREATE TABLE t (id BIGINT AUTO_RANDOM(5, 54) PRIMARY KEY CLUSTERED)",
    "CREATE TABLE t (a INT, b INT, PRIMARY KEY (a, b) NONCLUSTERED)",
    "CREATE TABLE t (a FLOAT(5, 2) UNSIGNED ZEROFILL)",
    "CREATE TABLE t (a INT) PARTITION BY HASH (a) PARTITIONS 4",
    "CREATE TABLE t (a INT) PARTITION BY RANGE (a) (PARTITION p0 VALUES LESS THAN (10), PARTITION p1 VALUES LESS THAN (MAXVALUE))",
    "CREATE TABLE t (a INT) PARTITION BY LIST COLUMNS (a) (PARTITION p0 VALUES IN (1, 2))",
    "RENAME TABLE a TO b, c.d TO e.f",
    "REPLACE INTO t (a) VALUES (1)",
    "ALTER TABLE t ADD PARTITION (PARTITION p2 VALUES LESS THAN (30))",
    "ALTER TABLE t DROP PARTITION p1, p2",
    "ALTER TABLE t TRUNCATE PARTITION p3",
    "ALTER TABLE t EXCHANGE PARTITION p3 WITH TABLE t2",
    "ALTER TABLE t REORGANIZE PARTITION p0, p1 INTO (PARTITION p0 VALUES LESS THAN (5))",
    "ALTER TABLE t REMOVE PARTITIONING",
    "ALTER TABLE t SET TIFLASH REPLICA 1",
    "DO SLEEP(1)",
    "ADMIN SET BDR ROLE PRIMARY",
    "RECOVER TABLE t",
    "FLASHBACK TABLE t TO t2",
    "CREATE RESOURCE GROUP rg1 RU_PER_SEC = 1000",
    "SELECT NEXT VALUE FOR seq0",
]


@pytest.mark.parametrize("sql", IDENTITY)
def test_identity(sql: str) -> None:
    assert parse_one(sql).sql(dialect=TiDB) == sql


def test_tidb_executable_comments_keep_their_meaning() -> None:
    a = parse_one("CREATE TABLE t (id INT PRIMARY KEY /*T![clustered_index] NONCLUSTERED */)")
    b = parse_one("CREATE TABLE t (id INT PRIMARY KEY NONCLUSTERED)")
    assert a == b
    c = parse_one("CREATE TABLE t (id INT) /*!90000 SHARD_ROW_ID_BITS=4 */")
    assert c.find(exp.Property).this.name == "SHARD_ROW_ID_BITS"
    # an unknown feature id stays a comment, as in TiDB
    d = parse_one("CREATE TABLE t (id INT) /*T![no_such_feature] SHARD_ROW_ID_BITS=4 */")
    assert d.find(exp.Property) is None


def test_between_binds_a_following_predicate_to_its_upper_bound() -> None:
    # TiDB parser.y: BitExpr BETWEEN BitExpr AND PredicateExpr (MariaDB answers alike:
    # test_select_differential.py); sqlglot chained the second BETWEEN on the first
    chained = parse_one("SELECT 1 BETWEEN 0 AND 2 BETWEEN 0 AND 1").expressions[0]
    assert chained == exp.Between(
        this=exp.Literal.number(1),
        low=exp.Literal.number(0),
        high=exp.Between(
            this=exp.Literal.number(2), low=exp.Literal.number(0), high=exp.Literal.number(1)
        ),
    )
    # and is written back with the parentheses that keep it so
    assert chained.sql(dialect=TiDB) == "1 BETWEEN 0 AND (2 BETWEEN 0 AND 1)"
    both = "SELECT a BETWEEN 1 AND 2 AND b BETWEEN 3 AND 4"  # AND after a bound: a conjunction
    assert parse_one(both).sql(dialect=TiDB) == both


def test_corpus_parses_without_errors_or_commands(capsys: pytest.CaptureFixture[str]) -> None:
    if not CORPUS.exists():
        pytest.skip("../shared/corpus is absent")
    files = sorted(p for p in CORPUS.rglob("*") if p.suffix in (".sql", ".ddl"))
    statements = 0
    failures: list[str] = []
    for path in files:
        text = read_script(path)
        for _, stmt_text in split_tokens(text, str(path)):
            statements += 1
            try:
                (stmt,) = parse_statements(stmt_text, str(path))
                # generation reaches a fixpoint: what we print parses back to the same SQL
                # (plain comments are not part of the statement; sqlglot moves them around)
                printed = stmt.expression.sql(dialect=TiDB, comments=False)
                assert parse_one(printed).sql(dialect=TiDB, comments=False) == printed
                assert not isinstance(stmt.expression, exp.Command), printed
            except Exception as e:
                failures.append(f"{path.name}: {stmt_text.strip()[:120]!r}: {e}")
    with capsys.disabled():
        print(
            f"\ncorpus: {len(files)} files, {statements} statements, "
            f"{len(failures)} parse errors or Commands"
        )
    assert failures == [], f"{len(failures)} of {statements} statements failed"
    assert statements > 3000


@pytest.mark.parametrize(
    ("expression", "value"), [("~~1", 1), ("~~~1", 18446744073709551614), ("~ ~ 5", 5)]
)
def test_operators_read_as_tidbs_lexer_reads_them(expression: str, value: int) -> None:
    # issue 25: `~~` was Postgres' LIKE, a syntax error (1064)
    engine = Engine()
    (raw,) = split_script([f"SELECT {expression} INTO @v\n"], "ops.sql")
    assert engine.step(raw) is None
    assert engine.session.user_variables["v"] == value
    # `#` starts a comment, `#>` too (sqlglot read it as a JSON path operator)
    assert parse_one("SELECT 1 #> 2\n, 3") == parse_one("SELECT 1, 3")


@pytest.mark.parametrize(
    ("expression", "near"),
    [("1 == 1", "= 1"), ("1::int", "::int"), ("1 -|- 1", "|- 1"), ("1 ~* 2", "~* 2")],
)
def test_other_dialects_operators_are_syntax_errors(expression: str, near: str) -> None:
    with pytest.raises(SQLError) as error:
        list(parse_statements(f"SELECT {expression}", "ops.sql"))
    column = len("SELECT ") + expression.index(near) + 1
    assert (error.value.code, error.value.location.col if error.value.location else None) == (
        1064,
        column,
    )
    assert f'line 1 column {column} near "{near}"' in error.value.message
