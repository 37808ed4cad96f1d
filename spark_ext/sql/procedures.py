"""The procedures of a lakecat Spark catalog: ``CALL lake.system.<name>(...)``.

Spark 4 runs ``CALL`` on any catalog that implements ``ProcedureCatalog``: the Java plugin asks
the bridge for a procedure's description (:meth:`Procedure.descriptor`: its parameters with
their Spark types, its result columns), Spark matches the call's positional and named
arguments to the parameters (an unknown name, a missing required argument or a value it cannot
cast is Spark's ``AnalysisException``), and the plugin sends the values here
(:func:`call_procedure`), where lakecat's Python API does the work. Names, parameters and
result columns are Iceberg's (``org.apache.iceberg.spark.procedures``), so that scripts written
for Iceberg's Spark runtime run unchanged; parameters lakecat has no use for are accepted where
Iceberg's are hints (``max_concurrent_deletes``, ``use_caching``), refused where ignoring them
would do something else than asked.

Each procedure is a function of a :class:`ProcedureContext` and its arguments as keywords
(optional ones that were not given are ``None``), returning its rows. This module declares them
(:data:`PROCEDURES`: parameters and result columns) and dispatches calls; they live by concern
in :mod:`.maintenance` (compaction, manifest and delete-file rewrites, expiry, orphans),
:mod:`.history` (snapshots and refs, ``register_table``) and :mod:`.changelog`
(``create_changelog_view``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    IntegerType,
    LongType,
    MapType,
    NullType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from lakecat.catalog import Catalog, Table
from lakecat.metadata.errors import NotFound, ValidationError
from lakecat.spark_ext.native.columns import quoted
from lakecat.spark_ext.sql.changelog import create_changelog_view
from lakecat.spark_ext.sql.history import (
    add_partition_field,
    ancestors_of,
    cherrypick_snapshot,
    create_branch,
    create_tag,
    drop_partition_field,
    drop_ref,
    fast_forward,
    publish_changes,
    register_table,
    replace_partition_field,
    rollback_to_snapshot,
    rollback_to_timestamp,
    set_current_snapshot,
    set_identifier_fields,
    set_write_order,
)
from lakecat.spark_ext.sql.imports import add_files, migrate, snapshot
from lakecat.spark_ext.sql.maintenance import (
    compute_partition_stats,
    compute_table_stats,
    expire_snapshots,
    remove_orphan_files,
    rewrite_data_files,
    rewrite_manifests,
    rewrite_position_delete_files,
    rewrite_table_path,
)

SYSTEM_NAMESPACE = "system"
# Spark marks the input fields of named arguments (ProcedureParameter.BY_NAME_METADATA_KEY)
BY_NAME_METADATA_KEY = "BY_NAME"

Row = Sequence[Any]
Run = Callable[..., Sequence[Row]]


class NoSuchProcedure(NotFound):
    """``CALL`` named a procedure the catalog does not have."""


@dataclass(frozen=True)
class ProcedureContext:
    """What a procedure runs with: the lakecat catalog behind the Spark catalog ``name``, the
    Spark session (procedures that run Spark jobs) and the data source serving its tables."""

    catalog: Catalog
    name: str
    spark: Any
    data_format: str

    def table(self, identifier: str) -> Table:
        """The table an Iceberg procedure's ``table`` argument names: ``db.t``, or with this
        catalog's name in front (``lake.db.t``); parts may be quoted with backticks."""
        return self.catalog.load_table(self.identifier(identifier))

    def identifier(self, identifier: str) -> list[str]:
        parts = identifier_parts(identifier)
        if len(parts) > 2 and parts[0] == self.name:
            parts = parts[1:]
        if len(parts) < 2:
            raise ValidationError(f"table {identifier!r}: name it as <namespace>.<table>")
        return parts


@dataclass(frozen=True)
class Parameter:
    """A procedure parameter: Iceberg's name and Spark type; an optional one defaults to NULL."""

    name: str
    type: DataType
    required: bool = False


