"""The ``deletion-vector-v1`` blob codec: round trips, Iceberg Java's own bytes, corruption."""

from __future__ import annotations

import struct
import zlib
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyroaring import BitMap, BitMap64

from lakecat.metadata.deletes import (
    DELETION_VECTOR_MAGIC,
    MAX_POSITION,
    deserialize_deletion_vector,
    positions_array,
    serialize_deletion_vector,
    to_bitmap,
)
from lakecat.metadata.errors import CorruptMetadata, ValidationError

# Blobs Iceberg Java 1.10.2 wrote (tests/interop/java_fixtures.py, table dv_unpartitioned):
# an array container, and a run-length encoded one (ids 100..180 updated).
JAVA_ARRAY_BLOB = bytes.fromhex(
    "00000034d1d339640100000000000000000000003a30000001000000000009001000000006000d001400"
    "1b0022002900300037003e004500fdbaa089"
)
JAVA_ARRAY_POSITIONS = [6, 13, 20, 27, 34, 41, 48, 55, 62, 69]
JAVA_RUN_BLOB = bytes.fromhex(
    "0000002fd1d339640100000000000000000000003b3000000100003800050001000000080000000c0000"
    "000f00000016003400286221ab"
)
JAVA_RUN_POSITIONS = [1, 8, 12, 15, *range(22, 75)]


def frame(vector: bytes, *, magic: bytes = DELETION_VECTOR_MAGIC) -> bytes:
    """A blob around ``vector`` with a correct length and CRC."""
    body = magic + vector
    return struct.pack(">I", len(body)) + body + struct.pack(">I", zlib.crc32(body))


def portable(*bitmaps: tuple[int, BitMap]) -> bytes:
    """The portable 64-bit layout from (key, 32-bit bitmap) pairs, in the given order."""
    out = struct.pack("<Q", len(bitmaps))
    for key, bitmap in bitmaps:
        out += struct.pack("<I", key) + bitmap.serialize()
    return out


positions_strategy = st.lists(
    st.one_of(
        st.integers(0, 5000),
        st.integers(0, 2**32 + 70_000),
        st.integers(0, MAX_POSITION),
        st.integers(2**32 - 3, 2**32 + 3),
    ),
    max_size=300,
)


@settings(max_examples=300, deadline=None)
@given(positions_strategy)
def test_round_trip(positions: list[int]) -> None:
    blob = serialize_deletion_vector(positions)
    back = deserialize_deletion_vector(blob, expected_cardinality=len(set(positions)))
    assert list(back) == sorted(set(positions))
    assert positions_array(back).to_pylist() == sorted(set(positions))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 2**20), max_size=2000), st.integers(1, 6))
def test_runs_and_dense_ranges_round_trip(starts: list[int], width: int) -> None:
    positions = sorted({s + i for s in starts for i in range(width)} | set(range(5000, 9000)))
    blob = serialize_deletion_vector(pa.array(positions, pa.int64()))
    assert list(deserialize_deletion_vector(blob)) == positions


def test_reads_the_blobs_iceberg_java_wrote() -> None:
    assert list(deserialize_deletion_vector(JAVA_ARRAY_BLOB, expected_cardinality=10)) == (
        JAVA_ARRAY_POSITIONS
    )
    assert list(deserialize_deletion_vector(JAVA_RUN_BLOB, expected_cardinality=57)) == (
        JAVA_RUN_POSITIONS
    )


def test_writes_the_bytes_iceberg_java_writes() -> None:
    assert serialize_deletion_vector(JAVA_ARRAY_POSITIONS) == JAVA_ARRAY_BLOB
    assert serialize_deletion_vector(JAVA_RUN_POSITIONS) == JAVA_RUN_BLOB  # run-length encoded


def test_reads_javas_dense_layout_with_empty_bitmaps() -> None:
    """Iceberg Java writes a bitmap for every key up to the largest, empty ones included."""
    vector = portable((0, BitMap()), (1, BitMap()), (2, BitMap([5, 6])), (3, BitMap()))
    assert list(deserialize_deletion_vector(frame(vector))) == [2 * 2**32 + 5, 2 * 2**32 + 6]


def test_empty_vector() -> None:
    blob = serialize_deletion_vector([])
    assert len(deserialize_deletion_vector(blob, expected_cardinality=0)) == 0
    assert positions_array(BitMap64()).to_pylist() == []


