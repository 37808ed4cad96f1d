"""A Puffin file reader and writer: what Iceberg v3 deletion vectors and table statistics need.

Layout (Puffin spec)::

    Magic Blob1 ... BlobN Footer
    Footer = Magic FooterPayload FooterPayloadSize Flags Magic

``Magic`` is ``PFA1``; ``FooterPayload`` is UTF-8 JSON ``{"blobs": [BlobMetadata...],
"properties": {...}}``; ``FooterPayloadSize`` a 4-byte little-endian signed int; ``Flags`` 4
bytes whose bit 0 of byte 0 says the payload is LZ4-compressed (not supported here: Iceberg
Java does not compress footers). A blob may be compressed (``compression-codec``): ``zstd``, a
single Zstandard frame with its content size (what Iceberg Java writes for statistics sketches),
is written and read; ``lz4`` is refused. A ``BlobMetadata`` holds ``type``, ``fields`` (field ids),
``snapshot-id``, ``sequence-number``, ``offset``, ``length``, optional ``compression-codec`` and
``properties``.

Readers of a table never need the footer: a DV's manifest entry gives ``content_offset`` and
``content_size_in_bytes``, and :func:`read_blob` / :func:`read_deletion_vector` read just those
bytes. :func:`read_footer` and :func:`deletion_vectors` read a whole file (tests, tools).
:func:`write_puffin` and :func:`write_deletion_vectors` build a file and report where each blob
landed, which is what the DV's manifest entry records; :func:`blob_data` reads a blob of the
footer, decompressed, and :func:`footer_size` the size a statistics file's entry records.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, BinaryIO, TypeAlias

import pyarrow as pa
from pyroaring import BitMap64

from lakecat.metadata.deletes.deletion_vector import (
    DELETION_VECTOR_BLOB_TYPE,
    Positions,
    deserialize_deletion_vector,
    serialize_deletion_vector,
    to_bitmap,
)
from lakecat.metadata.errors import CorruptMetadata, StorageError, ValidationError

__all__ = [
    "PUFFIN_MAGIC",
    "ROW_POSITION_FIELD_ID",
    "ZSTD",
    "BlobMetadata",
    "DeletionVectorLocation",
    "PuffinBlob",
    "PuffinFooter",
    "Source",
    "blob_data",
    "deletion_vectors",
    "footer_size",
    "read_blob",
    "read_deletion_vector",
    "read_footer",
    "write_deletion_vectors",
    "write_puffin",
]

PUFFIN_MAGIC = b"PFA1"
ROW_POSITION_FIELD_ID = 2147483645
"""The field id of the ``_pos`` metadata column; Iceberg Java lists it as a DV blob's field."""
_FOOTER_TAIL = struct.Struct("<iI4s")  # payload size, flags, magic
_FLAG_COMPRESSED = 0x1
_MIN_SIZE = len(PUFFIN_MAGIC) * 2 + _FOOTER_TAIL.size  # empty payload
REFERENCED_DATA_FILE = "referenced-data-file"
Source: TypeAlias = bytes | bytearray | memoryview | BinaryIO
"""A whole Puffin file: its bytes, or a seekable binary file object."""
CARDINALITY = "cardinality"
ZSTD = "zstd"
"""The blob compression codec lakecat writes and reads (the spec's other one, ``lz4``, is not)."""


@dataclass(frozen=True)
class BlobMetadata:
    """One entry of the footer's ``blobs`` list."""

    type: str
    fields: tuple[int, ...]
    snapshot_id: int
    sequence_number: int
    offset: int
    length: int
    compression_codec: str | None = None
    properties: Mapping[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": self.type,
            "fields": list(self.fields),
            "snapshot-id": self.snapshot_id,
            "sequence-number": self.sequence_number,
            "offset": self.offset,
            "length": self.length,
        }
        if self.compression_codec is not None:
            out["compression-codec"] = self.compression_codec
        if self.properties:
            out["properties"] = dict(self.properties)
        return out


