"""The streaming splitter: its one-line shortcut must split exactly as the full scan does."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from ticdc_sim.errors import Location, SQLError
from ticdc_sim.generator.sql import script
from ticdc_sim.generator.sql.engine import Engine
from ticdc_sim.generator.sql.script import RawStatement, split_script

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"

# Fragments that exercise what the shortcut must leave to the scan: quotes of every kind,
# doubled and escaped quotes, `;` inside strings and comments, comments of every kind.
FRAGMENTS = [
    "INSERT INTO t VALUES (1, 'a');",
    "INSERT INTO t VALUES (2, 'it''s');",
    "INSERT INTO t VALUES (3, 'semi;colon');",
    'INSERT INTO t VALUES (4, "dq;\'");',
    "INSERT INTO t VALUES (5, 'back\\'slash;');",
    "UPDATE `we;ird` SET a = 1;",
    "SELECT 1; -- trailing; comment",
    "SELECT 2; # hash; comment",
    "/* block; comment */ SELECT 3;",
    "/* open block",
    "still; inside */ SELECT 4;",
    "SELECT 'multi",
    "line; string';",
    "DELETE FROM t",
    "WHERE id = 6;",
    "   ",
    "",
    "  ;  ",
    "SELECT 7; SELECT 8;",
    "INSERT INTO t VALUES (9, '--not a comment');",
    "INSERT INTO t VALUES (10, 'a'), (11, 'b');",
    # strings that span lines and hold the other quotes (issue 11, family 1)
    "INSERT INTO t VALUES (12, 'a",
    '"\'), (13, "b");',
    'INSERT INTO t VALUES (14, "x',
    "';\"), (15, `y",
    "`);",
    "INSERT INTO t VALUES (16, 'esc\\",
    "aped\\\\'); SELECT '/* not a comment';",
]


def split_both(lines: list[str], monkeypatch: pytest.MonkeyPatch) -> tuple[list[RawStatement], ...]:
    fast = list(split_script(lines, "s.sql"))
    with monkeypatch.context() as patch:
        patch.setattr(script, "_ends_one_statement", lambda line: False)
        scanned = list(split_script(lines, "s.sql"))
    return fast, scanned


def test_shortcut_splits_random_scripts_like_the_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(7)
    for _ in range(300):
        lines = [rng.choice(FRAGMENTS) + "\n" for _ in range(rng.randint(1, 12))]
        try:
            fast, scanned = split_both(lines, monkeypatch)
        except SQLError:  # an unterminated quote: both must say so
            with pytest.raises(SQLError):
                split_both(lines, monkeypatch)
            continue
        assert fast == scanned, lines


def test_shortcut_takes_the_common_line_with_its_location() -> None:
    lines = [
        "\n",
        "  INSERT INTO t VALUES (1, 'a;'), (2, 'it''s');  \n",
        "UPDATE t\n",
        "SET a = 1;\n",
    ]
    assert list(split_script(lines, "s.sql")) == [
        RawStatement("INSERT INTO t VALUES (1, 'a;'), (2, 'it''s')", Location("s.sql", 2, 3)),
        RawStatement("UPDATE t\nSET a = 1", Location("s.sql", 3, 1)),
    ]


def test_shortcut_splits_the_corpus_like_the_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    files = sorted(CORPUS.rglob("*.sql")) if CORPUS.is_dir() else []
    if not files:
        pytest.skip(f"no corpus at {CORPUS}")
    for path in files:
        text = path.read_text(encoding="utf-8", errors="surrogateescape")
        fast, scanned = split_both(text.splitlines(keepends=True), monkeypatch)
        assert fast == scanned, path


def reference_split(text: str) -> list[str]:
    """The mysql client's splitting, one character at a time: the independent reference."""
    out: list[str] = []
    current: list[str] = []
    quote = ""
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if quote:
            current.append(c)
            if c == "\\" and quote != "`" and i + 1 < n:
                current.append(text[i + 1])
                i += 1
            elif c == quote:
                if text.startswith(quote, i + 1):
                    current.append(quote)
                    i += 1
                else:
                    quote = ""
        elif c in "'\"`":
            quote = c
            current.append(c)
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0 and _normal("".join(current)):  # a statement cut off inside it
                raise SQLError("unterminated")
            end = n if end < 0 else end + 2
            current.append(text[i:end])
            i = end - 1
        elif text.startswith("--", i) or c == "#":
            end = text.find("\n", i)
            end = n if end < 0 else end
            current.append(text[i:end])  # kept, as the client sends it
            i = end - 1
        elif c == ";":
            out.append("".join(current))
            current = []
        else:
            current.append(c)
        i += 1
    if quote:
        raise SQLError("unterminated")
    out.append("".join(current))
    return [_normal(s) for s in out if _normal(s)]


