"""Iceberg v3 deletion vectors: the Puffin blob type ``deletion-vector-v1``.

A deletion vector (DV) is the set of deleted row positions of one data file. Its blob (Puffin
spec, "deletion-vector-v1 blob type") is::

    length  4 bytes, big-endian: the byte length of magic + vector
    magic   D1 D3 39 64
    vector  the positions as a Roaring bitmap in the "portable" 64-bit format:
              8 bytes little-endian: the number of 32-bit bitmaps, then for each, in ascending
              unsigned order of keys: a 4-byte little-endian key (the high 32 bits of the
              positions it holds) and a 32-bit Roaring bitmap (standard portable format) of
              their low 32 bits
    crc     4 bytes, big-endian: CRC-32 of magic + vector

The blob is never compressed. Iceberg Java writes one 32-bit bitmap for every key from 0 to the
largest (empty ones included) and run-length encodes the containers; this module writes only
non-empty bitmaps (also valid: Java fills the gaps when it reads) and run-length encodes too.
Positions are at most :data:`MAX_POSITION`, the largest that Iceberg Java's
``RoaringPositionBitmap`` accepts (keys up to 2**31 - 2).

:func:`deserialize_deletion_vector` checks everything it can: the length prefix against the blob
size, the magic, the CRC, the structure of every 32-bit bitmap (so that no byte is left over or
missing), key order and range, and the cardinality the manifest (``record_count``) or the Puffin
footer (``cardinality``) states. Any mismatch is a :class:`CorruptMetadata` naming it.
"""

from __future__ import annotations

import array
import operator
import struct
import zlib
from collections.abc import Iterable
from typing import TypeAlias

import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import AbstractBitMap64, BitMap64

from lakecat.metadata.errors import CorruptMetadata, ValidationError

__all__ = [
    "DELETION_VECTOR_BLOB_TYPE",
    "DELETION_VECTOR_MAGIC",
    "MAX_POSITION",
    "Positions",
    "deserialize_bitmap",
    "deserialize_deletion_vector",
    "positions_array",
    "serialize_deletion_vector",
    "to_bitmap",
]

DELETION_VECTOR_BLOB_TYPE = "deletion-vector-v1"
DELETION_VECTOR_MAGIC = b"\xd1\xd3\x39\x64"
MAX_KEY = 2**31 - 2
MAX_POSITION = (MAX_KEY << 32) | 0xFFFFFFFF

Positions: TypeAlias = AbstractBitMap64 | pa.Array | pa.ChunkedArray | Iterable[int]
"""Row positions: a 64-bit Roaring bitmap, a pyarrow integer array, or any iterable of ints."""

_LENGTH = struct.Struct(">I")
_CRC = struct.Struct(">I")
_COUNT = struct.Struct("<Q")
_U32 = struct.Struct("<I")
_U16 = struct.Struct("<H")

# 32-bit Roaring portable format (https://github.com/RoaringBitmap/RoaringFormatSpec)
_SERIAL_COOKIE_NO_RUNCONTAINER = 12346
_SERIAL_COOKIE = 12347
_NO_OFFSET_THRESHOLD = 4
_MAX_ARRAY_CARDINALITY = 4096
_BITSET_BYTES = 8192


