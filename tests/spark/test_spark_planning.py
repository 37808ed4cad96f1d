"""Read planning without Spark: options, and how files become input partitions."""

from __future__ import annotations

import pytest

from lakecat.metadata.errors import ValidationError
from lakecat.metadata.manifests.datafile import DataFile
from lakecat.spark_ext.source.planning import ReadOptions, balance, pack

pytestmark = pytest.mark.spark

MIB = 1024 * 1024


def files(*sizes_mib: int) -> list[DataFile]:
    return [
        DataFile(f"/data/f{i}.parquet", "PARQUET", (), 1, size * MIB)
        for i, size in enumerate(sizes_mib)
    ]


def names(groups: list[list[DataFile]]) -> list[list[str]]:
    return [[f.file_path.rsplit("/", 1)[1].removesuffix(".parquet") for f in g] for g in groups]


def test_balanced_groups_weigh_about_the_same() -> None:
    groups = balance(files(22, 8, 21, 7), split_size=29 * MIB, open_file_cost=4 * MIB)
    assert names(groups) == [["f0", "f3"], ["f1", "f2"]]


def test_a_tiny_split_size_reads_one_file_per_partition() -> None:
    groups = balance(files(1, 2, 3), split_size=1, open_file_cost=1)
    assert sorted(names(groups)) == [["f0"], ["f1"], ["f2"]]


def test_small_files_share_a_partition_up_to_the_open_cost() -> None:
    groups = balance(files(1, 1, 1, 1), split_size=128 * MIB, open_file_cost=4 * MIB)
    assert names(groups) == [["f0", "f1", "f2", "f3"]]


def test_packing_keeps_planning_order_and_the_size_cap() -> None:
    groups = pack(files(60, 60, 10, 100), split_size=128 * MIB, open_file_cost=4 * MIB)
    assert names(groups) == [["f0", "f1"], ["f2", "f3"]]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"snapshot-id": "1", "tag": "t"}, "choose one"),
        ({"end-snapshot-id": "2"}, "needs start-snapshot-id"),
        ({"start-snapshot-id": "1", "branch": "b"}, "cannot be combined"),
        ({"snapshot-id": "x"}, "must be an integer"),
        ({"split-size": "0"}, "must be positive"),
        ({"files": "{}"}, "JSON list"),
    ],
)
def test_conflicting_or_malformed_read_options_are_refused(
    options: dict[str, str], message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        ReadOptions.parse(options)


def test_as_of_timestamp_takes_milliseconds_or_iso_text() -> None:
    assert ReadOptions.parse({"as-of-timestamp": "1700000000000"}).as_of_ms == 1_700_000_000_000
    iso = ReadOptions.parse({"as-of-timestamp": "2023-11-14T22:13:20Z"})
    assert iso.as_of_ms == 1_700_000_000_000
