"""`file://DIR`, `s3://BUCKET/PREFIX`: TiCDC's storage sink, files by table rather than records
by topic and partition.

Mirrors tiflow `cdc/sink/dmlsink/cloudstorage` (`cloud_storage_dml_sink.go`, `dml_worker.go`),
`cdc/sink/ddlsink/cloudstorage/cloud_storage_ddl_sink.go` and `pkg/sink/cloudstorage/path.go`.
The layout, relative to DIR (or under PREFIX; the files go through `sinks/store.py`, which
knows nothing of it):

    {schema}/{table}/{table-version}[/{partition-id}][/{date}]/CDC{n}.{csv|json}
    {schema}/{table}/{table-version}[/{partition-id}][/{date}]/meta/CDC.index
    {schema}/{table}/meta/schema_{table-version}_{checksum}.json
    {schema}/meta/schema_{version}_{checksum}.json        (schema-level DDL)
    metadata                                               ({"checkpoint-ts":N})

How it is driven: TiCDC's storage sink has no topics or partitions; its table sinks hand each
row to the dml workers by *versioned table* (schema, table, table version, physical table id),
which buffer the encoded rows and write one new data file per versioned table when a
`flush-interval` ticker fires or, once a transaction's rows are in, a buffer holds `file-size`
bytes or more (`dml_worker.go genAndDispatchTask`). So the pipeline, seeing
`by_table`, gives this sink whole batches (`rows`: each row with its one encoded message), each
DDL (`ddl`), each checkpoint (`checkpoint`) and its clock (`tick`), in place of `send`. Times
are the simulated clock's (the commit's physical ms), so a script's `DO SLEEP(n)` passes flush
intervals and date boundaries at once.

- table version: the commit ts of the last DDL of the table (by name) in the run (TiCDC's
  `TableInfo.Version` after it); a table no DDL of the run touched gets the changefeed's start,
  taken as the first event's commit ts - 1.
- a data file's number counts up from 1 and starts again in a new date directory
  (`FilePathGenerator.generateDataFileName`); `meta/CDC.index` names the newest file, and is
  written before it. Numbers are `file-index-digit` wide. TiCDC counts per versioned table,
  physical table id included, so with `enable-partition-separator = false` the partitions of
  a table number their files in one directory each from 1 and overwrite each other's; here
  the count is per directory, so they number on and nothing is lost.
- the date directory (`date-separator` none/year/month/day) is the flush time's date. TiCDC
  takes it from its wall clock in the TiCDC process's local zone; here from the simulated
  clock, in UTC.
- schema files: each DDL writes its table's (or schema's) file at the DDL's commit ts, as the
  DDL sink does; a table version without one (no DDL in the run) gets its file, Query "" and
  Type 0, before its first data file (`CheckOrWriteSchema`).
- a DDL is a barrier: every buffered row is written before its schema file, as TiCDC flushes
  the table sinks before it runs a DDL.
- `metadata` holds the checkpoint, rewritten at most every 2 s of simulated time
  (`WriteCheckpointTs`) and never past a row still buffered; the last one when the sink closes.
- csv rows carry their terminator; canal-json rows get one after each (the txn encoder's
  `canal_json_txn_event_encoder.go`). A csv file starts with the header of its first row's
  message when `output-field-header` is on.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from ticdc_sim.config import Changefeed, SinkURI, duration_ms
from ticdc_sim.encoders import (
    CodecConfig,
    Decoded,
    DecodedCheckpoint,
    DecodedDDL,
    Message,
    cloudstorage,
    decoder_for,
)
from ticdc_sim.encoders.csv import HEADER_PREFIX
from ticdc_sim.encoders.csv import Decoder as CSVDecoder
from ticdc_sim.errors import ConfigError, DecodeError
from ticdc_sim.model.events import DDLEvent, RowChangedEvent
from ticdc_sim.model.table import TableInfo
from ticdc_sim.model.tso import physical_ms
from ticdc_sim.sinks import Record
from ticdc_sim.sinks.retention import Retention
from ticdc_sim.sinks.staging import StagedSink
from ticdc_sim.sinks.store import Store, open_store, read_store

CHECKPOINT_INTERVAL_MS = 2_000  # cloud_storage_ddl_sink.go: metadata at most every 2 s
_DATE_FORMATS = {"none": "", "year": "%Y", "month": "%Y-%m", "day": "%Y-%m-%d"}
_EXTENSIONS = {"csv": ".csv", "canal-json": ".json"}

# (schema, table, table version, physical table id or None)
FileKey = tuple[str, str, int, int | None]


@dataclass
class _Buffer:
    """A versioned table's rows since its last data file."""

    info: TableInfo
    header: bytes | None
    first_ts: int
    chunks: list[bytes] = field(default_factory=list)
    size: int = 0