@dataclass(frozen=True)
class Procedure:
    name: str
    description: str
    parameters: tuple[Parameter, ...]
    result: StructType
    run: Run

    def descriptor(self) -> dict[str, Any]:
        """What the Java plugin builds Spark's procedure from."""
        return {
            "name": self.name,
            "description": self.description,
            "parameters": [
                {"name": p.name, "type": p.type.json(), "required": p.required}
                for p in self.parameters
            ],
            "result": self.result.json(),
        }

    def check_input(self, input_type: StructType) -> None:
        """Refuse argument types that do not fit their parameter (Spark would cast a string to
        a number and fail only when the call runs). Arguments Spark itself refuses (an unknown
        name, one too many) are left to its own errors."""
        by_name = {p.name: p for p in self.parameters}
        for index, field in enumerate(input_type.fields):
            if field.metadata.get(BY_NAME_METADATA_KEY):
                parameter = by_name.get(field.name)
            else:
                parameter = self.parameters[index] if index < len(self.parameters) else None
            if parameter is not None and not accepts(parameter.type, field.dataType):
                raise ValidationError(
                    f"{self.name}: {parameter.name} takes a {parameter.type.simpleString()}, "
                    f"not a {field.dataType.simpleString()}"
                )

    def arguments(self, given: Mapping[str, Any]) -> dict[str, Any]:
        """The JSON values the plugin sent, as Python values by parameter type (timestamps:
        epoch milliseconds); every parameter present, ``None`` when not given."""
        known = {p.name for p in self.parameters}
        unknown = sorted(set(given) - known)
        if unknown:
            raise ValidationError(
                f"{self.name} has no parameter {', '.join(unknown)} "
                f"(its parameters: {', '.join(p.name for p in self.parameters)})"
            )
        values: dict[str, Any] = {}
        for p in self.parameters:
            value = given.get(p.name)
            if value is None and p.required:
                raise ValidationError(f"{self.name} needs a value for {p.name}")
            values[p.name] = None if value is None else _python_value(self.name, p, value)
        return values


def accepts(parameter: DataType, given: DataType) -> bool:
    """Whether an argument of type ``given`` fits a parameter of type ``parameter``."""
    if isinstance(given, NullType) or given == parameter:
        return True
    if isinstance(parameter, (LongType, IntegerType)):
        return isinstance(given, (ByteType, ShortType, IntegerType, LongType))
    if isinstance(parameter, TimestampType):  # TIMESTAMP '...', DATE '...' or the text
        return isinstance(given, (TimestampNTZType, DateType, StringType))
    if isinstance(parameter, MapType):
        return isinstance(given, MapType) and isinstance(given.keyType, StringType)
    if isinstance(parameter, ArrayType) and isinstance(given, ArrayType):
        return accepts(parameter.elementType, given.elementType)
    return isinstance(parameter, StringType) and isinstance(given, StringType)  # collations


def _python_value(procedure: str, parameter: Parameter, value: Any) -> Any:
    kind = parameter.type
    ok = (
        (isinstance(kind, StringType) and isinstance(value, str))
        or (isinstance(kind, BooleanType) and isinstance(value, bool))
        or (
            isinstance(kind, (LongType, IntegerType, TimestampType))
            and isinstance(value, int)
            and not isinstance(value, bool)
        )
        or (isinstance(kind, MapType) and isinstance(value, dict))
        or (isinstance(kind, ArrayType) and isinstance(value, list))
    )
    if not ok:
        raise ValidationError(
            f"{procedure}: {parameter.name} must be a {kind.simpleString()}, not {value!r}"
        )
    if isinstance(kind, TimestampType):
        return value // 1000  # Spark's microseconds
    return value


