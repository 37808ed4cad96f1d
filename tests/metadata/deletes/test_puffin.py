"""The minimal Puffin reader and writer used for deletion vectors."""

from __future__ import annotations

import io
import json
import struct
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyiceberg.table.deletion_vector import deletion_vectors_from_puffin_file
from pyiceberg.table.puffin import PuffinFile
from pyroaring import BitMap64

from lakecat.metadata.deletes import (
    PUFFIN_MAGIC,
    ZSTD,
    BlobMetadata,
    PuffinBlob,
    blob_data,
    deletion_vectors,
    footer_size,
    read_blob,
    read_deletion_vector,
    read_footer,
    write_deletion_vectors,
    write_puffin,
)
from lakecat.metadata.errors import CorruptMetadata, StorageError, ValidationError

DVS = {
    "file:/wh/db/t/data/a.parquet": [0, 1, 2, 99],
    "file:/wh/db/t/data/b.parquet": [],
    "s3://bucket/wh/c.parquet": [5, 2**32 + 1, 2**40],
}


def test_deletion_vectors_round_trip_through_a_puffin_file() -> None:
    data, locations = write_deletion_vectors(DVS, properties={"created-by": "lakecat test"})
    assert data[:4] == PUFFIN_MAGIC and data[-4:] == PUFFIN_MAGIC
    assert [loc.referenced_data_file for loc in locations] == list(DVS)
    assert [loc.cardinality for loc in locations] == [4, 0, 3]
    assert locations[0].content_offset == 4  # right after the magic
    for loc in locations:  # what a reader with only the manifest entry does
        bitmap = read_deletion_vector(
            io.BytesIO(data),
            loc.content_offset,
            loc.content_size_in_bytes,
            expected_cardinality=loc.cardinality,
        )
        assert list(bitmap) == DVS[loc.referenced_data_file]
    assert {p: list(b) for p, b in deletion_vectors(data).items()} == DVS
    footer = read_footer(data)
    assert footer.properties == {"created-by": "lakecat test"}
    assert [b.properties["cardinality"] for b in footer.blobs] == ["4", "0", "3"]
    assert {(b.snapshot_id, b.sequence_number, b.compression_codec) for b in footer.blobs} == {
        (-1, -1, None)
    }
    assert {b.fields for b in footer.blobs} == {(2147483645,)}


def test_pyiceberg_reads_the_files_lakecat_writes() -> None:
    dvs = {path: positions for path, positions in DVS.items() if positions}  # pyiceberg 0.12
    data, _ = write_deletion_vectors(dvs)  # fails to convert an empty DV to an Arrow array
    theirs = deletion_vectors_from_puffin_file(PuffinFile(data))
    assert {dv.referenced_data_file: dv.to_vector().to_pylist() for dv in theirs} == dvs


@settings(max_examples=100, deadline=None)
@given(
    st.dictionaries(
        st.text(min_size=1, max_size=30),
        st.lists(st.integers(0, 2**34), max_size=50),
        max_size=6,
    )
)
def test_round_trip_property(vectors: dict[str, list[int]]) -> None:
    data, locations = write_deletion_vectors(vectors)
    assert {p: list(b) for p, b in deletion_vectors(data).items()} == {
        p: sorted(set(v)) for p, v in vectors.items()
    }
    ends = [loc.content_offset + loc.content_size_in_bytes for loc in locations]
    starts = [loc.content_offset for loc in locations]
    assert starts == [4, *ends][: len(starts)]  # blobs back to back after the magic


def test_generic_blobs_and_file_objects(tmp_path: Path) -> None:
    blobs = [
        PuffinBlob("apache-datasketches-theta-v1", b"\x01\x02", fields=(1,), snapshot_id=7),
        PuffinBlob("x-custom", b"", fields=(), sequence_number=3, properties={"k": "v"}),
    ]
    data, metadata = write_puffin(blobs)
    assert metadata == (
        BlobMetadata("apache-datasketches-theta-v1", (1,), 7, -1, 4, 2),
        BlobMetadata("x-custom", (), -1, 3, 6, 0, None, {"k": "v"}),
    )
    path = tmp_path / "f.puffin"
    path.write_bytes(data)
    with path.open("rb") as f:
        assert read_footer(f).blobs == metadata
        assert read_blob(f, 4, 2) == b"\x01\x02"
    assert read_footer(memoryview(data)).blobs == metadata
    assert deletion_vectors(data) == {}  # other blob types are skipped
    payload = json.loads(data[8 + 2 : -12])
    assert "properties" not in payload  # none given
    assert payload["blobs"][0] == {
        "type": "apache-datasketches-theta-v1",
        "fields": [1],
        "snapshot-id": 7,
        "sequence-number": -1,
        "offset": 4,
        "length": 2,
    }