class StorageSink(StagedSink):
    by_table = True  # the pipeline hands rows, DDL and checkpoints over as such

    def __init__(
        self,
        feed: Changefeed,
        *,
        overwrite: bool = False,
        in_place: bool = False,
        retain_bytes: int = 0,
        buffer_bytes: int | None = None,
    ):
        """`retain_bytes`: the cap on the data files kept (0: none), the oldest removed first,
        never the newest of a directory (its `CDC.index` names it); `buffer_bytes`: the rows
        all tables may buffer together (None: no bound but each table's `file-size`), the
        largest buffer written first beyond it."""
        self.store = open_store(feed.sink, _ours, overwrite=overwrite, in_place=in_place)
        self.retention = Retention(retain_bytes, self.store.delete)
        self.buffer_bytes = buffer_bytes
        self.newest: dict[str, str] = {}  # data directory -> its newest file (the index's)
        self.other: dict[str, int] = {}  # schema, index and metadata files -> their sizes
        self.staging = self.store.finishing
        self.on_file: Callable[[str, bytes], None] | None = None  # each file, once written
        codec = feed.codec
        self.extension = _EXTENSIONS[codec.protocol]
        self.row_end = codec.terminator.encode() if codec.protocol == "canal-json" else b""
        self.width = feed.file_index_width
        self.date_format = _DATE_FORMATS[feed.date_separator]
        self.by_partition = feed.enable_partition_separator
        self.flush_ms = int(duration_ms(feed.flush_interval))
        self.file_size = feed.file_size
        # (schema, table) -> version, from its last DDL: by name, as the paths are (a table
        # that EXCHANGE PARTITION gives a new id keeps its version)
        self.versions: dict[tuple[str, str], int] = {}
        self.start_version: int | None = None
        self.buffers: dict[FileKey, _Buffer] = {}
        self.indices: dict[str, int] = {}  # data directory -> the last file number
        self.schemas: set[tuple[str, str, int]] = set()  # (schema, table, version) written
        self.next_flush: int | None = None
        self.checkpoint_ts = 0
        self.written_ts = 0
        self.written_ms: int | None = None
        self.now_ms = 0
        self.files = 0  # data files written
        self.txn_ts = 0  # the transaction whose rows came last, and the files it touched
        self.txn_keys: dict[FileKey, None] = {}

    # -- what the pipeline calls -----------------------------------------------------------------

    def send(self, topic: str, partition: int, messages: Sequence[Message]) -> None:
        raise AssertionError("the storage sink takes rows by table (`rows`), not records")

    def rows(self, events: Sequence[RowChangedEvent], messages: Sequence[Message]) -> None:
        for event, message in zip(events, messages, strict=True):
            info = event.table
            if event.commit_ts != self.txn_ts:
                self._check_sizes()
                self.txn_ts = event.commit_ts
            self._start(event.commit_ts)
            version = self.versions.get((info.schema, info.name), self.start_version)
            assert version is not None
            part = event.physical_table_id if info.is_partitioned else None
            key = (info.schema, info.name, version, part)
            buffer = self.buffers.get(key)
            if buffer is None:
                buffer = self.buffers[key] = _Buffer(info, message.key, event.commit_ts)
            value = (message.value or b"") + self.row_end
            buffer.chunks.append(value)
            buffer.size += len(value)
            self.txn_keys[key] = None

    def _check_sizes(self) -> None:
        """dml_worker.go genAndDispatchTask: once a transaction's rows of a table are in,
        a buffer of `file-size` or more goes out at once (a transaction is never split)."""
        for key in self.txn_keys:
            buffer = self.buffers.get(key)
            if buffer is not None and buffer.size >= self.file_size:
                self._write(key, physical_ms(self.txn_ts))
        self.txn_keys.clear()
        if self.buffer_bytes is None:
            return
        # a service's bound on all tables' buffers together: the largest goes out first
        while self.buffers and sum(b.size for b in self.buffers.values()) > self.buffer_bytes:
            self._write(max(self.buffers, key=lambda k: self.buffers[k].size), self.now_ms)

    def tick(self, now_ms: int) -> None:
        """The simulated clock: every `flush-interval`, each buffered table's data file."""
        self.now_ms = max(self.now_ms, now_ms)
        self._check_sizes()
        if self.next_flush is None:
            self.next_flush = now_ms + self.flush_ms
        elif now_ms >= self.next_flush:
            self._write_all(now_ms)
            behind = (now_ms - self.next_flush) // self.flush_ms + 1
            self.next_flush += behind * self.flush_ms

    def ddl(self, event: DDLEvent) -> None:
        self._start(event.commit_ts)
        self._write_all(physical_ms(event.commit_ts))
        definition = cloudstorage.ddl_definition(event)
        self._put(cloudstorage.schema_path(definition), cloudstorage.schema_file(definition))
        if event.table_info is not None and event.table:
            info = event.table_info
            self.versions[(info.schema, info.name)] = event.commit_ts
            self.schemas.add((info.schema, info.name, event.commit_ts))

    def checkpoint(self, ts: int, final: bool = False) -> None:
        """The changefeed's checkpoint: `metadata`, at most every 2 s, never past a row
        still buffered."""
        self.checkpoint_ts = max(self.checkpoint_ts, ts)
        now = max(self.now_ms, physical_ms(ts))
        if (
            not final
            and self.written_ms is not None
            and now - self.written_ms < CHECKPOINT_INTERVAL_MS
        ):
            return
        buffered = [b.first_ts - 1 for b in self.buffers.values()]
        safe = min([self.checkpoint_ts, *buffered])
        if safe > self.written_ts:
            self._put(cloudstorage.METADATA, cloudstorage.metadata(safe))
            self.written_ts, self.written_ms = safe, now

    # -- files -----------------------------------------------------------------------------------

    def _start(self, ts: int) -> None:
        if self.start_version is None:
            self.start_version = ts - 1

    def _write_all(self, now_ms: int) -> None:
        self._check_sizes()
        for key in list(self.buffers):
            self._write(key, now_ms)

    def _write(self, key: FileKey, now_ms: int) -> None:
        buffer = self.buffers.pop(key)
        schema, table, version, part = key
        if (schema, table, version) not in self.schemas:
            definition = cloudstorage.definition(schema, buffer.info, version)
            self._put(cloudstorage.schema_path(definition), cloudstorage.schema_file(definition))
            self.schemas.add((schema, table, version))
        directory = f"{schema}/{table}/{version}"
        if part is not None and self.by_partition:
            directory += f"/{part}"
        if self.date_format:
            day = dt.datetime.fromtimestamp(now_ms / 1000, dt.UTC)
            directory += "/" + day.strftime(self.date_format)
        number = self.indices.get(directory, 0) + 1
        self.indices[directory] = number
        name = f"CDC{number:0{self.width}d}{self.extension}"
        self._put(f"{directory}/meta/CDC.index", f"{name}\n".encode())  # before the data
        data = (buffer.header or b"") + b"".join(buffer.chunks)
        self._put(f"{directory}/{name}", data, data_file=True)
        self.newest[directory] = f"{directory}/{name}"
        self.files += 1
        self.retention.trim(sum(self.other.values()), self._newest)

    def _newest(self, relative: str) -> bool:
        return self.newest.get(relative.rpartition("/")[0]) == relative

    def _put(self, relative: str, data: bytes, data_file: bool = False) -> None:
        self.store.put(relative, data)
        if data_file:
            self.retention.add(relative, len(data))
        else:
            self.other[relative] = len(data)
        if self.on_file is not None:
            self.on_file(relative, data)

    # -- what remains (`sinks.OnDisk`) -----------------------------------------------------------

    def disk_usage(self) -> tuple[int, int]:
        return self.retention.usage((sum(self.other.values()), len(self.other)))

    def removed(self) -> tuple[int, int]:
        return self.retention.removed()

    def remaining(self) -> str:
        return self.retention.remaining(self.disk_usage(), self.staging.location(), {})

    def durable_ts(self) -> int:
        """The checkpoint `metadata` says: never past a row not written."""
        return self.written_ts

    def written(self) -> Store:
        """The files written so far, to read while the sink is open."""
        return self.store.written()

    def flush(self) -> None:
        self._write_all(self.now_ms)
        self.checkpoint(self.checkpoint_ts, final=True)

    def _finish(self) -> None:
        self.flush()