def _normal(text: str) -> str:
    """Statement text without comments that stand alone, for comparing the two splitters."""
    text = text.strip()
    while text.startswith(("/*", "--", "#")) and not text.startswith(("/*!", "/*T!")):
        block = text.startswith("/*")
        end = text.find("*/" if block else "\n")
        text = "" if end < 0 else text[end + (2 if block else 1) :].strip()
    return text


def test_split_matches_a_character_by_character_reference() -> None:
    rng = random.Random(11)
    for _ in range(500):
        lines = [rng.choice(FRAGMENTS) + "\n" for _ in range(rng.randint(1, 12))]
        text = "".join(lines)
        try:
            expected = reference_split(text)
        except SQLError:
            with pytest.raises(SQLError):
                list(split_script(lines, "s.sql"))
            continue
        got = [_normal(raw.text) for raw in split_script(lines, "s.sql")]
        assert got == expected, text


def test_a_string_spanning_lines_is_one_value() -> None:
    from ticdc_sim.generator.sql.engine import Engine

    lines = [
        "CREATE TABLE t (id INT PRIMARY KEY, s VARCHAR(10));\n",
        "INSERT INTO t VALUES (1, 'a\n",
        '"\'), (2, "b");\n',
    ]
    events = list(Engine().run(split_script(lines, "s.sql")))
    assert [e.columns for e in events[1:]] == [(1, 'a\n"'), (2, "b")]