def deserialize_deletion_vector(
    blob: bytes | bytearray | memoryview, *, expected_cardinality: int | None = None
) -> BitMap64:
    """The positions in a ``deletion-vector-v1`` blob, as a 64-bit Roaring bitmap.

    ``expected_cardinality``: the number of positions the manifest entry (``record_count``) or
    the Puffin footer (property ``cardinality``) states; a different count is corrupt.
    Use :func:`positions_array` for a sorted int64 Arrow array.
    """
    data = bytes(blob)
    if len(data) < 12:
        raise CorruptMetadata(
            f"deletion vector blob truncated: {len(data)} bytes, the framing alone takes 12"
        )
    (length,) = _LENGTH.unpack_from(data, 0)
    if length != len(data) - 8:
        raise CorruptMetadata(
            f"deletion vector blob length prefix says {length} bytes of magic and bitmap, "
            f"the blob has {len(data) - 8}" + (" (truncated)" if length > len(data) - 8 else "")
        )
    magic = data[4:8]
    if magic != DELETION_VECTOR_MAGIC:
        raise CorruptMetadata(
            f"deletion vector blob has magic {magic.hex(' ')}, expected "
            f"{DELETION_VECTOR_MAGIC.hex(' ')}"
        )
    (stored_crc,) = _CRC.unpack_from(data, 4 + length)
    actual_crc = zlib.crc32(data[4 : 4 + length])
    if stored_crc != actual_crc:
        raise CorruptMetadata(
            f"deletion vector blob CRC-32 mismatch: stored {stored_crc:08x}, "
            f"computed {actual_crc:08x}"
        )
    bitmap = deserialize_bitmap(data[8 : 4 + length])
    if expected_cardinality is not None and len(bitmap) != expected_cardinality:
        raise CorruptMetadata(
            f"deletion vector holds {len(bitmap)} positions, its metadata says "
            f"{expected_cardinality}"
        )
    return bitmap


def deserialize_bitmap(vector: bytes | bytearray | memoryview) -> BitMap64:
    """A 64-bit Roaring bitmap in the portable format (a deletion vector's bitmap, or what
    Java's ``Roaring64NavigableMap.serializePortable`` writes), its layout checked first:
    :class:`CorruptMetadata` when it is not one."""
    data = bytes(vector)
    _check_portable_64(data)
    try:
        return BitMap64.deserialize(data)
    except ValueError as exc:  # the structure was fine, the containers' content is not
        raise CorruptMetadata(f"deletion vector bitmap cannot be decoded: {exc}") from exc


def serialize_deletion_vector(positions: Positions) -> bytes:
    """The ``deletion-vector-v1`` blob for these positions (duplicates are ignored).

    Raises :class:`ValidationError` for a null, negative or too large position.
    """
    bitmap = to_bitmap(positions)
    if len(bitmap) and bitmap.max() > MAX_POSITION:
        raise ValidationError(
            f"deletion vector position {bitmap.max()} exceeds the maximum {MAX_POSITION}"
        )
    bitmap = BitMap64(bitmap)  # a private copy: run_optimize changes it in place
    bitmap.run_optimize()
    body = DELETION_VECTOR_MAGIC + bitmap.serialize()
    return _LENGTH.pack(len(body)) + body + _CRC.pack(zlib.crc32(body))


def to_bitmap(positions: Positions) -> AbstractBitMap64:
    """Positions as a 64-bit Roaring bitmap (the bitmap itself when given one)."""
    if isinstance(positions, AbstractBitMap64):
        return positions
    if isinstance(positions, pa.ChunkedArray | pa.Array):
        values = _as_uint64(positions)
        buffer = values.buffers()[1]
        raw = array.array("Q")
        if buffer is not None and len(values):
            start = values.offset * 8
            raw.frombytes(memoryview(buffer)[start : start + len(values) * 8])
        return BitMap64(raw)
    try:
        values_list = [operator.index(p) for p in positions]
    except TypeError as exc:
        raise ValidationError(f"positions must be integers: {exc}") from exc
    if values_list and min(values_list) < 0:
        raise ValidationError(f"negative row position {min(values_list)}")
    try:
        return BitMap64(values_list)
    except OverflowError as exc:
        raise ValidationError(f"row position out of range: {exc}") from exc


def positions_array(positions: Positions) -> pa.Int64Array:
    """Positions as a sorted, duplicate-free int64 Arrow array."""
    bitmap = to_bitmap(positions)
    values = bitmap.to_array()
    if len(values) and values[-1] > 2**63 - 1:
        raise ValidationError(f"row position {values[-1]} does not fit in int64")
    uint64 = pa.Array.from_buffers(pa.uint64(), len(values), [None, pa.py_buffer(values)])
    result: pa.Int64Array = uint64.cast(pa.int64())
    return result


