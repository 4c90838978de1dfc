"""The consumer (canal_consumer.py) against a simulated TiCDC: every test runs a workload on a
simulated upstream, feeds the records its changefeed sent to the consumer, and ends with the
checker: the downstream must equal the upstream. Under TiCDC's at-least-once faults too,
where a naive consumer is caught."""

from __future__ import annotations

import json
import random
import sqlite3
import uuid
from collections import deque
from collections.abc import Iterable, Iterator
from contextlib import closing
from itertools import groupby
from typing import Any

import pytest
from canal_consumer import Consumer, ConsumerError, column_value, consume_kafka
from downstream import SQLite, connect

from ticdc_sim import Record, Simulator

# three partitions, rows spread by their key (TiCDC's index-value dispatcher): a table's rows
# go to every partition, its DDL to partition 0, a WATERMARK to each
FEED = "memory://?protocol=canal-json&enable-tidb-extension=true&partition-num=3"
BY_KEY = {"sink": {"dispatchers": [{"matcher": ["*.*"], "partition": "index-value"}]}}

SCHEMA = """
CREATE DATABASE shop;
USE shop;
CREATE TABLE accounts (
    id INT PRIMARY KEY,
    owner VARCHAR(20) NOT NULL,
    balance DECIMAL(12, 2) NOT NULL DEFAULT 0,
    status ENUM('new', 'active', 'closed') NOT NULL DEFAULT 'new',
    tags SET('vip', 'staff', 'test'),
    avatar VARBINARY(8),
    score DOUBLE,
    seen DATETIME(3),
    UNIQUE KEY uk_owner (owner)
);
CREATE TABLE transfers (
    id BIGINT UNSIGNED PRIMARY KEY,
    src INT NOT NULL,
    dst INT NOT NULL,
    amount DECIMAL(12, 2),
    at TIMESTAMP(3) NULL,
    memo TEXT,
    KEY k_src (src)
);
"""
MEMOS = ["'rent'", "'it''s late'", "'naïve ☕'", "'two\\nlines'", "NULL"]


def shop(sim: Simulator, steps: int = 150) -> None:
    """Traffic on a few hot accounts, seeded by the simulator's seed: a few statements per
    call (so one batch of records holds several changes of a key), some in transactions; a
    column added, a table truncated, a table created and renamed on the way."""
    rng = random.Random(f"shop:{sim.seed}")
    sim.execute(SCHEMA)
    added, truncated, created, renamed = steps // 4, steps // 2, steps * 2 // 3, steps * 5 // 6
    story = {
        added: "ALTER TABLE accounts ADD COLUMN note VARCHAR(20) DEFAULT 'none'",
        truncated: "TRUNCATE TABLE transfers",
        created: "CREATE TABLE audit (id INT PRIMARY KEY, what VARCHAR(10))",
        renamed: "RENAME TABLE audit TO audit_log",
    }
    accounts: set[int] = set()
    for step in range(steps):
        if step in story:
            sim.execute(story[step])
        audit = "audit_log" if step >= renamed else "audit" if step >= created else None
        statements = []
        for _ in range(rng.randint(1, 4)):
            account = rng.randrange(1, 12)
            if account not in accounts:
                accounts.add(account)
                statements.append(
                    f"INSERT INTO accounts (id, owner, balance) VALUES ({account},"
                    f" 'user{account}', {rng.randint(0, 99999) / 100:.2f})"
                )
            elif rng.random() < 0.2:
                accounts.discard(account)
                statements.append(f"DELETE FROM accounts WHERE id = {account}")
            else:
                note = f", note = 'n{step}'" if step > added else ""
                statements.append(
                    f"UPDATE accounts SET balance = balance + {rng.randint(-500, 500)},"
                    f" status = {rng.randint(1, 3)}, tags = '{_tags(rng)}',"
                    f" avatar = x'{rng.randbytes(rng.randint(0, 8)).hex()}',"
                    f" score = {rng.uniform(-1e6, 1e6)!r}, seen = '{_time(rng)}'{note}"
                    f" WHERE id = {account}"
                )
        statements.append(
            f"INSERT INTO transfers VALUES ({rng.choice([step, 2**64 - 1 - step])},"
            f" {rng.randrange(1, 12)}, {rng.randrange(1, 12)}, {rng.randint(1, 9999) / 100},"
            f" '{_time(rng)}', {rng.choice(MEMOS)})"
        )
        if audit is not None:
            statements.append(f"REPLACE INTO {audit} VALUES ({step % 5}, 'step {step}')")
        if rng.random() < 0.3:
            statements = ["BEGIN", *statements, "COMMIT"]
        sim.execute(";\n".join(statements))


def _tags(rng: random.Random) -> str:
    return ",".join(rng.sample(["vip", "staff", "test"], rng.randint(0, 3)))


