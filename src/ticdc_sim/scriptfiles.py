"""SQL script files as the mysql client reads them: checked before anything runs, read
lazily (memory holds one statement, not the file), pipes included. The CLI's `replay` and
`ddl` and the Python API's `Simulator.execute_file` read scripts here."""

from __future__ import annotations

import stat
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from ticdc_sim.errors import SQLError
from ticdc_sim.generator.sql.script import RawStatement, split_script


def check_scripts(scripts: list[Path]) -> None:
    """Every script readable and text, before anything is opened or written. A pipe
    (`/dev/stdin`, `<(zcat dump.sql.gz)`) can be read once only: it is checked as it
    streams (`statements`)."""
    for path in scripts:
        try:
            if _piped(path):
                continue
            with path.open("rb") as handle:
                head = handle.read(1 << 16)
        except OSError as e:
            raise SQLError(f"cannot read {path}: {e.strerror}") from None
        if b"\0" in head:
            raise SQLError(
                f"{path} is not a SQL script: binary data (a NUL byte at offset {head.index(0)})"
            )


def _piped(path: Path) -> bool:
    """A FIFO, a character device or a socket: what a first read would consume."""
    mode = path.stat().st_mode
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def _text_lines(lines: Iterable[str], path: Path) -> Iterator[str]:
    """A piped script's lines, checked as `check_scripts` checks a file's start."""
    for number, line in enumerate(lines, 1):
        if "\0" in line:
            raise SQLError(f"{path} is not a SQL script: binary data (a NUL byte on line {number})")
        yield line


def statements(
    scripts: list[Path], skipped: Callable[[SQLError], None] | None = None
) -> Iterator[RawStatement]:
    """Statements of every script, read lazily: memory holds one statement, not the file. A
    UTF-8 byte order mark that starts a file is skipped, as the mysql client skips it
    (mysql.cc, read_and_execute). A file that ends inside a quote ends the run, or with
    `skipped` (--continue-on-error) is reported to it and the next file follows."""
    for path in scripts:
        try:
            handle = path.open(encoding="utf-8-sig", errors="surrogateescape", newline="")
        except OSError as e:
            raise SQLError(f"cannot read {path}: {e.strerror}") from None
        with handle:
            lines = _text_lines(handle, path) if _piped(path) else handle
            try:
                yield from split_script(lines, str(path), client=True)
            except SQLError as e:
                if skipped is None:
                    raise
                skipped(e)