def identifier_parts(identifier: str) -> list[str]:
    """``a.b.c`` / ``a.`b.c``` as its parts (a backtick in a quoted part is doubled)."""
    parts: list[str] = []
    current: list[str] = []
    quoted = False
    i = 0
    while i < len(identifier):
        char = identifier[i]
        if char == "`":
            if quoted and identifier[i + 1 : i + 2] == "`":
                current.append("`")
                i += 1
            else:
                quoted = not quoted
        elif char == "." and not quoted:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
        i += 1
    if quoted:
        raise ValidationError(f"unterminated backquote in {identifier!r}")
    parts.append("".join(current))
    if any(not p.strip() for p in parts):
        raise ValidationError(f"{identifier!r} is not a table name")
    return parts


# ---- the procedures -------------------------------------------------------------------------
STRING, LONG, INT = StringType(), LongType(), IntegerType()
BOOLEAN, TIMESTAMP = BooleanType(), TimestampType()
STRING_MAP = MapType(StringType(), StringType())
LONG_ARRAY, STRING_ARRAY = ArrayType(LongType()), ArrayType(StringType())


def _columns(*fields: tuple[str, DataType, bool]) -> StructType:
    return StructType([StructField(name, kind, nullable) for name, kind, nullable in fields])


_REF_RESULT = _columns(
    ("ref_name", STRING, False), ("ref_type", STRING, False), ("snapshot_id", LONG, False)
)
_SPEC_RESULT = _columns(("spec_id", INT, False), ("fields", STRING, False))
_MOVE_RESULT = _columns(("previous_snapshot_id", LONG, False), ("current_snapshot_id", LONG, False))

