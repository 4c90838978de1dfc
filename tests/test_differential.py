"""Randomized differential tests: random schemas and transactions, each statement first run
on MariaDB (those it refuses are dropped), the kept script replayed through the engine, the
changelog applied to a second MariaDB, and every table compared.

Bounded and seeded for CI (`derandomize`: the same cases on every run); a larger budget with
`pytest tests/test_differential.py --differential-examples 2000`, other cases
with `--differential-seed N`. A failure prints the
reduced script. The generator (`support_random_sql`) stays clear of the places where TiDB
and MariaDB differ on purpose.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pymysql
import pytest
from hypothesis import HealthCheck, assume, given, note, reject, seed, settings
from hypothesis import strategies as st

import support_random_sql as rs
from support_mariadb import MariaDB
from support_oracle import DefaultsCollide, TiCDCPanics, check_script


def _accepted(conn: Any, sql: str) -> bool:
    with conn.cursor() as cur:
        try:
            cur.execute(sql)
        except pymysql.MySQLError:
            return False
    return True


def random_script(data: st.DataObject, source: MariaDB) -> tuple[rs.Table, str]:
    """A random table, and a script that creates and changes it, every statement of which
    MariaDB runs."""
    conn = source.connect()
    try:
        source.reset(conn)
        table, create = data.draw(rs.tables("t"), label="table")
        assume(_accepted(conn, create))
        kept = [create]
        for _ in range(data.draw(st.integers(1, 8), label="transactions")):
            for sql in rs.transaction(data.draw, table):
                if _accepted(conn, sql):
                    kept.append(sql)
        with conn.cursor() as cur:
            cur.execute("ROLLBACK")  # a transaction left open by a dropped COMMIT
    finally:
        conn.close()
    return table, "".join(f"{sql};\n" for sql in kept)


@pytest.mark.parametrize(
    "protocol",
    [
        None,
        "canal-json",
        "open-protocol",
        "craft",
        "canal",
        "simple&encoding-format=avro",
        "debezium",
        "maxwell",
        "file:protocol=csv",
        "avro&avro-enable-watermark=true",  # DDL records in TiCDC's test-only mode
    ],
    ids=lambda p: p or "events",
)
def test_random_scripts_rebuild_as_mariadb_runs_them(
    protocol: str | None, mariadb_pair: tuple[MariaDB, MariaDB], request: pytest.FixtureRequest
) -> None:
    source, replica = mariadb_pair

    def case(data: st.DataObject) -> None:
        _, script = random_script(data, source)
        note(script)
        try:
            outcome = check_script(source, replica, script, "random.sql", protocol)
        except TiCDCPanics:
            reject()  # maxwell: TiCDC's encoder panics (an UPDATE of a binary value): no case
        except DefaultsCollide:
            reject()  # debezium: NULLs a UNIQUE key holds, sent as one default, collide
        assert outcome.mismatches == [], script

    run_bounded(request, case, 1 if protocol is None else 2)


def run_bounded(
    request: pytest.FixtureRequest, case: Callable[[st.DataObject], None], share: int
) -> None:
    """`case` over drawn data: 1/`share` of `--differential-examples` cases, CI's fixed ones
    unless `--differential-seed` asks for others."""
    examples: int = request.config.getoption("--differential-examples")
    explore: int | None = request.config.getoption("--differential-seed")
    bounded = settings(
        max_examples=max(1, examples // share),
        derandomize=explore is None,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )(given(st.data())(case))
    (bounded if explore is None else seed(explore)(bounded))()
