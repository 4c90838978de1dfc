"""Protobuf-style varints, as Go's `encoding/binary` writes them (craft, and Avro's ints and
lengths, which are the same zigzag varints). Small ones are looked up, large ones (commit ts)
reuse their cached high bits: a byte loop per value would cost more than the rest of a row.
"""

from __future__ import annotations

_M64 = (1 << 64) - 1


def _uvarint_slow(x: int) -> bytes:
    if 1 << 14 <= x < 1 << 21:
        return bytes(((x & 0x7F) | 0x80, ((x >> 7) & 0x7F) | 0x80, x >> 14))
    if x >= 1 << 28:  # commit ts and the like: the low 28 bits, then the rest (cached)
        high = _HIGH.get(x >> 28)
        if high is None:
            if len(_HIGH) > 4096:
                _HIGH.clear()
            high = _HIGH[x >> 28] = _uvarint_loop(x >> 28)
        low = (
            (x & 0x7F) | 0x80,
            ((x >> 7) & 0x7F) | 0x80,
            ((x >> 14) & 0x7F) | 0x80,
            ((x >> 21) & 0x7F) | 0x80,
        )
        return bytes(low) + high
    return _uvarint_loop(x)


def _uvarint_loop(x: int) -> bytes:
    out = bytearray()
    while x >= 0x80:
        out.append((x & 0x7F) | 0x80)
        x >>= 7
    out.append(x)
    return bytes(out)


_HIGH: dict[int, bytes] = {}


# every uvarint below 2^14 (one or two bytes), looked up instead of computed
_UV = [_uvarint_slow(x) for x in range(1 << 14)]
_UV_LIMIT = len(_UV)


def uvarint(x: int) -> bytes:
    return _UV[x] if x < _UV_LIMIT else _uvarint_slow(x)


def varint(x: int) -> bytes:
    """Go's `binary.PutVarint` of an int64: zigzag, then uvarint."""
    z = ((x << 1) ^ (x >> 63)) & _M64
    return _UV[z] if z < _UV_LIMIT else _uvarint_slow(z)


# varint(x) for 0 <= x < 2^13 (lengths, small numbers), looked up
SMALL_VARINTS = [varint(n) for n in range(_UV_LIMIT // 2)]
SMALL_LIMIT = len(SMALL_VARINTS)
