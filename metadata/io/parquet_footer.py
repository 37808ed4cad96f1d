"""Parquet files another writer wrote (e.g. Spark's own Parquet writer), described as data
files from their footers alone.

lakecat's own writer describes a file from the Arrow data it just wrote
(:func:`lakecat.metadata.io.parquet.write_data_file`); a file written elsewhere is known only by
its footer: :func:`read_footer` reads it (pyarrow and OS errors translated here), and
:func:`data_file_from_footer` builds the :class:`DataFile` with
:func:`lakecat.metadata.io.metrics.footer_metrics` (NaN counts only where the writer recorded
them in the footer; counts and bounds only where the footer has them).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from lakecat.metadata.errors import CorruptMetadata, StorageError
from lakecat.metadata.io.fileio import FileIO
from lakecat.metadata.io.metrics import footer_metrics
from lakecat.metadata.manifests.datafile import DataFile
from lakecat.metadata.partitioning.spec import PartitionSpec
from lakecat.metadata.schema.schema import Schema


def read_footer(io: FileIO, location: str) -> pq.FileMetaData:
    """The footer of a Parquet file; :class:`CorruptMetadata` when it cannot be decoded."""
    source = io.open_input(location)
    try:
        return pq.read_metadata(source)
    except (pa.ArrowException, OSError) as exc:
        if isinstance(exc, StorageError):
            raise
        raise CorruptMetadata(f"cannot read the Parquet footer of {location}: {exc}") from exc
    finally:
        source.close()


def data_file_from_footer(
    footer: pq.FileMetaData,
    *,
    location: str,
    size: int,
    schema: Schema,
    spec: PartitionSpec,
    partition: tuple[Any, ...],
    properties: Mapping[str, str],
) -> DataFile:
    """A data file of ``spec`` at ``location`` (``size`` bytes) whose columns are
    ``schema``'s leaves in order, with Iceberg metrics from its ``footer``. Raises
    :class:`CorruptMetadata` when the file's columns do not follow the schema."""
    return footer_metrics(footer, schema, properties).data_file(
        location=location, size=size, spec_id=spec.spec_id, partition=partition
    )
