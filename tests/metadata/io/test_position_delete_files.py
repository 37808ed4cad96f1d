"""Writing a v2 operation's position delete files: one per data file, several at once."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from lakecat.metadata.errors import ValidationError
from lakecat.metadata.io.fileio import LocalFileIO
from lakecat.metadata.io.position_deletes import (
    FileDeletes,
    deleted_positions,
    write_position_delete_files,
)
from lakecat.metadata.manifests.datafile import Content, DataFile
from lakecat.metadata.partitioning.spec import PartitionField, PartitionSpec
from lakecat.metadata.schema.schema import Schema
from lakecat.metadata.schema.types import IntegerType, LongType, NestedField

IO = LocalFileIO()
SCHEMA = Schema.of(NestedField(1, "id", LongType()), NestedField(2, "part", IntegerType()))
SPEC = PartitionSpec(1, (PartitionField(2, 1000, "identity", "part"),))


def targets(folder: Path, count: int) -> list[FileDeletes]:
    """``count`` data files of 100 rows in partitions 0-4, each with a few rows deleted."""
    return [
        FileDeletes(
            DataFile(
                str(folder / f"part={n % 5}" / f"{n}.parquet"),
                "PARQUET",
                (n % 5,),
                100,
                1,
                spec_id=1,
            ),
            pa.array([n, 99, 0, n], pa.int64()),  # any order, repeats allowed
        )
        for n in range(count)
    ]


def files_under(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file())


def write(folder: Path, items: list[FileDeletes], threads: int | None = None) -> list[DataFile]:
    return write_position_delete_files(
        IO, str(folder), items, specs={1: SPEC}, schema=SCHEMA, properties={}, threads=threads
    )


@pytest.mark.parametrize("threads", [1, 4, None])
def test_each_data_file_gets_its_own_file_in_its_partition_in_the_targets_order(
    tmp_path: Path, threads: int | None
) -> None:
    items = targets(tmp_path / "tables", 23)

    written = write(tmp_path / "data", items, threads)

    assert len(written) == len(files_under(tmp_path / "data")) == 23
    for target, delete_file in zip(items, written, strict=True):
        data_path = target.data_file.file_path
        assert delete_file.content is Content.POSITION_DELETES
        assert delete_file.partition == target.data_file.partition
        assert f"/part={target.data_file.partition[0]}/" in delete_file.file_path
        positions = deleted_positions(IO, delete_file, data_path).positions.to_pylist()
        n = int(Path(data_path).stem)
        assert positions == sorted({0, n, 99})
        assert delete_file.record_count == len(positions)


@pytest.mark.parametrize("threads", [1, 4])
def test_a_failing_target_leaves_no_file_and_raises_its_own_error(
    tmp_path: Path, threads: int
) -> None:
    items = targets(tmp_path / "tables", 40)
    bad = items[17]
    items[17] = FileDeletes(bad.data_file, pa.array([5, 100], pa.int64()))  # past its 100 rows

    with pytest.raises(ValidationError, match=r"position 100 is outside .*/17\.parquet"):
        write(tmp_path / "data", items, threads)

    assert files_under(tmp_path / "data") == []  # the files written before or beside it too
