"""The pytest plugin: a simulated TiDB cluster and a Kafka broker as fixtures, records shown
decoded when an assertion on them fails.

Installed with ticdc-sim, it is loaded by pytest in every session through the `pytest11`
entry point `ticdc_sim.pytest_plugin` (off: `-p no:ticdc_sim.pytest_plugin`); without the
entry point, `-p ticdc_sim.pytest_plugin` or `pytest_plugins = ["ticdc_sim.pytest_plugin"]`
in a conftest loads it. Loading it imports nothing but pytest: the simulator is imported by
the first test that asks for it.

Fixtures:
  * `ticdc_sim` -> `ticdc_sim.Simulator`: a fresh simulator for one test, closed after it.
    It starts empty in database `test`, seeded by the session's seed.

        def test_orders(ticdc_sim):
            feed = ticdc_sim.changefeed("memory://?protocol=canal-json")
            ticdc_sim.execute("CREATE TABLE t (id INT PRIMARY KEY); INSERT INTO t VALUES (1)")
            assert [e["type"] for e in feed.events()] == ["ddl", "insert"]

  * `ticdc_sim_factory` -> `SimulatorFactory`: call it for each simulator a test needs,
    with `Simulator`'s options (`seed`, `time_zone`, `start_ts`, `database`); the seed
    defaults to the session's. All of them are closed after the test.
  * `kafka_bootstrap` -> str (session-scoped): `host:port` of a Kafka broker, for
    `kafka://{kafka_bootstrap}/topic?...` sink URIs. The one `--kafka-bootstrap` names,
    else a Tansu broker started for the session on a free port (`ticdc_sim.testing.broker`;
    `pip install 'ticdc-sim[testing]'` brings it); the tests that ask for it are skipped,
    saying why, when neither is there. A named broker that does not answer is an error.

Options (each also an ini setting; the command line wins):
  * `--ticdc-sim-seed N` / `ticdc_sim_seed = N`: the seed of every simulator the fixtures
    make unless a test gives one (default 0, as `Simulator()`); the report header says it.
  * `--kafka-bootstrap HOST:PORT[,HOST:PORT]` / `ticdc_sim_kafka_bootstrap`: the broker
    `kafka_bootstrap` gives, instead of starting one.

A failed `==` between `Record`s, or lists of them, is explained with each record decoded
(`ticdc_sim.testing.records`): JSON as JSON, binary in hex, the first difference field by
field; `-v` adds the whole diff.

PYTEST_DONT_REWRITE: it asserts nothing, and may be imported before pytest would rewrite it
(`from ticdc_sim.pytest_plugin import SimulatorFactory`, for a type).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from ticdc_sim.api import Simulator

_SEED = pytest.StashKey[int]()
_BOOTSTRAP = pytest.StashKey["str | None"]()
_DEFAULT_SEED = 0


class SimulatorFactory:
    """What `ticdc_sim_factory` gives: each call makes a `Simulator` that is closed when the
    test ends (one that fails to close fails the test's teardown, saying why)."""

    def __init__(self, seed: int) -> None:
        self.seed = seed  # what a simulator is seeded by when the call gives no seed
        self.made: list[Simulator] = []

    def __call__(self, seed: int | None = None, **options: Any) -> Simulator:
        """A new `Simulator(seed, **options)`; `seed` defaults to the session's."""
        from ticdc_sim.api import Simulator

        simulator = Simulator(self.seed if seed is None else seed, **options)
        self.made.append(simulator)
        return simulator

    def close(self) -> None:
        """Close every simulator made, all of them even when one fails (`CloseFailed`)."""
        from ticdc_sim.cluster import close_all

        made, self.made = self.made, []
        close_all((f"simulator {i} (seed {s.seed})", s.close) for i, s in enumerate(made, 1))


# -- options -----------------------------------------------------------------------------------


def _seed(text: str) -> int:
    if not (text.strip().isascii() and text.strip().isdigit()):  # int() takes '+1', '1_0'
        raise argparse.ArgumentTypeError(f"{text!r} is not a seed: a whole number, 0 or more")
    return int(text)


def _bootstrap(text: str) -> str:
    from ticdc_sim.testing.broker import addresses

    try:
        addresses(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text.strip()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ticdc-sim", "ticdc-sim (a simulated TiCDC producer)")
    group.addoption(
        "--ticdc-sim-seed",
        type=_seed,
        default=None,
        metavar="N",
        help="seed of the simulators the ticdc_sim fixtures make (default: ini ticdc_sim_seed,"
        " else 0)",
    )
    group.addoption(
        "--kafka-bootstrap",
        type=_bootstrap,
        default=None,
        metavar="HOST:PORT",
        help="the Kafka broker the kafka_bootstrap fixture gives (default: ini"
        " ticdc_sim_kafka_bootstrap, else a Tansu broker started for the session)",
    )
    parser.addini("ticdc_sim_seed", "seed of the simulators the ticdc_sim fixtures make", "string")
    parser.addini(
        "ticdc_sim_kafka_bootstrap", "HOST:PORT of the Kafka broker kafka_bootstrap gives", "string"
    )


def pytest_configure(config: pytest.Config) -> None:
    """Settings read once: a bad one is a usage error before any test runs."""
    seed = _setting(config, "--ticdc-sim-seed", "ticdc_sim_seed", _seed)
    config.stash[_SEED] = _DEFAULT_SEED if seed is None else seed
    config.stash[_BOOTSTRAP] = _setting(
        config, "--kafka-bootstrap", "ticdc_sim_kafka_bootstrap", _bootstrap
    )


def _setting(
    config: pytest.Config, option: str, ini: str, read: Callable[[str], Any]
) -> Any | None:
    """An option's value: the command line's, else the ini file's read by `read`; None when
    neither gives one."""
    given = config.getoption(option)
    if given is not None:
        return given
    text = config.getini(ini)
    if not text:
        return None
    try:
        return read(text)
    except argparse.ArgumentTypeError as e:
        overridden = any(o.startswith(f"{ini}=") for o in config.option.override_ini or ())
        where = f"-o {ini}" if overridden else f"{ini} in {config.inipath}"
        raise pytest.UsageError(f"{where}: {e}") from None


def pytest_report_header(config: pytest.Config) -> str:
    from ticdc_sim import __version__

    kafka = config.stash[_BOOTSTRAP] or "Tansu, started if a test asks"
    return f"ticdc-sim {__version__}: seed {config.stash[_SEED]}, kafka {kafka}"


# -- fixtures ----------------------------------------------------------------------------------


@pytest.fixture
def ticdc_sim_factory(request: pytest.FixtureRequest) -> Iterator[SimulatorFactory]:
    """Makes `ticdc_sim.Simulator`s for this test: `ticdc_sim_factory(seed=None, **options)`
    takes `Simulator`'s options, the seed defaulting to the session's (`--ticdc-sim-seed`);
    every one made is closed after the test."""
    factory = SimulatorFactory(request.config.stash[_SEED])
    yield factory
    from ticdc_sim.errors import SimError

    try:
        factory.close()
    except SimError as e:
        failure = str(e)
    else:
        return
    pytest.fail(f"ticdc_sim: closing the test's simulators failed: {failure}", pytrace=False)


@pytest.fixture
def ticdc_sim(ticdc_sim_factory: SimulatorFactory) -> Simulator:
    """A fresh `ticdc_sim.Simulator` for this test (seed: `--ticdc-sim-seed`, else 0), in
    database `test`, with no changefeed yet; closed after the test."""
    return ticdc_sim_factory()


@pytest.fixture(scope="session")
def kafka_bootstrap(request: pytest.FixtureRequest) -> Iterator[str]:
    """`host:port` of a Kafka broker for the session: `--kafka-bootstrap`'s, else a Tansu
    broker started now and stopped when the session ends. Skips the test, saying why, when
    there is neither; fails it when the broker named does not answer."""
    from ticdc_sim.testing.broker import Broker

    named = request.config.stash[_BOOTSTRAP]
    broker, why = Broker.start(named)
    if broker is None:
        if named:
            pytest.fail(f"kafka_bootstrap: {why}", pytrace=False)
        pytest.skip(f"kafka_bootstrap: {why}; or name one with --kafka-bootstrap HOST:PORT")
    try:
        yield broker.bootstrap
    finally:
        broker.stop()


# -- assertions --------------------------------------------------------------------------------


def pytest_assertrepr_compare(
    config: pytest.Config, op: str, left: object, right: object
) -> list[str] | None:
    """Records compared with `==` are explained decoded (`ticdc_sim.testing.records`)."""
    if op != "==" or "ticdc_sim.sinks" not in sys.modules:  # no Record can exist yet
        return None
    from ticdc_sim.testing.records import explain

    return explain(left, right, config.get_verbosity(pytest.Config.VERBOSITY_ASSERTIONS))
