"""Files: the FileIO seam every read and write of storage goes through (:mod:`.fileio`), its
object-storage configuration by catalog properties (:mod:`.storage`),
Parquet data files with Iceberg column metrics (:mod:`.parquet`, :mod:`.metrics`), and
metrics read back from a Parquet footer (:mod:`.parquet_footer`).
"""

from lakecat.metadata.io.fileio import (
    ArrowFileIO,
    FileInfo,
    FileIO,
    LocalFileIO,
    RoutingFileIO,
    deleted_on_error,
    file_io_for,
    join,
    local_path,
    to_uri,
)
from lakecat.metadata.io.metrics import (
    ColumnRange,
    footer_ranges,
    metrics_mode,
)
from lakecat.metadata.io.parquet import (
    ARROW_TO_PARQUET_RATIO,
    iter_data_file_batches,
    read_data_file,
    read_parquet_columns,
    write_data_file,
)
from lakecat.metadata.io.parquet_footer import (
    data_file_from_footer,
    read_footer,
)
from lakecat.metadata.io.storage import (
    SECRET_PROPERTIES,
    STORAGE_PROPERTIES,
    check_storage_properties,
    redacted,
)

__all__ = [
    "ARROW_TO_PARQUET_RATIO",
    "SECRET_PROPERTIES",
    "STORAGE_PROPERTIES",
    "ArrowFileIO",
    "ColumnRange",
    "FileIO",
    "FileInfo",
    "LocalFileIO",
    "RoutingFileIO",
    "check_storage_properties",
    "data_file_from_footer",
    "deleted_on_error",
    "file_io_for",
    "footer_ranges",
    "iter_data_file_batches",
    "join",
    "local_path",
    "metrics_mode",
    "read_data_file",
    "read_footer",
    "read_parquet_columns",
    "redacted",
    "to_uri",
    "write_data_file",
]
