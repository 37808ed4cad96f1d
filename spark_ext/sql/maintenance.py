"""The maintenance procedures of ``lake.system``: ``rewrite_data_files``, ``rewrite_manifests``,
``rewrite_position_delete_files``, ``expire_snapshots``, ``remove_orphan_files``,
``compute_partition_stats``, ``compute_table_stats``, ``rewrite_table_path``.

Each runs lakecat's maintenance job (:mod:`lakecat.catalog.engine`) on the named table and
returns Iceberg's result row; the parameters and result columns are declared with the others
in :mod:`lakecat.spark_ext.sql.procedures`. Iceberg's parameters that only tune how its Spark
actions run (``max_concurrent_deletes``, ``stream_results``, ``use_caching``, ``prefix_listing``)
are accepted and have no effect; those that ask for something lakecat does not do are refused
with :class:`UnsupportedByCatalog`.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, TypeVar

from lakecat.catalog import Table, engine
from lakecat.catalog.engine import DEFAULT_MAX_GROUP_SIZE_BYTES, ICEBERG_MIN_INPUT_FILES
from lakecat.metadata.errors import ValidationError
from lakecat.metadata.expressions import parse as parse_filter
from lakecat.metadata.manifests import Content, ManifestContent, read_manifest, read_manifest_list
from lakecat.spark_ext.dml.compaction import ZORDER_VAR_LENGTH_CONTRIBUTION, compact
from lakecat.spark_ext.native.columns import quoted
from lakecat.spark_ext.sql.convert import UnsupportedByCatalog
from lakecat.spark_ext.sql.history import parse_sort_order

if TYPE_CHECKING:
    from lakecat.spark_ext.sql.procedures import ProcedureContext, Row

# the rewrite_data_files options lakecat's compaction takes (Iceberg's names)
_TARGET_SIZE = "target-file-size-bytes"
_MIN_INPUT_FILES = "min-input-files"
_MAX_GROUP_SIZE = "max-file-group-size-bytes"
_PARTIAL_PROGRESS = "partial-progress.enabled"
_MAX_COMMITS = "partial-progress.max-commits"
_MIN_FILE_SIZE = "min-file-size-bytes"
_MAX_FILE_SIZE = "max-file-size-bytes"
_REWRITE_ALL = "rewrite-all"
_DELETE_FILE_THRESHOLD = "delete-file-threshold"
_DELETE_RATIO_THRESHOLD = "delete-ratio-threshold"
_MAX_GROUP_FILES = "max-file-group-input-files"
_MAX_FILES = "max-files-to-rewrite"
_MAX_FAILED_COMMITS = "partial-progress.max-failed-commits"
_REMOVE_DANGLING = "remove-dangling-deletes"
_OUTPUT_SPEC = "output-spec-id"
_STARTING_SEQUENCE_NUMBER = "use-starting-sequence-number"
# Iceberg's options that only tune how its Spark action runs: accepted, no effect (lakecat
# rewrites every group in one Spark job, each group in one task)
_MAX_CONCURRENT = "max-concurrent-file-group-rewrites"
_JOB_ORDER = "rewrite-job-order"
_JOB_ORDERS = ("none", "bytes-asc", "bytes-desc", "files-asc", "files-desc")
_SORT_TUNING = ("shuffle-partitions-per-file", "compression-factor")
# a zorder(...) sort's byte sizes (Iceberg's SparkZOrderFileRewriteRunner)
_VAR_LENGTH = "var-length-contribution"
_MAX_OUTPUT = "max-output-size"
_REWRITE_OPTIONS = (
    _TARGET_SIZE,
    _MIN_INPUT_FILES,
    _MAX_GROUP_SIZE,
    _PARTIAL_PROGRESS,
    _MAX_COMMITS,
    _MIN_FILE_SIZE,
    _MAX_FILE_SIZE,
    _REWRITE_ALL,
    _DELETE_FILE_THRESHOLD,
    _DELETE_RATIO_THRESHOLD,
    _MAX_GROUP_FILES,
    _MAX_FILES,
    _MAX_FAILED_COMMITS,
    _REMOVE_DANGLING,
    _OUTPUT_SPEC,
    _STARTING_SEQUENCE_NUMBER,
    _MAX_CONCURRENT,
    _JOB_ORDER,
    *_SORT_TUNING,
    _VAR_LENGTH,
    _MAX_OUTPUT,
)


def rewrite_data_files(
    ctx: ProcedureContext,
    *,
    table: str,
    strategy: str | None,
    sort_order: str | None,
    options: dict[str, str] | None,
    where: str | None,
    branch: str | None,
) -> list[Row]:
    """Compaction on Spark (:func:`lakecat.spark_ext.compact`): bin-pack, or with
    ``strategy => 'sort'`` (or a ``sort_order``) sorted by ``sort_order`` or the table's
    sort order; with ``remove-dangling-deletes``, when there were groups to rewrite, the delete
    files that apply to no data file are removed after them
    (:func:`lakecat.catalog.engine.remove_dangling_deletes`), as Iceberg's does."""
    if branch is not None and branch != "main":
        raise UnsupportedByCatalog("rewrite_data_files compacts the main branch only")
    opts = dict(options or {})
    unknown = sorted(set(opts) - set(_REWRITE_OPTIONS))
    if unknown:
        raise ValidationError(
            f"rewrite_data_files does not know the options {unknown} "
            f"(it takes {', '.join(_REWRITE_OPTIONS)})"
        )
    if ctx.spark is None:
        raise UnsupportedByCatalog("rewrite_data_files needs the catalog's Spark session")
    target = ctx.table(table)
    sort_by, zorder = _compaction_sort(target, strategy, sort_order)
    target_size = int_option(opts, _TARGET_SIZE)
    min_input_files = int_option(opts, _MIN_INPUT_FILES)
    min_input_files = ICEBERG_MIN_INPUT_FILES if min_input_files is None else min_input_files
    max_group_size = int_option(opts, _MAX_GROUP_SIZE)
    max_group_size = DEFAULT_MAX_GROUP_SIZE_BYTES if max_group_size is None else max_group_size
    # Iceberg's default: every group in one commit (lk.compact's is partial progress)
    partial = bool_option(opts, _PARTIAL_PROGRESS, default=False)
    rewrite_all = bool_option(opts, _REWRITE_ALL, default=False)
    remove_dangling = bool_option(opts, _REMOVE_DANGLING, default=False)
    concurrency = int_option(opts, _MAX_CONCURRENT)
    if concurrency is not None and concurrency < 1:
        raise ValidationError(f"option {_MAX_CONCURRENT} must be at least 1, not {concurrency}")
    order = opts.get(_JOB_ORDER, "none").strip().lower()
    if order not in _JOB_ORDERS:
        raise ValidationError(
            f"option {_JOB_ORDER} is one of {', '.join(_JOB_ORDERS)}, not {order!r}"
        )
    starting_sequence_number = bool_option(opts, _STARTING_SEQUENCE_NUMBER, default=True)
    ratio = float_option(opts, _DELETE_RATIO_THRESHOLD)
    for key in _SORT_TUNING:
        if key in opts and sort_by is None and zorder is None:
            raise ValidationError(f"option {key} applies to a sort only")
    for key in (_VAR_LENGTH, _MAX_OUTPUT):
        if key in opts and zorder is None:
            raise ValidationError(f"option {key} applies to a zorder(...) sort only")
    var_length = int_option(opts, _VAR_LENGTH)
    result = compact(
        ctx.spark,
        target.name,
        # Spark SQL, as Iceberg parses it: 'name = "foo"' compares with a string
        row_filter=None if where is None else parse_filter(where, double_quoted_strings=True),
        target_file_size_bytes=target_size,
        min_input_files=min_input_files,
        max_group_size_bytes=max_group_size,
        partial_progress=partial,
        sort_by=sort_by,
        zorder=zorder,
        zorder_var_length_contribution=(
            ZORDER_VAR_LENGTH_CONTRIBUTION if var_length is None else var_length
        ),
        zorder_max_output_size=int_option(opts, _MAX_OUTPUT),
        delete_file_threshold=int_option(opts, _DELETE_FILE_THRESHOLD),
        min_file_size_bytes=int_option(opts, _MIN_FILE_SIZE),
        max_file_size_bytes=int_option(opts, _MAX_FILE_SIZE),
        rewrite_all=rewrite_all,
        partial_progress_max_commits=(
            engine.DEFAULT_PARTIAL_PROGRESS_MAX_COMMITS
            if (max_commits := int_option(opts, _MAX_COMMITS)) is None
            else max_commits
        ),
        partial_progress_max_failed_commits=int_option(opts, _MAX_FAILED_COMMITS),
        max_group_input_files=int_option(opts, _MAX_GROUP_FILES),
        max_files_to_rewrite=int_option(opts, _MAX_FILES),
        delete_ratio_threshold=(engine.DEFAULT_DELETE_RATIO_THRESHOLD if ratio is None else ratio),
        output_spec_id=int_option(opts, _OUTPUT_SPEC),
        # Iceberg's planner: a file of another spec is rewritten for its size or deletes only
        repartition=False,
        use_starting_sequence_number=starting_sequence_number,
        catalog=ctx.catalog,
        format_name=ctx.data_format,
    )
    committed = target.refresh().metadata
    removed_deletes = sum(
        committed.snapshot_by_id(s).summary_count("removed-delete-files") or 0
        for s in result.snapshot_ids
    )
    if remove_dangling and result.groups_total:
        # after a compaction that had groups to rewrite, in a commit of its own, as Iceberg's
        removed_deletes += len(engine.remove_dangling_deletes(target).removed)
    return [
        (
            result.files_removed,
            result.files_added,
            result.bytes_removed,
            result.files_failed,
            removed_deletes,
        )
    ]