def _time(rng: random.Random) -> str:
    return (
        f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d} {rng.randint(0, 23):02d}:"
        f"{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}.{rng.randint(0, 999):03d}"
    )


def arrivals(records: Iterable[Record], seed: int) -> Iterator[Record]:
    """The records as a Kafka consumer may get them: each partition in order, the partitions
    interleaved at random (Kafka orders nothing across partitions)."""
    rng = random.Random(f"arrivals:{seed}")
    queues = [deque(group) for _, group in groupby(records, key=lambda r: r.partition)]
    while queues:
        queue = rng.choice(queues)
        yield queue.popleft()
        if not queue:
            queues.remove(queue)


def replicate(consumer: Consumer, records: Iterable[Record]) -> None:
    for record in records:
        assert record.value is not None
        consumer.handle(record.partition, record.value)


def test_the_consumer_replicates_a_run(ticdc_sim: Simulator, sqlite_db: sqlite3.Connection) -> None:
    feed = ticdc_sim.changefeed(FEED, config=BY_KEY)
    shop(ticdc_sim)
    ticdc_sim.close()  # the last checkpoint is sent: everything is resolved
    consumer = Consumer(SQLite(sqlite_db), partitions=3)
    replicate(consumer, arrivals(feed.records(), ticdc_sim.seed))
    assert consumer.resolved_ts == feed.checkpoint_ts
    assert consumer.pending == [] and consumer.ignored == 0
    ticdc_sim.assert_replicated(sqlite_db)


FAULTS = {
    "duplicates": "duplicate-rate=0.3",
    "restarts": "restart-every=25",
    "ddl-replays": "ddl-replay-rate=0.5",
    "a-lagging-partition": "resolved-lag=100, resolved-lag-partitions=[1]",
    "all": "duplicate-rate=0.2, restart-every=40, ddl-replay-rate=0.3, resolved-lag=50",
}


@pytest.mark.parametrize("faults", FAULTS.values(), ids=list(FAULTS))
def test_at_least_once_delivery_changes_nothing_downstream(
    ticdc_sim: Simulator, sqlite_db: sqlite3.Connection, faults: str
) -> None:
    feed = ticdc_sim.changefeed(FEED, config=BY_KEY, faults=f"{faults}, label=true")
    shop(ticdc_sim)
    ticdc_sim.close()
    consumer = Consumer(SQLite(sqlite_db), partitions=3)
    replicate(consumer, arrivals(feed.records(), ticdc_sim.seed))
    ticdc_sim.assert_replicated(sqlite_db)
    # label=true marks what the faults sent again (the consumer does not look): it dropped
    # exactly those records
    sent_again = [r for r in feed.records() if "ticdc-sim-fault" in r.headers]
    assert consumer.ignored == len(sent_again)


def test_rows_wait_until_every_partition_has_passed_them(
    ticdc_sim: Simulator, sqlite_db: sqlite3.Connection
) -> None:
    feed = ticdc_sim.changefeed(FEED, config=BY_KEY)
    shop(ticdc_sim, steps=20)
    ticdc_sim.close()
    consumer = Consumer(SQLite(sqlite_db), partitions=3)
    replicate(consumer, (r for r in feed.records() if r.partition < 2))
    # partition 2 has sent nothing yet: its rows may be older than anything seen
    assert consumer.resolved_ts == 0 and len(consumer.pending) > 0
    assert sqlite_db.execute("SELECT name FROM sqlite_master").fetchall() == []
    replicate(consumer, feed.records(partition=2))
    ticdc_sim.assert_replicated(sqlite_db)


def test_the_consumer_replicates_to_mysql(ticdc_sim: Simulator, mysql_url: str) -> None:
    feed = ticdc_sim.changefeed(FEED, config=BY_KEY, faults=FAULTS["all"])
    shop(ticdc_sim)
    ticdc_sim.close()
    downstream = connect(mysql_url, time_zone="+00:00")  # the simulator's time zone
    replicate(Consumer(downstream, partitions=3), arrivals(feed.records(), ticdc_sim.seed))
    downstream.close()
    ticdc_sim.assert_replicated(mysql_url)


def test_the_consumer_reads_kafka(
    ticdc_sim: Simulator, kafka_bootstrap: str, sqlite_db: sqlite3.Connection
) -> None:
    topic = f"consumer-example-{uuid.uuid4().hex[:8]}"
    feed = ticdc_sim.changefeed(
        f"kafka://{kafka_bootstrap}/{topic}?protocol=canal-json&enable-tidb-extension=true"
        "&partition-num=3",
        config=BY_KEY,
        faults=FAULTS["all"],
    )
    shop(ticdc_sim)
    ticdc_sim.close()
    consumer = Consumer(SQLite(sqlite_db), partitions=3)
    consume_kafka(consumer, kafka_bootstrap, topic, until_ts=feed.checkpoint_ts)
    ticdc_sim.assert_replicated(sqlite_db)


