"""Queries answered by a cluster and by MariaDB over the same data, for the tests of what the
engine reads (joins, grouping, subqueries): a cluster loaded with a script, its answer to one
statement (its error raised), and MariaDB's answers after the same script."""

from __future__ import annotations

from typing import Any

from support_mariadb import MariaDB
from ticdc_sim.cluster import Cluster

Row = tuple[Any, ...]


def loaded(data: str) -> Cluster:
    """A cluster that ran `data` (statements separated by `;`) without an error."""
    found = Cluster("t", 7, lock_wait_s=1, max_txn_rows=1000)
    assert not found.execute(data).failed
    return found


def ask(cluster: Cluster, sql: str) -> list[Row]:
    """The rows the statement answers; its error, raised."""
    outcome = cluster.execute(sql).outcomes[0]
    if outcome.error is not None:
        raise outcome.error
    return [tuple(r) for r in outcome.rows or []]


def mariadb_answers(mariadb: MariaDB, data: str, sqls: list[str]) -> list[list[Row]]:
    """MariaDB's rows for each statement of `sqls`, run in order after `data`."""
    conn = mariadb.connect()
    try:
        mariadb.reset(conn)
        with conn.cursor() as cur:
            for statement in filter(str.strip, data.split(";")):
                cur.execute(statement)
            answers = []
            for sql in sqls:
                cur.execute(sql)
                answers.append([tuple(r) for r in cur.fetchall()])
            return answers
    finally:
        conn.close()


def refused(cluster: Cluster, sql: str) -> tuple[int, str]:
    """The code and message of the error the statement answers (it must fail)."""
    outcome = cluster.execute(sql).outcomes[0]
    assert outcome.error is not None, f"{sql}: answered {outcome.rows}"
    return outcome.error.code, outcome.error.message
