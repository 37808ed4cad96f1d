"""What an engine integration builds on: the catalog's API below the table API.

The table API (:mod:`lakecat.catalog`: ``Catalog``, ``Table``, ``CommitResult``) is enough to
read and write tables from Python. An engine that writes data files itself and commits them
through lakecat, as the Spark integration (:mod:`lakecat.spark_ext`) does, needs the pieces
the table API is made of: an operation's intent, scan planning, writing data files in the
table's form, the checks a distributed job runs before its commit, and where a table keeps its
files. This module names them; ``lakecat.spark_ext`` imports from ``lakecat.catalog`` only
through here and the package itself (``tests/test_layering.py`` holds it to that), so what
lies behind them can be reorganized freely.

* an operation's intent, committed by ``Table.commit_intent``: ``Intent``, ``OpKind``,
  ``new_snapshot_id``; the snapshot a write to a branch reads (``start_of``, which also
  decides whether the write creates its branch) and the one its commit builds on
  (``commit_parent``);
* planning reads: ``Scan``, ``RowFilter``, ``to_timestamp_ms``, ``plan_delete``;
* applying delete files while reading a data file: ``DeleteReader`` (a scan plan names the
  delete files of each data file);
* whether a snapshot has delete files: ``has_deletes``;
* data files in the table's form, and where a table keeps its files: ``conform``,
  ``write_files``, ``data_dir``, ``metadata_dir``;
* merge-on-read changes: ``merge_on_read`` (the table's mode for an operation kind),
  ``FileDeletes`` and ``write_position_deletes`` (position delete files naming rows; v3:
  deletion vectors) and ``replaced_deletes`` (the delete files those DVs replace);
* the checks a job runs against the version it started from before it commits:
  ``metadata_delta``, ``check_metadata``, ``check_protocol``, ``app_versions``,
  ``check_transaction``;
* compaction planning and commits: ``plan_file_groups`` by a ``FileSelection``, ``FileGroup``,
  ``CompactionResult``, ``DEFAULT_MAX_GROUP_SIZE_BYTES``, ``DEFAULT_MIN_INPUT_FILES`` (and
  Iceberg's, ``ICEBERG_MIN_INPUT_FILES``), ``DEFAULT_DELETE_RATIO_THRESHOLD``,
  ``commit_compaction``, ``compaction_sort`` (what a sorting compaction sorts by,
  ``SortBy``), ``commit_batches`` (partial progress's commits,
  ``DEFAULT_PARTIAL_PROGRESS_MAX_COMMITS``, ``check_max_commits``, ``check_failed_commits``);
  where a compaction moved each row, from the positions it saw its rows come from:
  ``observed_moves``, ``PositionBlock``;
* the maintenance jobs an engine exposes as its own commands (Spark's ``CALL`` procedures),
  with their results: ``expire_snapshots``, ``remove_orphan_files``, ``rewrite_manifests``,
  ``rewrite_position_delete_files``, ``remove_dangling_deletes`` (``DanglingDeletesResult``),
  ``rollback_to_snapshot``, ``rollback_to_timestamp``, ``set_current_snapshot``,
  ``cherry_pick``, ``publish_changes``, ``fast_forward``,
  ``ExpireResult``, ``OrphanResult``, ``ManifestRewriteResult``, ``DeleteRewriteResult``;
  ``compute_partition_stats``, ``rewrite_table_path`` (``RewritePathResult``); table
  statistics from sketches the engine computed: ``sketch_columns``,
  ``write_table_statistics``, ``table_statistics``, ``StatisticsFile``, and a read's
  ``snapshot_statistics`` (the file a metadata registers for a snapshot);
* the change feed: ``changes``, ``ChangeSet``, ``CHANGE_SNAPSHOT_ID``;
* the installed lakecat's version, for the files an engine says it wrote
  (``lakecat_version``; the CLI's ``--version`` too).
"""

