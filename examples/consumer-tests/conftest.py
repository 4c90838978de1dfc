"""Fixtures of the consumer's tests: the downstream databases. `ticdc_sim` (a fresh simulator)
and `kafka_bootstrap` (a Kafka broker) come from ticdc-sim's pytest plugin."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import pytest
from downstream import connect


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--mysql-url",
        default=None,
        help="a MySQL or MariaDB server for the MySQL tests, mysql://USER:PASSWORD@HOST:PORT/"
        " (?unix_socket=PATH); they drop and make its database `shop`",
    )


@pytest.fixture
def sqlite_db() -> Iterator[sqlite3.Connection]:
    """An empty SQLite database in memory."""
    db = sqlite3.connect(":memory:")
    yield db
    db.close()


@pytest.fixture
def mysql_url(request: pytest.FixtureRequest) -> str:
    """--mysql-url, its database `shop` dropped; the test is skipped without it."""
    url: str | None = request.config.getoption("--mysql-url")
    if not url:
        pytest.skip("no MySQL server: give one with --mysql-url mysql://USER@HOST:PORT/")
    downstream = connect(url)
    downstream.execute("DROP DATABASE IF EXISTS shop")
    downstream.close()
    return url
