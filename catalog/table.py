"""The Python table API: read, time-travel, write, evolve.

A :class:`Table` holds the table's latest known metadata (immutable) and the operations object
that commits through the catalog. Every write records an
:class:`~lakecat.catalog.commit.intent.Intent` and commits it with
:func:`~lakecat.catalog.commit.pipeline.commit_intent`; after a commit the table holds the committed
metadata. ``refresh()`` re-reads the catalog.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from lakecat.catalog.commit.intent import (
    Intent,
    OpKind,
    isolation_level,
    start_of,
)
from lakecat.catalog.commit.pipeline import CommitResult, commit_intent
from lakecat.catalog.commit.pipeline import commit_updates as commit_metadata_updates
from lakecat.catalog.read.scan import RowFilter, Scan, to_expression
from lakecat.catalog.write.importing import imported_data_files
from lakecat.catalog.write.merge_on_read import (
    FileDeletes,
    merge_on_read,
    replaced_deletes,
    write_position_deletes,
)
from lakecat.catalog.write.row_level import (
    MergeClauses,
    RowLevelPlan,
    SetValue,
    plan_merge,
    plan_update,
)
from lakecat.catalog.write.row_ops import KeptRowsWriter, partly_matching_files, plan_delete
from lakecat.catalog.write.writer import Data, as_tables, conform, write_files
from lakecat.metadata import properties as P
from lakecat.metadata.errors import (
    InvalidUpdate,
    MetadataChanged,
    NoSuchRef,
    RequirementFailed,
    ValidationError,
)
from lakecat.metadata.expressions.expressions import AlwaysTrue, Expression
from lakecat.metadata.io.fileio import deleted_on_error, to_uri
from lakecat.metadata.manifests.datafile import DataFile
from lakecat.metadata.partitioning.spec import PartitionSpec
from lakecat.metadata.schema.name_mapping import NAME_MAPPING_PROPERTY, NameMapping, name_mapping_of
from lakecat.metadata.schema.schema import Schema
from lakecat.metadata.table.new_table import requested_format_version
from lakecat.metadata.table.replace import Replacement, replacement_updates
from lakecat.metadata.table.schema_evolution import SchemaUpdate
from lakecat.metadata.table.snapshots import MAIN_BRANCH, Snapshot, SnapshotRef, user_summary
from lakecat.metadata.table.sorting import SortOrder
from lakecat.metadata.table.spec_evolution import SpecUpdate
from lakecat.metadata.table.table_metadata import TableMetadata
from lakecat.metadata.table.timetravel import Timestamp, schema_for, snapshot_at, to_timestamp_ms
from lakecat.metadata.table.updates import (
    AddSortOrder,
    AssertCurrentSchemaId,
    AssertDefaultSpecId,
    AssertLastAssignedFieldId,
    AssertLastAssignedPartitionId,
    AssertTableUUID,
    RemoveProperties,
    RemoveSnapshotRef,
    SetDefaultSortOrder,
    SetLocation,
    SetProperties,
    SetSnapshotRef,
    TableRequirement,
    TableUpdate,
    UpgradeFormatVersion,
)

if TYPE_CHECKING:
    from lakecat.catalog.commit.pipeline import TableOperations

# The options every write takes (``**commit_options``; see :meth:`Table.append`).
_COMMIT_OPTIONS = frozenset(
    {"app_id", "app_version", "skip_if_committed", "snapshot_properties", "create_branch"}
)


class Table:
    """One table of a catalog."""

    def __init__(
        self, ops: TableOperations, metadata: TableMetadata, metadata_location: str
    ) -> None:
        self._ops = ops
        self.metadata = metadata
        self.metadata_location = metadata_location

    # ---- identity and state ---------------------------------------------------------------
    @property
    def name(self) -> str:
        return self._ops.name

    @property
    def io(self) -> Any:
        return self._ops.io

    @property
    def location(self) -> str:
        return self.metadata.location

    @property
    def properties(self) -> Mapping[str, str]:
        return self.metadata.properties

    def schema(self) -> Schema:
        return self.metadata.schema()

    def spec(self) -> PartitionSpec:
        return self.metadata.spec()

    def sort_order(self) -> SortOrder:
        return self.metadata.sort_order()

    def current_snapshot(self) -> Snapshot | None:
        return self.metadata.current_snapshot

    def snapshot(self, snapshot_id: int) -> Snapshot:
        return self.metadata.snapshot_by_id(snapshot_id)

    def snapshots(self) -> list[Snapshot]:
        """Every snapshot the metadata still holds, oldest first."""
        return sorted(self.metadata.snapshots, key=lambda s: (s.sequence_number, s.timestamp_ms))

    def history(self) -> list[tuple[int, int, bool]]:
        """(timestamp ms, snapshot id, is current ancestor) per snapshot-log entry."""
        ancestors = {
            s.snapshot_id for s in self.metadata.ancestors(self.metadata.current_snapshot_id)
        }
        return [
            (e.timestamp_ms, e.snapshot_id, e.snapshot_id in ancestors)
            for e in self.metadata.snapshot_log
        ]

    def refs(self) -> Mapping[str, SnapshotRef]:
        return dict(self.metadata.refs)

    def refresh(self) -> Table:
        self.metadata, self.metadata_location = self._ops.refresh()
        return self

    def __repr__(self) -> str:
        # e.g. Table('shop.events', snapshot_id=123, operation='append', total_records=10,
        # total_files=2), from the metadata this object holds (no catalog read)
        snapshot = self.metadata.current_snapshot
        parts = [repr(self.name), f"snapshot_id={self.metadata.current_snapshot_id}"]
        if snapshot is not None:
            parts.append(f"operation={snapshot.operation!r}")
            for key, name in (
                ("total-records", "total_records"),
                ("total-data-files", "total_files"),
            ):
                value = snapshot.summary_count(key)
                if value is not None:
                    parts.append(f"{name}={value}")
        return f"Table({', '.join(parts)})"

    # ---- reads --------------------------------------------------------------------------
    def scan(
        self,
        row_filter: RowFilter = None,
        *,
        columns: Sequence[str] | None = None,
        snapshot_id: int | None = None,
        as_of: Timestamp | None = None,
        ref: str | None = None,
        case_sensitive: bool = True,
    ) -> Scan:
        """A scan of the current snapshot, or of one chosen by id, time (``as_of``) or ref."""
        snapshot = snapshot_at(
            self.metadata,
            snapshot_id=snapshot_id,
            as_of_timestamp_ms=None if as_of is None else to_timestamp_ms(as_of),
            ref=ref,
        )
        time_travel = snapshot_id is not None or as_of is not None
        if time_travel or ref is not None:
            schema = schema_for(self.metadata, snapshot, ref=ref)
        else:
            schema = self.schema()  # the current state reads with the current schema
        return Scan(
            self.io,
            self.metadata,
            snapshot,
            schema,
            row_filter=row_filter,
            columns=columns,
            case_sensitive=case_sensitive,
            manifest_cache=self._ops.manifest_cache,
        )

    def to_arrow(
        self,
        row_filter: RowFilter = None,
        *,
        columns: Sequence[str] | None = None,
        snapshot_id: int | None = None,
        as_of: Timestamp | None = None,
        ref: str | None = None,
        case_sensitive: bool = True,
        limit: int | None = None,
    ) -> pa.Table:
        """Shortcut for ``scan(...).to_arrow(limit=...)``: the arguments of :meth:`scan`, and
        ``limit`` (at most that many rows; reading stops once it has them)."""
        scan = self.scan(
            row_filter,
            columns=columns,
            snapshot_id=snapshot_id,
            as_of=as_of,
            ref=ref,
            case_sensitive=case_sensitive,
        )
        return scan.to_arrow(limit=limit)

    # ---- writes -------------------------------------------------------------------------
    def append(
        self, data: Data, *, branch: str = MAIN_BRANCH, **commit_options: Any
    ) -> CommitResult:
        """Append rows (a blind append: never conflicts, retried until it lands).

        ``commit_options``: ``app_id`` and ``app_version`` make the commit idempotent;
        ``skip_if_committed=True`` turns a repeat into a no-op instead of
        :class:`ConcurrentTransaction`; ``snapshot_properties`` adds summary entries;
        ``create_branch=True`` lets ``branch`` name a branch that does not exist yet: the
        write reads main's head and its commit creates the branch there, as Iceberg's writes
        do (without it, :class:`NoSuchRef`; a tag takes no write: :class:`ValidationError`).
        Every write takes these options.
        """
        start = self.metadata
        self._check_write(start, branch, commit_options)
        files = write_files(self.io, start, conform(start, data))
        intent = self._intent(OpKind.APPEND, branch, start, added=files, **commit_options)
        return self._commit(intent, start)

    def add_files(
        self,
        paths: Sequence[str],
        *,
        branch: str = MAIN_BRANCH,
        check_duplicates: bool = True,
        **commit_options: Any,
    ) -> CommitResult:
        """Add existing Parquet files to the table as they are, in one append (Iceberg's
        ``add_files``): files written by any Parquet writer, with field ids or without them
        (read through the table's name mapping, which a table without one gets first, in a
        commit of its own). Each file is checked before anything is committed
        (:mod:`lakecat.catalog.write.importing`); the files stay where they are, belong to the
        table from then on, and are never deleted if the append fails. ``check_duplicates``:
        refuse a file the table already holds."""
        paths = [to_uri(p) for p in paths]  # as the table names its files: URIs
        mapping = name_mapping_of(self.metadata.properties)
        fresh = mapping is None
        if mapping is None:
            mapping = NameMapping.of_schema(self.metadata.schema())
        start = self.metadata
        head = self._check_write(start, branch, commit_options)
        existing = (
            {
                f.file_path
                for f in Scan(
                    self.io, start, head, start.schema(), manifest_cache=self._ops.manifest_cache
                ).plan_files()
            }
            if check_duplicates and head is not None
            else None
        )
        files, without_ids = imported_data_files(self.io, start, paths, mapping, existing=existing)
        if fresh and without_ids:
            self.set_properties({NAME_MAPPING_PROPERTY: mapping.to_json()})
            start = self.metadata
        intent = replace(
            self._intent(OpKind.APPEND, branch, start, added=files, **commit_options),
            imports_files=True,
        )
        return self._commit(intent, start)

    def delete(
        self,
        row_filter: RowFilter,
        *,
        branch: str = MAIN_BRANCH,
        case_sensitive: bool = True,
        **commit_options: Any,
    ) -> CommitResult | None:
        """Delete the rows matching a filter; ``None`` when no row matched (no commit).

        Whole files inside the filter are dropped without being read; files with some matching
        rows are rewritten without them (copy-on-write), or keep them and get a position
        delete file naming them when the table's ``write.delete.mode`` is ``merge-on-read``.
        """
        expression = to_expression(row_filter)
        return self._rewrite(
            OpKind.DELETE, expression, None, branch, case_sensitive, commit_options
        )

    def delete_read_bytes(
        self, row_filter: RowFilter, *, branch: str = MAIN_BRANCH, case_sensitive: bool = True
    ) -> int:
        """How many bytes of data files :meth:`delete` of ``row_filter`` on ``branch`` would
        read now (the files that may hold matching rows and not only such rows; 0 when it
        drops whole files only, or nothing), planned from manifests alone."""
        start = self.metadata
        head = self._head(start, branch, create=True)  # a branch not made yet: main's head
        files = partly_matching_files(
            self.io,
            start,
            head,
            to_expression(row_filter),
            case_sensitive=case_sensitive,
            cache=self._ops.manifest_cache,
        )
        return sum(f.file_size_in_bytes for f in files)

    def overwrite(
        self,
        data: Data,
        row_filter: RowFilter = None,
        *,
        branch: str = MAIN_BRANCH,
        case_sensitive: bool = True,
        **commit_options: Any,
    ) -> CommitResult | None:
        """Replace the rows matching ``row_filter`` (default: the whole table) with ``data``."""
        expression = to_expression(row_filter)
        return self._rewrite(
            OpKind.OVERWRITE, expression, data, branch, case_sensitive, commit_options
        )

    def dynamic_partition_overwrite(
        self, data: Data, *, branch: str = MAIN_BRANCH, **commit_options: Any
    ) -> CommitResult:
        """Replace every partition that ``data`` has rows for; other partitions stay."""
        start = self.metadata
        if start.spec().is_unpartitioned:
            raise ValidationError(
                f"{self.name} is not partitioned; use overwrite() to replace the whole table"
            )
        head = self._check_write(start, branch, commit_options)
        files = write_files(self.io, start, conform(start, data))
        partitions = frozenset((f.spec_id, f.partition) for f in files)
        removed = [
            f
            for f in Scan(
                self.io, start, head, start.schema(), manifest_cache=self._ops.manifest_cache
            ).plan_files()
            if (f.spec_id, f.partition) in partitions
        ]
        intent = self._intent(
            OpKind.DYNAMIC_OVERWRITE,
            branch,
            start,
            added=files,
            removed=removed,
            read_partitions=partitions,
            isolation=isolation_level(start, P.DELETE_ISOLATION_LEVEL),
            **commit_options,
        )
        return self._commit(intent, start)

    def update(
        self,
        set: Mapping[str, SetValue],
        where: RowFilter = None,
        *,
        branch: str = MAIN_BRANCH,
        **commit_options: Any,
    ) -> CommitResult | None:
        """``UPDATE ... SET col = value WHERE ...`` (copy-on-write); ``None`` if no row matched.

        A value is a constant, a pyarrow compute expression over the row
        (``pc.field("amount") * 2``) or a function of the file's rows returning an array.
        """
        start = self.metadata
        where_expr = to_expression(where)
        plan = plan_update(
            self.io,
            start,
            self._check_write(start, branch, commit_options),
            set_values=set,
            where=where_expr,
            cache=self._ops.manifest_cache,
            merge_on_read=merge_on_read(start, OpKind.UPDATE),
            write_rewritten=self._files_writer(start),
        )
        isolation = isolation_level(start, P.UPDATE_ISOLATION_LEVEL)
        return self._commit_plan(OpKind.UPDATE, plan, start, branch, isolation, commit_options)

    def merge(
        self,
        source: Data,
        on: Sequence[str] | str,
        *,
        when_matched_update: bool | Mapping[str, Any] = False,
        when_matched_delete: bool = False,
        when_matched_delete_if: RowFilter = None,
        when_not_matched_insert: bool = False,
        target_filter: RowFilter = None,
        branch: str = MAIN_BRANCH,
        **commit_options: Any,
    ) -> CommitResult | None:
        """``MERGE INTO table USING source ON keys`` (copy-on-write), one commit.

        ``target_filter`` narrows the target rows considered (put the partition predicate here
        to keep merges on disjoint partitions from conflicting). Inserted keys count as read,
        so two concurrent merges inserting the same key cannot both commit.
        """
        start = self.metadata
        keys = [on] if isinstance(on, str) else list(on)
        tables = list(as_tables(source))
        source_table = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
        clauses = MergeClauses(
            matched_update=when_matched_update,
            matched_delete=when_matched_delete or when_matched_delete_if is not None,
            matched_delete_if=None
            if when_matched_delete_if is None
            else to_expression(when_matched_delete_if),
            not_matched_insert=when_not_matched_insert,
        )
        plan = plan_merge(
            self.io,
            start,
            self._check_write(start, branch, commit_options),
            source=source_table,
            on=keys,
            clauses=clauses,
            target_filter=None if target_filter is None else to_expression(target_filter),
            cache=self._ops.manifest_cache,
            merge_on_read=merge_on_read(start, OpKind.MERGE),
            write_rewritten=self._files_writer(start),
        )
        isolation = isolation_level(start, P.MERGE_ISOLATION_LEVEL)
        return self._commit_plan(OpKind.MERGE, plan, start, branch, isolation, commit_options)

    def upsert(
        self, data: Data, on: Sequence[str] | str | None = None, **options: Any
    ) -> CommitResult | None:
        """Update rows whose key exists, insert the others. Keys default to the schema's
        identifier fields."""
        if on is None:
            schema = self.schema()
            if not schema.identifier_field_ids:
                raise ValidationError(
                    f"{self.name} has no identifier fields; pass the key columns with on=[...]"
                )
            on = [schema.column_name(i) for i in schema.identifier_field_ids]
        return self.merge(
            data, on, when_matched_update=True, when_not_matched_insert=True, **options
        )

    def _commit_plan(
        self,
        kind: OpKind,
        plan: RowLevelPlan,
        start: TableMetadata,
        branch: str,
        isolation: str,
        commit_options: dict[str, Any],
    ) -> CommitResult | None:
        if not plan.changes_anything:
            return None
        files = self._write_changes(
            start,
            plan.rewritten_rows + plan.inserted_rows,
            plan.position_deletes,
            written_before=plan.rewritten_files,
        )
        intent = self._intent(
            kind,
            branch,
            start,
            added=files,
            removed=[*plan.removed, *replaced_deletes(start, plan.position_deletes)],
            read_files=plan.read_files,
            read_filter=plan.read_filter,
            isolation=isolation,
            **commit_options,
        )
        return self._commit(intent, start)

    def _rewrite(
        self,
        kind: OpKind,
        expression: Expression,
        data: Data | None,
        branch: str,
        case_sensitive: bool,
        commit_options: dict[str, Any],
    ) -> CommitResult | None:
        start = self.metadata
        new_rows = conform(start, data) if data is not None else []
        plan = plan_delete(
            self.io,
            start,
            self._check_write(start, branch, commit_options),
            expression,
            case_sensitive=case_sensitive,
            cache=self._ops.manifest_cache,
            merge_on_read=merge_on_read(start, kind),
            write_kept=self._files_writer(start),
        )
        if not plan.changes_anything and not any(t.num_rows for t in new_rows):
            return None
        files = self._write_changes(
            start, plan.kept_rows + new_rows, plan.position_deletes, written_before=plan.kept_files
        )
        intent = self._intent(
            kind,
            branch,
            start,
            added=files,
            removed=[*plan.removed, *replaced_deletes(start, plan.position_deletes)],
            read_files=plan.read_files,
            read_filter=expression,
            isolation=isolation_level(start, P.DELETE_ISOLATION_LEVEL),
            **commit_options,
        )
        return self._commit(intent, start)

    def _files_writer(self, start: TableMetadata) -> KeptRowsWriter:
        """How a row-level change's planner writes the rows it holds as it goes."""
        return functools.partial(write_files, self.io, start)

    def _write_changes(
        self,
        start: TableMetadata,
        rows: list[pa.Table],
        deletes: Sequence[FileDeletes],
        *,
        written_before: Sequence[DataFile] = (),
    ) -> list[DataFile]:
        """All the files of one operation: ``written_before`` (the data files its planner
        wrote as it went), then its other new data files and its position delete files (v3:
        deletion vectors); on a failure, none of them stays."""
        with deleted_on_error(self.io) as written:
            written.extend(f.file_path for f in written_before)
            files = write_files(self.io, start, rows)
            written.extend(f.file_path for f in files)
            return [*written_before, *files, *write_position_deletes(self.io, start, deletes)]

    def _check_write(
        self, start: TableMetadata, branch: str, commit_options: Mapping[str, Any]
    ) -> Snapshot | None:
        """The head of ``branch`` a write starts from, once its commit options are checked:
        run before a write's first file, so that bad input (an unknown option, ``app_id``
        without ``app_version``, a flag that is not a bool, a branch that does not exist)
        fails with a typed error and leaves nothing behind, not even a data file."""
        unknown = sorted(set(commit_options) - _COMMIT_OPTIONS)
        if unknown:
            raise ValidationError(
                f"unknown write option{'s' if len(unknown) > 1 else ''} "
                f"{', '.join(map(repr, unknown))}; a write takes "
                f"{', '.join(sorted(_COMMIT_OPTIONS))}"
            )
        app_id, app_version = commit_options.get("app_id"), commit_options.get("app_version")
        if (app_id is None) != (app_version is None):
            raise ValidationError("app_id and app_version go together")
        if app_id is not None and (not isinstance(app_id, str) or not app_id):
            raise ValidationError(f"app_id is a non-empty string, not {app_id!r}")
        if app_version is not None and (
            not isinstance(app_version, int) or isinstance(app_version, bool)
        ):
            raise ValidationError(f"app_version is an integer, not {app_version!r}")
        for flag in ("create_branch", "skip_if_committed"):
            value = commit_options.get(flag, False)
            if not isinstance(value, bool):  # "false" would count as true
                raise ValidationError(f"{flag} is True or False, not {value!r}")
        user_summary(commit_options.get("snapshot_properties"))
        return self._head(start, branch, bool(commit_options.get("create_branch", False)))

    def _head(self, metadata: TableMetadata, branch: str, create: bool = False) -> Snapshot | None:
        return start_of(metadata, branch, create=create, table=self.name)

    def _intent(
        self,
        kind: OpKind,
        branch: str,
        start: TableMetadata,
        *,
        added: Sequence[Any] = (),
        removed: Sequence[Any] = (),
        read_files: Sequence[str] = (),
        read_filter: Expression | None = None,
        read_partitions: frozenset[tuple[int, tuple[object, ...]]] | None = None,
        isolation: str = P.ISOLATION_LEVEL_DEFAULT,
        app_id: str | None = None,
        app_version: int | None = None,
        skip_if_committed: bool = False,
        snapshot_properties: Mapping[str, str] | None = None,
        create_branch: bool = False,
    ) -> Intent:
        head = self._check_write(
            start,
            branch,
            {
                "app_id": app_id,
                "app_version": app_version,
                "create_branch": create_branch,
                "snapshot_properties": snapshot_properties,
            },
        )
        return Intent(
            kind=kind,
            branch=branch,
            creates_branch=create_branch and branch not in start.refs,
            starting_snapshot_id=head.snapshot_id if head else None,
            added_files=tuple(added),
            removed_files=tuple(removed),
            read_files=tuple(read_files),
            read_filter=read_filter if read_filter is not None else AlwaysTrue(),
            read_partitions=read_partitions,
            isolation=isolation,
            app_id=app_id,
            app_version=app_version,
            skip_if_committed=skip_if_committed,
            extra_summary=user_summary(snapshot_properties),
            keeps_row_lineage=True,  # rewrites read and write the rows' lineage (row_ops)
        )

    def _commit(self, intent: Intent, start: TableMetadata) -> CommitResult:
        location = self.metadata_location if start is self.metadata else None
        result = commit_intent(self._ops, intent, start=start, start_location=location)
        self.metadata, self.metadata_location = result.metadata, result.metadata_location
        return result

    def commit_intent(self, intent: Intent) -> CommitResult:
        """Commit an intent built elsewhere (maintenance jobs, Spark) against this table."""
        return self._commit(intent, self.metadata)

    def commit_replace(
        self, replacement: Replacement, files: Sequence[DataFile] | None = None
    ) -> CommitResult:
        """Replace the table's definition and rows in one commit: ``files`` (written against
        ``replaced(self.metadata, replacement)``; none for a query without rows) become a
        snapshot without a parent, the old snapshots stay in the history (see
        :mod:`lakecat.metadata.table.replace`). ``None``: a definition without rows, no
        snapshot (main has none until the next write), as Iceberg's ``REPLACE TABLE`` without
        ``AS SELECT``. A failure deletes ``files``; :class:`MetadataChanged` if a concurrent
        commit changed the schema, partitioning or sort order meanwhile."""
        if files is None:
            return self.commit_updates(lambda base: (replacement_updates(base, replacement), ()))
        intent = Intent(kind=OpKind.OVERWRITE, added_files=tuple(files), replacement=replacement)
        return self._commit(intent, self.metadata)

    # ---- metadata changes ---------------------------------------------------------------
    def commit_updates(
        self,
        build: Callable[[TableMetadata], tuple[Sequence[TableUpdate], Sequence[TableRequirement]]],
    ) -> CommitResult:
        """Commit a metadata change that ``build`` derives from each refreshed base.

        ``build(base)`` returns update records and the requirements they rely on; it runs
        again on every retry (see :func:`lakecat.catalog.commit.pipeline.commit_updates`).
        """
        result = commit_metadata_updates(self._ops, build, table_uuid=self.metadata.table_uuid)
        self.metadata, self.metadata_location = result.metadata, result.metadata_location
        return result

    def set_properties(
        self, updates: Mapping[str, str] | None = None, **kwargs: str
    ) -> CommitResult:
        """Set table properties. ``format-version`` is not stored but upgrades the table (to 3:
        row lineage and deletion vectors; never down), as Iceberg's catalogs do."""
        props = {**(updates or {}), **kwargs}
        changes: list[TableUpdate] = []
        if P.FORMAT_VERSION in props:
            version = requested_format_version({P.FORMAT_VERSION: props.pop(P.FORMAT_VERSION)})
            changes.append(UpgradeFormatVersion(version))
        if props:
            changes.append(SetProperties(props))
        return self.commit_updates(lambda base: (changes, ()))

    def remove_properties(self, *keys: str) -> CommitResult:
        return self.commit_updates(lambda base: ([RemoveProperties(tuple(keys))], ()))

    def set_location(self, location: str) -> CommitResult:
        """Move the table's base location (a URI or a local path): files written from now on
        go under it (unless ``write.data.path`` / ``write.metadata.path`` place them); files
        already written stay where they are and stay the table's."""
        if not isinstance(location, str) or not location.strip():
            raise ValidationError(f"a table location is a non-empty string, not {location!r}")
        uri = to_uri(location)
        return self.commit_updates(lambda base: ([SetLocation(uri)], ()))

    @contextmanager
    def update_schema(self, *, case_sensitive: bool = True) -> Iterator[SchemaUpdate]:
        """Evolve the schema: ``with table.update_schema() as u: u.add_column("x", LongType())``.

        The changes are recorded and committed on exit, re-applied on a refreshed base if
        another writer committed meanwhile; a concurrent schema change raises MetadataChanged.
        """
        recorder = _Recorder(SchemaUpdate(self.metadata, case_sensitive=case_sensitive))
        yield recorder  # type: ignore[misc]
        start = self.metadata

        def build(base: TableMetadata) -> tuple[Sequence[TableUpdate], Sequence[TableRequirement]]:
            _require_same(start, base, "schema", lambda m: (m.current_schema_id, m.last_column_id))
            update = recorder.replay(SchemaUpdate(base, case_sensitive=case_sensitive))
            return update.updates(), (
                AssertTableUUID(base.table_uuid),
                AssertCurrentSchemaId(start.current_schema_id),
                AssertLastAssignedFieldId(start.last_column_id),
            )

        self.commit_updates(build)

    @contextmanager
    def update_spec(self) -> Iterator[SpecUpdate]:
        """Evolve the partition spec: ``with table.update_spec() as u: u.add_field("ts")``."""
        recorder = _Recorder(SpecUpdate(self.metadata))
        yield recorder  # type: ignore[misc]
        start = self.metadata

        def build(base: TableMetadata) -> tuple[Sequence[TableUpdate], Sequence[TableRequirement]]:
            _require_same(
                start, base, "partition spec", lambda m: (m.default_spec_id, m.last_partition_id)
            )
            update = recorder.replay(SpecUpdate(base))
            return update.updates(), (
                AssertTableUUID(base.table_uuid),
                AssertDefaultSpecId(start.default_spec_id),
                AssertLastAssignedPartitionId(start.last_partition_id),
            )

        self.commit_updates(build)

    # ---- refs ---------------------------------------------------------------------------
    def create_tag(
        self, name: str, snapshot_id: int | None = None, *, max_ref_age_ms: int | None = None
    ) -> CommitResult:
        return self._set_ref(name, snapshot_id, "tag", create=True, max_ref_age_ms=max_ref_age_ms)

    def replace_tag(
        self, name: str, snapshot_id: int, *, max_ref_age_ms: int | None = None
    ) -> CommitResult:
        return self._set_ref(name, snapshot_id, "tag", create=False, max_ref_age_ms=max_ref_age_ms)

    def create_branch(
        self,
        name: str,
        snapshot_id: int | None = None,
        *,
        max_ref_age_ms: int | None = None,
        max_snapshot_age_ms: int | None = None,
        min_snapshots_to_keep: int | None = None,
    ) -> CommitResult:
        """A branch at ``snapshot_id`` (default: main's head). On a table without a snapshot
        (new, or replaced by a definition without rows), as Iceberg's
        ``ManageSnapshots.createBranch``: the branch gets a new empty snapshot of its own."""
        retention = {
            "max_ref_age_ms": max_ref_age_ms,
            "max_snapshot_age_ms": max_snapshot_age_ms,
            "min_snapshots_to_keep": min_snapshots_to_keep,
        }
        if snapshot_id is None and self.metadata.current_snapshot_id is None:
            return self._create_empty_branch(name, retention)
        return self._set_ref(name, snapshot_id, "branch", create=True, **retention)

    def _create_empty_branch(self, name: str, retention: Mapping[str, int | None]) -> CommitResult:
        self._check_ref_name(name, create=True)
        # an empty append that creates the branch (on top of one a concurrent commit made)
        result = self._commit(
            Intent(kind=OpKind.APPEND, branch=name, creates_branch=True), self.metadata
        )
        if all(value is None for value in retention.values()):
            return result

        def build(base: TableMetadata) -> tuple[Sequence[TableUpdate], Sequence[TableRequirement]]:
            ref = base.refs.get(name)
            if ref is None or ref.ref_type != "branch":
                raise NoSuchRef(f"{self.name} has no branch {name!r}")
            return [SetSnapshotRef(name, ref.snapshot_id, "branch", **retention)], ()

        return self.commit_updates(build)

    def replace_branch(self, name: str, snapshot_id: int) -> CommitResult:
        return self._set_ref(name, snapshot_id, "branch", create=False)

    def replace_sort_order(
        self, order: SortOrder, *, properties: Mapping[str, str] | None = None
    ) -> CommitResult:
        """Make ``order`` (its fields name columns of the current schema; no fields: unsorted)
        the order writers sort new data files by, with ``properties`` set in the same commit
        (``write.distribution-mode``: SQL's ``WRITE ORDERED BY``). Fails with
        :class:`MetadataChanged` if the schema changed since this table was loaded."""
        schema_id = self.metadata.current_schema_id

        def build(base: TableMetadata) -> tuple[Sequence[TableUpdate], Sequence[TableRequirement]]:
            if base.current_schema_id != schema_id:
                raise MetadataChanged(
                    f"{self.name}: the schema changed while the sort order was being replaced"
                )
            updates: list[TableUpdate] = [AddSortOrder(order), SetDefaultSortOrder(-1)]
            if properties:
                updates.append(SetProperties(dict(properties)))
            return updates, ()

        return self.commit_updates(build)

    def remove_ref(self, name: str) -> CommitResult:
        if name == MAIN_BRANCH:
            raise ValidationError("the main branch cannot be removed")

        def build(base: TableMetadata) -> tuple[Sequence[TableUpdate], Sequence[TableRequirement]]:
            if name not in base.refs:
                raise NoSuchRef(f"{self.name} has no branch or tag {name!r}")
            return [RemoveSnapshotRef(name)], ()

        return self.commit_updates(build)

    def _check_ref_name(self, name: str, *, create: bool) -> None:
        if not name or name.strip() != name:
            raise ValidationError(f"invalid ref name {name!r}")
        if create and name in self.metadata.refs:
            raise ValidationError(f"{self.name} already has a ref named {name!r}")

    def _set_ref(
        self,
        name: str,
        snapshot_id: int | None,
        ref_type: str,
        *,
        create: bool,
        **retention: int | None,
    ) -> CommitResult:
        self._check_ref_name(name, create=create)
        target = snapshot_id if snapshot_id is not None else self.metadata.current_snapshot_id
        if target is None:
            raise ValidationError(f"{self.name} has no snapshot to point {name!r} at")
        self.metadata.snapshot_by_id(target)  # NoSuchSnapshot for an unknown id

        def build(base: TableMetadata) -> tuple[Sequence[TableUpdate], Sequence[TableRequirement]]:
            existing = base.refs.get(name)
            if create and existing is not None:
                raise InvalidUpdate(
                    f"{self.name}: a concurrent commit created a ref named {name!r}"
                )
            if not create and existing is None:
                raise NoSuchRef(f"{self.name} has no {ref_type} {name!r}")
            if existing is not None and existing.ref_type != ref_type:
                raise InvalidUpdate(f"{name!r} is a {existing.ref_type}, not a {ref_type}")
            settings = dict(retention)
            if existing is not None:  # replacing a ref keeps retention it was not given
                for key in ("max_ref_age_ms", "max_snapshot_age_ms", "min_snapshots_to_keep"):
                    if settings.get(key) is None and getattr(existing, key) is not None:
                        settings[key] = getattr(existing, key)
            return [SetSnapshotRef(name, target, ref_type, **settings)], ()  # type: ignore[arg-type]

        return self.commit_updates(build)


class _Recorder:
    """Records calls on a builder so they can be replayed on a refreshed base."""

    def __init__(self, builder: Any) -> None:
        self._builder = builder
        self._calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._builder, name)
        if not callable(attr) or name in ("apply", "updates"):
            return attr

        def call(*args: Any, **kwargs: Any) -> _Recorder:
            attr(*args, **kwargs)  # validate now, against the metadata the caller saw
            self._calls.append((name, args, kwargs))
            return self

        return call

    def replay(self, builder: Any) -> Any:
        for name, args, kwargs in self._calls:
            getattr(builder, name)(*args, **kwargs)
        return builder


def _require_same(
    start: TableMetadata, base: TableMetadata, what: str, key: Callable[[TableMetadata], object]
) -> None:
    if key(start) != key(base):
        raise MetadataChanged(
            f"a concurrent commit changed the {what} after this change started; "
            f"re-read the table and apply the change again"
        )


__all__ = ["RequirementFailed", "Table", "to_timestamp_ms"]