from lakecat.catalog.about import lakecat_version
from lakecat.catalog.commit.conflicts import (
    app_versions,
    check_metadata,
    check_protocol,
    check_transaction,
)
from lakecat.catalog.commit.intent import (
    Intent,
    OpKind,
    commit_parent,
    isolation_level,
    new_snapshot_id,
    start_of,
)
from lakecat.catalog.commit.moves import PositionBlock, observed_moves
from lakecat.catalog.commit.pipeline import delete_quietly, metadata_delta
from lakecat.catalog.commit.producer import data_dir, metadata_dir
from lakecat.catalog.maintenance import (
    CompactionResult,
    DanglingDeletesResult,
    DeleteRewriteResult,
    ExpireResult,
    FileGroup,
    FileSelection,
    ManifestRewriteResult,
    OrphanResult,
    PartitionStatisticsFile,
    RewritePathResult,
    StatisticsFile,
    cherry_pick,
    compute_partition_stats,
    expire_snapshots,
    fast_forward,
    plan_file_groups,
    publish_changes,
    remove_dangling_deletes,
    remove_orphan_files,
    rewrite_manifests,
    rewrite_position_delete_files,
    rewrite_table_path,
    rollback_to_snapshot,
    rollback_to_timestamp,
    set_current_snapshot,
    sketch_columns,
    snapshot_statistics,
    table_statistics,
    write_table_statistics,
)
from lakecat.catalog.maintenance.compaction import (
    DEFAULT_PARTIAL_PROGRESS_MAX_COMMITS,
    SortBy,
    check_failed_commits,
    check_max_commits,
    commit_batches,
    commit_compaction,
    compaction_sort,
)
from lakecat.catalog.maintenance.compaction_plan import (
    DEFAULT_DELETE_RATIO_THRESHOLD,
    DEFAULT_MAX_GROUP_SIZE_BYTES,
    DEFAULT_MIN_INPUT_FILES,
    ICEBERG_MIN_INPUT_FILES,
)
from lakecat.catalog.read.deletes import DeleteReader, has_deletes
from lakecat.catalog.read.incremental import CHANGE_SNAPSHOT_ID, ChangeSet, changes
from lakecat.catalog.read.scan import RowFilter, Scan, ScanPlan
from lakecat.catalog.write.merge_on_read import (
    FileDeletes,
    merge_on_read,
    replaced_deletes,
    write_position_deletes,
)
from lakecat.catalog.write.row_ops import plan_delete
from lakecat.catalog.write.writer import conform, write_files
from lakecat.metadata.table.timetravel import to_timestamp_ms

__all__ = [
    "CHANGE_SNAPSHOT_ID",
    "DEFAULT_DELETE_RATIO_THRESHOLD",
    "DEFAULT_MAX_GROUP_SIZE_BYTES",
    "DEFAULT_MIN_INPUT_FILES",
    "DEFAULT_PARTIAL_PROGRESS_MAX_COMMITS",
    "ICEBERG_MIN_INPUT_FILES",
    "ChangeSet",
    "CompactionResult",
    "DanglingDeletesResult",
    "DeleteReader",
    "DeleteRewriteResult",
    "ExpireResult",
    "FileDeletes",
    "FileGroup",
    "FileSelection",
    "Intent",
    "ManifestRewriteResult",
    "OpKind",
    "OrphanResult",
    "PartitionStatisticsFile",
    "PositionBlock",
    "RewritePathResult",
    "RowFilter",
    "Scan",
    "ScanPlan",
    "SortBy",
    "StatisticsFile",
    "app_versions",
    "changes",
    "check_failed_commits",
    "check_max_commits",
    "check_metadata",
    "check_protocol",
    "check_transaction",
    "cherry_pick",
    "commit_batches",
    "commit_compaction",
    "commit_parent",
    "compaction_sort",
    "compute_partition_stats",
    "conform",
    "data_dir",
    "delete_quietly",
    "expire_snapshots",
    "fast_forward",
    "has_deletes",
    "isolation_level",
    "lakecat_version",
    "merge_on_read",
    "metadata_delta",
    "metadata_dir",
    "new_snapshot_id",
    "observed_moves",
    "plan_delete",
    "plan_file_groups",
    "publish_changes",
    "remove_dangling_deletes",
    "remove_orphan_files",
    "replaced_deletes",
    "rewrite_manifests",
    "rewrite_position_delete_files",
    "rewrite_table_path",
    "rollback_to_snapshot",
    "rollback_to_timestamp",
    "set_current_snapshot",
    "sketch_columns",
    "snapshot_statistics",
    "start_of",
    "table_statistics",
    "to_timestamp_ms",
    "write_files",
    "write_position_deletes",
    "write_table_statistics",
]
