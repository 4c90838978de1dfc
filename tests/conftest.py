"""Shared fixtures: the Kafka broker of the Kafka tests, the MariaDB pair the oracle tests
compare the engine against."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Protocol, TypeVar

import pytest

from support_mariadb import MariaDB
from support_s3 import S3Server
from ticdc_sim.testing.broker import Broker

S = TypeVar("S", bound="_Started")

pytest_plugins = ["pytester"]  # the pytest plugin's tests run pytest as its users do


class _Started(Protocol):
    def stop(self) -> None: ...


def _served(started: tuple[S | None, str], skipped: str) -> Iterator[S]:
    """A server a session fixture started (`Class.start()`), stopped after; the tests that
    need it skipped with the reason when it cannot start."""
    found, why = started
    if found is None:
        pytest.skip(f"{skipped}{why}")
    yield found
    found.stop()


@pytest.fixture(scope="session")
def broker() -> Iterator[Broker]:
    """A real Kafka broker for the whole run: Tansu on a free port, or the one
    `KAFKA_BOOTSTRAP=host:port` names (then nothing is started or stopped here)."""
    yield from _served(Broker.start(os.environ.get("KAFKA_BOOTSTRAP")), "")


@pytest.fixture
def own_broker() -> Iterator[Broker]:
    """A Tansu of the test's own, to stop, pause and restart (`Broker.restart`: the same
    address, no topics)."""
    yield from _served(Broker.start(), "")


@pytest.fixture(scope="session")
def s3() -> Iterator[S3Server]:
    """moto's S3 server on loopback for the whole run (tests/support_s3.py)."""
    yield from _served(S3Server.start(), "s3:// tests skipped: ")


@pytest.fixture(scope="session")
def mariadb() -> Iterator[MariaDB]:
    """One private server, for tests that ask MariaDB what it answers."""
    yield from _served(MariaDB.start(), "oracle tests skipped: ")


@pytest.fixture(scope="session")
def mariadb_pair() -> Iterator[tuple[MariaDB, MariaDB]]:
    """Two private servers: the source runs the script, the replica gets the changelog."""
    source, why = MariaDB.start()
    if source is None:
        pytest.skip(f"oracle tests skipped: {why}")
    replica, why = MariaDB.start()
    if replica is None:
        source.stop()
        pytest.skip(f"oracle tests skipped: {why}")
    yield source, replica
    source.stop()
    replica.stop()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--differential-examples",
        type=int,
        default=40,
        help="random cases per differential test against MariaDB (CI: 40, fixed seed)",
    )
    parser.addoption(
        "--differential-seed",
        type=int,
        default=None,
        help="explore other random cases than CI's fixed ones (a hypothesis seed)",
    )
