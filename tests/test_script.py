"""The streaming splitter: its one-line shortcut must split exactly as the full scan does."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from ticdc_sim.errors import SQLError
from ticdc_sim.generator.sql import script
from ticdc_sim.generator.sql.script import Location, RawStatement, split_script

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
