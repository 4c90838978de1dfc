"""Directory output that never looks complete before it is: what jsonl:// and parquet:// share.

Files are written into `.DIR.partial` beside DIR; `commit()` moves them into place when the
run succeeds, `keep_partial()` leaves them as `DIR.partial` after a failure. The target must
be absent, empty, or (with `overwrite`) hold only the sink's own layout, so a mistyped path
never deletes someone's data.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from ticdc_sim.errors import ConfigError
from ticdc_sim.sinks import LocalSink


class Staging:
    def __init__(
        self, root: Path, sink: str, overwrite: bool, ours: Callable[[Path], bool]
    ) -> None:
        """`ours(entry)`: whether a top-level entry of DIR is this sink's own output."""
        self.root = root
        _check_target(root, sink, overwrite, ours)
        self.work = root.parent / f".{root.name}.partial"
        if self.work.exists():  # left by a run that was killed: ours to replace
            shutil.rmtree(self.work)
        self.work.mkdir(parents=True)

    def commit(self) -> None:
        if self.root.exists():
            shutil.rmtree(self.root)  # checked at open: empty, or earlier output of ours
        self.work.rename(self.root)

    def keep_partial(self) -> None:
        partial = self.root.parent / f"{self.root.name}.partial"
        if partial.exists():
            shutil.rmtree(partial)
        self.work.rename(partial)


class StagedSink(LocalSink):
    """A directory sink: `_finish` writes what is buffered and closes the files; `close`
    moves the output into place, or to `DIR.partial` if that fails; `abort` keeps what was
    sent as `DIR.partial`, never where complete output would be."""

    staging: Staging

    def _finish(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        try:
            self._finish()
        except BaseException:
            self.staging.keep_partial()
            raise
        self.staging.commit()

    def abort(self) -> None:
        try:
            self._finish()
        finally:
            self.staging.keep_partial()


def _check_target(root: Path, sink: str, overwrite: bool, ours: Callable[[Path], bool]) -> None:
    if root.exists() and not root.is_dir():
        raise ConfigError(f"{sink} sink: {root} exists and is not a directory")
    entries = list(root.iterdir()) if root.exists() else []
    if entries and not overwrite:
        raise ConfigError(f"{sink} sink: {root} is not empty; pass --overwrite to replace it")
    for entry in entries:
        if not ours(entry):
            raise ConfigError(
                f"{sink} sink: {root} holds {entry.name!r}, which is not ticdc-sim output;"
                " refusing to overwrite it"
            )