_OUR_FILE = re.compile(r"CDC[0-9]+\.(csv|json)|CDC\.index|schema_[0-9]+_[0-9]{10}\.json")


def _ours(name: str) -> bool:
    """A file of the layout: `metadata` at the top, data, index and schema files below."""
    if "/" not in name:
        return name == cloudstorage.METADATA
    return _OUR_FILE.fullmatch(name.rpartition("/")[2]) is not None


# -- reading the layout back ---------------------------------------------------------------------

_DATA_FILE = re.compile(r"CDC([0-9]+)\.(csv|json)")
_DIGITS = re.compile(r"[0-9]+")
_SCHEMA_FILE_START = b'{\n    "Table": '  # json.MarshalIndent of a TableDefinition


def read_storage(source: Store | str) -> Iterator[Record]:
    """Every file of a storage layout (a store, or a directory's path) as TiCDC's storage
    consumer walks it (cmd/storage-consumer): by table version, each version's schema file
    before its data files, those by partition, date and number; `metadata` last. A record per
    file: `topic` its path under the root, the key its path too."""
    store = (
        source if not isinstance(source, str) else read_store(SinkURI("file", source, {}, source))
    )
    found: list[tuple[tuple[int, int, tuple[str, ...], int], str]] = []
    metadata = None
    for relative in store.names():
        parts = relative.split("/")
        if relative == cloudstorage.METADATA:
            metadata = relative
        elif cloudstorage.is_schema_path(relative) and len(parts) in (3, 4):
            version = int(parts[-1].split("_")[1])
            found.append(((version, 0, (), 0), relative))
        elif len(parts) >= 2 and parts[-1] == "CDC.index" and parts[-2] == "meta":
            continue  # names the newest data file of its directory, which is read anyway
        elif (
            (named := _DATA_FILE.fullmatch(parts[-1]))
            and len(parts) >= 4
            and _DIGITS.fullmatch(parts[2])
        ):
            found.append(((int(parts[2]), 1, tuple(parts[3:-1]), int(named.group(1))), relative))
        else:
            where = store.where(relative)
            raise ConfigError(f"storage source: {where} is not part of TiCDC's storage layout")
    ordered = [name for _, name in sorted(found)]
    if metadata is not None:
        ordered.append(metadata)
    for name in ordered:
        yield Record(name, 0, 0, name.encode(), store.get(name), {})