# DDL the consumer applies, with rows between them
DDL = """
CREATE DATABASE shop;
USE shop;
CREATE TABLE t (id INT PRIMARY KEY, a ENUM('x', 'y'), b VARCHAR(5) DEFAULT 'd', c INT);
INSERT INTO t (id, a, c) VALUES (1, 'y', 1), (2, 'x', 2);
ALTER TABLE t ADD COLUMN d SET('p', 'q') DEFAULT 'p,q' AFTER a, ADD INDEX ic (c);
ALTER TABLE t ADD COLUMN (e INT DEFAULT -1, f DECIMAL(5, 2) DEFAULT 1.50);
ALTER TABLE t DROP COLUMN c;
ALTER TABLE t CHANGE COLUMN a a2 ENUM('x', 'y', 'z');
ALTER TABLE t MODIFY COLUMN a2 ENUM('x', 'y', 'z', 'w');
ALTER TABLE t RENAME COLUMN b TO b2;
ALTER TABLE t ALTER COLUMN b2 SET DEFAULT 'q', COMMENT = 'renamed';
INSERT INTO t (id, a2, b2) VALUES (3, 'w', 'e');
UPDATE t SET a2 = 'z', d = 'q' WHERE id = 1;
DELETE FROM t WHERE id = 2;
CREATE INDEX ib ON t (b2);
DROP INDEX ib ON t;
CREATE TABLE u (id INT, k VARCHAR(3) NOT NULL, CONSTRAINT pk PRIMARY KEY (id, k));
INSERT INTO u VALUES (1, 'a'), (2, 'b');
RENAME TABLE u TO u2;
ALTER TABLE u2 RENAME TO u3;
UPDATE u3 SET id = 5 WHERE id = 1;
CREATE TABLE gone (id INT PRIMARY KEY);
INSERT INTO gone VALUES (1);
DROP TABLE gone;
CREATE TABLE v (a INT NOT NULL, b INT, UNIQUE KEY (a));
INSERT INTO v VALUES (1, NULL), (2, 2);
UPDATE v SET b = 3 WHERE a = 1;
DELETE FROM v WHERE a = 2;
"""


@pytest.mark.parametrize("target", ["sqlite", "mysql"])
def test_ddl_is_applied_in_its_place(
    ticdc_sim: Simulator, request: pytest.FixtureRequest, target: str
) -> None:
    feed = ticdc_sim.changefeed(FEED, config=BY_KEY, faults="restart-every=7")
    ticdc_sim.execute(DDL)
    ticdc_sim.close()
    if target == "sqlite":
        db = request.getfixturevalue("sqlite_db")
        replicate(Consumer(SQLite(db), partitions=3), arrivals(feed.records(), ticdc_sim.seed))
        ticdc_sim.assert_replicated(db)
        # ENUM and SET came as numbers, and are stored as their members
        assert db.execute("SELECT id, a2, d FROM t").fetchall() == [(1, "z", "q"), (3, "w", "p,q")]
    else:
        url = request.getfixturevalue("mysql_url")
        downstream = connect(url)
        replicate(Consumer(downstream, partitions=3), arrivals(feed.records(), ticdc_sim.seed))
        downstream.close()
        ticdc_sim.assert_replicated(url)


class NaiveConsumer(Consumer):
    """What a first consumer often is: each message applied as it comes (no watermark, no
    dedup, no ordering), an insert as an INSERT (one already there taken for a duplicate and
    skipped), an update as an UPDATE, a delete as a DELETE."""

    def handle(self, partition: int, value: bytes) -> None:
        message = json.loads(value)
        if message["isDdl"]:
            self.downstream.ddl(message["database"], message["sql"])
        elif message["type"] != "TIDB_WATERMARK":
            for data, old in zip(message["data"], message["old"] or message["data"], strict=True):
                self._naive(message, _values(message, data), _values(message, old))
        self.downstream.commit()

    def _naive(self, message: dict[str, Any], row: dict[str, Any], old: dict[str, Any]) -> None:
        db, table = self.downstream, self.downstream.name(message["database"], message["table"])
        where = " AND ".join(f"{db.quote(c)} = ?" for c in message["pkNames"])
        key = [old[c] for c in message["pkNames"]]
        stored = db.stored(message["table"], row)
        if message["type"] == "INSERT":
            try:
                marks = ", ".join("?" * len(row))
                db.execute(
                    f"INSERT INTO {table} ({', '.join(map(db.quote, row))}) VALUES ({marks})",
                    stored,
                )
            except sqlite3.IntegrityError:
                pass
        elif message["type"] == "UPDATE":
            assignments = ", ".join(f"{db.quote(c)} = ?" for c in row)
            db.execute(f"UPDATE {table} SET {assignments} WHERE {where}", [*stored, *key])
        else:
            db.execute(f"DELETE FROM {table} WHERE {where}", key)