def _compaction_sort(
    target: Table, strategy: str | None, sort_order: str | None
) -> tuple[engine.SortBy, list[str] | None]:
    """What ``rewrite_data_files`` sorts by, as Iceberg's procedure reads ``strategy`` and
    ``sort_order``: neither, or ``binpack``, is no sort; ``sort`` or a ``sort_order`` alone
    sorts by the order given (sort fields, or the columns of one ``zorder(...)``), else by the
    table's order (which it must have). Returns (sort_by, zorder columns)."""
    kind = None if strategy is None else strategy.strip().lower()
    if kind not in (None, "binpack", "sort"):
        raise ValidationError(
            f"rewrite_data_files: unsupported strategy {strategy!r}; only binpack or sort is "
            "supported"
        )
    if kind == "binpack":
        if sort_order is not None:
            raise ValidationError(
                "rewrite_data_files: the binpack strategy does not sort; use strategy => "
                "'sort' with a sort_order"
            )
        return None, None
    if kind is None and sort_order is None:
        return None, None
    text = sort_order or ""
    zorder = _ZORDER.search(text)
    if zorder is not None:
        if text[: zorder.start()].strip() or text[zorder.end() :].strip():
            raise ValidationError(
                f"rewrite_data_files: cannot mix sort columns and a zorder(...) term: {text!r}"
            )
        columns = [c.strip().strip("`") for c in zorder.group(1).split(",") if c.strip()]
        return None, columns
    fields = parse_sort_order(target.schema(), text)
    if fields:
        return fields, None
    if target.sort_order().is_unsorted:
        raise ValidationError(
            "rewrite_data_files: cannot sort without a sort order; the table has none and no "
            "sort_order was given"
        )
    return "table", None


