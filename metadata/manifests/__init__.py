"""Manifests and manifest lists: the data-file model (:mod:`.datafile`), Avro reading and writing
through fastavro (:mod:`.manifest`, :mod:`.schemas`, :mod:`.blocks`, :mod:`.avro_blocks`), the
decoded-manifest cache (:mod:`.cache`), lakecat's partition-ordered layout (:mod:`.order`) and
which delete files apply to which data file (:mod:`.delete_index`).
"""

from lakecat.metadata.manifests.datafile import (
    Content,
    DataFile,
    ManifestContent,
    ManifestEntry,
    ManifestFile,
    Status,
)
from lakecat.metadata.manifests.manifest import (
    read_manifest,
    read_manifest_list,
    write_manifest,
    write_manifest_list,
)

__all__ = [
    "Content",
    "DataFile",
    "ManifestContent",
    "ManifestEntry",
    "ManifestFile",
    "Status",
    "read_manifest",
    "read_manifest_list",
    "write_manifest",
    "write_manifest_list",
]
