"""A concurrent commit that added delete files for a data file this operation removes is a
conflict (Iceberg's ``validateNoNewDeletesForDataFiles``), for every kind of operation that
removes files and under both isolation levels: committing would bring the deleted rows back."""

from __future__ import annotations

import pytest

from lakecat.catalog.commit.conflicts import ConcurrentCommit, check_new_deletes
from lakecat.catalog.commit.intent import Intent, OpKind
from lakecat.metadata.errors import ConcurrentDeleteRead
from lakecat.metadata.manifests.datafile import Content, DataFile


def data(path: str, partition: tuple[object, ...] = ("a",), spec_id: int = 1) -> DataFile:
    return DataFile(path, "PARQUET", partition, 10, 100, spec_id=spec_id)


def delete(
    content: Content,
    partition: tuple[object, ...] = ("a",),
    *,
    spec_id: int = 1,
    referenced: str | None = None,
) -> DataFile:
    return DataFile(
        "d.parquet" if referenced is None else "dv.puffin",
        "PARQUET" if referenced is None else "PUFFIN",
        partition,
        1,
        10,
        spec_id=spec_id,
        content=content,
        referenced_data_file=referenced,
    )


def commit(*added: DataFile) -> ConcurrentCommit:
    return ConcurrentCommit(7, "delete", {}, tuple(added), frozenset())


@pytest.mark.parametrize("kind", [OpKind.REPLACE, OpKind.DELETE, OpKind.OVERWRITE])
@pytest.mark.parametrize("isolation", ["snapshot", "serializable"])
@pytest.mark.parametrize(
    "added",
    [
        delete(Content.POSITION_DELETES),  # same partition
        delete(Content.POSITION_DELETES, ("b",), referenced="f1"),  # a DV naming the file
        delete(Content.EQUALITY_DELETES, (), spec_id=0),  # a global equality delete
    ],
    ids=["position", "dv", "global-equality"],
)
def test_new_deletes_for_a_removed_file_conflict(
    kind: OpKind, isolation: str, added: DataFile
) -> None:
    intent = Intent(kind, removed_files=(data("f1"),), isolation=isolation)
    with pytest.raises(ConcurrentDeleteRead, match="bring the deleted rows back") as info:
        check_new_deletes(intent, commit(added))
    assert info.value.files == ("f1",)


def test_deletes_elsewhere_and_new_data_files_do_not_conflict() -> None:
    intent = Intent(OpKind.REPLACE, removed_files=(data("f1"),))
    check_new_deletes(intent, commit(delete(Content.POSITION_DELETES, ("b",))))  # other partition
    check_new_deletes(intent, commit(delete(Content.POSITION_DELETES, ("a",), referenced="f2")))
    check_new_deletes(intent, commit(data("f3")))  # an append
    check_new_deletes(Intent(OpKind.APPEND), commit(delete(Content.POSITION_DELETES)))


def test_equality_deletes_are_no_conflict_for_new_files_as_old_as_the_start() -> None:
    # a compaction whose new files keep the starting snapshot's data sequence number: a newer
    # equality delete applies to them as to the files they replace; position deletes do not
    intent = Intent(OpKind.REPLACE, removed_files=(data("f1"),), added_data_sequence_number=3)
    check_new_deletes(intent, commit(delete(Content.EQUALITY_DELETES, (), spec_id=0)))
    check_new_deletes(intent, commit(delete(Content.EQUALITY_DELETES)))
    with pytest.raises(ConcurrentDeleteRead):
        check_new_deletes(intent, commit(delete(Content.POSITION_DELETES)))