T = TypeVar("T")

# Iceberg's Z-order term of a sort_order: zorder(c1, c2, ...)
_ZORDER = re.compile(r"\bzorder\s*\(([^()]*)\)", re.IGNORECASE)


def int_option(options: Mapping[str, str], key: str) -> int | None:
    """An integer procedure option (an ``options`` map entry), ``None`` when absent."""
    return _parsed_option(options, key, int, "an integer")


def float_option(options: Mapping[str, str], key: str) -> float | None:
    """A number procedure option (an ``options`` map entry), ``None`` when absent."""
    return _parsed_option(options, key, float, "a number")


def _parsed_option(
    options: Mapping[str, str], key: str, parse: Callable[[str], T], what: str
) -> T | None:
    raw = options.get(key)
    if raw is None:
        return None
    try:
        return parse(raw)
    except ValueError:
        raise ValidationError(f"option {key} must be {what}, not {raw!r}") from None


def bool_option(options: Mapping[str, str], key: str, *, default: bool) -> bool:
    """A true/false procedure option (an ``options`` map entry), ``default`` when absent."""
    raw = options.get(key)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value not in ("true", "false"):
        raise ValidationError(f"option {key} is true or false, not {raw!r}")
    return value == "true"


_DAY_MS = 24 * 60 * 60 * 1000


