"""Table property keys and their defaults (Iceberg's names), in one leaf module."""

from __future__ import annotations

from collections.abc import Collection, Mapping

from lakecat.metadata.errors import ValidationError

# --- commit retry (Iceberg TableProperties) ---------------------------------------------
COMMIT_NUM_RETRIES = "commit.retry.num-retries"
COMMIT_NUM_RETRIES_DEFAULT = 4
COMMIT_MIN_RETRY_WAIT_MS = "commit.retry.min-wait-ms"
COMMIT_MIN_RETRY_WAIT_MS_DEFAULT = 100
COMMIT_MAX_RETRY_WAIT_MS = "commit.retry.max-wait-ms"
COMMIT_MAX_RETRY_WAIT_MS_DEFAULT = 60_000
COMMIT_TOTAL_RETRY_TIME_MS = "commit.retry.total-timeout-ms"
COMMIT_TOTAL_RETRY_TIME_MS_DEFAULT = 1_800_000
COMMIT_LOCK_ENABLED = "commit.lock.enabled"  # lakecat's advisory commit lock
COMMIT_LOCK_ENABLED_DEFAULT = True
COMMIT_LOCK_ACQUIRE_TIMEOUT_MS = "commit.lock.acquire-timeout-ms"
COMMIT_LOCK_ACQUIRE_TIMEOUT_MS_DEFAULT = 5_000
GROUP_COMMIT_ENABLED = "commit.group-commit.enabled"  # lock holders commit queued appends
GROUP_COMMIT_ENABLED_DEFAULT = True

# --- manifest merging ---------------------------------------------------------------------
MANIFEST_MERGE_ENABLED = "commit.manifest-merge.enabled"
MANIFEST_MERGE_ENABLED_DEFAULT = True
# false: the table's files may belong to other tables too (a snapshot of another table made
# with add_files): nothing deletes them (expiry, orphan removal and purging drop refuse)
GC_ENABLED = "gc.enabled"
GC_ENABLED_DEFAULT = True
MANIFEST_MIN_MERGE_COUNT = "commit.manifest.min-count-to-merge"
MANIFEST_MIN_MERGE_COUNT_DEFAULT = 100
MANIFEST_TARGET_SIZE_BYTES = "commit.manifest.target-size-bytes"
MANIFEST_TARGET_SIZE_BYTES_DEFAULT = 8 * 1024 * 1024

# --- metadata files -----------------------------------------------------------------------
METADATA_PREVIOUS_VERSIONS_MAX = "write.metadata.previous-versions-max"
METADATA_PREVIOUS_VERSIONS_MAX_DEFAULT = 100
METADATA_DELETE_AFTER_COMMIT_ENABLED = "write.metadata.delete-after-commit.enabled"
METADATA_DELETE_AFTER_COMMIT_ENABLED_DEFAULT = False  # Iceberg's default; lakecat writes "true"
METADATA_COMPRESSION = "write.metadata.compression-codec"
METADATA_COMPRESSION_DEFAULT = "none"

