"""metadata.json files: their names, and reading and writing them through a FileIO.

A metadata file is written once and never overwritten: the catalog's compare-and-swap makes
exactly one of them current, so two writers must never be able to write the same name
(the uuid in the name) or replace a file another writer already wrote (exclusive create).
Names follow Iceberg Java: ``<version>-<uuid>.metadata.json`` under ``<table>/metadata/``
(or ``write.metadata.path``), ``.gz.metadata.json`` when gzip-compressed.
"""

from __future__ import annotations

import gzip
import re
import uuid
import zlib
from collections.abc import Mapping
from typing import Any

import orjson

from lakecat.metadata import properties as props
from lakecat.metadata.errors import CorruptMetadata, ValidationError
from lakecat.metadata.io.fileio import FileIO, FileNotFoundStorageError, join
from lakecat.metadata.table.metadata_json import known_snapshots, serialize_metadata
from lakecat.metadata.table.table_metadata import TableMetadata

_CODEC_EXTENSIONS = {"none": "", "gzip": ".gz"}
_GZIP_MAGIC = b"\x1f\x8b"
# "00012-<uuid>.metadata.json", "00012-<uuid>.gz.metadata.json", or the legacy
# "00012-<uuid>.metadata.json.gz" that Java still reads.
_VERSIONED_NAME = re.compile(r"^(\d+)-[^/]*\.metadata\.json(\.gz)?$")


def metadata_file_name(version: int, *, codec: str = "none") -> str:
    """A fresh file name for metadata ``version``: ``00001-<uuid4>.metadata.json``."""
    if version < 0:
        raise ValidationError(f"metadata version must not be negative: {version}")
    return f"{version:05d}-{uuid.uuid4()}{_extension(codec)}.metadata.json"


def parse_version(location: str) -> int:
    """The version number in a metadata file name, or -1 when it has none."""
    match = _VERSIONED_NAME.match(location.rsplit("/", 1)[-1])
    return int(match.group(1)) if match else -1


def new_metadata_location(
    table_location: str, previous_location: str | None, properties: Mapping[str, str]
) -> str:
    """Where the next metadata file goes: version = previous version + 1 (0 for the first).

    The folder is ``write.metadata.path`` if set, else ``<table_location>/metadata``; the
    codec comes from ``write.metadata.compression-codec``.
    """
    folder = properties.get(props.WRITE_METADATA_PATH) or join(table_location, "metadata")
    version = parse_version(previous_location) + 1 if previous_location else 0
    codec = properties.get(props.METADATA_COMPRESSION, props.METADATA_COMPRESSION_DEFAULT)
    location: str = join(folder, metadata_file_name(max(version, 0), codec=codec))
    return location


def write_metadata(io: FileIO, location: str, metadata: TableMetadata) -> None:
    """Write ``metadata`` to a new file; gzip-compressed when the name says ``.gz``.

    Raises the FileIO's ``FileExistsStorageError`` if the file exists: metadata files are
    never overwritten.
    """
    io.write(
        location, serialize_metadata(metadata, gzipped=_is_gzip_name(location)), exclusive=True
    )


def read_metadata(
    io: FileIO, location: str, *, previous: TableMetadata | None = None
) -> TableMetadata:
    """Read and parse a metadata file (gzip detected by content).

    A missing, unreadable-as-JSON or malformed file raises :class:`CorruptMetadata` naming
    the location; other storage failures propagate as :class:`StorageError`.
    """
    try:
        data = io.read(location)
    except FileNotFoundStorageError as exc:
        raise CorruptMetadata(f"metadata file {location} is missing") from exc
    return parse_metadata(data, location=location, previous=previous)


def parse_metadata(
    data: bytes, *, location: str = "<bytes>", previous: TableMetadata | None = None
) -> TableMetadata:
    """Parse the bytes of a metadata.json file (plain or gzip); ``previous`` as in
    :meth:`TableMetadata.from_json`."""
    data = decompressed(data, location=location)
    known = known_snapshots(data, previous)
    if known is not None:
        leading, rest = known
        try:
            return TableMetadata.from_json(rest, previous=previous, leading=leading)
        except CorruptMetadata as exc:
            raise CorruptMetadata(f"metadata file {location}: {exc}") from exc
    obj = json_object(data, location=location)
    try:
        return TableMetadata.from_json(obj, previous=previous)
    except CorruptMetadata as exc:
        raise CorruptMetadata(f"metadata file {location}: {exc}") from exc


def decompressed(data: bytes, *, location: str) -> bytes:
    """A metadata file's JSON bytes: gunzipped when gzip-compressed (found by content, as Java
    reads them); CorruptMetadata naming ``location`` for broken gzip."""
    if data[:2] != _GZIP_MAGIC:
        return data
    try:
        return gzip.decompress(data)
    except (OSError, EOFError, zlib.error) as exc:
        raise CorruptMetadata(f"metadata file {location} is not valid gzip: {exc}") from exc


def json_object(data: bytes, *, location: str) -> dict[str, Any]:
    """The JSON object a metadata file's (uncompressed) bytes hold; CorruptMetadata naming
    ``location`` when they are not JSON or not an object."""
    try:
        obj: Any = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise CorruptMetadata(f"metadata file {location} is not valid JSON: {exc}") from exc
    if not isinstance(obj, dict):
        raise CorruptMetadata(f"metadata file {location} does not hold a JSON object")
    return obj


def _extension(codec: str) -> str:
    try:
        return _CODEC_EXTENSIONS[codec.strip().lower()]
    except KeyError:
        raise ValidationError(
            f"unknown metadata compression codec {codec!r}; expected 'none' or 'gzip'"
        ) from None


def _is_gzip_name(location: str) -> bool:
    return location.endswith((".gz.metadata.json", ".metadata.json.gz"))
