"""Table maintenance: each job is an ordinary optimistic commit; none takes a lock.

* :func:`rewrite_data_files`: compaction (bin-pack, optionally sort) as ``replace`` snapshots;
* :func:`rewrite_manifests`: regroup manifests by partition;
* :func:`rewrite_position_delete_files`: merge each data file's position delete files;
* :func:`remove_dangling_deletes`: remove delete files that apply to no live data file (other
  engines leave them behind);
* :func:`expire_snapshots`: drop old snapshots, then delete the files only they used;
* :func:`remove_orphan_files`: delete files nothing references, older than a guard;
* :func:`compute_partition_stats`: write and register a snapshot's partition statistics file;
* :func:`write_table_statistics`: write and register a snapshot's column NDV sketches (computed
  by an engine: Spark's ``compute_table_stats``), :func:`table_statistics` to read them back;
* :func:`rewrite_table_path`: stage the metadata with a new path prefix and plan the copy of a
  table to another location;
* snapshot management: :func:`rollback_to_snapshot`, :func:`rollback_to_timestamp`,
  :func:`set_current_snapshot`, :func:`cherry_pick`, :func:`publish_changes` (write-audit-publish),
  :func:`fast_forward`.

A job that reads files a concurrent maintenance commit deletes under it (an expiry after a
manifest rewrite or a compaction) plans again on the newer metadata, a bounded number of times
(:mod:`lakecat.catalog.maintenance.replan`, :class:`TableKeptChanging`).

Incremental reads and the data version live in :mod:`lakecat.catalog.read.incremental`.
"""

from lakecat.catalog.maintenance.compaction import CompactionResult, rewrite_data_files
from lakecat.catalog.maintenance.compaction_plan import FileGroup, FileSelection, plan_file_groups
from lakecat.catalog.maintenance.dangling_deletes import (
    DanglingDeletesResult,
    remove_dangling_deletes,
)
from lakecat.catalog.maintenance.expire import (
    ExpireResult,
    ExpiryPlan,
    ExpiryPolicy,
    expire_snapshots,
    plan_expiry,
)
from lakecat.catalog.maintenance.manifests import ManifestRewriteResult, rewrite_manifests
from lakecat.catalog.maintenance.orphans import OrphanResult, remove_orphan_files
from lakecat.catalog.maintenance.partition_stats import (
    PartitionStatisticsFile,
    compute_partition_stats,
)
from lakecat.catalog.maintenance.position_deletes import (
    DeleteRewriteResult,
    rewrite_position_delete_files,
)
from lakecat.catalog.maintenance.snapshots import (
    cherry_pick,
    fast_forward,
    publish_changes,
    rollback_to_snapshot,
    rollback_to_timestamp,
    set_current_snapshot,
)
from lakecat.catalog.maintenance.table_path import RewritePathResult, rewrite_table_path
from lakecat.catalog.maintenance.table_stats import (
    StatisticsFile,
    sketch_columns,
    snapshot_statistics,
    table_statistics,
    write_table_statistics,
)
from lakecat.metadata.errors import TableKeptChanging

__all__ = [
    "CompactionResult",
    "DanglingDeletesResult",
    "DeleteRewriteResult",
    "ExpireResult",
    "ExpiryPlan",
    "ExpiryPolicy",
    "FileGroup",
    "FileSelection",
    "ManifestRewriteResult",
    "OrphanResult",
    "PartitionStatisticsFile",
    "RewritePathResult",
    "StatisticsFile",
    "TableKeptChanging",
    "cherry_pick",
    "compute_partition_stats",
    "expire_snapshots",
    "fast_forward",
    "plan_expiry",
    "plan_file_groups",
    "publish_changes",
    "remove_dangling_deletes",
    "remove_orphan_files",
    "rewrite_data_files",
    "rewrite_manifests",
    "rewrite_position_delete_files",
    "rewrite_table_path",
    "rollback_to_snapshot",
    "rollback_to_timestamp",
    "set_current_snapshot",
    "sketch_columns",
    "snapshot_statistics",
    "table_statistics",
    "write_table_statistics",
]