def test_read_blob_checks_its_range() -> None:
    data, locations = write_deletion_vectors({"a": [1]})
    loc = locations[0]
    with pytest.raises(CorruptMetadata, match="truncated"):
        read_blob(data[: loc.content_offset + 3], loc.content_offset, loc.content_size_in_bytes)
    with pytest.raises(CorruptMetadata, match="truncated"):
        read_blob(io.BytesIO(data), len(data) - 2, 10)
    with pytest.raises(ValidationError, match="invalid blob range"):
        read_blob(data, 0, 4)
    with pytest.raises(CorruptMetadata, match="magic"):  # a wrong offset lands on garbage
        read_deletion_vector(data, loc.content_offset + 1, loc.content_size_in_bytes - 1)


def test_read_errors_become_storage_errors() -> None:
    class Broken(io.BytesIO):
        def read(self, n: int | None = -1) -> bytes:
            raise OSError("disk on fire")

    with pytest.raises(StorageError, match="disk on fire"):
        read_blob(Broken(b"x" * 100), 4, 10)
    with pytest.raises(StorageError, match="disk on fire"):
        read_footer(Broken(b"x" * 100))


def footer_file(payload: bytes, *, flags: int = 0, blob_area: bytes = b"") -> bytes:
    return (
        PUFFIN_MAGIC
        + blob_area
        + PUFFIN_MAGIC
        + payload
        + struct.pack("<iI", len(payload), flags)
        + PUFFIN_MAGIC
    )


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"PFA1", "truncated: 4 bytes"),
        (b"XXXX" + footer_file(b'{"blobs":[]}')[4:], "not a Puffin file"),
        (footer_file(b'{"blobs":[]}')[:-1] + b"2", "ends with b'PFA2'"),
        (footer_file(b'{"blobs":[]}', flags=1), "LZ4-compressed"),
        (footer_file(b"{not json"), "not UTF-8 JSON"),
        (footer_file(b"\xff\xfe"), "not UTF-8 JSON"),
        (footer_file(b"[]"), "no 'blobs' list"),
        (footer_file(b'{"blobs":[1]}'), "not an object"),
        (footer_file(b'{"blobs":[{"fields":[],"offset":4,"length":0}]}'), "no 'type'"),
        (
            footer_file(b'{"blobs":[{"type":"t","fields":["a"],"offset":4,"length":0}]}'),
            "'fields' is not a list of ints",
        ),
        (
            footer_file(
                b'{"blobs":[{"type":"t","fields":[],"snapshot-id":1,"sequence-number":1,'
                b'"offset":4,"length":1}]}'
            ),
            "outside the blob area",
        ),
        (
            footer_file(
                b'{"blobs":[{"type":"t","fields":[],"snapshot-id":"1","sequence-number":1,'
                b'"offset":4,"length":0}]}'
            ),
            "'snapshot-id' is not an integer",
        ),
        (
            footer_file(
                b'{"blobs":[{"type":"t","fields":[],"snapshot-id":1,"sequence-number":1,'
                b'"offset":4,"length":0,"compression-codec":5}]}'
            ),
            "compression-codec",
        ),
        (footer_file(b'{"blobs":[],"properties":{"a":1}}'), "not a string map"),
        (
            PUFFIN_MAGIC + b"zzzz" + b'{"blobs":[]}' + struct.pack("<iI", 12, 0) + PUFFIN_MAGIC,
            "does not start with the magic",
        ),
        (PUFFIN_MAGIC + PUFFIN_MAGIC + struct.pack("<iI", 99, 0) + PUFFIN_MAGIC, "does not fit"),
        (PUFFIN_MAGIC + PUFFIN_MAGIC + struct.pack("<iI", -9, 0) + PUFFIN_MAGIC, "does not fit"),
    ],
)
def test_malformed_files(data: bytes, message: str) -> None:
    with pytest.raises(CorruptMetadata, match=message):
        read_footer(data)


def dv_file(properties: dict[str, str], *, codec: str | None = None, blob: bytes) -> bytes:
    meta = {
        "type": "deletion-vector-v1",
        "fields": [2147483645],
        "snapshot-id": -1,
        "sequence-number": -1,
        "offset": 4,
        "length": len(blob),
        "properties": properties,
    }
    if codec:
        meta["compression-codec"] = codec
    return footer_file(json.dumps({"blobs": [meta]}).encode(), blob_area=blob)


