"""Avro container files handled block by block (manifest lists): valid Avro for every reader,
row bytes reused, damage reported as corrupt metadata."""

from __future__ import annotations

import io
from typing import Any

import fastavro
import pytest

from lakecat.metadata.errors import CorruptMetadata
from lakecat.metadata.manifests.avro_blocks import _long, container, encode_row, read_blocks

SCHEMA = fastavro.parse_schema(
    {
        "type": "record",
        "name": "row",
        "fields": [
            {"name": "path", "type": "string"},
            {"name": "n", "type": "long"},
            {"name": "parts", "type": ["null", {"type": "array", "items": "bytes"}]},
        ],
    }
)
ROWS: list[dict[str, Any]] = [
    {"path": f"s3://bucket/table/metadata/m{i}.avro", "n": i * 10**12 - 7, "parts": None}
    for i in range(5)
] + [{"path": "", "n": -1, "parts": [b"", b"\x00\xff"]}]


def _fastavro_file(rows: list[dict[str, Any]], codec: str) -> bytes:
    out = io.BytesIO()
    fastavro.writer(out, SCHEMA, rows, codec=codec, metadata={"k": "v"})
    return out.getvalue()


def test_a_container_holds_one_row_per_block_and_fastavro_reads_it_as_usual() -> None:
    data = container(SCHEMA, {"k": "v"}, [encode_row(SCHEMA, r) for r in ROWS])
    reader = fastavro.reader(io.BytesIO(data))
    assert list(reader) == ROWS
    assert reader.metadata["k"] == "v"
    blocks = read_blocks(data)
    assert blocks is not None
    assert [count for count, _ in blocks.blocks] == [1] * len(ROWS)
    assert [blocks.decode(b, c)[0] for c, b in blocks.blocks] == ROWS
    assert [b for _, b in blocks.blocks] == [encode_row(SCHEMA, r) for r in ROWS]


def test_an_empty_container_has_no_blocks() -> None:
    data = container(SCHEMA, {}, [])
    assert list(fastavro.reader(io.BytesIO(data))) == []
    blocks = read_blocks(data)
    assert blocks is not None and blocks.blocks == []


@pytest.mark.parametrize("codec", ["null", "deflate"])
def test_other_writers_blocks_of_many_rows_are_decoded_whole(codec: str) -> None:
    blocks = read_blocks(_fastavro_file(ROWS, codec))
    assert blocks is not None
    assert [row for count, b in blocks.blocks for row in blocks.decode(b, count)] == ROWS


def test_a_codec_fastavro_must_read_itself_is_left_to_it() -> None:
    assert read_blocks(_fastavro_file(ROWS, "bzip2")) is None


def test_a_damaged_container_is_corrupt_metadata() -> None:
    data = container(SCHEMA, {}, [encode_row(SCHEMA, r) for r in ROWS])
    with pytest.raises(CorruptMetadata, match="past the end"):
        read_blocks(data[:-20])
    with pytest.raises(CorruptMetadata, match="sync marker"):
        read_blocks(data[:-1] + bytes([data[-1] ^ 1]))
    blocks = read_blocks(data)
    assert blocks is not None
    count, block = blocks.blocks[0]
    with pytest.raises(CorruptMetadata, match="left over"):
        blocks.decode(block + b"\x00", count)


def test_a_damaged_header_is_corrupt_metadata() -> None:
    data = container(SCHEMA, {"k": "v"}, [encode_row(SCHEMA, r) for r in ROWS])
    with pytest.raises(CorruptMetadata, match="not an Avro container"):
        read_blocks(b"PAR1" + data[4:])
    for cut in (5, 20, 60):  # inside the metadata map, a string, the sync marker
        with pytest.raises(CorruptMetadata, match=r"past the end|truncated"):
            read_blocks(data[:cut])


def test_a_header_map_written_in_sized_blocks_is_read() -> None:
    """Avro lets a writer give a map block's byte size after a negative entry count."""
    schema_json = fastavro.reader(io.BytesIO(_fastavro_file([], "null"))).metadata["avro.schema"]
    entries = b"".join(
        _long(len(t)) + t for pair in ((b"avro.schema", schema_json.encode()),) for t in pair
    )
    sync = bytes(range(16))
    row = encode_row(SCHEMA, ROWS[0])
    data = (
        b"Obj\x01"
        + _long(-1)
        + _long(len(entries))
        + entries
        + _long(0)
        + sync
        + _long(1)
        + _long(len(row))
        + row
        + sync
    )
    assert list(fastavro.reader(io.BytesIO(data))) == [ROWS[0]]
    blocks = read_blocks(data)
    assert blocks is not None
    assert [r for c, b in blocks.blocks for r in blocks.decode(b, c)] == [ROWS[0]]


def test_files_of_one_schema_share_its_parse_made_for_decoding_rows() -> None:
    first = read_blocks(_fastavro_file(ROWS, "null"))
    second = read_blocks(container(SCHEMA, {}, [encode_row(SCHEMA, ROWS[0])]))
    assert first is not None and second is not None
    assert first.writer_schema is second.writer_schema  # parsed once
    # parsed with fastavro's hint: decoding a row does not parse the schema again
    assert first.writer_schema.get("__fastavro_parsed") is True
