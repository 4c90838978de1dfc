"""Hostile workload specs (issue 25): YAML that is not YAML, bombs, binary files, wrong
shapes and types, huge numbers, deep nesting, unknown keys, DDL and storylines that cannot
run. Each is refused by `ticdc-sim generate` with exit status 1 and one located message
(file:line:col, the spec path, what is wrong), or accepted with the right result; never a
traceback, in any output or log."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest
from typer.testing import CliRunner

from ticdc_sim.cli import app

TABLE = "CREATE TABLE t (id BIGINT PRIMARY KEY, v INT, s VARCHAR(10), UNIQUE KEY (s))"
BASE = f"""\
tables:
  - ddl: {TABLE}
    rows: 5
operations:
  events: 20
"""


def columns(text: str) -> str:
    """BASE with `columns: {text}` on its table (line 4)."""
    return BASE.replace("    rows: 5\n", f"    rows: 5\n    columns: {text}\n")


def bomb(levels: int) -> str:
    """A billion laughs: each level nine aliases of the one below."""
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]")
    return "\n".join(lines) + "\n"


@pytest.fixture(autouse=True)
def _no_traceback_logged(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    caplog.set_level(logging.DEBUG)
    yield
    assert "Traceback" not in caplog.text and "internal error" not in caplog.text.lower()


def generate(path: Path, *args: str) -> Any:
    result = CliRunner().invoke(app, ["generate", "--workload", str(path), "--no-progress", *args])
    assert "Traceback" not in result.output and "internal error" not in result.output.lower()
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


Spec = str | bytes | Callable[[Path], str]


def _with_file(directory: Path, name: str, data: bytes) -> str:
    """A spec whose table's initial rows come from `name`, written with `data`."""
    (directory / name).write_bytes(data)
    return BASE.replace("rows: 5", f"initial_from: {{path: {name}}}").replace(
        ", UNIQUE KEY (s)", ""
    )