PROCEDURES: dict[str, Procedure] = {
    p.name: p
    for p in (
        Procedure(
            "rewrite_data_files",
            "Compact small data files on Spark (bin-pack, sort or zorder) in replace commits",
            (
                Parameter("table", STRING, required=True),
                Parameter("strategy", STRING),
                Parameter("sort_order", STRING),
                Parameter("options", STRING_MAP),
                Parameter("where", STRING),
                Parameter("branch", STRING),
            ),
            _columns(
                ("rewritten_data_files_count", INT, False),
                ("added_data_files_count", INT, False),
                ("rewritten_bytes_count", LONG, False),
                ("failed_data_files_count", INT, False),
                ("removed_delete_files_count", INT, False),
            ),
            rewrite_data_files,
        ),
        Procedure(
            "add_files",
            "Add existing Parquet files (a folder or a file-based Spark table) to a table",
            (
                Parameter("table", STRING, required=True),
                Parameter("source_table", STRING, required=True),
                Parameter("partition_filter", STRING_MAP),
                Parameter("check_duplicate_files", BOOLEAN),
                Parameter("parallelism", INT),
            ),
            _columns(
                ("added_files_count", LONG, False),
                ("changed_partition_count", LONG, True),
            ),
            add_files,
        ),
        Procedure(
            "snapshot",
            "A lakecat table over the files of a Spark table, which stays as it is",
            (
                Parameter("source_table", STRING, required=True),
                Parameter("table", STRING, required=True),
                Parameter("location", STRING),
                Parameter("properties", STRING_MAP),
                Parameter("parallelism", INT),
            ),
            _columns(("imported_files_count", LONG, False)),
            snapshot,
        ),
        Procedure(
            "migrate",
            "Move a Spark table to a lakecat table of the same name over its files",
            (
                Parameter("table", STRING, required=True),
                Parameter("properties", STRING_MAP),
                Parameter("drop_backup", BOOLEAN),
                Parameter("backup_table_name", STRING),
                Parameter("parallelism", INT),
            ),
            _columns(("migrated_files_count", LONG, False)),
            migrate,
        ),
        Procedure(
            "register_table",
            "Add an existing Iceberg table to the catalog by its metadata file",
            (
                Parameter("table", STRING, required=True),
                Parameter("metadata_file", STRING, required=True),
            ),
            _columns(
                ("current_snapshot_id", LONG, True),
                ("total_records_count", LONG, True),
                ("total_data_files_count", LONG, True),
            ),
            register_table,
        ),
        Procedure(
            "ancestors_of",
            "A snapshot (default: the current one) and its ancestors, newest first",
            (Parameter("table", STRING, required=True), Parameter("snapshot_id", LONG)),
            _columns(("snapshot_id", LONG, True), ("timestamp", LONG, True)),
            ancestors_of,
        ),
        Procedure(
            "create_tag",
            "Tag a snapshot (default: the current one)",
            (
                Parameter("table", STRING, required=True),
                Parameter("tag", STRING, required=True),
                Parameter("snapshot_id", LONG),
                Parameter("max_ref_age_ms", LONG),
                Parameter("replace", BOOLEAN),
                Parameter("if_not_exists", BOOLEAN),
            ),
            _REF_RESULT,
            create_tag,
        ),
        Procedure(
            "create_branch",
            "Create a branch at a snapshot (default: the current one)",
            (
                Parameter("table", STRING, required=True),
                Parameter("branch", STRING, required=True),
                Parameter("snapshot_id", LONG),
                Parameter("max_ref_age_ms", LONG),
                Parameter("max_snapshot_age_ms", LONG),
                Parameter("min_snapshots_to_keep", INT),
                Parameter("replace", BOOLEAN),
                Parameter("if_not_exists", BOOLEAN),
            ),
            _REF_RESULT,
            create_branch,
        ),
        Procedure(
            "drop_ref",
            "Remove a tag, or a branch other than main",
            (
                Parameter("table", STRING, required=True),
                Parameter("ref", STRING, required=True),
                Parameter("kind", STRING),
                Parameter("if_exists", BOOLEAN),
            ),
            _REF_RESULT,
            drop_ref,
        ),
        Procedure(
            "add_partition_field",
            "Partition new data also by a transform of a column (ALTER TABLE ADD PARTITION FIELD)",
            (
                Parameter("table", STRING, required=True),
                Parameter("field", STRING, required=True),
                Parameter("name", STRING),
            ),
            _SPEC_RESULT,
            add_partition_field,
        ),
        Procedure(
            "set_write_order",
            "Sort new data files by an order, and set the distribution mode (WRITE ORDERED BY)",
            (
                Parameter("table", STRING, required=True),
                Parameter("order", STRING),
                Parameter("distribution_mode", STRING),
            ),
            _columns(("sort_order_id", INT, False), ("order", STRING, False)),
            set_write_order,
        ),
        Procedure(
            "drop_partition_field",
            "Stop partitioning new data by a partition field (ALTER TABLE DROP PARTITION FIELD)",
            (Parameter("table", STRING, required=True), Parameter("field", STRING, required=True)),
            _SPEC_RESULT,
            drop_partition_field,
        ),
        Procedure(
            "replace_partition_field",
            "Partition new data by another field instead (ALTER TABLE REPLACE PARTITION FIELD)",
            (
                Parameter("table", STRING, required=True),
                Parameter("field", STRING, required=True),
                Parameter("new_field", STRING, required=True),
                Parameter("name", STRING),
            ),
            _SPEC_RESULT,
            replace_partition_field,
        ),
        Procedure(
            "set_identifier_fields",
            "Set (or drop some of) the identifier fields (ALTER TABLE SET/DROP IDENTIFIER FIELDS)",
            (
                Parameter("table", STRING, required=True),
                Parameter("fields", STRING_ARRAY, required=True),
                Parameter("drop", BOOLEAN),
            ),
            _columns(("schema_id", INT, False), ("identifier_fields", STRING, False)),
            set_identifier_fields,
        ),
        Procedure(
            "compute_partition_stats",
            "Write and register the partition statistics file of a snapshot (default: the "
            "current one)",
            (Parameter("table", STRING, required=True), Parameter("snapshot_id", LONG)),
            _columns(("partition_statistics_file", STRING, True)),
            compute_partition_stats,
        ),
        Procedure(
            "rewrite_table_path",
            "Stage the table's metadata with a new path prefix and write the plan of the files "
            "to copy (the table is not changed)",
            (
                Parameter("table", STRING, required=True),
                Parameter("source_prefix", STRING, required=True),
                Parameter("target_prefix", STRING, required=True),
                Parameter("start_version", STRING),
                Parameter("end_version", STRING),
                Parameter("staging_location", STRING),
                Parameter("create_file_list", BOOLEAN),
            ),
            _columns(
                ("latest_version", STRING, True),
                ("file_list_location", STRING, True),
                ("rewritten_manifest_file_paths_count", INT, True),
                ("rewritten_delete_file_paths_count", INT, True),
            ),
            rewrite_table_path,
        ),
        Procedure(
            "compute_table_stats",
            "Sketch the distinct values of a snapshot's columns (default: the current snapshot, "
            "every top-level primitive column) into a registered Puffin statistics file",
            (
                Parameter("table", STRING, required=True),
                Parameter("snapshot_id", LONG),
                Parameter("columns", STRING_ARRAY),
            ),
            _columns(("statistics_file", STRING, True)),
            compute_table_stats,
        ),
        Procedure(
            "rewrite_manifests",
            "Regroup the current snapshot's data manifests by partition (one replace commit)",
            (
                Parameter("table", STRING, required=True),
                Parameter("use_caching", BOOLEAN),
                Parameter("spec_id", INT),
            ),
            _columns(
                ("rewritten_manifests_count", INT, False), ("added_manifests_count", INT, False)
            ),
            rewrite_manifests,
        ),
        Procedure(
            "rewrite_position_delete_files",
            "Merge the position delete files of each data file into one (one replace commit)",
            (
                Parameter("table", STRING, required=True),
                Parameter("options", STRING_MAP),
                Parameter("where", STRING),
            ),
            _columns(
                ("rewritten_delete_files_count", INT, False),
                ("added_delete_files_count", INT, False),
                ("rewritten_bytes_count", LONG, False),
                ("added_bytes_count", LONG, False),
            ),
            rewrite_position_delete_files,
        ),
        Procedure(
            "expire_snapshots",
            "Expire old snapshots, then delete the files only they used",
            (
                Parameter("table", STRING, required=True),
                Parameter("older_than", TIMESTAMP),
                Parameter("retain_last", INT),
                Parameter("max_concurrent_deletes", INT),
                Parameter("stream_results", BOOLEAN),
                Parameter("snapshot_ids", LONG_ARRAY),
                Parameter("clean_expired_metadata", BOOLEAN),
            ),
            _columns(
                ("deleted_data_files_count", LONG, True),
                ("deleted_position_delete_files_count", LONG, True),
                ("deleted_equality_delete_files_count", LONG, True),
                ("deleted_manifest_files_count", LONG, True),
                ("deleted_manifest_lists_count", LONG, True),
                ("deleted_statistics_files_count", LONG, True),
            ),
            expire_snapshots,
        ),
        Procedure(
            "remove_orphan_files",
            "Delete files under the table location that the table does not reference",
            (
                Parameter("table", STRING, required=True),
                Parameter("older_than", TIMESTAMP),
                Parameter("location", STRING),
                Parameter("dry_run", BOOLEAN),
                Parameter("max_concurrent_deletes", INT),
                Parameter("file_list_view", STRING),
                Parameter("equal_schemes", STRING_MAP),
                Parameter("equal_authorities", STRING_MAP),
                Parameter("prefix_mismatch_mode", STRING),
                Parameter("prefix_listing", BOOLEAN),
                Parameter("stream_results", BOOLEAN),
            ),
            _columns(("orphan_file_location", STRING, False)),
            remove_orphan_files,
        ),
        Procedure(
            "rollback_to_snapshot",
            "Make an ancestor of the current snapshot current again",
            (
                Parameter("table", STRING, required=True),
                Parameter("snapshot_id", LONG, required=True),
            ),
            _MOVE_RESULT,
            rollback_to_snapshot,
        ),
        Procedure(
            "rollback_to_timestamp",
            "Roll back to the newest ancestor of the current snapshot older than a time",
            (
                Parameter("table", STRING, required=True),
                Parameter("timestamp", TIMESTAMP, required=True),
            ),
            _MOVE_RESULT,
            rollback_to_timestamp,
        ),
        Procedure(
            "set_current_snapshot",
            "Make a snapshot, or the head of a branch or tag, the current one",
            (
                Parameter("table", STRING, required=True),
                Parameter("snapshot_id", LONG),
                Parameter("ref", STRING),
            ),
            _columns(("previous_snapshot_id", LONG, True), ("current_snapshot_id", LONG, False)),
            set_current_snapshot,
        ),
        Procedure(
            "cherrypick_snapshot",
            "Apply a snapshot's changes to main (re-commit an append, or fast-forward)",
            (
                Parameter("table", STRING, required=True),
                Parameter("snapshot_id", LONG, required=True),
            ),
            _columns(("source_snapshot_id", LONG, False), ("current_snapshot_id", LONG, False)),
            cherrypick_snapshot,
        ),
        Procedure(
            "publish_changes",
            "Publish the snapshot a write-audit-publish write staged with a WAP id",
            (
                Parameter("table", STRING, required=True),
                Parameter("wap_id", STRING, required=True),
            ),
            _columns(("source_snapshot_id", LONG, False), ("current_snapshot_id", LONG, False)),
            publish_changes,
        ),
        Procedure(
            "fast_forward",
            "Move a branch forward to the head of another branch or tag",
            (
                Parameter("table", STRING, required=True),
                Parameter("branch", STRING, required=True),
                Parameter("to", STRING, required=True),
            ),
            _columns(
                ("branch_updated", STRING, False),
                ("previous_ref", LONG, True),
                ("updated_ref", LONG, False),
            ),
            fast_forward,
        ),
        Procedure(
            "create_changelog_view",
            "A temp view of the table's row changes over a range of snapshots",
            (
                Parameter("table", STRING, required=True),
                Parameter("changelog_view", STRING),
                Parameter("options", STRING_MAP),
                Parameter("compute_updates", BOOLEAN),
                Parameter("identifier_columns", STRING_ARRAY),
                Parameter("net_changes", BOOLEAN),
            ),
            _columns(("changelog_view", STRING, False)),
            create_changelog_view,
        ),
    )
}


