"""Row-level deletes of Iceberg tables: delete-file codecs and their application to Arrow data.

* :mod:`~lakecat.metadata.deletes.deletion_vector`: the v3 ``deletion-vector-v1`` blob
  (a 64-bit Roaring bitmap of deleted row positions).
* :mod:`~lakecat.metadata.deletes.puffin`: the Puffin files that hold deletion vectors (and
  table statistics: :mod:`lakecat.metadata.statistics`).
* :mod:`~lakecat.metadata.deletes.apply`: dropping deleted rows from Arrow data: position deletes
  and deletion vectors by row position, equality deletes by value.

Pure functions over bytes and Arrow data; no file IO of their own (a Puffin reader takes bytes or
an open binary file) and no knowledge of manifests or scan planning.
"""

from lakecat.metadata.deletes.apply import (
    EqualityDeletes,
    FieldRef,
    PositionIndex,
    drop_deleted_positions,
    drop_equality_deleted,
    equality_deleted_mask,
    positions_by_file,
    positions_for_file,
    row_positions,
)
from lakecat.metadata.deletes.deletion_vector import (
    DELETION_VECTOR_BLOB_TYPE,
    DELETION_VECTOR_MAGIC,
    MAX_POSITION,
    Positions,
    deserialize_bitmap,
    deserialize_deletion_vector,
    positions_array,
    serialize_deletion_vector,
    to_bitmap,
)
from lakecat.metadata.deletes.puffin import (
    PUFFIN_MAGIC,
    ZSTD,
    BlobMetadata,
    DeletionVectorLocation,
    PuffinBlob,
    PuffinFooter,
    blob_data,
    deletion_vectors,
    footer_size,
    read_blob,
    read_deletion_vector,
    read_footer,
    write_deletion_vectors,
    write_puffin,
)

__all__ = [
    "DELETION_VECTOR_BLOB_TYPE",
    "DELETION_VECTOR_MAGIC",
    "MAX_POSITION",
    "PUFFIN_MAGIC",
    "ZSTD",
    "BlobMetadata",
    "DeletionVectorLocation",
    "EqualityDeletes",
    "FieldRef",
    "PositionIndex",
    "Positions",
    "PuffinBlob",
    "PuffinFooter",
    "blob_data",
    "deletion_vectors",
    "deserialize_bitmap",
    "deserialize_deletion_vector",
    "drop_deleted_positions",
    "drop_equality_deleted",
    "equality_deleted_mask",
    "footer_size",
    "positions_array",
    "positions_by_file",
    "positions_for_file",
    "read_blob",
    "read_deletion_vector",
    "read_footer",
    "row_positions",
    "serialize_deletion_vector",
    "to_bitmap",
    "write_deletion_vectors",
    "write_puffin",
]