REFUSED: list[Any] = [
    # -- not a YAML mapping ------------------------------------------------------------------
    pytest.param(
        bomb(9),
        "{spec}:7:5: aliases expand to more than 1,000,000 values (an alias bomb?)",
        id="alias-bomb",
    ),
    pytest.param("a: &x [1, *x]\n", "{spec}:1:4: an alias that contains itself", id="alias-loop"),
    pytest.param(
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
        "{spec}: not a workload spec: binary data (a NUL byte at offset 8)",
        id="binary-png",
    ),
    pytest.param(
        b"\xff\xfe" + BASE.encode("utf-16-le"),
        "{spec}: UTF-16 text: a workload spec is UTF-8 (save it as UTF-8)",
        id="utf-16",
    ),
    pytest.param(
        BASE.replace("rows: 5", "rows: 5 # caf\xe9").encode("latin-1"),
        "{spec}:3:18: not UTF-8 text (byte 0xe9 at offset 111)",
        id="latin-1",
    ),
    pytest.param("", "{spec}: empty: a workload spec needs at least `tables`", id="empty"),
    pytest.param(
        "# nothing\n\n",
        "{spec}: empty: a workload spec needs at least `tables`",
        id="comments-only",
    ),
    pytest.param(
        "- ddl: x\n- ddl: y\n",
        "{spec}:1:1: expected {{seed, database, tables, operations, storyline, initial_batch}}, not a list of 2",
        id="top-level-list",
    ),
    pytest.param(
        "hello\n",
        "{spec}:1:1: expected {{seed, database, tables, operations, storyline, initial_batch}}, not 'hello'",
        id="top-level-text",
    ),
    pytest.param(
        "[" * 3000 + "]" * 3000,
        "{spec}:1:65: nested deeper than 64 levels (a spec needs a few)",
        id="deep-lists",
    ),
    pytest.param(
        "{a: " * 3000 + "1" + "}" * 3000,
        "{spec}:1:254: nested deeper than 64 levels (a spec needs a few)",
        id="deep-maps",
    ),
    pytest.param(
        "tables:\n\t- ddl: x\n",
        "{spec}:2:1: not YAML: found character '\\t' that cannot start any token",
        id="tab-indent",
    ),
    pytest.param(
        "tables: [{ddl: 'x}]\n",
        "{spec}:2:1: not YAML: found unexpected end of stream",
        id="open-quote",
    ),
    pytest.param(
        "a: *nowhere\n",
        "{spec}:1:4: not YAML: found undefined alias 'nowhere'",
        id="undefined-alias",
    ),
    pytest.param(
        "a: !!python/object/apply:os.system [ls]\n",
        "{spec}:1:4: not YAML: could not determine a constructor for the tag"
        " 'tag:yaml.org,2002:python/object/apply:os.system'",
        id="python-tag",
    ),
    pytest.param("? [a]\n: 1\n", "{spec}:1:3: not YAML: found unhashable key", id="unhashable-key"),
    pytest.param(
        "seed: 1\n---\nseed: 2\n",
        "{spec}:2:1: not YAML: expected a single document in the stream but found another document",
        id="two-documents",
    ),
    pytest.param(
        BASE.replace("    rows: 5\n", "    rows: 5\n    rows: 6\n"),
        "{spec}:4:5: not YAML: key 'rows' given twice (first on line 3)",
        id="duplicate-key",
    ),
    pytest.param(
        "a: \x07\n",
        "{spec}:1:4: not YAML: character U+0007 is not allowed",
        id="control-character",
    ),
    # -- wrong shapes, types, numbers --------------------------------------------------------
    pytest.param(
        "seed: 1\n",
        "{spec}:1:1: tables: required (e.g. `tables: [{{ddl: 'CREATE TABLE t (id BIGINT PRIMARY"
        " KEY, v INT)', rows: 10}}]`)",
        id="no-tables",
    ),
    pytest.param(
        "tables: []\n",
        "{spec}:1:9: tables: needs at least 1 item (e.g. `tables: [{{ddl: 'CREATE TABLE t (id"
        " BIGINT PRIMARY KEY, v INT)', rows: 10}}]`)",
        id="no-table",
    ),
    pytest.param(
        BASE.replace("tables:", "tabels:"),
        "{spec}:1:1: tables: required (e.g. `tables: [{{ddl: 'CREATE TABLE t (id BIGINT PRIMARY"
        " KEY, v INT)', rows: 10}}]`)\n  {spec}:1:1: tabels: unknown key; did you mean tables?"
        " the top level takes seed, database, tables, operations, storyline, initial_batch",
        id="typo-top-level",
    ),
    pytest.param(
        BASE.replace("rows: 5", "rows: '5'"),
        "{spec}:3:11: tables[0].rows: expected integer, not '5' (e.g. `rows: 1000`)",
        id="quoted-number",
    ),
    pytest.param(
        BASE.replace("rows: 5", "rows: 99999999999999999999999999999"),
        "{spec}:3:11: tables[0].rows: must be at most 1,000,000,000,000,000, not"
        " 99999999999999999999999999999",
        id="huge-rows",
    ),
    pytest.param(
        BASE.replace("events: 20", "events: -5"),
        "{spec}:5:11: operations.events: must be at least 0, not -5",
        id="negative-events",
    ),
    pytest.param(
        BASE.replace("events: 20", "events: 20\n  commit_rate: .nan"),
        "{spec}:6:16: operations.commit_rate: must be a finite number, not nan",
        id="nan",
    ),
    pytest.param(
        BASE.replace("events: 20", "events: 2.5"),
        "{spec}:5:11: operations.events: expected integer, not 2.5 (e.g. `events: 100000`)",
        id="fractional-events",
    ),
    pytest.param(
        "seed: true\n" + BASE,
        "{spec}:1:7: seed: expected integer, not true (e.g. `seed: 7`)",
        id="bool-seed",
    ),
    pytest.param(
        "seed: 18446744073709551616\n" + BASE,
        "{spec}:1:7: seed: must be below 2^63, not 18446744073709551616",
        id="seed-past-int64",
    ),
    pytest.param(
        "database: ''\n" + BASE,
        "{spec}:1:11: database: needs at least 1 character, not ''",
        id="empty-database",
    ),
    pytest.param(
        BASE.replace("tables:\n", "tables:\n  - 5\n"),
        "{spec}:2:5: tables[0]: expected {{ddl, ddl_file, rows, initial_from, weight, columns,"
        " update, key_updates, keys}}, not 5",
        id="table-not-a-mapping",
    ),
    pytest.param(
        columns("{v: {uniform: 5}}"),
        "{spec}:4:28: tables[0].columns.v.uniform: expected [low, high], not 5 (e.g. `amount:"
        " {{uniform: [1, 500]}}`)",
        id="uniform-scalar",
    ),
    pytest.param(
        columns("{v: {uniform: [1]}}"),
        "{spec}:4:28: tables[0].columns.v.uniform: expected [low, high], not a list of 1"
        " (e.g. `amount: {{uniform: [1, 500]}}`)",
        id="uniform-one-bound",
    ),
    pytest.param(
        columns("{v: {uniform: [9, 1]}}"),
        "{spec}:4:28: tables[0].columns.v.uniform: low 9 is above high 1",
        id="uniform-reversed",
    ),
    pytest.param(
        columns("{v: {unifrom: [1, 9]}}"),
        "{spec}:4:19: tables[0].columns.v.unifrom: unknown key; did you mean uniform? a column"
        " takes faker, template, locale, unique, sequence, start, step, uniform, normal, zipf,"
        " choice, ref, length, null_rate, min, max",
        id="typo-generator",
    ),
    pytest.param(
        columns("{v: {choice: 7}}"),
        "{spec}:4:27: tables[0].columns.v.choice: expected {{value: weight, ...}} or [value,"
        " ...], not 7 (e.g. `status: {{choice: {{new: 5, paid: 3, shipped: 2}}}}`)",
        id="choice-scalar",
    ),
    pytest.param(
        columns("{v: {choice: {1: -2}}}"),
        "{spec}:4:31: tables[0].columns.v.choice[1]: must be at least 0, not -2",
        id="negative-weight",
    ),
    pytest.param(
        columns("{v: {choice: [1, .nan]}}"),
        "{spec}:4:27: tables[0].columns.v.choice: .nan and .inf are no values a column holds",
        id="choice-nan",
    ),
    pytest.param(
        columns("{v: {uniform: [1e300, 1e301]}}").replace("v INT", "v DECIMAL(10,2)"),
        "{spec}:4:18: tables[0].columns.v: a drawn value 8.46819e+300 does not fit: Out of"
        " range value for column 'v'",
        id="decimal-past-any-precision",
    ),
    pytest.param(
        columns("{v: {normal: {mean: 0, std: 1e308}}}").replace("v INT", "v DOUBLE"),
        "{spec}:4:18: tables[0].columns.v: a drawn value inf is no number a column holds",
        id="normal-overflows",
    ),
    pytest.param(
        columns("{s: {length: [1, 100000000000000000000]}}").replace("s VARCHAR(10)", "s LONGTEXT"),
        "{spec}:4:31: tables[0].columns.s.length[1]: must be at most 65535, not"
        " 100000000000000000000",
        id="length-past-memory",
    ),
    pytest.param(
        columns("{v: {zipf: {n: 0}}}"),
        "{spec}:4:29: tables[0].columns.v.zipf.n: must be above 0, not 0",
        id="zipf-n-zero",
    ),
    pytest.param(
        columns("{v: {faker: emial}}"),
        "{spec}:4:26: tables[0].columns.v.faker: Faker has no provider 'emial' in locale en_US;"
        " did you mean email?",
        id="unknown-provider",
    ),
    pytest.param(
        columns("{s: {template: '{first_name}{bogus}'}}"),
        "{spec}:4:29: tables[0].columns.s.template: Faker has no provider 'bogus' in locale en_US",
        id="unknown-template-provider",
    ),
    pytest.param(
        columns("{s: {template: '{row.__class__}'}}"),
        "{spec}:4:29: tables[0].columns.s.template: {{row.__class__}} is not a placeholder:"
        " {{provider}}, {{row}} or {{row:06d}}",
        id="template-attribute",
    ),
    pytest.param(
        columns("{v: {ref: t}}"),
        "{spec}:4:24: tables[0].columns.v.ref: expected table.column, not 't'",
        id="ref-shape",
    ),
    pytest.param(
        BASE.replace("events: 20", "events: 20\n  keys: {zipf: 1.1, uniform: true}"),
        "{spec}:6:9: operations.keys: one key distribution, not uniform and zipf",
        id="two-distributions",
    ),
    pytest.param(
        BASE.replace("events: 20", "events: 20\n  keys: {hot: {count: 0, share: 0.3}}"),
        "{spec}:6:23: operations.keys.hot.count: must be at least 1, not 0",
        id="hot-count-zero",
    ),
    pytest.param(
        BASE.replace("events: 20", "events: 20\n  transaction_size: {min: 5, max: 1}"),
        "{spec}:6:21: operations.transaction_size: min 5 above max 1",
        id="sizes-reversed",
    ),
    # -- what the generator finds ------------------------------------------------------------
    pytest.param(
        columns("{v: {faker: {provider: pyint, args: {nonsense: 1}}}}"),
        "{spec}:4:50: tables[0].columns.v.faker.args: faker pyint: Provider.pyint() got an"
        " unexpected keyword argument 'nonsense'",
        id="provider-arguments",
    ),
    pytest.param(
        columns("{s: {faker: paragraph}}"),
        "{spec}:4:18: tables[0].columns.s: a drawn value 'Drive sound fast situation. Money"
        " responsibility popular leave.' does not fit: Data too long for column 's'"
        " (`length: [min, max]` cuts drawn strings to max characters)",
        id="unique-draws-too-long",
    ),
    pytest.param(
        columns("{v: {faker: word}}"),
        "{spec}:4:18: tables[0].columns.v: a drawn value 'line' does not fit: Incorrect"
        " integer value: 'line' for column 'v'",
        id="unfit-provider",
    ),
    pytest.param(
        columns("{s: {choice: [a, b]}}"),
        "{spec}:4:18: tables[0].columns.s: choice gave no new value for row 3 in 100 draws (2"
        " distinct so far): too few for this run's rows, which must not repeat; a template with"
        ' {{row}} (e.g. "{{first_name}}{{row}}") never runs out',
        id="unique-runs-out",
    ),
    pytest.param(
        columns("{v: {template: '{row}x'}}"),
        "{spec}:4:18: tables[0].columns.v: a drawn value '1x' does not fit: Incorrect integer"
        " value: '1x' for column 'v'",
        id="template-on-int",
    ),
    pytest.param(
        columns("{v: {null_rate: 0.5}}").replace("v INT", "v INT NOT NULL"),
        "{spec}:4:30: tables[0].columns.v.null_rate: t.v is NOT NULL: its values are never NULL",
        id="nulls-in-not-null",
    ),
    pytest.param(
        BASE.replace(TABLE, TABLE + "; DROP TABLE t"),
        "{spec}:2:10: tables[0].ddl: DROP TABLE `test`.`t` leaves no table t, which tables[0]"
        " creates; DDL during the run goes in the storyline",
        id="ddl-drops-its-table",
    ),
    pytest.param(
        BASE.replace(TABLE, TABLE + "; INSERT INTO t (id) VALUES (1)"),
        "{spec}:2:10: tables[0].ddl: writes rows (t): a table's `ddl` creates it; its rows come"
        " from `rows` or `initial_from`",
        id="ddl-writes-rows",
    ),
    pytest.param(
        BASE.replace(TABLE, "CREATE TABLE t (id INT"),
        "{spec}:2:10: tables[0].ddl: line 1 column 22: ERROR 1064 (42000): You have an error in"
        " your SQL syntax; check the manual that corresponds to your TiDB version for the right"
        ' syntax to use line 1 column 22 near "INT" (Expecting ))',
        id="ddl-syntax",
    ),
    pytest.param(
        BASE.replace(TABLE, "CREATE TABLE t (id INT PRIMARY KEY)").replace(
            "rows: 5", "rows: 3000000000"
        ),
        "{spec}:2:5: tables[0].columns.id: key 3000000000 is more than the column holds"
        " (2147483647): too many rows for this key column",
        id="key-column-too-small",
    ),
    pytest.param(
        lambda d: BASE.replace(f"ddl: {TABLE}", f"ddl_file: {d}"),
        "{spec}:2:15: tables[0].ddl_file: {dir}: Is a directory",
        id="ddl-file-directory",
    ),
    pytest.param(
        BASE.replace(f"ddl: {TABLE}", "ddl_file: /proc/self/mem"),
        "{spec}:2:15: tables[0].ddl_file: /proc/self/mem: Input/output error",
        id="ddl-file-unreadable",
    ),
    pytest.param(
        BASE + "storyline: [{at_event: 5000, ddl: ALTER TABLE t ADD COLUMN x INT}]\n",
        "{spec}:6:24: storyline[0].at_event: at_event 5000 is past the run's end"
        " (operations.events: 20); a chapter runs before an operation event",
        id="chapter-past-events",
    ),
    pytest.param(
        BASE + "storyline: [{at_time_s: 900, ddl: ALTER TABLE t ADD COLUMN x INT}]\n",
        "{spec}:6:25: storyline[0].at_time_s: at_time_s 900 is past the run's end (20 events,"
        " 0.02 simulated seconds): the chapter would never run",
        id="chapter-past-time",
    ),
    pytest.param(
        BASE + "storyline: [{at_event: 5, ddl: ALTER TABLE t MODIFY v BIGINT}]\n",
        "{spec}:6:32: storyline[0].ddl: changes the type of t.v; not simulated",
        id="chapter-changes-a-type",
    ),
    pytest.param(
        BASE.replace("rows: 5", "rows: 5\n    initial_from: {path: nowhere.csv}"),
        "{spec}:2:5: tables[0]: `rows` or `initial_from`: the file's rows are the initial rows",
        id="rows-and-a-file",
    ),
    pytest.param(
        BASE.replace("rows: 5", "initial_from: {path: nowhere.csv}"),
        "{spec}:3:26: tables[0].initial_from.path: {dir}/nowhere.csv is not there: one file (its"
        " order is the rows')",
        id="initial-file-missing",
    ),
    pytest.param(
        lambda d: _with_file(d, "a.csv", b"id,v,v\n1,2,3\n"),
        "{spec}:3:26: tables[0].initial_from.path: {dir}/a.csv: column 'v' is there twice",
        id="initial-file-column-twice",  # was a traceback (pyarrow's KeyError)
    ),
    pytest.param(
        lambda d: _with_file(d, "a.csv", b"id,v,V\n1,2,3\n"),
        "{spec}:3:26: tables[0].initial_from.path: {dir}/a.csv: columns 'v' and 'V' are one"
        " column (names ignore case)",
        id="initial-file-column-twice-by-case",  # one of them was dropped without a word
    ),
]


