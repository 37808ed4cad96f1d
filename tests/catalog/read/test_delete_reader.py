"""Applying delete files while reading: a delete file that cannot be read fails the read with a
typed error naming it (no rows come back from a file whose deletes could not be applied), and
the planning rules pick exactly the delete files the spec says apply."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakecat.catalog.read.deletes import DeleteReader
from lakecat.metadata.errors import CorruptMetadata, UnsupportedFeature
from lakecat.metadata.io.fileio import LocalFileIO
from lakecat.metadata.manifests.datafile import Content, DataFile, ManifestEntry, Status
from lakecat.metadata.manifests.delete_index import POS_FILE_PATH_ID, DeleteIndex
from lakecat.metadata.partitioning.spec import PartitionField, PartitionSpec
from lakecat.metadata.schema.schema import Schema
from lakecat.metadata.schema.types import LongType, NestedField

SCHEMA = Schema((NestedField(1, "id", LongType(), required=False),), 0)
UNPARTITIONED = PartitionSpec(0, ())
BY_ID = PartitionSpec(1, (PartitionField(1, 1000, "identity", "id"),))
SPECS = {0: UNPARTITIONED, 1: BY_ID}


def data(path: str, *, spec_id: int = 0, partition: tuple[object, ...] = ()) -> DataFile:
    return DataFile(path, "PARQUET", partition, 10, 100, spec_id=spec_id)


def deletes(
    path: str,
    content: Content,
    *,
    spec_id: int = 0,
    partition: tuple[object, ...] = (),
    target: str | None = None,
    fmt: str = "PARQUET",
) -> DataFile:
    bounds = None if target is None else {POS_FILE_PATH_ID: target.encode()}
    return DataFile(
        path,
        fmt,
        partition,
        1,
        100,
        spec_id=spec_id,
        content=content,
        lower_bounds=bounds,
        upper_bounds=bounds,
        equality_ids=(1,) if content is Content.EQUALITY_DELETES else None,
    )


def entry(f: DataFile, seq: int, status: Status = Status.EXISTING) -> ManifestEntry:
    return ManifestEntry(status, f, 1, seq, seq)


def test_position_deletes_apply_to_older_or_equal_data_of_their_partition_or_named_file() -> None:
    scoped = deletes("d1", Content.POSITION_DELETES, spec_id=1, partition=(7,))
    named = deletes("d2", Content.POSITION_DELETES, spec_id=1, partition=(7,), target="a")
    index = DeleteIndex([entry(scoped, 5), entry(named, 5)], SPECS)
    a, b = data("a", spec_id=1, partition=(7,)), data("b", spec_id=1, partition=(7,))
    assert index.for_data_file(a, 5) == (named, scoped)  # <= : the same commit counts
    assert index.for_data_file(b, 5) == (scoped,)  # the named one names another file
    assert index.for_data_file(a, 6) == ()  # newer data
    assert index.for_data_file(data("c", spec_id=1, partition=(8,)), 1) == ()  # other partition
    assert index.for_data_file(data("a", spec_id=0), 1) == ()  # same values, other spec


def test_equality_deletes_apply_to_strictly_older_data_and_unpartitioned_ones_everywhere() -> None:
    scoped = deletes("e1", Content.EQUALITY_DELETES, spec_id=1, partition=(7,))
    everywhere = deletes("e2", Content.EQUALITY_DELETES, spec_id=0)
    index = DeleteIndex([entry(scoped, 5), entry(everywhere, 5)], SPECS)
    assert index.for_data_file(data("a", spec_id=1, partition=(7,)), 4) == (scoped, everywhere)
    assert index.for_data_file(data("a", spec_id=1, partition=(7,)), 5) == ()  # < , not <=
    assert index.for_data_file(data("b", spec_id=1, partition=(8,)), 4) == (everywhere,)


def test_removed_delete_files_do_not_apply_and_unknown_kinds_are_refused() -> None:
    gone = deletes("d1", Content.POSITION_DELETES)
    assert DeleteIndex([entry(gone, 5, Status.DELETED)], SPECS).for_data_file(data("a"), 1) == ()
    with pytest.raises(UnsupportedFeature, match="ORC"):
        DeleteIndex([entry(deletes("d", Content.POSITION_DELETES, fmt="ORC"), 5)], SPECS)
    with pytest.raises(CorruptMetadata, match="referenced_data_file"):  # a DV names its file
        DeleteIndex([entry(deletes("dv", Content.POSITION_DELETES, fmt="PUFFIN"), 5)], SPECS)
    with pytest.raises(CorruptMetadata, match="content 0"):
        DeleteIndex([entry(data("not-a-delete"), 5)], SPECS)


def _batches(n: int) -> list[pa.RecordBatch]:
    return pa.table({"id": pa.array(range(n), pa.int64())}).to_batches(max_chunksize=3)


@pytest.mark.parametrize("damage", ["missing", "truncated", "not parquet"])
def test_a_delete_file_that_cannot_be_read_fails_the_read_naming_it(
    tmp_path: Path, damage: str
) -> None:
    path = tmp_path / "deletes.parquet"
    pq.write_table(pa.table({"file_path": ["a"], "pos": pa.array([1], pa.int64())}), path)
    if damage == "missing":
        path.unlink()
    elif damage == "truncated":
        path.write_bytes(path.read_bytes()[:20])
    else:
        path.write_text("hello")
    reader = DeleteReader(LocalFileIO(), SCHEMA)
    bad = deletes(str(path), Content.POSITION_DELETES)
    with pytest.raises(CorruptMetadata, match=str(path)):
        list(reader.apply(data("a"), (bad,), _batches(10)))


def test_positions_count_from_the_first_row_of_the_file_across_batches(tmp_path: Path) -> None:
    path = tmp_path / "deletes.parquet"
    pq.write_table(
        pa.table({"file_path": ["a", "a", "other"], "pos": pa.array([1, 4, 2], pa.int64())}),
        path,
    )
    reader = DeleteReader(LocalFileIO(), SCHEMA)
    kept = reader.apply(data("a"), (deletes(str(path), Content.POSITION_DELETES),), _batches(8))
    assert pa.Table.from_batches(list(kept)).column("id").to_pylist() == [0, 2, 3, 5, 6, 7]
