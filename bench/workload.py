"""The benchmarks' workload: one 10-column mixed-type table and the statements users run on it.

Shared by bench/engine.py and bench/encode.py so both measure the same rows. Every script
holds one statement a line (the sqlglot baseline parses line by line) and is generated from
its own seed, so a run is repeatable.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

TABLE = (
    "CREATE TABLE t (id BIGINT PRIMARY KEY, name VARCHAR(32), customer_id INT,"
    " price DECIMAL(10,2), ratio DOUBLE, flag TINYINT, created DATETIME(3), note TEXT,"
    " code CHAR(4), score FLOAT, KEY k_customer (customer_id));"
)
COLUMNS = "id, name, customer_id, price, ratio, flag, created, note, code, score"
CUSTOMERS = 10_000  # customer ids drawn from 1..CUSTOMERS


def row(rng: random.Random, key: int) -> str:
    """One VALUES tuple of the mixed table."""
    return (
        f"({key}, 'name-{key}', {rng.randint(1, CUSTOMERS)}, {rng.randint(0, 99999) / 100}, "
        f"{rng.random()}, {rng.randint(0, 1)}, "
        f"'2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d} "
        f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}"
        f".{rng.randint(0, 999):03d}', 'note <{key}>', 'c{key % 99}', {rng.randint(0, 9999) / 8})"
    )


def insert(rng: random.Random, first: int, rows: int) -> str:
    values = ", ".join(row(rng, key) for key in range(first, first + rows))
    return f"INSERT INTO t ({COLUMNS}) VALUES {values};"


def inserts(statements: int, rows: int = 100, seed: int = 1) -> Iterator[str]:
    """The table, then `statements` INSERTs of `rows` rows each."""
    rng = random.Random(seed)
    yield TABLE
    for i in range(statements):
        yield insert(rng, 1 + i * rows, rows)


def realistic(statements: int, seed: int = 2) -> Iterator[str]:
    """A day of an ordinary application: 100-row INSERTs, single-row and range UPDATE/DELETE
    by primary key, UPDATEs by a secondary index, and explicit transactions of a few of
    those. About a fifth of the statements are INSERTs, so the table grows as it is used."""
    rng = random.Random(seed)
    yield TABLE
    next_id = 1
    written = 0
    while written < statements:
        if next_id == 1 or rng.random() < 0.2:
            yield insert(rng, next_id, 100)
            next_id += 100
            written += 1
            continue
        in_transaction = rng.random() < 0.1
        if in_transaction:
            yield "BEGIN;"
        for _ in range(rng.randint(2, 5) if in_transaction else 1):
            yield _change(rng, next_id - 1)
            written += 1
        if in_transaction:
            yield "COMMIT;" if rng.random() < 0.9 else "ROLLBACK;"


def _change(rng: random.Random, top: int) -> str:
    key = rng.randint(1, top)
    roll = rng.random()
    if roll < 0.35:
        return (
            f"UPDATE t SET customer_id = {rng.randint(1, CUSTOMERS)}, "
            f"note = 'changed {rng.randint(0, 999)}' WHERE id = {key};"
        )
    if roll < 0.55:
        return (
            f"UPDATE t SET price = price + 1, created = '2025-01-01 00:00:00.000' "
            f"WHERE id BETWEEN {key} AND {key + 49};"
        )
    if roll < 0.75:
        return f"UPDATE t SET flag = 1 - flag WHERE customer_id = {rng.randint(1, CUSTOMERS)};"
    if roll < 0.9:
        return f"DELETE FROM t WHERE id = {key};"
    return f"DELETE FROM t WHERE id >= {key} AND id < {key + 10};"


LITERALS_TABLE = (
    "CREATE TABLE l (id BIGINT PRIMARY KEY, b VARBINARY(16), bits BIT(8), n INT,"
    " s VARCHAR(32), u VARCHAR(32), d DECIMAL(10,2));"
)


def literal_forms(statements: int, rows: int = 100, seed: int = 6) -> Iterator[str]:
    """100-row INSERTs whose values take every literal form: X'..', 0x.., b'..', 0b..,
    negative numbers, N'..', _utf8mb4 '..', _binary '..'."""
    rng = random.Random(seed)
    yield LITERALS_TABLE
    for i in range(statements):
        values = []
        for key in range(1 + i * rows, 1 + (i + 1) * rows):
            blob = rng.randbytes(rng.randint(0, 8)).hex()
            binary = f"X'{blob}'" if key % 2 else f"0x{blob or '00'}"
            bits = f"b'{rng.randint(0, 255):b}'" if key % 3 else f"0b{rng.randint(1, 255):b}"
            text = f"N'n{key}'" if key % 2 else f"_utf8mb4 'u{key}'"
            values.append(
                f"({key}, {binary}, {bits}, {-rng.randint(0, 10**6)}, {text}, "
                f"_binary 'b{key}', -{rng.randint(0, 99999) / 100})"
            )
        yield f"INSERT INTO l VALUES {', '.join(values)};"


def range_load(table_rows: int, seed: int = 3) -> Iterator[str]:
    """The table with `table_rows` rows, in 1,000-row INSERTs."""
    rng = random.Random(seed)
    yield TABLE
    for first in range(1, table_rows + 1, 1000):
        yield insert(rng, first, min(1000, table_rows + 1 - first))


def range_updates(table_rows: int, updates: int, seed: int = 4) -> Iterator[str]:
    """50-row range UPDATEs by primary key on the table `range_load` filled."""
    rng = random.Random(seed)
    for _ in range(updates):
        key = rng.randint(1, table_rows - 49)
        yield f"UPDATE t SET price = price + 1 WHERE id BETWEEN {key} AND {key + 49};"


def single_rows(statements: int, seed: int = 5) -> Iterator[str]:
    """Single-row INSERT/UPDATE/DELETE by primary key, for peak memory over many statements."""
    rng = random.Random(seed)
    yield TABLE
    live: list[int] = []
    next_id = 1
    for _ in range(statements):
        roll = rng.random()
        if roll < 0.5 or not live:
            yield f"INSERT INTO t ({COLUMNS}) VALUES {row(rng, next_id)};"
            live.append(next_id)
            next_id += 1
        elif roll < 0.8:
            customer = rng.randint(1, CUSTOMERS)
            yield f"UPDATE t SET customer_id = {customer} WHERE id = {rng.choice(live)};"
        else:
            j = rng.randrange(len(live))
            live[j], live[-1] = live[-1], live[j]
            yield f"DELETE FROM t WHERE id = {live.pop()};"
