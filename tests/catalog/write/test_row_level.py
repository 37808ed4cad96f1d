"""UPDATE, MERGE and upsert through the table API (copy-on-write), on every backend."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lakecat.catalog import Catalog
from lakecat.metadata.errors import SchemaMismatch, UnknownColumn, ValidationError
from lakecat.metadata.schema.schema import Schema
from lakecat.metadata.schema.types import LongType, NestedField, StringType


@pytest.fixture
def table(catalog: Catalog):
    schema = Schema.of(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "region", StringType(), required=True),
        NestedField(3, "v", LongType()),
        identifier_field_ids=(1,),
    )
    t = catalog.create_table("db.kv", schema, partition_by=["region"])
    t.append(
        pa.table({"id": [1, 2, 3, 4], "region": ["eu", "eu", "us", "us"], "v": [10, 20, 30, 40]})
    )
    return t


def state(table) -> dict[int, tuple[str, int | None]]:
    got = table.to_arrow()
    return {
        i: (r, v)
        for i, r, v in zip(
            got.column("id").to_pylist(),
            got.column("region").to_pylist(),
            got.column("v").to_pylist(),
            strict=True,
        )
    }


def test_update_with_constant_changes_only_matching_rows(table) -> None:
    result = table.update({"v": 0}, "id >= 3")
    assert result.metadata.current_snapshot.operation == "overwrite"
    assert state(table) == {1: ("eu", 10), 2: ("eu", 20), 3: ("us", 0), 4: ("us", 0)}


def test_update_with_expression_and_untouched_partition_stays(table) -> None:
    before = {f.file_path for f in table.scan("region = 'eu'").plan_files()}
    table.update({"v": pc.field("v") * 2}, "region = 'us'")
    assert state(table)[3] == ("us", 60)
    assert {f.file_path for f in table.scan("region = 'eu'").plan_files()} == before


def test_update_that_matches_nothing_makes_no_commit(table) -> None:
    snap = table.current_snapshot().snapshot_id
    assert table.update({"v": 1}, "id > 100") is None
    assert table.refresh().current_snapshot().snapshot_id == snap


def test_update_of_unknown_column_is_typed(table) -> None:
    with pytest.raises(UnknownColumn):
        table.update({"nope": 1}, "id = 1")


def test_merge_updates_matches_deletes_and_inserts(table) -> None:
    source = pa.table({"id": [2, 3, 9], "region": ["eu", "us", "eu"], "v": [200, 300, 900]})
    table.merge(
        source,
        on="id",
        when_matched_update=True,
        when_matched_delete_if="v = 30",  # conditions see the target row
        when_not_matched_insert=True,
    )
    assert state(table) == {1: ("eu", 10), 2: ("eu", 200), 4: ("us", 40), 9: ("eu", 900)}


def test_upsert_uses_identifier_fields(table) -> None:
    table.upsert(pa.table({"id": [1, 5], "region": ["eu", "us"], "v": [11, 50]}))
    assert state(table)[1] == ("eu", 11)
    assert state(table)[5] == ("us", 50)
    assert len(state(table)) == 5


def test_merge_with_duplicate_source_keys_is_refused(table) -> None:
    with pytest.raises(ValidationError):
        table.merge(
            pa.table({"id": [1, 1], "region": ["eu", "eu"], "v": [1, 2]}),
            on="id",
            when_matched_update=True,
        )


def test_merge_with_unknown_source_column_is_refused(table) -> None:
    with pytest.raises(SchemaMismatch):
        table.merge(pa.table({"id": [1], "zzz": [1]}), on="id", when_matched_update=True)


def test_merge_with_target_filter_keeps_rows_outside_it(table) -> None:
    source = pa.table({"id": [1, 3], "region": ["eu", "us"], "v": [111, 333]})
    table.merge(source, on="id", when_matched_update=True, target_filter="region = 'eu'")
    assert state(table)[1] == ("eu", 111)
    assert state(table)[3] == ("us", 30)


NESTED = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("info", pa.struct([("qty", pa.int32()), ("label", pa.string())])),
        pa.field("tags", pa.list_(pa.string())),
        pa.field("props", pa.map_(pa.string(), pa.int32())),
    ]
)


@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
def test_merge_carries_struct_list_and_map_columns(catalog: Catalog, mode: str) -> None:
    t = catalog.create_table("db.nested", NESTED, properties={"write.merge.mode": mode})
    t.append(
        pa.table(
            {
                "id": [1, 2, 3],
                "info": [{"qty": 1, "label": "a"}, None, {"qty": 3, "label": None}],
                "tags": [["x"], [], None],
                "props": [[("k", 1)], None, [("k", 3), ("j", 4)]],
            },
            schema=NESTED,
        )
    )
    source = pa.table(
        {
            "id": [3, 2, 7, 1],
            "info": [{"qty": 30, "label": "c"}, {"qty": 20, "label": "b"}, None, None],
            "tags": [["y", "z"], None, ["new"], ["gone"]],
            "props": [None, [("k", 2)], [("n", 7)], None],
        },
        schema=NESTED,
    )
    t.merge(
        source,
        on="id",
        when_matched_update=True,
        when_matched_delete_if="info.qty < 2",  # the target row's field: row 1 goes
        when_not_matched_insert=True,
    )
    got = sorted(t.to_arrow().to_pylist(), key=lambda r: r["id"])
    assert got == [
        {"id": 2, "info": {"qty": 20, "label": "b"}, "tags": None, "props": [("k", 2)]},
        {"id": 3, "info": {"qty": 30, "label": "c"}, "tags": ["y", "z"], "props": None},
        {"id": 7, "info": None, "tags": ["new"], "props": [("n", 7)]},
    ]