@dataclass(frozen=True)
class PuffinFooter:
    blobs: tuple[BlobMetadata, ...]
    properties: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class PuffinBlob:
    """A blob to write: its bytes and the metadata that describes it (offset/length aside)."""

    type: str
    data: bytes
    fields: tuple[int, ...] = ()
    snapshot_id: int = -1
    sequence_number: int = -1
    properties: Mapping[str, str] = field(default_factory=dict)
    compression_codec: str | None = None
    """``zstd`` to store ``data`` compressed; None stores it as it is."""


@dataclass(frozen=True)
class DeletionVectorLocation:
    """Where a DV landed in a Puffin file: the fields of its manifest entry."""

    referenced_data_file: str
    content_offset: int
    content_size_in_bytes: int
    cardinality: int


# -- reading ----------------------------------------------------------------------------------


def read_blob(source: Source, offset: int, length: int) -> bytes:
    """The ``length`` bytes at ``offset`` of a Puffin file, without reading its footer.

    ``source`` is the whole file's bytes or a seekable binary file object.
    """
    if offset < len(PUFFIN_MAGIC) or length < 0:
        raise ValidationError(f"invalid blob range: offset {offset}, length {length}")
    data = _read_at(source, offset, length)
    if len(data) != length:
        raise CorruptMetadata(
            f"Puffin file truncated: blob at offset {offset} has {len(data)} of {length} bytes"
        )
    return data


def read_deletion_vector(
    source: Source,
    offset: int,
    length: int,
    *,
    expected_cardinality: int | None = None,
) -> BitMap64:
    """The DV at (``content_offset``, ``content_size_in_bytes``) of a manifest entry.

    ``expected_cardinality``: the entry's ``record_count``.
    """
    blob = read_blob(source, offset, length)
    return deserialize_deletion_vector(blob, expected_cardinality=expected_cardinality)


def blob_data(source: Source, blob: BlobMetadata) -> bytes:
    """The data of a blob of the file's footer, decompressed."""
    data = read_blob(source, blob.offset, blob.length)
    if blob.compression_codec is None:
        return data
    if blob.compression_codec != ZSTD:
        raise CorruptMetadata(
            f"Puffin blob at {blob.offset} is compressed with {blob.compression_codec!r}, "
            f"which lakecat does not read (it reads {ZSTD!r})"
        )
    try:
        return bytes(pa.input_stream(pa.py_buffer(data), compression=ZSTD).read())
    except (OSError, pa.ArrowException) as exc:
        raise CorruptMetadata(f"Puffin blob at {blob.offset} is not a zstd frame: {exc}") from exc


def footer_size(source: Source) -> int:
    """The size of a Puffin file's footer: magic, payload and the 12-byte tail (a statistics
    file's ``file-footer-size-in-bytes``)."""
    size = _size(source)
    if size < _MIN_SIZE:
        raise CorruptMetadata(f"Puffin file truncated: {size} bytes")
    payload_size: int = _FOOTER_TAIL.unpack(
        _read_at(source, size - _FOOTER_TAIL.size, _FOOTER_TAIL.size)
    )[0]
    return len(PUFFIN_MAGIC) + payload_size + _FOOTER_TAIL.size


def read_footer(source: Source) -> PuffinFooter:
    """The footer of a whole Puffin file (bytes or a seekable binary file object)."""
    size = _size(source)
    if size < _MIN_SIZE:
        raise CorruptMetadata(f"Puffin file truncated: {size} bytes")
    head = _read_at(source, 0, len(PUFFIN_MAGIC))
    if head != PUFFIN_MAGIC:
        raise CorruptMetadata(f"not a Puffin file: starts with {head!r}, expected {PUFFIN_MAGIC!r}")
    tail_start = size - _FOOTER_TAIL.size
    payload_size, flags, end_magic = _FOOTER_TAIL.unpack(
        _read_at(source, tail_start, _FOOTER_TAIL.size)
    )
    if end_magic != PUFFIN_MAGIC:
        raise CorruptMetadata(
            f"Puffin file truncated or damaged: ends with {end_magic!r}, expected {PUFFIN_MAGIC!r}"
        )
    if flags & _FLAG_COMPRESSED:
        raise CorruptMetadata("Puffin footer is LZ4-compressed, which lakecat does not support")
    footer_start = tail_start - payload_size - len(PUFFIN_MAGIC)
    if payload_size < 0 or footer_start < len(PUFFIN_MAGIC):
        raise CorruptMetadata(f"Puffin footer payload size {payload_size} does not fit the file")
    footer = _read_at(source, footer_start, tail_start - footer_start)
    if footer[: len(PUFFIN_MAGIC)] != PUFFIN_MAGIC:
        raise CorruptMetadata("Puffin footer does not start with the magic")
    return _parse_footer(footer[len(PUFFIN_MAGIC) :], footer_start)