@pytest.mark.parametrize(("spec", "message"), REFUSED)
def test_a_hostile_spec_is_refused_with_its_place(tmp_path: Path, spec: Spec, message: str) -> None:
    path = tmp_path / "w.yaml"
    text = spec(tmp_path) if callable(spec) else spec
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    result = generate(path)
    expected = message.format(spec=path, dir=tmp_path)
    assert (result.exit_code, result.stdout, result.stderr) == (1, "", f"error: {expected}\n")


ACCEPTED: list[Any] = [
    pytest.param("\ufeff" + BASE, 26, id="utf-8-bom"),
    pytest.param(BASE.replace("\n", "\r\n"), 26, id="crlf"),
    pytest.param(
        "x-base: &base {ddl: 'CREATE TABLE t (id BIGINT PRIMARY KEY, v INT)', rows: 5}\n"
        "tables: [{<<: *base, weight: 2}]\noperations: {events: 20}\n",
        26,
        id="anchors-and-merge-keys",
    ),
    pytest.param(
        columns("{s: {choice: ['😀', 'ß', '\u202e']}}").replace(", UNIQUE KEY (s)", ""),
        26,
        id="unicode-values",
    ),
    pytest.param(
        columns("{v: {uniform: [-1e300, 1e300]}}")
        .replace("v INT", "v DOUBLE")
        .replace("events: 20", "events: 2e1"),
        26,
        id="huge-doubles",
    ),
    pytest.param("database: shop\n" + BASE, 27, id="a-database-of-its-own"),
]