class StorageDecoder:
    """What the storage sink wrote, read back: the `metadata` checkpoint, schema files (DDL;
    for csv, the columns the rows after them are read with) and data files, whose rows the
    protocol's decoder reads (a csv file whole, after its header; canal-json line by line).
    A csv data file is read with the schema file of the table version its path names, once
    that file has been decoded or `learn`ed: files read out of order (the service's pages of
    a changefeed's files) decode as they do in the consumer's order."""

    def __init__(self, config: CodecConfig) -> None:
        self.config = config
        self.csv = CSVDecoder(config) if config.protocol == "csv" else None
        self.rows = decoder_for(config)
        self.terminator = config.terminator.encode()
        self.versions: dict[tuple[str, str, int], bytes] = {}  # table version -> schema file

    def learn(self, value: bytes | None) -> None:
        """A file as it is written (the service's log shows each one): keep a table
        version's schema file; pass over the others cheaply."""
        if value is None or not value.startswith(_SCHEMA_FILE_START):
            return
        with contextlib.suppress(DecodeError):
            self._keep(value, cloudstorage.read_definition(value))

    def _keep(self, data: bytes, found: dict[str, Any]) -> None:
        if found["Table"] and found["TableColumns"] is not None:
            self.versions[(found["Schema"], found["Table"], found["TableVersion"])] = data

    def decode(self, key: bytes | None, value: bytes | None) -> list[Decoded]:
        name = (key or b"").decode("utf-8", "replace")
        data = value or b""
        parts = name.split("/")
        if name == cloudstorage.METADATA:
            return [DecodedCheckpoint(cloudstorage.read_metadata(data))]
        if parts[-1] == "CDC.index":
            return []  # names the newest data file of its directory
        if cloudstorage.is_schema_path(name):
            found = cloudstorage.read_definition(data, name)
            self._keep(data, found)
            if self.csv is not None:
                learned = self.csv.schema(data, name)
                return [] if learned is None else [learned]
            if not found["Query"]:
                return []  # a table version's columns, no DDL (CheckOrWriteSchema's file)
            schema, table = found["Schema"], found["Table"]
            return [DecodedDDL(schema, table, found["TableVersion"], found["Query"], found["Type"])]
        if self.csv is not None:
            version = (
                self.versions.get((parts[0], parts[1], int(parts[2])))
                if len(parts) >= 4 and _DIGITS.fullmatch(parts[2])
                else None
            )
            if version is not None:  # the columns of the file's own table version
                self.csv.schema(version, name)
            if self.config.csv_output_field_header and data.startswith(HEADER_PREFIX.encode()):
                end = data.find(self.terminator)
                data = b"" if end < 0 else data[end + len(self.terminator) :]
            return self.csv.rows(data)
        lines = data.split(self.terminator)
        if lines[-1]:
            raise DecodeError(f"{name}: the last line has no terminator {self.terminator!r}")
        return [event for line in lines[:-1] for event in self.rows.decode(None, line)]
