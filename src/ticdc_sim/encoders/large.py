"""Large messages: value compression and what a row too large for max-message-bytes becomes.

Mirrors tiflow `pkg/config/large_message.go` (the options and their rules),
`pkg/compression/compress.go` (the codecs) and `pkg/sink/kafka/claimcheck/claim_check.go`
(file names, locations, file content). Research: ticdc-canal-simple-avro-debezium-csv.md §0.7,
§1.8; ticdc-open-craft-dispatch.md §1.2, §1.8.

`large-message-handle-compression` compresses every value the encoder writes, large or not:
snappy is the block format and lz4 the frame format that pierrec/lz4 v4 writes by default
(4 MiB independent blocks, content checksum, no content size). Both decode wherever TiCDC's
do, but the compressed bytes are not Go's: klauspost's snappy and pierrec's lz4 choose their
matches by their own rules, so sizes differ by a few bytes and byte identity holds only for
uncompressed values.

A row whose record would exceed max-message-bytes is an error (`none`), or is sent with its
handle-key columns only (`handle-key-only`), or has its full record stored as a file while
the message that is sent names the file and carries the handle key (`claim-check`). Encoders
stay pure: they hand the file to the pipeline as a `Claim`, and the sink side writes it
before the message goes out, as TiCDC does.
"""

from __future__ import annotations

import base64
import hashlib
import re
import uuid
from dataclasses import replace
from typing import Any, Literal, NamedTuple

import cramjam
import lz4.frame

from ticdc_sim.encoders import DecodedRow, Upstream
from ticdc_sim.encoders.reading import Fields, json_document, not_a
from ticdc_sim.errors import ConfigError, DecodeError

Option = Literal["none", "handle-key-only", "claim-check"]
OPTIONS: tuple[Option, ...] = ("none", "handle-key-only", "claim-check")
COMPRESSIONS = ("none", "snappy", "lz4")
# protocols TiCDC lets handle large messages (large_message.go AdjustAndValidate)
PROTOCOLS = ("open-protocol", "simple", "canal-json")


class Claim(NamedTuple):
    """A file for the claim-check storage: its name and its bytes."""

    name: str
    content: bytes


def _lz4(data: bytes) -> bytes:
    # pierrec/lz4 v4 NewWriter defaults; a one-shot LZ4F call would shrink the block size to
    # the input's and write another frame descriptor
    writer = lz4.frame.LZ4FrameCompressor(
        block_size=lz4.frame.BLOCKSIZE_MAX4MB, block_linked=False, content_checksum=True
    )
    return bytes(writer.begin() + writer.compress(data) + writer.flush())


_LZ4_MAGIC = b"\x04\x22\x4d\x18"  # an lz4 frame's first bytes (its format's magic number)


def compress(codec: str, data: bytes) -> bytes:
    if codec == "none":
        return data
    if codec == "snappy":
        return bytes(cramjam.snappy.compress_raw(data))
    return _lz4(data)


def decompress(codec: str, data: bytes, protocol: str) -> bytes:
    """A value back; a DecodeError when it is not what `codec` writes. An lz4 frame read
    as uncompressed is said as one (no protocol's value starts with its magic number)."""
    if codec == "none":
        if data.startswith(_LZ4_MAGIC):
            raise DecodeError(
                f"{not_a(protocol)}: the value is an lz4 frame (written with"
                " large-message-handle-compression lz4? decode needs it too, in the URI or"
                " --config)"
            )
        return data
    try:
        if codec == "snappy":
            return bytes(cramjam.snappy.decompress_raw(data))
        return bytes(lz4.frame.decompress(data))
    except (cramjam.DecompressionError, RuntimeError, MemoryError) as e:
        # MemoryError: an lz4 frame header that claims a content size of terabytes
        reason = str(e) or f"it claims more than memory holds, {type(e).__name__}"
        raise DecodeError(
            f"{not_a(protocol)}: the value is not {codec}-compressed ({reason})"
        ) from None