# --- data files ---------------------------------------------------------------------------
WRITE_TARGET_FILE_SIZE_BYTES = "write.target-file-size-bytes"
WRITE_TARGET_FILE_SIZE_BYTES_DEFAULT = 512 * 1024 * 1024
# lakecat writes Parquet data files: setting another format is refused (CHOICES); a table
# another engine set to avro or orc takes lakecat's Parquet files beside its own
DEFAULT_FILE_FORMAT = "write.format.default"
PARQUET_COMPRESSION = "write.parquet.compression-codec"
PARQUET_COMPRESSION_DEFAULT = "zstd"
PARQUET_ROW_GROUP_SIZE_BYTES = "write.parquet.row-group-size-bytes"
PARQUET_ROW_GROUP_SIZE_BYTES_DEFAULT = 128 * 1024 * 1024
PARQUET_COMPRESSION_LEVEL = "write.parquet.compression-level"
PARQUET_PAGE_SIZE_BYTES = "write.parquet.page-size-bytes"
PARQUET_DICT_SIZE_BYTES = "write.parquet.dict-size-bytes"
PARQUET_PAGE_ROW_LIMIT = "write.parquet.page-row-limit"  # rows per page; Iceberg Java's
PARQUET_PAGE_ROW_LIMIT_DEFAULT = 20_000
PARQUET_ROW_GROUP_LIMIT = "write.parquet.row-group-limit"  # rows; pyiceberg's property
PARQUET_ROW_GROUP_LIMIT_DEFAULT = 1_048_576
WRITE_DISTRIBUTION_MODE = "write.distribution-mode"  # none, hash, range (Iceberg's writers)
DISTRIBUTION_MODES = ("none", "hash", "range")
DISTRIBUTION_MODE_DEFAULT = "none"
# the rows a row-level statement rewrites or adds (Iceberg's names); unset: Iceberg's choice
# when write.distribution-mode is set (lakecat.spark_ext.native.distribution.statement_mode)
DELETE_DISTRIBUTION_MODE = "write.delete.distribution-mode"
UPDATE_DISTRIBUTION_MODE = "write.update.distribution-mode"
MERGE_DISTRIBUTION_MODE = "write.merge.distribution-mode"
# a task of a metadata table scan (files, entries, ...) reads about this many bytes of manifests
METADATA_SPLIT_SIZE = "read.split.metadata-target-size"
METADATA_SPLIT_SIZE_DEFAULT = 32 * 1024 * 1024
WRITE_DATA_PATH = "write.data.path"
WRITE_METADATA_PATH = "write.metadata.path"
# the properties that place a table's files outside its location: rewrite_table_path moves
# them with it, CREATE TABLE ... LIKE does not copy them (the copy's files are its own)
PATH_PROPERTIES = (
    WRITE_DATA_PATH,
    WRITE_METADATA_PATH,
    "write.object-storage.path",
    "write.folder-storage.path",
)
METRICS_MODE_DEFAULT = "write.metadata.metrics.default"
METRICS_MODE_DEFAULT_DEFAULT = "truncate(16)"
METRICS_MODE_COLUMN_PREFIX = "write.metadata.metrics.column."
# lakecat writes no bloom filters; a schema change keeps the property on the right column
PARQUET_BLOOM_FILTER_COLUMN_ENABLED_PREFIX = "write.parquet.bloom-filter-enabled.column."
COLUMN_PROPERTY_PREFIXES = (METRICS_MODE_COLUMN_PREFIX, PARQUET_BLOOM_FILTER_COLUMN_ENABLED_PREFIX)

# --- isolation ----------------------------------------------------------------------------
DELETE_ISOLATION_LEVEL = "write.delete.isolation-level"
UPDATE_ISOLATION_LEVEL = "write.update.isolation-level"
MERGE_ISOLATION_LEVEL = "write.merge.isolation-level"
SERIALIZABLE = "serializable"
SNAPSHOT = "snapshot"
ISOLATION_LEVEL_DEFAULT = (
    SNAPSHOT  # write-serializable, Delta's default (docs/concurrency.md, section 2)
)
ISOLATION_LEVELS = (SERIALIZABLE, SNAPSHOT)

# --- row-level write modes (Iceberg's names and values) ------------------------------------
DELETE_MODE = "write.delete.mode"
UPDATE_MODE = "write.update.mode"
MERGE_MODE = "write.merge.mode"
COPY_ON_WRITE = "copy-on-write"  # rewrite the files that hold changed rows
MERGE_ON_READ = "merge-on-read"  # write delete files; readers apply them
WRITE_MODES = (COPY_ON_WRITE, MERGE_ON_READ)
WRITE_MODE_DEFAULT = COPY_ON_WRITE  # as Iceberg's, for v2 tables

# --- write-audit-publish (Iceberg's names) -------------------------------------------------
# "true": a commit whose snapshot summary carries WAP_ID is staged: its snapshot is added to the
# table without moving any branch, until publish_changes (a cherry-pick) applies it to main
WRITE_WAP_ENABLED = "write.wap.enabled"
WAP_ID = "wap.id"  # snapshot summary: the write's WAP id (SnapshotSummary.STAGED_WAP_ID_PROP)
PUBLISHED_WAP_ID = "published-wap-id"  # snapshot summary: the WAP id a cherry-pick published

# --- snapshot expiry ----------------------------------------------------------------------
MAX_SNAPSHOT_AGE_MS = "history.expire.max-snapshot-age-ms"
MAX_SNAPSHOT_AGE_MS_DEFAULT = 5 * 24 * 60 * 60 * 1000
MIN_SNAPSHOTS_TO_KEEP = "history.expire.min-snapshots-to-keep"
MIN_SNAPSHOTS_TO_KEEP_DEFAULT = 1
MAX_REF_AGE_MS = "history.expire.max-ref-age-ms"

# --- format -------------------------------------------------------------------------------
FORMAT_VERSION = "format-version"