def _check_positive(procedure: str, name: str, value: int | None) -> None:
    """Iceberg's check of a parallelism hint lakecat does not use (it deletes one by one)."""
    if value is not None and value <= 0:
        raise ValidationError(f"{procedure}: {name} must be greater than 0, not {value}")


def compute_partition_stats(
    ctx: ProcedureContext, *, table: str, snapshot_id: int | None
) -> list[Row]:
    """Write and register the partition statistics file of a snapshot, the current one by
    default (:func:`lakecat.catalog.engine.compute_partition_stats`); no row for a table
    without snapshots, as Iceberg's."""
    result = engine.compute_partition_stats(ctx.table(table), snapshot_id)
    return [] if result is None else [(result.path,)]


def compute_table_stats(
    ctx: ProcedureContext,
    *,
    table: str,
    snapshot_id: int | None,
    columns: list[str] | None,
) -> list[Row]:
    """Sketch the distinct values of a snapshot's columns (the current snapshot, every
    top-level primitive column by default) and register them as the snapshot's statistics
    file (:func:`lakecat.catalog.engine.write_table_statistics`); no row for a table without
    snapshots, as Iceberg's.

    The sketches are one Spark aggregation over the snapshot's rows (deletes applied), with
    the catalog's ``ndv_sketch`` function: Apache DataSketches theta sketches of each value's
    Iceberg binary form, as Iceberg's Spark runtime builds them.
    """
    if ctx.spark is None:
        raise UnsupportedByCatalog("compute_table_stats needs the catalog's Spark session")
    target = ctx.table(table)
    metadata = target.metadata
    if snapshot_id is None:
        snapshot = metadata.current_snapshot
        if snapshot is None:
            return []
    else:
        snapshot = metadata.snapshot_by_id(snapshot_id)  # NoSuchSnapshot for an unknown id
    fields = engine.sketch_columns(metadata, snapshot, columns)
    schema = metadata.schema(snapshot.schema_id)
    function = f"{quoted(ctx.name)}.system.ndv_sketch"
    selected = ", ".join(
        f"{function}({'.'.join(map(quoted, schema.column_path(f.field_id)))})" for f in fields
    )
    source = ".".join(map(quoted, [ctx.name, *ctx.identifier(table)]))
    row = ctx.spark.sql(
        f"SELECT {selected} FROM {source} VERSION AS OF {snapshot.snapshot_id}"
    ).first()
    sketches = {f.field_id: bytes(row[i]) for i, f in enumerate(fields)}
    written = engine.write_table_statistics(
        target,
        snapshot.snapshot_id,
        sketches,
        created_by=f"lakecat {engine.lakecat_version()} Spark {ctx.spark.version}",
    )
    return [(written.path,)]


