"""Which files a compaction rewrites, and in which groups: Iceberg's bin-pack planner.

:class:`FileSelection` holds the options of Iceberg's ``BinPackRewriteFilePlanner`` (by the
names of its ``rewrite_data_files`` options), checked when it is made, before any manifest is
read; :func:`plan_file_groups` applies them to the live files of the current snapshot that
may hold rows matching a filter:

* **candidates** are the small files, under ``min-file-size-bytes`` (75% of the target), and
  the files that must be rewritten: those larger than ``max-file-size-bytes`` (180% of the
  target); those that ``delete-file-threshold`` delete files apply to; those whose
  file-scoped deletes (deletion vectors, position deletes that name the file) remove at least
  ``delete-ratio-threshold`` (30%) of their rows; with a sort by the table's order, those not
  written in it; and those written for another partition spec than the output one (the
  table's, or ``output-spec-id``), unless ``repartition`` is off (lakecat's option, on by
  default; Iceberg's planner, which the procedure follows, leaves such files unless their size
  or deletes say otherwise). ``rewrite-all`` makes every file a candidate. With a sort, a
  partition that has a candidate contributes all its files, so that it comes out sorted.
* files are grouped by partition of the table's spec; files of other specs are one group
  (their rows may belong to several partitions now: Iceberg groups them so too);
* candidates are packed, in manifest order, into groups of at most
  ``max-file-group-size-bytes`` and ``max-file-group-input-files`` files (first fit, as
  Iceberg's ``ListPacker``);
* a group is rewritten when it has a file that must be rewritten, more than one file and at
  least ``min-input-files`` of them (*enough input files*), more than one file holding more
  than the target size (*enough content*), or more than ``max-file-size-bytes`` in all (*too
  much content*). A lone small file is left: rewritten alone it comes out the same.
* ``max-files-to-rewrite`` caps the files of the plan: groups are taken in order until the
  cap, the last one cut to what is left.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from lakecat.catalog.read.scan import RowFilter, Scan
from lakecat.catalog.write.row_ops import rewrite_columns
from lakecat.metadata.errors import ValidationError
from lakecat.metadata.io.fileio import FileIO
from lakecat.metadata.io.parquet import partition_path
from lakecat.metadata.manifests.datafile import DataFile
from lakecat.metadata.manifests.delete_index import named_data_file
from lakecat.metadata.table.table_metadata import TableMetadata

# Iceberg's bin-pack defaults (SizeBasedFileRewritePlanner): files under 75% of the target are
# too small, files over 180% too large.
MIN_FILE_SIZE_RATIO = 0.75
MAX_FILE_SIZE_RATIO = 1.80
DEFAULT_MAX_GROUP_SIZE_BYTES = 10 * 1024**3
# lakecat's own default; Iceberg's procedure default (ICEBERG_MIN_INPUT_FILES) is 5
DEFAULT_MIN_INPUT_FILES = 2
ICEBERG_MIN_INPUT_FILES = 5
# Iceberg's delete-ratio-threshold default: a file whose deletes remove 30% of its rows
DEFAULT_DELETE_RATIO_THRESHOLD = 0.3


@dataclass(frozen=True)
class FileSelection:
    """The options that choose a compaction's files and groups (module docstring); ``None``
    is Iceberg's default: the size thresholds 75% and 180% of the target, no file-count
    limit per group, no delete-file threshold, no cap on the files rewritten. Bad values
    raise :class:`ValidationError` here."""

    min_input_files: int = DEFAULT_MIN_INPUT_FILES
    max_group_size_bytes: int = DEFAULT_MAX_GROUP_SIZE_BYTES
    max_group_input_files: int | None = None
    min_file_size_bytes: int | None = None
    max_file_size_bytes: int | None = None
    rewrite_all: bool = False
    delete_file_threshold: int | None = None
    delete_ratio_threshold: float = DEFAULT_DELETE_RATIO_THRESHOLD
    max_files_to_rewrite: int | None = None
    # the spec the new files are written for (None: the table's default spec)
    output_spec_id: int | None = None
    # files of another spec than the output one must be rewritten (re-partitioned)
    repartition: bool = True

    def output_spec(self, metadata: TableMetadata) -> int:
        """The id of the spec the new files are written for; one the table does not have is
        refused (Iceberg's check)."""
        spec_id = metadata.default_spec_id if self.output_spec_id is None else self.output_spec_id
        specs = metadata.specs_by_id()
        if spec_id not in specs:
            raise ValidationError(
                f"cannot write the compacted files for partition spec {spec_id}: the table has "
                f"specs {', '.join(str(i) for i in sorted(specs))}"
            )
        return spec_id

    def __post_init__(self) -> None:
        _at_least("min_input_files", self.min_input_files, 1)
        _at_least("max_group_size_bytes", self.max_group_size_bytes, 1)
        _at_least("max_group_input_files", self.max_group_input_files, 1)
        _at_least("min_file_size_bytes", self.min_file_size_bytes, 0)
        _at_least("delete_file_threshold", self.delete_file_threshold, 1)
        _at_least("max_files_to_rewrite", self.max_files_to_rewrite, 1)
        ratio = self.delete_ratio_threshold
        if math.isnan(ratio) or not 0 < ratio <= 1:
            raise ValidationError(
                f"delete_ratio_threshold must be above 0 and at most 1, not {ratio}"
            )

    def size_thresholds(self, target_file_size_bytes: int) -> tuple[int, int]:
        """(min, max) file size for this target: a file under the first is small, one over
        the second too large. A target given with either threshold must lie between them
        (Iceberg's check)."""
        if target_file_size_bytes <= 0:
            raise ValidationError(
                f"target_file_size_bytes must be positive, not {target_file_size_bytes}"
            )
        low, high = self.min_file_size_bytes, self.max_file_size_bytes
        min_size = int(target_file_size_bytes * MIN_FILE_SIZE_RATIO) if low is None else low
        max_size = int(target_file_size_bytes * MAX_FILE_SIZE_RATIO) if high is None else high
        explicit = low is not None or high is not None
        if explicit and not min_size < target_file_size_bytes < max_size:
            raise ValidationError(
                f"the target file size ({target_file_size_bytes}) must be above the minimum "
                f"file size ({min_size}) and below the maximum ({max_size})"
            )
        return min_size, max_size


def _at_least(name: str, value: int | None, least: int) -> None:
    if value is not None and value < least:
        raise ValidationError(f"{name} must be at least {least}, not {value}")


# the name of the group of files written for other specs than the table's
OTHER_SPECS = "<files of other partition specs>"


@dataclass(frozen=True)
class FileGroup:
    """Files of one partition that are rewritten (and committed) together; ``spec_id`` None:
    files of other partition specs than the table's, of any partition."""

    spec_id: int | None
    partition: tuple[object, ...]
    partition_name: str
    files: tuple[DataFile, ...]
    # the delete files that apply to each file (by path): the rewrite applies them
    deletes: Mapping[str, tuple[DataFile, ...]] = field(
        default_factory=dict, compare=False, hash=False
    )
    # data sequence numbers by path (v3: rows keep the _last_updated_sequence_number they had)
    sequence_numbers: Mapping[str, int] = field(default_factory=dict, compare=False, hash=False)

    @property
    def size_bytes(self) -> int:
        return sum(f.file_size_in_bytes for f in self.files)

    def describe(self) -> str:
        where = self.partition_name or "<unpartitioned>"
        spec = "" if self.spec_id is None else f" (spec {self.spec_id})"
        return f"partition {where}{spec}: {len(self.files)} file(s), {self.size_bytes} bytes"


def plan_file_groups(
    io: FileIO,
    metadata: TableMetadata,
    selection: FileSelection = FileSelection(),
    *,
    target_file_size_bytes: int,
    row_filter: RowFilter = None,
    sort: bool = False,
    sort_order_id: int | None = None,
) -> list[FileGroup]:
    """The file groups a compaction of the current snapshot would rewrite (reads manifests;
    the module docstring says which). ``sort``: a partition that has a candidate is
    rewritten whole, so that it comes out sorted. ``sort_order_id``: files not written in
    this sort order must be rewritten. Each group names the delete files of its files
    (``FileGroup.deletes``). Thresholds that do not fit the target raise
    :class:`ValidationError` before any manifest is read."""
    min_size, max_size = selection.size_thresholds(target_file_size_bytes)
    output_spec = selection.output_spec(metadata)
    snapshot = metadata.current_snapshot
    if snapshot is None:
        return []
    schema = metadata.schema()
    scanned = Scan(
        io, metadata, snapshot, schema, row_filter=row_filter, columns=rewrite_columns(metadata)
    ).plan()

    def must_rewrite(f: DataFile) -> bool:
        deletes = scanned.deletes.get(f.file_path, ())
        return bool(
            selection.rewrite_all
            or (selection.repartition and f.spec_id != output_spec)
            or f.file_size_in_bytes > max_size
            or (sort_order_id is not None and f.sort_order_id != sort_order_id)
            or (
                selection.delete_file_threshold is not None
                and len(deletes) >= selection.delete_file_threshold
            )
            or _deleted_ratio(f, deletes) >= selection.delete_ratio_threshold
        )

    def worth_rewriting(group: list[DataFile]) -> bool:
        size = sum(f.file_size_in_bytes for f in group)
        several = len(group) > 1
        return (
            (several and len(group) >= selection.min_input_files)
            or (several and size > target_file_size_bytes)
            or size > max_size
            or any(must_rewrite(f) for f in group)
        )

    # by partition of the table's spec; the files of other specs together (Iceberg's grouping)
    by_partition: dict[tuple[int | None, tuple[object, ...]], list[DataFile]] = {}
    for f in scanned.files:
        key = (f.spec_id, f.partition) if f.spec_id == metadata.default_spec_id else (None, ())
        by_partition.setdefault(key, []).append(f)
    specs = metadata.specs_by_id()
    groups: list[FileGroup] = []
    left = selection.max_files_to_rewrite
    for (spec_id, partition), in_partition in by_partition.items():
        candidates = [f for f in in_partition if must_rewrite(f) or f.file_size_in_bytes < min_size]
        if sort and candidates:
            candidates = in_partition
        name = OTHER_SPECS if spec_id is None else partition_path(specs[spec_id], schema, partition)
        packed_groups = _pack(
            candidates, selection.max_group_size_bytes, selection.max_group_input_files
        )
        for packed in packed_groups:
            if not worth_rewriting(packed):
                continue
            if left is not None:  # max-files-to-rewrite: the last group is cut to the cap
                if left == 0:
                    return groups
                packed = packed[:left]
                left -= len(packed)
            groups.append(
                FileGroup(
                    spec_id,
                    partition,
                    name,
                    tuple(packed),
                    {
                        f.file_path: scanned.deletes[f.file_path]
                        for f in packed
                        if f.file_path in scanned.deletes
                    },
                    {
                        f.file_path: scanned.sequence_numbers[f.file_path]
                        for f in packed
                        if f.file_path in scanned.sequence_numbers
                    },
                )
            )
    return groups


def _deleted_ratio(f: DataFile, deletes: tuple[DataFile, ...]) -> float:
    """The share of ``f``'s rows its file-scoped deletes remove (deletion vectors and
    position delete files that name it: their record counts), as Iceberg's
    ``tooHighDeleteRatio`` counts them; other deletes are not counted."""
    if not deletes or f.record_count <= 0:
        return 0.0
    known = sum(d.record_count for d in deletes if named_data_file(d) is not None)
    return min(known, f.record_count) / f.record_count


def _pack(files: list[DataFile], max_bytes: int, max_files: int | None) -> Iterator[list[DataFile]]:
    """First-fit packing with lookback 1 (Iceberg's ``ListPacker`` default), in input order:
    a group closes before a file that would take it over ``max_bytes`` or ``max_files``."""
    current: list[DataFile] = []
    size = 0
    for f in files:
        full = max_files is not None and len(current) >= max_files
        if current and (full or size + f.file_size_in_bytes > max_bytes):
            yield current
            current, size = [], 0
        current.append(f)
        size += f.file_size_in_bytes
    if current:
        yield current