@pytest.mark.parametrize(("spec", "events"), ACCEPTED)
def test_odd_but_valid_specs_run(tmp_path: Path, spec: str, events: int) -> None:
    """Each gives its DDL and rows as JSON lines (the DDL, 5 initial rows, 20 events less
    those folded in their transactions)."""
    path = tmp_path / "w.yaml"
    path.write_text(spec, newline="")
    result = generate(path)
    assert (result.exit_code, result.stderr) == (0, "")
    lines = [orjson.loads(line) for line in result.stdout.splitlines()]
    assert lines[0]["action"] in ("CREATE_SCHEMA", "CREATE_TABLE")
    assert 5 < len(lines) <= events and all(line["commit_ts"] for line in lines)


@pytest.mark.parametrize(
    ("key", "mix", "events"),
    [
        pytest.param("PRIMARY KEY (id, v)", "{insert: 1, update: 1, delete: 1}", 1, id="composite"),
        pytest.param("PRIMARY KEY (id)", "{insert: 0, update: 1, delete: 1}", 50, id="no-inserts"),
    ],
)
def test_updates_and_deletes_of_an_empty_table_write_nothing(
    tmp_path: Path, key: str, mix: str, events: int
) -> None:
    """An update or delete with no live row to take writes nothing, also when a whole block
    of them does (was an IndexError): the DDL alone, in one process and in a Spark task that
    owns none of the block's rows."""
    from ticdc_sim.generator.workload import Generator, load
    from ticdc_sim.generator.workload.run import Block

    path = tmp_path / "w.yaml"
    path.write_text(
        f"tables:\n  - ddl: CREATE TABLE t (id BIGINT, v BIGINT, {key})\n    rows: 0\n"
        f"operations:\n  events: {events}\n  mix: {mix}\n"
    )
    result = generate(path, "--sink-uri", "blackhole://?protocol=canal-json")
    assert (result.exit_code, result.stdout, result.stderr) == (
        0,
        "",
        "0 rows, 1 DDL, 0 checkpoints -> records per topic: ticdc: 1\n",
    )
    generator = Generator(load(path))
    blocks = [item for item in generator.blocks() if isinstance(item, Block)]
    assert len(blocks) == 1
    unowned = np.zeros(len(blocks[0].tables), dtype=bool)
    assert len(generator.fold(blocks[0], unowned)) == 0