def deletion_vectors(source: Source) -> dict[str, BitMap64]:
    """Every DV of a Puffin file by referenced data file, each checked against its footer's
    ``cardinality``. Blobs of other types are ignored."""
    out: dict[str, BitMap64] = {}
    for blob in read_footer(source).blobs:
        if blob.type != DELETION_VECTOR_BLOB_TYPE:
            continue
        if blob.compression_codec is not None:
            raise CorruptMetadata(
                f"deletion vector blob at {blob.offset} is compressed ({blob.compression_codec})"
            )
        path = blob.properties.get(REFERENCED_DATA_FILE)
        if path is None:
            raise CorruptMetadata(
                f"deletion vector blob at {blob.offset} has no {REFERENCED_DATA_FILE} property"
            )
        cardinality = _int_property(blob, CARDINALITY)
        if path in out:
            raise CorruptMetadata(f"two deletion vectors for {path} in one Puffin file")
        out[path] = read_deletion_vector(
            source, blob.offset, blob.length, expected_cardinality=cardinality
        )
    return out


# -- writing ----------------------------------------------------------------------------------


def write_puffin(
    blobs: Sequence[PuffinBlob], *, properties: Mapping[str, str] | None = None
) -> tuple[bytes, tuple[BlobMetadata, ...]]:
    """A Puffin file holding ``blobs`` (each compressed as it asks), and each blob's footer
    metadata."""
    parts = [PUFFIN_MAGIC]
    at = len(PUFFIN_MAGIC)
    metadata = []
    for blob in blobs:
        data = _compressed(blob)
        metadata.append(
            BlobMetadata(
                type=blob.type,
                fields=tuple(blob.fields),
                snapshot_id=blob.snapshot_id,
                sequence_number=blob.sequence_number,
                offset=at,
                length=len(data),
                compression_codec=blob.compression_codec,
                properties=dict(blob.properties),
            )
        )
        parts.append(data)
        at += len(data)
    footer: dict[str, Any] = {"blobs": [m.to_json() for m in metadata]}
    if properties:
        footer["properties"] = dict(properties)
    payload = json.dumps(footer, separators=(",", ":")).encode()
    parts += [PUFFIN_MAGIC, payload, _FOOTER_TAIL.pack(len(payload), 0, PUFFIN_MAGIC)]
    return b"".join(parts), tuple(metadata)


def write_deletion_vectors(
    vectors: Mapping[str, Positions], *, properties: Mapping[str, str] | None = None
) -> tuple[bytes, tuple[DeletionVectorLocation, ...]]:
    """A Puffin file with one DV per referenced data file, and where each landed.

    The blobs follow the spec's requirements for ``deletion-vector-v1``: properties
    ``referenced-data-file`` and ``cardinality``, no compression, ``snapshot-id`` and
    ``sequence-number`` -1 (unknown when the file is written), and, as Iceberg Java writes,
    ``fields`` = [the ``_pos`` metadata column's id].
    """
    blobs, cardinalities = [], []
    for path, positions in vectors.items():
        if not path:
            raise ValidationError("a deletion vector needs its data file's location")
        bitmap = to_bitmap(positions)
        cardinalities.append(len(bitmap))
        blobs.append(
            PuffinBlob(
                type=DELETION_VECTOR_BLOB_TYPE,
                data=serialize_deletion_vector(bitmap),
                fields=(ROW_POSITION_FIELD_ID,),
                properties={REFERENCED_DATA_FILE: path, CARDINALITY: str(len(bitmap))},
            )
        )
    data, metadata = write_puffin(blobs, properties=properties)
    locations = tuple(
        DeletionVectorLocation(
            referenced_data_file=m.properties[REFERENCED_DATA_FILE],
            content_offset=m.offset,
            content_size_in_bytes=m.length,
            cardinality=n,
        )
        for m, n in zip(metadata, cardinalities, strict=True)
    )
    return data, locations


