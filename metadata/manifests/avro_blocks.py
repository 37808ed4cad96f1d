"""Avro object container files handled block by block, for manifest lists.

A table's successive manifest lists repeat most of their rows: each commit adds a row for its
new manifest and carries the others over unchanged. lakecat therefore writes a manifest list
with **one row per block**, uncompressed (codec ``null``): a valid Avro file that every Avro
reader (pyiceberg, Iceberg Java, fastavro) reads as usual, in which each row is a byte
string of its own. A process that has encoded a row keeps its bytes and writes them again as
they are; a process that has decoded a row keeps the object made from them and reuses it
wherever the same bytes come back, in any list of any writer. Blocks of several rows (other
writers' files) are decoded as a whole and kept the same way.

The price is size: about 20 bytes of block framing per row, and no compression (a list of 60
rows is 10 KB instead of 4 KB deflated).

Layout (Avro 1.11 spec, "Object Container Files"): the header ``Obj\\x01``, the file
metadata as a map of bytes, a 16-byte sync marker; then blocks, each a row count and a byte
size (zig-zag varints), the rows' bytes, and the sync marker again.
"""

from __future__ import annotations

import functools
import io
import json
import os
import zlib
from dataclasses import dataclass
from typing import Any

import fastavro

from lakecat.metadata.errors import CorruptMetadata

_SYNC_SIZE = 16


def encode_row(parsed_schema: Any, record: dict[str, Any]) -> bytes:
    """One record's Avro binary encoding."""
    out = io.BytesIO()
    fastavro.schemaless_writer(out, parsed_schema, record)
    return out.getvalue()


def container(parsed_schema: Any, metadata: dict[str, str], rows: list[bytes]) -> bytes:
    """An uncompressed Avro container file holding each of ``rows`` in a block of its own."""
    sync = os.urandom(_SYNC_SIZE)
    meta = {"avro.schema": _schema_json(parsed_schema), "avro.codec": "null", **metadata}
    parts = [_MAGIC, _long(len(meta))]
    for key, value in meta.items():
        for text in (key.encode(), value.encode()):
            parts += (_long(len(text)), text)
    parts += (_long(0), sync)
    for row in rows:
        parts += (_one_row_block(len(row)), row, sync)
    return b"".join(parts)


@functools.lru_cache(maxsize=4096)
def _one_row_block(size: int) -> bytes:
    """The start of a block holding one row of ``size`` bytes: its count and its size."""
    return _long(1) + _long(size)


def _schema_json(parsed_schema: Any) -> str:
    """The schema as fastavro writes it into a file header (computed once per schema)."""
    found = _SCHEMA_JSON.get(id(parsed_schema))
    if found is None or found[0] is not parsed_schema:
        out = io.BytesIO()
        fastavro.writer(out, parsed_schema, [])
        out.seek(0)
        found = (parsed_schema, fastavro.reader(out).metadata["avro.schema"])
        _SCHEMA_JSON[id(parsed_schema)] = found  # holds the schema: its id stays its own
    return found[1]


_MAGIC = b"Obj\x01"
_SCHEMA_JSON: dict[int, tuple[Any, str]] = {}


@dataclass(frozen=True)
class Blocks:
    """A container file's writer schema and its blocks as (row count, decoded bytes)."""

    writer_schema: Any  # parsed
    blocks: list[tuple[int, bytes]]

    def decode(self, block: bytes, count: int) -> list[dict[str, Any]]:
        stream = io.BytesIO(block)
        rows = [fastavro.schemaless_reader(stream, self.writer_schema) for _ in range(count)]
        if stream.tell() != len(block):
            raise CorruptMetadata(f"an Avro block has {len(block) - stream.tell()} bytes left over")
        return rows  # type: ignore[return-value]


def read_blocks(data: bytes) -> Blocks | None:
    """The blocks of an Avro container file, or None for a codec other than null and
    deflate (the caller then reads the file with fastavro as a whole)."""
    metadata, sync, pos = _read_header(data)
    codec = metadata.get("avro.codec", b"null")
    if codec not in (b"null", b"deflate"):
        return None
    schema = _parsed_schema(metadata["avro.schema"])
    blocks = []
    end = len(data)
    while pos < end:
        count, pos = _read_long(data, pos)
        size, pos = _read_long(data, pos)
        if count < 0 or size < 0 or pos + size + _SYNC_SIZE > end:
            raise CorruptMetadata("an Avro block runs past the end of the file")
        block = data[pos : pos + size]
        pos += size
        if data[pos : pos + _SYNC_SIZE] != sync:
            raise CorruptMetadata("an Avro block does not end with the file's sync marker")
        pos += _SYNC_SIZE
        if codec == b"deflate":
            try:
                block = zlib.decompress(block, -15)
            except zlib.error as exc:
                raise CorruptMetadata(f"an Avro block does not inflate: {exc}") from exc
        blocks.append((count, block))
    return Blocks(schema, blocks)


def _read_header(data: bytes) -> tuple[dict[str, bytes], bytes, int]:
    """A container file's metadata map, its sync marker and where its first block starts."""
    if data[:4] != _MAGIC:
        raise CorruptMetadata("not an Avro container file (no Obj\\x01 at its start)")
    metadata: dict[str, bytes] = {}
    pos = len(_MAGIC)
    while True:
        count, pos = _read_long(data, pos)
        if count == 0:
            break
        if count < 0:  # a block of -count entries preceded by its byte size
            count = -count
            _, pos = _read_long(data, pos)
        for _ in range(count):
            key, pos = _read_bytes(data, pos)
            value, pos = _read_bytes(data, pos)
            metadata[key.decode()] = value
    if pos + _SYNC_SIZE > len(data):
        raise CorruptMetadata("an Avro header runs past the end of the file")
    if "avro.schema" not in metadata:
        raise CorruptMetadata("an Avro header without a schema")
    return metadata, data[pos : pos + _SYNC_SIZE], pos + _SYNC_SIZE


def _read_bytes(data: bytes, pos: int) -> tuple[bytes, int]:
    size, pos = _read_long(data, pos)
    if size < 0 or pos + size > len(data):
        raise CorruptMetadata("an Avro string runs past the end of the file")
    return data[pos : pos + size], pos + size


@functools.lru_cache(maxsize=64)
def _parsed_schema(schema_json: bytes) -> Any:
    """The schema of a file header, parsed once per distinct schema. Parsed with fastavro's
    hint, so that decoding each row with it does not parse it again (shared: never mutated)."""
    return fastavro.parse_schema(json.loads(schema_json))


def _long(value: int) -> bytes:
    """Avro's zig-zag varint encoding of a long."""
    n = (value << 1) ^ (value >> 63)
    out = bytearray()
    while n & ~0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _read_long(data: bytes, pos: int) -> tuple[int, int]:
    shift = 0
    n = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise CorruptMetadata("a truncated or overlong Avro varint")
        byte = data[pos]
        pos += 1
        n |= (byte & 0x7F) << shift
        if not byte & 0x80:
            break
        shift += 7
    return (n >> 1) ^ -(n & 1), pos