def rewrite_table_path(
    ctx: ProcedureContext,
    *,
    table: str,
    source_prefix: str,
    target_prefix: str,
    start_version: str | None,
    end_version: str | None,
    staging_location: str | None,
    create_file_list: bool | None,
) -> list[Row]:
    """Stage the table's metadata with ``source_prefix`` replaced by ``target_prefix`` and
    write the copy plan (:func:`lakecat.catalog.engine.rewrite_table_path`); the table is not
    changed."""
    result = engine.rewrite_table_path(
        ctx.table(table),
        source_prefix,
        target_prefix,
        start_version=start_version,
        end_version=end_version,
        staging_location=staging_location,
        create_file_list=True if create_file_list is None else create_file_list,
    )
    return [
        (
            result.latest_version,
            result.file_list_location,
            result.rewritten_manifest_file_paths_count,
            result.rewritten_delete_file_paths_count,
        )
    ]


def rewrite_manifests(
    ctx: ProcedureContext, *, table: str, use_caching: bool | None, spec_id: int | None
) -> list[Row]:
    """Regroup the current snapshot's data manifests by partition
    (:func:`lakecat.catalog.engine.rewrite_manifests`); ``use_caching`` is a Spark hint."""
    target = ctx.table(table)
    if spec_id is not None:
        specs = target.metadata.specs_by_id()
        if spec_id not in specs:
            raise ValidationError(
                f"rewrite_manifests: {target.name} has no partition spec {spec_id} "
                f"(its specs: {', '.join(str(i) for i in sorted(specs))})"
            )
        if len(specs) > 1:
            raise UnsupportedByCatalog(
                f"rewrite_manifests: lakecat rewrites the manifests of every partition spec "
                f"together, and {target.name} has {len(specs)}; call it without spec_id"
            )
    result = engine.rewrite_manifests(target)
    if result.snapshot_id is None:
        return [(0, 0)]
    snapshot = target.metadata.snapshot_by_id(result.snapshot_id)
    return [
        (
            snapshot.summary_count("manifests-replaced") or 0,
            snapshot.summary_count("manifests-created") or 0,
        )
    ]


_MIN_DELETE_INPUT_FILES = "min-input-files"


def rewrite_position_delete_files(
    ctx: ProcedureContext, *, table: str, options: dict[str, str] | None, where: str | None
) -> list[Row]:
    """Merge each data file's position delete files into one
    (:func:`lakecat.catalog.engine.rewrite_position_delete_files`)."""
    if where is not None:
        raise UnsupportedByCatalog(
            "rewrite_position_delete_files rewrites the whole table: lakecat takes no where"
        )
    opts = dict(options or {})
    unknown = sorted(set(opts) - {_MIN_DELETE_INPUT_FILES})
    if unknown:
        raise ValidationError(
            f"rewrite_position_delete_files does not know the options {unknown} "
            f"(it takes {_MIN_DELETE_INPUT_FILES})"
        )
    min_input_files = int_option(opts, _MIN_DELETE_INPUT_FILES)
    target = ctx.table(table)
    result = engine.rewrite_position_delete_files(
        target, min_input_files=2 if min_input_files is None else min_input_files
    )
    if result.snapshot_id is None:
        return [(0, 0, 0, 0)]
    snapshot = target.metadata.snapshot_by_id(result.snapshot_id)
    return [
        (
            result.delete_files_removed,
            result.delete_files_added,
            snapshot.summary_count("removed-files-size") or 0,
            snapshot.summary_count("added-files-size") or 0,
        )
    ]


