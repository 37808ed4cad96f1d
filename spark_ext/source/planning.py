"""Read planning on the driver: which snapshot, which files, grouped into Spark partitions.

A read resolves its snapshot from the options once (time travel: ``snapshot-id``,
``as-of-timestamp`` in ms or ISO-8601, ``tag``, ``branch``; or an incremental range
``start-snapshot-id`` (exclusive) .. ``end-snapshot-id`` (inclusive, default: current) that
reads the rows appended in between), plans the data files with lakecat's scan planning
(manifests by partition summaries, files by partition and column bounds) under the filters
Spark pushed, and packs the files into input partitions: one per file, or several small
files together, up to the split size (``split-size``, default table property
``read.split.target-size``, 128 MiB), each file weighing at least ``file-open-cost``
(``read.split.open-file-cost``, 4 MiB), as Iceberg's Spark reader does.

Delete files: a plan names, for each data file that has any, the delete files that apply to
it (position deletes, deletion vectors, equality deletes, chosen as the spec's scan planning
says), and the executors drop the deleted rows as they read (:class:`~lakecat.catalog.engine
.DeleteReader`). An incremental read reads appended files as appended, as Iceberg Java's
incremental append scan does, without delete files.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from lakecat.catalog.engine import Scan, to_timestamp_ms
from lakecat.metadata import properties as P
from lakecat.metadata.errors import ValidationError
from lakecat.metadata.expressions import (
    AlwaysTrue,
    Expression,
    InclusiveMetricsEvaluator,
    PartitionEvaluator,
    and_,
    bind,
    parse,
)
from lakecat.metadata.io import FileIO
from lakecat.metadata.manifests import (
    DataFile,
    ManifestContent,
    Status,
    read_manifest,
    read_manifest_list,
)
from lakecat.metadata.schema import LINEAGE_COLUMNS, Schema
from lakecat.metadata.table import (
    APPEND,
    Snapshot,
    TableMetadata,
    ancestors_between,
    is_ancestor_of,
    schema_for,
    snapshot_at,
)

# Read options (Iceberg Spark's names where Iceberg has one).
SNAPSHOT_ID = "snapshot-id"
AS_OF_TIMESTAMP = "as-of-timestamp"
TAG = "tag"
BRANCH = "branch"
START_SNAPSHOT_ID = "start-snapshot-id"
END_SNAPSHOT_ID = "end-snapshot-id"
SPLIT_SIZE = "split-size"
FILE_OPEN_COST = "file-open-cost"
FILTER = "filter"  # a lakecat filter string, applied like a pushed-down filter
# A lakecat filter string that only chooses files (the caller filters the rows): the SQL
# catalog's reads put the filters Spark pushed here.
PRUNE_FILTER = "prune-filter"
# Options used by row-level operations and compaction, which plan on the driver first:
FILES = "files"  # JSON list of data file paths (read only these), or list of lists (the groups)
METADATA_COLUMNS = "metadata-columns"  # "true": add the columns _file and _pos
ROW_ADDRESSES = "row-addresses"  # "true": add the column _lakecat_row_address (compaction)
# "true": add the row lineage columns _row_id and _last_updated_sequence_number (format v3)
ROW_LINEAGE = "row-lineage"
METADATA_LOCATION = "metadata-location"  # read this metadata file instead of the catalog's

# Table properties for split planning (Iceberg's names and defaults).
SPLIT_SIZE_PROPERTY = "read.split.target-size"
SPLIT_SIZE_DEFAULT = 128 * 1024 * 1024
OPEN_FILE_COST_PROPERTY = "read.split.open-file-cost"
OPEN_FILE_COST_DEFAULT = 4 * 1024 * 1024


@dataclass(frozen=True)
class ReadOptions:
    """The options of one read, validated."""

    snapshot_id: int | None = None
    as_of_ms: int | None = None
    tag: str | None = None
    branch: str | None = None
    start_snapshot_id: int | None = None
    end_snapshot_id: int | None = None
    split_size: int | None = None
    open_file_cost: int | None = None
    row_filter: str | None = None
    prune_filter: str | None = None
    files: frozenset[str] | None = None
    file_groups: tuple[tuple[str, ...], ...] | None = None  # given groups, not packed
    metadata_columns: bool = False
    row_lineage: bool = False
    row_addresses: bool = False
    metadata_location: str | None = None

    @staticmethod
    def parse(options: Mapping[str, str]) -> ReadOptions:
        files, groups = _files_option(options.get(FILES))
        read = ReadOptions(
            snapshot_id=_int_option(options, SNAPSHOT_ID),
            as_of_ms=(
                to_timestamp_ms(_timestamp_option(options[AS_OF_TIMESTAMP]))
                if options.get(AS_OF_TIMESTAMP)
                else None
            ),
            tag=options.get(TAG) or None,
            branch=options.get(BRANCH) or None,
            start_snapshot_id=_int_option(options, START_SNAPSHOT_ID),
            end_snapshot_id=_int_option(options, END_SNAPSHOT_ID),
            split_size=_int_option(options, SPLIT_SIZE),
            open_file_cost=_int_option(options, FILE_OPEN_COST),
            row_filter=options.get(FILTER) or None,
            prune_filter=options.get(PRUNE_FILTER) or None,
            files=files,
            file_groups=groups,
            metadata_columns=options.get(METADATA_COLUMNS, "false").strip().lower() == "true",
            row_lineage=options.get(ROW_LINEAGE, "false").strip().lower() == "true",
            row_addresses=options.get(ROW_ADDRESSES, "false").strip().lower() == "true",
            metadata_location=options.get(METADATA_LOCATION) or None,
        )
        read.validate()
        return read

    def validate(self) -> None:
        chosen = [
            name
            for name, value in (
                (SNAPSHOT_ID, self.snapshot_id),
                (AS_OF_TIMESTAMP, self.as_of_ms),
                (TAG, self.tag),
                (BRANCH, self.branch),
            )
            if value is not None
        ]
        if len(chosen) > 1:
            raise ValidationError(f"choose one of the read options {', '.join(chosen)}")
        if self.end_snapshot_id is not None and self.start_snapshot_id is None:
            raise ValidationError(f"{END_SNAPSHOT_ID} needs {START_SNAPSHOT_ID}")
        if self.incremental and chosen:
            raise ValidationError(
                f"{START_SNAPSHOT_ID}/{END_SNAPSHOT_ID} read appended rows and cannot be "
                f"combined with {chosen[0]}"
            )
        for name, value in ((SPLIT_SIZE, self.split_size), (FILE_OPEN_COST, self.open_file_cost)):
            if value is not None and value <= 0:
                raise ValidationError(f"{name} must be positive, not {value}")

    @property
    def incremental(self) -> bool:
        return self.start_snapshot_id is not None


def _int_option(options: Mapping[str, str], key: str) -> int | None:
    raw = options.get(key)
    if raw is None or raw == "":
        return None
    try:
        return int(raw)
    except ValueError:
        raise ValidationError(f"option {key} must be an integer, not {raw!r}") from None


def _timestamp_option(raw: str) -> int | str:
    text = raw.strip()
    return int(text) if text.lstrip("-").isdigit() else text


def _files_option(
    raw: str | None,
) -> tuple[frozenset[str] | None, tuple[tuple[str, ...], ...] | None]:
    """(paths, groups) from a JSON list of paths or a JSON list of lists of paths."""
    if not raw:
        return None, None
    message = f"option {FILES} must be a JSON list of paths, or of lists of paths"
    try:
        value = json.loads(raw)
    except ValueError:
        raise ValidationError(message) from None
    if not isinstance(value, list):
        raise ValidationError(message)
    if all(isinstance(v, str) for v in value):
        return frozenset(value), None
    if all(isinstance(g, list) and all(isinstance(v, str) for v in g) for g in value):
        groups = tuple(tuple(g) for g in value)
        return frozenset(p for g in groups for p in g), groups
    raise ValidationError(message)


@dataclass(frozen=True)
class ReadView:
    """A table as one read sees it: metadata, snapshot and the schema to read it with."""

    metadata: TableMetadata
    metadata_location: str
    snapshot: Snapshot | None
    schema: Schema
    options: ReadOptions

    @staticmethod
    def resolve(metadata: TableMetadata, location: str, options: ReadOptions) -> ReadView:
        if options.incremental:
            end_id = (
                options.end_snapshot_id
                if options.end_snapshot_id is not None
                else metadata.current_snapshot_id
            )
            end = metadata.snapshot_by_id(end_id) if end_id is not None else None
            start_id = options.start_snapshot_id
            assert start_id is not None
            metadata.snapshot_by_id(start_id)  # NoSuchSnapshot for an unknown id
            if end is None or not is_ancestor_of(
                metadata, snapshot_id=end.snapshot_id, ancestor_id=start_id
            ):
                raise ValidationError(
                    f"{START_SNAPSHOT_ID} {start_id} is not an ancestor of snapshot {end_id}"
                )
            return ReadView(metadata, location, end, metadata.schema(), options)
        ref = options.tag or options.branch
        snapshot = snapshot_at(
            metadata, snapshot_id=options.snapshot_id, as_of_timestamp_ms=options.as_of_ms, ref=ref
        )
        time_travel = ref is not None or options.snapshot_id is not None or options.as_of_ms
        schema = schema_for(metadata, snapshot, ref=ref) if time_travel else metadata.schema()
        return ReadView(metadata, location, snapshot, schema, options)

    def base_filter(self) -> Expression:
        """The ``filter`` option as an expression (AlwaysTrue without one)."""
        return parse(self.options.row_filter) if self.options.row_filter else AlwaysTrue()

    def prune_filter(self) -> Expression:
        """The ``prune-filter`` option as an expression (AlwaysTrue without one)."""
        return parse(self.options.prune_filter) if self.options.prune_filter else AlwaysTrue()


@dataclass(frozen=True)
class FilePlan:
    """The data files of a read and, for each that has any, the delete files to apply to it
    (by data file path)."""

    files: tuple[DataFile, ...]
    files_total: int
    deletes: Mapping[str, tuple[DataFile, ...]] = field(default_factory=dict)
    # data sequence numbers by data file path, when planned for row lineage
    sequence_numbers: Mapping[str, int] = field(default_factory=dict)

    def deletes_of(self, files: Iterable[DataFile]) -> dict[str, tuple[DataFile, ...]]:
        """The delete files of ``files`` (those that have any)."""
        return {
            f.file_path: self.deletes[f.file_path] for f in files if f.file_path in self.deletes
        }

    def sequence_numbers_of(self, files: Iterable[DataFile]) -> dict[str, int]:
        """The data sequence numbers of ``files`` (those planned with one)."""
        known = self.sequence_numbers
        return {f.file_path: known[f.file_path] for f in files if f.file_path in known}

    def only(self, files: tuple[DataFile, ...]) -> FilePlan:
        """This plan restricted to ``files``."""
        return FilePlan(
            files, self.files_total, self.deletes_of(files), self.sequence_numbers_of(files)
        )


def plan_files(
    io: FileIO, view: ReadView, filters: Sequence[Expression], *, row_lineage: bool = False
) -> FilePlan:
    """The data files of the read that may hold rows matching every filter, with their
    delete files (and, with ``row_lineage``, their data sequence numbers).

    An incremental read plans the data files that append snapshots added, as they were
    appended, as Iceberg Java's incremental append scan does (which applies no delete files
    either: a row deleted later in the range is returned, as a row that a later copy-on-write
    delete removed is); a merge-on-read commit is not an append and is skipped."""
    expression = and_(view.base_filter(), *filters)
    if view.options.incremental:
        plan = appended_files(io, view, expression)
    else:
        # asking the scan for the lineage columns makes it plan sequence numbers
        lineage = list(LINEAGE_COLUMNS) if row_lineage else None
        scan = Scan(
            io, view.metadata, view.snapshot, view.schema, row_filter=expression, columns=lineage
        )
        found = scan.plan()
        plan = FilePlan(found.files, found.files_total, found.deletes, found.sequence_numbers)
    wanted = view.options.files
    if wanted is not None:
        plan = plan.only(tuple(f for f in plan.files if f.file_path in wanted))
    return plan


def appended_files(io: FileIO, view: ReadView, expression: Expression) -> FilePlan:
    """Files added by the append snapshots in (start, end], as Iceberg's incremental append
    scan reads them: snapshots of other operations (overwrite, delete, replace) are skipped."""
    metadata, end = view.metadata, view.snapshot
    if end is None:
        return FilePlan((), 0)
    bound = bind(view.schema, expression)
    metrics = InclusiveMetricsEvaluator(view.schema, bound)
    specs = metadata.specs_by_id()
    partitions = {
        spec_id: PartitionEvaluator(spec, view.schema, bound) for spec_id, spec in specs.items()
    }
    files: list[DataFile] = []
    sequence_numbers: dict[str, int] = {}
    total = 0
    snapshots = ancestors_between(
        metadata, start_exclusive=view.options.start_snapshot_id, end_inclusive=end.snapshot_id
    )
    for snapshot in reversed(snapshots):
        if snapshot.operation != APPEND:
            continue
        for manifest in read_manifest_list(io, snapshot.manifest_list):
            if manifest.content is not ManifestContent.DATA:
                continue
            if manifest.added_snapshot_id != snapshot.snapshot_id or not manifest.has_added_files:
                continue
            for entry in read_manifest(io, manifest, specs=specs, schema=metadata.schema()):
                if entry.status is not Status.ADDED or entry.snapshot_id != snapshot.snapshot_id:
                    continue
                total += 1
                f = entry.data_file
                if partitions[f.spec_id].eval(f.partition) and metrics.eval(f):
                    files.append(f)
                    if entry.sequence_number is not None:
                        sequence_numbers[f.file_path] = entry.sequence_number
    return FilePlan(tuple(files), total, sequence_numbers=sequence_numbers)


def split_sizes(view: ReadView) -> tuple[int, int]:
    """(split size, file open cost) from the options, else the table properties."""
    props = view.metadata.properties
    split = view.options.split_size or P.get_int(props, SPLIT_SIZE_PROPERTY, SPLIT_SIZE_DEFAULT)
    cost = view.options.open_file_cost or P.get_int(
        props, OPEN_FILE_COST_PROPERTY, OPEN_FILE_COST_DEFAULT
    )
    return split, cost


def groups_of(view: ReadView, plan: FilePlan, *, parallelism: int = 1) -> list[list[DataFile]]:
    """The input partitions of a read: the given file groups, else packed files.

    Unless the read sets ``split-size``, the split size shrinks so that the files make at
    least ``parallelism`` partitions when they can (Spark's own file sources and Iceberg's
    adaptive split size do the same): a few files below the split size must not be read by
    one task while the other cores idle.
    """
    given = view.options.file_groups
    if given is not None:
        by_path = {f.file_path: f for f in plan.files}
        groups = [[by_path[p] for p in group if p in by_path] for group in given]
        return [g for g in groups if g]
    split_size, open_cost = split_sizes(view)
    if view.options.split_size is None and parallelism > 1:
        total = sum(max(f.file_size_in_bytes, open_cost) for f in plan.files)
        split_size = min(split_size, max(open_cost, -(-total // parallelism)))
    return balance(plan.files, split_size=split_size, open_file_cost=open_cost)


def balance(
    files: Sequence[DataFile], *, split_size: int, open_file_cost: int
) -> list[list[DataFile]]:
    """Files spread over as many groups as the split size asks for (total weight / split
    size, rounded up), largest first into the lightest group, so that the groups weigh about
    the same (each file weighs at least ``open_file_cost``). Files keep their planning order
    inside a group."""
    if not files:
        return []
    weight = {f.file_path: max(f.file_size_in_bytes, open_file_cost) for f in files}
    count = min(len(files), max(1, -(-sum(weight.values()) // split_size)))
    groups: list[list[DataFile]] = [[] for _ in range(count)]
    loads = [0] * count
    for f in sorted(files, key=lambda f: -weight[f.file_path]):
        lightest = loads.index(min(loads))
        groups[lightest].append(f)
        loads[lightest] += weight[f.file_path]
    order = {f.file_path: i for i, f in enumerate(files)}
    return [sorted(g, key=lambda f: order[f.file_path]) for g in groups]


def pack(
    files: Iterable[DataFile], *, split_size: int, open_file_cost: int
) -> list[list[DataFile]]:
    """Files in planning order, packed into groups of at most ``split_size`` (a file larger
    than that is a group of its own); each file weighs at least ``open_file_cost``."""
    groups: list[list[DataFile]] = []
    current: list[DataFile] = []
    weight = 0
    for f in files:
        w = max(f.file_size_in_bytes, open_file_cost)
        if current and weight + w > split_size:
            groups.append(current)
            current, weight = [], 0
        current.append(f)
        weight += w
    if current:
        groups.append(current)
    return groups