def _as_uint64(positions: pa.Array | pa.ChunkedArray) -> pa.Array:
    if isinstance(positions, pa.ChunkedArray):
        positions = positions.combine_chunks()
    if not pa.types.is_integer(positions.type):
        raise ValidationError(f"positions must be integers, not {positions.type}")
    if positions.null_count:
        raise ValidationError(f"{positions.null_count} null row position(s)")
    if len(positions) and pa.types.is_signed_integer(positions.type):
        smallest = pc.min(positions).as_py()
        if smallest < 0:
            raise ValidationError(f"negative row position {smallest}")
    result: pa.Array = positions.cast(pa.uint64())
    return result


def _check_portable_64(vector: bytes) -> None:
    """Walk the portable 64-bit layout: counts, key order and range, each bitmap's exact size."""
    if len(vector) < 8:
        raise CorruptMetadata(f"deletion vector bitmap truncated: {len(vector)} bytes")
    (count,) = _COUNT.unpack_from(vector, 0)
    if count > (len(vector) - 8) // 12:  # a key and the smallest 32-bit bitmap take 12 bytes
        raise CorruptMetadata(
            f"deletion vector bitmap claims {count} 32-bit bitmaps in {len(vector)} bytes"
        )
    at, last_key = 8, -1
    for _ in range(count):
        (key,) = _U32.unpack_from(vector, at)
        if key <= last_key:
            raise CorruptMetadata(
                f"deletion vector keys not in ascending order: {key} after {last_key}"
            )
        if key > MAX_KEY:
            raise CorruptMetadata(f"deletion vector key {key} exceeds the maximum {MAX_KEY}")
        last_key = key
        at += 4 + _roaring32_size(vector, at + 4)
    if at != len(vector):
        raise CorruptMetadata(
            f"deletion vector bitmap has {len(vector) - at} bytes after its last 32-bit bitmap"
        )


def _roaring32_size(buf: bytes, start: int) -> int:
    """The serialized size of the 32-bit Roaring bitmap at ``start``, from its headers."""

    def need(end: int, what: str) -> None:
        if end > len(buf):
            raise CorruptMetadata(f"deletion vector bitmap truncated in the {what}")

    need(start + 4, "cookie of a 32-bit bitmap")
    cookie: int = _U32.unpack_from(buf, start)[0]
    at: int = start + 4
    run_flags = b""
    if cookie & 0xFFFF == _SERIAL_COOKIE:
        containers = (cookie >> 16) + 1
        flag_bytes = (containers + 7) // 8
        need(at + flag_bytes, "run-container flags")
        run_flags = buf[at : at + flag_bytes]
        at += flag_bytes
        has_offsets = containers >= _NO_OFFSET_THRESHOLD
    elif cookie == _SERIAL_COOKIE_NO_RUNCONTAINER:
        need(at + 4, "container count")
        (containers,) = _U32.unpack_from(buf, at)
        at += 4
        has_offsets = True
        if containers > 1 << 16:
            raise CorruptMetadata(f"32-bit Roaring bitmap claims {containers} containers")
    else:
        raise CorruptMetadata(f"not a 32-bit Roaring bitmap (cookie {cookie:#010x})")
    header = at
    need(header + 4 * containers, "container headers")
    at += 4 * containers
    if has_offsets:
        need(at + 4 * containers, "container offsets")
        at += 4 * containers
    for i in range(containers):
        if run_flags and run_flags[i // 8] & (1 << (i % 8)):
            need(at + 2, "run container")
            (runs,) = _U16.unpack_from(buf, at)
            at += 2 + 4 * runs
        else:
            (cardinality_minus_one,) = _U16.unpack_from(buf, header + 4 * i + 2)
            cardinality = cardinality_minus_one + 1
            at += 2 * cardinality if cardinality <= _MAX_ARRAY_CARDINALITY else _BITSET_BYTES
        need(at, "container data")
    return at - start
