"""View metadata files: their names, and reading and writing them through a FileIO.

Named as Iceberg Java names them: ``<version>-<uuid>.gz.metadata.json`` under
``<view location>/metadata/`` (or the view's ``write.metadata.path``), gzip-compressed unless
the view's ``write.metadata.compression-codec`` is ``none`` (views default to gzip, tables to
none). Like a table's, a view metadata file is written once, never overwritten.
"""

from __future__ import annotations

import gzip
from collections.abc import Mapping

import orjson

from lakecat.metadata import properties as props
from lakecat.metadata.errors import CorruptMetadata
from lakecat.metadata.io.fileio import FileIO, FileNotFoundStorageError
from lakecat.metadata.table.metadata_files import (
    decompressed,
    json_object,
    new_metadata_location,
)
from lakecat.metadata.view.view_metadata import ViewMetadata

VIEW_METADATA_COMPRESSION_DEFAULT = "gzip"


def new_view_metadata_location(
    view_location: str, previous_location: str | None, properties: Mapping[str, str]
) -> str:
    """Where a view's next metadata file goes (version: the previous file's plus one)."""
    codec = properties.get(props.METADATA_COMPRESSION, VIEW_METADATA_COMPRESSION_DEFAULT)
    return new_metadata_location(
        view_location, previous_location, {**properties, props.METADATA_COMPRESSION: codec}
    )


def write_view_metadata(io: FileIO, location: str, metadata: ViewMetadata) -> None:
    """Write ``metadata`` to a new file (``FileExistsStorageError`` if it exists)."""
    data = orjson.dumps(metadata.to_json())
    if location.endswith((".gz.metadata.json", ".metadata.json.gz")):
        data = gzip.compress(data, mtime=0)
    io.write(location, data, exclusive=True)


def read_view_metadata(io: FileIO, location: str) -> ViewMetadata:
    """Read a view metadata file (gzip detected by content); a missing or malformed one is
    :class:`CorruptMetadata` naming the location."""
    try:
        data = io.read(location)
    except FileNotFoundStorageError as exc:
        raise CorruptMetadata(f"view metadata file {location} is missing") from exc
    return parse_view_metadata(data, location=location)


def parse_view_metadata(data: bytes, *, location: str = "<bytes>") -> ViewMetadata:
    obj = json_object(decompressed(data, location=location), location=location)
    try:
        return ViewMetadata.from_json(obj)
    except CorruptMetadata as exc:
        raise CorruptMetadata(f"view metadata file {location}: {exc}") from exc