def test_deletion_vector_footer_checks() -> None:
    data, _ = write_deletion_vectors({"a": [1, 2]})
    loc_blob = read_blob(data, 4, read_footer(data).blobs[0].length)
    good = {"referenced-data-file": "a", "cardinality": "2"}
    assert list(deletion_vectors(dv_file(good, blob=loc_blob))["a"]) == [1, 2]
    with pytest.raises(CorruptMetadata, match="holds 2 positions, its metadata says 3"):
        deletion_vectors(dv_file({**good, "cardinality": "3"}, blob=loc_blob))
    with pytest.raises(CorruptMetadata, match="cardinality='-2'"):
        deletion_vectors(dv_file({**good, "cardinality": "-2"}, blob=loc_blob))
    with pytest.raises(CorruptMetadata, match="cardinality=None"):
        deletion_vectors(dv_file({"referenced-data-file": "a"}, blob=loc_blob))
    with pytest.raises(CorruptMetadata, match="no referenced-data-file"):
        deletion_vectors(dv_file({"cardinality": "2"}, blob=loc_blob))
    with pytest.raises(CorruptMetadata, match="compressed"):
        deletion_vectors(dv_file(good, codec="zstd", blob=loc_blob))


def test_two_vectors_for_one_file_are_corrupt() -> None:
    data, _ = write_deletion_vectors({"a": [1]})
    blob = read_blob(data, 4, read_footer(data).blobs[0].length)
    meta = {
        "type": "deletion-vector-v1",
        "fields": [],
        "snapshot-id": -1,
        "sequence-number": -1,
        "length": len(blob),
        "properties": {"referenced-data-file": "a", "cardinality": "1"},
    }
    payload = json.dumps(
        {"blobs": [{**meta, "offset": 4}, {**meta, "offset": 4 + len(blob)}]}
    ).encode()
    with pytest.raises(CorruptMetadata, match="two deletion vectors for a"):
        deletion_vectors(footer_file(payload, blob_area=blob + blob))


def test_writer_rejects_an_empty_data_file_location() -> None:
    with pytest.raises(ValidationError, match="location"):
        write_deletion_vectors({"": BitMap64([1])})


def test_zstd_blobs_are_one_frame_that_records_its_size_and_read_back_decompressed() -> None:
    payload = b"theta " * 1000
    data, [zstd, plain] = write_puffin(
        [
            PuffinBlob(
                "apache-datasketches-theta-v1", payload, fields=(1,), compression_codec=ZSTD
            ),
            PuffinBlob("x-plain", b"raw"),
        ]
    )

    assert zstd.compression_codec == ZSTD and zstd.length < len(payload)
    assert read_footer(data).blobs == (zstd, plain)
    assert blob_data(data, zstd) == payload and blob_data(data, plain) == b"raw"
    frame = data[zstd.offset : zstd.offset + zstd.length]
    assert frame[:4] == b"\x28\xb5\x2f\xfd"  # a Zstandard frame
    descriptor = frame[4]
    # the frame header carries the content size (Iceberg Java's reader needs it): a size flag,
    # or a single-segment frame, whose size field is always there
    assert descriptor >> 6 or descriptor & 0x20
    payload_json = json.loads(data[len(data) - footer_size(data) + 4 : -12])
    assert payload_json["blobs"][0]["compression-codec"] == "zstd"


def test_footer_size_is_magic_payload_and_tail() -> None:
    data, _ = write_puffin([PuffinBlob("x", b"abc")], properties={"created-by": "me"})
    payload = json.loads(data[4 + 3 + 4 : -12])
    assert payload["properties"] == {"created-by": "me"}
    assert footer_size(data) == len(data) - 4 - 3


def test_unknown_compression_is_refused_on_write_and_read() -> None:
    with pytest.raises(ValidationError, match="'lz4'"):
        write_puffin([PuffinBlob("x", b"abc", compression_codec="lz4")])
    data, [blob] = write_puffin([PuffinBlob("x", b"abc")])
    with pytest.raises(CorruptMetadata, match="'lz4'"):
        blob_data(data, replace(blob, compression_codec="lz4"))
    with pytest.raises(CorruptMetadata, match="not a zstd frame"):
        blob_data(data, replace(blob, compression_codec=ZSTD))