def expire_snapshots(
    ctx: ProcedureContext,
    *,
    table: str,
    older_than: int | None,
    retain_last: int | None,
    max_concurrent_deletes: int | None,
    stream_results: bool | None,
    snapshot_ids: list[int] | None,
    clean_expired_metadata: bool | None,
) -> list[Row]:
    """Expire snapshots and delete the files only they used
    (:func:`lakecat.catalog.engine.expire_snapshots`); the deleted files are counted by kind.

    ``max_concurrent_deletes`` and ``stream_results`` are hints (lakecat deletes one file at a
    time and returns counts); removing unused schemas and specs is not done."""
    _check_positive("expire_snapshots", "max_concurrent_deletes", max_concurrent_deletes)
    if clean_expired_metadata:
        raise UnsupportedByCatalog(
            "expire_snapshots cannot remove unused schemas and partition specs "
            "(clean_expired_metadata)"
        )
    target = ctx.table(table)
    before = target.metadata
    delete_files = _delete_file_contents(target)
    result = engine.expire_snapshots(
        target, older_than=older_than, retain_last=retain_last, snapshot_ids=snapshot_ids or ()
    )
    lists = {s.manifest_list for s in before.snapshots}
    statistics = {
        s.get("statistics-path") for s in (*before.statistics, *before.partition_statistics)
    }
    kinds = [delete_files.get(path, Content.DATA) for path in result.deleted_data_files]
    return [
        (
            kinds.count(Content.DATA),
            kinds.count(Content.POSITION_DELETES),
            kinds.count(Content.EQUALITY_DELETES),
            len(result.deleted_manifests),
            # side files lakecat deletes with a manifest list (a compaction's row-moves
            # record) are not Iceberg's manifest lists
            sum(1 for path in result.deleted_manifest_lists if path in lists),
            # and statistics files: the expired snapshots' table and partition statistics
            sum(1 for path in result.deleted_manifest_lists if path in statistics),
        )
    ]


def _delete_file_contents(table: Table) -> dict[str, Content]:
    """The delete files every snapshot of ``table.metadata`` references, by path: what tells a
    delete file from a data file among the files an expiry deleted. Reads the manifest lists
    and the delete manifests (a table without merge-on-read changes has none); those a
    concurrent expiry deletes meanwhile are skipped (their files are that expiry's)."""
    metadata = table.metadata
    specs, schema = metadata.specs_by_id(), metadata.schema()
    seen: set[str] = set()
    contents: dict[str, Content] = {}
    for snapshot in metadata.snapshots:
        try:
            manifests = read_manifest_list(table.io, snapshot.manifest_list)
        except FileNotFoundError:
            continue
        for manifest in manifests:
            if manifest.content is not ManifestContent.DELETES or manifest.manifest_path in seen:
                continue
            seen.add(manifest.manifest_path)
            try:
                entries = read_manifest(table.io, manifest, specs=specs, schema=schema)
            except FileNotFoundError:
                continue
            contents.update((e.data_file.file_path, e.data_file.content) for e in entries)
    return contents


def remove_orphan_files(
    ctx: ProcedureContext,
    *,
    table: str,
    older_than: int | None,
    location: str | None,
    dry_run: bool | None,
    max_concurrent_deletes: int | None,
    file_list_view: str | None,
    equal_schemes: dict[str, str] | None,
    equal_authorities: dict[str, str] | None,
    prefix_mismatch_mode: str | None,
    prefix_listing: bool | None,
    stream_results: bool | None,
) -> list[Row]:
    """Delete the files under the table's location that it does not reference
    (:func:`lakecat.catalog.engine.remove_orphan_files`); a row per orphan found."""
    procedure = "remove_orphan_files"
    _check_positive(procedure, "max_concurrent_deletes", max_concurrent_deletes)
    refused = {
        "file_list_view": file_list_view,  # lakecat lists the storage itself
        "equal_schemes": equal_schemes or None,
        "equal_authorities": equal_authorities or None,
        "prefix_mismatch_mode": prefix_mismatch_mode,
    }
    given = sorted(name for name, value in refused.items() if value is not None)
    if given:
        raise UnsupportedByCatalog(
            f"{procedure}: lakecat does not take {', '.join(given)} (it lists the location "
            "itself and compares paths normalized, with s3, s3a and s3n as one scheme)"
        )
    if older_than is not None and older_than > _now_ms() - _DAY_MS:
        # Iceberg's guard: a shorter interval can delete the files of a commit in flight
        raise ValidationError(
            f"{procedure}: older_than must be at least 24 hours ago; a shorter interval may "
            "delete files of a commit in progress (lakecat.catalog.maintenance."
            "remove_orphan_files takes any time, at your own risk)"
        )
    target = ctx.table(table)
    result = engine.remove_orphan_files(
        target, older_than=older_than, location=location, dry_run=bool(dry_run)
    )
    return [(path,) for path in result.orphans]


def _now_ms() -> int:
    return int(time.time() * 1000)