def test_a_statement_sqlglot_cannot_parse_is_our_error_alone(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # sqlglot logged "Falling back to parsing as a 'Command'" before our error
    with caplog.at_level("DEBUG"), pytest.raises(SQLError) as error:
        list(script.parse_statements("SHOW FOOBAR BAZ", "x.sql"))
    assert str(error.value) == (
        "x.sql:1:1: ERROR 1105 (HY000): statement not supported by the TiDB dialect\n"
        "  in: SHOW FOOBAR BAZ"
    )
    assert caplog.records == []


@pytest.mark.parametrize(
    ("statement", "message"),
    [
        (
            "LOAD DATA LOCAL INFILE '/tmp/rows.csv' INTO TABLE t FIELDS TERMINATED BY ','",
            "LOAD DATA is not simulated: insert the rows with INSERT",
        ),
        (
            "load data infile 'rows.csv' into table t",
            "LOAD DATA is not simulated: insert the rows with INSERT",
        ),
        (
            "IMPORT INTO t FROM 's3://bucket/rows.csv'",
            "IMPORT INTO is not simulated: insert the rows with INSERT",
        ),
    ],
)
def test_statements_that_load_files_are_refused_clearly(statement: str, message: str) -> None:
    # issue 25: LOAD DATA was a syntax error near its file name (1064)
    raw = list(split_script(["SELECT 1;\n", f"  {statement};\n"], "load.sql"))[1]
    error = Engine().step(raw)
    assert error is not None
    assert (error.code, error.message, error.location) == (
        1105,
        message,
        Location("load.sql", 2, 3),
    )


# Thread A parses a deep statement, held inside its parse until thread B, started meanwhile,
# is deeper than the old limit (which A's raised limit allows); then A's parse ends and B
# goes deeper still.
_TWO_THREADS = """
import sys, threading
from sqlglot import exp
from ticdc_sim.generator.sql import script

inside, release, deep, go = (threading.Event() for _ in range(4))
real_parser = script._DIALECT.parser

class Held:
    def __init__(self, **options):
        self.inner = real_parser(**options)
    def parse(self, tokens, text):
        inside.set()
        release.wait(10)
        return [exp.Select()]

script._DIALECT.parser = Held
limit = sys.getrecursionlimit()
outcome = []

def descend(levels, then=None):
    if levels:
        return descend(levels - 1, then) + 1
    if then is not None:
        deep.set()
        then.wait(10)
        return descend(50)
    return 0

def thread_b():
    inside.wait(10)
    try:
        outcome.append(descend(limit + 100, go))
    except RecursionError as e:
        outcome.append(repr(e))

a = threading.Thread(target=lambda: list(script.parse_statements("SELECT " + "(" * 30 + "1")))
b = threading.Thread(target=thread_b)
a.start(); b.start()
deep.wait(10); release.set(); a.join(10); go.set(); b.join(10)
print(outcome == [limit + 150], sys.getrecursionlimit() > limit)
"""


def test_a_deep_parse_never_lowers_the_recursion_limit_under_another_thread() -> None:
    """Issue 25: the limit raised for a deep statement was put back when its parse ended,
    under another thread deeper than the old limit at that moment: the interpreter aborted
    (a fatal stack overflow, the whole service with it). In a process of its own."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _TWO_THREADS], capture_output=True, text=True, timeout=60
    )
    assert (done.returncode, done.stdout.strip()) == (0, "True True"), done.stderr[-500:]


@pytest.mark.parametrize(
    ("opener", "closer", "counted"),
    [("(", ")", 0), ("abs(", ")", 3), ("CASE WHEN 1 THEN ", " END", 0), ("NOT ", "", 0)],
    ids=["parentheses", "calls", "case", "not"],
)
def test_nesting_is_bounded_with_a_located_syntax_error(
    opener: str, closer: str, counted: int
) -> None:
    deepest = script.MAX_NESTING
    statement = f"SELECT {opener * deepest}1{closer * deepest}"
    (parsed,) = script.parse_statements(statement)  # the limit itself parses
    assert parsed.text == statement
    deeper = f"SELECT {opener * (deepest + 1)}1{closer * (deepest + 1)}"
    with pytest.raises(SQLError) as error:
        list(script.parse_statements(f"SELECT 1;\n{deeper}", "deep.sql"))
    column = len("SELECT ") + len(opener) * deepest + counted + 1  # the token past the limit
    assert error.value.code == 1064
    assert error.value.location == Location("deep.sql", 2, column)
    assert error.value.message.endswith(
        f'line 2 column {column} near "{deeper[column - 1 : column + 19]}"'
        " (expressions nest more than 100 levels deep)"
    )


def test_the_mysql_clients_delimiter_command_in_a_script() -> None:
    """A script file's `DELIMITER //` (as mysqldump writes around triggers and routines)
    makes `//` end statements until `DELIMITER ;`, as the mysql client reads it; a `;`
    between is text, a delimiter inside quotes or comments is not one. It was sent on as
    SQL: ERROR 1064 ... (Required keyword: 'expression' missing for <class '...Div'>)."""
    lines = [
        "SELECT 1;\n",
        "DELIMITER $$\n",
        "CREATE PROCEDURE p() BEGIN SELECT 'a;$$'; SELECT 2; END$$\n",
        "/* $$ */ SELECT 3 -- $$\n",
        "$$ SELECT 4$$\n",
        "delimiter ;\r\n",
        "SELECT 5;\n",
        '\\d "//"\n',
        "SELECT 6//\n",
    ]
    assert list(split_script(lines, "s.sql", client=True)) == [
        RawStatement("SELECT 1", Location("s.sql", 1, 1)),
        RawStatement(
            "CREATE PROCEDURE p() BEGIN SELECT 'a;$$'; SELECT 2; END", Location("s.sql", 3, 1)
        ),
        RawStatement("SELECT 3 -- $$", Location("s.sql", 4, 10)),
        RawStatement("SELECT 4", Location("s.sql", 5, 4)),
        RawStatement("SELECT 5", Location("s.sql", 7, 1)),
        RawStatement("SELECT 6", Location("s.sql", 9, 1)),
    ]
    # what a client sends a server is SQL: there DELIMITER is a syntax error, as in TiDB
    assert [raw.text for raw in split_script(lines[:3], "q")] == [
        "SELECT 1",
        "DELIMITER $$\nCREATE PROCEDURE p() BEGIN SELECT 'a;$$'",
        "SELECT 2",
        "END$$",
    ]
    with pytest.raises(SQLError) as refused:
        list(split_script(["DELIMITER '\n"], "s.sql", client=True))
    assert str(refused.value) == (
        's.sql:1:1: ERROR 1064 (42000): DELIMITER "\'": a delimiter is a word without quotes,'
        " backslashes or comment starts, e.g. DELIMITER //"
    )


def test_a_syntax_errors_reason_names_no_python_class() -> None:
    """sqlglot's reason is kept, its node class by name (it read `<class
    'sqlglot.expressions.core.Div'>`)."""
    with pytest.raises(SQLError) as refused:
        list(script.parse_statements("SELECT 1 /", "s.sql"))
    assert str(refused.value) == (
        "s.sql:1:10: ERROR 1064 (42000): You have an error in your SQL syntax; check the manual"
        " that corresponds to your TiDB version for the right syntax to use line 1 column 10"
        " near \"/\" (Required keyword: 'expression' missing for Div)\n  in: SELECT 1 /"
    )


def test_a_statement_cut_off_inside_a_comment_is_said_where_the_comment_opened() -> None:
    """As a statement cut off inside a quote: located at the `/*` (it was sqlglot's
    "Error tokenizing 'INSERT ...'" at line 1 column 1); a comment alone at the end is
    no statement, as the mysql client reads it."""
    lines = ["SELECT 1;\n", "INSERT INTO t VALUES (1) /* to be\n", "continued\n"]
    with pytest.raises(SQLError) as refused:
        list(split_script(lines, "s.sql"))
    assert str(refused.value) == (
        "s.sql:2:26: ERROR 1064 (42000): unterminated /* comment at end of script"
    )
    assert [raw.text for raw in split_script(["SELECT 1;\n", "/* the end\n"], "s.sql")] == [
        "SELECT 1"
    ]