# -- helpers ----------------------------------------------------------------------------------


def _compressed(blob: PuffinBlob) -> bytes:
    if blob.compression_codec is None:
        return blob.data
    if blob.compression_codec != ZSTD:
        raise ValidationError(
            f"Puffin blob compression {blob.compression_codec!r}: lakecat writes {ZSTD!r} or none"
        )
    # one Zstandard frame that records its content size, as the Puffin spec asks
    return bytes(pa.compress(blob.data, codec=ZSTD, asbytes=True))


def _size(source: Source) -> int:
    if isinstance(source, bytes | bytearray | memoryview):
        return len(source)
    try:
        return source.seek(0, 2)
    except OSError as exc:
        raise StorageError(f"cannot read the Puffin file: {exc}") from exc


def _read_at(source: Source, offset: int, n: int) -> bytes:
    """Up to ``n`` bytes at ``offset`` (fewer only at the end of the file)."""
    if isinstance(source, bytes | bytearray | memoryview):
        return bytes(source[offset : offset + n])
    try:
        source.seek(offset)
        chunks, left = [], n
        while left > 0:
            chunk = source.read(left)
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as exc:
        raise StorageError(f"cannot read the Puffin file at {offset}: {exc}") from exc
    return b"".join(chunks)


def _parse_footer(payload: bytes, footer_start: int) -> PuffinFooter:
    try:
        doc = json.loads(payload.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CorruptMetadata(f"Puffin footer payload is not UTF-8 JSON: {exc}") from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("blobs"), list):
        raise CorruptMetadata("Puffin footer payload has no 'blobs' list")
    blobs = tuple(_parse_blob(b, footer_start) for b in doc["blobs"])
    return PuffinFooter(blobs=blobs, properties=_string_map(doc.get("properties"), "file"))


def _parse_blob(doc: Any, footer_start: int) -> BlobMetadata:
    if not isinstance(doc, dict):
        raise CorruptMetadata(f"Puffin blob metadata is not an object: {doc!r}")

    def integer(key: str) -> int:
        value = doc.get(key)
        if not isinstance(value, int) or isinstance(value, bool):
            raise CorruptMetadata(
                f"Puffin blob metadata field '{key}' is not an integer: {value!r}"
            )
        return value

    kind = doc.get("type")
    if not isinstance(kind, str):
        raise CorruptMetadata(f"Puffin blob metadata has no 'type': {doc!r}")
    fields = doc.get("fields")
    if not isinstance(fields, list) or not all(
        isinstance(f, int) and not isinstance(f, bool) for f in fields
    ):
        raise CorruptMetadata(f"Puffin blob metadata 'fields' is not a list of ints: {fields!r}")
    codec = doc.get("compression-codec")
    if codec is not None and not isinstance(codec, str):
        raise CorruptMetadata(f"Puffin blob 'compression-codec' is not a string: {codec!r}")
    offset, length = integer("offset"), integer("length")
    if offset < len(PUFFIN_MAGIC) or length < 0 or offset + length > footer_start:
        raise CorruptMetadata(
            f"Puffin blob at offset {offset}, length {length} lies outside the blob area "
            f"(bytes 4 to {footer_start})"
        )
    return BlobMetadata(
        type=kind,
        fields=tuple(fields),
        snapshot_id=integer("snapshot-id"),
        sequence_number=integer("sequence-number"),
        offset=offset,
        length=length,
        compression_codec=codec,
        properties=_string_map(doc.get("properties"), f"blob at {offset}"),
    )


def _string_map(value: Any, what: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise CorruptMetadata(f"Puffin {what} properties are not a string map: {value!r}")
    return dict(value)


def _int_property(blob: BlobMetadata, key: str) -> int:
    raw = blob.properties.get(key)
    if raw is None or not raw.isdigit():
        raise CorruptMetadata(
            f"deletion vector blob at {blob.offset} has property {key}={raw!r}, "
            "expected a non-negative integer"
        )
    return int(raw)
