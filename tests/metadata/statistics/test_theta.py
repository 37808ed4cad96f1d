"""Compact theta sketches: the header lakecat reads to record a column's ``ndv``, and the
blobs it builds of them. Sketches are built here by hand in DataSketches' layout (the Spark
tests check the same reader against sketches the JVM's DataSketches builds)."""

from __future__ import annotations

import struct

import pytest

from lakecat.metadata.deletes.puffin import ZSTD, blob_data, read_footer, write_puffin
from lakecat.metadata.errors import CorruptMetadata
from lakecat.metadata.statistics import (
    NDV_PROPERTY,
    THETA_BLOB_TYPE,
    ThetaSketch,
    ndv_blob,
    ndvs,
    parse_theta_sketch,
)
from lakecat.metadata.statistics.theta import DEFAULT_SEED_HASH, MAX_THETA

COMPACT_ORDERED_READ_ONLY = 0x1A


def sketch(
    hashes: list[int],
    theta: int = MAX_THETA,
    *,
    flags: int = COMPACT_ORDERED_READ_ONLY,
    version: int = 3,
    family: int = 3,
    seed_hash: int = DEFAULT_SEED_HASH,
) -> bytes:
    """A serialized compact sketch as DataSketches' Java library lays it out."""
    if not hashes and theta == MAX_THETA:
        return struct.pack("<BBBBBBH", 1, version, family, 0, 0, flags | 0x04, seed_hash)
    if len(hashes) == 1 and theta == MAX_THETA:
        head = struct.pack("<BBBBBBH", 1, version, family, 0, 0, flags | 0x20, seed_hash)
        return head + struct.pack("<q", hashes[0])
    pre_longs = 2 if theta == MAX_THETA else 3
    head = struct.pack(
        "<BBBBBBHif", pre_longs, version, family, 0, 0, flags, seed_hash, len(hashes), 1.0
    )
    if pre_longs == 3:
        head += struct.pack("<q", theta)
    return head + b"".join(struct.pack("<q", h) for h in sorted(hashes))


def test_exact_sketches_count_their_hashes() -> None:
    assert parse_theta_sketch(sketch([])) == ThetaSketch(0, MAX_THETA, empty=True)
    assert parse_theta_sketch(sketch([])).ndv == 0
    assert parse_theta_sketch(sketch([42])).ndv == 1
    assert parse_theta_sketch(sketch(list(range(1, 101)))).ndv == 100


def test_an_estimation_sketch_scales_its_hashes_by_theta() -> None:
    parsed = parse_theta_sketch(sketch(list(range(1, 4097)), theta=MAX_THETA // 8))
    assert parsed.retained == 4096 and not parsed.empty
    # DataSketches: retained * (Long.MAX_VALUE as a double / theta), truncated for the ndv
    assert parsed.estimate == 4096 * (float(MAX_THETA) / (MAX_THETA // 8))
    assert parsed.ndv == 32768


def test_a_sketch_with_no_hashes_below_theta_estimates_zero() -> None:
    parsed = parse_theta_sketch(sketch([], theta=MAX_THETA // 2))
    assert parsed.retained == 0 and parsed.ndv == 0


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\x01\x03", "truncated"),
        (sketch([1, 2], version=4), "version 4"),
        (sketch([1, 2], family=2), "family 2"),
        (sketch([1, 2], seed_hash=0x1234), "seed hash 0x1234"),
        (sketch([1, 2], flags=COMPACT_ORDERED_READ_ONLY | 0x01), "big-endian"),
        (sketch([1, 2, 3])[:-8], "header says"),
        (sketch([1, 2]) + b"\x00" * 8, "header says"),
        (sketch([7])[:12], "header says"),
        (sketch([1, 2], theta=MAX_THETA // 2)[:20], "preamble of 3 longs"),
        (sketch([1, 2], theta=-5), "below theta -5"),
    ],
)
def test_bytes_that_are_not_a_compact_sketch_are_refused(data: bytes, message: str) -> None:
    with pytest.raises(CorruptMetadata, match=message):
        parse_theta_sketch(data)


def test_an_ndv_blob_round_trips_through_a_zstd_puffin_file() -> None:
    sketches = {3: sketch(list(range(1, 51))), 5: sketch([9])}
    blobs = [ndv_blob(f, s, snapshot_id=11, sequence_number=4) for f, s in sketches.items()]
    data, written = write_puffin(blobs, properties={"created-by": "test"})

    footer = read_footer(data)
    assert footer.blobs == written
    assert [(b.type, b.fields, b.snapshot_id, b.sequence_number) for b in footer.blobs] == [
        (THETA_BLOB_TYPE, (3,), 11, 4),
        (THETA_BLOB_TYPE, (5,), 11, 4),
    ]
    assert all(b.compression_codec == ZSTD for b in footer.blobs)
    assert [blob_data(data, b) for b in footer.blobs] == list(sketches.values())
    assert dict(ndvs(footer.blobs)) == {3: 50, 5: 1}
    assert footer.blobs[0].properties == {NDV_PROPERTY: "50"}


def test_an_ndv_blob_of_bytes_that_are_no_sketch_is_refused() -> None:
    with pytest.raises(CorruptMetadata):
        ndv_blob(1, b"not a sketch", snapshot_id=1, sequence_number=1)
