"""Which files a table's metadata references: the basis of purge, expiry and orphan removal."""

from __future__ import annotations

from collections.abc import Iterable

from lakecat.catalog.commit.moves import ROW_MOVES_KEY
from lakecat.metadata import properties as P
from lakecat.metadata.errors import ValidationError
from lakecat.metadata.io.fileio import FileIO
from lakecat.metadata.manifests.datafile import Status
from lakecat.metadata.manifests.manifest import read_manifest, read_manifest_list
from lakecat.metadata.table.snapshots import Snapshot
from lakecat.metadata.table.table_metadata import TableMetadata


def reachable_files(
    io: FileIO,
    metadata: TableMetadata,
    metadata_location: str | None,
    *,
    snapshot_ids: Iterable[int] | None = None,
) -> set[str]:
    """Every file the given snapshots (default: all) and the metadata files reference.

    Includes metadata files in the metadata log, the table and partition statistics files the
    metadata names (Puffin files other engines write, whatever snapshot they describe: they go
    when an engine removes their entry), manifest lists, manifests and live data and delete
    files (entries that are ADDED or EXISTING; DELETED entries name files the snapshot no
    longer has).
    """
    wanted = set(snapshot_ids) if snapshot_ids is not None else None
    out: set[str] = {e.metadata_file for e in metadata.metadata_log}
    if metadata_location:
        out.add(metadata_location)
    for stats in (*metadata.statistics, *metadata.partition_statistics):
        path = stats.get("statistics-path")
        if isinstance(path, str):
            out.add(path)
    seen_manifests: set[str] = set()
    specs = metadata.specs_by_id()
    for snap in metadata.snapshots:
        if wanted is not None and snap.snapshot_id not in wanted:
            continue
        out.add(snap.manifest_list)
        out.update(side_files(snap))
        for manifest in read_manifest_list(io, snap.manifest_list):
            if manifest.manifest_path in seen_manifests:
                continue
            seen_manifests.add(manifest.manifest_path)
            out.add(manifest.manifest_path)
            for entry in read_manifest(io, manifest, specs=specs, schema=metadata.schema()):
                if entry.status is not Status.DELETED:
                    out.add(entry.data_file.file_path)
    return out


def statistics_files(metadata: TableMetadata, snapshot_id: int) -> list[str]:
    """The table and partition statistics files the metadata registers for ``snapshot_id``:
    they describe that snapshot only, and an expiry of it removes their entries."""
    return [
        path
        for stats in (*metadata.statistics, *metadata.partition_statistics)
        if stats.get("snapshot-id") == snapshot_id
        and isinstance(path := stats.get("statistics-path"), str)
    ]


def side_files(snapshot: Snapshot) -> list[str]:
    """Files a snapshot names in its summary and that live as long as it: a compaction's
    row-moves record (:mod:`lakecat.catalog.commit.moves`)."""
    record = snapshot.summary.get(ROW_MOVES_KEY)
    return [record] if record else []


def require_gc_enabled(metadata: TableMetadata, action: str) -> None:
    """Refuse to delete a table's files when its ``gc.enabled`` is false (as Iceberg does):
    such a table may share its data files with another (a snapshot made by ``add_files``)."""
    if not P.get_bool(metadata.properties, P.GC_ENABLED, P.GC_ENABLED_DEFAULT):
        raise ValidationError(
            f"cannot {action}: the table's gc.enabled is false (its files may belong to "
            "other tables too)"
        )
