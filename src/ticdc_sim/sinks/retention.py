"""What file sinks share about the disk they write (`sinks.OnDisk`): the files a sink keeps,
in the order it finished them; a cap on their bytes that removes the oldest finished files
first, never one still being written; and a write the file system refuses (a full disk, a
directory that cannot be written) as one error, with the code TiCDC's changefeed shows.

TiCDC's storage sink removes its files by age only (`file-expiration-days` on
`file-cleanup-cron-spec`, pkg/sink/cloudstorage/path.go `RemoveExpiredFiles`); a service left
running behind a load test needs a bound in bytes instead (`TICDC_SIM_FILE_RETAIN_BYTES`).
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import NamedTuple

from ticdc_sim.errors import SimError

# TiCDC's code for a file its storage sink could not write: br/pkg/storage's LocalStorage.
# WriteFile returns the os error as it is (errors.Trace), the dml worker hands it up unwrapped,
# and the processor records an error without an RFC code as ErrProcessorUnknown
# (cdc/processor/processor.go handleErr). jsonl and parquet are files on a local disk too.
WRITE_FAILED = "CDC:ErrProcessorUnknown"


class WriteFailed(SimError):
    """A file sink's write the file system refused. Not retried: a full disk or a directory
    that cannot be written stays so until someone acts, so the changefeed fails at once and
    is resumed through the API once the cause is gone."""

    error_code = WRITE_FAILED
    retryable = False


class Rotation(NamedTuple):
    """How a jsonl or parquet sink rolls its files: a new one at `file_size` bytes (None:
    one file per partition, a CLI run's layout), a parquet file also at a checkpoint once
    `interval_s` has passed since the partition's last (TiCDC's flush-interval); the bytes
    kept capped at `retain_bytes` (0: no cap)."""

    file_size: int | None = None
    retain_bytes: int = 0
    interval_s: float = 0.0


ONE_FILE = Rotation()  # a CLI run's: a file per partition, nothing removed


def cannot_write(path: str | os.PathLike[str], error: OSError | Exception) -> WriteFailed:
    """`cannot write PATH: No space left on device`: the OS's words for its errno (pyarrow's
    OSError wraps them in its own), else the library's."""
    if isinstance(error, OSError) and error.errno:
        return WriteFailed(f"cannot write {path}: {os.strerror(error.errno)}")
    return WriteFailed(f"cannot write {path}: {error}")


def size_text(size: int) -> str:
    """Bytes for a person: `812 bytes`, `4.0 KiB`, `412.3 MiB`, `1.5 GiB`."""
    if size < 1024:
        return f"{size} bytes"
    value, unit = size / 1024, "KiB"
    for bigger in ("MiB", "GiB"):
        if value < 1024:
            break
        value, unit = value / 1024, bigger
    return f"{value:.1f} {unit}"


def files_text(count: int) -> str:
    return f"{count} file" if count == 1 else f"{count} files"


class Retention:
    """A sink's finished files, oldest first, and what `trim` removed of them to keep the
    sink's bytes (its files being written included) within `limit` (0: no limit). `remove`
    deletes one by the name it was given."""

    def __init__(self, limit: int, remove: Callable[[str], None] | None = None) -> None:
        self.limit = limit
        self.remove = remove or _unlink
        self.closed: deque[tuple[str, int]] = deque()
        self.closed_bytes = 0
        self.removed_bytes = 0
        self.removed_files = 0

    def add(self, name: str, size: int) -> None:
        """A file finished: it may be removed from now on."""
        self.closed.append((name, size))
        self.closed_bytes += size

    def usage(self, live: tuple[int, int]) -> tuple[int, int]:
        """Bytes and files kept, `live` (those being written: bytes, files) included."""
        return self.closed_bytes + live[0], len(self.closed) + live[1]

    def trim(self, live_bytes: int, keep: Callable[[str], bool] | None = None) -> None:
        """The oldest finished files removed while the bytes kept pass the limit; `keep`:
        files that must stay although finished (a storage sink's newest of a directory)."""
        if not self.limit:
            return
        kept: list[tuple[str, int]] = []
        while self.closed and self.closed_bytes + live_bytes > self.limit:
            name, size = self.closed.popleft()
            if keep is not None and keep(name):
                kept.append((name, size))
                continue
            self.remove(name)
            self.closed_bytes -= size
            self.removed_bytes += size
            self.removed_files += 1
        self.closed.extendleft(reversed(kept))

    def removed(self) -> tuple[int, int]:
        return self.removed_bytes, self.removed_files

    def remaining(
        self, usage: tuple[int, int], where: str, first: Mapping[tuple[str, int], int]
    ) -> str:
        """What remains on disk, for a person: `3.0 MiB in 4 files remain in DIR`, and once
        the cap removed files, from which offset each partition's records start
        (`first`, those past 0) and what went: `(ticdc[0] from offset 1200, ...; 6 files
        (4.5 MiB) removed by the cap)`."""
        text = f"{size_text(usage[0])} in {files_text(usage[1])} remain in {where}"
        if not self.removed_files:
            return text
        starts = [
            f"{topic}[{partition}] from offset {offset}"
            for (topic, partition), offset in sorted(first.items())
            if offset
        ]
        went = f"{files_text(self.removed_files)} ({size_text(self.removed_bytes)})"
        return f"{text} ({', '.join([*starts, f'{went} removed by the cap'])})"


def _unlink(name: str) -> None:
    try:
        Path(name).unlink()
    except FileNotFoundError:
        pass  # gone already (a person cleaned up): what it held is no longer kept either way
    except OSError as e:
        raise WriteFailed(f"cannot remove {name}: {e.strerror}") from None
