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
(optional ones that were not given are ``None``), returning its rows.
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
from lakecat.catalog.engine import DEFAULT_MAX_GROUP_SIZE_BYTES, plan_file_groups
from lakecat.metadata import properties as P
from lakecat.metadata.errors import NoSuchRef, NotFound, ValidationError
from lakecat.spark_ext.dml.compaction import compact
from lakecat.spark_ext.sql.convert import UnsupportedByCatalog

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
STRING_MAP = MapType(StringType(), StringType())


def _columns(*fields: tuple[str, DataType, bool]) -> StructType:
    return StructType([StructField(name, kind, nullable) for name, kind, nullable in fields])


# the rewrite_data_files options lakecat's compaction takes (Iceberg's names)
_TARGET_SIZE = "target-file-size-bytes"
_MIN_INPUT_FILES = "min-input-files"
_MAX_GROUP_SIZE = "max-file-group-size-bytes"
_PARTIAL_PROGRESS = "partial-progress.enabled"
_REWRITE_OPTIONS = (_TARGET_SIZE, _MIN_INPUT_FILES, _MAX_GROUP_SIZE, _PARTIAL_PROGRESS)


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
    """Bin-pack compaction on Spark (:func:`lakecat.spark_ext.compact`)."""
    if strategy is not None and strategy.lower() != "binpack":
        raise UnsupportedByCatalog(
            f"rewrite_data_files strategy {strategy!r}: on Spark lakecat compacts with "
            "'binpack'; sort with lakecat.catalog.maintenance.rewrite_data_files(sort_by=...)"
        )
    if sort_order is not None:
        raise UnsupportedByCatalog("rewrite_data_files cannot sort on Spark (sort_order)")
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
    start = target.metadata
    target_size = _int_option(opts, _TARGET_SIZE)
    min_input_files = _int_option(opts, _MIN_INPUT_FILES)
    min_input_files = 2 if min_input_files is None else min_input_files
    max_group_size = _int_option(opts, _MAX_GROUP_SIZE)
    max_group_size = DEFAULT_MAX_GROUP_SIZE_BYTES if max_group_size is None else max_group_size
    partial = opts.get(_PARTIAL_PROGRESS, "true").lower()
    if partial not in ("true", "false"):
        raise ValidationError(f"option {_PARTIAL_PROGRESS} is true or false, not {partial!r}")
    result = compact(
        ctx.spark,
        target.name,
        row_filter=where,
        target_file_size_bytes=target_size,
        min_input_files=min_input_files,
        max_group_size_bytes=max_group_size,
        partial_progress=partial == "true",
        catalog=ctx.catalog,
        format_name=ctx.data_format,
    )
    failed_files = 0
    if result.groups_failed:
        # The result names the failed groups; count their files in the plan compaction made
        # (the same function of the same metadata).
        failed = {description for description, _ in result.groups_failed}
        groups = plan_file_groups(
            target.io,
            start,
            row_filter=where,
            target_file_size_bytes=target_size
            or P.get_int(
                start.properties,
                P.WRITE_TARGET_FILE_SIZE_BYTES,
                P.WRITE_TARGET_FILE_SIZE_BYTES_DEFAULT,
            ),
            min_input_files=min_input_files,
            max_group_size_bytes=max_group_size,
        )
        failed_files = sum(len(g.files) for g in groups if g.describe() in failed)
    committed = target.refresh().metadata
    removed_deletes = sum(
        committed.snapshot_by_id(s).summary_count("removed-delete-files") or 0
        for s in result.snapshot_ids
    )
    return [
        (
            result.files_removed,
            result.files_added,
            result.bytes_removed,
            failed_files,
            removed_deletes,
        )
    ]


def _int_option(options: Mapping[str, str], key: str) -> int | None:
    raw = options.get(key)
    if raw is None:
        return None
    try:
        return int(raw)
    except ValueError:
        raise ValidationError(f"option {key} must be an integer, not {raw!r}") from None


def register_table(ctx: ProcedureContext, *, table: str, metadata_file: str) -> list[Row]:
    """Add a table by its metadata file (:meth:`Catalog.register_table`)."""
    registered = ctx.catalog.register_table(ctx.identifier(table), metadata_file)
    snapshot = registered.current_snapshot()
    if snapshot is None:
        return [(None, 0, 0)]
    return [
        (
            snapshot.snapshot_id,
            snapshot.summary_count("total-records"),
            snapshot.summary_count("total-data-files"),
        )
    ]


def ancestors_of(ctx: ProcedureContext, *, table: str, snapshot_id: int | None) -> list[Row]:
    """The snapshot (default: the current one) and its ancestors, newest first."""
    metadata = ctx.table(table).metadata
    if snapshot_id is not None:
        metadata.snapshot_by_id(snapshot_id)  # NoSuchSnapshot for an unknown id
    start = snapshot_id if snapshot_id is not None else metadata.current_snapshot_id
    return [(s.snapshot_id, s.timestamp_ms) for s in metadata.ancestors(start)]


def create_tag(
    ctx: ProcedureContext,
    *,
    table: str,
    tag: str,
    snapshot_id: int | None,
    max_ref_age_ms: int | None,
) -> list[Row]:
    """Tag a snapshot (default: the current one): :meth:`Table.create_tag`."""
    target = ctx.table(table)
    target.create_tag(tag, snapshot_id, max_ref_age_ms=max_ref_age_ms)
    return [_ref_row(target, tag)]


def create_branch(
    ctx: ProcedureContext,
    *,
    table: str,
    branch: str,
    snapshot_id: int | None,
    max_ref_age_ms: int | None,
    max_snapshot_age_ms: int | None,
    min_snapshots_to_keep: int | None,
) -> list[Row]:
    """Branch from a snapshot (default: the current one): :meth:`Table.create_branch`."""
    target = ctx.table(table)
    target.create_branch(
        branch,
        snapshot_id,
        max_ref_age_ms=max_ref_age_ms,
        max_snapshot_age_ms=max_snapshot_age_ms,
        min_snapshots_to_keep=min_snapshots_to_keep,
    )
    return [_ref_row(target, branch)]


def drop_ref(ctx: ProcedureContext, *, table: str, ref: str) -> list[Row]:
    """Remove a tag or a branch other than main (:meth:`Table.remove_ref`); the row describes
    the ref as it was."""
    target = ctx.table(table)
    row = _ref_row(target, ref)
    target.remove_ref(ref)
    return [row]


def _ref_row(table: Table, name: str) -> Row:
    ref = table.refs().get(name)
    if ref is None:
        raise NoSuchRef(f"{table.name} has no branch or tag {name!r}")
    return (name, ref.ref_type, ref.snapshot_id)


_REF_RESULT = _columns(
    ("ref_name", STRING, False), ("ref_type", STRING, False), ("snapshot_id", LONG, False)
)

PROCEDURES: dict[str, Procedure] = {
    p.name: p
    for p in (
        Procedure(
            "rewrite_data_files",
            "Compact small data files (bin-pack) on Spark, one replace commit per file group",
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
            ),
            _REF_RESULT,
            create_branch,
        ),
        Procedure(
            "drop_ref",
            "Remove a tag, or a branch other than main",
            (Parameter("table", STRING, required=True), Parameter("ref", STRING, required=True)),
            _REF_RESULT,
            drop_ref,
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


def call_procedure(ctx: ProcedureContext, name: str, given: Mapping[str, Any]) -> list[list[Any]]:
    """Run a procedure with the argument values the plugin sent; its rows in result order."""
    procedure = find_procedure([SYSTEM_NAMESPACE], name)
    return [list(row) for row in procedure.run(ctx, **procedure.arguments(given))]