def check(
    option: str, compression: str, protocol: str, tidb_extension: bool, storage_uri: str, raw: bool
) -> None:
    """large_message.go AdjustAndValidate, with its messages."""
    if compression not in COMPRESSIONS:
        raise ConfigError(
            f"large message handle compression is not supported, got {compression}"
            f" (one of {', '.join(COMPRESSIONS)})"
        )
    if option not in OPTIONS:
        raise ConfigError(
            f"large-message-handle-option {option!r} is not one of {', '.join(OPTIONS)}"
        )
    if option == "none":
        return
    if protocol not in PROTOCOLS:
        raise ConfigError(
            f"large message handle is set to {option}, protocol is {protocol}, it's not supported"
        )
    if protocol == "canal-json" and not tidb_extension:
        raise ConfigError(
            f"large message handle is set to {option}, protocol is {protocol},"
            " but enable-tidb-extension is false"
        )
    if option == "claim-check":
        if not storage_uri:
            raise ConfigError(
                "large message handle is set to claim-check, but the claim-check-storage-uri"
                " is empty"
            )
        if raw and protocol == "open-protocol":
            raise ConfigError(
                "large message handle is set to claim-check, raw value is not supported for"
                " the open protocol"
            )


def file_name(key: bytes | None, value: bytes) -> str:
    """`<uuid v4>.json`. TiCDC draws the UUID at random; ours comes from the record, so a
    seed gives the same names and a record sent twice names the same file."""
    digest = hashlib.sha256((key or b"") + b"\0" + value).digest()[:16]
    return f"{uuid.UUID(bytes=digest, version=4)}.json"


def location(storage_uri: str, name: str) -> str:
    """claim_check.go FileNameWithPrefix."""
    return storage_uri.removesuffix("/") + "/" + name


def claim(key: bytes | None, value: bytes, raw: bool) -> Claim:
    """The file of a record: Go's `json.Marshal(ClaimCheckMessage{Key, Value})` (byte slices
    as base64, nil as null), or the value alone with `claim-check-raw-value`."""
    content = value if raw else _claim_json(key, value)
    return Claim(file_name(key, value), content)


def _claim_json(key: bytes | None, value: bytes) -> bytes:
    def b64(data: bytes | None) -> bytes:
        return b"null" if data is None else b'"' + base64.b64encode(data) + b'"'

    return b'{"key":' + b64(key) + b',"value":' + b64(value) + b"}"


_FILE_NAME = re.compile(r"[A-Za-z0-9._-]{1,255}")


def read_claim(
    upstream: Upstream, location: str, raw: bool, protocol: str
) -> tuple[bytes | None, bytes]:
    """The record of the claim-check file a message names, read through `upstream`. The
    location comes from the record: its file name must be one TiCDC writes (no NUL, no
    `..`), whatever the message says."""
    name = location.rsplit("/", 1)[-1]
    if not _FILE_NAME.fullmatch(name) or name in (".", ".."):
        raise DecodeError(
            f"{not_a(protocol)}: claim-check location {location[:80]!r} names no file"
        )
    return unclaim(upstream.read_claim(location), raw)


def unclaim(content: bytes, raw: bool) -> tuple[bytes | None, bytes]:
    """The record a claim-check file holds: (key, value)."""
    if raw:
        return None, content
    claim = Fields(json_document(content, "claim-check", noun="file"), "claim-check", noun="file")
    key, value = claim.maybe("key", str), claim.text("value")
    return (
        None if key is None else claim.convert("key", "base64", _base64, key),
        claim.convert("value", "base64", _base64, value),
    )


def _base64(text: str) -> bytes:
    return base64.b64decode(text, validate=True)


def from_upstream(row: DecodedRow, upstream: Upstream | None) -> DecodedRow:
    """A handle-key-only row made whole as TiCDC's consumer does: the new row read upstream
    as of its commit ts, the old one as of commit ts - 1 (canal_json_decoder.go
    assembleHandleKeyOnlyRowChangedEvent). Without an upstream it stays as sent, marked
    `onlyHandleKey`."""
    extra = {**row.extra, "onlyHandleKey": True}
    ts = row.commit_ts
    if upstream is None or not upstream.has_rows or ts is None:
        return replace(row, extra=extra)

    def at(when: int, key: dict[str, Any] | None) -> dict[str, Any] | None:
        if key is None:
            return None
        found = upstream.row_at(row.schema, row.table, when, key)
        if found is None:
            raise DecodeError(
                f"handle-key-only {row.kind} of {row.schema}.{row.table} at commit ts {ts}:"
                f" no row {key} upstream at ts {when}"
            )
        return found

    columns, pre = at(ts, row.columns), at(ts - 1, row.pre_columns)
    return replace(row, columns=columns, pre_columns=pre, extra={**extra, "upstream": True})
