"""Directory output that never looks complete before it is: what jsonl:// and parquet:// share.

A run (a CLI replay, a workload) writes its files into `.DIR.partial` beside DIR; `commit()`
moves them into place when the run succeeds, `keep_partial()` leaves them as `DIR.partial`
after a failure. A long-running changefeed (the service's) has no end to wait for: it writes
`in_place`, into DIR itself, and its sink's `flush()` makes what was sent readable there at
each checkpoint, as TiCDC's storage sink writes its files as it goes. Either way the target
must be absent, empty, or (with `overwrite`) hold only the sink's own layout, so a mistyped
path never deletes someone's data. A DIR that exists stays where it is and gets the new
entries (a symlink's target, a mount point, the working directory given as `.`); a new one
is the staged directory, renamed.

Beside the records a run may keep files of its own (`BESIDE`: avro's schema registry, whose
ids the records name), written into the work directory when the sink closes, so that they
move into place with the records (or into DIR.partial with them).
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from ticdc_sim.errors import ConfigError, SimError
from ticdc_sim.sinks import LocalSink
from ticdc_sim.sinks.retention import cannot_write

# files a directory sink keeps beside its topics: the schema registry of an avro run
REGISTRY_FILE = "schema-registry.json"
BESIDE = frozenset({REGISTRY_FILE})


def write_atomically(path: Path, data: bytes) -> None:
    """`path` holds `data` whole or is left as it was: a temporary file, then a rename."""
    temporary = path.with_name(f".{path.name}.tmp")
    try:
        temporary.write_bytes(data)
        os.replace(temporary, path)
    except OSError as e:
        with contextlib.suppress(OSError):
            temporary.unlink(missing_ok=True)  # what a full disk let through is no use
        raise cannot_write(path, e) from None


class NotEmpty(ConfigError):
    """The target directory holds earlier output, and replacing it was not asked for;
    `asked_by` is how the caller asks (the CLI's flag, the Python API's argument)."""

    def __init__(self, sink: str, root: Path | str, asked_by: str = "--overwrite") -> None:
        super().__init__(f"{sink} sink: {root} is not empty; pass {asked_by} to replace it")
        self.sink, self.root = sink, root


class Finishing(Protocol):
    """How a sink's output is put in place at its end (`Staging`; an S3 store's objects are
    in place as written)."""

    replaced: bool  # whether earlier output of the sink's was there (and is gone)

    def commit(self) -> None: ...

    def keep_partial(self) -> None: ...

    def location(self) -> str:
        """Where the output is, for messages."""
        ...


class Staging:
    def __init__(
        self,
        root: Path,
        sink: str,
        overwrite: bool,
        ours: Callable[[Path], bool],
        *,
        in_place: bool = False,
    ) -> None:
        """`ours(entry)`: whether a top-level entry of DIR is this sink's own output."""
        self.root, self.sink, self.in_place = root, sink, in_place
        # the directory itself, through symlinks, `.` and `..`: the work goes beside it
        self.target = Path(os.path.realpath(root))
        self.work = root if in_place else self.target.parent / f".{self.target.name}.partial"
        self.replaced = False  # whether earlier output of ours was there (and is gone)
        try:
            _check_target(root, sink, overwrite, ours)
            if in_place:
                for entry in list(root.iterdir()) if root.exists() else []:
                    _remove(entry)  # checked: earlier output of ours
                    self.replaced = True
                root.mkdir(parents=True, exist_ok=True)
                return
            if self.work.exists():  # left by a run that was killed: ours to replace
                shutil.rmtree(self.work)
            self.work.mkdir(parents=True)
        except OSError as e:
            raise ConfigError(f"{sink} sink: cannot write {self.work}: {e.strerror}") from None

    def location(self) -> str:
        return str(self.target)

    def commit(self) -> None:
        if self.in_place:
            return
        try:
            if not self.target.exists():
                self.work.rename(self.target)
                return
            for entry in list(self.target.iterdir()):
                _remove(entry)  # checked at open: earlier output of ours
            for entry in list(self.work.iterdir()):
                shutil.move(entry, self.target / entry.name)  # a copy across file systems
            self.work.rmdir()
        except OSError as e:
            raise SimError(
                f"{self.sink} sink: cannot move the output into {self.root}: {e.strerror}"
            ) from None

    def keep_partial(self) -> None:
        if self.in_place:  # what was flushed stays; each file holds whole records only
            return
        partial = partial_dir(self.root)
        try:
            if partial.exists():
                shutil.rmtree(partial)
            if self.work.exists():
                self.work.rename(partial)
        except OSError as e:
            raise SimError(
                f"{self.sink} sink: cannot keep what was sent as {partial}: {e.strerror}"
            ) from None


def _remove(entry: Path) -> None:
    if entry.is_dir() and not entry.is_symlink():
        shutil.rmtree(entry)
    else:
        entry.unlink()


def partial_dir(root: Path) -> Path:
    """Where a failed run leaves what it sent: DIR.partial beside DIR (the directory itself,
    through symlinks, `.` and `..`)."""
    target = Path(os.path.realpath(root))
    return target.parent / f"{target.name}.partial"


class StagedSink(LocalSink):
    """A directory sink: `_finish` writes what is buffered and closes the files; `close`
    moves the output into place, or to `DIR.partial` if that fails; `abort` keeps what was
    sent as `DIR.partial`, never where complete output would be."""

    staging: Finishing
    _beside: dict[str, Callable[[], bytes]] | None = None

    def beside(self, name: str, content: Callable[[], bytes]) -> None:
        """Keep a file `name` (one of `BESIDE`) beside the records of a directory, its
        content asked for when the sink closes or flushes."""
        assert name in BESIDE and isinstance(self.staging, Staging)
        self._beside = {**(self._beside or {}), name: content}

    def _write_beside(self) -> None:
        for name, content in (self._beside or {}).items():
            assert isinstance(self.staging, Staging)  # `beside` is a directory's
            write_atomically(self.staging.work / name, content())

    def _finish(self) -> None:
        raise NotImplementedError

    def flush(self) -> None:
        """What was sent, readable where it lands, the sink left open: a long-running
        changefeed's checkpoint."""
        raise NotImplementedError

    def close(self) -> None:
        try:
            self._finish()
            self._write_beside()
            self.staging.commit()
        except BaseException:
            self.staging.keep_partial()
            raise

    def abort(self) -> None:
        try:
            self._finish()
            self._write_beside()
        finally:
            self.staging.keep_partial()


def _check_target(root: Path, sink: str, overwrite: bool, ours: Callable[[Path], bool]) -> None:
    if root.exists() and not root.is_dir():
        raise ConfigError(f"{sink} sink: {root} exists and is not a directory")
    entries = list(root.iterdir()) if root.exists() else []
    if entries and not overwrite:
        raise NotEmpty(sink, root)
    for entry in entries:
        if not ours(entry) and not (entry.name in BESIDE and entry.is_file()):
            raise ConfigError(
                f"{sink} sink: {root} holds {entry.name!r}, which is not ticdc-sim output;"
                " refusing to overwrite it"
            )