def _values(message: dict[str, Any], data: dict[str, str | None]) -> dict[str, Any]:
    return {c: column_value(message["mysqlType"][c], text) for c, text in data.items()}


# one partition: the records come in commit order, so only the duplicates can hurt
ONE_PARTITION = "memory://?protocol=canal-json&enable-tidb-extension=true&partition-num=1"


def counters(sim: Simulator) -> None:
    """20 counters, each counted up five times in a row: runs of changes of one key close
    enough together to go in one batch of records, as on a busy key."""
    sim.execute("CREATE TABLE counters (id INT PRIMARY KEY, n INT NOT NULL)")
    sim.execute("INSERT INTO counters VALUES " + ", ".join(f"({i}, 0)" for i in range(20)))
    for i in range(20):
        sim.execute(";".join([f"UPDATE counters SET n = n + 1 WHERE id = {i}"] * 5))


def test_a_naive_consumer_passes_a_run_without_faults(
    ticdc_sim: Simulator, sqlite_db: sqlite3.Connection
) -> None:
    feed = ticdc_sim.changefeed(ONE_PARTITION)
    counters(ticdc_sim)
    ticdc_sim.close()
    replicate(NaiveConsumer(SQLite(sqlite_db)), feed.records())
    ticdc_sim.assert_replicated(sqlite_db)  # which proves little: see the next test


def test_a_naive_consumer_is_caught_by_the_checker_under_duplicates(
    ticdc_sim: Simulator, sqlite_db: sqlite3.Connection
) -> None:
    feed = ticdc_sim.changefeed(ONE_PARTITION, faults="duplicate-rate=0.3")
    counters(ticdc_sim)
    ticdc_sim.close()
    replicate(NaiveConsumer(SQLite(sqlite_db)), feed.records())
    with pytest.raises(AssertionError) as caught:
        ticdc_sim.assert_replicated(sqlite_db)
    print(caught.value)  # `pytest -s` shows the report: the rows that differ, and how
    assert str(caught.value).startswith("downstream differs from upstream in 1 of 1 tables")
    # what went wrong: a duplicate of an update that came after a newer update of the same
    # counter put its older count back, and nothing came after it to set it right
    (table,) = ticdc_sim.diff(sqlite_db).tables
    assert table.differing and not table.missing and not table.extra
    assert all(m.downstream["n"] < m.upstream["n"] == 5 for m in table.differing)
    # the consumer under test, on the same records, is not fooled
    with closing(sqlite3.connect(":memory:")) as replica:
        replicate(Consumer(SQLite(replica)), feed.records())
        ticdc_sim.assert_replicated(replica)


def test_without_the_tidb_extension_the_consumer_refuses(
    ticdc_sim: Simulator, sqlite_db: sqlite3.Connection
) -> None:
    feed = ticdc_sim.changefeed("memory://?protocol=canal-json&partition-num=1")
    ticdc_sim.execute("CREATE TABLE t (id INT PRIMARY KEY)")
    with pytest.raises(ConsumerError) as raised:
        replicate(Consumer(SQLite(sqlite_db)), feed.records())
    assert str(raised.value) == (
        "partition 0: a canal-json message without TiDB's extension; the changefeed's sink URI"
        " needs enable-tidb-extension=true"
    )


def test_a_ddl_sqlite_cannot_take_is_named(
    ticdc_sim: Simulator, sqlite_db: sqlite3.Connection
) -> None:
    feed = ticdc_sim.changefeed(ONE_PARTITION)
    (create,) = ticdc_sim.execute(
        "CREATE TABLE t (id INT PRIMARY KEY) PARTITION BY HASH (id) PARTITIONS 2"
    )
    *_, truncate = ticdc_sim.execute(
        "INSERT INTO t VALUES (1); INSERT INTO t VALUES (2); ALTER TABLE t TRUNCATE PARTITION p0"
    )
    ticdc_sim.close()
    consumer = Consumer(SQLite(sqlite_db))
    with pytest.raises(ConsumerError) as raised:
        replicate(consumer, feed.records())
    assert str(raised.value) == (
        f"ALTER test.t at commit ts {truncate.commit_ts}: 'ALTER TABLE `t` TRUNCATE PARTITION"
        " `p0`': 'TRUNCATE PARTITION `p0`' is not translated to SQLite"
    )
    # the batch it was in is undone: the downstream stays as of the table's creation
    assert consumer.resolved_ts == create.commit_ts
    assert sqlite_db.execute("SELECT * FROM t").fetchall() == []