# Properties whose value is one of a few words (Iceberg's enums), with their default when
# unset and the words: read by get_choice, checked when set (check_values).
CHOICES: Mapping[str, tuple[str, tuple[str, ...]]] = {
    **{
        key: (ISOLATION_LEVEL_DEFAULT, ISOLATION_LEVELS)
        for key in (DELETE_ISOLATION_LEVEL, UPDATE_ISOLATION_LEVEL, MERGE_ISOLATION_LEVEL)
    },
    **{key: (WRITE_MODE_DEFAULT, WRITE_MODES) for key in (DELETE_MODE, UPDATE_MODE, MERGE_MODE)},
    **{
        key: (DISTRIBUTION_MODE_DEFAULT, DISTRIBUTION_MODES)
        for key in (
            WRITE_DISTRIBUTION_MODE,
            DELETE_DISTRIBUTION_MODE,
            UPDATE_DISTRIBUTION_MODE,
            MERGE_DISTRIBUTION_MODE,
        )
    },
    DEFAULT_FILE_FORMAT: ("parquet", ("parquet",)),
}

# Written explicitly on every table lakecat creates, so that other Iceberg engines (whose
# defaults differ) apply the same behaviour.
CREATE_DEFAULTS: Mapping[str, str] = {
    DELETE_ISOLATION_LEVEL: ISOLATION_LEVEL_DEFAULT,
    UPDATE_ISOLATION_LEVEL: ISOLATION_LEVEL_DEFAULT,
    MERGE_ISOLATION_LEVEL: ISOLATION_LEVEL_DEFAULT,
    METADATA_DELETE_AFTER_COMMIT_ENABLED: "true",
    METADATA_PREVIOUS_VERSIONS_MAX: str(METADATA_PREVIOUS_VERSIONS_MAX_DEFAULT),
    # Every metadata.json repeats every live snapshot: gzip makes the kept versions ~7x
    # smaller, and metadata_json compresses only what each commit adds.
    METADATA_COMPRESSION: "gzip",
    PARQUET_COMPRESSION: PARQUET_COMPRESSION_DEFAULT,
}

# Keys that are part of the format rather than properties: never stored in "properties".
RESERVED = frozenset({FORMAT_VERSION, "uuid", "snapshot-count", "current-snapshot-id"})


def get_int(props: Mapping[str, str], key: str, default: int) -> int:
    value = props.get(key)
    if value is None:
        return default
    try:
        return int(value)
    except ValueError:
        return default


def get_bool(props: Mapping[str, str], key: str, default: bool) -> bool:
    """``True`` for ``true`` in any case, as Iceberg Java's ``Boolean.parseBoolean`` reads a
    property (blanks around it make it ``False``, as there)."""
    value = props.get(key)
    if value is None:
        return default
    return value.lower() == "true"


def get_choice(props: Mapping[str, str], key: str) -> str:
    """The value of the property ``key`` of :data:`CHOICES` (its default when unset), in lower
    case, read as Iceberg Java's ``fromName`` parsers read a mode or level: in any case, but
    nothing around it (``' snapshot'`` is no level there, so none here either: every engine on
    the table reads it alike). :class:`ValidationError` naming the property otherwise."""
    default, choices = CHOICES[key]
    value = props.get(key, default)
    choice = value.lower()
    if choice not in choices:
        raise ValidationError(f"table property {key}={value!r}: use one of {choices}")
    return choice


def check_values(props: Mapping[str, str]) -> None:
    """:class:`ValidationError` for a value in ``props`` (properties being set) that the
    property does not take (:data:`CHOICES`), so that a mistyped mode or level is refused when
    it is set, not when a later statement reads it. (Iceberg Java checks only when reading: a
    table it configured so still loads here, and refuses only the statements that read it.)"""
    for key in props.keys() & CHOICES.keys():
        get_choice(props, key)


def column_properties_after(
    props: Mapping[str, str], renamed: Mapping[str, str], deleted: Collection[str]
) -> dict[str, str]:
    """``props`` after a schema change, as Iceberg Java's ``PropertyUtil.applySchemaChanges``
    moves them: a per-column property (:data:`COLUMN_PROPERTY_PREFIXES` then the column's
    dotted name) of a renamed column (``renamed``: old name to new) is renamed, one of a
    deleted column dropped; every other property is kept."""
    out: dict[str, str] = {}
    for key, value in props.items():
        prefix = next((p for p in COLUMN_PROPERTY_PREFIXES if key.startswith(p)), "")
        column = key[len(prefix) :]
        if prefix and column in renamed:
            out[prefix + renamed[column]] = value
        elif not prefix or column not in deleted:
            out.setdefault(key, value)
    return out