def find_procedure(namespace: Sequence[str], name: str) -> Procedure:
    procedure = PROCEDURES.get(name.lower()) if list(namespace) == [SYSTEM_NAMESPACE] else None
    if procedure is None:
        raise NoSuchProcedure(
            f"there is no procedure {'.'.join([*namespace, name])}; the procedures are "
            f"system.{', system.'.join(sorted(PROCEDURES))}"
        )
    return procedure


# Procedures that change what their table reads (its current snapshot, rows or layout): after
# one, the Spark queries cached from the table are cached again, as Iceberg's procedures do
# (refreshSparkCache); else CACHE TABLE would keep answering with the rows from before.
_CHANGE_THE_TABLE = frozenset(
    {
        "rollback_to_snapshot",
        "rollback_to_timestamp",
        "set_current_snapshot",
        "cherrypick_snapshot",
        "publish_changes",
        "fast_forward",
        "rewrite_data_files",
        "rewrite_position_delete_files",
        "rewrite_manifests",
        "add_files",
        "add_partition_field",
        "drop_partition_field",
        "replace_partition_field",
        "set_identifier_fields",
        "set_write_order",
    }
)


def call_procedure(ctx: ProcedureContext, name: str, given: Mapping[str, Any]) -> list[list[Any]]:
    """Run a procedure with the argument values the plugin sent; its rows in result order."""
    procedure = find_procedure([SYSTEM_NAMESPACE], name)
    arguments = procedure.arguments(given)
    rows = [list(row) for row in procedure.run(ctx, **arguments)]
    if procedure.name in _CHANGE_THE_TABLE and ctx.spark is not None:
        parts = [ctx.name, *ctx.identifier(arguments["table"])]
        ctx.spark.sql(f"REFRESH TABLE {'.'.join(quoted(p) for p in parts)}")
    return rows