def test_accepts_bitmaps_arrays_and_iterables() -> None:
    expected = [0, 3, 2**33]
    for positions in (
        BitMap64(expected),
        pa.array(expected, pa.int64()),
        pa.chunked_array([[0], [3, 2**33]], pa.uint64()),
        pa.array([2**33, 3, 0, 3], pa.int64()).slice(0, 4),
        iter(expected),
        range(0, 4, 3),
    ):
        back = deserialize_deletion_vector(serialize_deletion_vector(positions))
        assert set(back) <= set(expected) and 0 in back and 3 in back
    assert to_bitmap(pa.array([5, 1, 5], pa.int32()).slice(1, 2)) == BitMap64([1, 5])


@pytest.mark.parametrize(
    ("positions", "message"),
    [
        ([-1], "negative"),
        ([MAX_POSITION + 1], "exceeds the maximum"),
        (pa.array([1, None], pa.int64()), "null"),
        (pa.array([-5], pa.int8()), "negative"),
        (pa.array(["a"]), "integers"),
        (["x"], "integers"),
        ([2**64], "out of range"),
    ],
)
def test_rejects_bad_positions(positions: Any, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        serialize_deletion_vector(positions)


def test_every_truncation_is_corrupt() -> None:
    for end in range(len(JAVA_ARRAY_BLOB)):
        with pytest.raises(CorruptMetadata, match=r"truncated|length prefix"):
            deserialize_deletion_vector(JAVA_ARRAY_BLOB[:end])


def test_wrong_magic() -> None:
    blob = frame(portable((0, BitMap([1]))), magic=b"\xd1\xd3\x39\x65")
    with pytest.raises(CorruptMetadata, match="magic d1 d3 39 65, expected d1 d3 39 64"):
        deserialize_deletion_vector(blob)


def test_wrong_crc() -> None:
    blob = bytearray(JAVA_ARRAY_BLOB)
    blob[-1] ^= 0x01
    with pytest.raises(CorruptMetadata, match="CRC-32 mismatch"):
        deserialize_deletion_vector(bytes(blob))
    blob = bytearray(JAVA_ARRAY_BLOB)
    blob[30] ^= 0x40  # a flipped bit in the bitmap
    with pytest.raises(CorruptMetadata, match="CRC-32 mismatch"):
        deserialize_deletion_vector(bytes(blob))


def test_cardinality_mismatch() -> None:
    with pytest.raises(CorruptMetadata, match="holds 10 positions, its metadata says 11"):
        deserialize_deletion_vector(JAVA_ARRAY_BLOB, expected_cardinality=11)


def test_length_prefix_mismatch() -> None:
    longer = JAVA_ARRAY_BLOB + b"\0"
    with pytest.raises(CorruptMetadata, match="length prefix says 52"):
        deserialize_deletion_vector(longer)


@pytest.mark.parametrize(
    ("vector", "message"),
    [
        (portable((2, BitMap([1])), (1, BitMap([1]))), "not in ascending order: 1 after 2"),
        (portable((1, BitMap([1])), (1, BitMap([2]))), "not in ascending order: 1 after 1"),
        (portable((2**31 - 1, BitMap([1]))), "key 2147483647 exceeds the maximum"),
        (portable((0, BitMap([1]))) + b"\0\0\0", "3 bytes after its last 32-bit bitmap"),
        (portable((0, BitMap([1])))[:-2], "truncated"),
        (struct.pack("<Q", 1) + struct.pack("<I", 0) + b"\xff" * 12, "cookie"),
        (struct.pack("<Q", 10**6) + b"\0" * 20, "claims 1000000 32-bit bitmaps"),
        (b"\0" * 4, "bitmap truncated"),
    ],
)
def test_malformed_bitmaps(vector: bytes, message: str) -> None:
    with pytest.raises(CorruptMetadata, match=message):
        deserialize_deletion_vector(frame(vector))


def test_container_content_errors_are_corrupt() -> None:
    """Structurally complete, but an array container's values are not ascending."""
    bad = bytearray(BitMap([1, 2, 3]).serialize())
    bad[-2:] = struct.pack("<H", 0)  # 1, 2, 0
    with pytest.raises(CorruptMetadata, match="cannot be decoded"):
        deserialize_deletion_vector(frame(struct.pack("<QI", 1, 0) + bytes(bad)))
